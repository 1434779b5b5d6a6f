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

/// What a scenario expects of a variant's verdict: one outcome, or a declared race, any of a
/// few outcomes the pinned CLI was measured to give (written as a list in the file, and in
/// `result.json`). A run outside it is a regression; a change between two outcomes inside it
/// is not.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(untagged, expecting = "expected a verdict, or a list of verdicts")]
pub enum Expected {
    One(Outcome),
    /// Two or more outcomes, in `ALL_OUTCOMES` order, each once.
    AnyOf(Vec<Outcome>),
}

impl Expected {
    /// The expectation of these outcomes (one, or a race); `None` when there are none.
    pub fn of(outcomes: &[Outcome]) -> Option<Expected> {
        let mut set: Vec<Outcome> = outcomes.to_vec();
        set.sort();
        set.dedup();
        match set.as_slice() {
            [] => None,
            [one] => Some(Expected::One(*one)),
            _ => Some(Expected::AnyOf(set)),
        }
    }

    pub fn outcomes(&self) -> &[Outcome] {
        match self {
            Expected::One(o) => std::slice::from_ref(o),
            Expected::AnyOf(set) => set,
        }
    }

    /// Whether a run that gave `outcome` meets the expectation.
    pub fn allows(&self, outcome: Outcome) -> bool {
        self.outcomes().contains(&outcome)
    }

    /// A declared race: more than one outcome is expected.
    pub fn is_race(&self) -> bool {
        matches!(self, Expected::AnyOf(_))
    }

    /// The one outcome, when it is not a race.
    pub fn single(&self) -> Option<Outcome> {
        match self {
            Expected::One(o) => Some(*o),
            Expected::AnyOf(_) => None,
        }
    }
}

impl From<Outcome> for Expected {
    fn from(o: Outcome) -> Expected {
        Expected::One(o)
    }
}

impl fmt::Display for Expected {
    /// `woke`, or `woke or queued-until-input` (no `|`: it is printed in Markdown tables).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.outcomes().iter().map(|o| o.as_str()).collect();
        f.write_str(&names.join(" or "))
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

    #[test]
    fn an_expectation_is_one_outcome_or_a_race_written_as_a_list() {
        let race = Expected::of(&[Outcome::QueuedUntilInput, Outcome::Woke, Outcome::Woke]);
        let race = race.unwrap();
        assert!(race.is_race());
        assert!(race.allows(Outcome::Woke) && race.allows(Outcome::QueuedUntilInput));
        assert!(!race.allows(Outcome::NeverFired));
        assert_eq!(race.to_string(), "woke or queued-until-input");
        assert_eq!(
            serde_json::to_value(&race).unwrap(),
            serde_json::json!(["woke", "queued-until-input"])
        );
        let one = Expected::of(&[Outcome::Woke]).unwrap();
        assert_eq!(one, Expected::One(Outcome::Woke));
        assert_eq!(
            serde_json::to_value(&one).unwrap(),
            serde_json::json!("woke")
        );
        assert_eq!(
            serde_json::from_value::<Expected>(serde_json::json!("woke")).unwrap(),
            one
        );
        assert_eq!(Expected::of(&[]), None);
    }
}
