//! The built-in checks, by name. Five are queries on the same engine as a scenario's own
//! (`query`), with the preset's words for what they observe; two correlate more than one
//! relation can say (which teammate entry is the idle one; which notification a later turn
//! repeats) and stay in Rust (`native`).
//!
//! - `subagent-stop-on-interrupt`: after the first stop of the agent (from any source: the
//!   model's TaskStop, the driver's stop_task or interrupt, the session's end, the ceiling), did
//!   SubagentStop fire for it? `fired`, `not-fired`, `not-observed`.
//! - `guard-blocked-once`: how many of the agent's finalizations were blocked (the agent made
//!   another request with no SubagentStart between)? `not-blocked`, `blocked-once`,
//!   `blocked-N-times`.
//! - `stops-unblocked`: the same count, for agents that must stop freely: `unblocked`,
//!   `blocked`.
//! - `tool-errors`: did a tool call of the agent come back as an error? `none`, `errors`.
//! - `transcript-status`: the agent's status read from its transcript with seed 004's rules:
//!   `running`, `completed`, `canceled`, `not-observed`.
//! - `idle-teammate-distinguishable` (native): after the teammate went idle, does every later
//!   Stop payload tell it apart from a working one? `distinguishable`, `indistinguishable`,
//!   `not-observed`.
//! - `single-continuation` (native): after background work ended with no turn open, how many
//!   turns of the main agent carried its notification? `one`, `none`, `duplicate`.
//!
//! Four more judge an integration under test (mode `command`) and name the layer at fault:
//! `cli-turn-shown-once`, `approvals-answered`, `idle-after-notification`, `restored-status`
//! (`integration`).

mod integration;
mod native;

use super::{Evidence, Layer, Observation, relations};
use crate::scenario::CheckKind;
use crate::scenario::query::{FieldPath, FieldTest, Predicate, Query, Selector, Which};

/// A built-in check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset(pub CheckKind);

pub fn preset(kind: CheckKind) -> Preset {
    Preset(kind)
}

impl Preset {
    /// The preset as a query about `agent`, where one relation can say it.
    pub fn query(self, agent: &str) -> Option<Query> {
        let of_agent = |kind: &str| Selector {
            kind: Some(kind.into()),
            agent: Some(agent.into()),
            ..Selector::default()
        };
        let turn_request = Selector {
            predicates: vec![predicate(
                "route",
                FieldTest::Matches("^(turn|script_exhausted)$".into()),
            )],
            ..of_agent("model_request")
        };
        Some(match self.0 {
            CheckKind::SubagentStopOnInterrupt => Query::Within {
                after: Selector {
                    kind: Some("stop".into()),
                    work: Some(agent.into()),
                    ..Selector::default()
                },
                then: of_agent("agent_finalized"),
                seconds: None,
            },
            CheckKind::GuardBlockedOnce | CheckKind::StopsUnblocked => Query::Followed {
                each: of_agent("agent_finalized"),
                by: turn_request,
                unless: Some(Selector {
                    hook: Some("SubagentStart".into()),
                    agent: Some(agent.into()),
                    ..Selector::default()
                }),
            },
            CheckKind::ToolErrors => Query::Exists {
                of: Selector {
                    predicates: vec![predicate("tool_errors[0]", FieldTest::Exists(true))],
                    ..turn_request
                },
            },
            CheckKind::TranscriptStatus => Query::Value {
                at: Selector {
                    predicates: vec![predicate("fact", FieldTest::Matches("^status ".into()))],
                    ..of_agent("transcript_fact")
                },
                path: FieldPath::parse("fact").expect("a valid path"),
                which: Which::First,
                capture: Some("^status (.+)$".into()),
            },
            CheckKind::IdleTeammateDistinguishable
            | CheckKind::SingleContinuation
            | CheckKind::CliTurnShownOnce
            | CheckKind::ApprovalsAnswered
            | CheckKind::IdleAfterNotification
            | CheckKind::RestoredStatus => return None,
        })
    }

    /// Observes the preset about `agent`.
    pub fn observe(self, ev: &Evidence, agent: &str) -> Observation {
        match self.query(agent) {
            Some(q) => self.in_words(relations::evaluate(ev, &q), agent),
            None => match self.0 {
                CheckKind::IdleTeammateDistinguishable => native::idle_teammate(ev, agent),
                CheckKind::CliTurnShownOnce => integration::cli_turn_shown_once(ev),
                CheckKind::ApprovalsAnswered => integration::approvals_answered(ev),
                CheckKind::IdleAfterNotification => integration::idle_after_notification(ev),
                CheckKind::RestoredStatus => integration::restored_status(ev),
                _ => native::single_continuation(ev),
            },
        }
    }

    /// The layer an observation of this preset puts the fault in, where it names one.
    pub fn layer(self, observed: &str) -> Option<Layer> {
        integration::layer(self.0, observed)
    }

    /// The query's observation in the preset's words.
    fn in_words(self, mut o: Observation, agent: &str) -> Observation {
        let (word, lead) = match (self.0, o.observed.as_str()) {
            (CheckKind::SubagentStopOnInterrupt, "yes") => (
                "fired".to_string(),
                format!("SubagentStop fired for `{agent}` after it was stopped."),
            ),
            (CheckKind::SubagentStopOnInterrupt, "no") => (
                "not-fired".into(),
                format!("No SubagentStop fired for `{agent}` after it was stopped."),
            ),
            (CheckKind::SubagentStopOnInterrupt, _) => (
                "not-observed".into(),
                format!(
                    "Nothing stopped `{agent}`: no TaskStop, stop_task, interrupt, session end or ceiling."
                ),
            ),
            (CheckKind::GuardBlockedOnce | CheckKind::StopsUnblocked, n) => {
                let n: usize = n.parse().unwrap_or(0);
                let word = match (self.0, n) {
                    (CheckKind::StopsUnblocked, 0) => "unblocked".to_string(),
                    (CheckKind::StopsUnblocked, _) => "blocked".to_string(),
                    (_, 0) => "not-blocked".to_string(),
                    (_, 1) => "blocked-once".to_string(),
                    (_, n) => format!("blocked-{n}-times"),
                };
                (
                    word,
                    format!(
                        "{n} finalization(s) of `{agent}` were blocked: the agent made another model request with no new SubagentStart in between."
                    ),
                )
            }
            (CheckKind::ToolErrors, "yes") => (
                "errors".into(),
                format!("A tool call of `{agent}` came back as an error."),
            ),
            (CheckKind::ToolErrors, _) => (
                "none".into(),
                format!("Every tool call of `{agent}` ran: none came back as an error."),
            ),
            (CheckKind::TranscriptStatus, "not-observed") => (
                "not-observed".into(),
                format!("No status of `{agent}` was read from a transcript."),
            ),
            (CheckKind::TranscriptStatus, status) => (
                status.to_string(),
                format!("`{agent}`'s transcript says {status}."),
            ),
            (_, other) => (other.to_string(), String::new()),
        };
        o.observed = word;
        o.explanation = format!("{lead} {}", o.explanation).trim().to_string();
        o
    }
}

fn predicate(path: &str, test: FieldTest) -> Predicate {
    Predicate {
        path: FieldPath::parse(path).expect("a valid path"),
        test,
    }
}
