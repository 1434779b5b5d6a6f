//! The matrix on the simulator (versions mapped to behaviour profiles): shards merge into the
//! unsharded matrix, a changed verdict against a baseline sets the documented exit code, and
//! bisection finds a planted change point in log2(n) steps.

use std::path::Path;
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(300);

fn sim_args(map: &[(&str, &str)]) -> Vec<String> {
    map.iter()
        .flat_map(|(v, p)| ["--sim-version".to_string(), format!("{v}={p}")])
        .collect()
}

fn matrix(out: &Path, map: &[(&str, &str)], extra: &[&str]) -> (i32, String) {
    matrix_of(out, map, "subagent-bg-turn-end,top-level-control", extra)
}

fn matrix_of(out: &Path, map: &[(&str, &str)], scenarios: &str, extra: &[&str]) -> (i32, String) {
    let versions = map.iter().map(|(v, _)| *v).collect::<Vec<_>>().join(",");
    let mut args: Vec<String> = vec![
        "matrix".into(),
        "--versions".into(),
        versions,
        "--scenarios".into(),
        scenarios.into(),
        "--explore".into(),
        "--quiet".into(),
        "--out".into(),
        out.display().to_string(),
    ];
    if !extra.iter().any(|a| a.starts_with("bg_seconds=")) {
        // Below subagent-bg-turn-end/print's range: those cells have no expected verdict, and
        // the comparisons below fall back to woke-or-not for them. (A test that sets it itself
        // gives it once: `--set` twice is refused.)
        args.extend(["--set".into(), "bg_seconds=1".into()]);
    }
    args.extend(sim_args(map));
    args.extend(extra.iter().map(|s| s.to_string()));
    run_text(&args)
}

/// `wakeprobe ARGS`: its exit code and its stdout then stderr.
fn run_text(args: &[String]) -> (i32, String) {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = output_within(wakeprobe(&refs), LIMIT);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn merge(shards: &[&std::path::PathBuf], out: &Path) -> (i32, String) {
    let mut args: Vec<String> = vec!["merge".into()];
    args.extend(shards.iter().map(|d| d.display().to_string()));
    args.extend(["--out".into(), out.display().to_string()]);
    run_text(&args)
}

#[test]
fn merge_refuses_a_missing_twice_given_or_foreign_shard_and_a_missing_cell() {
    let dir = tempfile::tempdir().unwrap();
    let map: &[(&str, &str)] = &[("1.0.0", "fixed"), ("1.0.1", "finalize-on-turn-end")];
    let shard = |name: &str, i: usize, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec!["--shard".to_string(), format!("{i}/2")];
        args.extend(extra.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, text) = matrix_of(&out, map, "subagent-bg-turn-end", &refs);
        assert!(code == 0 || code == 1, "{text}");
        out
    };
    let (s1, s2) = (shard("s1", 1, &[]), shard("s2", 2, &[]));
    let other = shard("other", 2, &["--set", "bg_seconds=2"]);
    let m = json(&run_dir(&s1).join("matrix.json"));
    assert_eq!(m["shard"], serde_json::json!({"index": 1, "count": 2}));
    assert_eq!(m["identity"]["cells"].as_array().unwrap().len(), 4, "{m}");
    assert_eq!(m["identity"]["sets"], serde_json::json!(["bg_seconds=1"]));
    assert_eq!(
        m["identity"]["versions"],
        serde_json::json!(["1.0.0", "1.0.1"])
    );

    let out = dir.path().join("merged");
    let (code, text) = merge(&[&s1, &s2], &out);
    assert!(code == 0 || code == 1, "the whole merges: {text}");
    // A shard missing: what was given is still merged and written (see nightly.rs), exit 6.
    let (code, text) = merge(&[&s1], &dir.path().join("half"));
    assert_eq!(code, 6, "{text}");
    assert!(text.contains("missing shard(s) of 2: 2/2"), "{text}");
    for (shards, needle) in [
        (vec![&s1, &s1], "shard 1/2 given twice"),
        (
            vec![&s1, &other],
            "shards of different matrices: --set values bg_seconds=1 vs bg_seconds=2",
        ),
    ] {
        let out = dir.path().join(format!("bad-{}", shards.len()));
        let (code, text) = merge(&shards, &out);
        assert_eq!(code, 6, "{needle}: {text}");
        assert!(text.contains(needle), "{needle}: {text}");
        assert!(!out.join("matrix.json").exists(), "nothing is written");
    }
    // A cell whose run is gone (its shard cut short before writing it) is missing.
    let lost = runs(&run_dir(&s2)).remove(0);
    std::fs::remove_dir_all(&lost).unwrap();
    let (code, text) = merge(&[&s1, &s2], &dir.path().join("lost"));
    assert_eq!(code, 6, "{text}");
    assert!(
        text.contains("1 cell missing from the merged runs: subagent-bg-turn-end/"),
        "{text}"
    );
}

#[test]
fn a_change_toward_want_is_an_improvement_and_away_from_it_a_regression() {
    // subagent-bg-turn-end expects what 2.1.332 does today (print: not-resumable) and wants
    // `woke` for both variants. 2.1.228 is mapped to simulator profiles.
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, profile: &str, baseline: Option<&Path>| {
        let out = dir.path().join(name);
        // 8 s of background work outlives the print-mode session's 5 s grace.
        let mut extra = vec!["--jobs", "4", "--set", "bg_seconds=8"];
        let base = baseline.map(|b| run_dir(b).join("matrix.json"));
        if let Some(b) = &base {
            extra.extend(["--baseline", b.to_str().unwrap()]);
        }
        let (code, text) = matrix_of(
            &out,
            &[("2.1.228", profile)],
            "subagent-bg-turn-end",
            &extra,
        );
        (out, code, text)
    };
    let (today, code, text) = run("today", "finalize-on-turn-end", None);
    assert_eq!(code, 0, "today's behaviour is what `expect` says: {text}");
    // An upstream fix: the print variant now wakes. It differs from `expect`, and is still an
    // improvement: it moved toward `want`.
    let (fixed, code, text) = run("fixed", "fixed", Some(&today));
    assert_eq!(code, 5, "{text}");
    assert!(
        text.lines()
            .next()
            .unwrap_or("")
            .starts_with("improvement subagent-bg-turn-end/print on 2.1.228: not-resumable 1/1 (")
            && text.contains(
                "-> woke 1/1 (sim: fixed): toward the behaviour the CLI should have (`woke`)"
            ),
        "{text}"
    );
    // A breakage after the fix: notifications are dropped; away from `want`.
    let (_, code, text) = run("broken", "drop-notification", Some(&fixed));
    assert_eq!(code, 4, "{text}");
    assert!(
        text.lines()
            .next()
            .unwrap_or("")
            .starts_with("REGRESSION subagent-bg-turn-end/")
            && text.contains("away from the behaviour the CLI should have (`woke`)"),
        "{text}"
    );
}

/// (scenario, variant, column) -> (outcome, matches) for comparing matrices run at other times.
fn verdicts(m: &Value) -> Vec<(String, String, String, Value, Value)> {
    let mut v: Vec<_> = m["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["scenario"].as_str().unwrap().to_string(),
                c["variant"].as_str().unwrap().to_string(),
                c["cli_spec"].as_str().unwrap().to_string(),
                c["outcome"].clone(),
                c["matches_expect"].clone(),
            )
        })
        .collect();
    v.sort_by(|a, b| (&a.0, &a.1, &a.2).cmp(&(&b.0, &b.1, &b.2)));
    v
}

const MAP: &[(&str, &str)] = &[
    ("1.0.0", "fixed"),
    ("1.0.1", "child-error"),
    ("1.0.2", "finalize-on-turn-end"),
];

#[test]
fn shards_merge_into_the_unsharded_matrix_and_baselines_set_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole");
    let (code, text) = matrix(&whole, MAP, &["--jobs", "12"]);
    assert!(code == 0 || code == 1, "{text}");
    let whole_matrix = json(&run_dir(&whole).join("matrix.json"));
    assert_eq!(
        whole_matrix["cells"].as_array().unwrap().len(),
        12,
        "2 scenarios x 2 variants x 3 versions"
    );

    let mut shard_dirs = Vec::new();
    let mut shard_cells = Vec::new();
    for i in 1..=3 {
        let shard = dir.path().join(format!("shard-{i}"));
        let (code, text) = matrix(&shard, MAP, &["--jobs", "12", "--shard", &format!("{i}/3")]);
        assert!(code == 0 || code == 1, "{text}");
        // A shard runs its own cells and no other: its runs are exactly its matrix's cells.
        let cells = verdicts(&json(&run_dir(&shard).join("matrix.json")));
        assert_eq!(
            runs(&run_dir(&shard)).len(),
            cells.len(),
            "shard {i}/3 ran only its cells"
        );
        assert!(
            !cells.is_empty() && cells.len() < 12,
            "shard {i}/3: {cells:?}"
        );
        shard_cells.extend(cells);
        shard_dirs.push(shard);
    }
    shard_cells.sort_by(|a, b| (&a.0, &a.1, &a.2).cmp(&(&b.0, &b.1, &b.2)));
    assert_eq!(
        shard_cells,
        verdicts(&whole_matrix),
        "the shards split the cells: together all of them, each exactly once"
    );
    let merged = dir.path().join("merged");
    let mut args: Vec<String> = vec!["merge".into()];
    args.extend(shard_dirs.iter().map(|d| d.display().to_string()));
    args.extend([
        "--out".into(),
        merged.display().to_string(),
        "--junit".into(),
        merged.join("junit.xml").display().to_string(),
    ]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = output_within(wakeprobe(&refs), LIMIT);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged_matrix = json(&merged.join("matrix.json"));
    assert_eq!(
        verdicts(&merged_matrix),
        verdicts(&whole_matrix),
        "shards 1/3, 2/3, 3/3 merge into the whole"
    );
    assert_eq!(merged_matrix["columns"], whole_matrix["columns"]);
    assert!(merged.join("junit.xml").exists() && merged.join("matrix.md").exists());
    // Each merged cell holds its one run, agreeing with itself: nothing is counted twice.
    let summary = json(&merged.join("summary.json"));
    let cells = summary["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 12);
    for cell in cells {
        assert_eq!(cell["runs"], 1, "{cell}");
        assert!(
            cell["agreement"].as_str().unwrap().ends_with(" 1/1"),
            "{cell}"
        );
    }
    let junit = std::fs::read_to_string(merged.join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<testcase ").count(), 12, "{junit}");

    // `report` judges the whole matrix's runs again from their evidence: the same verdicts.
    let whole_dir = run_dir(&whole);
    let out = output_within(wakeprobe(&["report", whole_dir.to_str().unwrap()]), LIMIT);
    assert!(matches!(out.status.code(), Some(0 | 1)));
    assert_eq!(
        verdicts(&json(&whole_dir.join("matrix.json"))),
        verdicts(&whole_matrix),
        "re-judged from the saved evidence"
    );

    // `baseline update` adopts a matrix on purpose, saying what it replaces.
    let adopted = dir.path().join("baseline.json");
    let matrix_file = whole_dir.join("matrix.json");
    for expected in ["writing a new baseline", "updating"] {
        let out = output_within(
            wakeprobe(&[
                "baseline",
                "update",
                matrix_file.to_str().unwrap(),
                "--baseline",
                adopted.to_str().unwrap(),
            ]),
            LIMIT,
        );
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{said}");
        assert!(said.contains(expected), "{said}");
        assert!(said.contains("now holds 12 cells"), "{said}");
    }
    assert_eq!(verdicts(&json(&adopted)), verdicts(&whole_matrix));

    // The same columns, one version now behaving differently: a regression, exit 4.
    let baseline = run_dir(&whole).join("matrix.json");
    let worse: &[(&str, &str)] = &[
        ("1.0.0", "child-error"),
        ("1.0.1", "child-error"),
        ("1.0.2", "finalize-on-turn-end"),
    ];
    let again = dir.path().join("again");
    let (code, text) = matrix(
        &again,
        worse,
        &["--jobs", "12", "--baseline", baseline.to_str().unwrap()],
    );
    assert_eq!(code, 4, "a regression exits 4:\n{text}");
    let first_line = text.lines().next().unwrap_or("");
    assert!(
        first_line.starts_with("REGRESSION ") && first_line.contains("on 1.0.0"),
        "changed cells first: {text}"
    );
    // And the other way round: only improvements, exit 5.
    let (code, text) = {
        let worse_baseline = run_dir(&again).join("matrix.json");
        let back = dir.path().join("back");
        matrix(
            &back,
            MAP,
            &[
                "--jobs",
                "12",
                "--baseline",
                worse_baseline.to_str().unwrap(),
            ],
        )
    };
    assert_eq!(code, 5, "only improvements exit 5:\n{text}");
    // No change: exit 0.
    let (code, text) = matrix(
        &dir.path().join("same"),
        MAP,
        &["--jobs", "12", "--baseline", baseline.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("no change against the baseline"));
}

#[test]
fn bisection_finds_a_planted_change_in_log2_steps() {
    // 16 versions; the behaviour changes at 1.0.11 (fixed -> child-error).
    let map: Vec<(String, String)> = (0..16)
        .map(|i| {
            (
                format!("1.0.{i}"),
                if i < 11 { "fixed" } else { "child-error" }.to_string(),
            )
        })
        .collect();
    let out_dir = tempfile::tempdir().unwrap();
    let junit = out_dir.path().join("junit.xml");
    let mut args: Vec<String> = vec![
        "bisect".into(),
        "top-level-control".into(),
        "--variant".into(),
        "session".into(),
        "--good".into(),
        "1.0.0".into(),
        "--bad".into(),
        "1.0.15".into(),
        "--set".into(),
        "bg_seconds=1".into(),
        "--quiet".into(),
        "--out".into(),
        out_dir.path().display().to_string(),
        "--junit".into(),
        junit.display().to_string(),
    ];
    for (v, p) in &map {
        args.push("--sim-version".into());
        args.push(format!("{v}={p}"));
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = output_within(wakeprobe(&refs), LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("first version whose verdict differs: 1.0.11"),
        "{stdout}"
    );
    let steps = stdout
        .lines()
        .skip_while(|l| *l != "steps:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .count();
    assert!(
        steps <= 2 + 4,
        "both ends, then at most log2(16) = 4 steps: {steps}\n{stdout}"
    );
    assert!(
        stdout.contains("up to **1.0.10** and `child-failed` from **1.0.11**"),
        "{stdout}"
    );
    // --junit: each probed version's cell, and the bisection's finding as its own case.
    let xml = std::fs::read_to_string(&junit).expect("bisect --junit writes its file");
    crate::common::junit::checked_and_kept(&xml).unwrap_or_else(|p| panic!("{p:#?}\n{xml}"));
    assert_eq!(xml.matches("<testcase ").count(), steps + 1, "{xml}");
    assert!(
        xml.contains("name=\"bisect top-level-control/session\"")
            && xml.contains("first version whose verdict differs: 1.0.11"),
        "{xml}"
    );
}
