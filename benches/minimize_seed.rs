//! Benchmark: `wakeprobe minimize` on seed 000's print stall padded with 20 irrelevant steps
//! and two irrelevant agents (tests/fixtures/scenarios/seed000-padded.toml, `bg_seconds = 60`),
//! on the pinned real CLI. Reports the runs and the wall time the minimization took next to
//! the padded scenario's single-run time (measured in the same command), and checks the
//! result: at most 4 steps over 2 agents, the same `not-resumable`.
//!
//! `cargo bench --bench minimize_seed` (or `just bench-minimize`; several minutes).
//! WAKEPROBE_BENCH_REPEAT sets --repeat (default 3: with one run per candidate a duration
//! can shrink onto the edge where the verdict flips), WAKEPROBE_BENCH_BACKEND=sim runs it on
//! the simulator.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

fn wakeprobe(args: &[&str]) -> (std::process::ExitStatus, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_wakeprobe"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("run wakeprobe");
    (out.status, String::from_utf8_lossy(&out.stdout).to_string())
}

fn main() {
    let repeat = std::env::var("WAKEPROBE_BENCH_REPEAT").unwrap_or_else(|_| "3".into());
    let backend = std::env::var("WAKEPROBE_BENCH_BACKEND").unwrap_or_else(|_| "claude".into());
    let scenario = "tests/fixtures/scenarios/seed000-padded.toml";
    let out = tempfile::tempdir().unwrap();
    let single_out = out.path().join("single");
    let start = Instant::now();
    let (status, _) = wakeprobe(&[
        "run",
        scenario,
        "--backend",
        &backend,
        "--quiet",
        "--out",
        single_out.to_str().unwrap(),
    ]);
    let single = start.elapsed().as_secs_f64();
    assert!(
        status.success(),
        "the padded scenario did not give not-resumable"
    );
    let min_out = out.path().join("min");
    let start = Instant::now();
    let (status, stdout) = wakeprobe(&[
        "minimize",
        scenario,
        "--backend",
        &backend,
        "--repeat",
        &repeat,
        "--max-runs",
        "600",
        "--out",
        min_out.to_str().unwrap(),
    ]);
    let wall = start.elapsed().as_secs_f64();
    assert!(status.success(), "minimize failed: {stdout}");
    let minimal = stdout.lines().last().expect("the minimal scenario's path");
    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(Path::new(minimal).with_file_name("minimize.json")).unwrap(),
    )
    .unwrap();
    let runs = summary["runs"].as_u64().unwrap();
    let (agents, steps) = (
        summary["to"]["agents"].as_u64().unwrap(),
        summary["to"]["steps"].as_u64().unwrap(),
    );
    println!(
        "minimize seed000-padded/print ({backend}, --repeat {repeat}): {} -> {agents} agent(s), {steps} step(s), `{}` kept",
        format_args!(
            "{} agent(s), {} step(s)",
            summary["from"]["agents"], summary["from"]["steps"]
        ),
        summary["kept"].as_str().unwrap_or("?")
    );
    println!(
        "  {runs} runs in {wall:.0} s = {:.1}x the padded scenario's single run ({single:.1} s, the baseline); {:.2} s of wall time per run",
        wall / single,
        wall / runs as f64
    );
    println!("  minimal scenario: {minimal}");
    assert!(agents <= 2 && steps <= 4, "{agents} agents, {steps} steps");
    assert_eq!(summary["kept"], "not-resumable");
}
