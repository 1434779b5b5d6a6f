//! Bad input through the binary: one-line errors with file:line:col, exit code 2, no panic.

mod common;

use std::time::Duration;

use common::*;

fn run_file(text: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.toml");
    std::fs::write(&path, text).unwrap();
    let output = output_within(
        wakeprobe(&[
            "run",
            path.to_str().unwrap(),
            "--quiet",
            "--out",
            dir.path().join("out").to_str().unwrap(),
        ]),
        Duration::from_secs(30),
    );
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        output.status.code().unwrap(),
        stderr.replace(&path.display().to_string(), "broken.toml"),
    )
}

const BASE: &str = r#"name = "broken"
title = "t"
summary = "s"

[params]
secs = 1

[driver]
mode = "print"
prompt = "go"
ceiling_seconds = 10

[[agents.main.steps]]
say = "done"
"#;

#[test]
fn each_kind_of_mistake_is_one_located_line_and_exit_2() {
    let cases = [
        (
            BASE.replace("title = \"t\"", "titel = \"t\""),
            "broken.toml:2:1: unknown field `titel`",
        ),
        (
            BASE.replace("ceiling_seconds = 10", "ceiling_seconds = [1]"),
            "broken.toml:11:19: invalid type",
        ),
        (
            BASE.replace("summary = \"s\"\n", ""),
            "broken.toml:1:1: missing field `summary`",
        ),
        (
            BASE.replace("say = \"done\"", "say = \"{{sec}}\""),
            "broken.toml:14:7: unknown parameter `sec`",
        ),
        (
            BASE.replace("mode = \"print\"", "mode = \"batch\""),
            "broken.toml:9:8: unknown variant `batch`",
        ),
        (
            BASE.replace("say = \"done\"", "spawn = \"x\""),
            "broken.toml:14:9: `spawn` names no agent: `x`",
        ),
        (BASE.replace("secs = 1", "secs = "), "broken.toml:6:8: "),
        (
            BASE.replace("ceiling_seconds = 10", "ceiling_seconds = \"{{secs}} +\""),
            "broken.toml:11:19: expression ends too early",
        ),
    ];
    for (text, expected) in cases {
        let (code, stderr) = run_file(&text);
        assert_eq!(code, 2, "{stderr}");
        let line = stderr
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or_else(|| panic!("an error line in {stderr}"));
        assert!(
            line.starts_with(&format!("error: {expected}")),
            "expected `{expected}`, got `{line}`"
        );
    }
}

#[test]
fn bad_arguments_exit_2() {
    let out = output_within(
        wakeprobe(&["run", "no-such-scenario", "--quiet"]),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no scenario named `no-such-scenario`"));
    let out = output_within(
        wakeprobe(&["run", "subagent-bg-turn-end", "--set", "nope=1", "--quiet"]),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2));
    let out = output_within(
        wakeprobe(&["run", "--claude-version", "2.x", "--quiet"]),
        Duration::from_secs(30),
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
