//! The README, the front door: at most 400 lines; its two commands, as a newcomer types them on
//! a fresh clone: the first must resolve to the `wakeprobe` binary (a second binary once made
//! `cargo run` ambiguous), and run the library; the second is the command running this test.
//! `.ci/run` runs both, as written, on the real CLI. And the figures the README and the book
//! show, held to what they are drawn from.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::*;

/// The commands in the README's "The two commands" block, comments stripped.
fn readme_commands() -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme
        .split("## The two commands")
        .nth(1)
        .expect("README has a 'The two commands' section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the section holds a sh code block");
    block
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The tracked files of this checkout copied to `dest`: what a fresh clone holds.
fn fresh_copy(dest: &Path) {
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .expect("git is needed");
    assert!(out.status.success());
    for name in out.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = std::str::from_utf8(name).unwrap();
        let (from, to) = (root().join(name), dest.join(name));
        if !from.exists() {
            continue; // deleted in the working tree, not yet committed
        }
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap();
    }
}

#[test]
fn the_readme_names_two_commands_run_and_test() {
    assert_eq!(
        readme_commands(),
        vec!["cargo run --release -- run", "cargo test"],
        "the README's two commands changed: update .ci/run's expectations and this test"
    );
}

/// `cargo run` picks its binary from the manifest alone, before it builds anything: with more
/// than one binary it needs `default-run`, which must name the harness.
#[test]
fn cargo_run_resolves_to_wakeprobe_in_a_fresh_clone() {
    let clone = tempfile::tempdir().unwrap();
    fresh_copy(clone.path());
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args([
        "metadata",
        "--no-deps",
        "--format-version",
        "1",
        "--offline",
    ])
    .current_dir(clone.path());
    let out = output_within(cmd, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let package = &meta["packages"][0];
    let bins: Vec<&str> = package["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"].as_array().unwrap().iter().any(|k| k == "bin"))
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let chosen = match bins.as_slice() {
        [only] => Some(*only),
        _ => package["default_run"].as_str(),
    };
    assert_eq!(
        chosen,
        Some("wakeprobe"),
        "`cargo run` must resolve to wakeprobe among {bins:?}"
    );
}

/// The README is a front door (what wakeprobe is, the two commands, a worked example, what it
/// finds, where to read on); the reference is the book.
#[test]
fn the_readme_is_at_most_400_lines() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 400,
        "README.md has {lines} lines: move reference into book/src"
    );
}

/// The stored history (the real CLI, 2.1.219 to 2.1.332) holds the change `bisect` found at
/// 2.1.225, pinned down and confirmed; the book's "Matrices and CI" shows `history` and
/// `threshold` with real output and names every change point the stored history holds, in the
/// changelog's words.
#[test]
fn the_book_shows_history_and_threshold_and_every_stored_change_point() {
    use wakeprobe::matrix::history::{ChangeKind, HistoryFile};
    let chapter = std::fs::read_to_string(root().join("book/src/matrices.md")).unwrap();
    let stored: HistoryFile =
        serde_json::from_slice(&std::fs::read(root().join("baseline/history.json")).unwrap())
            .unwrap();
    let changes: Vec<_> = stored.changes().collect();
    let seed = changes
        .iter()
        .find(|(c, _)| c.scenario == "subagent-bg-turn-end" && c.variant == "session")
        .expect("the kept-alive seed variant changes");
    assert_eq!(
        (seed.1.last_before.as_str(), seed.1.first_after.as_str()),
        ("2.1.224", "2.1.225")
    );
    assert!(seed.1.confirmed && seed.1.resolved());
    assert_eq!(seed.1.kind, ChangeKind::Improvement);
    for (cell, change) in &changes {
        let line = format!(
            "{}/{} from {}: `{}` (was `{}`)",
            cell.scenario,
            cell.variant,
            change.first_after,
            change.after.label(),
            change.before.label()
        );
        assert!(chapter.contains(&line), "matrices.md shows `{line}`");
        let bold = format!(
            "**{}/{}** from **{}**",
            cell.scenario, cell.variant, change.first_after
        );
        assert!(
            chapter.contains(&bold),
            "matrices.md's changelog has {bold}"
        );
    }
    for command in [
        "$ wakeprobe history --scenarios all --append baseline/history.json --to latest",
        "$ wakeprobe threshold subagent-bg-turn-end/print --param bg_seconds --from 1 --to 12",
        "`woke` at bg_seconds = 5.3 and below",
    ] {
        assert!(chapter.contains(command), "matrices.md shows `{command}`");
    }
}

/// The README's figures of the committed baseline are the baseline's own, not prose that
/// ages: the table under "What it finds" is `baseline/matrix.md`'s, the runs counted are its
/// cells times its repeats, and the versions `latest` and `latest~3` stood for are those its
/// cells recorded.
#[test]
fn the_readmes_version_figures_are_the_committed_baselines() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme
        .split("## What it finds")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a section `What it finds`");
    let table = |text: &str| -> Vec<String> {
        text.lines()
            .skip_while(|l| !l.starts_with("| scenario |"))
            .take_while(|l| l.starts_with('|'))
            .map(str::to_string)
            .collect()
    };
    let committed = std::fs::read_to_string(root().join("baseline/matrix.md")).unwrap();
    assert!(!table(&committed).is_empty());
    assert_eq!(table(section), table(&committed), "the README's table");
    let baseline = json(&root().join("baseline/matrix.json"));
    let cells = baseline["cells"].as_array().unwrap();
    let runs: u64 = cells.iter().map(|c| c["runs"].as_u64().unwrap()).sum();
    assert!(section.contains(&format!("{runs} runs")), "{runs} runs");
    for spec in ["latest", "latest~3"] {
        let version = cells
            .iter()
            .find(|c| c["cli_spec"] == spec)
            .and_then(|c| c["cli_version"].as_str())
            .unwrap();
        let said = format!("`{spec}` was ");
        let at = section.find(&said).unwrap_or_else(|| panic!("says {said}"));
        let rest = &section[at + said.len()..];
        // The first version the sentence names after it.
        let named = rest
            .split_whitespace()
            .map(|w| w.trim_end_matches([',', ':', '.', ')']))
            .find(|w| w.parse::<semver::Version>().is_ok());
        assert_eq!(named, Some(version), "{spec} in: {rest:.80}");
    }
}

/// The install the README and the book give is the tested build: `--locked`, or cargo
/// resolves the dependencies anew (newer hyper, http, clap...) and builds something no test ran.
#[test]
fn every_cargo_install_in_the_readme_and_the_book_is_locked() {
    let mut docs = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("book/src")).unwrap() {
        docs.push(entry.unwrap().path());
    }
    let text: String = docs
        .iter()
        .map(|d| std::fs::read_to_string(d).unwrap())
        .collect();
    let installs: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("cargo install --"))
        .collect();
    assert!(!installs.is_empty());
    for line in installs {
        assert!(line.contains(" --locked "), "{line}");
    }
}
