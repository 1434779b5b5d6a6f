//! Stops from any source. The model's `TaskStop`, the driver's `stop_task` and `interrupt`, the
//! session's end (`/exit` in a pty, stdin closed in print mode) and the run's ceiling all stop
//! work; checks and verdicts that speak of "a stop" mean any of them, and say which it was.

use serde::Serialize;

use crate::evidence::{Event, EventKind};

/// Who or what stopped the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopSource {
    /// The model called `TaskStop` (or an older version's `KillShell`).
    Model,
    /// The driver sent a `stop_task` control request.
    StopTask,
    /// The driver sent an `interrupt` control request.
    Interrupt,
    /// The driver ended the session.
    SessionEnd,
    /// The run's ceiling.
    Ceiling,
}

/// A stop: its source, and the work it names (none: it stops everything).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stop {
    pub by: StopSource,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// Tools with which a model stops a background task, across versions.
const STOP_TOOLS: &[&str] = &["TaskStop", "KillShell", "KillBash"];

/// The stop an event is, if it is one.
pub fn stop_of(e: &Event) -> Option<Stop> {
    let (by, target) = match &e.kind {
        EventKind::ToolCall {
            tool,
            target,
            inserted: false,
            ..
        } if STOP_TOOLS.contains(&tool.as_str()) => (StopSource::Model, target.clone()),
        EventKind::ControlRequest { subtype, target } if subtype == "stop_task" => {
            (StopSource::StopTask, target.as_deref().map(target_name))
        }
        EventKind::ControlRequest { subtype, .. } if subtype == "interrupt" => {
            (StopSource::Interrupt, None)
        }
        EventKind::SessionClosed => (StopSource::SessionEnd, None),
        EventKind::CeilingHit { .. } => (StopSource::Ceiling, None),
        _ => return None,
    };
    Some(Stop { by, target })
}

/// The scenario name in a control request's target (`worker (a1b2c3)` -> `worker`).
fn target_name(target: &str) -> String {
    target.split(" (").next().unwrap_or(target).to_string()
}

impl Stop {
    /// Whether this stop reaches `work`: it names it, or it names nothing.
    pub fn reaches(&self, work: &str) -> bool {
        self.target.as_deref().is_none_or(|t| t == work)
    }

    /// `the model's TaskStop of `worker``, `the driver's interrupt`, `the ceiling`.
    pub fn describe(&self) -> String {
        let on = |what: &str| match &self.target {
            Some(t) => format!("{what} of `{t}`"),
            None => what.to_string(),
        };
        match self.by {
            StopSource::Model => on("the model's TaskStop"),
            StopSource::StopTask => on("the driver's stop_task"),
            StopSource::Interrupt => "the driver's interrupt".into(),
            StopSource::SessionEnd => "the session's end".into(),
            StopSource::Ceiling => "the run's ceiling".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::Source;

    fn event(kind: EventKind) -> Event {
        Event {
            t_ms: 1.0,
            source: Source::Driver,
            agent: None,
            kind,
        }
    }

    /// Each stop in words, with its target where it names one.
    #[test]
    fn each_stop_says_who_stopped_what() {
        let stop = |by, target: Option<&str>| Stop {
            by,
            target: target.map(str::to_string),
        };
        for (s, words) in [
            (
                stop(StopSource::Model, Some("worker")),
                "the model's TaskStop of `worker`",
            ),
            (stop(StopSource::Model, None), "the model's TaskStop"),
            (
                stop(StopSource::StopTask, Some("bg")),
                "the driver's stop_task of `bg`",
            ),
            (stop(StopSource::Interrupt, None), "the driver's interrupt"),
            (stop(StopSource::SessionEnd, None), "the session's end"),
            (stop(StopSource::Ceiling, None), "the run's ceiling"),
        ] {
            assert_eq!(s.describe(), words);
        }
    }

    #[test]
    fn every_source_of_a_stop_is_a_stop() {
        let model = event(EventKind::ToolCall {
            seq: 1,
            tool: "TaskStop".into(),
            tool_use_id: "t".into(),
            background: false,
            spawn: None,
            track: None,
            teammate: None,
            target: Some("worker".into()),
            inserted: false,
        });
        let s = stop_of(&model).unwrap();
        assert_eq!(
            (s.by, s.target.as_deref()),
            (StopSource::Model, Some("worker"))
        );
        assert!(s.reaches("worker") && !s.reaches("other"));
        let control = event(EventKind::ControlRequest {
            subtype: "stop_task".into(),
            target: Some("worker (ad27)".into()),
        });
        assert_eq!(stop_of(&control).unwrap().target.as_deref(), Some("worker"));
        let interrupt = event(EventKind::ControlRequest {
            subtype: "interrupt".into(),
            target: None,
        });
        assert!(stop_of(&interrupt).unwrap().reaches("anything"));
        assert_eq!(
            stop_of(&event(EventKind::SessionClosed)).unwrap().by,
            StopSource::SessionEnd
        );
        assert_eq!(
            stop_of(&event(EventKind::CeilingHit { ceiling_s: 1.0 }))
                .unwrap()
                .by,
            StopSource::Ceiling
        );
        let message = event(EventKind::ControlRequest {
            subtype: "send_task_message".into(),
            target: Some("worker".into()),
        });
        assert!(stop_of(&message).is_none(), "a message stops nothing");
        let search = event(EventKind::ToolCall {
            seq: 1,
            tool: "TaskStop".into(),
            tool_use_id: "t".into(),
            background: false,
            spawn: None,
            track: None,
            teammate: None,
            target: None,
            inserted: true,
        });
        assert!(
            stop_of(&search).is_none(),
            "an inserted call is the harness's"
        );
    }
}
