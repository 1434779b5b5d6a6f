//! An invocation's own folder says whether it is whole: `invocation.json` is written
//! `complete: false` before anything else and `complete: true` last, and `OUT/latest` moves to
//! a folder only after that. A killed harness, a full disk or a read-only `--out` each leave
//! something a reader can tell apart from a finished folder, and say why. On the simulator.
//!
//! The full-disk and read-only cases mount a small tmpfs, which needs root (and a container
//! that allows mounts): without either they are skipped with a message on stderr (the
//! read-only one falls back to a folder without write permission when not root).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::common::*;

/// `run subagent-bg-turn-end/VARIANT` on the simulator into `out`, with `bg_seconds`.
fn sim_run(out: &Path, variant: &str, bg_seconds: &str) -> std::process::Command {
    wakeprobe(&[
        "run",
        &format!("subagent-bg-turn-end/{variant}"),
        "--backend",
        "sim",
        "--set",
        &format!("bg_seconds={bg_seconds}"),
        "--explore",
        "--out",
        out.to_str().unwrap(),
    ])
}

/// The invocation folders under `out` (not `latest`), sorted.
fn folders(out: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

fn mark(folder: &Path) -> serde_json::Value {
    json(&folder.join("invocation.json"))
}

/// SIGKILL mid-run: the folder keeps the mark it was made with (incomplete, no exit code,
/// no summary) and `latest` still names the last whole folder; the next whole one moves it.
#[test]
fn a_killed_invocation_leaves_its_folder_marked_incomplete_and_latest_unchanged() {
    let out = tempfile::tempdir().unwrap();
    let first = output_within(sim_run(out.path(), "print", "1"), Duration::from_secs(60));
    assert_eq!(first.status.code(), Some(0), "{first:?}");
    let whole = folders(out.path()).remove(0);
    assert_eq!(
        mark(&whole),
        serde_json::json!({"schema": 1, "complete": true, "exit_code": 0})
    );
    let latest = || std::fs::read_link(out.path().join("latest")).unwrap();
    assert_eq!(latest(), PathBuf::from(whole.file_name().unwrap()));

    let mut child = sim_run(out.path(), "session", "30")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let running = wait_for(Duration::from_secs(60), || {
        let sleeping = tagged_by(pid)
            .iter()
            .any(|(_, cmd)| cmd.starts_with("sleep 30"));
        (sleeping && folders(out.path()).len() == 2).then_some(())
    });
    assert!(running.is_some(), "the second invocation's work runs");
    // SAFETY: killing the child we spawned.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let cut = folders(out.path()).remove(1);
    assert_eq!(
        mark(&cut),
        serde_json::json!({"schema": 1, "complete": false}),
        "no exit code, no error: cut short"
    );
    assert!(!cut.join("summary.json").exists());
    assert_eq!(latest(), PathBuf::from(whole.file_name().unwrap()));
    // The supervisor ends the killed harness's processes (its lifeline closed).
    let gone = wait_for(Duration::from_secs(30), || {
        tagged_by(pid).is_empty().then_some(())
    });
    assert!(gone.is_some(), "left behind: {:?}", tagged_by(pid));

    let next = output_within(sim_run(out.path(), "print", "1"), Duration::from_secs(60));
    assert_eq!(next.status.code(), Some(0));
    let newest = folders(out.path()).remove(2);
    assert_eq!(mark(&newest)["complete"], true);
    assert_eq!(latest(), PathBuf::from(newest.file_name().unwrap()));
}

/// A tmpfs mounted for one test, unmounted when it ends (even by a panic).
struct Mount(PathBuf);

impl Mount {
    /// A tmpfs of `options` (`size=4k`, `ro`) at a new folder, or why not (not root, or a
    /// container that forbids mounts).
    fn tmpfs(parent: &Path, options: &str, read_only: bool) -> Result<Mount, String> {
        // SAFETY: reading the effective user id.
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root".into());
        }
        let target = parent.join("mnt");
        std::fs::create_dir(&target).unwrap();
        let c = |s: &str| std::ffi::CString::new(s).unwrap();
        let (source, kind, data) = (c("tmpfs"), c("tmpfs"), c(options));
        let at = c(target.to_str().unwrap());
        let flags = if read_only { libc::MS_RDONLY } else { 0 };
        // SAFETY: valid C strings for a mount of our own temp folder.
        let rc = unsafe {
            libc::mount(
                source.as_ptr(),
                at.as_ptr(),
                kind.as_ptr(),
                flags,
                data.as_ptr().cast(),
            )
        };
        if rc != 0 {
            return Err(format!("mount: {}", std::io::Error::last_os_error()));
        }
        Ok(Mount(target))
    }

    /// [`Mount::tmpfs`], or `None` after saying on stderr that the test is skipped and why
    /// (`needed`: what the test needs the mount for).
    fn or_skip(parent: &Path, options: &str, read_only: bool, needed: &str) -> Option<Mount> {
        match Mount::tmpfs(parent, options, read_only) {
            Ok(m) => Some(m),
            Err(why) => {
                eprintln!("skipped: {needed} ({why})");
                None
            }
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let at = std::ffi::CString::new(self.0.to_str().unwrap()).unwrap();
        // SAFETY: unmounting the tmpfs this test mounted.
        unsafe { libc::umount2(at.as_ptr(), libc::MNT_DETACH) };
    }
}

/// A disk with room for the folder's mark and nothing more: every run says why it failed (the
/// file it could not write, and the system's reason), the invocation exits 3, the folder stays
/// marked incomplete and `latest` is never made.
#[test]
fn a_full_disk_says_why_each_run_failed_and_leaves_the_folder_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let Some(disk) = Mount::or_skip(
        dir.path(),
        "size=4k",
        false,
        "a full disk needs a small tmpfs",
    ) else {
        return;
    };
    let out = disk.0.join("reports");
    let mut cmd = wakeprobe(&[
        "run",
        "subagent-bg-turn-end",
        "--backend",
        "sim",
        "--set",
        "bg_seconds=1",
        "--explore",
        "--out",
        out.to_str().unwrap(),
    ]);
    cmd.env("NO_COLOR", "1");
    let output = output_within(cmd, Duration::from_secs(90));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    let failed: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("failed to run"))
        .collect();
    assert_eq!(failed.len(), 2, "one line per run: {stderr}");
    for line in failed {
        assert!(
            line.contains("failed to run: ") && line.contains("No space left on device"),
            "a reason: {line}"
        );
    }
    assert!(!stderr.contains("(failed to run)"), "{stderr}");
    // Said again before the summary, which the full disk then refuses.
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("setup failed: ") && l.contains("No space left on device"))
        .collect();
    assert_eq!(said.len(), 2, "{stderr}");
    assert!(
        stderr.find(said[0]) < stderr.find("summary.json: No space left on device"),
        "the reasons come before the summary's own failure: {stderr}"
    );
    let folder = folders(&out).remove(0);
    assert_eq!(mark(&folder)["complete"], false);
    assert!(
        !out.join("latest").exists(),
        "latest names no partial folder"
    );
}

/// `--out` that cannot be written is a setup failure (exit 3), said before anything runs; one
/// that names a path through a file stays bad input (exit 2, in `bad_input`).
#[test]
fn a_read_only_out_is_a_setup_failure_said_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: reading the effective user id.
    let root = unsafe { libc::geteuid() } == 0;
    let (_mount, folder, reason) = match Mount::tmpfs(dir.path(), "size=64k", true) {
        Ok(m) => {
            let at = m.0.clone();
            (Some(m), at, "Read-only file system (os error 30)")
        }
        Err(why) if root => {
            eprintln!("skipped: a read-only folder for root needs a read-only mount ({why})");
            return;
        }
        Err(_) => {
            use std::os::unix::fs::PermissionsExt;
            let at = dir.path().join("locked");
            std::fs::create_dir(&at).unwrap();
            std::fs::set_permissions(&at, std::fs::Permissions::from_mode(0o555)).unwrap();
            (None, at, "Permission denied (os error 13)")
        }
    };
    let out = folder.join("reports");
    let output = output_within(sim_run(&out, "print", "1"), Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert_eq!(
        stderr.lines().find(|l| l.starts_with("error: ")),
        Some(
            format!(
                "error: --out {}: cannot create a run folder there: {reason}",
                out.display()
            )
            .as_str()
        )
    );
    assert!(!stderr.contains("[start"), "nothing ran: {stderr}");
}

/// A symlinked `--out` is followed on purpose (a reports folder on a bigger disk): the run
/// folder and `latest` go into its target, below it and nowhere else, and the link stays a
/// link.
#[test]
fn a_symlinked_out_is_followed_and_nothing_is_written_beside_its_target() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let output = output_within(sim_run(&link, "print", "1"), Duration::from_secs(60));
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(link.is_symlink());
    let mut beside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    beside.sort();
    assert_eq!(beside, vec!["link", "target"], "nothing beside the target");
    let folder = folders(&target).remove(0);
    let mut inside: Vec<_> = std::fs::read_dir(&target)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    inside.sort();
    assert_eq!(inside, vec![folder.file_name().unwrap(), "latest".as_ref()]);
    assert_eq!(mark(&folder)["complete"], true);
    assert_eq!(runs(&folder).len(), 1);
}

/// Issue #41: a `--junit` file in a folder that cannot be written is a setup failure (exit 3)
/// said before anything runs, not after the whole run ("File exists"); `--out` is not made.
#[test]
fn a_read_only_junit_folder_is_a_setup_failure_said_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mount) = Mount::or_skip(
        dir.path(),
        "size=64k",
        true,
        "a read-only folder for root needs a read-only mount",
    ) else {
        return;
    };
    let junit = mount.0.join("junit.xml");
    let out = dir.path().join("out");
    let mut cmd = sim_run(&out, "print", "1");
    cmd.args(["--junit", junit.to_str().unwrap()]);
    let output = output_within(cmd, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert_eq!(
        stderr.lines().find(|l| l.starts_with("error: ")),
        Some(
            format!(
                "error: --junit {}: cannot be written: Read-only file system (os error 30)",
                junit.display()
            )
            .as_str()
        )
    );
    assert!(!stderr.contains("[start"), "nothing ran: {stderr}");
    assert!(!out.exists(), "no run folder");
}

/// Issue #41 (3): a disk that fills while a run's folder is written leaves that folder marked,
/// as the invocation's is: `run.json` stays incomplete and says which file could not be
/// written, why, and which of the run's files are missing; `report` skips it saying so.
#[test]
fn a_run_folder_cut_short_by_a_full_disk_says_what_is_missing_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let Some(disk) = Mount::or_skip(
        dir.path(),
        "size=32k",
        false,
        "a full disk needs a small tmpfs",
    ) else {
        return;
    };
    let out = disk.0.join("reports");
    let output = output_within(sim_run(&out, "print", "1"), Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    let folder = folders(&out).remove(0);
    let run = std::fs::read_dir(folder.join("subagent-bg-turn-end"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .expect("the run's folder was made");
    let info = json(&run.join("run.json"));
    assert_eq!(info["complete"], false, "{info}");
    let why = info["incomplete"]
        .as_str()
        .unwrap_or_else(|| panic!("{info}"));
    assert!(
        why.contains("No space left on device")
            && why.contains("; missing: ")
            && why.contains("result.json"),
        "{why}"
    );
    let reported = output_within(
        wakeprobe(&["report", folder.to_str().unwrap()]),
        Duration::from_secs(30),
    );
    let said = String::from_utf8_lossy(&reported.stderr);
    assert!(
        said.contains("was not completely written") && said.contains("No space left on device"),
        "{said}"
    );
}
