//! End to end on the real Claude Code CLI (the pinned version, installed into the cache on
//! first use), at scaled-down durations: the seed-000 stall in print mode, and its kept-alive
//! variant.

use std::time::Duration;

use crate::common::*;
use serde_json::Value;

fn t(e: &Value) -> f64 {
    e["t_ms"].as_f64().unwrap()
}

#[test]
fn seed_000_stall_on_the_pinned_cli() {
    let _cli = cli_slots(2);
    let out = tempfile::tempdir().unwrap();
    // 8 s: longer than the CLI's ~5 s grace before it kills an orphaned task in print mode.
    let output = output_within(
        wakeprobe(&[
            "run",
            "subagent-bg-turn-end",
            "--set",
            "bg_seconds=8",
            "--quiet",
            "--out",
            out.path().to_str().unwrap(),
        ]),
        Duration::from_secs(240),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("not-resumable"), "{stdout}");

    let run_dir = run_dir(out.path());
    let runs = runs(&run_dir);
    assert_eq!(runs.len(), 2, "print and session runs: {runs:?}");
    let print = runs
        .iter()
        .find(|r| {
            r.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("print.")
        })
        .unwrap();
    let info = json(&print.join("run.json"));
    assert_eq!(info["cli_version_reported"], "2.1.332");
    assert_eq!(info["end"], "finished");
    assert_eq!(info["leftovers"].as_array().unwrap().len(), 0);

    let events = events(print);
    // SubagentStop for the worker whose background_tasks lists the shell task as running.
    let stop = kind(&events, "hook", Some("worker"))
        .into_iter()
        .find(|e| e["hook"] == "SubagentStop")
        .expect("a SubagentStop for the worker");
    let shell_running = stop["background_tasks"]
        .as_array()
        .expect("background_tasks in SubagentStop")
        .iter()
        .any(|task| task["type"] == "shell" && task["status"] == "running");
    assert!(shell_running, "the shell task is listed as running: {stop}");
    // The worker's last model request comes before that stop; none comes after it.
    let worker_requests = kind(&events, "model_request", Some("worker"));
    assert!(!worker_requests.is_empty());
    assert!(
        worker_requests.iter().all(|r| t(r) < t(stop)),
        "no worker request after SubagentStop"
    );
    // The shell task's end is recorded as killed, with its time.
    let killed = events.iter().find(|e| {
        (e["kind"] == "track_ended" && e["name"] == "bg" && e["exit"].get("signal").is_some())
            || (e["kind"] == "task_updated" && e["label"] == "bg" && e["status"] == "killed")
    });
    let killed = killed.expect("the shell task was killed");
    assert!(
        t(killed) > t(stop) + 3000.0,
        "killed seconds after the stop, not at once"
    );

    let result = json(&print.join("result.json"));
    assert_eq!(result["judgement"]["outcome"], "not-resumable");
    let verdict = &result["judgement"]["verdicts"][0];
    assert!(
        verdict["explanation"]
            .as_str()
            .unwrap()
            .contains("finalized"),
        "{verdict}"
    );
    assert!(verdict["witness"].as_array().unwrap().len() >= 3);

    // In a kept-alive session the same CLI re-invokes the worker when its task ends.
    let session = runs
        .iter()
        .find(|r| {
            r.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("session.")
        })
        .unwrap();
    let result = json(&session.join("result.json"));
    assert_eq!(result["judgement"]["outcome"], "woke", "{result}");
    let summary = json(&run_dir.join("summary.json"));
    assert_eq!(summary["cells"].as_array().unwrap().len(), 2);

    // Redaction: no written file holds the sandbox path, the real HOME or the dummy key.
    let home = std::env::var("HOME").unwrap();
    let sandbox_prefix = std::env::temp_dir()
        .join("wakeprobe-")
        .display()
        .to_string();
    let mut stack = vec![out.path().to_path_buf()];
    let mut scanned = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()) {
            let path = entry.path();
            let name = path.display().to_string();
            assert!(
                !name.contains(&sandbox_prefix),
                "a file name holds the sandbox path: {name}"
            );
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).to_string();
            scanned += 1;
            assert!(
                !text.contains(&sandbox_prefix),
                "{name} holds the sandbox path"
            );
            assert!(
                !text.contains("sk-ant-wakeprobe-dummy"),
                "{name} holds the dummy key"
            );
            if home.len() > 1 {
                assert!(
                    !text.contains(&format!("{home}/")),
                    "{name} holds the real HOME"
                );
            }
        }
    }
    assert!(scanned > 20, "scanned every written file ({scanned})");
}

/// One scenario file that calls `TaskStop` runs unchanged on a CLI that offers the tool
/// directly (2.1.228) and on one that defers it behind `ToolSearch` (2.1.332): the fake API
/// inserts the search on 2.1.332 only, says so in the journal and the timeline, and the stop
/// reaches the worker on both.
#[test]
fn a_taskstop_script_runs_unchanged_on_a_cli_that_defers_the_tool_and_one_that_does_not() {
    let _cli = cli_slots(2);
    let out = tempfile::tempdir().unwrap();
    let output = output_within(
        wakeprobe(&[
            "matrix",
            "--versions",
            "2.1.228,2.1.332",
            "--scenarios",
            "model-stops-subagent",
            "--set",
            "bg_seconds=7",
            "--quiet",
            "--out",
            out.path().to_str().unwrap(),
        ]),
        Duration::from_secs(400),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let runs = runs(&run_dir(out.path()));
    assert_eq!(runs.len(), 2, "{runs:?}");
    for run in runs {
        let version = json(&run.join("run.json"))["cli_version"]
            .as_str()
            .unwrap()
            .to_string();
        let journal: Vec<Value> = std::fs::read_to_string(run.join("api-journal.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let searches: Vec<&Value> = journal
            .iter()
            .filter(|j| j["answer"] == "tool_use:ToolSearch")
            .collect();
        let events = events(&run);
        let inserted = events
            .iter()
            .filter(|e| e["kind"] == "tool_call" && e["inserted"] == true)
            .count();
        match version.as_str() {
            "2.1.332" => {
                assert_eq!(searches.len(), 1, "{journal:?}");
                assert!(
                    searches[0]["note"]
                        .as_str()
                        .unwrap()
                        .contains("defers `TaskStop`"),
                    "{}",
                    searches[0]
                );
                assert_eq!(inserted, 1);
            }
            _ => {
                assert!(searches.is_empty(), "{version}: {journal:?}");
                assert_eq!(inserted, 0);
            }
        }
        // The scripted stop itself, aimed at the worker, on both.
        let stop = events
            .iter()
            .find(|e| e["kind"] == "tool_call" && e["tool"] == "TaskStop")
            .unwrap_or_else(|| panic!("{version}: a TaskStop call"));
        assert_eq!(stop["target"], "worker", "{stop}");
        assert!(
            journal.iter().any(|j| j["answer"] == "tool_use:TaskStop"),
            "{version}"
        );
    }
}

/// A version that does not offer a tool the script calls ends the run as `unknown`, saying
/// which version lacks which tool, never a confusing error or a wrong verdict: 2.1.228 has no
/// Monitor.
#[test]
fn a_tool_the_version_does_not_offer_ends_the_run_as_unknown_with_the_reason() {
    let _cli = cli_slots(1);
    let out = tempfile::tempdir().unwrap();
    let output = output_within(
        wakeprobe(&[
            "run",
            "subagent-monitor",
            "--variant",
            "idle",
            "--claude-version",
            "2.1.228",
            "--quiet",
            "--out",
            out.path().to_str().unwrap(),
        ]),
        Duration::from_secs(200),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    // The pinned CLI's expectation (woke) does not hold here: exit 1, not a crash.
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("2.1.228 offers no Monitor tool"),
        "{stdout}"
    );
    let run = runs(&run_dir(out.path())).remove(0);
    let info = json(&run.join("run.json"));
    assert_eq!(info["end"], "tool-unavailable");
    let result = json(&run.join("result.json"));
    assert_eq!(result["judgement"]["outcome"], "unknown");
    let reason = result["judgement"]["verdicts"][0]["reason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("2.1.228 offers no Monitor tool"),
        "{reason}"
    );
    let events = events(&run);
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "tool_unavailable" && e["tool"] == "Monitor"),
        "the timeline says so"
    );
}

/// `threshold` on the pinned real CLI brackets the print stall's flip near the CLI's ~5 s
/// orphan grace (measured by hand from 1 to 12 at 0.1 s: `woke` up to 5.3, `not-resumable`
/// from 5.5; under heavy load one run in two at 2 s was `not-resumable`, so the low end is
/// 3). About a minute of real runs, so by hand:
/// `cargo test --test e2e -- --ignored threshold_on_the_pinned_cli`.
#[test]
#[ignore]
fn threshold_on_the_pinned_cli_brackets_the_orphan_grace() {
    let _cli = cli_slots(2);
    let out = tempfile::tempdir().unwrap();
    let output = output_within(
        wakeprobe(&[
            "threshold",
            "subagent-bg-turn-end/print",
            "--param",
            "bg_seconds",
            "--from",
            "3",
            "--to",
            "9",
            "--precision",
            "1",
            "--repeat",
            "2",
            "--quiet",
            "--out",
            out.path().to_str().unwrap(),
        ]),
        Duration::from_secs(600),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let t = json(&run_dir(out.path()).join("threshold.json"));
    assert_eq!(t["cli"], "claude-2.1.332");
    let side = |name: &str| {
        (
            t["threshold"][name]["value"].as_f64().unwrap(),
            t["threshold"][name]["agreed"].as_str().unwrap().to_string(),
        )
    };
    let (below, woke) = side("below");
    let (above, stalled) = side("above");
    assert_eq!((woke.as_str(), stalled.as_str()), ("woke", "not-resumable"));
    assert!(
        (4.0..=5.0).contains(&below) && (5.0..=7.0).contains(&above) && below < above,
        "[{below}, {above}]: {stdout}"
    );
}
