#!/usr/bin/env node
// A standalone reproduction, exported by wakeprobe (`wakeprobe export`). Node 18+, nothing else.
// Exported: __WAKEPROBE_ABOUT__
//
// It runs the real Claude Code CLI once against a scripted stand-in for the Anthropic Messages
// API and says whether background work (a subagent, a `run_in_background` shell task) woke the
// agent that waited for it:
//   1. finds the CLI (--claude-bin PATH), or installs the named version with npm into a cache
//      folder (--cache DIR, default ~/.cache/wakeprobe-repro/VERSION; the only network use);
//   2. starts a fake Messages API on 127.0.0.1 that plays the embedded script (PLAN below): each
//      agent is recognised by a tag in its prompt, `[wakeprobe:agent=NAME]`; side calls (titles,
//      the safety classifier, count_tokens) get harmless answers; every request is journaled;
//   3. builds a throwaway project and HOME (workspace trust pre-accepted, recorder hooks in
//      .claude/settings.json) and runs the CLI there with a scrubbed environment: no inherited
//      ANTHROPIC_* or proxy variables, ANTHROPIC_BASE_URL on loopback, a dummy key;
//   4. records hook payloads, stream-json lines and API requests on one clock, ends the run at
//      the scenario's ceiling at the latest, and kills the whole process tree (background tasks
//      too: SIGTERM, then SIGKILL);
//   5. prints the key timeline, the facts that decide, and a verdict.
//
// Usage: node repro.mjs [--claude-bin PATH | --claude-version V] [--cache DIR] [--keep]
// Exit:  0 the waiter was woken; 1 it was not (the bug reproduces); 2 usage error or the
//        evidence does not decide; 3 the CLI could not be installed or started.

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";

// ---------------------------------------------------------------------------------------------
// 1. The scenario: wakeprobe's resolved plan (driver, prompt, ceiling, each agent's steps).
// ---------------------------------------------------------------------------------------------
const PLAN = "__WAKEPROBE_PLAN__";
const CLI_VERSION = "__WAKEPROBE_CLI_VERSION__";

const PACKAGE = "@anthropic-ai/claude-code";
const DUMMY_KEY = "sk-ant-repro-dummy-key-000000000000000000000000000";
const TAG_VAR = "WAKEPROBE_REPRO_RUN"; // every process of the run inherits it (for the cleanup)
const TERMINAL = ["completed", "failed", "killed", "stopped", "error", "cancelled", "canceled"];
const tagFor = (agent) => `[wakeprobe:agent=${agent}]`;

// ---------------------------------------------------------------------------------------------
// 2. Command line, output, the clock.
// ---------------------------------------------------------------------------------------------
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
    else if (arg === "-h" || arg === "--help") { console.log(USAGE); process.exit(0); }
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
let t0 = now(); // reset when the CLI starts; every printed time is relative to it
const secs = (t) => `${((t - t0) / 1000).toFixed(2)} s`;
const quote = (s) => `'${String(s).replace(/'/g, "'\\''")}'`; // one word for a POSIX shell

// ---------------------------------------------------------------------------------------------
// 3. The CLI: a binary given by path, or the version installed once into the cache with npm.
// ---------------------------------------------------------------------------------------------
function entryIn(dir) {
  try {
    const pkgDir = path.join(dir, "node_modules", PACKAGE);
    const manifest = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
    const bin = typeof manifest.bin === "string" ? manifest.bin : manifest.bin?.claude;
    const entry = bin && path.join(pkgDir, bin);
    return entry && fs.existsSync(entry) ? entry : null;
  } catch {
    return null;
  }
}

// A JS entry point (older versions) runs under this node; a native binary runs as is.
const command = (program) => (/\.(c|m)?js$/.test(program) ? [process.execPath, [program]] : [program, []]);

function locateCli(opts) {
  if (opts.bin) {
    if (!fs.existsSync(opts.bin)) fail(3, `--claude-bin ${opts.bin}: no such file`);
    return opts.bin;
  }
  const cacheRoot = opts.cache ?? path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "wakeprobe-repro");
  const dir = path.join(cacheRoot, opts.version);
  const cached = entryIn(dir);
  if (cached) return cached;
  // Install into a side folder, then rename: an interrupted install never looks complete.
  const partial = `${dir}.partial-${process.pid}`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.mkdirSync(partial, { recursive: true });
  say(`installing ${PACKAGE}@${opts.version} into ${dir} (npm, once per version) ...`);
  const npm = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--no-save", "--loglevel=error",
    "--prefix", partial, `${PACKAGE}@${opts.version}`], { stdio: ["ignore", "inherit", "inherit"] });
  if (npm.status !== 0 || !entryIn(partial)) {
    fs.rmSync(partial, { recursive: true, force: true });
    fail(3, `npm could not install ${PACKAGE}@${opts.version}${npm.error ? ` (${npm.error.message})` : ""}; or pass --claude-bin PATH`);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  fs.renameSync(partial, dir);
  return entryIn(dir);
}

// ---------------------------------------------------------------------------------------------
// 4. The throwaway world: project (recorder hooks), HOME (trust pre-accepted), TMPDIR, env.
// ---------------------------------------------------------------------------------------------
const HOOK_EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "SubagentStart",
  "SubagentStop", "Stop", "SessionEnd", "Notification", "TeammateIdle", "PreCompact"];

// The hook command: appends `{"t": ms since the epoch at its start, "payload": ...}` to a file.
const RECORDER = `const t = performance.timeOrigin; let data = "";
process.stdin.setEncoding("utf8").on("data", (d) => (data += d)).on("end", () => {
  let payload; try { payload = JSON.parse(data); } catch { payload = { unparsed: data }; }
  require("fs").appendFileSync(process.argv[2], JSON.stringify({ t, payload }) + "\\n");
});
`;

function buildSandbox() {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "wakeprobe-repro-")));
  const box = { root, project: path.join(root, "project"), home: path.join(root, "home"),
    tmp: path.join(root, "tmp"), hooks: path.join(root, "hooks.jsonl"),
    stream: path.join(root, "stream.jsonl"), journal: path.join(root, "api-journal.jsonl") };
  for (const dir of [box.project, box.home, box.tmp, path.join(box.project, ".claude")]) fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(box.project, "README.md"), "A throwaway project for a Claude Code reproduction.\n");
  const recorder = path.join(root, "record-hook.cjs");
  fs.writeFileSync(recorder, RECORDER);
  const command = `${quote(process.execPath)} ${quote(recorder)} ${quote(box.hooks)}`;
  const hooks = Object.fromEntries(HOOK_EVENTS.map((e) => [e, [{ matcher: "*", hooks: [{ type: "command", command }] }]]));
  fs.writeFileSync(path.join(box.project, ".claude", "settings.json"), JSON.stringify({ hooks }, null, 2));
  fs.writeFileSync(path.join(box.home, ".claude.json"), JSON.stringify({
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
    .filter((d) => d && d !== realHome && !d.startsWith(realHome + path.sep));
  dirs.push(path.dirname(process.execPath)); // node itself, for the hook recorder and JS builds
  return { PATH: dirs.join(path.delimiter), HOME: box.home, TMPDIR: box.tmp, USER: "repro", LOGNAME: "repro",
    SHELL: "/bin/bash", LANG: "C.UTF-8", TERM: "dumb", ANTHROPIC_BASE_URL: apiUrl, ANTHROPIC_API_KEY: DUMMY_KEY,
    DISABLE_TELEMETRY: "1", DISABLE_ERROR_REPORTING: "1", DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", [TAG_VAR]: tag, ...PLAN.driver.env };
}

// ---------------------------------------------------------------------------------------------
// 5. Evidence on one clock: what the run saw, filled in by the fake API and the stdout reader.
// ---------------------------------------------------------------------------------------------
const ev = {
  requests: [], // {seq, t, agent, route, step, answer, notes: task ids in <task-notification>s}
  calls: [],    // tool calls the script made: {id, agent, tool, spawn, track, background, t}
  tasks: new Map(), // task id -> {id, type, toolUseId, t, end: {t, status}, notified: {t, status}}
  results: [],  // times of stream-json `result` lines
  inputs: [],   // {t, text}: user input sent in a session
  turnEnds: {}, // agent -> turns it ended (end_turn answers)
  hooks: [],    // {t, payload}, read from the recorder's file at the end
  lastActivity: 0,
  awaitingTurn: false, // a user input was sent and no `result` came since
  cleanupAt: Infinity, // ends after this are our cleanup's doing, not the CLI's
};
const append = (file, value) => fs.appendFileSync(file, JSON.stringify(value) + "\n");

function onStreamLine(box, text) {
  const t = now();
  ev.lastActivity = t;
  append(box.stream, { t, line: text });
  let m;
  try { m = JSON.parse(text); } catch { return; }
  if (m.type === "result") { ev.results.push(t); ev.awaitingTurn = false; }
  if (m.type !== "system" || !m.task_id) return;
  const task = ev.tasks.get(m.task_id) ?? { id: m.task_id, t, starts: 0 };
  ev.tasks.set(m.task_id, task);
  if (m.subtype === "task_started") {
    Object.assign(task, { type: m.task_type, toolUseId: m.tool_use_id ?? task.toolUseId, starts: task.starts + 1 });
    if (task.starts > 1) delete task.end; // re-invoked: running again
  } else if (m.subtype === "task_updated" && TERMINAL.includes(m.patch?.status) && !task.end) {
    task.end = { t, status: m.patch.status };
  } else if (m.subtype === "task_notification") {
    task.notified = { t, status: m.status, summary: m.summary };
    task.toolUseId ??= m.tool_use_id;
  }
}

// ---------------------------------------------------------------------------------------------
// 6. The fake Messages API: real SSE, routing by the prompt's tag, a step per assistant turn.
// ---------------------------------------------------------------------------------------------
function textOf(value) { // every string under `text`/`content`, like a reader of the transcript
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(textOf).join("\n");
  if (value && typeof value === "object") return [value.text, value.content].filter((v) => v != null).map(textOf).join("\n");
  return "";
}

const notifiedIds = (text) => [...text.matchAll(/<task-notification>[\s\S]*?<task-id>\s*([^<\s]+)\s*<\/task-id>/g)].map((m) => m[1]);

function readRequest(body) {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const firstUser = messages.find((m) => m.role === "user");
  const tag = /\[wakeprobe:agent=([^\]]+)\]/.exec(textOf(firstUser?.content))?.[1];
  const system = textOf(body.system);
  const tools = (body.tools ?? []).map((t) => t.name);
  let side = null;
  if ((body.stop_sequences ?? []).includes("</block>") || system.includes("You are a security monitor")) side = "safety-classifier";
  else if (tools.length === 0) side = "no-tools side call (title, summary)";
  return { messages, tag, tools, side, stream: body.stream === true, model: body.model ?? "claude-fake",
    assistants: messages.filter((m) => m.role === "assistant").length, notes: notifiedIds(textOf(messages)) };
}

const cursors = {}; // agent -> {step, last: assistant count served, repeats}

// The step for a request: a new assistant message moves on (a retry repeats the same step);
// a step with `until = "notified"` repeats while no new notification arrives.
function nextStep(agent, view, newNotes) {
  const steps = PLAN.agents[agent];
  const c = (cursors[agent] ??= { step: 0, last: null, repeats: 0 });
  if (c.last !== null && c.last !== view.assistants) {
    const s = steps[c.step];
    if (s?.until === "notified" && newNotes.length === 0 && c.repeats < s.max_repeats) c.repeats++;
    else { c.step++; c.repeats = 0; }
  }
  c.last = view.assistants;
  return c.step < steps.length ? c.step : null;
}

// `{{@agent-id:NAME}}` in a tool input: the id the CLI gave agent NAME (from the Agent result).
function fillAgentIds(value, messages) {
  if (typeof value === "string") {
    return value.replace(/\{\{@agent-id:([^}]+)\}\}/g, (whole, name) => {
      const call = ev.calls.find((c) => c.spawn === name.trim());
      const result = messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []))
        .find((b) => b.type === "tool_result" && b.tool_use_id === call?.id);
      return /agent_?[iI]d: ([\w@.-]+)/.exec(textOf(result?.content))?.[1] ?? whole;
    });
  }
  if (Array.isArray(value)) return value.map((v) => fillAgentIds(v, messages));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillAgentIds(v, messages)]));
  return value;
}

function scriptedContent(agent, step, seq, view) {
  const content = [];
  if (step.say != null) content.push({ type: "text", text: step.say });
  const call = step.call;
  if (!call) return content;
  let name = call.tool; // the CLI renamed Task to Agent once; offer the name this CLI has
  if (view.tools.length && !view.tools.includes(name) && ["Agent", "Task"].includes(name)) name = name === "Agent" ? "Task" : "Agent";
  const input = fillAgentIds(structuredClone(call.input), view.messages);
  if (call.spawn) input.prompt = `${input.prompt}\n\n${tagFor(call.spawn)}`;
  const id = `toolu_repro${String(seq).padStart(4, "0")}_${agent.replace(/-/g, "_")}`;
  ev.calls.push({ id, agent, tool: name, spawn: call.spawn, track: call.track, background: input.run_in_background === true, t: now() });
  content.push({ type: "tool_use", id, name, input });
  return content;
}

function sse(message) {
  const out = [];
  const frame = (type, data) => out.push(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  const usage = { input_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 };
  frame("message_start", { message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage } });
  message.content.forEach((block, index) => {
    if (block.type === "text") {
      frame("content_block_start", { index, content_block: { type: "text", text: "" } });
      frame("content_block_delta", { index, delta: { type: "text_delta", text: block.text } });
    } else {
      frame("content_block_start", { index, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } });
      const json = Array.from(JSON.stringify(block.input)); // in pieces, as the real API streams it
      for (let i = 0; i < json.length; i += 64) frame("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: json.slice(i, i + 64).join("") } });
    }
    frame("content_block_stop", { index });
  });
  frame("message_delta", { delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence }, usage: { output_tokens: message.usage.output_tokens } });
  frame("message_stop", {});
  return out.join("");
}

function answer(box, req, res, raw) {
  const t = now();
  const seq = ev.requests.length + 1;
  ev.lastActivity = t;
  const entry = { seq, t, method: req.method, path: req.url, agent: null, route: "unrouted", step: null, answer: "text", notes: [] };
  const reply = (status, type, body, delay = 0) => {
    ev.requests.push(entry);
    append(box.journal, entry);
    setTimeout(() => { res.writeHead(status, { "content-type": type, "cache-control": "no-cache", "request-id": `req_repro_${seq}` }); res.end(body); }, delay);
  };
  const route = req.url.split("?")[0];
  if (req.method === "POST" && route === "/v1/messages/count_tokens") {
    entry.route = "count_tokens";
    return reply(200, "application/json", JSON.stringify({ input_tokens: Math.ceil(raw.length / 4) }));
  }
  let body = null;
  try { body = JSON.parse(raw); } catch { /* answered below */ }
  if (req.method !== "POST" || route !== "/v1/messages" || !body) {
    entry.route = "not served";
    return reply(404, "application/json", JSON.stringify({ type: "error", error: { type: "not_found_error", message: `the repro's fake API does not serve ${req.method} ${req.url}` } }));
  }
  const view = readRequest(body);
  const known = view.tag && PLAN.agents[view.tag] ? view.tag : null;
  // Notifications that came after this agent's last assistant message are new to it.
  const lastAssistant = view.messages.map((m) => m.role).lastIndexOf("assistant");
  const newNotes = notifiedIds(textOf(view.messages.slice(lastAssistant + 1)));
  Object.assign(entry, { agent: known, notes: view.notes, newNotes });
  let content = [{ type: "text", text: "OK." }];
  let stop = "end_turn", stopSequence = null, delay = 0;
  if (view.side === "safety-classifier") {
    Object.assign(entry, { route: view.side, answer: "<block>no" });
    content = [{ type: "text", text: "<block>no" }];
    stop = "stop_sequence"; stopSequence = "</block>";
  } else if (view.side || !known) {
    entry.route = view.side ?? "unrouted";
  } else {
    const step = nextStep(known, view, newNotes);
    if (step === null) {
      Object.assign(entry, { route: "script exhausted", answer: "ends its turn (script exhausted)" });
      content = [{ type: "text", text: `(repro: the script for \`${known}\` has no more steps.)` }];
    } else {
      const s = PLAN.agents[known][step];
      content = scriptedContent(known, s, seq, view);
      stop = s.call ? "tool_use" : "end_turn";
      const c = s.call && ev.calls.at(-1);
      const what = c ? `calls ${c.tool}${c.background ? " in the background" : ""}${c.spawn || c.track ? ` (\`${c.spawn || c.track}\`)` : ""}`
        : `ends its turn${s.say ? `: "${s.say}"` : ""}`;
      Object.assign(entry, { route: "turn", step, answer: what });
      delay = s.think * 1000;
    }
    if (stop === "end_turn") ev.turnEnds[known] = (ev.turnEnds[known] ?? 0) + 1;
  }
  const message = { id: `msg_repro_${String(seq).padStart(4, "0")}`, type: "message", role: "assistant", model: view.model,
    content, stop_reason: stop, stop_sequence: stopSequence, usage: { input_tokens: 10, output_tokens: 5 } };
  if (view.stream) reply(200, "text/event-stream", sse(message), delay);
  else reply(200, "application/json", JSON.stringify(message), delay);
}

function startFakeApi(box) {
  const server = http.createServer({ noDelay: true }, (req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c)).on("end", () => answer(box, req, res, Buffer.concat(chunks).toString("utf8")));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

// ---------------------------------------------------------------------------------------------
// 7. Running the CLI: print mode, or a kept-alive stream-json session with scheduled inputs.
// ---------------------------------------------------------------------------------------------
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const callFor = (name) => ev.calls.find((c) => c.spawn === name || c.track === name);
const taskFor = (name) => { const c = callFor(name); return c && [...ev.tasks.values()].find((t) => t.toolUseId === c.id); };
const running = () => [...ev.tasks.values()].filter((t) => !t.end && !t.notified).length;

function triggered(after, quiet) {
  const arg = after.arg;
  switch (after.on) {
    case "start": return true;
    case "result": return ev.results.length >= arg;
    case "turn-end": return (ev.turnEnds[arg[0]] ?? 0) >= arg[1];
    case "task-start": return !!taskFor(arg);
    case "task-end": { const k = taskFor(arg); return !!(k && (k.end || k.notified)); }
    default: return quiet; // "quiet"
  }
}

async function runCli(program, box, env, ending) {
  const d = PLAN.driver;
  const prompt = `${d.prompt}\n\n${tagFor("main")}`;
  const out = ["--output-format", "stream-json", "--verbose"];
  const args = [...(d.mode === "print" ? ["-p", prompt, ...out] : ["-p", "--input-format", "stream-json", ...out]),
    "--permission-mode", d.permission_mode, "--allowedTools", d.allowed_tools.join(" ")];
  const [exe, lead] = command(program);
  t0 = now();
  const child = spawn(exe, [...lead, ...args],
    { cwd: box.project, env, detached: true, stdio: [d.mode === "print" ? "ignore" : "pipe", "pipe", "pipe"] });
  const run = { child, exit: null, reason: null, stderr: "" };
  child.on("error", (e) => { run.stderr += `cannot start: ${e.message}\n`; run.exit = { t: now(), code: null }; });
  child.on("exit", (code, signal) => { run.exit = { t: now(), code, signal }; });
  child.stderr.on("data", (d) => { run.stderr += d; });
  readline.createInterface({ input: child.stdout }).on("line", (line) => onStreamLine(box, line));
  const send = (m) => {
    ev.lastActivity = now();
    if (child.stdin?.writable) child.stdin.write(JSON.stringify(m) + "\n");
  };
  const sendText = (text) => {
    ev.inputs.push({ t: now(), text });
    ev.awaitingTurn = true;
    send({ type: "user", message: { role: "user", content: text } });
  };
  const treeSeen = new Map(); // pid -> command line, seen under the CLI while it ran (for the cleanup)
  if (d.mode === "session") sendText(prompt);
  const deadline = t0 + d.ceiling * 1000;
  const queue = [...d.inputs];
  let due = null, probeSent = !d.probe, closed = d.mode === "print", closedAt = 0, lastTreeScan = 0, ctl = 0;
  while (!run.exit) {
    await sleep(100);
    const t = now();
    if (t - lastTreeScan > 1000) { lastTreeScan = t; for (const p of processTree(child.pid)) treeSeen.set(p.pid, p.args); }
    if (ending.signal) { run.reason = `interrupted (${ending.signal})`; break; }
    if (t >= deadline) { run.reason = `the ceiling (${d.ceiling} s) ended the run`; break; }
    if (closed) { if (closedAt && t - closedAt > 10000) { run.reason = "the session did not end 10 s after its input closed"; break; } continue; }
    const quiet = running() === 0 && !ev.awaitingTurn && t - ev.lastActivity >= d.settle * 1000;
    if (queue.length) { // the next input: its trigger, then its delay
      if (due === null && triggered(queue[0].after, quiet)) due = t + queue[0].delay * 1000;
      if (due !== null && t >= due) {
        const { action } = queue.shift(); due = null;
        if (action.kind === "text") sendText(action.text);
        else {
          const request = { subtype: action.subtype };
          if (action.target) request.task_id = taskFor(action.target)?.id ?? action.target;
          if (action.message) request.message = action.message;
          send({ type: "control_request", request_id: `repro-${++ctl}`, request });
          ev.inputs.push({ t, text: `(control request ${action.subtype})`, control: true });
        }
      }
    } else if (quiet && !probeSent) { probeSent = true; sendText(d.probe.text); }
    else if (quiet) { child.stdin.end(); closed = true; closedAt = t; }
  }
  ev.cleanupAt = now();
  run.reason ??= d.mode === "print" ? "the CLI exited" : "the session ended after its input closed";
  run.leftovers = await killTree(child.pid, treeSeen, env[TAG_VAR]);
  await sleep(300); // the last stdout lines and hook records
  return run;
}

// ---------------------------------------------------------------------------------------------
// 8. Killing the whole process tree: the CLI's process group, every descendant seen while it
//    ran, and (Linux) every process carrying this run's tag in its environment.
// ---------------------------------------------------------------------------------------------
function processTable() { // live processes (zombies hold nothing and cannot be killed)
  const ps = spawnSync("ps", ["-A", "-o", "pid=,ppid=,pgid=,stat=,args="], { encoding: "utf8" });
  return (ps.stdout ?? "").split("\n").map((l) => /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s?(.*)$/.exec(l))
    .filter((m) => m && !m[4].startsWith("Z")).map((m) => ({ pid: +m[1], ppid: +m[2], pgid: +m[3], args: m[5] }));
}

function processTree(root) {
  const table = processTable();
  const found = table.filter((p) => p.pid === root || p.pgid === root);
  for (let i = 0; i < found.length; i++) found.push(...table.filter((p) => p.ppid === found[i].pid && !found.includes(p)));
  return found;
}

function taggedPids(tag) {
  if (process.platform !== "linux") return [];
  return fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d)).filter((pid) => {
    try { return fs.readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(`${TAG_VAR}=${tag}`); } catch { return false; }
  }).map(Number);
}

async function killTree(root, seen, tag) {
  const targets = () => {
    const table = new Map(processTable().map((p) => [p.pid, p.args]));
    const pids = new Set([...processTree(root).map((p) => p.pid), ...taggedPids(tag)]);
    for (const [pid, args] of seen) if (table.get(pid) === args) pids.add(pid); // still the same process
    pids.delete(process.pid);
    return [...pids].filter((pid) => table.has(pid));
  };
  const signal = (pid, sig) => { try { process.kill(pid, sig); return true; } catch { return false; } };
  const first = targets();
  signal(-root, "SIGTERM");
  first.forEach((pid) => signal(pid, "SIGTERM"));
  for (let i = 0; i < 20 && targets().length; i++) await sleep(100);
  const stubborn = targets();
  signal(-root, "SIGKILL");
  stubborn.forEach((pid) => signal(pid, "SIGKILL"));
  return { signalled: first.length, killed: stubborn.length };
}

// ---------------------------------------------------------------------------------------------
// 9. The verdict, a readable subset of wakeprobe's rules (src/classify/mod.rs). For each waiter
//    W and background work K ([[watch]] pairs, else every background call that spawns/tracks):
//    K never started -> unknown. W made a request carrying K's <task-notification> -> woke (or
//    queued-until-input when a user input came first). K failed -> child-failed. K still ran
//    at the end: W finalized -> not-resumable, ceiling -> child-failed (hung), else unknown.
//    W finalized (SubagentStop with no later request; the session's end for main) before K
//    ended, or the CLI killed K -> not-resumable. A notification printed but never delivered
//    -> not-resumable; nothing anywhere -> never-fired. A stdout line is never delivery.
// ---------------------------------------------------------------------------------------------
const BUG = { "never-fired": "H1: the notification never fired", "not-resumable": "H2: it fired, but the waiter was not resumable",
  "queued-until-input": "H3: it waited for the next unrelated input", "child-failed": "H4: the background work itself failed" };

function pairs() {
  if (PLAN.watch.length) return PLAN.watch.map((w) => ({ waiter: w.waiter, work: w.work }));
  return ev.calls.filter((c) => c.background && (c.spawn || c.track)).map((c) => ({ waiter: c.agent, work: c.spawn || c.track }));
}

function agentIdOf(name) {
  if (name === "main") return null;
  const call = callFor(name);
  const post = ev.hooks.find((h) => h.payload.hook_event_name === "PostToolUse" && h.payload.tool_use_id === call?.id);
  return taskFor(name)?.id ?? post?.payload.tool_response?.agentId ?? null;
}

function labelOf(taskId) {
  const task = ev.tasks.get(taskId);
  const call = ev.calls.find((c) => c.id === task?.toolUseId);
  return call ? (call.spawn || call.track) : taskId;
}

function judge(run, { waiter: w, work: k }) {
  const facts = [];
  const task = taskFor(k);
  if (!callFor(k) || !task) return { outcome: "unknown", facts: [`\`${k}\` never started (no tool call or task for it)`] };
  const requests = ev.requests.filter((r) => r.agent === w && r.route === "turn");
  const wid = agentIdOf(w);
  const stops = ev.hooks.filter((h) => h.payload.hook_event_name === "SubagentStop" && wid && h.payload.agent_id === wid);
  const stop = stops.at(-1);
  const sessionEnd = ev.hooks.find((h) => h.payload.hook_event_name === "SessionEnd")?.t ?? run.exit?.t ?? ev.cleanupAt;
  let finalizedAt = w === "main" ? sessionEnd : null;
  if (stop && !requests.some((r) => r.t > stop.t)) finalizedAt = stop.t;
  for (const s of stops) {
    const listed = (s.payload.background_tasks ?? []).find((b) => b.id === task.id);
    if (listed) facts.push(`SubagentStop for \`${w}\` at ${secs(s.t)} listed \`${k}\` (${listed.type}) as ${listed.status}`);
  }
  const end = task.end && task.end.t < ev.cleanupAt ? task.end : (task.notified && task.notified.t < ev.cleanupAt ? task.notified : null);
  const lastResult = ev.results.filter((t) => !end || t <= end.t).at(-1);
  const ended = end && (end.status === "killed" ? "was killed" : end.status === "stopped" ? "was stopped" : end.status);
  if (end) facts.push(`\`${k}\` ${ended} at ${secs(end.t)}${lastResult && end.status !== "completed" ? `, ${((end.t - lastResult) / 1000).toFixed(2)} s after the last result (at ${secs(lastResult)})` : ""}`);
  const delivery = requests.find((r) => r.notes.includes(task.id));
  if (delivery) {
    const latency = end ? Math.max(0, delivery.t - end.t) : 0;
    facts.push(`\`${w}\`'s request #${delivery.seq} at ${secs(delivery.t)} carried \`${k}\`'s <task-notification>${end ? ` (${(latency / 1000).toFixed(2)} s after it ended)` : ""}`);
    const input = ev.inputs.find((i) => !i.control && end && i.t > end.t && i.t < delivery.t);
    if (input) return { outcome: "queued-until-input", facts: [...facts, `it came only after the input at ${secs(input.t)}: "${input.text}"`] };
    return { outcome: "woke", facts, latency };
  }
  const after = finalizedAt === null ? [] : requests.filter((r) => r.t > finalizedAt);
  if (finalizedAt !== null && w !== "main") facts.push(`\`${w}\` made ${after.length ? `${after.length} request(s), none carrying the notification,` : "no model request"} after SubagentStop`);
  else facts.push(`\`${w}\` made no request carrying \`${k}\`'s <task-notification>`);
  if (end && ["failed", "error"].includes(end.status)) return { outcome: "child-failed", facts };
  if (!end) {
    facts.push(`\`${k}\` was still running when the run ended (${run.reason})`);
    if (finalizedAt !== null && finalizedAt < ev.cleanupAt) return { outcome: "not-resumable", facts };
    return { outcome: run.reason.startsWith("the ceiling") ? "child-failed" : "unknown", facts };
  }
  if (finalizedAt !== null && finalizedAt < end.t) return { outcome: "not-resumable", facts: [...facts, `\`${w}\` was finalized at ${secs(finalizedAt)}, before \`${k}\` ended`] };
  if (["killed", "stopped"].includes(end.status)) return { outcome: "not-resumable", facts: [...facts, `the CLI killed \`${k}\` and ended the session`] };
  if (ev.cleanupAt - end.t < PLAN.driver.settle * 1000) return { outcome: "unknown", facts: [...facts, "the run ended too soon after it"] };
  return { outcome: task.notified ? "not-resumable" : "never-fired", facts: [...facts, task.notified ? "a task_notification was printed on stdout, but never delivered" : "no notification for it appeared anywhere"] };
}

// The key events, for a human: requests, the hooks that matter, task changes, results, inputs.
function timeline(run) {
  const rows = [];
  const who = (agentId) => (agentId ? ev.calls.find((c) => c.spawn && taskFor(c.spawn)?.id === agentId)?.spawn ?? agentId : "main");
  const bg = (list) => (list ?? []).map((b) => `${labelOf(b.id)} (${b.type}) ${b.status}`).join(", ") || "none";
  for (const r of ev.requests) {
    if (r.route !== "turn" && r.route !== "script exhausted") continue;
    const notes = r.newNotes.length ? `, carrying <task-notification> for ${r.newNotes.map(labelOf).join(", ")}` : "";
    rows.push([r.t, "api", r.agent, `request #${r.seq}${notes} -> ${r.answer}`]);
  }
  for (const h of ev.hooks) {
    const p = h.payload, name = p.hook_event_name;
    if (["SubagentStart", "SubagentStop", "Stop"].includes(name)) rows.push([h.t, "hook", who(p.agent_id), `${name}${name === "SubagentStart" ? "" : `, background_tasks: ${bg(p.background_tasks)}`}`]);
    if (name === "SessionEnd") rows.push([h.t, "hook", "", `SessionEnd (${p.reason})`]);
  }
  for (const task of ev.tasks.values()) {
    rows.push([task.t, "cli", "", `task \`${labelOf(task.id)}\` (${task.type}) started`]);
    if (task.end) rows.push([task.end.t, "cli", "", `task \`${labelOf(task.id)}\` ${task.end.status}`]);
    if (task.notified) rows.push([task.notified.t, "cli", "", `task_notification for \`${labelOf(task.id)}\`: ${task.notified.status}${task.notified.summary ? `, "${task.notified.summary}"` : ""}`]);
  }
  ev.results.forEach((t) => rows.push([t, "cli", "", "result"]));
  ev.inputs.forEach((i) => rows.push([i.t, "input", "main", i.text.split("\n")[0]]));
  if (run.exit) rows.push([run.exit.t, "os", "", `CLI exited (${run.exit.signal ?? `code ${run.exit.code}`})`]);
  return rows.sort((a, b) => a[0] - b[0]);
}

// ---------------------------------------------------------------------------------------------
// 10. Main.
// ---------------------------------------------------------------------------------------------
async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const params = Object.entries(PLAN.params).map(([k, v]) => `${k}=${v}`).join(", ");
  say(`Reproduction: ${PLAN.title}`);
  say(`  scenario ${PLAN.scenario}/${PLAN.variant}${params ? ` (${params})` : ""}, exported by wakeprobe; Claude Code ${opts.bin ? "from --claude-bin" : opts.version}`);
  say("  The model is a scripted fake Messages API on 127.0.0.1; the CLI runs in a throwaway project with");
  say("  its own HOME and a scrubbed environment (no real credentials). Times are seconds from the CLI's start.");
  const program = locateCli(opts);
  const box = buildSandbox();
  const tag = `${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  const server = await startFakeApi(box);
  const env = cliEnv(box, `http://127.0.0.1:${server.address().port}`, tag);
  const [exe, lead] = command(program);
  const version = spawnSync(exe, [...lead, "--version"], { env, cwd: box.project, encoding: "utf8", timeout: 30000 });
  say(`  CLI: ${program} (${(version.stdout ?? "").trim() || "no version printed"})`);
  say(`  work folder: ${box.root}${opts.keep ? " (kept)" : ""}; processes carry ${TAG_VAR}=${tag}`);
  say();
  const ending = { signal: null };
  for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => { ending.signal = sig; });
  const run = await runCli(program, box, env, ending);
  server.close();
  server.closeAllConnections?.();
  try {
    ev.hooks = fs.readFileSync(box.hooks, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  } catch { /* no hook fired */ }
  if (!ev.requests.some((r) => r.route === "turn")) {
    say(`The CLI made no scripted model request (${run.reason}). Its stderr:\n${run.stderr.trim().split("\n").slice(-8).join("\n")}`);
    finish(box, opts, ending.signal ? 130 : 3);
  }
  say("Timeline:");
  const rows = timeline(run);
  for (const [t, source, agent, what] of rows) say(`  ${secs(t).padStart(8)}  ${source.padEnd(5)} ${agent.padEnd(10)} ${what}`);
  say(`  (${run.reason}; cleanup: ${run.leftovers.signalled} process(es) signalled, ${run.leftovers.killed} needed SIGKILL)`);
  say();
  const verdicts = pairs().map((pair) => ({ pair, ...judge(run, pair) }));
  for (const v of verdicts) {
    say(`\`${v.pair.waiter}\` waiting for \`${v.pair.work}\`: ${v.outcome}${BUG[v.outcome] ? ` (${BUG[v.outcome]})` : ""}`);
    v.facts.forEach((f) => say(`  - ${f}`));
  }
  const first = verdicts.find((v) => v.outcome !== "woke") ?? verdicts[0];
  say();
  if (!first) { say("No background work to judge."); finish(box, opts, 2); }
  if (PLAN.expect) say(`wakeprobe recorded \`${PLAN.expect}\` for this scenario on its pinned CLI (${CLI_VERSION}).`);
  if (ending.signal) { say(`Interrupted (${ending.signal}).`); finish(box, opts, 130); }
  if (first.outcome === "woke") { say("RESULT: woke. The waiter was woken by its background work's notification."); finish(box, opts, 0); }
  if (first.outcome === "unknown") { say("RESULT: unknown. The evidence does not decide."); finish(box, opts, 2); }
  say(`RESULT: ${first.outcome}. The bug reproduces: \`${first.pair.waiter}\` was not woken for \`${first.pair.work}\`.`);
  finish(box, opts, 1);
}

function finish(box, opts, code) {
  if (opts.keep) say(`evidence: ${box.stream}, ${box.hooks}, ${box.journal}`);
  else fs.rmSync(box.root, { recursive: true, force: true });
  process.exit(code);
}

main().catch((e) => fail(3, e.stack ?? String(e)));
