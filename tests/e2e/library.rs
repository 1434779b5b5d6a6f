//! The scenario library on the pinned real CLI, every scenario and variant at scaled-down
//! durations in one parallel invocation: each verdict and check must match the scenario's
//! `expect`, and no process may be left; seed 000's stall is read in detail from its runs.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::common::*;

/// Run first by `a_library_run_matches_every_expectation_on_the_pinned_cli` (see there).
pub fn every_scenario_matches_its_expectation_on_the_pinned_cli() {
    // A slot for each of its jobs; the three left let the seed's conformance test (or a few
    // short real-CLI tests) run beside it.
    let jobs = CLI_SLOTS - 3;
    let _cli = cli_slots(jobs);
    let out = tempfile::tempdir().unwrap();
    // 12 s: over twice the CLI's ~5 s grace before it kills an orphaned task in print mode,
    // short enough for a test (the positive control's 90 s default runs in 12 s here). The
    // grace counts from the last result, which comes late on a busy machine: at 7 s a loaded
    // CI runner saw subagent-bg-turn-end/print's command end 0.04 s before the kill (woke),
    // and another's last result came 4.9 s after the command started. Every declared range
    // admits it (subagent-bg-turn-end/print needs 6 or more; see the scenario).
    let cmd = wakeprobe(&[
        "run",
        "--set",
        "bg_seconds=12",
        "--jobs",
        &jobs.to_string(),
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let (pid, output) = run_within(cmd, Duration::from_secs(600));
    let stdout = String::from_utf8_lossy(&output.stdout);
    if output.status.code() != Some(0) {
        // Keep the evidence of a failure for a look.
        let kept = out.keep();
        panic!(
            "{stdout}\n{}\nruns kept in {}",
            String::from_utf8_lossy(&output.stderr),
            kept.display()
        );
    }
    assert_eq!(tagged_by(pid), vec![], "processes left behind");
    // The exported script judges every run of the library as wakeprobe does, and every draft
    // has a short title and fits an issue.
    for run in runs(&run_dir(out.path())) {
        let drafted = crate::common::drafts::problems(&run, None);
        assert!(
            drafted.is_empty(),
            "{}: {}",
            run.display(),
            drafted.join("; ")
        );
        let disagree = crate::common::judges::disagreements(&run, None);
        assert!(
            disagree.is_empty(),
            "{}: the exported script judges otherwise:\n{}",
            run.display(),
            disagree.join("\n")
        );
    }

    // Every variant of every scenario ran, once: a cell each.
    let variants: usize = wakeprobe::scenario::load_dir(&root().join("scenarios"))
        .unwrap()
        .iter()
        .map(|s| s.variants().len())
        .sum();
    let summary = json(&run_dir(out.path()).join("summary.json"));
    let cells = summary["cells"].as_array().unwrap();
    assert_eq!(cells.len(), variants, "every variant ran: {summary}");
    assert_eq!(runs(&run_dir(out.path())).len(), variants);
    for cell in cells {
        assert_ne!(cell["matches_expect"], false, "{cell}");
        assert!(
            cell["expect"].is_string(),
            "every scenario records its verdict on the pinned CLI in `expect`: {cell}"
        );
        // The library's invariant is reported for every cell on Claude Code; on opencode
        // (seed 003's scenarios), which runs no hooks, it is not judged at all.
        let on_claude = cell["cli"]
            .as_str()
            .is_some_and(|c| c.starts_with("claude-"));
        assert_eq!(
            cell["invariants"][0]["name"].as_str(),
            on_claude.then_some("every SubagentStart has exactly one SubagentStop"),
            "{cell}"
        );
    }
    // A subagent stopped by the model gets no SubagentStop: the summary says where it breaks.
    let stopped = cells
        .iter()
        .find(|c| c["scenario"] == "model-stops-subagent")
        .unwrap();
    assert_eq!(stopped["invariants"][0]["holds"], false, "{stopped}");
    // ... and it breaks as the scenario declares (`may_break`): reported with the reason, and
    // failing nothing (the run's exit code is 0 above).
    assert_eq!(
        stopped["invariants"][0]["may_break"]
            .as_str()
            .map(|w| w.contains("TaskStop")),
        Some(true),
        "{stopped}"
    );
    assert!(
        stdout.contains("every SubagentStart has exactly one SubagentStop: holds in")
            && stdout.contains("breaks, as declared, in")
            && stdout.contains(
                "model-stops-subagent/session on claude-2.1.332 (a subagent stopped by TaskStop"
            ),
        "{stdout}"
    );
    seed_000_stall_is_measured(&run_dir(out.path()), out.path());
}

/// Seed 000 on the pinned CLI, from the library's own runs of `subagent-bg-turn-end`: in print
/// mode the worker is finalized at its turn end (SubagentStop lists its shell task running, no
/// request after it) and the task is killed seconds later; a kept-alive session wakes it; and
/// no written file holds the sandbox path, the real HOME or the dummy key.
fn seed_000_stall_is_measured(run_dir: &Path, out: &Path) {
    let runs: Vec<_> = runs(run_dir)
        .into_iter()
        .filter(|r| r.parent().and_then(|p| p.file_name()) == Some("subagent-bg-turn-end".as_ref()))
        .collect();
    assert_eq!(runs.len(), 2, "print and session runs: {runs:?}");
    let variant = |name: &str| {
        runs.iter()
            .find(|r| r.file_name().unwrap().to_str().unwrap().starts_with(name))
            .unwrap()
    };
    let print = variant("print.");
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
    let session = variant("session.");
    let result = json(&session.join("result.json"));
    assert_eq!(result["judgement"]["outcome"], "woke", "{result}");

    // Redaction: no written file holds the sandbox path, the real HOME or the dummy key.
    let home = std::env::var("HOME").unwrap();
    let sandbox_prefix = std::env::temp_dir()
        .join("wakeprobe-")
        .display()
        .to_string();
    let mut stack = vec![out.to_path_buf()];
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

fn t(e: &Value) -> f64 {
    e["t_ms"].as_f64().unwrap()
}
