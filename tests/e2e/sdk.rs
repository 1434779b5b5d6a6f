//! The Agent SDK driver modes on the real SDKs and the real pinned CLI: a scenario written for
//! the CLI drivers runs unchanged through `--driver sdk` (TypeScript, `query()` under Node) and
//! `--driver sdk-py` (Python, `ClaudeSDKClient`), with the CLI drivers' verdicts, and what the
//! SDK yielded is the `sdk` evidence source; what does not map is refused before anything runs.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::common::*;

/// seed 000's stall through one SDK: print (the SDK's string prompt) not-resumable, session
/// (its streaming input) woke, as the CLI drivers give; the run says which SDK it went
/// through, and the SDK's own messages (its task lines and results) are on the timeline.
fn seed_scenario_through(driver: &str) {
    let _cli = cli_slots(2);
    let out = tempfile::tempdir().unwrap();
    let output = output_within(
        wakeprobe(&[
            "run",
            "subagent-bg-turn-end",
            "--driver",
            driver,
            "--set",
            "bg_seconds=10",
            "--quiet",
            "--out",
            out.path().to_str().unwrap(),
        ]),
        Duration::from_secs(600),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let runs = runs(&run_dir(out.path()));
    assert_eq!(runs.len(), 2, "{runs:?}");
    for run in &runs {
        let info = json(&run.join("run.json"));
        let result = json(&run.join("result.json"));
        let variant = info["variant"].as_str().unwrap();
        let expected = if variant == "print" {
            "not-resumable"
        } else {
            "woke"
        };
        assert_eq!(
            result["judgement"]["outcome"],
            expected,
            "{}",
            run.display()
        );
        assert_eq!(info["mode"], driver);
        let sdk = info["sdk"].as_str().unwrap_or_default();
        let language = if driver == "sdk" {
            "TypeScript"
        } else {
            "Python"
        };
        assert!(sdk.contains(language), "{sdk}");
        // What ran is what the repro says: the driver and the SDK release in the command, and
        // in the draft's Version whether the SDK ships this CLI (0.3.335 ships 2.1.335; the
        // Python SDK bundles 2.1.332).
        let (flag, release, ships) = if driver == "sdk" {
            ("--sdk-version", "0.3.335", "2.1.335")
        } else {
            ("--sdk-py-version", "0.2.189", "2.1.332")
        };
        let command = info["command"].as_str().unwrap();
        assert!(
            command.contains(&format!(" --driver {driver} "))
                && command.contains(&format!(" {flag} {release}")),
            "{command}"
        );
        assert_eq!(info["sdk_ships_cli"], ships, "{info}");
        let report = std::fs::read_to_string(run.join("report.md")).unwrap();
        let version = report
            .lines()
            .find(|l| l.starts_with("**Version:**"))
            .unwrap();
        let pairing = if ships == "2.1.332" {
            format!("the Claude Code it ships ({ships})")
        } else {
            format!(
                "which ships Claude Code {ships}: this run's 2.1.332 is a pairing it does not ship"
            )
        };
        assert!(
            version.contains(&format!("through {sdk}, {pairing}")),
            "{version}"
        );
        assert!(report.contains(command), "the Repro's command is the run's");
        assert!(
            !report.contains("repro.mjs") && report.contains("not through an SDK"),
            "no standalone script for an SDK run: {report}"
        );
        assert!(
            info["cli_label"]
                .as_str()
                .unwrap()
                .ends_with(&format!("+{driver}")),
            "{info}"
        );
        let events = events(run);
        let from_sdk = |kind: &str| {
            events
                .iter()
                .filter(|e| e["source"] == "sdk" && e["kind"] == kind)
                .count()
        };
        assert!(from_sdk("turn_result") >= 1, "the SDK yielded its results");
        assert!(
            from_sdk("task_started") >= 2,
            "the SDK yielded the task lines"
        );
        assert!(
            events.iter().all(|e| e["source"] != "stream"),
            "the CLI's own stdout is the SDK's, never the harness's"
        );
    }
}

#[test]
fn the_typescript_sdk_gives_the_cli_drivers_verdicts() {
    seed_scenario_through("sdk");
}

#[test]
fn the_python_sdk_gives_the_cli_drivers_verdicts() {
    seed_scenario_through("sdk-py");
}

/// A scenario file in a temp folder.
fn scenario(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn refused(args: &[&str], needles: &[&str]) {
    let out = tempfile::tempdir().unwrap();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--out", out.path().to_str().unwrap()]);
    let output = output_within(wakeprobe(&all), Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{all:?}: {stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "`{needle}` in: {stderr}");
    }
    assert!(
        std::fs::read_dir(out.path()).unwrap().next().is_none(),
        "nothing written for {all:?}"
    );
}

const SESSION: &str = r#"
name = "sdk-bad"
title = "t"
summary = "s"

[driver]
mode = "session"
prompt = "Go."
ceiling_seconds = 30

[[agents.main.steps]]
say = "Done."
"#;

/// Every new key and flag refuses what does not map, located, exit 2, before anything runs.
#[test]
fn what_an_sdk_cannot_do_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    // The simulator does not speak the SDK's side of the protocol.
    refused(
        &[
            "run",
            "top-level-control",
            "--backend",
            "sim",
            "--driver",
            "sdk",
        ],
        &["top-level-control/", "does not speak the Agent SDK's side"],
    );
    refused(
        &[
            "run",
            "top-level-control",
            "--driver",
            "sdk",
            "--sdk-version",
            "latest",
        ],
        &["--sdk-version latest: expected a release number"],
    );
    // A pty variant has no SDK counterpart.
    refused(
        &["run", "teammate-idle", "--driver", "sdk"],
        &["teammate-idle.toml:", "pseudo-terminal", "cannot stand in"],
    );
    // Only the SDK drivers stand in for a scenario's own.
    refused(
        &["run", "top-level-control", "--driver", "session"],
        &["--driver session: only the SDK drivers"],
    );
    // An input the SDK has no call for, named and located.
    let message = scenario(
        dir.path(),
        "sdk-message",
        &SESSION
            .replace(
                "ceiling_seconds = 30",
                "ceiling_seconds = 30\ninputs = [{ after = \"task-start:bg\", control = \"send_task_message\", target = \"bg\", message = \"hi\" }]",
            )
            .replace(
                "say = \"Done.\"",
                "call = \"Bash\"\ntrack = \"bg\"\ninput = { command = \"sleep 1\", run_in_background = true }",
            ),
    );
    refused(
        &["run", &message, "--driver", "sdk-py"],
        &[
            "sdk-message.toml:10:",
            "`sdk-py` driver has no `send_task_message`",
        ],
    );
    // The SDK keys belong to the SDK drivers, and say what they take.
    let form = scenario(
        dir.path(),
        "sdk-form",
        &SESSION.replace(
            "mode = \"session\"",
            "mode = \"session\"\nprompt_form = \"string\"",
        ),
    );
    refused(
        &["run", &form],
        &[
            "sdk-form.toml:8:",
            "`prompt_form` applies to the SDK drivers",
        ],
    );
    let bad_form = scenario(
        dir.path(),
        "sdk-form2",
        &SESSION.replace(
            "mode = \"session\"",
            "mode = \"sdk\"\nprompt_form = \"once\"",
        ),
    );
    refused(
        &["run", &bad_form],
        &["sdk-form2.toml:8:", "unknown `prompt_form` `once`"],
    );
    let hooks = scenario(
        dir.path(),
        "sdk-hooks",
        &SESSION.replace(
            "mode = \"session\"",
            "mode = \"sdk\"\ncallback_hooks = [\"SubagentStopp\"]",
        ),
    );
    refused(
        &["run", &hooks],
        &["sdk-hooks.toml:8:", "unknown hook event `SubagentStopp`"],
    );
    let string_inputs = scenario(
        dir.path(),
        "sdk-string",
        &SESSION.replace(
            "mode = \"session\"",
            "mode = \"sdk\"\nprompt_form = \"string\"\ninputs = [{ text = \"more\" }]",
        ),
    );
    refused(
        &["run", &string_inputs],
        &[
            "sdk-string.toml:9:",
            "`prompt_form = \"string\"` takes one prompt",
        ],
    );
}

/// The Python SDK needs Python 3.10 or later: without one, the run is a setup failure (exit 3)
/// that says so; nothing is skipped silently. (A release no test installs, so no cached
/// virtual environment hides the check; the pinned CLI is never reached.)
#[test]
fn the_python_sdk_without_a_python_is_a_setup_failure_that_says_so() {
    let _cli = cli_slots(1);
    let out = tempfile::tempdir().unwrap();
    let mut cmd = wakeprobe(&[
        "run",
        "top-level-control",
        "--variant",
        "session",
        "--driver",
        "sdk-py",
        "--sdk-py-version",
        "0.2.100",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    cmd.env("WAKEPROBE_PYTHON", "/nonexistent/python3");
    let output = output_within(cmd, Duration::from_secs(120));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(3), "{all}");
    assert!(
        all.contains("the sdk-py driver needs Python 3.10 or later"),
        "{all}"
    );
    let summary: Value = json(&run_dir(out.path()).join("summary.json"));
    assert!(
        summary["setup_errors"][0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("Python 3.10"),
        "{summary}"
    );
}
