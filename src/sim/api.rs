//! The Messages API client: `POST /v1/messages?beta=true` with `stream: true` to
//! `ANTHROPIC_BASE_URL`, and the SSE stream assembled back into one message.
//!
//! Why hyper's client rather than a hand-written one: hyper 1 and hyper-util are already in the
//! dependency tree (axum serves the fake API with them), so turning on their client halves adds
//! only two tiny crates (`want`, `try-lock`), and it gets HTTP/1.1 framing (chunked bodies,
//! content lengths, header handling) right by construction. The SSE layer on top is small and lives here: frames are split on blank lines
//! and only `data:` fields are read, which is all the Messages API stream uses.
//!
//! Every call is bounded: connecting, and the whole answer, have deadlines; connection errors
//! and 429/5xx answers are retried a few times with a short backoff, like the real CLI does.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::{Value, json};

/// How long one answer may take in total (the fake API's think-time included).
const ANSWER_LIMIT: Duration = Duration::from_secs(900);
const CONNECT_LIMIT: Duration = Duration::from_secs(10);
const RETRIES: u32 = 4;
/// Attempts at one request while the API answers 529 (the real CLI's cap, measured).
const OVERLOADED_ATTEMPTS: u32 = 3;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("ANTHROPIC_BASE_URL `{0}` is not an http:// URL")]
    BadUrl(String),
    #[error("cannot reach the API at {addr}: {message}")]
    Connect { addr: String, message: String },
    #[error("the API answered {status}: {body}")]
    Status {
        status: u16,
        body: String,
        /// The answer's `retry-after`, in seconds.
        retry_after: Option<f64>,
    },
    #[error("the API stream broke: {0}")]
    Stream(String),
    #[error("the API did not answer within {0:?}")]
    Timeout(Duration),
}

impl ApiError {
    fn retryable(&self) -> bool {
        match self {
            ApiError::Connect { .. } | ApiError::Stream(_) => true,
            ApiError::Status { status, .. } => *status == 429 || *status >= 500,
            ApiError::BadUrl(_) | ApiError::Timeout(_) => false,
        }
    }
}

/// One assembled answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub id: String,
    pub model: String,
    /// Content blocks as the API defines them (`text`, `tool_use` with its parsed `input`).
    pub content: Vec<Value>,
    pub stop_reason: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The answer's `request-id` header, when it had one.
    pub request_id: Option<String>,
}

impl Reply {
    /// The text blocks joined: what the agent "said".
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn tool_uses(&self) -> Vec<&Value> {
        self.content
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .collect()
    }

    /// The assistant message as it goes back into the conversation.
    pub fn message(&self) -> Value {
        json!({"role": "assistant", "content": self.content})
    }

    /// The message object the stream-json `assistant` lines and transcripts carry.
    pub fn message_object(&self, block: &Value, final_stop: bool) -> Value {
        json!({
            "id": self.id, "type": "message", "role": "assistant", "model": self.model,
            "content": [block],
            "stop_reason": if final_stop { Value::from(self.stop_reason.clone()) } else { Value::Null },
            "stop_sequence": null,
            "usage": {"input_tokens": self.input_tokens, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": self.output_tokens},
            "context_management": null,
        })
    }
}

/// The sending half of one HTTP/1.1 connection to the API.
type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// Where the API is and how to present ourselves.
#[derive(Debug, Clone)]
pub struct Api {
    authority: String,
    path_prefix: String,
    key: String,
    user_agent: String,
    session_id: String,
}

impl Api {
    pub fn new(
        base_url: &str,
        key: &str,
        user_agent: &str,
        session_id: &str,
    ) -> Result<Api, ApiError> {
        let rest = base_url
            .strip_prefix("http://")
            .ok_or_else(|| ApiError::BadUrl(base_url.to_string()))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        if authority.is_empty() {
            return Err(ApiError::BadUrl(base_url.to_string()));
        }
        Ok(Api {
            authority: authority.to_string(),
            path_prefix: path.to_string(),
            key: key.to_string(),
            user_agent: user_agent.to_string(),
            session_id: session_id.to_string(),
        })
    }

    /// Sends one request (retrying transient failures) and returns the assembled answer.
    /// `agent_id` is sent as `x-claude-code-agent-id`, as subagents do.
    pub async fn create(&self, body: &Value, agent_id: Option<&str>) -> Result<Reply, ApiError> {
        let bytes = Bytes::from(serde_json::to_vec(body).expect("a JSON value serializes"));
        let mut attempt = 0;
        loop {
            let result =
                tokio::time::timeout(ANSWER_LIMIT, self.once(bytes.clone(), agent_id, attempt))
                    .await
                    .unwrap_or(Err(ApiError::Timeout(ANSWER_LIMIT)));
            // 2.1.332 gives a request up after three 529s in a row, whatever `max_retries`
            // says (measured with the `overloaded-529` fault).
            let overloaded = matches!(&result, Err(ApiError::Status { status: 529, .. }));
            match result {
                Err(e) if overloaded && attempt + 1 >= OVERLOADED_ATTEMPTS => return Err(e),
                Err(e) if e.retryable() && attempt < RETRIES => {
                    attempt += 1;
                    // The backoff, or longer where the answer says when to come back (as the
                    // real CLI does: 2.1.332 waited out a 1 s `retry-after`).
                    let backoff = Duration::from_millis(200 << attempt);
                    let asked = match &e {
                        ApiError::Status {
                            retry_after: Some(s),
                            ..
                        } => Duration::try_from_secs_f64(s.min(60.0)).unwrap_or_default(),
                        _ => Duration::ZERO,
                    };
                    tokio::time::sleep(backoff.max(asked)).await;
                }
                other => return other,
            }
        }
    }

    /// One attempt: a fresh connection, the request as the CLI sends it, the answer read whole.
    async fn once(
        &self,
        body: Bytes,
        agent_id: Option<&str>,
        attempt: u32,
    ) -> Result<Reply, ApiError> {
        let (mut sender, driver) = self.connect().await?;
        let request = self.request(body, agent_id, attempt)?;
        let result = async {
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| self.connect_error(e.to_string()))?;
            read_reply(response).await
        }
        .await;
        driver.abort();
        result
    }

    fn connect_error(&self, message: String) -> ApiError {
        ApiError::Connect {
            addr: self.authority.clone(),
            message,
        }
    }

    /// An HTTP/1.1 connection to the API, and the task driving it (to abort when done).
    async fn connect(&self) -> Result<(Sender, tokio::task::JoinHandle<()>), ApiError> {
        let stream = tokio::time::timeout(
            CONNECT_LIMIT,
            tokio::net::TcpStream::connect(&self.authority),
        )
        .await
        .map_err(|_| self.connect_error("timed out".into()))?
        .map_err(|e| self.connect_error(e.to_string()))?;
        let _ = stream.set_nodelay(true);
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| self.connect_error(e.to_string()))?;
        let driver = tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok((sender, driver))
    }

    /// The request with the headers the real CLI sends.
    fn request(
        &self,
        body: Bytes,
        agent_id: Option<&str>,
        attempt: u32,
    ) -> Result<hyper::Request<Full<Bytes>>, ApiError> {
        let mut request = hyper::Request::post(format!(
            "{}/v1/messages?beta=true",
            self.path_prefix
        ))
        .header("host", &self.authority)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .header("anthropic-version", "2023-06-01")
        .header(
            "anthropic-beta",
            "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27",
        )
        .header("anthropic-dangerous-direct-browser-access", "true")
        .header("x-api-key", &self.key)
        .header("x-app", "cli")
        .header("user-agent", &self.user_agent)
        .header("x-claude-code-session-id", &self.session_id)
        .header("x-stainless-retry-count", attempt.to_string());
        if let Some(id) = agent_id {
            request = request.header("x-claude-code-agent-id", id);
        }
        request
            .body(Full::new(body))
            .map_err(|e| ApiError::Stream(e.to_string()))
    }
}

/// The answer read whole: an error status with its body and `retry-after`, a plain JSON
/// message, or an SSE stream assembled into one message.
async fn read_reply(response: hyper::Response<hyper::body::Incoming>) -> Result<Reply, ApiError> {
    let status = response.status().as_u16();
    let request_id = response
        .headers()
        .get("request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let event_stream = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0);
    let mut body = response.into_body();
    if status != 200 {
        let bytes = body
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        return Err(ApiError::Status {
            status,
            body: String::from_utf8_lossy(&bytes).chars().take(500).collect(),
            retry_after,
        });
    }
    if !event_stream {
        let bytes = body
            .collect()
            .await
            .map_err(|e| ApiError::Stream(e.to_string()))?
            .to_bytes();
        let message: Value =
            serde_json::from_slice(&bytes).map_err(|e| ApiError::Stream(e.to_string()))?;
        return Ok(Reply {
            request_id,
            ..reply_from_message(&message)
        });
    }
    let mut assembler = Assembler::default();
    let mut splitter = SseSplitter::default();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ApiError::Stream(e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            for event in splitter.push(&data) {
                assembler.event(&event)?;
            }
        }
        if assembler.done {
            break;
        }
    }
    assembler.finish().map(|reply| Reply {
        request_id,
        ..reply
    })
}

fn reply_from_message(message: &Value) -> Reply {
    Reply {
        id: message["id"].as_str().unwrap_or("msg_unknown").to_string(),
        model: message["model"].as_str().unwrap_or("unknown").to_string(),
        content: message["content"].as_array().cloned().unwrap_or_default(),
        stop_reason: message["stop_reason"]
            .as_str()
            .unwrap_or("end_turn")
            .to_string(),
        input_tokens: message["usage"]["input_tokens"].as_u64().unwrap_or(0),
        output_tokens: message["usage"]["output_tokens"].as_u64().unwrap_or(0),
        request_id: None,
    }
}

/// Splits an SSE byte stream into the `data` payloads of its events.
#[derive(Debug, Default)]
pub struct SseSplitter {
    buffer: Vec<u8>,
}

impl SseSplitter {
    /// Feeds bytes; returns the data of every event completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        loop {
            let text = &self.buffer;
            let Some((end, sep)) = find_blank_line(text) else {
                break;
            };
            let frame = String::from_utf8_lossy(&text[..end]).to_string();
            self.buffer.drain(..end + sep);
            let data: Vec<&str> = frame
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if !data.is_empty() {
                events.push(data.join("\n"));
            }
        }
        events
    }
}

fn find_blank_line(b: &[u8]) -> Option<(usize, usize)> {
    (0..b.len()).find_map(|i| {
        if b[i..].starts_with(b"\r\n\r\n") {
            Some((i, 4))
        } else if b[i..].starts_with(b"\n\n") {
            Some((i, 2))
        } else {
            None
        }
    })
}

/// Rebuilds a message from its stream events.
#[derive(Debug, Default)]
pub struct Assembler {
    id: String,
    model: String,
    blocks: Vec<Value>,
    partial_json: Vec<String>,
    stop_reason: Option<String>,
    input_tokens: u64,
    output_tokens: u64,
    started: bool,
    pub done: bool,
}

impl Assembler {
    pub fn event(&mut self, data: &str) -> Result<(), ApiError> {
        let Ok(v) = serde_json::from_str::<Value>(data) else {
            return Ok(()); // a keep-alive comment or something foreign: ignored
        };
        let index = v["index"].as_u64().unwrap_or(0) as usize;
        match v["type"].as_str().unwrap_or("") {
            "message_start" => {
                self.started = true;
                self.id = v["message"]["id"].as_str().unwrap_or("").to_string();
                self.model = v["message"]["model"].as_str().unwrap_or("").to_string();
                self.input_tokens = v["message"]["usage"]["input_tokens"].as_u64().unwrap_or(0);
            }
            "content_block_start" => {
                while self.blocks.len() <= index {
                    self.blocks.push(Value::Null);
                    self.partial_json.push(String::new());
                }
                self.blocks[index] = v["content_block"].clone();
            }
            "content_block_delta" => {
                if let Some(block) = self.blocks.get_mut(index) {
                    let delta = &v["delta"];
                    match delta["type"].as_str() {
                        Some("text_delta") => {
                            let text = format!(
                                "{}{}",
                                block["text"].as_str().unwrap_or(""),
                                delta["text"].as_str().unwrap_or("")
                            );
                            block["text"] = text.into();
                        }
                        Some("input_json_delta") => {
                            self.partial_json[index]
                                .push_str(delta["partial_json"].as_str().unwrap_or(""));
                        }
                        _ => {}
                    }
                }
            }
            "content_block_stop" => {
                if let Some(block) = self.blocks.get_mut(index)
                    && block["type"] == "tool_use"
                {
                    let partial = &self.partial_json[index];
                    block["input"] = if partial.trim().is_empty() {
                        block.get("input").cloned().unwrap_or_else(|| json!({}))
                    } else {
                        serde_json::from_str(partial).map_err(|e| {
                            ApiError::Stream(format!("a tool_use input is not JSON: {e}"))
                        })?
                    };
                }
            }
            "message_delta" => {
                if let Some(reason) = v["delta"]["stop_reason"].as_str() {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(n) = v["usage"]["output_tokens"].as_u64() {
                    self.output_tokens = n;
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                return Err(ApiError::Stream(
                    v["error"]["message"]
                        .as_str()
                        .unwrap_or("error event")
                        .to_string(),
                ));
            }
            _ => {}
        }
        Ok(())
    }

    pub fn finish(self) -> Result<Reply, ApiError> {
        if !self.started {
            return Err(ApiError::Stream(
                "the stream ended before message_start".into(),
            ));
        }
        // A body that ends cleanly without `message_stop` is taken as the whole message: the
        // real CLI does so (2.1.332, measured with the `cut-before-stop` fault); only a broken
        // connection or an `error` event makes it retry.
        Ok(Reply {
            id: self.id,
            model: self.model,
            content: self.blocks.into_iter().filter(|b| !b.is_null()).collect(),
            stop_reason: self.stop_reason.unwrap_or_else(|| "end_turn".into()),
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            request_id: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake_api::reply::{Answer, Block};

    #[test]
    fn reassembles_the_fake_apis_stream_in_any_chunking() {
        let answer = Answer {
            id: "msg_1".into(),
            model: "m".into(),
            blocks: vec![
                Block::Text(
                    "Running ünïcode text that spans several deltas, long enough to split.".into(),
                ),
                Block::ToolUse {
                    id: "toolu_1".into(),
                    name: "Bash".into(),
                    input: json!({"command": "sleep 1; echo 'done'", "run_in_background": true}),
                },
            ],
            stop_reason: "tool_use",
            stop_sequence: None,
            input_tokens: 10,
        };
        let sse = answer.to_sse();
        for chunk in [1, 7, 64, sse.len()] {
            let mut splitter = SseSplitter::default();
            let mut asm = Assembler::default();
            for piece in sse.chunks(chunk) {
                for event in splitter.push(piece) {
                    asm.event(&event).unwrap();
                }
            }
            let reply = asm.finish().unwrap();
            assert_eq!(
                Value::Array(reply.content.clone()),
                answer.to_message()["content"]
            );
            assert_eq!(reply.stop_reason, "tool_use");
            assert_eq!(reply.tool_uses().len(), 1);
            assert!(reply.text().starts_with("Running"));
        }
    }

    #[test]
    fn a_stream_cut_before_message_stop_is_taken_and_urls_are_checked() {
        // As 2.1.332 does (the `cut-before-stop` fault): a clean end without `message_stop`
        // is the whole message; a body with no `message_start` is not one.
        let mut asm = Assembler::default();
        asm.event(r#"{"type":"message_start","message":{"id":"m","model":"x","usage":{}}}"#)
            .unwrap();
        assert_eq!(asm.finish().unwrap().id, "m");
        assert!(Assembler::default().finish().is_err());
        assert!(Api::new("https://x", "k", "ua", "s").is_err());
        let api = Api::new("http://127.0.0.1:9/prefix/", "k", "ua", "s").unwrap();
        assert_eq!(api.authority, "127.0.0.1:9");
        assert_eq!(api.path_prefix, "/prefix");
    }
}
