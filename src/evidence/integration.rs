//! The integration protocol, both ways, for a program under test (driver mode `command`):
//!
//! - its stdin takes `InputLine`s, one JSON line each: what its user does (says something,
//!   answers an approval, stops a task, interrupts), `schema/integration-input.schema.json`;
//! - its stdout says what it showed its user, one `IntegrationLine` each, read on the run's
//!   one clock as the evidence source `integration` (`schema/integration-line.schema.json`). A
//!   line that is not JSON or breaks the format is kept as a `rejected_line` event naming why,
//!   never dropped and never a panic.
//!
//! Both schemas are generated from these types.

use serde::{Deserialize, Serialize};

use super::EventKind;
pub use crate::scenario::Answer;

/// One thing the integration showed its user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntegrationLine {
    /// What was shown.
    pub shown: Shown,
    /// A turn: who started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_by: Option<StartedBy>,
    /// A tool card or an approval: the tool it names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A status change (`idle`, `busy`, ...) or a restored subagent's status (`running`,
    /// `completed`, `canceled`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// An approval answered: `allow` or `deny`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// A restored subagent: its task or agent id, as the integration knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// The text shown, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// An approval asked: the integration's own id for it, which the user's `approve` line
    /// echoes (and its `approval_answered` line may repeat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// One line the harness writes to an integration's stdin: what its user does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum InputLine {
    /// The user says `text`: the scenario's prompt first, then each of its inputs.
    Say { text: String },
    /// The user answers an approval the integration showed (`approval_asked`): `id` and `tool`
    /// as that line gave them.
    Approve {
        tool: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        answer: Answer,
    },
    /// The user stops a background task: `task` is the scenario's name for it, `task_id` the
    /// CLI's id when the run has seen it.
    StopTask {
        task: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_id: Option<String>,
    },
    /// The user interrupts the turn in progress.
    Interrupt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Shown {
    /// A turn of the agent (its reply rendered).
    Turn,
    /// A tool call's card.
    ToolCard,
    /// A permission prompt put before the user.
    ApprovalAsked,
    /// A permission prompt answered.
    ApprovalAnswered,
    /// The session's status changed (`status`).
    Status,
    /// A subagent restored from a saved session, with the status shown for it.
    SubagentStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StartedBy {
    /// The user's prompt (a `say` line) opened it.
    Prompt,
    /// The CLI started it by itself (after background work reported).
    Cli,
}

/// The longest part of a rejected line kept in the evidence.
const KEPT: usize = 200;

/// The event one stdout line of an integration is.
pub fn event_of(line: &str) -> EventKind {
    match serde_json::from_str::<IntegrationLine>(line) {
        Ok(shown) => EventKind::Shown(shown),
        Err(e) => {
            let why = match serde_json::from_str::<serde_json::Value>(line) {
                Err(_) => format!("not JSON: {e}"),
                Ok(_) => format!("breaks the integration line format: {e}"),
            };
            EventKind::RejectedLine {
                why,
                line: line.chars().take(KEPT).collect(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_line_reads_and_bad_lines_are_named() {
        let good = [
            r#"{"shown":"turn","started_by":"cli","text":"Done."}"#,
            r#"{"shown":"tool_card","tool":"Bash"}"#,
            r#"{"shown":"approval_asked","tool":"Bash","id":"a1"}"#,
            r#"{"shown":"approval_answered","tool":"Bash","answer":"allow"}"#,
            r#"{"shown":"status","status":"idle"}"#,
            r#"{"shown":"subagent_status","task":"a1","status":"running"}"#,
        ];
        for line in good {
            assert!(matches!(event_of(line), EventKind::Shown(_)), "{line}");
        }
        let bad = [
            ("not json", "not JSON"),
            (r#"{"shown":"banner"}"#, "breaks"),
            (r#"{"shown":"turn","colour":"red"}"#, "breaks"),
            (r#"{"shown":"turn","started_by":"user"}"#, "breaks"),
            (r#"[1,2]"#, "breaks"),
        ];
        for (line, why) in bad {
            match event_of(line) {
                EventKind::RejectedLine { why: w, line: l } => {
                    assert!(w.contains(why), "{line}: {w}");
                    assert_eq!(l, line);
                }
                other => panic!("{line} read as {other:?}"),
            }
        }
    }

    /// The checked-in schema accepts what the reader accepts: every good line's fields are the
    /// schema's properties, and `shown` is required.
    #[test]
    fn the_schema_names_the_fields_the_reader_takes() {
        let schema = serde_json::to_value(schemars::schema_for!(IntegrationLine)).unwrap();
        let props = schema["properties"].as_object().unwrap();
        for field in [
            "shown",
            "started_by",
            "tool",
            "status",
            "answer",
            "task",
            "text",
            "id",
        ] {
            assert!(props.contains_key(field), "{field}");
        }
        assert_eq!(schema["required"], serde_json::json!(["shown"]));
        assert_eq!(schema["additionalProperties"], false);
    }

    /// The input lines are the book's (`book/src/testing-your-product.md`): each kind, its
    /// fields, and nothing else is read.
    #[test]
    fn input_lines_are_the_documented_ones() {
        let lines = [
            (
                InputLine::Say { text: "hi".into() },
                r#"{"type":"say","text":"hi"}"#,
            ),
            (
                InputLine::Approve {
                    tool: "Write".into(),
                    id: Some("a1".into()),
                    answer: Answer::Deny,
                },
                r#"{"type":"approve","tool":"Write","id":"a1","answer":"deny"}"#,
            ),
            (
                InputLine::StopTask {
                    task: "worker".into(),
                    task_id: Some("t9".into()),
                },
                r#"{"type":"stop_task","task":"worker","task_id":"t9"}"#,
            ),
            (InputLine::Interrupt, r#"{"type":"interrupt"}"#),
        ];
        for (line, text) in lines {
            assert_eq!(serde_json::to_string(&line).unwrap(), text);
            assert_eq!(serde_json::from_str::<InputLine>(text).unwrap(), line);
        }
        assert!(
            serde_json::from_str::<InputLine>(r#"{"type":"say","text":"x","extra":1}"#).is_err()
        );
    }
}
