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
            EventKind::Hook {
                hook: HookName::SessionEnd,
                raw: 1,
                agent_id: None,
                background_tasks: None,
                stop_hook_active: None,
                detail: None,
            },
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
    let mut s = Shape::new(Outcome::QueuedUntilInput, "stayed silent for");
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
    s.events
        .push(request(probe + d.latency, d.waiter, 3, &["b1"]));
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
            bound_s: d.end_t / 1000.0,
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
    let waiter = prop_oneof![Just("main"), Just("worker")];
    (
        0usize..SHAPES.len(),
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

/// A tool call by `agent` (or by nobody known): background or not, spawning or tracking work.
fn call(
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
        witness: vec![],
        explanation: String::new(),
    }
}

#[test]
fn the_primary_verdict_is_the_first_that_did_not_wake_else_the_first() {
    let judgement = |verdicts| Judgement {
        outcome: Outcome::Woke,
        verdicts,
        checks: vec![],
        invariants: vec![],
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
    };
    assert!(with(vec![]).checks_pass());
    assert!(with(vec![check_that(Some(true)), check_that(None)]).checks_pass());
    assert!(!with(vec![check_that(Some(true)), check_that(Some(false))]).checks_pass());
}
