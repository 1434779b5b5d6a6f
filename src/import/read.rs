//! Finding and reading the transcripts of one session: a session file
//! (`<session>.jsonl`, its subagents in `<session>/subagents/agent-*.jsonl`) or one of our run
//! folders (which hold them under `transcripts/`, next to `run.json` and `result.json`).
//!
//! Every line must be a JSON object; a file that is not a transcript (binary data, an empty
//! file, a truncated line, JSON of another kind) is one located error. Record types this
//! module does not know are kept for the caller to skip and count.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::ImportError;
use crate::os::files;
use crate::scenario::DriverMode;

/// One JSONL line: its 1-based number and its object.
#[derive(Debug, Clone)]
pub struct Record {
    pub line: usize,
    pub value: Value,
}

impl Record {
    pub fn kind(&self) -> Option<&str> {
        self.value.get("type").and_then(Value::as_str)
    }
}

/// One transcript file, read.
#[derive(Debug)]
pub struct TranscriptFile {
    pub path: PathBuf,
    pub records: Vec<Record>,
}

/// A subagent's transcript, with its id (from the file name) and its `.meta.json` if any.
#[derive(Debug)]
pub struct SubagentFile {
    pub agent_id: String,
    pub file: TranscriptFile,
    pub meta: Option<Value>,
}

/// What a run folder says about how its transcripts were made.
#[derive(Debug, Clone)]
pub struct RunHints {
    pub mode: Option<DriverMode>,
    /// The verdict the run got (`result.json`).
    pub outcome: Option<String>,
    /// `scenario/variant` of the run, for the title.
    pub source: String,
}

/// Everything one session left.
#[derive(Debug)]
pub struct Session {
    pub main: TranscriptFile,
    pub subagents: Vec<SubagentFile>,
    pub run: Option<RunHints>,
}

/// Record types the CLI writes that the importer knows (and mostly ignores); anything else is
/// counted as unknown.
pub const KNOWN_TYPES: &[&str] = &[
    "user",
    "assistant",
    "system",
    "attachment",
    "summary",
    "queue-operation",
    "progress",
    "ai-title",
    "custom-title",
    "agent-name",
    "pr-link",
    "last-prompt",
    "permission-mode",
    "mode",
    "file-history-snapshot",
    "api-request",
    "api-request-shape",
    "api-request-blob",
    "atis-latch",
    "tools-used",
    "cost-state",
];

/// Reads the session a path names: a `.jsonl` session file or a run folder.
pub fn session(path: &Path) -> Result<Session, ImportError> {
    if path.is_dir() {
        return run_folder(path);
    }
    let main = read_file(path)?;
    if path
        .parent()
        .is_some_and(|p| p.file_name().is_some_and(|n| n == "subagents"))
    {
        return Err(ImportError::Input(format!(
            "{}: a subagent's transcript; pass its session's `<session>.jsonl` (two folders up)",
            path.display()
        )));
    }
    let subagents = subagent_files(&path.with_extension(""))?;
    Ok(Session {
        main,
        subagents,
        run: None,
    })
}

/// A run folder (`reports/<id>/<scenario>/<variant>.<cli>.rN`): its `transcripts/` and the
/// hints in `run.json` and `result.json`.
fn run_folder(dir: &Path) -> Result<Session, ImportError> {
    let transcripts = dir.join("transcripts");
    if !transcripts.is_dir() {
        return Err(ImportError::Input(format!(
            "{}: no `transcripts/` folder: pass a session's `.jsonl` file or one run's folder (reports/<id>/<scenario>/<variant>.<cli>.rN)",
            dir.display()
        )));
    }
    let mains: Vec<PathBuf> = walk(&transcripts)
        .into_iter()
        .filter(|p| {
            p.extension().is_some_and(|x| x == "jsonl")
                && !p.components().any(|c| c.as_os_str() == "subagents")
        })
        .collect();
    let main = match mains.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(ImportError::Input(format!(
                "{}: no session transcript (`<session>.jsonl`) in it",
                transcripts.display()
            )));
        }
        many => {
            return Err(ImportError::Input(format!(
                "{}: {} session transcripts; pass one of them",
                transcripts.display(),
                many.len()
            )));
        }
    };
    let mut session = self::session(&main)?;
    session.run = Some(run_hints(dir));
    Ok(session)
}

fn run_hints(dir: &Path) -> RunHints {
    let read = |name: &str| -> Value {
        files::read_bounded(&dir.join(name), files::RESULTS_LIMIT, "a run's result file")
            .ok()
            .and_then(|t| serde_json::from_slice(&t).ok())
            .unwrap_or(Value::Null)
    };
    let run = read("run.json");
    let result = read("result.json");
    let mode = run
        .get("mode")
        .and_then(|m| serde_json::from_value::<DriverMode>(m.clone()).ok());
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    RunHints {
        mode,
        outcome: result
            .get("judgement")
            .and_then(|j| text(j, "outcome"))
            .or_else(|| text(&result, "outcome")),
        source: format!(
            "{}/{}",
            text(&run, "scenario").unwrap_or_else(|| "?".into()),
            text(&run, "variant").unwrap_or_else(|| "?".into())
        ),
    }
}

/// Every file under a folder, sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// `<session>/subagents/agent-<id>.jsonl` (nested folders too), with their meta files.
fn subagent_files(session_dir: &Path) -> Result<Vec<SubagentFile>, ImportError> {
    let dir = session_dir.join("subagents");
    if !dir.is_dir() {
        return Ok(vec![]);
    }
    let mut out = Vec::new();
    for path in walk(&dir) {
        let Some(stem) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(agent_id) = stem
            .strip_prefix("agent-")
            .and_then(|s| s.strip_suffix(".jsonl"))
        else {
            continue;
        };
        let meta_path = path.with_extension("meta.json");
        let meta = files::read_bounded(&meta_path, files::SIDE_FILE_LIMIT, "a meta file")
            .ok()
            .and_then(|t| serde_json::from_slice(&t).ok());
        out.push(SubagentFile {
            agent_id: agent_id.to_string(),
            file: read_file(&path)?,
            meta,
        });
    }
    Ok(out)
}

/// Reads one JSONL transcript; anything that is not one is a located error.
pub fn read_file(path: &Path) -> Result<TranscriptFile, ImportError> {
    let bytes = files::read_bounded(path, files::TRANSCRIPT_LIMIT, "a transcript").map_err(
        |e| match e {
            files::ReadError::Io(e) => {
                ImportError::Input(format!("{}: cannot read: {e}", path.display()))
            }
            other => ImportError::Input(format!("{}: {other}", path.display())),
        },
    )?;
    let records = parse(path, &bytes)?;
    Ok(TranscriptFile {
        path: path.to_path_buf(),
        records,
    })
}

/// Parses JSONL bytes into records, checking that they are a Claude Code transcript.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Record>, ImportError> {
    let at = |line: usize, message: String| ImportError::Located {
        path: path.display().to_string(),
        line,
        message,
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(at(1, "empty file: no transcript records".into()));
    }
    if let Some(offset) = bytes.iter().position(|b| *b == 0) {
        return Err(at(
            line_of(bytes, offset),
            format!("binary data (a NUL byte at offset {offset}): not a JSONL transcript"),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        at(
            line_of(bytes, e.valid_up_to()),
            format!(
                "binary data (invalid UTF-8 at offset {}): not a JSONL transcript",
                e.valid_up_to()
            ),
        )
    })?;
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line).map_err(|e| {
            let what = if e.is_eof() {
                "truncated line"
            } else {
                "not a JSON line"
            };
            at(i + 1, format!("{what}: {e}"))
        })?;
        if !value.is_object() {
            return Err(at(
                i + 1,
                format!(
                    "a JSON {}, not a transcript record (an object with `type`)",
                    json_kind(&value)
                ),
            ));
        }
        records.push(Record { line: i + 1, value });
    }
    let conversational = records.iter().any(|r| {
        matches!(r.kind(), Some("user" | "assistant")) && r.value.get("message").is_some()
    });
    if !conversational {
        let Some(first) = records.first() else {
            return Err(at(1, "empty file: no transcript records".into()));
        };
        let keys: Vec<&str> = first
            .value
            .as_object()
            .map(|m| m.keys().map(String::as_str).take(6).collect())
            .unwrap_or_default();
        return Err(at(
            first.line,
            format!(
                "not a Claude Code transcript: no `user` or `assistant` record with a `message` (this line's keys: {})",
                keys.join(", ")
            ),
        ));
    }
    Ok(records)
}

fn line_of(bytes: &[u8], offset: usize) -> usize {
    bytes[..offset.min(bytes.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(bytes: &[u8]) -> String {
        parse(Path::new("t.jsonl"), bytes).unwrap_err().to_string()
    }

    #[test]
    fn what_is_not_a_transcript_is_one_located_line() {
        let user = r#"{"type":"user","message":{"role":"user","content":"hi"}}"#;
        assert_eq!(err(b""), "t.jsonl:1: empty file: no transcript records");
        assert_eq!(
            err(b"\n  \n"),
            "t.jsonl:1: empty file: no transcript records"
        );
        assert!(
            err(format!("{user}\n{{\"type\":\"user\",\"mess").as_bytes())
                .starts_with("t.jsonl:2: truncated line: EOF while parsing"),
        );
        assert!(err(b"{\"a\":1}\n\x00\x01\x02").starts_with("t.jsonl:2: binary data (a NUL byte"));
        assert!(err(b"\xff\xfe{}").starts_with("t.jsonl:1: binary data (invalid UTF-8"));
        assert!(err(b"[1,2]").starts_with("t.jsonl:1: a JSON array, not a transcript record"));
        assert!(
            err(b"{\"line\":{},\"t_ms\":1}\n")
                .starts_with("t.jsonl:1: not a Claude Code transcript: no `user` or `assistant`"),
        );
        assert!(err(format!("{user}\nnope").as_bytes()).starts_with("t.jsonl:2: not a JSON line"));
        let ok = parse(Path::new("t.jsonl"), format!("\n{user}\n").as_bytes()).unwrap();
        assert_eq!(ok[0].line, 2);
    }
}
