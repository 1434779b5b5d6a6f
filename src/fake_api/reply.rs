//! Building answers: a Message, and the SSE event sequence the real API streams for it.
//!
//! The stream follows the Messages API exactly: `message_start`, for each content block a
//! `content_block_start`, its deltas (`text_delta`, or `input_json_delta` carrying the tool
//! input as partial JSON in pieces) and `content_block_stop`, then `message_delta` with the
//! stop reason and `message_stop`.

use serde_json::{Value, json};

/// One content block of an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
}

/// A complete answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub id: String,
    pub model: String,
    pub blocks: Vec<Block>,
    pub stop_reason: &'static str,
    pub stop_sequence: Option<String>,
    pub input_tokens: u64,
}

impl Answer {
    fn output_tokens(&self) -> u64 {
        self.blocks
            .iter()
            .map(|b| match b {
                Block::Text(t) => t.len() as u64 / 4 + 1,
                Block::ToolUse { input, .. } => input.to_string().len() as u64 / 4 + 1,
            })
            .sum()
    }

    fn usage(&self, output_tokens: u64) -> Value {
        json!({
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": output_tokens,
        })
    }

    /// The non-streaming JSON body.
    pub fn to_message(&self) -> Value {
        json!({
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self.blocks.iter().map(block_json).collect::<Vec<_>>(),
            "stop_reason": self.stop_reason,
            "stop_sequence": self.stop_sequence,
            "usage": self.usage(self.output_tokens()),
        })
    }

    /// The SSE body, as `event: NAME\ndata: JSON\n\n` frames.
    pub fn to_sse(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1024);
        let mut frame = |name: &str, data: Value| {
            out.extend_from_slice(b"event: ");
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\ndata: ");
            out.extend_from_slice(data.to_string().as_bytes());
            out.extend_from_slice(b"\n\n");
        };
        frame(
            "message_start",
            json!({"type": "message_start", "message": {
                "id": self.id, "type": "message", "role": "assistant", "model": self.model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": self.usage(1),
            }}),
        );
        frame("ping", json!({"type": "ping"}));
        for (index, block) in self.blocks.iter().enumerate() {
            match block {
                Block::Text(text) => {
                    frame(
                        "content_block_start",
                        json!({"type": "content_block_start", "index": index,
                               "content_block": {"type": "text", "text": ""}}),
                    );
                    for piece in pieces(text, 48) {
                        frame(
                            "content_block_delta",
                            json!({"type": "content_block_delta", "index": index,
                                   "delta": {"type": "text_delta", "text": piece}}),
                        );
                    }
                }
                Block::ToolUse { id, name, input } => {
                    frame(
                        "content_block_start",
                        json!({"type": "content_block_start", "index": index,
                               "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                    );
                    for piece in pieces(&input.to_string(), 64) {
                        frame(
                            "content_block_delta",
                            json!({"type": "content_block_delta", "index": index,
                                   "delta": {"type": "input_json_delta", "partial_json": piece}}),
                        );
                    }
                }
            }
            frame(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            );
        }
        frame(
            "message_delta",
            json!({"type": "message_delta",
                   "delta": {"stop_reason": self.stop_reason, "stop_sequence": self.stop_sequence},
                   "usage": {"output_tokens": self.output_tokens()}}),
        );
        frame("message_stop", json!({"type": "message_stop"}));
        out
    }
}

fn block_json(block: &Block) -> Value {
    match block {
        Block::Text(text) => json!({"type": "text", "text": text}),
        Block::ToolUse { id, name, input } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
    }
}

/// Splits text into pieces of at most `size` characters, on char boundaries.
fn pieces(text: &str, size: usize) -> Vec<String> {
    if text.is_empty() {
        return vec![String::new()];
    }
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer() -> Answer {
        Answer {
            id: "msg_1".into(),
            model: "m".into(),
            blocks: vec![
                Block::Text("Running it.".into()),
                Block::ToolUse {
                    id: "toolu_1".into(),
                    name: "Bash".into(),
                    input: json!({"command": "sleep 1", "run_in_background": true, "description": "a long ünïcode description that will be split into several pieces"}),
                },
            ],
            stop_reason: "tool_use",
            stop_sequence: None,
            input_tokens: 10,
        }
    }

    /// Reassembles the stream the way a client does and checks it equals the message.
    #[test]
    fn the_stream_reassembles_into_the_message() {
        let sse = String::from_utf8(answer().to_sse()).unwrap();
        let mut names = Vec::new();
        let mut blocks: Vec<Value> = Vec::new();
        let mut partial: Vec<String> = Vec::new();
        let mut stop_reason = Value::Null;
        for frame in sse.split("\n\n").filter(|f| !f.is_empty()) {
            let (event, data) = frame.split_once('\n').unwrap();
            let name = event.strip_prefix("event: ").unwrap();
            let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
            assert_eq!(data["type"], name);
            names.push(name.to_string());
            match name {
                "content_block_start" => {
                    blocks.push(data["content_block"].clone());
                    partial.push(String::new());
                }
                "content_block_delta" => {
                    let i = data["index"].as_u64().unwrap() as usize;
                    if let Some(t) = data["delta"]["text"].as_str() {
                        let text = blocks[i]["text"].as_str().unwrap().to_string() + t;
                        blocks[i]["text"] = text.into();
                    } else {
                        partial[i].push_str(data["delta"]["partial_json"].as_str().unwrap());
                    }
                }
                "content_block_stop" => {
                    let i = data["index"].as_u64().unwrap() as usize;
                    if blocks[i]["type"] == "tool_use" {
                        blocks[i]["input"] = serde_json::from_str(&partial[i]).unwrap();
                    }
                }
                "message_delta" => stop_reason = data["delta"]["stop_reason"].clone(),
                _ => {}
            }
        }
        assert_eq!(names.first().unwrap(), "message_start");
        assert_eq!(names.last().unwrap(), "message_stop");
        let message = answer().to_message();
        assert_eq!(Value::Array(blocks), message["content"]);
        assert_eq!(stop_reason, message["stop_reason"]);
    }
}
