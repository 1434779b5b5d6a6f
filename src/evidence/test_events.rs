//! Events for unit tests, built in one place: any event at a moment, a model request of an
//! agent carrying task notifications, and a tool call.

use super::{Event, EventKind, Notification, Route, Source};

/// An event of `kind` at `t` ms, from `source`, belonging to `agent`.
pub fn ev(t: f64, source: Source, agent: Option<&str>, kind: EventKind) -> Event {
    Event {
        t_ms: t,
        source,
        agent: agent.map(str::to_string),
        kind,
    }
}

/// `agent`'s model request number `seq` (a turn's), carrying a completed notification for each
/// task id in `notified`.
pub fn request(t: f64, agent: &str, seq: u64, notified: &[&str]) -> Event {
    ev(
        t,
        Source::Api,
        Some(agent),
        EventKind::ModelRequest {
            seq,
            injected: None,
            tool_errors: vec![],
            user_text: vec![],
            answer_lost: false,
            route: Route::Turn,
            step: Some(seq as usize),
            notifications: notified
                .iter()
                .map(|id| Notification {
                    task_id: id.to_string(),
                    status: Some("completed".into()),
                    tool_use_id: None,
                    event: None,
                })
                .collect(),
        },
    )
}

/// A tool call by `agent` (or by nobody known): background or not, spawning or tracking work.
pub fn call(
    t: f64,
    agent: Option<&str>,
    background: bool,
    spawn: Option<&str>,
    track: Option<&str>,
) -> Event {
    ev(
        t,
        Source::Api,
        agent,
        EventKind::ToolCall {
            seq: 1,
            tool: if spawn.is_some() { "Agent" } else { "Bash" }.into(),
            tool_use_id: format!("toolu_{t}"),
            background,
            spawn: spawn.map(str::to_string),
            track: track.map(str::to_string),
            teammate: None,
            target: None,
            inserted: false,
        },
    )
}
