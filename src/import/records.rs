//! One transcript's records, read as what happened to its agent: the inputs it was given, the
//! model's replies (every record of one message id is one reply), tool results, background
//! notifications that reached it, interrupts and hook feedback. Bookkeeping records
//! (attachments of context, API request shapes, costs, titles) are dropped here; record
//! types the importer does not know are counted.
//!
//! What tells a typed input from one the CLI injected: `origin.kind` (`human`,
//! `task-notification`) and `promptSource` (`typed`, `sdk`, `system`) where the version writes
//! them; otherwise the text's own markers (`<task-notification>`, the interrupt placeholder,
//! `Stop hook feedback:`, a teammate's message).

use std::collections::BTreeMap;

use serde_json::Value;

use super::read::{KNOWN_TYPES, Record};

/// Milliseconds since the Unix epoch.
pub type Ms = u64;

/// A tool call in a reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub id: String,
    pub tool: String,
    pub input: Value,
}

/// One model reply: the text and tool calls of one message.
#[derive(Debug, Clone)]
pub struct Reply {
    pub at: Option<Ms>,
    pub texts: Vec<String>,
    pub calls: Vec<Call>,
    /// The harness's own answer past the end of a script (a run folder's transcripts).
    pub exhausted: bool,
}

impl Reply {
    pub fn ends_turn(&self) -> bool {
        self.calls.is_empty()
    }
}

/// What the CLI answered a tool call with, as far as the importer cares.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The agent a background Agent call started (`toolUseResult.agentId`).
    pub agent_id: Option<String>,
    /// The background task a Bash call started (`backgroundTaskId`).
    pub task_id: Option<String>,
    /// The call was rejected (an interrupt or a stop cut it short).
    pub rejected: bool,
    /// The CLI ran the call in the background (`async_launched`, a background task id).
    pub backgrounded: bool,
}

#[derive(Debug, Clone)]
pub enum Entry {
    /// A user input: typed, or sent by an SDK (the first one is the prompt).
    Input {
        at: Option<Ms>,
        text: String,
    },
    Reply(Reply),
    ToolResult {
        at: Option<Ms>,
        tool_use_id: String,
        outcome: Outcome,
    },
    /// A background task's notification: delivered to this agent, or only queued.
    Notification {
        at: Option<Ms>,
        task_id: Option<String>,
        delivered: bool,
    },
    /// The interrupt placeholder: the agent's turn was cut short.
    Interrupt {
        at: Option<Ms>,
    },
    /// A hook blocked a stop and fed this back to the agent.
    HookFeedback {
        at: Option<Ms>,
        text: String,
    },
}

/// One transcript read as entries, with the unknown record types it held.
#[derive(Debug, Default)]
pub struct Conversation {
    pub entries: Vec<Entry>,
    pub unknown: BTreeMap<String, usize>,
    /// `entrypoint` of the first record that has one (`cli` for an interactive session).
    pub entrypoint: Option<String>,
    /// `promptSource` of the first input (`typed`, `sdk`).
    pub prompt_source: Option<String>,
    /// The message id of the last reply: the records of one message are consecutive.
    last_id: Option<String>,
}

impl Conversation {
    pub fn read(records: &[Record]) -> Conversation {
        let mut conv = Conversation::default();
        let mut enqueued: Vec<(String, Ms)> = Vec::new();
        for rec in records {
            if conv.entrypoint.is_none() {
                conv.entrypoint = text_at(&rec.value, "entrypoint");
            }
            match rec.kind() {
                Some("assistant") => conv.assistant(rec),
                Some("user") => conv.user(rec, &mut enqueued),
                Some("attachment") => conv.attachment(rec),
                Some("queue-operation") => queue_operation(rec, &mut conv, &mut enqueued),
                Some(kind) if KNOWN_TYPES.contains(&kind) => {}
                other => {
                    *conv
                        .unknown
                        .entry(other.unwrap_or("(no type)").to_string())
                        .or_default() += 1;
                }
            }
        }
        conv
    }

    fn assistant(&mut self, rec: &Record) {
        let Some(message) = rec.value.get("message") else {
            return;
        };
        if message.get("model").and_then(Value::as_str) == Some("<synthetic>") {
            return;
        }
        let id = message.get("id").and_then(Value::as_str);
        let mut texts = Vec::new();
        let mut calls = Vec::new();
        for block in blocks(message.get("content")) {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => texts.extend(text_at(block, "text")),
                Some("tool_use") => calls.push(Call {
                    id: text_at(block, "id").unwrap_or_default(),
                    tool: text_at(block, "name").unwrap_or_default(),
                    input: block.get("input").cloned().unwrap_or(Value::Null),
                }),
                _ => {}
            }
        }
        if let Some(string) = message.get("content").and_then(Value::as_str) {
            texts.push(string.to_string());
        }
        // Records of one message (text, then each tool call) make one reply.
        if let (Some(id), Some(Entry::Reply(last))) = (id, self.entries.last_mut())
            && self.last_id.as_deref() == Some(id)
        {
            last.texts.extend(texts);
            last.calls.extend(calls);
            return;
        }
        let exhausted = texts.len() == 1
            && texts[0].starts_with("(wakeprobe: the script for `")
            && texts[0].ends_with("has no more steps; ending the turn.)");
        self.entries.push(Entry::Reply(Reply {
            at: at(&rec.value),
            texts,
            calls,
            exhausted,
        }));
        self.last_id = id.map(str::to_string);
    }

    fn user(&mut self, rec: &Record, enqueued: &mut Vec<(String, Ms)>) {
        self.last_id = None;
        let v = &rec.value;
        let time = at(v);
        let content = v.get("message").and_then(|m| m.get("content"));
        let results: Vec<&Value> = blocks(content)
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            .collect();
        for block in &results {
            let outcome = tool_outcome(
                if results.len() == 1 {
                    v.get("toolUseResult")
                } else {
                    None
                },
                block,
            );
            self.entries.push(Entry::ToolResult {
                at: time,
                tool_use_id: text_at(block, "tool_use_id").unwrap_or_default(),
                outcome,
            });
        }
        let texts = user_texts(content);
        if texts.is_empty() {
            return;
        }
        let joined = texts.join("\n");
        let origin = v
            .get("origin")
            .and_then(|o| o.get("kind"))
            .and_then(Value::as_str);
        let source = text_at(v, "promptSource");
        if origin == Some("task-notification") || joined.contains("<task-notification>") {
            self.entries.push(Entry::Notification {
                at: time,
                task_id: task_id_in(&joined),
                delivered: true,
            });
        } else if texts.iter().any(|t| is_interrupt_placeholder(t)) {
            self.entries.push(Entry::Interrupt { at: time });
        } else if joined.contains("Stop hook feedback:") {
            self.entries.push(Entry::HookFeedback {
                at: time,
                text: joined,
            });
        } else if v.get("isMeta").and_then(Value::as_bool) == Some(true) {
            // Context the CLI added to the conversation (reminders, summaries): not an input.
        } else if is_typed(origin, source.as_deref(), &joined) {
            if self.prompt_source.is_none() {
                self.prompt_source = source;
            }
            let queued = enqueued.iter().position(|(t, _)| *t == joined);
            let when = queued.map(|i| enqueued.remove(i).1).or(time);
            self.entries.push(Entry::Input {
                at: when,
                text: joined,
            });
        }
    }

    fn attachment(&mut self, rec: &Record) {
        let Some(a) = rec.value.get("attachment") else {
            return;
        };
        let prompt = text_at(a, "prompt").unwrap_or_default();
        let is_notification = a.get("type").and_then(Value::as_str) == Some("queued_command")
            && (prompt.contains("<task-notification>")
                || text_at(a, "commandMode").as_deref() == Some("task-notification"));
        if is_notification {
            self.entries.push(Entry::Notification {
                at: at(a).or_else(|| at(&rec.value)),
                task_id: task_id_in(&prompt),
                delivered: true,
            });
        }
    }
}

fn queue_operation(rec: &Record, conv: &mut Conversation, enqueued: &mut Vec<(String, Ms)>) {
    let v = &rec.value;
    if text_at(v, "operation").as_deref() != Some("enqueue") {
        return;
    }
    let content = text_at(v, "content").unwrap_or_default();
    let Some(time) = at(v) else { return };
    if content.contains("<task-notification>") {
        conv.entries.push(Entry::Notification {
            at: Some(time),
            task_id: task_id_in(&content),
            delivered: false,
        });
    } else {
        enqueued.push((content, time));
    }
}

/// Whether a user text is an input someone typed or sent (not one the CLI injected).
fn is_typed(origin: Option<&str>, source: Option<&str>, text: &str) -> bool {
    match (origin, source) {
        (Some("human"), _) | (_, Some("typed" | "sdk")) => true,
        (Some(_), _) | (_, Some(_)) => false,
        (None, None) => {
            let t = text.trim_start();
            !(t.starts_with("Another Claude session sent a message")
                || t.starts_with("The coordinator sent a message")
                || t.starts_with("[SYSTEM NOTIFICATION")
                || [
                    "<teammate-message",
                    "<system-reminder>",
                    "<command-name>",
                    "<command-message>",
                    "<local-command-stdout>",
                    "<bash-input>",
                    "<bash-stdout>",
                ]
                .iter()
                .any(|tag| t.starts_with(tag)))
        }
    }
}

fn tool_outcome(tur: Option<&Value>, block: &Value) -> Outcome {
    let text = user_texts(block.get("content")).join("\n");
    let mut outcome = Outcome {
        rejected: text.starts_with("The user doesn't want to proceed")
            || tur.and_then(Value::as_str) == Some("User rejected tool use"),
        ..Outcome::default()
    };
    if let Some(tur) = tur.filter(|t| t.is_object()) {
        outcome.agent_id = text_at(tur, "agentId").or_else(|| text_at(tur, "agent_id"));
        outcome.task_id = text_at(tur, "backgroundTaskId");
        outcome.backgrounded = text_at(tur, "status").as_deref() == Some("async_launched");
    }
    if outcome.task_id.is_none() {
        outcome.task_id = text
            .split_once("Command running in background with ID: ")
            .map(|(_, rest)| {
                rest.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                    .collect()
            });
    }
    outcome.backgrounded |= outcome.task_id.is_some();
    outcome
}

/// `<task-id>X</task-id>` in a notification.
fn task_id_in(text: &str) -> Option<String> {
    let start = text.find("<task-id>")? + "<task-id>".len();
    let len = text[start..].find("</task-id>")?;
    Some(text[start..start + len].trim().to_string())
}

pub fn is_interrupt_placeholder(text: &str) -> bool {
    let t = text.trim();
    t.starts_with("[Request interrupted by user") && t.ends_with(']')
}

fn blocks(content: Option<&Value>) -> impl Iterator<Item = &Value> {
    content.and_then(Value::as_array).into_iter().flatten()
}

/// The plain texts of a message's content (a string, or its `text` blocks).
pub fn user_texts(content: Option<&Value>) -> Vec<String> {
    match content {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| text_at(b, "text"))
            .collect(),
        _ => vec![],
    }
}

fn text_at(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn at(v: &Value) -> Option<Ms> {
    v.get("timestamp")
        .and_then(Value::as_str)
        .and_then(crate::evidence::transcript::unix_ms)
}

/// The tool inputs as the model sent them (`api-request-blob` records of assistant messages
/// keep them before the CLI's normalisation), by tool-use id.
pub fn wire_inputs(records: &[Record], into: &mut BTreeMap<String, Value>) {
    for rec in records
        .iter()
        .filter(|r| r.kind() == Some("api-request-blob"))
    {
        let Some(message) = rec.value.get("message") else {
            continue;
        };
        if message.get("role").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        for block in blocks(message.get("content")) {
            if block.get("type").and_then(Value::as_str) == Some("tool_use")
                && let (Some(id), Some(input)) = (text_at(block, "id"), block.get("input"))
            {
                into.insert(id, input.clone());
            }
        }
    }
}
