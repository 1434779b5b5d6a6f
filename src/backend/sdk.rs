//! The Agent SDKs a run of an SDK driver mode goes through, installed once into the cache
//! beside the CLI versions: the TypeScript SDK (`@anthropic-ai/claude-agent-sdk`, run by Node;
//! its optional platform packages, a CLI binary of its own, are left out: the run's CLI is the
//! one `--claude-version` names) in `CACHE/agent-sdk/VERSION/`, and the Python SDK
//! (`claude-agent-sdk` from PyPI) in a virtual environment `CACHE/agent-sdk-py/VERSION/`. Each
//! install happens under a per-version lock into a partial folder renamed into place, as CLI
//! installs do.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::install::{FileLock, InstallError, find_on_path};
use super::registry;
use crate::os::subprocess::{Finished, run_bounded, run_to_success};
use crate::scenario::mode::Host;

/// The TypeScript SDK release the `sdk` mode runs (its platform package carries 2.1.335).
pub const PINNED_TS: &str = "0.3.335";
/// The Python SDK release the `sdk-py` mode runs (the newest on PyPI; it pairs with 2.1.332).
pub const PINNED_PY: &str = "0.2.189";
/// The oldest Python the Python SDK supports.
pub const MIN_PYTHON: (u32, u32) = (3, 10);

const TS_PACKAGE: &str = "@anthropic-ai/claude-agent-sdk";
const PY_PACKAGE: &str = "claude-agent-sdk";
/// How long one install may take (the Python wheel carries a 178 MB CLI of its own).
const INSTALL_LIMIT: Duration = Duration::from_secs(900);

/// An installed SDK: the program that runs its host, and (TypeScript) the module to import.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SdkInstall {
    pub host: Host,
    pub version: String,
    /// `node`, or the virtual environment's `python`.
    pub program: PathBuf,
    /// The SDK's entry module (`sdk.mjs`); `None` for Python, which imports its package.
    pub entry: Option<PathBuf>,
    /// The Claude Code version this release ships (the TypeScript package's
    /// `claudeCodeVersion`, the Python package's bundled `__cli_version__`), where it says.
    #[serde(default)]
    pub ships_cli: Option<String>,
}

impl SdkInstall {
    /// `agent-sdk 0.3.335 (TypeScript)`.
    pub fn describe(&self) -> String {
        match self.host {
            Host::SdkTs => format!("agent-sdk {} (TypeScript)", self.version),
            Host::SdkPy => format!("agent-sdk {} (Python)", self.version),
        }
    }
}

/// The SDK releases a run's SDK modes use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SdkVersions {
    pub ts: String,
    pub py: String,
}

impl Default for SdkVersions {
    /// The pinned releases.
    fn default() -> SdkVersions {
        SdkVersions {
            ts: PINNED_TS.into(),
            py: PINNED_PY.into(),
        }
    }
}

impl SdkVersions {
    /// The release of `host`'s SDK.
    pub fn of(&self, host: Host) -> &str {
        match host {
            Host::SdkTs => &self.ts,
            Host::SdkPy => &self.py,
        }
    }
}

/// The installed SDK for `host` at `version`, installing it first if the cache lacks it.
pub fn ensure(
    root: &Path,
    host: Host,
    version: &str,
    progress: &dyn Fn(&str),
) -> Result<SdkInstall, InstallError> {
    if !super::install::is_version(version) {
        return Err(InstallError::BadVersion(version.to_string()));
    }
    let dir = root.join(folder(host));
    std::fs::create_dir_all(&dir).map_err(|source| InstallError::Cache {
        path: dir.display().to_string(),
        source,
    })?;
    let target = dir.join(version);
    if let Ok(found) = installed(host, &target, version) {
        return Ok(found);
    }
    let _lock = FileLock::acquire(&dir.join(format!(".{version}.lock")))?;
    if let Ok(found) = installed(host, &target, version) {
        return Ok(found); // another job installed it while we waited
    }
    progress(&format!(
        "installing the {} into {} (once per version)",
        describe(host, version),
        target.display()
    ));
    super::install::install_whole(&target, version, |folder| {
        install_into(root, host, folder, version)
    })?;
    installed(host, &target, version)
}

fn folder(host: Host) -> &'static str {
    match host {
        Host::SdkTs => "agent-sdk",
        Host::SdkPy => "agent-sdk-py",
    }
}

fn describe(host: Host, version: &str) -> String {
    match host {
        Host::SdkTs => format!("TypeScript Agent SDK ({TS_PACKAGE}@{version})"),
        Host::SdkPy => format!("Python Agent SDK ({PY_PACKAGE}=={version})"),
    }
}

fn install_into(root: &Path, host: Host, folder: &Path, version: &str) -> Result<(), InstallError> {
    std::fs::create_dir_all(folder).map_err(|source| InstallError::Cache {
        path: folder.display().to_string(),
        source,
    })?;
    let name = describe(host, version);
    let failed = |detail: String| InstallError::Npm {
        source_name: name.clone(),
        detail,
    };
    let steps: Vec<duct::Expression> = match host {
        Host::SdkTs => vec![registry::npm(
            root,
            [
                "install",
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--loglevel=error",
                "--omit=optional",
            ]
            .into_iter()
            .map(OsString::from)
            .chain([
                OsString::from("--prefix"),
                folder.as_os_str().to_owned(),
                format!("{TS_PACKAGE}@{version}").into(),
            ])
            .collect(),
        )],
        Host::SdkPy => {
            let python = python3()?;
            let venv = folder.join("venv");
            vec![
                duct::cmd!(python, "-m", "venv", &venv)
                    .full_env(crate::os::env::tool_env(root))
                    .stdin_null(),
                duct::cmd!(
                    venv.join("bin/python"),
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "--no-input",
                    format!("{PY_PACKAGE}=={version}")
                )
                .full_env(pip_env(root))
                .stdin_null(),
            ]
        }
    };
    for step in steps {
        let step = step.stdout_null().stderr_capture();
        run_to_success(&step, INSTALL_LIMIT, "the install")
            .map_err(|e| failed(e.to_string()))?
            .map_err(failed)?;
    }
    installed(host, folder, version).map(drop)
}

/// The SDK in an install folder, if it is complete.
fn installed(host: Host, dir: &Path, version: &str) -> Result<SdkInstall, InstallError> {
    let no_entry = |detail: String| InstallError::NoEntry {
        source_name: describe(host, version),
        detail,
    };
    match host {
        Host::SdkTs => {
            let entry = dir.join("node_modules").join(TS_PACKAGE).join("sdk.mjs");
            if !entry.is_file() {
                return Err(no_entry(format!("{} is missing", entry.display())));
            }
            let node =
                find_on_path("node").ok_or_else(|| no_entry("it needs `node` on PATH".into()))?;
            let manifest = dir
                .join("node_modules")
                .join(TS_PACKAGE)
                .join("package.json");
            let ships_cli = std::fs::read(&manifest)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .and_then(|v| v["claudeCodeVersion"].as_str().map(str::to_string));
            Ok(SdkInstall {
                host,
                version: version.to_string(),
                program: node,
                entry: Some(entry),
                ships_cli,
            })
        }
        Host::SdkPy => {
            let python = dir.join("venv/bin/python");
            let marker = dir.join("venv/lib");
            let package = std::fs::read_dir(&marker)
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .map(|d| d.path().join("site-packages/claude_agent_sdk"))
                .find(|p| p.is_dir());
            if !python.exists() || package.is_none() {
                return Err(no_entry(format!(
                    "no claude_agent_sdk in the virtual environment {}",
                    dir.join("venv").display()
                )));
            }
            Ok(SdkInstall {
                host,
                version: version.to_string(),
                program: python,
                entry: None,
                ships_cli: package.and_then(|p| bundled_cli_version(&p)),
            })
        }
    }
}

/// pip's whole environment: a tool's (HOME is the cache folder), the user's registry settings
/// (`PIP_INDEX_URL`, a proxy, a CA bundle), its cache in ours, and no configuration file (the
/// user's `pip.conf` may hold an index's credentials).
fn pip_env(root: &Path) -> Vec<(String, String)> {
    let mut env = crate::os::env::registry_tool_env(root);
    env.extend([
        (
            "PIP_CACHE_DIR".to_string(),
            root.join("pip-cache").display().to_string(),
        ),
        ("PIP_CONFIG_FILE".into(), "/dev/null".into()),
        ("PYTHONNOUSERSITE".into(), "1".into()),
    ]);
    env
}

/// The CLI version the Python package bundles: `__cli_version__ = "2.1.332"` in its
/// `_cli_version.py`.
fn bundled_cli_version(package: &Path) -> Option<String> {
    let text = std::fs::read_to_string(package.join("_cli_version.py")).ok()?;
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("__cli_version__"))?;
    let value = line.split_once('=')?.1.trim().trim_matches(['"', '\'']);
    (!value.is_empty()).then(|| value.to_string())
}

/// The `python3` (or `WAKEPROBE_PYTHON`) to make the virtual environment with, if it is new
/// enough for the Python SDK.
fn python3() -> Result<PathBuf, InstallError> {
    let named = std::env::var_os("WAKEPROBE_PYTHON").map(PathBuf::from);
    let python = named
        .clone()
        .or_else(|| find_on_path("python3"))
        .ok_or_else(|| no_python("no `python3` on PATH".into()))?;
    let ask = duct::cmd!(
        &python,
        "-c",
        "import sys; print('%d.%d' % sys.version_info[:2])"
    )
    .full_env(crate::os::env::tool_env(&std::env::temp_dir()))
    .stdin_null()
    .stdout_capture()
    .stderr_capture();
    let out = match run_bounded(&ask, Duration::from_secs(20)) {
        Ok(Finished::Exited(out)) if out.status.success() => out,
        Ok(_) | Err(_) => {
            return Err(no_python(format!("`{}` does not run", python.display())));
        }
    };
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let parsed = text
        .split_once('.')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)));
    match parsed {
        Some(v) if v >= MIN_PYTHON => Ok(python),
        _ => Err(no_python(format!(
            "`{}` is Python {text}",
            python.display()
        ))),
    }
}

fn no_python(why: String) -> InstallError {
    InstallError::NoPython(format!(
        "the sdk-py driver needs Python {}.{} or later for {PY_PACKAGE}: {why} (WAKEPROBE_PYTHON names another)",
        MIN_PYTHON.0, MIN_PYTHON.1
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pip_reads_no_configuration_and_no_real_home() {
        let env = pip_env(Path::new("/cache"));
        let get = |k: &str| {
            env.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("HOME"), Some("/cache"));
        assert_eq!(get("PIP_CONFIG_FILE"), Some("/dev/null"));
        assert_eq!(get("PIP_CACHE_DIR"), Some("/cache/pip-cache"));
        assert_eq!(get("ANTHROPIC_API_KEY"), None);
    }
}
