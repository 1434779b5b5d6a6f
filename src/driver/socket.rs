//! The run's event socket: where the hook recorder, the task tracker and the supervisor report.
//!
//! Connections are handled one at a time, in accept order, each a single short message. That
//! makes [`EventSocket::flush`] exact: it sends a marker through the same socket and waits for
//! it, so every message sent before the call has been handed on when it returns.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::UnixListener;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;

use crate::evidence::wire::WireMessage;

const FLUSH_PREFIX: &str = "wakeprobe-flush ";
/// A sender that stalls mid-message is dropped after this.
const READ_LIMIT: Duration = Duration::from_secs(2);

pub struct EventSocket {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
    flusher: Flusher,
    ended: Arc<Mutex<HashMap<String, u64>>>,
}

/// Sends flush markers through the socket; shared by the driver and the fake API.
#[derive(Clone)]
struct Flusher {
    path: PathBuf,
    requests: UnboundedSender<(u64, oneshot::Sender<()>)>,
    next: Arc<AtomicU64>,
}

/// The tracked commands whose end a tracker reported, for the fake API's faults aimed at the
/// first request after one ended.
struct SocketWorkEnds {
    flusher: Flusher,
    ended: Arc<Mutex<HashMap<String, u64>>>,
}

impl crate::fake_api::fault::WorkEnds for SocketWorkEnds {
    fn ended(&self) -> Pin<Box<dyn Future<Output = HashMap<String, u64>> + Send + '_>> {
        Box::pin(async move {
            self.flusher.flush().await;
            self.ended.lock().expect("ended lock").clone()
        })
    }
}

impl EventSocket {
    /// Listens on `path`; every parsed message goes to `sink`, unparseable lines are logged.
    pub fn listen(path: &Path, sink: UnboundedSender<WireMessage>) -> std::io::Result<EventSocket> {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path)?;
        let (flush_tx, mut flush_rx) =
            tokio::sync::mpsc::unbounded_channel::<(u64, oneshot::Sender<()>)>();
        let ended = Arc::new(Mutex::new(HashMap::new()));
        let ended_in_task = ended.clone();
        let task = tokio::spawn(async move {
            let mut waiting: Vec<(u64, oneshot::Sender<()>)> = Vec::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((mut stream, _)) = accepted else { continue };
                        let mut buf = Vec::new();
                        let read = tokio::time::timeout(READ_LIMIT, stream.read_to_end(&mut buf)).await;
                        if read.is_err() {
                            tracing::warn!("event socket: a sender stalled; its message is dropped");
                        }
                        for line in String::from_utf8_lossy(&buf).lines().filter(|l| !l.trim().is_empty()) {
                            if let Some(id) = line.strip_prefix(FLUSH_PREFIX).and_then(|n| n.trim().parse::<u64>().ok()) {
                                if let Some(pos) = waiting.iter().position(|(w, _)| *w == id) {
                                    let (_, done) = waiting.swap_remove(pos);
                                    let _ = done.send(());
                                }
                                continue;
                            }
                            match serde_json::from_str::<WireMessage>(line) {
                                Ok(message) => {
                                    if let WireMessage::TrackEnd { name, t_ns, .. } = &message {
                                        ended_in_task.lock().expect("ended lock").insert(name.clone(), *t_ns);
                                    }
                                    let _ = sink.send(message);
                                }
                                Err(e) => tracing::warn!(%e, "event socket: unparseable message"),
                            }
                        }
                    }
                    request = flush_rx.recv() => match request {
                        Some(entry) => waiting.push(entry),
                        None => break,
                    }
                }
            }
        });
        Ok(EventSocket {
            path: path.to_path_buf(),
            task,
            flusher: Flusher {
                path: path.to_path_buf(),
                requests: flush_tx,
                next: Arc::new(AtomicU64::new(0)),
            },
            ended,
        })
    }

    /// Waits (bounded) until every message sent before this call has been passed on.
    pub async fn flush(&self) {
        self.flusher.flush().await;
    }

    /// Which tracked commands have ended, as the trackers reported it (see [`Flusher`]).
    pub fn work_ends(&self) -> Arc<dyn crate::fake_api::fault::WorkEnds> {
        Arc::new(SocketWorkEnds {
            flusher: self.flusher.clone(),
            ended: self.ended.clone(),
        })
    }

    /// Stops listening and removes the socket file (also done on drop).
    pub fn close(self) {}
}

impl Flusher {
    async fn flush(&self) {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (done_tx, done_rx) = oneshot::channel();
        if self.requests.send((id, done_tx)).is_err() {
            return;
        }
        let path = self.path.clone();
        let sent = tokio::task::spawn_blocking(move || {
            use std::io::Write;
            std::os::unix::net::UnixStream::connect(&path)
                .and_then(|mut s| s.write_all(format!("{FLUSH_PREFIX}{id}\n").as_bytes()))
        })
        .await;
        if matches!(sent, Ok(Ok(()))) {
            let _ = tokio::time::timeout(Duration::from_secs(5), done_rx).await;
        }
    }
}

impl Drop for EventSocket {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::ExitDesc;

    #[tokio::test]
    async fn messages_arrive_in_order_before_a_flush_returns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.sock");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let socket = EventSocket::listen(&path, tx).unwrap();
        let p = path.clone();
        tokio::task::spawn_blocking(move || {
            for pid in 0..20 {
                WireMessage::TrackStart {
                    t_ns: pid,
                    name: "x".into(),
                    pid: pid as u32,
                }
                .send(&p)
                .unwrap();
            }
            WireMessage::TrackEnd {
                t_ns: 99,
                name: "x".into(),
                pid: 1,
                exit: ExitDesc::Code(0),
            }
            .send(&p)
            .unwrap();
        })
        .await
        .unwrap();
        std::os::unix::net::UnixStream::connect(&path)
            .map(|mut s| {
                use std::io::Write;
                s.write_all(b"not json\n").unwrap();
            })
            .unwrap();
        socket.flush().await;
        let mut got = Vec::new();
        while let Ok(m) = rx.try_recv() {
            got.push(m.t_ns());
        }
        assert_eq!(got.len(), 21);
        assert!(
            got.windows(2).all(|w| w[0] < w[1]),
            "accept order kept: {got:?}"
        );
        socket.close();
        assert!(!path.exists());
    }
}
