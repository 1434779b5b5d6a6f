//! Reading saved runs back: a run folder's evidence (`run.json`, `timeline.json`, `plan.json`,
//! `scenario.toml`) is enough to judge it again and re-render every report, without running
//! anything; its raw evidence (stream lines, hook payloads, request bodies) is read here too.
//! The one reader of run folders: `wakeprobe report`, `merge` and `conform` use it.

use std::path::{Path, PathBuf};

use crate::checks::RawSources;
use crate::classify;
use crate::classify::result::RunResult;
use crate::evidence::Timeline;
use crate::evidence::run::RunInfo;
use crate::scenario::Plan;

#[derive(Debug, thiserror::Error)]
pub enum SavedError {
    #[error("{path}: {message}")]
    Read { path: String, message: String },
    #[error("{0}: no run folders (folders holding run.json) in it")]
    Empty(String),
    #[error(
        "{dir}: the run's folder was not completely written (its run.json says incomplete{}); skipped",
        why.as_deref().map(|why| format!(": {why}")).unwrap_or_default()
    )]
    Incomplete { dir: String, why: Option<String> },
    #[error(transparent)]
    Store(#[from] super::StoreError),
}

/// One saved run.
pub struct SavedRun {
    pub dir: PathBuf,
    pub info: RunInfo,
    pub timeline: Timeline,
    pub plan: Plan,
    pub scenario_source: Option<String>,
    /// The hook payloads of `hooks.jsonl` and the lines of `stream.jsonl`, in order (empty
    /// where missing).
    pub raw: RawSources,
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, SavedError> {
    let bytes = std::fs::read(path).map_err(|e| SavedError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    serde_json::from_slice(&bytes).map_err(|e| SavedError::Read {
        path: path.display().to_string(),
        message: format!("not a wakeprobe file of this version: {e}"),
    })
}

impl SavedRun {
    pub fn load(dir: &Path) -> Result<SavedRun, SavedError> {
        let info: RunInfo = read_json(&dir.join("run.json"))?;
        if !info.complete {
            return Err(SavedError::Incomplete {
                dir: dir.display().to_string(),
                why: info.incomplete.clone(),
            });
        }
        Ok(SavedRun {
            dir: dir.to_path_buf(),
            info,
            timeline: read_json(&dir.join("timeline.json"))?,
            plan: read_json(&dir.join("plan.json"))?,
            scenario_source: std::fs::read_to_string(dir.join("scenario.toml")).ok(),
            raw: read_raw_sources(dir),
        })
    }

    /// The CLI's stdout lines of `stream.jsonl`, each as it was printed, in order (a line
    /// printed as text is a string).
    pub fn stream_lines(&self) -> Vec<serde_json::Value> {
        self.raw.lines.iter().map(|(_, l)| l.clone()).collect()
    }

    /// The body of model request `seq` (`requests/NNNN.json`), where it was kept.
    pub fn request_body(&self, seq: u64) -> Option<serde_json::Value> {
        let bytes = std::fs::read(self.dir.join("requests").join(format!("{seq:04}.json"))).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Judges the saved timeline with the saved plan's watch list and checks.
    pub fn judge(&self) -> RunResult {
        let judgement = classify::judge_run(&self.info, &self.timeline, &self.plan, &self.raw);
        RunResult::new(&self.info, judgement)
    }

    /// The result its reports were written from (`result.json`); judged afresh when the folder
    /// has none that this version reads.
    pub fn written_result(&self) -> RunResult {
        read_json(&self.dir.join(crate::store::RESULT_FILE)).unwrap_or_else(|_| self.judge())
    }
}

/// The hook payloads and stream lines of a run folder, as checks read them.
pub fn read_raw_sources(dir: &Path) -> RawSources {
    RawSources {
        payloads: read_payloads(&dir.join("hooks.jsonl")),
        lines: read_stream_lines(&dir.join("stream.jsonl")),
    }
}

/// The stamped lines of a saved `stream.jsonl` (`{"t_ms":..,"line":..}`), in order; a line
/// the CLI printed as text is kept as a string.
fn read_stream_lines(path: &Path) -> Vec<(f64, serde_json::Value)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|row| Some((row.get("t_ms")?.as_f64()?, row.get("line")?.clone())))
        .collect()
}

/// The payloads of a saved `hooks.jsonl` (`{"t_ms":..,"payload":..}` lines), in order; a line
/// that does not parse keeps its place as `null`, so hook events still find theirs.
fn read_payloads(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .ok()
                .and_then(|v| v.get("payload").cloned())
                .unwrap_or(serde_json::Value::Null)
        })
        .collect()
}

/// Run folders under `dir` (itself, a run-id folder, or anything above), sorted.
pub fn find_runs(dir: &Path) -> Result<Vec<PathBuf>, SavedError> {
    let unreadable = |message: String| SavedError::Read {
        path: dir.display().to_string(),
        message,
    };
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(meta) => {
            let kind = match meta.is_file() {
                true => "a file",
                false => crate::os::files::describe(meta.file_type()),
            };
            return Err(unreadable(format!(
                "not a folder ({kind}): give a folder of saved runs"
            )));
        }
        Err(e) => return Err(unreadable(format!("cannot read: {e}"))),
    }
    let mut found = Vec::new();
    walk(dir, &mut found, 0);
    found.sort();
    if found.is_empty() {
        return Err(SavedError::Empty(dir.display().to_string()));
    }
    Ok(found)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>, depth: usize) {
    if dir.join("run.json").is_file() {
        found.push(dir.to_path_buf());
        return;
    }
    if depth > 4 {
        return;
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.filter_map(Result::ok) {
            // `latest` is a symlink to a run folder found by its own name.
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&e.path(), found, depth + 1);
            }
        }
    }
}
