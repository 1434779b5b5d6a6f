// @ts-check
// Seed 004's replay, as a small integration on the TypeScript Agent SDK (wakeprobe's driver
// mode `command`). It runs a session live, then, as a product does when its user reopens a
// saved session, restores it from the CLI's transcripts and shows each background subagent
// with its status (`subagent_status` lines).
//
//   node replay.mjs buggy   reads a background Agent call's immediate result (`async_launched`,
//                           a success) as the child's outcome, as paseo did: every background
//                           subagent is restored as completed.
//   node replay.mjs fixed   reads each child's own transcript: the interrupt placeholder at its
//                           end means canceled, a prompt after it means running again, a last
//                           assistant entry that ends its turn means completed, else running.
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

const buggy = process.argv[2] === "buggy";
const config = JSON.parse(fs.readFileSync(process.env.WAKEPROBE_SDK_CONFIG ?? "", "utf8"));
const { query } = await import(pathToFileURL(process.env.WAKEPROBE_SDK_ENTRY ?? "").href);
/** @param {Record<string, string>} line what the user is shown */
const show = (line) => process.stdout.write(JSON.stringify(line) + "\n");

// The user: prompts, and stopping a task (by the CLI's id, which the line carries).
/** @type {string[]} */
const said = [];
/** @type {string[]} */
const stops = [];
let wake = () => {};
let closed = false;
readline
  .createInterface({ input: process.stdin })
  .on("line", (text) => {
    const line = JSON.parse(text);
    if (line.type === "say") said.push(line.text);
    if (line.type === "stop_task" && line.task_id) stops.push(line.task_id);
    wake();
  })
  .on("close", () => {
    closed = true;
    wake();
  });

async function* prompts() {
  for (;;) {
    while (said.length === 0 && !closed) await new Promise((resolve) => (wake = () => resolve(undefined)));
    const text = said.shift();
    if (text === undefined) return;
    yield { type: "user", message: { role: "user", content: text }, parent_tool_use_id: null, session_id: "" };
  }
}

const session = query({
  prompt: prompts(),
  options: {
    cwd: config.cwd,
    pathToClaudeCodeExecutable: config.cli_path,
    permissionMode: config.permission_mode,
    allowedTools: config.allowed_tools,
    settingSources: ["project", "local"],
    env: { ...process.env },
  },
});
// Stops are sent as they come, while the session runs.
const stopper = setInterval(() => {
  for (const id of stops.splice(0)) session.stopTask(id).catch(() => {});
}, 100);
let sessionId = "";
for await (const message of session) {
  if (message.session_id) sessionId = message.session_id;
  if (message.parent_tool_use_id) continue;
  if (message.type === "assistant") show({ shown: "turn", started_by: "prompt" });
  if (message.type === "result") show({ shown: "status", status: "idle" });
}
clearInterval(stopper);

// The user reopens the session: it is restored from the transcripts alone.
/** @param {string} file @returns {any[]} */
const entries = (file) =>
  fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [];
const projects = path.join(process.env.HOME ?? "", ".claude", "projects");
const folder = fs.readdirSync(projects).map((p) => path.join(projects, p)).find((p) => fs.existsSync(path.join(p, `${sessionId}.jsonl`)));
for (const entry of entries(path.join(folder ?? "", `${sessionId}.jsonl`))) {
  const launched = entry.toolUseResult;
  if (launched?.status !== "async_launched") continue;
  const status = buggy ? "completed" : childStatus(entries(path.join(folder ?? "", sessionId, "subagents", `agent-${launched.agentId}.jsonl`)));
  show({ shown: "subagent_status", task: launched.agentId, status });
}
process.exit(0);

/** A child's status from its own transcript. @param {any[]} child */
function childStatus(child) {
  /** @param {any} e @returns {string[]} */
  const texts = (e) => {
    const content = e.message?.content;
    if (typeof content === "string") return [content];
    return Array.isArray(content) ? content.filter((b) => b.type === "text").map((b) => b.text) : [];
  };
  let promptedAfter = false;
  for (const e of [...child].reverse()) {
    if (e.type === "user") {
      if (texts(e).some((t) => t.trim().startsWith("[Request interrupted by user"))) return promptedAfter ? "running" : "canceled";
      if (texts(e).length > 0) promptedAfter = true;
    }
    if (e.type === "assistant") return e.message?.stop_reason === "end_turn" ? "completed" : "running";
  }
  return "running";
}
