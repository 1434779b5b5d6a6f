//! The environments of the processes wakeprobe starts, each built from nothing.
//!
//! Two kinds:
//! - a run's own processes (the supervisor, the CLI, an SDK host, an integration): their
//!   environment is [`RunVar`]s, the variables the harness sets (`backend::scrubbed_env` sets
//!   them, and can set no other of its own), plus what the scenario asks for, which
//!   `scenario::env` has checked against every `RunVar` and the families the sandbox rests on;
//! - wakeprobe's own tools (npm, pip, python, git, a CLI's `--version`, a guard script):
//!   [`tool_env`], the harness's `PATH`, a HOME of wakeprobe's choosing and the locale; a
//!   package tool ([`registry_tool_env`]) also gets what reaches its registry (a mirror, a
//!   proxy, a CA bundle), never a credential.
//!
//! Nothing else of the harness's environment is passed on: no API key, token or cloud
//! credential, and no real HOME for any tool to read its configuration from.

use std::path::Path;

macro_rules! run_vars {
    ($($(#[$doc:meta])* $var:ident = $name:literal,)*) => {
        /// A variable the harness sets in a run's environment. A run's environment can hold
        /// no other variable of the harness's: adding one here protects it from scenarios
        /// (`scenario::env` refuses every name in [`RunVar::ALL`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum RunVar {
            $($(#[$doc])* $var,)*
        }

        impl RunVar {
            /// Every variable the harness sets, in no particular order.
            pub const ALL: &'static [RunVar] = &[$(RunVar::$var,)*];

            /// The variable's name in the environment.
            pub const fn name(self) -> &'static str {
                match self {
                    $(RunVar::$var => $name,)*
                }
            }
        }
    };
}

run_vars! {
    /// The sandbox's helper folder first, then the harness's PATH without the real HOME.
    Path = "PATH",
    /// The sandbox's home.
    Home = "HOME",
    /// The sandbox's temp folder (background task output lands there).
    Tmpdir = "TMPDIR",
    User = "USER",
    Logname = "LOGNAME",
    Shell = "SHELL",
    Lang = "LANG",
    Term = "TERM",
    /// A pseudo-terminal's size.
    Columns = "COLUMNS",
    Lines = "LINES",
    /// The fake API on loopback.
    ApiUrl = "ANTHROPIC_BASE_URL",
    /// The run's dummy key.
    ApiKey = "ANTHROPIC_API_KEY",
    DisableTelemetry = "DISABLE_TELEMETRY",
    DisableErrorReporting = "DISABLE_ERROR_REPORTING",
    DisableAutoupdater = "DISABLE_AUTOUPDATER",
    NoNonessentialTraffic = "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    /// The tag every process of the run carries: the leftover sweep looks for it.
    RunTag = "WAKEPROBE_RUN",
    /// The run's event socket (hooks, tracked tasks, the supervisor report there).
    Events = "WAKEPROBE_EVENTS",
    /// The simulator's behaviour profile.
    SimProfile = "CLAUDE_SIM_PROFILE",
    /// An SDK host's or an integration's settings file.
    SdkConfig = "WAKEPROBE_SDK_CONFIG",
    /// The TypeScript Agent SDK's entry module.
    SdkEntry = "WAKEPROBE_SDK_ENTRY",
    /// The tapped CLI an integration drives.
    Cli = "WAKEPROBE_CLI",
    /// opencode's background subagents (off by default).
    OpencodeBackgroundSubagents = "OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS",
    /// No models.dev lookup at opencode's start.
    OpencodeNoModelsFetch = "OPENCODE_DISABLE_MODELS_FETCH",
    OpencodeNoAutoupdate = "OPENCODE_DISABLE_AUTOUPDATE",
    /// opencode reads none of Claude Code's files (the project's recorder hooks).
    OpencodeNoClaudeCode = "OPENCODE_DISABLE_CLAUDE_CODE",
    /// Where opencode's observer plugin appends its lines.
    OpencodeEvents = "WAKEPROBE_OPENCODE_EVENTS",
}

/// One variable of a child's environment.
pub type EnvPair = (String, String);

/// The environment of one of wakeprobe's own tools: the harness's `PATH` (the tools are the
/// user's, found where the user put them), `home` as HOME (never the real one: no tool reads
/// the user's configuration or credentials from there), the temp folder and a fixed locale.
pub fn tool_env(home: &Path) -> Vec<EnvPair> {
    vec![
        (
            "PATH".into(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
        ),
        ("HOME".into(), home.display().to_string()),
        ("TMPDIR".into(), std::env::temp_dir().display().to_string()),
        ("LANG".into(), "C.UTF-8".into()),
    ]
}

/// What a package tool (npm, pip) may take from the harness's environment to reach its
/// registry: a registry mirror, a proxy (upper and lower case: tools read both), a CA bundle.
/// These are the user's network settings, given to the tool that talks to the registry for
/// them, and to nothing a run starts. Registry tokens are not among them: the packages
/// wakeprobe installs are public.
pub const REGISTRY_SETTINGS: &[&str] = &[
    "PIP_INDEX_URL",
    "PIP_TRUSTED_HOST",
    "PIP_CERT",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// npm's settings (`npm_config_KEY`, any case, `-` or `_`) that say how to reach the registry;
/// not where npm keeps its configuration or cache, and no credential.
const NPM_NETWORK_SETTINGS: &[&str] = &[
    "registry",
    "cafile",
    "ca",
    "strict_ssl",
    "proxy",
    "https_proxy",
    "noproxy",
    "fetch_retries",
    "fetch_retry_factor",
    "fetch_retry_mintimeout",
    "fetch_retry_maxtimeout",
    "fetch_timeout",
    "maxsockets",
    "offline",
    "prefer_offline",
    "prefer_online",
];

/// Whether a variable of the harness's is a registry setting a package tool gets.
fn is_registry_setting(name: &str) -> bool {
    if REGISTRY_SETTINGS.contains(&name) {
        return true;
    }
    let lower = name.to_ascii_lowercase().replace('-', "_");
    lower
        .strip_prefix("npm_config_")
        .is_some_and(|key| NPM_NETWORK_SETTINGS.contains(&key))
}

/// [`tool_env`] with the registry settings the harness's environment holds.
pub fn registry_tool_env(home: &Path) -> Vec<EnvPair> {
    let mut env = tool_env(home);
    env.extend(
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .filter(|(k, _)| is_registry_setting(k)),
    );
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_variables_have_distinct_names() {
        let mut names: Vec<&str> = RunVar::ALL.iter().map(|v| v.name()).collect();
        names.sort();
        let count = names.len();
        names.dedup();
        assert_eq!(names.len(), count);
    }

    #[test]
    fn a_tool_gets_the_home_it_is_given_and_nothing_secret() {
        let env = tool_env(Path::new("/cache/home"));
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["PATH", "HOME", "TMPDIR", "LANG"]);
        assert_eq!(env[1].1, "/cache/home");
        assert!(is_registry_setting("npm_config_registry"));
        assert!(is_registry_setting("NPM_CONFIG_FETCH_RETRIES"));
        assert!(is_registry_setting("https_proxy"));
        for not_network in [
            "npm_config_userconfig",
            "npm_config_globalconfig",
            "npm_config_cache",
            "npm_config__authToken",
            "npm_config_//registry.npmjs.org/:_authToken",
            "NPM_TOKEN",
            "ANTHROPIC_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
        ] {
            assert!(!is_registry_setting(not_network), "{not_network}");
        }
        for name in REGISTRY_SETTINGS.iter().chain(NPM_NETWORK_SETTINGS) {
            let upper = name.to_ascii_uppercase();
            assert!(
                !["KEY", "TOKEN", "SECRET", "PASSWORD", "AUTH"]
                    .iter()
                    .any(|w| upper.contains(w)),
                "{name} would pass a credential on"
            );
        }
    }
}
