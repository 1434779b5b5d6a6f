//! Hook event names: the ones this harness reads meaning into, and any other the CLI sends,
//! kept as it came. In files they are the CLI's own strings. They live with the scenario
//! format because scenario files name them (checks select events by hook).

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookName {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    SubagentStart,
    SubagentStop,
    Stop,
    SessionEnd,
    Notification,
    TeammateIdle,
    PreCompact,
    /// A name this harness does not know (a newer CLI's).
    Other(String),
}

impl HookName {
    /// Every name the recorder registers for, in the order the settings list them.
    pub const KNOWN: [HookName; 12] = [
        HookName::SessionStart,
        HookName::UserPromptSubmit,
        HookName::PreToolUse,
        HookName::PostToolUse,
        HookName::PostToolUseFailure,
        HookName::SubagentStart,
        HookName::SubagentStop,
        HookName::Stop,
        HookName::SessionEnd,
        HookName::Notification,
        HookName::TeammateIdle,
        HookName::PreCompact,
    ];

    pub fn as_str(&self) -> &str {
        match self {
            HookName::SessionStart => "SessionStart",
            HookName::UserPromptSubmit => "UserPromptSubmit",
            HookName::PreToolUse => "PreToolUse",
            HookName::PostToolUse => "PostToolUse",
            HookName::PostToolUseFailure => "PostToolUseFailure",
            HookName::SubagentStart => "SubagentStart",
            HookName::SubagentStop => "SubagentStop",
            HookName::Stop => "Stop",
            HookName::SessionEnd => "SessionEnd",
            HookName::Notification => "Notification",
            HookName::TeammateIdle => "TeammateIdle",
            HookName::PreCompact => "PreCompact",
            HookName::Other(name) => name,
        }
    }

    pub fn parse(name: &str) -> HookName {
        HookName::KNOWN
            .into_iter()
            .find(|h| h.as_str() == name)
            .unwrap_or_else(|| HookName::Other(name.to_string()))
    }

    /// The tool hooks, which say which tool ran.
    pub fn is_tool(&self) -> bool {
        matches!(
            self,
            HookName::PreToolUse | HookName::PostToolUse | HookName::PostToolUseFailure
        )
    }
}

impl fmt::Display for HookName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for HookName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for HookName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<HookName, D::Error> {
        Ok(HookName::parse(&String::deserialize(d)?))
    }
}

impl schemars::JsonSchema for HookName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HookName".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_are_kept() {
        for h in HookName::KNOWN {
            assert_eq!(HookName::parse(h.as_str()), h);
            let json = serde_json::to_string(&h).unwrap();
            assert_eq!(serde_json::from_str::<HookName>(&json).unwrap(), h);
        }
        let other = HookName::parse("WorktreeCreate");
        assert_eq!(other, HookName::Other("WorktreeCreate".into()));
        assert_eq!(serde_json::to_string(&other).unwrap(), "\"WorktreeCreate\"");
    }
}
