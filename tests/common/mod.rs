//! Shared helpers for the integration tests: running the built binary with bounded waits,
//! reading run folders, and scanning the process table for anything a run left behind.

#![allow(dead_code)]

pub mod drafts;
pub mod judges;
pub mod junit;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_wakeprobe"))
}

/// The CLI cache the tests share (installs happen once per machine, not per test): the
/// binary's own default, so a test run and a user's runs fill one cache.
pub fn cache() -> PathBuf {
    wakeprobe::backend::install::cache_root()
}

/// The pinned CLI's package folder in the shared cache, installed first if it is missing (a
/// fresh machine running one test alone has no cache yet; the install lock makes concurrent
/// callers wait for one install).
pub fn pinned_package() -> PathBuf {
    let version = wakeprobe::backend::PINNED_VERSION;
    let pinned = wakeprobe::backend::catalog::Release {
        version: version.parse().expect("the pinned version is semver"),
        channel: wakeprobe::backend::channel::Channel::ClaudeCode,
    };
    wakeprobe::backend::install::ensure(&cache(), &pinned, &|_| {})
        .unwrap_or_else(|e| panic!("installing the pinned CLI {version}: {e}"));
    cache()
        .join("claude-code")
        .join(version)
        .join("node_modules/@anthropic-ai/claude-code")
}

/// `wakeprobe ARGS` from the repository root, with the shared cache.
pub fn wakeprobe(args: &[&str]) -> Command {
    wakeprobe_at(&bin(), args)
}

/// [`wakeprobe`] with another copy of the binary.
pub fn wakeprobe_at(program: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(root())
        .env("WAKEPROBE_CACHE", cache())
        .env_remove("WAKEPROBE_KEEP")
        .stdin(Stdio::null());
    cmd
}

/// Sends `signal` to the process `pid` (one this test started); a process already gone is no
/// error.
pub fn signal(pid: u32, signal: i32) {
    // SAFETY: kill(2) on a pid this test spawned; no memory is shared.
    unsafe { libc::kill(pid as i32, signal) };
}

/// Runs a command to completion with a ceiling; kills it if the ceiling is hit.
pub fn output_within(cmd: Command, limit: Duration) -> Output {
    run_within(cmd, limit).1
}

/// Like [`output_within`], also returning the process id (to look for what it left behind).
pub fn run_within(mut cmd: Command, limit: Duration) -> (u32, Output) {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn wakeprobe");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => (pid, out.expect("wait for wakeprobe")),
        Err(_) => {
            signal(pid, libc::SIGKILL);
            panic!("wakeprobe did not finish within {limit:?}");
        }
    }
}

/// The single run-id folder under `out` (beside the `latest` symlink to it).
pub fn run_dir(out: &Path) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .expect("out folder exists")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    assert_eq!(dirs.len(), 1, "one invocation folder in {}", out.display());
    dirs.remove(0)
}

/// The run folders (holding run.json) under a run-id folder, sorted.
pub fn runs(run_dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for scenario in std::fs::read_dir(run_dir).unwrap().filter_map(|e| e.ok()) {
        if scenario.path().is_dir() {
            for run in std::fs::read_dir(scenario.path())
                .unwrap()
                .filter_map(|e| e.ok())
            {
                if run.path().join("run.json").exists() {
                    found.push(run.path());
                }
            }
        }
    }
    found.sort();
    found
}

pub fn json(path: &Path) -> Value {
    serde_json::from_slice(
        &std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn events(run: &Path) -> Vec<Value> {
    json(&run.join("timeline.json"))["events"]
        .as_array()
        .unwrap()
        .clone()
}

/// Live processes whose environment carries a run tag of the harness with this pid.
pub fn tagged_by(harness_pid: u32) -> Vec<(u32, String)> {
    let prefix = format!("WAKEPROBE_RUN={harness_pid}-");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if env
            .split(|b| *b == 0)
            .any(|kv| kv.starts_with(prefix.as_bytes()))
        {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat.contains(") Z ") {
                continue; // a zombie holds nothing and is only waiting to be reaped
            }
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            found.push((pid, String::from_utf8_lossy(&cmd).replace('\0', " ")));
        }
    }
    found
}

/// Runs `cmd` within `limit` and checks it exited 0 (else shows its stderr) and left no
/// process behind; returns its output.
pub fn succeeds_leaving_nothing(cmd: Command, limit: Duration) -> Output {
    let (pid, output) = run_within(cmd, limit);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(tagged_by(pid), vec![], "processes left behind");
    output
}

/// Ctrl-C to a running harness: it exits 130 (else its stderr is shown) and leaves no process
/// behind; returns its output.
pub fn ctrl_c_leaves_nothing(child: std::process::Child) -> Output {
    let pid = child.id();
    signal(pid, libc::SIGINT);
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(tagged_by(pid), vec![], "processes left behind");
    output
}

/// Waits (bounded) until `probe` returns Some.
pub fn wait_for<T>(limit: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = probe() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Events of one kind (and agent, when given).
pub fn kind<'a>(events: &'a [Value], kind: &str, agent: Option<&str>) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["kind"] == kind && agent.is_none_or(|a| e["agent"] == a))
        .collect()
}

/// How many real-CLI processes the tests of one binary start at once. Each CLI costs a burst
/// of CPU as it starts; too many at once on a small machine stretches the timings the
/// verdicts depend on (a print-mode stall needs the work to outlive the CLI's ~5 s grace).
/// Timing-sensitive simulator tests that run many scenarios at once take a share too.
pub const CLI_SLOTS: usize = 10;

/// The slots free, and the queue of waiters by ticket: first come, first served, so a test
/// that needs many slots (the library's seven) is not passed over, for the whole suite, by
/// the stream of one- and two-slot tests that always fit in what is free.
struct Pool {
    free: usize,
    next_ticket: u64,
    serving: u64,
}

static POOL: std::sync::Mutex<Pool> = std::sync::Mutex::new(Pool {
    free: CLI_SLOTS,
    next_ticket: 0,
    serving: 0,
});
static CHANGED: std::sync::Condvar = std::sync::Condvar::new();

/// A share of the real-CLI slots, held until dropped.
pub struct Slots(usize);

/// Waits (bounded) for its turn and until `n` real-CLI slots are free, and takes them.
pub fn cli_slots(n: usize) -> Slots {
    let n = n.min(CLI_SLOTS);
    if n == 0 {
        return Slots(0); // nothing to wait for, and no turn to hold others up with
    }
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    let ticket = pool.next_ticket;
    pool.next_ticket += 1;
    while pool.serving != ticket || pool.free < n {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no real-CLI slot became free within 600 s");
        pool = CHANGED
            .wait_timeout(pool, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    pool.free -= n;
    pool.serving += 1;
    CHANGED.notify_all();
    Slots(n)
}

impl Drop for Slots {
    fn drop(&mut self) {
        POOL.lock().unwrap_or_else(|e| e.into_inner()).free += self.0;
        CHANGED.notify_all();
    }
}

/// The output of a running harness once it ends, within `limit` (else it is killed and the test
/// fails).
pub fn wait_output(child: std::process::Child, limit: Duration) -> Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| {
            signal(pid, libc::SIGKILL);
            panic!("wakeprobe did not end within {limit:?}");
        })
        .unwrap()
}
