// @ts-check
// A complete minimal integration for wakeprobe's mode `command`, with no SDK: it drives the
// CLI ($WAKEPROBE_CLI) over stream-json, takes its user's lines on stdin and shows its user
// JSON lines on stdout (the protocol in wakeprobe's book/src/testing-your-product.md).
import { spawn } from "node:child_process";
import readline from "node:readline";

const show = (/** @type {object} */ line) => process.stdout.write(JSON.stringify(line) + "\n");
const args = ["-p", "--verbose", "--input-format", "stream-json", "--output-format", "stream-json",
  "--permission-prompt-tool", "stdio"];
const cli = spawn(process.env.WAKEPROBE_CLI ?? "claude", args, { stdio: ["pipe", "pipe", "inherit"] });
const send = (/** @type {object} */ line) => cli.stdin.write(JSON.stringify(line) + "\n");
let requests = 0;
/** @param {object} request */
const control = (request) => send({ type: "control_request", request_id: `ui-${++requests}`, request });

let turnOpen = false;
/** @param {"prompt" | "cli"} startedBy */
function openTurn(startedBy) {
  turnOpen = true;
  show({ shown: "status", status: "busy" });
  show({ shown: "turn", started_by: startedBy });
}

// The user, on stdin.
readline.createInterface({ input: process.stdin })
  .on("line", (text) => {
    const line = JSON.parse(text);
    if (line.type === "say") {
      openTurn("prompt");
      send({ type: "user", message: { role: "user", content: line.text } });
    } else if (line.type === "approve") {
      show({ shown: "approval_answered", tool: line.tool, id: line.id, answer: line.answer });
      const response = line.answer === "allow" ? { behavior: "allow", updatedInput: inputs.get(line.id) }
        : { behavior: "deny", message: "The user declined." };
      send({ type: "control_response", response: { subtype: "success", request_id: line.id, response } });
    } else if (line.type === "stop_task") control({ subtype: "stop_task", task_id: line.task_id });
    else if (line.type === "interrupt") control({ subtype: "interrupt" });
  })
  .on("close", () => cli.stdin.end());

// The CLI, on its stdout.
/** @type {Map<string, unknown>} */
const inputs = new Map();
readline.createInterface({ input: cli.stdout }).on("line", (text) => {
  const m = JSON.parse(text);
  if (m.type === "assistant" && !m.parent_tool_use_id) {
    if (!turnOpen) openTurn("cli");
    for (const b of m.message.content) if (b.type === "tool_use") show({ shown: "tool_card", tool: b.name });
  } else if (m.type === "result" && !m.parent_tool_use_id) {
    turnOpen = false;
    show({ shown: "status", status: "idle" });
  } else if (m.type === "control_request" && m.request.subtype === "can_use_tool") {
    inputs.set(m.request_id, m.request.input);
    show({ shown: "approval_asked", tool: m.request.tool_name, id: m.request_id });
  }
});
cli.on("exit", (code) => process.exit(code ?? 1));
