//! Safety: nothing a run starts outlives it (ceiling, Ctrl-C), no byte leaves loopback, and
//! the user's real HOME and credentials are never touched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::*;

fn hang() -> String {
    root()
        .join("tests/fixtures/scenarios/hang.toml")
        .display()
        .to_string()
}

#[test]
fn a_run_stopped_by_its_ceiling_leaves_no_process() {
    let _cli = cli_slots(1);
    let out = tempfile::tempdir().unwrap();
    // A 20 s ceiling: a busy machine's CLI can take 10 s to start the command, and the test
    // is about what the ceiling does to a command that runs.
    let cmd = wakeprobe(&[
        "run",
        &hang(),
        "--set",
        "ceiling=20",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    succeeds_leaving_nothing(cmd, Duration::from_secs(120));
    let run = &runs(&run_dir(out.path()))[0];
    assert!(
        !kind(&events(run), "track_started", None).is_empty(),
        "the endless command never started within the ceiling: this machine is too busy for the test"
    );
    let info = json(&run.join("run.json"));
    assert_eq!(info["end"], "ceiling");
    assert_eq!(
        info["leftovers"].as_array().unwrap().len(),
        0,
        "the supervisor got everything: {info}"
    );
    let result = json(&run.join("result.json"));
    assert_eq!(result["judgement"]["outcome"], "unknown");
    let reason = result["judgement"]["verdicts"][0]["reason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("cut short") && reason.contains("ceiling"),
        "the ceiling cut the run short: {reason}"
    );
    // The escaped, TERM-ignoring grandchild was reaped by the supervisor.
    let reaped = kind(&events(run), "process_exited", None)
        .iter()
        .filter(|e| e["command"] == "sleep" && e["exit"]["signal"] == 9)
        .count();
    assert!(reaped >= 1, "the TERM-ignoring sleep was SIGKILLed");
}

#[test]
fn ctrl_c_stops_the_run_and_leaves_no_process() {
    let _cli = cli_slots(1);
    let out = tempfile::tempdir().unwrap();
    let mut cmd = wakeprobe(&[
        "run",
        &hang(),
        "--set",
        "ceiling=120",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait until the endless command (a tagged `sleep`) really runs.
    let running = wait_for(Duration::from_secs(60), || {
        tagged_by(pid)
            .into_iter()
            .find(|(_, cmd)| cmd.starts_with("sleep 300"))
    });
    assert!(running.is_some(), "the background command started");
    ctrl_c_leaves_nothing(child);
    let run = &runs(&run_dir(out.path()))[0];
    assert_eq!(json(&run.join("run.json"))["end"], "interrupted");
    assert!(
        run_dir(out.path()).join("summary.json").exists(),
        "what finished is written"
    );
}

/// Every file under `dir` with its content hash and modification time.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime)> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().filter_map(|e| e.ok()) {
            let meta = entry.metadata().unwrap();
            if meta.is_symlink() {
                continue; // `latest`, a name for a run folder walked by its own
            }
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::fs::read(entry.path()).unwrap().hash(&mut h);
                files.insert(entry.path(), (h.finish(), meta.modified().unwrap()));
            }
        }
    }
    files
}

fn all_text(dir: &Path) -> String {
    let mut text = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().filter_map(|e| e.ok()) {
            if entry.path().is_dir() {
                stack.push(entry.path());
            } else {
                text.push_str(&String::from_utf8_lossy(
                    &std::fs::read(entry.path()).unwrap(),
                ));
            }
        }
    }
    text
}

#[test]
fn credentials_in_the_real_home_never_reach_the_cli_and_nothing_leaves_loopback() {
    let _cli = cli_slots(1);
    let home = tempfile::tempdir().unwrap();
    let canary = "canary-6f1d2c9a";
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::write(
        home.path().join(".claude/.credentials.json"),
        format!(r#"{{"claudeAiOauth":{{"accessToken":"{canary}-oauth"}}}}"#),
    )
    .unwrap();
    std::fs::write(
        home.path().join(".claude.json"),
        format!(r#"{{"primaryApiKey":"{canary}-primary","hasCompletedOnboarding":true}}"#),
    )
    .unwrap();
    std::fs::create_dir_all(home.path().join(".aws")).unwrap();
    std::fs::write(
        home.path().join(".aws/credentials"),
        format!("[default]\naws_secret_access_key={canary}-aws\n"),
    )
    .unwrap();
    let before = snapshot(home.path());

    let out = tempfile::tempdir().unwrap();
    let mut cmd = wakeprobe(&[
        "run",
        "subagent-bg-turn-end",
        "--variant",
        "session",
        "--set",
        "bg_seconds=1",
        "--quiet",
        "--network",
        "isolated",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    cmd.env("HOME", home.path())
        .env("ANTHROPIC_API_KEY", format!("{canary}-env"))
        .env("ANTHROPIC_AUTH_TOKEN", format!("{canary}-token"))
        .env("HTTPS_PROXY", "http://192.0.2.1:9")
        .env("HTTP_PROXY", "http://192.0.2.1:9");
    let output = output_within(cmd, Duration::from_secs(180));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    assert_eq!(
        snapshot(home.path()),
        before,
        "the real HOME was not touched"
    );
    let run = &runs(&run_dir(out.path()))[0];
    let info = json(&run.join("run.json"));
    assert_eq!(info["isolation"]["network"], "private-netns", "{info}");
    assert_eq!(
        info["isolation"]["interfaces"],
        serde_json::json!(["lo"]),
        "only loopback exists"
    );
    let journal = std::fs::read_to_string(run.join("api-journal.jsonl")).unwrap();
    let requests: Vec<serde_json::Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!requests.is_empty(), "the CLI talked to the fake API");
    for r in &requests {
        assert_eq!(r["credential"], "dummy", "only the run's dummy key: {r}");
    }
    let everything = all_text(out.path());
    assert!(
        !everything.contains(canary),
        "no canary in anything written"
    );
}

/// Pid numbers wrap within a minute or two on a busy machine (32768 by default, and every
/// thread takes one): the simulator must never signal a pid it has already reaped. A finished
/// background shell's number is handed to a bystander in its own process group (root only,
/// through `/proc/sys/kernel/ns_last_pid`) before the run ends; the run's end must not touch it.
#[test]
fn the_simulator_never_signals_a_process_that_took_a_finished_shells_pid() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().display().to_string();
    let scenario = tmp.path().join("pid-reuse.toml");
    std::fs::write(
        &scenario,
        format!(
            r#"name = "pid-reuse"
title = "A finished shell's pid taken by a bystander"
summary = "test fixture: a short background command, then a wait for the test"

[driver]
mode = "print"
prompt = "Go."
ceiling_seconds = "60"

[[agents.main.steps]]
call = "Bash"
input = {{ command = "echo $$ > {dir}/shell.pid", run_in_background = true, description = "Short command" }}

[[agents.main.steps]]
call = "Bash"
input = {{ command = "timeout 40 sh -c 'while [ ! -e {dir}/go ]; do sleep 0.05; done'", description = "Wait for the test" }}

[[agents.main.steps]]
say = "Done."
"#
        ),
    )
    .unwrap();
    let out = tmp.path().join("out");
    let cmd = wakeprobe(&[
        "run",
        scenario.to_str().unwrap(),
        "--backend",
        "sim",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    std::thread::scope(|scope| {
        let run = scope.spawn(|| succeeds_leaving_nothing(cmd, Duration::from_secs(90)));
        let go = || std::fs::write(tmp.path().join("go"), "").unwrap();
        let pid: i32 = wait_for(Duration::from_secs(60), || {
            std::fs::read_to_string(tmp.path().join("shell.pid"))
                .ok()?
                .trim()
                .parse()
                .ok()
        })
        .expect("the short command never ran");
        // Reaped by the simulator: the number is free.
        let freed = wait_for(Duration::from_secs(10), || {
            (!Path::new(&format!("/proc/{pid}")).exists()).then_some(())
        });
        let bystander = freed.and_then(|()| take_pid(pid));
        go();
        // The run's own checks (exit 0, nothing left) panic only after the bystander is gone.
        let finished = run.join();
        let fate = bystander.map(|mut bystander| {
            let fate = bystander.try_wait().unwrap();
            let _ = bystander.kill();
            let _ = bystander.wait();
            fate
        });
        if let Err(panic) = finished {
            std::panic::resume_unwind(panic);
        }
        let Some(fate) = fate else {
            eprintln!("skipped: pid {pid} could not be given to a bystander (needs root)");
            return;
        };
        assert_eq!(
            fate, None,
            "the run's end signalled pid {pid}, reaped long before"
        );
    });
}

/// Starts `sleep` as pid `pid` in its own process group, if the kernel lets us pick the
/// number; a few tries, since other processes may take it first.
fn take_pid(pid: i32) -> Option<std::process::Child> {
    use std::os::unix::process::CommandExt;
    for _ in 0..50 {
        std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).ok()?;
        let mut child = std::process::Command::new("sleep")
            .arg("120")
            .process_group(0)
            .spawn()
            .ok()?;
        if child.id() as i32 == pid {
            return Some(child);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    None
}
