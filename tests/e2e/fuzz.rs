//! `wakeprobe fuzz` through the binary, on the simulator alone: a reference profile and a
//! profile under test that differ in one planted behaviour (`child-error`: every background
//! command exits 3, otherwise `fixed`). The fuzzer finds the difference, names its kind and
//! shrinks the case to at most 3 steps; the same profile on both sides agrees with itself.

use std::time::Duration;

use crate::common::*;

/// Seed 63's first case: session mode, a 3 s background command and two foreground ones (5
/// steps with the reply to the command's notification).
const SEED: &str = "63";

fn fuzz(
    out: &std::path::Path,
    reference: &str,
    profile: &str,
    shrink_runs: &str,
) -> std::process::Output {
    // No real-CLI slot: the planted difference (an exit code) does not depend on timing, and
    // the simulator runs cost little CPU (about 9 s for the whole test).
    output_within(
        wakeprobe(&[
            "fuzz",
            "--seed",
            SEED,
            "--case",
            "1",
            "--reference-profile",
            reference,
            "--profile",
            profile,
            "--shrink-runs",
            shrink_runs,
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]),
        Duration::from_secs(300),
    )
}

#[test]
fn the_fuzzer_finds_a_planted_difference_and_shrinks_it_to_three_steps() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let output = fuzz(&out, "fixed", "child-error", "40");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("1 case(s), sim-fixed vs sim-child-error: 0 agree, 1 differ"),
        "{stdout}"
    );
    assert!(stdout.contains("verdict: 1 case(s): c001"), "{stdout}");
    let dir = run_dir(&out);
    let report = json(&dir.join("fuzz.json"));
    assert_eq!(report["cases"][0]["status"], "differ");
    assert_eq!(report["cases"][0]["reference_verdict"], "woke");
    assert_eq!(report["cases"][0]["sim_verdict"], "child-failed");
    let kind = &report["kinds"][0];
    assert_eq!(kind["kind"], "verdict");
    assert_eq!(kind["shrunk"]["steps_before"], 5);
    let folder = dir.join(kind["folder"].as_str().unwrap());
    // The shrunk case is an ordinary scenario of at most 3 steps that still differs.
    let minimal = wakeprobe::scenario::Scenario::load(&folder.join("minimal.toml")).unwrap();
    let plan = minimal.plan("session", &[]).unwrap();
    let steps: usize = plan.agents.values().map(Vec::len).sum();
    assert!(steps <= 3, "{steps} steps left");
    assert_eq!(kind["shrunk"]["steps_after"], steps);
    let conform = std::fs::read_to_string(folder.join("minimal-conform.txt")).unwrap();
    assert!(
        conform.contains("real: woke") && conform.contains("sim:  child-failed"),
        "{conform}"
    );
    // The generated case itself, and its comparison, are kept beside it.
    assert!(folder.join("conform.txt").is_file());
    assert!(dir.join("cases/fuzz-s63-c001.toml").is_file());
}

#[test]
fn a_profile_compared_with_itself_agrees() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let output = fuzz(&out, "fixed", "fixed", "0");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("1 agree, 0 differ"), "{stdout}");
}

#[test]
fn bad_fuzz_arguments_are_one_line_and_exit_2() {
    for (args, needle) in [
        (
            &["fuzz", "--case", "0", "--reference-profile", "fixed"][..],
            "--case 0: cases are numbered from 1",
        ),
        (
            &["fuzz", "--profile", "nope", "--reference-profile", "fixed"][..],
            "unknown simulator profile `nope`",
        ),
        (&["fuzz", "--cases", "0"][..], "--cases"),
    ] {
        let output = output_within(wakeprobe(args), Duration::from_secs(30));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}
