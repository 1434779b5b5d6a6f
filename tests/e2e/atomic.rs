//! Killing the harness while it writes a run's folder leaves only whole files: every file that
//! has its final name parses (a write in flight can leave only a `.wakeprobe-*.partial` temp
//! file), and a folder the kill interrupted says so in its `run.json`. The supervisor, not the
//! harness, owns the CLI's process tree, so even a SIGKILLed harness leaves no process.

use std::path::Path;
use std::time::Duration;

use crate::common::*;

fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
        {
            // `reports/latest` is a symlink to a run folder: walked once, by its own name.
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

fn kill_when(file: &str) {
    let _cli = cli_slots(1);
    let out = tempfile::tempdir().unwrap();
    let mut cmd = wakeprobe(&[
        "run",
        "subagent-bg-turn-end",
        "--variant",
        "print",
        "--set",
        "bg_seconds=1",
        // Below the print variant's range (its expect needs work past the CLI's grace): only
        // the files written matter here.
        "--explore",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let seen = wait_for(Duration::from_secs(90), || {
        files(out.path())
            .into_iter()
            .find(|p| p.file_name().is_some_and(|n| n == file))
    });
    signal(pid, libc::SIGKILL);
    child.wait().unwrap();
    assert!(seen.is_some(), "{file} was written");
    for path in files(out.path()) {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with(".partial") {
            assert!(name.starts_with(".wakeprobe-"), "{}", path.display());
            continue; // the temp file of a write in flight: never read as a result
        }
        if name == "run.json" {
            let info: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let folder = path.parent().unwrap();
            if !folder.join("result.json").exists() {
                assert_eq!(info["complete"], false, "an unfinished folder says so");
            }
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if name.ends_with(".json") {
            serde_json::from_str::<serde_json::Value>(&text)
                .unwrap_or_else(|e| panic!("{} is partial: {e}", path.display()));
        }
        if name.ends_with(".jsonl") {
            for line in text.lines() {
                serde_json::from_str::<serde_json::Value>(line)
                    .unwrap_or_else(|e| panic!("{} is partial: {e}", path.display()));
            }
        }
    }
    let left = wait_for(Duration::from_secs(20), || {
        tagged_by(pid).is_empty().then_some(())
    });
    assert!(
        left.is_some(),
        "processes left after the harness was killed: {:?}",
        tagged_by(pid)
    );
}

#[test]
fn killed_while_writing_evidence() {
    kill_when("stream.jsonl");
}

#[test]
fn killed_while_writing_the_timeline() {
    kill_when("timeline.json");
}

#[test]
fn killed_while_writing_reports() {
    kill_when("result.json");
}
