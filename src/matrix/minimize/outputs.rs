//! What `minimize` leaves in its folder: `minimal.toml` (the candidate kept, its unobservable
//! checks dropped, its expectation the kept verdict), `minimize.log` and `minimize.json`, and
//! its closing line.

use std::path::{Path, PathBuf};

use super::Subject;
use super::candidate::Candidate;
use crate::classify::Outcome;
use crate::matrix::keep::Kept;
use crate::scenario::Scenario;
use crate::store::{self, StoreError};

/// Everything the outputs say.
pub struct Outputs<'a> {
    pub dir: &'a Path,
    pub scenario: &'a Scenario,
    pub variant: &'a str,
    pub original: &'a Candidate,
    pub minimized: &'a super::Minimized<Candidate>,
    pub target: &'a Kept,
    pub verdict: Option<Outcome>,
    /// Checks the minimal scenario can no longer observe: dropped from it.
    pub dropped: &'a [String],
    pub runs: u32,
    /// Candidates that ran (after an interrupt the search judges the rest without running).
    pub candidates: u32,
    pub seconds: f64,
    pub interrupted: bool,
    pub log: &'a [String],
}

impl Outputs<'_> {
    fn stop(&self) -> &'static str {
        match (self.interrupted, self.minimized.stop) {
            (true, _) => "interrupted",
            (false, super::Stop::Budget) => "run budget spent",
            (false, super::Stop::FixedPoint) => "fixed point: no reduction keeps the result",
        }
    }

    /// The closing line.
    pub fn summary(&self) -> String {
        let dropped = match self.dropped {
            [] => String::new(),
            names => format!(
                "; dropped {} it can no longer observe: {}",
                if names.len() == 1 {
                    "a check"
                } else {
                    "checks"
                },
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        format!(
            "minimal: {} (from {}), `{}` kept, after {} run(s) of {} candidate(s) ({} invalid skipped) in {:.1} s; {}{dropped}",
            self.minimized.subject.size(),
            self.original.size(),
            self.target,
            self.runs,
            self.candidates,
            self.minimized.skipped_invalid,
            self.seconds,
            self.stop()
        )
    }
}

/// `minimal.toml`, `minimize.log`, `minimize.json`; returns the minimal scenario's path.
pub fn write_outputs(o: &Outputs) -> Result<PathBuf, StoreError> {
    let mut minimal = o.minimized.subject.0.without_checks(o.dropped);
    minimal.set_name(&format!("{}-min", o.scenario.name));
    match o.verdict {
        Some(verdict) => minimal.set_expect(verdict.as_str()),
        None => minimal.clear_expect(),
    }
    let path = o.dir.join("minimal.toml");
    let dropped: String = o
        .dropped
        .iter()
        .map(|n| format!("# Dropped check `{n}`: the minimal scenario can no longer observe it.\n"))
        .collect();
    let text = format!(
        "# Minimized by `wakeprobe minimize` from {} (variant {}): {} -> {}, keeping `{}`.\n# What was removed: minimize.log next to this file.\n{dropped}\n{}",
        o.scenario.path.display(),
        o.variant,
        o.original.size(),
        o.minimized.subject.size(),
        o.target,
        minimal.text()
    );
    store::write_atomic(&path, text.as_bytes())?;
    let stop = o.stop();
    let mut log = format!(
        "minimize {} --variant {}: keeping `{}`\nfrom: {}\nto:   {}\nruns: {} ({} candidate(s), {} invalid skipped), {:.1} s; stopped: {stop}\n\nreductions, in order:\n",
        o.scenario.path.display(),
        o.variant,
        o.target,
        o.original.size(),
        o.minimized.subject.size(),
        o.runs,
        o.candidates,
        o.minimized.skipped_invalid,
        o.seconds
    );
    for line in o.log {
        log.push_str(&format!("  {line}\n"));
    }
    for name in o.dropped {
        log.push_str(&format!(
            "\ndropped check `{name}`: the original's runs observed it, the minimal scenario's do not\n"
        ));
    }
    store::write_atomic(&o.dir.join("minimize.log"), log.as_bytes())?;
    let json = serde_json::json!({
        "scenario": o.scenario.path.display().to_string(),
        "variant": o.variant,
        "kept": o.target.to_string(),
        "from": o.original.size(),
        "to": o.minimized.subject.size(),
        "runs": o.runs,
        "candidates": o.candidates,
        "skipped_invalid": o.minimized.skipped_invalid,
        "seconds": o.seconds,
        "stop": stop,
        "accepted": o.minimized.accepted,
        "dropped_checks": o.dropped,
        "minimal": "minimal.toml",
    });
    store::write_atomic(
        &o.dir.join("minimize.json"),
        &serde_json::to_vec_pretty(&json).unwrap_or_default(),
    )?;
    Ok(path)
}
