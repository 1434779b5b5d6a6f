#!/usr/bin/env node
// A standalone reproduction, exported by wakeprobe (`wakeprobe export`). Node 18+, nothing else.
// Exported: __WAKEPROBE_ABOUT__
//
// It runs the real Claude Code CLI once against a scripted stand-in for the Anthropic Messages API
// and says whether background work (a subagent, a `run_in_background` shell task) woke the agent
// that waited for it. In order:
//   1. finds the CLI (--claude-bin PATH), or installs the named version with npm into a cache folder
//      (--cache DIR, default ~/.cache/wakeprobe-repro/VERSION): the only network use;
//   2. serves a fake Messages API on 127.0.0.1 playing the embedded script (PLAN): an agent is known
//      by a tag in its prompt, `[wakeprobe:agent=NAME]`; side calls (titles, the safety classifier,
//      count_tokens) get harmless answers; every request is journaled;
//   3. runs the CLI in a throwaway project and HOME (workspace trust pre-accepted, recorder hooks in
//      .claude/settings.json) with an environment built from nothing: no inherited ANTHROPIC_* or
//      proxy variables, ANTHROPIC_BASE_URL on loopback, a dummy key;
//   4. records hooks, stream-json lines and requests on one clock; stops at the scenario's ceiling
//      at the latest; kills the whole process tree, background tasks included;
//   5. prints the key timeline, the facts that decide, and a verdict.
// Usage: node repro.mjs [--claude-bin PATH | --claude-version V] [--cache DIR] [--keep]
// Exit:  0 every waiter was woken; 1 one was not (the bug reproduces); 2 usage error, or the
//        evidence does not decide; 3 the CLI could not be installed or started; 130 interrupted.

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";

// ---- 1. The scenario: wakeprobe's resolved plan (driver, prompt, ceiling, each agent's steps) ----
const PLAN = "__WAKEPROBE_PLAN__";
const CLI_VERSION = "__WAKEPROBE_CLI_VERSION__";
const PINNED = "__WAKEPROBE_PINNED__"; // the version wakeprobe recorded PLAN.expect on

const PACKAGE = "@anthropic-ai/claude-code";
const DUMMY_KEY = "sk-ant-repro-dummy-key-000000000000000000000000000";
const TAG_VAR = "WAKEPROBE_REPRO_RUN"; // every process of the run inherits it: the cleanup finds them
const TERMINAL = ["completed", "failed", "killed", "stopped", "error", "cancelled", "canceled"];
const tagFor = (agent) => `[wakeprobe:agent=${agent}]`;

// ---- 2. Command line, output, the clock ----
const USAGE = "usage: node repro.mjs [--claude-bin PATH | --claude-version V] [--cache DIR] [--keep]";

function parseArgs(argv) {
  const opts = { version: CLI_VERSION, bin: null, cache: null, keep: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => (i + 1 < argv.length ? argv[++i] : fail(2, `${arg} needs a value\n${USAGE}`));
    if (arg === "--claude-bin") opts.bin = path.resolve(value());
    else if (arg === "--claude-version") opts.version = value();
    else if (arg === "--cache") opts.cache = path.resolve(value());
    else if (arg === "--keep") opts.keep = true;
    else if (arg === "-h" || arg === "--help") { say(USAGE); process.exit(0); }
    else fail(2, `unknown argument \`${arg}\`\n${USAGE}`);
  }
  if (!/^[0-9A-Za-z.+-]+$/.test(opts.version)) fail(2, `not a version: \`${opts.version}\``);
  return opts;
}

function fail(code, message) {
  console.error(`repro: ${message}`);
  process.exit(code);
}

const say = (line = "") => console.log(line);
const now = () => performance.timeOrigin + performance.now(); // ms since the epoch: the one clock
let t0 = now(); // reset when the CLI starts; printed times are relative to it
const secs = (t) => `${((t - t0) / 1000).toFixed(2)} s`;
const quote = (s) => `'${String(s).replace(/'/g, "'\\''")}'`; // one word for a POSIX shell
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- 3. The CLI: a binary given by path, or the version installed once into the cache with npm ----
function entryIn(dir) { // the package's `bin` entry, if the install is complete
  const pkg = path.join(dir, "node_modules", PACKAGE);
  let bin = null;
  try { bin = JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")).bin; } catch { return null; }
  bin = typeof bin === "string" ? bin : bin?.claude;
  return bin && fs.existsSync(path.join(pkg, bin)) ? path.join(pkg, bin) : null;
}

// A JS entry point (older versions) runs under this node; a native binary runs as is.
const command = (program) => (/\.[cm]?js$/.test(program) ? [process.execPath, [program]] : [program, []]);

function locateCli(opts) {
  if (opts.bin) return fs.existsSync(opts.bin) ? opts.bin : fail(3, `--claude-bin ${opts.bin}: no such file`);
  const caches = process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache");
  const cache = opts.cache ?? path.join(caches, "wakeprobe-repro");
  const dir = path.join(cache, opts.version);
  if (entryIn(dir)) return entryIn(dir);
  // Install into a side folder, then rename it: an interrupted install never looks complete.
  const partial = `${dir}.partial-${process.pid}`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.mkdirSync(partial, { recursive: true });
  say(`installing ${PACKAGE}@${opts.version} into ${dir} (npm, once per version) ...`);
  const npm = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--no-save", "--loglevel=error",
    "--prefix", partial, `${PACKAGE}@${opts.version}`], { stdio: ["ignore", "inherit", "inherit"] });
  if (npm.status !== 0 || !entryIn(partial)) {
    fs.rmSync(partial, { recursive: true, force: true });
    fail(3, `npm could not install ${PACKAGE}@${opts.version} ${npm.error?.message ?? ""}(or pass --claude-bin PATH)`);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  fs.renameSync(partial, dir);
  return entryIn(dir);
}

// ---- 4. The throwaway world: project with recorder hooks, HOME with the trust accepted, env ----
const HOOK_EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "SubagentStart",
  "SubagentStop", "Stop", "SessionEnd", "Notification", "TeammateIdle", "PreCompact"];

// The hook command: appends `{"t": ms since the epoch when it started, "payload": ...}` to a file.
const RECORDER = `const t = performance.timeOrigin; let data = "";
process.stdin.setEncoding("utf8").on("data", (d) => (data += d)).on("end", () => {
  let payload; try { payload = JSON.parse(data); } catch { payload = { unparsed: data }; }
  require("fs").appendFileSync(process.argv[2], JSON.stringify({ t, payload }) + "\\n");
});
`;

function buildSandbox() {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "wakeprobe-repro-")));
  const at = (...parts) => path.join(root, ...parts);
  const box = { root, project: at("project"), home: at("home"), tmp: at("tmp"), hooks: at("hooks.jsonl"),
    stream: at("stream.jsonl"), journal: at("api-journal.jsonl") };
  for (const dir of [box.home, box.tmp, at("project", ".claude")]) fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(at("project", "README.md"), "A throwaway project for a Claude Code reproduction.\n");
  fs.writeFileSync(at("record-hook.cjs"), RECORDER);
  const hook = { type: "command", command: [process.execPath, at("record-hook.cjs"), box.hooks].map(quote).join(" ") };
  const hooks = Object.fromEntries(HOOK_EVENTS.map((event) => [event, [{ matcher: "*", hooks: [hook] }]]));
  fs.writeFileSync(at("project", ".claude", "settings.json"), JSON.stringify({ hooks }, null, 2));
  fs.writeFileSync(at("home", ".claude.json"), JSON.stringify({
    projects: { [box.project]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true } },
    hasCompletedOnboarding: true, autoUpdates: false,
    customApiKeyResponses: { approved: [DUMMY_KEY.slice(-20)], rejected: [] },
  }, null, 2));
  return box;
}

// Built from nothing: the real HOME, credentials and proxies never reach the CLI.
function cliEnv(box, apiUrl, tag) {
  const realHome = os.homedir();
  const dirs = (process.env.PATH || "/usr/bin:/bin").split(path.delimiter)
    .filter((dir) => dir && dir !== realHome && !dir.startsWith(realHome + path.sep));
  dirs.push(path.dirname(process.execPath)); // node, for the hook recorder
  return {
    PATH: dirs.join(path.delimiter), HOME: box.home, TMPDIR: box.tmp, USER: "repro", LOGNAME: "repro",
    SHELL: "/bin/bash", LANG: "C.UTF-8", TERM: "dumb", ANTHROPIC_BASE_URL: apiUrl, ANTHROPIC_API_KEY: DUMMY_KEY,
    DISABLE_TELEMETRY: "1", DISABLE_ERROR_REPORTING: "1", DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", [TAG_VAR]: tag, ...PLAN.driver.env,
  };
}

// ---- 5. Evidence on one clock, filled in by the fake API and the stdout reader ----
const ev = {
  requests: [],     // {seq, t, agent, route, step, answer, notes, newNotes}: notes are <task-notification> ids
  calls: [],        // the script's tool calls: {id, agent, tool, spawn, track, background}
  tasks: new Map(), // the CLI's task id -> {id, type, toolUseId, starts, end: {t, status}, notified: {t, status}}
  taskLines: [],    // [t, task id, (label) => what happened] for the timeline
  results: [],      // times of stream-json `result` lines
  inputs: [],       // {t, text, control}: what a session was sent after its prompt
  turnEnds: {},     // agent -> turns it ended (our end_turn answers)
  hooks: [],        // {t, payload}, read from the recorder's file at the end
  lastActivity: 0,
  awaitingTurn: false,  // a user message was sent and no `result` came since
  cleanupAt: Infinity,  // task ends after this are our cleanup's doing, not the CLI's
};
const append = (file, value) => fs.appendFileSync(file, JSON.stringify(value) + "\n");

function onStreamLine(box, text) {
  const t = (ev.lastActivity = now());
  append(box.stream, { t, line: text });
  let m;
  try { m = JSON.parse(text); } catch { return; }
  if (m.type === "result") { ev.results.push(t); ev.awaitingTurn = false; }
  if (m.type !== "system" || !m.task_id) return;
  const task = ev.tasks.get(m.task_id) ?? { id: m.task_id, starts: 0 };
  ev.tasks.set(m.task_id, task);
  task.toolUseId ??= m.tool_use_id;
  if (m.subtype === "task_started") {
    Object.assign(task, { type: m.task_type, starts: task.starts + 1, end: null, notified: null }); // re-invoked?
    const again = task.starts > 1 ? " again" : "";
    ev.taskLines.push([t, task.id, (label) => `task \`${label}\` (${m.task_type}) started${again}`]);
  } else if (m.subtype === "task_updated" && TERMINAL.includes(m.patch?.status) && !task.end) {
    task.end = { t, status: m.patch.status };
    ev.taskLines.push([t, task.id, (label) => `task \`${label}\` ${m.patch.status}`]);
  } else if (m.subtype === "task_notification") {
    task.notified = { t, status: m.status };
    const said = `${m.status}, "${m.summary}"`;
    ev.taskLines.push([t, task.id, (label) => `task_notification for \`${label}\` on stdout: ${said}`]);
  }
}

// ---- 6. The fake Messages API: real SSE, routing by the prompt's tag, one step per assistant turn ----
function textOf(value) { // every string under `text` and `content`, in order
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(textOf).join("\n");
  if (value && typeof value === "object") return [value.text ?? "", value.content ?? ""].map(textOf).join("\n");
  return "";
}

const NOTIFICATION = /<task-notification>[\s\S]*?<task-id>\s*([^<\s]+)\s*<\/task-id>/g;
const notifiedIds = (text) => [...text.matchAll(NOTIFICATION)].map((m) => m[1]);

function readRequest(body) {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const tag = /\[wakeprobe:agent=([^\]]+)\]/.exec(textOf(messages.find((m) => m.role === "user")?.content))?.[1];
  const tools = (body.tools ?? []).map((t) => t.name);
  const classifier = (body.stop_sequences ?? []).includes("</block>")
    || textOf(body.system).includes("You are a security monitor");
  // Notifications after the agent's last assistant message are new to it.
  const lastAssistant = messages.map((m) => m.role).lastIndexOf("assistant");
  return {
    messages, tools, stream: body.stream === true, model: body.model ?? "claude-fake",
    agent: tag && PLAN.agents[tag] ? tag : null,
    side: classifier ? "safety-classifier" : tools.length === 0 ? "side call without tools (title, summary)" : null,
    assistants: messages.filter((m) => m.role === "assistant").length,
    notes: notifiedIds(textOf(messages)),
    newNotes: notifiedIds(textOf(messages.slice(lastAssistant + 1))),
  };
}

const cursors = {}; // agent -> {step, last: the assistant count last served, repeats}

// A request with a new assistant message moves the agent on (a retry gets the same step again);
// a step with `until = "notified"` repeats while no new notification arrives.
function nextStep(agent, view) {
  const steps = PLAN.agents[agent];
  const c = (cursors[agent] ??= { step: 0, last: null, repeats: 0 });
  if (c.last !== null && c.last !== view.assistants) {
    const s = steps[c.step];
    if (s?.until === "notified" && view.newNotes.length === 0 && c.repeats < s.max_repeats) c.repeats++;
    else { c.step++; c.repeats = 0; }
  }
  c.last = view.assistants;
  return c.step < steps.length ? steps[c.step] : null;
}

// A scripted step's content blocks (its text, then each tool call: several go out in one message,
// as the model's parallel calls), and the journal's words for it.
function scripted(agent, step, seq, view) {
  const content = step.say != null ? [{ type: "text", text: step.say }] : [];
  const calls = step.calls ?? [];
  if (!calls.length) return { content, what: `ends its turn${step.say ? `: "${step.say}"` : ""}` };
  const words = calls.map((call, nth) => {
    let tool = call.tool; // the Agent tool was once named Task: offer the name this CLI has
    if (view.tools.length && !view.tools.includes(tool) && ["Agent", "Task"].includes(tool)) {
      tool = tool === "Agent" ? "Task" : "Agent";
    }
    // `{{@agent-id:NAME}}`: the id the CLI gave the spawned agent NAME (its task id).
    const ids = JSON.stringify(call.input).replace(/\{\{@agent-id:([\w-]+)\}\}/g, (all, name) => agentIdOf(name) ?? all);
    const input = JSON.parse(ids);
    if (call.spawn) input.prompt = `${input.prompt}\n\n${tagFor(call.spawn)}`;
    const id = `toolu_repro${String(seq).padStart(4, "0")}_${agent.replace(/-/g, "_")}${nth ? `_${nth + 1}` : ""}`;
    const background = input.run_in_background === true;
    ev.calls.push({ id, seq, agent, tool, spawn: call.spawn, track: call.track, background });
    content.push({ type: "tool_use", id, name: tool, input });
    const name = call.spawn || call.track;
    return `${tool}${background ? " in the background" : ""}${name ? ` (\`${name}\`)` : ""}`;
  });
  return { content, what: `calls ${words.join(", ")}${words.length > 1 ? " (in one message)" : ""}` };
}

// The SSE frames of the Messages API: message_start, each block's start/deltas/stop, message_delta, message_stop.
function sse(message) {
  const out = [];
  const frame = (type, data) => out.push(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  frame("message_start", { message: { ...message, content: [], stop_reason: null, stop_sequence: null } });
  message.content.forEach((block, index) => {
    if (block.type === "text") {
      frame("content_block_start", { index, content_block: { type: "text", text: "" } });
      frame("content_block_delta", { index, delta: { type: "text_delta", text: block.text } });
    } else {
      frame("content_block_start", { index, content_block: { ...block, input: {} } });
      const json = Array.from(JSON.stringify(block.input)); // in pieces, as the real API streams it
      for (let i = 0; i < json.length; i += 64) {
        const delta = { type: "input_json_delta", partial_json: json.slice(i, i + 64).join("") };
        frame("content_block_delta", { index, delta });
      }
    }
    frame("content_block_stop", { index });
  });
  const { stop_reason, stop_sequence, usage } = message;
  frame("message_delta", { delta: { stop_reason, stop_sequence }, usage: { output_tokens: usage.output_tokens } });
  frame("message_stop", {});
  return out.join("");
}

function answer(box, req, res, raw) {
  const seq = ev.requests.length + 1;
  const entry = { seq, t: (ev.lastActivity = now()), path: req.url, agent: null, route: "unrouted", answer: "OK." };
  const reply = (status, type, body, delay = 0) => {
    ev.requests.push(entry);
    append(box.journal, entry);
    const headers = { "content-type": type, "cache-control": "no-cache", "request-id": `req_repro_${seq}` };
    setTimeout(() => res.writeHead(status, headers).end(body), delay);
  };
  const route = `${req.method} ${req.url.split("?")[0]}`;
  if (route === "POST /v1/messages/count_tokens") {
    entry.route = "count_tokens";
    return reply(200, "application/json", JSON.stringify({ input_tokens: Math.ceil(raw.length / 4) }));
  }
  let body = null;
  try { body = JSON.parse(raw); } catch { /* answered below */ }
  if (route !== "POST /v1/messages" || !body) {
    entry.route = "not served";
    const error = { type: "not_found_error", message: `the fake API does not serve ${req.method} ${req.url}` };
    return reply(404, "application/json", JSON.stringify({ type: "error", error }));
  }
  const view = readRequest(body);
  Object.assign(entry, { agent: view.agent, notes: view.notes, newNotes: view.newNotes });
  const message = { id: `msg_repro_${String(seq).padStart(4, "0")}`, type: "message", role: "assistant",
    model: view.model, content: [{ type: "text", text: "OK." }], stop_reason: "end_turn", stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 5 } };
  let delay = 0;
  if (view.side === "safety-classifier") { // "is this tool call dangerous?": no
    message.content = [{ type: "text", text: "<block>no" }];
    Object.assign(message, { stop_reason: "stop_sequence", stop_sequence: "</block>" });
    Object.assign(entry, { route: view.side, answer: "<block>no" });
  } else if (view.side || !view.agent) {
    entry.route = view.side ?? "unrouted";
  } else {
    const step = nextStep(view.agent, view);
    const { content, what } = step ? scripted(view.agent, step, seq, view)
      : { content: [{ type: "text", text: "(no more steps)" }], what: "ends its turn (its script is exhausted)" };
    const calls = step?.calls?.length > 0;
    Object.assign(message, { content, stop_reason: calls ? "tool_use" : "end_turn" });
    Object.assign(entry, { route: step ? "turn" : "script exhausted", answer: what });
    if (!calls) ev.turnEnds[view.agent] = (ev.turnEnds[view.agent] ?? 0) + 1;
    delay = (step?.think ?? 0) * 1000;
  }
  if (view.stream) reply(200, "text/event-stream", sse(message), delay);
  else reply(200, "application/json", JSON.stringify(message), delay);
}

function startFakeApi(box) {
  const server = http.createServer({ noDelay: true }, (req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => answer(box, req, res, Buffer.concat(chunks).toString("utf8")));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

// ---- 7. Running the CLI: print mode, or a kept-alive stream-json session with scheduled inputs ----
const callFor = (name) => ev.calls.find((c) => c.spawn === name || c.track === name);
const taskFor = (name) => [...ev.tasks.values()].find((t) => t.toolUseId && t.toolUseId === callFor(name)?.id);
const running = () => [...ev.tasks.values()].filter((t) => !t.end && !t.notified).length;

function triggered({ on, arg }, quiet) {
  switch (on) {
    case "start": return true;
    case "result": return ev.results.length >= arg;
    case "turn-end": return (ev.turnEnds[arg[0]] ?? 0) >= arg[1];
    case "task-start": return !!taskFor(arg);
    case "task-end": return !!(taskFor(arg)?.end || taskFor(arg)?.notified);
    default: return quiet; // "quiet"
  }
}

async function runCli(program, box, env, ending) {
  const d = PLAN.driver;
  const prompt = `${d.prompt}\n\n${tagFor("main")}`;
  const output = ["--output-format", "stream-json", "--verbose"];
  const args = [...(d.mode === "print" ? ["-p", prompt] : ["-p", "--input-format", "stream-json"]), ...output,
    "--permission-mode", d.permission_mode, "--allowedTools", d.allowed_tools.join(" ")];
  const [exe, lead] = command(program);
  t0 = now();
  const child = spawn(exe, [...lead, ...args],
    { cwd: box.project, env, detached: true, stdio: [d.mode === "print" ? "ignore" : "pipe", "pipe", "pipe"] });
  const run = { exit: null, reason: null, stderr: "" };
  child.on("error", (e) => { run.stderr += `cannot start: ${e.message}\n`; run.exit = { t: now(), code: null }; });
  child.on("exit", (code, signal) => { run.exit = { t: now(), code, signal }; });
  child.stderr.on("data", (chunk) => { run.stderr += chunk; });
  readline.createInterface({ input: child.stdout }).on("line", (line) => onStreamLine(box, line));
  const send = (message) => {
    ev.lastActivity = now();
    if (child.stdin?.writable) child.stdin.write(JSON.stringify(message) + "\n");
  };
  const sendText = (text) => {
    ev.inputs.push({ t: now(), text });
    ev.awaitingTurn = true;
    send({ type: "user", message: { role: "user", content: text } });
  };
  const seen = new Map(); // pid -> command line of every process seen under the CLI (for the cleanup)
  if (d.mode === "session") sendText(prompt);
  const deadline = t0 + d.ceiling * 1000;
  const inputs = [...d.inputs];
  let due = null, probeSent = !d.probe, closedAt = d.mode === "print" ? Infinity : null, lastScan = 0;
  while (!run.exit) {
    await sleep(100);
    const t = now();
    if (t - lastScan > 1000) { lastScan = t; for (const p of processTree(child.pid)) seen.set(p.pid, p.args); }
    if (ending.signal) { run.reason = `interrupted (${ending.signal})`; break; }
    if (t >= deadline) { run.reason = `the ceiling (${d.ceiling} s) ended the run`; break; }
    if (closedAt !== null && t - closedAt > 10000) { run.reason = "the CLI outlived its closed stdin by 10 s"; break; }
    if (closedAt !== null) continue;
    const quiet = running() === 0 && !ev.awaitingTurn && t - ev.lastActivity >= d.settle * 1000;
    if (inputs.length) { // the next input waits for its trigger, then for its delay
      if (due === null && triggered(inputs[0].after, quiet)) due = t + inputs[0].delay * 1000;
      if (due === null || t < due) continue;
      const { action } = inputs.shift();
      due = null;
      if (action.kind === "text") { sendText(action.text); continue; }
      const request = { subtype: action.subtype };
      if (action.target) request.task_id = taskFor(action.target)?.id ?? action.target;
      if (action.message) request.message = action.message;
      send({ type: "control_request", request_id: `repro-${ev.inputs.length}`, request });
      ev.inputs.push({ t, text: `(control request ${action.subtype})`, control: true });
    } else if (quiet && !probeSent) { // an unrelated input: a notification that was only queued surfaces now
      probeSent = true;
      sendText(d.probe.text);
    } else if (quiet) {
      child.stdin.end();
      closedAt = t;
    }
  }
  ev.cleanupAt = now();
  run.reason ??= d.mode === "print" ? "the CLI exited" : "the session ended after its input closed";
  run.cleanup = await killTree(child.pid, seen, env[TAG_VAR]);
  await sleep(300); // the last stdout lines
  return run;
}

// ---- 8. Killing the whole tree: the CLI's process group, every process seen under it, and (Linux)
//         every process carrying this run's tag; SIGTERM, then SIGKILL for what is left after 2 s ----
const PS = ["/bin/ps", "/usr/bin/ps"].find((p) => fs.existsSync(p)) ?? "ps"; // not a PATH lookup under HOME

function processTable() { // live processes: a zombie holds nothing and cannot be killed
  const ps = spawnSync(PS, ["-A", "-o", "pid=,ppid=,pgid=,stat=,args="], { encoding: "utf8" });
  return (ps.stdout ?? "").split("\n").map((line) => /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s?(.*)$/.exec(line))
    .filter((m) => m && !m[4].startsWith("Z")).map((m) => ({ pid: +m[1], ppid: +m[2], pgid: +m[3], args: m[5] }));
}

function processTree(root) {
  const table = processTable();
  const found = table.filter((p) => p.pid === root || p.pgid === root);
  for (let i = 0; i < found.length; i++) {
    found.push(...table.filter((p) => p.ppid === found[i].pid && !found.includes(p)));
  }
  return found;
}

function taggedPids(tag) {
  if (process.platform !== "linux") return [];
  const carries = (pid) => {
    try { return fs.readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(`${TAG_VAR}=${tag}`); }
    catch { return false; }
  };
  return fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d) && carries(d)).map(Number);
}

async function killTree(root, seen, tag) {
  const targets = () => {
    const table = new Map(processTable().map((p) => [p.pid, p.args]));
    const pids = new Set([...processTree(root).map((p) => p.pid), ...taggedPids(tag)]);
    for (const [pid, args] of seen) if (table.get(pid) === args) pids.add(pid); // still the same process
    pids.delete(process.pid);
    return [...pids].filter((pid) => table.has(pid));
  };
  const signal = (pid, sig) => { try { process.kill(pid, sig); } catch { /* already gone */ } };
  const first = targets();
  signal(-root, "SIGTERM");
  first.forEach((pid) => signal(pid, "SIGTERM"));
  for (let i = 0; i < 20 && targets().length; i++) await sleep(100);
  const stubborn = targets();
  signal(-root, "SIGKILL");
  stubborn.forEach((pid) => signal(pid, "SIGKILL"));
  return `${first.length} process(es) signalled, ${stubborn.length} needed SIGKILL`;
}

// ---- 9. The verdict: a readable subset of wakeprobe's rules (src/classify/mod.rs) ----
// For each waiter W and background work K (the scenario's [[watch]] pairs, else each background call
// that spawns an agent or starts a tracked command), the first rule that applies decides:
//   1. K never started -> unknown.
//   2. K still ran when the run ended: W was finalized -> not-resumable; else unknown (a ceiling
//      is not a hang bound: what K would have done next was not observed).
//   3. W was finalized before K ended and never got K's notification -> not-resumable (finalized:
//      SubagentStop with no later request from W; for main, the session's end). Unless K failed:
//   4. K failed -> child-failed.
//   5. W made a request carrying K's <task-notification> -> woke; queued-until-input if a user input
//      came between K's end and that request.
//   6. The CLI killed K -> not-resumable. 7. The run ended within the settle window after K -> unknown.
//   8. A notification printed on stdout but never delivered -> not-resumable; none -> never-fired.
// A stdout line is never delivery: only a model request from W carrying the notification is.
const BUG = {
  "never-fired": "H1: the notification never fired",
  "not-resumable": "H2: it fired, but the waiter was not resumable",
  "queued-until-input": "H3: it waited for the next unrelated input",
  "child-failed": "H4: the background work itself failed",
};
const hooksNamed = (name) => ev.hooks.filter((h) => h.payload.hook_event_name === name);

function pairs() {
  if (PLAN.watch.length) return PLAN.watch.map(({ waiter, work }) => ({ waiter, work }));
  const background = ev.calls.filter((c) => c.background && (c.spawn || c.track));
  return background.map((c) => ({ waiter: c.agent, work: c.spawn || c.track }));
}

function agentIdOf(name) { // the CLI's id for a spawned agent: its task id, or the Agent call's result
  const post = hooksNamed("PostToolUse").find((h) => h.payload.tool_use_id === callFor(name)?.id);
  return taskFor(name)?.id ?? post?.payload.tool_response?.agentId ?? null;
}

function labelOf(taskId) {
  const call = ev.calls.find((c) => c.id === ev.tasks.get(taskId)?.toolUseId);
  return call ? call.spawn || call.track : taskId;
}

function judge(run, { waiter: w, work: k }) {
  const task = taskFor(k);
  if (!task) return { outcome: "unknown", facts: [`\`${k}\` never started (no task for it before ${run.reason})`] };
  const facts = [];
  // W: its requests (scripted, or past the end of its script: still W asking), its
  // SubagentStops, when it was finalized.
  const requests = ev.requests.filter((r) => r.agent === w && (r.route === "turn" || r.route === "script exhausted"));
  const wid = w === "main" ? null : agentIdOf(w);
  const stops = hooksNamed("SubagentStop").filter((h) => wid && h.payload.agent_id === wid);
  for (const stop of stops) {
    const listed = (stop.payload.background_tasks ?? []).find((b) => b.id === task.id);
    if (!listed) continue;
    facts.push(`SubagentStop for \`${w}\` at ${secs(stop.t)} listed \`${k}\` (${listed.type}) as ${listed.status}`);
  }
  const sessionEnd = hooksNamed("SessionEnd")[0]?.t ?? run.exit?.t ?? ev.cleanupAt;
  const lastStop = stops.at(-1);
  const stopped = lastStop && !requests.some((r) => r.t > lastStop.t);
  const finalizedAt = stopped ? lastStop.t : w === "main" ? sessionEnd : null;
  // K: its end (not one our cleanup caused), and W's first request carrying its notification.
  const end = [task.end, task.notified].find((e) => e && e.t < ev.cleanupAt) ?? null;
  if (end) {
    const lastResult = ev.results.filter((t) => t <= end.t).at(-1);
    const after = lastResult && end.status !== "completed"
      ? `, ${((end.t - lastResult) / 1000).toFixed(2)} s after the last result (at ${secs(lastResult)})` : "";
    const how = { killed: "was killed", stopped: "was stopped" }[end.status] ?? end.status;
    facts.push(`\`${k}\` ${how} at ${secs(end.t)}${after}`);
  }
  const delivery = requests.find((r) => r.notes.includes(task.id));
  const input = delivery && end && ev.inputs.find((i) => !i.control && i.t > end.t && i.t < delivery.t);
  if (delivery) {
    const latency = end ? ` (${(Math.max(0, delivery.t - end.t) / 1000).toFixed(2)} s after it ended)` : "";
    const request = `\`${w}\`'s request #${delivery.seq} at ${secs(delivery.t)}`;
    facts.push(`${request} carried \`${k}\`'s <task-notification>${latency}`);
    if (input) facts.push(`it came only after the input at ${secs(input.t)}: "${input.text}"`);
  } else if (stopped) {
    facts.push(`\`${w}\` made no model request after SubagentStop`);
  } else {
    facts.push(`\`${w}\` made no request carrying \`${k}\`'s <task-notification>`);
  }
  const verdict = (outcome, why) => ({ outcome, woken: !!delivery && !input, facts: why ? [...facts, why] : facts });
  if (!end) {
    const why = `\`${k}\` was still running when the run ended (${run.reason})`;
    if (finalizedAt !== null && finalizedAt < ev.cleanupAt) return verdict("not-resumable", why);
    return verdict("unknown", why);
  }
  const failed = ["failed", "error"].includes(end.status);
  if (!delivery && !failed && finalizedAt !== null && finalizedAt < end.t) {
    return verdict("not-resumable", `\`${w}\` was finalized at ${secs(finalizedAt)}, before \`${k}\` ended`);
  }
  if (failed) {
    return verdict("child-failed", `\`${k}\` failed on its own; its waiter was ${delivery ? "told" : "never told"}`);
  }
  if (delivery) return verdict(input ? "queued-until-input" : "woke");
  if (["killed", "stopped"].includes(end.status)) {
    return verdict("not-resumable", `the CLI killed \`${k}\` and ended the session`);
  }
  if (ev.cleanupAt - end.t < PLAN.driver.settle * 1000) return verdict("unknown", "the run ended too soon after it");
  if (task.notified) return verdict("not-resumable", "a task_notification was printed on stdout, but never delivered");
  return verdict("never-fired", "no notification for it appeared anywhere");
}

// The key events for a human: scripted requests, the hooks that matter, task changes, results, inputs.
function timeline(run) {
  const rows = [];
  const who = (id) => (id ? ev.calls.find((c) => c.spawn && agentIdOf(c.spawn) === id)?.spawn ?? id : "main");
  const listed = (tasks) => (tasks ?? []).map((b) => `${labelOf(b.id)} (${b.type}) ${b.status}`).join(", ") || "none";
  for (const r of ev.requests.filter((r) => r.route === "turn" || r.route === "script exhausted")) {
    const notes = r.newNotes.length ? `, carrying <task-notification> for ${r.newNotes.map(labelOf).join(", ")}` : "";
    rows.push([r.t, "api", r.agent, `request #${r.seq}${notes} -> ${r.answer}`]);
  }
  for (const { t, payload: p } of ev.hooks) {
    const name = p.hook_event_name;
    if (name === "SubagentStart") rows.push([t, "hook", who(p.agent_id), name]);
    if (name === "SubagentStop" || name === "Stop") {
      rows.push([t, "hook", who(p.agent_id), `${name}, background_tasks: ${listed(p.background_tasks)}`]);
    }
    if (name === "SessionEnd") rows.push([t, "hook", "", `SessionEnd (${p.reason})`]);
  }
  for (const [t, id, what] of ev.taskLines) rows.push([t, "cli", "", what(labelOf(id))]);
  for (const t of ev.results) rows.push([t, "cli", "", "result"]);
  for (const i of ev.inputs) rows.push([i.t, "input", "main", i.text.split("\n")[0]]);
  if (run.exit) rows.push([run.exit.t, "os", "", `the CLI exited (${run.exit.signal ?? `code ${run.exit.code}`})`]);
  return rows.sort((a, b) => a[0] - b[0]);
}

// ---- 10. Main ----
async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const params = Object.entries(PLAN.params).map(([k, v]) => `${k}=${v}`).join(", ");
  say(`Reproduction: ${PLAN.title}`);
  say(`  scenario ${PLAN.scenario}/${PLAN.variant}${params ? ` (${params})` : ""}, exported by wakeprobe`);
  say("  The model is a scripted fake Messages API on 127.0.0.1; the CLI runs in a throwaway project with its");
  say("  own HOME and an environment built from nothing (no real credentials). Times are seconds from its start.");
  const program = locateCli(opts);
  const box = buildSandbox();
  const tag = `${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  const server = await startFakeApi(box);
  const env = cliEnv(box, `http://127.0.0.1:${server.address().port}`, tag);
  const [exe, lead] = command(program);
  const version = spawnSync(exe, [...lead, "--version"], { env, cwd: box.project, encoding: "utf8", timeout: 30000 });
  say(`  CLI: ${program} (${version.stdout?.trim() || "it printed no version"})`);
  say(`  work folder: ${box.root}${opts.keep ? " (kept)" : ""}; processes carry ${TAG_VAR}=${tag}`);
  say();
  const ending = { signal: null };
  for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => { ending.signal = sig; });
  const run = await runCli(program, box, env, ending);
  server.close();
  server.closeAllConnections?.();
  const hookLines = fs.existsSync(box.hooks) ? fs.readFileSync(box.hooks, "utf8").split("\n") : [];
  ev.hooks = hookLines.filter(Boolean).map((line) => JSON.parse(line));
  if (!ev.requests.some((r) => r.route === "turn")) {
    say(`The CLI made no scripted model request (${run.reason}). Its stderr ends with:`);
    say(run.stderr.trim().split("\n").slice(-8).join("\n"));
    finish(box, opts, ending.signal ? 130 : 3);
  }
  say("Timeline:");
  for (const [t, source, agent, what] of timeline(run)) {
    say(`  ${secs(t).padStart(8)}  ${source.padEnd(5)} ${agent.padEnd(10)} ${what}`);
  }
  say(`  (${run.reason}; cleanup: ${run.cleanup})`);
  say();
  const verdicts = pairs().map((pair) => ({ pair, ...judge(run, pair) }));
  const hypothesis = (outcome) => (BUG[outcome] ? ` (${BUG[outcome]})` : "");
  for (const v of verdicts) {
    say(`\`${v.pair.waiter}\` waiting for \`${v.pair.work}\`: ${v.outcome}${hypothesis(v.outcome)}`);
    for (const fact of v.facts) say(`  - ${fact}`);
  }
  say();
  if (PLAN.expect) say(`wakeprobe's verdict for this scenario on Claude Code ${PINNED}: \`${PLAN.expect}\`.`);
  if (!verdicts.length) { say("No background work to judge."); finish(box, opts, 2); }
  if (ending.signal) { say(`Interrupted (${ending.signal}).`); finish(box, opts, 130); }
  // The first pair that is not `woke` names the result; the exit code says whether every waiter was woken.
  const first = verdicts.find((v) => v.outcome !== "woke") ?? verdicts[0];
  const notWoken = verdicts.find((v) => !v.woken && v.outcome !== "unknown");
  say(`RESULT: ${first.outcome}${hypothesis(first.outcome)}.`);
  if (notWoken) {
    say(`The bug reproduces: \`${notWoken.pair.waiter}\` was not woken by \`${notWoken.pair.work}\`.`);
    finish(box, opts, 1);
  }
  if (verdicts.some((v) => !v.woken)) { say("The evidence does not decide."); finish(box, opts, 2); }
  say("Every waiter was woken by its background work's notification.");
  finish(box, opts, 0);
}

function finish(box, opts, code) {
  if (opts.keep) say(`evidence: ${box.stream}, ${box.hooks}, ${box.journal}`);
  else fs.rmSync(box.root, { recursive: true, force: true });
  process.exit(code);
}

main().catch((e) => fail(3, e.stack ?? String(e)));
