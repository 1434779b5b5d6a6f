//! A scenario document as a minimization subject: the units each pass may remove (agents but
//! the first, steps, inputs, texts), its numbers, and a candidate only when it still loads and
//! plans.

use super::{Pass, Size, Subject};
use crate::scenario::edit::Editable;

/// A candidate scenario: an edited document that is known to be valid.
#[derive(Debug, Clone)]
pub struct Candidate(pub Editable);

impl Candidate {
    /// The document as a candidate, if it loads and plans.
    pub fn checked(e: Editable) -> Option<Candidate> {
        let scenario = e.validate().ok()?;
        scenario.plan(e.variant(), &[]).ok()?;
        Some(Candidate(e))
    }
}

impl Subject for Candidate {
    fn units(&self, pass: Pass) -> Vec<String> {
        let e = &self.0;
        match pass {
            Pass::Agents => e.agents().into_iter().skip(1).collect(),
            Pass::Steps => e.steps().iter().map(|(a, i)| e.step_label(a, *i)).collect(),
            Pass::Inputs => e.inputs(),
            Pass::Texts => e.texts().into_iter().map(|(_, label)| label).collect(),
        }
    }

    fn without(&self, pass: Pass, removed: &[usize]) -> Option<Candidate> {
        let e = &self.0;
        let next = match pass {
            Pass::Agents => {
                e.without_agents(&pick(e.agents().into_iter().skip(1).collect(), removed))
            }
            Pass::Steps => e.without_steps(&pick(e.steps(), removed)),
            Pass::Inputs => e.without_inputs(removed),
            Pass::Texts => e.shortened(&pick(
                e.texts().into_iter().map(|(s, _)| s).collect(),
                removed,
            )),
        };
        Candidate::checked(next)
    }

    fn numbers(&self) -> Vec<(String, f64)> {
        self.0
            .params()
            .into_iter()
            .map(|(name, value, _)| (name, value))
            .collect()
    }

    fn with_number(&self, name: &str, value: f64) -> Option<Candidate> {
        Candidate::checked(self.0.with_param(name, value))
    }

    fn integral(&self, name: &str) -> bool {
        self.0
            .params()
            .iter()
            .any(|(n, _, whole)| n == name && *whole)
    }

    fn key(&self) -> String {
        self.0.text()
    }

    fn size(&self) -> Size {
        Size {
            agents: self.0.agents().len(),
            steps: self.0.steps().len(),
            inputs: self.0.inputs().len(),
        }
    }
}

/// The items at these indices.
fn pick<T>(all: Vec<T>, indices: &[usize]) -> Vec<T> {
    all.into_iter()
        .enumerate()
        .filter(|(i, _)| indices.contains(i))
        .map(|(_, x)| x)
        .collect()
}
