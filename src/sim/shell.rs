//! Bash as real processes. A foreground command runs with its output captured and a deadline;
//! a background command runs in its own session (like the real CLI's), its stdout and stderr
//! going to the task's output file. Killing a task kills its whole process tree (SIGTERM to
//! every descendant found through `/proc`, then SIGKILL to what is left), as the real CLI does.
//!
//! The child-error and child-hang profiles inject their fault through `BASH_ENV`: a small file
//! every non-interactive bash of the command sources first, which installs an EXIT trap that
//! exits 3 (fail) or blocks forever (hang). So the command's own shells, including the one a
//! task tracker wraps, end (or never end) exactly as a faulty command would.

use crate::os::procs::{self, Signal};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::ChildFault;

/// Background process groups started by this process and not yet reaped, for the last-resort
/// kill. A reaped pid leaves the list at once ([`forget`]): pid numbers wrap within a minute or
/// two on a busy machine, and a stale one would name another program's process.
static STARTED: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Code(i32),
    Signal(i32),
}

impl Ended {
    pub fn from_status(status: std::process::ExitStatus) -> Ended {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(c), _) => Ended::Code(c),
            (None, Some(s)) => Ended::Signal(s),
            _ => Ended::Code(1),
        }
    }

    pub fn success(self) -> bool {
        self == Ended::Code(0)
    }

    /// The exit code the CLI reports (a signal as 128 + n).
    pub fn code(self) -> i32 {
        match self {
            Ended::Code(c) => c,
            Ended::Signal(s) => 128 + s,
        }
    }
}

/// Writes the BASH_ENV file for a fault into `dir` and returns its path.
pub fn fault_file(dir: &Path, fault: ChildFault) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let (name, body) = match fault {
        ChildFault::Fail => (
            "child-error.sh",
            "# claude-sim child-error: every shell of this background command fails at its end.\ntrap 'exit 3' EXIT\n",
        ),
        ChildFault::Hang => (
            "child-hang.sh",
            "# claude-sim child-hang: every shell of this background command blocks at its end.\ntrap 'while :; do sleep 3600; done' EXIT\n",
        ),
    };
    let path = dir.join(name);
    std::fs::write(&path, body)?;
    Ok(path)
}

/// Starts a background command: `bash -c COMMAND` in a new session, output to `output`.
pub fn spawn_background(
    command: &str,
    cwd: &Path,
    env: &[(String, String)],
    output: &Path,
) -> std::io::Result<tokio::process::Child> {
    spawn_detached(command, cwd, env, output, Stdout::ToOutput)
}

/// Where a detached command's stdout goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stdout {
    /// Appended to the output file, like stderr (a background Bash).
    ToOutput,
    /// A pipe the caller reads line by line (a Monitor's source; stderr still goes to the file).
    Piped,
}

/// Starts a Monitor's source: like [`spawn_background`], but stdout is a pipe whose lines are
/// the monitor's events (the caller copies them to the output file).
pub fn spawn_monitor(
    command: &str,
    cwd: &Path,
    env: &[(String, String)],
    output: &Path,
) -> std::io::Result<tokio::process::Child> {
    spawn_detached(command, cwd, env, output, Stdout::Piped)
}

fn spawn_detached(
    command: &str,
    cwd: &Path,
    env: &[(String, String)],
    output: &Path,
    stdout: Stdout,
) -> std::io::Result<tokio::process::Child> {
    if let Some(parent) = output.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(output)?;
    let err = file.try_clone()?;
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(match stdout {
            Stdout::ToOutput => Stdio::from(file),
            Stdout::Piped => Stdio::piped(),
        })
        .stderr(Stdio::from(err))
        .kill_on_drop(false);
    // SAFETY: setsid is async-signal-safe; it runs in the child between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let _ = rustix::process::setsid();
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    if let Some(pid) = child.id() {
        STARTED.lock().expect("started list").push(pid as i32);
    }
    Ok(child)
}

/// What a foreground command produced.
#[derive(Debug, Clone)]
pub struct Foreground {
    pub stdout: String,
    pub stderr: String,
    pub ended: Option<Ended>,
    pub timed_out: bool,
    pub interrupted: bool,
}

/// Runs a foreground command to its end, its deadline, or `cancel`; calls `on_slow` once if it
/// is still running after `slow_after`.
pub async fn run_foreground(
    command: &str,
    cwd: &Path,
    env: &[(String, String)],
    limit: Duration,
    slow_after: Duration,
    on_slow: impl FnOnce(),
    cancel: impl std::future::Future<Output = ()>,
) -> Foreground {
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Foreground {
                stdout: String::new(),
                stderr: format!("cannot run bash: {e}"),
                ended: Some(Ended::Code(127)),
                timed_out: false,
                interrupted: false,
            };
        }
    };
    let pid = child.id().map(|p| p as i32);
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let readers = tokio::spawn(async move {
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let _ = tokio::join!(out.read_to_end(&mut o), err.read_to_end(&mut e));
        (o, e)
    });
    let deadline = tokio::time::sleep(limit);
    let slow = tokio::time::sleep(slow_after);
    tokio::pin!(deadline, slow, cancel);
    let mut on_slow = Some(on_slow);
    let (ended, timed_out, interrupted) = loop {
        tokio::select! {
            status = child.wait() => break (status.ok().map(Ended::from_status), false, false),
            _ = &mut slow, if on_slow.is_some() => {
                if let Some(f) = on_slow.take() { f(); }
            }
            _ = &mut deadline => break (None, true, false),
            _ = &mut cancel => break (None, false, true),
        }
    };
    if ended.is_none() {
        // Like a background task's kill: SIGTERM to the tree (a tracker passes it on and
        // reports), SIGKILL to whatever is still there after the grace.
        if let Some(pid) = pid {
            kill_tree(pid, Signal::TERM);
        }
        if tokio::time::timeout(Duration::from_millis(1500), child.wait())
            .await
            .is_err()
        {
            if let Some(pid) = pid {
                kill_tree(pid, Signal::KILL);
            }
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
        }
    }
    let (o, e) = tokio::time::timeout(Duration::from_secs(2), readers)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    Foreground {
        stdout: String::from_utf8_lossy(&o).to_string(),
        stderr: String::from_utf8_lossy(&e).to_string(),
        ended,
        timed_out,
        interrupted,
    }
}

/// Sends `signal` to `pid`, its process group, and all its descendants.
pub fn kill_tree(pid: i32, signal: Signal) {
    let pid = pid as u32;
    procs::signal(pid, signal);
    for p in procs::descendants(pid) {
        procs::signal(p.pid, signal);
    }
    procs::signal_group(pid, signal);
}

/// A background command's leader was reaped: its pid is no longer ours to signal.
pub fn forget(pid: i32) {
    if let Ok(mut started) = STARTED.lock() {
        started.retain(|p| *p != pid);
    }
}

/// True while the process exists (and is not a zombie).
pub fn alive(pid: i32) -> bool {
    procs::alive(pid as u32)
}

/// Last resort at exit: SIGKILL every background group this process started.
pub fn kill_all_children() {
    let started = STARTED.lock().map(|s| s.clone()).unwrap_or_default();
    for pid in started {
        kill_tree(pid, Signal::KILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn foreground_captures_output_and_status() {
        let dir = tempfile::tempdir().unwrap();
        let f = run_foreground(
            "echo out; echo err >&2; exit 4",
            dir.path(),
            &[],
            Duration::from_secs(10),
            Duration::from_secs(10),
            || {},
            std::future::pending(),
        )
        .await;
        assert_eq!(f.stdout, "out\n");
        assert_eq!(f.stderr, "err\n");
        assert_eq!(f.ended, Some(Ended::Code(4)));
    }

    #[tokio::test]
    async fn a_deadline_kills_and_slow_commands_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let slow = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = slow.clone();
        let f = run_foreground(
            "sleep 30",
            dir.path(),
            &[],
            Duration::from_millis(300),
            Duration::from_millis(100),
            move || flag.store(true, std::sync::atomic::Ordering::SeqCst),
            std::future::pending(),
        )
        .await;
        assert!(f.timed_out && f.ended.is_none());
        assert!(slow.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[tokio::test]
    async fn faults_are_injected_through_bash_env_and_trees_die() {
        let dir = tempfile::tempdir().unwrap();
        let file = fault_file(dir.path(), ChildFault::Fail).unwrap();
        let env = vec![("BASH_ENV".to_string(), file.display().to_string())];
        let out = dir.path().join("t.output");
        // The inner bash (as a tracker would run it) fails too.
        let mut child =
            spawn_background("bash -c 'echo inner'; echo outer", dir.path(), &env, &out).unwrap();
        let status = child.wait().await.unwrap();
        assert_eq!(Ended::from_status(status), Ended::Code(3));
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "inner\nouter\n");

        let mut child = spawn_background("sleep 30 & sleep 30", dir.path(), &[], &out).unwrap();
        let pid = child.id().unwrap() as i32;
        // The shell forks its two sleeps right after it starts: wait (bounded) to see them.
        let mut tree = procs::descendants(pid as u32);
        for _ in 0..100 {
            if tree.len() >= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            tree = procs::descendants(pid as u32);
        }
        assert!(tree.len() >= 2, "{tree:?}");
        kill_tree(pid, Signal::TERM);
        let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(Ended::from_status(status), Ended::Signal(libc::SIGTERM));
        for p in tree.iter().map(|p| p.pid as i32) {
            for _ in 0..50 {
                if !alive(p) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(!alive(p), "{p} survived");
        }
    }
}
