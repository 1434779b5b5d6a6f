//! The edges of the relations, on small timelines built for them: an event both selectors
//! pick (it is not before, after or followed by itself), the end of a `within` window on a run
//! cut short, which broken `pairs` the unseen rest could still mend, the two ends of a `while`
//! interval, and the words each explanation is made of.

use std::path::Path;

use serde_json::json;

use super::*;
use crate::evidence::run::EndReason;
use crate::evidence::test_events::{call, ev, request};
use crate::evidence::{Event, EventKind, InputReason, Source, Timeline};
use crate::scenario::Scenario;

const SCENARIO: &str = r#"
name = "edges"
title = "Edges"
summary = "relation edges"

[driver]
mode = "print"
prompt = "go"
ceiling_seconds = 60

[[agents.main.steps]]
call = "Agent"
spawn = "worker"
input = { description = "w", subagent_type = "general-purpose", prompt = "w" }

[[agents.main.steps]]
say = "done"

[[agents.worker.steps]]
call = "Bash"
track = "bg"
input = { command = "true" }

[[agents.worker.steps]]
say = "done"
"#;

/// An input to `main` at `t_ms` whose text is `text`: an event a selector can pick by its text.
fn input(t_ms: f64, text: &str) -> Event {
    ev(
        t_ms,
        Source::Driver,
        Some("main"),
        EventKind::UserInput {
            text: text.into(),
            why: InputReason::Scheduled,
        },
    )
}

/// Inputs at one-second steps, named by `texts`.
fn inputs(texts: &[&str]) -> Vec<Event> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| input(1000.0 * (i as f64 + 1.0), t))
        .collect()
}

/// The selector of the inputs whose text is `text`.
fn named(text: &str) -> String {
    format!(r#"{{ kind = "user_input", where = [{{ path = "text", equals = "{text}" }}] }}"#)
}

/// The result of one check (`body` plus `expect`) over `events`, on a run that ended as `end`.
fn judge(events: Vec<Event>, end: EndReason, body: &str, expect: &str) -> CheckResult {
    let source = format!("{SCENARIO}\n[[checks]]\nname = \"c\"\n{body}\nexpect = \"{expect}\"\n");
    let scenario = Scenario::parse(Path::new("edges.toml"), source).unwrap();
    let plan = scenario.plan("print", &[]).unwrap();
    let timeline = Timeline::new(events);
    let raw = RawSources::default();
    let ev = Evidence {
        timeline: &timeline,
        raw: &raw,
        end,
    };
    run_all(&ev, &plan.checks).remove(0)
}

/// A relation's observation on a finished run (any expectation of its kind will do).
fn observe(events: Vec<Event>, body: &str) -> CheckResult {
    let numeric = ["gap", "while", "count", "followed"]
        .iter()
        .any(|r| body.starts_with(r));
    judge(
        events,
        EndReason::Finished,
        body,
        if numeric { ">= 0" } else { "yes" },
    )
}

#[test]
fn an_event_both_selectors_pick_is_not_related_to_itself() {
    let a = named("a");
    let one = || inputs(&["a"]);
    let before = observe(one(), &format!("before = {{ first = {a}, then = {a} }}"));
    assert_eq!(before.observed, "no", "{}", before.explanation);
    let gap = observe(one(), &format!("gap = {{ from = {a}, to = {a} }}"));
    assert_eq!(gap.observed, "not-observed", "{}", gap.explanation);
    let within = observe(one(), &format!("within = {{ after = {a}, then = {a} }}"));
    assert_eq!(within.observed, "no", "{}", within.explanation);
    let followed = observe(
        inputs(&["a", "a"]),
        &format!("followed = {{ each = {a}, by = {a} }}"),
    );
    assert_eq!(followed.observed, "1", "{}", followed.explanation);
    let gap = observe(
        inputs(&["a", "x", "a"]),
        &format!("gap = {{ from = {a}, to = {a} }}"),
    );
    assert_eq!(gap.observed, "2.000", "{}", gap.explanation);
}

#[test]
fn a_within_window_closes_once_the_run_saw_past_it() {
    // `a` at 1 s, nothing it waits for, the run seen up to 5 s, then cut by its ceiling.
    let events = || inputs(&["a", "x", "x", "x", "x"]);
    let check = |seconds: f64| {
        judge(
            events(),
            EndReason::Ceiling,
            &format!(
                "within = {{ after = {}, then = {}, seconds = {seconds} }}",
                named("a"),
                named("b")
            ),
            "yes",
        )
    };
    // Seen past the window (5 s >= 1 s + 2 s, and exactly at its end): late whatever comes.
    assert_eq!(check(2.0).passed, Some(false), "{}", check(2.0).explanation);
    assert_eq!(check(4.0).passed, Some(false), "{}", check(4.0).explanation);
    // The window still open when the run was cut: undecided.
    assert_eq!(check(10.0).passed, None, "{}", check(10.0).explanation);
    assert_eq!(check(4.5).passed, None, "{}", check(4.5).explanation);
    assert!(
        check(10.0).explanation.contains("by its ceiling"),
        "{}",
        check(10.0).explanation
    );
}

#[test]
fn only_a_partner_missing_at_the_end_of_a_cut_run_is_left_open() {
    let body = format!("pairs = {{ each = {}, with = {} }}", named("a"), named("b"));
    let cut = |texts: &[&str]| judge(inputs(texts), EndReason::Ceiling, &body, "yes");
    // The last `a` may yet get its `b`.
    let open = cut(&["a", "b", "a"]);
    assert_eq!(
        (open.observed.as_str(), open.passed),
        ("no", None),
        "{}",
        open.explanation
    );
    // A `b` twice is final, whatever comes.
    let twice = cut(&["a", "b", "b", "a"]);
    assert_eq!(twice.passed, Some(false), "{}", twice.explanation);
    assert!(
        twice.explanation.contains("had a second"),
        "{}",
        twice.explanation
    );
    let orphan = cut(&["b", "a"]);
    assert_eq!(orphan.passed, Some(false), "{}", orphan.explanation);
}

#[test]
fn a_while_interval_counts_what_is_strictly_inside_it() {
    // Opened by `f`, closed by `u`; every input is counted, the ends excluded.
    let body = r#"while = { count = { kind = "user_input" }, from = FROM, until = UNTIL }"#
        .replace("FROM", &named("f"))
        .replace("UNTIL", &named("u"));
    let r = observe(inputs(&["c", "f", "c", "u", "c", "f", "c"]), &body);
    assert_eq!(r.observed, "2", "{}", r.explanation);
    assert!(r.explanation.contains("held twice"), "{}", r.explanation);
    let r = observe(inputs(&["f", "c", "u"]), &body);
    assert!(r.explanation.contains("held once"), "{}", r.explanation);
    assert!(
        r.explanation
            .contains("first from the user inputs where `text` is \"f\" at 1.00 s"),
        "{}",
        r.explanation
    );
}

#[test]
fn explanations_name_the_selectors_in_words() {
    let r = observe(
        inputs(&["a", "a", "a"]),
        &format!(
            r#"value = {{ at = {}, path = "text", which = "last" }}"#,
            named("a")
        ),
    );
    assert!(
        r.explanation
            .starts_with("At the last of the user inputs where `text` is "),
        "{}",
        r.explanation
    );
    assert!(r.explanation.contains("(at 3.00 s)"), "{}", r.explanation);
    let r = observe(
        inputs(&["a"]),
        r#"exists = { kind = "user_input", agent = "main", where = [{ path = "text", contains = "zz" }, { path = "why", exists = true }] }"#,
    );
    assert!(
        r.explanation
            .contains("user inputs of `main` where `text` contains “zz” and `why` exists"),
        "{}",
        r.explanation
    );
    let r = observe(inputs(&["a"]), r#"exists = { kind = "work_overdue" }"#);
    assert!(
        r.explanation.contains("work overdue events"),
        "{}",
        r.explanation
    );
}

/// Events a selector's `work`, `tool` and `status` reach beyond the CLI's own: watched work
/// past its bound, and what an integration showed.
#[test]
fn work_tool_and_status_reach_overdue_work_and_shown_lines() {
    let shown = |t_ms: f64, line: serde_json::Value| {
        let line = serde_json::from_value(line).unwrap();
        ev(t_ms, Source::Integration, None, EventKind::Shown(line))
    };
    let events = || {
        vec![
            input(500.0, "a"),
            Event {
                agent: Some("worker".into()),
                ..input(700.0, "w")
            },
            shown(1500.0, json!({"shown": "tool_card", "tool": "Bash"})),
            shown(2000.0, json!({"shown": "status", "status": "idle"})),
            // Last: watched work past its bound ends what the run saw.
            ev(
                3000.0,
                Source::Driver,
                None,
                EventKind::WorkOverdue {
                    work: "bg".into(),
                    bound_s: 1.0,
                },
            ),
        ]
    };
    for (body, want) in [
        (r#"count = { kind = "work_overdue", work = "bg" }"#, "1"),
        (r#"count = { kind = "shown" }"#, "2"),
        (r#"count = { kind = "shown", tool = "Bash" }"#, "1"),
        (r#"count = { kind = "shown", status = "idle" }"#, "1"),
        // A spawned agent's own events are about it.
        (r#"count = { kind = "user_input", work = "worker" }"#, "1"),
    ] {
        assert_eq!(observe(events(), body).observed, want, "{body}");
    }
}

/// `equals` on a number compares values (an integer in the file, a float in the timeline);
/// `contains` on a list is a whole item of it.
#[test]
fn equals_compares_numbers_and_contains_takes_whole_list_items() {
    let mut request = request(2000.0, "main", 1, &[]);
    if let EventKind::ModelRequest { user_text, .. } = &mut request.kind {
        *user_text = vec!["hello there".into()];
    }
    let events = || vec![input(1000.0, "a"), request.clone()];
    for (body, want) in [
        (
            r#"count = { kind = "user_input", where = [{ path = "t_ms", equals = 1000 }] }"#,
            "1",
        ),
        (
            r#"count = { kind = "model_request", where = [{ path = "user_text", contains = "hello there" }] }"#,
            "1",
        ),
        (
            r#"count = { kind = "model_request", where = [{ path = "user_text", contains = "hello" }] }"#,
            "0",
        ),
    ] {
        assert_eq!(observe(events(), body).observed, want, "{body}");
    }
}

/// A finalized agent's side call (the CLI's title or summary request, tagged with the agent) is
/// not the agent running again: only a turn's request after a finalization counts as a
/// blocked stop.
#[test]
fn a_side_call_after_a_finalization_is_no_blocked_stop() {
    let finalized = ev(
        1000.0,
        Source::Hook,
        Some("worker"),
        EventKind::AgentFinalized {
            hook: crate::evidence::HookName::SubagentStop,
        },
    );
    let mut side = request(2000.0, "worker", 3, &[]);
    if let EventKind::ModelRequest { route, .. } = &mut side.kind {
        *route = crate::evidence::Route::SideCall("activity-summary".into());
    }
    let turn = request(3000.0, "worker", 4, &[]);
    let blocked = |events: Vec<Event>| {
        let timeline = Timeline::new(events);
        let raw = RawSources::default();
        let ev = Evidence {
            timeline: &timeline,
            raw: &raw,
            end: EndReason::Finished,
        };
        preset(crate::scenario::CheckKind::GuardBlockedOnce)
            .observe(&ev, "worker")
            .observed
    };
    assert_eq!(blocked(vec![finalized.clone(), side]), "not-blocked");
    assert_eq!(blocked(vec![finalized, turn]), "blocked-once");
}

/// A tool call is about the work it spawns, tracks or targets, though it is the caller's
/// event: `work = "worker"` picks main's Agent call that spawned `worker`.
#[test]
fn a_tool_call_is_about_the_work_it_spawns() {
    let spawn = call(500.0, Some("main"), true, Some("worker"), None);
    let body = r#"count = { kind = "tool_call", work = "worker" }"#;
    assert_eq!(observe(vec![spawn], body).observed, "1");
}
