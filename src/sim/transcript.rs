//! Session and subagent transcripts where the real CLI writes them:
//! `$HOME/.claude/projects/<slug>/<session>.jsonl` and
//! `.../<session>/subagents/agent-<id>.jsonl` with its `agent-<id>.meta.json`. Rows carry the
//! fields readers rely on (`type`, `message`, `uuid`, `parentUuid`, `isSidechain`, `agentId`,
//! `sessionId`, `timestamp`, `promptId`, `origin`, `toolUseResult`); a turn that is interrupted
//! ends on the `[Request interrupted by user]` placeholder.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Map, Value, json};

use super::ids;

pub struct Transcript {
    pub path: PathBuf,
    agent_id: Option<String>,
    session_id: String,
    cwd: String,
    version: String,
    last_uuid: Mutex<Option<String>>,
    /// False with `--no-session-persistence`: rows are numbered but never written.
    persist: bool,
}

impl Transcript {
    pub fn new(
        path: PathBuf,
        agent_id: Option<String>,
        session_id: &str,
        cwd: &Path,
        version: &str,
    ) -> Transcript {
        Transcript {
            path,
            agent_id,
            session_id: session_id.to_string(),
            cwd: cwd.display().to_string(),
            version: version.to_string(),
            last_uuid: Mutex::new(None),
            persist: true,
        }
    }

    /// The same transcript, written to disk only when `persist` holds.
    pub fn persisting(mut self, persist: bool) -> Transcript {
        self.persist = persist;
        self
    }

    fn append(&self, row: &Value) {
        if !self.persist {
            return;
        }
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
        {
            let mut line = row.to_string();
            line.push('\n');
            let _ = f.write_all(line.as_bytes());
        }
    }

    /// Appends a conversation row (`user` / `assistant` / `system`) and returns its uuid.
    pub fn row(&self, kind: &str, message: Option<Value>, extra: Map<String, Value>) -> String {
        let uuid = ids::uuid();
        let mut parent = self.last_uuid.lock().expect("transcript lock");
        let mut row = json!({
            "parentUuid": parent.clone(),
            "isSidechain": self.agent_id.is_some(),
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": self.version,
            "gitBranch": "main",
            "entrypoint": "sdk-cli",
            "type": kind,
            "uuid": uuid,
            "timestamp": ids::iso_now(),
        });
        if let Some(id) = &self.agent_id {
            row["agentId"] = id.clone().into();
        }
        if let Some(m) = message {
            row["message"] = m;
        }
        if let Some(map) = row.as_object_mut() {
            map.extend(extra);
        }
        self.append(&row);
        *parent = Some(uuid.clone());
        uuid
    }

    /// A bookkeeping row outside the conversation chain (`last-prompt`, `queue-operation`).
    pub fn note(&self, kind: &str, fields: Value) {
        let mut row = json!({"type": kind, "sessionId": self.session_id});
        if let (Some(map), Some(extra)) = (row.as_object_mut(), fields.as_object()) {
            map.extend(extra.clone());
        }
        self.append(&row);
    }
}

/// Writes a subagent's `agent-<id>.meta.json`.
pub fn write_meta(path: &Path, meta: &Value) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(path, meta.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--no-session-persistence`: rows are still made (the ids chain), none is written.
    #[test]
    fn an_unpersisted_transcript_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s/subagents/agent-a1.jsonl");
        let t = Transcript::new(path.clone(), Some("a1".into()), "s", dir.path(), "v")
            .persisting(false);
        let uuid = t.row(
            "user",
            Some(json!({"role": "user", "content": "hi"})),
            Map::new(),
        );
        assert!(!uuid.is_empty());
        assert!(!path.exists() && !dir.path().join("s").exists());
    }

    #[test]
    fn rows_chain_and_name_their_agent() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcript::new(
            dir.path().join("s/subagents/agent-a1.jsonl"),
            Some("a1".into()),
            "s",
            dir.path(),
            "v",
        );
        let first = t.row(
            "user",
            Some(json!({"role": "user", "content": "hi [wakeprobe:agent=worker]"})),
            Map::new(),
        );
        t.row(
            "assistant",
            Some(json!({"role": "assistant", "content": []})),
            Map::new(),
        );
        let text = std::fs::read_to_string(&t.path).unwrap();
        let rows: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows[0]["parentUuid"], Value::Null);
        assert_eq!(rows[1]["parentUuid"], first);
        assert_eq!(rows[1]["agentId"], "a1");
        assert_eq!(rows[0]["isSidechain"], true);
    }
}
