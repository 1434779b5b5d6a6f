use super::*;
use crate::evidence::test_events::{call, ev, request};
use crate::evidence::{BackgroundTask, Event, HookName, InputReason, Notification, Route, Source};
use proptest::prelude::*;

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
                stops_task: None,
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
        raw: &Default::default(),
        settle_ms: 2000.0,
        offers: &crate::evidence::offers::Offers::all(),
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
        raw: &Default::default(),
        settle_ms: 2000.0,
        offers: &crate::evidence::offers::Offers::all(),
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
            user_text: vec![],
            answer_lost: false,
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
        raw: &Default::default(),
        settle_ms: 1000.0,
        offers: &crate::evidence::offers::Offers::all(),
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
                EventKind::hook(HookName::PreToolUse, i, None),
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

/// One draw of the generator: when the work starts, when the turn ends, when the work ends and
/// how long the waiter takes to react.
#[derive(Debug, Clone, Copy)]
struct Draw {
    waiter: &'static str,
    t1: f64,
    t2: f64,
    latency: f64,
    end_t: f64,
    variant: bool,
}

/// What one hypothesis adds to the common start: its events, witness phrases, fact and end.
struct Shape {
    events: Vec<Event>,
    witness: Vec<&'static str>,
    fact: &'static str,
    expected: Outcome,
    end: EndReason,
}

impl Shape {
    fn new(expected: Outcome, fact: &'static str) -> Self {
        Shape {
            events: Vec::new(),
            witness: Vec::new(),
            fact,
            expected,
            end: EndReason::Finished,
        }
    }
}

fn woke_shape(d: Draw) -> Shape {
    let mut s = Shape::new(Outcome::Woke, "received `bg`'s notification");
    s.events.push(track_end(d.t2, ExitDesc::Code(0)));
    s.events
        .push(request(d.t2 + d.latency, d.waiter, 3, &["b1"]));
    s.witness
        .extend(["`bg` completes", "gets `bg`'s notification"]);
    s
}

fn never_fired_shape(d: Draw) -> Shape {
    let mut s = Shape::new(
        Outcome::NeverFired,
        "no notification for `bg` appeared anywhere",
    );
    s.events.push(track_end(d.t2, ExitDesc::Code(0)));
    s.witness.push("`bg` completes");
    s
}

/// H2: finalized, then killed (or completed with only a stdout notification).
fn not_resumable_shape(d: Draw) -> Shape {
    let mut s = Shape::new(Outcome::NotResumable, "");
    if d.waiter == "main" {
        s.events.push(ev(
            d.t1 + 1.0,
            Source::Hook,
            None,
            EventKind::hook(HookName::SessionEnd, 1, None),
        ));
        s.witness.push("SessionEnd: the session ends");
    } else {
        s.events.extend(subagent_stop(d.t1 + 1.0, d.waiter));
        s.witness.push("SubagentStop for `worker`");
    }
    if d.variant {
        s.events.push(track_end(d.t2, ExitDesc::Signal(15)));
        s.witness.push("`bg` is killed (SIGTERM)");
        s.fact = "made no model request after it was finalized";
    } else {
        s.events.push(track_end(d.t2, ExitDesc::Code(0)));
        s.events.push(ev(
            d.t2 + 1.0,
            Source::Stream,
            None,
            EventKind::TaskNotified {
                task_id: "b1".into(),
                status: "completed".into(),
                label: Some("bg".into()),
                summary: None,
            },
        ));
        s.witness.push("`bg` completes");
        s.fact = "before `bg` ended";
    }
    s
}

fn queued_shape(d: Draw) -> Shape {
    let mut s = Shape::new(Outcome::QueuedUntilInput, "also carried the input");
    s.events.push(track_end(d.t2, ExitDesc::Code(0)));
    let probe = d.t2 + 2500.0 + d.latency;
    s.events.push(ev(
        probe,
        Source::Driver,
        Some("main"),
        EventKind::UserInput {
            text: "unrelated".into(),
            why: InputReason::Probe,
        },
    ));
    let told = request(probe + d.latency, d.waiter, 3, &["b1"]);
    if d.waiter == "main" {
        s.events.push(carrying(told, "unrelated"));
    } else {
        // The input reaches the main agent; the waiting subagent is told after it.
        s.events
            .push(carrying(request(probe + 1.0, "main", 90, &[]), "unrelated"));
        s.events.push(told);
        s.fact = "stayed silent from `bg`'s end";
    }
    s.witness.extend([
        "`bg` completes",
        "the driver sends a probe input",
        "gets `bg`'s notification",
    ]);
    s
}

fn child_failed_shape(d: Draw) -> Shape {
    let mut s = Shape::new(Outcome::ChildFailed, "failed on its own");
    let code = 1 + (d.latency as i32 % 200);
    s.events.push(track_end(d.t2, ExitDesc::Code(code)));
    s.witness.push("`bg` fails (exit code");
    if d.variant {
        s.events
            .push(request(d.t2 + d.latency, d.waiter, 3, &["b1"]));
        s.witness.push("is told of the failure");
    }
    s
}

/// H4 hang: still running past the bound its scenario declares.
fn hung_shape(d: Draw) -> Shape {
    let mut s = Shape::new(Outcome::ChildFailed, "hung: still running past");
    s.events.push(ev(
        d.end_t,
        Source::Driver,
        None,
        EventKind::WorkOverdue {
            work: "bg".into(),
            // Its bound passed by the end of the run: the work starts before the turn ends.
            bound_s: (d.end_t - d.t1) / 1000.0,
        },
    ));
    s.witness.push("passes its");
    s.end = EndReason::WorkHung;
    s
}

/// Still running when the ceiling cut the run short: nothing decided.
fn cut_short_shape(d: Draw) -> Shape {
    let mut s = Shape::new(Outcome::Unknown, "");
    s.events.push(ev(
        d.end_t,
        Source::Driver,
        None,
        EventKind::CeilingHit {
            ceiling_s: d.end_t / 1000.0,
        },
    ));
    s.witness.push("ceiling ends the run");
    s.end = EndReason::Ceiling;
    s
}

const SHAPES: [fn(Draw) -> Shape; 7] = [
    woke_shape,
    never_fired_shape,
    not_resumable_shape,
    queued_shape,
    child_failed_shape,
    hung_shape,
    cut_short_shape,
];

/// Builds the whole run: the common start, the hypothesis's shape, noise, and the CLI's exit
/// when the run finished on its own.
fn build_case(kind: usize, d: Draw, t0: f64, noise_times: Vec<f64>) -> Case {
    let shape = SHAPES[kind](d);
    let mut events = start(d.waiter, t0, d.t1);
    events.extend(shape.events);
    // Noise lands anywhere before the run's end; the waiter's own requests only before its turn
    // ends (a later one would be a real activation, not noise).
    let before_end: Vec<f64> = noise_times
        .into_iter()
        .filter(|t| *t < d.end_t - 1.0)
        .collect();
    events.extend(noise(before_end, d.waiter, d.t1 - 1.0));
    if shape.end == EndReason::Finished {
        events.push(ev(
            d.end_t + 10.0,
            Source::Os,
            None,
            EventKind::CliExited {
                exit: ExitDesc::Code(0),
            },
        ));
    }
    let mut witness = vec!["starts `bg` in the background", "ends its turn"];
    witness.extend(shape.witness);
    Case {
        expected: shape.expected,
        events,
        waiter: d.waiter,
        end: shape.end,
        witness,
        fact: shape.fact,
    }
}

fn case_strategy() -> impl Strategy<Value = Case> {
    case_strategy_of(0..SHAPES.len())
}

/// Cases of the shapes in `kinds` (indexes into [`SHAPES`]).
fn case_strategy_of(kinds: std::ops::Range<usize>) -> impl Strategy<Value = Case> {
    let waiter = prop_oneof![Just("main"), Just("worker")];
    (
        kinds,
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
                let draw = Draw {
                    waiter,
                    t1,
                    t2,
                    latency,
                    end_t: t2 + latency + 5000.0,
                    variant,
                };
                build_case(kind, draw, t0, noise_times)
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
        // A hang names the bound its scenario declared.
        if let Some(bound) = case.events.iter().find_map(|e| match &e.kind {
            EventKind::WorkOverdue { bound_s, .. } => Some(*bound_s),
            _ => None,
        }) {
            let named = format!("past the {bound:.1} s hang bound");
            prop_assert!(v.explanation.contains(&named), "`{}` in {}", named, v.explanation);
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
            EventKind::ToolCall { track: Some(t), .. } | EventKind::ToolCall { spawn: Some(t), .. } if t == "bg")
            || matches!(&e.kind, EventKind::TaskStarted { label: Some(l), .. } if l == "bg")
            || matches!(&e.kind, EventKind::TrackStarted { name, .. } if name == "bg"));
        if !started {
            prop_assert_eq!(j.outcome, Outcome::Unknown);
        }
        let _ = judge(&Input { timeline: &Timeline::new(events), end: &EndReason::Ceiling, cli_exit: None, watch: &[], checks: &[], invariants: &[], raw: &Default::default(), settle_ms: 0.0, offers: &crate::evidence::offers::Offers::all() });
    }
}

fn arbitrary_event() -> impl Strategy<Value = Event> {
    // `bg` as an agent too: the work spawned as a background agent, with events of its own.
    let agent = prop_oneof![
        Just(None),
        Just(Some("main")),
        Just(Some("worker")),
        Just(Some("bg"))
    ];
    let kind = prop_oneof![base_kind(), rarer_kind()];
    (0.0f64..10_000.0, agent, kind).prop_map(|(t, agent, kind)| ev(t, Source::Api, agent, kind))
}

/// Kinds the rules and the self-check read less often: a work agent's own events, the
/// harness's marks (timers, stalls, faults, restarts), other notices.
fn rarer_kind() -> impl Strategy<Value = EventKind> {
    prop_oneof![
        Just(EventKind::WorkOverdue {
            work: "bg".into(),
            bound_s: 3.0
        }),
        (0.0f64..10_000.0).prop_map(|until_ms| EventKind::HarnessStalled { until_ms }),
        Just(EventKind::WorkSignalled {
            work: "bg".into(),
            fault: crate::scenario::FaultKind::KillTask,
            signal: "SIGKILL".into(),
            pids: vec![1],
        }),
        prop_oneof![
            Just("killed"),
            Just("failed"),
            Just("stopped"),
            Just("running")
        ]
        .prop_map(|s| EventKind::TaskNotified {
            task_id: "b1".into(),
            status: s.into(),
            label: None,
            summary: None
        }),
        Just(EventKind::ToolCall {
            seq: 1,
            tool: "Agent".into(),
            tool_use_id: "a".into(),
            background: true,
            spawn: Some("bg".into()),
            track: None,
            teammate: None,
            target: None,
            inserted: false,
        }),
        Just(EventKind::TrackStarted {
            name: "bg".into(),
            pid: 1
        }),
        Just(EventKind::UserInput {
            text: "x".into(),
            why: InputReason::Scheduled
        }),
    ]
}

fn base_kind() -> impl Strategy<Value = EventKind> {
    prop_oneof![
        (0u64..5, any::<bool>()).prop_map(|(seq, n)| EventKind::ModelRequest {
            seq,
            injected: None,
            tool_errors: vec![],
            user_text: vec![],
            answer_lost: false,
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
        Just(EventKind::hook(HookName::SubagentStart, 0, None)),
    ]
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

#[test]
fn pairs_are_derived_from_background_calls_once_each_in_order() {
    let events = vec![
        call(1.0, Some("main"), true, Some("worker"), None),
        call(2.0, Some("worker"), true, None, Some("bg")),
        // Not handed to the background: no pair.
        call(3.0, Some("main"), false, None, Some("fg")),
        // The same work started again by someone else: the first waiter keeps it.
        call(4.0, Some("main"), true, None, Some("bg")),
        // A call of no known agent: no waiter, no pair.
        call(5.0, None, true, None, Some("orphan")),
        // A background call that starts no named work.
        call(6.0, Some("main"), true, None, None),
    ];
    let pairs: Vec<(String, String, bool)> = derive_pairs(&Timeline::new(events))
        .into_iter()
        .map(|w| (w.waiter, w.work, w.hang_after.is_none()))
        .collect();
    assert_eq!(
        pairs,
        vec![
            ("main".to_string(), "worker".to_string(), true),
            ("worker".to_string(), "bg".to_string(), true),
        ]
    );
}

fn verdict_of(work: &str, outcome: Outcome) -> Verdict {
    Verdict {
        waiter: "main".into(),
        work: work.into(),
        outcome,
        latency_ms: None,
        reason: None,
        witness: vec![],
        explanation: String::new(),
        facts: vec![],
        contradiction: None,
    }
}

fn check_that(passed: Option<bool>) -> crate::checks::CheckResult {
    crate::checks::CheckResult {
        name: "c".into(),
        kind: "query:count".into(),
        agent: None,
        observed: "1".into(),
        expected: None,
        passed,
        want: None,
        meets_want: None,
        witness: vec![],
        explanation: String::new(),
        matched: vec![],
        vacuous: false,
        may_break: None,
        describes: None,
        layer: None,
    }
}

#[test]
fn the_primary_verdict_is_the_first_that_did_not_wake_else_the_first() {
    let judgement = |verdicts| Judgement {
        outcome: Outcome::Woke,
        verdicts,
        checks: vec![],
        invariants: vec![],
        rejected_lines: vec![],
        faults: vec![],
    };
    let mixed = judgement(vec![
        verdict_of("a", Outcome::Woke),
        verdict_of("b", Outcome::NotResumable),
        verdict_of("c", Outcome::NeverFired),
    ]);
    assert_eq!(mixed.primary().unwrap().work, "b");
    let all_woke = judgement(vec![
        verdict_of("a", Outcome::Woke),
        verdict_of("b", Outcome::Woke),
    ]);
    assert_eq!(all_woke.primary().unwrap().work, "a");
    assert!(judgement(vec![]).primary().is_none());
}

#[test]
fn checks_pass_unless_one_with_an_expectation_failed() {
    let with = |checks| Judgement {
        outcome: Outcome::Woke,
        verdicts: vec![],
        checks,
        invariants: vec![],
        rejected_lines: vec![],
        faults: vec![],
    };
    assert!(with(vec![]).checks_pass());
    assert!(with(vec![check_that(Some(true)), check_that(None)]).checks_pass());
    assert!(!with(vec![check_that(Some(true)), check_that(Some(false))]).checks_pass());
}

/// An event of the harness's own (a cut, an overdue bound), of no agent.
fn driver_event(t: f64, kind: EventKind) -> Event {
    ev(t, Source::Driver, None, kind)
}

fn cli_exit(t: f64, exit: ExitDesc) -> Event {
    ev(t, Source::Os, None, EventKind::CliExited { exit })
}

/// A saved run's plan declares its settle window in seconds; `judge_run` judges with it: a run
/// that went on 2.5 s after the work ended is too short for a 3 s window.
#[test]
fn judge_run_holds_the_run_to_its_plans_settle_window() {
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/seed000-print");
    let read = |name: &str| std::fs::read_to_string(fixture.join(name)).unwrap();
    let info: RunInfo = serde_json::from_str(&read("run.json")).unwrap();
    let mut plan: Plan = serde_json::from_str(&read("plan.json")).unwrap();
    plan.watch = vec![Watch {
        waiter: "main".into(),
        work: "bg".into(),
        hang_after: None,
    }];
    plan.driver.settle = std::time::Duration::from_secs(3);
    let mut events = start("main", 100.0, 200.0);
    events.push(track_end(1000.0, ExitDesc::Code(0)));
    events.push(cli_exit(3500.0, ExitDesc::Code(0)));
    let j = judge_run(&info, &Timeline::new(events), &plan, &Default::default());
    assert_eq!(j.outcome, Outcome::Unknown, "{:#?}", j.verdicts);
    assert_eq!(
        j.verdicts[0].reason.as_deref(),
        Some("the run ended 2.50 s after `bg` did, less than the 3.00 s settle window")
    );
    // Exactly the window is enough to decide.
    let mut events = start("main", 100.0, 200.0);
    events.push(track_end(1000.0, ExitDesc::Code(0)));
    events.push(cli_exit(4000.0, ExitDesc::Code(0)));
    let j = judge_run(&info, &Timeline::new(events), &plan, &Default::default());
    assert_eq!(j.outcome, Outcome::NeverFired, "{:#?}", j.verdicts);
}

/// The witness lines and the reason of a verdict on `bg` still running when the run ended with
/// `cut` (at 5 s) for the given reason.
fn cut_while_running(cut: Event, end: EndReason) -> (Vec<String>, String) {
    let mut events = start("main", 100.0, 200.0);
    events.push(cut);
    let j = judge_events(events, "main", end);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::Unknown, "{}", v.explanation);
    let lines = v.witness.iter().map(|w| w.what.clone()).collect();
    (lines, v.reason.clone().unwrap_or_default())
}

/// Whatever cut the run short, the verdict names it: its witness line says how the run ended,
/// its reason says what cut it (a ceiling, a signal to the harness, the harness's own failure).
#[test]
fn a_run_cut_short_names_what_cut_it() {
    let cases = [
        (
            driver_event(5000.0, EventKind::CeilingHit { ceiling_s: 30.0 }),
            EndReason::Ceiling,
            "the 30 s ceiling ends the run",
            "its 30 s ceiling",
        ),
        (
            driver_event(
                5000.0,
                EventKind::Interrupted {
                    signal: Some("SIGINT".into()),
                },
            ),
            EndReason::Interrupted,
            "the run is interrupted (SIGINT)",
            "SIGINT to the harness",
        ),
        (
            driver_event(5000.0, EventKind::Interrupted { signal: None }),
            EndReason::Interrupted,
            "the run is interrupted",
            "an interruption",
        ),
        (
            driver_event(
                5000.0,
                EventKind::HarnessFailed {
                    what: "the fake API stopped".into(),
                },
            ),
            EndReason::HarnessFailed,
            "the harness fails: the fake API stopped",
            "the harness failed: the fake API stopped",
        ),
        // A late signal leaves no cut event: the CLI's exit is the cut.
        (
            cli_exit(5000.0, ExitDesc::Signal(libc::SIGINT)),
            EndReason::Interrupted,
            "the CLI exits (SIGINT)",
            "a signal, as the CLI exited (SIGINT)",
        ),
    ];
    for (cut, end, line, what) in cases {
        let (lines, reason) = cut_while_running(cut, end);
        assert_eq!(lines.last().map(String::as_str), Some(line), "{lines:#?}");
        assert_eq!(
            reason,
            format!(
                "the run was cut short at 5.00 s ({what}) before `bg` ended; what the CLI would have done next was not observed"
            )
        );
    }
}

/// A signal to the whole process tree reaches the work before the harness hears of it: the
/// CLI's own report of the killed or failed task in those moments (a `task_notification`, as
/// the tracker's exit) is the signal's doing, not the work's end, so the run was cut before
/// `bg` ended (seen in CI: both at 1.91 s).
#[test]
fn the_clis_report_of_a_task_the_signal_killed_is_not_the_works_end() {
    for status in ["killed", "failed", "stopped"] {
        let mut events = start("main", 100.0, 200.0);
        events.push(ev(
            1905.0,
            Source::Stream,
            None,
            EventKind::TaskNotified {
                task_id: "b1".into(),
                status: status.into(),
                label: Some("bg".into()),
                summary: None,
            },
        ));
        events.push(driver_event(
            1910.0,
            EventKind::Interrupted {
                signal: Some("SIGTERM".into()),
            },
        ));
        let j = judge_events(events, "main", EndReason::Interrupted);
        let v = &j.verdicts[0];
        assert_eq!(v.outcome, Outcome::Unknown, "{status}: {}", v.explanation);
        assert!(
            v.reason
                .as_deref()
                .is_some_and(|r| r.contains("(SIGTERM to the harness) before `bg` ended")),
            "{status}: {:?}",
            v.reason
        );
    }
}

/// A tracked command is no agent: an agent of the same name answering is not its end, for the
/// rules and for the self-check alike (the proptest's minimal case, once the two disagreed).
#[test]
fn an_agents_final_answer_ends_only_the_agent_of_that_name() {
    let events = vec![
        request(0.0, "bg", 0, &[]),
        ev(
            0.0,
            Source::Api,
            None,
            EventKind::ToolCall {
                seq: 1,
                tool: "Bash".into(),
                tool_use_id: "t".into(),
                background: false,
                spawn: None,
                track: Some("bg".into()),
                teammate: None,
                target: None,
                inserted: false,
            },
        ),
        ev(
            4817.9,
            Source::Api,
            Some("bg"),
            EventKind::TurnEnded {
                seq: 1,
                text: String::new(),
            },
        ),
        cli_exit(6660.3, ExitDesc::Code(0)),
    ];
    let j = judge_events(events, "main", EndReason::Finished);
    assert!(j.contradictions().is_empty(), "{:#?}", j.verdicts);
}

/// Work never started because the script called a tool this CLI does not offer: the reason
/// says which tool and which CLI.
#[test]
fn work_never_started_for_want_of_a_tool_says_which() {
    let events = vec![
        request(10.0, "main", 0, &[]),
        driver_event(
            50.0,
            EventKind::ToolUnavailable {
                tool: "TaskStop".into(),
                cli: Some("2.1.228".into()),
            },
        ),
    ];
    let j = judge_events(events, "main", EndReason::ToolUnavailable);
    assert_eq!(
        j.verdicts[0].reason.as_deref(),
        Some("`bg` never started: 2.1.228 offers no TaskStop tool, which the script calls")
    );
}

/// A ceiling that ends the run before the work's start is seen is the reason, not a claim
/// that the work never started.
#[test]
fn a_cut_before_the_start_names_the_cut() {
    let events = vec![
        request(10.0, "main", 0, &[]),
        driver_event(12000.0, EventKind::CeilingHit { ceiling_s: 12.0 }),
        cli_exit(12100.0, ExitDesc::Signal(libc::SIGTERM)),
    ];
    let j = judge_events(events, "main", EndReason::Ceiling);
    assert_eq!(j.outcome, Outcome::Unknown);
    assert_eq!(
        j.verdicts[0].reason.as_deref(),
        Some("the run was cut short at 12.00 s (its 12 s ceiling) before `bg` started")
    );
}

/// A tool the CLI lacks ends the run as any cut does: the work ended, but what the waiter
/// would have been told after the cut was not observed, so nothing is decided.
#[test]
fn a_missing_tool_after_the_work_ended_decides_nothing() {
    let mut events = start("main", 100.0, 200.0);
    events.push(track_end(1000.0, ExitDesc::Code(0)));
    events.push(driver_event(
        5000.0,
        EventKind::ToolUnavailable {
            tool: "Monitor".into(),
            cli: Some("2.1.228".into()),
        },
    ));
    events.push(cli_exit(5100.0, ExitDesc::Signal(libc::SIGTERM)));
    let j = judge_events(events, "main", EndReason::ToolUnavailable);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::Unknown, "{}", v.explanation);
    let reason = v.reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains("2.1.228 offers no Monitor tool"),
        "{reason}"
    );
    assert_eq!(
        v.witness.last().map(|w| w.what.as_str()),
        Some("2.1.228 offers no Monitor tool, which the script calls; the harness ends the run")
    );
}

/// An agent handed to the background in a session that prints no task lines (interactive):
/// its end cannot be seen, so nothing is decided; with the task lines, the usual rules apply.
#[test]
fn an_agents_end_in_a_session_without_task_lines_is_unknown() {
    let spawn = |t: f64| {
        ev(
            t,
            Source::Api,
            Some("main"),
            EventKind::ToolCall {
                seq: 1,
                tool: "Agent".into(),
                tool_use_id: "toolu_1".into(),
                background: true,
                spawn: Some("bg".into()),
                track: None,
                teammate: None,
                target: None,
                inserted: false,
            },
        )
    };
    let events = vec![
        request(10.0, "main", 0, &[]),
        spawn(20.0),
        request(300.0, "main", 1, &[]),
        cli_exit(5000.0, ExitDesc::Code(0)),
    ];
    let j = judge_events(events.clone(), "main", EndReason::Finished);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::Unknown, "{}", v.explanation);
    assert!(
        v.reason
            .as_deref()
            .is_some_and(|r| r.contains("printed no task lines")),
        "{:?}",
        v.reason
    );
    let mut printed = events;
    printed.insert(
        2,
        ev(
            25.0,
            Source::Stream,
            Some("main"),
            EventKind::TaskStarted {
                task_id: "a1".into(),
                task_type: "local_agent".into(),
                tool_use_id: Some("toolu_1".into()),
                label: Some("bg".into()),
                description: None,
            },
        ),
    );
    let j = judge_events(printed, "main", EndReason::Finished);
    assert_ne!(
        j.verdicts[0].outcome,
        Outcome::Unknown,
        "{:?}",
        j.verdicts[0]
    );
    // A command's end (or its still running at the exit) is its tracker's, task lines or not.
    let command: Vec<Event> = start("main", 100.0, 200.0)
        .into_iter()
        .filter(|e| e.source != Source::Stream)
        .chain([cli_exit(5000.0, ExitDesc::Code(0))])
        .collect();
    let j = judge_events(command, "main", EndReason::Finished);
    assert_ne!(
        j.verdicts[0].outcome,
        Outcome::Unknown,
        "{:?}",
        j.verdicts[0]
    );
}

/// The main agent left `bg` running and the CLI exited: the exit both finalized the waiter and
/// ended the run, and the witness says so in the CLI's words.
#[test]
fn work_left_running_at_the_main_agents_exit_is_not_resumable() {
    // Whether the driver's plan was done or not: a clean exit is no crash.
    for end in [EndReason::Finished, EndReason::CliEnded] {
        let mut events = start("main", 100.0, 200.0);
        events.push(cli_exit(3000.0, ExitDesc::Code(0)));
        let j = judge_events(events, "main", end);
        let v = &j.verdicts[0];
        assert_eq!(v.outcome, Outcome::NotResumable, "{}", v.explanation);
        let lines: Vec<&str> = v.witness.iter().map(|w| w.what.as_str()).collect();
        assert_eq!(
            lines,
            [
                "`main` starts `bg` in the background",
                "`main` ends its turn",
                "the CLI exits (exit 0)",
                "the CLI exits (exit 0)",
            ]
        );
    }
}

/// The CLI killed the work as it ended the session: the exit is a witness, in its own words.
#[test]
fn work_killed_with_the_session_has_the_exit_as_witness() {
    let mut events = start("worker", 100.0, 200.0);
    events.push(track_end(5210.0, ExitDesc::Signal(libc::SIGTERM)));
    events.push(cli_exit(5400.0, ExitDesc::Code(0)));
    let j = judge_events(events, "worker", EndReason::Finished);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::NotResumable, "{}", v.explanation);
    assert_eq!(
        v.witness.last().map(|w| w.what.as_str()),
        Some("the CLI exits (exit 0)")
    );
}

/// The harness's own kill (a `kill-task` fault) is neither the work's failure nor the CLI
/// ending the session on it: with no notice after it, the waiter was never told (H1), and the
/// witness says whose kill it was.
#[test]
fn a_kill_the_harness_sent_is_never_blamed_on_the_work_or_the_cli() {
    let mut events = start("worker", 100.0, 200.0);
    events.push(ev(
        5200.0,
        Source::Fault,
        None,
        EventKind::WorkSignalled {
            work: "bg".into(),
            fault: crate::scenario::FaultKind::KillTask,
            signal: "SIGKILL".into(),
            pids: vec![8, 9],
        },
    ));
    events.push(track_end(5210.0, ExitDesc::Signal(libc::SIGKILL)));
    events.push(cli_exit(9400.0, ExitDesc::Code(0)));
    let j = judge_events(events, "worker", EndReason::Finished);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::NeverFired, "{}", v.explanation);
    let witness: Vec<&str> = v.witness.iter().map(|w| w.what.as_str()).collect();
    assert!(
        witness.contains(&"`bg` is killed by the harness's fault (SIGKILL)"),
        "{witness:?}"
    );
    assert!(
        v.facts
            .iter()
            .any(|f| f.starts_with("The harness injected a fault at 5.20 s")),
        "{:?}",
        v.facts
    );
}

/// A SubagentStop with its hook events, listing `bg` (task b1) with `status`.
fn subagent_stop_listing(t: f64, waiter: &str, status: &str) -> Vec<Event> {
    let mut events = subagent_stop(t, waiter);
    if let EventKind::Hook {
        background_tasks: Some(tasks),
        ..
    } = &mut events[0].kind
    {
        tasks[0].status = status.into();
    }
    events
}

/// The listing quoted is the one the finalizing stop carried, not an earlier stop's that a hook
/// blocked (the worker asked again after it).
#[test]
fn the_listing_quoted_is_the_finalizing_stops() {
    let mut events = start("worker", 100.0, 200.0);
    events.extend(subagent_stop_listing(210.0, "worker", "pending"));
    events.push(request(300.0, "worker", 3, &[]));
    events.extend(subagent_stop_listing(400.0, "worker", "running"));
    events.push(track_end(5210.0, ExitDesc::Signal(libc::SIGTERM)));
    events.push(cli_exit(5400.0, ExitDesc::Code(0)));
    let j = judge_events(events, "worker", EndReason::Finished);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::NotResumable, "{}", v.explanation);
    assert!(
        v.explanation
            .contains("finalized at 0.40 s with `bg` still running (its background_tasks listed `bg` (shell) as running)"),
        "{}",
        v.explanation
    );
}

/// A hook blocked the worker's stop and it kept working, so it was live when `bg` ended: woken,
/// and the verdict shows the blocked stop and quotes the hook's reason.
#[test]
fn a_wake_up_after_a_blocked_stop_names_the_block_and_its_reason() {
    let mut events = start("worker", 100.0, 200.0);
    // The request that ends its turn again shares the stop's instant; the stop comes after it.
    events.push(request(300.0, "worker", 3, &[]));
    events.extend(subagent_stop(300.0, "worker"));
    let mut next = request(400.0, "worker", 4, &[]);
    if let EventKind::ModelRequest { injected, .. } = &mut next.kind {
        *injected = Some("Stop hook feedback: bg is still running".into());
    }
    events.push(next);
    events.push(track_end(1000.0, ExitDesc::Code(0)));
    events.push(request(1500.0, "worker", 5, &["b1"]));
    events.push(cli_exit(9000.0, ExitDesc::Code(0)));
    let j = judge_events(events, "worker", EndReason::Finished);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::Woke, "{}", v.explanation);
    let lines: Vec<&str> = v.witness.iter().map(|w| w.what.as_str()).collect();
    assert_eq!(
        lines,
        [
            "`worker` starts `bg` in the background",
            "`worker` ends its turn",
            "a hook blocks the stop",
            "`bg` completes",
            "`worker` gets `bg`'s notification",
        ]
    );
    assert!(
        v.explanation
            .contains("was woken after a hook blocked its stop and it kept working"),
        "{}",
        v.explanation
    );
    assert!(
        v.facts
            .iter()
            .any(|f| f == "`worker`'s next request carried the hook's reason: “hook feedback: bg is still running”"),
        "{:#?}",
        v.facts
    );
}

/// Another watched work passing its hang bound ends the run: for work still running then, the
/// run was cut short, and the verdict names the work that hung.
#[test]
fn another_works_hang_cuts_the_run_short_for_the_rest() {
    let mut events = start("main", 100.0, 200.0);
    events.push(driver_event(
        5000.0,
        EventKind::WorkOverdue {
            work: "other".into(),
            bound_s: 4.0,
        },
    ));
    let timeline = Timeline::new(events);
    let watch: Vec<Watch> = ["bg", "other"]
        .map(|work| Watch {
            waiter: "main".into(),
            work: work.into(),
            hang_after: None,
        })
        .into();
    let j = judge(&Input {
        timeline: &timeline,
        end: &EndReason::WorkHung,
        cli_exit: None,
        watch: &watch,
        checks: &[],
        invariants: &[],
        raw: &Default::default(),
        settle_ms: 2000.0,
        offers: &crate::evidence::offers::Offers::all(),
    });
    let bg = &j.verdicts[0];
    assert_eq!(bg.outcome, Outcome::Unknown, "{}", bg.explanation);
    assert_eq!(
        bg.reason.as_deref(),
        Some(
            "the run was cut short at 5.00 s (`other` not seen to end within its hang bound) before `bg` ended; what the CLI would have done next was not observed"
        )
    );
}

/// A tracked command is started when the tracker saw it start, even with no tool call or task
/// for it; another command's start is not its start.
#[test]
fn a_tracked_start_starts_only_its_own_work() {
    let track_started = |name: &str| {
        ev(
            100.0,
            Source::Os,
            Some("main"),
            EventKind::TrackStarted {
                name: name.into(),
                pid: 7,
            },
        )
    };
    let run = |started: Event| {
        vec![
            request(10.0, "main", 0, &[]),
            started,
            track_end(1000.0, ExitDesc::Code(0)),
            cli_exit(5000.0, ExitDesc::Code(0)),
        ]
    };
    let j = judge_events(run(track_started("bg")), "main", EndReason::Finished);
    assert_eq!(j.outcome, Outcome::NeverFired, "{:#?}", j.verdicts);
    let j = judge_events(run(track_started("other")), "main", EndReason::Finished);
    assert_eq!(
        j.verdicts[0].reason.as_deref(),
        Some("`bg` never started (no tool call, task or process for it)")
    );
}

/// Work ends only by its own end: another tracked command's end or disappearance is not it,
/// while its own tracker vanishing is a kill.
#[test]
fn work_ends_only_by_its_own_end() {
    let vanished = |t: f64, command: &str| {
        ev(
            t,
            Source::Os,
            None,
            EventKind::ProcessExited {
                pid: 8,
                exit: ExitDesc::Vanished,
                command: Some(command.into()),
            },
        )
    };
    let mut events = start("main", 100.0, 200.0);
    events.push(ev(
        500.0,
        Source::Os,
        Some("main"),
        EventKind::TrackEnded {
            name: "other".into(),
            pid: 8,
            exit: ExitDesc::Code(0),
        },
    ));
    events.push(vanished(600.0, "wp-track other"));
    events.push(cli_exit(5000.0, ExitDesc::Code(0)));
    let j = judge_events(events, "main", EndReason::Finished);
    let v = &j.verdicts[0];
    assert!(
        v.facts
            .iter()
            .any(|f| f == "`bg` was still running when the CLI exited; nothing was left to wake"),
        "{:#?}",
        v.facts
    );

    let mut events = start("main", 100.0, 200.0);
    events.push(vanished(1000.0, "wp-track bg"));
    events.push(cli_exit(5000.0, ExitDesc::Code(0)));
    let j = judge_events(events, "main", EndReason::Finished);
    let lines: Vec<&str> = j.verdicts[0]
        .witness
        .iter()
        .map(|w| w.what.as_str())
        .collect();
    assert!(lines.contains(&"`bg` is killed (vanished)"), "{lines:#?}");
}

/// Only the waiter's own activity after its stop undoes a finalization: not its request at the
/// stop's very instant (the one that ended its turn), nor another agent starting.
#[test]
fn only_the_waiters_own_later_activity_undoes_its_finalization() {
    let mut events = start("worker", 100.0, 200.0);
    events.push(request(210.0, "worker", 3, &[]));
    events.extend(subagent_stop(210.0, "worker"));
    events.push(ev(
        300.0,
        Source::Hook,
        Some("helper"),
        EventKind::hook(HookName::SubagentStart, 2, Some("a2")),
    ));
    events.push(track_end(5210.0, ExitDesc::Signal(libc::SIGTERM)));
    events.push(cli_exit(5400.0, ExitDesc::Code(0)));
    let j = judge_events(events, "worker", EndReason::Finished);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::NotResumable);
    assert!(
        v.explanation
            .contains("it was finalized at 0.21 s with `bg` still running"),
        "{}",
        v.explanation
    );
}

/// A user input, scheduled by the scenario.
fn input(t: f64) -> Event {
    input_of(t, "unrelated")
}

/// A scheduled user input of these words, to the main agent (as the driver sends them).
fn input_of(t: f64, text: &str) -> Event {
    ev(
        t,
        Source::Driver,
        Some("main"),
        EventKind::UserInput {
            text: text.into(),
            why: InputReason::Scheduled,
        },
    )
}

/// `request` with the user's words `text` among what it carries.
fn carrying(mut request: Event, text: &str) -> Event {
    if let EventKind::ModelRequest { user_text, .. } = &mut request.kind {
        user_text.push(text.to_string());
    }
    request
}

/// H3 is decided by the request that carries the notification: it must carry the input too.
/// Where the input was sent (before or after the end, before the waiter's other requests) does
/// not decide it.
#[test]
fn queued_means_the_request_that_told_the_waiter_carried_the_input() {
    let run = |input_t: f64, carried: bool| {
        let mut events = start("main", 100.0, 200.0);
        events.push(track_end(1000.0, ExitDesc::Code(0)));
        events.push(input(input_t));
        let told = request(3000.0, "main", 4, &["b1"]);
        events.push(if carried {
            carrying(told, "unrelated")
        } else {
            told
        });
        events.push(cli_exit(9000.0, ExitDesc::Code(0)));
        judge_events(events, "main", EndReason::Finished)
    };
    assert_eq!(run(2000.0, true).outcome, Outcome::QueuedUntilInput);
    // Stamped before the end (the driver's write raced it), and carried with the notice.
    assert_eq!(run(900.0, true).outcome, Outcome::QueuedUntilInput);
    // Stamped after the request that carried it (a stamp that trails the write under load).
    assert_eq!(run(3000.5, true).outcome, Outcome::QueuedUntilInput);
    // The input came between the end and the notice, but the notice came without it.
    let j = run(2000.0, false);
    assert_eq!(j.outcome, Outcome::Woke);
    assert_eq!(j.verdicts[0].latency_ms, Some(2000.0));
    // Other words in the request are not the input.
    let mut events = start("main", 100.0, 200.0);
    events.push(track_end(1000.0, ExitDesc::Code(0)));
    events.push(input(2000.0));
    events.push(carrying(
        request(3000.0, "main", 4, &["b1"]),
        "unrelated, and more",
    ));
    let j = judge_events(events, "main", EndReason::Finished);
    assert_eq!(j.outcome, Outcome::Woke);
}

/// The `cli-own-turn/race` flip measured on 2.1.332 under load: the worker's turn ended at
/// 14950.7 ms, the CLI printed it at 15052.4 ms, the driver's input was stamped at 15056.8 ms
/// (late), main's request 0005 at 15188.8 ms carried the notification in the CLI's own turn
/// without the user's message, and the user's message reached only request 0006 at
/// 15386.5 ms. The CLI woke main by itself: `woke`, worded so.
#[test]
fn the_clis_own_turn_that_beat_a_late_input_is_a_wake_up() {
    let text = "Any update on the check?";
    let mut events = race_worker_ended();
    events.push(input_of(15056.8, text));
    let mut own_turn = request(15188.8, "main", 5, &["a1"]);
    if let EventKind::ModelRequest { user_text, .. } = &mut own_turn.kind {
        user_text.push(
            "[SYSTEM NOTIFICATION - NOT USER INPUT] No human input has been received.".into(),
        );
    }
    events.push(own_turn);
    events.push(carrying(request(15386.5, "main", 6, &[]), text));
    events.push(cli_exit(20000.0, ExitDesc::Code(0)));
    let tl = Timeline::new(events);
    let watch = [Watch {
        waiter: "main".into(),
        work: "worker".into(),
        hang_after: None,
    }];
    let j = judge(&Input {
        timeline: &tl,
        end: &EndReason::Finished,
        cli_exit: None,
        watch: &watch,
        checks: &[],
        invariants: &[],
        raw: &Default::default(),
        settle_ms: 3000.0,
        offers: &crate::evidence::offers::Offers::all(),
    });
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::Woke, "{}", v.explanation);
    assert!(
        v.explanation.contains(
            "an input sent at 15.06 s was not part of that request, so the CLI told `main` by itself"
        ),
        "{}",
        v.explanation
    );
    assert!((v.latency_ms.unwrap() - 136.4).abs() < 0.01);
}

/// The `cli-own-turn/race` run up to the user's late input: main handed `worker` to the
/// background and ended its turn; the worker's turn ended at 14950.7 ms, and the CLI printed it
/// at 15052.4 ms.
fn race_worker_ended() -> Vec<Event> {
    vec![
        ev(
            140.0,
            Source::Driver,
            Some("main"),
            EventKind::UserInput {
                text: "Have a worker run the check in the background.".into(),
                why: InputReason::Prompt,
            },
        ),
        ev(
            2700.0,
            Source::Api,
            Some("main"),
            EventKind::ToolCall {
                seq: 1,
                tool: "Agent".into(),
                tool_use_id: "toolu_wp0001_main".into(),
                background: true,
                spawn: Some("worker".into()),
                track: None,
                teammate: None,
                target: None,
                inserted: false,
            },
        ),
        ev(
            2800.0,
            Source::Stream,
            None,
            EventKind::TaskStarted {
                task_id: "a1".into(),
                task_type: "local_agent".into(),
                tool_use_id: Some("toolu_wp0001_main".into()),
                label: Some("worker".into()),
                description: None,
            },
        ),
        request(3900.0, "main", 2, &[]),
        ev(
            3904.0,
            Source::Api,
            Some("main"),
            EventKind::TurnEnded {
                seq: 2,
                text: "The worker is on it.".into(),
            },
        ),
        ev(
            14950.7,
            Source::Api,
            Some("worker"),
            EventKind::TurnEnded {
                seq: 4,
                text: "Check passed.".into(),
            },
        ),
        ev(
            15052.4,
            Source::Stream,
            None,
            EventKind::TaskUpdated {
                task_id: "a1".into(),
                status: "completed".into(),
                label: Some("worker".into()),
            },
        ),
    ]
}

/// A waiter that stopped after its work ended and was started again to receive it was
/// re-invoked, not woken where it stood.
#[test]
fn a_waiter_started_again_after_the_end_was_re_invoked() {
    let mut events = start("worker", 100.0, 200.0);
    events.push(track_end(1000.0, ExitDesc::Code(0)));
    events.extend(subagent_stop(1100.0, "worker"));
    events.push(ev(
        2000.0,
        Source::Hook,
        Some("worker"),
        EventKind::hook(HookName::SubagentStart, 2, Some("a1")),
    ));
    events.push(request(2100.0, "worker", 3, &["b1"]));
    events.push(cli_exit(9000.0, ExitDesc::Code(0)));
    let j = judge_events(events, "worker", EndReason::Finished);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::Woke);
    assert!(
        v.explanation
            .contains("`worker` was re-invoked: its request at 2.10 s"),
        "{}",
        v.explanation
    );
}

/// A CLI that crashed with the work still running decides nothing: the crash, not the waiter's
/// state, ended the session.
#[test]
fn a_crash_with_the_work_running_is_unknown() {
    let mut events = start("main", 100.0, 200.0);
    events.push(cli_exit(3000.0, ExitDesc::Signal(libc::SIGSEGV)));
    let timeline = Timeline::new(events);
    let watch = [Watch {
        waiter: "main".into(),
        work: "bg".into(),
        hang_after: None,
    }];
    let j = judge(&Input {
        timeline: &timeline,
        end: &EndReason::CliEnded,
        cli_exit: Some(&ExitDesc::Signal(libc::SIGSEGV)),
        watch: &watch,
        checks: &[],
        invariants: &[],
        raw: &Default::default(),
        settle_ms: 2000.0,
        offers: &crate::evidence::offers::Offers::all(),
    });
    assert_eq!(
        j.verdicts[0].reason.as_deref(),
        Some("the CLI exited (SIGSEGV) while `bg` was still running")
    );
}

/// A run cut short after the work ended and before the waiter was told decides nothing: the
/// notice might have come next.
#[test]
fn a_run_cut_after_the_end_and_before_the_notice_is_unknown() {
    let mut events = start("main", 100.0, 200.0);
    events.push(track_end(1000.0, ExitDesc::Code(0)));
    events.push(driver_event(
        5000.0,
        EventKind::CeilingHit { ceiling_s: 5.0 },
    ));
    let j = judge_events(events, "main", EndReason::Ceiling);
    assert_eq!(
        j.verdicts[0].reason.as_deref(),
        Some(
            "the run was cut short at 5.00 s (its 5 s ceiling) after `bg` ended at 1.00 s and before `main` was told; whether it would have been was not observed"
        )
    );
}

/// A waiter finalized before its work ended that later made a request carrying the notice was
/// re-invoked (resumed without a SubagentStart of its own), not woken after a blocked stop.
#[test]
fn a_finalized_waiter_resumed_for_the_notice_was_re_invoked() {
    let mut events = start("worker", 100.0, 200.0);
    events.extend(subagent_stop(300.0, "worker"));
    events.push(track_end(1000.0, ExitDesc::Code(0)));
    events.push(request(2100.0, "worker", 3, &["b1"]));
    events.push(cli_exit(9000.0, ExitDesc::Code(0)));
    let j = judge_events(events, "worker", EndReason::Finished);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::Woke);
    assert!(
        v.explanation
            .contains("`worker` was re-invoked: its request at 2.10 s"),
        "{}",
        v.explanation
    );
}

/// The CLI printed the notification on stdout, but no request of the live waiter carried it:
/// produced and never delivered, which is not a notification that never fired.
#[test]
fn a_notice_printed_but_never_delivered_is_not_resumable() {
    let mut events = start("main", 100.0, 200.0);
    events.push(track_end(1000.0, ExitDesc::Code(0)));
    events.push(ev(
        1010.0,
        Source::Stream,
        None,
        EventKind::TaskNotified {
            task_id: "b1".into(),
            status: "completed".into(),
            label: Some("bg".into()),
            summary: None,
        },
    ));
    events.push(cli_exit(6000.0, ExitDesc::Code(0)));
    let j = judge_events(events, "main", EndReason::Finished);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::NotResumable, "{}", v.explanation);
    assert_eq!(
        v.witness.last().map(|w| w.what.as_str()),
        Some("the CLI prints a task_notification (not a delivery)")
    );
}

/// An injected fault broke the answer to the first request that carried the notice; the
/// retry 3 s later is the delivery, and the latency counts to it.
#[test]
fn a_notice_whose_answer_a_fault_broke_is_delivered_by_the_retry() {
    let mut events = start("main", 100.0, 200.0);
    events.push(track_end(1000.0, ExitDesc::Code(0)));
    let mut lost = request(1100.0, "main", 3, &["b1"]);
    if let EventKind::ModelRequest { answer_lost, .. } = &mut lost.kind {
        *answer_lost = true;
    }
    events.push(lost);
    events.push(request(4100.0, "main", 4, &["b1"]));
    events.push(ev(
        6000.0,
        Source::Os,
        None,
        EventKind::CliExited {
            exit: ExitDesc::Code(0),
        },
    ));
    let j = judge_events(events.clone(), "main", EndReason::CliEnded);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::Woke, "{}", v.explanation);
    assert_eq!(v.latency_ms, Some(3100.0), "{}", v.explanation);
    // Without the retry, nothing reached the waiter.
    events.retain(|e| !matches!(e.kind, EventKind::ModelRequest { seq: 4, .. }));
    let j = judge_events(events, "main", EndReason::CliEnded);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::Unknown, "{}", v.explanation);
    let reason = v.reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains("injected faults broke every answer") && reason.contains("1 request(s)"),
        "the harness, not the CLI, kept it from the waiter: {reason}"
    );
}

/// The harness's crash of the CLI at `t`, and the supervisor's restart 20 ms later.
fn crash_and_restart(t: f64) -> Vec<Event> {
    vec![
        ev(
            t,
            Source::Fault,
            None,
            EventKind::CliCrashed {
                work: "bg".into(),
                resume: vec!["--continue".into()],
            },
        ),
        ev(
            t + 20.0,
            Source::Os,
            None,
            EventKind::CliRestarted {
                killed: 10,
                exit: ExitDesc::Signal(libc::SIGKILL),
                pid: Some(11),
                error: None,
            },
        ),
    ]
}

/// After the harness crashed the CLI and it resumed the session, the restarted CLI's
/// `stopped` for work that still ran is not the notice of its end: the request that carries
/// it after an unrelated input is not a queued delivery (H3), and the real end was never
/// reported (H1). A `stopped` with no restart before it is a notice like any other.
#[test]
fn a_restarted_clis_stale_stopped_is_not_the_notice_of_the_end() {
    let crash = crash_and_restart;
    let stopped = |t: f64| {
        ev(
            t,
            Source::Stream,
            Some("main"),
            EventKind::TaskNotified {
                task_id: "b1".into(),
                status: "stopped".into(),
                label: Some("bg".into()),
                summary: None,
            },
        )
    };
    let probe_carrying_the_stop = |t: f64| {
        let mut r = carrying(request(t + 10.0, "main", 3, &["b1"]), "Unrelated");
        if let EventKind::ModelRequest { notifications, .. } = &mut r.kind {
            notifications[0].status = Some("stopped".into());
        }
        vec![
            ev(
                t,
                Source::Driver,
                Some("main"),
                EventKind::UserInput {
                    text: "Unrelated".into(),
                    why: InputReason::Probe,
                },
            ),
            r,
        ]
    };
    let mut events = start("main", 100.0, 200.0);
    events.extend(crash(3000.0));
    events.push(stopped(3400.0));
    events.push(track_end(12000.0, ExitDesc::Code(0)));
    events.extend(probe_carrying_the_stop(14000.0));
    events.push(cli_exit(16000.0, ExitDesc::Code(0)));
    let j = judge_events(events.clone(), "main", EndReason::Finished);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::NeverFired, "{}", v.explanation);
    let witness: Vec<&str> = v.witness.iter().map(|w| w.what.as_str()).collect();
    assert_eq!(
        witness[2..],
        [
            "the harness crashes the CLI while `bg` runs, and resumes it",
            "the restarted CLI reports `bg` stopped while it still runs",
            "`bg` completes",
        ]
    );
    assert!(
        v.explanation.contains("crashed the CLI at 3.00 s"),
        "{}",
        v.explanation
    );

    // No restart: the same `stopped`, then the request after the input, is a queued notice.
    let no_restart: Vec<Event> = events
        .into_iter()
        .filter(|e| {
            !matches!(
                e.kind,
                EventKind::CliCrashed { .. } | EventKind::CliRestarted { .. }
            )
        })
        .collect();
    let j = judge_events(no_restart, "main", EndReason::Finished);
    assert_eq!(j.verdicts[0].outcome, Outcome::QueuedUntilInput);
}

/// A subagent finalized before the crash: the restarted CLI never mentions its work, and what
/// the killed process had done with the waiter no longer decides: the work's end was never
/// reported (H1), not "finalized, not resumable" as without the crash. A run that ends within
/// the settle window after the work is `unknown`.
#[test]
fn a_crash_while_the_work_runs_decides_before_the_waiters_finalization() {
    let mut events = start("worker", 100.0, 200.0);
    events.extend(subagent_stop(300.0, "worker"));
    let end = track_end(12000.0, ExitDesc::Code(0));
    let judge = |events: Vec<Event>| judge_events(events, "worker", EndReason::Finished);
    let without = [
        events.clone(),
        vec![end.clone(), cli_exit(16000.0, ExitDesc::Code(0))],
    ]
    .concat();
    assert_eq!(judge(without).verdicts[0].outcome, Outcome::NotResumable);
    events.extend(crash_and_restart(3000.0));
    let crashed = [
        events.clone(),
        vec![end.clone(), cli_exit(16000.0, ExitDesc::Code(0))],
    ]
    .concat();
    let j = judge(crashed);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::NeverFired, "{}", v.explanation);
    assert!(
        v.explanation
            .contains("the restarted CLI did not mention `bg` while it ran"),
        "{}",
        v.explanation
    );
    let short = [
        events.clone(),
        vec![end.clone(), cli_exit(12500.0, ExitDesc::Code(0))],
    ]
    .concat();
    assert_eq!(judge(short).verdicts[0].outcome, Outcome::Unknown);
    // A run that went on exactly the settle window (2 s) after the work's end has waited it.
    let exactly = [events, vec![end, cli_exit(14000.0, ExitDesc::Code(0))]].concat();
    assert_eq!(judge(exactly).verdicts[0].outcome, Outcome::NeverFired);
}

/// A child that failed on its own and whose waiter was told: the latency counts from the
/// failure to the request that carried it (a `child-failed` verdict keeps its latency).
#[test]
fn a_failed_childs_latency_counts_to_the_request_that_told_its_waiter() {
    let mut events = start("main", 100.0, 200.0);
    events.push(track_end(1000.0, ExitDesc::Code(3)));
    events.push(request(1250.0, "main", 3, &["b1"]));
    events.push(cli_exit(4000.0, ExitDesc::Code(0)));
    let j = judge_events(events, "main", EndReason::CliEnded);
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::ChildFailed, "{}", v.explanation);
    assert_eq!(v.latency_ms, Some(250.0), "{}", v.explanation);
}

/// A request stamped before the work started cannot be the news of its end, whatever it
/// carries (a replayed conversation can name an id again): the search for the delivery begins
/// at the work's start, so the waiter that no later request told was never told.
#[test]
fn a_request_before_the_work_started_is_never_its_delivery() {
    let mut events = vec![request(2.0, "main", 9, &["b1"])];
    events.extend(start("main", 100.0, 200.0));
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
    events.push(track_end(1000.0, ExitDesc::Code(0)));
    events.push(cli_exit(4000.0, ExitDesc::Code(0)));
    let j = judge_events(events, "main", EndReason::CliEnded);
    let v = &j.verdicts[0];
    assert_ne!(v.outcome, Outcome::Woke, "{}", v.explanation);
    assert_eq!(v.latency_ms, None, "{}", v.explanation);
}

/// A broken invariant fails the run, with or without an expected verdict, unless the scenario
/// declares the break (`may_break`); a held one changes nothing.
#[test]
fn a_broken_invariant_fails_the_run_unless_the_scenario_declares_it() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs/seed000-print/run.json");
    let info: crate::evidence::run::RunInfo =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let expecting = |expect: Option<Outcome>| {
        let mut info = info.clone();
        info.expect = expect.map(crate::scenario::Expected::One);
        info
    };
    let judged = |invariant: crate::checks::CheckResult| Judgement {
        outcome: Outcome::Woke,
        verdicts: vec![verdict_of("a", Outcome::Woke)],
        checks: vec![],
        invariants: vec![invariant],
        rejected_lines: vec![],
        faults: vec![],
    };
    let declared = crate::checks::CheckResult {
        may_break: Some("measured".into()),
        layer: None,
        ..check_that(Some(false))
    };
    let matches = |expect, invariant| {
        crate::classify::result::RunResult::new(&expecting(expect), judged(invariant))
            .matches_expect
    };
    assert_eq!(
        matches(Some(Outcome::Woke), check_that(Some(false))),
        Some(false)
    );
    assert_eq!(matches(None, check_that(Some(false))), Some(false));
    assert_eq!(matches(Some(Outcome::Woke), declared.clone()), Some(true));
    assert_eq!(matches(None, declared), None);
    assert_eq!(
        matches(Some(Outcome::Woke), check_that(Some(true))),
        Some(true)
    );
    assert_eq!(matches(None, check_that(Some(true))), None);
    assert_eq!(matches(Some(Outcome::Woke), check_that(None)), Some(true));
}

/// A captured real run (`tests/fixtures/runs/NAME`) judged afresh with its saved plan.
fn judge_fixture(name: &str) -> Judgement {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs")
        .join(name);
    let read = |file: &str| std::fs::read_to_string(dir.join(file)).unwrap();
    let info: RunInfo = serde_json::from_str(&read("run.json")).unwrap();
    let plan: Plan = serde_json::from_str(&read("plan.json")).unwrap();
    let timeline: Timeline = serde_json::from_str(&read("timeline.json")).unwrap();
    judge_run(&info, &timeline, &plan, &Default::default())
}

/// 2.1.87 prints no `task_updated` line (the trigger of anthropics/claude-code#45581: five
/// background agents ending within a second). Each worker's end is still on the timeline (its
/// SubagentStop, the CLI's task_notification), and `main`'s requests carry each notification:
/// all five woke, never "had not ended when the CLI exited".
#[test]
fn five_workers_on_a_version_without_task_updated_all_woke() {
    let j = judge_fixture("five-at-once-2.1.87");
    let woke: Vec<(&str, Outcome)> = j
        .verdicts
        .iter()
        .map(|v| (v.work.as_str(), v.outcome))
        .collect();
    assert_eq!(
        woke,
        ["w1", "w2", "w3", "w4", "w5"].map(|w| (w, Outcome::Woke)),
        "{:#?}",
        j.verdicts
    );
    for v in &j.verdicts {
        let latency = v.latency_ms.expect("a wake-up has a latency");
        assert!((0.0..1000.0).contains(&latency), "{}: {latency}", v.work);
    }
}

/// A harness stopped (SIGSTOP) across the hang deadline fired its timer late: the run was cut
/// there, while `bg` had ended at 3.51 s (its tracker's stamp) and `main`'s request carrying
/// the notice was read 1 ms after the cut. Never H1 ("no request carrying it"): the timer was
/// the harness's lateness, so the verdict says that and decides nothing.
#[test]
fn a_hang_timer_fired_late_by_a_paused_harness_is_no_verdict() {
    let j = judge_fixture("paused-harness");
    let v = &j.verdicts[0];
    assert_eq!(v.outcome, Outcome::Unknown, "{:#?}", v);
    assert!(
        v.contradiction.is_none(),
        "the rules, not the audit, see it: {v:#?}"
    );
    let reason = v.reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains("had ended at 3.51 s, within it: the harness's timer fired late"),
        "{reason}"
    );
}

/// The late timer, had the rules taken it for the work's hang or for silence, is caught by the
/// self-check: the claims "had not ended" and "never told" both stand against the timeline.
#[test]
fn the_self_check_catches_claims_the_paused_run_contradicts() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/paused-harness");
    let timeline: Timeline =
        serde_json::from_str(&std::fs::read_to_string(dir.join("timeline.json")).unwrap()).unwrap();
    let watch = Watch {
        waiter: "main".into(),
        work: "bg".into(),
        hang_after: Some(std::time::Duration::from_secs(13)),
    };
    let f = facts::gather(&timeline, &watch, EndReason::WorkHung);
    let overdue = timeline
        .iter()
        .find(|e| matches!(e.kind, EventKind::WorkOverdue { .. }))
        .unwrap();
    let hung = audit::audit(
        &timeline,
        &f,
        &rules::Decision::Unended(rules::Unended::Hung { overdue }),
    )
    .unwrap();
    assert_eq!(hung.claim, "`bg` had not ended when its hang bound passed");
    assert!(
        hung.fact
            .starts_with("`bg`'s process ending (exit 0) at 3.51 s"),
        "{hung:?}"
    );
    let silent = audit::audit(
        &timeline,
        &f,
        &ended_as(&f, rules::AfterEnd::NeverFired { observed_ms: 0.0 }),
    )
    .unwrap();
    assert_eq!(silent.claim, "`main` was never told of `bg`");
    assert!(
        silent
            .fact
            .contains("a model request of `main` carrying `bg`'s notification at 15.48 s"),
        "{silent:?}"
    );
}

/// Each (waiter, work) pair of `j`'s judgement with its facts and the rules' decision, on `tl`.
fn decisions_of(
    tl: &Timeline,
    end: EndReason,
    waiter: &str,
) -> Vec<(String, Option<Contradiction>)> {
    let observed = tl.observed(end);
    let watch = Watch {
        waiter: waiter.into(),
        work: "bg".into(),
        hang_after: None,
    };
    let f = facts::gather(&observed, &watch, end);
    let Some(started) = f.started else {
        return vec![];
    };
    let input = Input {
        timeline: tl,
        end: &end,
        cli_exit: Some(&ExitDesc::Code(0)),
        watch: &[],
        checks: &[],
        invariants: &[],
        raw: &Default::default(),
        settle_ms: 0.0,
        offers: &crate::evidence::offers::Offers::all(),
    };
    let d = rules::decide(&rules::Ctx {
        input: &input,
        tl: &observed,
        f: &f,
        started,
        crashed: rules::crashed(&input),
    });
    vec![(format!("{d:?}"), audit::audit(tl, &f, &d))]
}

use audit::Contradiction;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The self-check never fires on what the rules decide: not on any hypothesis's shape with
    /// noise, not on arbitrary sequences of events.
    #[test]
    fn the_self_check_never_fires_on_the_rules_output(case in case_strategy()) {
        let j = judge_events(case.events.clone(), case.waiter, case.end);
        prop_assert!(j.contradictions().is_empty(), "{:#?}", j.verdicts);
    }

    #[test]
    fn the_self_check_never_fires_on_arbitrary_sequences(
        events in prop::collection::vec(arbitrary_event(), 0..40),
        end in prop_oneof![Just(EndReason::Finished), Just(EndReason::Ceiling), Just(EndReason::CliEnded)],
    ) {
        for waiter in ["main", "worker"] {
            let j = judge_events(events.clone(), waiter, end);
            prop_assert!(j.contradictions().is_empty(), "{:#?}", j.verdicts);
        }
    }

    /// A contradiction planted in the rules' output makes it fire: a run where the waiter was
    /// told, decided as "never told" (H1) or "not resumable" (H2).
    #[test]
    fn a_planted_contradiction_fires(case in case_strategy_of(0..1)) {
        prop_assert_eq!(case.expected, Outcome::Woke);
        let tl = Timeline::new(case.events.clone());
        let observed = tl.observed(case.end);
        let watch = Watch { waiter: case.waiter.into(), work: "bg".into(), hang_after: None };
        let f = facts::gather(&observed, &watch, case.end);
        let planted = [
            ended_as(&f, rules::AfterEnd::NeverFired { observed_ms: 0.0 }),
            ended_as(&f, rules::AfterEnd::PrintedNotDelivered { printed: f.started.unwrap(), observed_ms: 0.0 }),
        ];
        for d in planted {
            let c = audit::audit(&tl, &f, &d);
            prop_assert!(c.is_some(), "{:?} was not caught", d);
            prop_assert!(c.unwrap().claim.contains("was never told of `bg`"));
        }
    }
}

/// The rules' own decisions on the hypothesis shapes are each audited (not skipped): the
/// audit sees a decision for every started work.
#[test]
fn every_decision_is_audited() {
    let mut events = start("main", 100.0, 200.0);
    events.push(track_end(1000.0, ExitDesc::Code(0)));
    events.push(request(1100.0, "main", 3, &["b1"]));
    let decided = decisions_of(&Timeline::new(events), EndReason::Finished, "main");
    assert_eq!(decided.len(), 1);
    assert!(decided[0].0.contains("why: Woke"), "{decided:?}");
    assert_eq!(decided[0].1, None);
}

/// What a version cannot print shows nothing by its absence: on 2.1.0 (no task lines, no
/// `<task-notification>` in requests) silence after the work's end is no H1, and a request the
/// waiter made after it may have carried a notice in a form the harness does not read.
#[test]
fn an_absence_the_version_cannot_show_is_no_verdict() {
    let judge_on = |events: Vec<Event>, version: &str| {
        let timeline = Timeline::new(events);
        let offers = crate::evidence::offers::Offers::of_claude(
            version,
            crate::scenario::DriverMode::Session,
        );
        judge(&Input {
            timeline: &timeline,
            end: &EndReason::Finished,
            cli_exit: Some(&ExitDesc::Code(0)),
            watch: &[Watch {
                waiter: "main".into(),
                work: "bg".into(),
                hang_after: None,
            }],
            checks: &[],
            invariants: &[],
            raw: &Default::default(),
            settle_ms: 1000.0,
            offers: &offers,
        })
    };
    let mut silent = start("main", 100.0, 200.0);
    silent.push(track_end(1000.0, ExitDesc::Code(0)));
    silent.push(cli_exit(5000.0, ExitDesc::Code(0)));
    assert_eq!(
        judge_on(silent.clone(), "2.1.332").outcome,
        Outcome::NeverFired
    );
    let old = judge_on(silent, "2.1.0");
    assert_eq!(old.outcome, Outcome::Unknown, "{:#?}", old.verdicts);
    assert!(
        old.verdicts[0].reason.as_deref().unwrap().contains(
            "but Claude Code 2.1.0 (in this driver mode) emits no task_started or task_notification line: whether a notification fired (H1) or waited (H2, H3) is not observable"
        ),
        "{:?}",
        old.verdicts[0].reason
    );
    let mut asked = start("main", 100.0, 200.0);
    asked.push(track_end(1000.0, ExitDesc::Code(0)));
    asked.push(request(1500.0, "main", 3, &[]));
    asked.push(cli_exit(5000.0, ExitDesc::Code(0)));
    let unread = judge_on(asked, "2.1.0");
    assert_eq!(unread.outcome, Outcome::Unknown);
    assert!(
        unread.verdicts[0].reason.as_deref().unwrap().contains(
            "`main` made a model request at 1.50 s, but Claude Code 2.1.0 (in this driver mode) emits no <task-notification> in any model request"
        ),
        "{:?}",
        unread.verdicts[0].reason
    );
}

/// A decision on the ended work of `f` (it must have ended): `why`, planted by a test.
fn ended_as<'a>(f: &'a facts::Facts<'a>, why: rules::AfterEnd<'a>) -> rules::Decision<'a> {
    let (event, how) = f.end.as_ref().expect("the work ended");
    rules::Decision::Ended {
        end: rules::End { event, how },
        why,
    }
}
