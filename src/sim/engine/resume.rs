//! `--continue`: the project's most recent session taken up again, after the CLI that ran it
//! died. As 2.1.332 was measured doing (the README's findings, "A crash and `--continue`";
//! `tests/e2e/faults.rs` checks both sides): the session keeps its id; the conversation is
//! read back from its transcript; SessionStart fires with `source: "resume"`; every
//! background shell the session started with no completion record is reported `stopped`
//! ("didn't finish before the previous session ended"), as a `task_notification` line, a
//! transcript row and a notice that reaches the model only with the next input (no turn of
//! its own: an empty `result` follows). A command still running is not looked for, and its
//! real end is never reported.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::Sim;
use crate::sim::ids;
use crate::sim::texts::{self, AgentKind, Notice};

/// The summary 2.1.332 gives a shell the previous session left running.
const UNFINISHED_SUMMARY: &str =
    "Background shell command didn't finish before the previous session ended";
/// ... and the note that follows it in the model's copy.
const UNFINISHED_NOTE: &str = "No completion record was found for it in the previous session. It may have been stopped (via the UI, Monitor timeout, or agent teardown \u{2014} these leave no transcript marker), or it may have been running when the previous Claude Code process exited. Check the output file for partial results before assuming it completed.";

/// The id of the project's most recent session: its transcript changed last.
pub fn latest_session(home: &Path, cwd: &Path) -> Option<String> {
    let dir = home.join(".claude").join("projects").join(ids::slug(cwd));
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
        .max()
        .and_then(|(_, p): (_, PathBuf)| Some(p.file_stem()?.to_str()?.to_string()))
}

/// What a session's transcript gives back.
#[derive(Debug, Default, PartialEq)]
pub struct Previous {
    /// The main agent's conversation, consecutive messages of one role joined.
    pub messages: Vec<Value>,
    /// Background shells started with no completion record: (task id, tool_use id).
    pub unfinished: Vec<(String, String)>,
    /// The last user prompt's id (hooks carry it until the next prompt).
    pub prompt_id: Option<String>,
}

/// Reads the main conversation and its unfinished shells from a transcript's rows.
pub fn read_previous(text: &str) -> Previous {
    let rows: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|r: &Value| r["isSidechain"] != true)
        .collect();
    let mut previous = Previous::default();
    for row in &rows {
        let role = row["type"].as_str().unwrap_or_default();
        if !matches!(role, "user" | "assistant") || row["message"].is_null() {
            continue;
        }
        if let Some(id) = row["promptId"].as_str() {
            previous.prompt_id = Some(id.to_string());
        }
        push_joined(
            &mut previous.messages,
            role,
            blocks(&row["message"]["content"]),
        );
        if let Some(task_id) = row["toolUseResult"]["backgroundTaskId"].as_str() {
            let tool_use_id = row["message"]["content"][0]["tool_use_id"]
                .as_str()
                .unwrap_or_default();
            previous
                .unfinished
                .push((task_id.to_string(), tool_use_id.to_string()));
        }
    }
    // A task-notification row for the task is its completion record.
    previous.unfinished.retain(|(task_id, _)| {
        let tag = format!("<task-id>{task_id}</task-id>");
        !rows.iter().any(|r| {
            r["origin"]["kind"] == "task-notification"
                && r["message"]["content"]
                    .as_str()
                    .is_some_and(|t| t.contains(&tag))
        })
    });
    previous
}

/// A message's content as blocks (a plain string is one text block).
pub(super) fn blocks(content: &Value) -> Vec<Value> {
    match content {
        Value::String(s) => vec![json!({"type": "text", "text": s})],
        Value::Array(a) => a.clone(),
        _ => vec![],
    }
}

fn push_joined(messages: &mut Vec<Value>, role: &str, content: Vec<Value>) {
    match messages.last_mut() {
        Some(last) if last["role"] == role => {
            if let Some(blocks) = last["content"].as_array_mut() {
                blocks.extend(content);
            }
        }
        _ => messages.push(json!({"role": role, "content": content})),
    }
}

/// The notice for a shell the previous session left running.
fn unfinished_notice(task_id: &str, tool_use_id: &str) -> Notice {
    let mut notice = Notice::new(task_id, "", Some("stopped"), UNFINISHED_SUMMARY.into());
    notice.tool_use_id = Some(tool_use_id.to_string());
    notice.note = Some(UNFINISHED_NOTE.into());
    notice
}

impl Sim {
    /// Takes the previous session up again (see the module's header).
    pub(super) async fn resume(self: &Arc<Self>) {
        let text = std::fs::read_to_string(&self.transcript_path).unwrap_or_default();
        let previous = read_previous(&text);
        self.session_start("resume").await;
        let messages = self.as_sent(previous.messages);
        let transcript = {
            let mut st = self.state();
            st.first_prompt_done = true;
            st.prompt_id = previous.prompt_id;
            st.agents[0].messages = messages;
            st.agents[0].transcript.clone()
        };
        if previous.unfinished.is_empty() {
            return;
        }
        let mut blocks = Vec::new();
        for (task_id, tool_use_id) in &previous.unfinished {
            let notice = unfinished_notice(task_id, tool_use_id);
            self.out
                .line(json!({"type": "system", "subtype": "task_notification",
                "task_id": task_id, "tool_use_id": tool_use_id, "status": "stopped",
                "output_file": "", "summary": UNFINISHED_SUMMARY}));
            let mut extra = Map::new();
            extra.insert("origin".into(), json!({"kind": "task-notification"}));
            transcript.row(
                "user",
                Some(json!({"role": "user", "content": notice.xml()})),
                extra,
            );
            blocks.push(notice.turn_block(false));
        }
        // The notices wait for the next input, in its message; the CLI runs no turn for them,
        // and says so with an empty result.
        self.state().resumed_notices = blocks;
        self.emit_init();
        self.emit_empty_result(json!({"kind": "task-notification"}));
    }

    /// The conversation as the CLI sends it again: the context blocks before the first
    /// prompt and the environment message after it, which the transcript does not keep.
    fn as_sent(&self, mut messages: Vec<Value>) -> Vec<Value> {
        let Some(first) = messages.first_mut() else {
            return messages;
        };
        if let Some(blocks) = first["content"].as_array_mut() {
            let mut content = texts::context_blocks();
            content.append(blocks);
            *blocks = content;
        }
        messages.insert(
            1,
            texts::environment_message(
                AgentKind::Main,
                self.cfg.interactive(),
                &self.cfg.cwd.display().to_string(),
            ),
        );
        messages
    }

    /// The `result` of a turn that made no model request.
    fn emit_empty_result(&self, origin: Value) {
        let index = {
            let mut st = self.state();
            st.result_index += 1;
            st.result_index - 1
        };
        self.out.line(json!({
            "type": "result", "subtype": "success", "is_error": false,
            "duration_ms": self.started.elapsed().as_millis() as u64, "duration_api_ms": 0,
            "num_turns": 0, "result": "", "stop_reason": null, "total_cost_usd": 0,
            "usage": {"input_tokens": 0, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 0, "service_tier": "standard"},
            "modelUsage": {}, "permission_denials": [], "origin": origin,
            "queued_turn_count": 0, "result_index": index, "model_usage_since_last_result": {},
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: &str, content: Value, extra: Value) -> String {
        let mut r = json!({"type": kind, "isSidechain": false,
            "message": {"role": kind, "content": content}});
        r.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        r.to_string()
    }

    #[test]
    fn a_shell_with_no_completion_record_is_unfinished_and_the_conversation_comes_back() {
        let started = |id: &str, tool: &str| {
            row(
                "user",
                json!([{"type": "tool_result", "tool_use_id": tool, "content": "running"}]),
                json!({"toolUseResult": {"backgroundTaskId": id}}),
            )
        };
        let text = [
            row("user", json!("go [wakeprobe:agent=main]"), json!({})),
            row("assistant", json!([{"type": "tool_use", "id": "t1"}]), json!({})),
            started("b1", "t1"),
            row("assistant", json!([{"type": "tool_use", "id": "t2"}]), json!({})),
            started("b2", "t2"),
            row(
                "user",
                json!("<task-notification>\n<task-id>b2</task-id>\n</task-notification>"),
                json!({"origin": {"kind": "task-notification"}}),
            ),
            row("assistant", json!([{"type": "text", "text": "ok"}]), json!({})),
            // A subagent's row is not the main conversation.
            r#"{"type":"assistant","isSidechain":true,"message":{"role":"assistant","content":[]}}"#
                .into(),
            "not json".into(),
        ]
        .join("\n");
        let previous = read_previous(&text);
        assert_eq!(previous.unfinished, vec![("b1".into(), "t1".into())]);
        let roles: Vec<&str> = previous
            .messages
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(
            roles,
            [
                "user",
                "assistant",
                "user",
                "assistant",
                "user",
                "assistant"
            ]
        );
        assert_eq!(
            previous.messages[0]["content"][0]["text"],
            "go [wakeprobe:agent=main]"
        );
    }

    #[test]
    fn the_latest_session_is_the_transcript_changed_last() {
        let home = tempfile::tempdir().unwrap();
        let cwd = Path::new("/some/project");
        assert_eq!(latest_session(home.path(), cwd), None);
        let dir = home.path().join(".claude/projects").join(ids::slug(cwd));
        std::fs::create_dir_all(&dir).unwrap();
        let old = dir.join("old.jsonl");
        std::fs::write(&old, "").unwrap();
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(past)
            .unwrap();
        std::fs::write(dir.join("new.jsonl"), "").unwrap();
        std::fs::write(dir.join("notes.txt"), "").unwrap();
        assert_eq!(latest_session(home.path(), cwd).as_deref(), Some("new"));
    }
}
