//! Conformance: does the simulator behave like the real CLI? Both run the same scenario; their
//! run folders are reduced to *shapes* and compared, and the report says exactly where they
//! part.
//!
//! A shape keeps what the CLI decides and drops what the clock, the scheduler or a random
//! number decides:
//! - **Lanes.** Events are split by who they belong to: one lane per scenario agent
//!   (`agent:main`, `agent:worker`), one per background task (`task:bg`, `task:worker`),
//!   `driver` for what the harness did (inputs, closing the session, control requests, the
//!   ceiling) and `session` for the rest. Concurrent agents interleave differently from run to
//!   run, so only the order *within* a lane is compared, never across lanes.
//! - **Two sequences per lane**, each in its own order: `events` (model requests and answers
//!   from the fake API, hook payloads, driver actions: each stamped where it happened, so their
//!   order is exact) and `stream` (stream-json lines, in the order the CLI printed them). Their
//!   interleaving is not compared: stream lines are stamped when the harness reads them, which
//!   lags by a few milliseconds.
//! - **Floating facts**, compared as counts only: tracked processes starting and ending (their
//!   reports race the CLI's own lines), `background_tasks_changed` lines (they follow every
//!   agent at once), facts read from transcripts (their times are approximate).
//! - **Tokens** name things by the scenario (`worker`, `bg`), never by id; a request is its
//!   agent's step, the notifications it carries and the layout of its messages by role
//!   (`request step=2 notified=[bg:completed] [u s at ut s a u]`: `t` marks tool calls and
//!   results);
//!   a Stop payload is its `background_tasks` as `type:label:status`, sorted, keeping the
//!   stopping agent itself and the work it started (another agent's work races the stop); a
//!   stream line is its type/subtype and what it is about.
//! - **Keys.** The set of keys of every hook payload (per event, main vs subagent, and of each
//!   `background_tasks` entry type) and of every stream-json line kind, unioned over the run;
//!   compared for the kinds both runs have (a kind only one has shows in its lane already).
//! - **Verdict.** The classifier's outcome, which sums up the cross-lane order that matters.
//!
//! Dropped entirely: ids, times, texts, process reaps by the supervisor, screen snapshots, the
//! CLI's pid. A difference in anything kept is reported with its lane and position.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::evidence::lanes::{Lane as SharedLane, LaneMap};
use crate::evidence::{Event, EventKind, ExitDesc, HookName, InputReason, Route, Timeline};
use crate::store::saved::SavedRun;

/// One run reduced to what conformance compares.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Shape {
    pub cli: String,
    pub outcome: String,
    pub lanes: BTreeMap<String, Lane>,
    pub hook_keys: BTreeMap<String, BTreeSet<String>>,
    pub stream_keys: BTreeMap<String, BTreeSet<String>>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Lane {
    pub events: Vec<String>,
    pub stream: Vec<String>,
    pub floating: BTreeMap<String, usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConformError {
    #[error("{path}: {message}")]
    Read { path: String, message: String },
}

/// One difference between the two shapes.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Difference {
    /// `lane agent:worker (events)`, `hook keys SubagentStop`, `verdict`.
    pub place: String,
    /// A readable account: a small diff, or the keys on each side.
    pub detail: Vec<String>,
}

/// The comparison of one scenario variant.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub scenario: String,
    pub variant: String,
    pub real: String,
    pub sim: String,
    pub real_dir: PathBuf,
    pub sim_dir: PathBuf,
    pub differences: Vec<Difference>,
}

impl Comparison {
    pub fn matches(&self) -> bool {
        self.differences.is_empty()
    }

    /// The readable report.
    pub fn render(&self) -> String {
        let mut out = format!(
            "{}/{}: {} vs {}: ",
            self.scenario, self.variant, self.real, self.sim
        );
        if self.matches() {
            out.push_str("same shape\n");
            return out;
        }
        out.push_str(&format!("{} difference(s)\n", self.differences.len()));
        for d in &self.differences {
            out.push_str(&format!("  {}\n", d.place));
            for line in &d.detail {
                out.push_str(&format!("    {line}\n"));
            }
        }
        out.push_str(&format!(
            "  (real: {}, sim: {})\n",
            self.real_dir.display(),
            self.sim_dir.display()
        ));
        out
    }
}

/// Reads a run folder (timeline.json, result.json, stream.jsonl, hooks.jsonl) into its shape.
pub fn shape_of(dir: &Path) -> Result<Shape, ConformError> {
    let run = SavedRun::load(dir).map_err(|e| ConformError::Read {
        path: dir.display().to_string(),
        message: e.to_string(),
    })?;
    let layouts: HashMap<u64, _> = run
        .timeline
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelRequest { seq, .. } => Some((*seq, layout(&run.request_body(*seq)?))),
            _ => None,
        })
        .collect();
    let mut shape = build_shape(
        &run.timeline,
        &run.stream_lines(),
        &run.raw.payloads,
        &layouts,
    );
    shape.cli = run.info.cli_label.clone();
    shape.outcome = run.written_result().judgement.outcome.to_string();
    Ok(shape)
}

/// Names the run knows: task ids and tool_use ids mapped to scenario labels.
#[derive(Default)]
struct Names {
    /// task id -> label (`bg`, `worker`).
    tasks: HashMap<String, String>,
    /// tool_use id -> the agent it spawned.
    spawns: HashMap<String, String>,
    /// CLI agent id -> scenario agent.
    agents: HashMap<String, String>,
    /// task id -> the scenario agent whose tool call started it.
    owners: HashMap<String, String>,
}

impl Names {
    fn task(&self, id: &str) -> String {
        self.tasks.get(id).cloned().unwrap_or_else(|| "?".into())
    }
}

fn learn(timeline: &Timeline, stream: &[Value]) -> Names {
    let mut names = Names::default();
    for e in timeline.iter() {
        match &e.kind {
            EventKind::ToolCall {
                tool_use_id,
                spawn: Some(agent),
                ..
            } => {
                names.spawns.insert(tool_use_id.clone(), agent.clone());
            }
            EventKind::TaskStarted {
                task_id,
                label,
                description,
                ..
            } => {
                let label = label
                    .clone()
                    .or_else(|| description.as_ref().map(|d| format!("\"{d}\"")))
                    .unwrap_or_else(|| "?".into());
                names.tasks.insert(task_id.clone(), label);
                if let Some(owner) = &e.agent {
                    names.owners.insert(task_id.clone(), owner.clone());
                }
            }
            EventKind::Hook {
                agent_id: Some(id), ..
            } => {
                if let Some(agent) = &e.agent {
                    names.agents.insert(id.clone(), agent.clone());
                }
            }
            _ => {}
        }
    }
    // Tasks the timeline never started (a teammate's) are named by their description.
    for line in stream {
        if let (Some(id), Some(d)) = (line["task_id"].as_str(), line["description"].as_str()) {
            names
                .tasks
                .entry(id.to_string())
                .or_insert_with(|| format!("\"{d}\""));
        }
    }
    names
}

/// A request's messages by role: `u`, `s`, `a`, with `t` when it holds tool calls or results.
pub fn layout(body: &Value) -> String {
    let codes: Vec<String> = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            let role = m["role"].as_str().unwrap_or("?");
            let tools = m["content"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|b| b["type"] == "tool_use" || b["type"] == "tool_result")
            });
            format!(
                "{}{}",
                &role[..1.min(role.len())],
                if tools { "t" } else { "" }
            )
        })
        .collect();
    codes.join(" ")
}

/// The shape of a timeline with its raw stream lines, hook payloads and the layout of each
/// request (by its sequence number).
pub fn build_shape(
    timeline: &Timeline,
    stream: &[Value],
    hooks: &[Value],
    layouts: &HashMap<u64, String>,
) -> Shape {
    let names = learn(timeline, stream);
    let map = LaneMap::of(timeline);
    let mut shape = Shape::default();
    for e in timeline.iter() {
        let name = lane_name(&map.lane(e));
        match entry(e, &names, hooks, layouts) {
            Some(Entry::Ordered(token)) => lane(&mut shape, name).events.push(token),
            Some(Entry::Floating(fact)) => {
                *lane(&mut shape, name).floating.entry(fact).or_default() += 1
            }
            None => {}
        }
    }
    for line in stream {
        let (name, token, floating) = stream_token(line, &names);
        let l = lane(&mut shape, name);
        if floating {
            *l.floating.entry(token).or_default() += 1;
        } else {
            l.stream.push(token);
        }
        let (group, keys) = stream_keys(line, &names);
        shape.stream_keys.entry(group).or_default().extend(keys);
    }
    for payload in hooks {
        add_hook_keys(&mut shape, payload);
    }
    shape
}

/// A lane's name in a shape.
fn lane_name(lane: &SharedLane) -> String {
    match lane {
        SharedLane::Agent(a) => format!("agent:{a}"),
        SharedLane::Command(c) => format!("task:{c}"),
        SharedLane::Driver => "driver".into(),
        SharedLane::Session => "session".into(),
    }
}

/// What one event adds to its lane.
enum Entry {
    /// A token in the lane's ordered events.
    Ordered(String),
    /// A fact counted, not ordered.
    Floating(String),
}

/// The entry an event adds to its lane, if it adds one. Stream lines come from `stream.jsonl`;
/// the rest (ids, reaps, screens) is noise (see the header).
fn entry(
    e: &Event,
    names: &Names,
    hooks: &[Value],
    layouts: &HashMap<u64, String>,
) -> Option<Entry> {
    Some(match &e.kind {
        EventKind::ModelRequest { .. } => Entry::Ordered(request_token(e, names, layouts)),
        EventKind::ToolCall { .. } => Entry::Ordered(tool_call_token(&e.kind)),
        EventKind::TurnEnded { .. } => Entry::Ordered("turn ends".into()),
        EventKind::Hook { raw, .. } => {
            let payload = hooks.get(*raw).cloned().unwrap_or(Value::Null);
            Entry::Ordered(hook_token(e, names, &payload))
        }
        EventKind::TrackStarted { .. } => Entry::Floating("process starts".into()),
        EventKind::TrackEnded { exit, .. } => Entry::Floating(match exit {
            ExitDesc::Code(0) => "process exits 0".to_string(),
            ExitDesc::Code(c) => format!("process exits {c}"),
            ExitDesc::Signal(_) | ExitDesc::Vanished => "process is killed".to_string(),
        }),
        EventKind::UserInput { why, .. } => Entry::Ordered(format!(
            "input {}",
            match why {
                InputReason::Prompt => "prompt",
                InputReason::Scheduled => "scheduled",
                InputReason::Probe => "probe",
            }
        )),
        EventKind::CliExited { exit } => Entry::Ordered(format!("cli exits ({})", exit.describe())),
        EventKind::ControlRequest { subtype, .. } => {
            Entry::Ordered(format!("control request {subtype}"))
        }
        EventKind::SessionClosed => Entry::Ordered("input closed".into()),
        EventKind::CeilingHit { .. } => Entry::Ordered("ceiling hit".into()),
        EventKind::Interrupted { .. } => Entry::Ordered("interrupted".into()),
        EventKind::HarnessFailed { .. } => Entry::Ordered("harness failed".into()),
        EventKind::WorkOverdue { .. } => Entry::Ordered("hang bound passed".into()),
        EventKind::Leftover { .. } => Entry::Floating("leftover process".into()),
        // Read from transcript rows after the run: their times are approximate.
        EventKind::TranscriptFact { fact, .. } => Entry::Floating(format!("transcript {fact}")),
        _ => return None,
    })
}

/// `request step=2 notified=[bg:completed] [u s at ut s a u]`.
fn request_token(e: &Event, names: &Names, layouts: &HashMap<u64, String>) -> String {
    let EventKind::ModelRequest {
        seq,
        route,
        step,
        notifications,
        ..
    } = &e.kind
    else {
        return String::new();
    };
    let what = match route {
        Route::Turn => format!(
            "request step={}",
            step.map_or("?".into(), |s| s.to_string())
        ),
        Route::ScriptExhausted => "request past the script's end".to_string(),
        Route::SideCall(what) => format!("side call {what}"),
        Route::Unrouted => "request without an agent tag".to_string(),
    };
    let mut carried: Vec<String> = notifications
        .iter()
        .map(|n| {
            format!(
                "{}:{}",
                names.task(&n.task_id),
                n.status.as_deref().unwrap_or("?")
            )
        })
        .collect();
    carried.sort();
    let mut token = if carried.is_empty() {
        what
    } else {
        format!("{what} notified=[{}]", carried.join(", "))
    };
    if let Some(l) = layouts.get(seq) {
        token.push_str(&format!(" [{l}]"));
    }
    token
}

/// `tool_use Agent(background, spawns worker)`.
fn tool_call_token(kind: &EventKind) -> String {
    let EventKind::ToolCall {
        tool,
        background,
        spawn,
        track,
        teammate,
        ..
    } = kind
    else {
        return String::new();
    };
    let mut what = vec![
        if *background {
            "background"
        } else {
            "foreground"
        }
        .to_string(),
    ];
    if let Some(s) = spawn {
        what.push(format!("spawns {s}"));
    }
    if let Some(t) = track {
        what.push(format!("track {t}"));
    }
    if let Some(t) = teammate {
        what.push(format!("teammate {t}"));
    }
    format!("tool_use {tool}({})", what.join(", "))
}

/// `hook SubagentStop background_tasks=[shell:bg:running] stop_hook_active=false`.
fn hook_token(e: &Event, names: &Names, payload: &Value) -> String {
    let EventKind::Hook {
        hook,
        background_tasks,
        stop_hook_active,
        detail,
        ..
    } = &e.kind
    else {
        return String::new();
    };
    let mut token = format!("hook {hook}");
    match hook {
        h if h.is_tool() => {
            token.push_str(&format!("({})", detail.as_deref().unwrap_or("")));
        }
        HookName::SessionStart | HookName::SessionEnd => {
            token.push_str(&format!("({})", detail.as_deref().unwrap_or("")));
        }
        HookName::UserPromptSubmit => {
            let prompt = payload["prompt"].as_str().unwrap_or("");
            let found = crate::fake_api::request::parse_notifications(prompt);
            if found.is_empty() {
                token.push_str("(prompt)");
            } else {
                let labels: Vec<String> = found.iter().map(|n| names.task(&n.task_id)).collect();
                token.push_str(&format!("(notification {})", labels.join(", ")));
            }
        }
        _ => {}
    }
    if let Some(tasks) = background_tasks {
        let stopping = e.agent.as_deref().unwrap_or("");
        token.push_str(&format!(
            " background_tasks=[{}]",
            listed_tasks(tasks, stopping, names).join(", ")
        ));
    }
    if let Some(active) = stop_hook_active {
        token.push_str(&format!(" stop_hook_active={active}"));
    }
    token
}

/// A stop payload's tasks as `type:label:status`, sorted: the stopping agent itself and what
/// it started; unknown ids (no task_started, as a teammate's) are kept.
fn listed_tasks(
    tasks: &[crate::evidence::BackgroundTask],
    stopping: &str,
    names: &Names,
) -> Vec<String> {
    let relevant = |id: &str| match (names.owners.get(id), names.tasks.get(id)) {
        (Some(owner), _) if owner == stopping => true,
        (_, Some(label)) if label == stopping => true,
        (None, _) => true,
        _ => false,
    };
    let mut entries: Vec<String> = tasks
        .iter()
        .filter(|t| relevant(&t.id))
        .map(|t| {
            let label = names
                .tasks
                .get(&t.id)
                .cloned()
                .or_else(|| t.description.as_ref().map(|d| format!("\"{d}\"")))
                .unwrap_or_else(|| "?".into());
            format!("{}:{}:{}", t.task_type, label, t.status)
        })
        .collect();
    entries.sort();
    entries
}

/// The keys of a hook payload (per event, main vs subagent) and of each `background_tasks`
/// entry type.
fn add_hook_keys(shape: &mut Shape, payload: &Value) {
    let Some(map) = payload.as_object() else {
        return;
    };
    let event = map
        .get("hook_event_name")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let group = if map.contains_key("agent_id") {
        format!("{event} (subagent)")
    } else {
        event.to_string()
    };
    shape
        .hook_keys
        .entry(group)
        .or_default()
        .extend(map.keys().cloned());
    for entry in map
        .get("background_tasks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(e) = entry.as_object() {
            let kind = e.get("type").and_then(Value::as_str).unwrap_or("?");
            shape
                .hook_keys
                .entry(format!("background_tasks[{kind}]"))
                .or_default()
                .extend(e.keys().cloned());
        }
    }
}

fn lane(shape: &mut Shape, name: String) -> &mut Lane {
    shape.lanes.entry(name).or_default()
}

/// The lane, token and floating-ness of one stream-json line.
fn stream_token(line: &Value, names: &Names) -> (String, String, bool) {
    let kind = line["type"].as_str().unwrap_or("?");
    let subtype = line["subtype"].as_str();
    let owner_lane = || match line["parent_tool_use_id"].as_str() {
        Some(id) => format!(
            "agent:{}",
            names.spawns.get(id).cloned().unwrap_or_else(|| "?".into())
        ),
        None => "agent:main".to_string(),
    };
    let task_lane = || {
        format!(
            "task:{}",
            names.task(line["task_id"].as_str().unwrap_or(""))
        )
    };
    match (kind, subtype) {
        ("assistant" | "user", _) => (owner_lane(), message_token(line), false),
        (
            "system",
            Some(s @ ("task_started" | "task_updated" | "task_notification" | "task_progress")),
        ) => (task_lane(), task_token(line, s), false),
        ("system", Some("init")) | ("result", _) => (
            "agent:main".into(),
            format!(
                "{kind}{}",
                subtype.map(|s| format!("/{s}")).unwrap_or_default()
            ),
            false,
        ),
        ("system", Some("background_tasks_changed")) => {
            let mut tasks: Vec<String> = line["tasks"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| names.task(t["task_id"].as_str().unwrap_or("")))
                .collect();
            tasks.sort();
            (
                "session".into(),
                format!("background_tasks_changed [{}]", tasks.join(", ")),
                true,
            )
        }
        ("system", Some(s @ ("hook_started" | "hook_response"))) => (
            "session".into(),
            format!("{s} {}", line["hook_event"].as_str().unwrap_or("?")),
            false,
        ),
        ("control_response", _) => (
            "session".into(),
            format!(
                "control_response {}",
                line["response"]["subtype"].as_str().unwrap_or("?")
            ),
            false,
        ),
        _ => (
            "session".into(),
            format!(
                "{kind}{}",
                subtype.map(|s| format!("/{s}")).unwrap_or_default()
            ),
            false,
        ),
    }
}

/// The token of an `assistant` or `user` line: its kind and the types of its content blocks
/// (a tool use by its tool's name).
fn message_token(line: &Value) -> String {
    if line["type"] == "assistant" {
        let blocks: Vec<String> = line["message"]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| match b["type"].as_str() {
                Some("tool_use") => format!("tool_use:{}", b["name"].as_str().unwrap_or("?")),
                Some(other) => other.to_string(),
                None => "?".into(),
            })
            .collect();
        return format!("assistant {}", blocks.join("+"));
    }
    let blocks: Vec<String> = match &line["message"]["content"] {
        Value::String(_) => vec!["text".into()],
        Value::Array(items) => items
            .iter()
            .map(|b| b["type"].as_str().unwrap_or("?").to_string())
            .collect(),
        _ => vec![],
    };
    let synthetic = if line["isSynthetic"] == true {
        " (synthetic)"
    } else {
        ""
    };
    format!("user {}{synthetic}", blocks.join("+"))
}

/// The token of a `system` task line (`task_started`, `task_updated`, `task_notification`,
/// `task_progress`).
fn task_token(line: &Value, subtype: &str) -> String {
    match subtype {
        "task_started" => {
            let t = line["task_type"].as_str().unwrap_or("?");
            let bg = if line["is_backgrounded"] == false {
                ", foreground"
            } else {
                ""
            };
            format!("task_started {t}{bg}")
        }
        "task_updated" => {
            let status = line["patch"]["status"]
                .as_str()
                .or_else(|| line["status"].as_str())
                .unwrap_or("?");
            format!("task_updated {status}")
        }
        "task_notification" => format!(
            "task_notification {}",
            line["status"].as_str().unwrap_or("?")
        ),
        _ => "task_progress".into(),
    }
}

/// The key group of a stream line and its keys.
fn stream_keys(line: &Value, names: &Names) -> (String, Vec<String>) {
    let kind = line["type"].as_str().unwrap_or("?");
    let mut group = kind.to_string();
    if let Some(s) = line["subtype"].as_str() {
        group.push_str(&format!("/{s}"));
    }
    if let Some(t) = line["task_type"].as_str() {
        group.push_str(&format!(" ({t})"));
    } else if matches!(
        line["subtype"].as_str(),
        Some("task_updated" | "task_notification" | "task_progress")
    ) {
        let id = line["task_id"].as_str().unwrap_or("");
        let is_agent = names
            .spawns
            .values()
            .any(|a| names.tasks.get(id) == Some(a));
        group.push_str(if is_agent { " (agent)" } else { " (shell)" });
    }
    if matches!(kind, "assistant" | "user") && !line["parent_tool_use_id"].is_null() {
        group.push_str(" (subagent)");
    }
    let keys = line
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    (group, keys)
}

/// Compares two shapes; `real` is the reference.
pub fn compare(real: &Shape, sim: &Shape) -> Vec<Difference> {
    let mut out = Vec::new();
    if real.outcome != sim.outcome {
        out.push(Difference {
            place: "verdict".into(),
            detail: vec![
                format!("real: {}", real.outcome),
                format!("sim:  {}", sim.outcome),
            ],
        });
    }
    let lanes: BTreeSet<&String> = real.lanes.keys().chain(sim.lanes.keys()).collect();
    let empty = Lane::default();
    for name in lanes {
        let r = real.lanes.get(name).unwrap_or(&empty);
        let s = sim.lanes.get(name).unwrap_or(&empty);
        for (part, a, b) in [
            ("events", &r.events, &s.events),
            ("stream", &r.stream, &s.stream),
        ] {
            if a != b {
                out.push(Difference {
                    place: format!("lane {name} ({part}): {}", first_divergence(a, b)),
                    detail: diff_lines(a, b),
                });
            }
        }
        if r.floating != s.floating {
            let keys: BTreeSet<&String> = r.floating.keys().chain(s.floating.keys()).collect();
            let detail = keys
                .into_iter()
                .filter(|k| r.floating.get(*k) != s.floating.get(*k))
                .map(|k| {
                    format!(
                        "{k}: real {} time(s), sim {}",
                        r.floating.get(k).copied().unwrap_or(0),
                        s.floating.get(k).copied().unwrap_or(0)
                    )
                })
                .collect();
            out.push(Difference {
                place: format!("lane {name} (counts)"),
                detail,
            });
        }
    }
    for (what, a, b) in [
        ("hook payload keys", &real.hook_keys, &sim.hook_keys),
        ("stream-json keys", &real.stream_keys, &sim.stream_keys),
    ] {
        let groups: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        for g in groups {
            // A kind only one side has is a behaviour difference, reported by its lane.
            match (a.get(g), b.get(g)) {
                (Some(x), Some(y)) if x == y => {}
                (Some(x), Some(y)) => {
                    let mut detail = Vec::new();
                    let missing: Vec<&String> = x.difference(y).collect();
                    let extra: Vec<&String> = y.difference(x).collect();
                    if !missing.is_empty() {
                        detail.push(format!("only the real CLI sends: {}", join(&missing)));
                    }
                    if !extra.is_empty() {
                        detail.push(format!("only the simulator sends: {}", join(&extra)));
                    }
                    out.push(Difference {
                        place: format!("{what} of {g}"),
                        detail,
                    });
                }
                _ => {}
            }
        }
    }
    out
}

fn join(items: &[&String]) -> String {
    items
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn first_divergence(a: &[String], b: &[String]) -> String {
    let i = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    match (a.get(i), b.get(i)) {
        (Some(x), Some(y)) => format!(
            "step {} is `{x}` on the real CLI, `{y}` on the simulator",
            i + 1
        ),
        (Some(x), None) => {
            format!("the simulator stops after step {i}; the real CLI goes on with `{x}`")
        }
        (None, Some(y)) => {
            format!("the real CLI stops after step {i}; the simulator goes on with `{y}`")
        }
        (None, None) => "same".into(),
    }
}

/// A line diff (longest common subsequence): `  ` both, `- ` real only, `+ ` simulator only.
pub fn diff_lines(a: &[String], b: &[String]) -> Vec<String> {
    similar::capture_diff_slices(similar::Algorithm::Myers, a, b)
        .iter()
        .flat_map(|op| op.iter_changes(a, b))
        .map(|change| {
            let sign = match change.tag() {
                similar::ChangeTag::Equal => ' ',
                similar::ChangeTag::Delete => '-',
                similar::ChangeTag::Insert => '+',
            };
            format!("{sign} {}", change.value())
        })
        .collect()
}

/// Pairs each real-CLI run with the simulator's run of the same scenario, variant and
/// repetition, and compares their shapes.
pub fn compare_cells(
    cells: &[(&crate::classify::result::RunResult, &Path)],
) -> Result<Vec<Comparison>, ConformError> {
    use crate::evidence::run::BackendKind;
    let mut out = Vec::new();
    for (real, real_dir) in cells
        .iter()
        .filter(|(r, _)| r.run.backend == BackendKind::Claude)
    {
        let Some((sim, sim_dir)) = cells.iter().find(|(c, _)| {
            matches!(c.run.backend, BackendKind::Sim { .. })
                && c.run.scenario == real.run.scenario
                && c.run.variant == real.run.variant
                && c.run.repetition == real.run.repetition
        }) else {
            continue;
        };
        out.push(Comparison {
            scenario: real.run.scenario.clone(),
            variant: real.run.variant.clone(),
            real: real.run.cli_label.clone(),
            sim: sim.run.cli_label.clone(),
            real_dir: real_dir.to_path_buf(),
            sim_dir: sim_dir.to_path_buf(),
            differences: compare(&shape_of(real_dir)?, &shape_of(sim_dir)?),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::test_events::ev;
    use crate::evidence::{BackgroundTask, Notification, Source};
    use serde_json::json;

    fn timeline(stop_first: bool) -> Timeline {
        let started = ev(
            1.0,
            Source::Stream,
            Some("main"),
            EventKind::TaskStarted {
                task_id: "a1".into(),
                task_type: "local_agent".into(),
                tool_use_id: Some("t1".into()),
                label: Some("worker".into()),
                description: None,
            },
        );
        let spawn = ev(
            0.5,
            Source::Api,
            Some("main"),
            EventKind::ToolCall {
                seq: 1,
                tool: "Agent".into(),
                tool_use_id: "t1".into(),
                background: true,
                spawn: Some("worker".into()),
                track: None,
                teammate: None,
                target: None,
                inserted: false,
            },
        );
        let stop = ev(
            2.0,
            Source::Hook,
            Some("worker"),
            EventKind::Hook {
                hook: HookName::SubagentStop,
                raw: 0,
                agent_id: Some("a1".into()),
                background_tasks: Some(vec![BackgroundTask {
                    id: "a1".into(),
                    task_type: "subagent".into(),
                    status: "running".into(),
                    description: None,
                    other_fields: vec![],
                }]),
                stop_hook_active: Some(false),
                stops_task: None,
                detail: None,
            },
        );
        // A main-lane event racing the worker's stop: lanes make the race invisible.
        let main_stop = ev(
            if stop_first { 1.5 } else { 2.5 },
            Source::Hook,
            Some("main"),
            EventKind::Hook {
                hook: HookName::Stop,
                raw: 1,
                agent_id: None,
                background_tasks: Some(vec![]),
                stop_hook_active: Some(false),
                stops_task: None,
                detail: None,
            },
        );
        let request = ev(
            3.0,
            Source::Api,
            Some("main"),
            EventKind::ModelRequest {
                seq: 2,
                route: Route::Turn,
                step: Some(2),
                notifications: vec![Notification {
                    task_id: "a1".into(),
                    status: Some("completed".into()),
                    tool_use_id: None,
                    event: None,
                }],
                injected: None,
                tool_errors: vec![],
                user_text: vec![],
                answer_lost: false,
            },
        );
        Timeline::new(vec![spawn, started, stop, main_stop, request])
    }

    #[test]
    fn races_between_lanes_do_not_count_but_changes_do() {
        let hooks = vec![
            json!({"hook_event_name": "SubagentStop", "agent_id": "a1", "agent_transcript_path": "t"}),
            json!({"hook_event_name": "Stop"}),
        ];
        let a = build_shape(&timeline(true), &[], &hooks, &HashMap::new());
        let b = build_shape(&timeline(false), &[], &hooks, &HashMap::new());
        assert!(compare(&a, &b).is_empty(), "{:?}", compare(&a, &b));
        assert_eq!(
            a.lanes["agent:main"].events.last().unwrap(),
            "request step=2 notified=[worker:completed]"
        );
        assert_eq!(
            a.lanes["agent:worker"].events,
            vec![
                "hook SubagentStop background_tasks=[subagent:worker:running] stop_hook_active=false"
            ]
        );
        let mut fewer = hooks.clone();
        fewer[0] = json!({"hook_event_name": "SubagentStop", "agent_id": "a1"});
        let c = build_shape(&timeline(true), &[], &fewer, &HashMap::new());
        let diffs = compare(&a, &c);
        let keys = diffs
            .iter()
            .find(|d| d.place == "hook payload keys of SubagentStop (subagent)")
            .expect("a key difference");
        assert_eq!(
            keys.detail,
            vec!["only the real CLI sends: `agent_transcript_path`"]
        );
    }

    #[test]
    fn stream_lines_go_to_their_lane_and_the_diff_is_readable() {
        let stream = vec![
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Bash"}]}, "parent_tool_use_id": "t1"}),
            json!({"type": "system", "subtype": "task_updated", "task_id": "a1", "patch": {"status": "completed"}}),
            json!({"type": "system", "subtype": "background_tasks_changed", "tasks": [{"task_id": "a1"}]}),
        ];
        let s = build_shape(&timeline(true), &stream, &[], &HashMap::new());
        assert_eq!(
            s.lanes["agent:worker"].stream,
            vec!["assistant tool_use:Bash"]
        );
        assert_eq!(
            s.lanes["task:worker"].stream,
            vec!["task_updated completed"]
        );
        assert_eq!(
            s.lanes["session"].floating["background_tasks_changed [worker]"],
            1
        );
        let d = diff_lines(
            &["a".to_string(), "b".into(), "c".into()],
            &["a".to_string(), "x".into(), "c".into()],
        );
        assert_eq!(d, vec!["  a", "- b", "+ x", "  c"]);
    }
}
