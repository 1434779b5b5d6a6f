//! Scenario-level checks: facts that are not a wake-up but matter to the people who build on
//! the CLI. Each observes one value from the timeline, compares it with the scenario's
//! expectation (if any), and explains itself with a witness.
//!
//! - `idle-teammate-distinguishable`: after the teammate went idle (TeammateIdle, or its turn
//!   ended), does every later Stop payload's `background_tasks` tell it apart from a working
//!   one? Observes `distinguishable`, `indistinguishable` or `not-observed`.
//! - `single-continuation`: after background work ended with no turn open, how many turns of
//!   the main agent carried its notification? Observes `one`, `none` or `duplicate`.
//! - `subagent-stop-on-interrupt`: after the driver's stop/interrupt, did SubagentStop fire for
//!   the agent? Observes `fired` or `not-fired`.
//! - `guard-blocked-once`: how many of the agent's SubagentStops were blocked (the agent made
//!   another request with no SubagentStart between)? Observes `blocked-once`, `not-blocked` or
//!   `blocked-N-times`.
//! - `stops-unblocked`: the same count, for agents that must stop freely. Observes `unblocked`
//!   or `blocked`.
//! - `transcript-status`: the agent's status read from its transcript with seed 004's rules.
//!   Observes `running`, `completed`, `canceled` or `not-observed`.
//! - `tool-errors`: did any of the agent's tool calls come back as errors (a command the CLI
//!   refused, such as a foreground `sleep` in some versions)? Observes `none` or `errors`.

use serde::{Deserialize, Serialize};

use super::{Witness, is_request_by, witness};
use crate::evidence::{Event, EventKind, HookName, InputReason, Timeline};
use crate::scenario::{Check, CheckKind, MAIN_AGENT};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckResult {
    pub name: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub observed: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// `None` when the scenario states no expectation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
    pub witness: Vec<Witness>,
    pub explanation: String,
}

pub fn run_check(tl: &Timeline, check: &Check) -> CheckResult {
    let agent = check
        .agent
        .clone()
        .unwrap_or_else(|| MAIN_AGENT.to_string());
    let (observed, witness, explanation) = match check.kind {
        CheckKind::IdleTeammateDistinguishable => idle_teammate(tl, &agent),
        CheckKind::SingleContinuation => single_continuation(tl),
        CheckKind::SubagentStopOnInterrupt => stop_on_interrupt(tl, &agent),
        CheckKind::ToolErrors => tool_errors(tl, &agent),
        CheckKind::TranscriptStatus => transcript_status(tl, &agent),
        CheckKind::GuardBlockedOnce | CheckKind::StopsUnblocked => {
            let (blocked, witness) = blocked_stops(tl, &agent);
            let observed = match (check.kind, blocked) {
                (CheckKind::StopsUnblocked, 0) => "unblocked".to_string(),
                (CheckKind::StopsUnblocked, _) => "blocked".to_string(),
                (_, 0) => "not-blocked".to_string(),
                (_, 1) => "blocked-once".to_string(),
                (_, n) => format!("blocked-{n}-times"),
            };
            let stops = tl
                .iter()
                .filter(|e| {
                    e.agent.as_deref() == Some(agent.as_str())
                        && matches!(e.kind, EventKind::AgentFinalized { .. })
                })
                .count();
            let explanation = format!(
                "`{agent}` reached SubagentStop {stops} time(s); {blocked} of them were blocked (the agent made another model request with no new SubagentStart in between)."
            );
            (observed, witness, explanation)
        }
    };
    CheckResult {
        name: check.name.clone(),
        kind: check.kind.as_str().to_string(),
        agent: check.agent.clone(),
        passed: check.expect.as_ref().map(|e| e == &observed),
        expected: check.expect.clone(),
        observed,
        witness,
        explanation,
    }
}

/// Whether a `background_tasks` entry is the teammate's: its type names a teammate.
fn is_teammate_entry(task_type: &str) -> bool {
    task_type.contains("teammate")
}

fn idle_teammate(tl: &Timeline, agent: &str) -> (String, Vec<Witness>, String) {
    // The CLI's own word that the teammate went idle (TeammateIdle) when it gives one: the
    // answer that ends the teammate's turn reaches the CLI a moment before it counts it idle,
    // and a Stop payload in that moment is no evidence either way. Else the turn's end.
    let idle_hook = tl.iter().find(|e| match &e.kind {
        EventKind::Hook { hook, detail, .. } if *hook == HookName::TeammateIdle => {
            e.agent.as_deref() == Some(agent) || detail.as_deref() == Some(agent)
        }
        _ => false,
    });
    let idle = idle_hook.or_else(|| {
        tl.iter().find(|e| {
            matches!(e.kind, EventKind::TurnEnded { .. }) && e.agent.as_deref() == Some(agent)
        })
    });
    let Some(idle) = idle else {
        return (
            "not-observed".into(),
            vec![],
            format!("`{agent}` never went idle in this run, so there is nothing to tell apart."),
        );
    };
    let busy_again = tl
        .iter()
        .find(|e| e.t_ms > idle.t_ms && is_request_by(e, agent))
        .map(|e| e.t_ms)
        .unwrap_or(f64::INFINITY);
    let stops: Vec<&Event> = tl
        .iter()
        .filter(|e| e.t_ms > idle.t_ms && e.t_ms < busy_again)
        .filter(|e| matches!(&e.kind, EventKind::Hook { hook, .. } if *hook == HookName::Stop))
        .collect();
    let mut witness_list = vec![witness(idle, format!("`{agent}` goes idle"))];
    let misleading: Vec<&Event> = stops
        .iter()
        .copied()
        .filter(|e| match &e.kind {
            EventKind::Hook {
                background_tasks: Some(tasks),
                ..
            } => tasks.iter().any(|t| {
                is_teammate_entry(&t.task_type)
                    && t.status == "running"
                    && !t.other_fields.iter().any(|f| f.contains("idle"))
            }),
            _ => false,
        })
        .collect();
    if stops.is_empty() {
        return (
            "not-observed".into(),
            witness_list,
            format!("No Stop hook fired while `{agent}` was idle."),
        );
    }
    if let Some(first) = misleading.first() {
        witness_list.push(witness(first, "Stop lists the idle teammate as running"));
        return (
            "indistinguishable".into(),
            witness_list,
            format!(
                "`{agent}` went idle at {:.2} s, yet {} of the {} Stop payloads after it listed the teammate as `running` with no idle flag: from the payload alone, an idle teammate looks exactly like a working one.",
                idle.t_ms / 1000.0,
                misleading.len(),
                stops.len()
            ),
        );
    }
    witness_list.push(witness(stops[0], "Stop tells the idle teammate apart"));
    (
        "distinguishable".into(),
        witness_list,
        format!(
            "After `{agent}` went idle at {:.2} s, none of the {} Stop payloads listed it as a running teammate without an idle flag.",
            idle.t_ms / 1000.0,
            stops.len()
        ),
    )
}

fn single_continuation(tl: &Timeline) -> (String, Vec<Witness>, String) {
    // The first notification the main agent receives in a turn it did not get input for.
    let first = tl.iter().find(|e| {
        is_request_by(e, MAIN_AGENT)
            && matches!(&e.kind, EventKind::ModelRequest { notifications, .. } if !notifications.is_empty())
    });
    let Some(first) = first else {
        return (
            "none".into(),
            vec![],
            "The main agent never received a background notification: the CLI did not continue by itself.".into(),
        );
    };
    let ids: Vec<String> = match &first.kind {
        EventKind::ModelRequest { notifications, .. } => {
            notifications.iter().map(|n| n.task_id.clone()).collect()
        }
        _ => vec![],
    };
    let deliveries: Vec<&Event> = tl
        .iter()
        .filter(|e| {
            is_request_by(e, MAIN_AGENT)
                && matches!(&e.kind, EventKind::ModelRequest { notifications, .. }
                    if notifications.iter().any(|n| ids.contains(&n.task_id)))
        })
        .collect();
    let input_before = tl
        .iter()
        .filter(|e| {
            e.t_ms < first.t_ms
                && matches!(
                    e.kind,
                    EventKind::UserInput {
                        why: InputReason::Scheduled | InputReason::Probe,
                        ..
                    }
                )
        })
        .last();
    let mut w = vec![witness(
        first,
        "the main agent's turn carries the notification",
    )];
    if deliveries.len() > 1 {
        w.push(witness(
            deliveries[1],
            "a second turn carries the same notification",
        ));
        return (
            "duplicate".into(),
            w,
            format!(
                "{} turns of the main agent carried the same notification: the continuation was duplicated.",
                deliveries.len()
            ),
        );
    }
    (
        "one".into(),
        w,
        format!(
            "Exactly one turn of the main agent carried the notification, at {:.2} s{}.",
            first.t_ms / 1000.0,
            input_before
                .map(|i| format!(
                    " (the last input before it was at {:.2} s)",
                    i.t_ms / 1000.0
                ))
                .unwrap_or_default()
        ),
    )
}

fn transcript_status(tl: &Timeline, agent: &str) -> (String, Vec<Witness>, String) {
    let fact = tl.iter().find(|e| {
        e.agent.as_deref() == Some(agent)
            && matches!(&e.kind, EventKind::TranscriptFact { fact, .. } if fact.starts_with("status "))
    });
    match fact {
        Some(e) => {
            let EventKind::TranscriptFact { fact, detail } = &e.kind else {
                unreachable!()
            };
            let status = fact.trim_start_matches("status ").to_string();
            (
                status.clone(),
                vec![witness(e, format!("transcript: {status}"))],
                format!("`{agent}`'s transcript says {status}: {detail}."),
            )
        }
        None => (
            "not-observed".into(),
            vec![],
            format!("No transcript of `{agent}` was found."),
        ),
    }
}

fn tool_errors(tl: &Timeline, agent: &str) -> (String, Vec<Witness>, String) {
    let errors: Vec<(&Event, &String)> = tl
        .iter()
        .filter(|e| is_request_by(e, agent))
        .flat_map(|e| match &e.kind {
            EventKind::ModelRequest { tool_errors, .. } => {
                tool_errors.iter().map(|t| (e, t)).collect::<Vec<_>>()
            }
            _ => vec![],
        })
        .collect();
    if errors.is_empty() {
        return (
            "none".into(),
            vec![],
            format!("Every tool call of `{agent}` ran: none came back as an error."),
        );
    }
    let w = errors
        .iter()
        .take(3)
        .map(|(e, t)| witness(e, format!("tool error: {t}")))
        .collect();
    (
        "errors".into(),
        w,
        format!(
            "{} tool call(s) of `{agent}` came back as errors, first: “{}”.",
            errors.len(),
            errors[0].1
        ),
    )
}

fn stop_on_interrupt(tl: &Timeline, agent: &str) -> (String, Vec<Witness>, String) {
    let Some(stop) = tl
        .iter()
        .find(|e| matches!(e.kind, EventKind::ControlRequest { .. }))
    else {
        return (
            "not-observed".into(),
            vec![],
            "The driver sent no stop or interrupt.".into(),
        );
    };
    let fired = tl.iter().find(|e| {
        e.t_ms >= stop.t_ms
            && e.agent.as_deref() == Some(agent)
            && matches!(e.kind, EventKind::AgentFinalized { .. })
    });
    let mut w = vec![witness(stop, "the driver stops the work")];
    match fired {
        Some(f) => {
            w.push(witness(f, format!("SubagentStop for `{agent}`")));
            (
                "fired".into(),
                w,
                format!(
                    "SubagentStop fired for `{agent}` {:.2} s after the stop request.",
                    (f.t_ms - stop.t_ms) / 1000.0
                ),
            )
        }
        None => (
            "not-fired".into(),
            w,
            format!("No SubagentStop fired for `{agent}` after the stop request."),
        ),
    }
}

/// SubagentStops of `agent` followed by another request of it with no SubagentStart between.
fn blocked_stops(tl: &Timeline, agent: &str) -> (usize, Vec<Witness>) {
    let mut count = 0;
    let mut w = Vec::new();
    let stops: Vec<&Event> = tl
        .iter()
        .filter(|e| {
            e.agent.as_deref() == Some(agent) && matches!(e.kind, EventKind::AgentFinalized { .. })
        })
        .collect();
    for stop in stops {
        let next = tl.iter().find(|e| {
            e.t_ms > stop.t_ms
                && e.agent.as_deref() == Some(agent)
                && (is_request_by(e, agent)
                    || matches!(&e.kind, EventKind::Hook { hook, .. } if *hook == HookName::SubagentStart))
        });
        if let Some(n) = next
            && is_request_by(n, agent)
        {
            count += 1;
            w.push(witness(stop, "SubagentStop is blocked"));
            w.push(witness(n, format!("`{agent}` continues")));
        }
    }
    (count, w)
}
