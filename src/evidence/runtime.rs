//! The seam between the recorder and a runtime's own evidence reader. Claude Code's stdout,
//! hooks and transcripts are read by [`super::normalize::Normalizer`]; another runtime brings
//! a reader of its own (`crate::runtime`), which turns what that runtime prints and streams
//! into the same [`Event`]s, so everything after the recorder reads one vocabulary.

use super::Event;

/// Where a line of a runtime's own evidence came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The CLI's stdout.
    Stdout,
    /// The runtime's server event stream (opencode's `GET /event`).
    Server,
    /// An observer plugin loaded into the runtime (it stamps its lines itself).
    Plugin,
    /// The driver's own note to the reader (which session is the main agent's).
    Driver,
}

/// A runtime's evidence reader, one per run.
pub trait RuntimeEvidence: Send {
    /// Learns from the fake API's events: which tool call started which agent or command.
    fn learn_api(&mut self, event: &Event);
    /// One line, received at `t_ms` on the run's clock.
    fn line(&mut self, t_ms: f64, origin: Origin, line: &str) -> Vec<Event>;
    /// The version the runtime reported of itself, when it did.
    fn version(&self) -> Option<String>;
}
