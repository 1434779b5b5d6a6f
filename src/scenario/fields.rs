//! What each event kind carries, as checks see it: read from the published timeline schema
//! (`schema/timeline.schema.json`, generated from the `Event` type and kept equal to it by a
//! test), so the schema a user reads and the table a selector is checked against are one.
//!
//! A field is a path (`notifications[*].task_id`, `exit.code`) with, where the schema says so,
//! the values it can take. On top of the schema, what `checks::view` adds to an event: `route`
//! read as one word, a hook's raw `payload`, a stop's `stop.by` and `stop.target`, and the
//! task statuses the CLI writes (free text in the schema, a known set here).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde_json::Value;

/// The published schema of `timeline.json`.
const TIMELINE_SCHEMA: &str = include_str!("../../schema/timeline.schema.json");

/// Task statuses the CLI reports (`task_updated`, `task_notified`, `background_tasks`).
pub const TASK_STATUSES: &[&str] = &[
    "pending",
    "running",
    "idle",
    "completed",
    "failed",
    "error",
    "killed",
    "stopped",
    "cancelled",
    "canceled",
];

/// Who stopped work, as `stop.by` reads (see `checks::stops::StopSource`).
pub const STOP_BY: &[&str] = &["model", "stop-task", "interrupt", "session-end", "ceiling"];

/// The kinds read from a stream-json line (of the CLI, or of an SDK host): their selectors
/// reach the line itself under `line.`.
pub const STREAM_KINDS: &[&str] = &[
    "stream_line",
    "turn_result",
    "task_started",
    "task_updated",
    "task_notified",
    "control_response",
    "permission_asked",
];

/// The kinds an event of which can be a stop (`kind = "stop"`).
pub const STOP_KINDS: &[&str] = &[
    "tool_call",
    "control_request",
    "session_closed",
    "ceiling_hit",
];

/// The values a field can take: any, or one of a known set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Values {
    /// Some alternative is free text or a number: any value can appear.
    pub free: bool,
    pub known: BTreeSet<String>,
}

/// One event kind's fields, by path.
pub type Fields = BTreeMap<String, Values>;

/// Every event kind's fields.
pub fn table() -> &'static BTreeMap<String, Fields> {
    static TABLE: LazyLock<BTreeMap<String, Fields>> = LazyLock::new(|| {
        let schema: Value =
            serde_json::from_str(TIMELINE_SCHEMA).expect("the checked-in timeline schema parses");
        build(&schema)
    });
    &TABLE
}

/// Event kinds a selector may name: every kind of the timeline's schema (so of the `Event`
/// type it is generated from), and `stop` (any stop of work or of the session, whatever its
/// source: the model's TaskStop, the driver's stop_task and interrupt, the session's end, the
/// ceiling).
pub fn kinds() -> &'static [&'static str] {
    // In the schema's order, the `Event` type's, as a message lists them.
    static KINDS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
        let schema: Value =
            serde_json::from_str(TIMELINE_SCHEMA).expect("the checked-in timeline schema parses");
        let declared: Vec<String> = schema["$defs"]["Event"]["oneOf"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| {
                v["properties"]["kind"]["const"]
                    .as_str()
                    .map(str::to_string)
            })
            .collect();
        declared
            .iter()
            .filter_map(|k| table().get_key_value(k).map(|(k, _)| k.as_str()))
            .chain(["stop"])
            .collect()
    });
    &KINDS
}

/// The fields of `kind` (`stop`: the fields of every kind a stop can be).
pub fn fields_of(kind: &str) -> Option<Fields> {
    if kind == "stop" {
        let mut all = Fields::new();
        for k in STOP_KINDS {
            for (path, values) in &table()[*k] {
                all.entry(path.clone()).or_default().merge(values);
            }
        }
        return Some(all);
    }
    table().get(kind).cloned()
}

/// A path as the table writes it: every index is `[*]`.
pub fn normalize(path: &crate::scenario::query::FieldPath) -> String {
    use crate::scenario::query::{FieldPath, PathStep};
    let steps = path
        .0
        .iter()
        .map(|s| match s {
            PathStep::Index(_) => PathStep::Any,
            other => other.clone(),
        })
        .collect();
    FieldPath(steps).to_string()
}

impl Values {
    fn merge(&mut self, other: &Values) {
        self.free |= other.free;
        self.known.extend(other.known.iter().cloned());
    }

    fn known(values: &[&str]) -> Values {
        Values {
            free: false,
            known: values.iter().map(|v| v.to_string()).collect(),
        }
    }
}

fn build(schema: &Value) -> BTreeMap<String, Fields> {
    let defs = &schema["$defs"];
    let event = &defs["Event"];
    // The fields every event has (`t_ms`, `source`, `agent`), without the kinds' alternatives.
    let shared = serde_json::json!({ "properties": event["properties"] });
    let mut common = Fields::new();
    walk(defs, &shared, "", &mut common, 0);
    let mut table = BTreeMap::new();
    for variant in event["oneOf"].as_array().into_iter().flatten() {
        let Some(kind) = variant["properties"]["kind"]["const"].as_str() else {
            continue;
        };
        let mut fields = common.clone();
        walk(defs, variant, "", &mut fields, 0);
        add_view_fields(kind, &mut fields);
        table.insert(kind.to_string(), fields);
    }
    table
}

/// What `checks::view` shows beyond the serialized event.
fn add_view_fields(kind: &str, fields: &mut Fields) {
    if let Some(route) = fields.remove("route.route") {
        fields.retain(|p, _| !p.starts_with("route."));
        fields.insert("route".into(), route);
    }
    for path in [
        "status",
        "notifications[*].status",
        "background_tasks[*].status",
    ] {
        if let Some(v) = fields.get_mut(path) {
            *v = Values::known(TASK_STATUSES);
        }
    }
    if kind == "hook" {
        fields.insert(
            "payload".into(),
            Values {
                free: true,
                ..Values::default()
            },
        );
    }
    if STREAM_KINDS.contains(&kind) {
        let any = Values {
            free: true,
            ..Values::default()
        };
        fields.insert("line".into(), any);
    }
    if STOP_KINDS.contains(&kind) {
        fields.insert("stop".into(), Values::default());
        fields.insert("stop.by".into(), Values::known(STOP_BY));
        let target = Values {
            free: true,
            ..Values::default()
        };
        fields.insert("stop.target".into(), target);
    }
}

/// Records every path under `node` (resolving `$ref`, taking every alternative).
fn walk(defs: &Value, node: &Value, prefix: &str, out: &mut Fields, depth: usize) {
    if depth > 12 {
        return;
    }
    if let Some(r) = node["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap_or_default();
        return walk(defs, &defs[name], prefix, out, depth + 1);
    }
    for alt in ["oneOf", "anyOf"] {
        for a in node[alt].as_array().into_iter().flatten() {
            walk(defs, a, prefix, out, depth + 1);
        }
    }
    if !prefix.is_empty() {
        let values = out.entry(prefix.to_string()).or_default();
        match (&node["const"], node["enum"].as_array()) {
            (Value::String(c), _) => {
                values.known.insert(c.clone());
            }
            (_, Some(e)) => values
                .known
                .extend(e.iter().filter_map(|v| v.as_str().map(String::from))),
            _ if node.get("type").is_some() => values.free |= !is_container(node),
            _ => {}
        }
    }
    for (key, sub) in node["properties"].as_object().into_iter().flatten() {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        walk(defs, sub, &path, out, depth + 1);
    }
    if let Some(items) = node.get("items") {
        walk(defs, items, &format!("{prefix}[*]"), out, depth + 1);
    }
}

/// An object or an array: its values are its fields' values, not its own.
fn is_container(node: &Value) -> bool {
    let types: Vec<&str> = match &node["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    types
        .iter()
        .all(|t| matches!(*t, "object" | "array" | "null"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A selector may name every kind an event can be (a new kind needs no list of its own),
    /// and `stop`.
    #[test]
    fn a_selector_may_name_every_kind_of_event() {
        for k in [
            "model_request",
            "harness_stalled",
            "integration_exited",
            "shown",
            "stop",
        ] {
            assert!(kinds().contains(&k), "`{k}` in {:?}", kinds());
        }
        let schema: Value = serde_json::from_str(TIMELINE_SCHEMA).unwrap();
        let variants = schema["$defs"]["Event"]["oneOf"].as_array().unwrap().len();
        assert_eq!(kinds().len(), variants + 1, "{:?}", kinds());
    }

    #[test]
    fn fields_come_from_the_schema_with_their_values() {
        let mr = fields_of("model_request").unwrap();
        assert!(mr.contains_key("notifications[*].task_id"));
        assert!(mr.contains_key("agent") && mr.contains_key("t_ms"));
        assert!(!mr.contains_key("work"));
        assert_eq!(
            mr["route"].known,
            ["script_exhausted", "side_call", "turn", "unrouted"]
                .map(String::from)
                .into()
        );
        let ui = fields_of("user_input").unwrap();
        assert!(!ui["why"].free && ui["why"].known.contains("prompt"));
        assert!(
            fields_of("task_updated").unwrap()["status"]
                .known
                .contains("killed")
        );
        assert!(fields_of("track_ended").unwrap().contains_key("exit.code"));
        assert!(fields_of("stop").unwrap().contains_key("stop.by"));
        assert!(fields_of("hook").unwrap().contains_key("payload"));
        assert!(
            !fields_of("stream_line")
                .unwrap()
                .contains_key("subagent_stats")
        );
    }
}
