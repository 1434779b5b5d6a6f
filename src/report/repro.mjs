#!/usr/bin/env node
// A standalone reproduction, exported by wakeprobe (`wakeprobe export`). Node 18+, nothing else.
// Exported: __WAKEPROBE_ABOUT__
//
// It runs the real Claude Code CLI once against a scripted stand-in for the Anthropic Messages API
// and judges the run as wakeprobe does: whether background work (a subagent, a `run_in_background`
// shell task) woke the agent that waited for it, and each check the scenario states, against what
// the CLI should do (`want`). In order:
//   1. finds the CLI (--claude-bin PATH), or installs the named version with npm into a cache folder
//      (--cache DIR, default ~/.cache/wakeprobe-repro/VERSION): the only network use;
//   2. serves a fake Messages API on 127.0.0.1 playing the embedded script (PLAN): an agent is known
//      by a tag in its prompt, `[wakeprobe:agent=NAME]`; side calls (titles, the safety classifier,
//      count_tokens) get harmless answers; a tool the CLI defers is loaded with ToolSearch first;
//   3. runs the CLI in a throwaway project and HOME (workspace trust pre-accepted, recorder hooks in
//      .claude/settings.json, tracked commands wrapped by a small tracker) with an environment built
//      from nothing: no inherited ANTHROPIC_* or proxy variables, ANTHROPIC_BASE_URL on loopback;
//   4. records hooks, stream-json lines, requests and tracked processes on one clock, as a timeline
//      in wakeprobe's own shape (timeline.json); stops at the scenario's ceiling at the latest;
//      kills the whole process tree, background tasks included;
//   5. judges that timeline with wakeprobe's rules and checks (section 9) and prints the timeline,
//      each verdict and check with its witness, and the result.
// Usage: node repro.mjs [--claude-bin PATH | --claude-version V] [--cache DIR] [--keep] [--json]
//        node repro.mjs --judge DIR [--json]   judge a saved run folder (wakeprobe's, or --keep's)
// Exit:  0 the CLI did what the scenario wants; 1 it did not (the bug reproduces: a check fails its
//        `want`, or the verdict is not the one wanted); 2 usage error, or the evidence does not
//        decide; 3 the CLI could not be installed or started; 130 interrupted.

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";

// ---- 1. The scenario: wakeprobe's resolved plan (driver, prompt, ceiling, steps, checks) ----
const PLAN = "__WAKEPROBE_PLAN__";
const CLI_VERSION = "__WAKEPROBE_CLI_VERSION__";
const PINNED = "__WAKEPROBE_PINNED__"; // the version wakeprobe recorded PLAN.expect and each check's expect on

const PACKAGE = "@anthropic-ai/claude-code";
const DUMMY_KEY = "sk-ant-repro-dummy-key-000000000000000000000000000";
const TAG_VAR = "WAKEPROBE_REPRO_RUN"; // every process of the run inherits it: the cleanup finds them
const tagFor = (agent) => `[wakeprobe:agent=${agent}]`;

// ---- 2. Command line, output, the clock ----
const USAGE = "usage: node repro.mjs [--claude-bin PATH | --claude-version V] [--cache DIR] [--keep] [--json]\n"
  + "       node repro.mjs --judge DIR [--json]";

function parseArgs(argv) {
  const opts = { version: CLI_VERSION, bin: null, cache: null, keep: false, judge: null, json: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => (i + 1 < argv.length ? argv[++i] : fail(2, `${arg} needs a value\n${USAGE}`));
    if (arg === "--claude-bin") opts.bin = path.resolve(value());
    else if (arg === "--claude-version") opts.version = value();
    else if (arg === "--cache") opts.cache = path.resolve(value());
    else if (arg === "--keep") opts.keep = true;
    else if (arg === "--judge") opts.judge = path.resolve(value());
    else if (arg === "--json") opts.json = true;
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

let quiet = false; // --json: the judgement is the only thing on stdout
const say = (line = "") => { if (!quiet) console.log(line); };
const now = () => performance.timeOrigin + performance.now(); // ms since the epoch: the one clock
let t0 = now(); // reset when the CLI starts; timeline times are relative to it
const rel = (t) => Math.round((t - t0) * 1000) / 1000; // ms since t0, as timeline.json has them
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
const HOOK_EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
  "SubagentStart", "SubagentStop", "Stop", "SessionEnd", "Notification", "TeammateIdle", "PreCompact"];

// The hook command: appends `{"t": ms since the epoch when it started, "payload": ...}` to a file.
const RECORDER = `const t = performance.timeOrigin; let data = "";
process.stdin.setEncoding("utf8").on("data", (d) => (data += d)).on("end", () => {
  let payload; try { payload = JSON.parse(data); } catch { payload = { unparsed: data }; }
  require("fs").appendFileSync(process.argv[2], JSON.stringify({ t, payload }) + "\\n");
});
`;

// The tracker a tracked command runs under (as wakeprobe's wp-track): it records the command's
// start and end (with how it ended), passes SIGTERM, SIGINT and SIGHUP on, and ends as it did.
const TRACKER = `const fs = require("fs"), os = require("os");
const [file, name, command] = process.argv.slice(2);
const mark = (o) => fs.appendFileSync(file, JSON.stringify({ t: performance.timeOrigin + performance.now(), name, pid: process.pid, ...o }) + "\\n");
mark({ event: "start" });
const child = require("child_process").spawn("bash", ["-c", command], { stdio: "inherit" });
for (const s of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(s, () => { try { child.kill(s); } catch {} });
child.on("error", () => { mark({ event: "end", exit: { code: 127 } }); process.exit(127); });
child.on("exit", (code, signal) => {
  mark({ event: "end", exit: signal ? { signal: os.constants.signals[signal] } : { code } });
  if (!signal) process.exit(code);
  process.removeAllListeners(signal);
  process.kill(process.pid, signal);
});
`;

function buildSandbox() {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "wakeprobe-repro-")));
  const at = (...parts) => path.join(root, ...parts);
  const box = { root, project: at("project"), home: at("home"), tmp: at("tmp"), hooks: at("hooks.raw.jsonl"),
    tracks: at("tracks.raw.jsonl"), tracker: at("track.cjs") };
  for (const dir of [box.home, box.tmp, at("project", ".claude")]) fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(at("project", "README.md"), "A throwaway project for a Claude Code reproduction.\n");
  fs.writeFileSync(at("record-hook.cjs"), RECORDER);
  fs.writeFileSync(box.tracker, TRACKER);
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

// ---- 5. Evidence on one clock: raw records as they come, and the normalizer (src/evidence/normalize.rs)
//         that turns them into timeline events in wakeprobe's own shape ----
const clean = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));
const strField = (v, key) => (typeof v?.[key] === "string" ? v[key] : typeof v?.[key] === "number" ? String(v[key]) : null);
const cut = (s, max) => (Array.from(s).length <= max ? s : Array.from(s).slice(0, max).join("") + "…");
const TOOL_HOOKS = ["PreToolUse", "PostToolUse", "PostToolUseFailure"];

class Normalizer {
  constructor() {
    this.toolUses = new Map(); // tool_use id -> {agent, label, spawn}
    this.tasks = new Map();    // the CLI's task id -> {owner, label}
    this.agentIds = new Map(); // the CLI's agent id -> the scenario's agent
    this.trackOwner = new Map();
    this.teammates = new Map();
    this.hooksSeen = 0;
    this.cliVersion = null;
  }

  event(t_ms, source, agent, kind, fields = {}) {
    return { t_ms, source, ...(agent != null ? { agent } : {}), kind, ...clean(fields) };
  }

  learnApi(e) {
    if (e.kind !== "tool_call") return;
    if (e.teammate != null && e.spawn != null) this.teammates.set(e.teammate, e.spawn);
    if (e.track != null && e.agent != null) this.trackOwner.set(e.track, e.agent);
    this.toolUses.set(e.tool_use_id, { agent: e.agent ?? null, label: e.spawn ?? e.track ?? null, spawn: e.spawn ?? null });
  }

  linkTask(taskId, toolUse) {
    if (toolUse.spawn) this.agentIds.set(taskId, toolUse.spawn);
    const task = { owner: toolUse.agent ?? null, label: toolUse.label ?? null };
    this.tasks.set(taskId, task);
    return task;
  }

  streamLine(t_ms, text) {
    let v;
    try { v = JSON.parse(text); } catch { return [this.event(t_ms, "stream", null, "stream_line", { type: "non-json" })]; }
    const type = strField(v, "type") ?? "unknown", subtype = strField(v, "subtype");
    const task = (id) => this.tasks.get(id) ?? { owner: null, label: null };
    if (type === "system" && subtype === "init") this.cliVersion = strField(v, "claude_code_version");
    if (type === "system" && subtype === "task_started" && strField(v, "task_id")) {
      const taskId = strField(v, "task_id"), toolUseId = strField(v, "tool_use_id");
      const linked = this.linkTask(taskId, (toolUseId && this.toolUses.get(toolUseId)) || {});
      return [this.event(t_ms, "stream", linked.owner, "task_started", { task_id: taskId,
        task_type: strField(v, "task_type") ?? "unknown", tool_use_id: toolUseId, label: linked.label,
        description: strField(v, "description") != null ? cut(strField(v, "description"), 120) : null })];
    }
    if (type === "system" && subtype === "task_updated") {
      const taskId = strField(v, "task_id"), status = strField(v.patch, "status") ?? strField(v, "status");
      if (taskId && status) {
        const linked = task(taskId);
        return [this.event(t_ms, "stream", linked.owner, "task_updated", { task_id: taskId, status, label: linked.label })];
      }
    }
    if (type === "system" && subtype === "task_notification" && strField(v, "task_id")) {
      const taskId = strField(v, "task_id"), linked = task(taskId);
      return [this.event(t_ms, "stream", linked.owner, "task_notified", { task_id: taskId,
        status: strField(v, "status") ?? "unknown", label: linked.label,
        summary: strField(v, "summary") != null ? cut(strField(v, "summary"), 200) : null })];
    }
    if (type === "control_response") {
      const r = v.response ?? {};
      return [this.event(t_ms, "stream", null, "control_response", { subtype: strField(r, "subtype") ?? "unknown", error: strField(r, "error") })];
    }
    if (type === "result") {
      return [this.event(t_ms, "stream", MAIN, "turn_result", { subtype: subtype ?? "unknown",
        num_turns: typeof v.num_turns === "number" ? v.num_turns : null, is_error: v.is_error === true,
        origin: strField(v.origin, "kind") })];
    }
    return [this.event(t_ms, "stream", null, "stream_line", { type, subtype })];
  }

  hook(t_ms, payload) {
    const raw = this.hooksSeen++;
    const v = payload && typeof payload === "object" ? payload : {};
    const hook = strField(v, "hook_event_name") ?? "unparsed";
    const agentId = strField(v, "agent_id");
    if (agentId && !this.agentIds.has(agentId)) {
      const byName = strField(v, "agent_type") ?? strField(v, "teammate_name");
      const named = (byName && this.teammates.get(byName)) || this.nameFromTranscript(v);
      if (named) this.agentIds.set(agentId, named);
    }
    const teammate = strField(v, "teammate_name") != null ? this.teammates.get(strField(v, "teammate_name")) ?? null : null;
    const agent = agentId ? this.agentIds.get(agentId) ?? teammate
      : teammate ?? (TOOL_HOOKS.includes(hook) || ["Stop", "UserPromptSubmit"].includes(hook) ? MAIN : null);
    const detail = TOOL_HOOKS.includes(hook) ? strField(v, "tool_name")
      : ["SessionEnd", "SessionStart"].includes(hook) ? strField(v, "reason") ?? strField(v, "source")
        : hook === "TeammateIdle" ? strField(v, "teammate_name")
          : hook === "SubagentStart" ? strField(v, "agent_type")
            : ["Stop", "SubagentStop"].includes(hook) && strField(v, "last_assistant_message") != null
              ? cut(strField(v, "last_assistant_message"), 160) : null;
    const tasks = Array.isArray(v.background_tasks) ? v.background_tasks.map((b) => clean({
      id: strField(b, "id") ?? "", type: strField(b, "type") ?? "", status: strField(b, "status") ?? "",
      description: strField(b, "description") != null ? cut(strField(b, "description"), 120) : null,
      other_fields: Object.keys(b ?? {}).filter((k) => !["id", "type", "status", "description"].includes(k)).sort(),
    })).map((b) => (b.other_fields?.length ? b : (delete b.other_fields, b))) : null;
    const input = v.tool_input ?? {};
    const stops = hook === "PostToolUse" && strField(v, "tool_name") === "TaskStop"
      ? (typeof input.task_id === "string" ? input.task_id : typeof input.shell_id === "string" ? input.shell_id : null) : null;
    const events = [this.event(t_ms, "hook", agent, "hook", { hook, raw, agent_id: agentId, background_tasks: tasks,
      stop_hook_active: typeof v.stop_hook_active === "boolean" ? v.stop_hook_active : null, detail, stops_task: stops })];
    if (hook === "SubagentStop") events.push(this.event(t_ms, "hook", agent, "agent_finalized", { hook }));
    return events;
  }

  // A subagent's transcript names its first prompt, which holds the harness's tag.
  nameFromTranscript(v) {
    try {
      const text = fs.readFileSync(strField(v, "agent_transcript_path"), "utf8");
      return /\[wakeprobe:agent=([^\]]+)\]/.exec(text.split("\n").find((l) => l.includes("\"user\"")) ?? "")?.[1] ?? null;
    } catch { return null; }
  }

  track(mark) {
    const owner = this.trackOwner.get(mark.name) ?? null;
    return mark.event === "start"
      ? [this.event(rel(mark.t), "os", owner, "track_started", { name: mark.name, pid: mark.pid })]
      : [this.event(rel(mark.t), "os", owner, "track_ended", { name: mark.name, pid: mark.pid, exit: mark.exit })];
  }

  // What was read before the event that names it: tasks whose task_started line came before the
  // model call that started them, and hooks whose agent id was learned after they arrived.
  reattribute(events) {
    const linked = new Map();
    for (const e of events) {
      if (e.kind !== "task_started" || !e.tool_use_id || !this.toolUses.has(e.tool_use_id)) continue;
      if (this.tasks.get(e.task_id)?.owner) continue;
      const task = this.linkTask(e.task_id, this.toolUses.get(e.tool_use_id));
      relabel(e, task);
      linked.set(e.task_id, task);
    }
    for (const e of events) if (["task_updated", "task_notified"].includes(e.kind) && linked.has(e.task_id)) relabel(e, linked.get(e.task_id));
    let lastNamed = null;
    for (const e of events) {
      if (e.kind === "hook" && e.agent_id && e.agent == null && this.agentIds.has(e.agent_id)) {
        e.agent = this.agentIds.get(e.agent_id);
        lastNamed = [e.t_ms, e.agent];
      } else if (e.kind === "agent_finalized" && e.agent == null && lastNamed && lastNamed[0] === e.t_ms) {
        e.agent = lastNamed[1];
      }
    }
  }
}

function relabel(e, task) {
  if (task.label != null) e.label = task.label; else delete e.label;
  if (task.owner != null) e.agent = task.owner; else delete e.agent;
}

// The run as it goes: every event so far, the raw evidence behind them, and what the driver
// reads to decide what is due (as wakeprobe's `Live`).
const run = {
  norm: new Normalizer(),
  events: [], lines: [], hooks: [], marks: [],
  offsets: { hooks: 0, tracks: 0 },
  lastActivity: 0, awaitingTurn: false, results: 0, turnEnds: {}, requests: 0,
  runningTasks: new Set(), runningAgents: new Set(), runningTracks: new Set(),
  startedTracks: new Set(), endedTracks: new Set(), taskIds: new Map(), workStarted: new Map(),
  toolUnavailable: null, exit: null,
};

function push(...events) {
  for (const e of events) {
    run.events.push(e);
    observe(e);
  }
}

function observe(e) {
  run.lastActivity = now();
  switch (e.kind) {
    case "model_request": run.requests++; break;
    case "tool_call": run.norm.learnApi(e); break;
    case "task_started":
      run.runningTasks.add(e.task_id);
      if (e.label != null) { run.taskIds.set(e.label, e.task_id); if (!run.workStarted.has(e.label)) run.workStarted.set(e.label, now()); }
      break;
    case "task_updated":
      if (["completed", "failed", "error", "killed", "stopped", "cancelled", "canceled"].includes(e.status)) {
        run.runningTasks.delete(e.task_id); run.runningAgents.delete(e.task_id);
      }
      break;
    case "task_notified": run.runningTasks.delete(e.task_id); run.runningAgents.delete(e.task_id); break;
    case "hook":
      if (e.stops_task) run.runningAgents.delete(e.stops_task);
      if (e.agent_id && e.hook === "SubagentStart") run.runningAgents.add(e.agent_id);
      if (e.agent_id && ["SubagentStop", "TeammateIdle"].includes(e.hook)) run.runningAgents.delete(e.agent_id);
      break;
    case "track_started":
      run.runningTracks.add(e.pid); run.startedTracks.add(e.name);
      if (!run.workStarted.has(e.name)) run.workStarted.set(e.name, now());
      break;
    case "track_ended": run.runningTracks.delete(e.pid); run.endedTracks.add(e.name); break;
    case "turn_result": run.results++; run.awaitingTurn = false; break;
    case "user_input": run.awaitingTurn = true; break;
    case "turn_ended":
      if (e.agent != null) { run.turnEnds[e.agent] = (run.turnEnds[e.agent] ?? 0) + 1; if (e.agent === MAIN) run.awaitingTurn = false; }
      break;
    case "tool_unavailable": run.toolUnavailable ??= `${e.cli ?? "this CLI"} offers no ${e.tool} tool`; break;
    default:
  }
}

const running = () => run.runningTasks.size + run.runningAgents.size + run.runningTracks.size;
const workEnded = (label) => run.endedTracks.has(label) || (run.taskIds.has(label) && !run.runningTasks.has(run.taskIds.get(label)));
const driverEvent = (kind, fields = {}, agent = null) => push(run.norm.event(rel(now()), "driver", agent, kind, fields));

function onStreamLine(text) {
  const t = now();
  let line = text;
  try { line = JSON.parse(text); } catch { /* kept as text */ }
  run.lines.push({ t_ms: rel(t), line });
  push(...run.norm.streamLine(rel(t), text));
}

// New lines of a file other processes append to (the hook recorder, the tracker), read as they come.
function readNew(file, key) {
  let text = "";
  try {
    const fd = fs.openSync(file, "r");
    const size = fs.fstatSync(fd).size;
    if (size > run.offsets[key]) {
      const buf = Buffer.alloc(size - run.offsets[key]);
      fs.readSync(fd, buf, 0, buf.length, run.offsets[key]);
      text = buf.toString("utf8");
    }
    fs.closeSync(fd);
  } catch { return []; }
  const complete = text.lastIndexOf("\n") + 1; // a line still being written waits for the next read
  run.offsets[key] += Buffer.byteLength(text.slice(0, complete));
  return text.slice(0, complete).split("\n").filter(Boolean).flatMap((l) => { try { return [JSON.parse(l)]; } catch { return []; } });
}

function pollFiles(box) {
  for (const { t, payload } of readNew(box.hooks, "hooks")) {
    run.hooks.push({ t_ms: rel(t), payload });
    push(...run.norm.hook(rel(t), payload));
  }
  for (const mark of readNew(box.tracks, "tracks")) {
    run.marks.push(mark);
    push(...run.norm.track(mark));
  }
}

// ---- 6. The fake Messages API (src/fake_api): real SSE, routing by the prompt's tag, one step per
//         assistant turn; a step's calls go out in one message; a deferred tool is loaded first ----
function textOf(value) { // every string under `text` and `content`, in order
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(textOf).join("\n");
  if (value && typeof value === "object") return ["text", "content"].filter((k) => k in value).map((k) => textOf(value[k])).join("\n");
  return "";
}

function notificationsIn(text) { // each <task-notification>: its task id, status, tool use id and Monitor event
  const found = [];
  const element = (body, name) => new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(body)?.[1].trim() || null;
  for (const m of text.matchAll(/<task-notification>([\s\S]*?)(<\/task-notification>|$)/g)) {
    const taskId = element(m[1], "task-id");
    if (!taskId) continue;
    const n = clean({ task_id: taskId, status: element(m[1], "status"), tool_use_id: element(m[1], "tool-use-id"), event: element(m[1], "event") });
    if (!found.some((f) => JSON.stringify(f) === JSON.stringify(n))) found.push(n);
  }
  return found;
}

const withoutElement = (text, tag) => text.replace(new RegExp(`<${tag}>[\\s\\S]*?(</${tag}>|$)`, "g"), "");
const squash = (text) => text.split(/\s+/).filter(Boolean).join(" ");

function deferredTools(text) { // the tool names listed after each "available via ToolSearch ...:"
  const names = [];
  for (const m of text.matchAll(/available via ToolSearch/g)) {
    const after = text.slice(m.index);
    const colon = after.indexOf(":\n");
    if (colon < 0) continue;
    for (const line of after.slice(colon + 2).split("\n")) {
      const name = line.trim();
      if (!name || name.length > 64 || !/^[A-Za-z0-9_]+$/.test(name)) break;
      if (!names.includes(name)) names.push(name);
    }
  }
  return names;
}

function readRequest(body) {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const firstUser = messages.find((m) => m.role === "user");
  const tag = /\[wakeprobe:agent=([^\]]+)\]/.exec(textOf(firstUser?.content))?.[1] ?? null;
  const lastAssistant = messages.map((m) => m.role).lastIndexOf("assistant");
  const trailing = messages.slice(lastAssistant + 1);
  const tools = (body.tools ?? []).map((t) => t.name).filter((n) => typeof n === "string");
  const system = typeof body.system === "string" ? body.system : textOf(body.system);
  const blocks = (m) => (typeof m.content === "string" ? [m.content]
    : Array.isArray(m.content) ? m.content.filter((b) => b?.type === "text" && typeof b.text === "string").map((b) => b.text) : []);
  const injected = squash(trailing.flatMap(blocks).filter((t) => !t.includes("<task-notification>")).join(" "));
  const lastUser = messages.map((m) => m.role).lastIndexOf("user");
  const closing = lastUser >= 0 && lastUser > lastAssistant ? blocks(messages[lastUser]).at(-1) ?? null : null;
  return {
    messages, tools, stream: body.stream === true, model: body.model ?? "claude-fake", tag,
    agent: tag && PLAN.agents[tag] ? tag : null,
    assistants: messages.filter((m) => m.role === "assistant").length,
    stopSequences: Array.isArray(body.stop_sequences) ? body.stop_sequences : [],
    systemHead: Array.from(system).slice(0, 200).join(""),
    deferred: deferredTools(`${system}\n${messages.map((m) => textOf(m.content)).join("\n")}`).filter((t) => !tools.includes(t)),
    notifications: notificationsIn(trailing.map((m) => textOf(m.content)).join("\n")),
    injected: injected ? cut(injected, 600) : null,
    userText: trailing.filter((m) => m.role === "user").flatMap(blocks)
      .map((t) => Array.from(squash(withoutElement(withoutElement(t, "system-reminder"), "task-notification"))).slice(0, 1000).join(""))
      .filter(Boolean),
    toolErrors: trailing.flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((b) => b?.type === "tool_result" && b.is_error === true).map((b) => cut(squash(textOf(b.content)), 160)),
    closing,
  };
}

const ACTIVITY_SUMMARY = "Describe your most recent action in 3-5 words";
function sideCall(view) {
  if (view.stopSequences.includes("</block>") || view.systemHead.startsWith("You are a security monitor")) return "safety-classifier";
  if (view.closing?.startsWith(ACTIVITY_SUMMARY)) return "activity-summary";
  if (!view.tools.length) return view.stream ? "no-tools" : "non-streaming";
  return null;
}

const cursors = {}; // agent -> {step, last: the assistant count last served, repeats, hold, searched}

// A request with a new assistant message moves the agent on (a retry gets the same step again); a
// step with `until = "notified"` repeats while no new notification arrives; the answer after an
// inserted ToolSearch is the step that needed it.
function nextStep(agent, view) {
  const steps = PLAN.agents[agent];
  const c = (cursors[agent] ??= { step: 0, last: null, repeats: 0, hold: false, searched: [] });
  if (c.last !== null && c.last !== view.assistants) {
    if (c.hold) c.hold = false;
    else {
      c.searched = [];
      const s = steps[c.step];
      if (s?.until === "notified" && view.notifications.length === 0 && c.repeats < s.max_repeats) c.repeats++;
      else { c.step++; c.repeats = 0; }
    }
  }
  c.last = view.assistants;
  return c.step < steps.length ? c.step : null;
}

function searchOnce(agent, tool) {
  const c = cursors[agent];
  if (c.searched.includes(tool)) return false;
  c.searched.push(tool);
  c.hold = true;
  return true;
}

const ALIASES = { Agent: "Task", Task: "Agent" }; // the Agent tool was once named Task
function offer(view, tool) {
  if (!view.tools.length || view.tools.includes(tool)) return { direct: tool };
  for (const name of [tool, ALIASES[tool]].filter(Boolean)) {
    if (view.tools.includes(name)) return { direct: name };
    if (view.deferred.includes(name) && view.tools.includes("ToolSearch")) return { deferred: name };
  }
  return { missing: tool };
}

const spawned = new Map(); // spawned agent -> the tool use id that spawned it

// `{{@agent-id:NAME}}`: the id the CLI gave the spawned agent NAME, read from its Agent call's result.
function fillAgentIds(input, body, targets) {
  const idIn = (toolUseId) => {
    const result = (body.messages ?? []).flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .find((b) => b?.type === "tool_result" && b.tool_use_id === toolUseId);
    return /(?:agentId|agent_id): ([A-Za-z0-9@._-]+)/.exec(textOf(result?.content))?.[1] ?? null;
  };
  let missing = null;
  const text = JSON.stringify(input).replace(/\{\{@agent-id:([\w-]+)\}\}/g, (all, name) => {
    const id = spawned.has(name) ? idIn(spawned.get(name)) : null;
    if (!id) { missing ??= name; return all; }
    targets.push(name);
    return id;
  });
  return { input: JSON.parse(text), missing };
}

// The content of a scripted step's answer and the events to record once it is sent.
function scripted(box, agent, step, seq, view, body, names) {
  const content = step.say != null ? [{ type: "text", text: step.say }] : [];
  const events = [];
  (step.calls ?? []).forEach((call, nth) => {
    const targets = [];
    const { input } = fillAgentIds(call.input, body, targets);
    if (call.spawn) input.prompt = `${input.prompt}\n\n${tagFor(call.spawn)}`;
    if (call.track && typeof input.command === "string") {
      input.command = [process.execPath, box.tracker, box.tracks, call.track, input.command].map(quote).join(" ");
    }
    const id = `toolu_wp${String(seq).padStart(4, "0")}_${agent.replace(/-/g, "_")}${nth ? `_${nth + 1}` : ""}`;
    if (call.spawn) spawned.set(call.spawn, id);
    content.push({ type: "tool_use", id, name: names[nth], input });
    events.push({ kind: "tool_call", seq, tool: names[nth], tool_use_id: id, background: input.run_in_background === true,
      spawn: call.spawn, track: call.track, teammate: call.spawn && typeof input.name === "string" ? input.name : null,
      target: targets[0] ?? null });
  });
  if (!(step.calls ?? []).length) events.push({ kind: "turn_ended", seq, text: step.say ?? "" });
  return { content, events, stop: (step.calls ?? []).length ? "tool_use" : "end_turn" };
}

function turnAnswer(box, agent, index, seq, view, body) {
  const step = PLAN.agents[agent][index];
  const offers = (step.calls ?? []).map((c) => offer(view, c.tool));
  const deferred = offers.find((o) => o.deferred && searchOnce(agent, o.deferred))?.deferred;
  if (deferred) {
    const id = `toolu_wp${String(seq).padStart(4, "0")}_${agent.replace(/-/g, "_")}_search`;
    return { content: [{ type: "tool_use", id, name: "ToolSearch", input: { query: `select:${deferred}` } }], stop: "tool_use",
      events: [{ kind: "tool_call", seq, tool: "ToolSearch", tool_use_id: id, background: false, inserted: true }] };
  }
  const lacking = offers.find((o) => !o.direct);
  if (lacking) {
    const tool = lacking.deferred ?? lacking.missing;
    const cli = run.norm.cliVersion;
    const text = `(wakeprobe: ${cli ? `${cli} offers` : "this CLI offers"} no \`${tool}\` tool, which the script's step at line ${step.line} calls; ending the turn.)`;
    return { content: [{ type: "text", text }], stop: "end_turn", events: [{ kind: "tool_unavailable", tool, cli }] };
  }
  return { ...scripted(box, agent, step, seq, view, body, offers.map((o) => o.direct)), think: step.think ?? 0 };
}

let seqs = 0;
function answer(box, req, res, raw) {
  const t = now();
  const seq = ++seqs;
  const route = `${req.method} ${req.url.split("?")[0]}`;
  const reply = (status, type, body, delay = 0, after = []) => {
    const headers = { "content-type": type, "cache-control": "no-cache", "request-id": `req_wakeprobe_${seq}` };
    setTimeout(() => res.writeHead(status, headers).end(body, () => push(...after.map((e) => {
      const { kind, ...fields } = e;
      return run.norm.event(rel(now()), "api", fields.agent ?? null, kind, { ...fields, agent: undefined });
    }))), delay);
  };
  if (route === "POST /v1/messages/count_tokens") {
    return reply(200, "application/json", JSON.stringify({ input_tokens: Math.floor(raw.length / 4) + 1 }));
  }
  let body = null;
  try { body = JSON.parse(raw); } catch { /* answered below */ }
  if (route !== "POST /v1/messages" || !body) {
    const error = { type: "not_found_error", message: `the fake API does not serve ${req.method} ${req.url}` };
    return reply(404, "application/json", JSON.stringify({ type: "error", error }));
  }
  const view = readRequest(body);
  const side = sideCall(view);
  const index = view.agent && !side ? nextStep(view.agent, view) : null;
  const routed = side ? { route: "side_call", detail: side } : !view.agent ? { route: "unrouted" }
    : index === null ? { route: "script_exhausted" } : { route: "turn" };
  push(run.norm.event(rel(t), "api", side ? view.agent : view.agent, "model_request", { seq, route: routed,
    step: routed.route === "turn" ? index : null, notifications: view.notifications.length ? view.notifications : null,
    injected: view.injected, tool_errors: view.toolErrors.length ? view.toolErrors : null,
    user_text: view.userText.length ? view.userText : null }));
  const message = { id: `msg_wakeprobe_${String(seq).padStart(4, "0")}`, type: "message", role: "assistant",
    model: view.model, content: [{ type: "text", text: "OK." }], stop_reason: "end_turn", stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 5 } };
  let after = [], delay = 0;
  if (side === "safety-classifier") { // "is this tool call dangerous?": no
    Object.assign(message, { content: [{ type: "text", text: "<block>no" }], stop_reason: "stop_sequence", stop_sequence: "</block>" });
  } else if (routed.route === "script_exhausted") {
    const text = `(wakeprobe: the script for \`${view.agent}\` has no more steps; ending the turn.)`;
    message.content = [{ type: "text", text }];
    after = [{ kind: "turn_ended", seq, text }];
  } else if (routed.route === "turn") {
    const a = turnAnswer(box, view.agent, index, seq, view, body);
    Object.assign(message, { content: a.content, stop_reason: a.stop });
    after = a.events;
    delay = (a.think ?? 0) * 1000;
  }
  after = after.map((e) => ({ ...e, agent: view.agent }));
  if (view.stream) reply(200, "text/event-stream", sse(message), delay, after);
  else reply(200, "application/json", JSON.stringify(message), delay, after);
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

function startFakeApi(box) {
  const server = http.createServer({ noDelay: true }, (req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => answer(box, req, res, Buffer.concat(chunks).toString("utf8")));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

// ---- 7. Running the CLI: print mode, or a kept-alive stream-json session with scheduled inputs
//         (src/driver/schedule.rs): each input waits for its trigger, then its delay; then the
//         probe once quiet; then the session is closed once quiet again ----
function triggered({ on, arg }) {
  switch (on) {
    case "start": return true;
    case "result": return run.results >= arg;
    case "turn-end": return (run.turnEnds[arg[0]] ?? 0) >= arg[1];
    case "task-start": return run.startedTracks.has(arg);
    case "task-end": return run.endedTracks.has(arg);
    default: return quietFor(PLAN.driver.settle); // "quiet"
  }
}

const quietFor = (seconds) => running() === 0 && !run.awaitingTurn && now() - run.lastActivity >= seconds * 1000;

// The first watched work past its hang bound, if any: [work, bound in seconds].
function overdue() {
  for (const w of PLAN.watch) {
    const started = run.workStarted.get(w.work);
    if (w.hang_after != null && started != null && !workEnded(w.work) && now() >= started + w.hang_after * 1000) return [w.work, w.hang_after];
  }
  return null;
}

async function runCli(program, box, env, ending) {
  const d = PLAN.driver;
  const prompt = `${d.prompt}\n\n${tagFor(MAIN)}`;
  const output = ["--output-format", "stream-json", "--verbose"];
  const args = [...(d.mode === "print" ? ["-p", prompt] : ["-p", "--input-format", "stream-json"]), ...output,
    "--permission-mode", d.permission_mode, "--allowedTools", d.allowed_tools.join(" ")];
  const [exe, lead] = command(program);
  t0 = now();
  const child = spawn(exe, [...lead, ...args],
    { cwd: box.project, env, detached: true, stdio: [d.mode === "print" ? "ignore" : "pipe", "pipe", "pipe"] });
  const result = { end: null, reason: null, stderr: "" };
  child.on("error", (e) => { result.stderr += `cannot start: ${e.message}\n`; run.exit ??= { t: now(), exit: { code: 127 } }; });
  child.on("exit", (code, signal) => {
    const exit = signal ? { signal: os.constants.signals[signal] } : { code };
    run.exit = { t: now(), exit };
    push(run.norm.event(rel(run.exit.t), "os", null, "cli_exited", { exit }));
  });
  child.stderr.on("data", (chunk) => { result.stderr += chunk; });
  readline.createInterface({ input: child.stdout }).on("line", (line) => onStreamLine(line));
  driverEvent("cli_spawned", { pid: child.pid ?? 0 });
  const send = (message) => { if (child.stdin?.writable) child.stdin.write(JSON.stringify(message) + "\n"); };
  const sendText = (text, why) => {
    send({ type: "user", message: { role: "user", content: text } });
    driverEvent("user_input", { text, why }, MAIN);
  };
  if (d.mode === "session") send({ type: "user", message: { role: "user", content: prompt } });
  driverEvent("user_input", { text: d.prompt, why: "prompt" }, MAIN);
  const seen = new Map(); // pid -> command line of every process seen under the CLI (for the cleanup)
  const deadline = t0 + d.ceiling * 1000;
  const inputs = [...d.inputs];
  let due = null, probeSent = !d.probe, closed = d.mode === "print", lastScan = 0;
  while (true) {
    await sleep(50);
    pollFiles(box);
    const t = now();
    if (t - lastScan > 1000) { lastScan = t; for (const p of processTree(child.pid)) seen.set(p.pid, p.args); }
    if (ending.signal) {
      driverEvent("interrupted", { signal: ending.signal });
      Object.assign(result, { end: "interrupted", reason: `interrupted (${ending.signal})` });
      break;
    }
    if (t >= deadline) {
      driverEvent("ceiling_hit", { ceiling_s: d.ceiling });
      Object.assign(result, { end: "ceiling", reason: `the ceiling (${d.ceiling} s) ended the run` });
      break;
    }
    const hung = overdue();
    if (hung) {
      driverEvent("work_overdue", { work: hung[0], bound_s: hung[1] });
      Object.assign(result, { end: "work-hung", reason: `\`${hung[0]}\` ran past its ${hung[1]} s hang bound` });
      break;
    }
    if (run.toolUnavailable) { Object.assign(result, { end: "tool-unavailable", reason: run.toolUnavailable }); break; }
    if (run.exit) {
      await sleep(300); // the last stdout lines and hooks
      pollFiles(box);
      Object.assign(result, closed ? { end: "finished", reason: "the CLI exited" }
        : { end: "cli-ended", reason: "the CLI exited while the session still had input to send" });
      break;
    }
    if (closed) continue;
    if (inputs.length) { // the next input waits for its trigger, then for its delay
      if (due === null && triggered(inputs[0].after)) due = t + inputs[0].delay * 1000;
      if (due === null || t < due) continue;
      const { action } = inputs.shift();
      due = null;
      if (action.kind === "text") { sendText(action.text, "scheduled"); continue; }
      const taskId = action.target ? run.taskIds.get(action.target) : null;
      const request = { subtype: action.subtype };
      if (action.target) request.task_id = taskId ?? action.target;
      if (action.message) request.message = action.message;
      const sent = run.events.filter((e) => e.kind === "control_request").length;
      send({ type: "control_request", request_id: `wakeprobe-${sent + 1}`, request });
      const target = action.target ? `${action.target} (${taskId ?? "no task id known"})` : null;
      driverEvent("control_request", { subtype: action.subtype, target }, MAIN);
    } else if (!probeSent && quietFor(d.probe.quiet ?? d.settle)) { // an unrelated input: a queued notification surfaces now
      probeSent = true;
      sendText(d.probe.text, "probe");
    } else if (probeSent && quietFor(d.settle)) {
      child.stdin.end();
      closed = true;
      driverEvent("session_closed");
    }
  }
  result.cleanup = await killTree(child.pid, seen, env[TAG_VAR]);
  await sleep(300); // the last lines
  pollFiles(box);
  return result;
}

// The run folder in wakeprobe's own shapes: timeline.json, hooks.jsonl, stream.jsonl, run.json.
function writeRun(box, result, version) {
  run.norm.reattribute(run.events);
  const events = run.events.map((e, i) => [e, i]).sort((a, b) => a[0].t_ms - b[0].t_ms || a[1] - b[1]).map(([e]) => e);
  fs.writeFileSync(path.join(box.root, "timeline.json"), JSON.stringify({ schema: 1, events }, null, 1));
  fs.writeFileSync(path.join(box.root, "hooks.jsonl"), run.hooks.map((h) => JSON.stringify(h) + "\n").join(""));
  fs.writeFileSync(path.join(box.root, "stream.jsonl"), run.lines.map((l) => JSON.stringify(l) + "\n").join(""));
  fs.writeFileSync(path.join(box.root, "run.json"), JSON.stringify({ scenario: PLAN.scenario, variant: PLAN.variant,
    cli_version: version, end: result.end, cli_exit: run.exit?.exit ?? null, reason: result.reason }, null, 1));
}

// A run folder read back (wakeprobe's, or this script's own): what the judgement reads.
function loadRun(dir) {
  const jsonl = (name) => {
    try { return fs.readFileSync(path.join(dir, name), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)); } catch { return []; }
  };
  let timeline, info;
  try {
    timeline = JSON.parse(fs.readFileSync(path.join(dir, "timeline.json"), "utf8"));
    info = JSON.parse(fs.readFileSync(path.join(dir, "run.json"), "utf8"));
  } catch (e) { fail(2, `${dir}: not a run folder (timeline.json and run.json): ${e.message}`); }
  return { events: timeline.events, raw: { payloads: jsonl("hooks.jsonl").map((h) => h.payload), lines: jsonl("stream.jsonl").map((l) => [l.t_ms, l.line]) },
    end: info.end, cliExit: info.cli_exit ?? null, version: info.cli_version_reported ?? info.cli_version ?? null, reason: info.reason ?? null,
    backend: info.backend?.kind ?? "claude" };
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

// ---- 9. The judgement: src/report/judge.mjs, inserted by `wakeprobe export` ----
// __WAKEPROBE_JUDGE__

// ---- 10. Words: the timeline for a human, each verdict's facts, each check, the result ----
const HYPOTHESES = {
  woke: "the waiter was told",
  "never-fired": "H1: the notification never fired",
  "not-resumable": "H2: it fired, but the waiter was not resumable",
  "queued-until-input": "H3: it waited for the next unrelated input",
  "child-failed": "H4: the background work itself failed",
  unknown: "the evidence does not decide",
};

function labels(events) { // the CLI's task ids -> the scenario's names
  return new Map(events.filter((e) => e.kind === "task_started" && e.label).map((e) => [e.task_id, e.label]));
}

// The events worth a line, in words (the full timeline stays in timeline.json).
function humanTimeline(events) {
  const names = labels(events);
  const label = (id) => names.get(id) ?? id;
  const answers = new Map();
  for (const e of events) {
    if (e.kind === "tool_call") {
      const name = e.spawn ?? e.track;
      const what = e.inserted ? `${e.tool} (inserted to load a deferred tool)`
        : `${e.tool}${e.background ? " in the background" : ""}${name ? ` (\`${name}\`)` : ""}`;
      answers.set(e.seq, [...(answers.get(e.seq) ?? []), what]);
    }
    if (e.kind === "turn_ended") answers.set(e.seq, `ends its turn: "${cut(e.text, 80)}"`);
    if (e.kind === "tool_unavailable") answers.set(e.seq ?? -1, `no \`${e.tool}\` tool on this CLI: the run ends`);
  }
  const started = new Set();
  const rows = [];
  for (const e of events) {
    const row = (source, agent, what) => rows.push([e.t_ms, source, agent ?? "", what]);
    switch (e.kind) {
      case "model_request": {
        if (!["turn", "script_exhausted"].includes(e.route?.route)) break;
        const notes = (e.notifications ?? []).filter((n) => n.event == null).map((n) => label(n.task_id));
        const carrying = notes.length ? `, carrying <task-notification> for ${notes.join(", ")}` : "";
        const a = answers.get(e.seq);
        const what = Array.isArray(a) ? `calls ${a.join(", ")}${a.length > 1 ? " (in one message)" : ""}` : a ?? "(no answer recorded)";
        row("api", e.agent, `request #${e.seq}${carrying} -> ${e.route.route === "script_exhausted" ? "past the end of its script; " : ""}${what}`);
        break;
      }
      case "hook":
        if (["SubagentStart", "TeammateIdle"].includes(e.hook)) row("hook", e.agent, e.hook);
        if (["SubagentStop", "Stop"].includes(e.hook)) {
          const listed = (e.background_tasks ?? []).map((b) => `${label(b.id)} (${b.type}) ${b.status}`).join(", ") || "none";
          row("hook", e.agent, `${e.hook}, background_tasks: ${listed}`);
        }
        if (e.hook === "SessionEnd") row("hook", "", `SessionEnd (${e.detail ?? "?"})`);
        break;
      case "task_started":
        row("cli", "", `task \`${label(e.task_id)}\` (${e.task_type}) started${started.has(e.task_id) ? " again" : ""}`);
        started.add(e.task_id);
        break;
      case "task_updated": if (taskStatus(e.status) !== "live") row("cli", "", `task \`${label(e.task_id)}\` ${e.status}`); break;
      case "task_notified": row("cli", "", `task_notification for \`${label(e.task_id)}\` on stdout: ${e.status}, "${cut(e.summary ?? "", 80)}"`); break;
      case "turn_result": row("cli", "", `result${e.origin === "task-notification" ? " (a turn the CLI started on a task notification)" : ""}`); break;
      case "track_started": row("os", e.agent, `process \`${e.name}\` started`); break;
      case "track_ended": row("os", e.agent, `process \`${e.name}\` ended (${describeExit(e.exit)})`); break;
      case "user_input": if (e.why !== "prompt") row("input", MAIN, `${e.why}: ${String(e.text).split("\n")[0]}`); break;
      case "control_request": row("input", MAIN, `control request ${e.subtype}${e.target ? ` ${e.target}` : ""}`); break;
      case "session_closed": case "ceiling_hit": case "interrupted": case "work_overdue": case "cli_exited":
        row(e.kind === "cli_exited" ? "os" : "driver", "", describe(e)); break;
      default:
    }
  }
  return rows;
}

// A verdict's facts, from the decision and the timeline: times in order, never a latency that
// runs backwards.
function verdictFacts(v, events) {
  const { waiter: w, work: k, decision: d, facts: f } = v;
  const out = [];
  if (!f) return [d.rule === "no-background-work" ? "no agent handed work to the background in this run" : d.rule];
  if (!f.started) return [`\`${k}\` never started (no tool call, task or process for it)`];
  const lastResultBefore = (t) => events.filter((e) => e.kind === "turn_result" && e.t_ms <= t).at(-1);
  for (const stop of events.filter((e) => hookIs(e, "SubagentStop") && e.agent === w)) {
    for (const b of (stop.background_tasks ?? []).filter((b) => f.taskIds.has(b.id))) {
      out.push(`SubagentStop for \`${w}\` at ${fmtSecs(stop.t_ms)} listed \`${k}\` (${b.type}) as ${b.status}`);
    }
  }
  const end = f.end;
  if (end) {
    const how = { completed: "completed", failed: `failed (${end.why})`, killed: `was killed (${end.why})`, "killed-by-fault": `was killed by the harness's fault (${end.why})` }[end.how];
    const result = end.how === "killed" ? lastResultBefore(end.e.t_ms) : null;
    const after = result ? `, ${fmtSecs(end.e.t_ms - result.t_ms)} after the last result (at ${fmtSecs(result.t_ms)})` : "";
    out.push(end.how === "completed" ? `\`${k}\` completed at ${fmtSecs(end.e.t_ms)}`
      : end.how === "killed" ? `\`${k}\` was killed at ${fmtSecs(end.e.t_ms)}${after} (${end.why})` : `\`${k}\` ${how} at ${fmtSecs(end.e.t_ms)}`);
  }
  const told = d.delivery ?? d.told;
  if (told) {
    const when = end && told.t_ms >= end.e.t_ms ? ` (${fmtSecs(told.t_ms - end.e.t_ms)} after it ended)`
      : end ? `; its end was reported at ${fmtSecs(end.e.t_ms)}, after that request (the two channels are read apart)` : "";
    out.push(`\`${w}\`'s request #${told.seq} at ${fmtSecs(told.t_ms)} carried \`${k}\`'s <task-notification>${when}`);
    if (d.reinvoked) out.push(`\`${w}\` had been finalized and was started again to be told`);
  }
  if (d.input) out.push(`it came only with the input at ${fmtSecs(d.input.t_ms)}: "${String(d.input.text).split("\n")[0]}"`);
  if (d.stop) {
    out.push(w === MAIN ? `the session ended at ${fmtSecs(d.stop.t_ms)}` : `\`${w}\` was finalized at ${fmtSecs(d.stop.t_ms)}${end ? `, before \`${k}\` ended` : `, with \`${k}\` still running`}`);
    if (w !== MAIN && !events.some((e) => e.t_ms > d.stop.t_ms && isRequestBy(e, w))) out.push(`\`${w}\` made no model request after SubagentStop`);
  }
  if (d.printed) out.push(`a task_notification for \`${k}\` was printed on stdout at ${fmtSecs(d.printed.t_ms)}, and no request of \`${w}\` carried it`);
  const why = { "script-exhausted": `\`${w}\`'s script ran out at ${fmtSecs(d.exhausted?.t_ms ?? 0)} before \`${k}\` ended: the run left the experiment`,
    "cut-before-end": `the run was cut short (${d.cut ? describe(d.cut) : ""}) before \`${k}\` ended`,
    "cut-before-told": `the run was cut short (${d.cut ? describe(d.cut) : ""}) before \`${w}\` was told`,
    "crashed-before-end": `the CLI exited with a failure while \`${k}\` still ran`, "crashed-before-told": `the CLI exited with a failure before \`${w}\` was told`,
    "end-unseen": `the session printed no task lines, so \`${k}\`'s end could not be seen`, "outlived-run": `\`${k}\` was still running when the run ended`,
    "too-short": `the run ended less than the settle window (${PLAN.driver.settle} s) after \`${k}\` ended`,
    "answers-lost": "every request that carried the notification had its answer broken by an injected fault",
    hung: `\`${k}\` ran past its hang bound`, "killed-with-session": `the CLI killed \`${k}\` and ended the session`,
    "never-fired": `no notification for \`${k}\` appeared anywhere`, "orphaned-at-exit": `\`${k}\` was still running when the CLI exited` }[d.rule];
  if (why) out.push(why);
  return out;
}

function checkLines(c, kindOfList) {
  const out = [`“${c.name}” (${c.kind}${c.agent ? `, of \`${c.agent}\`` : ""}): observed \`${c.observed}\`${c.vacuous ? " (vacuous: nothing matched)" : ""}`];
  if (c.want != null) {
    const verdict = c.meets_want === false ? "NOT MET: this is the bug" : c.meets_want ? "met" : "undecided";
    out.push(`  it should be \`${c.want}\` (the scenario's \`want\`): ${verdict}`);
    if (c.meets_want === false && c.describes) out.push(`  the bug: ${c.describes}`);
  }
  const met = c.passed === false ? "not met" : c.passed ? "met" : "undecided";
  if (kindOfList === "invariant") {
    out.push(`  it should hold in every run (\`${c.expected}\`): ${c.passed === false ? `broken${c.may_break ? `, as the scenario declares: ${c.may_break}` : ""}` : met}`);
  } else if (c.expected != null) {
    out.push(`  on Claude Code ${PINNED}, wakeprobe recorded \`${c.expected}\` (its \`expect\`): ${met} here`);
  }
  if (c.witness.length) out.push("  witness:");
  for (const w of c.witness) out.push(`    ${fmtSecs(w.t_ms).padStart(8)}  ${w.source.padEnd(6)} ${(w.agent ?? "").padEnd(10)} ${w.what}`);
  out.push(`  ${c.explanation}`);
  return out;
}

// What the run shows against what the scenario wants: the bug (exit 1), nothing to decide on
// (exit 2), or the CLI doing what it should (exit 0). As wakeprobe's filing decides: a check that
// observes something other than its `want`, or a decided verdict other than the `want`; without
// any `want`, a waiter that was not woken.
function finding(j) {
  const wanted = j.checks.filter((c) => c.want != null);
  const bugs = wanted.filter((c) => c.meets_want === false)
    .map((c) => `check “${c.name}” observed \`${c.observed}\` where the CLI should give \`${c.want}\``);
  const decided = j.outcome !== "unknown";
  if (PLAN.want && decided && j.outcome !== PLAN.want) bugs.push(`the verdict is \`${j.outcome}\` where the CLI should give \`${PLAN.want}\``);
  if (!PLAN.want && !wanted.length) {
    const stuck = j.verdicts.find((v) => v.outcome !== "woke" && v.outcome !== "unknown");
    if (stuck) bugs.push(`\`${stuck.waiter}\` was not woken by \`${stuck.work}\` (${stuck.outcome})`);
  }
  if (bugs.length) return { exit: 1, words: `The bug reproduces: ${bugs.join("; ")}.` };
  const open = wanted.filter((c) => c.meets_want == null).map((c) => `check “${c.name}” is undecided`);
  if ((PLAN.want || !wanted.length) && !decided) open.push("the verdict is `unknown`");
  if (open.length) return { exit: 2, words: `The evidence does not decide: ${open.join("; ")}.` };
  return { exit: 0, words: PLAN.want || wanted.length ? "The CLI did what the scenario wants." : "Every waiter was woken by its background work's notification." };
}

function report(j, run0) {
  for (const v of j.verdicts) {
    say(`\`${v.waiter}\` waiting for \`${v.work}\`: ${v.outcome}${v.outcome !== "woke" ? ` (${HYPOTHESES[v.outcome]})` : ""}`);
    for (const fact of verdictFacts(v, run0.events)) say(`  - ${fact}`);
  }
  for (const [list, title] of [[j.checks, "Checks"], [j.invariants, "Invariants"]]) {
    if (!list.length) continue;
    say();
    say(`${title}:`);
    for (const c of list) for (const line of checkLines(c, title === "Invariants" ? "invariant" : "check")) say(`  ${line}`);
  }
  say();
  const version = run0.version ?? "(version unknown)";
  if (PLAN.expect || PLAN.want) {
    const expected = PLAN.expect ? `wakeprobe recorded the verdict \`${[PLAN.expect].flat().join("` or `")}\` on Claude Code ${PINNED} (its \`expect\`)` : null;
    const wanted = PLAN.want ? `the CLI should give \`${PLAN.want}\` (its \`want\`)` : null;
    say(`The scenario: ${[expected, wanted].filter(Boolean).join("; ")}.`);
  }
  say(`RESULT: ${j.outcome}${j.outcome !== "woke" ? ` (${HYPOTHESES[j.outcome]})` : ""}, on Claude Code ${version}.`);
  const f = finding(j);
  say(f.words);
  return f.exit;
}

const asJson = (j, exit) => JSON.stringify({
  outcome: j.outcome, exit,
  verdicts: j.verdicts.map((v) => ({ waiter: v.waiter, work: v.work, outcome: v.outcome, latency_ms: v.latency_ms, rule: v.decision.rule })),
  checks: j.checks, invariants: j.invariants,
}, null, 1);

// ---- 11. Main ----
async function main() {
  const opts = parseArgs(process.argv.slice(2));
  quiet = opts.json;
  if (opts.judge) {
    const saved = loadRun(opts.judge);
    const j = judgeRun(PLAN, saved.events, saved.raw, saved.end, saved.cliExit, offersOf(saved.backend, saved.version, PLAN.driver.mode));
    const exit = report(j, saved);
    if (opts.json) console.log(asJson(j, exit));
    process.exit(exit);
  }
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
  const probe = spawnSync(exe, [...lead, "--version"], { env, cwd: box.project, encoding: "utf8", timeout: 30000 });
  const printed = probe.stdout?.trim() ?? "";
  say(`  CLI: ${program} (${printed || "it printed no version"})`);
  say(`  work folder: ${box.root}${opts.keep ? " (kept)" : ""}; processes carry ${TAG_VAR}=${tag}`);
  say();
  const ending = { signal: null };
  for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => { ending.signal = sig; });
  const result = await runCli(program, box, env, ending);
  server.close();
  server.closeAllConnections?.();
  const version = run.norm.cliVersion ?? /^\S+/.exec(printed)?.[0] ?? null;
  writeRun(box, result, version);
  const saved = loadRun(box.root);
  if (!saved.events.some((e) => e.kind === "model_request" && e.route?.route === "turn")) {
    say(`The CLI made no scripted model request (${result.reason}). Its stderr ends with:`);
    say(result.stderr.trim().split("\n").slice(-8).join("\n"));
    finish(box, opts, ending.signal ? 130 : 3);
  }
  say("Timeline:");
  for (const [t, source, agent, what] of humanTimeline(saved.events)) {
    say(`  ${fmtSecs(t).padStart(8)}  ${source.padEnd(6)} ${agent.padEnd(10)} ${what}`);
  }
  say(`  (${result.reason}; cleanup: ${result.cleanup})`);
  say();
  const j = judgeRun(PLAN, saved.events, saved.raw, saved.end, saved.cliExit, offersOf(saved.backend, saved.version, PLAN.driver.mode));
  const exit = report(j, saved);
  if (opts.json) console.log(asJson(j, exit));
  if (ending.signal) { say(`Interrupted (${ending.signal}).`); finish(box, opts, 130); }
  finish(box, opts, exit);
}

function finish(box, opts, code) {
  if (opts.keep) console.error(`evidence (wakeprobe's run-folder shapes): ${box.root} (timeline.json, hooks.jsonl, stream.jsonl, run.json)`);
  else fs.rmSync(box.root, { recursive: true, force: true });
  process.exit(code);
}

main().catch((e) => fail(3, e.stack ?? String(e)));
