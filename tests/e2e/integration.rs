//! Integrations under test (driver mode `command`): the two example pairs told apart on the
//! pinned CLI (the buggy variant fails the named check with a witness and the layer at fault,
//! the fixed one passes); the book's minimal integration speaks the documented protocol;
//! lines outside the protocol are kept and named; a bad integration is a setup failure with
//! its stderr; the integration's process tree is reaped on a normal end, at the ceiling and on
//! Ctrl-C; `minimize`, `matrix` and `history` take a command scenario as they take any.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use wakeprobe::evidence::integration::IntegrationLine;

use crate::common::*;

fn fixture(name: &str) -> String {
    root()
        .join("tests/fixtures/scenarios/integration")
        .join(format!("{name}.toml"))
        .display()
        .to_string()
}

fn example(name: &str) -> String {
    root()
        .join("integrations")
        .join(format!("{name}.toml"))
        .display()
        .to_string()
}

/// `wakeprobe run SCENARIO --backend sim EXTRA... --out OUT`.
fn run_on_sim(scenario: &str, out: &Path, extra: &[&str]) -> std::process::Command {
    let out = out.display().to_string();
    let args = [
        &["run", scenario, "--backend", "sim"][..],
        extra,
        &["--out", &out],
    ]
    .concat();
    wakeprobe(&args)
}

/// The run folders of an invocation, each with its `scenario/variant`.
fn by_variant(out: &Path) -> Vec<(String, PathBuf)> {
    runs(&run_dir(out))
        .into_iter()
        .map(|run| {
            let info = json(&run.join("run.json"));
            let name = format!(
                "{}/{}",
                info["scenario"].as_str().unwrap(),
                info["variant"].as_str().unwrap()
            );
            (name, run)
        })
        .collect()
}

/// One check of a run's result, as the tests read it.
struct Seen {
    name: String,
    observed: String,
    passed: Option<bool>,
    layer: Option<String>,
    witnesses: usize,
}

/// The checks of a run's result, in order.
fn checks(run: &Path) -> Vec<Seen> {
    json(&run.join("result.json"))["judgement"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Seen {
            name: c["name"].as_str().unwrap().to_string(),
            observed: c["observed"].as_str().unwrap().to_string(),
            passed: c["passed"].as_bool(),
            layer: c["layer"].as_str().map(str::to_string),
            witnesses: c["witness"].as_array().map_or(0, Vec::len),
        })
        .collect()
}

/// Every line the integration printed parses as the protocol's line (the type the published
/// schema is generated from), and none was rejected.
fn speaks_the_protocol(run: &Path) {
    let stream = std::fs::read_to_string(run.join("stream.jsonl")).unwrap();
    assert!(!stream.is_empty(), "the integration showed something");
    for row in stream.lines() {
        let row: Value = serde_json::from_str(row).unwrap();
        serde_json::from_value::<IntegrationLine>(row["line"].clone())
            .unwrap_or_else(|e| panic!("{}: {e}", row["line"]));
    }
    assert!(kind(&events(run), "rejected_line", None).is_empty());
}

/// Seed 002 and seed 004 as SDK integrations on the pinned CLI: each buggy variant fails the
/// check its bug breaks, with a witness and the integration named at fault; each fixed
/// variant passes every check; the CLI's side is on the timeline through the tap; nothing is
/// left running.
#[test]
fn each_example_pair_is_told_apart_on_the_pinned_cli() {
    let _cli = cli_slots(4);
    let out = tempfile::tempdir().unwrap();
    let junit = out.path().join("junit.xml");
    let (pid, output) = run_within(
        wakeprobe(&[
            "run",
            &example("turn-adoption"),
            &example("replay"),
            "--junit",
            junit.to_str().unwrap(),
            "--out",
            out.path().to_str().unwrap(),
        ]),
        Duration::from_secs(400),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "the buggy variants fail: {stdout}"
    );
    assert_eq!(tagged_by(pid), vec![], "processes left behind");
    assert!(
        stdout.contains("at fault: the integration"),
        "the verdict names the layer: {stdout}"
    );
    let runs = by_variant(out.path());
    assert_eq!(runs.len(), 4, "{runs:?}");
    let failing = |name: &str| -> Vec<(String, String)> {
        let run = &runs.iter().find(|(n, _)| n == name).unwrap().1;
        checks(run)
            .into_iter()
            .filter(|c| c.passed == Some(false))
            .map(|c| {
                assert_eq!(
                    c.layer.as_deref(),
                    Some("integration"),
                    "{name}: {}",
                    c.name
                );
                assert!(c.witnesses > 0, "{name}: {} has a witness", c.name);
                (c.name, c.observed)
            })
            .collect()
    };
    assert_eq!(
        failing("integration-turn-adoption/buggy"),
        [
            ("the CLI-started turn is shown exactly once", "dropped"),
            (
                "every permission request is shown and answered",
                "not-shown"
            ),
            (
                "the status returns to idle after the last notification",
                "waits-on-approval"
            ),
        ]
        .map(|(n, o)| (n.to_string(), o.to_string()))
    );
    assert_eq!(
        failing("integration-replay/buggy"),
        [(
            "the restored worker has the status its transcript implies".to_string(),
            "differs".to_string()
        )]
    );
    for fixed in [
        "integration-turn-adoption/fixed",
        "integration-replay/fixed",
    ] {
        let run = &runs.iter().find(|(n, _)| n == fixed).unwrap().1;
        for c in checks(run) {
            assert_eq!(
                c.passed,
                Some(true),
                "{fixed}: {} observed {}",
                c.name,
                c.observed
            );
            assert_eq!(c.layer, None, "{fixed}: {}", c.name);
        }
        speaks_the_protocol(run);
        // The CLI's own lines, through the tap: its prompt and its results are evidence.
        let events = events(run);
        assert!(!kind(&events, "to_cli", Some("main")).is_empty());
        assert!(
            kind(&events, "turn_result", Some("main"))
                .iter()
                .any(|e| e["source"] == "stream")
        );
        assert!(run.join("cli-stream.jsonl").is_file());
    }
    // The fixed turn adoption: the approval went to the user and back to the CLI.
    let adoption = &runs
        .iter()
        .find(|(n, _)| n == "integration-turn-adoption/fixed")
        .unwrap()
        .1;
    let events = events(adoption);
    for k in ["permission_asked", "approval_given", "permission_answered"] {
        assert_eq!(kind(&events, k, None).len(), 1, "{k}");
    }
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("at fault: the integration"), "{xml}");
}

/// The book's minimal integration, on the simulator: it speaks the protocol both ways, its
/// checks pass, and it ends leaving nothing; its text in the book ("Testing your own product")
/// is the file's, under 60 lines.
#[test]
fn the_minimal_integration_speaks_the_documented_protocol() {
    let out = tempfile::tempdir().unwrap();
    let output = succeeds_leaving_nothing(
        run_on_sim(&example("minimal"), out.path(), &[]),
        Duration::from_secs(120),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("1 passed, 0 failed"), "{stdout}");
    let run = &runs(&run_dir(out.path()))[0];
    speaks_the_protocol(run);
    for c in checks(run) {
        assert_eq!(c.passed, Some(true), "{}: {}", c.name, c.observed);
    }
    // The harness's side: the prompt went in as the protocol's `say` line and the tap saw the
    // integration hand it to the CLI.
    let events = events(run);
    assert_eq!(kind(&events, "to_cli", Some("main")).len(), 1);

    let file = std::fs::read_to_string(root().join("integrations/minimal.mjs")).unwrap();
    assert!(file.lines().count() < 60, "{} lines", file.lines().count());
    let chapter = std::fs::read_to_string(root().join("book/src/testing-your-product.md")).unwrap();
    assert!(
        chapter.contains(&format!("```js\n{file}```")),
        "book/src/testing-your-product.md shows integrations/minimal.mjs as it is"
    );
}

/// A line that is not JSON and one that breaks the format are kept, named with why in the
/// result and on the terminal, and the run goes on.
#[test]
fn lines_outside_the_protocol_are_kept_and_named() {
    let out = tempfile::tempdir().unwrap();
    let output = succeeds_leaving_nothing(
        run_on_sim(&fixture("noisy"), out.path(), &[]),
        Duration::from_secs(120),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("the integration wrote 2 lines outside the protocol"),
        "{stdout}"
    );
    let run = &runs(&run_dir(out.path()))[0];
    let rejected = json(&run.join("result.json"))["judgement"]["rejected_lines"].clone();
    let whats: Vec<&str> = rejected
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["what"].as_str().unwrap())
        .collect();
    assert!(
        whats[0].starts_with("not JSON") && whats[0].contains("starting up..."),
        "{whats:?}"
    );
    assert!(whats[1].contains("unknown variant `banner`"), "{whats:?}");
    for c in checks(run) {
        assert_eq!(c.passed, Some(true), "{}: {}", c.name, c.observed);
    }
}

/// A program that is missing, not executable, or exits before its CLI reaches the API is a
/// setup failure before any verdict: exit 3, with the reason. One that ran is named as the
/// integration (never as the CLI, which it never started), with the line of its stderr that
/// says what went wrong, and its whole stderr is kept beside the run folders (issue #41).
#[test]
fn a_bad_integration_is_a_setup_failure_with_its_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(example("minimal")).unwrap();
    std::fs::write(tmp.path().join("plain.txt"), "not a program").unwrap();
    let cases = [
        (r#"["./missing.mjs"]"#, "does not exist"),
        (r#"["./plain.txt"]"#, "is not an executable file"),
        (
            r#"["sh", "-c", "echo the-integration-broke >&2; exit 4"]"#,
            "the-integration-broke",
        ),
        (
            r#"["sh", "-c", "exit 0"]"#,
            "the integration `sh -c exit 0` exited with status 0 before the CLI made a model request",
        ),
        (
            r#"["node", "./nope.mjs"]"#,
            "its stderr: Error: Cannot find module",
        ),
    ];
    for (command, said) in cases {
        let scenario = tmp.path().join("bad.toml");
        std::fs::write(
            &scenario,
            text.replace(r#"["node", "./minimal.mjs"]"#, command),
        )
        .unwrap();
        let out = tmp.path().join("out");
        let (pid, output) = run_within(
            run_on_sim(scenario.to_str().unwrap(), &out, &["--quiet"]),
            Duration::from_secs(120),
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(3), "{command}: {stderr}");
        assert!(stderr.contains(said), "{command}: {stderr}");
        assert!(
            !stderr.contains("the CLI could not start") && !stderr.contains("claude-sim exited"),
            "{command}: the integration is blamed, not the CLI: {stderr}"
        );
        assert_eq!(tagged_by(pid), vec![], "{command}: processes left behind");
        if command.contains("nope.mjs") {
            let kept = stderr
                .split("(its whole stderr: ")
                .nth(1)
                .and_then(|rest| rest.split(')').next())
                .unwrap_or_else(|| panic!("the kept stderr is named: {stderr}"));
            let log = std::fs::read_to_string(kept).unwrap();
            assert!(
                log.contains("Cannot find module") && log.contains("Node.js"),
                "{log}"
            );
        }
    }
}

/// An integration that ignores SIGTERM and leaves a TERM-ignoring grandchild, over a worker
/// that never ends: the ceiling ends the run, nothing of it is left, and the run fails saying
/// the harness had to kill the integration (its exit its own, not the CLI's).
#[test]
fn an_integration_stopped_by_the_ceiling_leaves_no_process() {
    let out = tempfile::tempdir().unwrap();
    let (pid, output) = run_within(
        run_on_sim(
            &fixture("stubborn"),
            out.path(),
            &["--set", "ceiling=8", "--quiet"],
        ),
        Duration::from_secs(120),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert_eq!(tagged_by(pid), vec![], "processes left behind");
    assert!(
        stdout.contains("the integration never exited by itself: the harness"),
        "{stdout}"
    );
    let run = &runs(&run_dir(out.path()))[0];
    let info = json(&run.join("run.json"));
    assert_eq!(info["end"], "ceiling");
    assert_eq!(info["integration"]["by_itself"], false, "{info}");
    assert_eq!(info["leftovers"].as_array().unwrap().len(), 0, "{info}");
    assert!(
        !kind(&events(run), "to_cli", None).is_empty(),
        "the integration drove its CLI"
    );
}

/// An integration that never closes (it keeps running after its input ends, and stops at the
/// harness's SIGTERM) fails its run: its checks are not left open as if it had passed.
#[test]
fn an_integration_that_never_closes_fails_its_run() {
    let out = tempfile::tempdir().unwrap();
    let (pid, output) = run_within(
        run_on_sim(&fixture("lingering"), out.path(), &["--quiet"]),
        Duration::from_secs(120),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert_eq!(tagged_by(pid), vec![], "processes left behind");
    assert!(
        stdout.contains(
            "the integration never exited by itself: the harness stopped it at the end of the run ("
        ),
        "{stdout}"
    );
    let run = &runs(&run_dir(out.path()))[0];
    let info = json(&run.join("run.json"));
    assert_eq!(info["integration"]["by_itself"], false, "{info}");
    assert_eq!(
        info["cli_exit"]["code"], 0,
        "the CLI itself ended well: {info}"
    );
}

/// Ctrl-C while the same integration runs: exit 130, nothing left, the run marked interrupted.
#[test]
fn ctrl_c_stops_an_integration_and_leaves_no_process() {
    let out = tempfile::tempdir().unwrap();
    let child = run_on_sim(
        &fixture("stubborn"),
        out.path(),
        &["--set", "ceiling=120", "--quiet"],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let pid = child.id();
    // The grandchild and the worker's command both run `sleep 300`: wait for both.
    let running = wait_for(Duration::from_secs(60), || {
        let sleeping = tagged_by(pid)
            .into_iter()
            .filter(|(_, cmd)| cmd.starts_with("sleep 300"))
            .count();
        (sleeping >= 2).then_some(())
    });
    assert!(
        running.is_some(),
        "the integration and its worker started: {:?}",
        tagged_by(pid)
    );
    ctrl_c_leaves_nothing(child);
    let run = &runs(&run_dir(out.path()))[0];
    assert_eq!(json(&run.join("run.json"))["end"], "interrupted");
}

/// `minimize --keep check:NAME` shrinks a padded integration case (the minimal integration
/// with the dropped-turn bug planted) to what still fails the check; the result runs again.
#[test]
fn minimize_shrinks_a_padded_integration_case() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let output = output_within(
        wakeprobe(&[
            "minimize",
            &fixture("padded"),
            "--keep",
            "check:the CLI-started turn is shown exactly once",
            "--backend",
            "sim",
            "--max-runs",
            "60",
            "--out",
            out.to_str().unwrap(),
        ]),
        Duration::from_secs(600),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let dir = run_dir(&out);
    let minimal = wakeprobe::scenario::Scenario::load(&dir.join("minimal.toml")).unwrap();
    let plan = minimal.plan("command", &[]).unwrap();
    let steps: usize = plan.agents.values().map(Vec::len).sum();
    assert!(plan.agents.len() <= 2, "{:?}", plan.agents.keys());
    assert!(steps <= 4, "{steps} steps left of 10");
    // It names the same integration, from wherever it was written.
    assert!(
        plan.driver.command[1].ends_with("tests/fixtures/integrations/drops-own-turn.mjs"),
        "{:?}",
        plan.driver.command
    );
    let again = output_within(
        run_on_sim(
            dir.join("minimal.toml").to_str().unwrap(),
            &tmp.path().join("again"),
            &["--quiet"],
        ),
        Duration::from_secs(120),
    );
    assert_eq!(again.status.code(), Some(1), "the check still fails");
    let run = &runs(&run_dir(&tmp.path().join("again")))[0];
    assert_eq!(checks(run)[0].observed, "dropped");
}

/// `matrix` and `history` run a command scenario as they run any: one cell per version, and
/// a history across two simulated releases whose integration checks pass on both.
#[test]
fn matrix_and_history_take_a_command_scenario() {
    let tmp = tempfile::tempdir().unwrap();
    let sim_versions = [
        "--sim-version",
        "1.0.0=finalize-on-turn-end",
        "--sim-version",
        "1.0.1=fixed",
    ];
    let minimal = example("minimal");
    let mut args = vec![
        "matrix",
        "--scenarios",
        &minimal,
        "--versions",
        "1.0.0,1.0.1",
        "--quiet",
        "--out",
    ];
    let matrix_out = tmp.path().join("matrix");
    let matrix_out_s = matrix_out.display().to_string();
    args.push(&matrix_out_s);
    args.extend(sim_versions);
    let output = output_within(wakeprobe(&args), Duration::from_secs(300));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary = json(&run_dir(&matrix_out).join("summary.json"));
    assert_eq!(summary["cells"].as_array().unwrap().len(), 2, "{summary}");

    let history_out = tmp.path().join("history");
    let history_out_s = history_out.display().to_string();
    let mut args = vec![
        "history",
        "integrations/minimal.toml",
        "--from",
        "1.0.0",
        "--to",
        "1.0.1",
        "--check",
        "all",
        "--quiet",
        "--out",
        &history_out_s,
    ];
    args.extend(sim_versions);
    let output = output_within(wakeprobe(&args), Duration::from_secs(300));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("0 change point(s) over 2 releases"),
        "{stdout}"
    );
    let history = json(&run_dir(&history_out).join("history.json"));
    let cell = &history["cells"][0];
    assert_eq!(cell["scenario"], "integration-minimal", "{history}");
    assert_eq!(cell["variant"], "command", "{history}");
}
