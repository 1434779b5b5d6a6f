//! The interactive driver's terminal: a pseudo-terminal, a screen emulator, and typing.
//!
//! Some behaviour exists only in the interactive CLI (real teammates among it), so the pty
//! driver runs the CLI on a pseudo-terminal as a user would: it answers the terminal queries a
//! TUI sends (cursor position, device attributes), keeps an emulated screen (`vt100`) as one
//! more evidence source, and types each turn as text, waits until the screen echoes it, then
//! presses Enter. Every wait is bounded.

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::evidence::clock::RunClock;
use crate::evidence::{Event, EventKind, Source};

use crate::backend::{TERMINAL_COLS as COLS, TERMINAL_ROWS as ROWS};
/// How long the screen must stay unchanged to count as settled.
const SETTLED: Duration = Duration::from_millis(800);
/// How long typing waits for the echo of what it typed.
const ECHO_LIMIT: Duration = Duration::from_secs(3);

/// The two ends of a fresh pseudo-terminal.
pub struct PtyPair {
    master: OwnedFd,
    slave: OwnedFd,
}

impl PtyPair {
    /// A pseudo-terminal of the size the CLI is run in.
    pub fn open() -> std::io::Result<PtyPair> {
        PtyPair::open_sized(ROWS, COLS)
    }

    /// A pseudo-terminal of `rows` x `cols`.
    pub fn open_sized(rows: u16, cols: u16) -> std::io::Result<PtyPair> {
        use rustix::fs::{Mode, OFlags};
        use rustix::pty::OpenptFlags;
        let master = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY)?;
        rustix::io::fcntl_setfd(&master, rustix::io::FdFlags::CLOEXEC)?;
        rustix::pty::grantpt(&master)?;
        rustix::pty::unlockpt(&master)?;
        let name = rustix::pty::ptsname(&master, Vec::new())?;
        let slave = rustix::fs::open(
            name.as_c_str(),
            OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        rustix::termios::tcsetwinsize(
            &master,
            rustix::termios::Winsize {
                ws_row: rows,
                ws_col: cols,
                ws_xpixel: 0,
                ws_ypixel: 0,
            },
        )?;
        Ok(PtyPair { master, slave })
    }

    /// A copy of the terminal end for the child's stdin, stdout or stderr.
    pub fn child_stdio(&self) -> std::io::Result<std::process::Stdio> {
        Ok(std::process::Stdio::from(self.slave.try_clone()?))
    }

    /// Closes the terminal end and returns the master, to read the screen's bytes directly.
    pub fn into_master(self) -> OwnedFd {
        drop(self.slave);
        self.master
    }

    /// Closes the harness's copy of the terminal end (so the master sees EOF when the child
    /// is gone) and splits the master into a writer and a reader sharing one screen.
    pub fn into_parts(self) -> std::io::Result<(PtyWriter, PtyReader)> {
        drop(self.slave);
        let flags = rustix::fs::fcntl_getfl(&self.master)?;
        rustix::fs::fcntl_setfl(&self.master, flags | rustix::fs::OFlags::NONBLOCK)?;
        let screen = Arc::new(Shared {
            state: Mutex::new(ScreenState {
                parser: vt100::Parser::new_with_callbacks(
                    std::num::NonZeroU16::new(ROWS).expect("rows > 0"),
                    std::num::NonZeroU16::new(COLS).expect("cols > 0"),
                    2000,
                    Queries::default(),
                ),
                last_output: None,
                snapshots: Vec::new(),
            }),
            changed: Notify::new(),
        });
        let writer = PtyWriter {
            fd: Arc::new(register(self.master.try_clone()?)?),
            screen: screen.clone(),
        };
        let reader = PtyReader {
            fd: register(self.master)?,
            screen,
        };
        Ok((writer, reader))
    }
}

/// Registers an owned descriptor with the reactor.
pub fn register(fd: OwnedFd) -> std::io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: the OwnedFd stays open and unchanged for as long as the AsyncFd owns it.
    unsafe { AsyncFd::register(fd) }.map_err(|e| e.into_parts().1)
}

struct Shared {
    state: Mutex<ScreenState>,
    changed: Notify,
}

struct ScreenState {
    parser: vt100::Parser<Queries>,
    last_output: Option<Instant>,
    snapshots: Vec<(f64, String)>,
}

/// Terminal queries seen in the output, waiting for an answer.
#[derive(Default)]
struct Queries {
    pending: Vec<Vec<u8>>,
}

impl vt100::Callbacks for Queries {
    fn unhandled_csi(
        &mut self,
        screen: &mut vt100::Screen,
        i1: Option<u8>,
        _i2: Option<u8>,
        params: &[&[u16]],
        c: char,
    ) {
        let first = params.first().and_then(|p| p.first()).copied();
        match (i1, c, first) {
            // Cursor position report.
            (None, 'n', Some(6)) => {
                let (row, col) = screen.cursor_position();
                self.pending
                    .push(format!("\x1b[{};{}R", row + 1, col + 1).into_bytes());
            }
            // Device status: "OK".
            (None, 'n', Some(5)) => self.pending.push(b"\x1b[0n".to_vec()),
            // Primary device attributes: a VT220-class terminal.
            (None, 'c', _) => self.pending.push(b"\x1b[?62;22c".to_vec()),
            // Kitty keyboard protocol query: not supported (no answer is also valid).
            _ => {}
        }
    }
}

pub struct PtyWriter {
    fd: Arc<AsyncFd<OwnedFd>>,
    screen: Arc<Shared>,
}

impl PtyWriter {
    async fn write_all(&self, mut bytes: &[u8]) -> std::io::Result<()> {
        while !bytes.is_empty() {
            let mut guard = self.fd.writable().await?;
            match guard.try_io(|fd| Ok(rustix::io::write(fd.get_ref(), bytes)?)) {
                Ok(Ok(n)) => bytes = &bytes[n..],
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => continue,
            }
        }
        Ok(())
    }

    fn contents(&self) -> String {
        self.screen
            .state
            .lock()
            .expect("screen lock")
            .parser
            .screen()
            .contents()
    }

    /// Waits until the TUI has drawn something and the screen has settled (bounded).
    pub async fn wait_ready(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let last = self.screen.state.lock().expect("screen lock").last_output;
            let now = Instant::now();
            if let Some(last) = last
                && now >= last + SETTLED
            {
                return;
            }
            if now >= deadline {
                return;
            }
            let wake = match last {
                Some(last) => (last + SETTLED).min(deadline),
                None => deadline,
            };
            let _ = tokio::time::timeout_at(wake, self.screen.changed.notified()).await;
        }
    }

    /// Types `text`, waits (bounded) for its echo on screen, then presses Enter.
    pub async fn type_line(&mut self, text: &str) -> std::io::Result<()> {
        self.wait_ready(Duration::from_secs(5)).await;
        let probe: String = text
            .lines()
            .last()
            .unwrap_or("")
            .chars()
            .rev()
            .take(12)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        // One line per turn: newlines inside a turn would submit it early.
        let flat = text.replace('\n', " ");
        self.write_all(flat.as_bytes()).await?;
        let deadline = Instant::now() + ECHO_LIMIT;
        while !probe.is_empty() && !self.contents().contains(probe.trim()) {
            if tokio::time::timeout_at(deadline, self.screen.changed.notified())
                .await
                .is_err()
            {
                break;
            }
        }
        self.write_all(b"\r").await
    }
}

pub struct PtyReader {
    fd: AsyncFd<OwnedFd>,
    screen: Arc<Shared>,
}

impl PtyReader {
    /// Starts reading the terminal into the screen and `raw` (the bytes, for the record).
    pub fn spawn(self, clock: RunClock, raw: PathBuf) -> ScreenHandle {
        let screen = self.screen.clone();
        let task = tokio::spawn(async move {
            let mut file = std::fs::File::create(&raw).ok();
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                let Ok(mut guard) = self.fd.readable().await else {
                    break;
                };
                let read = guard.try_io(|fd| Ok(rustix::io::read(fd.get_ref(), &mut buf)?));
                let n = match read {
                    Ok(Ok(0)) | Ok(Err(_)) => break, // EIO: the terminal's last user is gone
                    Ok(Ok(n)) => n,
                    Err(_would_block) => continue,
                };
                if let Some(f) = file.as_mut() {
                    use std::io::Write;
                    let _ = f.write_all(&buf[..n]);
                }
                let answers = {
                    let mut state = screen.state.lock().expect("screen lock");
                    state.parser.process(&buf[..n]);
                    state.last_output = Some(Instant::now());
                    std::mem::take(&mut state.parser.callbacks_mut().pending)
                };
                for answer in answers {
                    // A short answer to a terminal query; a full buffer only loses the answer.
                    let _ = rustix::io::write(self.fd.get_ref(), &answer);
                }
                screen.changed.notify_waiters();
            }
        });
        ScreenHandle {
            task,
            screen: self.screen,
            clock,
        }
    }
}

/// The running screen reader; [`ScreenHandle::finish`] turns it into evidence.
pub struct ScreenHandle {
    task: tokio::task::JoinHandle<()>,
    screen: Arc<Shared>,
    clock: RunClock,
}

impl ScreenHandle {
    /// Records what the screen shows now.
    pub fn snapshot(&self) {
        let mut state = self.screen.state.lock().expect("screen lock");
        let text = state.parser.screen().contents();
        state.snapshots.push((self.clock.now_ms(), text));
    }

    /// Stops reading (the CLI is gone by now) and returns the screen snapshots as events.
    pub async fn finish(self) -> Vec<Event> {
        let mut task = self.task;
        if tokio::time::timeout(Duration::from_secs(2), &mut task)
            .await
            .is_err()
        {
            task.abort();
        }
        let mut state = self.screen.state.lock().expect("screen lock");
        let last = state.parser.screen().contents();
        let t = self.clock.now_ms();
        state.snapshots.push((t, last));
        state
            .snapshots
            .iter()
            .map(|(t_ms, text)| Event {
                t_ms: *t_ms,
                source: Source::Screen,
                agent: None,
                kind: EventKind::Screen {
                    text: text.trim_end().to_string(),
                },
            })
            .collect()
    }
}
