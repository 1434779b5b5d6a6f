//! Writing a run's folder: raw evidence, `timeline.json`, `run.json`, all redacted, each file
//! written atomically (temp file, fsync, rename), `run.json` last so a folder without it is a
//! run that did not finish writing.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::redact::Redactor;
use crate::driver::RunInfo;
use crate::evidence::Timeline;
use crate::scenario::Plan;

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
/// part, even if the harness is killed mid-write. The data is written to an unnamed file
/// (`O_TMPFILE`), fsynced, given a temporary name and renamed over `path`; only the last two
/// steps, microseconds apart, ever show a name. Where `O_TMPFILE` is unsupported, a named
/// temp file is used instead.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    use std::os::unix::ffi::OsStrExt;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(err(dir))?;
    let c_dir = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|e| StoreError {
        path: dir.display().to_string(),
        source: std::io::Error::other(e),
    })?;
    // SAFETY: open(2) with a valid C string; the descriptor is owned by the File below.
    let fd = unsafe {
        libc::open(
            c_dir.as_ptr(),
            libc::O_TMPFILE | libc::O_WRONLY | libc::O_CLOEXEC,
            0o644,
        )
    };
    if fd < 0 {
        return write_named_temp(dir, path, bytes);
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    let mut file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    file.write_all(bytes).map_err(err(path))?;
    file.sync_all().map_err(err(path))?;
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.{}.{n}.partial", std::process::id()));
    let proc_path = std::ffi::CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL");
    let c_temp = std::ffi::CString::new(temp.as_os_str().as_bytes()).map_err(|e| StoreError {
        path: temp.display().to_string(),
        source: std::io::Error::other(e),
    })?;
    // SAFETY: linkat with valid C strings gives the unnamed file its temporary name.
    let rc = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            proc_path.as_ptr(),
            libc::AT_FDCWD,
            c_temp.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if rc != 0 {
        return write_named_temp(dir, path, bytes);
    }
    std::fs::rename(&temp, path).map_err(|source| {
        let _ = std::fs::remove_file(&temp);
        StoreError {
            path: path.display().to_string(),
            source,
        }
    })
}

fn write_named_temp(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let mut tmp = tempfile::Builder::new()
        .prefix(".wakeprobe-")
        .suffix(".partial")
        .tempfile_in(dir)
        .map_err(err(dir))?;
    tmp.write_all(bytes).map_err(err(path))?;
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

/// Everything a run leaves behind.
pub struct RunEvidence<'a> {
    pub info: &'a RunInfo,
    pub timeline: &'a Timeline,
    pub plan: &'a Plan,
    pub stream: &'a [(f64, String)],
    pub hooks: &'a [(f64, String)],
    /// The sandbox's evidence folder (API journal, request bodies, stderr, pty bytes).
    pub raw_dir: &'a Path,
    /// The CLI's transcripts folder in the sandbox HOME.
    pub transcripts: &'a Path,
    pub scenario_source: &'a str,
}

pub fn write_run_evidence(dir: &Path, r: &Redactor, ev: &RunEvidence) -> Result<(), StoreError> {
    std::fs::create_dir_all(dir).map_err(err(dir))?;
    // Raw lines are kept byte for byte (key order included): guards and parsers downstream may
    // depend on the exact text the CLI produced.
    write_lines(
        &dir.join("stream.jsonl"),
        r,
        ev.stream.iter().map(|(t, line)| raw_line(*t, "line", line)),
    )?;
    write_lines(
        &dir.join("hooks.jsonl"),
        r,
        ev.hooks
            .iter()
            .map(|(t, payload)| raw_line(*t, "payload", payload)),
    )?;
    copy_redacted(ev.raw_dir, dir, r)?;
    if ev.transcripts.is_dir() {
        copy_redacted(ev.transcripts, &dir.join("transcripts"), r)?;
    }
    write_atomic(
        &dir.join("scenario.toml"),
        r.text(ev.scenario_source).as_bytes(),
    )?;
    write_json(&dir.join("plan.json"), r, ev.plan)?;
    write_json(&dir.join("timeline.json"), r, ev.timeline)?;
    write_json(&dir.join("run.json"), r, ev.info)
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
}
