//! opencode's own evidence as events: `run --format json`'s lines on stdout, the bus events
//! of `GET /event` (serve) or of the observer plugin (run, which has no server), and the
//! plugin's tool hooks. One reader per run.
//!
//! What becomes what (the table is in `../NOTES` of the research, measured on 1.15.0 to
//! 1.18.33):
//! - a background `task` part (or the plugin's `tool.execute.after`) naming its child session
//!   (`metadata.sessionId`) is the child's [`EventKind::TaskStarted`], linked through its
//!   `callID` (the fake API's tool_use id) to the scenario's agent;
//! - the child's end is its first `session.error` (`MessageAbortedError`: `cancelled`, as the
//!   harness or the runtime aborted it; anything else: `error`), else its `session.idle`
//!   (`completed`): one [`EventKind::TaskUpdated`];
//! - a synthetic text part holding a notification, injected into the main session, is the
//!   runtime's own notice ([`EventKind::TaskNotified`]): not a delivery, which only a model
//!   request shows;
//! - the main session's `session.idle` is the end of its turn ([`EventKind::TurnResult`]);
//! - the rest worth reading (session status, tool parts, errors) is kept by shape
//!   ([`EventKind::StreamLine`]); the chatter (plugin lists, deltas, heartbeats) is not.
//!
//! Lines are read leniently: a field a version lacks never ends a run.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::evidence::runtime::{Origin, RuntimeEvidence};
use crate::evidence::{Event, EventKind, Source};
use crate::scenario::MAIN_AGENT;

/// Bus events that say nothing about the agents' work.
const CHATTER: &[&str] = &[
    "plugin.added",
    "catalog.updated",
    "reference.updated",
    "integration.updated",
    "message.part.delta",
    "server.heartbeat",
    "server.connected",
    "session.diff",
    "session.updated",
    "file.watcher.updated",
    "lsp.updated",
];

#[derive(Debug, Clone, Default)]
struct Call {
    agent: Option<String>,
    spawn: Option<String>,
}

#[derive(Debug, Clone, Default)]
struct Child {
    label: Option<String>,
    owner: Option<String>,
    /// The error its last message or `session.error` named.
    error: Option<String>,
    /// Its last assistant message's completion, unix ms.
    completed_ms: Option<f64>,
    ended: bool,
}

/// The reader of one run.
pub struct OpencodeEvidence {
    /// Unix ms of the run clock's zero.
    origin_unix_ms: f64,
    /// Bus events come from the plugin (run mode) or from `/event` (serve).
    bus_from_plugin: bool,
    main: Option<String>,
    calls: HashMap<String, Call>,
    children: HashMap<String, Child>,
    started: HashSet<String>,
    notified: HashSet<(String, String)>,
    version: Option<String>,
}

impl OpencodeEvidence {
    /// A reader for a run whose clock started at `origin_unix_ms`; `bus_from_plugin` for run
    /// mode (serve's bus events are read from `/event`).
    pub fn new(origin_unix_ms: f64, bus_from_plugin: bool) -> OpencodeEvidence {
        OpencodeEvidence {
            origin_unix_ms,
            bus_from_plugin,
            main: None,
            calls: HashMap::new(),
            children: HashMap::new(),
            started: HashSet::new(),
            notified: HashSet::new(),
            version: None,
        }
    }

    fn run_ms(&self, unix_ms: f64) -> f64 {
        unix_ms - self.origin_unix_ms
    }

    /// The scenario's name for a session: `main`, a spawned agent's, or none yet.
    fn agent_of(&self, session: Option<&str>) -> Option<String> {
        let s = session?;
        if self.main.as_deref() == Some(s) {
            return Some(MAIN_AGENT.to_string());
        }
        self.children.get(s).and_then(|c| c.label.clone())
    }

    fn learn_main(&mut self, session: Option<&str>) {
        if self.main.is_none()
            && let Some(s) = session.filter(|s| !self.children.contains_key(*s))
        {
            self.main = Some(s.to_string());
        }
    }

    fn event(&self, t_ms: f64, source: Source, session: Option<&str>, kind: EventKind) -> Event {
        Event {
            t_ms,
            source,
            agent: self.agent_of(session),
            kind,
        }
    }

    fn shape(
        &self,
        t_ms: f64,
        source: Source,
        session: Option<&str>,
        what: &str,
        detail: Option<String>,
    ) -> Event {
        self.event(
            t_ms,
            source,
            session,
            EventKind::StreamLine {
                line_type: what.to_string(),
                subtype: detail,
            },
        )
    }

    /// A `run --format json` line (or serve's plain text on stdout).
    fn stdout(&mut self, t_ms: f64, line: &str) -> Vec<Event> {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            let what = if line.contains("listening on") {
                "listening"
            } else {
                "text"
            };
            return vec![self.shape(t_ms, Source::Stream, None, "stdout", Some(what.into()))];
        };
        let session = text(&v, "sessionID");
        self.learn_main(session.as_deref());
        let kind = text(&v, "type").unwrap_or_else(|| "unknown".into());
        let mut events = Vec::new();
        let part = v.get("part").cloned().unwrap_or(Value::Null);
        if kind == "tool_use" {
            events.extend(self.task_started(t_ms, Source::Stream, &part));
        }
        let detail = match kind.as_str() {
            "tool_use" => Some(tool_shape(&part)),
            "step_finish" => text(&part, "reason"),
            "error" => v.get("error").and_then(|e| text(e, "name")),
            _ => None,
        };
        events.push(self.shape(t_ms, Source::Stream, session.as_deref(), &kind, detail));
        events
    }

    /// A plugin line: a bus event (taken in run mode) or a hook call, stamped by the plugin.
    fn plugin(&mut self, t_ms: f64, line: &str) -> Vec<Event> {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return vec![];
        };
        let t = v
            .get("t")
            .and_then(Value::as_f64)
            .map(|ms| self.run_ms(ms))
            .unwrap_or(t_ms);
        match text(&v, "kind").as_deref() {
            Some("event") if self.bus_from_plugin => {
                let event = v.get("event").cloned().unwrap_or(Value::Null);
                self.bus(t, None, &event)
            }
            Some("hook.tool.after") => {
                let input = v.get("input").cloned().unwrap_or(Value::Null);
                let part = serde_json::json!({
                    "tool": input.get("tool"),
                    "callID": input.get("callID"),
                    "sessionID": input.get("sessionID"),
                    "state": {"metadata": v.get("metadata"), "input": input.get("args")},
                });
                self.learn_main(text(&input, "sessionID").as_deref());
                self.task_started(t, Source::Events, &part)
            }
            Some("hook.chat.message") => {
                let session = v.get("input").and_then(|i| text(i, "sessionID"));
                self.learn_main(session.as_deref());
                vec![]
            }
            _ => vec![],
        }
    }

    /// A `/event` data line, received at `t_ms`.
    fn server(&mut self, t_ms: f64, line: &str) -> Vec<Event> {
        if self.bus_from_plugin {
            return vec![];
        }
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            return vec![];
        };
        self.bus(t_ms, Some(t_ms), &event)
    }

    /// One bus event at `t_ms`; `arrived` when it was stamped on arrival (serve), so a moment
    /// the event itself dates can replace the stamp.
    fn bus(&mut self, t_ms: f64, arrived: Option<f64>, event: &Value) -> Vec<Event> {
        let kind = text(event, "type").unwrap_or_default();
        if CHATTER.contains(&kind.as_str()) {
            return vec![];
        }
        let props = event.get("properties").cloned().unwrap_or(Value::Null);
        let session = text(&props, "sessionID");
        let s = session.as_deref();
        match kind.as_str() {
            "session.created" => self.session_created(t_ms, &props),
            "message.part.updated" => self.part(t_ms, s, props.get("part").unwrap_or(&Value::Null)),
            "message.updated" => {
                self.message(s, props.get("info").unwrap_or(&Value::Null));
                vec![]
            }
            "session.error" => {
                let name = props
                    .get("error")
                    .and_then(|e| text(e, "name"))
                    .unwrap_or_else(|| "error".into());
                let mut out = vec![self.shape(t_ms, Source::Events, s, &kind, Some(name.clone()))];
                if let Some(child) = s.and_then(|s| self.children.get_mut(s)) {
                    child.error.get_or_insert(name);
                }
                out.extend(self.child_end(t_ms, arrived, s));
                out
            }
            "session.idle" => {
                let mut out = self.child_end(t_ms, arrived, s);
                if s.is_some() && s == self.main.as_deref() {
                    out.push(self.event(
                        t_ms,
                        Source::Events,
                        s,
                        EventKind::TurnResult {
                            subtype: "session.idle".into(),
                            num_turns: None,
                            is_error: false,
                            origin: None,
                        },
                    ));
                }
                out
            }
            "session.status" => {
                let status = props.get("status").and_then(|st| text(st, "type"));
                vec![self.shape(t_ms, Source::Events, s, &kind, status)]
            }
            _ => vec![self.shape(t_ms, Source::Events, s, &kind, None)],
        }
    }

    fn session_created(&mut self, t_ms: f64, props: &Value) -> Vec<Event> {
        let info = props.get("info").cloned().unwrap_or(Value::Null);
        let id = text(&info, "id");
        if let Some(v) = text(&info, "version") {
            self.version.get_or_insert(v);
        }
        let parent = text(&info, "parentID");
        match (&id, &parent) {
            (Some(id), Some(parent)) => {
                let child = self.children.entry(id.clone()).or_default();
                child.owner.get_or_insert_with(|| parent.clone());
            }
            (Some(id), None) => self.learn_main(Some(id)),
            _ => {}
        }
        let what = if parent.is_some() { "child" } else { "root" };
        vec![self.shape(
            t_ms,
            Source::Events,
            id.as_deref(),
            "session.created",
            Some(what.into()),
        )]
    }

    /// A message part: a tool's state, or an injected notification.
    fn part(&mut self, t_ms: f64, session: Option<&str>, part: &Value) -> Vec<Event> {
        match text(part, "type").as_deref() {
            Some("tool") => {
                let mut out = self.task_started(t_ms, Source::Events, part);
                let status = part.get("state").and_then(|st| text(st, "status"));
                // Pending parts carry no input yet; running and ended ones say what runs.
                if status.as_deref() != Some("pending") {
                    out.push(self.shape(
                        t_ms,
                        Source::Events,
                        session,
                        "tool",
                        Some(tool_shape(part)),
                    ));
                }
                out
            }
            Some("text") if part.get("synthetic").and_then(Value::as_bool) == Some(true) => {
                let body = text(part, "text").unwrap_or_default();
                self.injected(t_ms, session, &body)
            }
            _ => vec![],
        }
    }

    /// The runtime's notice of a task's end, injected into a session (once per task and state).
    fn injected(&mut self, t_ms: f64, session: Option<&str>, body: &str) -> Vec<Event> {
        let mut out = Vec::new();
        for n in super::notice::notifications(body) {
            let status = n.status.clone().unwrap_or_else(|| "unknown".into());
            if !self.notified.insert((n.task_id.clone(), status.clone())) {
                continue;
            }
            let label = self.children.get(&n.task_id).and_then(|c| c.label.clone());
            out.push(self.event(
                t_ms,
                Source::Events,
                session,
                EventKind::TaskNotified {
                    task_id: n.task_id,
                    status,
                    label,
                    summary: summary_of(body),
                },
            ));
        }
        out
    }

    fn message(&mut self, session: Option<&str>, info: &Value) {
        let Some(child) = session.and_then(|s| self.children.get_mut(s)) else {
            return;
        };
        if text(info, "role").as_deref() != Some("assistant") {
            return;
        }
        if let Some(name) = info.get("error").and_then(|e| text(e, "name")) {
            child.error = Some(name);
        }
        if let Some(done) = info
            .get("time")
            .and_then(|t| t.get("completed"))
            .and_then(Value::as_f64)
        {
            child.completed_ms = Some(done);
        }
    }

    /// A background `task` naming its child session: the child's start, linked to the scenario's
    /// agent through the call's id (once per child).
    fn task_started(&mut self, t_ms: f64, source: Source, part: &Value) -> Vec<Event> {
        if text(part, "tool").as_deref() != Some("task") {
            return vec![];
        }
        let state = part.get("state").cloned().unwrap_or(Value::Null);
        let meta = state.get("metadata").cloned().unwrap_or(Value::Null);
        let Some(child_id) = text(&meta, "sessionId") else {
            return vec![];
        };
        if !self.started.insert(child_id.clone()) {
            return vec![];
        }
        let call_id = text(part, "callID");
        let call = call_id
            .as_ref()
            .and_then(|id| self.calls.get(id))
            .cloned()
            .unwrap_or_default();
        let owner = call.agent.clone().or_else(|| Some(MAIN_AGENT.to_string()));
        let child = self.children.entry(child_id.clone()).or_default();
        child.label = call.spawn.clone();
        child.owner = owner.clone();
        let description = state
            .get("input")
            .and_then(|i| text(i, "description"))
            .map(|d| crate::evidence::normalize::truncate(&d, 120));
        vec![Event {
            t_ms,
            source,
            agent: owner,
            kind: EventKind::TaskStarted {
                task_id: child_id,
                task_type: "local_agent".into(),
                tool_use_id: call_id,
                label: call.spawn,
                description,
            },
        }]
    }

    /// A child session's end, once: cancelled, failed, or completed. Stamped by its last
    /// message's completion when the event was stamped only on arrival and that is earlier.
    fn child_end(&mut self, t_ms: f64, arrived: Option<f64>, session: Option<&str>) -> Vec<Event> {
        let origin = self.origin_unix_ms;
        let Some(id) = session else { return vec![] };
        let Some(child) = self.children.get_mut(id) else {
            return vec![];
        };
        if child.ended || !self.started.contains(id) {
            return vec![];
        }
        child.ended = true;
        let status = match child.error.as_deref() {
            None => "completed",
            Some("MessageAbortedError") => "cancelled",
            Some(_) => "error",
        };
        let t = match (arrived, child.completed_ms) {
            (Some(_), Some(done)) if done - origin < t_ms => done - origin,
            _ => t_ms,
        };
        let (owner, label) = (child.owner.clone(), child.label.clone());
        vec![Event {
            t_ms: t,
            source: Source::Events,
            agent: owner,
            kind: EventKind::TaskUpdated {
                task_id: id.to_string(),
                status: status.to_string(),
                label,
            },
        }]
    }
}

impl RuntimeEvidence for OpencodeEvidence {
    fn learn_api(&mut self, event: &Event) {
        if let EventKind::ToolCall {
            tool_use_id, spawn, ..
        } = &event.kind
        {
            self.calls.insert(
                tool_use_id.clone(),
                Call {
                    agent: event.agent.clone(),
                    spawn: spawn.clone(),
                },
            );
        }
    }

    fn line(&mut self, t_ms: f64, origin: Origin, line: &str) -> Vec<Event> {
        match origin {
            Origin::Stdout => self.stdout(t_ms, line),
            Origin::Plugin => self.plugin(t_ms, line),
            Origin::Server => self.server(t_ms, line),
            Origin::Driver => {
                // The main session, as the driver created it.
                if let Ok(v) = serde_json::from_str::<Value>(line) {
                    self.learn_main(text(&v, "main").as_deref());
                }
                vec![]
            }
        }
    }

    fn version(&self) -> Option<String> {
        self.version.clone()
    }
}

/// `task running`, `bash completed exit 3`: a tool part in a few words.
fn tool_shape(part: &Value) -> String {
    let tool = text(part, "tool").unwrap_or_else(|| "?".into());
    let state = part.get("state").cloned().unwrap_or(Value::Null);
    let status = text(&state, "status").unwrap_or_else(|| "?".into());
    match state
        .get("metadata")
        .and_then(|m| m.get("exit"))
        .and_then(Value::as_i64)
    {
        Some(code) => format!("{tool} {status} exit {code}"),
        None => format!("{tool} {status}"),
    }
}

/// The `<summary>` of an injected notification.
fn summary_of(body: &str) -> Option<String> {
    let start = body.find("<summary>")? + "<summary>".len();
    let end = body[start..].find("</summary>")? + start;
    Some(crate::evidence::normalize::truncate(&body[start..end], 200))
}

/// A string field, or a number as text.
fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real lines of 1.18.33 (from the research's fixtures; the chatter left out): a background
    /// `task` for `worker` launched by `main`, through the fake's call `toolu_fake_2_0`.
    const RUN_PLUGIN: &str =
        include_str!("../../../tests/fixtures/opencode/run-plugin-1.18.33.jsonl");
    const RUN_STDOUT: &str =
        include_str!("../../../tests/fixtures/opencode/run-stdout-1.18.33.timed.jsonl");
    const SERVE_WOKE: &str =
        include_str!("../../../tests/fixtures/opencode/serve-woke-1.18.33.timed.jsonl");
    const SERVE_ERROR: &str =
        include_str!("../../../tests/fixtures/opencode/serve-child-error-1.18.33.timed.jsonl");

    fn reader(origin_unix_ms: f64, plugin: bool) -> OpencodeEvidence {
        let mut r = OpencodeEvidence::new(origin_unix_ms, plugin);
        r.learn_api(&Event {
            t_ms: 0.0,
            source: Source::Api,
            agent: Some(MAIN_AGENT.into()),
            kind: EventKind::ToolCall {
                seq: 2,
                tool: "task".into(),
                tool_use_id: "toolu_fake_2_0".into(),
                background: true,
                spawn: Some("worker".into()),
                track: None,
                teammate: None,
                target: None,
                inserted: false,
            },
        });
        r
    }

    /// `{"t": seconds, "line"|"event": ...}` lines as the research recorded them.
    fn timed(text: &str, key: &str) -> Vec<(f64, String)> {
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|v| (v["t"].as_f64().unwrap() * 1000.0, v[key].to_string()))
            .collect()
    }

    fn kinds(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .filter(|e| !matches!(e.kind, EventKind::StreamLine { .. }))
            .map(|e| {
                let agent = e.agent.clone().unwrap_or_else(|| "-".into());
                match &e.kind {
                    EventKind::TaskStarted { label, .. } => {
                        format!("{agent}: started {}", label.clone().unwrap_or_default())
                    }
                    EventKind::TaskUpdated { status, label, .. } => {
                        format!("{agent}: {} {status}", label.clone().unwrap_or_default())
                    }
                    EventKind::TaskNotified { status, label, .. } => {
                        format!(
                            "{agent}: notice {} {status}",
                            label.clone().unwrap_or_default()
                        )
                    }
                    EventKind::TurnResult { subtype, .. } => format!("{agent}: {subtype}"),
                    other => format!("{agent}: {other:?}"),
                }
            })
            .collect()
    }

    /// Run mode: the plugin's bus events and hooks, and `run`'s stdout. The child is linked to
    /// `worker` through the call id, once whichever line says it first, and is cancelled when
    /// the process ends main's turn (seed 003's stall in run).
    #[test]
    fn a_run_s_child_is_linked_and_its_cancellation_read() {
        // The plugin's first stamp is the run's start, near enough.
        let first: Value = serde_json::from_str(RUN_PLUGIN.lines().next().unwrap()).unwrap();
        let origin = first["t"].as_f64().unwrap();
        let mut r = reader(origin, true);
        let mut events = Vec::new();
        for line in RUN_PLUGIN.lines() {
            events.extend(r.line(0.0, Origin::Plugin, line));
        }
        for (t, line) in timed(RUN_STDOUT, "line") {
            events.extend(r.line(t, Origin::Stdout, &line));
        }
        assert_eq!(
            kinds(&events),
            [
                "main: started worker",
                "main: session.idle",
                "main: worker cancelled",
            ]
        );
        assert_eq!(r.version().as_deref(), Some("1.18.33"));
        // The plugin's stamps, on the run's clock: the child ends after main's turn.
        let at = |kind: &str| {
            events
                .iter()
                .find(|e| {
                    kinds(std::slice::from_ref(e))
                        .first()
                        .is_some_and(|k| k.contains(kind))
                })
                .unwrap()
                .t_ms
        };
        assert!(at("started") < at("session.idle") && at("session.idle") < at("cancelled"));
        // opencode's own events are on the timeline, by shape, with their agents.
        assert!(events.iter().any(|e| e.source == Source::Stream
            && matches!(&e.kind, EventKind::StreamLine { line_type, subtype } if line_type == "tool_use" && subtype.as_deref() == Some("task completed"))));
        assert!(events.iter().any(|e| e.agent.as_deref() == Some("worker")
            && matches!(&e.kind, EventKind::StreamLine { line_type, .. } if line_type == "session.status")));
    }

    /// Serve: `/event` alone. The child completes, its notice is injected into main, and main's
    /// turns end; the plugin's bus events are not read twice.
    #[test]
    fn a_served_child_completes_and_its_notice_is_injected() {
        let mut r = reader(0.0, false);
        let mut events = Vec::new();
        for (t, event) in timed(SERVE_WOKE, "event") {
            events.extend(r.line(t, Origin::Server, &event));
            // A plugin bus line in serve is ignored (the same event, from `/event`).
            events.extend(r.line(
                t,
                Origin::Plugin,
                &format!(r#"{{"t":0,"kind":"event","event":{event}}}"#),
            ));
        }
        assert_eq!(
            kinds(&events),
            [
                "main: started worker",
                "main: session.idle",
                "main: worker completed",
                "main: notice worker completed",
                "main: session.idle",
            ]
        );
    }

    /// Serve, the child's model call refused (HTTP 400): `session.error` ends it as `error`,
    /// and the notice injected says so (1.18.20 on).
    #[test]
    fn a_served_child_s_failure_is_an_error() {
        let mut r = reader(0.0, false);
        let mut events = Vec::new();
        for (t, event) in timed(SERVE_ERROR, "event") {
            events.extend(r.line(t, Origin::Server, &event));
        }
        let said = kinds(&events);
        assert_eq!(
            said,
            [
                "main: started worker",
                "main: session.idle",
                "main: worker error",
                "main: notice worker error",
                "main: session.idle",
            ]
        );
    }

    #[test]
    fn anything_else_is_read_leniently() {
        let mut r = OpencodeEvidence::new(0.0, true);
        for line in [
            "",
            "not json",
            "{}",
            "[1]",
            r#"{"kind":"event","event":7}"#,
            r#"{"type":"tool_use","part":5}"#,
        ] {
            for origin in [
                Origin::Stdout,
                Origin::Plugin,
                Origin::Server,
                Origin::Driver,
            ] {
                let _ = r.line(1.0, origin, line);
            }
        }
        let listening = r.line(
            1.0,
            Origin::Stdout,
            "opencode server listening on http://127.0.0.1:4096",
        );
        assert!(
            matches!(&listening[0].kind, EventKind::StreamLine { subtype: Some(s), .. } if s == "listening")
        );
    }
}
