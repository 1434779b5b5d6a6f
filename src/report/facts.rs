//! The facts a draft's Summary states from the timeline, in the CLI's terms, because they are
//! what makes a bug a bug for a maintainer: work reported to its waiter more than once, an
//! agent started again under the task id it was reported `completed` with, and an agent
//! reported `completed` while a background command it started still runs. Each is said only
//! where the run shows it, with the times and requests that show it.

use std::collections::BTreeMap;

use crate::evidence::{Event, EventKind, TaskStatus, Timeline, secs};

/// The facts, in timeline order of the task they are about.
pub(super) fn shown(tl: &Timeline) -> Vec<String> {
    let mut facts = Vec::new();
    for (task_id, label) in tasks(tl) {
        facts.extend(reported_twice(tl, &task_id, &label));
        facts.extend(started_again(tl, &task_id, &label));
        facts.extend(completed_while_its_command_runs(tl, &task_id, &label));
    }
    facts
}

/// Every task the CLI started, once, with the scenario's name for it.
fn tasks(tl: &Timeline) -> Vec<(String, String)> {
    let mut seen: Vec<(String, String)> = Vec::new();
    for e in tl.iter() {
        if let EventKind::TaskStarted { task_id, label, .. } = &e.kind
            && !seen.iter().any(|(id, _)| id == task_id)
        {
            seen.push((
                task_id.clone(),
                label.clone().unwrap_or_else(|| task_id.clone()),
            ));
        }
    }
    seen
}

/// The agents' model requests that carry a notification of the end of task `task_id` (not a
/// Monitor's event), by the agent they belong to.
fn deliveries<'a>(tl: &'a Timeline, task_id: &str) -> BTreeMap<String, Vec<&'a Event>> {
    let mut by_agent: BTreeMap<String, Vec<&Event>> = BTreeMap::new();
    for e in tl.iter() {
        let EventKind::ModelRequest { notifications, .. } = &e.kind else {
            continue;
        };
        let Some(agent) = e.agent.as_deref().filter(|a| e.is_request_by(a)) else {
            continue;
        };
        if notifications
            .iter()
            .any(|n| n.task_id == task_id && n.event.is_none())
        {
            by_agent.entry(agent.to_string()).or_default().push(e);
        }
    }
    by_agent
}

fn request_at(e: &Event) -> String {
    match &e.kind {
        EventKind::ModelRequest { seq, .. } => format!("request #{seq} at {}", secs(e.t_ms)),
        _ => secs(e.t_ms),
    }
}

/// `` `worker` (task a1b2) was reported to `main` 2 times under one task id: in request #5 at
/// 0.82 s and request #7 at 4.82 s ``.
fn reported_twice(tl: &Timeline, task_id: &str, label: &str) -> Vec<String> {
    deliveries(tl, task_id)
        .into_iter()
        .filter(|(_, requests)| requests.len() > 1)
        .map(|(agent, requests)| {
            let list: Vec<String> = requests.iter().map(|e| request_at(e)).collect();
            format!(
                "`{label}` (task `{task_id}`) was reported to `{agent}` {} under the same task id: in {}.",
                times(requests.len()),
                crate::classify::filing::join_and(&list)
            )
        })
        .collect()
}

/// `` `worker` was started again at 4.75 s under the same task id, after it had been reported
/// `completed` at 0.80 s ``.
fn started_again(tl: &Timeline, task_id: &str, label: &str) -> Vec<String> {
    let starts: Vec<&Event> = tl
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::TaskStarted { task_id: id, .. } if id == task_id))
        .collect();
    starts
        .iter()
        .skip(1)
        .map(|again| {
            let reported = tl.iter().find(|e| {
                e.t_ms < again.t_ms
                    && matches!(&e.kind, EventKind::TaskUpdated { task_id: id, status, .. }
                        if id == task_id && TaskStatus::parse(status) == TaskStatus::Completed)
            });
            let after = reported
                .map(|r| {
                    format!(
                        ", after it had been reported `completed` at {}",
                        secs(r.t_ms)
                    )
                })
                .unwrap_or_default();
            format!(
                "`{label}` was started again at {} under the same task id{after}.",
                secs(again.t_ms)
            )
        })
        .collect()
}

/// `` `worker` was reported `completed` at 0.80 s while `bg`, the background command it
/// started, was still running (it ended at 4.73 s) ``.
fn completed_while_its_command_runs(tl: &Timeline, task_id: &str, label: &str) -> Vec<String> {
    let Some(completed) = tl.iter().find(|e| {
        matches!(&e.kind, EventKind::TaskUpdated { task_id: id, status, .. }
            if id == task_id && TaskStatus::parse(status) == TaskStatus::Completed)
    }) else {
        return vec![];
    };
    let commands = tl.iter().filter_map(|e| match &e.kind {
        EventKind::ToolCall {
            track: Some(track),
            background: true,
            ..
        } if e.agent.as_deref() == Some(label) && e.t_ms < completed.t_ms => Some(track),
        _ => None,
    });
    commands
        .filter_map(|track| {
            let ended = tl.iter().find(|e| {
                matches!(&e.kind, EventKind::TrackEnded { name, .. } if name == track)
            });
            match ended {
                Some(end) if end.t_ms <= completed.t_ms => None,
                Some(end) => Some(format!("it ended at {}", secs(end.t_ms))),
                None => Some("it had not ended when the run did".to_string()),
            }
            .map(|when| {
                format!(
                    "`{label}` was reported `completed` at {} while `{track}`, the background command it started, was still running ({when}).",
                    secs(completed.t_ms)
                )
            })
        })
        .collect()
}

fn times(n: usize) -> String {
    match n {
        2 => "twice".into(),
        n => format!("{n} times"),
    }
}
