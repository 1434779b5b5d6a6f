//! What a scenario's `env` may set: nothing the run's sandbox rests on.
//!
//! A scenario is pasted from bug reports, so its `env` is untrusted input. Its variables join
//! the CLI's environment (and, through the CLI, every hook, tracked task and tool call of the
//! run), so a variable could move the CLI's state out of the sandbox (`HOME`,
//! `CLAUDE_CONFIG_DIR`), point its requests elsewhere (`ANTHROPIC_BASE_URL`, a proxy, a cloud
//! provider), hand it credentials, load code before anything is recorded (`NODE_OPTIONS`,
//! `LD_PRELOAD`, `BASH_ENV`), or hide the run's processes from the leftover sweep (the run
//! tag). Each refusal is a located error naming the variable and why.
//!
//! **A deny-list, by families and by the words of a name**, not an allow-list: the variables
//! bug reports carry are the CLI's own switches (`CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS`,
//! `MAX_THINKING_TOKENS`, `BASH_DEFAULT_TIMEOUT_MS`, `DISABLE_…`), named with no common
//! prefix, hundreds of them, new ones in every version; an allow-list would refuse most of
//! what a report needs. What the sandbox rests on is few and nameable:
//! 1. every variable the harness sets ([`RunVar::ALL`], so one added to the harness is
//!    protected with no change here), and wakeprobe's own (`WAKEPROBE_*`; the simulator's
//!    tuning, `CLAUDE_SIM_ORPHAN_GRACE_MS` and the like, is a scenario's to set, its profile
//!    is not);
//! 2. families, by name (judged case-sensitively, as the OS does, except proxies and npm's
//!    settings, which tools also read in lower case): where the CLI keeps its state, where it
//!    sends requests and with which credentials, and what runs before the script does;
//! 3. the words of a name (`URL`, `HOST`, `PROXY`, `KEY`, `TOKEN`, `SECRET`, `DIR`, `PATH`,
//!    `FILE`, `CONFIG`, ...): a variable a later CLI version adds to point somewhere or to
//!    carry a secret is caught by its name's shape. Such a variable may still be a number or
//!    true/false (`CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR = "1"`), which points nowhere.
//!
//! A variable that names a place (`CLAUDE_CONFIG_DIR`, `XDG_CONFIG_HOME`, `FOO_DIR`) may name
//! a second sandboxed folder, `"{{@folder:NAME}}"`: the harness creates it, empty, inside the
//! run's sandbox before the CLI starts, and gives its path. That is how a scenario that needs
//! another home gets one; a path outside the sandbox is never accepted.
//!
//! This guards the harness's isolation, not the user from the scenario's script: a scripted
//! tool call is a command the CLI really runs. The private network namespace (root) is what
//! keeps every byte on loopback.

use crate::os::env::RunVar;

/// The run-time placeholder of a second sandboxed folder: `{{@folder:NAME}}`.
const FOLDER_OPEN: &str = "{{@folder:";
const FOLDER_CLOSE: &str = "}}";

/// The longest name of a sandboxed folder.
const MAX_FOLDER_NAME: usize = 64;

/// Why a family of variables is wakeprobe's alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// Where the CLI keeps its state: only a sandboxed folder.
    Place,
    /// Where requests go, and with which credentials.
    Reach,
    /// Code or configuration loaded before the scenario's script runs.
    Preload,
    /// wakeprobe's own variables.
    Own,
}

impl Family {
    fn why(self) -> &'static str {
        match self {
            Family::Place => {
                "names where the CLI keeps its state, which stays in the run's sandbox"
            }
            Family::Reach => {
                "chooses where requests go or which credentials they carry, which the sandbox keeps on the fake API"
            }
            Family::Preload => {
                "loads code or configuration into the run's processes before anything is recorded"
            }
            Family::Own => "is wakeprobe's own",
        }
    }
}

/// Exact names and prefixes (`*` at the end), case-sensitive.
const FAMILIES: &[(&str, Family)] = &[
    ("XDG_*", Family::Place),
    ("CLAUDE_CONFIG_DIR", Family::Place),
    ("CLAUDE_CODE_TMPDIR", Family::Place),
    ("CLAUDE_TMPDIR", Family::Place),
    ("TMP", Family::Place),
    ("TEMP", Family::Place),
    ("TEMPDIR", Family::Place),
    ("ANTHROPIC_*", Family::Reach),
    ("CLAUDE_CODE_USE_*", Family::Reach),
    ("CLAUDE_CODE_API_*", Family::Reach),
    ("CLAUDE_CODE_OAUTH_*", Family::Reach),
    ("CLAUDE_CODE_SKIP_*", Family::Reach),
    ("CLAUDE_CODE_ENABLE_TELEMETRY", Family::Reach),
    ("OTEL_*", Family::Reach),
    ("AWS_*", Family::Reach),
    ("GOOGLE_*", Family::Reach),
    ("GCLOUD_*", Family::Reach),
    ("CLOUDSDK_*", Family::Reach),
    ("GCE_*", Family::Reach),
    ("GCP_*", Family::Reach),
    ("VERTEX_*", Family::Reach),
    ("CLOUD_ML_REGION", Family::Reach),
    ("AZURE_*", Family::Reach),
    ("GH_*", Family::Reach),
    ("GITHUB_*", Family::Reach),
    ("SSH_*", Family::Reach),
    ("GPG_*", Family::Reach),
    ("GNUPGHOME", Family::Reach),
    ("KUBECONFIG", Family::Reach),
    ("DOCKER_*", Family::Reach),
    ("DBUS_SESSION_BUS_ADDRESS", Family::Reach),
    ("XAUTHORITY", Family::Reach),
    ("DISPLAY", Family::Reach),
    ("WAYLAND_DISPLAY", Family::Reach),
    ("SSL_*", Family::Reach),
    ("REQUESTS_CA_BUNDLE", Family::Reach),
    ("CURL_CA_BUNDLE", Family::Reach),
    ("LD_*", Family::Preload),
    ("DYLD_*", Family::Preload),
    ("NODE_*", Family::Preload),
    ("BUN_*", Family::Preload),
    ("PYTHON*", Family::Preload),
    ("BASH_ENV", Family::Preload),
    ("ENV", Family::Preload),
    ("BASH_FUNC_*", Family::Preload),
    ("SHELLOPTS", Family::Preload),
    ("BASHOPTS", Family::Preload),
    ("IFS", Family::Preload),
    ("CDPATH", Family::Preload),
    ("GIT_*", Family::Preload),
    ("WAKEPROBE_*", Family::Own),
];

/// Words that make a name point somewhere or carry a secret (`_`-separated, upper case).
const TELLING_WORDS: &[&str] = &[
    "URL",
    "URI",
    "HOST",
    "HOSTNAME",
    "ENDPOINT",
    "PROXY",
    "ADDRESS",
    "SOCKET",
    "SOCK",
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "CREDENTIALS",
    "AUTH",
    "CERT",
    "CERTS",
    "HELPER",
    "DESCRIPTOR",
    "DIR",
    "DIRS",
    "PATH",
    "PATHS",
    "HOME",
    "FILE",
    "CONFIG",
    "REGISTRY",
];

fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

/// Why a scenario may not set `name` to `value` (the value after `--set` substitution), or
/// `None` when it may.
pub fn refusal(name: &str, value: &str) -> Option<String> {
    if let Some(var) = RunVar::ALL.iter().find(|v| v.name() == name) {
        return Some(harness_sets(*var));
    }
    let upper = name.to_ascii_uppercase();
    // Tools read proxies and npm's settings in either case (`http_proxy`, `npm_config_*`).
    if upper.ends_with("_PROXY") || upper.starts_with("NPM_CONFIG_") {
        return Some(format!("{}; a scenario cannot set it", Family::Reach.why()));
    }
    let family = FAMILIES
        .iter()
        .find(|(pattern, _)| matches(pattern, name))
        .map(|(_, family)| *family);
    match family {
        Some(Family::Place) if folder_name(value).is_some() => None,
        Some(Family::Place) => Some(format!(
            "{}: give it a second sandboxed folder, \"{FOLDER_OPEN}NAME{FOLDER_CLOSE}\" (created empty for each run), not `{}`",
            Family::Place.why(),
            value.escape_debug()
        )),
        Some(family) => Some(format!("{}; a scenario cannot set it", family.why())),
        None => telling_word(name).and_then(|word| {
            (!points_nowhere(value) && folder_name(value).is_none()).then(|| {
                format!(
                    "holds `{word}`, so it may point the run outside its sandbox or carry a secret: a scenario may set it to a number, true or false, or a second sandboxed folder \"{FOLDER_OPEN}NAME{FOLDER_CLOSE}\", not `{}`",
                    value.escape_debug()
                )
            })
        }),
    }
}

fn harness_sets(var: RunVar) -> String {
    let role = match var {
        RunVar::Home => {
            return format!(
                "is set by wakeprobe: every run's CLI gets a fresh home in its sandbox, with the workspace trust accepted. A scenario that needs another home gives the variable that names it a second sandboxed folder, e.g. `CLAUDE_CONFIG_DIR = \"{FOLDER_OPEN}config{FOLDER_CLOSE}\"` or `XDG_CONFIG_HOME = \"{FOLDER_OPEN}xdg{FOLDER_CLOSE}\"`"
            );
        }
        RunVar::RunTag => "it tags every process of the run, so nothing the run starts outlives it",
        RunVar::ApiUrl | RunVar::ApiKey => {
            "the CLI talks to the run's fake API on loopback, with a dummy key"
        }
        RunVar::Path => {
            "the sandbox's helpers first, then the harness's PATH without the real HOME"
        }
        _ => "one of the variables every run's environment is built from",
    };
    format!("is set by wakeprobe ({role}); a scenario cannot change it")
}

/// The first word of `name` that tells it points somewhere or carries a secret.
fn telling_word(name: &str) -> Option<&'static str> {
    name.split('_')
        .find_map(|word| TELLING_WORDS.iter().find(|w| **w == word).copied())
}

/// A value that names no place and holds no secret: empty, a number, or a truth value.
fn points_nowhere(value: &str) -> bool {
    let v = value.trim();
    v.is_empty()
        || v.parse::<f64>().is_ok_and(f64::is_finite)
        || ["true", "false", "yes", "no", "on", "off"]
            .iter()
            .any(|w| v.eq_ignore_ascii_case(w))
}

/// The folder a value names when it is exactly `{{@folder:NAME}}` with a plain NAME.
pub fn folder_name(value: &str) -> Option<&str> {
    let name = value
        .strip_prefix(FOLDER_OPEN)?
        .strip_suffix(FOLDER_CLOSE)?;
    let plain = !name.is_empty()
        && name.len() <= MAX_FOLDER_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    plain.then_some(name)
}

/// Why a value's run-time placeholders cannot be filled: `{{@folder:NAME}}` is the only one an
/// `env` value takes, and it is the whole value.
pub fn placeholder_problem(value: &str) -> Option<String> {
    if !value.contains("{{@") || folder_name(value).is_some() {
        return None;
    }
    Some(format!(
        "`{}`: an `env` value takes one run-time placeholder, a second sandboxed folder \"{FOLDER_OPEN}NAME{FOLDER_CLOSE}\" (NAME: letters, digits, `-`, `_`, at most {MAX_FOLDER_NAME}) as the whole value",
        value.escape_debug()
    ))
}

/// `value` with its sandboxed folder filled in by `folder` (which creates it), or as it is.
pub fn fill<E>(value: &str, folder: impl FnOnce(&str) -> Result<String, E>) -> Result<String, E> {
    match folder_name(value) {
        Some(name) => folder(name),
        None => Ok(value.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(name: &str, value: &str) -> bool {
        refusal(name, value).is_some()
    }

    #[test]
    fn every_variable_the_harness_sets_is_refused_whatever_its_value() {
        for var in RunVar::ALL {
            for value in ["/root", "1", "{{@folder:x}}", ""] {
                let why = refusal(var.name(), value).unwrap_or_else(|| {
                    panic!("{} = {value} was accepted", var.name());
                });
                assert!(why.contains("set by wakeprobe"), "{why}");
            }
        }
        assert!(
            refusal("HOME", "/root")
                .unwrap()
                .contains("{{@folder:config}}"),
            "the refusal says how to get another home"
        );
    }

    #[test]
    fn the_families_the_sandbox_rests_on_are_refused() {
        for name in [
            "XDG_CONFIG_HOME",
            "CLAUDE_CONFIG_DIR",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_BEDROCK_BASE_URL",
            "CLAUDE_CODE_USE_BEDROCK",
            "CLAUDE_CODE_USE_VERTEX",
            "CLAUDE_CODE_API_BASE_URL",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "AWS_ACCESS_KEY_ID",
            "AWS_PROFILE",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "NODE_OPTIONS",
            "NODE_TLS_REJECT_UNAUTHORIZED",
            "LD_PRELOAD",
            "BASH_ENV",
            "PYTHONPATH",
            "GIT_CONFIG_GLOBAL",
            "SSH_AUTH_SOCK",
            "WAKEPROBE_KEEP",
            "HTTPS_PROXY",
            "https_proxy",
            "all_proxy",
            "NO_PROXY",
            "npm_config_registry",
            "NPM_CONFIG_USERCONFIG",
        ] {
            assert!(refused(name, "1"), "{name} = 1 was accepted");
            assert!(refused(name, "/root"), "{name} = /root was accepted");
        }
    }

    #[test]
    fn names_are_judged_as_the_os_reads_them() {
        // The OS tells `HOME` from `home`: only the harness's spelling is the harness's.
        assert!(refused("HOME", "/x"));
        assert!(!refused("Home", "/x"));
        assert!(!refused("path", "/x"));
        // Tools read proxies in lower case too.
        assert!(refused("http_proxy", "http://192.0.2.1:9"));
        assert!(refused("Http_Proxy", "http://192.0.2.1:9"));
    }

    #[test]
    fn a_name_that_points_somewhere_may_only_be_a_number_a_truth_value_or_a_sandboxed_folder() {
        assert!(refused("CLAUDE_CODE_NEW_BASE_URL", "http://example.com"));
        assert!(refused("SOME_TOOL_DIR", "/root/.claude"));
        assert!(refused("MY_SECRET", "hunter2"));
        assert!(!refused("CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR", "1"));
        assert!(!refused("CLAUDE_CODE_IDLE_TOKEN_THRESHOLD", "2000"));
        assert!(!refused("SOME_TOOL_DIR", "{{@folder:tool}}"));
        assert!(!refused("SOME_TOOL_FLAG", "/anything"), "no telling word");
        let why = refusal("SOME_TOOL_DIR", "/root").unwrap();
        assert!(why.contains("`DIR`") && why.contains("/root"), "{why}");
    }

    #[test]
    fn the_library_switches_are_accepted() {
        for (name, value) in [
            ("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS", "1"),
            ("MAX_THINKING_TOKENS", "1024"),
            ("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "4096"),
            ("BASH_DEFAULT_TIMEOUT_MS", "60000"),
            ("DISABLE_INTERLEAVED_THINKING", "1"),
            // The simulator's tuning, which scenarios set (its profile is the harness's).
            ("CLAUDE_SIM_ORPHAN_GRACE_MS", "3000"),
            ("CLAUDE_SIM_MAX_SECONDS", "600"),
            ("CLAUDE_SIM_PACE_MS", "10"),
        ] {
            assert_eq!(refusal(name, value), None, "{name}");
        }
    }

    #[test]
    fn a_place_takes_a_sandboxed_folder_and_nothing_else() {
        assert!(!refused("CLAUDE_CONFIG_DIR", "{{@folder:config}}"));
        assert!(!refused("XDG_CONFIG_HOME", "{{@folder:xdg-1}}"));
        for value in [
            "/root/.claude",
            "{{@folder:../x}}",
            "{{@folder:}}",
            "{{@folder:a}}/x",
            "~/.claude",
        ] {
            let why = refusal("CLAUDE_CONFIG_DIR", value).unwrap();
            assert!(why.contains("{{@folder:NAME}}"), "{why}");
        }
        assert_eq!(folder_name("{{@folder:a_b-9}}"), Some("a_b-9"));
        assert_eq!(
            folder_name(&format!("{{{{@folder:{}}}}}", "a".repeat(65))),
            None
        );
    }

    #[test]
    fn only_the_folder_placeholder_is_filled() {
        assert_eq!(placeholder_problem("1"), None);
        assert_eq!(placeholder_problem("{{@folder:x}}"), None);
        assert!(placeholder_problem("{{@agent-id:worker}}").is_some());
        assert!(placeholder_problem("{{@folder:x}}/sub").is_some());
        let filled = fill("{{@folder:x}}", |n| Ok::<_, ()>(format!("/sb/folders/{n}")));
        assert_eq!(filled, Ok("/sb/folders/x".to_string()));
        assert_eq!(fill("1", |_| Err(())), Ok("1".to_string()));
    }
}
