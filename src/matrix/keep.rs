//! What `minimize` keeps of a scenario: the result asked for (the verdict, or one check's
//! observation) and the experiment around it, so the minimal scenario shows the same thing for
//! the same reason. Every run of a candidate must give the original's result, and besides:
//! - a verdict the original decided stays decided (never `unknown`);
//! - no agent asks past the end of its script that did not in the original (the fake API's
//!   "no more steps" answer would end its turn and become its result);
//! - a kept check that orders two events (`before`, `within`, `gap`) keeps at least the margin
//!   between them the original had, less a tenth for the jitter of runs left unchanged.
//!
//! It also names the scenario's other checks a minimal scenario can no longer observe: each
//! observed something in the original and nothing (vacuous, `not-observed`) in the minimal's
//! runs; `minimize` drops them and says so.

use std::collections::BTreeSet;

use crate::classify::Outcome;
use crate::classify::result::RunResult;
use crate::evidence::{EventKind, Route, Timeline};

/// What `--keep` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keep {
    Verdict,
    Check(String),
}

/// The result a run shows, as `--keep` compares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    Verdict(Outcome),
    Check(String),
    /// The named check is not in the run's results.
    NoCheck,
}

impl std::fmt::Display for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kept::Verdict(o) => write!(f, "{o}"),
            Kept::Check(v) => write!(f, "{v}"),
            Kept::NoCheck => f.write_str("(no such check)"),
        }
    }
}

/// One run, as `minimize` reads it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub kept: Kept,
    /// Its verdict is not `unknown`.
    pub decided: bool,
    /// The agents that asked past the end of their script.
    pub exhausted: BTreeSet<String>,
    /// For a kept check that orders two events: the time between them.
    pub margin_ms: Option<f64>,
    /// Every check by name: its observation, and whether it observed anything.
    pub checks: Vec<(String, String, bool)>,
}

/// Observations that say a check had nothing to look at (no approval was asked, the events it
/// relates never happened).
const NOTHING_OBSERVED: [&str; 2] = ["not-observed", "none-asked"];

/// The relations whose witness is the two events they order.
const ORDERING: [&str; 3] = ["query:before", "query:within", "query:gap"];

/// A run of a candidate, as `keep` compares it.
pub fn seen(result: &RunResult, timeline: &Timeline, keep: &Keep) -> Seen {
    let checks = &result.judgement.checks;
    let (kept, margin_ms) = match keep {
        Keep::Verdict => (Kept::Verdict(result.judgement.outcome), None),
        Keep::Check(name) => match checks.iter().find(|c| c.name == *name) {
            None => (Kept::NoCheck, None),
            Some(c) => {
                let margin = match c.witness.as_slice() {
                    [a, b, ..] if ORDERING.contains(&c.kind.as_str()) => {
                        Some((b.t_ms - a.t_ms).abs())
                    }
                    _ => None,
                };
                (Kept::Check(c.observed.clone()), margin)
            }
        },
    };
    Seen {
        kept,
        decided: result.judgement.outcome != Outcome::Unknown,
        exhausted: timeline
            .iter()
            .filter(|e| {
                matches!(
                    e.kind,
                    EventKind::ModelRequest {
                        route: Route::ScriptExhausted,
                        ..
                    }
                )
            })
            .filter_map(|e| e.agent.clone())
            .collect(),
        margin_ms,
        checks: checks
            .iter()
            .map(|c| {
                let observed_something =
                    !c.vacuous && !NOTHING_OBSERVED.contains(&c.observed.as_str());
                (c.name.clone(), c.observed.clone(), observed_something)
            })
            .collect(),
    }
}

/// What every run of a candidate must show, fixed from the original's runs.
#[derive(Debug, Clone)]
pub struct Target {
    pub kept: Kept,
    /// Every run of the original decided its verdict.
    pub decided: bool,
    /// The agents some run of the original exhausted the script of.
    pub exhausted: BTreeSet<String>,
    /// The smallest margin of the original's runs.
    pub margin_ms: Option<f64>,
}

/// The share of the original's margin a candidate must keep: the rest is jitter.
const MARGIN_KEPT: f64 = 0.9;

impl Target {
    /// From the original's runs, which agree on what they keep (the caller checks that).
    pub fn of(runs: &[Seen]) -> Option<Target> {
        let first = runs.first()?;
        Some(Target {
            kept: first.kept.clone(),
            decided: runs.iter().all(|r| r.decided),
            exhausted: runs
                .iter()
                .flat_map(|r| r.exhausted.iter().cloned())
                .collect(),
            margin_ms: runs
                .iter()
                .filter_map(|r| r.margin_ms)
                .min_by(|a, b| a.total_cmp(b)),
        })
    }

    /// Why a run of a candidate does not keep the experiment, if it does not.
    pub fn misses(&self, run: &Seen) -> Option<String> {
        if run.kept != self.kept {
            return Some(format!("it gives `{}`, not `{}`", run.kept, self.kept));
        }
        if self.decided && !run.decided {
            return Some("its verdict is `unknown` where the original's was decided".into());
        }
        if let Some(agent) = run.exhausted.difference(&self.exhausted).next() {
            return Some(format!("`{agent}` asks past the end of its script"));
        }
        match (self.margin_ms, run.margin_ms) {
            (Some(kept), Some(now)) if now < kept * MARGIN_KEPT => Some(format!(
                "the check's two events are {:.2} s apart, where the original had {:.2} s",
                now / 1000.0,
                kept / 1000.0
            )),
            _ => None,
        }
    }
}

/// The checks (by name) of the minimal scenario that the original's runs observed something of
/// and none of the minimal's runs does, leaving out the one kept: what it can no longer
/// observe. (A check a reduction removed with what it names is not among them.)
pub fn unobservable(original: &[Seen], minimal: &[Seen], kept: &Keep) -> Vec<String> {
    let observed = |runs: &[Seen], name: &str| {
        runs.iter()
            .any(|r| r.checks.iter().any(|(n, _, seen)| n == name && *seen))
    };
    let names: Vec<String> = minimal
        .first()
        .map(|r| r.checks.iter().map(|(n, _, _)| n.clone()).collect())
        .unwrap_or_default();
    names
        .into_iter()
        .filter(|n| *kept != Keep::Check(n.clone()))
        .filter(|n| observed(original, n) && !observed(minimal, n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(kept: &str, decided: bool, exhausted: &[&str], margin: Option<f64>) -> Seen {
        Seen {
            kept: Kept::Check(kept.into()),
            decided,
            exhausted: exhausted.iter().map(|s| s.to_string()).collect(),
            margin_ms: margin,
            checks: vec![],
        }
    }

    /// A candidate keeps the experiment: the result, a decided verdict, no new script
    /// exhaustion, and at least nine tenths of the original's margin.
    #[test]
    fn a_candidate_must_keep_the_result_and_the_experiment_around_it() {
        let target = Target::of(&[
            run("yes", true, &[], Some(3900.0)),
            run("yes", true, &[], Some(4100.0)),
        ])
        .unwrap();
        assert_eq!(target.margin_ms, Some(3900.0));
        assert_eq!(target.misses(&run("yes", true, &[], Some(3600.0))), None);
        for (bad, why) in [
            (run("no", true, &[], Some(3900.0)), "gives `no`"),
            (run("yes", false, &[], Some(3900.0)), "`unknown`"),
            (
                run("yes", true, &["worker"], Some(3900.0)),
                "`worker` asks past",
            ),
            (
                run("yes", true, &[], Some(800.0)),
                "0.80 s apart, where the original had 3.90 s",
            ),
        ] {
            let miss = target.misses(&bad).expect(why);
            assert!(miss.contains(why), "{miss}");
        }
        // An original that ran out of script itself, or was undecided, asks nothing more.
        let loose = Target::of(&[run("yes", false, &["worker"], None)]).unwrap();
        assert_eq!(
            loose.misses(&run("yes", false, &["worker"], Some(1.0))),
            None
        );
    }

    #[test]
    fn a_check_the_minimal_runs_no_longer_observe_is_named() {
        let with = |checks: &[(&str, &str, bool)]| Seen {
            checks: checks
                .iter()
                .map(|(n, o, s)| (n.to_string(), o.to_string(), *s))
                .collect(),
            ..run("yes", true, &[], None)
        };
        let original = [with(&[
            ("kept", "yes", true),
            ("approvals", "answered", true),
            ("idle", "not-observed", false),
        ])];
        let minimal = [with(&[
            ("kept", "yes", true),
            ("approvals", "none-asked", false),
            ("idle", "not-observed", false),
        ])];
        let keep = Keep::Check("kept".into());
        assert_eq!(unobservable(&original, &minimal, &keep), ["approvals"]);
        assert!(unobservable(&original, &[], &keep).is_empty());
        // Removed with what it names (not in the minimal's results): not "dropped".
        let removed = [with(&[("kept", "yes", true)])];
        assert!(unobservable(&original, &removed, &keep).is_empty());
    }
}
