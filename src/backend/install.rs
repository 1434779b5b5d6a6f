//! Installing published Claude Code versions into a per-version cache, and the version list.
//!
//! Each version lives in `<cache>/claude-code/<version>/` and is never reinstalled. An install
//! goes to a `.partial` folder and is renamed into place only after `--version` answers, under
//! a per-version file lock, so concurrent matrix jobs and interrupted installs never leave a
//! half-installed version behind. npm's own cache is kept inside ours, away from the real HOME.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{BackendKind, Cli};

pub const PACKAGE: &str = "@anthropic-ai/claude-code";

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("`{0}` is not a version (expected e.g. 2.1.332, latest or latest~3)")]
    BadVersion(String),
    #[error("cannot run npm ({0}); install Node.js and npm, or pass --claude-bin PATH")]
    NoNpm(String),
    #[error("npm could not install {PACKAGE}@{version}: {detail}")]
    Npm { version: String, detail: String },
    #[error("the installed {PACKAGE}@{version} has no runnable entry point: {detail}")]
    NoEntry { version: String, detail: String },
    #[error("cache folder {path}: {source}")]
    Cache {
        path: String,
        source: std::io::Error,
    },
    #[error("{0} is not an executable file")]
    NotExecutable(String),
    #[error("cannot list published versions: {0}")]
    Versions(String),
}

/// `$WAKEPROBE_CACHE`, else `$XDG_CACHE_HOME/wakeprobe`, else `~/.cache/wakeprobe`.
pub fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("WAKEPROBE_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("wakeprobe");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".cache").join("wakeprobe")
}

fn versions_dir(root: &Path) -> PathBuf {
    root.join("claude-code")
}

pub fn is_version(v: &str) -> bool {
    let core = v.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
}

/// The installed CLI for `version`, installing it first if the cache does not have it.
/// `progress` hears one line before a (slow) install starts.
pub fn ensure(root: &Path, version: &str, progress: &dyn Fn(&str)) -> Result<Cli, InstallError> {
    if !is_version(version) {
        return Err(InstallError::BadVersion(version.to_string()));
    }
    let dir = versions_dir(root);
    std::fs::create_dir_all(&dir).map_err(|source| InstallError::Cache {
        path: dir.display().to_string(),
        source,
    })?;
    let target = dir.join(version);
    if let Ok(cli) = installed(&target, version) {
        return Ok(cli);
    }
    let _lock = FileLock::acquire(&dir.join(format!(".{version}.lock")))?;
    if let Ok(cli) = installed(&target, version) {
        return Ok(cli); // another job installed it while we waited
    }
    progress(&format!(
        "installing {PACKAGE}@{version} into {} (once per version)",
        target.display()
    ));
    let partial = dir.join(format!(".{version}.partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial).map_err(|source| InstallError::Cache {
        path: partial.display().to_string(),
        source,
    })?;
    let out = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(&partial)
        .arg(format!("{PACKAGE}@{version}"))
        .env("npm_config_cache", root.join("npm-cache"))
        .env("npm_config_update_notifier", "false")
        .output()
        .map_err(|e| InstallError::NoNpm(e.to_string()))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(InstallError::Npm {
            version: version.to_string(),
            detail: last_lines(&String::from_utf8_lossy(&out.stderr), 4),
        });
    }
    let cli = installed(&partial, version).inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&partial);
    })?;
    drop(cli);
    let _ = std::fs::remove_dir_all(&target);
    std::fs::rename(&partial, &target).map_err(|source| InstallError::Cache {
        path: target.display().to_string(),
        source,
    })?;
    installed(&target, version)
}

/// The CLI in an install folder, if it is complete.
fn installed(dir: &Path, version: &str) -> Result<Cli, InstallError> {
    let package = dir.join("node_modules").join(PACKAGE);
    let no_entry = |detail: String| InstallError::NoEntry {
        version: version.to_string(),
        detail,
    };
    let manifest: serde_json::Value = std::fs::read(package.join("package.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(|| no_entry(format!("no package.json in {}", package.display())))?;
    let bin = match &manifest["bin"] {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Object(map) => map
            .get("claude")
            .or_else(|| map.values().next())
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    };
    if bin.is_empty() {
        return Err(no_entry("package.json has no `bin`".into()));
    }
    let entry = package.join(&bin);
    if !entry.exists() {
        return Err(no_entry(format!("{} is missing", entry.display())));
    }
    let (program, leading_args) = if bin.ends_with(".js") || bin.ends_with(".mjs") {
        let node =
            find_on_path("node").ok_or_else(|| no_entry("it needs `node` on PATH".into()))?;
        (node, vec![entry.display().to_string()])
    } else {
        (entry, vec![])
    };
    Ok(Cli {
        kind: BackendKind::Claude,
        program,
        leading_args,
        version: version.to_string(),
        spec: version.to_string(),
    })
}

/// A CLI given by path: its version is asked from the binary itself.
pub fn from_path(path: &Path) -> Result<Cli, InstallError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path)
        .map_err(|_| InstallError::NotExecutable(path.display().to_string()))?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(InstallError::NotExecutable(path.display().to_string()));
    }
    let version = ask_version(path).unwrap_or_else(|| "unknown".into());
    Ok(Cli {
        kind: BackendKind::Claude,
        program: path.to_path_buf(),
        leading_args: vec![],
        version,
        spec: path.display().to_string(),
    })
}

/// `claude --version` prints `2.1.332 (Claude Code)`; runs with an empty HOME.
fn ask_version(program: &Path) -> Option<String> {
    let home = tempfile::tempdir().ok()?;
    let out = Command::new(program)
        .arg("--version")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("DISABLE_AUTOUPDATER", "1")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .next()
        .filter(|v| is_version(v))
        .map(str::to_string)
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|p| p.join(name))
        .find(|p| p.is_file())
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// Every published version, oldest first (`npm view PACKAGE versions --json`).
pub fn published_versions(root: &Path) -> Result<Vec<String>, InstallError> {
    let out = Command::new("npm")
        .args(["view", PACKAGE, "versions", "--json"])
        .env("npm_config_cache", root.join("npm-cache"))
        .env("npm_config_update_notifier", "false")
        .output()
        .map_err(|e| InstallError::NoNpm(e.to_string()))?;
    if !out.status.success() {
        return Err(InstallError::Versions(last_lines(
            &String::from_utf8_lossy(&out.stderr),
            3,
        )));
    }
    let versions: Vec<String> = serde_json::from_slice(&out.stdout)
        .map_err(|e| InstallError::Versions(format!("npm printed no version list: {e}")))?;
    Ok(versions
        .into_iter()
        .filter(|v| is_version(v) && !v.contains('-'))
        .collect())
}

/// Resolves `latest`, `latest~K` or an exact version against the published list.
pub fn resolve_version(spec: &str, published: &[String]) -> Result<String, InstallError> {
    let bad = || InstallError::BadVersion(spec.to_string());
    if let Some(rest) = spec.strip_prefix("latest") {
        let back: usize = match rest.strip_prefix('~') {
            Some(k) => k.parse().map_err(|_| bad())?,
            None if rest.is_empty() => 0,
            None => return Err(bad()),
        };
        return published
            .len()
            .checked_sub(back + 1)
            .map(|i| published[i].clone())
            .ok_or_else(|| {
                InstallError::Versions(format!(
                    "`{spec}` goes back further than the {} published versions",
                    published.len()
                ))
            });
    }
    if !is_version(spec) {
        return Err(bad());
    }
    Ok(spec.to_string())
}

/// One cached version: its folder and size on disk.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CachedVersion {
    pub version: String,
    pub path: PathBuf,
    pub bytes: u64,
}

pub fn cached_versions(root: &Path) -> Vec<CachedVersion> {
    let Ok(entries) = std::fs::read_dir(versions_dir(root)) else {
        return vec![];
    };
    let mut out: Vec<CachedVersion> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let version = e.file_name().to_string_lossy().to_string();
            is_version(&version).then(|| CachedVersion {
                bytes: dir_size(&e.path()),
                path: e.path(),
                version,
            })
        })
        .collect();
    out.sort_by_key(|a| version_key(&a.version));
    out
}

/// Sort key for `x.y.z` versions.
pub fn version_key(v: &str) -> Vec<u64> {
    v.split(['-', '+'])
        .next()
        .unwrap_or("")
        .split('.')
        .map(|p| p.parse().unwrap_or(0))
        .collect()
}

fn dir_size(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if meta.is_dir() {
        std::fs::read_dir(path)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| dir_size(&e.path()))
                    .sum()
            })
            .unwrap_or(0)
    } else {
        meta.len()
    }
}

/// An exclusive `flock` held until drop.
struct FileLock {
    _file: std::fs::File,
}

impl FileLock {
    fn acquire(path: &Path) -> Result<FileLock, InstallError> {
        use std::os::fd::AsRawFd;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|source| InstallError::Cache {
                path: path.display().to_string(),
                source,
            })?;
        // SAFETY: flock on a descriptor we own; released when the file closes.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if rc != 0 {
            return Err(InstallError::Cache {
                path: path.display().to_string(),
                source: std::io::Error::last_os_error(),
            });
        }
        Ok(FileLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_validated_and_resolved() {
        assert!(is_version("2.1.332"));
        assert!(is_version("1.0.0-beta.1"));
        assert!(!is_version("2.1"));
        assert!(!is_version("2.1.x"));
        assert!(!is_version("2.1.3; rm -rf /"));
        let published: Vec<String> = ["2.1.219", "2.1.228", "2.1.300", "2.1.332"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(resolve_version("latest", &published).unwrap(), "2.1.332");
        assert_eq!(resolve_version("latest~3", &published).unwrap(), "2.1.219");
        assert!(resolve_version("latest~4", &published).is_err());
        assert!(resolve_version("latest~x", &published).is_err());
        assert_eq!(resolve_version("2.1.1", &published).unwrap(), "2.1.1");
        assert!(version_key("2.1.10") > version_key("2.1.9"));
    }

    #[test]
    fn a_missing_install_is_not_installed() {
        let dir = tempfile::tempdir().unwrap();
        assert!(installed(dir.path(), "2.1.332").is_err());
        assert!(cached_versions(dir.path()).is_empty());
        assert!(matches!(
            ensure(dir.path(), "nope", &|_| {}),
            Err(InstallError::BadVersion(_))
        ));
    }
}
