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

#[cfg(test)]
mod tests {
    //! Small timelines at each edge of the two presets: which hook counts as going idle, the
    //! window a Stop payload is read in, which entry is the idle teammate, and which later
    //! turns repeat the first continuation's notification.

    use super::*;
    use crate::evidence::test_events::{ev, request};
    use crate::evidence::{BackgroundTask, Source};

    fn hook(t_ms: f64, agent: Option<&str>, name: HookName, detail: Option<&str>) -> Event {
        let mut kind = EventKind::hook(name, 0, None);
        if let EventKind::Hook { detail: d, .. } = &mut kind {
            *d = detail.map(str::to_string);
        }
        ev(t_ms, Source::Hook, agent, kind)
    }

    /// A Stop payload listing one background task.
    fn stop(t_ms: f64, task_type: &str, status: &str, other: &[&str]) -> Event {
        let mut kind = EventKind::hook(HookName::Stop, 0, None);
        if let EventKind::Hook {
            background_tasks, ..
        } = &mut kind
        {
            *background_tasks = Some(vec![BackgroundTask {
                id: "t1".into(),
                task_type: task_type.into(),
                status: status.into(),
                description: None,
                other_fields: other.iter().map(|s| s.to_string()).collect(),
            }]);
        }
        ev(t_ms, Source::Hook, None, kind)
    }

    fn idle(events: Vec<Event>) -> (String, Vec<Witness>, String) {
        idle_teammate_parts(&Timeline::new(events), "mate")
    }

    fn turn_end(t_ms: f64, agent: &str) -> Event {
        ev(
            t_ms,
            Source::Api,
            Some(agent),
            EventKind::TurnEnded {
                seq: 1,
                text: "done".into(),
            },
        )
    }

    #[test]
    fn an_idle_teammate_listed_running_with_no_idle_flag_is_indistinguishable() {
        let idle_at = || hook(1000.0, Some("mate"), HookName::TeammateIdle, None);
        let (observed, witness, why) = idle(vec![
            idle_at(),
            stop(2000.0, "in_process_teammate", "running", &[]),
        ]);
        assert_eq!(observed, "indistinguishable", "{why}");
        assert_eq!(witness.len(), 2);
        assert!(
            why.contains("went idle at 1.00 s, yet 1 of the 1 Stop"),
            "{why}"
        );
        // An idle flag on the entry, another status, or another type tells it apart.
        for listed in [
            stop(2000.0, "in_process_teammate", "running", &["is_idle"]),
            stop(2000.0, "in_process_teammate", "completed", &[]),
            stop(2000.0, "local_bash", "running", &[]),
        ] {
            let (observed, witness, why) = idle(vec![idle_at(), listed]);
            assert_eq!(observed, "distinguishable", "{why}");
            assert_eq!(witness.len(), 2);
            assert!(why.contains("none of the 1 Stop payloads"), "{why}");
        }
    }

    #[test]
    fn only_stops_while_the_teammate_is_idle_count() {
        let running = |t| stop(t, "in_process_teammate", "running", &[]);
        // Before it went idle, at the same moment, or once it works again: not read.
        for t in [500.0, 1000.0, 3000.0, 3500.0] {
            let (observed, _, why) = idle(vec![
                hook(1000.0, Some("mate"), HookName::TeammateIdle, None),
                request(3000.0, "mate", 1, &[]),
                running(t),
            ]);
            assert_eq!(observed, "not-observed", "Stop at {t}: {why}");
        }
        let (observed, _, _) = idle(vec![
            hook(1000.0, Some("mate"), HookName::TeammateIdle, None),
            request(3000.0, "mate", 1, &[]),
            running(2999.0),
        ]);
        assert_eq!(observed, "indistinguishable");
    }

    /// A request stamped the very millisecond the teammate went idle is the turn that ended
    /// there, not a new one: the Stops after it are still read as the idle teammate's.
    #[test]
    fn a_request_at_the_moment_of_going_idle_is_not_working_again() {
        let (observed, _, why) = idle(vec![
            hook(1000.0, Some("mate"), HookName::TeammateIdle, None),
            request(1000.0, "mate", 1, &[]),
            stop(2000.0, "in_process_teammate", "running", &[]),
        ]);
        assert_eq!(observed, "indistinguishable", "{why}");
    }

    #[test]
    fn going_idle_is_the_teammate_idle_hook_naming_it_else_its_turn_end() {
        let running = || stop(2500.0, "in_process_teammate", "running", &[]);
        // Named by its detail (the hook belongs to no agent), or by its agent.
        for by in [
            hook(2000.0, None, HookName::TeammateIdle, Some("mate")),
            hook(2000.0, Some("mate"), HookName::TeammateIdle, None),
        ] {
            let (observed, witness, why) = idle(vec![turn_end(3000.0, "mate"), by, running()]);
            assert_eq!(observed, "indistinguishable", "{why}");
            assert_eq!(witness[0].t_ms, 2000.0);
        }
        // Another hook, or another teammate's idle: the turn's end, after the Stop.
        for other in [
            hook(2000.0, Some("mate"), HookName::Stop, None),
            hook(2000.0, Some("other"), HookName::TeammateIdle, Some("other")),
        ] {
            let (observed, witness, _) = idle(vec![other, turn_end(3000.0, "mate"), running()]);
            assert_eq!(observed, "not-observed");
            assert_eq!(witness[0].t_ms, 3000.0);
        }
        let (observed, witness, why) = idle(vec![turn_end(1000.0, "someone"), running()]);
        assert_eq!(
            (observed.as_str(), witness.len()),
            ("not-observed", 0),
            "{why}"
        );
        assert!(why.contains("`mate` never went idle"), "{why}");
    }

    /// The preset reaches its native rule (no query says it).
    #[test]
    fn the_idle_teammate_preset_is_observed_by_its_native_rule() {
        let tl = Timeline::new(vec![
            hook(1000.0, Some("mate"), HookName::TeammateIdle, None),
            stop(2000.0, "in_process_teammate", "running", &[]),
        ]);
        let raw = super::super::super::RawSources::default();
        let ev = Evidence {
            timeline: &tl,
            raw: &raw,
            end: crate::evidence::run::EndReason::Finished,
        };
        let seen = super::super::preset(crate::scenario::CheckKind::IdleTeammateDistinguishable)
            .observe(&ev, "mate");
        assert_eq!(seen.observed, "indistinguishable", "{}", seen.explanation);
    }

    fn continuation(events: Vec<Event>) -> (String, Vec<Witness>, String) {
        single_continuation_parts(&Timeline::new(events))
    }

    fn input(t_ms: f64) -> Event {
        ev(
            t_ms,
            Source::Driver,
            Some(MAIN_AGENT),
            EventKind::UserInput {
                text: "next".into(),
                why: InputReason::Scheduled,
            },
        )
    }

    #[test]
    fn one_continuation_carries_the_notification_once() {
        let (observed, witness, why) = continuation(vec![
            request(500.0, MAIN_AGENT, 1, &[]),
            input(800.0),
            request(1000.0, "worker", 1, &["t9"]),
            request(2000.0, MAIN_AGENT, 1, &["t1"]),
            input(2000.0),
            request(3000.0, MAIN_AGENT, 1, &["t2"]),
        ]);
        assert_eq!(observed, "one", "{why}");
        assert_eq!(witness.len(), 1);
        assert!(
            why.contains("at 2.00 s (the last input before it was at 0.80 s)"),
            "{why}"
        );
        let (_, _, why) = continuation(vec![request(2000.0, MAIN_AGENT, 1, &["t1"])]);
        assert!(why.ends_with("at 2.00 s."), "{why}");
    }

    #[test]
    fn a_second_turn_with_the_same_notification_is_a_duplicate() {
        let (observed, witness, why) = continuation(vec![
            request(1000.0, MAIN_AGENT, 1, &["t1", "t2"]),
            request(1500.0, "worker", 1, &["t1"]),
            request(2000.0, MAIN_AGENT, 1, &["t2"]),
        ]);
        assert_eq!(observed, "duplicate", "{why}");
        assert_eq!(witness.len(), 2);
        assert_eq!(witness[1].t_ms, 2000.0);
        assert!(why.starts_with("2 turns"), "{why}");
        let (observed, witness, why) = continuation(vec![request(1000.0, "worker", 1, &["t1"])]);
        assert_eq!((observed.as_str(), witness.len()), ("none", 0), "{why}");
        assert!(why.contains("never received"), "{why}");
    }
}
