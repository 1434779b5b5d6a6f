// @ts-check
// Seed 002's turn adoption, as a small integration on the TypeScript Agent SDK (wakeprobe's
// driver mode `command`). It shows its user each turn, tool card, approval and status as the
// protocol's JSON lines, and takes the user's prompts and approval answers from stdin.
//
//   node turn-adoption.mjs buggy   shows only what arrives inside a turn its user's prompt
//                                  opened (as codeoid did): the turn the CLI starts by itself
//                                  after background work is dropped, and with it the approval
//                                  that turn asks for ("A tool approval is pending").
//   node turn-adoption.mjs fixed   adopts that turn, shows it once as started by the CLI, and
//                                  puts its approval before the user.
import fs from "node:fs";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

const buggy = process.argv[2] === "buggy";
const config = JSON.parse(fs.readFileSync(process.env.WAKEPROBE_SDK_CONFIG ?? "", "utf8"));
const { query } = await import(pathToFileURL(process.env.WAKEPROBE_SDK_ENTRY ?? "").href);
/** @param {Record<string, string>} line what the user is shown */
const show = (line) => process.stdout.write(JSON.stringify(line) + "\n");

// The user: prompts for the SDK's streaming input, answers to the approvals on screen.
/** @type {string[]} */
const said = [];
/** @type {Map<string, (answer: string) => void>} */
const approvals = new Map();
let wake = () => {};
let closed = false;
readline
  .createInterface({ input: process.stdin })
  .on("line", (text) => {
    const line = JSON.parse(text);
    if (line.type === "say") said.push(line.text);
    if (line.type === "approve") approvals.get(line.id)?.(line.answer);
    wake();
  })
  .on("close", () => {
    closed = true;
    wake();
    // The session ends when its input does; a CLI still waiting on a dropped approval does
    // not, so the program gives it a moment and goes.
    setTimeout(() => process.exit(0), 5000).unref();
  });

let turnOpen = false;
/** @param {"prompt" | "cli"} startedBy */
function openTurn(startedBy) {
  turnOpen = true;
  show({ shown: "status", status: "busy" });
  show({ shown: "turn", started_by: startedBy });
}

async function* prompts() {
  for (;;) {
    while (said.length === 0 && !closed) await new Promise((resolve) => (wake = () => resolve(undefined)));
    const text = said.shift();
    if (text === undefined) return;
    openTurn("prompt");
    yield { type: "user", message: { role: "user", content: text }, parent_tool_use_id: null, session_id: "" };
  }
}

let asked = 0;
/** The CLI asks before a tool runs: the question goes to the user, the answer back to the CLI.
 * @param {string} tool @param {Record<string, unknown>} input */
async function canUseTool(tool, input) {
  if (buggy && !turnOpen) return new Promise(() => {}); // the bug: nobody is shown it
  const id = `approval-${++asked}`;
  show({ shown: "approval_asked", tool, id });
  const answer = await new Promise((resolve) => approvals.set(id, resolve));
  show({ shown: "approval_answered", tool, id, answer });
  return answer === "allow"
    ? { behavior: "allow", updatedInput: input }
    : { behavior: "deny", message: "The user declined." };
}

const session = query({
  prompt: prompts(),
  options: {
    cwd: config.cwd,
    pathToClaudeCodeExecutable: config.cli_path,
    permissionMode: config.permission_mode,
    allowedTools: config.allowed_tools,
    settingSources: ["project", "local"],
    persistSession: config.persist_session,
    canUseTool,
    env: { ...process.env },
  },
});
for await (const message of session) {
  if (message.parent_tool_use_id) continue; // a subagent's own messages
  if (message.type === "assistant") {
    if (!turnOpen) {
      if (buggy) continue; // the bug: a turn nobody's prompt opened is not shown
      openTurn("cli");
    }
    for (const block of message.message.content) {
      if (block.type === "tool_use") show({ shown: "tool_card", tool: block.name });
    }
  } else if (message.type === "result" && turnOpen) {
    turnOpen = false;
    show({ shown: "status", status: "idle" });
  }
}
process.exit(0);
