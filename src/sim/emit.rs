//! The simulator's stdout: stream-json lines (one JSON object a line, flushed at once, each
//! stamped with `uuid` and `session_id` like the real CLI's), or, in an interactive terminal, a
//! plain transcript of the conversation with the `? for shortcuts` footer that tells a driver
//! the prompt is ready. A closed stdout is noticed and ends the session.

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutMode {
    /// `--output-format stream-json`.
    StreamJson,
    /// `--output-format text` (print mode): only the final answer.
    Text,
    /// An interactive terminal.
    Screen,
}

pub struct Out {
    pub mode: OutMode,
    session_id: String,
    lock: Mutex<()>,
    broken: AtomicBool,
}

impl Out {
    pub fn new(mode: OutMode, session_id: &str) -> Out {
        Out {
            mode,
            session_id: session_id.to_string(),
            lock: Mutex::new(()),
            broken: AtomicBool::new(false),
        }
    }

    /// True once a write failed (the reader went away).
    pub fn broken(&self) -> bool {
        self.broken.load(Ordering::SeqCst)
    }

    fn write(&self, text: &str) {
        let _guard = self.lock.lock().expect("stdout lock");
        let mut stdout = std::io::stdout().lock();
        if stdout
            .write_all(text.as_bytes())
            .and_then(|_| stdout.flush())
            .is_err()
        {
            self.broken.store(true, Ordering::SeqCst);
        }
    }

    /// One stream-json line; adds `uuid` and `session_id` unless the line has them (or is a
    /// control response, which carries neither).
    pub fn line(&self, mut v: Value) {
        if self.mode != OutMode::StreamJson {
            return;
        }
        if let Some(map) = v.as_object_mut()
            && map.get("type").and_then(Value::as_str) != Some("control_response")
        {
            map.entry("uuid")
                .or_insert_with(|| super::ids::uuid().into());
            map.entry("session_id")
                .or_insert_with(|| self.session_id.clone().into());
        }
        let mut text = v.to_string();
        text.push('\n');
        self.write(&text);
    }

    /// Text for a terminal (interactive) or the final answer (`--output-format text`).
    pub fn screen(&self, text: &str) {
        if self.mode == OutMode::StreamJson {
            return;
        }
        let mut t = text.replace('\n', "\r\n");
        t.push_str("\r\n");
        self.write(&t);
    }

    /// The prompt footer an interactive driver waits for.
    pub fn ready(&self) {
        if self.mode == OutMode::Screen {
            self.write("\r\n> \r\n  ? for shortcuts\r\n");
        }
    }
}
