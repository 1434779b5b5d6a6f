//! Run folders on disk: written here (and redacted on the way, `redact`), read back by
//! `saved`.
//!
//! Writing files: every file atomically (a temp file in the same folder, fsynced, renamed over
//! the target), and a run's folder in an order that tells a finished folder from a broken one:
//! `run.json` first, marked incomplete, then the evidence and the reports, then `run.json`
//! again, complete. A folder whose `run.json` stays incomplete (a full disk, say) is skipped by
//! `report` and `merge`. An invocation's folder is marked alike, by its `invocation.json`.

pub mod output;
pub mod redact;
pub mod saved;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::classify::result::{InvocationMark, RunResult};
use crate::evidence::Timeline;
use crate::evidence::run::{RawEvidence, RunInfo};
use crate::scenario::Plan;
use redact::Redactor;

/// File names of a run's reports, next to its evidence.
pub const RESULT_FILE: &str = "result.json";
pub const REPORT_FILE: &str = "report.md";
pub const PICTURE_FILE: &str = "timeline.svg";
/// Mode `command`: the lines between the integration and the CLI (`{"t_ms":..,"from_cli":..}`
/// for what the CLI printed, `"to_cli"` for what the integration wrote to it).
pub const CLI_STREAM_FILE: &str = "cli-stream.jsonl";
/// The issue title for `report.md`, one line (`gh issue create --title "$(cat title.txt)"`).
pub const TITLE_FILE: &str = "title.txt";

#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct StoreError {
    pub path: String,
    pub source: std::io::Error,
}

fn err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError {
        path: path.display().to_string(),
        source,
    }
}

/// Writes `bytes` to `path` so that a reader sees the old file or the whole new one, never a
/// part, even if the harness is killed mid-write: a temp file in the same folder is written,
/// fsynced, and renamed over `path`. A killed writer leaves at most a `.wakeprobe-*.partial`
/// temp file, never a partial `path`. The file's mode follows the umask.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(err(dir))?;
    // Created as any program creates a file (0666 less the umask), not tempfile's private
    // 0600: a report written by `sudo wakeprobe run` stays readable by the user under the
    // usual umask 022, and a private one under 077.
    let mut tmp = tempfile::Builder::new()
        .prefix(".wakeprobe-")
        .suffix(".partial")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(err(dir))?;
    // On the file itself: the error is the system's (`No space left on device`), not one
    // wrapped with the temp file's name.
    tmp.as_file_mut().write_all(bytes).map_err(err(path))?;
    tmp.as_file().sync_all().map_err(err(path))?;
    tmp.persist(path).map_err(|e| StoreError {
        path: path.display().to_string(),
        source: e.error,
    })?;
    Ok(())
}

/// Serializes `value` as pretty JSON, redacts it, and writes it atomically.
pub fn write_json<T: Serialize>(
    path: &Path,
    redactor: &Redactor,
    value: &T,
) -> Result<(), StoreError> {
    let text = serde_json::to_string_pretty(value).map_err(|e| StoreError {
        path: path.display().to_string(),
        source: std::io::Error::other(e),
    })?;
    write_atomic(path, redactor.text(&(text + "\n")).as_bytes())
}

/// Points the symlink `link` at `target` (a path relative to the link's folder), replacing an
/// earlier link atomically: a new link is made beside it and renamed over it, so a reader
/// always finds the old target or the new one. Anything in its place that is not a symlink is
/// left alone (an error).
pub fn point_link(link: &Path, target: &Path) -> Result<(), StoreError> {
    if std::fs::symlink_metadata(link).is_ok_and(|m| !m.file_type().is_symlink()) {
        return Err(StoreError {
            path: link.display().to_string(),
            source: std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "not a symlink: left as it is",
            ),
        });
    }
    let dir = link.parent().unwrap_or(Path::new("."));
    let name = link.file_name().unwrap_or_default().to_string_lossy();
    for attempt in 0..100u32 {
        let temp = dir.join(format!(".{name}.{}-{attempt}.partial", std::process::id()));
        match std::os::unix::fs::symlink(target, &temp) {
            Ok(()) => {
                return std::fs::rename(&temp, link).map_err(|e| {
                    let _ = std::fs::remove_file(&temp);
                    err(link)(e)
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(err(&temp)(e)),
        }
    }
    Err(err(link)(std::io::Error::other("no free temporary name")))
}

/// Creates `dir` and its parents; `dir` itself must not exist yet, so no two runs can share a
/// folder.
pub fn create_exclusive(dir: &Path) -> Result<(), StoreError> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(err(parent))?;
    }
    std::fs::create_dir(dir).map_err(err(dir))
}

/// The mark of an invocation's folder (see [`InvocationMark`]).
pub const INVOCATION_FILE: &str = "invocation.json";

/// Writes an invocation folder's mark.
pub fn mark_invocation(dir: &Path, mark: &InvocationMark) -> Result<(), StoreError> {
    write_json(&dir.join(INVOCATION_FILE), &Redactor::basic(), mark)
}

/// Marks a run folder as being written (`run.json` with `complete: false`).
pub fn begin_run(dir: &Path, r: &Redactor, info: &RunInfo) -> Result<(), StoreError> {
    let mut pending = info.clone();
    pending.complete = false;
    write_json(&dir.join("run.json"), r, &pending)
}

/// The files of a whole run folder, in the order they are written after `run.json` (the
/// reports beside `result.json` vary with the run and are not listed).
const RUN_FILES: &[&str] = &[
    "stream.jsonl",
    "hooks.jsonl",
    "scenario.toml",
    "plan.json",
    "timeline.json",
    RESULT_FILE,
    REPORT_FILE,
];

/// Marks a run folder whose writing failed with `error`: `run.json` stays incomplete and says
/// why and which of its files are missing, as an invocation's mark does. A disk too full for
/// that mark loses the half-written files instead (a folder is whole or marked, never a half
/// report that looks like one), and the mark is written again.
pub fn fail_run(dir: &Path, r: &Redactor, info: &RunInfo, error: &StoreError) {
    let mark = |info: &RunInfo| {
        let missing: Vec<&str> = RUN_FILES
            .iter()
            .copied()
            .filter(|f| !dir.join(f).exists())
            .collect();
        let mut failed = info.clone();
        failed.complete = false;
        failed.incomplete = Some(format!(
            "{error}; missing: {}",
            if missing.is_empty() {
                "the reports beside result.json".to_string()
            } else {
                missing.join(", ")
            }
        ));
        write_json(&dir.join("run.json"), r, &failed)
    };
    if mark(info).is_ok() {
        return;
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            if path.file_name().is_some_and(|n| n == "run.json") {
                continue;
            }
            let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
        }
    }
    let _ = mark(info);
}

/// Marks a run folder as whole.
pub fn end_run(dir: &Path, r: &Redactor, info: &RunInfo) -> Result<(), StoreError> {
    let mut done = info.clone();
    done.complete = true;
    write_json(&dir.join("run.json"), r, &done)
}

/// Everything a run leaves behind besides its reports.
pub struct RunEvidence<'a> {
    pub timeline: &'a Timeline,
    pub plan: &'a Plan,
    pub raw: &'a RawEvidence,
    pub scenario_source: &'a str,
}

/// The raw evidence, the timeline, the plan and the scenario file, redacted.
pub fn write_run_evidence(dir: &Path, r: &Redactor, ev: &RunEvidence) -> Result<(), StoreError> {
    // Raw lines are kept byte for byte (key order included): guards and parsers downstream may
    // depend on the exact text the CLI produced.
    write_lines(
        &dir.join("stream.jsonl"),
        r,
        ev.raw
            .stream
            .iter()
            .map(|(t, line)| raw_line(*t, "line", line)),
    )?;
    write_lines(
        &dir.join("hooks.jsonl"),
        r,
        ev.raw
            .hooks
            .iter()
            .map(|(t, payload)| raw_line(*t, "payload", payload)),
    )?;
    if !ev.raw.cli_lines.is_empty() {
        write_lines(
            &dir.join(CLI_STREAM_FILE),
            r,
            ev.raw.cli_lines.iter().map(|(t, to_cli, line)| {
                let key = if *to_cli { "to_cli" } else { "from_cli" };
                raw_line(*t, key, line)
            }),
        )?;
    }
    if ev.raw.raw_dir.is_dir() {
        copy_redacted(&ev.raw.raw_dir, dir, r)?;
    }
    if ev.raw.transcripts.is_dir() {
        copy_redacted(&ev.raw.transcripts, &dir.join("transcripts"), r)?;
    }
    write_atomic(
        &dir.join("scenario.toml"),
        r.text(ev.scenario_source).as_bytes(),
    )?;
    write_json(&dir.join("plan.json"), r, ev.plan)?;
    write_json(&dir.join("timeline.json"), r, ev.timeline)
}

/// `{"t_ms":T,"KEY":RAW}` with RAW embedded as is when it is JSON, else as a JSON string.
fn raw_line(t_ms: f64, key: &str, raw: &str) -> String {
    let compact = raw.trim().replace(['\n', '\r'], "");
    let value = if serde_json::from_str::<serde_json::Value>(&compact).is_ok() {
        compact
    } else {
        serde_json::Value::String(raw.to_string()).to_string()
    };
    format!("{{\"t_ms\":{t_ms},\"{key}\":{value}}}")
}

fn write_lines(
    path: &Path,
    r: &Redactor,
    rows: impl Iterator<Item = String>,
) -> Result<(), StoreError> {
    let mut text = String::new();
    for row in rows {
        text.push_str(&row);
        text.push('\n');
    }
    write_atomic(path, r.text(&text).as_bytes())
}

/// Copies a tree, redacting every file's content and every file name.
fn copy_redacted(from: &Path, to: &Path, r: &Redactor) -> Result<(), StoreError> {
    let entries = std::fs::read_dir(from).map_err(err(from))?;
    for entry in entries.filter_map(Result::ok) {
        let name = r.text(&entry.file_name().to_string_lossy());
        let target: PathBuf = to.join(name);
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path).map_err(err(&path))?;
        if meta.is_dir() {
            copy_redacted(&path, &target, r)?;
        } else if meta.is_file() {
            let bytes = std::fs::read(&path).map_err(err(&path))?;
            write_atomic(&target, &r.bytes(&bytes))?;
        }
    }
    Ok(())
}

/// What a finished run's folder is made of.
pub struct RunFiles<'a> {
    pub result: &'a RunResult,
    pub timeline: &'a Timeline,
    pub raw: &'a RawEvidence,
    pub plan: &'a Plan,
    pub scenario_source: &'a str,
}

/// One run to put on a folder's page: its folder, result and timeline.
pub struct RunRef<'a> {
    pub dir: &'a Path,
    pub result: &'a RunResult,
    pub timeline: &'a Timeline,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_atomic_write_replaces_whole_files_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn a_link_is_replaced_whole_and_a_real_folder_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("latest");
        for run in ["run-1", "run-2"] {
            std::fs::create_dir(dir.path().join(run)).unwrap();
            point_link(&link, Path::new(run)).unwrap();
            assert_eq!(std::fs::read_link(&link).unwrap(), Path::new(run));
        }
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 3, "no temporary link left: {names:?}");
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        assert!(point_link(&real, Path::new("run-2")).is_err());
        assert!(real.is_dir() && !real.is_symlink());
    }

    #[test]
    fn a_taken_temporary_name_is_skipped_and_other_errors_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("latest");
        // A leftover from an earlier attempt of this very process holds the first name.
        let taken = dir
            .path()
            .join(format!(".latest.{}-0.partial", std::process::id()));
        std::fs::write(&taken, "leftover").unwrap();
        point_link(&link, Path::new("run-1")).unwrap();
        assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("run-1"));
        assert_eq!(std::fs::read_to_string(&taken).unwrap(), "leftover");
        // A folder that does not exist is its own error, not a search for a free name.
        let nowhere = dir.path().join("missing/latest");
        let e = point_link(&nowhere, Path::new("run-1")).unwrap_err();
        assert_eq!(e.source.kind(), std::io::ErrorKind::NotFound, "{e}");
    }

    #[test]
    fn json_is_written_pretty_redacted_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.json");
        let r = Redactor::basic();
        let value = serde_json::json!({"key": crate::backend::DUMMY_KEY, "n": 1});
        write_json(&path, &r, &value).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\n  \"key\": \"$API_KEY\",\n  \"n\": 1\n}\n"
        );
    }

    #[test]
    fn a_run_folder_is_marked_incomplete_until_it_is_ended() {
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/runs/seed000-print/run.json"
        );
        let info: RunInfo = serde_json::from_slice(&std::fs::read(fixture).unwrap()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let complete = || {
            let v: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.path().join("run.json")).unwrap())
                    .unwrap();
            v["complete"].as_bool()
        };
        begin_run(dir.path(), &Redactor::basic(), &info).unwrap();
        assert_eq!(complete(), Some(false));
        end_run(dir.path(), &Redactor::basic(), &info).unwrap();
        assert_eq!(complete(), Some(true));
    }

    fn fixture<T: serde::de::DeserializeOwned>(file: &str) -> T {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/runs/seed000-print")
            .join(file);
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn run_evidence_is_written_whole_and_redacted_with_raw_lines_kept() {
        let key = crate::backend::DUMMY_KEY;
        let sandbox = tempfile::tempdir().unwrap();
        let raw_dir = sandbox.path().join("raw");
        std::fs::create_dir_all(raw_dir.join("requests")).unwrap();
        std::fs::write(raw_dir.join("stderr.log"), format!("key {key}\n")).unwrap();
        std::fs::write(raw_dir.join("requests/1.json"), "{}").unwrap();
        let transcripts = sandbox.path().join("transcripts");
        std::fs::create_dir_all(&transcripts).unwrap();
        std::fs::write(transcripts.join(format!("{key}.jsonl")), "line\n").unwrap();
        let raw = RawEvidence {
            cli_lines: vec![],
            stream: vec![
                (1.5, "{\"b\":1,\"a\":2}".to_string()),
                (2.0, "not json".to_string()),
            ],
            hooks: vec![(3.0, "{\n\"hook\": \"Stop\"\n}".to_string())],
            raw_dir,
            transcripts,
        };
        let timeline: Timeline = fixture("timeline.json");
        let plan: Plan = fixture("plan.json");
        let out = tempfile::tempdir().unwrap();
        let evidence = RunEvidence {
            timeline: &timeline,
            plan: &plan,
            raw: &raw,
            scenario_source: &format!("# {key}\n"),
        };
        write_run_evidence(out.path(), &Redactor::basic(), &evidence).unwrap();
        let read = |f: &str| std::fs::read_to_string(out.path().join(f)).unwrap();
        // Raw JSON keeps its key order; other text becomes a JSON string.
        assert_eq!(
            read("stream.jsonl"),
            "{\"t_ms\":1.5,\"line\":{\"b\":1,\"a\":2}}\n{\"t_ms\":2,\"line\":\"not json\"}\n"
        );
        assert_eq!(
            read("hooks.jsonl"),
            "{\"t_ms\":3,\"payload\":{\"hook\": \"Stop\"}}\n"
        );
        assert_eq!(read("stderr.log"), "key $API_KEY\n");
        assert_eq!(read("requests/1.json"), "{}");
        assert_eq!(read("transcripts/$API_KEY.jsonl"), "line\n");
        assert_eq!(read("scenario.toml"), "# $API_KEY\n");
        let again: Timeline = serde_json::from_str(&read("timeline.json")).unwrap();
        assert_eq!(again.events.len(), timeline.events.len());
        let plan_again: serde_json::Value = serde_json::from_str(&read("plan.json")).unwrap();
        assert_eq!(plan_again["scenario"], serde_json::json!(plan.scenario));
    }

    #[test]
    fn a_run_folder_is_created_once() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("x/y");
        create_exclusive(&run).unwrap();
        let again = create_exclusive(&run).unwrap_err();
        assert_eq!(again.source.kind(), std::io::ErrorKind::AlreadyExists);
    }
}
