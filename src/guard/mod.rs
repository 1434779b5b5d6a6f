//! Verifying SubagentStop guard scripts: a corpus of payloads in the exact shape the real CLI
//! sends, run through a guard, with each decision compared to what it should be.
//!
//! Every corpus payload is the SubagentStop payload captured from a real Claude Code 2.1.332 run
//! (`subagent-stop.json`, byte for byte, paths redacted) with only `last_assistant_message`,
//! `stop_hook_active` or one task description replaced; the malformed cases are what a guard
//! must survive. A guard *blocks* by printing `{"decision":"block",...}` and exiting 0, or by
//! exiting 2 (as the CLI reads hooks); it *passes* by exiting 0 otherwise; any other exit, a
//! timeout or output that is neither is an *error*.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// A SubagentStop payload captured from the real CLI (2.1.332).
pub const CAPTURED: &str = include_str!("subagent-stop.json");

/// How long one guard invocation may take.
const LIMIT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Block,
    Pass,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Got {
    Decided(Decision),
    Error(String),
}

impl Got {
    pub fn label(&self) -> String {
        match self {
            Got::Decided(Decision::Block) => "block".into(),
            Got::Decided(Decision::Pass) => "pass".into(),
            Got::Error(e) => format!("error: {e}"),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    /// `stall`, `normal`, `loop-guard` or `malformed`.
    pub group: &'static str,
    pub input: Vec<u8>,
    pub expected: Decision,
}

/// The captured payload with fields replaced.
pub fn payload(message: Option<&str>, stop_hook_active: bool) -> Value {
    let mut v: Value = serde_json::from_str(CAPTURED).expect("the captured payload is JSON");
    match message {
        Some(m) => v["last_assistant_message"] = Value::String(m.to_string()),
        None => {
            v.as_object_mut()
                .expect("an object")
                .remove("last_assistant_message");
        }
    }
    v["stop_hook_active"] = Value::Bool(stop_hook_active);
    v
}

/// Stall-shaped final messages: the documented ones from seed 000 first, then other phrasings.
pub const STALLS: &[&str] = &[
    "The run will re-invoke me on completion.",
    "The e2e run will re-invoke me on completion.",
    "Awaiting the monitor's completion event.",
    "Started the recording in the background; I'll be notified when it finishes.",
    "Both background jobs will notify me when they're done.",
    "Waiting for the background test run to complete before continuing.",
    "I'll resume once the build finishes.",
    "Kicked off the suite. I'll check back when it's done.",
    "The task is running in the background; I'll be woken up when it completes.",
    "Ending my turn now; the completion notification will wake me.",
    "I'll pick this back up when the job completes.",
    "Once the migration finishes, I'll continue with step 3.",
    "Letting the benchmark run. I'll report back once it's done.",
    "Background e2e run started (ID bjoyqzxgm). Will continue when notified.",
    "I expect to be re-invoked when the recording completes.",
    "The monitor should notify me as soon as the run ends.",
];

/// Normal final messages, several of which merely contain words like "wait" or "notify".
pub const NORMALS: &[&str] = &[
    "Done. All 42 tests pass.",
    "I waited for the test run to finish and all 42 tests pass.",
    "Added a notify() helper that the scheduler calls on completion.",
    "The monitor now emits a completion event after each run; tests cover it.",
    "Fixed the re-invocation bug in scheduler.rs; the subagent is re-invoked exactly once now.",
    "Summary: the notification path works; subagents are woken when their tasks finish.",
    "Here is the waitForCompletion() helper: it polls every 5 s up to a ceiling.",
    "The PR is merged; CI will notify the team channel.",
    "Finished: the background job completed (exit 0) and its output is in out.txt.",
    "I polled the output file until the run completed: 3 failures, details below.",
    "No background work is left; everything is done.",
    "Tests pass. The worker awaits the queue internally, by design.",
    "I'll wait for your review before merging.",
    "Renamed the event to job_completed and updated the notify hook.",
    "Report: the e2e suite ran to completion in 88 s with no failures.",
    "",
];

pub fn corpus() -> Vec<Case> {
    let mut cases = Vec::new();
    let json = |v: &Value| v.to_string().into_bytes();
    for (i, m) in STALLS.iter().enumerate() {
        cases.push(Case {
            name: format!("stall {}: {m}", i + 1),
            group: "stall",
            input: json(&payload(Some(m), false)),
            expected: Decision::Block,
        });
    }
    for (i, m) in NORMALS.iter().enumerate() {
        cases.push(Case {
            name: format!(
                "normal {}: {}",
                i + 1,
                if m.is_empty() { "(empty message)" } else { m }
            ),
            group: "normal",
            input: json(&payload(Some(m), false)),
            expected: Decision::Pass,
        });
    }
    // Stall words only in a background task's description, not in the message.
    let mut described = payload(Some("Done: the recording is saved."), false);
    if let Some(tasks) = described["background_tasks"].as_array_mut() {
        for t in tasks {
            t["description"] =
                Value::String("Await completion event of the e2e run; it will notify".into());
        }
    }
    cases.push(Case {
        name: "normal: stall words only in a task description".into(),
        group: "normal",
        input: json(&described),
        expected: Decision::Pass,
    });
    cases.push(Case {
        name: "loop guard: a stall message with stop_hook_active true".into(),
        group: "loop-guard",
        input: json(&payload(Some(STALLS[0]), true)),
        expected: Decision::Pass,
    });
    cases.push(Case {
        name: "loop guard: another stall message with stop_hook_active true".into(),
        group: "loop-guard",
        input: json(&payload(Some(STALLS[2]), true)),
        expected: Decision::Pass,
    });
    let half = &CAPTURED.as_bytes()[..CAPTURED.len() / 2];
    let malformed: Vec<(&str, Vec<u8>)> = vec![
        ("empty input", vec![]),
        ("not JSON", b"this is not json".to_vec()),
        ("truncated JSON", half.to_vec()),
        ("a JSON array", b"[1, 2, 3]".to_vec()),
        ("no last_assistant_message", json(&payload(None, false))),
        ("last_assistant_message is null", {
            let mut v = payload(Some("x"), false);
            v["last_assistant_message"] = Value::Null;
            json(&v)
        }),
        ("stop_hook_active is a string", {
            let mut v = payload(Some("Done."), false);
            v["stop_hook_active"] = Value::String("true".into());
            json(&v)
        }),
        (
            "a message of 100 KiB",
            json(&payload(Some(&"all good. ".repeat(10_240)), false)),
        ),
        (
            "unicode and escapes",
            json(&payload(
                Some("Fertig ✓ — \"quoted\" \\ back\\slash\nnew line\ttab"),
                false,
            )),
        ),
        ("binary garbage", vec![0, 159, 146, 150, 255, 10, 13]),
    ];
    for (name, input) in malformed {
        cases.push(Case {
            name: format!("malformed: {name}"),
            group: "malformed",
            input,
            expected: Decision::Pass,
        });
    }
    cases
}

/// Runs a guard on one input, as the CLI would (stdin, no arguments). Its input is written, and
/// its stdout and stderr read, at the same time (a guard may write before it reads); a guard
/// that does not end within 10 s is killed with everything it started.
pub fn run_guard(script: &Path, input: &[u8]) -> Got {
    run_guard_within(script, input, LIMIT)
}

/// [`run_guard`] with another time limit.
pub fn run_guard_within(script: &Path, input: &[u8], limit: Duration) -> Got {
    let handle = match duct::cmd(script, std::iter::empty::<&str>())
        .stdin_bytes(input.to_vec())
        .stdout_capture()
        .stderr_capture()
        .env("CLAUDE_PROJECT_DIR", std::env::temp_dir())
        .unchecked()
        .before_spawn(|command| {
            command.process_group(0);
            Ok(())
        })
        .start()
    {
        Ok(h) => h,
        Err(e) => return Got::Error(format!("cannot run: {e}")),
    };
    let output = match handle.wait_timeout(limit) {
        Ok(Some(output)) => output,
        Ok(None) => {
            // The guard and anything it left holding its pipes.
            for pid in handle.pids() {
                // SAFETY: kill(2) on the process group this guard leads; no memory is shared.
                unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
            }
            let _ = handle.kill();
            let _ = handle.wait_timeout(Duration::from_secs(1));
            return Got::Error(format!("no answer within {limit:?}"));
        }
        Err(e) => return Got::Error(format!("cannot wait for it: {e}")),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let status = output.status;
    match status.code() {
        Some(2) => Got::Decided(Decision::Block),
        Some(0) => {
            let text = stdout.trim();
            if text.is_empty() {
                return Got::Decided(Decision::Pass);
            }
            match serde_json::from_str::<Value>(text) {
                Ok(v) if v.get("decision").and_then(Value::as_str) == Some("block") => {
                    if v.get("reason")
                        .and_then(Value::as_str)
                        .is_some_and(|r| !r.is_empty())
                    {
                        Got::Decided(Decision::Block)
                    } else {
                        Got::Error("blocks without a reason".into())
                    }
                }
                Ok(_) => Got::Decided(Decision::Pass),
                Err(_) => Got::Error(format!(
                    "prints something that is not JSON: {}",
                    crate::evidence::normalize::truncate(text, 60)
                )),
            }
        }
        Some(c) => Got::Error(format!("exit {c}")),
        None => Got::Error("killed by a signal".into()),
    }
}

/// The guard script reproduced in seed 000, from the report's text: the first fenced bash
/// block after its "hook script" heading.
pub fn extract_seed_guard(report: &str) -> Option<String> {
    let heading = report.find("The hook script")?;
    let rest = &report[heading..];
    let start = rest.find("```bash")? + "```bash".len();
    let end = rest[start..].find("```")? + start;
    let script = rest[start..end].trim_start_matches('\n').to_string();
    script.starts_with("#!").then_some(script)
}

/// One script's results over the corpus.
pub struct Verification {
    pub results: Vec<Got>,
}

impl Verification {
    pub fn run(script: &Path, cases: &[Case]) -> Verification {
        Verification {
            results: cases.iter().map(|c| run_guard(script, &c.input)).collect(),
        }
    }

    /// (false negatives, false positives, errors) against the corpus.
    pub fn misses(&self, cases: &[Case]) -> (usize, usize, usize) {
        let mut fneg = 0;
        let mut fpos = 0;
        let mut errors = 0;
        for (case, got) in cases.iter().zip(&self.results) {
            match (case.expected, got) {
                (_, Got::Error(_)) => errors += 1,
                (Decision::Block, Got::Decided(Decision::Pass)) => fneg += 1,
                (Decision::Pass, Got::Decided(Decision::Block)) => fpos += 1,
                _ => {}
            }
        }
        (fneg, fpos, errors)
    }

    pub fn passed(&self, cases: &[Case]) -> bool {
        self.misses(cases) == (0, 0, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_captured_payload_is_a_real_subagent_stop() {
        let v: Value = serde_json::from_str(CAPTURED).unwrap();
        assert_eq!(v["hook_event_name"], "SubagentStop");
        for key in [
            "agent_id",
            "agent_type",
            "agent_transcript_path",
            "background_tasks",
            "session_crons",
            "last_assistant_message",
            "stop_hook_active",
        ] {
            assert!(v.get(key).is_some(), "{key}");
        }
    }

    /// A guard that writes more than a pipe holds (64 KiB) before it reads its input still
    /// answers: stdin, stdout and stderr are served at the same time.
    #[test]
    fn a_guard_that_writes_more_than_a_pipe_buffer_first_still_answers() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("chatty.sh");
        std::fs::write(
            &script,
            "#!/bin/sh\n\
             head -c 200000 /dev/zero | tr '\\0' x >&2\n\
             head -c 200000 /dev/zero | tr '\\0' '\\n'\n\
             cat >/dev/null\n\
             echo '{\"decision\":\"block\",\"reason\":\"r\"}'\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let input = vec![b' '; 200_000];
        assert_eq!(run_guard(&script, &input), Got::Decided(Decision::Block));
    }

    /// A guard that never answers is reported, and what it started (holding its pipes) dies
    /// with it.
    #[test]
    fn a_guard_that_hangs_is_killed_with_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("started");
        let script = dir.path().join("hang.sh");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nsleep 300 &\necho $! > {}\nsleep 300\n",
                marker.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let started = std::time::Instant::now();
        let got = run_guard_within(&script, b"{}", Duration::from_millis(500));
        assert!(
            matches!(&got, Got::Error(e) if e.starts_with("no answer")),
            "{got:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        let pid: i32 = std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        // SAFETY: kill(2) with signal 0 only asks whether the process exists.
        while unsafe { libc::kill(pid, 0) } == 0
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z "))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the guard's child {pid} lives on"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn the_seed_guard_is_extracted_from_the_report() {
        let report = "intro\n## The hook script (for permanence)\n\n```bash\n#!/usr/bin/env bash\necho hi\n```\n";
        assert_eq!(
            extract_seed_guard(report).unwrap(),
            "#!/usr/bin/env bash\necho hi\n"
        );
        assert!(extract_seed_guard("no script here").is_none());
    }
}
