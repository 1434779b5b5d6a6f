//! Which channel a Claude Code binary came from, as a run's record keeps it: the npm package
//! `@anthropic-ai/claude-code` or an Agent SDK release (`backend::channel` installs from
//! them). It lives here, with the run's record, so the record needs nothing from the floors
//! above.

use serde::{Deserialize, Serialize};

/// The channel a published CLI version came from.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Channel {
    /// `@anthropic-ai/claude-code@VERSION`.
    ClaudeCode,
    /// The native binary in the platform package of Agent SDK release `sdk_version`, whose
    /// `claudeCodeVersion` is the version.
    AgentSdk { sdk_version: String },
}

impl Channel {
    /// `claude-code`, `agent-sdk 0.3.335`: for tables that name every channel.
    pub fn describe(&self) -> String {
        match self {
            Channel::ClaudeCode => "claude-code".into(),
            Channel::AgentSdk { sdk_version } => format!("agent-sdk {sdk_version}"),
        }
    }

    /// What prose adds after a version: nothing for the claude-code package (the default
    /// channel), `(agent-sdk 0.3.335)` for the SDK.
    pub fn note(&self) -> Option<String> {
        match self {
            Channel::ClaudeCode => None,
            Channel::AgentSdk { .. } => Some(format!("({})", self.describe())),
        }
    }
}

/// `2.1.335 (agent-sdk 0.3.335)`, `2.1.332`: a version as prose names it, given its channel when
/// known.
pub fn version_with_channel(version: &str, channel: Option<&Channel>) -> String {
    match channel.and_then(Channel::note) {
        Some(note) => format!("{version} {note}"),
        None => version.to_string(),
    }
}
