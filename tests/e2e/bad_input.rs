//! Bad input through the binary: one-line errors with file:line:col, exit code 2, no panic.

use std::path::Path;
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
            "broken.toml:20:1: unknown field `countt`, expected one of `name`, `kind`, `agent`, `expect`, `want`, `allow_empty`, `count`",
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
/// not answer.
#[test]
fn an_unreachable_registry_exits_3_naming_the_channels() {
    let started = std::time::Instant::now();
    let (output, port, dir) = with_an_unreachable_registry(&[]);
    // npm's own retries took 71 s (issue #41); wakeprobe's patience for a question is seconds
    // (about 2 s alone). The bound sits between the two with room for a loaded runner, where
    // two node starts alone took 22 s under the whole suite.
    assert!(
        started.elapsed() < Duration::from_secs(45),
        "it took {:?}",
        started.elapsed()
    );
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
    assert!(!dir.path().join("out").exists(), "nothing was written");
}

/// Exit 3 before anything ran still closes the machine outputs: the JSON stream ends with its
/// `summary` line (the exit code and the error), and `--junit` holds one `<error>` saying why.
#[test]
fn a_setup_failure_still_ends_the_json_stream_and_writes_a_junit_error() {
    let junit = tempfile::tempdir().unwrap();
    let path = junit.path().join("junit.xml");
    let (output, _, dir) = with_an_unreachable_registry(&[
        "--message-format",
        "json",
        "--junit",
        path.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(last["type"], "summary", "{last}");
    assert_eq!(last["exit_code"], 3, "{last}");
    assert!(
        last["error"]
            .as_str()
            .is_some_and(|e| e.contains("ECONNREFUSED")),
        "{last}"
    );
    let xml = std::fs::read_to_string(&path).expect("the JUnit file is written");
    crate::common::junit::checked_and_kept(&xml).unwrap_or_else(|p| panic!("{p:#?}\n{xml}"));
    assert!(
        xml.contains("<error ") && xml.contains(r#"type="setup""#) && xml.contains("ECONNREFUSED"),
        "{xml}"
    );
    assert!(
        !dir.path().join("out").exists(),
        "no report folder was made"
    );
}

/// `wakeprobe run top-level-control --claude-version latest ARGS` with npm pointed at a closed
/// loopback port through the registry settings wakeprobe passes on to npm
/// (`npm_config_registry`) and a cache of its own, so nothing is answered from a cache: the
/// output, the port, and the folder holding `out` and the cache.
fn with_an_unreachable_registry(args: &[&str]) -> (std::process::Output, u16, tempfile::TempDir) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port(); // closed again as the listener drops
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut all = vec![
        "run",
        "top-level-control",
        "--claude-version",
        "latest",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let mut cmd = wakeprobe(&all);
    cmd.env("WAKEPROBE_CACHE", dir.path().join("cache"))
        .env("npm_config_registry", format!("http://127.0.0.1:{port}/"));
    (output_within(cmd, Duration::from_secs(200)), port, dir)
}

/// A scenario with a parameter that is seconds, used in a command.
pub(crate) const TIMED: &str = r#"name = "broken"
title = "t"
summary = "s"

[params]
bg_seconds = 1

[driver]
mode = "print"
prompt = "go"
ceiling_seconds = 10

[[agents.main.steps]]
call = "Bash"
input = { command = "sleep {{bg_seconds}}" }

[[agents.main.steps]]
say = "done"
"#;

/// `wakeprobe run broken.toml ARGS --out DIR/out` with an empty cache: the exit code and the
/// error line, once it is checked that nothing ran, was installed or was written anywhere
/// (the folder holds the scenario file alone, so no run folder was ever made).
pub(crate) fn refused(text: &str, args: &[&str]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.toml");
    std::fs::write(&path, text).unwrap();
    let out = dir.path().join("out");
    let mut all = vec!["run", path.to_str().unwrap(), "--quiet"];
    all.extend_from_slice(args);
    all.extend(["--out", out.to_str().unwrap()]);
    let mut cmd = wakeprobe(&all);
    cmd.env("WAKEPROBE_CACHE", dir.path().join("cache"));
    let output = output_within(cmd, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        vec!["broken.toml"],
        "{args:?}: nothing written: {stderr}"
    );
    let line = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("an error line in {stderr}"))
        .replace(&path.display().to_string(), "broken.toml");
    (output.status.code().unwrap(), line)
}

/// Issue #34: each way a mistake used to run (and be judged `child-failed`, or write run
/// folders outside `--out`) is one located line, exit 2, before anything runs.
#[test]
fn mistakes_that_used_to_run_are_located_and_nothing_runs() {
    let check =
        |name: &str| format!("[[checks]]\nname = \"{name}\"\ncount = {{ kind = \"hook\" }}\n");
    let cases: Vec<(String, Vec<&str>, &str)> = vec![
        (
            format!("{TIMED}\n[variants.\"../../x\"]\n"),
            vec![],
            "broken.toml:20:1: invalid variant name `../../x`: expected lowercase letters, digits and `-`",
        ),
        (
            format!("{TIMED}\n[variants.\"/abs/path\"]\n"),
            vec![],
            "broken.toml:20:1: invalid variant name `/abs/path`: expected lowercase letters, digits and `-`",
        ),
        (
            TIMED.replace("bg_seconds = 1", "bg_seconds = \"abc\""),
            vec![],
            "broken.toml:6:14: `bg_seconds` is a number of seconds (its name ends in `_seconds`), not `abc`",
        ),
        (
            format!("{TIMED}\n[variants.v]\nparams = {{ bg_seconds = \"abc\" }}\n"),
            vec![],
            "broken.toml:21:25: `bg_seconds` is a number (as its default `1`), not `abc`",
        ),
        (
            TIMED.into(),
            vec!["--set", "bg_seconds=-1"],
            "--set bg_seconds: `bg_seconds` = -1 is not a number of seconds from 0 to 86400 (a name ending in `_seconds` makes it a duration)",
        ),
        (
            TIMED.into(),
            vec!["--set", "bg_seconds=1e12", "--explore"],
            "--set bg_seconds: `bg_seconds` = 1000000000000 is not a number of seconds from 0 to 86400 (a name ending in `_seconds` makes it a duration)",
        ),
        (
            TIMED
                .replace("bg_seconds = 1", "bg_seconds = 1\nscale = 1")
                .replace("ceiling_seconds = 10", "ceiling_seconds = \"10 * {{scale}}\""),
            vec!["--set", "scale=1e6"],
            "broken.toml:12:19: 10000000 seconds is out of range (expected 0 to 86400): from scale = 1000000",
        ),
        (
            TIMED.replace("bg_seconds = 1", "bg_seconds = { default = 1, min = 1 }"),
            vec!["--set", "bg_seconds=0.5"],
            "--set bg_seconds: 0.5 is outside the range where broken/print's expected verdict holds (bg_seconds >= 1); pass --explore to run it anyway, with no expected verdict",
        ),
        (
            TIMED.into(),
            vec!["--set", "bg_seconds=2", "--set", "bg_seconds=3"],
            "--set bg_seconds is given twice (bg_seconds=2, then bg_seconds=3): give each parameter once",
        ),
        (
            TIMED.into(),
            vec!["--backend", "sim", "--claude-version", "2.1.219"],
            "--claude-version has no meaning with --backend sim: the simulator stands in for the CLI (its behaviour is --profile)",
        ),
        (
            TIMED.into(),
            vec!["--backend", "sim", "--claude-bin", "/bin/true"],
            "--claude-bin has no meaning with --backend sim: the simulator stands in for the CLI (its behaviour is --profile)",
        ),
        (
            TIMED.into(),
            vec!["--profile", "fixed"],
            "--profile chooses the simulator's behaviour: it needs --backend sim",
        ),
        (
            TIMED.replace(
                "ceiling_seconds = 10",
                "ceiling_seconds = 10\nenv = { X = \"a\\u0000b\" }",
            ),
            vec![],
            "broken.toml:12:13: `env.X` holds a NUL byte, which no environment can carry",
        ),
        (
            format!("{TIMED}\n{}\n{}", check("q"), check("q")),
            vec![],
            "broken.toml:24:1: a second check named `q` (the first is on line 20): each check needs its own name",
        ),
        (
            TIMED.replace(
                "input = { command = \"sleep {{bg_seconds}}\" }",
                "input = { command = \"sleep {{bg_seconds}}\" }\nuntil = \"notified\"\nmax_repeats = 0",
            ),
            vec![],
            "broken.toml:17:15: `max_repeats` must be at least 1: 0 would never repeat the step (leave `until` out for that)",
        ),
        (
            format!("{TIMED}\n[[checks]]\nname = \"q\"\ncount = \"x\"\n"),
            vec![],
            "broken.toml:22:9: invalid type: string \"x\", expected a selector table such as { kind = \"hook\" } or { hook = \"SubagentStop\", agent = \"worker\" }",
        ),
        (
            TIMED.replace(
                "[[agents.main.steps]]\nsay = \"done\"",
                "[[agents.main.steps]]\ncall = \"Agent\"\nspawn = \"a\"\ninput = { description = \"w\", prompt = \"p\" }\n\n[[agents.a.steps]]\ncall = \"Agent\"\nspawn = \"b\"\ninput = { description = \"w\", prompt = \"p\" }\n\n[[agents.b.steps]]\ncall = \"Agent\"\nspawn = \"a\"\ninput = { description = \"w\", prompt = \"p\" }",
            ),
            vec![],
            "broken.toml:29:9: agents spawn each other in a cycle: a -> b -> a; every agent but `main` is spawned once, by an agent that runs before it",
        ),
    ];
    // Every case is tried and every miss reported, not just the first.
    let misses: Vec<String> = cases
        .into_iter()
        .filter_map(|(text, args, expected)| {
            let outcome = std::panic::catch_unwind(|| refused(&text, &args));
            match outcome {
                Ok((2, line)) if line == format!("error: {expected}") => None,
                Ok((code, line)) => Some(format!(
                    "{args:?}: exit {code}: {line}\n  expected: {expected}"
                )),
                Err(_) => Some(format!(
                    "{args:?}: expected `{expected}`: see the panic above"
                )),
            }
        })
        .collect();
    assert!(misses.is_empty(), "{}", misses.join("\n"));
}

/// A name with a bell, a colour escape and a right-to-left override is echoed escaped: the
/// terminal shows what was written, and is not recoloured or reordered by it.
#[test]
fn names_are_echoed_escaped() {
    let text = TIMED.replace("name = \"broken\"", "name = \"\\u0007\\u001b[31mx\\u202e\"");
    let (code, line) = refused(&text, &[]);
    assert_eq!(code, 2);
    assert_eq!(
        line,
        "error: broken.toml:1:8: invalid name `\\u{7}\\u{1b}[31mx\\u{202e}`: expected lowercase letters, digits and `-`"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = output_within(
        wakeprobe(&[
            "run",
            "subagent-bg-turn-end",
            "--variant",
            "\u{1b}[31mred\u{7}",
            "--out",
            dir.path().join("out").to_str().unwrap(),
        ]),
        Duration::from_secs(30),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("\\u{1b}[31mred\\u{7}"), "{stderr}");
    assert!(
        !stderr.contains(['\u{1b}', '\u{7}', '\u{202e}']),
        "{stderr:?}"
    );
    // A check's name is free text: a run prints it escaped too.
    let path = dir.path().join("named.toml");
    std::fs::write(
        &path,
        format!("{TIMED}\n[[checks]]\nname = \"bell\\u0007 \\u001b[31mred\\u202e\"\ncount = {{ kind = \"hook\" }}\n"),
    )
    .unwrap();
    let out = output_within(
        wakeprobe(&[
            "run",
            path.to_str().unwrap(),
            "--backend",
            "sim",
            "--quiet",
            "--out",
            dir.path().join("out").to_str().unwrap(),
        ]),
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("bell\\u{7} \\u{1b}[31mred\\u{202e}"),
        "{stdout}"
    );
    assert!(
        !stdout.contains(['\u{1b}', '\u{7}', '\u{202e}']),
        "{stdout:?}"
    );
}

/// Files given as input are stat'ed before they are read: a device, a FIFO, a folder, or a
/// file over its kind's limit (a scenario 4 MiB, a transcript 128 MiB, a results file 64 MiB)
/// is refused with its path, exit 2, without a byte read (the large files are sparse: reading
/// them would take seconds and the memory the limit is there to spare).
#[test]
fn inputs_that_are_not_files_or_too_large_are_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let sparse = |name: &str, len: u64| {
        let path = dir.path().join(name);
        std::fs::File::create(&path).unwrap().set_len(len).unwrap();
        path.display().to_string()
    };
    let fifo = dir.path().join("fifo.toml");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a path of our own temp folder.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let fifo = fifo.display().to_string();
    let folder = dir.path().join("folder.toml");
    std::fs::create_dir(&folder).unwrap();
    let folder = folder.display().to_string();
    let scenario = sparse("big.toml", 50 * 1024 * 1024);
    let transcript = sparse("big.jsonl", 129 * 1024 * 1024);
    let baseline = sparse("big.json", 65 * 1024 * 1024);
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["run", &scenario, "--out", o],
            format!("{scenario}: 52428800 bytes is over the 4.0 MiB limit of a scenario file"),
        ),
        (
            vec!["run", "/dev/zero", "--out", o],
            "/dev/zero: not a regular file (a character device): give a file".into(),
        ),
        (
            vec!["run", &fifo, "--out", o],
            format!("{fifo}: not a regular file (a FIFO): give a file"),
        ),
        (
            vec!["run", &folder, "--out", o],
            format!("{folder}: not a regular file (a folder): give a file"),
        ),
        (
            vec!["import", &transcript],
            format!("{transcript}: 135266304 bytes is over the 128.0 MiB limit of a transcript"),
        ),
        (
            vec!["import", "/dev/zero"],
            "/dev/zero: not a regular file (a character device): give a file".into(),
        ),
        (
            vec![
                "matrix",
                "--versions",
                "2.1.332",
                "--baseline",
                &baseline,
                "--out",
                o,
            ],
            format!("{baseline}: 68157440 bytes is over the 64.0 MiB limit of a results file"),
        ),
    ];
    let empty_cache = dir.path().join("cache");
    let mut misses = Vec::new();
    for (args, expected) in cases {
        let mut cmd = wakeprobe(&args);
        cmd.env("WAKEPROBE_CACHE", &empty_cache);
        let output = output_within(cmd, Duration::from_secs(30));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let line = stderr
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or("");
        if output.status.code() != Some(2) || line != format!("error: {expected}") {
            let code = output.status.code();
            misses.push(format!(
                "{args:?}: {code:?}: {line}\n  expected: {expected}"
            ));
        }
        assert!(
            !out.exists() && !empty_cache.exists(),
            "{args:?}: nothing written"
        );
    }
    assert!(misses.is_empty(), "{}", misses.join("\n"));
}

/// `matrix` resolves every chosen variant with its `--set` values before it makes its folder or
/// installs a CLI: a duration out of range is refused with nothing written.
#[test]
fn matrix_refuses_a_bad_value_before_making_anything() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let cache = dir.path().join("cache");
    let mut cmd = wakeprobe(&[
        "matrix",
        "--scenarios",
        "subagent-bg-turn-end",
        "--versions",
        "2.1.332",
        "--sim-version",
        "2.1.332=fixed",
        "--set",
        "bg_seconds=-1",
        "--out",
        out.to_str().unwrap(),
    ]);
    cmd.env("WAKEPROBE_CACHE", &cache);
    let output = output_within(cmd, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: --set bg_seconds: `bg_seconds` = -1 is not a number of seconds"),
        "{stderr}"
    );
    assert!(!out.exists() && !cache.exists(), "nothing made: {stderr}");
}

/// `wakeprobe ARGS` in a folder of its own holding `broken.toml` (TIMED) and whatever `setup`
/// puts there; `{dir}` in an argument is that folder. The exit code and the error line, once
/// it is checked that nothing was added to the folder, changed in it, or installed.
fn refused_in_a_folder(args: &[&str], setup: impl FnOnce(&Path)) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken.toml"), TIMED).unwrap();
    setup(dir.path());
    let listing = |dir: &Path| {
        let mut all: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                let bytes = std::fs::read(&p).unwrap_or_default();
                (p.file_name().unwrap().to_string_lossy().to_string(), bytes)
            })
            .collect();
        all.sort();
        all
    };
    let before = listing(dir.path());
    let shown = dir.path().display().to_string();
    let args: Vec<String> = args.iter().map(|a| a.replace("{dir}", &shown)).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut cmd = wakeprobe(&args);
    cmd.current_dir(dir.path());
    let output = output_within(cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        listing(dir.path()),
        before,
        "{args:?}: nothing written: {stderr}"
    );
    let line = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("{args:?}: an error line in {stderr}"))
        .replace(&shown, "{dir}");
    (output.status.code().unwrap(), line)
}

/// Issue #41 (2): every case that used to be refused only after a run folder was written (or
/// after the whole run) is refused before anything is written: exit 2 for a wrong argument,
/// 3 for a CLI that does not run, and the error line names the cause.
#[test]
fn checks_that_can_be_made_first_are_made_before_anything_is_written() {
    let long = format!("name = \"{}\"", "a".repeat(10_000));
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            vec![
                "bisect",
                "broken.toml",
                "--sim-version",
                "2.1.332=fixed",
                "--sim-version",
                "2.1.300=fixed",
                "--good",
                "2.1.332",
                "--bad",
                "2.1.332",
                "--out",
                "out",
            ],
            2,
            "error: --good 2.1.332 must come before --bad 2.1.332 in version order",
        ),
        (
            vec![
                "bisect",
                "broken.toml",
                "--versions",
                "2.1.300,2.1.332",
                "--good",
                "2.1.332",
                "--bad",
                "2.1.300",
                "--out",
                "out",
            ],
            2,
            "error: --good 2.1.332 must come before --bad 2.1.300 in version order",
        ),
        (
            vec![
                "bisect",
                "broken.toml",
                "--sim-version",
                "2.1.300=ghost",
                "--sim-version",
                "2.1.332=fixed",
                "--good",
                "2.1.300",
                "--bad",
                "2.1.332",
                "--out",
                "out",
            ],
            2,
            "error: unknown simulator profile `ghost`, expected one of: ",
        ),
        (
            vec![
                "matrix",
                "--scenarios",
                "broken.toml",
                "--sim-version",
                "2.1.332=ghost",
                "--out",
                "out",
            ],
            2,
            "error: unknown simulator profile `ghost`, expected one of: ",
        ),
        (
            vec![
                "matrix",
                "--scenarios",
                "broken.toml",
                "--sim-version",
                "2.1.999=fixed",
                "--out",
                "out",
            ],
            2,
            "error: --sim-version maps no profile to `2.1.332` (a version of --versions): add --sim-version 2.1.332=PROFILE",
        ),
        (
            vec!["run", "broken.toml", "--cli-arg=--no-such", "--out", "out"],
            2,
            "error: --cli-arg --no-such: claude-2.1.332 does not accept it (its --help names no such flag)",
        ),
        (
            vec![
                "run",
                "broken.toml",
                "--backend",
                "sim",
                "--cli-arg=--no-such",
                "--out",
                "out",
            ],
            2,
            "error: --cli-arg --no-such: sim-finalize-on-turn-end does not accept it (its --help names no such flag)",
        ),
        (
            vec![
                "run",
                "broken.toml",
                "--driver",
                "sdk",
                "--cli-arg=--model",
                "--cli-arg=x",
                "--out",
                "out",
            ],
            2,
            "error: --cli-arg: broken/print runs through the Agent SDK (`sdk`), which starts the CLI with its own arguments",
        ),
        (
            vec![
                "run",
                "broken.toml",
                "--claude-bin",
                "/bin/false",
                "--out",
                "out",
            ],
            3,
            "error: the CLI could not start: /bin/false: `--version` ended with exit 1",
        ),
        (
            vec!["run", "long.toml", "--backend", "sim", "--out", "out"],
            2,
            "error: long.toml:1:8: name `aaaaaaaaaaaaaaaaaaaa…` is 10000 characters long: at most 64 (it names folders and files)",
        ),
        (
            vec![
                "run",
                "broken.toml",
                "--backend",
                "sim",
                "--junit",
                "/etc/passwd/j.xml",
                "--out",
                "out",
            ],
            2,
            "error: --junit /etc/passwd/j.xml: a part of the path is a file, not a folder",
        ),
        (
            vec![
                "run",
                "broken.toml",
                "--backend",
                "sim",
                "--junit",
                "{dir}/no/such/j.xml",
                "--out",
                "out",
            ],
            2,
            "error: --junit {dir}/no/such/j.xml: its folder {dir}/no/such does not exist (wakeprobe makes no folder for a file you name)",
        ),
        (
            vec![
                "run",
                "broken.toml",
                "--backend",
                "sim",
                "--junit",
                "/dev/null",
                "--out",
                "out",
            ],
            2,
            "error: --junit /dev/null: is not a regular file (a character device): name a file",
        ),
        (
            vec![
                "matrix",
                "--scenarios",
                "broken.toml",
                "--sim-version",
                "2.1.332=fixed",
                "--junit",
                "{dir}",
                "--out",
                "out",
            ],
            2,
            "error: --junit {dir}: is a folder: name a file",
        ),
        (
            vec!["export", "broken.toml", "-o", "/nonexistent/dir/x.mjs"],
            2,
            "error: -o /nonexistent/dir/x.mjs: its folder /nonexistent/dir does not exist (wakeprobe makes no folder for a file you name)",
        ),
        (
            vec!["export", "broken.toml", "-o", "broken.toml"],
            2,
            "error: -o broken.toml: exists: pass --force to replace it, or name another file",
        ),
    ];
    for (args, code, expected) in cases {
        let (got, line) = refused_in_a_folder(&args, |dir| {
            std::fs::write(
                dir.join("long.toml"),
                TIMED.replace("name = \"broken\"", &long),
            )
            .unwrap();
        });
        assert_eq!(got, code, "{args:?}: {line}");
        assert!(
            line.starts_with(expected),
            "{args:?}:\nexpected `{expected}`\ngot      `{line}`"
        );
    }
    assert!(
        !Path::new("/nonexistent").exists(),
        "export made no folder from /"
    );
}

/// Issue #41 (4, 5): `import -o` onto an existing file is refused (exit 2, the file as it
/// was) unless `--force`; the raw control characters of an `--out` are escaped in the
/// `reports:` line as in every error line.
#[test]
fn import_keeps_an_existing_file_and_the_reports_line_escapes_control_characters() {
    let run = root().join("tests/fixtures/runs/seed000-print");
    let (code, line) = refused_in_a_folder(
        &["import", run.to_str().unwrap(), "-o", "mine.toml"],
        |dir| std::fs::write(dir.join("mine.toml"), "# mine\n").unwrap(),
    );
    assert_eq!(code, 2, "{line}");
    assert_eq!(
        line,
        "error: -o mine.toml: exists: pass --force to replace it, or name another file"
    );
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("mine.toml");
    std::fs::write(&mine, "# mine\n").unwrap();
    let forced = output_within(
        wakeprobe(&[
            "import",
            run.to_str().unwrap(),
            "-o",
            mine.to_str().unwrap(),
            "--force",
        ]),
        Duration::from_secs(60),
    );
    assert_eq!(forced.status.code(), Some(0), "{forced:?}");
    assert!(std::fs::read_to_string(&mine).unwrap().contains("[driver]"));

    let out = dir.path().join("out\u{1b}[31mred");
    let output = output_within(
        wakeprobe(&[
            "run",
            "subagent-bg-turn-end/print",
            "--backend",
            "sim",
            "--set",
            "bg_seconds=1",
            "--explore",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let reports = stderr
        .lines()
        .find(|l| l.starts_with("reports: "))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(!reports.contains('\u{1b}'), "{reports:?}");
    assert!(
        reports.contains("out\\u{1b}[31mred")
            || reports.contains("out\\x1b[31mred")
            || reports.contains("out^[[31mred"),
        "{reports:?}"
    );
}

/// Issue #41 (3): each message names the real cause: a missing file in a folder is a missing
/// file (not "a folder"), a device or a FIFO is not a file (not "no such file"), a folder that
/// does not exist does not exist (not "no run folders in it"), a folder with no scenario is
/// said to have none (not "0 files", exit 0), a number where a verdict goes is said in words.
#[test]
fn messages_name_the_real_cause() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("special")).unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let fifo = std::ffi::CString::new(dir.path().join("fifo").to_str().unwrap()).unwrap();
    // SAFETY: a FIFO in the test's own folder.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    std::fs::write(
        dir.path().join("number.toml"),
        format!("{TIMED}\n[expect]\nprint = 99999999999999999999999\n"),
    )
    .unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "special/nope.toml", "--out", "out"],
            "error: special/nope.toml: no such file, and no scenario named `special/nope.toml`",
        ),
        (
            vec!["lint", "special/nope.toml"],
            "error: special/nope.toml: no such file or folder",
        ),
        (
            vec!["lint", "/dev/zero"],
            "error: /dev/zero: not a regular file (a character device): give a file",
        ),
        (
            vec!["lint", "fifo"],
            "error: fifo: not a regular file (a FIFO): give a file",
        ),
        (
            vec!["lint", "empty"],
            "error: empty: no scenario files (`*.toml`) in this folder",
        ),
        (
            vec!["view", "/nonexistent"],
            "error: /nonexistent: cannot read: No such file or directory (os error 2)",
        ),
        (
            vec!["view", "number.toml"],
            "error: number.toml: not a folder (a file): give a folder of saved runs",
        ),
        (
            vec!["lint", "number.toml"],
            "error: number.toml:21:9: 99999999999999999999999 is too large a number (TOML integers are at most 9223372036854775807)",
        ),
    ];
    for (args, expected) in cases {
        let mut cmd = wakeprobe(&args);
        cmd.current_dir(dir.path());
        let output = output_within(cmd, Duration::from_secs(30));
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(output.status.code(), Some(2), "{args:?}: {said}");
        let line = said
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or_default();
        assert!(
            line.starts_with(expected),
            "{args:?}:\nexpected `{expected}`\ngot      `{line}`"
        );
        assert!(
            !dir.path().join("out").exists(),
            "{args:?}: nothing written"
        );
    }
}

/// Issue #41 (5): what used to be accepted silently is a located error, exit 2, before
/// anything runs: a library scenario named otherwise than its file, an `[expect]` that leaves
/// out a variant, a `may_break` with no reason, a selector that matches every event, an empty
/// tool name.
#[test]
fn what_was_accepted_silently_is_a_located_error() {
    let two_variants =
        format!("{TIMED}\n[variants.print]\n[variants.fast]\nparams = {{ bg_seconds = 0 }}\n");
    let cases: Vec<(String, &str)> = vec![
        (
            format!("{two_variants}\n[expect]\nprint = \"unknown\"\n"),
            "broken.toml:25:9: `expect` gives no verdict for `fast`: give every variant one, or leave `[expect]` out",
        ),
        (
            TIMED.replace(
                "summary = \"s\"",
                "summary = \"s\"\nmay_break = { \"every pair\" = \"\" }",
            ),
            "broken.toml:4:13: `may_break` gives no reason for `every pair`",
        ),
        (
            format!("{TIMED}\n[[checks]]\nname = \"any\"\nexists = {{}}\n"),
            "broken.toml:22:10: an empty selector `{}` matches every event",
        ),
        (
            TIMED.replace(
                "ceiling_seconds = 10",
                "ceiling_seconds = 10\nallowed_tools = [\"\"]",
            ),
            "broken.toml:8:1: `allowed_tools` holds an empty name",
        ),
    ];
    for (text, expected) in cases {
        let (code, line) = refused(&text, &[]);
        assert_eq!(code, 2, "{line}");
        assert!(
            line.starts_with(&format!("error: {expected}")),
            "expected `{expected}`\ngot      `{line}`"
        );
    }
    let (code, line) =
        refused_in_a_folder(&["run", "--scenarios-dir", "lib", "--out", "out"], |dir| {
            std::fs::create_dir(dir.join("lib")).unwrap();
            std::fs::write(dir.join("lib/other.toml"), TIMED).unwrap();
        });
    assert_eq!(code, 2, "{line}");
    assert!(
        line.starts_with(
            "error: lib/other.toml:1:8: `name` is `broken`, but the file is `other.toml`"
        ),
        "{line}"
    );
}
