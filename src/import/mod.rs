//! Transcript -> scenario: `wakeprobe import` turns what a real session left (its transcript,
//! its subagents' transcripts) into a scenario that replays the model's side against the real
//! CLI. The user's first prompt and later inputs (timed from what a trigger can name), each
//! agent's replies as steps (tool results are not copied: the CLI produces them again), spawned
//! agents and tracked commands named, long durations lifted into `[params]`, watches for every
//! background handoff, the driver mode inferred, paths and secrets redacted.
//!
//! [`read`] finds and reads the files (anything that is not a transcript is one located error),
//! [`records`] reads one transcript as entries, [`build`] makes the [`model::Draft`], and the
//! draft renders as a scenario file that [`crate::scenario::Scenario::parse`] accepts.

mod build;
mod context;
mod lift;
mod model;
mod names;
pub mod read;
mod records;
mod redact;
mod steps;
mod timing;

use std::collections::BTreeMap;
use std::path::Path;

use crate::scenario::{DriverMode, Scenario};

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A file that is not a transcript, located.
    #[error("{path}:{line}: {message}")]
    Located {
        path: String,
        line: usize,
        message: String,
    },
    /// A path that names no session.
    #[error("{0}")]
    Input(String),
    /// The transcript could not be made a valid scenario (a gap in the importer).
    #[error("the imported scenario does not validate: {0}")]
    Invalid(String),
}

/// What the caller may choose.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The driver mode, instead of inferring it.
    pub mode: Option<DriverMode>,
    /// The scenario's name (default: `imported-<session>`).
    pub name: Option<String>,
}

/// Counts for the summary line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    pub agents: usize,
    pub steps: usize,
    pub inputs: usize,
    /// Records of types the importer does not know, skipped, by type.
    pub unknown: BTreeMap<String, usize>,
}

impl Stats {
    /// `skipped 3 record(s) of unknown types: foo (2), bar (1)`, if any were.
    pub fn unknown_line(&self) -> Option<String> {
        let total: usize = self.unknown.values().sum();
        (total > 0).then(|| {
            let kinds: Vec<String> = self
                .unknown
                .iter()
                .map(|(k, n)| format!("{k} ({n})"))
                .collect();
            format!(
                "skipped {total} record(s) of unknown types: {}",
                kinds.join(", ")
            )
        })
    }
}

/// An imported scenario: its text, already validated.
#[derive(Debug)]
pub struct Imported {
    pub text: String,
    pub name: String,
    pub stats: Stats,
}

/// Imports the session a path names (a `.jsonl` session file or a run folder).
pub fn import(path: &Path, opts: &Options) -> Result<Imported, ImportError> {
    let session = read::session(path)?;
    let (draft, stats) = build::build(&session, opts);
    let text = draft.render();
    Scenario::parse(Path::new(&format!("{}.toml", draft.name)), text.clone())
        .map_err(|e| ImportError::Invalid(e.to_string()))?;
    Ok(Imported {
        text,
        name: draft.name,
        stats,
    })
}

/// Lowercase letters, digits and `-`: what a scenario's name may hold.
pub fn is_scenario_name(name: &str) -> bool {
    names::is_agent_name(name)
}

#[cfg(test)]
mod tests;
