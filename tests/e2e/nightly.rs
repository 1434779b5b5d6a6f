//! A nightly whose merges and baselines cannot lie (on the simulator, scaled down): shards of
//! different scenario contents do not merge; a baseline made another way is refused; a cell the
//! baseline has and the run lacks fails; an incomplete merge still writes what it has and exits
//! 6; `baseline update` refuses a tampered matrix; the files a run writes follow the umask; and
//! the nightly rehearsed as `action.yml` writes it (3 shards, merge, baseline) shows a planted
//! regression and a planted lost cell in its exit code, JUnit, page and JSON.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(300);

/// `wakeprobe ARGS` (from the repository root): its exit code and its stdout then stderr.
fn wp(args: &[String]) -> (i32, String) {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = output_within(wakeprobe(&refs), LIMIT);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// A simulator matrix of `scenarios` over `map` (version -> profile) into `out`, with
/// `bg_seconds=1` (below some ranges: `--explore`) unless `extra` sets it.
fn sim_matrix(out: &Path, map: &[(&str, &str)], scenarios: &str, extra: &[&str]) -> (i32, String) {
    let versions = map.iter().map(|(v, _)| *v).collect::<Vec<_>>().join(",");
    let mut args = strings(&[
        "matrix",
        "--versions",
        &versions,
        "--scenarios",
        scenarios,
        "--explore",
        "--quiet",
        "--out",
        &out.display().to_string(),
    ]);
    if !extra.iter().any(|a| a.starts_with("bg_seconds=")) {
        args.extend(strings(&["--set", "bg_seconds=1"]));
    }
    for (v, p) in map {
        args.extend(strings(&["--sim-version", &format!("{v}={p}")]));
    }
    args.extend(strings(extra));
    wp(&args)
}

fn merge(dirs: &[&Path], extra: &[&str]) -> (i32, String) {
    let mut args = strings(&["merge"]);
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    args.extend(strings(extra));
    wp(&args)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const TWO: &[(&str, &str)] = &[("2.1.228", "finalize-on-turn-end"), ("2.1.332", "fixed")];

/// Defect 1: one shard run on a changed `top-level-control` (its command now fails) is not
/// merged with the others, where it would be blamed on the CLI: exit 6, naming the scenario.
#[test]
fn shards_of_different_scenario_contents_do_not_merge() {
    let dir = tempfile::tempdir().unwrap();
    let (same, changed) = (dir.path().join("same"), dir.path().join("changed"));
    for lib in [&same, &changed] {
        std::fs::create_dir_all(lib).unwrap();
        for name in ["top-level-control.toml", "invariants.toml"] {
            std::fs::copy(root().join("scenarios").join(name), lib.join(name)).unwrap();
        }
    }
    let edited = read(&changed.join("top-level-control.toml")).replace(
        "sleep {{bg_seconds}}; echo bg-done",
        "sleep {{bg_seconds}}; exit 3",
    );
    std::fs::write(changed.join("top-level-control.toml"), edited).unwrap();
    let shard = |lib: &Path, i: usize| {
        let out = dir.path().join(format!("s{i}"));
        let (code, text) = sim_matrix(
            &out,
            TWO,
            &lib.join("top-level-control.toml").display().to_string(),
            &["--shard", &format!("{i}/2")],
        );
        assert!(code == 0 || code == 1, "{text}");
        out
    };
    let (s1, s2) = (shard(&same, 1), shard(&changed, 2));
    let merged = dir.path().join("merged");
    let (code, text) = merge(&[&s1, &s2], &["--out", &merged.display().to_string()]);
    assert_eq!(code, 6, "{text}");
    assert!(
        text.contains(
            "are shards of different matrices: scenario top-level-control differs in content"
        ),
        "{text}"
    );
    assert!(!text.contains("REGRESSION"), "{text}");
}

/// Defect 2: a simulator matrix compared with the committed real-CLI baseline is refused
/// before anything runs (exit 2, saying how the two were made); so is a baseline of other
/// `--set` values or repeats. `--compare-across-settings` compares anyway, saying so.
#[test]
fn a_baseline_made_another_way_is_refused_unless_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let committed = root().join("baseline/matrix.json");
    let out = dir.path().join("sim-vs-real");
    let (code, text) = sim_matrix(
        &out,
        &[("2.1.228", "fixed")],
        "top-level-control",
        &["--baseline", committed.to_str().unwrap()],
    );
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("was made on the real CLI, this matrix on the simulator"),
        "{text}"
    );
    assert!(text.contains("--compare-across-settings"), "{text}");
    assert!(
        !out.exists() || runs(&run_dir(&out)).is_empty(),
        "nothing ran"
    );

    let base = dir.path().join("base");
    let (code, text) = sim_matrix(&base, TWO, "top-level-control", &["--variant", "session"]);
    assert!(code == 0 || code == 1, "{text}");
    let base_file = run_dir(&base).join("matrix.json");
    let base_arg = base_file.to_str().unwrap();
    for (extra, says) in [
        (
            vec!["--set", "bg_seconds=2"],
            "--set values: bg_seconds=1 in the baseline, bg_seconds=2 here",
        ),
        (vec!["--repeat", "2"], "--repeat: 1 in the baseline, 2 here"),
    ] {
        let mut args = vec!["--variant", "session", "--baseline", base_arg];
        args.extend(extra.iter().copied());
        let (code, text) = sim_matrix(&dir.path().join("other"), TWO, "top-level-control", &args);
        assert_eq!(code, 2, "{says}: {text}");
        assert!(text.contains(says), "{says}: {text}");
    }
    let (code, text) = sim_matrix(
        &dir.path().join("across"),
        TWO,
        "top-level-control",
        &[
            "--variant",
            "session",
            "--set",
            "bg_seconds=2",
            "--baseline",
            base_arg,
            "--compare-across-settings",
        ],
    );
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("comparing across settings on purpose: --set values"),
        "{text}"
    );
}

/// Defect 3: a cell the baseline has and the run lacks is lost coverage: it fails (exit 4),
/// with its own JUnit failure, in the summary and the closing line.
#[test]
fn a_baseline_cell_the_run_lacks_fails_as_lost_coverage() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    let (code, text) = sim_matrix(&base, TWO, "top-level-control", &[]);
    assert!(code == 0 || code == 1, "{text}");
    let base_file = run_dir(&base).join("matrix.json");
    let now = dir.path().join("now");
    let junit = dir.path().join("junit.xml");
    let (code, text) = sim_matrix(
        &now,
        TWO,
        "top-level-control",
        &[
            "--variant",
            "session",
            "--baseline",
            base_file.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 4, "{text}");
    assert!(
        text.contains("LOST COVERAGE top-level-control/print on 2.1.228"),
        "{text}"
    );
    assert!(
        text.contains("2 lost"),
        "the closing line counts them: {text}"
    );
    let xml = read(&junit);
    junit::checked_and_kept(&xml).unwrap_or_else(|p| panic!("{p:#?}\n{xml}"));
    assert_eq!(xml.matches("type=\"lost-coverage\"").count(), 2, "{xml}");
    let summary = json(&run_dir(&now).join("summary.json"));
    assert_eq!(
        summary["lost"].as_array().map(Vec::len),
        Some(2),
        "{summary}"
    );
}

/// Defect 4: a merge missing a shard still writes the merged matrix, page and JUnit (an error
/// case for the missing shard) and exits 6; no shard at all is 6 too; a simulator matrix that
/// left the SDK variants out by design merges as complete.
#[test]
fn an_incomplete_merge_writes_what_it_has_and_exits_6() {
    let dir = tempfile::tempdir().unwrap();
    let s1 = dir.path().join("s1");
    let (code, text) = sim_matrix(&s1, TWO, "top-level-control", &["--shard", "1/2"]);
    assert!(code == 0 || code == 1, "{text}");
    let merged = dir.path().join("merged");
    let junit = merged.join("junit.xml");
    let (code, text) = merge(
        &[&s1],
        &[
            "--out",
            merged.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 6, "{text}");
    assert!(text.contains("missing shard(s) of 2: 2/2"), "{text}");
    for file in ["matrix.json", "matrix.md", "summary.json", "index.html"] {
        assert!(merged.join(file).is_file(), "{file} written: {text}");
    }
    let xml = read(&junit);
    junit::checked_and_kept(&xml).unwrap_or_else(|p| panic!("{p:#?}\n{xml}"));
    assert!(
        xml.contains("type=\"missing-shard\"") && xml.contains("shard 2/2"),
        "{xml}"
    );
    let page = read(&merged.join("index.html"));
    assert!(page.contains("missing shard(s) of 2: 2/2"), "{page}");

    let empty = dir.path().join("no-shards");
    let (code, text) = merge(&[], &["--out", empty.to_str().unwrap()]);
    assert_eq!(code, 6, "no shard at all: {text}");

    let sdk = dir.path().join("sdk");
    let (code, text) = sim_matrix(&sdk, TWO, "sdk-own-turn,top-level-control", &[]);
    assert!(code == 0 || code == 1, "{text}");
    let (code, text) = merge(&[&sdk], &["--out", dir.path().join("m2").to_str().unwrap()]);
    assert!(
        code == 0 || code == 1,
        "left out by design is complete: {text}"
    );
}

/// Defect 5: `baseline update` writes only a matrix it can trust: a schema it does not know,
/// a cell given twice, no identity, or a name that is not a plain file name is refused (exit
/// 2) and the baseline is left as it was.
#[test]
fn baseline_update_refuses_a_tampered_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let good = json(&root().join("baseline/matrix.json"));
    let tamper = |f: fn(&mut Value)| {
        let mut m = good.clone();
        f(&mut m);
        m
    };
    let cases: [(&str, Value, &str); 4] = [
        ("schema", tamper(|m| m["schema"] = 999.into()), "schema 999"),
        (
            "twice",
            tamper(|m| {
                let first = m["cells"][0].clone();
                m["cells"].as_array_mut().unwrap().push(first);
            }),
            "given twice",
        ),
        (
            "no-identity",
            tamper(|m| {
                m.as_object_mut().unwrap().remove("identity");
            }),
            "records no identity",
        ),
        (
            "path",
            tamper(|m| m["cells"][0]["scenario"] = "../../etc".into()),
            "`../../etc`",
        ),
    ];
    let baseline = dir.path().join("baseline.json");
    std::fs::write(&baseline, "{}").unwrap_or_default();
    std::fs::copy(root().join("baseline/matrix.json"), &baseline).unwrap();
    let before = std::fs::read(&baseline).unwrap();
    for (name, matrix, says) in cases {
        let file = dir.path().join(format!("{name}.json"));
        std::fs::write(&file, serde_json::to_vec(&matrix).unwrap()).unwrap();
        let (code, text) = wp(&strings(&[
            "baseline",
            "update",
            file.to_str().unwrap(),
            "--baseline",
            baseline.to_str().unwrap(),
        ]));
        assert_eq!(code, 2, "{name}: {text}");
        assert!(text.contains(says), "{name}: {text}");
        assert_eq!(
            std::fs::read(&baseline).unwrap(),
            before,
            "{name}: untouched"
        );
    }
}

/// Defect 7: the files a run writes follow the umask, as any program's do: readable by every
/// user under umask 022 (the printed `gh issue create --body-file` works after a `sudo` run),
/// private under 077.
#[test]
fn the_files_a_run_writes_follow_the_umask() {
    let dir = tempfile::tempdir().unwrap();
    for (umask, mode) in [("022", 0o644), ("077", 0o600)] {
        let out = dir.path().join(umask);
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("umask {umask}; exec \"$0\" \"$@\""))
            .arg(bin())
            .args([
                "run",
                "top-level-control",
                "--variant",
                "session",
                "--backend",
                "sim",
                "--set",
                "bg_seconds=1",
                "--explore",
                "--quiet",
                "--out",
            ])
            .arg(&out)
            .current_dir(root())
            .env("WAKEPROBE_CACHE", cache())
            .stdin(std::process::Stdio::null());
        let output = output_within(cmd, LIMIT);
        assert!(
            matches!(output.status.code(), Some(0 | 1)),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut files = Vec::new();
        collect_files(&run_dir(&out), &mut files);
        assert!(files.len() > 10, "{files:?}");
        for file in &files {
            use std::os::unix::fs::PermissionsExt;
            let found = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
            // Executables (none expected among reports) would add the x bits the umask lets.
            assert_eq!(found & 0o666, mode, "umask {umask}: {}", file.display());
        }
    }
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            collect_files(&entry.path(), out);
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
}

/// The `run: |` script of the step named `name` in `action.yml`, as written.
fn action_script(name: &str) -> String {
    let action = read(&root().join("action.yml"));
    let mut lines = action
        .lines()
        .skip_while(|l| l.trim() != format!("- name: {name}"));
    assert!(lines.next().is_some(), "action.yml has a step `{name}`");
    let mut lines = lines.skip_while(|l| l.trim() != "run: |");
    let key = lines.next().expect("the step has a `run: |` script");
    let indent = key.len() - key.trim_start().len() + 2;
    let script: Vec<&str> = lines
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() >= indent)
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect();
    assert!(
        !script.iter().any(|l| l.contains("${{")),
        "the script reads its inputs from env, so it runs here as written"
    );
    script.join("\n") + "\n"
}

/// Runs one of action.yml's scripts with bash in `cwd`, with `env`, `WAKEPROBE` the tested
/// binary, and a `sudo` that runs its command (the runner's sudo, minus the privilege the
/// simulator does not need); returns its exit code, output and what it wrote to
/// `$GITHUB_OUTPUT`.
fn run_step(script: &str, cwd: &Path, env: &[(&str, &str)]) -> (i32, String, String) {
    let shim = cwd.join(".bin");
    std::fs::create_dir_all(&shim).unwrap();
    let sudo = shim.join("sudo");
    std::fs::write(
        &sudo,
        "#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done\nexec \"$@\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&sudo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (output, summary) = (cwd.join(".github-output"), cwd.join(".github-summary"));
    let path = format!(
        "{}:{}",
        shim.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("bash");
    cmd.args(["-e", "-c", script])
        .current_dir(cwd)
        .env("PATH", path)
        .env("WAKEPROBE", bin())
        .env("WAKEPROBE_CACHE", cache())
        .env("GITHUB_OUTPUT", &output)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env_remove("WAKEPROBE_KEEP")
        .stdin(std::process::Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = output_within(cmd, LIMIT);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let outputs = std::fs::read_to_string(&output).unwrap_or_default();
    (out.status.code().unwrap_or(-1), text, outputs)
}

/// Copies what upload-artifact would upload (it follows links) into `to`, and says whether a
/// symlink was among it.
fn upload(from: &Path, to: &Path) -> Vec<PathBuf> {
    let mut links = Vec::new();
    copy_following(from, to, &mut links);
    links
}

fn copy_following(from: &Path, to: &Path, links: &mut Vec<PathBuf>) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().filter_map(Result::ok) {
        let (path, target) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().unwrap().is_symlink() {
            links.push(path.clone());
        }
        if path.is_dir() {
            copy_following(&path, &target, links);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// The acceptance's rehearsal: the nightly as action.yml runs it, on the simulator and scaled
/// down: three shards (each its own runner folder, uploaded as an artifact and downloaded under
/// `shards/`), then the merge against a baseline. The baseline was made when 2.1.228 woke and
/// with one more scenario; tonight 2.1.228 drops its notifications (a planted regression) and
/// that scenario is gone from the run (a planted lost cell). Both show in the exit code, the
/// JUnit file, the page and the JSON; and no shard uploads a symlink.
#[test]
fn the_nightly_as_action_yml_runs_it_shows_a_regression_and_a_lost_cell() {
    let dir = tempfile::tempdir().unwrap();
    let scenarios = "subagent-bg-turn-end,top-level-control";
    let base = dir.path().join("base");
    let (code, text) = sim_matrix(
        &base,
        &[("2.1.228", "fixed"), ("latest", "fixed")],
        &format!("{scenarios},child-error"),
        &[],
    );
    assert!(code == 0 || code == 1, "{text}");
    let baseline = run_dir(&base).join("matrix.json");

    let matrix_step = action_script("Run the matrix");
    let args = "--set bg_seconds=1 --explore --sim-version 2.1.228=drop-notification \
                --sim-version latest=fixed";
    let shards = dir.path().join("shards");
    for i in 1..=3 {
        let runner = dir.path().join(format!("runner-{i}"));
        std::fs::create_dir_all(&runner).unwrap();
        let shard = format!("{i}/3");
        let (code, text, outputs) = run_step(
            &matrix_step,
            &runner,
            &[
                ("VERSIONS", "2.1.228,latest"),
                ("SCENARIOS", scenarios),
                ("REPEAT", "1"),
                ("SHARD", &shard),
                ("ARGS", args),
            ],
        );
        assert_eq!(code, 0, "shard {shard}: {text}");
        assert!(outputs.contains(&format!("index={i}")), "{outputs}");
        let links = upload(
            &runner.join("wakeprobe-shards"),
            &shards.join(format!("shard-{i}")),
        );
        assert_eq!(
            links,
            Vec::<PathBuf>::new(),
            "shard {shard} uploads no symlink"
        );
    }

    let merger = dir.path().join("merger");
    std::fs::create_dir_all(&merger).unwrap();
    let (code, text, outputs) = run_step(
        &action_script("Merge and compare with the baseline"),
        &merger,
        &[
            ("FROM", shards.to_str().unwrap()),
            ("BASELINE", baseline.to_str().unwrap()),
        ],
    );
    assert_eq!(code, 4, "{text}");
    assert!(outputs.contains("code=4"), "{outputs}");
    assert!(text.contains("REGRESSION "), "{text}");
    assert!(
        text.contains("LOST COVERAGE child-error/session on"),
        "{text}"
    );

    let merged = merger.join("wakeprobe-merged");
    let xml = read(&merged.join("junit.xml"));
    junit::checked_and_kept(&xml).unwrap_or_else(|p| panic!("{p:#?}\n{xml}"));
    assert!(xml.contains("type=\"regression\""), "{xml}");
    assert_eq!(xml.matches("type=\"lost-coverage\"").count(), 2, "{xml}");
    assert!(xml.contains("child-error/session on latest"), "{xml}");

    let page = read(&merged.join("index.html"));
    assert!(
        page.contains("fail regression"),
        "the page marks the regression"
    );
    assert!(
        page.contains("child-error/session on latest") && page.contains("lost coverage"),
        "the page names the lost cell"
    );

    let summary = json(&merged.join("summary.json"));
    assert!(
        summary["cells"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["baseline"]["against"] == "regression"),
        "{summary}"
    );
    assert_eq!(
        summary["lost"].as_array().map(Vec::len),
        Some(2),
        "{summary}"
    );
    let comparison = json(&merged.join("baseline-comparison.json"));
    assert_eq!(comparison["missing"].as_array().map(Vec::len), Some(2));
    let step_summary = read(&merger.join(".github-summary"));
    assert!(step_summary.contains("LOST COVERAGE"), "{step_summary}");
}

/// Defect 6, the columns: in the order asked (never as text: 2.1.87 before 2.1.207), under the
/// version as asked (`latest`), a simulator column naming its profile, the same in the
/// terminal, matrix.md, the page and JUnit, whose case names keep the spec (stable from night
/// to night) and whose report is not named by the run id.
#[test]
fn version_columns_keep_the_asked_order_and_spec_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let junit = dir.path().join("junit.xml");
    let map = [
        ("2.1.87", "fixed"),
        ("2.1.207", "finalize-on-turn-end"),
        ("latest", "fixed"),
    ];
    let (code, text) = sim_matrix(
        &out,
        &map,
        "top-level-control",
        &["--variant", "session", "--junit", junit.to_str().unwrap()],
    );
    assert!(code == 0 || code == 1, "{text}");
    let titles = [
        "2.1.87 (sim: fixed)",
        "2.1.207 (sim: finalize-on-turn-end)",
        "latest (sim: fixed)",
    ];
    let in_order = |text: &str, what: &str| {
        let at: Vec<usize> = titles
            .iter()
            .map(|t| {
                text.find(t)
                    .unwrap_or_else(|| panic!("{what}: no `{t}` in\n{text}"))
            })
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{what}: {at:?}\n{text}");
    };
    in_order(&text, "terminal");
    let folder = run_dir(&out);
    in_order(&read(&folder.join("matrix.md")), "matrix.md");
    let page = read(&folder.join("index.html"));
    in_order(
        &page[page.find("<table class=\"grid\">").unwrap()..],
        "page",
    );
    let xml = read(&junit);
    for (spec, _) in map {
        assert!(
            xml.contains(&format!("name=\"top-level-control/session on {spec}\"")),
            "{spec}: {xml}"
        );
    }
    let run_id = folder.file_name().unwrap().to_str().unwrap();
    assert!(
        !xml.contains(run_id),
        "the report is not named by its run id: {xml}"
    );
}

/// Defect 6, the log: off a terminal every line names the version, a finished run's line says
/// how long is left, and `--quiet` (the Action's setting) still prints one line per finished
/// run and nothing else.
#[test]
fn progress_lines_name_the_version_and_quiet_keeps_one_line_per_run() {
    let dir = tempfile::tempdir().unwrap();
    for quiet in [false, true] {
        let out = dir.path().join(format!("quiet-{quiet}"));
        let mut args = vec![
            "matrix",
            "--versions",
            "2.1.228,2.1.332",
            "--sim-version",
            "2.1.228=fixed",
            "--sim-version",
            "2.1.332=fixed",
            "--scenarios",
            "top-level-control",
            "--variant",
            "session",
            "--set",
            "bg_seconds=1",
            "--jobs",
            "1",
        ];
        let out_arg = out.display().to_string();
        args.extend(["--out", &out_arg]);
        if quiet {
            args.push("--quiet");
        }
        let output = output_within(wakeprobe(&args), LIMIT);
        assert!(matches!(output.status.code(), Some(0 | 1)));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with('[')).collect();
        let finished: Vec<&&str> = lines.iter().filter(|l| !l.starts_with("[start")).collect();
        assert_eq!(finished.len(), 2, "quiet {quiet}: {stderr}");
        assert!(
            finished[0].starts_with("[1/2] top-level-control/session on 2.1.228 #1: woke")
                && finished[0].contains(" left"),
            "quiet {quiet}: {stderr}"
        );
        assert!(
            finished[1].starts_with("[2/2] top-level-control/session on 2.1.332 #1: woke"),
            "{stderr}"
        );
        let starts = lines.len() - finished.len();
        assert_eq!(starts, if quiet { 0 } else { 2 }, "quiet {quiet}: {stderr}");
        if !quiet {
            assert!(
                lines[0].starts_with("[start 1/2] top-level-control/session on 2.1.228 #1"),
                "{stderr}"
            );
        }
    }
}

/// `list --message-format json` ends with the `summary` line the book promises (`run`, in
/// `book/src/running.md`).
#[test]
fn list_as_json_ends_with_its_summary_line() {
    let out = output_within(wakeprobe(&["list", "--message-format", "json"]), LIMIT);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "summary", "{stdout}");
    assert_eq!(last["exit_code"], 0, "{stdout}");
}
