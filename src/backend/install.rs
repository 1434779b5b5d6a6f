//! Installing published Claude Code versions into a per-version cache.
//!
//! Each version lives in `<cache>/claude-code/<version>/`, one folder per CLI version whichever
//! channel it came from, and is never reinstalled. What the folder holds tells the channel
//! apart: `node_modules/@anthropic-ai/claude-code` (the claude-code package) or
//! `node_modules/@anthropic-ai/claude-agent-sdk-<platform>` (an Agent SDK platform package,
//! whose `package.json` names the SDK release). A folder from the other channel than the one a
//! resolution names is replaced, so an SDK build is never taken for a later claude-code release
//! of the same number. An install goes to a `.partial` folder and is renamed into place only
//! after `--version` answers, under a per-version file lock, so concurrent matrix jobs and
//! interrupted installs never leave a half-installed version behind.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::catalog::Release;
use super::channel::{
    CLAUDE_CODE_PACKAGE, Channel, PLATFORM_BINARY, Platform, is_platform_package,
};
use super::{BackendKind, Cli};
use crate::os::subprocess::{Finished, last_lines, run_bounded, run_to_success};

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("`{0}` is not a version (expected e.g. 2.1.332, latest or latest~3)")]
    BadVersion(String),
    #[error("cannot run npm ({0}); install Node.js and npm, or pass --claude-bin PATH")]
    NoNpm(String),
    #[error("npm could not install {source_name}: {detail}")]
    Npm { source_name: String, detail: String },
    #[error("the installed {source_name} has no runnable entry point: {detail}")]
    NoEntry { source_name: String, detail: String },
    #[error("the Agent SDK names no platform package for {0}")]
    NoPlatform(String),
    #[error("cache folder {path}: {source}")]
    Cache {
        path: String,
        source: std::io::Error,
    },
    #[error("{0} is not an executable file")]
    NotExecutable(String),
    /// A CLI given by path that does not answer `--version` (a setup failure, said before
    /// anything is written).
    #[error("the CLI could not start: {path}: {detail}")]
    DoesNotRun { path: String, detail: String },
    /// No Python the Python Agent SDK can run on (a setup failure, exit 3).
    #[error("{0}")]
    NoPython(String),
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

/// The npm package an install of `release` asks for on this machine, and the same in words:
/// (`@anthropic-ai/claude-code@2.1.332`, `2.1.335 from
/// @anthropic-ai/claude-agent-sdk-linux-x64@0.3.335`).
fn npm_source(release: &Release) -> Result<(String, String), InstallError> {
    let version = release.version.to_string();
    match &release.channel {
        Channel::ClaudeCode => {
            let spec = format!("{CLAUDE_CODE_PACKAGE}@{version}");
            Ok((spec.clone(), spec))
        }
        Channel::AgentSdk { .. } => {
            let platform = Platform::here().map_err(InstallError::NoPlatform)?;
            let spec = release.channel.package_spec(&version, &platform);
            Ok((spec.clone(), format!("{version} from {spec}")))
        }
    }
}

/// The channel the cached folder of `version` was installed from, if it holds a package (it may
/// still not run: [`ensure`] checks that).
pub fn cached_channel(root: &Path, version: &str) -> Option<Channel> {
    if !is_version(version) {
        return None;
    }
    on_disk(&versions_dir(root).join(version)).map(|(channel, _)| channel)
}

/// The installed CLI for `release`, installing it first if the cache does not have it from
/// that channel. A cached install that no longer runs (`--version` fails: a truncated binary,
/// say), or that came from the other channel, is reinstalled, and `progress` says so.
/// `progress` also hears one line before an install.
pub fn ensure(
    root: &Path,
    release: &Release,
    progress: &dyn Fn(&str),
) -> Result<Cli, InstallError> {
    let version = release.version.to_string();
    let (spec, what) = npm_source(release)?;
    let dir = versions_dir(root);
    std::fs::create_dir_all(&dir).map_err(|source| InstallError::Cache {
        path: dir.display().to_string(),
        source,
    })?;
    let target = dir.join(&version);
    let usable = |target: &Path| usable(target, &version, &release.channel, &what);
    if let Ok(cli) = usable(&target) {
        return Ok(cli);
    }
    let _lock = FileLock::acquire(&dir.join(format!(".{version}.lock")))?;
    match (usable(&target), on_disk(&target)) {
        (Ok(cli), _) => return Ok(cli), // another job installed it while we waited
        (Err(_), Some((other, _))) if other != release.channel => progress(&format!(
            "the cached {version} came from {}; replacing it with {what}",
            other.describe()
        )),
        (Err(e), _) if target.exists() => progress(&format!(
            "the cached {what} does not run ({e}); reinstalling it"
        )),
        (Err(_), _) => progress(&format!(
            "installing {what} into {} (once per version)",
            target.display()
        )),
    }
    install_whole(&target, &version, |folder| {
        install_into(root, folder, &version, (&spec, &what))
    })?;
    usable(&target)
}

/// Installs `version` into `target` whole: `fill` writes into a fresh hidden folder beside it
/// (`.VERSION.partial-…`, a `tempfile` folder, so it is removed however `fill` fails), which
/// replaces `target` only once `fill` succeeded. With the caller's per-version lock held, the
/// cache never holds half an install.
pub fn install_whole(
    target: &Path,
    version: &str,
    fill: impl FnOnce(&Path) -> Result<(), InstallError>,
) -> Result<(), InstallError> {
    let dir = target.parent().unwrap_or(Path::new("."));
    let partial = tempfile::Builder::new()
        .prefix(&format!(".{version}.partial-"))
        .tempdir_in(dir)
        .map_err(|source| InstallError::Cache {
            path: dir.display().to_string(),
            source,
        })?;
    fill(partial.path())?;
    let _ = std::fs::remove_dir_all(target);
    std::fs::rename(partial.path(), target).map_err(|source| InstallError::Cache {
        path: target.display().to_string(),
        source,
    })?;
    // Renamed into place: nothing is left for the temporary folder to remove.
    let _ = partial.keep();
    Ok(())
}

/// The CLI in `target` if it is complete, runs, and came from `channel`.
fn usable(
    target: &Path,
    version: &str,
    channel: &Channel,
    what: &str,
) -> Result<Cli, InstallError> {
    let cli = installed(target, version, what)?;
    match &cli.channel {
        Some(c) if c == channel => Ok(cli),
        other => Err(InstallError::NoEntry {
            source_name: what.to_string(),
            detail: format!(
                "the folder holds {}",
                other.as_ref().map(Channel::describe).unwrap_or_default()
            ),
        }),
    }
}

/// `npm install SPEC` of one version into an empty `folder`, checked to run; `what` names it
/// in errors.
fn install_into(
    root: &Path,
    folder: &Path,
    version: &str,
    (spec, what): (&str, &str),
) -> Result<(), InstallError> {
    let _ = std::fs::remove_dir_all(folder);
    std::fs::create_dir_all(folder).map_err(|source| InstallError::Cache {
        path: folder.display().to_string(),
        source,
    })?;
    let args = [
        "install",
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--loglevel=error",
        "--prefix",
    ]
    .iter()
    .map(std::ffi::OsString::from)
    .chain([folder.as_os_str().to_owned(), spec.into()])
    .collect();
    let npm = super::registry::npm(root, args)
        .stdout_null()
        .stderr_capture();
    let failed = |detail: String| InstallError::Npm {
        source_name: what.to_string(),
        detail,
    };
    run_to_success(&npm, NPM_LIMIT, "npm")
        .map_err(|e| InstallError::NoNpm(e.to_string()))?
        .map_err(failed)?;
    installed(folder, version, what).map(drop)
}

/// The package an install folder holds and its channel: the claude-code package, else an
/// Agent SDK platform package (its `package.json` names the SDK release).
fn on_disk(dir: &Path) -> Option<(Channel, PathBuf)> {
    let scope = dir.join("node_modules").join("@anthropic-ai");
    let code = dir.join("node_modules").join(CLAUDE_CODE_PACKAGE);
    if code.join("package.json").is_file() {
        return Some((Channel::ClaudeCode, code));
    }
    std::fs::read_dir(&scope)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                is_platform_package(&format!("@anthropic-ai/{}", n.to_string_lossy()))
            })
        })
        .find_map(|package| {
            let manifest = read_manifest(&package)?;
            let sdk_version = manifest["version"].as_str()?.to_string();
            Some((Channel::AgentSdk { sdk_version }, package))
        })
}

fn read_manifest(package: &Path) -> Option<serde_json::Value> {
    std::fs::read(package.join("package.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
}

/// The CLI in an install folder, if it is complete and runs; `what` names the install in
/// errors.
fn installed(dir: &Path, version: &str, what: &str) -> Result<Cli, InstallError> {
    let no_entry = |detail: String| InstallError::NoEntry {
        source_name: what.to_string(),
        detail,
    };
    let (channel, package) =
        on_disk(dir).ok_or_else(|| no_entry("no claude-code or Agent SDK package in it".into()))?;
    let (program, leading_args) = match &channel {
        Channel::ClaudeCode => package_entry(&package).map_err(no_entry)?,
        Channel::AgentSdk { .. } => {
            let binary = package.join(PLATFORM_BINARY);
            if !binary.is_file() {
                return Err(no_entry(format!("{} is missing", binary.display())));
            }
            (binary, vec![])
        }
    };
    let reported = ask_version(&program, &leading_args).map_err(|e| no_entry(e.into()))?;
    // An SDK release's binary is taken for the version its `claudeCodeVersion` names: it must
    // say so itself.
    if matches!(channel, Channel::AgentSdk { .. }) && reported != version {
        return Err(no_entry(format!(
            "its binary says it is {reported}, not {version}"
        )));
    }
    Ok(Cli {
        kind: BackendKind::Claude,
        program,
        leading_args,
        version: version.to_string(),
        spec: version.to_string(),
        channel: Some(channel),
    })
}

/// The claude-code package's `bin` entry: a native binary, or a JS file run by `node`.
fn package_entry(package: &Path) -> Result<(PathBuf, Vec<String>), String> {
    let manifest = read_manifest(package)
        .ok_or_else(|| format!("no package.json in {}", package.display()))?;
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
        return Err("package.json has no `bin`".into());
    }
    let entry = package.join(&bin);
    if !entry.exists() {
        return Err(format!("{} is missing", entry.display()));
    }
    if bin.ends_with(".js") || bin.ends_with(".mjs") {
        let node = find_on_path("node").ok_or("it needs `node` on PATH")?;
        Ok((node, vec![entry.display().to_string()]))
    } else {
        Ok((entry, vec![]))
    }
}

/// A CLI given by path: its version is asked from the binary itself.
pub fn from_path(path: &Path) -> Result<Cli, InstallError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path)
        .map_err(|_| InstallError::NotExecutable(path.display().to_string()))?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(InstallError::NotExecutable(path.display().to_string()));
    }
    // A wrapper or a stub may print no version (then `unknown`), but one that cannot even
    // answer `--version` successfully would fail every run: said now, before anything is
    // written.
    let version = match ask_version(path, &[]) {
        Ok(version) => version,
        Err(VersionAnswer::Unreadable) => "unknown".into(),
        Err(VersionAnswer::Failed(detail)) => {
            return Err(InstallError::DoesNotRun {
                path: path.display().to_string(),
                detail,
            });
        }
    };
    Ok(Cli {
        kind: BackendKind::Claude,
        program: path.to_path_buf(),
        leading_args: vec![],
        version,
        spec: path.display().to_string(),
        channel: None,
    })
}

/// Why `--version` gave no version.
#[derive(Debug)]
pub enum VersionAnswer {
    /// It succeeded, with no version in what it printed.
    Unreadable,
    /// It failed: how (`killed by SIGSEGV`, `exited with status 1: ...`).
    Failed(String),
}

impl From<VersionAnswer> for String {
    fn from(answer: VersionAnswer) -> String {
        match answer {
            VersionAnswer::Unreadable => "`--version` printed no version".into(),
            VersionAnswer::Failed(detail) => detail,
        }
    }
}

/// `claude --version` prints `2.1.332 (Claude Code)`; run with an empty HOME and a bound.
pub fn ask_version(program: &Path, leading: &[String]) -> Result<String, VersionAnswer> {
    let home = tempfile::tempdir().map_err(|e| VersionAnswer::Failed(e.to_string()))?;
    let mut args: Vec<String> = leading.to_vec();
    args.push("--version".into());
    let mut env = crate::os::env::tool_env(home.path());
    env.push(("DISABLE_AUTOUPDATER".to_string(), "1".to_string()));
    let expr = duct::cmd(program, &args)
        .full_env(env)
        .stdin_null()
        .stdout_capture()
        .stderr_capture();
    let out = match run_bounded(&expr, VERSION_LIMIT) {
        Ok(Finished::Exited(out)) => out,
        Ok(Finished::TimedOut) => {
            return Err(VersionAnswer::Failed(format!(
                "`--version` did not answer within {} s",
                VERSION_LIMIT.as_secs()
            )));
        }
        Err(e) => {
            return Err(VersionAnswer::Failed(format!(
                "`--version` could not start: {e}"
            )));
        }
    };
    let status = crate::evidence::ExitDesc::from_std(out.status);
    if !status.success() {
        return Err(VersionAnswer::Failed(format!(
            "`--version` ended with {}{}",
            status.describe(),
            match last_lines(&String::from_utf8_lossy(&out.stderr), 2) {
                e if e.is_empty() => String::new(),
                e => format!(": {e}"),
            }
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .next()
        .filter(|v| is_version(v))
        .map(str::to_string)
        .ok_or(VersionAnswer::Unreadable)
}

pub(super) fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|p| p.join(name))
        .find(|p| p.is_file())
}

/// Removes one cached version, under its install lock (an install of it in progress finishes
/// first); returns the bytes freed. A version that is not cached frees nothing.
pub fn remove(root: &Path, version: &str) -> Result<u64, InstallError> {
    remove_in(&versions_dir(root), version)
}

/// [`remove`] from a runtime's own folder of versions (`<cache>/opencode`).
pub fn remove_in(dir: &Path, version: &str) -> Result<u64, InstallError> {
    if !is_version(version) {
        return Err(InstallError::BadVersion(version.to_string()));
    }
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
    is_cached_in(&versions_dir(root), version)
}

/// [`is_cached`] in a runtime's own folder of versions.
pub fn is_cached_in(dir: &Path, version: &str) -> bool {
    is_version(version) && dir.join(version).is_dir()
}

/// One cached version: its folder, size on disk, and the channel it was installed from (`None`:
/// the folder holds no package, a broken install).
#[derive(Debug, Clone, serde::Serialize)]
pub struct CachedVersion {
    pub version: String,
    pub path: PathBuf,
    pub bytes: u64,
    pub channel: Option<Channel>,
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
                channel: on_disk(&e.path()).map(|(channel, _)| channel),
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

/// `1.4 GiB`, `512 B`: binary units, one decimal.
pub fn human_size(bytes: u64) -> String {
    bytesize::ByteSize(bytes).display().iec().to_string()
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
pub struct FileLock {
    file: std::fs::File,
    path: PathBuf,
}

impl FileLock {
    pub fn acquire(path: &Path) -> Result<FileLock, InstallError> {
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
    fn versions_are_validated_and_ordered() {
        assert!(is_version("2.1.332"));
        assert!(is_version("1.0.0-beta.1"));
        assert!(!is_version("2.1"));
        assert!(!is_version("2.1.x"));
        assert!(!is_version("2.1.3; rm -rf /"));
        assert!(version_key("2.1.10") > version_key("2.1.9"));
        assert!(version_key("2.1.0-beta.1") < version_key("2.1.0"));
    }

    #[test]
    fn a_missing_install_is_not_installed() {
        let dir = tempfile::tempdir().unwrap();
        assert!(installed(dir.path(), "2.1.332", "x").is_err());
        assert!(cached_versions(dir.path()).is_empty());
        assert_eq!(cached_channel(dir.path(), "2.1.332"), None);
        assert_eq!(remove(dir.path(), "2.1.332").unwrap(), 0);
        assert!(matches!(
            remove(dir.path(), "../x"),
            Err(InstallError::BadVersion(_))
        ));
    }

    /// A folder with `package` (its package.json giving `version`) under node_modules.
    fn fake_install(root: &Path, cli_version: &str, package: &str, version: &str) -> PathBuf {
        let folder = versions_dir(root)
            .join(cli_version)
            .join("node_modules")
            .join(package);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("package.json"),
            format!(r#"{{"name":"{package}","version":"{version}"}}"#),
        )
        .unwrap();
        folder
    }

    #[test]
    fn the_folder_tells_which_channel_a_version_came_from() {
        let dir = tempfile::tempdir().unwrap();
        fake_install(dir.path(), "2.1.332", CLAUDE_CODE_PACKAGE, "2.1.332");
        // claude-code's own platform package beside it is not the SDK's.
        fake_install(
            dir.path(),
            "2.1.332",
            "@anthropic-ai/claude-code-linux-x64",
            "2.1.332",
        );
        fake_install(
            dir.path(),
            "2.1.335",
            "@anthropic-ai/claude-agent-sdk-linux-x64",
            "0.3.335",
        );
        std::fs::create_dir_all(versions_dir(dir.path()).join("2.1.300")).unwrap();
        assert_eq!(
            cached_channel(dir.path(), "2.1.332"),
            Some(Channel::ClaudeCode)
        );
        let sdk = Channel::AgentSdk {
            sdk_version: "0.3.335".into(),
        };
        assert_eq!(cached_channel(dir.path(), "2.1.335"), Some(sdk.clone()));
        let listed: Vec<(String, Option<Channel>)> = cached_versions(dir.path())
            .into_iter()
            .map(|c| (c.version, c.channel))
            .collect();
        assert_eq!(
            listed,
            vec![
                ("2.1.300".to_string(), None),
                ("2.1.332".to_string(), Some(Channel::ClaudeCode)),
                ("2.1.335".to_string(), Some(sdk)),
            ]
        );
    }

    /// A folder from the SDK channel is not taken for the claude-code release of the same
    /// number (which `ensure` then reinstalls), and is the SDK release it holds.
    #[test]
    fn a_folder_from_the_other_channel_is_not_the_asked_release() {
        let dir = tempfile::tempdir().unwrap();
        let package = fake_install(
            dir.path(),
            "2.1.335",
            "@anthropic-ai/claude-agent-sdk-linux-x64",
            "0.3.335",
        );
        // A binary that answers as 2.1.335 does.
        let binary = package.join(PLATFORM_BINARY);
        std::fs::write(&binary, "#!/bin/sh\necho '2.1.335 (Claude Code)'\n").unwrap();
        std::fs::set_permissions(&binary, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let target = versions_dir(dir.path()).join("2.1.335");
        let sdk = Channel::AgentSdk {
            sdk_version: "0.3.335".into(),
        };
        let cli = usable(&target, "2.1.335", &sdk, "x").unwrap();
        assert_eq!(
            (cli.channel, cli.program),
            (Some(sdk.clone()), binary.clone())
        );
        let err = usable(&target, "2.1.335", &Channel::ClaudeCode, "x").unwrap_err();
        assert!(
            err.to_string()
                .contains("the folder holds agent-sdk 0.3.335"),
            "{err}"
        );
        // An SDK binary that says it is another version is not that version.
        std::fs::write(&binary, "#!/bin/sh\necho '2.1.334 (Claude Code)'\n").unwrap();
        let err = usable(&target, "2.1.335", &sdk, "x").unwrap_err();
        assert!(
            err.to_string().contains("says it is 2.1.334, not 2.1.335"),
            "{err}"
        );
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
