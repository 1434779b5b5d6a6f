//! `wakeprobe import` through the binary: the round trip of the whole library on the simulator
//! (run, import the run's transcripts, run the import: same timeline shape and verdict), and
//! bad input (one located line, exit 2, nothing written).

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use wakeprobe::conform::{self, Shape};

/// Scenario variants whose round trip differs on purpose, and why (documented in the README).
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[(
    "child-hang/session",
    "the hang bound (`hang_seconds`) is the scenario's declaration, not an event in a transcript",
)];

/// A transcript cannot tell why an input was sent: the probe and a scheduled input read alike.
fn normalized(mut shape: Shape) -> Shape {
    for lane in shape.lanes.values_mut() {
        for e in &mut lane.events {
            if e == "input probe" {
                *e = "input scheduled".into();
            }
        }
    }
    shape
}

fn run_sim(args: &[&str], out: &Path) -> PathBuf {
    let mut all = vec!["run", "--backend", "sim", "--quiet", "--out"];
    all.push(out.to_str().unwrap());
    all.extend_from_slice(args);
    let output = output_within(wakeprobe(&all), Duration::from_secs(240));
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

#[test]
fn every_library_scenario_round_trips_on_the_simulator() {
    let tmp = tempfile::tempdir().unwrap();
    let first = run_sim(
        // 5 s: a foreground command is announced as a task after 3 s, and the guard's poll
        // should not sit on that edge.
        &["--set", "bg_seconds=5", "--set", "poll_seconds=0.2"],
        &tmp.path().join("first"),
    );
    let originals = runs(&first);
    assert!(originals.len() >= 15, "{originals:?}");
    let imported_dir = tmp.path().join("imported");
    std::fs::create_dir(&imported_dir).unwrap();
    let mut files = Vec::new();
    for run in &originals {
        let name = cell(run).replace('/', "-");
        let file = imported_dir.join(format!("{name}.toml"));
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
    let known = |c: &str| KNOWN_DIFFERENCES.iter().any(|(k, _)| *k == c);
    let replay: Vec<&str> = originals
        .iter()
        .zip(&files)
        .filter(|(run, _)| !known(&cell(run)))
        .map(|(_, f)| f.as_str())
        .collect();
    let second = run_sim(&replay, &tmp.path().join("second"));
    let mut failures = Vec::new();
    for run in originals.iter().filter(|r| !known(&cell(r))) {
        let name = cell(run).replace('/', "-");
        let again = runs(&second)
            .into_iter()
            .find(|r| r.parent().unwrap().file_name().unwrap() == name.as_str())
            .unwrap_or_else(|| panic!("no replay of {name}"));
        let a = normalized(conform::shape_of(run).unwrap());
        let b = normalized(conform::shape_of(&again).unwrap());
        let diffs = conform::compare(&a, &b);
        if !diffs.is_empty() {
            failures.push(format!(
                "{}: {:?} vs {:?}\n{}",
                cell(run),
                a.outcome,
                b.outcome,
                diffs
                    .iter()
                    .map(|d| format!("  {}\n    {}", d.place, d.detail.join("\n    ")))
                    .collect::<Vec<_>>()
                    .join("\n")
            ));
        }
    }
    if !failures.is_empty() {
        let kept = tmp.keep();
        panic!("{}\n(runs kept in {})", failures.join("\n"), kept.display());
    }
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
