//! How a selector sees an event: the event as `timeline.json` writes it, plus the hook's raw
//! payload under `payload`, the stream-json line an event was read from under `line`, and, for
//! a stop, `stop.by` and `stop.target`; and which events a selector picks.

use std::collections::HashMap;

use regex::Regex;
use serde_json::Value;

use super::stops::{Stop, stop_of};
use super::{Evidence, RawSources};
use crate::evidence::{Event, EventKind, Source};
use crate::scenario::MAIN_AGENT;
use crate::scenario::query::{FieldPath, FieldTest, PathStep, Predicate, Selector};

/// One event as checks see it.
pub struct EventView<'a> {
    pub event: &'a Event,
    /// Its place in the timeline: "after" means a later place.
    pub index: usize,
    pub json: Value,
    pub stop: Option<Stop>,
}

impl<'a> EventView<'a> {
    pub fn all(ev: &'a Evidence) -> Vec<EventView<'a>> {
        // Every event read from a stdout line carries that line's stamp, exactly.
        let lines: HashMap<u64, &Value> = ev
            .raw
            .lines
            .iter()
            .map(|(t, line)| (t.to_bits(), line))
            .collect();
        ev.timeline
            .iter()
            .enumerate()
            .map(|(index, event)| EventView::of(event, index, ev.raw, &lines))
            .collect()
    }

    fn of(
        event: &'a Event,
        index: usize,
        raw: &RawSources,
        lines: &HashMap<u64, &Value>,
    ) -> EventView<'a> {
        let mut json = serde_json::to_value(event).unwrap_or(Value::Null);
        let stop = stop_of(event);
        if let Value::Object(map) = &mut json {
            // `route` reads as one word (`turn`, `side_call`), not the tagged object.
            if let Some(route) = map.get("route").and_then(|r| r.get("route")).cloned() {
                map.insert("route".into(), route);
            }
            if let EventKind::Hook { raw: i, .. } = &event.kind
                && let Some(payload) = raw.payloads.get(*i)
            {
                map.insert("payload".into(), payload.clone());
            }
            if matches!(event.source, Source::Stream | Source::Sdk)
                && let Some(line) = lines.get(&event.t_ms.to_bits())
            {
                map.insert("line".into(), (*line).clone());
            }
            if let Some(stop) = &stop {
                map.insert(
                    "stop".into(),
                    serde_json::to_value(stop).unwrap_or(Value::Null),
                );
            }
        }
        EventView {
            event,
            index,
            json,
            stop,
        }
    }

    /// The work the event is about: what a tool call spawns, tracks or targets, a task's or a
    /// tracked process's name, a stop's target, or the spawned agent the event belongs to.
    pub fn work(&self) -> Option<&str> {
        let e = self.event;
        let named = match &e.kind {
            EventKind::ToolCall {
                spawn,
                track,
                target,
                ..
            } => spawn.as_deref().or(track.as_deref()).or(target.as_deref()),
            EventKind::TaskStarted { label, .. }
            | EventKind::TaskUpdated { label, .. }
            | EventKind::TaskNotified { label, .. } => label.as_deref(),
            EventKind::TrackStarted { name, .. } | EventKind::TrackEnded { name, .. } => {
                Some(name.as_str())
            }
            EventKind::WorkOverdue { work, .. } => Some(work.as_str()),
            _ => None,
        };
        named
            .or_else(|| self.stop.as_ref().and_then(|s| s.target.as_deref()))
            .or_else(|| e.agent.as_deref().filter(|a| *a != MAIN_AGENT))
    }

    /// Whether the selector picks this event: every field it gives must hold.
    pub fn matches(&self, s: &Selector) -> bool {
        let e = self.event;
        let text = |key: &str| self.json.get(key).and_then(Value::as_str);
        let is = |want: &Option<String>, have: Option<&str>| {
            want.as_deref().is_none_or(|w| have == Some(w))
        };
        let kind_ok = match s.kind.as_deref() {
            None => true,
            Some("stop") => self.stop.is_some(),
            Some(k) => text("kind") == Some(k),
        };
        let work_ok = match s.work.as_deref() {
            None => true,
            // A stop that names nothing stops every work.
            Some(w) if s.kind.as_deref() == Some("stop") => {
                self.stop.as_ref().is_some_and(|stop| stop.reaches(w))
            }
            Some(w) => self.work() == Some(w),
        };
        kind_ok
            && work_ok
            && is(&s.source, text("source"))
            && is(&s.agent, e.agent.as_deref())
            && is(&s.hook, self.hook_name())
            && is(&s.line_type, self.line_type())
            && is(&s.subtype, self.subtype())
            && is(&s.tool, self.tool())
            && is(&s.status, self.status())
            && s.predicates.iter().all(|p| holds(p, &self.json))
    }

    fn hook_name(&self) -> Option<&str> {
        match &self.event.kind {
            EventKind::Hook { hook, .. } => Some(hook.as_str()),
            _ => None,
        }
    }

    fn line_type(&self) -> Option<&str> {
        match &self.event.kind {
            EventKind::TurnResult { .. } => Some("result"),
            EventKind::StreamLine { line_type, .. } | EventKind::ToCli { line_type, .. } => {
                Some(line_type)
            }
            _ => None,
        }
    }

    fn subtype(&self) -> Option<&str> {
        match &self.event.kind {
            EventKind::TurnResult { subtype, .. }
            | EventKind::ControlRequest { subtype, .. }
            | EventKind::ControlResponse { subtype, .. } => Some(subtype),
            EventKind::StreamLine { subtype, .. } | EventKind::ToCli { subtype, .. } => {
                subtype.as_deref()
            }
            _ => None,
        }
    }

    fn tool(&self) -> Option<&str> {
        match &self.event.kind {
            EventKind::ToolCall { tool, .. }
            | EventKind::ToolUnavailable { tool, .. }
            | EventKind::PermissionAsked { tool, .. }
            | EventKind::PermissionAnswered { tool, .. }
            | EventKind::ApprovalGiven { tool, .. } => Some(tool),
            EventKind::Shown(line) => line.tool.as_deref(),
            _ => None,
        }
    }

    fn status(&self) -> Option<&str> {
        match &self.event.kind {
            EventKind::TaskUpdated { status, .. } | EventKind::TaskNotified { status, .. } => {
                Some(status)
            }
            EventKind::Shown(line) => line.status.as_deref(),
            _ => None,
        }
    }
}

/// Every value at `path` (a `[*]` step fans out).
pub fn lookup<'v>(json: &'v Value, path: &FieldPath) -> Vec<&'v Value> {
    let mut here = vec![json];
    for step in &path.0 {
        here = here
            .into_iter()
            .flat_map(|v| -> Vec<&Value> {
                match (step, v) {
                    (PathStep::Key(k), Value::Object(m)) => m.get(k).into_iter().collect(),
                    (PathStep::Index(i), Value::Array(a)) => a.get(*i).into_iter().collect(),
                    (PathStep::Any, Value::Array(a)) => a.iter().collect(),
                    _ => vec![],
                }
            })
            .collect();
    }
    here.retain(|v| !v.is_null());
    here
}

/// A predicate holds when some value at its path passes its test (`exists = false`: none is
/// there).
fn holds(p: &Predicate, json: &Value) -> bool {
    let values = lookup(json, &p.path);
    match &p.test {
        FieldTest::Exists(want) => values.is_empty() != *want,
        test => values.iter().any(|v| passes(test, v)),
    }
}

fn passes(test: &FieldTest, v: &Value) -> bool {
    match test {
        FieldTest::Equals(want) => match (want.as_f64(), v.as_f64()) {
            (Some(a), Some(b)) => a == b,
            _ => want == v,
        },
        FieldTest::Contains(part) => match v {
            Value::String(s) => s.contains(part.as_str()),
            Value::Array(items) => items.iter().any(|i| i.as_str() == Some(part)),
            _ => false,
        },
        // An invalid pattern was refused when the scenario loaded; here it matches nothing.
        FieldTest::Matches(pattern) => Regex::new(pattern).is_ok_and(|re| re.is_match(&as_text(v))),
        FieldTest::Gt(n) => number(v).is_some_and(|x| x > *n),
        FieldTest::Ge(n) => number(v).is_some_and(|x| x >= *n),
        FieldTest::Lt(n) => number(v).is_some_and(|x| x < *n),
        FieldTest::Le(n) => number(v).is_some_and(|x| x <= *n),
        FieldTest::Exists(_) => true,
    }
}

fn number(v: &Value) -> Option<f64> {
    v.as_f64().or_else(|| v.as_str()?.trim().parse().ok())
}

/// A value as text: a string as itself, anything else as compact JSON.
pub fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
