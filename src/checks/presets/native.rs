//! The two presets one relation cannot say: which `background_tasks` entry is the idle
//! teammate (its type, its status and the absence of an idle flag on the same entry), and
//! whether later turns repeat the very notification the first one carried.

use super::super::{Evidence, Observation, Settled};
use crate::evidence::{Event, EventKind, HookName, InputReason, Timeline, Witness};
use crate::scenario::MAIN_AGENT;

fn witness(e: &Event, what: impl Into<String>) -> Witness {
    Witness::of(e, what)
}

/// The three parts of an observation; the rest of a cut-short run could change any of them.
fn open((observed, witness, explanation): (String, Vec<Witness>, String)) -> Observation {
    Observation {
        observed,
        witness,
        explanation,
        settled: Settled::Open,
    }
}

/// Whether a `background_tasks` entry is the teammate's: its type names a teammate.
fn is_teammate_entry(task_type: &str) -> bool {
    task_type.contains("teammate")
}

pub fn idle_teammate(ev: &Evidence, agent: &str) -> Observation {
    open(idle_teammate_parts(ev.timeline, agent))
}

fn idle_teammate_parts(tl: &Timeline, agent: &str) -> (String, Vec<Witness>, String) {
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
        .find(|e| e.t_ms > idle.t_ms && e.is_request_by(agent))
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

pub fn single_continuation(ev: &Evidence) -> Observation {
    open(single_continuation_parts(ev.timeline))
}

fn single_continuation_parts(tl: &Timeline) -> (String, Vec<Witness>, String) {
    // The first notification the main agent receives in a turn it did not get input for.
    let first = tl.iter().find(|e| {
        e.is_request_by(MAIN_AGENT)
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
            e.is_request_by(MAIN_AGENT)
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
