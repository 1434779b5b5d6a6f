//! The messages helper processes send the harness over the run's Unix socket.
//!
//! The hook recorder, the task tracker and the process supervisor are separate processes; each
//! connects to `$WAKEPROBE_EVENTS`, writes one JSON line and closes. Each message carries the
//! sender's own reading of the shared monotonic clock, so the order of events does not depend
//! on how fast the harness reads its socket.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;

use super::ExitDesc;

/// Environment variable holding the socket path.
pub const EVENTS_ENV: &str = crate::os::env::RunVar::Events.name();

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "src", rename_all = "snake_case")]
pub enum WireMessage {
    /// A hook's raw stdin payload.
    Hook { t_ns: u64, payload: String },
    /// A tracked command started.
    TrackStart { t_ns: u64, name: String, pid: u32 },
    /// A tracked command ended.
    TrackEnd {
        t_ns: u64,
        name: String,
        pid: u32,
        exit: ExitDesc,
    },
    /// The supervisor reaped a process.
    Reaped {
        t_ns: u64,
        pid: u32,
        exit: ExitDesc,
        command: Option<String>,
        /// True for the CLI itself (the supervisor's direct child).
        cli: bool,
    },
    /// The supervisor killed the CLI for a crash fault (`killed`, which ended as `exit`) and
    /// started it again as `pid` (none, with `error`, when it could not).
    CliRestarted {
        t_ns: u64,
        killed: u32,
        exit: ExitDesc,
        pid: Option<u32>,
        error: Option<String>,
    },
    /// The supervisor was told to stop by a signal from outside the harness (a signal to the
    /// whole process tree, say); it is ending the run.
    SupervisorStopped { t_ns: u64, signal: i32 },
    /// One line between an integration (driver mode `command`) and the CLI it drives, as the
    /// CLI tap passed it on: `to_cli` for a line the integration wrote to the CLI's stdin,
    /// else one the CLI printed on its stdout.
    CliLine {
        t_ns: u64,
        to_cli: bool,
        line: String,
    },
    /// The CLI under the tap (driver mode `command`) exited: the CLI's own end, apart from the
    /// integration's (the supervisor's child there).
    TappedCliExited { t_ns: u64, exit: ExitDesc },
}

impl WireMessage {
    pub fn t_ns(&self) -> u64 {
        match self {
            WireMessage::Hook { t_ns, .. }
            | WireMessage::TrackStart { t_ns, .. }
            | WireMessage::TrackEnd { t_ns, .. }
            | WireMessage::Reaped { t_ns, .. }
            | WireMessage::CliRestarted { t_ns, .. }
            | WireMessage::SupervisorStopped { t_ns, .. }
            | WireMessage::CliLine { t_ns, .. }
            | WireMessage::TappedCliExited { t_ns, .. } => *t_ns,
        }
    }

    /// Appends the message to the run's fallback file, where the harness reads what a helper
    /// could not send (its socket gone); failures are ignored, as a helper's must be.
    pub fn append_to(&self, fallback: &Path) {
        if let Ok(mut line) = serde_json::to_vec(self) {
            line.push(b'\n');
            if let Ok(mut file) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(fallback)
            {
                let _ = file.write_all(&line);
            }
        }
    }

    /// Sends one message; failures are returned, never fatal to the sender's real work.
    pub fn send(&self, socket: &Path) -> std::io::Result<()> {
        let mut stream = UnixStream::connect(socket)?;
        let mut line = serde_json::to_vec(self).map_err(std::io::Error::other)?;
        line.push(b'\n');
        stream.write_all(&line)
    }
}
