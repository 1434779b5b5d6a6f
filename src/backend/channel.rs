//! Where a published Claude Code version comes from, and which package holds it for this machine.
//!
//! A version is published on one of two channels: the npm package `@anthropic-ai/claude-code`, or
//! an Agent SDK release (`@anthropic-ai/claude-agent-sdk`) whose `claudeCodeVersion` names it; the
//! SDK's platform package for this machine (`@anthropic-ai/claude-agent-sdk-linux-x64`, say)
//! carries that version's native binary. Builds such as 2.1.333-2.1.335 exist only on the second
//! channel. The binary is the same artifact on both (2.1.332's is byte-identical in the two), so
//! either channel is a faithful source; which one a version came from is recorded anyway.

pub use crate::evidence::channel::{Channel, version_with_channel};

pub const CLAUDE_CODE_PACKAGE: &str = "@anthropic-ai/claude-code";
pub const AGENT_SDK_PACKAGE: &str = "@anthropic-ai/claude-agent-sdk";
/// An SDK release's platform packages are `AGENT_SDK_PACKAGE-<platform>` (`...-linux-x64`).
const PLATFORM_PACKAGE_PREFIX: &str = "@anthropic-ai/claude-agent-sdk-";
/// The native binary inside a platform package (it has no `bin` field: npm links nothing).
pub const PLATFORM_BINARY: &str = "claude";

impl Channel {
    pub fn name(&self) -> ChannelName {
        match self {
            Channel::ClaudeCode => ChannelName::ClaudeCode,
            Channel::AgentSdk { .. } => ChannelName::AgentSdk,
        }
    }

    /// The npm package (and its version) that an install of `version` from this channel asks
    /// for on `platform`.
    pub fn package_spec(&self, version: &str, platform: &Platform) -> String {
        match self {
            Channel::ClaudeCode => format!("{CLAUDE_CODE_PACKAGE}@{version}"),
            Channel::AgentSdk { sdk_version } => {
                format!("{}@{sdk_version}", platform.sdk_package())
            }
        }
    }
}

/// A channel as errors name it, without a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChannelName {
    ClaudeCode,
    AgentSdk,
}

impl std::fmt::Display for ChannelName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChannelName::ClaudeCode => write!(f, "the claude-code package ({CLAUDE_CODE_PACKAGE})"),
            ChannelName::AgentSdk => write!(f, "the Agent SDK ({AGENT_SDK_PACKAGE})"),
        }
    }
}

/// This machine as npm's platform packages name it: `linux-x64`, `linux-arm64-musl`,
/// `darwin-arm64`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    pub name: String,
}

impl Platform {
    /// The running machine, or why the SDK names no package for it.
    pub fn here() -> Result<Platform, String> {
        let os = match std::env::consts::OS {
            "linux" => "linux",
            "macos" => "darwin",
            "windows" => "win32",
            other => return Err(format!("the operating system `{other}`")),
        };
        let cpu = match std::env::consts::ARCH {
            "x86_64" => "x64",
            "aarch64" => "arm64",
            other => return Err(format!("the processor `{other}` on {os}")),
        };
        let musl = os == "linux" && !glibc_here(cpu);
        Ok(Platform {
            name: format!("{os}-{cpu}{}", if musl { "-musl" } else { "" }),
        })
    }

    pub fn named(name: &str) -> Platform {
        Platform { name: name.into() }
    }

    /// `@anthropic-ai/claude-agent-sdk-linux-x64`
    pub fn sdk_package(&self) -> String {
        format!("{PLATFORM_PACKAGE_PREFIX}{}", self.name)
    }
}

/// Whether the C library is glibc. A glibc build of wakeprobe runs only where glibc is; a musl
/// build (static, runs anywhere) looks for glibc's dynamic loader, as the SDK's own lookup
/// prefers glibc where it is.
fn glibc_here(cpu: &str) -> bool {
    if cfg!(target_env = "gnu") {
        return true;
    }
    let loader = match cpu {
        "arm64" => "/lib/ld-linux-aarch64.so.1",
        _ => "/lib64/ld-linux-x86-64.so.2",
    };
    std::path::Path::new(loader).exists()
}

/// The platform package an installed folder holds (`node_modules/@anthropic-ai/claude-agent-sdk-*`),
/// if any: how a folder installed from the SDK channel is told apart on disk.
pub fn is_platform_package(name: &str) -> bool {
    name.strip_prefix(PLATFORM_PACKAGE_PREFIX)
        .is_some_and(|platform| !platform.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_are_named_and_spelled_for_npm() {
        let sdk = Channel::AgentSdk {
            sdk_version: "0.3.335".into(),
        };
        let here = Platform::named("linux-x64");
        assert_eq!(
            sdk.package_spec("2.1.335", &here),
            "@anthropic-ai/claude-agent-sdk-linux-x64@0.3.335"
        );
        assert_eq!(
            Channel::ClaudeCode.package_spec("2.1.332", &here),
            "@anthropic-ai/claude-code@2.1.332"
        );
        assert_eq!(
            version_with_channel("2.1.335", Some(&sdk)),
            "2.1.335 (agent-sdk 0.3.335)"
        );
        assert_eq!(
            version_with_channel("2.1.332", Some(&Channel::ClaudeCode)),
            "2.1.332"
        );
        assert_eq!(Channel::ClaudeCode.describe(), "claude-code");
        assert_eq!(
            serde_json::to_value(&sdk).unwrap(),
            serde_json::json!({"kind": "agent-sdk", "sdk_version": "0.3.335"})
        );
        assert!(is_platform_package(
            "@anthropic-ai/claude-agent-sdk-linux-x64"
        ));
        assert!(!is_platform_package("@anthropic-ai/claude-agent-sdk-"));
        assert!(!is_platform_package("@anthropic-ai/claude-code"));
    }

    #[test]
    fn this_machine_has_a_platform_name() {
        let here = Platform::here().unwrap();
        if cfg!(all(
            target_os = "linux",
            target_arch = "x86_64",
            target_env = "gnu"
        )) {
            assert_eq!(here.name, "linux-x64");
        }
    }
}
