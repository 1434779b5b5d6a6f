//! The CLI under test: which binary, which version, and the scrubbed environment it runs in.
//!
//! A backend is the real Claude Code (a published version installed into the cache from either
//! channel, see [`channel`] and [`catalog`], or a binary given by path) or the simulator with a
//! behaviour profile. Either way the run sees one
//! [`Cli`]: a program, its version, and how to build its argument list for a driver mode. The
//! environment is built from nothing ([`scrubbed_env`]): no inherited credentials, proxies or
//! HOME, so a run can only talk to the fake API.

pub mod catalog;
pub mod channel;
pub mod flags;
pub mod install;
pub mod registry;
pub mod sdk;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::os::env::RunVar;
use crate::os::subprocess::Finished;
use crate::scenario::Driver;
use crate::scenario::mode::CliArgs;

/// The version run when none is given: the one the notes were measured on.
pub const PINNED_VERSION: &str = "2.1.332";

/// The only key a run ever holds. Harmless by construction; reports redact it anyway.
pub const DUMMY_KEY: &str = "sk-ant-wakeprobe-dummy-key-000000000000000000000000";
/// The last 20 characters of the key, as the CLI's "approved keys" list stores them.
pub const DUMMY_KEY_TAIL: &str = "00000000000000000000";

pub use crate::evidence::run::BackendKind;

/// The terminal size a CLI in a pseudo-terminal gets.
pub const TERMINAL_COLS: u16 = 120;
pub const TERMINAL_ROWS: u16 = 40;

/// A runnable CLI.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Cli {
    pub kind: BackendKind,
    /// The program to execute (a native binary, `node`, or `claude-sim`).
    pub program: PathBuf,
    /// Arguments before the driver's own (e.g. the JS entry point when `program` is node).
    pub leading_args: Vec<String>,
    /// The version as requested or resolved (`2.1.332`; `sim` for the simulator).
    pub version: String,
    /// How the user named this CLI (`latest~3`, `2.1.219`, a path, `sim:fixed`): the key a
    /// matrix column and a baseline compare by.
    #[serde(default)]
    pub spec: String,
    /// The channel a published version was installed from; `None` for a binary given by path
    /// and for the simulator.
    #[serde(default)]
    pub channel: Option<channel::Channel>,
}

impl Cli {
    /// A short label for tables and folder names: `claude-2.1.332`, `sim-fixed`.
    pub fn label(&self) -> String {
        match &self.kind {
            BackendKind::Claude => format!("claude-{}", self.version),
            BackendKind::Opencode => format!("opencode-{}", self.version),
            BackendKind::Sim { profile } if self.version == "sim" => format!("sim-{profile}"),
            // A simulator standing in for a version (matrix and bisect over profiles).
            BackendKind::Sim { profile } => format!("sim-{}-{profile}", self.version),
        }
    }

    /// The full argument list for a driver mode.
    pub fn args(&self, driver: &Driver, tagged_prompt: &str) -> Vec<String> {
        let mut args = self.leading_args.clone();
        match driver.mode.row().args {
            CliArgs::PrintPrompt => {
                args.extend(["-p".into(), tagged_prompt.to_string()]);
                args.extend(stream_json_output());
            }
            CliArgs::StreamJsonSession => {
                args.extend(["-p".into(), "--input-format".into(), "stream-json".into()]);
                args.extend(stream_json_output());
            }
            CliArgs::Interactive => {}
            // The SDK host starts the CLI with the SDK's own arguments and the driver's
            // settings from its config (`driver::sdk`).
            CliArgs::BySdk | CliArgs::ByIntegration => return args,
        }
        if !driver.persist_session {
            args.push("--no-session-persistence".into());
        }
        args.extend([
            "--permission-mode".into(),
            driver.permission_mode.clone(),
            "--allowedTools".into(),
            driver.allowed_tools.join(" "),
        ]);
        args
    }
}

fn stream_json_output() -> [String; 3] {
    [
        "--output-format".into(),
        "stream-json".into(),
        "--verbose".into(),
    ]
}

/// What the scrubbed environment is built from.
#[derive(Debug, Clone)]
pub struct EnvSpec<'a> {
    pub home: &'a Path,
    pub tmp: &'a Path,
    pub bin: &'a Path,
    pub api_url: &'a str,
    pub run_tag: &'a str,
    pub events_socket: &'a Path,
    pub pty: bool,
    pub scenario_env: &'a indexmap::IndexMap<String, String>,
    pub sim_profile: Option<&'a str>,
}

/// Environment variable every process of a run inherits; the leftover sweep looks for it.
pub const RUN_TAG_ENV: &str = RunVar::RunTag.name();

/// The CLI's whole environment, built from nothing: the harness's [`RunVar`]s, and the
/// scenario's own variables (checked by `scenario::env` when the scenario loaded; any that
/// names a `RunVar` is dropped here all the same, so the harness's value always holds).
pub fn scrubbed_env(spec: &EnvSpec) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = spec
        .scenario_env
        .iter()
        .filter(|(k, _)| !RunVar::ALL.iter().any(|v| v.name() == k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    env.extend(
        harness_env(spec)
            .into_iter()
            .map(|(var, value)| (var.name().to_string(), value)),
    );
    env
}

/// The variables the harness sets in a run's environment.
fn harness_env(spec: &EnvSpec) -> Vec<(RunVar, String)> {
    let real_home = std::env::var_os("HOME").map(PathBuf::from);
    // The harness's PATH without anything under the real HOME (tools installed there could read
    // it), with the sandbox's helper folder first.
    let inherited = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    let mut path = vec![spec.bin.display().to_string()];
    path.extend(
        std::env::split_paths(&inherited)
            .filter(|p| real_home.as_ref().is_none_or(|h| !p.starts_with(h)))
            .map(|p| p.display().to_string()),
    );
    let term = if spec.pty { "xterm-256color" } else { "dumb" };
    let mut env = vec![
        (RunVar::Path, path.join(":")),
        (RunVar::Home, spec.home.display().to_string()),
        (RunVar::Tmpdir, spec.tmp.display().to_string()),
        (RunVar::User, "wakeprobe".into()),
        (RunVar::Logname, "wakeprobe".into()),
        (RunVar::Shell, "/bin/bash".into()),
        (RunVar::Lang, "C.UTF-8".into()),
        (RunVar::Term, term.into()),
        (RunVar::ApiUrl, spec.api_url.to_string()),
        (RunVar::ApiKey, DUMMY_KEY.into()),
        (RunVar::DisableTelemetry, "1".into()),
        (RunVar::DisableErrorReporting, "1".into()),
        (RunVar::DisableAutoupdater, "1".into()),
        (RunVar::NoNonessentialTraffic, "1".into()),
        (RunVar::RunTag, spec.run_tag.to_string()),
        (RunVar::Events, spec.events_socket.display().to_string()),
    ];
    if spec.pty {
        env.push((RunVar::Columns, TERMINAL_COLS.to_string()));
        env.push((RunVar::Lines, TERMINAL_ROWS.to_string()));
    }
    if let Some(profile) = spec.sim_profile {
        env.push((RunVar::SimProfile, profile.to_string()));
    }
    env
}

/// The running `wakeprobe`'s path as it was when first asked (`main` asks at start-up). A
/// rebuild or an install that replaces the file during a long invocation turns the live
/// answer into `PATH (deleted)`, and every later run would fail to start its supervisor; the
/// path first read names the new file, which speaks the same protocol when built from the same
/// source.
pub fn wakeprobe_binary() -> std::io::Result<PathBuf> {
    static FIRST: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    if let Some(path) = FIRST.get() {
        return Ok(path.clone());
    }
    let path = std::env::current_exe()?;
    Ok(FIRST.get_or_init(|| path).clone())
}

/// The binary the sandbox runs for its hooks and tracked tasks: `wakeprobe-helper` next to
/// `wakeprobe` (small, so quick to start at every hook) when it is of the same build, else
/// `wakeprobe` itself. A helper of another build (`cargo run` rebuilds only `wakeprobe`) may
/// speak another wire format, and its hooks would be lost. Asked once per process.
pub fn helper_binary(wakeprobe: &Path) -> PathBuf {
    static CHOSEN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    CHOSEN
        .get_or_init(|| {
            let helper = wakeprobe.with_file_name("wakeprobe-helper");
            let home = std::env::temp_dir();
            let expr = duct::cmd(&helper, ["--build-id"])
                .full_env(crate::os::env::tool_env(&home))
                .stdout_capture()
                .stderr_null();
            match crate::os::subprocess::run_bounded(&expr, Duration::from_secs(5)) {
                Ok(Finished::Exited(out))
                    if out.status.success()
                        && String::from_utf8_lossy(&out.stdout).trim()
                            == crate::evidence::recorder::BUILD_ID =>
                {
                    helper
                }
                _ => wakeprobe.to_path_buf(),
            }
        })
        .clone()
}

/// Finds the `claude-sim` binary next to the running `wakeprobe`.
pub fn sim_binary() -> Option<PathBuf> {
    let me = wakeprobe_binary().ok()?;
    let candidate = me.parent()?.join("claude-sim");
    candidate.exists().then_some(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's environment, in a pseudo-terminal on the simulator or not.
    fn env_with(
        extra: &indexmap::IndexMap<String, String>,
        every_mode: bool,
    ) -> Vec<(String, String)> {
        scrubbed_env(&EnvSpec {
            home: Path::new("/sb/home"),
            tmp: Path::new("/sb/tmp"),
            bin: Path::new("/sb/bin"),
            api_url: "http://127.0.0.1:9",
            run_tag: "r1",
            events_socket: Path::new("/sb/events.sock"),
            pty: every_mode,
            scenario_env: extra,
            sim_profile: every_mode.then_some("fixed"),
        })
    }

    #[test]
    fn the_environment_is_built_from_nothing() {
        let extra = indexmap::IndexMap::from([("FOO".to_string(), "bar".to_string())]);
        let env = env_with(&extra, false);
        let get = |k: &str| {
            env.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("HOME"), Some("/sb/home"));
        assert_eq!(get("ANTHROPIC_API_KEY"), Some(DUMMY_KEY));
        assert_eq!(get("FOO"), Some("bar"));
        assert!(get("PATH").unwrap().starts_with("/sb/bin:"));
        for banned in [
            "HTTPS_PROXY",
            "HTTP_PROXY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
        ] {
            assert_eq!(get(banned), None);
        }
        assert!(DUMMY_KEY.ends_with(DUMMY_KEY_TAIL) && DUMMY_KEY_TAIL.len() == 20);
    }

    /// Whatever the harness puts into a run's environment, in any mode, a scenario is refused
    /// (so a variable added to the harness later is protected with no other change), and a
    /// scenario entry naming one never wins over the harness's value.
    #[test]
    fn every_variable_the_harness_sets_is_refused_to_a_scenario() {
        let names_of_harness = |extra: &indexmap::IndexMap<String, String>| env_with(extra, true);
        let harness = names_of_harness(&indexmap::IndexMap::new());
        for (name, _) in &harness {
            let why = crate::scenario::env::refusal(name, "1")
                .unwrap_or_else(|| panic!("a scenario may set {name}, which the harness sets"));
            assert!(why.contains("set by wakeprobe"), "{name}: {why}");
        }
        // Defence in depth: a scenario entry that got past the check loses to the harness.
        let hostile: indexmap::IndexMap<String, String> = harness
            .iter()
            .map(|(k, _)| (k.clone(), "/root".to_string()))
            .collect();
        assert_eq!(names_of_harness(&hostile), harness);
    }
}
