//! Benchmark: running the whole scenario library in parallel. `wakeprobe run` over every
//! scenario and variant (pinned real CLI, `bg_seconds` scaled to 7 s), timed as a whole and
//! compared with its longest single run (from each `run.json`): a ratio near 1 means the library
//! takes little more than its longest scenario.
//!
//! `cargo bench --bench library_parallel` (or `just bench`). WAKEPROBE_BENCH_JOBS sets --jobs.

use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let jobs = std::env::var("WAKEPROBE_BENCH_JOBS").unwrap_or_else(|_| "16".into());
    let out = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_wakeprobe"))
        .args([
            "run",
            "--set",
            "bg_seconds=7",
            "--quiet",
            "--jobs",
            &jobs,
            "--out",
        ])
        .arg(out.path())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .status()
        .expect("run wakeprobe");
    let wall = start.elapsed().as_secs_f64();
    assert!(
        status.code().is_some_and(|c| c <= 1),
        "the library run failed: {status}"
    );
    let mut durations = Vec::new();
    let mut stack = vec![out.path().to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()) {
            if e.path().is_dir() {
                stack.push(e.path());
            } else if e.file_name() == "run.json" {
                let info: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap();
                durations.push(info["duration_s"].as_f64().unwrap());
            }
        }
    }
    let longest = durations.iter().cloned().fold(0.0, f64::max);
    let total: f64 = durations.iter().sum();
    println!(
        "scenario library, {} runs with --jobs {jobs} (pinned CLI, bg_seconds=7):",
        durations.len()
    );
    println!(
        "  whole invocation {wall:.1} s; longest single run {longest:.1} s; runs one after another would take {total:.1} s"
    );
    println!(
        "  ratio whole/longest {:.2}x (baseline: the longest run, same invocation); whole/sequential {:.2}x",
        wall / longest,
        wall / total
    );
}
