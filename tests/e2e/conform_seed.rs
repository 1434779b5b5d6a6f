//! `wakeprobe conform` on the seed-000 scenario: the pinned real CLI (installed into the cache
//! on first use) against the simulator. The default profile must have the same shape in both
//! variants; a deliberately different profile must show a readable difference. The two
//! comparisons run at once, each bounded.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn cache() -> PathBuf {
    if let Some(dir) = std::env::var_os("WAKEPROBE_CACHE") {
        return PathBuf::from(dir);
    }
    PathBuf::from(std::env::var_os("HOME").expect("HOME is set"))
        .join(".cache")
        .join("wakeprobe")
}

fn conform(args: &[&str], limit: Duration) -> (Output, PathBuf, tempfile::TempDir) {
    let out = tempfile::tempdir().expect("temp dir");
    let child = Command::new(env!("CARGO_BIN_EXE_wakeprobe"))
        .arg("conform")
        .args(args)
        .args(["--quiet", "-j", "2", "--out"])
        .arg(out.path())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("WAKEPROBE_CACHE", cache())
        .env_remove("WAKEPROBE_KEEP")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn wakeprobe");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output = match rx.recv_timeout(limit) {
        Ok(o) => o.expect("wait for wakeprobe"),
        Err(_) => {
            crate::common::signal(pid, libc::SIGKILL);
            panic!("wakeprobe conform did not finish within {limit:?}");
        }
    };
    let invocation = std::fs::read_dir(out.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("an invocation folder");
    (output, invocation, out)
}

#[test]
fn seed_000_default_profile_matches_the_pinned_cli_and_fixed_does_not() {
    // The two comparisons at once: three real CLIs at most (two jobs each; the second
    // compares one variant).
    let _cli = crate::common::cli_slots(3);
    let limit = Duration::from_secs(300);
    let junit_dir = tempfile::tempdir().unwrap();
    let junit = junit_dir.path().join("junit.xml");
    // 15 s: well past the print-mode grace (about 5 s from the last result, which a loaded
    // machine delays by seconds), so the print variant is the stall itself on both sides.
    let ((output, dir, _keep), (fixed_output, _fixed_dir, _fixed_keep)) =
        std::thread::scope(|scope| {
            let fixed = scope.spawn(|| {
                conform(
                    &[
                        "subagent-bg-turn-end",
                        "--profile",
                        "fixed",
                        "--variant",
                        "print",
                        "--set",
                        "bg_seconds=15",
                        "--junit",
                        junit.to_str().unwrap(),
                    ],
                    limit,
                )
            });
            let default = conform(&["subagent-bg-turn-end", "--set", "bg_seconds=15"], limit);
            (default, fixed.join().unwrap())
        });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for variant in ["print", "session"] {
        let line = format!(
            "subagent-bg-turn-end/{variant}: claude-2.1.332 vs sim-finalize-on-turn-end: same shape"
        );
        assert!(stdout.contains(&line), "{line}\nin:\n{stdout}");
    }
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("conform.json")).unwrap()).unwrap();
    assert_eq!(report.as_array().map(Vec::len), Some(2));
    assert!(dir.join("conform.txt").exists());

    // `fixed` holds the worker instead of finalizing it: the report must say where.
    let output = fixed_output;
    // --junit holds the comparison itself as a failed case, beside each run's cell.
    let xml = std::fs::read_to_string(&junit).expect("conform --junit writes its file");
    crate::common::junit::checked_and_kept(&xml).unwrap_or_else(|p| panic!("{p:#?}\n{xml}"));
    let case = xml
        .split("<testcase ")
        .find(|c| {
            // The case's own attributes (its suite bears the same name).
            c.starts_with(
                "name=\"conform subagent-bg-turn-end/print: claude-2.1.332 vs sim-fixed\"",
            )
        })
        .unwrap_or_else(|| panic!("no conform case in\n{xml}"));
    assert!(
        case.contains("<failure") && case.contains("type=\"shape\""),
        "{case}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "a difference is a mismatch:\n{stdout}"
    );
    assert!(
        stdout.contains("subagent-bg-turn-end/print: claude-2.1.332 vs sim-fixed:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("verdict\n    real: not-resumable\n    sim:  woke"),
        "{stdout}"
    );
    // The worker's lane: the real CLI stops it at once; the simulator resumes it first.
    assert!(stdout.contains("lane agent:worker (events)"), "{stdout}");
    assert!(
        stdout.contains(
            "- hook SubagentStop background_tasks=[shell:bg:running, subagent:worker:running]"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("+ request step=2 notified=[bg:completed]"),
        "{stdout}"
    );
    assert!(stdout.contains("lane task:bg (stream)"), "{stdout}");
}
