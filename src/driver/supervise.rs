//! The per-run supervisor: a small process between the harness and the CLI that owns the
//! CLI's whole process tree.
//!
//! It makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`), so every process the CLI
//! orphans (background tasks in their own sessions included) is re-parented to it rather than
//! to init. It reports every process it reaps, with its exit status, to the run's socket. When
//! its lifeline (fd 3, a pipe from the harness) closes, because the run ended or the harness
//! died, it sends SIGTERM to every descendant, then SIGKILL after a grace period, reaps them
//! all and exits. A SIGTERM, SIGINT or SIGHUP from outside does the same, and is reported
//! first, so the run is recorded as interrupted. The harness also writes [`Command`]s on the
//! lifeline: a crash fault's restart of the CLI. Single-threaded and synchronous: it waits on
//! a self-pipe that signals write to, and on the lifeline, with `poll`, never sleeping to
//! synchronise.

use std::os::fd::{AsFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::process::{Pid, WaitOptions};

use crate::evidence::ExitDesc;
use crate::evidence::clock::monotonic_ns;
use crate::evidence::wire::WireMessage;
use crate::os::procs::{self, Signal};

/// The descriptor the lifeline arrives on.
pub const LIFELINE_FD: RawFd = 3;
/// How long descendants get between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);
/// How long a crash waits for the killed CLI before starting the next one.
const RESTART_REAP_LIMIT: Duration = Duration::from_secs(5);
/// The signals that end a run from outside the harness.
const STOP_SIGNALS: [i32; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

pub struct SuperviseArgs {
    pub events: PathBuf,
    pub pty: bool,
    pub program: String,
    pub args: Vec<String>,
}

/// Runs the supervisor; returns the process exit code (the CLI's, when it ended by itself).
pub fn supervise(args: SuperviseArgs) -> i32 {
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    // Out of the harness's session: a terminal's Ctrl-C reaches the harness, which ends the run
    // in order, not the CLI directly.
    let _ = rustix::process::setsid();
    // SAFETY: fd 3 is the lifeline the harness passed; this process adopts and owns it.
    let lifeline = unsafe { OwnedFd::from_raw_fd(LIFELINE_FD) };
    let _ = rustix::io::fcntl_setfd(&lifeline, rustix::io::FdFlags::CLOEXEC);
    let wake = match Wakeup::new() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("wakeprobe supervisor: signal handling: {e}");
            return 70;
        }
    };
    let cli = match spawn_cli(&args, &[]) {
        Ok(pid) => pid,
        Err(e) => {
            eprintln!("wakeprobe supervisor: cannot start {}: {e}", args.program);
            return 127;
        }
    };
    let mut state = Reaper {
        events: args.events.clone(),
        cli,
        cli_exit: None,
    };
    loop {
        let mut fds = [
            PollFd::new(&lifeline, PollFlags::IN),
            PollFd::new(&wake.read, PollFlags::IN),
        ];
        if poll(&mut fds, None).is_err() {
            continue; // EINTR: a signal arrived; the self-pipe has it
        }
        let (lifeline_ready, signalled) =
            (!fds[0].revents().is_empty(), !fds[1].revents().is_empty());
        if signalled {
            wake.drain();
            state.reap_all();
        }
        if reported_stop(&wake, &state.events) {
            break;
        }
        if lifeline_ready {
            let Some(commands) = read_commands(&lifeline) else {
                break; // lifeline closed (or garbled): end the run
            };
            for Command::Restart { extra_args } in commands {
                state.restart(&args, &extra_args, &wake);
            }
            // A stop signal may have come while the restart waited on the killed CLI.
            if reported_stop(&wake, &state.events) || state.cli == 0 {
                break; // stopped, or the restart could not start the CLI
            }
        }
    }
    state.terminate_all(&wake);
    match state.cli_exit {
        Some(ExitDesc::Code(c)) => c,
        Some(ExitDesc::Signal(s)) => 128 + s,
        _ => 0,
    }
}

/// Whether a signal from outside the harness came; if so it is reported first, so the run
/// is recorded as interrupted, never as the CLI's doing.
fn reported_stop(wake: &Wakeup, events: &Path) -> bool {
    let Some(signal) = wake.stop_signal() else {
        return false;
    };
    let _ = WireMessage::SupervisorStopped {
        t_ns: monotonic_ns(),
        signal,
    }
    .send(events);
    true
}

/// What the harness asks of the supervisor over the lifeline, one JSON line each.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum Command {
    /// SIGKILL to the CLI alone (its orphans live on, as after a real crash), then the same
    /// command again with `extra_args` after its own (`--continue`).
    Restart { extra_args: Vec<String> },
}

/// The commands waiting on the lifeline; `None` once it is closed, or when what came is not a
/// command (a harness that garbles its lifeline gets the run ended, not guessed at).
fn read_commands(lifeline: &OwnedFd) -> Option<Vec<Command>> {
    let mut buf = [0u8; 4096];
    let n = rustix::io::read(lifeline, &mut buf)
        .ok()
        .filter(|n| *n > 0)?;
    // Each command is one short write (under PIPE_BUF, so it arrives whole).
    std::str::from_utf8(&buf[..n])
        .ok()?
        .lines()
        .map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Starts the CLI; in a pty it leads its own session with the terminal as its controlling one.
fn spawn_cli(args: &SuperviseArgs, extra_args: &[String]) -> std::io::Result<u32> {
    let mut command = std::process::Command::new(&args.program);
    command.args(&args.args).args(extra_args);
    if args.pty {
        // SAFETY: setsid and TIOCSCTTY are async-signal-safe system calls, made in the child
        // between fork and exec.
        unsafe {
            command.pre_exec(|| {
                rustix::process::setsid()?;
                rustix::process::ioctl_tiocsctty(std::os::fd::BorrowedFd::borrow_raw(0))?;
                Ok(())
            });
        }
    }
    // The std Child handle is not used to wait: the reaper loop reaps by pid.
    Ok(command.spawn()?.id())
}

/// A self-pipe that SIGCHLD and the stop signals write to, and which stop signal came.
struct Wakeup {
    read: OwnedFd,
    stops: Vec<(i32, Arc<AtomicBool>)>,
}

impl Wakeup {
    fn new() -> std::io::Result<Wakeup> {
        let (read, write) = rustix::pipe::pipe_with(
            rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK,
        )?;
        signal_hook::low_level::pipe::register(libc::SIGCHLD, write.try_clone()?)?;
        let mut stops = Vec::new();
        for signal in STOP_SIGNALS {
            let flag = Arc::new(AtomicBool::new(false));
            signal_hook::flag::register(signal, flag.clone())?;
            signal_hook::low_level::pipe::register(signal, write.try_clone()?)?;
            stops.push((signal, flag));
        }
        Ok(Wakeup { read, stops })
    }

    /// Empties the pipe (its bytes only say "look").
    fn drain(&self) {
        let mut buf = [0u8; 64];
        while matches!(rustix::io::read(&self.read, &mut buf), Ok(n) if n > 0) {}
    }

    /// The stop signal that arrived, if any.
    fn stop_signal(&self) -> Option<i32> {
        self.stops
            .iter()
            .find(|(_, flag)| flag.load(Ordering::SeqCst))
            .map(|(signal, _)| *signal)
    }

    /// Waits until a signal arrives or `limit` passes.
    fn wait(&self, limit: Duration) {
        let mut fds = [PollFd::new(&self.read, PollFlags::IN)];
        let timeout = Timespec::try_from(limit).unwrap_or(Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        });
        let _ = poll(&mut fds, Some(&timeout));
        self.drain();
    }
}

/// How an exit status reads.
fn exit_of(status: rustix::process::WaitStatus) -> ExitDesc {
    match (status.exit_status(), status.terminating_signal()) {
        (Some(code), _) => ExitDesc::Code(code),
        (None, Some(signal)) => ExitDesc::Signal(signal),
        _ => ExitDesc::Vanished,
    }
}

/// Reaps `pid` once it has exited, waiting at most `limit` (a SIGKILLed process stuck in the
/// kernel may take a while); `Vanished` if it did not end in time.
fn reap_one(pid: u32, wake: &Wakeup, limit: Duration) -> ExitDesc {
    let Some(target) = Pid::from_raw(pid as i32) else {
        return ExitDesc::Vanished;
    };
    let deadline = Instant::now() + limit;
    loop {
        match rustix::process::waitpid(Some(target), WaitOptions::NOHANG) {
            Ok(Some((_, status))) => return exit_of(status),
            Ok(None) => {}
            Err(_) => return ExitDesc::Vanished,
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return ExitDesc::Vanished;
        }
        wake.wait(left); // wakes on the next SIGCHLD, or at the deadline
    }
}

/// An exited child not yet reaped, if there is one (left for `waitpid` to reap).
fn next_exited() -> Option<u32> {
    // SAFETY: `waitid` only writes into `info`, a zeroed siginfo_t we own; WNOWAIT leaves the
    // child a zombie, so its name can still be read.
    let pid = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        if libc::waitid(libc::P_ALL, 0, &mut info, flags) != 0 {
            return None;
        }
        info.si_pid()
    };
    u32::try_from(pid).ok().filter(|p| *p > 0)
}

struct Reaper {
    events: PathBuf,
    cli: u32,
    cli_exit: Option<ExitDesc>,
}

impl Reaper {
    /// Reaps every exited child (orphans included) and reports each, with the name its zombie
    /// still shows. Each one is looked at before it is reaped (`waitid` with `WNOWAIT`), not
    /// found by scanning the process table: a scan per exit costs every supervisor on a busy
    /// machine a read of every process there.
    fn reap_all(&mut self) {
        while let Some(exited) = next_exited() {
            let comm = procs::stat(exited).map(|p| p.comm);
            let Some(pid) = Pid::from_raw(exited as i32) else {
                break;
            };
            match rustix::process::waitpid(Some(pid), WaitOptions::NOHANG) {
                Ok(Some((_, status))) => self.report(exited, status, comm),
                _ => break,
            }
        }
        // Any child `waitid` could not name.
        while let Ok(Some((pid, status))) = rustix::process::wait(WaitOptions::NOHANG) {
            self.report(pid.as_raw_nonzero().get() as u32, status, None);
        }
    }

    fn report(&mut self, pid: u32, status: rustix::process::WaitStatus, command: Option<String>) {
        let exit = exit_of(status);
        let is_cli = pid == self.cli;
        if is_cli {
            self.cli_exit = Some(exit.clone());
        }
        let _ = WireMessage::Reaped {
            t_ns: monotonic_ns(),
            pid,
            exit,
            command,
            cli: is_cli,
        }
        .send(&self.events);
    }

    /// The harness's crash: SIGKILL to the CLI alone, reaped here (it is not reported as the
    /// CLI's exit: the run goes on), then the CLI started again with `extra_args`; the
    /// message says both. Nothing when the CLI already ended by itself (the run is ending).
    /// If the CLI cannot be started again, `cli` is 0 and the run ends.
    fn restart(&mut self, args: &SuperviseArgs, extra_args: &[String], wake: &Wakeup) {
        if self.cli_exit.is_some() || self.cli == 0 {
            return;
        }
        let killed = self.cli;
        procs::signal(killed, Signal::KILL);
        let exit = reap_one(killed, wake, RESTART_REAP_LIMIT);
        let (pid, error) = match spawn_cli(args, extra_args) {
            Ok(pid) => (Some(pid), None),
            Err(e) => (None, Some(format!("cannot start {}: {e}", args.program))),
        };
        self.cli = pid.unwrap_or(0);
        let _ = WireMessage::CliRestarted {
            t_ns: monotonic_ns(),
            killed,
            exit,
            pid,
            error,
        }
        .send(&self.events);
        // Exits that came while this waited (their SIGCHLD bytes were drained).
        self.reap_all();
    }

    /// SIGTERM to every descendant, SIGKILL after the grace period, until none is left.
    fn terminate_all(&mut self, wake: &Wakeup) {
        let me = std::process::id();
        for p in procs::descendants(me) {
            procs::signal(p.pid, Signal::TERM);
        }
        self.wait_until_empty(wake, GRACE);
        for _ in 0..20 {
            let left = procs::descendants(me);
            if left.is_empty() {
                break;
            }
            for p in left {
                procs::signal(p.pid, Signal::KILL);
            }
            self.wait_until_empty(wake, Duration::from_millis(200));
        }
        self.reap_all();
    }

    fn wait_until_empty(&mut self, wake: &Wakeup, limit: Duration) {
        let deadline = Instant::now() + limit;
        let me = std::process::id();
        loop {
            self.reap_all();
            if procs::descendants(me).is_empty() {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            wake.wait(left); // wakes on the next SIGCHLD, or at the deadline
        }
    }
}

/// The harness's end: the supervisor command line, and the lifeline that stops it.
pub struct Lifeline {
    write: Option<OwnedFd>,
    read: Option<OwnedFd>,
}

impl Lifeline {
    pub fn new() -> std::io::Result<Lifeline> {
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        Ok(Lifeline {
            read: Some(read),
            write: Some(write),
        })
    }

    /// Builds the supervisor command: `wakeprobe __supervise ... -- PROGRAM ARGS`, with the
    /// lifeline's read end as its fd 3.
    pub fn command(
        &mut self,
        wakeprobe: &Path,
        events: &Path,
        pty: bool,
        program: &Path,
        args: &[String],
    ) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(wakeprobe);
        cmd.arg("__supervise").arg("--events").arg(events);
        if pty {
            cmd.arg("--pty");
        }
        cmd.arg("--").arg(program).args(args);
        let read = self
            .read
            .as_ref()
            .and_then(|fd| fd.try_clone().ok())
            .map(std::sync::Arc::new);
        // SAFETY: dup2 between fork and exec is async-signal-safe; the new fd 3 has no
        // CLOEXEC, so the supervisor inherits it.
        unsafe {
            cmd.pre_exec(move || {
                let Some(read) = &read else {
                    return Err(std::io::Error::other("no lifeline"));
                };
                let mut target = OwnedFd::from_raw_fd(LIFELINE_FD);
                let result = rustix::io::dup2(read.as_fd(), &mut target);
                std::mem::forget(target); // fd 3 must stay open across exec
                result.map_err(Into::into)
            });
        }
        cmd
    }

    /// Drops the harness's copy of the read end once the supervisor has it.
    pub fn spawned(&mut self) {
        self.read = None;
    }

    /// Asks the supervisor for `command`; false when the lifeline is cut or the write failed.
    pub fn send(&self, command: &Command) -> bool {
        let Some(write) = &self.write else {
            return false;
        };
        let mut line = serde_json::to_vec(command).unwrap_or_default();
        line.push(b'\n');
        // One write under PIPE_BUF: the supervisor reads it whole.
        matches!(rustix::io::write(write, &line), Ok(n) if n == line.len())
    }

    /// Tells the supervisor to end the run.
    pub fn cut(&mut self) {
        self.write = None;
    }
}
