//! Watching tracked processes with pidfds, to time their end even when they are SIGKILLed and
//! cannot report it themselves.

use tokio::sync::mpsc;

use super::pty;
use crate::evidence::clock::RunClock;
use crate::evidence::{Event, EventKind, ExitDesc, Source};

pub struct VanishWatch {
    tx: mpsc::UnboundedSender<Event>,
    rx: mpsc::UnboundedReceiver<Event>,
}

impl VanishWatch {
    pub fn new() -> VanishWatch {
        let (tx, rx) = mpsc::unbounded_channel();
        VanishWatch { tx, rx }
    }

    pub async fn recv(&mut self) -> Option<Event> {
        self.rx.recv().await
    }

    /// Reports `pid`'s end (as `vanished`) whenever it comes.
    pub fn watch(&self, pid: u32, name: String, clock: RunClock) {
        let tx = self.tx.clone();
        let Some(pid) = rustix::process::Pid::from_raw(pid as i32) else {
            return;
        };
        let Ok(fd) = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) else {
            return; // already gone, or no pidfd support: the tracker's own report stands
        };
        tokio::spawn(async move {
            let Ok(afd) = pty::register(fd) else {
                return;
            };
            if afd.readable().await.is_ok() {
                let _ = tx.send(Event {
                    t_ms: clock.now_ms(),
                    source: Source::Os,
                    agent: None,
                    kind: EventKind::ProcessExited {
                        pid: pid.as_raw_nonzero().get() as u32,
                        exit: ExitDesc::Vanished,
                        command: Some(format!("wp-track {name}")),
                    },
                });
            }
        });
    }
}
