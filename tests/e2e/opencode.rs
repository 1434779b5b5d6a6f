//! opencode, the second runtime, end to end: each driver mode on the real opencode (installed
//! into the shared cache by the harness, as the Claude Code tests' CLI is), the refusals of
//! every Claude-only step before anything runs, and one matrix over both runtimes.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::common::*;

const SCENARIO: &str = "bg-agent-outlives-turn";

/// `scenario/variant.opencode-...` run folders of `run_dir`.
fn one_run(run_dir: &Path, variant: &str) -> std::path::PathBuf {
    runs(run_dir)
        .into_iter()
        .find(|r| {
            r.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("{variant}."))
        })
        .unwrap_or_else(|| panic!("no {variant} run in {}", run_dir.display()))
}

fn first<'a>(events: &'a [Value], kind: &str, pred: impl Fn(&Value) -> bool) -> &'a Value {
    events
        .iter()
        .find(|e| e["kind"] == kind && pred(e))
        .unwrap_or_else(|| panic!("no {kind} event: {events:#?}"))
}

fn t(e: &Value) -> f64 {
    e["t_ms"].as_f64().unwrap()
}

/// Runs `variant` of the seed-003 scenario on opencode 1.18.33 (its own runtime); the run's
/// folder.
fn run_variant(variant: &str, out: &Path) -> std::path::PathBuf {
    let cmd = wakeprobe(&[
        "run",
        SCENARIO,
        "--variant",
        variant,
        "--runtime",
        "opencode",
        "--set",
        "bg_seconds=3",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    succeeds_leaving_nothing(cmd, Duration::from_secs(300));
    one_run(&run_dir(out), variant)
}

/// The common facts of a real opencode run: the version it said, offline, nothing left, its
/// own evidence kept beside the fake API's.
fn check_run(run: &Path) -> Vec<Value> {
    let info = json(&run.join("run.json"));
    assert_eq!(info["backend"]["kind"], "opencode", "{info}");
    assert_eq!(info["cli_label"], "opencode-1.18.33");
    assert_eq!(info["cli_version_reported"], "1.18.33");
    assert_eq!(
        info["leftovers"].as_array().map(Vec::len),
        Some(0),
        "{info}"
    );
    if info["isolation"]["network"] == "private-netns" {
        assert_eq!(info["isolation"]["interfaces"], serde_json::json!(["lo"]));
    }
    assert!(
        run.join("opencode-events.jsonl").is_file(),
        "the plugin's lines"
    );
    let events = events(run);
    // The title opencode asks for is a side call, not a step of `main`'s script.
    let title = first(&events, "model_request", |e| {
        e["route"]["detail"] == "title"
    });
    assert_eq!(title["agent"], "main");
    // opencode's own events are on the timeline, by their source.
    assert!(
        events
            .iter()
            .any(|e| e["source"] == "events" && e["type"] == "session.status"),
        "no opencode event on the timeline"
    );
    let started = first(&events, "task_started", |e| e["label"] == "worker");
    assert_eq!(started["agent"], "main");
    assert_eq!(started["source"], "events");
    events
}

/// Print mode is `opencode run --format json`: main's turn ends, the process cancels the
/// background worker and exits 0; main is never told (H2: the waiter's end took the work with
/// it), with the worker's command killed by opencode, not by the harness.
#[test]
fn run_mode_ends_with_the_main_turn_and_cancels_the_worker() {
    let _slots = cli_slots(1);
    let out = tempfile::tempdir().unwrap();
    let run = run_variant("print", out.path());
    let events = check_run(&run);
    let result = json(&run.join("result.json"));
    assert_eq!(result["judgement"]["outcome"], "not-resumable", "{result}");
    let turn_end = first(&events, "turn_ended", |e| e["agent"] == "main");
    let cancelled = first(&events, "task_updated", |e| e["label"] == "worker");
    assert_eq!(cancelled["status"], "cancelled");
    let exit = first(&events, "cli_exited", |_| true);
    assert_eq!(exit["exit"]["code"], 0);
    assert!(t(turn_end) < t(cancelled) && t(cancelled) <= t(exit));
    // The worker's command was killed with the worker, before the CLI's exit.
    let check = first(&events, "track_ended", |e| e["name"] == "check");
    assert!(check["exit"]["signal"].is_number(), "{check}");
    assert!(t(check) <= t(exit));
    // run's own lines are read: the prompt went on stdin, main's lines came back.
    assert!(
        events
            .iter()
            .any(|e| e["source"] == "stream" && e["type"] == "tool_use"),
        "no `run` line"
    );
    assert!(
        !events.iter().any(|e| e["kind"] == "model_request"
            && e["notifications"].as_array().is_some_and(|n| !n.is_empty())),
        "no request carries a notification in run mode"
    );
}

/// Session mode is `opencode serve` driven over its HTTP API: the worker ends, its result is
/// injected into the idle main session, and main's next request carries it with no input;
/// the harness then disposes of the instance and ends the server.
#[test]
fn serve_mode_wakes_the_main_session_by_itself() {
    let _slots = cli_slots(1);
    let out = tempfile::tempdir().unwrap();
    let run = run_variant("session", out.path());
    let events = check_run(&run);
    let result = json(&run.join("result.json"));
    assert_eq!(result["judgement"]["outcome"], "woke", "{result}");
    assert!(run.join("event.sse").is_file(), "the /event stream's bytes");
    let ended = first(&events, "task_updated", |e| e["label"] == "worker");
    assert_eq!(ended["status"], "completed");
    let injected = first(&events, "task_notified", |e| e["label"] == "worker");
    let delivery = first(&events, "model_request", |e| {
        e["agent"] == "main"
            && e["notifications"]
                .as_array()
                .is_some_and(|n| n.iter().any(|n| n["status"] == "completed"))
    });
    assert!(t(ended) <= t(delivery) && t(injected) <= t(delivery));
    // Only the prompt went in: the wake needed no input.
    let inputs: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "user_input")
        .collect();
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    assert_eq!(inputs[0]["why"], "prompt");
    // Closed by the harness after the quiet window: dispose, then SIGTERM to the server.
    let closed = first(&events, "session_closed", |_| true);
    let exit = first(&events, "cli_exited", |_| true);
    assert!(t(delivery) < t(closed) && t(closed) < t(exit));
    assert_eq!(exit["exit"]["signal"], 15, "{exit}");
}

/// One Claude-only feature of a scenario on opencode, and where and why it is refused.
struct Refusal {
    what: &'static str,
    /// The scenario's `[driver]` extras, or its steps after main's first.
    driver: &'static str,
    main: &'static str,
    rest: &'static str,
    /// The text the error's position points at (its first occurrence), or `None` for an
    /// error located at the variant's table.
    at: Option<&'static str>,
    says: &'static str,
}

const SPAWN: &str = "call = \"Agent\"\nspawn = \"worker\"\ninput = { description = \"w\", prompt = \"Go.\", run_in_background = true }";

const REFUSALS: &[Refusal] = &[
    Refusal {
        what: "a run_in_background Bash",
        driver: "",
        main: "call = \"Bash\"\ninput = { command = \"sleep 1\", run_in_background = true }",
        rest: "",
        at: Some("\"Bash\""),
        says: "`main`'s step 1 (`call = \"Bash\"`) cannot run on opencode: `run_in_background` Bash is Claude Code's",
    },
    Refusal {
        what: "Monitor",
        driver: "",
        main: "call = \"Monitor\"\ntrack = \"m\"\ninput = { command = \"tail -f log\", description = \"watch\" }",
        rest: "",
        at: Some("\"Monitor\""),
        says: "`Monitor` is Claude Code's",
    },
    Refusal {
        what: "a teammate",
        driver: "",
        main: "call = \"Agent\"\nspawn = \"worker\"\ninput = { description = \"w\", prompt = \"Go.\", name = \"mate\" }",
        rest: "",
        at: Some("\"Agent\""),
        says: "starts a teammate, Claude Code's: opencode has no teammates",
    },
    Refusal {
        what: "SendMessage",
        driver: "",
        main: "call = \"SendMessage\"\ninput = { to = \"worker\", message = \"hi\" }",
        rest: "",
        at: Some("\"SendMessage\""),
        says: "`SendMessage` is Claude Code's",
    },
    Refusal {
        what: "TaskStop",
        driver: "",
        main: SPAWN,
        rest: "[[agents.main.steps]]\ncall = \"TaskStop\"\ninput = { task_id = \"x\" }\n",
        at: Some("\"TaskStop\""),
        says: "`main`'s step 3 (`call = \"TaskStop\"`) cannot run on opencode: `TaskStop` is Claude Code's",
    },
    Refusal {
        what: "the stall guard (a hook)",
        driver: "guard = true",
        main: SPAWN,
        rest: "",
        at: None,
        says: "`guard = true` installs the stall guard, a Claude Code hook: opencode runs no hooks",
    },
    Refusal {
        what: "a pseudo-terminal",
        driver: "mode = \"pty\"",
        main: SPAWN,
        rest: "",
        at: None,
        says: "mode `pty` is not one opencode runs",
    },
    Refusal {
        what: "the Agent SDK",
        driver: "mode = \"sdk\"",
        main: SPAWN,
        rest: "",
        at: None,
        says: "mode `sdk` is not one opencode runs",
    },
    Refusal {
        what: "a message to a running task",
        driver: "mode = \"session\"\ninputs = [{ after = \"result\", control = \"send_task_message\", target = \"worker\", message = \"more\" }]",
        main: SPAWN,
        rest: "",
        at: None,
        says: "the control request `send_task_message` has no counterpart on opencode",
    },
    Refusal {
        what: "a folder opencode's harness sets",
        driver: "env = { XDG_DATA_HOME = \"{{@folder:data}}\" }",
        main: SPAWN,
        rest: "",
        at: None,
        says: "`env` sets `XDG_DATA_HOME`, which wakeprobe sets for opencode",
    },
    Refusal {
        what: "a check on hooks",
        driver: "",
        main: SPAWN,
        rest: "[[checks]]\nname = \"guard\"\nkind = \"guard-blocked-once\"\nagent = \"worker\"\nexpect = \"not-blocked\"\n",
        at: Some("[[checks]]"),
        says: "check `guard` cannot be observed on opencode: check kind `guard-blocked-once` reads evidence opencode cannot give",
    },
    Refusal {
        what: "a query on hook payloads",
        driver: "",
        main: SPAWN,
        rest: "[[checks]]\nname = \"stops\"\nexists = { hook = \"SubagentStop\" }\nexpect = \"yes\"\n",
        at: Some("[[checks]]"),
        says: "check `stops` cannot be observed on opencode: its `of` selector cannot match: opencode runs no hooks",
    },
    Refusal {
        what: "a transcript check",
        driver: "",
        main: SPAWN,
        rest: "[[checks]]\nname = \"status\"\nkind = \"transcript-status\"\nagent = \"worker\"\nexpect = \"completed\"\n",
        at: Some("[[checks]]"),
        says: "check kind `transcript-status` reads evidence opencode cannot give",
    },
    Refusal {
        what: "a crash and resume",
        driver: "mode = \"session\"",
        main: SPAWN,
        rest: "[[agents.worker.steps]]\ncall = \"Bash\"\ntrack = \"bg\"\ninput = { command = \"sleep 5\" }\n\n[[faults]]\nkind = \"crash-cli\"\nwork = \"bg\"\nafter_seconds = 1\n",
        at: Some("\"crash-cli\""),
        says: "`crash-cli` restarts Claude Code with `--continue` on the same session: opencode has no such restart",
    },
];

/// The scenario of one refusal: `runtime = "opencode"`, print mode unless it says otherwise.
fn refusal_file(r: &Refusal) -> String {
    let mode = if r.driver.contains("mode =") {
        String::new()
    } else {
        "mode = \"print\"\n".into()
    };
    let worker = if r.main.contains("spawn") && !r.rest.contains("agents.worker") {
        "[[agents.worker.steps]]\nsay = \"Done.\"\n"
    } else {
        ""
    };
    format!(
        "name = \"claude-only\"\ntitle = \"t\"\nsummary = \"s\"\nruntime = \"opencode\"\n\n[driver]\n{mode}prompt = \"Go.\"\nceiling_seconds = 30\n{}\n\n[[agents.main.steps]]\n{}\n\n[[agents.main.steps]]\nsay = \"Done.\"\n\n{worker}\n{}",
        r.driver, r.main, r.rest
    )
}

/// `line:col` of the first `needle` in `text`, 1-based.
fn position(text: &str, needle: &str) -> String {
    let at = text.find(needle).expect("the needle is in the file");
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |n| n + 1) + 1;
    format!("{line}:{col}")
}

/// Every Claude-only step, setting and check on opencode is one located error, exit 2, before
/// anything is installed or run (no report folder is made); the same file without
/// `runtime = "opencode"` loads for Claude Code.
#[test]
fn every_claude_only_step_is_refused_on_opencode_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    for (i, r) in REFUSALS.iter().enumerate() {
        let text = refusal_file(r);
        let file = dir.path().join(format!("refusal-{i}.toml"));
        std::fs::write(&file, &text).unwrap();
        let out_dir = dir.path().join(format!("out-{i}"));
        let output = output_within(
            wakeprobe(&[
                "run",
                file.to_str().unwrap(),
                "--out",
                out_dir.to_str().unwrap(),
            ]),
            Duration::from_secs(30),
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{}: {stderr}", r.what);
        let line = stderr
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or_default();
        let located = format!("error: {}:", file.display());
        assert!(line.starts_with(&located), "{}: {stderr}", r.what);
        if let Some(needle) = r.at {
            let at = format!("{located}{}: ", position(&text, needle));
            assert!(
                line.starts_with(&at),
                "{}: expected {at}\n{stderr}\n{text}",
                r.what
            );
        }
        assert!(line.contains(r.says), "{}: {line}", r.what);
        assert!(!out_dir.exists(), "{}: nothing is written", r.what);
        // The runtime's refusal, not the file's: on Claude Code the same scenario loads.
        let on_claude = text.replace("runtime = \"opencode\"\n", "");
        let file = dir.path().join(format!("claude-{i}.toml"));
        std::fs::write(&file, &on_claude).unwrap();
        let lint = output_within(
            wakeprobe(&["lint", file.to_str().unwrap()]),
            Duration::from_secs(30),
        );
        assert_eq!(
            lint.status.code(),
            Some(0),
            "{}: {}{}",
            r.what,
            String::from_utf8_lossy(&lint.stdout),
            String::from_utf8_lossy(&lint.stderr)
        );
    }
    // A library scenario of Claude Code's on opencode (`--runtime`): refused, located in it.
    let output = output_within(
        wakeprobe(&[
            "run",
            "subagent-bg-turn-end",
            "--runtime",
            "opencode",
            "--out",
            dir.path().join("lib").to_str().unwrap(),
        ]),
        Duration::from_secs(30),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("subagent-bg-turn-end.toml:")
            && stderr.contains("`worker`'s step 1 (`call = \"Bash\"`) cannot run on opencode"),
        "{stderr}"
    );
}

/// One matrix over both runtimes, each at its pinned version: the seed-003 scenario's columns
/// side by side, each cell against the expectation recorded on its own runtime.
#[test]
fn a_matrix_shows_a_scenario_on_both_runtimes() {
    let _slots = cli_slots(4);
    let out = tempfile::tempdir().unwrap();
    let cmd = wakeprobe(&[
        "matrix",
        "--scenarios",
        SCENARIO,
        "--runtime",
        "claude-code,opencode",
        "--set",
        "bg_seconds=3",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let output = succeeds_leaving_nothing(cmd, Duration::from_secs(400));
    let matrix = json(&run_dir(out.path()).join("matrix.json"));
    let cell = |variant: &str, column: &str| {
        matrix["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["variant"] == variant && c["cli_spec"] == column)
            .unwrap_or_else(|| panic!("no {variant} cell in {column}: {matrix}"))
            .clone()
    };
    let pinned = wakeprobe::backend::PINNED_VERSION;
    for (variant, claude, opencode) in [
        ("print", "woke", "not-resumable"),
        ("session", "woke", "woke"),
    ] {
        for (column, outcome) in [(pinned, claude), ("opencode@1.18.33", opencode)] {
            let c = cell(variant, column);
            assert_eq!(c["outcome"], outcome, "{variant} on {column}: {c}");
            assert_eq!(c["matches_expect"], true, "{variant} on {column}: {c}");
        }
    }
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(
        table.contains("opencode@1.18.33") && table.contains(pinned),
        "both columns are shown: {table}"
    );
}
