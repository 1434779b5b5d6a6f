//! Driving `opencode serve` over its HTTP API, and reading its `/event` stream.
//!
//! Measured on 1.15.0 to 1.18.33: a request made before the server printed its "listening"
//! line is never answered (the port is open before the server is), so nothing is sent until
//! that line; `/event` is opened first and the session created once it said
//! `server.connected`, so no event of the session is missed. The prompt and every later input
//! go to `POST /session/{id}/prompt_async`; a stop is `POST /session/{id}/abort` (the main
//! session's, or a child's); the close is `POST /instance/dispose` (every session aborted,
//! every tool's process group killed), then SIGTERM (a bare SIGTERM would orphan the tools'
//! processes).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, watch};

use crate::evidence::runtime::Origin;

/// Makes a TCP connection into the run's network (the driver's namespace handle).
pub type Connect = Arc<dyn Fn(SocketAddr) -> std::io::Result<std::net::TcpStream> + Send + Sync>;

/// Lines of the runtime's own evidence, stamped on arrival (run clock, ms).
pub type Lines = mpsc::UnboundedSender<(f64, Origin, String)>;

/// How long one API call may take.
const CALL_LIMIT: Duration = Duration::from_secs(30);
/// How long the server may take to say it listens (measured 1.7-11 s under load).
const READY_LIMIT: Duration = Duration::from_secs(120);

/// The server's address and how to reach it.
#[derive(Clone)]
pub struct Server {
    pub addr: SocketAddr,
    pub connect: Connect,
}

impl Server {
    /// One HTTP/1 request; the status and the body.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, Bytes), String> {
        let response = tokio::time::timeout(CALL_LIMIT, self.send(method, path, body))
            .await
            .map_err(|_| {
                format!(
                    "{method} {path}: no answer within {} s",
                    CALL_LIMIT.as_secs()
                )
            })??;
        let status = response.status().as_u16();
        let bytes = tokio::time::timeout(CALL_LIMIT, response.into_body().collect())
            .await
            .map_err(|_| format!("{method} {path}: the answer did not finish"))?
            .map_err(|e| format!("{method} {path}: {e}"))?
            .to_bytes();
        Ok((status, bytes))
    }

    async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<hyper::Response<hyper::body::Incoming>, String> {
        let (addr, connect) = (self.addr, self.connect.clone());
        let stream = tokio::task::spawn_blocking(move || connect(addr))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot connect to opencode serve at {addr}: {e}"))?;
        let stream = tokio::net::TcpStream::from_std(stream).map_err(|e| e.to_string())?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let bytes = body.map(|b| b.to_string()).unwrap_or_default();
        let request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", addr.to_string())
            .header("content-type", "application/json")
            .header("accept", "*/*")
            .body(Full::new(Bytes::from(bytes)))
            .map_err(|e| e.to_string())?;
        sender
            .send_request(request)
            .await
            .map_err(|e| format!("{method} {path}: {e}"))
    }
}

/// The driver's input to a served session.
pub struct Feed {
    server: Server,
    /// Turns true once `/event` is open (or the server could not open it).
    connected: watch::Receiver<bool>,
    main: Option<String>,
    lines: Lines,
    clock: crate::evidence::clock::RunClock,
}

impl Feed {
    pub fn new(
        server: Server,
        connected: watch::Receiver<bool>,
        lines: Lines,
        clock: crate::evidence::clock::RunClock,
    ) -> Feed {
        Feed {
            server,
            connected,
            main: None,
            lines,
            clock,
        }
    }

    /// Waits for the server (its `/event` open), at most [`READY_LIMIT`].
    async fn ready(&mut self) -> Result<(), String> {
        let wait = self.connected.wait_for(|c| *c);
        match tokio::time::timeout(READY_LIMIT, wait).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err("opencode serve did not start listening".into()),
        }
    }

    /// The main session, created on first use (and told to the evidence reader).
    async fn main_session(&mut self) -> Result<String, String> {
        if let Some(id) = &self.main {
            return Ok(id.clone());
        }
        self.ready().await?;
        let (status, body) = self
            .server
            .call("POST", "/session", Some(json!({})))
            .await?;
        let id = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v.get("id")?.as_str().map(str::to_string))
            .ok_or_else(|| format!("POST /session answered {status} with no session id"))?;
        let _ = self.lines.send((
            self.clock.now_ms(),
            Origin::Driver,
            json!({"main": id}).to_string(),
        ));
        self.main = Some(id.clone());
        Ok(id)
    }

    /// A prompt (the first input, a later one, a probe) to the main session.
    pub async fn send(&mut self, text: &str) -> Result<(), String> {
        let id = self.main_session().await?;
        let body = json!({"parts": [{"type": "text", "text": text}]});
        let path = format!("/session/{id}/prompt_async");
        match self.server.call("POST", &path, Some(body)).await? {
            (200..=299, _) => Ok(()),
            (status, body) => Err(format!(
                "{path} answered {status}: {}",
                String::from_utf8_lossy(&body)
            )),
        }
    }

    /// Stops the main session's turn (`task_id` none), or a child's session.
    pub async fn abort(&mut self, task_id: Option<&str>) -> Result<(), String> {
        let id = match task_id {
            Some(child) => child.to_string(),
            None => self.main_session().await?,
        };
        self.server
            .call("POST", &format!("/session/{id}/abort"), None)
            .await
            .map(drop)
    }

    /// Ends every session and every tool's processes.
    pub async fn dispose(&mut self) -> Result<(), String> {
        if !*self.connected.borrow() {
            return Ok(()); // nothing was ever sent to it
        }
        self.server
            .call("POST", "/instance/dispose", None)
            .await
            .map(drop)
    }
}

/// Reads `/event` once the server listens: each event's JSON to `lines` (stamped on arrival),
/// the raw bytes to `raw`; `connected` turns true at the stream's first event (or when it
/// cannot be opened, so the driver does not wait in vain). Ends with the stream.
pub async fn read_events(
    server: Server,
    mut listening: watch::Receiver<bool>,
    connected: watch::Sender<bool>,
    lines: Lines,
    raw: PathBuf,
    clock: crate::evidence::clock::RunClock,
) {
    if tokio::time::timeout(READY_LIMIT, listening.wait_for(|l| *l))
        .await
        .is_err()
    {
        let _ = connected.send(true);
        return;
    }
    let response = match server.send("GET", "/event", None).await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(%e, "opencode /event");
            let _ = connected.send(true);
            return;
        }
    };
    let mut file = tokio::fs::File::create(&raw).await.ok();
    let mut body = response.into_body();
    let mut pending: Vec<u8> = Vec::new();
    while let Some(Ok(frame)) = body.frame().await {
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if let Some(f) = file.as_mut() {
            let _ = f.write_all(&data).await;
        }
        pending.extend_from_slice(&data);
        while let Some(nl) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=nl).collect();
            let line = String::from_utf8_lossy(&line);
            if let Some(json) = line.trim_end().strip_prefix("data:") {
                let _ = lines.send((clock.now_ms(), Origin::Server, json.trim().to_string()));
                let _ = connected.send(true);
            }
        }
    }
    if let Some(f) = file.as_mut() {
        let _ = f.flush().await;
    }
    let _ = connected.send(true);
}
