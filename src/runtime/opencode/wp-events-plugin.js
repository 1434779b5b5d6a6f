// wakeprobe's observer plugin for opencode: one JSON line per bus event and per hook call,
// appended to the file named by $WAKEPROBE_OPENCODE_EVENTS (nothing when it is unset). The harness loads
// it from opencode.json ("plugin": ["file:///.../wp-events-plugin.js"]). It only observes: it
// imports nothing beyond node:fs, answers nothing, changes nothing.
import { appendFileSync } from "node:fs";

const FILE = process.env.WAKEPROBE_OPENCODE_EVENTS;
function put(kind, data) {
  if (!FILE) return;
  try {
    appendFileSync(FILE, JSON.stringify({ t: Date.now(), kind, ...data }) + "\n");
  } catch {}
}

export const WpEvents = async ({ directory }) => {
  put("plugin.loaded", { directory, pid: process.pid });
  return {
    // Every bus event: the same objects `opencode serve` streams at GET /event.
    event: async ({ event }) => put("event", { event }),
    // A user message about to be processed (the wake-up injection is a synthetic part).
    "chat.message": async (input, output) =>
      put("hook.chat.message", { input, message: output.message, parts: output.parts }),
    "tool.execute.before": async (input, output) => put("hook.tool.before", { input, args: output.args }),
    "tool.execute.after": async (input, output) =>
      put("hook.tool.after", { input, title: output.title, output: output.output, metadata: output.metadata }),
  };
};
