// Seed 002's turn adoption, as a small integration on the TypeScript Agent SDK (mode
// `command`). `node turn-adoption.mjs buggy` shows only messages inside a turn it opened (as
// codeoid did): the turn the CLI starts by itself after background work is dropped, with its
// tool card and its approval. `fixed` adopts that turn and shows it as started by the CLI.
import fs from "node:fs";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

const buggy = process.argv[2] === "buggy";
const config = JSON.parse(fs.readFileSync(process.env.WAKEPROBE_SDK_CONFIG, "utf8"));
const { query } = await import(pathToFileURL(process.env.WAKEPROBE_SDK_ENTRY).href);
const show = (line) => process.stdout.write(JSON.stringify(line) + "\n");

// stdin: {"type":"say","text":...} lines become the SDK's streaming input.
const queue = [];
let wake = null;
let over = false;
const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (l) => { const m = JSON.parse(l); if (m.type === "say") { queue.push(m.text); wake?.(); } });
rl.on("close", () => { over = true; wake?.(); setTimeout(() => process.exit(0), 3000); });
let turnOpen = false; // a turn the user's prompt opened
let shownTurn = false;
async function* input() {
  for (;;) {
    while (queue.length === 0 && !over) await new Promise((r) => (wake = r));
    if (queue.length === 0) return;
    turnOpen = true;
    shownTurn = false;
    show({ shown: "status", status: "busy" });
    yield { type: "user", message: { role: "user", content: queue.shift() }, parent_tool_use_id: null };
  }
}
// Returns whether this message belongs to a turn the integration shows.
function inTurn() {
  if (turnOpen) return true;
  if (buggy) return false; // the bug: nothing outside an open turn is shown
  turnOpen = true;
  shownTurn = false;
  return true;
}
let startedBy = "prompt";
async function canUseTool(tool, toolInput) {
  if (buggy && !turnOpen) return new Promise(() => {}); // dropped: never shown, never answered
  show({ shown: "approval_asked", tool });
  show({ shown: "approval_answered", tool, answer: "allow" });
  return { behavior: "allow", updatedInput: toolInput };
}
const session = query({
  prompt: input(),
  options: { cwd: config.cwd, pathToClaudeCodeExecutable: config.cli_path, permissionMode: config.permission_mode,
    allowedTools: config.allowed_tools, settingSources: ["project", "local"], canUseTool, env: { ...process.env } },
});
for await (const m of session) {
  if (m.parent_tool_use_id) continue; // a subagent's own messages
  if (m.type === "assistant") {
    const wasOpen = turnOpen;
    if (!inTurn()) continue;
    if (!wasOpen) startedBy = "cli";
    if (!shownTurn) { show({ shown: "turn", started_by: startedBy }); shownTurn = true; }
    for (const b of m.message.content) if (b.type === "tool_use") show({ shown: "tool_card", tool: b.name });
  } else if (m.type === "result" && turnOpen) {
    turnOpen = false;
    startedBy = "prompt";
    show({ shown: "status", status: "idle" });
  }
}
process.exit(0);
