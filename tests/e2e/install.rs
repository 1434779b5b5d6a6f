//! A self-contained install: the binaries alone, run from a folder with no source tree, list
//! and run the library built into them; `init` writes it out for editing and the user's folder
//! takes precedence; completions and the man page come from the binary. The slow half (a real
//! `cargo install`, the source then moved away, a real-CLI run) is `#[ignore]`d and run by
//! `.ci/run`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;

const LIMIT: Duration = Duration::from_secs(120);

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `BIN/wakeprobe ARGS` from `cwd`, with its own cache and no library chosen by the environment.
fn installed(bin: &Path, cwd: &Path, cache: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin.join("wakeprobe"));
    cmd.args(args)
        .current_dir(cwd)
        .env("WAKEPROBE_CACHE", cache)
        .env_remove("WAKEPROBE_SCENARIOS_DIR")
        .env_remove("WAKEPROBE_KEEP")
        .stdin(Stdio::null());
    cmd
}

/// The library's scenario names, from the source tree.
fn library_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .filter(|p| !p.ends_with("invariants.toml")) // beside the scenarios, not one
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `list --message-format json`: each scenario's name and path.
fn listed(cmd: Command) -> Vec<(String, PathBuf)> {
    let out = output_within(cmd, LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let mut found: Vec<(String, PathBuf)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|m| m["type"] == "scenario")
        .map(|m| {
            let name = m["name"].as_str().unwrap().to_string();
            (name, PathBuf::from(m["path"].as_str().unwrap()))
        })
        .collect();
    found.sort();
    found
}

#[test]
fn the_binaries_alone_list_and_run_the_built_in_library() {
    let tmp = tempfile::tempdir().unwrap();
    let (bins, cwd, cache) = (
        tmp.path().join("bin"),
        tmp.path().join("elsewhere"),
        tmp.path().join("cache"),
    );
    for dir in [&bins, &cwd] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::copy(bin(), bins.join("wakeprobe")).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_claude-sim"), bins.join("claude-sim")).unwrap();
    let bin = bins;

    // No scenarios/ here, none chosen: the built-in library, written into the cache.
    let found = listed(installed(
        &bin,
        &cwd,
        &cache,
        &["list", "--message-format", "json"],
    ));
    let names: Vec<String> = found.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(names, library_names());
    for (_, path) in &found {
        assert!(path.starts_with(cache.join("library")), "{path:?}");
    }

    // A run with it (the sandbox template built in too), named by name in the repro command.
    let out_dir = tmp.path().join("reports");
    let out = output_within(
        installed(
            &bin,
            &cwd,
            &cache,
            &[
                "run",
                "subagent-bg-turn-end",
                "--variant",
                "session",
                "--backend",
                "sim",
                "--set",
                "bg_seconds=1",
                "--quiet",
                "--out",
                out_dir.to_str().unwrap(),
            ],
        ),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let run = runs(&run_dir(&out_dir)).remove(0);
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    let repro = "wakeprobe run subagent-bg-turn-end --variant session";
    assert!(report.contains(repro), "{report}");

    // `init` writes the library out, and refuses to write over it.
    let mine = tmp.path().join("mine");
    let out = output_within(
        installed(&bin, &cwd, &cache, &["init", mine.to_str().unwrap()]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let edited = mine.join("scenarios/child-hang.toml");
    let toml = std::fs::read_to_string(&edited).unwrap();
    let summary_line = toml.lines().find(|l| l.starts_with("summary")).unwrap();
    let toml = toml.replace(summary_line, "summary = \"my own edit\"");
    std::fs::write(&edited, toml).unwrap();
    let out = output_within(
        installed(&bin, &cwd, &cache, &["init", mine.to_str().unwrap()]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--force"), "{}", text(&out));

    // The user's library takes precedence: chosen, or in the working folder.
    let summary_of = |found: &[(String, PathBuf)]| -> PathBuf {
        found
            .iter()
            .find(|(n, _)| n == "child-hang")
            .unwrap()
            .1
            .clone()
    };
    let chosen = mine.join("scenarios");
    let found = listed(installed(
        &bin,
        &cwd,
        &cache,
        &[
            "--scenarios-dir",
            chosen.to_str().unwrap(),
            "list",
            "--message-format",
            "json",
        ],
    ));
    assert!(summary_of(&found).starts_with(&chosen), "{found:?}");
    let found = listed(installed(
        &bin,
        &mine,
        &cache,
        &["list", "--message-format", "json"],
    ));
    assert_eq!(summary_of(&found), Path::new("scenarios/child-hang.toml"));
    let out = output_within(installed(&bin, &mine, &cache, &["list"]), LIMIT);
    assert!(text(&out).contains("my own edit"), "{}", text(&out));

    // Completions and the man page, from the binary alone.
    let out = output_within(
        installed(&bin, &cwd, &cache, &["completions", "bash"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(
        script.contains("_wakeprobe()") && script.contains("init"),
        "{script}"
    );
    let out = output_within(installed(&bin, &cwd, &cache, &["man"]), LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH wakeprobe"),
        "{page}"
    );
    assert!(page.contains("scenarios\\-dir"), "{page}");
}

/// Every file `cargo install` needs, copied (no git: a fresh machine has none).
fn copy_source(to: &Path) {
    fn copy(from: &Path, to: &Path) {
        if from.is_dir() {
            std::fs::create_dir_all(to).unwrap();
            for e in std::fs::read_dir(from).unwrap() {
                let e = e.unwrap();
                copy(&e.path(), &to.join(e.file_name()));
            }
        } else {
            std::fs::copy(from, to).unwrap();
        }
    }
    std::fs::create_dir_all(to).unwrap();
    for part in [
        "Cargo.toml",
        "Cargo.lock",
        "build.rs",
        "src",
        "scenarios",
        "sandbox-project",
        // The event fields a check may name are read from the published timeline schema
        // (scenario::fields), at build time.
        "schema",
        "benches",
    ] {
        copy(&root().join(part), &to.join(part));
    }
}

/// Slow (a whole build of the crate: minutes on two cores, incremental after the first):
/// `cargo install --path . --root DIR`, the source then moved away, and `DIR/bin/wakeprobe`
/// lists the library and runs the seed scenario on the real pinned CLI.
#[test]
#[ignore = "slow: builds and installs the crate; .ci/run runs it"]
fn cargo_install_works_once_the_source_is_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let (source, root_dir) = (tmp.path().join("source"), tmp.path().join("installed"));
    copy_source(&source);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut install = Command::new(cargo);
    install
        .args(["install", "--locked", "--offline", "--debug", "--path"])
        .arg(&source)
        .arg("--root")
        .arg(&root_dir)
        .env("CARGO_TARGET_DIR", root().join("target/install-test"))
        .stdin(Stdio::null());
    let out = output_within(install, Duration::from_secs(1200));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // The source moved away, and nothing of it left under its old name.
    std::fs::rename(&source, tmp.path().join("moved")).unwrap();
    std::fs::remove_dir_all(tmp.path().join("moved")).unwrap();
    let bin = root_dir.join("bin");
    let (cwd, fresh_cache) = (tmp.path().join("elsewhere"), tmp.path().join("cache"));
    std::fs::create_dir_all(&cwd).unwrap();

    let found = listed(installed(
        &bin,
        &cwd,
        &fresh_cache,
        &["list", "--message-format", "json"],
    ));
    let names: Vec<String> = found.into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, library_names());

    // The seed scenario on the real pinned CLI (from the shared cache: no install here).
    let _cli = cli_slots(1);
    let out_dir = tmp.path().join("reports");
    let run = installed(
        &bin,
        &cwd,
        &cache(),
        &[
            "run",
            "subagent-bg-turn-end",
            "--variant",
            "print",
            "--set",
            "bg_seconds=8",
            "--quiet",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    let out = output_within(run, Duration::from_secs(240));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("not-resumable"), "{}", text(&out));
}
