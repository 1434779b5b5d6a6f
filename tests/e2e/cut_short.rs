//! A run the user stops (SIGINT, SIGTERM, SIGHUP) or its ceiling cuts short decides nothing it
//! did not see: every open verdict is `unknown` with the reason, nothing after the cut (or
//! caused by the signal) is blamed on the CLI, the draft says the run was cut short, what
//! finished is written, exit 130 for a signal, and no process is left. A CLI that cannot start
//! is a setup failure (exit 3) naming what happened. On the simulator and on the real CLI.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::common::*;

/// How a test stops the run.
#[derive(Clone, Copy, Debug)]
enum Stop {
    /// Ctrl-C: SIGINT to the harness.
    Interrupt,
    /// SIGHUP to the harness (its terminal went away).
    Hangup,
    /// SIGTERM to every process of the run, the harness included, at once.
    TermTree,
    /// SIGTERM to the run's processes (the supervisor, the CLI, its tasks), not the harness.
    TermRun,
}

fn start(backend: &[&str], out: &Path) -> Child {
    let mut args = vec![
        "run",
        "subagent-bg-turn-end",
        "--set",
        "bg_seconds=30",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(backend);
    wakeprobe(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Starts both variants of the seed scenario, stops them once both background commands run,
/// and checks everything the run wrote.
fn stopped_mid_run(backend: &[&str], stop: Stop) {
    let _cli = cli_slots(if backend.is_empty() { 2 } else { 0 });
    let out = tempfile::tempdir().unwrap();
    let child = start(backend, out.path());
    let pid = child.id();
    let both_running = wait_for(Duration::from_secs(90), || {
        let sleeps = tagged_by(pid)
            .into_iter()
            .filter(|(_, cmd)| cmd.starts_with("sleep 30"))
            .count();
        (sleeps >= 2).then_some(())
    });
    assert!(both_running.is_some(), "both background commands started");
    match stop {
        Stop::Interrupt => signal(pid, libc::SIGINT),
        Stop::Hangup => signal(pid, libc::SIGHUP),
        Stop::TermTree | Stop::TermRun => {
            for (p, _) in tagged_by(pid) {
                signal(p, libc::SIGTERM);
            }
            if matches!(stop, Stop::TermTree) {
                signal(pid, libc::SIGTERM);
            }
        }
    }
    let output = wait_output(child, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    // The harness itself interrupted: 130; only its runs: they decided nothing, exit 1.
    let code = if matches!(stop, Stop::TermRun) {
        1
    } else {
        130
    };
    assert_eq!(output.status.code(), Some(code), "{stop:?}: {stderr}");
    assert_eq!(tagged_by(pid), vec![], "{stop:?}: processes left behind");
    let run_dir = run_dir(out.path());
    assert!(
        run_dir.join("summary.json").exists(),
        "what finished is written"
    );
    let runs = runs(&run_dir);
    assert_eq!(runs.len(), 2, "{stop:?}: both variants are written");
    for run in &runs {
        check_cut_run(run, stop);
    }
    assert!(stdout.contains("the run was cut short"), "{stdout}");
}

fn check_cut_run(run: &Path, stop: Stop) {
    let info = json(&run.join("run.json"));
    assert_eq!(info["end"], "interrupted", "{stop:?}: {info}");
    assert_eq!(info["complete"], true);
    let result = json(&run.join("result.json"));
    let verdict = &result["judgement"]["verdicts"][0];
    assert_eq!(
        result["judgement"]["outcome"],
        "unknown",
        "{stop:?} {}: {verdict}",
        run.display()
    );
    let reason = verdict["reason"].as_str().unwrap();
    assert!(reason.contains("cut short"), "{reason}");
    let signal = match stop {
        Stop::Interrupt => "SIGINT",
        Stop::Hangup => "SIGHUP",
        Stop::TermTree | Stop::TermRun => "SIGTERM",
    };
    assert!(reason.contains(signal), "{stop:?}: {reason}");
    // A signal to the whole tree kills `bg` a moment before the harness hears of it: that end
    // is the signal's, not the work's nor the CLI's.
    assert!(reason.contains("before `bg` ended"), "{stop:?}: {reason}");
    // The kill the signal caused is nobody's verdict.
    let text = serde_json::to_string(&result["judgement"]).unwrap();
    assert!(!text.contains("was then killed"), "{text}");
    assert!(!text.contains("not-resumable"), "{text}");
    let draft = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(draft.contains("**This run was cut short**"), "{draft}");
}

const SIM: &[&str] = &["--backend", "sim"];

#[test]
fn ctrl_c_on_the_simulator() {
    stopped_mid_run(SIM, Stop::Interrupt);
}

#[test]
fn sighup_on_the_simulator() {
    stopped_mid_run(SIM, Stop::Hangup);
}

#[test]
fn sigterm_to_the_whole_tree_on_the_simulator() {
    stopped_mid_run(SIM, Stop::TermTree);
}

#[test]
fn sigterm_to_the_runs_only_on_the_simulator() {
    stopped_mid_run(SIM, Stop::TermRun);
}

#[test]
fn sigterm_to_the_runs_only_on_the_real_cli() {
    stopped_mid_run(&[], Stop::TermRun);
}

#[test]
fn ctrl_c_on_the_real_cli() {
    stopped_mid_run(&[], Stop::Interrupt);
}

#[test]
fn sigterm_to_the_whole_tree_on_the_real_cli() {
    stopped_mid_run(&[], Stop::TermTree);
}

#[test]
fn sighup_on_the_real_cli() {
    stopped_mid_run(&[], Stop::Hangup);
}

/// The seed scenario with a ceiling far shorter than its work (in its kept-alive session; in
/// print mode the CLI ends the session by itself about 5 s after its last result).
fn short_ceiling(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(root().join("scenarios/subagent-bg-turn-end.toml"))
        .unwrap()
        .replace(
            "ceiling_seconds = \"{{bg_seconds}} + 45\"",
            "ceiling_seconds = 12",
        );
    let path = dir.join("subagent-bg-turn-end.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn ceiling_cuts_it_short(backend: &[&str]) {
    let _cli = cli_slots(if backend.is_empty() { 1 } else { 0 });
    let dir = tempfile::tempdir().unwrap();
    // `FILE/VARIANT`, as `run` takes it beside `--variant`.
    let target = format!("{}/session", short_ceiling(dir.path()).display());
    let mut args = vec![
        "run",
        &target,
        "--set",
        "bg_seconds=60",
        "--quiet",
        "--out",
        dir.path().to_str().unwrap(),
    ];
    args.extend_from_slice(backend);
    let (pid, output) = run_within(wakeprobe(&args), Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&output.stdout);
    // The verdicts differ from the scenario's expectation: exit 1, and said so.
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert_eq!(tagged_by(pid), vec![]);
    for run in runs(&run_dir(dir.path())) {
        let info = json(&run.join("run.json"));
        assert_eq!(info["end"], "ceiling");
        let result = json(&run.join("result.json"));
        assert_eq!(result["judgement"]["outcome"], "unknown", "{result}");
        let reason = result["judgement"]["verdicts"][0]["reason"]
            .as_str()
            .unwrap();
        assert!(reason.contains("12 s ceiling"), "{reason}");
    }
    assert!(stdout.contains("but the scenario expects"), "{stdout}");
}

#[test]
fn a_short_ceiling_on_the_simulator_decides_nothing() {
    ceiling_cuts_it_short(SIM);
}

#[test]
fn a_short_ceiling_on_the_real_cli_decides_nothing() {
    ceiling_cuts_it_short(&[]);
}

/// `--claude-bin BIN` that does not run: a setup failure (exit 3) said before anything is
/// written (its `--version` is asked first), no process left; the error line.
fn setup_failure(bin: &Path) -> String {
    let out = tempfile::tempdir().unwrap();
    let (pid, output) = run_within(
        wakeprobe(&[
            "run",
            "subagent-bg-turn-end",
            "--variant",
            "print",
            "--claude-bin",
            bin.to_str().unwrap(),
            "--quiet",
            "--out",
            out.path().to_str().unwrap(),
        ]),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert_eq!(tagged_by(pid), vec![]);
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        0,
        "nothing written for a CLI that does not run: {stderr}"
    );
    stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("an error line: {stderr}"))
        .to_string()
}

#[test]
fn a_cli_that_exits_at_once_is_a_setup_failure() {
    let stderr = setup_failure(Path::new("/bin/false"));
    assert!(
        stderr == "error: the CLI could not start: /bin/false: `--version` ended with exit 1",
        "{stderr}"
    );
}

#[test]
fn a_truncated_cli_binary_is_a_setup_failure_naming_what_happened() {
    let _cli = cli_slots(1);
    let real = pinned_package().join("bin/claude.exe");
    let bytes = std::fs::read(&real).expect("the pinned CLI's binary");
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("claude.exe");
    std::fs::write(&broken, &bytes[..bytes.len() / 3]).unwrap();
    std::fs::set_permissions(&broken, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let stderr = setup_failure(&broken);
    assert!(stderr.contains("the CLI could not start"), "{stderr}");
    assert!(
        stderr.contains(broken.to_str().unwrap()),
        "names the binary: {stderr}"
    );
    assert!(
        stderr.contains("`--version` ended with") || stderr.contains("`--version` could not start"),
        "says how it failed: {stderr}"
    );
}

/// An input whose trigger never happens is reported, never silently dropped.
#[test]
fn an_input_that_was_never_sent_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("unsent.toml");
    std::fs::write(
        &path,
        r#"name = "unsent"
title = "An input waiting for a third turn end that never comes"
summary = "s"

[driver]
mode = "session"
prompt = "Go."
ceiling_seconds = 3
settle_seconds = 1
inputs = [{ after = "turn-end:main#3", text = "too late" }]

[[agents.main.steps]]
say = "Done."

[expect]
session = "unknown"
"#,
    )
    .unwrap();
    let (pid, output) = run_within(
        wakeprobe(&[
            "run",
            path.to_str().unwrap(),
            "--backend",
            "sim",
            "--quiet",
            "--out",
            dir.path().to_str().unwrap(),
        ]),
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(tagged_by(pid), vec![]);
    let line = "input 1 was never sent: turn-end:main#3 never happened";
    assert!(stdout.contains(line), "{stdout}");
    let run = &runs(&run_dir(dir.path()))[0];
    assert_eq!(json(&run.join("run.json"))["unsent_inputs"][0], line);
    let draft = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(draft.contains(&format!("> Note: {line}.")), "{draft}");
}

/// A folder that could not be completely written (a full disk; here a file size limit) says
/// so in its own run.json, the run is a setup failure, and `report` skips the folder.
#[test]
fn a_run_folder_that_could_not_be_written_is_marked_and_skipped() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = wakeprobe(&[
        "run",
        "subagent-bg-turn-end",
        "--variant",
        "session",
        "--set",
        "bg_seconds=1",
        "--backend",
        "sim",
        "--quiet",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    // SAFETY: setrlimit and signal are async-signal-safe; they run between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            // Writes past 16 KiB fail (EFBIG) instead of raising SIGXFSZ.
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: 16 * 1024,
                rlim_max: 16 * 1024,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
            Ok(())
        });
    }
    let (pid, output) = run_within(cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("setup failed"), "{stderr}");
    assert_eq!(tagged_by(pid), vec![]);
    let run_dir = run_dir(dir.path());
    let folder = run_dir
        .join("subagent-bg-turn-end")
        .join("session.sim-finalize-on-turn-end.r1");
    let info = json(&folder.join("run.json"));
    assert_eq!(info["complete"], false, "{info}");
    let report = output_within(
        wakeprobe(&["report", run_dir.to_str().unwrap()]),
        Duration::from_secs(30),
    );
    let said = String::from_utf8_lossy(&report.stderr);
    assert!(
        said.contains("was not completely written") && said.contains("skipped"),
        "{said}"
    );
    assert!(
        !folder.join("result.json").exists() || json(&folder.join("run.json"))["complete"] == false
    );
}
