//! The stall guard on the pinned real CLI with session persistence off
//! (`--cli-arg=--no-session-persistence`, what the Agent SDK's `persistSession: false` passes):
//! the CLI writes no transcript, so the guard can only read the payload.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::common::*;

/// The start of the reason the guard gives when it cannot read the transcript.
const FALLBACK_REASON: &str = "Stop hook feedback:\nYou ended your turn expecting to be woken when background work finishes. This session still has work running:";

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// `guard-end-to-end/print` with `--no-session-persistence`: no agent transcript is written, yet
/// the worker's stall ("The run will re-invoke me on completion.", its shell running) is
/// blocked once, with the reason of the payload-only fallback, and the worker polls and
/// finishes (woke); the helper, stopping while the worker's shell runs, is not blocked.
#[test]
fn the_guard_blocks_a_stall_with_session_persistence_off_and_lets_a_normal_stop_through() {
    let _cli = cli_slots(1);
    let out = tempfile::tempdir().unwrap();
    let output = output_within(
        wakeprobe(&[
            "run",
            "guard-end-to-end",
            "--variant",
            "print",
            "--cli-arg=--no-session-persistence",
            "--quiet",
            "--out",
            out.path().to_str().unwrap(),
        ]),
        Duration::from_secs(200),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let run = runs(&run_dir(out.path())).remove(0);
    let info = json(&run.join("run.json"));
    assert_eq!(info["cli_version"], "2.1.332");
    assert_eq!(
        info["cli_args"],
        serde_json::json!(["--no-session-persistence"])
    );
    assert!(
        info["command"]
            .as_str()
            .unwrap()
            .ends_with(" --cli-arg=--no-session-persistence"),
        "{info}"
    );
    // Persistence was off: the CLI wrote no transcript (only the subagents' meta files).
    let written = files(&run.join("transcripts"));
    assert!(
        written
            .iter()
            .all(|f| !f.to_string_lossy().ends_with(".jsonl")),
        "{written:?}"
    );

    let result = json(&run.join("result.json"));
    assert_eq!(result["judgement"]["outcome"], "woke", "{result}");
    let check = |kind: &str| {
        result["judgement"]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} check: {result}"))
            .clone()
    };
    assert_eq!(check("guard-blocked-once")["observed"], "blocked-once");
    assert_eq!(check("stops-unblocked")["observed"], "unblocked");

    // The worker's first stop named a transcript that was never written, listed its own shell
    // running and said it would be re-invoked.
    let hooks: Vec<Value> = std::fs::read_to_string(run.join("hooks.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["payload"].clone())
        .filter(|p| p["hook_event_name"] == "SubagentStop")
        .collect();
    let worker = hooks
        .iter()
        .find(|p| p["last_assistant_message"] == "The run will re-invoke me on completion.")
        .unwrap_or_else(|| panic!("the worker's stall: {hooks:?}"));
    let worker_id = worker["agent_id"].as_str().unwrap();
    assert!(
        worker["agent_transcript_path"]
            .as_str()
            .unwrap()
            .ends_with(&format!("agent-{worker_id}.jsonl"))
    );
    assert!(
        worker["background_tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["type"] == "shell" && t["status"] == "running")
    );
    // The guard's block came from the payload-only fallback, to the worker alone, once.
    let fed_back: Vec<Value> = std::fs::read_to_string(run.join("stream.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["line"].clone())
        .filter(|l| {
            l["type"] == "user"
                && l["message"]["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("Stop hook feedback:"))
        })
        .collect();
    assert_eq!(fed_back.len(), 1, "{fed_back:?}");
    assert_eq!(fed_back[0]["agent_id"], worker_id);
    let text = fed_back[0]["message"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.starts_with(FALLBACK_REASON), "{text}");
}
