//! `history` and `threshold` on the simulator (versions mapped to behaviour profiles; the
//! orphan grace set through the scenario's `[driver] env`): every planted change point and
//! only those, with the number of runs reported; a stored history extended with a regression
//! exits 4; the flip of `bg_seconds` brackets the simulator's grace; bad input is refused
//! before anything runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(400);

/// The profile of release 1.0.i: fixed, then finalize-on-turn-end (no change for the cells
/// below), child-error from 1.0.7, drop-notification from 1.0.10.
fn profile(i: usize) -> &'static str {
    match i {
        0..=3 => "fixed",
        4..=6 => "finalize-on-turn-end",
        7..=9 => "child-error",
        _ => "drop-notification",
    }
}

fn sim_map(n: usize) -> Vec<String> {
    (0..n)
        .flat_map(|i| {
            [
                "--sim-version".to_string(),
                format!("1.0.{i}={}", profile(i)),
            ]
        })
        .collect()
}

fn history(out: &Path, extra: &[&str], versions: usize) -> (i32, String, String) {
    let mut args: Vec<String> = vec![
        "history".into(),
        "subagent-bg-turn-end/session".into(),
        "top-level-control/session".into(),
        "child-error".into(),
        "--set".into(),
        "bg_seconds=1".into(),
        "--repeat".into(),
        "2".into(),
        "--jobs".into(),
        "12".into(),
        "--quiet".into(),
        "--out".into(),
        out.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(sim_map(versions));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = output_within(wakeprobe(&refs), LIMIT);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Every run folder (holding run.json) under `dir`, at any depth.
fn run_folders(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
        let path = entry.path();
        if path.join("run.json").is_file() {
            found.push(path);
        } else if path.is_dir() {
            found.extend(run_folders(&path));
        }
    }
    found
}

/// (cell, last_before, first_after, before, after, confirmed) of every change point.
fn changes(history: &Value) -> Vec<(String, String, String, String, String, bool)> {
    let mut out = Vec::new();
    for cell in history["cells"].as_array().unwrap() {
        let name = format!(
            "{}/{}",
            cell["scenario"].as_str().unwrap(),
            cell["variant"].as_str().unwrap()
        );
        for c in cell["changes"].as_array().unwrap() {
            let label = |a: &Value| match a["state"].as_str().unwrap() {
                "stable" => a["observation"]["verdict"].as_str().unwrap().to_string(),
                other => other.to_string(),
            };
            out.push((
                name.clone(),
                c["last_before"].as_str().unwrap().to_string(),
                c["first_after"].as_str().unwrap().to_string(),
                label(&c["before"]),
                label(&c["after"]),
                c["confirmed"].as_bool().unwrap(),
            ));
        }
    }
    out
}

fn change(
    cell: &str,
    before: (&str, &str),
    after: (&str, &str),
) -> (String, String, String, String, String, bool) {
    (
        cell.into(),
        before.0.into(),
        after.0.into(),
        before.1.into(),
        after.1.into(),
        true,
    )
}

#[test]
fn history_finds_every_planted_change_point_and_only_those_on_the_simulator() {
    // No CLI slot: the simulator costs little CPU, and these verdicts come from the profiles,
    // with 1 s of work against a 5 s grace (a threshold is what needs room).
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = history(dir.path(), &["--from", "1.0.0", "--to", "latest"], 14);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let run = run_dir(dir.path());
    let h = json(&run.join("history.json"));
    assert_eq!(
        changes(&h),
        vec![
            change(
                "subagent-bg-turn-end/session",
                ("1.0.6", "woke"),
                ("1.0.7", "child-failed")
            ),
            change(
                "subagent-bg-turn-end/session",
                ("1.0.9", "child-failed"),
                ("1.0.10", "never-fired")
            ),
            change(
                "top-level-control/session",
                ("1.0.6", "woke"),
                ("1.0.7", "child-failed")
            ),
            change(
                "top-level-control/session",
                ("1.0.9", "child-failed"),
                ("1.0.10", "never-fired")
            ),
        ],
        "the profile switch at 1.0.4 changes no verdict; child-error/session never changes"
    );
    // The number of runs is reported, and it is the number of runs made.
    let runs = run_folders(&run).len();
    assert_eq!(h["stats"]["runs"].as_u64().unwrap() as usize, runs);
    assert!(
        stdout.contains(&format!(
            "4 change point(s) over 14 releases (1.0.0 to 1.0.13): {} probes, {runs} runs",
            h["stats"]["probes"]
        )),
        "{stdout}"
    );
    // Cells share probes: far fewer than 14 releases x 3 cells, and the constant cell ran
    // only at the two ends.
    assert!(runs < 2 * 14, "{runs} runs");
    let constant = &h["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["scenario"] == "child-error")
        .unwrap()["readings"];
    let ran_on: Vec<&str> = constant
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["version"].as_str().unwrap())
        .collect();
    assert_eq!(ran_on, vec!["1.0.0", "1.0.13"]);
    // The changelog, with links to the runs that decided each change.
    let md = std::fs::read_to_string(run.join("history.md")).unwrap();
    assert!(
        md.contains("**top-level-control/session** from **1.0.7**: `child-failed` (was `woke`), **regression**; runs: 1.0.6 woke 2/2 ([1]("),
        "{md}"
    );
    for link in md.split("](").skip(1).map(|s| s.split(')').next().unwrap()) {
        assert!(run.join(link).is_file(), "{link} exists");
    }
    // The picture is drawn again the same from history.json.
    let svg = std::fs::read(run.join("history.svg")).unwrap();
    assert!(
        String::from_utf8_lossy(&svg).matches("l3.5 -5").count() == 4,
        "four change marks"
    );
    let out = output_within(wakeprobe(&["report", run.to_str().unwrap()]), LIMIT);
    // (1: the runs' verdicts differ from the scenarios' expectations, on purpose.)
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(run.join("history.svg")).unwrap(),
        svg,
        "deterministic"
    );
}

#[test]
fn history_appended_with_a_regression_exits_4_and_runs_only_the_new_releases() {
    // No CLI slot: the simulator costs little CPU, and these verdicts come from the profiles,
    // with 1 s of work against a 5 s grace (a threshold is what needs room).
    let dir = tempfile::tempdir().unwrap();
    let stored_out = dir.path().join("stored");
    // The stored history: 1.0.0 to 1.0.6, all woke for the session cells.
    let (code, stdout, stderr) = history(&stored_out, &["--from", "1.0.0", "--to", "1.0.6"], 7);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let stored = run_dir(&stored_out).join("history.json");
    // Nothing newer: nothing to do.
    let (code, stdout, _) = history(
        &dir.path().join("same"),
        &["--append", stored.to_str().unwrap()],
        7,
    );
    assert_eq!(code, 0);
    assert!(stdout.contains("already reaches 1.0.6"), "{stdout}");
    // 1.0.7 (child-error) is released: a new regression, exit 4.
    let next = dir.path().join("next");
    let (code, stdout, stderr) = history(&next, &["--append", stored.to_str().unwrap()], 8);
    assert_eq!(code, 4, "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "top-level-control/session from 1.0.7: `child-failed` (was `woke`) [REGRESSION]"
        ),
        "{stdout}"
    );
    let run = run_dir(&next);
    let h = json(&run.join("history.json"));
    assert_eq!(
        (h["from"].as_str(), h["to"].as_str()),
        (Some("1.0.0"), Some("1.0.7"))
    );
    assert_eq!(h["appended_after"], "1.0.6");
    // Only the new release ran (and its neighbour, to confirm the change).
    let mut ran: Vec<String> = run_folders(&run)
        .iter()
        .map(|p| {
            json(&p.join("run.json"))["cli_spec"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    ran.sort();
    ran.dedup();
    assert_eq!(ran, vec!["1.0.6", "1.0.7"]);
}

#[test]
fn threshold_on_the_simulator_brackets_its_orphan_grace() {
    // Its flip sits within a second of the grace it brackets: it takes room in the suite.
    let _slots = crate::common::cli_slots(4);
    // The simulator reads its grace from its environment, which is built from nothing but
    // the scenario's `[driver] env`: a copy of the seed scenario sets it.
    // Between two points of the 1 s grid (0.5, 1.5, 2.5, ...) with room on both sides: load
    // only delays the kill (the grace counts from the last result, which comes later under
    // load), so the flip may sit up to 0.55 s above the grace and still fall below 2.5.
    const GRACE_MS: u32 = 1900;
    const GRACE_S: f64 = GRACE_MS as f64 / 1000.0;
    const PRECISION: f64 = 1.0;
    let dir = tempfile::tempdir().unwrap();
    let source =
        std::fs::read_to_string(root().join("scenarios/subagent-bg-turn-end.toml")).unwrap();
    let scenario = dir.path().join("subagent-bg-turn-end.toml");
    std::fs::write(
        &scenario,
        source.replacen(
            "[driver]\n",
            &format!("[driver]\nenv = {{ CLAUDE_SIM_ORPHAN_GRACE_MS = \"{GRACE_MS}\" }}\n"),
            1,
        ),
    )
    .unwrap();
    let target = format!("{}/print", scenario.display());
    let out = output_within(
        wakeprobe(&[
            "threshold",
            &target,
            "--param",
            "bg_seconds",
            "--from",
            "0.5",
            "--to",
            "4.5",
            "--precision",
            &PRECISION.to_string(),
            "--repeat",
            "2",
            "--backend",
            "sim",
            "--quiet",
            "--out",
            dir.path().join("out").to_str().unwrap(),
        ]),
        LIMIT,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = json(&run_dir(&dir.path().join("out")).join("threshold.json"));
    let below = t["threshold"]["below"]["value"].as_f64().unwrap();
    let above = t["threshold"]["above"]["value"].as_f64().unwrap();
    assert_eq!(t["threshold"]["below"]["agreed"], "woke", "{t}");
    assert_eq!(t["threshold"]["above"]["agreed"], "not-resumable", "{t}");
    // The work is killed the grace after the last result, which comes some 50 ms after the
    // work started: the flip lies just above the grace, inside the interval found.
    assert!(
        below < GRACE_S && GRACE_S < above,
        "[{below}, {above}]: {stdout}"
    );
    assert!(
        above - below <= 2.0 * PRECISION,
        "one grid step, or two around a flaky point: [{below}, {above}]"
    );
    assert!(
        stdout.contains(&format!("`woke` at bg_seconds = {below} and below")),
        "{stdout}"
    );
}

/// Each mistake: one line, exit 2, and no run folder.
#[test]
fn history_and_threshold_refuse_bad_input_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let sims = [
        "--sim-version",
        "1.0.0=fixed",
        "--sim-version",
        "1.0.1=fixed",
    ];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "history",
                "top-level-control",
                "--from",
                "1.0.1",
                "--to",
                "1.0.0",
            ],
            "must come before --to",
        ),
        (
            vec![
                "history",
                "top-level-control",
                "--from",
                "0.9.0",
                "--to",
                "1.0.1",
            ],
            "--from 0.9.0: not a listed release",
        ),
        (
            vec!["history", "top-level-control/nope", "--from", "1.0.0"],
            "has no variant `nope`",
        ),
        (vec!["history", "--from", "1.0.0"], "name the scenarios"),
        (
            vec![
                "history",
                "top-level-control",
                "--from",
                "1.0.0",
                "--check",
                "nope",
            ],
            "--check nope: no chosen scenario has a check",
        ),
        (
            vec![
                "history",
                "top-level-control",
                "--from",
                "1.0.0",
                "--junit",
                "j.xml",
            ],
            "--junit",
        ),
        (
            vec![
                "history",
                "top-level-control",
                "--from",
                "1.0.0",
                "--set",
                "bg_seconds=x",
            ],
            "expected a number",
        ),
        (
            vec![
                "threshold",
                "top-level-control/session",
                "--param",
                "nope",
                "--from",
                "1",
                "--to",
                "2",
                "--backend",
                "sim",
            ],
            "--param nope",
        ),
        (
            vec![
                "threshold",
                "positive-control/fg-sleep",
                "--param",
                "fg",
                "--from",
                "1",
                "--to",
                "2",
                "--backend",
                "sim",
            ],
            "is not a number",
        ),
        (
            vec![
                "threshold",
                "top-level-control/session",
                "--param",
                "bg_seconds",
                "--from",
                "3",
                "--to",
                "2",
                "--backend",
                "sim",
            ],
            "must be below",
        ),
        (
            vec![
                "threshold",
                "top-level-control/session",
                "--param",
                "bg_seconds",
                "--from",
                "1",
                "--to",
                "2",
                "--set",
                "bg_seconds=3",
                "--backend",
                "sim",
            ],
            "takes its values from --from and --to",
        ),
    ];
    for (args, needle) in cases {
        let mut all: Vec<&str> = args.clone();
        all.extend(["--out", out]);
        if all[0] == "history" {
            all.extend(sims);
        }
        let o = output_within(wakeprobe(&all), LIMIT);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.trim().lines().count(),
            1,
            "{args:?}: one line: {stderr}"
        );
        assert!(
            stderr.contains(needle),
            "{args:?}: expected `{needle}` in {stderr}"
        );
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing ran"
    );
}

/// A `--set` below the seed scenario's declared range is refused with the range and its
/// reason; `--explore` runs it, with no expected verdict, and the run says why.
#[test]
fn a_value_outside_a_declared_range_is_refused_unless_explored() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let base = [
        "run",
        "subagent-bg-turn-end",
        "--variant",
        "print",
        "--set",
        "bg_seconds=3",
        "--backend",
        "sim",
        "--quiet",
        "--out",
        out,
    ];
    let o = output_within(wakeprobe(&base), LIMIT);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--set bg_seconds: 3 is outside the range where subagent-bg-turn-end/print's expected verdict holds (bg_seconds >= 6): shorter work ends inside the CLI's orphan grace"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing ran"
    );
    let mut explored = base.to_vec();
    explored.push("--explore");
    let o = output_within(wakeprobe(&explored), LIMIT);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let run = run_folders(&run_dir(dir.path())).remove(0);
    let info = json(&run.join("run.json"));
    assert_eq!(info["expect"], Value::Null);
    assert_eq!(
        info["outside_range"][0],
        "bg_seconds=3 (outside bg_seconds >= 6)"
    );
    assert_eq!(info["param_ranges"]["bg_seconds"]["min"], 6.0);
    assert!(
        info["command"].as_str().unwrap().contains(" --explore"),
        "{info}"
    );
}

/// A check is tracked as well as the verdict (`--check all` names every check of the chosen
/// scenarios): the teammate's listing changes at 1.0.2 while the verdict stays `unknown`, and
/// that change is found, between the right releases, in the check's terms; it moves toward
/// the check's `want` (though away from its `expect`), so it is an improvement.
#[test]
fn history_tracks_a_check_whose_observation_changes_while_the_verdict_does_not() {
    // No CLI slot: the simulator costs little CPU, and the listing comes from the profiles.
    const CHECK: &str = "an idle teammate is distinguishable in Stop payloads";
    let dir = tempfile::tempdir().unwrap();
    let out = output_within(
        wakeprobe(&[
            "history",
            "teammate-idle/pty",
            "--check",
            "all",
            "--from",
            "1.0.0",
            "--to",
            "latest",
            "--sim-version",
            "1.0.0=teammate-stuck-running",
            "--sim-version",
            "1.0.1=teammate-stuck-running",
            "--sim-version",
            "1.0.2=teammate-idle-flag",
            "--quiet",
            "--out",
            dir.path().to_str().unwrap(),
        ]),
        LIMIT,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    // 0: a first history (not --append) reports its regressions without failing on them.
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let h = json(&run_dir(dir.path()).join("history.json"));
    assert_eq!(h["settings"]["checks"], serde_json::json!([CHECK]));
    let cell = &h["cells"][0];
    let changes = cell["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{cell}");
    let c = &changes[0];
    assert_eq!(
        (&c["last_before"], &c["first_after"]),
        (&"1.0.1".into(), &"1.0.2".into())
    );
    for (side, observed) in [
        ("before", "indistinguishable"),
        ("after", "distinguishable"),
    ] {
        let o = &c[side]["observation"];
        assert_eq!(o["verdict"], "unknown", "{c}");
        assert_eq!(o["checks"][0]["name"], CHECK);
        assert_eq!(o["checks"][0]["observed"], observed, "{c}");
    }
    assert_eq!(c["kind"], "improvement", "{c}");
    assert!(
        stdout.contains(&format!(
            "teammate-idle/pty from 1.0.2: `unknown, check \"{CHECK}\": distinguishable` (was \
             `unknown, check \"{CHECK}\": indistinguishable`) [improvement]"
        )),
        "{stdout}"
    );
}
