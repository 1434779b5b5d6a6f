//! `wakeprobe minimize` through the binary on the simulator: seed 000's stall padded with
//! irrelevant steps and agents shrinks to a few steps over two agents with the same verdict,
//! and what it writes (the minimal scenario, the log) is usable as it is; bad arguments are
//! one line and exit 2.

use std::time::Duration;

use crate::common::*;
use serde_json::Value;

#[test]
fn the_padded_seed_stall_shrinks_to_its_few_steps_on_the_simulator() {
    let tmp = tempfile::tempdir().unwrap();
    // The simulator's orphan grace cut from 5 s to 1.5 s (through the scenario's env) keeps
    // each run short; the stall is the same.
    let padded = std::fs::read_to_string(root().join("tests/fixtures/scenarios/seed000-padded.toml"))
        .unwrap()
        .replace(
            "ceiling_seconds = \"{{bg_seconds}} + 45\"",
            "ceiling_seconds = \"{{bg_seconds}} + 45\"\nenv = { CLAUDE_SIM_ORPHAN_GRACE_MS = \"1500\" }",
        );
    let scenario = tmp.path().join("seed000-padded.toml");
    std::fs::write(&scenario, padded).unwrap();
    let out = tmp.path().join("out");
    let output = output_within(
        wakeprobe(&[
            "minimize",
            scenario.to_str().unwrap(),
            "--backend",
            "sim",
            "--max-runs",
            "150",
            "--out",
            out.to_str().unwrap(),
        ]),
        Duration::from_secs(600),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    // Each accepted reduction is printed as it happens, with the progress of the runs.
    assert!(stderr.contains("agents: removed linter, docs"), "{stderr}");
    assert!(stderr.contains("runs] steps: trying"), "{stderr}");
    // A duration shrunk to the edge of the orphan grace is raised to a margin over it.
    assert!(
        stderr.contains("margin bg_seconds: bg_seconds = "),
        "{stderr}"
    );
    let dir = run_dir(&out);
    let minimal = wakeprobe::scenario::Scenario::load(&dir.join("minimal.toml")).unwrap();
    let plan = minimal.plan("print", &[]).unwrap();
    let steps: usize = plan.agents.values().map(Vec::len).sum();
    assert_eq!(plan.agents.len(), 2, "{:?}", plan.agents.keys());
    // Two steps each: the Agent call and a turn end, the Bash call and a turn end; and the
    // main agent's step that reads the worker's report (without it `main` would ask past the
    // end of its script, and that answer would be its result).
    assert!(steps <= 5, "{steps} steps left");
    assert_eq!(
        minimal.expected("print").map(|o| o.to_string()).as_deref(),
        Some("not-resumable")
    );
    let bg: f64 = plan.params["bg_seconds"].to_string().parse().unwrap();
    assert!(bg < 60.0, "bg_seconds shrank: {bg}");
    let log = std::fs::read_to_string(dir.join("minimize.log")).unwrap();
    assert!(
        log.contains("reductions, in order:") && log.contains("fixed point"),
        "{log}"
    );
    let summary = json(&dir.join("minimize.json"));
    assert!(summary["runs"].as_u64().unwrap() <= 150);
    assert_eq!(summary["to"]["agents"], 2);

    // The minimal scenario is an ordinary scenario: it runs and keeps its verdict.
    let again = output_within(
        wakeprobe(&[
            "run",
            dir.join("minimal.toml").to_str().unwrap(),
            "--backend",
            "sim",
            "--quiet",
            "--out",
            tmp.path().join("again").to_str().unwrap(),
        ]),
        Duration::from_secs(120),
    );
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}

#[test]
fn bad_minimize_arguments_are_one_line_and_exit_2() {
    for (args, expected) in [
        (
            vec!["minimize", "subagent-bg-turn-end", "--keep", "nothing"],
            "expected `verdict` or `check:NAME`",
        ),
        (
            vec![
                "minimize",
                "subagent-bg-turn-end",
                "--keep",
                "check:nope",
                "--backend",
                "sim",
            ],
            "has no such check",
        ),
        (
            vec![
                "minimize",
                "subagent-bg-turn-end",
                "--variant",
                "nope",
                "--backend",
                "sim",
            ],
            "--variant nope",
        ),
    ] {
        let out = output_within(wakeprobe(&args), Duration::from_secs(30));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// Ctrl-C: the runs in flight are cut short, nothing is left running, and what was found so
/// far is written (exit 130).
#[test]
fn an_interrupted_minimization_writes_what_it_found_and_leaves_nothing_running() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let mut cmd = wakeprobe(&[
        "minimize",
        "tests/fixtures/scenarios/seed000-padded.toml",
        "--backend",
        "sim",
        "--out",
        out.to_str().unwrap(),
    ]);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let pid = child.id();
    // Interrupt once the first reduction is accepted (its progress line), whatever the load.
    let stderr = child.stderr.take().unwrap();
    let (accepted, first_reduction) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok) {
            if line.contains(": removed ") {
                let _ = accepted.send(());
            }
            lines.push(line);
        }
        lines.join("\n")
    });
    if first_reduction
        .recv_timeout(Duration::from_secs(180))
        .is_err()
    {
        let _ = child.kill();
        panic!(
            "no reduction accepted within 180 s: {}",
            reader.join().unwrap()
        );
    }
    signal(pid, libc::SIGINT);
    let exited = wait_for(Duration::from_secs(60), || child.try_wait().unwrap());
    if exited.is_none() {
        let _ = child.kill();
    }
    let output = child.wait_with_output().unwrap();
    let stderr = reader.join().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(stdout.contains("; interrupted"), "{stdout}");
    let dir = run_dir(&out);
    wakeprobe::scenario::Scenario::load(&dir.join("minimal.toml")).unwrap();
    let left = wait_for(Duration::from_secs(10), || {
        let found = tagged_by(pid);
        found.is_empty().then_some(())
    });
    assert!(left.is_some(), "left running: {:?}", tagged_by(pid));
}

/// A variant judged `unknown` decided nothing, so it has no result to keep: refused after
/// the unreduced runs (exit 2, saying why), nothing minimized, and the folder is left marked
/// incomplete with that reason.
#[test]
fn an_unknown_verdict_is_refused_as_a_target() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("undecided.toml");
    // No background work at all: there is nothing to wake anyone for.
    std::fs::write(
        &scenario,
        "name = \"undecided\"\ntitle = \"t\"\nsummary = \"s\"\n\n[driver]\nmode = \"print\"\nprompt = \"go\"\nceiling_seconds = 20\n\n[[agents.main.steps]]\nsay = \"done\"\n",
    )
    .unwrap();
    let out = tmp.path().join("out");
    let output = output_within(
        wakeprobe(&[
            "minimize",
            scenario.to_str().unwrap(),
            "--backend",
            "sim",
            "--out",
            out.to_str().unwrap(),
        ]),
        Duration::from_secs(120),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let message = "undecided/print is judged `unknown`: the evidence decides nothing, so there is no result to keep (minimize a variant with a verdict, or keep a check with --keep check:NAME)";
    assert!(stderr.contains(&format!("error: {message}")), "{stderr}");
    let dir = run_dir(&out);
    assert!(!dir.join("minimal.toml").exists(), "nothing minimized");
    let mark = json(&dir.join("invocation.json"));
    assert_eq!(mark["complete"], false);
    assert_eq!(mark["error"], message);
}

/// `--keep check:NAME` keeps the experiment whole, not only the check's value (issue 44): on
/// the parked subagent padded with noise, the minimal scenario's verdict is still decided, no
/// agent runs past its script (no "no more steps" answer becomes a result), the margin between
/// the two events the check orders stays at least nine tenths of the original's, and a check
/// the minimal scenario can no longer observe is dropped and said so.
#[test]
fn keeping_a_check_keeps_a_decided_verdict_and_the_margin() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let check = "main is told the worker completed while its command still runs";
    let output = output_within(
        wakeprobe(&[
            "minimize",
            "tests/fixtures/scenarios/parked-padded.toml",
            "--keep",
            &format!("check:{check}"),
            "--backend",
            "sim",
            "--max-runs",
            "60",
            "--out",
            out.to_str().unwrap(),
        ]),
        Duration::from_secs(600),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let dir = run_dir(&out);
    // The original's margin, from its own run.
    let original = std::fs::read_dir(dir.join("runs/parked-padded-original"))
        .expect("the original's runs")
        .flatten()
        .next()
        .expect("the original's run")
        .path();
    let margin = |run: &std::path::Path| -> f64 {
        let result = json(&run.join("result.json"));
        let c = result["judgement"]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == check)
            .unwrap()
            .clone();
        assert_eq!(c["observed"], "yes", "{c}");
        let w = c["witness"].as_array().unwrap();
        w[1]["t_ms"].as_f64().unwrap() - w[0]["t_ms"].as_f64().unwrap()
    };
    let kept_margin = margin(&original);
    // The minimal scenario, run again: decided, within its script, the margin kept.
    let again = tmp.path().join("again");
    let run = output_within(
        wakeprobe(&[
            "run",
            dir.join("minimal.toml").to_str().unwrap(),
            "--backend",
            "sim",
            "--quiet",
            "--out",
            again.to_str().unwrap(),
        ]),
        Duration::from_secs(120),
    );
    assert!(
        matches!(run.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let minimal = runs(&run_dir(&again)).remove(0);
    let result = json(&minimal.join("result.json"));
    assert_ne!(result["judgement"]["outcome"], "unknown", "{result}");
    let exhausted: Vec<Value> = events(&minimal)
        .into_iter()
        .filter(|e| e["kind"] == "model_request" && e["route"]["route"] == "script_exhausted")
        .collect();
    assert!(
        exhausted.is_empty(),
        "past the end of a script: {exhausted:?}"
    );
    let now = margin(&minimal);
    assert!(
        now >= 0.9 * kept_margin,
        "margin {now} ms, the original's {kept_margin} ms"
    );
    // The helper went (with the check that names it); nothing it cannot observe is left.
    let plan = wakeprobe::scenario::Scenario::load(&dir.join("minimal.toml"))
        .unwrap()
        .plan("session", &[])
        .unwrap();
    assert!(
        !plan.agents.contains_key("helper"),
        "{:?}",
        plan.agents.keys()
    );
    assert_eq!(plan.checks.len(), 1, "{:?}", plan.checks);
}
