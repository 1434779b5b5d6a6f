//! The runtime's room: what the harness does for each agent runtime it can run, in one table
//! with one row per runtime (`Runtime::adapter`), as the driver modes have theirs. A row says
//! how the runtime's versions are found and installed, what its sandbox holds beyond the
//! project, how each driver mode starts it and whether it talks to a server, how its
//! notification shows in a model request, and who reads its own evidence into the one `Event`
//! vocabulary. What a scenario file means on it (its modes, verbs, refusals, the evidence it
//! offers) is its row in `scenario::runtime`, beside the file format.
//!
//! Claude Code is the first row, and its row points at the code that was always Claude Code's
//! (`backend::catalog` and `backend::install` over its two channels, `sandbox.rs`'s settings and
//! hooks, `backend::Cli::args`, `evidence::normalize`): nothing of its behaviour depends on
//! this table being here. A new runtime is one folder (`runtime/NAME/`), one row here and one
//! in `scenario::runtime`.

pub mod opencode;

use std::path::Path;

use crate::backend::Cli;
use crate::backend::install::InstallError;
use crate::evidence::runtime::RuntimeEvidence;
use crate::fake_api::request::Recognise;
use crate::sandbox::{Sandbox, SandboxError};
pub use crate::scenario::Runtime;
use crate::scenario::{Driver, DriverMode};

/// What starting a mode of a runtime needs.
pub struct StartArgs<'a> {
    pub cli: &'a Cli,
    pub driver: &'a Driver,
    /// The prompt with the main agent's tag.
    pub tagged_prompt: &'a str,
    /// The port its server listens on, for a mode that talks to one.
    pub port: Option<u16>,
}

/// How the runtime's standard input is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdinUse {
    /// As the driver mode's row says (Claude Code: nothing, stream-json, a terminal).
    ByMode,
    /// The prompt, then end of input (opencode's `run` takes it verbatim there; in its
    /// arguments it would be quoted).
    Prompt,
    /// Nothing: the runtime is fed over its server.
    Null,
}

/// A mode's start: the whole argument list (the CLI's leading ones first), and the standard
/// input.
pub struct Start {
    pub args: Vec<String>,
    pub stdin: StdinUse,
}

/// Every release of a runtime, oldest first (the cache root given: npm's cache is in it).
pub type Releases = fn(&Path) -> Result<Vec<String>, String>;
/// The installed version (installing it under the cache's lock when missing); the progress
/// line is said before an install.
pub type Ensure = fn(&Path, &str, &dyn Fn(&str)) -> Result<Cli, InstallError>;
/// What a run's environment gets from the runtime: `(variable, value)`, each a
/// [`RunVar`](crate::os::env::RunVar) or a place its row in `scenario::runtime` names (so no
/// scenario's `env` can set one).
pub type Env = Vec<(&'static str, String)>;
/// Writes a run's sandbox files (the fake API's URL and the run's evidence folder given).
pub type Prepare = fn(&Sandbox, &str, &Path) -> Result<Env, SandboxError>;

/// What the harness does for one runtime.
pub struct Adapter {
    pub runtime: Runtime,
    /// The version run when none is given: the one the notes were measured on.
    pub pinned: &'static str,
    /// Its versions' folder in the cache (`<cache>/NAME/<version>/`).
    pub cache_folder: &'static str,
    /// Where its releases come from, in words.
    pub source: &'static str,
    /// The GitHub repository its issue drafts are filed in.
    pub issues: &'static str,
    /// Every release, oldest first; `None` where the app's catalog asks (Claude Code's two
    /// channels, `backend::catalog`).
    pub releases: Option<Releases>,
    /// The installed version (installed first, under the cache's lock, when missing); `None`
    /// where `backend::install` does it over a resolved channel.
    pub ensure: Option<Ensure>,
    /// Writes what a run's sandbox holds beyond the project (the fake API's URL and the run's
    /// evidence folder given) and returns what its environment adds to the scrubbed one.
    pub prepare: Prepare,
    /// Whether a mode talks to a server the runtime opens (on a port the harness picks).
    pub serves: fn(DriverMode) -> bool,
    /// A mode's arguments and standard input.
    pub start: fn(&StartArgs) -> Start,
    /// How its notification shows in a model request.
    pub notifications: Recognise,
    /// The reader of its own evidence (the run clock's zero in unix ms, the mode); `None` where
    /// `evidence::normalize` reads it (Claude Code's stdout, hooks and transcripts).
    pub evidence: fn(f64, DriverMode) -> Option<Box<dyn RuntimeEvidence>>,
    /// The file in the run's evidence folder its observer plugin appends lines to, if any.
    pub plugin_file: Option<&'static str>,
}

const ADAPTERS: [Adapter; 2] = [
    Adapter {
        runtime: Runtime::ClaudeCode,
        pinned: crate::backend::PINNED_VERSION,
        cache_folder: "claude-code",
        source: "@anthropic-ai/claude-code, and builds only the Agent SDK's platform packages carry",
        issues: "anthropics/claude-code",
        releases: None,
        ensure: None,
        prepare: |_, _, _| Ok(vec![]),
        serves: |_| false,
        start: |s| Start {
            args: s.cli.args(s.driver, s.tagged_prompt),
            stdin: StdinUse::ByMode,
        },
        notifications: crate::fake_api::request::parse_notifications,
        evidence: |_, _| None,
        plugin_file: None,
    },
    Adapter {
        runtime: Runtime::Opencode,
        pinned: opencode::PINNED_VERSION,
        cache_folder: opencode::install::CACHE_FOLDER,
        source: "opencode-ai, its binary from the platform package (opencode-linux-x64)",
        issues: "anomalyco/opencode",
        releases: Some(opencode::install::releases),
        ensure: Some(opencode::install::ensure),
        prepare: opencode::sandbox::prepare,
        serves: |mode| mode == DriverMode::Session,
        start: opencode::start,
        notifications: opencode::notice::notifications,
        evidence: opencode::evidence,
        plugin_file: Some(opencode::sandbox::EVENTS_FILE),
    },
];

impl Adapter {
    /// The row of a runtime.
    pub fn of(runtime: Runtime) -> &'static Adapter {
        ADAPTERS
            .iter()
            .find(|a| a.runtime == runtime)
            .expect("every runtime has an adapter (a test walks them)")
    }
}

/// `opencode@1.18.33`: a version of a runtime other than Claude Code, as a matrix column and a
/// baseline key name it (Claude Code's versions stay bare: `2.1.332`).
pub fn qualified(runtime: Runtime, version: &str) -> String {
    match runtime {
        Runtime::ClaudeCode => version.to_string(),
        other => format!("{other}@{version}"),
    }
}

/// A version spec's runtime and the version it names: `opencode@latest` is opencode's
/// `latest`; a bare spec is Claude Code's.
pub fn split_spec(spec: &str) -> (Runtime, &str) {
    match spec.split_once('@') {
        Some((name, version)) if !name.is_empty() => match Runtime::parse(name) {
            Some(runtime) => (runtime, version),
            None => (Runtime::ClaudeCode, spec),
        },
        _ => (Runtime::ClaudeCode, spec),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_runtime_has_one_adapter_and_specs_name_their_runtime() {
        for runtime in crate::scenario::runtime::ALL_RUNTIMES {
            assert_eq!(ADAPTERS.iter().filter(|a| a.runtime == runtime).count(), 1);
            let a = Adapter::of(runtime);
            // A runtime whose releases the app does not resolve installs them itself.
            assert_eq!(a.releases.is_some(), a.ensure.is_some(), "{runtime}");
            assert!(!(a.serves)(DriverMode::Print), "print mode never serves");
            let pinned = qualified(runtime, a.pinned);
            assert_eq!(split_spec(&pinned), (runtime, a.pinned));
        }
        assert_eq!(split_spec("2.1.332"), (Runtime::ClaudeCode, "2.1.332"));
        assert_eq!(
            split_spec("opencode@latest~2"),
            (Runtime::Opencode, "latest~2")
        );
        assert_eq!(
            split_spec("nosuch@1.0.0"),
            (Runtime::ClaudeCode, "nosuch@1.0.0")
        );
        assert_eq!(qualified(Runtime::ClaudeCode, "latest"), "latest");
    }
}
