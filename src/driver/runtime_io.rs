//! The channels a runtime other than Claude Code adds to a run (its row in `crate::runtime`
//! says which): the prompt on its standard input, a server it opens (fed over HTTP, its event
//! stream read), and the lines its observer plugin appends to a file in the run's evidence
//! folder. Every line reaches the recorder on one channel, with where it came from.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::input::InputSink;
use super::netns::Netns;
use crate::evidence::clock::RunClock;
use crate::evidence::runtime::Origin;
use crate::evidence::runtime::RuntimeEvidence;
use crate::runtime::opencode::serve::{self, Feed, Lines, Server};
use crate::runtime::{Adapter, StdinUse};
use crate::scenario::DriverMode;

/// How often a growing plugin file is read.
const TAIL_EVERY: Duration = Duration::from_millis(50);

/// The runtime's own channels of one run.
#[derive(Default)]
pub struct RuntimeIo {
    /// Stops the plugin file's reader, which then reads what is left and ends.
    tail_stop: Option<watch::Sender<bool>>,
    tail: Option<JoinHandle<()>>,
    /// The server's `/event` reader.
    events: Option<JoinHandle<()>>,
}

impl RuntimeIo {
    /// Reads the plugin's file `path` as it grows, each line to `lines`.
    pub fn tail(&mut self, path: PathBuf, lines: Lines, clock: RunClock) {
        let (stop, stopped) = watch::channel(false);
        self.tail_stop = Some(stop);
        self.tail = Some(tokio::spawn(tail_file(path, lines, clock, stopped)));
    }

    /// Starts reading the server's events once it listens; returns the feed that drives it.
    pub fn serve(&mut self, port: u16, netns: &Netns, ready: Ready, clock: RunClock) -> Feed {
        let netns = netns.clone();
        let server = Server {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            connect: Arc::new(move |addr| netns.connect(addr)),
        };
        let (connected_tx, connected_rx) = watch::channel(false);
        self.events = Some(tokio::spawn(serve::read_events(
            server.clone(),
            ready.listening,
            connected_tx,
            ready.lines.clone(),
            ready.raw,
            clock,
        )));
        Feed::new(server, connected_rx, ready.lines, clock)
    }

    /// Ends the readers once the runtime is gone: the plugin's file is read to its end, the
    /// event stream (closed with the server) let go.
    pub async fn finish(&mut self) {
        if let Some(stop) = self.tail_stop.take() {
            let _ = stop.send(true);
        }
        if let Some(tail) = self.tail.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), tail).await;
        }
        if let Some(events) = self.events.take() {
            events.abort();
        }
    }
}

/// What the event reader of a served session needs.
pub struct Ready {
    /// Turns true at the server's "listening" line.
    pub listening: watch::Receiver<bool>,
    pub lines: Lines,
    /// Where the stream's raw bytes go.
    pub raw: PathBuf,
}

/// Writes the prompt to the runtime's standard input and closes it.
pub fn feed_prompt(mut stdin: tokio::process::ChildStdin, prompt: String) {
    tokio::spawn(async move {
        let _ = stdin.write_all(prompt.as_bytes()).await;
        let _ = stdin.write_all(b"\n").await;
        let _ = stdin.shutdown().await;
    });
}

/// Reads complete lines of `path` as they are appended, until `stop` and then to the end.
async fn tail_file(path: PathBuf, lines: Lines, clock: RunClock, mut stop: watch::Receiver<bool>) {
    let mut offset = 0u64;
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let stopping = *stop.borrow();
        offset = read_new(&path, offset, &mut partial, &lines, clock).await;
        if stopping {
            break;
        }
        let _ = tokio::time::timeout(TAIL_EVERY, stop.changed()).await;
    }
}

/// Sends the complete lines appended to `path` since `offset`; returns the new offset.
async fn read_new(
    path: &Path,
    offset: u64,
    partial: &mut Vec<u8>,
    lines: &Lines,
    clock: RunClock,
) -> u64 {
    let Ok(mut file) = tokio::fs::File::open(path).await else {
        return offset;
    };
    if file.seek(std::io::SeekFrom::Start(offset)).await.is_err() {
        return offset;
    }
    let mut buf = Vec::new();
    let Ok(n) = file.read_to_end(&mut buf).await else {
        return offset;
    };
    partial.extend_from_slice(&buf);
    while let Some(nl) = partial.iter().position(|b| *b == b'\n') {
        let line: Vec<u8> = partial.drain(..=nl).collect();
        let text = String::from_utf8_lossy(&line).trim_end().to_string();
        if !text.is_empty() {
            let _ = lines.send((clock.now_ms(), Origin::Plugin, text));
        }
    }
    offset + n as u64
}

/// What a runtime's channels need of a launched run.
pub struct Wiring<'a> {
    pub adapter: &'static Adapter,
    /// How the CLI's standard input is used, and its server's port (a mode that serves).
    pub started: (StdinUse, Option<u16>),
    /// The driver's input, replaced by the server's feed in a served session.
    pub input: &'a mut InputSink,
    pub raw_dir: &'a Path,
    pub netns: &'a Netns,
    /// Turns true at the server's "listening" line.
    pub listening: watch::Receiver<bool>,
    pub clock: RunClock,
    /// The prompt with the main agent's tag.
    pub prompt: &'a str,
    /// The supervisor, whose child the CLI is.
    pub supervisor: u32,
    pub mode: DriverMode,
    /// The run clock's zero, unix ms.
    pub origin_unix_ms: f64,
}

/// The runtime's channels of a launched run: its lines, their readers, its evidence reader.
pub struct Wired {
    pub lines: mpsc::UnboundedReceiver<(f64, Origin, String)>,
    pub io: RuntimeIo,
    pub evidence: Option<Box<dyn RuntimeEvidence>>,
}

/// Opens what the runtime's row asks for: the plugin's file read as it grows, the prompt on
/// stdin, a server fed over HTTP with its event stream read. Claude Code's row asks for none.
pub fn wire(w: Wiring) -> Wired {
    let (tx, lines) = mpsc::unbounded_channel();
    let mut io = RuntimeIo::default();
    if let Some(file) = w.adapter.plugin_file {
        io.tail(w.raw_dir.join(file), tx.clone(), w.clock);
    }
    match w.started {
        (StdinUse::Prompt, _) => {
            if let InputSink::Stdin(stdin) = std::mem::replace(w.input, InputSink::None) {
                feed_prompt(stdin, w.prompt.to_string());
            }
        }
        (_, Some(port)) => {
            let ready = Ready {
                listening: w.listening,
                lines: tx.clone(),
                raw: w.raw_dir.join("event.sse"),
            };
            let feed = io.serve(port, w.netns, ready, w.clock);
            *w.input = InputSink::Server {
                feed: Box::new(feed),
                supervisor: w.supervisor,
            };
        }
        _ => {}
    }
    Wired {
        lines,
        io,
        evidence: (w.adapter.evidence)(w.origin_unix_ms, w.mode),
    }
}
