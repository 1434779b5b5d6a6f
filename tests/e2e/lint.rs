//! `wakeprobe lint`: the scenario library and the test fixtures lint clean, and each planted
//! mistake (a static error, a stale `seed`, a `ToolSearch` step, an `allowed_tools` repeating the
//! default) is one located line and exit 2, without anything run.

use std::time::Duration;

use crate::common::*;

/// `wakeprobe lint ARGS`: (exit code, stdout, stderr).
fn lint(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["lint"];
    all.extend_from_slice(args);
    let output = output_within(wakeprobe(&all), Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        output.status.code().unwrap(),
        String::from_utf8_lossy(&output.stdout).to_string(),
        stderr,
    )
}

const CLEAN: &str = r#"name = "planted"
title = "t"
summary = "s"

[driver]
mode = "print"
prompt = "go"
ceiling_seconds = 10

[[agents.main.steps]]
call = "Bash"
input = { command = "true" }

[[agents.main.steps]]
say = "done"
"#;

#[test]
fn the_library_and_the_fixtures_lint_clean() {
    let (code, stdout, stderr) = lint(&["scenarios", "tests/fixtures/scenarios"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(stdout, "", "{stderr}");
    assert!(stderr.contains(" 0 errors, 0 stale keys"), "{stderr}");
}

#[test]
fn each_planted_mistake_is_one_located_line_and_exit_2() {
    let cases = [
        (
            CLEAN.replace("title = \"t\"", "titel = \"t\""),
            "error: planted.toml:2:1: unknown field `titel`",
        ),
        (
            CLEAN.replace("summary = \"s\"\n", "summary = \"s\"\nseed = \"999\"\n"),
            "stale: planted.toml:4:1: `seed = \"999\"` names none of the project's source reports",
        ),
        (
            CLEAN.replace("call = \"Bash\"", "call = \"ToolSearch\"\ninput = { query = \"select:Bash\" }\n\n[[agents.main.steps]]\ncall = \"Bash\""),
            "stale: planted.toml:10:1: a step calls `ToolSearch`",
        ),
        (
            CLEAN.replace(
                "ceiling_seconds = 10",
                "ceiling_seconds = 10\nallowed_tools = [\"Bash\", \"Agent\", \"SendMessage\"]",
            ),
            "stale: planted.toml:9:1: `allowed_tools` repeats what the CLI may run without it",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.toml");
    std::fs::write(&clean, CLEAN).unwrap();
    let (code, stdout, stderr) = lint(&[clean.to_str().unwrap()]);
    assert_eq!(
        (code, stdout.as_str()),
        (0, ""),
        "the unplanted file: {stderr}"
    );
    for (text, expected) in cases {
        let path = dir.path().join("planted.toml");
        std::fs::write(&path, &text).unwrap();
        let (code, stdout, stderr) = lint(&[dir.path().to_str().unwrap()]);
        let stdout = stdout.replace(&path.display().to_string(), "planted.toml");
        assert_eq!(code, 2, "{expected}: {stdout}{stderr}");
        assert_eq!(
            stdout.lines().count(),
            1,
            "one line for one mistake: {stdout}"
        );
        assert!(
            stdout.starts_with(expected),
            "expected `{expected}`\ngot      `{stdout}`"
        );
        assert!(stderr.contains("lint: 2 files, "), "{stderr}");
    }
}

#[test]
fn a_missing_path_is_bad_input_before_anything_is_read() {
    let (code, stdout, stderr) = lint(&["scenarios", "no-such-folder"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("no-such-folder: no such file or folder"),
        "{stderr}"
    );
    assert_eq!(stdout, "");
}
