//! Selectors and matches in words, for the explanation a query's result carries.

use crate::evidence::describe::describe;
use crate::evidence::{Witness, secs};
use crate::scenario::query::{FieldTest, Selector};

use super::view::EventView;

/// A selector as a noun phrase: "`worker`'s SubagentStop hooks", "stops of `bg`",
/// "model requests of `main` where `tool_errors[0]` exists".
pub fn selector(s: &Selector) -> String {
    let mut noun = match (s.kind.as_deref(), s.hook.as_deref()) {
        (_, Some(h)) => format!("{h} hooks"),
        (Some("stop"), None) => "stops".to_string(),
        (Some(k), None) => noun(k),
        (None, None) => "events".to_string(),
    };
    if let Some(t) = &s.tool {
        noun = format!("`{t}` {noun}");
    }
    match (&s.line_type, &s.subtype) {
        (Some(t), Some(st)) => noun = format!("`{t}/{st}` {noun}"),
        (Some(t), None) => noun = format!("`{t}` {noun}"),
        (None, Some(st)) => noun = format!("`{st}` {noun}"),
        (None, None) => {}
    }
    let mut parts = vec![noun];
    if let Some(src) = &s.source {
        parts.push(format!("from the {src}"));
    }
    if let Some(a) = &s.agent {
        parts.push(format!("of `{a}`"));
    }
    if let Some(w) = &s.work {
        parts.push(format!("about `{w}`"));
    }
    if let Some(st) = &s.status {
        parts.push(format!("with status `{st}`"));
    }
    let tests: Vec<String> = s
        .predicates
        .iter()
        .map(|p| format!("`{}` {}", p.path, test(&p.test)))
        .collect();
    if !tests.is_empty() {
        parts.push(format!("where {}", tests.join(" and ")));
    }
    parts.join(" ")
}

/// An event kind as a plural noun.
fn noun(kind: &str) -> String {
    match kind {
        "model_request" => "model requests".into(),
        "tool_call" => "tool calls".into(),
        "turn_ended" => "turn ends".into(),
        "agent_finalized" => "finalizations".into(),
        "turn_result" => "`result` lines".into(),
        "stream_line" => "stream lines".into(),
        "user_input" => "user inputs".into(),
        "transcript_fact" => "transcript facts".into(),
        "control_request" => "control requests".into(),
        "control_response" => "control responses".into(),
        other => format!("{} events", other.replace('_', " ")),
    }
}

fn test(t: &FieldTest) -> String {
    match t {
        FieldTest::Equals(v) => format!("is {v}"),
        FieldTest::Contains(s) => format!("contains “{s}”"),
        FieldTest::Matches(r) => format!("matches /{r}/"),
        FieldTest::Exists(true) => "exists".into(),
        FieldTest::Exists(false) => "is absent".into(),
        FieldTest::Gt(n) => format!("> {n}"),
        FieldTest::Ge(n) => format!(">= {n}"),
        FieldTest::Lt(n) => format!("< {n}"),
        FieldTest::Le(n) => format!("<= {n}"),
    }
}

/// A witness line for a matched event: what the reports say of it.
pub fn witness(v: &EventView) -> Witness {
    let what = match &v.stop {
        Some(stop) => format!("{} ({})", stop.describe(), describe(v.event)),
        None => describe(v.event),
    };
    Witness::of(v.event, what)
}

/// `at 1.23 s`.
pub fn at(v: &EventView) -> String {
    format!("at {}", secs(v.event.t_ms))
}
