//! Benchmark: `wakeprobe import` on a 10 MB session transcript, made by concatenating the
//! records of a real one (tests/fixtures/runs/seed000-session, written by Claude Code 2.1.332)
//! with their ids renumbered, so it reads as one long session of many turns. Timed against a
//! baseline measured in the same command: reading the file and parsing every line as JSON,
//! which any importer must do. Also the whole binary, once.
//!
//! `cargo bench --bench import_speed` (or `just bench`). The promise: under 1 s.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const TARGET_BYTES: usize = 10 * 1024 * 1024;

fn fixture() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs/seed000-session/transcripts/-$SANDBOX-project");
    std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("the fixture's session transcript")
}

/// The fixture's records again and again (ids renumbered per copy) up to 10 MB.
fn big_transcript(dir: &Path) -> PathBuf {
    let source = std::fs::read_to_string(fixture()).unwrap();
    let path = dir.join("big-session.jsonl");
    let mut out = String::with_capacity(TARGET_BYTES + source.len());
    let mut copy = 0;
    while out.len() < TARGET_BYTES {
        out.push_str(
            &source
                .replace("toolu_wp", &format!("toolu_c{copy}_wp"))
                .replace("msg_wakeprobe_", &format!("msg_c{copy}_"))
                .replace("\"uuid\":\"", &format!("\"uuid\":\"c{copy}-"))
                .replace("\"parentUuid\":\"", &format!("\"parentUuid\":\"c{copy}-")),
        );
        copy += 1;
    }
    std::fs::write(&path, out).unwrap();
    path
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let path = big_transcript(dir.path());
    let bytes = std::fs::metadata(&path).unwrap().len();
    let lines = std::fs::read_to_string(&path).unwrap().lines().count();
    let mut parse = Vec::new();
    let mut import = Vec::new();
    let mut steps = 0;
    for _ in 0..5 {
        let start = Instant::now();
        let text = std::fs::read_to_string(&path).unwrap();
        let values: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(values.len(), lines);
        parse.push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        let imported =
            wakeprobe::import::import(&path, &wakeprobe::import::Options::default()).unwrap();
        import.push(start.elapsed().as_secs_f64());
        steps = imported.stats.steps;
    }
    let output = dir.path().join("big.toml");
    let start = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_wakeprobe"))
        .args([
            "import",
            path.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
        ])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let binary = start.elapsed().as_secs_f64();
    assert!(status.success());
    let (parse, import) = (median(parse), median(import));
    println!(
        "import of a {:.1} MB transcript ({lines} records, {steps} steps imported), median of 5:",
        bytes as f64 / 1e6
    );
    println!(
        "  import {:.0} ms = {:.2}x the baseline (read + parse every line as JSON: {:.0} ms); the whole binary {:.0} ms",
        import * 1e3,
        import / parse,
        parse * 1e3,
        binary * 1e3
    );
    assert!(
        import < 1.0,
        "import took {import:.2} s (promise: under 1 s)"
    );
}
