//! Installing published Claude Code versions into a per-version cache, and the version list.
//!
//! Each version lives in `<cache>/claude-code/<version>/` and is never reinstalled. An install
//! goes to a `.partial` folder and is renamed into place only after `--version` answers, under
//! a per-version file lock, so concurrent matrix jobs and interrupted installs never leave a
//! half-installed version behind. npm's own cache is kept inside ours, away from the real HOME.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{BackendKind, Cli};
use crate::os::subprocess::{Finished, last_lines, run_bounded};

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

/// A semver version (`2.1.332`, `1.0.0-beta.1`): the only version text that reaches npm.
pub fn is_version(v: &str) -> bool {
    semver::Version::parse(v).is_ok()
}

/// How long `--version` may take before an install counts as broken.
const VERSION_LIMIT: Duration = Duration::from_secs(30);
/// How long one `npm install` may take.
const NPM_LIMIT: Duration = Duration::from_secs(600);

/// The installed CLI for `version`, installing it first if the cache does not have it. A
/// cached install that no longer runs (`--version` fails: a truncated binary, say) is
/// reinstalled, and `progress` says so. `progress` also hears one line before an install.
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
    match installed(&target, version) {
        Ok(cli) => return Ok(cli), // another job installed it while we waited
        Err(e) if target.exists() => progress(&format!(
            "the cached {PACKAGE}@{version} does not run ({e}); reinstalling it"
        )),
        Err(_) => progress(&format!(
            "installing {PACKAGE}@{version} into {} (once per version)",
            target.display()
        )),
    }
    let partial = dir.join(format!(".{version}.partial-{}", std::process::id()));
    let result = install_into(root, &partial, version).and_then(|()| {
        let _ = std::fs::remove_dir_all(&target);
        std::fs::rename(&partial, &target).map_err(|source| InstallError::Cache {
            path: target.display().to_string(),
            source,
        })
    });
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&partial);
    }
    result?;
    installed(&target, version)
}

/// `npm install` of one version into an empty `folder`, checked to run.
fn install_into(root: &Path, folder: &Path, version: &str) -> Result<(), InstallError> {
    let _ = std::fs::remove_dir_all(folder);
    std::fs::create_dir_all(folder).map_err(|source| InstallError::Cache {
        path: folder.display().to_string(),
        source,
    })?;
    let npm = duct::cmd!(
        "npm",
        "install",
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--loglevel=error",
        "--prefix",
        folder,
        format!("{PACKAGE}@{version}")
    )
    .env("npm_config_cache", root.join("npm-cache"))
    .env("npm_config_update_notifier", "false")
    .stdin_null()
    .stdout_null()
    .stderr_capture();
    let failed = |detail: String| InstallError::Npm {
        version: version.to_string(),
        detail,
    };
    match run_bounded(&npm, NPM_LIMIT).map_err(|e| InstallError::NoNpm(e.to_string()))? {
        Finished::Exited(out) if out.status.success() => {}
        Finished::Exited(out) => {
            return Err(failed(last_lines(&String::from_utf8_lossy(&out.stderr), 4)));
        }
        Finished::TimedOut => {
            return Err(failed(format!(
                "npm did not finish within {} s",
                NPM_LIMIT.as_secs()
            )));
        }
    }
    installed(folder, version).map(drop)
}

/// The CLI in an install folder, if it is complete and runs.
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
    ask_version(&program, &leading_args).map_err(no_entry)?;
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
    // A binary that does not answer `--version` may still be a CLI under test (a wrapper, a
    // stub); whether it can run at all shows when the run starts it.
    let version = ask_version(path, &[]).unwrap_or_else(|_| "unknown".into());
    Ok(Cli {
        kind: BackendKind::Claude,
        program: path.to_path_buf(),
        leading_args: vec![],
        version,
        spec: path.display().to_string(),
    })
}

/// `claude --version` prints `2.1.332 (Claude Code)`; run with an empty HOME and a bound.
/// The error says how it failed (`killed by SIGSEGV`, `exit 1: ...`).
fn ask_version(program: &Path, leading: &[String]) -> Result<String, String> {
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut args: Vec<String> = leading.to_vec();
    args.push("--version".into());
    let env = [
        (
            "PATH".to_string(),
            std::env::var("PATH").unwrap_or_default(),
        ),
        ("HOME".to_string(), home.path().display().to_string()),
        ("DISABLE_AUTOUPDATER".to_string(), "1".to_string()),
    ];
    let expr = duct::cmd(program, &args)
        .full_env(env)
        .stdin_null()
        .stdout_capture()
        .stderr_capture();
    let out = match run_bounded(&expr, VERSION_LIMIT) {
        Ok(Finished::Exited(out)) => out,
        Ok(Finished::TimedOut) => {
            return Err(format!(
                "`--version` did not answer within {} s",
                VERSION_LIMIT.as_secs()
            ));
        }
        Err(e) => return Err(format!("`--version` could not start: {e}")),
    };
    let status = crate::evidence::ExitDesc::from_std(out.status);
    let text = String::from_utf8_lossy(&out.stdout);
    match text.split_whitespace().next().filter(|v| is_version(v)) {
        Some(v) if status.success() => Ok(v.to_string()),
        _ => Err(format!(
            "`--version` ended with {}{}",
            status.describe(),
            match last_lines(&String::from_utf8_lossy(&out.stderr), 2) {
                e if e.is_empty() => String::new(),
                e => format!(": {e}"),
            }
        )),
    }
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|p| p.join(name))
        .find(|p| p.is_file())
}

/// Every published version, oldest first (`npm view PACKAGE versions --json`).
pub fn published_versions(root: &Path) -> Result<Vec<String>, InstallError> {
    let npm = duct::cmd!("npm", "view", PACKAGE, "versions", "--json")
        .env("npm_config_cache", root.join("npm-cache"))
        .env("npm_config_update_notifier", "false")
        .stdin_null()
        .stdout_capture()
        .stderr_capture();
    let out = match run_bounded(&npm, Duration::from_secs(120))
        .map_err(|e| InstallError::NoNpm(e.to_string()))?
    {
        Finished::Exited(out) => out,
        Finished::TimedOut => {
            return Err(InstallError::Versions(
                "npm view did not answer within 120 s".into(),
            ));
        }
    };
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

/// Removes one cached version, under its install lock (an install of it in progress finishes
/// first); returns the bytes freed. A version that is not cached frees nothing.
pub fn remove(root: &Path, version: &str) -> Result<u64, InstallError> {
    if !is_version(version) {
        return Err(InstallError::BadVersion(version.to_string()));
    }
    let dir = versions_dir(root);
    let target = dir.join(version);
    if !target.exists() {
        return Ok(0);
    }
    let _lock = FileLock::acquire(&dir.join(format!(".{version}.lock")))?;
    let bytes = dir_size(&target);
    std::fs::remove_dir_all(&target).map_err(|source| InstallError::Cache {
        path: target.display().to_string(),
        source,
    })?;
    Ok(bytes)
}

/// Whether a version has a folder in the cache (not whether it still runs).
pub fn is_cached(root: &Path, version: &str) -> bool {
    is_version(version) && versions_dir(root).join(version).is_dir()
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

/// Sort key for versions: semver order (a pre-release before its release); anything that is
/// not semver sorts first.
pub fn version_key(v: &str) -> semver::Version {
    semver::Version::parse(v).unwrap_or(semver::Version::new(0, 0, 0))
}

/// `1.4 GiB`, `512 B`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// The bytes under a folder (symlinks not followed; a file with several hard links in it, as
/// npm leaves the CLI's binary, counted once).
pub fn dir_size(path: &Path) -> u64 {
    let mut seen = std::collections::HashSet::new();
    size_once(path, &mut seen)
}

fn size_once(path: &Path, seen: &mut std::collections::HashSet<(u64, u64)>) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if meta.is_dir() {
        std::fs::read_dir(path)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| size_once(&e.path(), seen))
                    .sum()
            })
            .unwrap_or(0)
    } else if meta.nlink() > 1 && !seen.insert((meta.dev(), meta.ino())) {
        0
    } else {
        meta.len()
    }
}

/// An exclusive `flock` held until drop; the lock file is removed then, so no lock file is
/// left in the cache, whether the install worked or not.
struct FileLock {
    file: std::fs::File,
    path: PathBuf,
}

impl FileLock {
    fn acquire(path: &Path) -> Result<FileLock, InstallError> {
        use std::os::unix::fs::MetadataExt;
        let cache_err = |source: std::io::Error| InstallError::Cache {
            path: path.display().to_string(),
            source,
        };
        loop {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(path)
                .map_err(cache_err)?;
            rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
                .map_err(|e| cache_err(e.into()))?;
            // The holder before us removes the file as it lets go: a lock on that removed file
            // guards nothing, so lock the file that is there now.
            let held = file.metadata().map_err(cache_err)?;
            match std::fs::metadata(path) {
                Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => {
                    return Ok(FileLock {
                        file,
                        path: path.to_path_buf(),
                    });
                }
                _ => continue,
            }
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = rustix::fs::flock(&self.file, rustix::fs::FlockOperation::Unlock);
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
        assert!(version_key("2.1.0-beta.1") < version_key("2.1.0"));
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
        assert_eq!(remove(dir.path(), "2.1.332").unwrap(), 0);
        assert!(matches!(
            remove(dir.path(), "../x"),
            Err(InstallError::BadVersion(_))
        ));
    }

    #[test]
    fn remove_frees_one_version_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        for v in ["1.0.0", "1.0.1"] {
            let folder = versions_dir(dir.path()).join(v);
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(folder.join("blob"), vec![0u8; 1000]).unwrap();
        }
        assert!(is_cached(dir.path(), "1.0.0"));
        assert_eq!(remove(dir.path(), "1.0.0").unwrap(), 1000);
        assert!(!is_cached(dir.path(), "1.0.0") && is_cached(dir.path(), "1.0.1"));
        let left: Vec<String> = std::fs::read_dir(versions_dir(dir.path()))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        assert_eq!(left, vec!["1.0.1"], "no lock file left either");
        // A hard link (npm links the CLI's binary twice) counts once.
        let folder = versions_dir(dir.path()).join("1.0.1");
        std::fs::hard_link(folder.join("blob"), folder.join("link")).unwrap();
        assert_eq!(dir_size(&folder), 1000);
    }
}
