//! Asking the npm registry what each channel publishes, and running npm at all.
//!
//! Every call goes through [`npm`], in an environment built from nothing
//! (`os::env::registry_tool_env`): no API key or credential of the user's reaches npm or the
//! install scripts it runs, and npm reads no configuration of the real HOME. Its HOME, cache
//! and configuration file (`CACHE/npmrc`, in place of `~/.npmrc`) are in our cache folder; its
//! global configuration is none. What reaches the registry comes from the user on purpose: a
//! mirror or a proxy in the environment (`npm_config_registry`, `HTTPS_PROXY`, a CA bundle), or
//! settings written into `CACHE/npmrc`. Two questions are asked, one per channel, in
//! parallel: the claude-code package's version list, and every Agent SDK release with its
//! `claudeCodeVersion` and optional (platform) packages. Their answers are parsed here, apart
//! from the asking, so the parsers run on recorded answers in tests.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use super::channel::{AGENT_SDK_PACKAGE, CLAUDE_CODE_PACKAGE, ChannelName};
use crate::os::subprocess::{Finished, last_lines, run_bounded};

/// The most one `npm view` may take, whatever npm's settings (its own patience is far
/// shorter where the user set none: `Patience::Question`).
const VIEW_LIMIT: Duration = Duration::from_secs(180);

/// How long npm waits for a registry that does not answer, where the user set nothing else.
/// npm's own defaults retry an unreachable registry for over a minute (10 s, then 60 s, between
/// tries) and wait five minutes for a silent one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patience {
    /// A question (`npm view`): its answer comes in seconds, so a registry that does not
    /// answer fails in seconds (a refused or unknown host: about 2 s; a silent one: 20 s a
    /// try, two tries).
    Question,
    /// An install: tries a few times with short pauses, with npm's time for a large download.
    Install,
}

impl Patience {
    fn settings(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Patience::Question => &[
                ("npm_config_fetch_retries", "1"),
                ("npm_config_fetch_retry_mintimeout", "1000"),
                ("npm_config_fetch_retry_maxtimeout", "2000"),
                ("npm_config_fetch_timeout", "20000"),
            ],
            Patience::Install => &[
                ("npm_config_fetch_retries", "2"),
                ("npm_config_fetch_retry_mintimeout", "2000"),
                ("npm_config_fetch_retry_maxtimeout", "10000"),
            ],
        }
    }
}

/// `npm ARGS` for an install, in [`npm_env`]; stdin closed.
pub fn npm(root: &Path, args: Vec<OsString>) -> duct::Expression {
    npm_with(root, args, Patience::Install)
}

fn npm_with(root: &Path, args: Vec<OsString>, patience: Patience) -> duct::Expression {
    duct::cmd("npm", args)
        .full_env(npm_env(root, patience))
        .stdin_null()
}

/// npm's whole environment: a tool's (HOME is the cache folder), the user's registry settings,
/// npm's cache and configuration file in the cache folder, and `patience` where the user's
/// environment says nothing of it.
pub fn npm_env(root: &Path, patience: Patience) -> Vec<(String, String)> {
    let npmrc = npmrc(root).display().to_string();
    let mut env = crate::os::env::registry_tool_env(root);
    env.extend([
        (
            "npm_config_cache".into(),
            root.join("npm-cache").display().to_string(),
        ),
        ("npm_config_userconfig".into(), npmrc),
        // The global one sits by node, which may be under the real HOME (nvm).
        ("npm_config_globalconfig".into(), "/dev/null".into()),
        ("npm_config_update_notifier".into(), "false".into()),
    ]);
    let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b) || a.replace('-', "_") == b;
    let unset: Vec<(String, String)> = patience
        .settings()
        .iter()
        .filter(|(key, _)| !env.iter().any(|(k, _)| same(k, key)))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    env.extend(unset);
    env
}

/// npm's configuration file, in place of the user's `~/.npmrc`: absent unless the user writes
/// one (a registry mirror, say).
pub fn npmrc(root: &Path) -> std::path::PathBuf {
    root.join("npmrc")
}

/// What the registry said about both channels.
#[derive(Debug, Clone, PartialEq)]
pub struct Answers {
    /// Every version of `@anthropic-ai/claude-code`.
    pub claude_code: Vec<semver::Version>,
    /// Every Agent SDK release.
    pub agent_sdk: Vec<SdkRelease>,
}

/// One Agent SDK release, as far as the CLI is concerned.
#[derive(Debug, Clone, PartialEq)]
pub struct SdkRelease {
    pub sdk_version: semver::Version,
    /// The CLI version it declares (`claudeCodeVersion`); absent before 0.2.6.
    pub cli_version: Option<semver::Version>,
    /// Its `@anthropic-ai/*` optional dependencies (the platform packages, from 0.2.113 on),
    /// each with the version it pins.
    pub packages: BTreeMap<String, String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("cannot run npm ({0}); install Node.js and npm, or pass --claude-bin PATH")]
    NoNpm(String),
    #[error("{}", failed_text(.0))]
    Failed(Vec<(ChannelName, String)>),
}

fn failed_text(failures: &[(ChannelName, String)]) -> String {
    let each: Vec<String> = failures
        .iter()
        .map(|(channel, detail)| format!("{channel}: {detail}"))
        .collect();
    format!(
        "the npm registry did not answer for {} (set npm's registry with npm_config_registry \
         or in the cache's npmrc, or pass --claude-bin PATH)",
        each.join("; nor for ")
    )
}

/// Asks the registry about both channels (in parallel); any channel that fails fails the whole.
pub fn ask(root: &Path) -> Result<Answers, RegistryError> {
    let (code, sdk) = std::thread::scope(|s| {
        let code = s.spawn(|| {
            view(root, &[CLAUDE_CODE_PACKAGE, "versions"])
                .map(|answer| answer.and_then(|b| parse_claude_code(&b)))
        });
        let range = format!("{AGENT_SDK_PACKAGE}@>=0.0.0");
        // `name` and `version` are in every release: npm then never unwraps the answer to
        // one field (it does when the first release listed has a single field).
        let sdk = view(
            root,
            &[
                &range,
                "name",
                "version",
                "claudeCodeVersion",
                "optionalDependencies",
            ],
        )
        .map(|answer| answer.and_then(|b| parse_agent_sdk(&b)));
        (code.join().expect("the npm view thread"), sdk)
    });
    combine(code?, sdk?)
}

/// Both channels' answers, or every channel that failed, named.
pub fn combine(
    code: Result<Vec<semver::Version>, String>,
    sdk: Result<Vec<SdkRelease>, String>,
) -> Result<Answers, RegistryError> {
    match (code, sdk) {
        (Ok(claude_code), Ok(agent_sdk)) => Ok(Answers {
            claude_code,
            agent_sdk,
        }),
        (code, sdk) => Err(RegistryError::Failed(
            [
                (ChannelName::ClaudeCode, code.err()),
                (ChannelName::AgentSdk, sdk.err()),
            ]
            .into_iter()
            .filter_map(|(channel, e)| e.map(|e| (channel, e)))
            .collect(),
        )),
    }
}

/// `npm view ARGS --json`: its stdout, or npm's reason for failing (inner `Err`). The outer
/// error is npm missing altogether.
pub fn view(root: &Path, args: &[&str]) -> Result<Result<Vec<u8>, String>, RegistryError> {
    let mut argv: Vec<OsString> = vec!["view".into()];
    argv.extend(args.iter().map(OsString::from));
    argv.push("--json".into());
    let expr = npm_with(root, argv, Patience::Question)
        .stdout_capture()
        .stderr_capture();
    let out =
        match run_bounded(&expr, VIEW_LIMIT).map_err(|e| RegistryError::NoNpm(e.to_string()))? {
            Finished::Exited(out) => out,
            Finished::TimedOut => {
                return Ok(Err(format!(
                    "npm view did not answer within {} s",
                    VIEW_LIMIT.as_secs()
                )));
            }
        };
    if out.status.success() {
        return Ok(Ok(out.stdout));
    }
    Ok(Err(npm_failure(&out.stdout, &out.stderr)))
}

/// npm's one-line reason: `error.summary` of the JSON it prints with `--json`, else the last
/// lines of its stderr.
fn npm_failure(stdout: &[u8], stderr: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(stdout)
        .ok()
        .and_then(|v| v["error"]["summary"].as_str().map(str::to_string))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| last_lines(&String::from_utf8_lossy(stderr), 3))
}

/// `npm view @anthropic-ai/claude-code versions --json`: a list of version strings (a lone
/// string when there is one). Versions that are not semver are left out.
pub fn parse_claude_code(bytes: &[u8]) -> Result<Vec<semver::Version>, String> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("npm printed no version list: {e}"))?;
    let items = match value {
        serde_json::Value::Array(items) => items,
        one @ serde_json::Value::String(_) => vec![one],
        other => return Err(format!("npm printed no version list: {}", kind_of(&other))),
    };
    Ok(items
        .iter()
        .filter_map(|v| v.as_str())
        .filter_map(|v| semver::Version::parse(v).ok())
        .collect())
}

/// `npm view @anthropic-ai/claude-agent-sdk@RANGE name version claudeCodeVersion
/// optionalDependencies --json`: a list of objects (one object when one release matches).
pub fn parse_agent_sdk(bytes: &[u8]) -> Result<Vec<SdkRelease>, String> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("npm printed no release list: {e}"))?;
    let items = match value {
        serde_json::Value::Array(items) => items,
        one @ serde_json::Value::Object(_) => vec![one],
        other => return Err(format!("npm printed no release list: {}", kind_of(&other))),
    };
    let mut releases = Vec::new();
    for item in &items {
        let Some(version) = item["version"].as_str() else {
            return Err(format!(
                "npm printed a release without its fields: {}",
                kind_of(item)
            ));
        };
        let Ok(sdk_version) = semver::Version::parse(version) else {
            continue;
        };
        let packages = item["optionalDependencies"]
            .as_object()
            .map(|deps| {
                deps.iter()
                    .filter(|(name, _)| name.starts_with("@anthropic-ai/"))
                    .filter_map(|(name, v)| Some((name.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        releases.push(SdkRelease {
            sdk_version,
            cli_version: item["claudeCodeVersion"]
                .as_str()
                .and_then(|v| semver::Version::parse(v).ok()),
            packages,
        });
    }
    Ok(releases)
}

fn kind_of(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if text.len() > 80 {
        format!("{}…", &text[..text.floor_char_boundary(80)])
    } else {
        text
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Answers recorded on 2026-12-03 with the very commands [`ask`] runs (see
    /// `fixtures/registry/README.md`).
    pub const CLAUDE_CODE_VERSIONS: &str =
        include_str!("fixtures/registry/claude-code.versions.json");
    pub const AGENT_SDK_RELEASES: &str =
        include_str!("fixtures/registry/claude-agent-sdk.releases.json");
    /// npm's `--json` answer when the registry refuses the connection.
    pub const UNREACHABLE: &str = include_str!("fixtures/registry/unreachable.json");

    pub fn recorded() -> Answers {
        Answers {
            claude_code: parse_claude_code(CLAUDE_CODE_VERSIONS.as_bytes()).unwrap(),
            agent_sdk: parse_agent_sdk(AGENT_SDK_RELEASES.as_bytes()).unwrap(),
        }
    }

    #[test]
    fn the_recorded_answers_parse() {
        let answers = recorded();
        assert_eq!(answers.claude_code.len(), 473);
        assert_eq!(answers.claude_code.last().unwrap().to_string(), "2.1.332");
        assert_eq!(answers.agent_sdk.len(), 344);
        let newest = answers
            .agent_sdk
            .iter()
            .max_by(|a, b| a.sdk_version.cmp(&b.sdk_version))
            .unwrap();
        assert_eq!(newest.sdk_version.to_string(), "0.3.335");
        assert_eq!(newest.cli_version.as_ref().unwrap().to_string(), "2.1.335");
        assert_eq!(
            newest.packages["@anthropic-ai/claude-agent-sdk-linux-x64"],
            "0.3.335"
        );
        // Before 0.2.6 no claudeCodeVersion; sharp's packages are not ours.
        let old = answers
            .agent_sdk
            .iter()
            .find(|r| r.sdk_version.to_string() == "0.2.0")
            .unwrap();
        assert_eq!((old.cli_version.as_ref(), old.packages.len()), (None, 0));
    }

    #[test]
    fn npm_s_odd_shapes_are_read_or_refused() {
        // One release matching: npm prints the object itself, not a list of one.
        let one = r#"{"name":"@anthropic-ai/claude-agent-sdk","version":"0.3.335","claudeCodeVersion":"2.1.335"}"#;
        assert_eq!(parse_agent_sdk(one.as_bytes()).unwrap().len(), 1);
        // Unwrapped to one field (what asking for a single field does): refused, not misread.
        let unwrapped = r#"["0.3.334","0.3.335"]"#;
        assert!(
            parse_agent_sdk(unwrapped.as_bytes())
                .unwrap_err()
                .contains("without its fields")
        );
        assert_eq!(parse_claude_code(br#""2.1.332""#).unwrap().len(), 1);
        assert!(parse_claude_code(b"{}").is_err());
        assert!(parse_claude_code(b"npm warn").is_err());
    }

    /// One channel failing fails the whole answer, naming that channel (and only it).
    #[test]
    fn a_channel_that_fails_is_named() {
        let code = || parse_claude_code(CLAUDE_CODE_VERSIONS.as_bytes());
        let sdk = || parse_agent_sdk(AGENT_SDK_RELEASES.as_bytes());
        fn refused<T>() -> Result<T, String> {
            Err(npm_failure(UNREACHABLE.as_bytes(), b""))
        }
        assert_eq!(combine(code(), sdk()).unwrap(), recorded());
        let only_sdk = combine(code(), refused()).unwrap_err().to_string();
        assert!(
            only_sdk.starts_with(
                "the npm registry did not answer for the Agent SDK (@anthropic-ai/claude-agent-sdk): FetchError"
            ) && !only_sdk.contains("claude-code package"),
            "{only_sdk}"
        );
        let only_code = combine(refused(), sdk()).unwrap_err().to_string();
        assert!(
            only_code.starts_with(
                "the npm registry did not answer for the claude-code package (@anthropic-ai/claude-code): FetchError"
            ) && !only_code.contains("Agent SDK"),
            "{only_code}"
        );
        // An answer npm printed but that is not a list fails its channel the same way.
        let garbled = combine(code(), parse_agent_sdk(b"[\"0.3.335\"]")).unwrap_err();
        assert!(
            matches!(&garbled, RegistryError::Failed(f) if f.len() == 1 && f[0].0 == ChannelName::AgentSdk)
        );
    }

    #[test]
    fn npm_s_reason_is_its_json_summary() {
        let reason = npm_failure(UNREACHABLE.as_bytes(), b"npm error code ECONNREFUSED\n");
        assert!(
            reason.starts_with("FetchError: request to http://127.0.0.1:9/")
                && reason.contains("ECONNREFUSED"),
            "{reason}"
        );
        assert_eq!(npm_failure(b"", b"a\nb\nc\nd\n"), "b | c | d");
        let both = RegistryError::Failed(vec![
            (ChannelName::ClaudeCode, "refused".into()),
            (ChannelName::AgentSdk, "timed out".into()),
        ])
        .to_string();
        assert!(
            both.contains("for the claude-code package (@anthropic-ai/claude-code): refused; nor for the Agent SDK (@anthropic-ai/claude-agent-sdk): timed out"),
            "{both}"
        );
    }
}
