//! The evidence source `integration`: what a program under test (driver mode `command`) says
//! it showed its user, one JSON line on its stdout each, read on the run's one clock. The line
//! format is `IntegrationLine` (`schema/integration-line.schema.json` is generated from it); a
//! line that is not JSON or breaks the format is kept as a `rejected_line` event naming why,
//! never dropped and never a panic.

use serde::{Deserialize, Serialize};

use super::EventKind;

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
            r#"{"shown":"approval_asked","tool":"Bash"}"#,
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
        ] {
            assert!(props.contains_key(field), "{field}");
        }
        assert_eq!(schema["required"], serde_json::json!(["shown"]));
        assert_eq!(schema["additionalProperties"], false);
    }
}
