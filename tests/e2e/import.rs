//! `wakeprobe import` through the binary: the round trip of the whole library on the simulator
//! (run, import the run's transcripts, run the import: same timeline shape and verdict), and
//! bad input (one located line, exit 2, nothing written).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::*;
use wakeprobe::conform::{self, Shape};

/// Scenario variants whose round trip differs on purpose, and why (documented in the book's
/// `import`, `book/src/tools.md`).
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
    ("child-hang/session", HANG_BOUND),
    ("bg-agent-hangs/print", HANG_BOUND),
    ("bg-agent-hangs/session", HANG_BOUND),
    ("bg-agent-fails/print", INJECTED),
    ("bg-agent-fails/session", INJECTED),
];
const HANG_BOUND: &str =
    "the hang bound (`hang_seconds`) is the scenario's declaration, not an event in a transcript";
const INJECTED: &str = "the worker fails by an injected fault (an http-400 on its request): the harness's doing, which no transcript records";

/// Scenario variants that race by design: replayed, their differences shown, never failing.
/// In `cli-own-turn/race` a user message is sent the moment the worker ends its turn; whether
/// the main agent's next Stop still lists the worker, and even whether the worker's report
/// comes before or after that message (`woke` or `queued-until-input`), is decided by
/// milliseconds, run to run, in the original scenario as much as in its import (which has the
/// same trigger, `turn-end:worker` with no delay).
const RACY: &[&str] = &["cli-own-turn/race"];

/// A transcript cannot tell why an input was sent: the probe and a scheduled input read alike.
/// `background_tasks_changed` snapshots list whatever runs at that moment, so with concurrent
/// agents (guard-end-to-end's two) their contents depend on which finishes first: counted as
/// one kind.
fn normalized(mut shape: Shape) -> Shape {
    for lane in shape.lanes.values_mut() {
        for e in &mut lane.events {
            if e == "input probe" {
                *e = "input scheduled".into();
            }
        }
        let snapshots: usize = lane
            .floating
            .iter()
            .filter(|(k, _)| k.starts_with("background_tasks_changed"))
            .map(|(_, n)| n)
            .sum();
        lane.floating
            .retain(|k, _| !k.starts_with("background_tasks_changed"));
        if snapshots > 0 {
            lane.floating
                .insert("background_tasks_changed".into(), snapshots);
        }
    }
    shape
}

/// The replay's outcome over the handoffs the original judged: a transcript cannot say which
/// handoffs a scenario puts under test, so the import watches every one (positive-control
/// watches only `worker`/`bg`; its import also judges `main`/`worker`).
fn outcome_over_original_pairs(original: &Path, replay: &Path) -> String {
    let verdicts = |dir: &Path| -> Vec<(String, String, String)> {
        json(&dir.join("result.json"))["judgement"]["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
                (s("waiter"), s("work"), s("outcome"))
            })
            .collect()
    };
    let replayed = verdicts(replay);
    verdicts(original)
        .iter()
        .filter_map(|(w, k, _)| replayed.iter().find(|(rw, rk, _)| rw == w && rk == k))
        .map(|(_, _, o)| o.clone())
        .find(|o| o != "woke")
        .unwrap_or_else(|| "woke".into())
}

fn run(backend: &str, args: &[&str], out: &Path) -> PathBuf {
    // Claude Code's transcripts are what `import` reads: the library's opencode scenarios run
    // on Claude Code too.
    let runtime: &[&str] = match backend {
        "claude" => &["--runtime", "claude-code"],
        _ => &[],
    };
    let mut all = vec!["run", "--backend", backend, "--quiet", "--out"];
    all.extend_from_slice(runtime);
    all.push(out.to_str().unwrap());
    all.extend_from_slice(args);
    let output = output_within(wakeprobe(&all), Duration::from_secs(300));
    let code = output.status.code();
    assert!(
        matches!(code, Some(0 | 1)),
        "{code:?}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    run_dir(out)
}

/// `scenario/variant` of a run folder.
fn cell(run: &Path) -> String {
    let scenario = run.parent().unwrap().file_name().unwrap().to_string_lossy();
    let variant = run.file_name().unwrap().to_string_lossy();
    format!("{scenario}/{}", variant.split('.').next().unwrap())
}

/// Imports every run under `first` into `dir`; the scenario files, in the runs' order.
fn import_all(originals: &[PathBuf], dir: &Path) -> Vec<String> {
    std::fs::create_dir(dir).unwrap();
    let mut files = Vec::new();
    for run in originals {
        let name = cell(run).replace('/', "-");
        let file = dir.join(format!("{name}.toml"));
        let out = output_within(
            wakeprobe(&[
                "import",
                run.to_str().unwrap(),
                "-o",
                file.to_str().unwrap(),
            ]),
            Duration::from_secs(30),
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            cell(run),
            String::from_utf8_lossy(&out.stderr)
        );
        files.push(file.to_str().unwrap().to_string());
    }
    files
}

/// Runs the library, imports every run's transcripts, runs the imports, and compares each
/// pair's timeline shape and verdict (the runs are kept when they differ).
fn round_trip(backend: &str, sets: &[&str]) {
    // Two runs of the whole library, compared step by step: alone, as the library test is, so
    // the rest of the suite does not stretch the timings the shapes depend on.
    let _slots = crate::common::cli_slots(crate::common::CLI_SLOTS);
    let tmp = tempfile::tempdir().unwrap();
    let originals = runs(&run(backend, sets, &tmp.path().join("first")));
    assert!(originals.len() >= 15, "{originals:?}");
    let files = import_all(&originals, &tmp.path().join("imported"));
    let known = |c: &str| KNOWN_DIFFERENCES.iter().any(|(k, _)| *k == c);
    let replay: Vec<&str> = originals
        .iter()
        .zip(&files)
        .filter(|(run, _)| !known(&cell(run)))
        .map(|(_, f)| f.as_str())
        .collect();
    let second = runs(&run(backend, &replay, &tmp.path().join("second")));
    let (mut same, mut failures) = (Vec::new(), Vec::new());
    for original in originals.iter().filter(|r| !known(&cell(r))) {
        let name = cell(original).replace('/', "-");
        let again = second
            .iter()
            .find(|r| r.parent().unwrap().file_name().unwrap() == name.as_str())
            .unwrap_or_else(|| panic!("no replay of {name}"));
        let a = normalized(conform::shape_of(original).unwrap());
        let b = normalized(conform::shape_of(again).unwrap());
        let mut diffs = conform::compare(&a, &b);
        if a.outcome == outcome_over_original_pairs(original, again) {
            diffs.retain(|d| d.place != "verdict");
        }
        if RACY.contains(&cell(original).as_str()) {
            same.push(format!(
                "{}: {} vs {} (races by design: {} difference(s), not counted)",
                cell(original),
                a.outcome,
                b.outcome,
                diffs.len()
            ));
            continue;
        }
        if diffs.is_empty() {
            same.push(format!("{}: {}", cell(original), a.outcome));
            continue;
        }
        let detail: Vec<String> = diffs
            .iter()
            .map(|d| format!("  {}\n    {}", d.place, d.detail.join("\n    ")))
            .collect();
        failures.push(format!(
            "{}: {} vs {}\n{}",
            cell(original),
            a.outcome,
            b.outcome,
            detail.join("\n")
        ));
    }
    eprintln!(
        "round trip on {backend}, same shape and verdict:\n  {}",
        same.join("\n  ")
    );
    if !failures.is_empty() {
        let kept = tmp.keep();
        panic!(
            "{}\n(in each diff the original is \"real CLI\", the replay \"simulator\"; runs kept in {})",
            failures.join("\n"),
            kept.display()
        );
    }
}

/// Two runs of the whole library, alone (about 75 s): `.ci/run` runs it as its own step, so
/// `cargo test` stays everyone's fast inner loop; by hand:
/// `cargo test --test e2e -- --ignored import::every_library_scenario_round_trips_on_the_simulator`.
#[test]
#[ignore]
fn every_library_scenario_round_trips_on_the_simulator() {
    // 8 s keeps every scenario away from the simulator's edges: the 5 s orphan grace (the
    // print-mode verdict flips there), the 3 s after which a foreground command is announced
    // as a task (the guard's poll), and two identical polling calls before a notification
    // (the positive control's `until`).
    round_trip(
        "sim",
        &["--set", "bg_seconds=8", "--set", "poll_seconds=0.2"],
    );
}

/// The same on the pinned real CLI (a few minutes), by hand:
/// `cargo test --test e2e -- --ignored import::every_library_scenario_round_trips_on_the_real_cli`. 7 s: the print-mode verdict flips
/// between 2 and 6 s (the orphan grace), and a round trip must not sit on that edge.
#[test]
#[ignore]
fn every_library_scenario_round_trips_on_the_real_cli() {
    round_trip(
        "claude",
        &["--set", "bg_seconds=7", "--set", "poll_seconds=0.2"],
    );
}

#[test]
fn what_is_not_a_transcript_is_one_located_line_exit_2_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let real = std::fs::read_to_string(
        root().join("tests/fixtures/runs/seed000-print/transcripts/-$SANDBOX-project/2ec47103-3c95-4eee-8e14-f53fd46eb9bc.jsonl"),
    )
    .unwrap();
    let mut lines: Vec<&str> = real.lines().take(20).collect();
    let last = lines.pop().unwrap();
    let truncated = format!("{}\n{}", lines.join("\n"), &last[..last.len() / 2]);
    let cases: [(&str, Vec<u8>, &str); 4] = [
        (
            "truncated.jsonl",
            truncated.into_bytes(),
            "truncated.jsonl:20: truncated line: EOF while parsing",
        ),
        (
            "stream.jsonl",
            b"{\"t_ms\":1.0,\"line\":{\"type\":\"system\"}}\n".to_vec(),
            "stream.jsonl:1: not a Claude Code transcript: no `user` or `assistant` record",
        ),
        (
            "empty.jsonl",
            Vec::new(),
            "empty.jsonl:1: empty file: no transcript records",
        ),
        (
            "binary.jsonl",
            b"\x7fELF\x02\x01\x01\x00\x00\x00".to_vec(),
            "binary.jsonl:1: binary data (a NUL byte at offset 7)",
        ),
    ];
    for (name, bytes, expected) in cases {
        let input = dir.path().join(name);
        std::fs::write(&input, bytes).unwrap();
        let output = dir.path().join(format!("{name}.toml"));
        let out = output_within(
            wakeprobe(&[
                "import",
                input.to_str().unwrap(),
                "-o",
                output.to_str().unwrap(),
            ]),
            Duration::from_secs(30),
        );
        let stderr =
            String::from_utf8_lossy(&out.stderr).replace(&format!("{}/", dir.path().display()), "");
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(
            stderr.starts_with(&format!("error: {expected}")),
            "{name}: {stderr}"
        );
        assert!(!output.exists(), "{name}: something was written");
    }
}
