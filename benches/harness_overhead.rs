//! Benchmark: the harness's own overhead per run. For each run, the wall time of the whole
//! `wakeprobe run` process minus the supervised program's own wall time (from spawn to exit,
//! in `run.json`): sandbox, fake API, supervisor, evidence, classification and reports.
//! Reported as milliseconds and as a ratio to that program's time, on the pinned real CLI
//! (installed on first use) with the seed scenario at a short duration, driven directly and
//! through each Agent SDK (`--driver sdk`, `sdk-py`: there the program is the SDK host, so
//! the SDK's own start is on its side of the line, and the overhead is the harness's alone).
//!
//! `cargo bench --bench harness_overhead` (or `just bench`). WAKEPROBE_BENCH_RUNS sets the count.

use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let runs: usize = std::env::var("WAKEPROBE_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    for (label, extra) in [
        ("the CLI driven directly", &[][..]),
        ("through the TypeScript Agent SDK", &["--driver", "sdk"][..]),
        ("through the Python Agent SDK", &["--driver", "sdk-py"][..]),
    ] {
        // A first run installs what is missing; it is not measured.
        let _ = run_once(extra);
        let rows: Vec<(f64, f64)> = (0..runs).map(|_| run_once(extra)).collect();
        report(label, &rows);
    }
}

/// One `wakeprobe run` of the seed scenario's print variant: (its wall time, the supervised
/// program's).
fn run_once(extra: &[&str]) -> (f64, f64) {
    let bin = env!("CARGO_BIN_EXE_wakeprobe");
    let out = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let status = Command::new(bin)
        .args([
            "run",
            "subagent-bg-turn-end",
            "--variant",
            "print",
            "--set",
            "bg_seconds=1",
            "--explore",
            "--quiet",
        ])
        .args(extra)
        .arg("--out")
        .arg(out.path())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .expect("run wakeprobe");
    let wall = start.elapsed().as_secs_f64();
    assert!(
        status.code().is_some_and(|c| c <= 1),
        "a run failed ({extra:?}): {status}"
    );
    let run_json = walk(out.path())
        .into_iter()
        .find(|p| p.ends_with("run.json"))
        .expect("run.json");
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_json).unwrap()).unwrap();
    let program = info["cli_wall_s"].as_f64().expect("the program exited");
    (wall, program)
}

fn report(label: &str, rows: &[(f64, f64)]) {
    let mut overhead: Vec<f64> = rows.iter().map(|(w, c)| w - c).collect();
    overhead.sort_by(f64::total_cmp);
    let mut ratios: Vec<f64> = rows.iter().map(|(w, c)| (w - c) / c).collect();
    ratios.sort_by(f64::total_cmp);
    let median = |v: &[f64]| v[v.len() / 2];
    println!(
        "harness overhead per run over {} runs, {label} (pinned CLI, seed scenario, print):",
        rows.len()
    );
    for (i, (w, c)) in rows.iter().enumerate() {
        println!(
            "  run {}: wakeprobe {:>6.3} s, program {:>6.3} s, overhead {:>6.0} ms",
            i + 1,
            w,
            c,
            (w - c) * 1000.0
        );
    }
    println!(
        "  median overhead {:.0} ms = {:.2}x the supervised program's own wall time (baseline: that program, same run)",
        median(&overhead) * 1000.0,
        median(&ratios)
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}
