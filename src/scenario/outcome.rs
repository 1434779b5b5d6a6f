//! The verdict names: what a scenario may `expect`, and what the classifier decides. They are
//! part of the file format, so they live here, at the bottom of the flow; the classifier's
//! rules and wording are in `classify`.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    PartialOrd,
    Ord,
    schemars::JsonSchema,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The waiter made a request carrying the work's notification.
    Woke,
    /// H1: the work ended and no notification appeared anywhere.
    NeverFired,
    /// H2: a notification existed, but the waiter was finalized and never asked again.
    NotResumable,
    /// H3: the notification arrived only after an unrelated input.
    QueuedUntilInput,
    /// H4: the work itself failed or hung.
    ChildFailed,
    /// The evidence does not decide (with the reason).
    Unknown,
}

pub const ALL_OUTCOMES: [Outcome; 6] = [
    Outcome::Woke,
    Outcome::NeverFired,
    Outcome::NotResumable,
    Outcome::QueuedUntilInput,
    Outcome::ChildFailed,
    Outcome::Unknown,
];

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Woke => "woke",
            Outcome::NeverFired => "never-fired",
            Outcome::NotResumable => "not-resumable",
            Outcome::QueuedUntilInput => "queued-until-input",
            Outcome::ChildFailed => "child-failed",
            Outcome::Unknown => "unknown",
        }
    }

    pub fn parse(s: &str) -> Option<Outcome> {
        ALL_OUTCOMES.iter().copied().find(|o| o.as_str() == s)
    }

    /// Every name, for error messages.
    pub fn names() -> String {
        ALL_OUTCOMES
            .iter()
            .map(|o| o.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_text_and_serde() {
        for o in ALL_OUTCOMES {
            assert_eq!(Outcome::parse(o.as_str()), Some(o));
            let json = serde_json::to_string(&o).unwrap();
            assert_eq!(json, format!("\"{o}\""));
        }
        assert_eq!(Outcome::parse("woken"), None);
    }
}
