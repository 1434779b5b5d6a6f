// ---- The judgement: wakeprobe's verdict rules (src/classify) and checks (src/checks), ported ----
// It reads a timeline in wakeprobe's own shape (`timeline.json`: events with t_ms, source, agent,
// kind and the kind's fields), the raw hook payloads and stdout lines beside it, and how the run
// ended, and returns what wakeprobe's `result.json` holds under `judgement`: the outcome, one
// verdict per waiter and its work, one result per check and invariant. The same evidence judged
// by wakeprobe and by this code gives the same outcomes and the same check results (a test of
// wakeprobe's feeds both its saved runs). Prose is this script's own; the decisions are not.

const SIGNAL_RACE_MS = 2000;
const USER_TEXT_CHARS = 1000;
const MAIN = "main";
const ENDS_THE_RUN = ["ceiling_hit", "tool_unavailable", "interrupted", "harness_failed", "work_overdue"];
const CUT_SHORT = ["ceiling", "interrupted", "harness-failed", "tool-unavailable"];
const SIGNALS = { 1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
  8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM",
  15: "SIGTERM", 24: "SIGXCPU", 25: "SIGXFSZ" };

// -- Small helpers, as the Rust side has them --
const fmtSecs = (ms) => `${(ms / 1000).toFixed(2)} s`;
const chars = (s) => Array.from(String(s));
const truncate = (s, max) => (chars(s).length <= max ? String(s) : chars(s).slice(0, max).join("") + "…");
const words = (s) => String(s).split(/\s+/).filter(Boolean).join(" ");
const exitSuccess = (x) => !!x && typeof x === "object" && x.code === 0;
const describeExit = (x) => (x === "vanished" || !x ? "vanished" : "code" in x ? `exit ${x.code}` : SIGNALS[x.signal] ?? "signal");
const routeOf = (e) => e.route?.route ?? e.route;
const isRequestBy = (e, agent) => e.agent === agent && e.kind === "model_request"
  && ["turn", "script_exhausted"].includes(routeOf(e));
const hookIs = (e, name) => e.kind === "hook" && e.hook === name;

function taskStatus(status) {
  if (status === "completed") return "completed";
  if (["failed", "error"].includes(status)) return "failed";
  if (["killed", "stopped", "cancelled", "canceled"].includes(status)) return "killed";
  return "live";
}

function signalCouldCause(e) {
  if (e.kind === "cli_exited") return true;
  if (e.kind === "track_ended" || e.kind === "process_exited") return !exitSuccess(e.exit);
  if (e.kind === "task_updated" || e.kind === "task_notified")
    return ["failed", "killed"].includes(taskStatus(e.status));
  return false;
}

// The part of the timeline that shows the CLI's own behaviour (Timeline::observed).
function observedPart(events, end) {
  const cut = events.find((e) => ENDS_THE_RUN.includes(e.kind));
  if (!cut) return events;
  const interrupted = cut.kind === "interrupted" || end === "interrupted";
  const raced = (e) => interrupted && e.t_ms >= cut.t_ms - SIGNAL_RACE_MS && signalCouldCause(e);
  return events.filter((e) => e.t_ms <= cut.t_ms && !raced(e));
}

// A value as text: a string as itself, anything else as compact JSON with sorted keys (serde_json's).
function asText(v) {
  if (typeof v === "string") return v;
  const sorted = (x) => (Array.isArray(x) ? x.map(sorted) : x && typeof x === "object"
    ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, sorted(x[k])])) : x);
  return JSON.stringify(sorted(v));
}

function sameJson(a, b) {
  return asText(a) === asText(b) && typeof a === typeof b;
}

// A number as Rust's `str::parse::<f64>` reads one (no hex, no empty string).
function parseNumber(text) {
  const t = String(text).trim();
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t)) return Number(t);
  if (/^[+-]?(inf|infinity)$/i.test(t)) return t.startsWith("-") ? -Infinity : Infinity;
  if (/^[+-]?nan$/i.test(t)) return NaN;
  return null;
}

// -- Event descriptions (src/evidence/describe.rs): the words of every witness line --
function describe(e) {
  const label = (l) => (l ? `, \`${l}\`` : "");
  const labelParen = (l) => (l ? ` (\`${l}\`)` : "");
  switch (e.kind) {
    case "cli_spawned": return `CLI started (pid ${e.pid})`;
    case "user_input": {
      const what = { prompt: "prompt", scheduled: "user input", probe: "probe input" }[e.why] ?? "user input";
      return `${what}: “${truncate(e.text, 60)}”`;
    }
    case "model_request": return describeRequest(e);
    case "tool_call": return describeToolCall(e);
    case "turn_ended": return `ends its turn: “${truncate(e.text, 60)}”`;
    case "task_started": return `task ${e.task_id} started (${e.task_type}${label(e.label)})`;
    case "task_updated": return `task ${e.task_id}${labelParen(e.label)} → ${e.status}`;
    case "task_notified": return `stdout task_notification for ${e.task_id}${labelParen(e.label)} (${e.status})`;
    case "hook": return describeHook(e);
    case "agent_finalized": return `finalized (${e.hook})`;
    case "tool_unavailable": return `${e.cli ? `${e.cli} offers` : "the CLI offers"} no \`${e.tool}\` tool: the script cannot go on`;
    case "turn_result": {
      const turns = e.num_turns == null ? "" : e.num_turns === 1 ? " (1 turn)" : ` (${e.num_turns} turns)`;
      const started = e.origin === "task-notification" ? ", a turn the CLI started on a task notification" : "";
      return `result ${e.subtype}${turns}${started}`;
    }
    case "permission_asked": return e.answer != null
      ? `the SDK asks canUseTool for ${e.tool} (answered ${e.answer})`
      : `the CLI asks the integration for permission to use ${e.tool}`;
    case "stream_line":
      if (e.subtype === "api_retry") return "the CLI retries a failed model request (api_retry)";
      return e.subtype != null ? `stream ${e.type}/${e.subtype}` : `stream ${e.type}`;
    case "track_started": return `process \`${e.name}\` started (pid ${e.pid})`;
    case "track_ended": return `process \`${e.name}\` ended (${describeExit(e.exit)})`;
    case "process_exited": return `process ${e.pid}${e.command != null ? ` \`${e.command}\`` : ""} reaped (${describeExit(e.exit)})`;
    case "cli_exited": return `CLI exited (${describeExit(e.exit)})`;
    case "control_request": return `control request ${e.subtype}${e.target != null ? ` ${e.target}` : ""}`;
    case "control_response": return e.error != null ? `control response ${e.subtype}: ${e.error}` : `control response ${e.subtype}`;
    case "session_closed": return "session closed by the driver";
    case "ceiling_hit": return `ceiling of ${e.ceiling_s.toFixed(0)} s reached`;
    case "interrupted": return e.signal != null ? `run interrupted (${e.signal})` : "run interrupted";
    case "harness_failed": return `the harness failed: ${e.what}`;
    case "work_overdue": return `\`${e.work}\` still running past its ${e.bound_s.toFixed(1)} s hang bound`;
    case "leftover": return `leftover process ${e.pid} \`${e.command}\` killed`;
    case "transcript_fact": return `transcript: ${e.fact} (${e.detail})`;
    default: return e.kind.replace(/_/g, " ");
  }
}

function describeRequest(e) {
  const route = routeOf(e);
  let s = route === "turn" && e.step != null ? `model request #${e.seq} (script step ${e.step + 1})`
    : route === "script_exhausted" ? `model request #${e.seq} past the end of the script`
      : route === "side_call" ? `side call #${e.seq} (${e.route.detail})` : `unrouted request #${e.seq}`;
  const notes = e.notifications ?? [];
  if (notes.length) {
    s += `, carrying task-notification [${notes.map((n) => (n.status != null ? `${n.task_id} ${n.status}` : n.task_id)).join(", ")}]`;
  }
  if (e.answer_lost) s += ", answer broken by an injected fault";
  if (e.tool_errors?.length) s += `, reporting tool error “${truncate(e.tool_errors[0], 70)}”`;
  const gist = e.injected == null ? "" : injectedGist(e.injected);
  if (gist) s += `, with new text “${truncate(gist, 70)}”`;
  return s;
}

const CLI_CONTEXT = ["Available agent types for the Agent tool", "The following deferred tools are now available via ToolSearch"];
// A request's injected text worth showing: a hook's feedback, else the text without the CLI's own
// <system-reminder> context (src/evidence/mod.rs `injected_gist`).
function injectedGist(text) {
  const at = text.indexOf("hook feedback:");
  if (at >= 0) return text.slice(at);
  let kept = text.replace(/<system-reminder>[\s\S]*?(<\/system-reminder>|$)/g, "");
  const context = CLI_CONTEXT.map((m) => kept.indexOf(m)).filter((i) => i >= 0);
  if (context.length) kept = kept.slice(0, Math.min(...context));
  return words(kept);
}

function describeToolCall(e) {
  if (e.inserted) return `calls ${e.tool} (inserted by the fake API to load a deferred tool)`;
  let s = `calls ${e.tool}`;
  if (e.target != null) s += ` on \`${e.target}\``;
  if (e.background) s += " in the background";
  if (e.spawn != null) s += `, spawning \`${e.spawn}\``;
  if (e.teammate != null) s += ` as teammate \`${e.teammate}\``;
  if (e.track != null) s += `, tracked as \`${e.track}\``;
  return s;
}

function describeHook(e) {
  let s = `hook ${e.hook}`;
  if (e.background_tasks) s += `, background_tasks [${e.background_tasks.map((t) => `${t.type} ${t.id} ${t.status}`).join(", ")}]`;
  if (e.stop_hook_active === true) s += ", stop_hook_active";
  return s;
}

const witnessOf = (e, what) => ({ t_ms: e.t_ms, source: e.source, ...(e.agent != null ? { agent: e.agent } : {}), what });

// -- Stops from any source (src/checks/stops.rs) --
const STOP_TOOLS = ["TaskStop", "KillShell", "KillBash"];

function stopOf(e) {
  if (e.kind === "tool_call" && !e.inserted && STOP_TOOLS.includes(e.tool)) return { by: "model", target: e.target ?? null };
  if (e.kind === "control_request" && e.subtype === "stop_task") {
    return { by: "stop-task", target: e.target != null ? e.target.split(" (")[0] : null };
  }
  if (e.kind === "control_request" && e.subtype === "interrupt") return { by: "interrupt", target: null };
  if (e.kind === "session_closed") return { by: "session-end", target: null };
  if (e.kind === "ceiling_hit") return { by: "ceiling", target: null };
  return null;
}

function describeStop(stop) {
  const on = (what) => (stop.target != null ? `${what} of \`${stop.target}\`` : what);
  return { model: on("the model's TaskStop"), "stop-task": on("the driver's stop_task"), interrupt: "the driver's interrupt",
    "session-end": "the session's end", ceiling: "the run's ceiling" }[stop.by];
}

// -- How a selector sees an event (src/checks/view.rs) --
function eventViews(events, raw) {
  const lines = new Map((raw.lines ?? []).map(([t, line]) => [t, line]));
  return events.map((event, index) => {
    const json = { ...event };
    if (json.route && typeof json.route === "object") json.route = json.route.route;
    if (event.kind === "hook" && raw.payloads?.[event.raw] !== undefined) json.payload = raw.payloads[event.raw];
    if (["stream", "sdk"].includes(event.source) && lines.has(event.t_ms)) json.line = lines.get(event.t_ms);
    const stop = stopOf(event);
    if (stop) json.stop = stop.target == null ? { by: stop.by } : stop;
    return { event, index, json, stop };
  });
}

function workOf(v) {
  const e = v.event;
  let named = null;
  if (e.kind === "tool_call") named = e.spawn ?? e.track ?? e.target ?? null;
  else if (["task_started", "task_updated", "task_notified"].includes(e.kind)) named = e.label ?? null;
  else if (["track_started", "track_ended"].includes(e.kind)) named = e.name;
  else if (e.kind === "work_overdue") named = e.work;
  return named ?? v.stop?.target ?? (e.agent !== MAIN ? e.agent ?? null : null);
}

function viewField(v, field) {
  const e = v.event;
  switch (field) {
    case "hook": return e.kind === "hook" ? e.hook : null;
    case "type": return e.kind === "turn_result" ? "result" : ["stream_line", "to_cli"].includes(e.kind) ? e.type : null;
    case "subtype": return ["turn_result", "control_request", "control_response", "stream_line", "to_cli"].includes(e.kind)
      ? e.subtype ?? null : null;
    case "tool": return ["tool_call", "tool_unavailable", "permission_asked", "permission_answered", "approval_given"]
      .includes(e.kind) ? e.tool : e.kind === "shown" ? e.tool ?? null : null;
    case "status": return ["task_updated", "task_notified"].includes(e.kind) ? e.status
      : e.kind === "shown" ? e.status ?? null : null;
    default: return null;
  }
}

function viewMatches(v, s) {
  const is = (want, have) => want == null || have === want;
  const kindOk = s.kind == null || (s.kind === "stop" ? !!v.stop : v.json.kind === s.kind);
  let workOk = true;
  if (s.work != null) {
    workOk = s.kind === "stop" ? !!v.stop && (v.stop.target == null || v.stop.target === s.work) : workOf(v) === s.work;
  }
  return kindOk && workOk && is(s.source, v.json.source) && is(s.agent, v.event.agent ?? null)
    && is(s.hook, viewField(v, "hook")) && is(s.type, viewField(v, "type")) && is(s.subtype, viewField(v, "subtype"))
    && is(s.tool, viewField(v, "tool")) && is(s.status, viewField(v, "status"))
    && (s.where ?? []).every((p) => holds(p, v.json));
}

// Every value at a path (a `[*]` step fans out); nulls are no value.
function lookup(json, path) {
  let here = [json];
  for (const step of path) {
    here = here.flatMap((v) => {
      if (step === "any") return Array.isArray(v) ? v : [];
      if ("key" in step) return v && typeof v === "object" && !Array.isArray(v) && step.key in v ? [v[step.key]] : [];
      return Array.isArray(v) && step.index < v.length ? [v[step.index]] : [];
    });
  }
  return here.filter((v) => v !== null && v !== undefined);
}

const pathText = (path) => path.map((s, i) => (s === "any" ? "[*]" : "index" in s ? `[${s.index}]` : `${i ? "." : ""}${s.key}`)).join("");

function holds(p, json) {
  const values = lookup(json, p.path);
  if ("exists" in p.test) return (values.length === 0) !== p.test.exists;
  return values.some((v) => passes(p.test, v));
}

function passes(test, v) {
  const num = (x) => (typeof x === "number" ? x : typeof x === "string" ? parseNumber(x) : null);
  if ("equals" in test) {
    return typeof test.equals === "number" && typeof v === "number" ? test.equals === v : sameJson(test.equals, v);
  }
  if ("contains" in test) {
    if (typeof v === "string") return v.includes(test.contains);
    return Array.isArray(v) && v.some((i) => i === test.contains);
  }
  if ("matches" in test) { try { return new RegExp(test.matches).test(asText(v)); } catch { return false; } }
  const x = num(v);
  if (x === null) return false;
  if ("gt" in test) return x > test.gt;
  if ("ge" in test) return x >= test.ge;
  if ("lt" in test) return x < test.lt;
  if ("le" in test) return x <= test.le;
  return true;
}

// -- Selectors in words (src/checks/prose.rs) --
const NOUNS = { model_request: "model requests", tool_call: "tool calls", turn_ended: "turn ends", agent_finalized: "finalizations",
  turn_result: "`result` lines", stream_line: "stream lines", user_input: "user inputs", transcript_fact: "transcript facts",
  control_request: "control requests", control_response: "control responses" };

function selectorWords(s) {
  let noun = s.hook != null ? `${s.hook} hooks` : s.kind === "stop" ? "stops"
    : s.kind != null ? NOUNS[s.kind] ?? `${s.kind.replace(/_/g, " ")} events` : "events";
  if (s.tool != null) noun = `\`${s.tool}\` ${noun}`;
  if (s.type != null && s.subtype != null) noun = `\`${s.type}/${s.subtype}\` ${noun}`;
  else if (s.type != null) noun = `\`${s.type}\` ${noun}`;
  else if (s.subtype != null) noun = `\`${s.subtype}\` ${noun}`;
  const parts = [noun];
  if (s.source != null) parts.push(`from the ${s.source}`);
  if (s.agent != null) parts.push(`of \`${s.agent}\``);
  if (s.work != null) parts.push(`about \`${s.work}\``);
  if (s.status != null) parts.push(`with status \`${s.status}\``);
  const tests = (s.where ?? []).map((p) => `\`${pathText(p.path)}\` ${testWords(p.test)}`);
  if (tests.length) parts.push(`where ${tests.join(" and ")}`);
  return parts.join(" ");
}

function testWords(t) {
  if ("equals" in t) return `is ${typeof t.equals === "string" ? JSON.stringify(t.equals) : asText(t.equals)}`;
  if ("contains" in t) return `contains “${t.contains}”`;
  if ("matches" in t) return `matches /${t.matches}/`;
  if ("exists" in t) return t.exists ? "exists" : "is absent";
  for (const [op, w] of [["gt", ">"], ["ge", ">="], ["lt", "<"], ["le", "<="]]) if (op in t) return `${w} ${t[op]}`;
  return "";
}

function viewWitness(v) {
  const what = v.stop ? `${describeStop(v.stop)} (${describe(v.event)})` : describe(v.event);
  return witnessOf(v.event, what);
}
const at = (v) => `at ${fmtSecs(v.event.t_ms)}`;
const yesNo = (b) => (b ? "yes" : "no");
const times = (n) => (n === 1 ? "once" : n === 2 ? "twice" : `${n} times`);
const obs = (observed, witness, explanation, settled) => ({ observed: String(observed), witness, explanation, settled });

// -- Relations (src/checks/relations.rs) --
function evaluate(views, q) {
  const pick = (s) => views.filter((v) => viewMatches(v, s));
  switch (q.relation) {
    case "count": return relCount(pick(q.of), q.of);
    case "exists": return relExists(pick(q.of), q.of, true);
    case "absent": return relExists(pick(q.of), q.of, false);
    case "before": return relBefore(pick(q.first), pick(q.then), q.first, q.then);
    case "within": return relWithin(pick(q.after), pick(q.then), q.after, q.then, q.seconds ?? null, views);
    case "pairs": return relPairs(pick(q.each), pick(q.with), q.each, q.with, q.by ?? null);
    case "while": return relWhile(pick(q.count), pick(q.from), q.until ? pick(q.until) : [], q.count, q.from);
    case "value": return relValue(pick(q.at), q.at, q.path, q.which ?? "first", q.capture ?? null);
    case "followed": return relFollowed(pick(q.each), views, q.each, q.by, q.unless ?? null);
    case "gap": return relGap(pick(q.from), pick(q.to), q.from, q.to);
    default: return obs("not-observed", [], `This script does not know the relation \`${q.relation}\`.`, "open");
  }
}

function relGap(a, b, from, to) {
  const [fa, fb] = [selectorWords(from), selectorWords(to)];
  const a0 = a[0];
  if (!a0) return obs("not-observed", [], `No ${fa} in the run, so there is no gap to measure.`, "open");
  const b0 = b.find((v) => v.index > a0.index);
  if (!b0) {
    return obs("not-observed", [viewWitness(a0)], `The first of the ${fa} came ${at(a0)}, and no ${fb} followed it, so there is no gap to measure.`, "open");
  }
  const seconds = (b0.event.t_ms - a0.event.t_ms) / 1000;
  return obs(seconds.toFixed(3), [viewWitness(a0), viewWitness(b0)],
    `The first of the ${fb} after the first of the ${fa} came ${fmtSecs(b0.event.t_ms - a0.event.t_ms)} after it (${at(a0)} to ${at(b0)}).`, "final");
}

function relCount(found, of) {
  const what = selectorWords(of);
  const explanation = found.length ? `${what}: ${found.length} in the run, the first ${at(found[0])}.` : `No ${what} in the run.`;
  return obs(found.length, found.slice(0, 3).map(viewWitness), explanation, "growing");
}

function relExists(found, of, want) {
  const what = selectorWords(of);
  const explanation = found.length ? `${found.length} ${what} in the run, the first ${at(found[0])}.` : `No ${what} in the run.`;
  return obs(yesNo((found.length === 0) !== want), found.slice(0, 1).map(viewWitness), explanation, found.length ? "final" : "open");
}

function relBefore(a, b, first, then) {
  const [fa, fb] = [selectorWords(first), selectorWords(then)];
  const b0 = b[0];
  if (!b0) return obs("not-observed", a.slice(0, 1).map(viewWitness), `No ${fb} in the run, so there is no order to tell.`, "open");
  const a0 = a[0];
  if (a0 && a0.index < b0.index) {
    return obs("yes", [viewWitness(a0), viewWitness(b0)], `The first of the ${fa} (${at(a0)}) came before the first of the ${fb} (${at(b0)}).`, "final");
  }
  if (a0) return obs("no", [viewWitness(b0), viewWitness(a0)], `The first of the ${fb} (${at(b0)}) came before the first of the ${fa} (${at(a0)}).`, "final");
  return obs("no", [viewWitness(b0)], `The first of the ${fb} came ${at(b0)} with no ${fa} before it.`, "final");
}

function relWithin(a, b, after, then, seconds, all) {
  const [fa, fb] = [selectorWords(after), selectorWords(then)];
  const a0 = a[0];
  if (!a0) return obs("not-observed", [], `No ${fa} in the run, so nothing had to follow it.`, "open");
  const window = seconds == null ? Infinity : seconds * 1000;
  const bound = seconds == null ? "" : ` within ${seconds} s`;
  const b0 = b.find((v) => v.index > a0.index);
  if (b0) {
    const gap = b0.event.t_ms - a0.event.t_ms;
    return obs(yesNo(gap <= window), [viewWitness(a0), viewWitness(b0)],
      `The first of the ${fa} came ${at(a0)}, and the first of the ${fb} after it ${at(b0)}, ${fmtSecs(gap)} later${gap <= window ? "" : `: not${bound}`}.`, "final");
  }
  const last = all.length ? all[all.length - 1].event.t_ms : 0;
  return obs("no", [viewWitness(a0)], `The first of the ${fa} came ${at(a0)}, and no ${fb} followed it${bound}.`,
    last >= a0.event.t_ms + window ? "final" : "open");
}

function relPairs(each, withs, es, ws, by) {
  const [fe, fw] = [selectorWords(es), selectorWords(ws)];
  const key = (v) => (by === "agent" ? v.event.agent ?? null : by === "work" ? workOf(v) : null);
  const merged = [...each.map((v) => [true, v]), ...withs.filter((w) => !each.some((e) => e.index === w.index)).map((v) => [false, v])]
    .sort((x, y) => x[1].index - y[1].index);
  const open = []; // [key, view, count]
  const breaks = []; // {kind, e, second}
  for (const [isEach, v] of merged) {
    const k = key(v);
    const slot = open.findIndex(([kk]) => kk === k);
    if (isEach && slot >= 0) {
      const [, prev, n] = open.splice(slot, 1)[0];
      if (n === 0) breaks.push({ kind: "unpaired", e: prev });
      open.push([k, v, 0]);
    } else if (isEach) open.push([k, v, 0]);
    else if (slot >= 0) {
      open[slot][2] += 1;
      if (open[slot][2] === 2) breaks.push({ kind: "twice", e: open[slot][1], second: v });
    } else breaks.push({ kind: "orphan", e: v });
  }
  const endsUnpaired = open.filter(([, , n]) => n === 0).length;
  for (const [, v, n] of open) if (n === 0) breaks.push({ kind: "unpaired", e: v });
  if (!each.length && !breaks.length) return obs("not-observed", [], `No ${fe} in the run, so there was nothing to pair.`, "open");
  if (!breaks.length) {
    return obs("yes", [...each.slice(0, 1), ...withs.slice(0, 1)].map(viewWitness),
      `Each of the ${each.length} ${fe} was followed by exactly one of the ${fw}.`, "open");
  }
  const first = breaks[0];
  const settled = breaks.length === endsUnpaired ? "open" : "final";
  const [w, why] = first.kind === "unpaired" ? [[viewWitness(first.e)], `the one ${at(first.e)} had none`]
    : first.kind === "twice" ? [[viewWitness(first.e), viewWitness(first.second)], `the one ${at(first.e)} had a second ${at(first.second)}`]
      : [[viewWitness(first.e)], `one of the ${fw} came ${at(first.e)} with no ${fe} before it`];
  return obs("no", w, `Not every one of the ${each.length} ${fe} was followed by exactly one of the ${fw} (${breaks.length} break(s)): ${why}.`, settled);
}

function relWhile(counted, from, until, cs, fs) {
  const [fc, ff] = [selectorWords(cs), selectorWords(fs)];
  const start = from[0];
  if (!start) return obs("not-observed", [], `No ${ff} in the run, so the condition never held.`, "open");
  const marks = [...from.map((v) => [v.index, true]), ...until.map((v) => [v.index, false])]
    .sort((x, y) => x[0] - y[0] || Number(x[1]) - Number(y[1]));
  const intervals = [];
  let openAt = null;
  for (const [index, opens] of marks) {
    if (openAt === null && opens) openAt = index;
    else if (openAt !== null && !opens) { intervals.push([openAt, index]); openAt = null; }
  }
  if (openAt !== null) intervals.push([openAt, Infinity]);
  const inside = counted.filter((v) => intervals.some(([a, b]) => v.index > a && v.index < b));
  return obs(inside.length, [viewWitness(start), ...inside.slice(0, 2).map(viewWitness)],
    `The condition held ${times(intervals.length)}, first from the ${ff} ${at(start)}; ${fc} that came while it held: ${inside.length}.`, "growing");
}

function relValue(found, sel, path, which, capture) {
  const what = selectorWords(sel);
  const settled = which === "first" ? "final" : "open";
  const v = which === "first" ? found[0] : found[found.length - 1];
  if (!v) return obs("not-observed", [], `No ${what} in the run.`, "open");
  const place = which === "first" ? "first" : "last";
  const values = lookup(v.json, path);
  if (!values.length) return obs("not-observed", [viewWitness(v)], `The ${place} of the ${what} (${at(v)}) has no \`${pathText(path)}\`.`, settled);
  const raw = asText(values[0]);
  let text = raw;
  if (capture != null) {
    let m = null;
    try { m = new RegExp(capture).exec(raw); } catch { m = null; }
    text = m && m[1] !== undefined ? m[1] : null;
  }
  if (text === null) {
    return obs("not-observed", [viewWitness(v)], `At the ${place} of the ${what} (${at(v)}), \`${pathText(path)}\` is “${raw}”, which the capture does not match.`, settled);
  }
  return obs(text, [viewWitness(v)], `At the ${place} of the ${what} (${at(v)}), \`${pathText(path)}\` is “${raw}”.`, settled);
}

function relFollowed(each, all, es, by, unless) {
  const [fe, fb] = [selectorWords(es), selectorWords(by)];
  const hits = [];
  for (const e of each) {
    const next = all.slice(e.index + 1).find((v) => viewMatches(v, by) || (unless && viewMatches(v, unless)));
    if (next && viewMatches(next, by)) hits.push([e, next]);
  }
  const unlessPart = unless ? ` before any ${selectorWords(unless)}` : "";
  return obs(hits.length, hits.slice(0, 2).flatMap(([a, b]) => [viewWitness(a), viewWitness(b)]),
    `${hits.length} of the ${each.length} ${fe} were followed by one of the ${fb}${unlessPart}${hits.length ? `, the first ${at(hits[0][0])}` : ""}.`, "growing");
}

// -- Presets (src/checks/presets) --
const pred = (key, test) => ({ path: key.split(".").flatMap((part) => {
  const m = /^([A-Za-z0-9_]*)((\[(\d+|\*)\])*)$/.exec(part);
  const steps = m[1] ? [{ key: m[1] }] : [];
  for (const [, idx] of m[2].matchAll(/\[(\d+|\*)\]/g)) steps.push(idx === "*" ? "any" : { index: Number(idx) });
  return steps;
}), test });

function presetQuery(kind, agent) {
  const ofAgent = (k) => ({ kind: k, agent });
  const turnRequest = { ...ofAgent("model_request"), where: [pred("route", { matches: "^(turn|script_exhausted)$" })] };
  switch (kind) {
    case "subagent-stop-on-interrupt":
      return { relation: "within", after: { kind: "stop", work: agent }, then: ofAgent("agent_finalized"), seconds: null };
    case "guard-blocked-once": case "stops-unblocked":
      return { relation: "followed", each: ofAgent("agent_finalized"), by: turnRequest, unless: { hook: "SubagentStart", agent } };
    case "tool-errors":
      // As the Rust preset writes it: the error test replaces the route test.
      return { relation: "exists", of: { ...ofAgent("model_request"), where: [pred("tool_errors[0]", { exists: true })] } };
    case "transcript-status":
      return { relation: "value", at: { ...ofAgent("transcript_fact"), where: [pred("fact", { matches: "^status " })] },
        path: pred("fact", {}).path, which: "first", capture: "^status (.+)$" };
    default: return null;
  }
}

function presetInWords(kind, o, agent) {
  let word = o.observed, lead = "";
  if (kind === "subagent-stop-on-interrupt") {
    [word, lead] = o.observed === "yes" ? ["fired", `SubagentStop fired for \`${agent}\` after it was stopped.`]
      : o.observed === "no" ? ["not-fired", `No SubagentStop fired for \`${agent}\` after it was stopped.`]
        : ["not-observed", `Nothing stopped \`${agent}\`: no TaskStop, stop_task, interrupt, session end or ceiling.`];
  } else if (kind === "guard-blocked-once" || kind === "stops-unblocked") {
    const n = parseInt(o.observed, 10) || 0;
    word = kind === "stops-unblocked" ? (n === 0 ? "unblocked" : "blocked")
      : n === 0 ? "not-blocked" : n === 1 ? "blocked-once" : `blocked-${n}-times`;
    lead = `${n} finalization(s) of \`${agent}\` were blocked: the agent made another model request with no new SubagentStart in between.`;
  } else if (kind === "tool-errors") {
    [word, lead] = o.observed === "yes" ? ["errors", `A tool call of \`${agent}\` came back as an error.`]
      : ["none", `Every tool call of \`${agent}\` ran: none came back as an error.`];
  } else if (kind === "transcript-status") {
    lead = o.observed === "not-observed" ? `No status of \`${agent}\` was read from a transcript.` : `\`${agent}\`'s transcript says ${o.observed}.`;
  }
  return { ...o, observed: word, explanation: `${lead} ${o.explanation}`.trim() };
}

function idleTeammate(tl, agent) {
  const idleHook = tl.find((e) => hookIs(e, "TeammateIdle") && (e.agent === agent || e.detail === agent));
  const idle = idleHook ?? tl.find((e) => e.kind === "turn_ended" && e.agent === agent);
  if (!idle) return obs("not-observed", [], `\`${agent}\` never went idle in this run, so there is nothing to tell apart.`, "open");
  const busy = tl.find((e) => e.t_ms > idle.t_ms && isRequestBy(e, agent))?.t_ms ?? Infinity;
  const stops = tl.filter((e) => e.t_ms > idle.t_ms && e.t_ms < busy && hookIs(e, "Stop"));
  const w = [witnessOf(idle, `\`${agent}\` goes idle`)];
  const misleading = stops.filter((e) => (e.background_tasks ?? []).some((t) => t.type.includes("teammate")
    && t.status === "running" && !(t.other_fields ?? []).some((f) => f.includes("idle"))));
  if (!stops.length) return obs("not-observed", w, `No Stop hook fired while \`${agent}\` was idle.`, "open");
  if (misleading.length) {
    w.push(witnessOf(misleading[0], "Stop lists the idle teammate as running"));
    return obs("indistinguishable", w, `\`${agent}\` went idle at ${(idle.t_ms / 1000).toFixed(2)} s, yet ${misleading.length} of the ${stops.length} Stop payloads after it listed the teammate as \`running\` with no idle flag.`, "open");
  }
  w.push(witnessOf(stops[0], "Stop tells the idle teammate apart"));
  return obs("distinguishable", w, `After \`${agent}\` went idle, none of the ${stops.length} Stop payloads listed it as a running teammate without an idle flag.`, "open");
}

function singleContinuation(tl) {
  const first = tl.find((e) => isRequestBy(e, MAIN) && (e.notifications ?? []).length);
  if (!first) return obs("none", [], "The main agent never received a background notification: the CLI did not continue by itself.", "open");
  const ids = first.notifications.map((n) => n.task_id);
  const deliveries = tl.filter((e) => isRequestBy(e, MAIN) && (e.notifications ?? []).some((n) => ids.includes(n.task_id)));
  const w = [witnessOf(first, "the main agent's turn carries the notification")];
  if (deliveries.length > 1) {
    w.push(witnessOf(deliveries[1], "a second turn carries the same notification"));
    return obs("duplicate", w, `${deliveries.length} turns of the main agent carried the same notification: the continuation was duplicated.`, "open");
  }
  return obs("one", w, `Exactly one turn of the main agent carried the notification, at ${(first.t_ms / 1000).toFixed(2)} s.`, "open");
}

function observePreset(kind, tl, views, agent) {
  const q = presetQuery(kind, agent);
  if (q) return presetInWords(kind, evaluate(views, q), agent);
  if (kind === "idle-teammate-distinguishable") return idleTeammate(tl, agent);
  if (kind === "single-continuation") return singleContinuation(tl);
  return obs("not-observed", [], `\`${kind}\` judges an integration under test, which this script does not run.`, "open");
}

// -- One check, judged (src/checks/mod.rs) --
function comparison(text) {
  const t = String(text).trim();
  const ops = [[">=", "ge"], ["<=", "le"], ["==", "eq"], ["!=", "ne"], [">", "gt"], ["<", "lt"]];
  const [prefix, op] = ops.find(([p]) => t.startsWith(p)) ?? ["", "eq"];
  const value = parseNumber(t.slice(prefix.length));
  return value === null ? null : { op, value };
}
const compareHolds = (c, n) => ({ eq: n === c.value, ne: n !== c.value, gt: n > c.value, ge: n >= c.value, lt: n < c.value, le: n <= c.value })[c.op];
const settledByGrowth = (c, n) => (["ge", "gt"].includes(c.op) ? compareHolds(c, n) : ["le", "lt"].includes(c.op) ? !compareHolds(c, n) : n > c.value);

function meets(expect, observed) {
  if (expect === observed) return true;
  const c = comparison(expect), n = parseNumber(observed);
  return !!c && n !== null && compareHolds(c, n);
}

function conclusive(o, stated) {
  if (o.settled === "final") return true;
  if (o.settled === "open") return false;
  const c = comparison(stated), n = parseNumber(o.observed);
  return !!c && n !== null && settledByGrowth(c, n);
}

const CUT_WORDS = { ceiling: "by its ceiling", interrupted: "by a signal to the harness", "harness-failed": "by a failure of the harness",
  "work-hung": "when watched work passed its hang bound", "tool-unavailable": "where the script called a tool this CLI does not offer" };

function fillTaskIds(text, idOf, escape) {
  let missing = null;
  const out = text.replace(/\{\{@([^}]*)\}\}/g, (all, inner) => {
    const name = inner.trim().startsWith("task-id:") ? inner.trim().slice("task-id:".length) : null;
    if (name === null) return all;
    const id = idOf(name);
    if (id == null) { missing ??= name; return all; }
    return escape ? id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") : id;
  });
  return { out, missing };
}

function withTaskIds(q, idOf) {
  const copy = JSON.parse(JSON.stringify(q));
  let missing = null;
  for (const key of ["of", "first", "then", "after", "each", "with", "count", "from", "until", "at", "by", "unless", "to"]) {
    const s = copy[key];
    if (!s || typeof s !== "object") continue;
    for (const p of s.where ?? []) {
      for (const [field, escape] of [["equals", false], ["contains", false], ["matches", true]]) {
        if (typeof p.test[field] !== "string") continue;
        const filled = fillTaskIds(p.test[field], idOf, escape);
        p.test[field] = filled.out;
        missing ??= filled.missing;
      }
    }
  }
  return missing ? { missing } : { query: copy };
}

function selectorsOf(q) {
  const keys = { count: ["of"], exists: ["of"], absent: ["of"], before: ["first", "then"], within: ["after", "then"],
    pairs: ["each", "with"], while: ["count", "from", "until"], value: ["at"], followed: ["each", "by", "unless"], gap: ["from", "to"] };
  return (keys[q.relation] ?? []).filter((k) => q[k]).map((k) => [k, q[k]]);
}

function runCheck(check, tl, views, end) {
  const agent = check.agent ?? MAIN;
  let kind, o, query = null;
  if (check.query) {
    const idOf = (name) => tl.find((e) => e.kind === "task_started" && e.label === name)?.task_id ?? null;
    const filled = withTaskIds(check.query, idOf);
    kind = `query:${check.query.relation}`;
    if (filled.missing) {
      o = obs("not-observed", [], `\`${filled.missing}\` never became a task in this run, so \`{{@task-id:${filled.missing}}}\` names no task id and the check has nothing to look at.`, "open");
    } else {
      query = filled.query;
      o = evaluate(views, query);
    }
  } else if (check.kind) {
    kind = check.kind;
    o = observePreset(check.kind, tl, views, agent);
  } else {
    kind = "none";
    o = obs("not-observed", [], "The check states neither a preset nor a query.", "final");
  }
  const unseenRest = CUT_SHORT.includes(end) || end === "work-hung";
  const against = (stated) => (stated == null ? null
    : { met: meets(stated, o.observed), open: unseenRest && !conclusive(o, stated), stated });
  const expect = against(check.expect), want = against(check.want);
  const leftOpen = [expect, want].filter((j) => j?.open).map((j) => j.stated);
  let explanation = o.explanation;
  if (leftOpen.length) {
    explanation += ` The run was cut short (${CUT_WORDS[end] ?? "early"}), so the rest of it, which was not seen, could still change this: whether it meets \`${leftOpen.join("` or `")}\` is left open.`;
  }
  const settled = (j) => (j && !j.open ? j.met : null);
  const result = { name: check.name, kind, agent: check.agent ?? null, observed: o.observed, expected: check.expect ?? null,
    passed: settled(expect), want: check.want ?? null, meets_want: settled(want), witness: o.witness, explanation,
    matched: [], vacuous: false, may_break: check.may_break ?? null, describes: check.describes ?? null };
  if (query) {
    result.matched = selectorsOf(query).map(([key, s]) => [key, views.filter((v) => viewMatches(v, s)).length]);
    markVacuous(result, check, query);
  }
  return result;
}

// A check whose selectors matched nothing observed nothing: vacuous, neither pass nor fail.
// `absent` is about matching nothing, and so is an `exists` that states `no` (zero matches is
// then the very observation); nor is a check that allows it.
function markVacuous(r, check, query) {
  const empty = r.matched.every(([, n]) => n === 0);
  const absenceStated = query.relation === "exists" && [check.expect, check.want].includes("no");
  if (!empty || query.relation === "absent" || absenceStated || check.allow_empty) return;
  Object.assign(r, { vacuous: true, passed: null, meets_want: null,
    explanation: `Vacuous: no selector of this check matched any event (${r.matched.map(([k, n]) => `\`${k}\` ${n}`).join(", ")}), so it observed nothing; \`${r.observed}\` would hold of any run. ${r.explanation}` });
}

function runChecks(checks, events, raw, end) {
  const tl = observedPart(events, end);
  const views = eventViews(tl, raw);
  return (checks ?? []).map((c) => runCheck(c, tl, views, end));
}

// -- What each version tells (src/evidence/offers.rs): the evidence a version cannot print at all --
const ALL_OFFERS = ["notification-line", "task-updated", "notice-in-requests", "background-tasks-in-hooks"];
const OFFERS = [
  [[0, 0, 0], []],
  [[2, 1, 87], ["notification-line", "notice-in-requests"]],
  [[2, 1, 144], ["notification-line", "notice-in-requests", "task-updated"]],
  [[2, 1, 219], ALL_OFFERS],
];
const MISSING = { "notification-line": "no task_started or task_notification line", "task-updated": "no task_updated line",
  "notice-in-requests": "no <task-notification> in any model request", "background-tasks-in-hooks": "no background_tasks in its Stop payloads" };

// What the real CLI `version` (run with `backend`, in driver mode `mode`) can tell; everything
// for the simulator or a version that is not a published one.
function offersOf(backend, version, mode) {
  const m = /^(\d+)\.(\d+)\.(\d+)(?:[-+][0-9A-Za-z.-]*)?$/.exec(String(version ?? "").split(/\s+/)[0]);
  if (backend !== "claude" || !m) return { version: null, offered: new Set(ALL_OFFERS) };
  const v = m.slice(1).map(Number);
  const before = (a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
  const row = [...OFFERS].reverse().find(([from]) => before(from, v) <= 0);
  const streamed = mode !== "pty";
  return { version, offered: new Set(row[1].filter((e) => streamed || (e !== "notification-line" && e !== "task-updated"))) };
}
const whyNot = (offers, e) => offers.version ? `Claude Code ${offers.version} (in this driver mode) emits ${MISSING[e]}`
  : `this run emits ${MISSING[e]}`;

// -- The verdict rules (src/classify/facts.rs and rules.rs) --
function gatherFacts(tl, watch, end) {
  const work = watch.work;
  const taskIds = new Set();
  let started = null;
  for (const e of tl) {
    if (e.kind === "tool_call" && (e.spawn === work || e.track === work)) started ??= e;
    else if (e.kind === "task_started" && e.label === work) { taskIds.add(e.task_id); started ??= e; }
    else if (e.kind === "track_started" && e.name === work) started ??= e;
  }
  const runEnd = tl.find((e) => ENDS_THE_RUN.includes(e.kind) || e.kind === "cli_exited") ?? null;
  let cut = tl.find((e) => (e.kind === "work_overdue" ? e.work !== work : ENDS_THE_RUN.includes(e.kind))) ?? null;
  if (!cut && CUT_SHORT.includes(end)) cut = runEnd;
  const mark = tl.find((e) => e.kind === "work_overdue" && e.work === work) ?? null;
  const cutoff = runEnd?.t_ms ?? Infinity;
  // Nothing before the work's first trace is about it; nothing after the run's end is the CLI's.
  const since = started?.t_ms ?? Infinity;
  const reported = workEnd(tl, work, taskIds, since, cutoff) ?? endToldOtherwise(tl, work, taskIds, started, since, cutoff);
  let theEnd = reported ?? noticeOfEnd(tl, taskIds, since);
  const endFromNotice = !reported && !!theEnd;
  if (theEnd) theEnd = harnessKill(tl, work, theEnd);
  const endT = theEnd?.e.t_ms ?? Infinity;
  // A hang is judged on the recorded stamps: a timer the stamps contradict (or one past the CLI's
  // exit) is the harness cutting the run; so is the mark after the work ended.
  const lateTimer = mark && (mark.t_ms > cutoff || !passedItsBound(mark, started, endT)) ? mark : null;
  const cutMark = lateTimer ?? (mark && endT < mark.t_ms ? mark : null);
  const overdue = cutMark ? null : mark;
  if (cutMark) cut ??= cutMark;
  const f = { waiter: watch.waiter, work, taskIds, started, runEnd, cut, overdue, lateTimer, restart: null, staleStop: null,
    endFromNotice, lastT: tl.length ? tl[tl.length - 1].t_ms : 0 };
  f.end = theEnd;
  f.restart = started ? tl.find((e) => e.t_ms > started.t_ms && e.t_ms < endT && e.kind === "cli_restarted" && e.pid != null) ?? null : null;
  for (const restart of tl.filter((e) => e.t_ms < endT && e.kind === "cli_restarted" && e.pid != null)) {
    const notice = tl.find((e) => e.t_ms >= restart.t_ms && e.t_ms < endT && e.kind === "task_notified"
      && taskIds.has(e.task_id) && e.status === "stopped");
    if (notice) { f.staleStop = notice; break; }
  }
  return f;
}

function passedItsBound(mark, started, endT) {
  if (!started) return true;
  const due = started.t_ms + mark.bound_s * 1000;
  return endT > due && mark.t_ms >= due;
}

function endOfStatus(status) {
  const s = taskStatus(status);
  return s === "failed" ? { how: "failed", why: `status ${status}` } : s === "killed" ? { how: "killed", why: `status ${status}` }
    : { how: "completed" };
}

function workEnd(tl, work, taskIds, since, cutoff) {
  let cliEnd = null, trackerEnd = null;
  for (const e of tl.filter((x) => x.t_ms >= since && x.t_ms <= cutoff)) {
    let how = null;
    if (e.kind === "track_ended" && e.name === work) {
      how = exitSuccess(e.exit) ? { how: "completed" } : e.exit && "code" in e.exit
        ? { how: "failed", why: `exit code ${e.exit.code}` } : { how: "killed", why: describeExit(e.exit) };
    } else if (e.kind === "process_exited" && e.exit === "vanished" && e.command === `wp-track ${work}`) {
      how = { how: "killed", why: "vanished" };
    } else if (e.kind === "task_updated" && taskIds.has(e.task_id) && taskStatus(e.status) !== "live") {
      how = endOfStatus(e.status);
    }
    if (!how) continue;
    if (["track_ended", "process_exited"].includes(e.kind)) trackerEnd ??= { e, ...how };
    else cliEnd ??= { e, ...how };
  }
  if (trackerEnd && cliEnd) {
    if (trackerEnd.how === "killed" && cliEnd.how === "killed") return { ...trackerEnd, why: `${trackerEnd.why}; the CLI reported ${cliEnd.why}` };
    return trackerEnd;
  }
  return trackerEnd ?? cliEnd;
}

// Where no status update reported the end: the CLI's notice on stdout, or for an agent its own
// SubagentStop (one it did not continue after), whichever came first; else its final answer.
function endToldOtherwise(tl, work, taskIds, started, since, cutoff) {
  const inRun = (e) => e.t_ms >= since && e.t_ms <= cutoff;
  const restarted = tl.some((e) => e.kind === "cli_restarted");
  const notice = tl.filter(inRun).find((e) => e.kind === "task_notified" && taskIds.has(e.task_id)
    && taskStatus(e.status) !== "live" && !(restarted && e.status === "stopped"));
  const isAgent = !!started && ((started.kind === "tool_call" && started.spawn === work)
    || (started.kind === "task_started" && started.task_type === "local_agent"));
  const stop = isAgent ? tl.filter(inRun).filter((e) => e.agent === work && e.kind === "agent_finalized")
    .find((s) => !continuedAfter(tl, work, s)) : undefined;
  const noticeEnd = notice ? { e: notice, ...endOfStatus(notice.status) } : null;
  const stopEnd = stop ? { e: stop, how: "completed" } : null;
  const reported = noticeEnd && stopEnd ? (stopEnd.e.t_ms < noticeEnd.e.t_ms ? stopEnd : noticeEnd) : noticeEnd ?? stopEnd;
  if (reported || !isAgent) return reported;
  const last = lastTurnEnd(tl, work);
  return last && inRun(last) ? { e: last, how: "completed" } : null;
}

function continuedAfter(tl, w, stop) {
  const next = tl.find((e) => e.t_ms > stop.t_ms && e.agent === w && (isRequestBy(e, w) || hookIs(e, "SubagentStart")));
  return !!next && isRequestBy(next, w);
}

function lastTurnEnd(tl, agent) {
  const last = tl.filter((e) => isRequestBy(e, agent)).at(-1);
  if (!last) return null;
  return tl.find((e) => e.t_ms >= last.t_ms && e.agent === agent && e.kind === "turn_ended") ?? null;
}

// The first request (of any agent) carrying a notice of the work's end, where nothing else reported it.
function noticeOfEnd(tl, taskIds, since) {
  const restarted = tl.some((e) => e.kind === "cli_restarted");
  for (const e of tl.filter((x) => x.t_ms >= since && x.kind === "model_request" && !x.answer_lost)) {
    for (const n of e.notifications ?? []) {
      const status = n.status ?? "completed";
      if (n.event == null && taskIds.has(n.task_id) && !(restarted && status === "stopped")) return { e, ...endOfStatus(status) };
    }
  }
  return null;
}

// A failed or killed end after the harness's own kill is the kill's.
function harnessKill(tl, work, end) {
  const killed = tl.some((f) => f.t_ms <= end.e.t_ms && f.kind === "work_signalled" && f.work === work
    && f.fault === "kill-task" && (f.pids ?? []).length);
  return killed && ["failed", "killed"].includes(end.how) ? { ...end, how: "killed-by-fault" } : end;
}

const stallBetween = (tl, from, to) => tl.find((e) => e.kind === "harness_stalled" && e.t_ms <= to && e.until_ms >= from) ?? null;

function finalizedBefore(tl, waiter, t) {
  if (waiter === MAIN) return tl.find((e) => e.t_ms <= t && (e.kind === "cli_exited" || hookIs(e, "SessionEnd"))) ?? null;
  const stop = tl.filter((e) => e.t_ms <= t && e.agent === waiter && e.kind === "agent_finalized").at(-1);
  if (!stop) return null;
  const reactivated = tl.some((e) => e.t_ms > stop.t_ms && e.t_ms <= t
    && (isRequestBy(e, waiter) || (e.agent === waiter && hookIs(e, "SubagentStart"))));
  return reactivated ? null : stop;
}

const tellsTheEnd = (f, status) => f.staleStop === null || status !== "stopped";

function noticeRequests(tl, f, from) {
  return tl.filter((e) => e.kind === "model_request" && e.t_ms >= from && isRequestBy(e, f.waiter)
    && (e.notifications ?? []).some((n) => n.event == null && f.taskIds.has(n.task_id) && tellsTheEnd(f, n.status ?? null)));
}
const delivery = (tl, f, from) => noticeRequests(tl, f, from).find((e) => !e.answer_lost) ?? null;
const printed = (tl, f, from) => tl.find((e) => e.t_ms >= from && e.kind === "task_notified" && f.taskIds.has(e.task_id)
  && tellsTheEnd(f, e.status)) ?? null;

function queueingInput(tl, w, endT, told) {
  const inputs = tl.filter((e) => e.kind === "user_input" && ["scheduled", "probe"].includes(e.why));
  const userWords = (text) => chars(words(text)).slice(0, USER_TEXT_CHARS).join("");
  const carries = (r, input) => r.kind === "model_request" && userWords(input.text) !== ""
    && (r.user_text ?? []).includes(userWords(input.text));
  const toW = inputs.filter((e) => e.agent === w && carries(told, e));
  if (toW.length) return toW.filter((e) => e.t_ms <= told.t_ms).at(-1) ?? toW[0];
  return inputs.filter((e) => e.agent !== w).find((input) => {
    const taken = tl.find((r) => r.agent === input.agent && carries(r, input));
    return input.t_ms >= endT && taken && taken.t_ms <= told.t_ms
      && !tl.some((r) => r.t_ms > endT && r.t_ms < input.t_ms && isRequestBy(r, w));
  }) ?? null;
}

// The first rule that decides, as { rule, outcome, ... the events it names }.
function decide(ctx) {
  const { tl, f } = ctx;
  const decisionT = f.end ? f.end.e.t_ms : f.lastT;
  const exhausted = tl.find((e) => e.t_ms < decisionT && e.agent === f.waiter && e.kind === "model_request"
    && routeOf(e) === "script_exhausted");
  if (exhausted) return { rule: "script-exhausted", outcome: "unknown", exhausted };
  const runEndT = f.runEnd?.t_ms ?? f.lastT;
  if (!f.end) {
    if (f.overdue) return { rule: "hung", outcome: "child-failed", overdue: f.overdue };
    if (f.cut) return { rule: "cut-before-end", outcome: "unknown", cut: f.cut };
    if (ctx.crashed) return { rule: "crashed-before-end", outcome: "unknown" };
    const printing = tl.some((e) => ["stream", "sdk"].includes(e.source));
    if (ctx.started.kind === "tool_call" && ctx.started.spawn != null && !printing) return { rule: "end-unseen", outcome: "unknown" };
    const stop = finalizedBefore(tl, f.waiter, runEndT);
    if (stop) return { rule: "orphaned-at-exit", outcome: "not-resumable", stop };
    return { rule: "outlived-run", outcome: "unknown" };
  }
  const end = f.end;
  const toldFrom = Math.min(ctx.started.t_ms, end.e.t_ms);
  // Not measured where nothing but the notice reported the end, or the harness stalled between.
  const latency = (d) => (f.endFromNotice || stallBetween(tl, end.e.t_ms, d.t_ms) ? null : Math.max(0, d.t_ms - end.e.t_ms));
  if (end.how === "failed") {
    const told = delivery(tl, f, toldFrom);
    return { rule: "failed-on-its-own", outcome: "child-failed", told, latency_ms: told ? latency(told) : null };
  }
  const told = delivery(tl, f, toldFrom);
  if (told) {
    const input = queueingInput(tl, f.waiter, end.e.t_ms, told);
    if (input && input.agent !== f.waiter && stallBetween(tl, end.e.t_ms, told.t_ms)) {
      return { rule: "order-blurred", outcome: "unknown", input, delivery: told };
    }
    if (input) return { rule: "queued", outcome: "queued-until-input", input, delivery: told, latency_ms: latency(told) };
    const reinvoked = !!finalizedBefore(tl, f.waiter, end.e.t_ms) || tl.some((e) => e.t_ms >= end.e.t_ms
      && e.t_ms <= told.t_ms && e.agent === f.waiter && hookIs(e, "SubagentStart"));
    return { rule: "woke", outcome: "woke", delivery: told, reinvoked, latency_ms: latency(told) };
  }
  const lost = noticeRequests(tl, f, toldFrom).filter((e) => e.answer_lost);
  if (lost.length) return { rule: "answers-lost", outcome: "unknown", first: lost[0] };
  if (f.cut) return { rule: "cut-before-told", outcome: "unknown", cut: f.cut };
  if (!ctx.offers.offered.has("notice-in-requests")) {
    const request = tl.find((e) => e.t_ms > end.e.t_ms && isRequestBy(e, f.waiter));
    if (request) return { rule: "notice-unreadable", outcome: "unknown", request, why: whyNot(ctx.offers, "notice-in-requests") };
  }
  const observedMs = runEndT - end.e.t_ms;
  if (f.restart) {
    return observedMs < ctx.settleMs ? { rule: "too-short", outcome: "unknown", observedMs }
      : { rule: "lost-in-restart", outcome: "never-fired", restart: f.restart };
  }
  if (end.how === "killed") {
    const stop = finalizedBefore(tl, f.waiter, end.e.t_ms);
    if (stop) return { rule: "killed-after-finalized", outcome: "not-resumable", stop };
  }
  const stop = finalizedBefore(tl, f.waiter, end.e.t_ms);
  if (stop) return { rule: "finalized-before-end", outcome: "not-resumable", stop };
  if (ctx.crashed && end.how !== "killed") return { rule: "crashed-before-told", outcome: "unknown" };
  if (end.how === "killed" && f.runEnd?.kind === "cli_exited") return { rule: "killed-with-session", outcome: "not-resumable", exit: f.runEnd };
  if (observedMs < ctx.settleMs) return { rule: "too-short", outcome: "unknown", observedMs };
  const notice = printed(tl, f, end.e.t_ms);
  if (notice) return { rule: "printed-not-delivered", outcome: "not-resumable", printed: notice };
  if (!ctx.offers.offered.has("notification-line")) {
    return { rule: "firing-unseen", outcome: "unknown", observedMs, why: whyNot(ctx.offers, "notification-line") };
  }
  return { rule: "never-fired", outcome: "never-fired", observedMs };
}

function derivePairs(events) {
  const pairs = [];
  for (const e of events) {
    const work = e.kind === "tool_call" && e.background && e.agent != null ? e.spawn ?? e.track ?? null : null;
    if (work != null && !pairs.some((p) => p.work === work)) pairs.push({ waiter: e.agent, work });
  }
  return pairs;
}

// The judgement of one run: `plan` is wakeprobe's resolved plan (PLAN), `events` the timeline,
// `raw` {payloads, lines}, `end` how the run ended (run.json's `end`), `cliExit` its `cli_exit`,
// `offers` what its CLI version can tell (offersOf).
function judgeRun(plan, events, raw, end, cliExit, offers) {
  const pairs = plan.watch?.length ? plan.watch : derivePairs(events);
  const tl = observedPart(events, end);
  const crashed = end === "cli-ended" && cliExit != null && !exitSuccess(cliExit);
  const settleMs = plan.driver.settle * 1000;
  const verdicts = pairs.map((watch) => {
    const f = gatherFacts(tl, watch, end);
    const d = f.started ? decide({ tl, f, started: f.started, crashed, settleMs, offers })
      : { rule: "never-started", outcome: "unknown" };
    return { waiter: watch.waiter, work: watch.work, outcome: d.outcome, latency_ms: d.latency_ms ?? null, facts: f, decision: d };
  });
  const outcome = verdicts.find((v) => v.outcome !== "woke")?.outcome ?? (verdicts.length ? "woke" : "unknown");
  if (!verdicts.length) {
    verdicts.push({ waiter: MAIN, work: "-", outcome: "unknown", latency_ms: null, facts: null,
      decision: { rule: "no-background-work", outcome: "unknown" } });
  }
  return { outcome, verdicts, checks: runChecks(plan.checks, events, raw, end),
    invariants: runChecks(plan.invariants, events, raw, end) };
}
