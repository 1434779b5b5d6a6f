//! The simulator on the behaviours of 2.1.332 that `wakeprobe fuzz` found it lacked, each on
//! the small scenario that shows it (`tests/fixtures/scenarios/fuzz/`, shrunk by hand from the
//! fuzzer's cases; each has the same shape on 2.1.332 under `wakeprobe conform`). A test here
//! fails when the simulator loses the behaviour again. (What the stream-json prints for a
//! foreground subagent is compared by `conform` on those fixtures, not here: the timeline does
//! not keep it.)

use std::time::Duration;

use super::sim_profiles::{Run, check_run, run_sim};
use crate::common::*;

const PROFILE: &str = "finalize-on-turn-end";

fn run_fixture(name: &str) -> Run {
    let _slots = cli_slots(1);
    let path = format!("tests/fixtures/scenarios/fuzz/{name}.toml");
    let mut runs = run_sim(&path, PROFILE, &[], &[], Duration::from_secs(120));
    assert_eq!(runs.len(), 1, "{name}: one run");
    let run = runs.remove(0);
    check_run(name, PROFILE, &run);
    run
}

/// The `background_tasks` of every Stop or SubagentStop payload `agent`'s hooks received, as
/// descriptions.
fn listed_tasks(run: &Run, hook: &str, agent: &str) -> Vec<Vec<String>> {
    run.hooks(hook, agent)
        .iter()
        .map(|e| descriptions(&e["background_tasks"]))
        .collect()
}

/// The descriptions of a list of tasks.
fn descriptions(tasks: &serde_json::Value) -> Vec<String> {
    tasks
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["description"].as_str().map(str::to_string))
        .collect()
}

fn track_seconds(run: &Run, name: &str) -> f64 {
    let at = |kind: &str| {
        run.kind(kind, None)
            .find(|e| e["name"] == name)
            .and_then(|e| e["t_ms"].as_f64())
            .unwrap_or_else(|| panic!("no {kind} for {name}: {}", run.describe()))
    };
    (at("track_ended") - at("track_started")) / 1000.0
}

#[test]
fn a_foreground_subagents_commands_die_with_it_and_it_is_no_background_task() {
    let run = run_fixture("fg-subagent-shells");
    // Both 3 s commands are killed as their foreground subagent returns.
    for track in ["b1", "b2"] {
        let seconds = track_seconds(&run, track);
        assert!(seconds < 2.0, "{track} ran {seconds} s: {}", run.describe());
    }
    // No agent is re-invoked or told: a1 and a3 report through the Agent call's result.
    for agent in ["a1", "a3"] {
        assert_eq!(run.hooks("SubagentStart", agent).len(), 1, "{agent}");
        let ids = run.task_ids(agent);
        assert!(
            run.notified("main", &ids).is_empty(),
            "{agent} notified main"
        );
        assert!(run.notified("a2", &ids).is_empty(), "{agent} notified a2");
    }
    // A foreground subagent is not a background task, not even in its own SubagentStop.
    for stop in listed_tasks(&run, "SubagentStop", "a1") {
        assert!(!stop.contains(&"Worker a1".to_string()), "{stop:?}");
    }
    // Returning, it hands nothing over: the lists are those of the tasks' own changes, as
    // 2.1.332 prints them.
    assert_eq!(
        tasks_changed(&run),
        [
            vec!["Command b1"],
            vec![],
            vec!["Worker a2"],
            vec!["Worker a2", "Command b2"],
            vec!["Worker a2"],
            vec![],
        ],
        "{}",
        run.describe()
    );
}

#[test]
fn a_foreground_subagent_that_hands_over_a_running_agent_prints_the_list_again() {
    let run = run_fixture("fg-hands-over");
    // a2's start, then a1's return with a2 still running: the same list twice.
    let lists = tasks_changed(&run);
    assert_eq!(
        lists.get(..3),
        Some(
            &[
                vec!["Worker a2".to_string()],
                vec!["Worker a2".to_string()],
                vec!["Worker a2".to_string(), "Command b1".to_string()],
            ][..]
        ),
        "{lists:?} {}",
        run.describe()
    );
}

#[test]
fn an_interactive_subagent_reports_only_after_its_agents_first_report() {
    let run = run_fixture("interactive-nested-report");
    let describe = run.describe();
    // a1's turn ends while a2 is in its first run: a1 does not report, and no later
    // background_tasks lists it as running (a2's first SubagentStop, here).
    let a2_stops = listed_tasks(&run, "SubagentStop", "a2");
    assert!(
        a2_stops
            .first()
            .is_some_and(|l| !l.contains(&"Worker a1".to_string())),
        "{a2_stops:?}: {describe}"
    );
    // a2's first report re-invokes a1, which then reports to main, once. (A pty prints no
    // task lines: an agent's task id is its agent id.)
    assert_eq!(run.hooks("SubagentStart", "a1").len(), 2, "{describe}");
    let agent_id = |agent: &str| -> Vec<String> {
        run.hooks("SubagentStart", agent)
            .iter()
            .filter_map(|e| e["agent_id"].as_str().map(str::to_string))
            .take(1)
            .collect()
    };
    let (a1, a2) = (agent_id("a1"), agent_id("a2"));
    assert_eq!(run.notified("a1", &a2).len(), 1, "{describe}");
    assert_eq!(run.notified("main", &a1).len(), 1, "{describe}");
    // a2's re-run (for its command) reports to main, not to a1 again.
    assert_eq!(run.hooks("SubagentStart", "a2").len(), 2, "{describe}");
    assert_eq!(run.notified("main", &a2).len(), 1, "{describe}");
}

#[test]
fn the_main_agent_is_nudged_once_after_five_silent_tool_calls() {
    let run = run_fixture("quiet-nudge");
    let nudged = |agent: &str| -> Vec<u64> {
        run.kind("model_request", Some(agent))
            .filter(|e| {
                e["injected"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("The user hasn't heard from you"))
            })
            .filter_map(|e| e["step"].as_u64())
            .collect()
    };
    // main's fifth tool call (the Agent call and four commands) is answered with step 5's
    // request, which carries the nudge; the sixth is not. a1's six calls never are.
    assert_eq!(nudged("main"), [5], "{}", run.describe());
    assert_eq!(nudged("a1"), Vec::<u64>::new(), "{}", run.describe());
}

/// Every `background_tasks_changed` list the stream printed, as descriptions, in order.
fn tasks_changed(run: &Run) -> Vec<Vec<String>> {
    run.stream
        .iter()
        .map(|v| v.get("line").unwrap_or(v))
        .filter(|l| l["subtype"] == "background_tasks_changed")
        .map(|l| descriptions(&l["tasks"]))
        .collect()
}

#[test]
fn a_subagent_is_not_woken_by_its_own_subagent_and_may_not_stop_it() {
    let run = run_fixture("nested-reports");
    // a1's TaskStop of a2 is refused: a2's 4 s command runs to its end.
    let seconds = track_seconds(&run, "long");
    assert!(seconds > 3.5, "the refused stop cut `long` at {seconds} s");
    // a2's reports do not re-invoke the finalized a1: they go to the main agent. a2's own
    // command re-invokes a2.
    assert_eq!(
        run.hooks("SubagentStart", "a1").len(),
        1,
        "{}",
        run.describe()
    );
    assert_eq!(
        run.hooks("SubagentStart", "a2").len(),
        2,
        "{}",
        run.describe()
    );
    let a2 = run.task_ids("a2");
    assert!(run.notified("a1", &a2).is_empty(), "{}", run.describe());
    assert!(!run.notified("main", &a2).is_empty(), "{}", run.describe());
    // Outside interactive sessions a subagent's transcript keeps no `toolUseResult` for a
    // launch, so no async launch is read from a1's transcript.
    assert!(
        run.kind("transcript_fact", Some("a1"))
            .all(|e| e["fact"] != "async-launch"),
        "{}",
        run.describe()
    );
}

#[test]
fn an_interactive_session_launches_a_foreground_agent_in_the_background() {
    let run = run_fixture("interactive-foreground");
    // The main agent's first turn ends while a1 runs: its Stop lists a1.
    let stops = listed_tasks(&run, "Stop", "main");
    assert!(
        stops
            .first()
            .is_some_and(|s| s.contains(&"Worker a1".to_string())),
        "{stops:?}: {}",
        run.describe()
    );
    // a1's command outlives it and re-invokes it.
    assert!(track_seconds(&run, "b1") > 2.5);
    assert_eq!(
        run.hooks("SubagentStart", "a1").len(),
        2,
        "{}",
        run.describe()
    );
}

#[test]
fn a_task_stop_naming_no_task_is_refused_before_its_hooks() {
    let run = run_fixture("task-stop-unknown");
    let tool_hooks: Vec<&serde_json::Value> = run
        .kind("hook", Some("main"))
        .filter(|e| e["detail"] == "TaskStop")
        .collect();
    assert_eq!(
        tool_hooks,
        Vec::<&serde_json::Value>::new(),
        "{}",
        run.describe()
    );
    let refused = run
        .kind("model_request", Some("main"))
        .filter(|e| {
            e["tool_errors"]
                .to_string()
                .contains("No task found with ID: no-such-task")
        })
        .count();
    assert_eq!(refused, 1, "{}", run.describe());
}

/// The request after main's fifth silent call brings a1's report and the nudge in one
/// system message: the fake API reads it as the notification, with no other new text (as a
/// message of its own, the nudge would be the request's injected text).
#[test]
fn the_quiet_nudge_follows_a_notification_in_one_system_message() {
    let run = run_fixture("nudge-with-report");
    let notified: Vec<&serde_json::Value> = run
        .kind("model_request", Some("main"))
        .filter(|e| e["notifications"].as_array().is_some_and(|n| !n.is_empty()))
        .collect();
    assert_eq!(notified.len(), 1, "{}", run.describe());
    assert_eq!(notified[0]["step"], 5, "{}", run.describe());
    assert_eq!(
        notified[0]["injected"],
        serde_json::Value::Null,
        "{}",
        notified[0]
    );
}

/// The side calls `agent`'s conversation made, by what they asked.
fn side_calls(run: &Run, agent: &str) -> Vec<(String, f64)> {
    run.kind("model_request", Some(agent))
        .filter(|e| e["route"]["route"] == "side_call")
        .map(|e| {
            (
                e["route"]["detail"].as_str().unwrap_or("?").to_string(),
                e["t_ms"].as_f64().unwrap_or(0.0),
            )
        })
        .collect()
}

#[test]
fn an_interactive_session_asks_once_what_a_long_working_agent_is_doing() {
    let run = run_fixture("working-agent-summary");
    let calls = side_calls(&run, "a1");
    assert_eq!(calls.len(), 1, "{calls:?}: {}", run.describe());
    assert_eq!(calls[0].0, "activity-summary");
    let start = run.hooks("SubagentStart", "a1")[0]["t_ms"]
        .as_f64()
        .unwrap();
    let after = (calls[0].1 - start) / 1000.0;
    assert!(
        (29.5..32.0).contains(&after),
        "asked {after} s after the start"
    );
    // It is no step of a1's: a1's script still ends with its own text, and the run finishes.
    assert_eq!(run.run["end"], "finished", "{}", run.describe());
    assert!(side_calls(&run, "main").is_empty());
}

#[test]
fn a_long_leading_sleep_in_the_foreground_is_refused_before_its_hooks() {
    let run = run_fixture("long-sleep-refused");
    let commands: Vec<String> = run
        .hooks("PreToolUse", "main")
        .iter()
        .filter_map(|e| e["detail"].as_str().map(str::to_string))
        .collect();
    // Two of the three Bash calls reach PreToolUse: the refused one has no hook.
    assert_eq!(commands, ["Bash", "Bash"], "{}", run.describe());
    let refused = run
        .kind("model_request", Some("main"))
        .flat_map(|e| e["tool_errors"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t.as_str().map(str::to_string))
        .collect::<Vec<_>>();
    assert!(
        refused
            .iter()
            .any(|t| t.contains("Blocked: sleep 30 followed by: exit 0")),
        "{refused:?}"
    );
}
