//! The per-run supervisor: a small process between the harness and the CLI that owns the
//! CLI's whole process tree.
//!
//! It makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`), so every process the CLI
//! orphans (background tasks in their own sessions included) is re-parented to it rather than
//! to init. It reports every process it reaps, with its exit status, to the run's socket. When
//! its lifeline (fd 3, a pipe from the harness) closes, because the run ended or the harness
//! died, it sends SIGTERM to every descendant, then SIGKILL after a grace period, reaps them
//! all and exits. Single-threaded and synchronous: it waits on a `signalfd` and the lifeline
//! with `poll`, never sleeping to synchronise.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::procs;
use crate::evidence::ExitDesc;
use crate::evidence::clock::monotonic_ns;
use crate::evidence::wire::WireMessage;

/// The descriptor the lifeline arrives on.
pub const LIFELINE_FD: RawFd = 3;
/// How long descendants get between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

pub struct SuperviseArgs {
    pub events: PathBuf,
    pub pty: bool,
    pub program: String,
    pub args: Vec<String>,
}

/// Runs the supervisor; returns the process exit code (the CLI's, when it ended by itself).
pub fn supervise(args: SuperviseArgs) -> i32 {
    // SAFETY: plain syscalls on this (single-threaded) process's own state.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        // Out of the harness's session: a terminal's Ctrl-C reaches the harness, which ends
        // the run in order, not the CLI directly.
        libc::setsid();
        libc::fcntl(LIFELINE_FD, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    let signals = match SignalFd::new(&[libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("wakeprobe supervisor: signalfd: {e}");
            return 70;
        }
    };
    let mut command = std::process::Command::new(&args.program);
    command.args(&args.args);
    let pty = args.pty;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let empty: libc::sigset_t = std::mem::zeroed();
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            if pty {
                libc::setsid();
                if libc::ioctl(0, libc::TIOCSCTTY as _, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let cli = match command.spawn() {
        Ok(child) => child.id(),
        Err(e) => {
            eprintln!("wakeprobe supervisor: cannot start {}: {e}", args.program);
            return 127;
        }
    };
    let mut state = Reaper {
        events: args.events,
        cli,
        cli_exit: None,
    };
    // The std Child handle is not used to wait: the reaper loop reaps by pid.
    loop {
        let mut fds = [
            libc::pollfd {
                fd: LIFELINE_FD,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: signals.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: poll on two descriptors we own.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        if fds[1].revents != 0 {
            let mut stop = false;
            for sig in signals.drain() {
                if sig == libc::SIGCHLD {
                    state.reap_all();
                } else {
                    stop = true;
                }
            }
            if stop {
                break;
            }
        }
        if fds[0].revents != 0 {
            break; // lifeline closed (or written to): end the run
        }
    }
    state.terminate_all(&signals);
    match state.cli_exit {
        Some(ExitDesc::Code(c)) => c,
        Some(ExitDesc::Signal(s)) => 128 + s,
        _ => 0,
    }
}

struct Reaper {
    events: PathBuf,
    cli: u32,
    cli_exit: Option<ExitDesc>,
}

impl Reaper {
    /// Reaps every exited child (orphans included) and reports each.
    fn reap_all(&mut self) {
        loop {
            // SAFETY: waitid into a zeroed siginfo we own; WNOWAIT leaves the zombie in place so
            // its name can still be read before it is reaped.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let rc = unsafe {
                libc::waitid(
                    libc::P_ALL,
                    0,
                    &mut info,
                    libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                )
            };
            // SAFETY: si_pid is valid for SIGCHLD-class siginfo filled by waitid.
            let pid = unsafe { info.si_pid() };
            if rc != 0 || pid == 0 {
                return;
            }
            let command = procs::stat(pid as u32).map(|p| p.comm);
            let mut status = 0;
            // SAFETY: reaping the child waitid just reported.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            let exit = ExitDesc::from_wait_status(status);
            let is_cli = pid as u32 == self.cli;
            if is_cli {
                self.cli_exit = Some(exit.clone());
            }
            let _ = WireMessage::Reaped {
                t_ns: monotonic_ns(),
                pid: pid as u32,
                exit,
                command,
                cli: is_cli,
            }
            .send(&self.events);
        }
    }

    /// SIGTERM to every descendant, SIGKILL after the grace period, until none is left.
    fn terminate_all(&mut self, signals: &SignalFd) {
        let me = std::process::id();
        for p in procs::descendants(me) {
            procs::signal(p.pid, libc::SIGTERM);
        }
        self.wait_until_empty(signals, GRACE);
        for _ in 0..20 {
            let left = procs::descendants(me);
            if left.is_empty() {
                break;
            }
            for p in left {
                procs::signal(p.pid, libc::SIGKILL);
            }
            self.wait_until_empty(signals, Duration::from_millis(200));
        }
        self.reap_all();
    }

    fn wait_until_empty(&mut self, signals: &SignalFd, limit: Duration) {
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
            let mut fd = libc::pollfd {
                fd: signals.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: poll on our signalfd; wakes on the next SIGCHLD or the deadline.
            unsafe { libc::poll(&mut fd, 1, left.as_millis().max(1) as i32) };
            let _ = signals.drain();
        }
    }
}

/// A `signalfd` for a set of blocked signals.
struct SignalFd {
    fd: OwnedFd,
}

impl SignalFd {
    fn new(signals: &[i32]) -> std::io::Result<SignalFd> {
        // SAFETY: building a sigset, blocking it for this thread, and creating a signalfd on it.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in signals {
                libc::sigaddset(&mut set, *s);
            }
            if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(SignalFd {
                fd: OwnedFd::from_raw_fd(fd),
            })
        }
    }

    /// Signals pending on the descriptor.
    fn drain(&self) -> Vec<i32> {
        let mut out = Vec::new();
        loop {
            // SAFETY: reading whole signalfd_siginfo records into a buffer of that type.
            let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
            let size = std::mem::size_of::<libc::signalfd_siginfo>();
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    &mut info as *mut _ as *mut libc::c_void,
                    size,
                )
            };
            if n != size as isize {
                return out;
            }
            out.push(info.ssi_signo as i32);
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
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two descriptors we then own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just created and are owned by nobody else.
        Ok(unsafe {
            Lifeline {
                read: Some(OwnedFd::from_raw_fd(fds[0])),
                write: Some(OwnedFd::from_raw_fd(fds[1])),
            }
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
        let read = self.read.as_ref().map(|fd| fd.as_raw_fd()).unwrap_or(-1);
        // SAFETY: dup2 between fork and exec is async-signal-safe; the new fd 3 has no
        // CLOEXEC, so the supervisor inherits it.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(read, LIFELINE_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        cmd
    }

    /// Drops the harness's copy of the read end once the supervisor has it.
    pub fn spawned(&mut self) {
        self.read = None;
    }

    /// Tells the supervisor to end the run.
    pub fn cut(&mut self) {
        self.write = None;
    }
}
