//! Bad input through the binary: one-line errors with file:line:col, exit code 2, no panic.

use std::time::Duration;

use crate::common::*;

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

/// A scenario that names work or agents its script does not have, or nests an expression too
/// deeply, fails at load with one located line.
#[test]
fn references_to_nothing_and_deep_nesting_are_located() {
    let session = BASE.replace("mode = \"print\"", "mode = \"session\"");
    let cases = [
        (
            format!("{BASE}\n[[watch]]\nwaiter = \"main\"\nwork = \"ghost\"\n"),
            "broken.toml:18:8: `work` names no spawned agent or tracked command: `ghost` (this variant has: none in this variant)",
        ),
        (
            session.replace(
                "ceiling_seconds = 10",
                "ceiling_seconds = 10\ninputs = [{ after = \"turn-end:ghost#3\", text = \"x\" }]",
            ),
            "broken.toml:12:21: the trigger names no agent: `ghost` (agents: main)",
        ),
        (
            session.replace(
                "ceiling_seconds = 10",
                "ceiling_seconds = 10\ninputs = [{ after = \"task-end:nope\", text = \"x\" }]",
            ),
            "broken.toml:12:21: the trigger names no tracked command: `nope` (tracked: none in this variant)",
        ),
        (
            session.replace(
                "ceiling_seconds = 10",
                "ceiling_seconds = 10\ninputs = [{ control = \"stop_task\", target = \"nobody\" }]",
            ),
            "broken.toml:12:45: `target` names no spawned agent or tracked command: `nobody` (this variant has: none in this variant)",
        ),
        (
            BASE.replace(
                "ceiling_seconds = 10",
                &format!(
                    "ceiling_seconds = \"{}1{}\"",
                    "(".repeat(5000),
                    ")".repeat(5000)
                ),
            ),
            "broken.toml:11:19: the expression nests deeper than 64 levels of parentheses or signs",
        ),
    ];
    for (text, expected) in cases {
        let (code, stderr) = run_file(&text);
        assert_eq!(code, 2, "{stderr}");
        let line = stderr.lines().find(|l| l.starts_with("error: ")).unwrap();
        assert_eq!(line, format!("error: {expected}"));
    }
}

/// A scenario whose script spawns `worker`, with one check appended.
const WITH_CHECK: &str = r#"name = "broken"
title = "t"
summary = "s"

[driver]
mode = "print"
prompt = "go"
ceiling_seconds = 10

[[agents.main.steps]]
call = "Agent"
spawn = "worker"
input = { description = "w", prompt = "p", run_in_background = true }

[[agents.worker.steps]]
say = "done"

[[checks]]
name = "q"
"#;

/// Every kind of mistake in a query is one located line, exit 2, before anything runs.
#[test]
fn each_kind_of_query_mistake_is_one_located_line_and_exit_2() {
    let cases = [
        (
            r#"countt = { kind = "hook" }"#,
            "broken.toml:20:1: unknown field `countt`, expected one of `name`, `kind`, `agent`, `expect`, `count`",
        ),
        (
            "count = { kind = \"hook\" }\nexists = { kind = \"hook\" }",
            "broken.toml:21:10: a check has one relation; `exists` is a second one (write two checks)",
        ),
        (
            "kind = \"tool-errors\"\ncount = { kind = \"hook\" }",
            "broken.toml:20:8: a check is a preset (`kind`) or a query (`count`), not both",
        ),
        (
            r#"expect = "yes""#,
            "broken.toml:18:1: a check needs a preset (`kind = \"...\"`) or a relation: count, exists",
        ),
        (
            r#"count = { source = "apii" }"#,
            "broken.toml:20:20: unknown source `apii`, expected one of: api, hook, stream, os, driver, transcript, screen",
        ),
        (
            r#"count = { kind = "hooks" }"#,
            "broken.toml:20:18: unknown event kind `hooks`, expected one of: cli_spawned",
        ),
        (
            r#"count = { hook = "SubagentStopp" }"#,
            "broken.toml:20:18: unknown hook `SubagentStopp`, expected one of: SessionStart",
        ),
        (
            r#"count = { agent = "ghost" }"#,
            "broken.toml:20:19: `agent` names no agent: `ghost` (agents: main, worker)",
        ),
        (
            r#"count = { work = "ghost" }"#,
            "broken.toml:20:18: `work` names no spawned agent or tracked command: `ghost` (this variant has: worker)",
        ),
        (
            r#"count = { knd = "hook" }"#,
            "broken.toml:20:11: unknown field `knd`, expected one of `source`, `kind`",
        ),
        (
            r#"count = { where = [{ path = "background_tasks[x]", exists = true }] }"#,
            "broken.toml:20:29: `background_tasks[x]`: `[x]` is not an index (a number or `*`)",
        ),
        (
            r#"count = { where = [{ path = "text", matches = "(unclosed" }] }"#,
            "broken.toml:20:47: not a regular expression: unclosed group",
        ),
        (
            r#"count = { where = [{ path = "text", contains = "a", exists = true }] }"#,
            "broken.toml:20:20: a `where` entry has one test; write one entry per test",
        ),
        (
            r#"count = { where = [{ path = "text" }] }"#,
            "broken.toml:20:20: a `where` entry needs one test: equals, contains, matches, exists, gt, ge, lt or le",
        ),
        (
            "count = { kind = \"hook\" }\nexpect = \"yes\"",
            "broken.toml:21:10: `count` observes a number or a comparison such as `>= 1`, not `yes`",
        ),
        (
            "exists = { kind = \"hook\" }\nexpect = \">= 1\"",
            "broken.toml:21:10: `exists` observes `yes`, `no` or `not-observed`, not `>= 1`",
        ),
        (
            r#"value = { at = { kind = "hook" }, path = "detail", capture = "\\w+" }"#,
            "broken.toml:20:62: a `capture` needs a group, such as `status (\\w+)`",
        ),
        (
            r#"within = { after = { kind = "hook" }, then = { kind = "hook" }, seconds = 0 }"#,
            "broken.toml:20:75: expected a number of seconds above zero",
        ),
        (
            r#"pairs = { each = { kind = "hook" }, with = { kind = "hook" }, by = "agnt" }"#,
            "broken.toml:20:68: unknown `by` `agnt`, expected `agent` or `work`",
        ),
        (
            r#"before = { first = { kind = "hook" } }"#,
            "broken.toml:20:10: missing field `then`",
        ),
        (
            r#"value = { at = { kind = "hook" }, path = "detail", which = "middle" }"#,
            "broken.toml:20:60: unknown `which` `middle`, expected `first` or `last`",
        ),
    ];
    for (check, expected) in cases {
        let (code, stderr) = run_file(&format!("{WITH_CHECK}{check}\n"));
        assert_eq!(code, 2, "{check}: {stderr}");
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("error: "))
            .collect();
        assert_eq!(errors.len(), 1, "{check}: {stderr}");
        assert!(
            errors[0].starts_with(&format!("error: {expected}")),
            "{check}:\nexpected `{expected}`\ngot      `{}`",
            errors[0]
        );
    }
}

/// Argument mistakes that used to run and fail late are caught before anything runs.
#[test]
fn argument_mistakes_fail_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"not\": \"a matrix\"}").unwrap();
    let missing = dir.path().join("missing.json");
    let (o, j, m) = (
        out.to_str().unwrap(),
        junk.to_str().unwrap(),
        missing.to_str().unwrap(),
    );
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["run", "subagent-bg-turn-end", "--variant", "print", "--variant", "nope", "--out", o],
            "error: --variant nope: no chosen scenario has this variant (they have: print, session)".into(),
        ),
        (
            vec!["run", "subagent-bg-turn-end/nope", "--out", o],
            "error: subagent-bg-turn-end/nope: `subagent-bg-turn-end` has no variant `nope`, expected one of: print, session".into(),
        ),
        (
            vec!["run", "--jobs", "0", "--out", o],
            "error: invalid value '0' for '--jobs <JOBS>': 0 is not in 1..=65535".into(),
        ),
        (
            vec!["matrix", "--versions", "2.1.332", "--baseline", m, "--out", o],
            format!("error: {m}: No such file or directory (os error 2)"),
        ),
        (
            vec!["matrix", "--versions", "2.1.332", "--baseline", j, "--out", o],
            format!("error: {j}: not a wakeprobe matrix.json: missing field `schema` at line 1 column 19"),
        ),
        (
            vec!["run", "subagent-bg-turn-end", "--out", "/proc/version/reports"],
            "error: --out /proc/version/reports: cannot create a run folder there: Not a directory (os error 20)".into(),
        ),
        (
            vec!["baseline", "update", j],
            format!("error: {j}: not a wakeprobe matrix.json: missing field `schema` at line 1 column 19"),
        ),
        (
            vec!["baseline", "update", "baseline/matrix.json", "--baseline", j],
            format!("error: {j}: not a wakeprobe matrix.json: missing field `schema` at line 1 column 19; refusing to overwrite it with a baseline"),
        ),
    ];
    // An empty cache: a mistake found only after installing the CLI would fill it.
    let empty_cache = dir.path().join("cache");
    for (args, expected) in cases {
        let before = std::fs::read(&junk).unwrap();
        let mut cmd = wakeprobe(&args);
        cmd.env("WAKEPROBE_CACHE", &empty_cache);
        let output = output_within(cmd, Duration::from_secs(30));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        let line = stderr
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or("");
        assert_eq!(line, expected, "{args:?}");
        assert!(!out.exists(), "{args:?}: nothing was run or written");
        assert!(!empty_cache.exists(), "{args:?}: nothing was installed");
        assert_eq!(
            std::fs::read(&junk).unwrap(),
            before,
            "the file is untouched"
        );
    }
}

/// A version neither channel publishes is bad input, found before anything runs: exit 2, and
/// the nearest published versions named (asked of the real registry: 2.1.24 was never
/// published, 2.1.23 and 2.1.25 were).
#[test]
fn an_unpublished_version_names_the_nearest_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = output_within(
        wakeprobe(&[
            "run",
            "top-level-control",
            "--claude-version",
            "2.1.24",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]),
        Duration::from_secs(200),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        "error: 2.1.24 is not published (neither by the claude-code package \
         (@anthropic-ai/claude-code) nor by the Agent SDK (@anthropic-ai/claude-agent-sdk)): the \
         nearest are 2.1.25, 2.1.23\n"
    );
    assert!(!out.exists(), "nothing was written");
    assert!(
        !cache().join("claude-code/2.1.24").exists(),
        "nothing installed"
    );
}

/// A registry that cannot be reached is a setup failure (exit 3) naming each channel that did
/// not answer: npm is pointed at a closed loopback port through its own configuration
/// (`npm_config_registry`, which wakeprobe leaves to npm), with a cache of its own so nothing
/// is answered from npm's cache.
#[test]
fn an_unreachable_registry_exits_3_naming_the_channels() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port(); // closed again as the listener drops
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut cmd = wakeprobe(&[
        "run",
        "top-level-control",
        "--claude-version",
        "latest",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    cmd.env("WAKEPROBE_CACHE", dir.path().join("cache"))
        .env("npm_config_registry", format!("http://127.0.0.1:{port}/"))
        .env("npm_config_fetch_retries", "0");
    let output = output_within(cmd, Duration::from_secs(200));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    for channel in [
        "for the claude-code package (@anthropic-ai/claude-code): FetchError: request to",
        "nor for the Agent SDK (@anthropic-ai/claude-agent-sdk): FetchError: request to",
    ] {
        assert!(stderr.contains(channel), "{channel} in {stderr}");
    }
    assert!(
        stderr.contains(&format!("127.0.0.1:{port}")) && stderr.contains("ECONNREFUSED"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(!out.exists(), "nothing was written");
}
