//! Reading the CLI's session and subagent transcripts (JSONL) with seed 004's rules.
//!
//! A transcript folder holds `<session>.jsonl` (the main agent) and
//! `<session>/subagents/agent-<id>.jsonl` (one per subagent). From them:
//!
//! 1. A background Agent call's immediate result (`toolUseResult.status == "async_launched"`)
//!    only says the child started: it is never read as the child's outcome.
//! 2. A transcript whose last user text is the interrupt placeholder
//!    (`[Request interrupted by user...]`) ended canceled.
//! 3. User text after an interrupt placeholder (a new prompt) means the agent was given another
//!    turn: it is running again, or completed if a later assistant entry ends its turn.
//!
//! Otherwise an agent whose last assistant entry has `stop_reason: end_turn` completed, and one
//! without is still running. Every field is read leniently.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An agent's status as its transcripts tell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Running,
    Completed,
    Canceled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Completed => "completed",
            Status::Canceled => "canceled",
        }
    }
}

/// What one transcript says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// `None` for the main session's transcript, else the subagent's id.
    pub agent_id: Option<String>,
    pub status: Status,
    /// Why, in words (which rule decided).
    pub reason: String,
    /// Background Agent calls whose immediate result was `async_launched` (rule 1), by child
    /// agent id.
    pub async_launches: Vec<String>,
    /// Wall time of the entry that decided, if it had one.
    pub timestamp: Option<String>,
}

fn is_interrupt_placeholder(text: &str) -> bool {
    let t = text.trim();
    t.starts_with("[Request interrupted by user") && t.ends_with(']') && !t[1..].contains('[')
}

/// The plain texts of a user entry (tool results carry none).
fn user_texts(entry: &Value) -> Vec<String> {
    match entry.get("message").and_then(|m| m.get("content")) {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str).map(str::to_string))
            .collect(),
        _ => vec![],
    }
}

/// Applies the rules to one transcript's entries (one JSON value per line).
pub fn read_entries(agent_id: Option<String>, entries: &[Value]) -> Reading {
    let async_launches = entries
        .iter()
        .filter_map(|e| e.get("toolUseResult"))
        .filter(|r| r.get("status").and_then(Value::as_str) == Some("async_launched"))
        .filter_map(|r| r.get("agentId").and_then(Value::as_str).map(str::to_string))
        .collect();
    let mut later_user_text = false;
    for entry in entries.iter().rev() {
        let timestamp = entry
            .get("timestamp")
            .and_then(Value::as_str)
            .map(str::to_string);
        match entry.get("type").and_then(Value::as_str) {
            Some("user") => {
                let texts = user_texts(entry);
                if texts.iter().any(|t| is_interrupt_placeholder(t)) {
                    if !later_user_text {
                        return Reading {
                            agent_id,
                            status: Status::Canceled,
                            reason: "its transcript ends on the interrupt placeholder".into(),
                            async_launches,
                            timestamp,
                        };
                    }
                    return Reading {
                        agent_id,
                        status: Status::Running,
                        reason: "it was given a new prompt after an interrupt".into(),
                        async_launches,
                        timestamp,
                    };
                }
                if !texts.is_empty() {
                    later_user_text = true;
                }
            }
            Some("assistant") => {
                let stop = entry
                    .get("message")
                    .and_then(|m| m.get("stop_reason"))
                    .and_then(Value::as_str);
                return match stop {
                    Some("end_turn") => Reading {
                        agent_id,
                        status: Status::Completed,
                        reason: if interrupted_before_with_new_prompt(entries) {
                            "it was prompted again after an interrupt, and finished that turn"
                                .into()
                        } else {
                            "its last assistant entry ends the turn".into()
                        },
                        async_launches,
                        timestamp,
                    },
                    _ => Reading {
                        agent_id,
                        status: Status::Running,
                        reason: "its last assistant entry does not end a turn".into(),
                        async_launches,
                        timestamp,
                    },
                };
            }
            _ => {}
        }
    }
    Reading {
        agent_id,
        status: Status::Running,
        reason: "it has no assistant entry yet".into(),
        async_launches,
        timestamp: None,
    }
}

/// Whether the transcript holds an interrupt placeholder followed later by user text.
fn interrupted_before_with_new_prompt(entries: &[Value]) -> bool {
    let mut interrupted = false;
    for e in entries {
        if e.get("type").and_then(Value::as_str) == Some("user") {
            let texts = user_texts(e);
            if texts.iter().any(|t| is_interrupt_placeholder(t)) {
                interrupted = true;
            } else if interrupted && !texts.is_empty() {
                return true;
            }
        }
    }
    false
}

/// The JSON lines of a file that parse as `T`; an unreadable file has none.
pub fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Vec<T> {
    std::fs::read_to_string(path)
        .map(|text| {
            text.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Every transcript under a transcripts folder: the main session's first, then subagents'.
pub fn read_folder(dir: &Path) -> Vec<(PathBuf, Reading)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
        {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "jsonl") {
                found.push(path);
            }
        }
    }
    found.sort_by_key(|p| (p.to_string_lossy().contains("/subagents/"), p.clone()));
    found
        .into_iter()
        .map(|path| {
            let agent_id = path
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.strip_prefix("agent-"))
                .map(str::to_string);
            let reading = read_entries(agent_id, &read_jsonl(&path));
            (path, reading)
        })
        .collect()
}

/// Milliseconds since the Unix epoch for an RFC 3339 UTC timestamp (`2026-11-30T12:31:32.345Z`).
pub fn unix_ms(timestamp: &str) -> Option<u64> {
    let at = chrono::DateTime::parse_from_rfc3339(timestamp).ok()?;
    u64::try_from(at.timestamp_millis()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/runs")
            .join(name)
            .join("transcripts")
    }

    fn subagent(readings: &[(PathBuf, Reading)]) -> &Reading {
        &readings
            .iter()
            .find(|(_, r)| r.agent_id.is_some())
            .expect("a subagent transcript")
            .1
    }

    #[test]
    fn rule_1_an_async_launch_is_not_an_outcome() {
        // The main session launched the worker in the background; the launch result is only
        // that. The worker's own transcript decides its status.
        let readings = read_folder(&fixture("seed000-print"));
        let main = &readings[0].1;
        assert_eq!(main.agent_id, None);
        assert_eq!(main.async_launches.len(), 1);
        let worker = subagent(&readings);
        assert_eq!(main.async_launches[0], *worker.agent_id.as_ref().unwrap());
        assert_eq!(worker.status, Status::Completed, "{}", worker.reason);
    }

    #[test]
    fn rule_2_a_child_ending_on_the_interrupt_placeholder_is_canceled() {
        let readings = read_folder(&fixture("interrupt-stop"));
        let worker = subagent(&readings);
        assert_eq!(worker.status, Status::Canceled, "{}", worker.reason);
        // Its launch result said `async_launched`; that was never its outcome.
        assert!(
            readings[0]
                .1
                .async_launches
                .contains(worker.agent_id.as_ref().unwrap())
        );
    }

    #[test]
    fn rule_3_a_new_prompt_after_an_interrupt_means_running_again() {
        let readings = read_folder(&fixture("interrupt-main"));
        let main = &readings[0].1;
        assert_eq!(main.status, Status::Completed, "{}", main.reason);
        assert!(
            main.reason.contains("after an interrupt"),
            "{}",
            main.reason
        );
        // Cut the transcript right after the new prompt: running, not canceled.
        let path = &readings[0].0;
        let entries = read_jsonl(path);
        let interrupt = entries
            .iter()
            .position(|e| user_texts(e).iter().any(|t| is_interrupt_placeholder(t)))
            .expect("the interrupt placeholder");
        let prompt = entries[interrupt + 1..]
            .iter()
            .position(|e| {
                e.get("type").and_then(Value::as_str) == Some("user") && !user_texts(e).is_empty()
            })
            .map(|i| i + interrupt + 1)
            .expect("a new prompt after it");
        let cut = read_entries(None, &entries[..=prompt]);
        assert_eq!(cut.status, Status::Running, "{}", cut.reason);
        // And up to the interrupt only: canceled.
        let upto = read_entries(None, &entries[..=interrupt]);
        assert_eq!(upto.status, Status::Canceled);
    }

    #[test]
    fn timestamps_convert() {
        assert_eq!(unix_ms("1970-01-01T00:00:01.5Z"), Some(1500));
        assert_eq!(unix_ms("2026-11-30T12:31:32.345Z"), Some(1_796_041_892_345));
        assert_eq!(unix_ms("nonsense"), None);
        // Offsets other than `Z` count.
        assert_eq!(unix_ms("1970-01-01T01:00:01.5+01:00"), Some(1500));
    }
}
