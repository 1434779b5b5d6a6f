// wakeprobe's Agent SDK host (TypeScript SDK, run by Node): the program a run of driver mode
// `sdk` starts in place of the CLI. It drives the real CLI through the SDK's `query()` and
// speaks the CLI's own stream-json protocol on both ends, so the harness feeds and reads it as
// it feeds and reads a kept-alive CLI session:
//
//   stdin   stream-json lines as the CLI takes them: user messages (the first is the prompt),
//           `control_request` lines `interrupt` and `stop_task`; end of input ends the SDK's
//           input stream (a string prompt ignores everything after the first line).
//   stdout  every message the SDK's stream yields, one JSON line each, as the SDK delivers it;
//           and lines of the host's own, `{"type":"wakeprobe_sdk","event":...}`: a hook given
//           as an SDK callback fired (`hook`, with its input), the SDK asked `canUseTool`
//           (`can_use_tool`), the SDK threw (`error`), the stream ended (`ended`).
//   stderr  the CLI's stderr, forwarded.
//
// Its settings come from the JSON file WAKEPROBE_SDK_CONFIG names; the SDK module from
// WAKEPROBE_SDK_ENTRY (a file in wakeprobe's cache). The CLI gets the host's own environment,
// which the harness built from nothing.
import fs from "node:fs";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

const config = JSON.parse(fs.readFileSync(process.env.WAKEPROBE_SDK_CONFIG, "utf8"));
const { query } = await import(pathToFileURL(process.env.WAKEPROBE_SDK_ENTRY).href);

const emit = (value) => process.stdout.write(JSON.stringify(value) + "\n");
const own = (event, fields = {}) => emit({ type: "wakeprobe_sdk", event, ...fields });

// The input: stdin's lines, turned into SDK user messages and control calls.
const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
const pending = [];
let wake = null;
let inputOver = false;
lines.on("line", (line) => {
  pending.push(line);
  wake?.();
});
lines.on("close", () => {
  inputOver = true;
  wake?.();
});
async function nextLine() {
  while (pending.length === 0 && !inputOver) {
    await new Promise((resolve) => (wake = resolve));
    wake = null;
  }
  return pending.length > 0 ? pending.shift() : null;
}

function parse(line) {
  try {
    return JSON.parse(line);
  } catch {
    own("error", { message: `the host ignored an input line that is not JSON: ${line.slice(0, 80)}` });
    return null;
  }
}

function textOf(message) {
  const content = message?.message?.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.filter((b) => b.type === "text").map((b) => b.text).join("\n");
  }
  return "";
}

let session = null; // the Query, once started
async function control(line) {
  const request = line.request ?? {};
  const answer = (subtype, extra) =>
    emit({ type: "control_response", response: { subtype, request_id: line.request_id, ...extra } });
  try {
    if (request.subtype === "interrupt") {
      answer("success", { response: (await session.interrupt()) ?? {} });
    } else if (request.subtype === "stop_task") {
      await session.stopTask(request.task_id);
      answer("success", { response: {} });
    } else {
      answer("error", { error: `the SDK host has no call for control request \`${request.subtype}\`` });
    }
  } catch (e) {
    answer("error", { error: String(e?.message ?? e) });
  }
}

// The streaming input: the prompt and every later user message; control requests act on the
// session as they come. Ends when stdin does.
async function* userMessages(first) {
  yield first;
  for (;;) {
    const line = await nextLine();
    if (line === null) return;
    const value = parse(line);
    if (value?.type === "user") {
      yield { type: "user", message: value.message, parent_tool_use_id: null };
    } else if (value?.type === "control_request") {
      await control(value);
    }
  }
}

const hooks = {};
for (const name of config.callback_hooks ?? []) {
  hooks[name] = [
    {
      hooks: [
        async (input) => {
          own("hook", { payload: input });
          return {};
        },
      ],
    },
  ];
}

async function canUseTool(toolName, input, context) {
  own("can_use_tool", {
    tool_name: toolName,
    tool_use_id: context?.toolUseID ?? null,
    agent_id: context?.agentID ?? null,
    answer: "allow",
  });
  return { behavior: "allow", updatedInput: input };
}

const first = await nextLine();
const opening = first === null ? null : parse(first);
if (opening?.type !== "user") {
  own("error", { message: "the host's first input line must be the prompt, a user message" });
  process.exit(2);
}
const options = {
  cwd: config.cwd,
  env: { ...process.env },
  pathToClaudeCodeExecutable: config.cli_path,
  executableArgs: [],
  extraArgs: Object.fromEntries((config.cli_leading_args ?? []).map((a) => [a, null])),
  permissionMode: config.permission_mode,
  allowedTools: config.allowed_tools,
  settingSources: ["project", "local"],
  persistSession: config.persist_session,
  hooks,
  canUseTool,
  stderr: (data) => process.stderr.write(data),
};
const prompt =
  config.prompt_form === "string"
    ? textOf(opening)
    : userMessages({ type: "user", message: opening.message, parent_tool_use_id: null });
try {
  session = query({ prompt, options });
  for await (const message of session) emit(message);
  own("ended");
} catch (e) {
  own("error", { message: String(e?.stack ?? e) });
  process.exitCode = 1;
}
lines.close();
process.exit(process.exitCode ?? 0);
