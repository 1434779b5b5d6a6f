//! Checks on captured real runs (`tests/fixtures/runs`): every selector field and every
//! relation against what the timeline shows, the presets re-expressed as queries against their
//! reference implementations, and an arbitrary query over an arbitrary timeline.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;
use crate::evidence::run::{EndReason, RunInfo};
use crate::evidence::{Event, EventKind, Route, Source, Timeline};
use crate::scenario::query::*;
use crate::scenario::{CheckKind, Scenario};

const FIXTURES: [&str; 4] = [
    "seed000-print",
    "seed000-session",
    "interrupt-main",
    "interrupt-stop",
];

struct Fixture {
    info: RunInfo,
    timeline: Timeline,
    raw: RawSources,
    scenario: String,
}

fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs")
        .join(name)
}

fn load(name: &str) -> Fixture {
    let dir = fixture_dir(name);
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    Fixture {
        info: serde_json::from_str(&read("run.json")).unwrap(),
        timeline: serde_json::from_str(&read("timeline.json")).unwrap(),
        raw: crate::store::saved::read_raw_sources(&dir),
        scenario: read("scenario.toml"),
    }
}

impl Fixture {
    fn evidence(&self) -> Evidence<'_> {
        Evidence {
            timeline: &self.timeline,
            raw: &self.raw,
            end: self.info.end,
        }
    }

    /// The results of `[[checks]]` written as a user would, appended to the run's scenario.
    fn checks(&self, toml: &str) -> Vec<CheckResult> {
        let source = format!("{}\n{toml}", self.scenario);
        let scenario = Scenario::parse(Path::new("scenario.toml"), source).unwrap();
        let plan = scenario.plan(&self.info.variant, &[]).unwrap();
        run_all(&self.evidence(), &plan.checks)
    }
}

/// What one check observes on a fixture.
fn observe(fixture: &str, check: &str) -> String {
    let results = load(fixture).checks(&format!("[[checks]]\nname = \"c\"\n{check}"));
    results.last().unwrap().observed.clone()
}

#[test]
fn every_selector_field_picks_what_the_timeline_shows() {
    let s = "seed000-session";
    let cases = [
        // source: track_started, track_ended, cli_exited
        (r#"count = { source = "os" }"#, "3"),
        (r#"count = { kind = "agent_finalized" }"#, "2"),
        (
            r#"count = { kind = "model_request", agent = "worker" }"#,
            "3",
        ),
        (r#"count = { kind = "task_updated", work = "bg" }"#, "1"),
        (r#"count = { hook = "SubagentStart" }"#, "2"),
        (r#"count = { type = "result", subtype = "success" }"#, "3"),
        (r#"count = { type = "system", subtype = "init" }"#, "3"),
        (r#"count = { kind = "tool_call", tool = "Bash" }"#, "1"),
        (
            r#"count = { kind = "task_notified", status = "completed" }"#,
            "3",
        ),
        // `where`, with each test
        (
            r#"count = { hook = "Stop", where = [{ path = "payload.hook_event_name", equals = "Stop" }] }"#,
            "3",
        ),
        (
            r#"count = { kind = "turn_ended", where = [{ path = "text", contains = "bg-done" }] }"#,
            "1",
        ),
        (
            r#"count = { kind = "turn_ended", where = [{ path = "text", matches = "^The" }] }"#,
            "3",
        ),
        (
            r#"count = { kind = "model_request", where = [{ path = "notifications[0]", exists = true }] }"#,
            "3",
        ),
        (
            r#"count = { kind = "model_request", agent = "main", where = [{ path = "notifications", exists = false }] }"#,
            "2",
        ),
        (
            r#"count = { kind = "turn_result", where = [{ path = "num_turns", gt = 1 }] }"#,
            "1",
        ),
        (
            r#"count = { kind = "turn_result", where = [{ path = "num_turns", ge = 1 }] }"#,
            "3",
        ),
        (
            r#"count = { kind = "turn_result", where = [{ path = "num_turns", lt = 2 }] }"#,
            "2",
        ),
        (
            r#"count = { kind = "turn_result", where = [{ path = "num_turns", le = 2 }] }"#,
            "3",
        ),
        // `[*]` fans out over an array; `route` reads as one word
        (
            r#"count = { hook = "Stop", where = [{ path = "background_tasks[*].type", equals = "shell" }] }"#,
            "1",
        ),
        (
            r#"count = { kind = "model_request", where = [{ path = "route", equals = "script_exhausted" }] }"#,
            "1",
        ),
        // a payload field the typed event does not keep
        (
            r#"count = { hook = "SubagentStop", where = [{ path = "payload.agent_type", equals = "general-purpose" }] }"#,
            "2",
        ),
        (
            r#"count = { hook = "SubagentStop", where = [{ path = "payload.stop_hook_active", equals = false }] }"#,
            "2",
        ),
    ];
    for (check, want) in cases {
        assert_eq!(observe(s, check), want, "{check}");
    }
}

#[test]
fn every_relation_observes_what_the_timeline_shows() {
    let s = "seed000-session";
    let cases = [
        (
            r#"exists = { hook = "SubagentStop", agent = "worker" }"#,
            "yes",
        ),
        (
            r#"absent = { hook = "SubagentStop", agent = "worker" }"#,
            "no",
        ),
        (r#"absent = { kind = "ceiling_hit" }"#, "yes"),
        (
            r#"before = { first = { kind = "agent_finalized", agent = "worker" }, then = { kind = "track_ended", work = "bg" } }"#,
            "yes",
        ),
        (
            r#"before = { first = { kind = "track_ended", work = "bg" }, then = { kind = "agent_finalized", agent = "worker" } }"#,
            "no",
        ),
        (
            r#"before = { first = { kind = "track_ended" }, then = { kind = "ceiling_hit" } }"#,
            "not-observed",
        ),
        (
            r#"within = { after = { kind = "track_ended", work = "bg" }, then = { kind = "model_request", agent = "worker", where = [{ path = "notifications[0]", exists = true }] }, seconds = 1 }"#,
            "yes",
        ),
        (
            r#"within = { after = { kind = "track_ended", work = "bg" }, then = { kind = "model_request", agent = "worker", where = [{ path = "notifications[0]", exists = true }] }, seconds = 0.01 }"#,
            "no",
        ),
        (
            r#"within = { after = { kind = "ceiling_hit" }, then = { kind = "cli_exited" } }"#,
            "not-observed",
        ),
        (
            r#"pairs = { each = { hook = "SubagentStart" }, with = { hook = "SubagentStop" }, by = "agent" }"#,
            "yes",
        ),
        (
            r#"pairs = { each = { hook = "SubagentStop" }, with = { hook = "SubagentStart" }, by = "agent" }"#,
            "no",
        ),
        (
            r#"pairs = { each = { kind = "tool_call", tool = "Agent" }, with = { kind = "task_started", work = "worker" } }"#,
            "no",
        ),
        (
            r#"while = { count = { hook = "Stop" }, from = { kind = "agent_finalized", agent = "worker" }, until = { hook = "SubagentStart", agent = "worker" } }"#,
            "2",
        ),
        (
            r#"while = { count = { hook = "Stop" }, from = { kind = "ceiling_hit" } }"#,
            "not-observed",
        ),
        (
            r#"value = { at = { kind = "task_started", work = "bg" }, path = "task_type" }"#,
            "local_bash",
        ),
        (
            r#"value = { at = { kind = "turn_ended", agent = "worker" }, path = "text", which = "last", capture = "finished: (\\S+)" }"#,
            "bg-done.",
        ),
        (
            r#"value = { at = { kind = "turn_ended", agent = "worker" }, path = "text", capture = "finished: (\\S+)" }"#,
            "not-observed",
        ),
        (
            r#"value = { at = { kind = "task_started", work = "bg" }, path = "nothing_here" }"#,
            "not-observed",
        ),
        (
            r#"followed = { each = { kind = "agent_finalized", agent = "worker" }, by = { kind = "model_request", agent = "worker" }, unless = { hook = "SubagentStart", agent = "worker" } }"#,
            "0",
        ),
        (
            r#"followed = { each = { kind = "agent_finalized", agent = "worker" }, by = { kind = "model_request", agent = "worker" } }"#,
            "1",
        ),
    ];
    for (check, want) in cases {
        assert_eq!(observe(s, check), want, "{check}");
    }
}

#[test]
fn stops_from_any_source_are_one_kind() {
    let s = "interrupt-stop";
    assert_eq!(observe(s, r#"count = { kind = "stop" }"#), "2"); // stop_task, session end
    assert_eq!(
        observe(
            s,
            r#"exists = { kind = "stop", work = "worker", where = [{ path = "stop.by", equals = "stop-task" }] }"#
        ),
        "yes"
    );
    assert_eq!(
        observe(
            s,
            r#"value = { at = { kind = "stop" }, path = "stop.target" }"#
        ),
        "worker"
    );
    // The stopped subagent never got its SubagentStop: the pairing breaks.
    assert_eq!(
        observe(
            s,
            r#"pairs = { each = { hook = "SubagentStart" }, with = { hook = "SubagentStop" }, by = "agent" }"#
        ),
        "no"
    );
    assert_eq!(
        observe(
            "interrupt-main",
            r#"value = { at = { kind = "stop" }, path = "stop.by" }"#
        ),
        "interrupt"
    );
}

#[test]
fn a_result_carries_expectation_witness_and_prose() {
    let f = load("seed000-session");
    let r = &f.checks(
        r#"[[checks]]
name = "the worker went back to work"
followed = { each = { kind = "agent_finalized", agent = "worker" }, by = { kind = "model_request", agent = "worker" } }
expect = ">= 1"
"#,
    )[0];
    assert_eq!(r.kind, "query:followed");
    assert_eq!((r.observed.as_str(), r.passed), ("1", Some(true)));
    assert_eq!(r.witness.len(), 2, "{:?}", r.witness);
    assert!(r.explanation.contains("1 of the 2"), "{}", r.explanation);
}

#[test]
fn a_run_cut_short_leaves_unsettled_checks_open() {
    let f = load("seed000-session");
    let check = |expect: &str| {
        let scenario = Scenario::parse(
            Path::new("s.toml"),
            format!(
                "{}\n[[checks]]\nname = \"c\"\ncount = {{ kind = \"ceiling_hit\" }}\nexpect = \"{expect}\"\n",
                f.scenario
            ),
        )
        .unwrap();
        let plan = scenario.plan(&f.info.variant, &[]).unwrap();
        let cut = Evidence {
            end: EndReason::Ceiling,
            ..f.evidence()
        };
        run_all(&cut, &plan.checks).remove(0)
    };
    // None seen so far: more could come in the part not seen.
    let open = check("== 0");
    assert_eq!(open.passed, None, "{}", open.explanation);
    assert!(
        open.explanation.contains("cut short"),
        "{}",
        open.explanation
    );
    // A count can only grow: "at least one" failing is open too, "at most ..." failing is not.
    assert_eq!(check(">= 1").passed, None);
    let ended = Evidence {
        end: EndReason::Finished,
        ..f.evidence()
    };
    assert_eq!(run_all(&ended, &[]).len(), 0);
}

#[test]
fn expectations_are_met_by_the_same_value_or_a_comparison_that_holds() {
    assert!(meets("yes", "yes"));
    assert!(!meets("yes", "no"));
    assert!(!meets("model", "driver"));
    assert!(meets(">= 2", "3") && meets(">= 2", "2") && !meets(">= 2", "1"));
    assert!(meets("1", "1") && !meets("1", "2"));
    assert!(meets("!= 0", "1") && !meets("!= 0", "0"));
    assert!(meets("< 3", "2") && !meets("< 3", "3"));
    assert!(!meets(">= 1", "not-observed"));
}

/// Counts only grow: on a cut run, a count already past an "at least" keeps its pass, one
/// already past an "exactly" or "at most" keeps its fail, and one that more events could still
/// change stays open. On a finished run every expectation is judged.
#[test]
fn a_cut_run_keeps_the_count_verdicts_the_rest_cannot_change() {
    let f = load("seed000-session");
    let judged = |expect: &str, end: EndReason| {
        let scenario = Scenario::parse(
            Path::new("s.toml"),
            format!(
                "{}\n[[checks]]\nname = \"c\"\ncount = {{ kind = \"model_request\" }}\nexpect = \"{expect}\"\n",
                f.scenario
            ),
        )
        .unwrap();
        let plan = scenario.plan(&f.info.variant, &[]).unwrap();
        let ev = Evidence {
            end,
            ..f.evidence()
        };
        run_all(&ev, &plan.checks).remove(0)
    };
    let cut = EndReason::Ceiling;
    assert_eq!(judged(">= 1", cut).passed, Some(true));
    assert_eq!(judged("== 0", cut).passed, Some(false));
    assert_eq!(judged("<= 1", cut).passed, Some(false));
    let open = judged("<= 1000", cut);
    assert_eq!(open.passed, None, "{}", open.explanation);
    assert!(
        open.explanation.contains("left open"),
        "{}",
        open.explanation
    );
    assert_eq!(judged("<= 1000", EndReason::Finished).passed, Some(true));
    assert_eq!(judged("== 0", EndReason::Finished).passed, Some(false));
}

// ---- presets: the query form against the reference implementation ----

/// The agents a fixture's plan names, and `main`.
fn agents(f: &Fixture) -> Vec<String> {
    let plan = Scenario::parse(Path::new("s.toml"), f.scenario.clone())
        .unwrap()
        .plan(&f.info.variant, &[])
        .unwrap();
    plan.agents.keys().cloned().collect()
}

const EXPRESSED: [CheckKind; 5] = [
    CheckKind::SubagentStopOnInterrupt,
    CheckKind::GuardBlockedOnce,
    CheckKind::StopsUnblocked,
    CheckKind::ToolErrors,
    CheckKind::TranscriptStatus,
];

#[test]
fn presets_in_the_query_form_observe_what_the_built_ins_did_on_every_fixture() {
    let mut compared = 0;
    for name in FIXTURES {
        let f = load(name);
        for agent in agents(&f) {
            for kind in EXPRESSED {
                let engine = preset(kind).observe(&f.evidence(), &agent).observed;
                let built_in = reference::observe(kind, &f.timeline, &agent);
                assert_eq!(engine, built_in, "{name}: {} about {agent}", kind.as_str());
                compared += 1;
            }
        }
    }
    // Three fixtures have `main` and `worker`, `interrupt-main` only `main`.
    assert_eq!(compared, 7 * 5);
}

#[test]
fn the_two_native_presets_have_no_query_form() {
    for kind in CheckKind::ALL {
        let native = matches!(
            kind,
            CheckKind::IdleTeammateDistinguishable | CheckKind::SingleContinuation
        ) || kind.is_on_integration();
        assert_eq!(
            preset(kind).query("worker").is_none(),
            native,
            "{}",
            kind.as_str()
        );
    }
}

/// The presets as they were written in Rust before the query engine: the oracle.
mod reference {
    use crate::evidence::{Event, EventKind, HookName, Timeline};
    use crate::scenario::CheckKind;

    pub fn observe(kind: CheckKind, tl: &Timeline, agent: &str) -> String {
        match kind {
            CheckKind::SubagentStopOnInterrupt => stop_on_interrupt(tl, agent),
            CheckKind::GuardBlockedOnce => match blocked_stops(tl, agent) {
                0 => "not-blocked".into(),
                1 => "blocked-once".into(),
                n => format!("blocked-{n}-times"),
            },
            CheckKind::StopsUnblocked => match blocked_stops(tl, agent) {
                0 => "unblocked".into(),
                _ => "blocked".into(),
            },
            CheckKind::ToolErrors => {
                let any = tl.iter().any(|e| {
                    e.is_request_by(agent)
                        && matches!(&e.kind, EventKind::ModelRequest { tool_errors, .. } if !tool_errors.is_empty())
                });
                if any { "errors" } else { "none" }.into()
            }
            CheckKind::TranscriptStatus => tl
                .iter()
                .find_map(|e| match &e.kind {
                    EventKind::TranscriptFact { fact, .. } if e.agent.as_deref() == Some(agent) => {
                        fact.strip_prefix("status ").map(str::to_string)
                    }
                    _ => None,
                })
                .unwrap_or_else(|| "not-observed".into()),
            _ => unreachable!("native presets have no reference"),
        }
    }

    /// The first stop that reaches the agent, from any source, then its SubagentStop.
    fn stop_on_interrupt(tl: &Timeline, agent: &str) -> String {
        let Some(stop) = tl
            .iter()
            .find(|e| super::super::stops::stop_of(e).is_some_and(|s| s.reaches(agent)))
        else {
            return "not-observed".into();
        };
        let fired = tl.iter().any(|e| {
            e.t_ms >= stop.t_ms
                && e.agent.as_deref() == Some(agent)
                && matches!(e.kind, EventKind::AgentFinalized { .. })
        });
        if fired { "fired" } else { "not-fired" }.into()
    }

    fn blocked_stops(tl: &Timeline, agent: &str) -> usize {
        let stops: Vec<&Event> = tl
            .iter()
            .filter(|e| {
                e.agent.as_deref() == Some(agent)
                    && matches!(e.kind, EventKind::AgentFinalized { .. })
            })
            .collect();
        stops
            .into_iter()
            .filter(|stop| {
                tl.iter()
                    .find(|e| {
                        e.t_ms > stop.t_ms
                            && e.agent.as_deref() == Some(agent)
                            && (e.is_request_by(agent)
                                || matches!(&e.kind, EventKind::Hook { hook, .. } if *hook == HookName::SubagentStart))
                    })
                    .is_some_and(|n| n.is_request_by(agent))
            })
            .count()
    }
}

// ---- properties ----

fn arb_kind() -> impl Strategy<Value = EventKind> {
    let hook = prop_oneof![
        Just(crate::evidence::HookName::Stop),
        Just(crate::evidence::HookName::SubagentStart),
        Just(crate::evidence::HookName::SubagentStop),
    ];
    prop_oneof![
        (any::<bool>(), prop::collection::vec("[a-z ]{0,8}", 0..2)).prop_map(|(turn, errors)| {
            EventKind::ModelRequest {
                seq: 1,
                route: if turn {
                    Route::Turn
                } else {
                    Route::ScriptExhausted
                },
                step: None,
                notifications: vec![],
                injected: None,
                tool_errors: errors,
                user_text: vec![],
                answer_lost: false,
            }
        }),
        hook.prop_map(|hook| EventKind::Hook {
            hook,
            raw: 0,
            agent_id: None,
            background_tasks: None,
            stop_hook_active: None,
            stops_task: None,
            detail: None,
        }),
        Just(EventKind::AgentFinalized {
            hook: crate::evidence::HookName::SubagentStop
        }),
        Just(EventKind::SessionClosed),
        Just(EventKind::CeilingHit { ceiling_s: 1.0 }),
        Just(EventKind::ControlRequest {
            subtype: "interrupt".into(),
            target: None
        }),
        Just(EventKind::ControlRequest {
            subtype: "stop_task".into(),
            target: Some("worker (x)".into())
        }),
        prop_oneof![
            Just("status running"),
            Just("status canceled"),
            Just("async-launch")
        ]
        .prop_map(|f| EventKind::TranscriptFact {
            fact: f.into(),
            detail: String::new()
        }),
        (0u32..3).prop_map(|n| EventKind::TrackEnded {
            name: "bg".into(),
            pid: n,
            exit: crate::evidence::ExitDesc::Code(0)
        }),
    ]
}

/// Timelines of distinct times (ties are ordered by place, which the old Rust read by time).
fn arb_timeline() -> impl Strategy<Value = Timeline> {
    prop::collection::vec(
        (
            arb_kind(),
            prop_oneof![Just("main"), Just("worker")],
            1.0f64..50.0,
        ),
        0..24,
    )
    .prop_map(|items| {
        let mut t = 0.0;
        Timeline::new(
            items
                .into_iter()
                .map(|(kind, agent, gap)| {
                    t += gap;
                    Event {
                        t_ms: t,
                        source: Source::Api,
                        agent: Some(agent.into()),
                        kind,
                    }
                })
                .collect(),
        )
    })
}

fn arb_selector() -> BoxedStrategy<Selector> {
    let opt = |values: &'static [&'static str]| {
        prop::option::of(prop::sample::select(values).prop_map(str::to_string))
    };
    let test = prop_oneof![
        Just(FieldTest::Exists(true)),
        Just(FieldTest::Exists(false)),
        Just(FieldTest::Equals(serde_json::json!("turn"))),
        Just(FieldTest::Contains("status".into())),
        Just(FieldTest::Matches("^(a|st".into())), // not a valid pattern: matches nothing
        Just(FieldTest::Matches("^status".into())),
        (-5.0f64..5.0).prop_map(FieldTest::Gt),
        (-5.0f64..5.0).prop_map(FieldTest::Le),
    ];
    let path = prop::sample::select(
        &[
            "route",
            "tool_errors[*]",
            "fact",
            "a[3].b",
            "t_ms",
            "stop.by",
        ][..],
    )
    .prop_map(|p| FieldPath::parse(p).unwrap());
    (
        opt(&["api", "hook", "os"]),
        opt(&[
            "model_request",
            "hook",
            "stop",
            "agent_finalized",
            "transcript_fact",
        ]),
        opt(&["main", "worker"]),
        opt(&["worker", "bg"]),
        opt(&["Stop", "SubagentStart"]),
        prop::collection::vec(
            (path, test).prop_map(|(path, test)| Predicate { path, test }),
            0..2,
        ),
    )
        .prop_map(|(source, kind, agent, work, hook, predicates)| Selector {
            source,
            kind,
            agent,
            work,
            hook,
            predicates,
            ..Selector::default()
        })
        .boxed()
}

fn arb_query() -> BoxedStrategy<Query> {
    let s = arb_selector;
    prop_oneof![
        s().prop_map(|of| Query::Count { of }),
        s().prop_map(|of| Query::Exists { of }),
        s().prop_map(|of| Query::Absent { of }),
        (s(), s()).prop_map(|(first, then)| Query::Before { first, then }),
        (s(), s(), prop::option::of(0.001f64..1.0)).prop_map(|(after, then, seconds)| {
            Query::Within {
                after,
                then,
                seconds,
            }
        }),
        (
            s(),
            s(),
            prop::option::of(prop_oneof![Just(GroupBy::Agent), Just(GroupBy::Work)])
        )
            .prop_map(|(each, with, by)| Query::Pairs { each, with, by }),
        (s(), s(), prop::option::of(s())).prop_map(|(count, from, until)| Query::While {
            count,
            from,
            until
        }),
        (
            s(),
            any::<bool>(),
            prop::option::of(Just("(\\w+)".to_string()))
        )
            .prop_map(|(at, last, capture)| Query::Value {
                at,
                path: FieldPath::parse("fact").unwrap(),
                which: if last { Which::Last } else { Which::First },
                capture,
            }),
        (s(), s(), prop::option::of(s())).prop_map(|(each, by, unless)| Query::Followed {
            each,
            by,
            unless
        }),
        (s(), s()).prop_map(|(from, to)| Query::Gap { from, to }),
    ]
    .boxed()
}

fn end_reason() -> impl Strategy<Value = EndReason> {
    prop_oneof![
        Just(EndReason::Finished),
        Just(EndReason::Ceiling),
        Just(EndReason::Interrupted),
        Just(EndReason::WorkHung),
    ]
}

proptest! {
    #[test]
    fn any_query_on_any_timeline_observes_without_panicking(
        tl in arb_timeline(),
        query in arb_query(),
        end in end_reason(),
        expect in prop::option::of(prop_oneof![Just("yes".to_string()), Just(">= 1".to_string()), Just("0".to_string())]),
    ) {
        let check = Check { name: "c".into(), kind: None, agent: None, query: Some(query.clone()), expect, want: None, allow_empty: false, may_break: None, describes: None };
        let ev = Evidence { timeline: &tl, raw: &Default::default(), end };
        let r = &run_all(&ev, std::slice::from_ref(&check))[0];
        prop_assert!(!r.explanation.is_empty());
        if query.is_yes_no() {
            prop_assert!(["yes", "no", "not-observed"].contains(&r.observed.as_str()), "{}", r.observed);
        }
        if query.is_numeric() && r.observed != "not-observed" {
            // A gap is seconds, never negative; the other numbers are counts.
            let whole = r.observed.parse::<usize>().is_ok();
            let seconds = r.observed.parse::<f64>().is_ok_and(|s| s >= 0.0);
            prop_assert!(if matches!(query, Query::Gap { .. }) { seconds } else { whole }, "{}", r.observed);
        }
        if r.observed != "not-observed" && !matches!(query, Query::Absent { .. } | Query::Value { .. }) && r.observed != "0" && r.observed != "no" {
            prop_assert!(!r.witness.is_empty(), "{query:?} observed {} with no witness", r.observed);
        }
    }

    #[test]
    fn presets_in_the_query_form_agree_with_the_built_ins_on_any_timeline(
        tl in arb_timeline(),
        agent in prop_oneof![Just("main"), Just("worker")],
    ) {
        for kind in EXPRESSED {
            let ev = Evidence { timeline: &tl, raw: &Default::default(), end: EndReason::Finished };
            prop_assert_eq!(
                preset(kind).observe(&ev, agent).observed,
                reference::observe(kind, &tl, agent),
                "{}", kind.as_str()
            );
        }
    }
}

/// A check whose selectors matched nothing observed nothing: `vacuous`, neither pass nor fail,
/// with each selector's count; `absent`, `allow_empty` and an `exists` that states `no` (in
/// its `expect` or its `want`: no match is then the observation, often the bug itself) are not
/// vacuous. On a captured real run (seed 000's session): no `killed` task exists there.
#[test]
fn a_check_whose_selectors_match_nothing_is_vacuous_not_passed() {
    let f = load("seed000-session");
    let results = f.checks(
        r#"
[[checks]]
name = "nothing"
exists = { kind = "task_updated", status = "killed" }
expect = "yes"

[[checks]]
name = "nothing, as expected"
exists = { kind = "task_updated", status = "killed" }
expect = "no"

[[checks]]
name = "nothing, the bug"
exists = { kind = "task_updated", status = "killed" }
expect = "no"
want = "yes"

[[checks]]
name = "nothing, as wanted"
exists = { kind = "task_updated", status = "killed" }
expect = "yes"
want = "no"

[[checks]]
name = "nothing, allowed"
exists = { kind = "task_updated", status = "killed" }
allow_empty = true
expect = "no"

[[checks]]
name = "absent"
absent = { kind = "task_updated", status = "killed" }
expect = "yes"

[[checks]]
name = "something"
exists = { kind = "task_updated", work = "bg" }
expect = "yes"
"#,
    );
    let by = |n: &str| results.iter().find(|r| r.name == n).unwrap();
    let vacuous = by("nothing");
    assert!(vacuous.vacuous && vacuous.passed.is_none(), "{vacuous:?}");
    assert_eq!(vacuous.matched, vec![("of".to_string(), 0)]);
    assert!(vacuous.explanation.starts_with("Vacuous:"), "{vacuous:?}");
    for name in ["nothing, allowed", "absent", "nothing, as expected"] {
        let r = by(name);
        assert!(!r.vacuous && r.passed == Some(true), "{r:?}");
    }
    let bug = by("nothing, the bug");
    assert_eq!(
        (bug.vacuous, bug.passed, bug.meets_want),
        (false, Some(true), Some(false))
    );
    let fixed = by("nothing, as wanted");
    assert_eq!(
        (fixed.vacuous, fixed.passed, fixed.meets_want),
        (false, Some(false), Some(true))
    );
    let seen = by("something");
    assert!(!seen.vacuous && seen.passed == Some(true));
    assert_eq!(seen.matched, vec![("of".to_string(), 1)]);
    // A vacuous check with an expectation does not let the run match its expectations.
    let judgement = crate::classify::Judgement {
        outcome: crate::classify::Outcome::Woke,
        verdicts: vec![],
        checks: vec![vacuous.clone()],
        invariants: vec![],
        rejected_lines: vec![],
        faults: vec![],
    };
    assert!(!judgement.checks_pass());
}

/// `want` is judged beside `expect` and apart from it: a check can meet today's `expect` and
/// fail its `want` (the bug, still exiting 0), or the reverse (the fix); `want` takes a
/// variant table like `expect`; a vacuous check meets neither. On a captured real run.
#[test]
fn want_is_judged_beside_expect_and_apart_from_it() {
    let f = load("seed000-session");
    let results = f.checks(
        r#"
[[checks]]
name = "today"
exists = { kind = "task_updated", work = "bg" }
expect = "yes"
want = "no"

[[checks]]
name = "fixed"
count = { kind = "task_updated", work = "bg" }
expect = "0"
want = { session = ">= 1" }

[[checks]]
name = "vacuous"
count = { kind = "task_updated", status = "killed" }
expect = "0"
want = ">= 1"

[[checks]]
name = "absence"
exists = { kind = "task_updated", status = "killed" }
expect = "no"
want = "yes"
"#,
    );
    let by = |n: &str| results.iter().find(|r| r.name == n).unwrap();
    let today = by("today");
    assert_eq!((today.passed, today.meets_want), (Some(true), Some(false)));
    assert_eq!(today.want.as_deref(), Some("no"));
    let fixed = by("fixed");
    assert_eq!((fixed.passed, fixed.meets_want), (Some(false), Some(true)));
    assert_eq!(fixed.want.as_deref(), Some(">= 1"));
    let vacuous = by("vacuous");
    assert_eq!((vacuous.passed, vacuous.meets_want), (None, None));
    let judgement = crate::classify::Judgement {
        outcome: crate::classify::Outcome::Woke,
        verdicts: vec![],
        checks: results.clone(),
        invariants: vec![],
        rejected_lines: vec![],
        faults: vec![],
    };
    let unmet: Vec<&str> = judgement
        .unmet_wants()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    // Nothing matched an `exists` that states `no`: that absence is the bug, not vacuity.
    assert_eq!(unmet, ["today", "absence"]);
}

/// In a run cut short, a `want` the unseen rest could still change is left open, like an
/// `expect`: a count of 3 settles `>= 1` but not `<= 3`.
#[test]
fn a_want_the_unseen_rest_could_change_is_left_open() {
    let mut f = load("seed000-session");
    f.info.end = EndReason::Ceiling;
    let ev = Evidence {
        timeline: &f.timeline,
        raw: &f.raw,
        end: EndReason::Ceiling,
    };
    let check = |expect: &str, want: &str| Check {
        name: "c".into(),
        kind: None,
        agent: None,
        query: Some(Query::Count {
            of: Selector {
                kind: Some("task_updated".into()),
                ..Selector::default()
            },
        }),
        expect: Some(expect.into()),
        want: Some(want.into()),
        allow_empty: false,
        may_break: None,
        describes: None,
    };
    let r = run(&ev, &check(">= 1", "<= 3"));
    assert_eq!((r.passed, r.meets_want), (Some(true), None), "{r:?}");
    assert!(
        r.explanation
            .contains("whether it meets `<= 3` is left open"),
        "{}",
        r.explanation
    );
    let r = run(&ev, &check("<= 3", ">= 1"));
    assert_eq!((r.passed, r.meets_want), (None, Some(true)), "{r:?}");
}

/// A selector's `where` reaches the stream-json line an event was read from, under `line.`:
/// the fields the timeline does not keep (`result.subagent_stats`, the only sign in the
/// stream that a spawned subagent is still pending). On captured real runs of 2.1.332: print
/// mode's last `result` reports the subagent spawned and not completed, the session's (after
/// it was woken) completed.
#[test]
fn where_paths_reach_the_stream_json_line() {
    let last_completed = r#"value = { at = { type = "result" }, path = "line.subagent_stats.completed", which = "last" }"#;
    assert_eq!(observe("seed000-print", last_completed), "0");
    assert_eq!(observe("seed000-session", last_completed), "1");
    let pending = r#"count = { type = "result", where = [{ path = "line.subagent_stats.spawned", ge = 1 }, { path = "line.subagent_stats.completed", equals = 0 }] }"#;
    assert_eq!(observe("seed000-print", pending), "2");
    assert_eq!(observe("seed000-session", pending), "2");
    // A task event read from the stream reaches its line too.
    let task_line = r#"count = { kind = "task_updated", where = [{ path = "line.subtype", equals = "task_updated" }] }"#;
    assert_eq!(observe("seed000-session", task_line), "3");
    // An event not read from a line has none: refused at load.
    let f = load("seed000-session");
    let text = format!(
        "{}\n[[checks]]\nname = \"c\"\nexists = {{ kind = \"model_request\", where = [{{ path = \"line.type\", exists = true }}] }}\n",
        f.scenario
    );
    let err = Scenario::parse(Path::new("s.toml"), text)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`line.type` is not a field of `model_request`"),
        "{err}"
    );
}

/// `gap` observes the seconds from the first `from` to the first `to` after it, compared like
/// any number; `not-observed` where no `to` follows. On captured real runs of 2.1.332: in the
/// session `worker`'s request after `bg` ends comes as soon as the verdict's latency says, in
/// print mode none comes.
#[test]
fn gap_measures_seconds_between_two_events() {
    let check = r#"gap = { from = { kind = "track_ended", work = "bg" }, to = { kind = "model_request", agent = "worker" } }"#;
    let f = load("seed000-session");
    let plan = std::fs::read_to_string(fixture_dir("seed000-session").join("plan.json")).unwrap();
    let plan = serde_json::from_str(&plan).unwrap();
    let latency = crate::classify::judge_run(&f.info, &f.timeline, &plan, &f.raw)
        .verdicts
        .iter()
        .find(|v| v.waiter == "worker")
        .and_then(|v| v.latency_ms)
        .unwrap();
    let seconds: f64 = observe("seed000-session", check).parse().unwrap();
    assert!(
        seconds > 0.0 && (seconds - latency / 1000.0).abs() < 0.001,
        "{seconds} vs {latency} ms"
    );
    assert_eq!(observe("seed000-print", check), "not-observed");
    let results = f.checks(&format!(
        "[[checks]]\nname = \"soon\"\n{check}\nexpect = \"< 2\"\n"
    ));
    assert_eq!(
        results.last().unwrap().passed,
        Some(true),
        "{:?}",
        results.last()
    );
    assert_eq!(results.last().unwrap().witness.len(), 2);
}

/// `{{@task-id:NAME}}` in a `where` value is the task id the CLI gave work NAME in this run,
/// so "*bg's* notification reached worker" can be written, not just "a notification". On
/// captured real runs of 2.1.332: in the session `worker` is told of `bg` and `main` of
/// `worker`, never the other way round; in print mode `worker` is never told. A placeholder
/// naming no work, or another kind, is refused at load.
#[test]
fn task_ids_in_where_name_one_works_notification() {
    let told = |agent: &str, work: &str| {
        format!(
            r#"exists = {{ kind = "model_request", agent = "{agent}", where = [{{ path = "notifications[*].task_id", equals = "{{{{@task-id:{work}}}}}" }}] }}"#
        )
    };
    assert_eq!(observe("seed000-session", &told("worker", "bg")), "yes");
    assert_eq!(observe("seed000-session", &told("main", "worker")), "yes");
    assert_eq!(observe("seed000-session", &told("worker", "worker")), "no");
    assert_eq!(observe("seed000-session", &told("main", "bg")), "no");
    assert_eq!(observe("seed000-print", &told("worker", "bg")), "no");
    let f = load("seed000-session");
    for (value, error) in [
        (
            "{{@task-id:nope}}",
            "`{{@task-id:nope}}`: a `where` value names a task as",
        ),
        (
            "{{@agent-id:worker}}",
            "`{{@agent-id:worker}}`: a `where` value names a task as",
        ),
    ] {
        let text = format!(
            "{}\n[[checks]]\nname = \"c\"\nexists = {{ kind = \"model_request\", where = [{{ path = \"notifications[*].task_id\", contains = \"{value}\" }}] }}\n",
            f.scenario
        );
        let err = Scenario::parse(Path::new("s.toml"), text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(error) && err.contains("(this variant has: bg, worker)"),
            "{err}"
        );
    }
}
