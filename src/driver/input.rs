//! Where the driver's input goes: nowhere (print mode), JSON lines on stdin (a kept-alive
//! stream-json session), the integration protocol's lines on stdin (mode `command`:
//! `evidence::integration::InputLine`), typed keys (a pseudo-terminal), or a runtime's server
//! (opencode's `serve`: prompts, aborts, and the dispose that ends it).

use tokio::io::AsyncWriteExt;

use super::pty;
use crate::evidence::integration::{Answer, InputLine};
use crate::scenario::Control;

pub enum InputSink {
    None,
    Stdin(tokio::process::ChildStdin),
    /// An integration's stdin (`schema/integration-input.schema.json`).
    Integration(tokio::process::ChildStdin),
    Pty(pty::PtyWriter),
    /// A served session; `supervisor` is the pid whose child the server is.
    Server {
        feed: Box<crate::runtime::opencode::serve::Feed>,
        supervisor: u32,
    },
}

impl InputSink {
    /// The same pipe, written in the integration protocol.
    pub fn speaking_integration(self) -> InputSink {
        match self {
            InputSink::Stdin(stdin) => InputSink::Integration(stdin),
            other => other,
        }
    }

    pub async fn send(&mut self, text: &str) -> std::io::Result<()> {
        match self {
            InputSink::None => Ok(()),
            InputSink::Stdin(stdin) => {
                let line = serde_json::json!({
                    "type": "user",
                    "message": {"role": "user", "content": text},
                });
                write_line(stdin, &line).await
            }
            InputSink::Integration(stdin) => {
                write_line(stdin, &InputLine::Say { text: text.into() }).await
            }
            InputSink::Pty(writer) => writer.type_line(text).await,
            InputSink::Server { feed, .. } => feed.send(text).await.map_err(std::io::Error::other),
        }
    }

    /// Sends a control request: a stream-json one, or the integration protocol's line for it
    /// (`target` is the scenario's name of the task, `task_id` the CLI's).
    pub async fn control(
        &mut self,
        request_id: &str,
        subtype: Control,
        target: Option<&str>,
        task_id: Option<&str>,
        message: Option<&str>,
    ) -> std::io::Result<()> {
        if let InputSink::Integration(stdin) = self {
            let line = match subtype {
                Control::Interrupt => InputLine::Interrupt,
                Control::StopTask => InputLine::StopTask {
                    task: target.unwrap_or_default().to_string(),
                    task_id: task_id.map(str::to_string),
                },
                // The mode's row offers no other control (`scenario::mode`).
                Control::SendTaskMessage => return Ok(()),
            };
            return write_line(stdin, &line).await;
        }
        if let InputSink::Server { feed, .. } = self {
            // An interrupt stops the main session's turn; a stop, the task's own session.
            let result = match (subtype, task_id) {
                (Control::Interrupt, _) => feed.abort(None).await,
                (Control::StopTask, Some(id)) => feed.abort(Some(id)).await,
                (Control::StopTask, None) => Err("no session id is known for the task".into()),
                (Control::SendTaskMessage, _) => Ok(()),
            };
            return result.map_err(std::io::Error::other);
        }
        let InputSink::Stdin(stdin) = self else {
            return Ok(());
        };
        let mut request = serde_json::json!({"subtype": subtype.as_str()});
        if let Some(id) = task_id {
            request["task_id"] = id.into();
        }
        if let Some(m) = message {
            request["message"] = m.into();
        }
        let line = serde_json::json!({"type": "control_request", "request_id": request_id, "request": request});
        write_line(stdin, &line).await
    }

    /// Answers an approval the integration showed (mode `command`; elsewhere nothing).
    pub async fn approve(
        &mut self,
        tool: &str,
        id: Option<&str>,
        answer: Answer,
    ) -> std::io::Result<()> {
        let InputSink::Integration(stdin) = self else {
            return Ok(());
        };
        let line = InputLine::Approve {
            tool: tool.to_string(),
            id: id.map(str::to_string),
            answer,
        };
        write_line(stdin, &line).await
    }

    /// Ends the session: closes stdin, or types `/exit` in a pty.
    pub async fn close(&mut self) {
        match std::mem::replace(self, InputSink::None) {
            InputSink::None => {}
            InputSink::Stdin(mut stdin) | InputSink::Integration(mut stdin) => {
                let _ = stdin.shutdown().await;
            }
            InputSink::Pty(mut writer) => {
                let _ = writer.type_line("/exit").await;
                *self = InputSink::Pty(writer);
            }
            // Every session and tool process ended by the server itself, then the server.
            InputSink::Server {
                mut feed,
                supervisor,
            } => {
                if let Err(e) = feed.dispose().await {
                    tracing::warn!(%e, "opencode: dispose");
                }
                for p in crate::os::procs::list() {
                    if p.ppid == supervisor {
                        crate::os::procs::signal(p.pid, crate::os::procs::Signal::TERM);
                    }
                }
            }
        }
    }
}

/// One JSON line (a stream-json message, or the integration protocol's `InputLine`).
async fn write_line(
    stdin: &mut tokio::process::ChildStdin,
    line: &impl serde::Serialize,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(line).expect("input lines serialize");
    bytes.push(b'\n');
    stdin.write_all(&bytes).await?;
    stdin.flush().await
}
