//! The scenario library on the pinned real CLI, every scenario and variant at scaled-down
//! durations in one parallel invocation: each verdict and check must match the scenario's
//! `expect`, and no process may be left.

use std::time::Duration;

use crate::common::*;

#[test]
fn every_scenario_matches_its_expectation_on_the_pinned_cli() {
    // Eight slots for its eight jobs; the two left let one 2-slot simulator test (a history,
    // the seed's conformance) run beside it, which keeps the suite's longest chain short.
    let _cli = cli_slots(CLI_SLOTS - 2);
    let out = tempfile::tempdir().unwrap();
    // 10 s: twice the CLI's ~5 s grace before it kills an orphaned task in print mode, short
    // enough for a test (the positive control's 90 s default runs in 10 s here). The grace
    // counts from the last result, which comes late on a busy machine: at 7 s a loaded CI
    // runner saw subagent-bg-turn-end/print's command end 0.04 s before the kill (woke). Every
    // declared range admits it (subagent-bg-turn-end/print needs 6 or more; see the scenario).
    let cmd = wakeprobe(&[
        "run",
        "--set",
        "bg_seconds=10",
        "--jobs",
        "8",
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
        // The library's invariant is reported for every cell.
        assert_eq!(
            cell["invariants"][0]["name"], "every SubagentStart has exactly one SubagentStop",
            "{cell}"
        );
    }
    // A subagent stopped by the model gets no SubagentStop: the summary says where it breaks.
    let stopped = cells
        .iter()
        .find(|c| c["scenario"] == "model-stops-subagent")
        .unwrap();
    assert_eq!(stopped["invariants"][0]["holds"], false, "{stopped}");
    assert!(
        stdout.contains("every SubagentStart has exactly one SubagentStop: holds in")
            && stdout.contains("breaks in")
            && stdout.contains("model-stops-subagent/session"),
        "{stdout}"
    );
}
