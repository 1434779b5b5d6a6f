//! The simulator on the scenarios that need the tools 2.1.332 defers or adds: a model-side
//! TaskStop (`model-stops-subagent`), a subagent's Monitor (`subagent-monitor`), a `result`
//! while a worker runs (`result-while-running`) and an idle teammate's own task
//! (`teammate-task-wake`). Each must end as the real CLI does, verdict and every check, and
//! show the events that decide it. Durations are scaled down only as far as each scenario's
//! margins allow (see each cell); the runs go in parallel, bounded.

use std::time::Duration;

use serde_json::Value;

use super::sim_profiles::{Run, check_run, run_sim};

/// One scenario at the parameters it runs with here.
struct Cell {
    scenario: &'static str,
    /// `bg_seconds`: long enough for each scenario's races to keep their order (the stop
    /// comes 2 s in; the working monitor's event lands inside a foreground command 2 s
    /// shorter than the monitor).
    bg_seconds: u32,
    /// What the scenario's own runs must also show.
    extra: fn(&Run),
}

const CELLS: [Cell; 4] = [
    Cell {
        scenario: "model-stops-subagent",
        bg_seconds: 6,
        extra: stopped_by_the_model,
    },
    Cell {
        scenario: "subagent-monitor",
        bg_seconds: 4,
        extra: monitor_reaches_its_owner,
    },
    Cell {
        scenario: "result-while-running",
        bg_seconds: 4,
        extra: |_| {},
    },
    Cell {
        scenario: "teammate-task-wake",
        bg_seconds: 4,
        extra: idle_teammate_not_told,
    },
];

const PROFILE: &str = "finalize-on-turn-end";

#[test]
fn the_new_tool_scenarios_end_on_the_simulator_as_on_the_real_cli() {
    let failures = std::sync::Mutex::new(Vec::<String>::new());
    std::thread::scope(|scope| {
        for cell in &CELLS {
            let failures = &failures;
            scope.spawn(move || {
                let outcome = std::panic::catch_unwind(|| {
                    let sets = vec![("bg_seconds".to_string(), cell.bg_seconds.to_string())];
                    let runs =
                        run_sim(cell.scenario, PROFILE, &sets, &[], Duration::from_secs(150));
                    for run in &runs {
                        check_run(cell.scenario, PROFILE, run);
                        as_expected(cell.scenario, run);
                        (cell.extra)(run);
                    }
                });
                if let Err(e) = outcome {
                    let message = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    failures
                        .lock()
                        .unwrap()
                        .push(format!("{}: {message}", cell.scenario));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The scenario's expected verdict, and every check observed as it expects.
fn as_expected(scenario: &str, run: &Run) {
    let judgement = &run.result["judgement"];
    assert_eq!(
        judgement["outcome"],
        run.result["expect"],
        "{scenario}/{}",
        run.describe()
    );
    let checks = judgement["checks"].as_array().cloned().unwrap_or_default();
    assert!(!checks.is_empty(), "{scenario}/{}: no checks", run.variant);
    for c in &checks {
        assert_eq!(
            c["passed"], true,
            "{scenario}/{}: check `{}` observed {} (expected {}): {}",
            run.variant, c["name"], c["observed"], c["expected"], c["explanation"]
        );
    }
    assert_eq!(
        run.result["matches_expect"],
        true,
        "{scenario}/{}",
        run.describe()
    );
}

/// Notifications in the requests of `agent`, flattened.
fn notifications<'a>(run: &'a Run, agent: &'a str) -> Vec<&'a Value> {
    run.kind("model_request", Some(agent))
        .flat_map(|e| e["notifications"].as_array().into_iter().flatten())
        .collect()
}

/// TaskStop loaded through ToolSearch; main told `killed`; the worker gets no SubagentStop.
fn stopped_by_the_model(run: &Run) {
    let worker = run.task_ids("worker");
    assert!(!worker.is_empty(), "{}", run.describe());
    let told = notifications(run, "main");
    assert!(
        told.iter()
            .any(|n| n["status"] == "killed" && worker.iter().any(|id| n["task_id"] == id.as_str())),
        "main is told the worker was killed: {told:?}"
    );
    assert!(
        run.hooks("SubagentStop", "worker").is_empty(),
        "{}",
        run.describe()
    );
    let stop_calls = run
        .kind("tool_call", Some("main"))
        .filter(|e| e["tool"] == "TaskStop")
        .count();
    assert_eq!(stop_calls, 1, "{}", run.describe());
    // 2.1.332 defers TaskStop: the fake API had to load it with a ToolSearch first.
    assert!(
        run.kind("tool_call", Some("main"))
            .any(|e| e["tool"] == "ToolSearch" && e["inserted"] == true),
        "{}",
        run.describe()
    );
}

/// The monitor's event and its end both reach the worker, never the main agent.
fn monitor_reaches_its_owner(run: &Run) {
    let mon = run.task_ids("mon");
    assert_eq!(mon.len(), 1, "{}", run.describe());
    let worker = notifications(run, "worker");
    let of_mon = |n: &&&Value| n["task_id"] == mon[0].as_str();
    assert!(
        worker
            .iter()
            .filter(of_mon)
            .any(|n| n["event"] == "MONITOR_FIRED"),
        "{worker:?}"
    );
    assert!(
        worker
            .iter()
            .filter(of_mon)
            .any(|n| n["status"] == "completed"),
        "the worker is told the monitor's stream ended: {worker:?}"
    );
    assert!(
        !notifications(run, "main")
            .iter()
            .any(|n| n["task_id"] == mon[0].as_str()),
        "{}",
        run.describe()
    );
}

/// The watcher's own command never reaches it: none of its requests carries a notification
/// (a pseudo-terminal run has no stream lines to name the task by; the watcher has no other).
fn idle_teammate_not_told(run: &Run) {
    assert!(
        run.kind("model_request", Some("watcher")).count() > 0,
        "{}",
        run.describe()
    );
    let told = notifications(run, "watcher");
    assert!(told.is_empty(), "{}: {told:?}", run.describe());
}
