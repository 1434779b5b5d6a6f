use super::*;
use crate::evidence::{BackgroundTask, Event, HookName, InputReason, Notification, Route, Source};
use proptest::prelude::*;

fn ev(t: f64, source: Source, agent: Option<&str>, kind: EventKind) -> Event {
    Event {
        t_ms: t,
        source,
        agent: agent.map(str::to_string),
        kind,
    }
}

fn request(t: f64, agent: &str, seq: u64, notified: &[&str]) -> Event {
    ev(
        t,
        Source::Api,
        Some(agent),
        EventKind::ModelRequest {
            seq,
            injected: None,
            tool_errors: vec![],
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

fn track_end(t: f64, exit: ExitDesc) -> Event {
    ev(
        t,
        Source::Os,
        Some("w"),
        EventKind::TrackEnded {
            name: "bg".into(),
            pid: 7,
            exit,
        },
    )
}

/// The shared start: waiter `waiter` starts tracked `bg` (task b1) at `t0`, ends its turn at `t1`.
fn start(waiter: &str, t0: f64, t1: f64) -> Vec<Event> {
    vec![
        request(t0 - 5.0, waiter, 0, &[]),
        ev(
            t0,
            Source::Api,
            Some(waiter),
            EventKind::ToolCall {
                seq: 1,
                tool: "Bash".into(),
                tool_use_id: "toolu_1".into(),
                background: true,
                spawn: None,
                track: Some("bg".into()),
                teammate: None,
                target: None,
                inserted: false,
            },
        ),
        ev(
            t0 + 1.0,
            Source::Stream,
            Some(waiter),
            EventKind::TaskStarted {
                task_id: "b1".into(),
                task_type: "local_bash".into(),
                tool_use_id: Some("toolu_1".into()),
                label: Some("bg".into()),
                description: None,
            },
        ),
        ev(
            t0 + 2.0,
            Source::Os,
            Some(waiter),
            EventKind::TrackStarted {
                name: "bg".into(),
                pid: 7,
            },
        ),
        request(t1 - 1.0, waiter, 2, &[]),
        ev(
            t1,
            Source::Api,
            Some(waiter),
            EventKind::TurnEnded {
                seq: 2,
                text: "I will be re-invoked.".into(),
            },
        ),
    ]
}

fn subagent_stop(t: f64, waiter: &str) -> Vec<Event> {
    vec![
        ev(
            t,
            Source::Hook,
            Some(waiter),
            EventKind::Hook {
                hook: HookName::SubagentStop,
                raw: 0,
                agent_id: Some("a1".into()),
                background_tasks: Some(vec![BackgroundTask {
                    id: "b1".into(),
                    task_type: "shell".into(),
                    status: "running".into(),
                    description: None,
                    other_fields: vec![],
                }]),
                stop_hook_active: Some(false),
                detail: None,
            },
        ),
        ev(
            t,
            Source::Hook,
            Some(waiter),
            EventKind::AgentFinalized {
                hook: HookName::SubagentStop,
            },
        ),
    ]
}

fn judge_events(events: Vec<Event>, waiter: &str, end: EndReason) -> Judgement {
    let timeline = Timeline::new(events);
    let watch = vec![Watch {
        waiter: waiter.into(),
        work: "bg".into(),
        hang_after: None,
    }];
    judge(&Input {
        timeline: &timeline,
        end: &end,
        cli_exit: Some(&ExitDesc::Code(0)),
        watch: &watch,
        checks: &[],
        invariants: &[],
        payloads: &[],
        settle_ms: 2000.0,
    })
}

#[test]
fn the_seed_000_print_mode_stall_is_not_resumable() {
    let mut events = start("worker", 100.0, 200.0);
    events.extend(subagent_stop(210.0, "worker"));
    events.push(ev(
        5200.0,
        Source::Stream,
        Some("worker"),
        EventKind::TaskUpdated {
            task_id: "b1".into(),
            status: "killed".into(),
            label: Some("bg".into()),
        },
    ));
    events.push(track_end(5210.0, ExitDesc::Signal(15)));
    events.push(ev(
        5400.0,
        Source::Os,
        None,
        EventKind::CliExited {
            exit: ExitDesc::Code(0),
        },
    ));
    let j = judge_events(events, "worker", EndReason::Finished);
    assert_eq!(j.outcome, Outcome::NotResumable);
    let v = &j.verdicts[0];
    assert!(
        v.explanation.contains("finalized at 0.21 s"),
        "{}",
        v.explanation
    );
    assert!(
        v.explanation.contains("killed at 5.21 s"),
        "{}",
        v.explanation
    );
    assert!(
        v.facts
            .iter()
            .any(|f| f.contains("listed `bg` (shell) as running")),
        "{:?}",
        v.facts
    );
    assert_eq!(
        v.witness.len(),
        4,
        "start, turn end, stop, kill: {:?}",
        v.witness
    );
}

/// A stop that a hook blocked is not a finalization: the worker asked again after it, so a
/// later kill of its work by the exiting CLI is the session's end, not a consequence of the
/// stop (the facts say which).
#[test]
fn a_waiter_that_asked_again_after_its_stop_was_not_finalized() {
    let mut events = start("worker", 100.0, 200.0);
    events.extend(subagent_stop(210.0, "worker"));
    events.push(request(300.0, "worker", 3, &[]));
    events.push(track_end(5210.0, ExitDesc::Signal(15)));
    events.push(ev(
        5400.0,
        Source::Os,
        None,
        EventKind::CliExited {
            exit: ExitDesc::Code(0),
        },
    ));
    let j = judge_events(events, "worker", EndReason::Finished);
    assert_eq!(j.outcome, Outcome::NotResumable);
    let v = &j.verdicts[0];
    assert!(
        v.facts
            .iter()
            .any(|f| f.contains("and exited at 5.40 s, without `worker` being told")),
        "{:#?}",
        v.facts
    );
    assert!(
        !v.facts.iter().any(|f| f.contains("was finalized")),
        "a blocked stop is no finalization: {:#?}",
        v.facts
    );
}

#[test]
fn a_crash_or_an_exhausted_script_is_unknown_with_its_reason() {
    let mut events = start("main", 100.0, 200.0);
    events.push(track_end(3000.0, ExitDesc::Code(0)));
    events.push(ev(
        3100.0,
        Source::Os,
        None,
        EventKind::CliExited {
            exit: ExitDesc::Signal(11),
        },
    ));
    let timeline = Timeline::new(events);
    let watch = vec![Watch {
        waiter: "main".into(),
        work: "bg".into(),
        hang_after: None,
    }];
    let j = judge(&Input {
        timeline: &timeline,
        end: &EndReason::CliEnded,
        cli_exit: Some(&ExitDesc::Signal(11)),
        watch: &watch,
        checks: &[],
        invariants: &[],
        payloads: &[],
        settle_ms: 2000.0,
    });
    assert_eq!(j.outcome, Outcome::Unknown);
    assert!(
        j.verdicts[0].reason.as_deref().unwrap().contains("SIGSEGV"),
        "{:?}",
        j.verdicts[0].reason
    );

    let mut events = start("main", 100.0, 200.0);
    events.push(ev(
        500.0,
        Source::Api,
        Some("main"),
        EventKind::ModelRequest {
            seq: 9,
            route: Route::ScriptExhausted,
            step: None,
            notifications: vec![],
            injected: None,
            tool_errors: vec![],
        },
    ));
    events.push(track_end(3000.0, ExitDesc::Code(0)));
    let j = judge_events(events, "main", EndReason::Finished);
    assert_eq!(j.outcome, Outcome::Unknown);
    assert!(
        j.verdicts[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("script ran out")
    );
}

#[test]
fn no_background_work_is_unknown() {
    let j = judge(&Input {
        timeline: &Timeline::new(vec![request(1.0, "main", 0, &[])]),
        end: &EndReason::Finished,
        cli_exit: None,
        watch: &[],
        checks: &[],
        invariants: &[],
        payloads: &[],
        settle_ms: 1000.0,
    });
    assert_eq!(j.outcome, Outcome::Unknown);
}

#[test]
fn agreement_reports_flakiness() {
    use Outcome::*;
    assert_eq!(
        agreement(&[NotResumable; 5]),
        (Some(NotResumable), "not-resumable 5/5".into())
    );
    let (o, text) = agreement(&[Woke, NotResumable, Woke]);
    assert_eq!(o, None);
    assert_eq!(text, "flaky: woke 2/3, not-resumable 1/3");
}

/// A generated run: the injected hypothesis, its events, and what the verdict must say: the
/// witness lines (in order) and a fact, each by a phrase it holds.
#[derive(Debug, Clone)]
struct Case {
    expected: Outcome,
    events: Vec<Event>,
    waiter: &'static str,
    end: EndReason,
    witness: Vec<&'static str>,
    fact: &'static str,
}

fn noise(times: Vec<f64>, waiter: &'static str, before: f64) -> Vec<Event> {
    times
        .into_iter()
        .enumerate()
        .map(|(i, t)| match i % 4 {
            0 => ev(
                t,
                Source::Stream,
                None,
                EventKind::StreamLine {
                    line_type: "system".into(),
                    subtype: Some("task_progress".into()),
                },
            ),
            1 => ev(
                t,
                Source::Hook,
                Some("main"),
                EventKind::Hook {
                    hook: HookName::PreToolUse,
                    raw: i,
                    agent_id: None,
                    background_tasks: None,
                    stop_hook_active: None,
                    detail: None,
                },
            ),
            2 => request(t, "bystander", 50 + i as u64, &[]),
            // The waiter's own requests are noise only before its turn ends.
            _ => {
                if t < before {
                    request(t, waiter, 70 + i as u64, &[])
                } else {
                    ev(
                        t,
                        Source::Stream,
                        None,
                        EventKind::StreamLine {
                            line_type: "assistant".into(),
                            subtype: None,
                        },
                    )
                }
            }
        })
        .collect()
}

fn case_strategy() -> impl Strategy<Value = Case> {
    let waiter = prop_oneof![Just("main"), Just("worker")];
    (
        0usize..7,
        waiter,
        10.0f64..500.0,    // t0
        10.0f64..2000.0,   // turn-end gap
        50.0f64..20_000.0, // work duration after the turn end
        1.0f64..3000.0,    // reaction latency
        prop::collection::vec(0.0f64..40_000.0, 0..12),
        any::<bool>(),
    )
        .prop_map(
            |(kind, waiter, t0, gap, work, latency, noise_times, variant)| {
                let t1 = t0 + gap;
                let t2 = t1 + work;
                let mut events = start(waiter, t0, t1);
                let end_t = t2 + latency + 5000.0;
                let mut end = EndReason::Finished;
                let mut witness = vec!["starts `bg` in the background", "ends its turn"];
                let fact;
                let expected = match kind {
                    0 => {
                        events.push(track_end(t2, ExitDesc::Code(0)));
                        events.push(request(t2 + latency, waiter, 3, &["b1"]));
                        witness.extend(["`bg` completes", "gets `bg`'s notification"]);
                        fact = "received `bg`'s notification";
                        Outcome::Woke
                    }
                    1 => {
                        events.push(track_end(t2, ExitDesc::Code(0)));
                        witness.push("`bg` completes");
                        fact = "no notification for `bg` appeared anywhere";
                        Outcome::NeverFired
                    }
                    2 => {
                        // H2: finalized, then killed (or completed with only a stdout notification).
                        if waiter == "main" {
                            events.push(ev(
                                t1 + 1.0,
                                Source::Hook,
                                None,
                                EventKind::Hook {
                                    hook: HookName::SessionEnd,
                                    raw: 1,
                                    agent_id: None,
                                    background_tasks: None,
                                    stop_hook_active: None,
                                    detail: None,
                                },
                            ));
                        } else {
                            events.extend(subagent_stop(t1 + 1.0, waiter));
                        }
                        witness.push(if waiter == "main" {
                            "SessionEnd: the session ends"
                        } else {
                            "SubagentStop for `worker`"
                        });
                        if variant {
                            events.push(track_end(t2, ExitDesc::Signal(15)));
                            witness.push("`bg` is killed (SIGTERM)");
                            fact = "made no model request after it was finalized";
                        } else {
                            witness.push("`bg` completes");
                            fact = "before `bg` ended";
                            events.push(track_end(t2, ExitDesc::Code(0)));
                            events.push(ev(
                                t2 + 1.0,
                                Source::Stream,
                                None,
                                EventKind::TaskNotified {
                                    task_id: "b1".into(),
                                    status: "completed".into(),
                                    label: Some("bg".into()),
                                    summary: None,
                                },
                            ));
                        }
                        Outcome::NotResumable
                    }
                    3 => {
                        events.push(track_end(t2, ExitDesc::Code(0)));
                        let probe = t2 + 2500.0 + latency;
                        events.push(ev(
                            probe,
                            Source::Driver,
                            Some("main"),
                            EventKind::UserInput {
                                text: "unrelated".into(),
                                why: InputReason::Probe,
                            },
                        ));
                        events.push(request(probe + latency, waiter, 3, &["b1"]));
                        witness.extend([
                            "`bg` completes",
                            "the driver sends a probe input",
                            "gets `bg`'s notification",
                        ]);
                        fact = "stayed silent for";
                        Outcome::QueuedUntilInput
                    }
                    4 => {
                        events.push(track_end(t2, ExitDesc::Code(1 + (latency as i32 % 200))));
                        witness.push("`bg` fails (exit code");
                        if variant {
                            events.push(request(t2 + latency, waiter, 3, &["b1"]));
                            witness.push("is told of the failure");
                        }
                        fact = "failed on its own";
                        Outcome::ChildFailed
                    }
                    5 => {
                        // H4 hang: still running past the bound its scenario declares.
                        events.push(ev(
                            end_t,
                            Source::Driver,
                            None,
                            EventKind::WorkOverdue {
                                work: "bg".into(),
                                bound_s: end_t / 1000.0,
                            },
                        ));
                        end = EndReason::WorkHung;
                        witness.push("passes its");
                        fact = "hung: still running past";
                        Outcome::ChildFailed
                    }
                    _ => {
                        // Still running when the ceiling cut the run short: nothing decided.
                        events.push(ev(
                            end_t,
                            Source::Driver,
                            None,
                            EventKind::CeilingHit {
                                ceiling_s: end_t / 1000.0,
                            },
                        ));
                        end = EndReason::Ceiling;
                        witness.push("ceiling ends the run");
                        fact = "";
                        Outcome::Unknown
                    }
                };
                // Noise lands anywhere before the run's end; the waiter's own requests only before
                // its turn ends (a later one would be a real activation, not noise).
                events.extend(noise(
                    noise_times
                        .into_iter()
                        .filter(|t| *t < end_t - 1.0)
                        .collect(),
                    waiter,
                    t1 - 1.0,
                ));
                if end == EndReason::Finished {
                    events.push(ev(
                        end_t + 10.0,
                        Source::Os,
                        None,
                        EventKind::CliExited {
                            exit: ExitDesc::Code(0),
                        },
                    ));
                }
                Case {
                    expected,
                    events,
                    waiter,
                    end,
                    witness,
                    fact,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_injected_hypothesis_is_recovered(case in case_strategy()) {
                let j = judge_events(case.events.clone(), case.waiter, case.end);
        prop_assert_eq!(j.outcome, case.expected, "{:#?}", j.verdicts);
        let v = &j.verdicts[0];
        prop_assert!(!v.explanation.is_empty());
        // The minimal witness: exactly the decisive events, in order.
        let lines: Vec<&str> = v.witness.iter().map(|w| w.what.as_str()).collect();
        prop_assert_eq!(lines.len(), case.witness.len(), "{:#?}", lines);
        for (line, phrase) in lines.iter().zip(&case.witness) {
            prop_assert!(line.contains(phrase), "`{}` should say `{}`: {:#?}", line, phrase, lines);
        }
        prop_assert!(v.witness.windows(2).all(|w| w[0].t_ms <= w[1].t_ms), "{:#?}", v.witness);
        match case.expected {
            Outcome::Unknown => prop_assert!(v.reason.as_deref().is_some_and(|r| r.contains("cut short")), "{:?}", v.reason),
            _ => prop_assert!(v.facts.iter().any(|f| f.contains(case.fact)), "`{}` in {:#?}", case.fact, v.facts),
        }
    }

    /// Shuffling the arrival order of events with equal times changes nothing.
    #[test]
    fn arrival_order_of_simultaneous_events_does_not_matter(case in case_strategy()) {
        let a = judge_events(case.events.clone(), case.waiter, case.end);
        let mut reversed = case.events.clone();
        reversed.reverse();
        let b = judge_events(reversed, case.waiter, case.end);
        prop_assert_eq!(a.outcome, b.outcome);
    }

    #[test]
    fn arbitrary_sequences_never_panic(events in prop::collection::vec(arbitrary_event(), 0..40)) {
        let j = judge_events(events.clone(), "worker", EndReason::Finished);
        prop_assert!(!j.verdicts.is_empty());
        // Without any start of the watched work the evidence cannot decide.
        let started = events.iter().any(|e| matches!(&e.kind,
            EventKind::ToolCall { track: Some(t), .. } if t == "bg")
            || matches!(&e.kind, EventKind::TaskStarted { label: Some(l), .. } if l == "bg")
            || matches!(&e.kind, EventKind::TrackStarted { name, .. } if name == "bg"));
        if !started {
            prop_assert_eq!(j.outcome, Outcome::Unknown);
        }
        let _ = judge(&Input { timeline: &Timeline::new(events), end: &EndReason::Ceiling, cli_exit: None, watch: &[], checks: &[], invariants: &[], payloads: &[], settle_ms: 0.0 });
    }
}

fn arbitrary_event() -> impl Strategy<Value = Event> {
    let agent = prop_oneof![Just(None), Just(Some("main")), Just(Some("worker"))];
    let kind = prop_oneof![
        (0u64..5, any::<bool>()).prop_map(|(seq, n)| EventKind::ModelRequest {
            seq,
            injected: None,
            tool_errors: vec![],
            route: if n {
                Route::Turn
            } else {
                Route::ScriptExhausted
            },
            step: None,
            notifications: if n {
                vec![Notification {
                    task_id: "b1".into(),
                    status: None,
                    tool_use_id: None,
                    event: None,
                }]
            } else {
                vec![]
            }
        }),
        any::<bool>().prop_map(|b| EventKind::ToolCall {
            seq: 1,
            tool: "Bash".into(),
            tool_use_id: "t".into(),
            background: b,
            spawn: None,
            track: Some("bg".into()),
            teammate: None,
            target: None,
            inserted: false,
        }),
        Just(EventKind::TaskStarted {
            task_id: "b1".into(),
            task_type: "local_bash".into(),
            tool_use_id: None,
            label: Some("bg".into()),
            description: None
        }),
        prop_oneof![
            Just("completed"),
            Just("killed"),
            Just("failed"),
            Just("running")
        ]
        .prop_map(|s| EventKind::TaskUpdated {
            task_id: "b1".into(),
            status: s.into(),
            label: Some("bg".into())
        }),
        Just(EventKind::TaskNotified {
            task_id: "b1".into(),
            status: "completed".into(),
            label: None,
            summary: None
        }),
        (-3i32..3).prop_map(|c| EventKind::TrackEnded {
            name: "bg".into(),
            pid: 1,
            exit: if c < 0 {
                ExitDesc::Signal(-c)
            } else {
                ExitDesc::Code(c)
            }
        }),
        Just(EventKind::AgentFinalized {
            hook: HookName::SubagentStop
        }),
        Just(EventKind::TurnEnded {
            seq: 1,
            text: String::new()
        }),
        Just(EventKind::UserInput {
            text: "x".into(),
            why: InputReason::Probe
        }),
        Just(EventKind::CliExited {
            exit: ExitDesc::Code(0)
        }),
        Just(EventKind::CeilingHit { ceiling_s: 1.0 }),
        Just(EventKind::Hook {
            hook: HookName::SubagentStart,
            raw: 0,
            agent_id: None,
            background_tasks: None,
            stop_hook_active: None,
            detail: None
        }),
    ];
    (0.0f64..10_000.0, agent, kind).prop_map(|(t, agent, kind)| ev(t, Source::Api, agent, kind))
}

/// The request that carries the notice reached the fake API 10 ms before the stdout line that
/// reports the end (two channels, read apart): the waiter was told, with no negative latency.
#[test]
fn a_notice_that_beats_the_stdout_end_line_is_still_a_wake_up() {
    let mut events = start("main", 100.0, 200.0);
    events.push(request(990.0, "main", 3, &["b1"]));
    events.push(ev(
        1000.0,
        Source::Stream,
        Some("main"),
        EventKind::TaskUpdated {
            task_id: "b1".into(),
            status: "completed".into(),
            label: Some("bg".into()),
        },
    ));
    events.push(ev(
        4000.0,
        Source::Os,
        None,
        EventKind::CliExited {
            exit: ExitDesc::Code(0),
        },
    ));
    let j = judge_events(events, "main", EndReason::CliEnded);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::Woke, "{}", v.explanation);
    assert_eq!(v.latency_ms, Some(0.0));
    assert!(v.explanation.contains("two channels"), "{}", v.explanation);
}
