//! What the driver sends: stream-json lines on stdin (user messages and control requests; the
//! session's input is over when stdin closes), or lines typed in a terminal (`/exit` ends the
//! session; the terminal's own line discipline echoes what is typed). The readers turn them
//! into [`Input`]s on a channel; the engine acts on them.

use std::io::Read;

use serde_json::Value;
use tokio::sync::mpsc;

/// One thing the driver sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A user message (a typed turn in a terminal).
    User(String),
    /// A stream-json control request, with its id.
    Control { id: String, request: Value },
    /// `/exit` was typed.
    Exit,
    /// The input is over (stdin closed, the terminal went away).
    Closed,
}

pub type Inputs = mpsc::UnboundedSender<Input>;

/// Reads stdin on a plain thread (a blocking read that the process exit ends) and hands the
/// chunks over; `None` marks the end of the input.
fn stdin_chunks() -> mpsc::UnboundedReceiver<Option<Vec<u8>>> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buf = [0u8; 8192];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if tx.send(Some(buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = tx.send(None);
    });
    rx
}

/// Splits chunks into lines (LF, or CR for a terminal's Enter).
#[derive(Default)]
struct Lines {
    partial: Vec<u8>,
    cr_ends: bool,
}

impl Lines {
    fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        for &b in bytes {
            if b == b'\n' || (self.cr_ends && b == b'\r') {
                out.push(String::from_utf8_lossy(&std::mem::take(&mut self.partial)).to_string());
            } else {
                self.partial.push(b);
            }
        }
        out
    }
}

/// The text of a stream-json user message: a string, or the text of its text blocks.
pub fn user_text(message: &Value) -> Option<String> {
    match &message["content"] {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// Reads stream-json lines until stdin closes.
pub async fn read_stream_json(out: Inputs) {
    let mut chunks = stdin_chunks();
    let mut lines = Lines::default();
    while let Some(Some(chunk)) = chunks.recv().await {
        for line in lines.push(&chunk) {
            send_json_line(&out, line.trim());
        }
    }
    let rest = String::from_utf8_lossy(&lines.partial).to_string();
    send_json_line(&out, rest.trim());
    let _ = out.send(Input::Closed);
}

fn send_json_line(out: &Inputs, line: &str) {
    if line.is_empty() {
        return;
    }
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        eprintln!("claude-sim: ignoring a stdin line that is not JSON");
        return;
    };
    let input = match v["type"].as_str() {
        Some("user") => match user_text(&v["message"]) {
            Some(text) => Input::User(text),
            None => {
                eprintln!("claude-sim: ignoring a user message without text");
                return;
            }
        },
        Some("control_request") => Input::Control {
            id: v["request_id"].as_str().unwrap_or("").to_string(),
            request: v["request"].clone(),
        },
        _ => return,
    };
    let _ = out.send(input);
}

/// Reads typed lines (Enter is CR or LF) until `/exit` or the terminal goes away.
pub async fn read_terminal(out: Inputs) {
    let mut chunks = stdin_chunks();
    let mut lines = Lines {
        cr_ends: true,
        ..Lines::default()
    };
    while let Some(Some(chunk)) = chunks.recv().await {
        for line in lines.push(&chunk) {
            let text = line.trim().to_string();
            if text.is_empty() {
                continue;
            }
            if text == "/exit" || text == "/quit" {
                let _ = out.send(Input::Exit);
                return;
            }
            let _ = out.send(Input::User(text));
        }
    }
    let _ = out.send(Input::Closed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn user_text_reads_strings_and_blocks() {
        assert_eq!(user_text(&json!({"content": "hi"})).as_deref(), Some("hi"));
        assert_eq!(
            user_text(&json!({"content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]})).as_deref(),
            Some("a\nb")
        );
        assert_eq!(user_text(&json!({"content": 3})), None);
    }

    #[test]
    fn lines_split_on_lf_or_a_terminals_cr() {
        let mut l = Lines::default();
        assert_eq!(l.push(b"a\nb"), vec!["a"]);
        assert_eq!(l.push(b"c\n"), vec!["bc"]);
        let mut t = Lines {
            cr_ends: true,
            ..Lines::default()
        };
        assert_eq!(t.push(b"x\ry\n"), vec!["x", "y"]);
    }
}
