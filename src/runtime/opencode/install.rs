//! opencode's versions and installs, with the cache machinery Claude Code's use
//! (`backend::install`: the per-version lock, the `.partial` folder renamed into place once
//! `--version` answers, sizes, removal).
//!
//! `opencode-ai` on npm is a wrapper whose install script copies a native binary out of a
//! platform package (`opencode-linux-x64` and the like). The harness takes that package
//! directly: `npm pack` and untar, no install script runs. A release is a version both have
//! (two `opencode-ai` releases have no binary here; the platform package has builds no
//! release names), in semver order; `latest` is the newest stable one.
//! Each version lives in `<cache>/opencode/<version>/bin/opencode`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::backend::channel::Platform;
use crate::backend::install::{self, FileLock, InstallError};
use crate::backend::registry;
use crate::backend::{BackendKind, Cli};
use crate::os::subprocess::{Finished, last_lines, run_bounded, run_to_success};

/// The wrapper package whose releases are opencode's.
pub const PACKAGE: &str = "opencode-ai";
/// The folder under the cache.
pub const CACHE_FOLDER: &str = "opencode";
/// How long one `npm pack` or untar may take (a tarball is 50-60 MB).
const FETCH_LIMIT: Duration = Duration::from_secs(600);

/// `<cache>/opencode`
pub fn versions_dir(root: &Path) -> PathBuf {
    root.join(CACHE_FOLDER)
}

/// The platform package with this machine's binary: `opencode-linux-x64`, the `-baseline` build
/// on an x64 processor without AVX2 (as the wrapper's own install script chooses), `-musl` where
/// the C library is musl.
pub fn platform_package() -> Result<String, InstallError> {
    let here = Platform::here().map_err(InstallError::NoPlatform)?;
    let (base, musl) = match here.name.strip_suffix("-musl") {
        Some(base) => (base.to_string(), true),
        None => (here.name.clone(), false),
    };
    let baseline = base.ends_with("-x64")
        && std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| !c.contains(" avx2"));
    Ok(format!(
        "opencode-{base}{}{}",
        if baseline { "-baseline" } else { "" },
        if musl { "-musl" } else { "" }
    ))
}

/// Every release, oldest first: the `opencode-ai` versions the platform package also has,
/// stable ones only.
pub fn releases(root: &Path) -> Result<Vec<String>, String> {
    let platform = platform_package().map_err(|e| e.to_string())?;
    let ask = |package: &str| -> Result<Vec<semver::Version>, String> {
        let answer = registry::view(root, &[package, "versions"])
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("the npm registry did not answer for {package}: {e}"))?;
        registry::parse_claude_code(&answer)
    };
    let binaries = ask(&platform)?;
    Ok(stable_releases(ask(PACKAGE)?, &binaries))
}

/// The wrapper's stable versions that have a binary, in semver order.
fn stable_releases(wrapper: Vec<semver::Version>, binaries: &[semver::Version]) -> Vec<String> {
    let mut out: Vec<semver::Version> = wrapper
        .into_iter()
        .filter(|v| v.pre.is_empty() && binaries.contains(v))
        .collect();
    out.sort();
    out.dedup();
    out.into_iter().map(|v| v.to_string()).collect()
}

/// The installed opencode `version`, installing it first if the cache does not have it (or
/// has one that no longer answers `--version`). `progress` hears a line before an install.
pub fn ensure(root: &Path, version: &str, progress: &dyn Fn(&str)) -> Result<Cli, InstallError> {
    if !install::is_version(version) {
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
            "the cached opencode {version} does not run ({e}); reinstalling it"
        )),
        Err(_) => progress(&format!(
            "installing opencode {version} into {} (once per version)",
            target.display()
        )),
    }
    crate::backend::install::install_whole(&target, version, |folder| {
        unpack_into(root, folder, version)
    })?;
    installed(&target, version)
}

/// `npm pack` of the platform package at `version` into `folder`, untarred there (the package's
/// own folder stripped) and checked to run.
fn unpack_into(root: &Path, folder: &Path, version: &str) -> Result<(), InstallError> {
    let _ = std::fs::remove_dir_all(folder);
    std::fs::create_dir_all(folder).map_err(|source| InstallError::Cache {
        path: folder.display().to_string(),
        source,
    })?;
    let spec = format!("{}@{version}", platform_package()?);
    let failed = |detail: String| InstallError::Npm {
        source_name: spec.clone(),
        detail,
    };
    let args: Vec<OsString> = ["pack", "--loglevel=error", "--json", "--pack-destination"]
        .iter()
        .map(OsString::from)
        .chain([folder.as_os_str().to_owned(), spec.clone().into()])
        .collect();
    let npm = registry::npm(root, args).stdout_capture().stderr_capture();
    let packed =
        match run_bounded(&npm, FETCH_LIMIT).map_err(|e| InstallError::NoNpm(e.to_string()))? {
            Finished::Exited(out) if out.status.success() => out,
            Finished::Exited(out) => {
                return Err(failed(last_lines(&String::from_utf8_lossy(&out.stderr), 4)));
            }
            Finished::TimedOut => {
                return Err(failed(format!(
                    "npm pack did not finish within {} s",
                    FETCH_LIMIT.as_secs()
                )));
            }
        };
    let tarball = tarball_name(&packed.stdout)
        .map(|name| folder.join(name))
        .ok_or_else(|| failed("npm pack named no tarball".into()))?;
    let tar = duct::cmd(
        "tar",
        [
            OsString::from("xzf"),
            tarball.clone().into(),
            "-C".into(),
            folder.into(),
            "--strip-components=1".into(),
        ],
    )
    .stdin_null()
    .stdout_null()
    .stderr_capture();
    run_to_success(&tar, FETCH_LIMIT, "tar")
        .map_err(|e| failed(format!("cannot run tar: {e}")))?
        .map_err(|e| failed(format!("tar: {e}")))?;
    let _ = std::fs::remove_file(&tarball);
    installed(folder, version).map(drop)
}

/// The tarball `npm pack --json` wrote: `[{"filename": "opencode-linux-x64-1.18.33.tgz", ...}]`.
fn tarball_name(stdout: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(stdout).ok()?;
    let name = v.get(0)?.get("filename")?.as_str()?;
    // npm names a scoped package's tarball `scope-name-version.tgz`: a bare file name.
    (!name.contains('/') && name.ends_with(".tgz")).then(|| name.to_string())
}

/// The opencode in an install folder, if it is complete and says it is `version`.
fn installed(dir: &Path, version: &str) -> Result<Cli, InstallError> {
    let binary = dir.join("bin").join("opencode");
    let no_entry = |detail: String| InstallError::NoEntry {
        source_name: format!("opencode {version}"),
        detail,
    };
    if !binary.is_file() {
        return Err(no_entry(format!("{} is missing", binary.display())));
    }
    let reported = install::ask_version(&binary, &[]).map_err(|e| no_entry(e.into()))?;
    if reported != version {
        return Err(no_entry(format!(
            "its binary says it is {reported}, not {version}"
        )));
    }
    Ok(Cli {
        kind: BackendKind::Opencode,
        program: binary,
        leading_args: vec![],
        version: version.to_string(),
        spec: super::spec_of(version),
        channel: None,
    })
}

/// Every cached opencode version: (version, folder, bytes), oldest first.
pub fn cached(root: &Path) -> Vec<(String, PathBuf, u64)> {
    let Ok(entries) = std::fs::read_dir(versions_dir(root)) else {
        return vec![];
    };
    let mut out: Vec<(String, PathBuf, u64)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let version = e.file_name().to_string_lossy().to_string();
            install::is_version(&version).then(|| (version, e.path(), install::dir_size(&e.path())))
        })
        .collect();
    out.sort_by_key(|(v, _, _)| install::version_key(v));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(list: &[&str]) -> Vec<semver::Version> {
        list.iter()
            .map(|v| semver::Version::parse(v).unwrap())
            .collect()
    }

    /// A release has a binary; pre-releases and builds no release names are left out; semver
    /// order, never the registry's.
    #[test]
    fn releases_are_the_wrapper_s_versions_with_a_binary() {
        let wrapper = versions(&[
            "1.18.33",
            "1.17.15",
            "1.15.0",
            "1.18.9",
            "1.18.10",
            "2.0.0-beta.1",
        ]);
        let binaries = versions(&[
            "1.15.0",
            "1.18.9",
            "1.18.10",
            "1.18.33",
            "1.18.34",
            "2.0.0-beta.1",
        ]);
        assert_eq!(
            stable_releases(wrapper, &binaries),
            ["1.15.0", "1.18.9", "1.18.10", "1.18.33"]
        );
    }

    #[test]
    fn npm_pack_s_answer_names_the_tarball() {
        let answer = br#"[{"id":"opencode-linux-x64@1.18.33","filename":"opencode-linux-x64-1.18.33.tgz","files":[]}]"#;
        assert_eq!(
            tarball_name(answer).as_deref(),
            Some("opencode-linux-x64-1.18.33.tgz")
        );
        assert_eq!(tarball_name(br#"[{"filename":"../x.tgz"}]"#), None);
        assert_eq!(tarball_name(b"npm warn"), None);
    }

    #[test]
    fn a_missing_or_wrong_install_is_not_installed() {
        let dir = tempfile::tempdir().unwrap();
        assert!(installed(dir.path(), "1.18.33").is_err());
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("opencode"), "#!/bin/sh\necho 1.18.32\n").unwrap();
        std::fs::set_permissions(
            bin.join("opencode"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let err = installed(dir.path(), "1.18.33").unwrap_err().to_string();
        assert!(err.contains("says it is 1.18.32, not 1.18.33"), "{err}");
        let cli = installed(dir.path(), "1.18.32").unwrap();
        assert_eq!(cli.label(), "opencode-1.18.32");
        assert_eq!(cli.spec, "opencode@1.18.32");
    }
}
