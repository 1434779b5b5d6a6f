//! A harness that is itself stopped (SIGSTOP, as a loaded CI runner can starve a process) across
//! a deadline decides nothing its timeline contradicts. The CLI and the work go on meanwhile;
//! what reaches the harness is read late and its timers fire late. The verdict is `woke` or
//! `unknown` with the reason, never H1-H4, never a draft; the stall is on the timeline. On the
//! simulator and on the real CLI.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;

/// `top-level-control/session` with a 1 s command: its hang bound is 11 s after the start.
const BOUND: Duration = Duration::from_secs(11);

fn paused_across_the_hang_bound(backend: &[&str]) {
    let _cli = cli_slots(if backend.is_empty() { 1 } else { 0 });
    let out = tempfile::tempdir().unwrap();
    let mut args = vec![
        "run",
        "top-level-control",
        "--variant",
        "session",
        "--set",
        "bg_seconds=1",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ];
    args.extend_from_slice(backend);
    let child = wakeprobe(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let command = || {
        tagged_by(pid)
            .into_iter()
            .any(|(_, cmd)| cmd.starts_with("sleep 1"))
    };
    assert!(
        wait_for(Duration::from_secs(90), || command().then_some(())).is_some(),
        "the background command started"
    );
    let stopped_at = Instant::now();
    signal(pid, libc::SIGSTOP);
    // The work ends while the harness is stopped; the harness stays stopped past the bound.
    let ended = wait_for(Duration::from_secs(30), || (!command()).then_some(()));
    let resume_at = stopped_at + BOUND + Duration::from_secs(1);
    std::thread::sleep(resume_at.saturating_duration_since(Instant::now()));
    signal(pid, libc::SIGCONT);
    assert!(
        ended.is_some(),
        "the command ended while the harness was stopped"
    );
    let output = wait_output(child, Duration::from_secs(90));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "exit {:?}: {stderr}",
        output.status.code()
    );
    let run = runs(&run_dir(out.path())).pop().expect("a run folder");
    let result = json(&run.join("result.json"));
    let verdict = &result["judgement"]["verdicts"][0];
    let outcome = verdict["outcome"].as_str().unwrap();
    assert!(
        outcome == "woke" || outcome == "unknown",
        "{outcome}: {}",
        verdict["explanation"]
    );
    assert!(verdict.get("contradiction").is_none(), "{verdict}");
    if outcome == "woke" {
        // A latency across the stall is not measured.
        assert!(verdict.get("latency_ms").is_none(), "{verdict}");
    } else {
        assert!(verdict["reason"].as_str().is_some_and(|r| !r.is_empty()));
    }
    assert!(!run.join("title.txt").exists(), "no draft for a paused run");
    let events = events(&run);
    let stalls = kind(&events, "harness_stalled", None);
    assert_eq!(stalls.len(), 1, "the stall is on the timeline");
    let stalled_s =
        (stalls[0]["until_ms"].as_f64().unwrap() - stalls[0]["t_ms"].as_f64().unwrap()) / 1000.0;
    assert!(stalled_s >= BOUND.as_secs_f64(), "{stalled_s}");
    assert_eq!(tagged_by(pid), vec![], "processes left behind");
}

#[test]
fn a_harness_paused_across_the_hang_bound_decides_nothing_false_on_the_simulator() {
    paused_across_the_hang_bound(&["--backend", "sim"]);
}

#[test]
fn a_harness_paused_across_the_hang_bound_decides_nothing_false_on_the_pinned_cli() {
    paused_across_the_hang_bound(&[]);
}
