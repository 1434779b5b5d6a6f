//! What the harness promises about the files it writes and the world it leaves: a write cut by
//! a kill never leaves a partial file under its final name; everything written is redacted
//! (the real HOME and the user's name, where they really appear); a SIGKILLed harness leaves no
//! process, and the next run removes its sandbox; `--keep` keeps it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::*;

/// A copy of the seed-000 print fixture whose timeline is inflated to `copies` times its
/// events, so re-rendering its reports writes several megabytes.
/// What `report` writes into a run folder.
const WRITTEN: [&str; 3] = ["report.md", "timeline.svg", "result.json"];

fn big_saved_run(dir: &Path, copies: usize) -> PathBuf {
    let from = root().join("tests/fixtures/runs/seed000-print");
    let run = dir
        .join("run-id")
        .join("subagent-bg-turn-end")
        .join("print");
    std::fs::create_dir_all(&run).unwrap();
    for entry in std::fs::read_dir(&from).unwrap().map(|e| e.unwrap()) {
        if entry.path().is_file() {
            std::fs::copy(entry.path(), run.join(entry.file_name())).unwrap();
        }
    }
    let mut timeline = json(&from.join("timeline.json"));
    let events = timeline["events"].as_array().unwrap().clone();
    let span = events.last().unwrap()["t_ms"].as_f64().unwrap() + 1.0;
    let mut all = Vec::new();
    for k in 0..copies {
        for e in &events {
            let mut e = e.clone();
            e["t_ms"] = (e["t_ms"].as_f64().unwrap() + span * k as f64).into();
            all.push(e);
        }
    }
    timeline["events"] = all.into();
    std::fs::write(
        run.join("timeline.json"),
        serde_json::to_vec(&timeline).unwrap(),
    )
    .unwrap();
    run
}

fn modified(path: &Path) -> Option<(std::time::SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Every report file under its final name is whole: JSON parses, the draft ends with its
/// footer, the picture with its closing tag.
fn assert_whole(run: &Path) {
    for (name, tail) in [("report.md", "</sub>\n"), ("timeline.svg", "</svg>\n")] {
        if let Ok(text) = std::fs::read_to_string(run.join(name)) {
            assert!(
                text.ends_with(tail),
                "{name} is partial ({} bytes)",
                text.len()
            );
        }
    }
    if let Ok(bytes) = std::fs::read(run.join("result.json")) {
        serde_json::from_slice::<serde_json::Value>(&bytes).expect("result.json is whole");
    }
}

/// `report` is killed the moment it is seen writing (a temp file appears, or a report file
/// changes), over and over: no report file is ever left partial under its final name.
#[test]
fn a_report_killed_in_the_middle_of_a_write_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = big_saved_run(dir.path(), 600);
    let rendered = output_within(
        wakeprobe(&["report", run.to_str().unwrap()]),
        Duration::from_secs(120),
    );
    assert!(matches!(rendered.status.code(), Some(0 | 1)));
    // report.md is cut to GitHub's limit; the picture and the result carry the whole run.
    let sizes: Vec<u64> = WRITTEN
        .iter()
        .map(|n| std::fs::metadata(run.join(n)).unwrap().len())
        .collect();
    assert!(
        sizes.iter().any(|s| *s > 1 << 20),
        "a file big enough for a write to take a while: {sizes:?}"
    );
    let mut hit = 0;
    for _ in 0..20 {
        let before: Vec<_> = WRITTEN.iter().map(|n| modified(&run.join(n))).collect();
        let mut child = wakeprobe(&["report", run.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let writing = loop {
            let temp = std::fs::read_dir(&run).unwrap().any(|e| {
                e.unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".partial")
            });
            let changed = WRITTEN
                .iter()
                .zip(&before)
                .any(|(n, b)| modified(&run.join(n)) != *b);
            if temp || changed {
                break true;
            }
            if child.try_wait().unwrap().is_some() || Instant::now() > deadline {
                break false;
            }
            std::thread::yield_now();
        };
        signal(child.id(), libc::SIGKILL);
        child.wait().unwrap();
        hit += usize::from(writing);
        assert_whole(&run);
    }
    assert!(
        hit >= 10,
        "most kills landed while a write was going on ({hit}/20)"
    );
}

/// The harness's HOME and the user's name, where they really appear in what a run writes (the
/// scenario file lives under HOME, the prompt names the user's folder), become placeholders.
#[test]
fn home_and_user_name_are_redacted_where_they_appear() {
    let base = tempfile::tempdir().unwrap();
    let home = base.path().join("wp-home-7c1e");
    let scenarios = home.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    let text = std::fs::read_to_string(root().join("scenarios/top-level-control.toml"))
        .unwrap()
        .replace(
            "prompt = \"",
            &format!(
                "prompt = \"Notes are in /home/wpuser-3f9/notes and {}/drafts. ",
                home.display()
            ),
        );
    let scenario = scenarios.join("top-level-control.toml");
    std::fs::write(&scenario, text).unwrap();
    let out = base.path().join("out");
    let mut cmd = wakeprobe(&[
        "run",
        scenario.to_str().unwrap(),
        "--variant",
        "session",
        "--set",
        "bg_seconds=1",
        "--backend",
        "sim",
        "--template",
        root().join("sandbox-project").to_str().unwrap(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    cmd.env("HOME", &home)
        .env("USER", "wpuser-3f9")
        .env("LOGNAME", "wpuser-3f9");
    let output = output_within(cmd, Duration::from_secs(120));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut written = String::new();
    for file in files_under(&out) {
        written.push_str(&String::from_utf8_lossy(&std::fs::read(file).unwrap()));
    }
    let home_text = home.display().to_string();
    assert!(!written.contains(&home_text), "the real HOME leaked");
    assert!(!written.contains("wpuser-3f9"), "the user name leaked");
    assert!(
        written.contains("$HOME/drafts"),
        "HOME was there, as a placeholder"
    );
    assert!(
        written.contains("/home/$USER/notes"),
        "the user's folder was there, as a placeholder"
    );
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().map(|e| e.unwrap()) {
            // `latest` is a symlink to a run folder: walked once, by its own name.
            let kind = e.file_type().unwrap();
            if kind.is_symlink() {
                continue;
            }
            if kind.is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

/// Sandboxes in the temp folder whose owner file names `pid`.
fn sandboxes_of(pid: u32) -> Vec<PathBuf> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("wakeprobe-"))
                && std::fs::read_to_string(p.join("owner.pid"))
                    .is_ok_and(|o| o.trim() == pid.to_string())
        })
        .collect()
}

/// SIGKILL of the harness while the CLI and a background task that left its session (and
/// ignores SIGTERM) run: the supervisor's lifeline closes and it ends them all; the next
/// invocation removes the dead harness's sandbox.
#[test]
fn a_sigkilled_harness_leaves_no_process_and_the_next_run_sweeps_its_sandbox() {
    let _cli = cli_slots(1);
    let out = tempfile::tempdir().unwrap();
    let hang = root().join("tests/fixtures/scenarios/hang.toml");
    let mut child = wakeprobe(&[
        "run",
        hang.to_str().unwrap(),
        "--set",
        "ceiling=120",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let pid = child.id();
    let escaped = wait_for(Duration::from_secs(90), || {
        let sleeps = tagged_by(pid)
            .into_iter()
            .filter(|(_, cmd)| cmd.starts_with("sleep 300"))
            .count();
        (sleeps >= 2).then_some(())
    });
    assert!(escaped.is_some(), "the command and its escaped child run");
    let sandbox = sandboxes_of(pid);
    assert_eq!(sandbox.len(), 1);
    signal(pid, libc::SIGKILL);
    child.wait().unwrap();
    let gone = wait_for(Duration::from_secs(15), || {
        tagged_by(pid).is_empty().then_some(())
    });
    assert!(gone.is_some(), "left behind: {:?}", tagged_by(pid));
    // Nothing of the dead harness removes its sandbox; the next invocation (this one, or one of
    // the tests running beside it) does.
    let next = output_within(wakeprobe(&["list"]), Duration::from_secs(30));
    assert_eq!(next.status.code(), Some(0));
    // Another harness starting at the same moment may be the one removing it: wait for it.
    let removed = wait_for(Duration::from_secs(10), || {
        (!sandbox[0].exists()).then_some(())
    });
    assert!(
        removed.is_some(),
        "the next invocation removed it: {:?} (owner {} alive: {})",
        std::fs::read_dir(&sandbox[0])
            .map(|d| d.map(|e| e.unwrap().file_name()).collect::<Vec<_>>()),
        pid,
        std::path::Path::new(&format!("/proc/{pid}")).exists()
    );
}

/// The arguments of a short run on the simulator (top-level-control's session) into `out`.
fn a_short_sim_run(out: &Path) -> Vec<&str> {
    vec![
        "run",
        "top-level-control",
        "--variant",
        "session",
        "--set",
        "bg_seconds=1",
        "--backend",
        "sim",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]
}

/// `--keep` keeps the sandbox (the project, the HOME with the CLI's transcripts); without it
/// nothing of the run is left in the temp folder.
#[test]
fn keep_keeps_the_sandbox_and_only_then() {
    for keep in [true, false] {
        let out = tempfile::tempdir().unwrap();
        let mut args = a_short_sim_run(out.path());
        if keep {
            args.push("--keep");
        }
        let (pid, output) = run_within(wakeprobe(&args), Duration::from_secs(60));
        assert_eq!(output.status.code(), Some(0));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let kept: Vec<PathBuf> = stderr
            .lines()
            .filter_map(|l| {
                l.split_once("sandbox kept at ")
                    .map(|(_, p)| PathBuf::from(p))
            })
            .collect();
        assert_eq!(
            sandboxes_of(pid),
            Vec::<PathBuf>::new(),
            "nothing owned is left"
        );
        if keep {
            assert_eq!(kept.len(), 1, "kept, and said where: {stderr}");
            let settings =
                std::fs::read_to_string(kept[0].join("project/.claude/settings.json")).unwrap();
            assert!(
                settings.contains("wakeprobe-helper' hook-record"),
                "hooks run the small helper: {settings}"
            );
            assert!(kept[0].join("home/.claude/projects").is_dir());
            // No longer owned: a later run's sweep leaves it alone.
            let next = output_within(wakeprobe(&["list"]), Duration::from_secs(30));
            assert_eq!(next.status.code(), Some(0));
            assert!(kept[0].exists(), "a kept sandbox survives the next sweep");
            std::fs::remove_dir_all(&kept[0]).unwrap();
        } else {
            assert_eq!(
                kept,
                Vec::<PathBuf>::new(),
                "removed without --keep: {stderr}"
            );
        }
    }
}

/// Where no `wakeprobe-helper` of the same build is beside `wakeprobe` (a binary copied alone,
/// or a helper a partial build left behind, which may speak another wire format), the hooks and
/// the tracker run `wakeprobe` itself, and the run records as before.
#[test]
fn without_a_helper_of_its_build_wakeprobe_records_the_hooks_itself() {
    // Beside the build, so the binaries can be hard links rather than copies.
    let dir = tempfile::tempdir_in(bin().parent().unwrap()).unwrap();
    for name in ["wakeprobe", "claude-sim"] {
        let from = bin().with_file_name(name);
        let to = dir.path().join(name);
        if std::fs::hard_link(&from, &to).is_err() {
            std::fs::copy(&from, &to).unwrap();
        }
    }
    // A helper of another build: were it used, every hook would fail.
    let stale = dir.path().join("wakeprobe-helper");
    std::fs::write(&stale, "#!/bin/sh\necho another-build\nexit 1\n").unwrap();
    std::fs::set_permissions(&stale, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut args = a_short_sim_run(out.path());
    args.push("--keep");
    let (_, output) = run_within(
        wakeprobe_at(&dir.path().join("wakeprobe"), &args),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let kept = stderr
        .lines()
        .find_map(|l| {
            l.split_once("sandbox kept at ")
                .map(|(_, p)| PathBuf::from(p))
        })
        .expect("the sandbox was kept");
    let settings = std::fs::read_to_string(kept.join("project/.claude/settings.json")).unwrap();
    std::fs::remove_dir_all(&kept).unwrap();
    let own = format!("{}' hook-record", dir.path().join("wakeprobe").display());
    assert!(settings.contains(&own), "{settings}");
    let run = runs(&run_dir(out.path())).pop().expect("the run's folder");
    assert!(
        std::fs::read_to_string(run.join("hooks.jsonl"))
            .unwrap()
            .lines()
            .count()
            > 3,
        "the hooks were recorded"
    );
}
