//! The process table, read from `/proc`, and signals: descendants of a process, processes
//! carrying a run's environment tag, whether a pid is alive. Shared plumbing for the driver,
//! the sandbox sweep and the simulator.
//!
//! The tag (`WAKEPROBE_RUN=<id>` in the environment) is inherited by everything a run starts,
//! including tasks that moved to their own session, so it finds leftovers without matching
//! names.

use std::collections::HashMap;

#[derive(Debug, Clone)]
pub struct ProcInfo {
    pub pid: u32,
    pub ppid: u32,
    pub state: char,
    pub comm: String,
}

/// Every process visible in `/proc`.
pub fn list() -> Vec<ProcInfo> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(stat)
        .collect()
}

/// Parses `/proc/PID/stat`: `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
pub fn stat(pid: u32) -> Option<ProcInfo> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text[open + 1..close].to_string();
    let mut rest = text[close + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some(ProcInfo {
        pid,
        ppid,
        state,
        comm,
    })
}

/// All live (non-zombie) descendants of `root`, parents before children.
pub fn descendants(root: u32) -> Vec<ProcInfo> {
    let all = list();
    let mut children: HashMap<u32, Vec<&ProcInfo>> = HashMap::new();
    for p in &all {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut out = Vec::new();
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            queue.push(child.pid);
            if child.state != 'Z' {
                out.push((*child).clone());
            }
        }
    }
    out
}

/// The live descendants of `root` found through its threads' `children` lists (the kernel's
/// own record): a handful of files however many processes the machine runs, where
/// [`descendants`] reads all of `/proc`. Parents before children.
pub fn children_tree(root: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for thread in threads.flatten() {
            let children =
                std::fs::read_to_string(thread.path().join("children")).unwrap_or_default();
            for child in children
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
            {
                if alive(child) {
                    out.push(child);
                }
                queue.push(child);
            }
        }
    }
    out
}

/// The command line of a process, space-joined (empty for zombies and kernel threads).
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// Live processes whose environment holds exactly `KEY=VALUE`.
pub fn tagged(key: &str, value: &str) -> Vec<ProcInfo> {
    let needle = format!("{key}={value}");
    with_env(|kv| kv == needle.as_bytes())
}

/// Live processes whose environment has `KEY=` followed by `prefix`.
pub fn tagged_with_prefix(key: &str, prefix: &str) -> Vec<ProcInfo> {
    let needle = format!("{key}={prefix}");
    with_env(|kv| kv.starts_with(needle.as_bytes()))
}

fn with_env(matches: impl Fn(&[u8]) -> bool) -> Vec<ProcInfo> {
    list()
        .into_iter()
        .filter(|p| p.state != 'Z')
        .filter(|p| {
            std::fs::read(format!("/proc/{}/environ", p.pid))
                .map(|env| env.split(|c| *c == 0).any(&matches))
                .unwrap_or(false)
        })
        .collect()
}

pub use rustix::process::Signal;

/// Sends a signal; a process that is already gone is not an error.
pub fn signal(pid: u32, sig: Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

/// SIGTERM, SIGINT and SIGHUP, caught from the moment of [`StopSignals::catch`] (before the
/// child is started, so none is lost in between) and passed on to the child once it runs: a
/// helper that wraps a command lets the command decide how to end.
pub struct StopSignals(Option<signal_hook::iterator::Signals>);

impl StopSignals {
    pub fn catch() -> StopSignals {
        StopSignals(
            signal_hook::iterator::Signals::new([libc::SIGTERM, libc::SIGINT, libc::SIGHUP]).ok(),
        )
    }

    /// Passes every caught signal on to `pid`, from a thread of its own.
    pub fn forward_to(self, pid: u32) {
        let Some(mut signals) = self.0 else { return };
        std::thread::spawn(move || {
            for sig in signals.forever() {
                if let Some(sig) = Signal::from_named_raw(sig) {
                    signal(pid, sig);
                }
            }
        });
    }
}

/// Whether a process exists (a zombie counts; so does one we may not signal).
pub fn exists(pid: u32) -> bool {
    rustix::process::Pid::from_raw(pid as i32).is_some_and(|pid| {
        matches!(
            rustix::process::test_kill_process(pid),
            Ok(()) | Err(rustix::io::Errno::PERM)
        )
    })
}

/// A process held by a pidfd: a signal through it reaches that process or nothing, never one
/// that took its number later (pid numbers wrap within minutes on a busy machine).
#[derive(Debug)]
pub struct Pinned {
    pub pid: u32,
    fd: std::os::fd::OwnedFd,
}

/// Pins a live process; `None` if it is gone (or the kernel has no pidfds).
pub fn pin(pid: u32) -> Option<Pinned> {
    let raw = rustix::process::Pid::from_raw(pid as i32)?;
    let fd = rustix::process::pidfd_open(raw, rustix::process::PidfdFlags::empty()).ok()?;
    Some(Pinned { pid, fd })
}

impl Pinned {
    /// Sends a signal; a process that is already gone is not an error.
    pub fn signal(&self, sig: Signal) {
        let _ = rustix::process::pidfd_send_signal(&self.fd, sig);
    }
}

/// Signals a process group (a background command that leads its own group or session).
pub fn signal_group(leader: u32, sig: Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(leader as i32) {
        let _ = rustix::process::kill_process_group(pid, sig);
    }
}

/// True while the process exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|p| p.state != 'Z')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_children_and_tags() {
        let tag = format!("t{}", std::process::id());
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("WAKEPROBE_TEST_TAG", &tag)
            .spawn()
            .unwrap();
        let me = std::process::id();
        let found = descendants(me);
        assert!(
            found
                .iter()
                .any(|p| p.pid == child.id() && p.comm == "sleep")
        );
        // A process that has just exec'd shows its new name before its environment: the
        // kernel sets the name first. Poll (bounded) for the environment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let tagged = loop {
            let found = tagged("WAKEPROBE_TEST_TAG", &tag);
            if !found.is_empty() || std::time::Instant::now() > deadline {
                break found;
            }
            std::thread::yield_now();
        };
        assert_eq!(tagged.len(), 1);
        assert_eq!(tagged[0].pid, child.id());
        assert_eq!(cmdline(child.id()), "sleep 30");
        signal(child.id(), Signal::KILL);
        child.wait().unwrap();
        assert!(super::tagged("WAKEPROBE_TEST_TAG", &tag).is_empty());
    }

    /// A pinned process that has been reaped is never signalled through its number again,
    /// even when another process took it (root only: `ns_last_pid` hands the number over).
    #[test]
    fn a_pinned_process_is_never_confused_with_one_that_reused_its_pid() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pinned = pin(child.id()).expect("a live child");
        pinned.signal(Signal::STOP);
        let stopped = (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            stat(pinned.pid).is_some_and(|p| p.state == 'T')
        });
        assert!(stopped, "the signal reached the pinned process");
        child.kill().unwrap();
        child.wait().unwrap();
        let Some(mut bystander) = take_pid(pinned.pid) else {
            eprintln!(
                "skipped the reuse half: pid {} cannot be handed over (needs root)",
                pinned.pid
            );
            return;
        };
        pinned.signal(Signal::KILL);
        std::thread::sleep(std::time::Duration::from_millis(50));
        let fate = bystander.try_wait().unwrap();
        let _ = bystander.kill();
        let _ = bystander.wait();
        assert_eq!(fate, None, "the bystander that reused the pid was killed");
    }

    fn take_pid(pid: u32) -> Option<std::process::Child> {
        for _ in 0..50 {
            std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).ok()?;
            let mut child = std::process::Command::new("sleep").arg("30").spawn().ok()?;
            if child.id() == pid {
                return Some(child);
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        None
    }
}
