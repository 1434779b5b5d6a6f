//! Whether a run has something to file upstream (`Filing`), and what in it is the bug
//! (`Bugs`): the real CLI did something other than the scenario's `want`, of its verdict or of
//! a check. A decision about the result, read by the exporters (the draft, `title.txt`) and by
//! the invocation (the `gh` line); it words nothing beyond the reason for filing nothing.

use super::{Judgement, Outcome};
use crate::checks::CheckResult;
use crate::evidence::run::RunInfo;

/// Whether a run has something to file upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filing {
    /// The real CLI does not do what the scenario wants (its verdict, or a check with a
    /// `want`): a draft is offered.
    Bug,
    /// Nothing to file, and why: the report is kept, but no title and no `gh` line.
    Nothing(String),
}

/// What a run shows the CLI doing other than what the scenario wants of it: the verdict
/// (decided, and not the `want`), the checks whose observation is not their `want`, or both.
/// A check that puts the fault in an integration under test is that program's bug, not the
/// CLI's: it is no part of a draft for Claude Code. The draft speaks of these, whichever
/// backend ran.
pub struct Bugs<'a> {
    pub verdict: bool,
    pub checks: Vec<&'a CheckResult>,
}

impl<'a> Bugs<'a> {
    /// The bugs of a run: what it was (`run.json`) and how it was judged.
    pub fn of(run: &RunInfo, judgement: &'a Judgement) -> Bugs<'a> {
        let outcome = judgement.outcome;
        Bugs {
            verdict: run
                .want
                .is_some_and(|w| w != outcome && outcome != Outcome::Unknown),
            checks: judgement
                .unmet_wants()
                .into_iter()
                .filter(|c| c.layer != Some(crate::checks::Layer::Integration))
                .collect(),
        }
    }

    pub fn any(&self) -> bool {
        self.verdict || !self.checks.is_empty()
    }
}

/// Only the real CLI's runs are filed, and only when they show a bug: the scenario says what
/// the CLI should do (`want`, of the verdict or of a check) and this run, decided, did
/// something else. An undecided run (`unknown`) is never filed, even where a check fails its
/// `want`: what it saw is not the experiment; nor is a run whose verdict contradicted its own
/// timeline (a bug in wakeprobe).
pub fn filing(run: &RunInfo, judgement: &Judgement) -> Filing {
    if !judgement.contradictions().is_empty() {
        return Filing::Nothing(
            "wakeprobe contradicted its own timeline (a bug in its rules): nothing it concluded is filed".into(),
        );
    }
    if let crate::backend::BackendKind::Sim { .. } = run.backend {
        return Filing::Nothing(
            "a simulator run: what it shows is the simulator's behaviour, not Claude Code's".into(),
        );
    }
    if judgement.outcome == Outcome::Unknown {
        // A run that left its experiment (its script ran out, it was cut short) shows nothing
        // a maintainer could act on, whatever its checks saw.
        return Filing::Nothing(format!(
            "the verdict is undecided (`unknown`: {}), so the run shows nothing to file",
            judgement
                .primary()
                .and_then(|v| v.reason.as_deref())
                .unwrap_or("the evidence does not decide")
        ));
    }
    if Bugs::of(run, judgement).any() {
        return Filing::Bug;
    }
    let wanted_checks: Vec<&CheckResult> = judgement
        .checks
        .iter()
        .filter(|c| c.want.is_some())
        .collect();
    if run.want.is_none() && wanted_checks.is_empty() {
        return Filing::Nothing(
            "the scenario states no `want` (the behaviour the CLI should have), so no run of it is a bug report".into(),
        );
    }
    let mut why = Vec::new();
    match run.want {
        Some(_) if judgement.outcome == Outcome::Unknown => {
            why.push("the verdict is undecided (`unknown`)".to_string())
        }
        Some(w) => why.push(format!("the CLI does what it should (`{w}`)")),
        None => {}
    }
    for c in wanted_checks {
        why.push(match c.meets_want {
            Some(false) => format!(
                "check “{}” fails its `want` in the integration under test, not in Claude Code",
                c.name
            ),
            Some(_) => format!(
                "check “{}” observes what it should (`{}`)",
                c.name, c.observed
            ),
            None => format!("check “{}” is undecided (vacuous, or left open)", c.name),
        });
    }
    Filing::Nothing(join_and(&why))
}

/// Why a run has a draft to file, each reason in words: what the CLI did other than what the
/// scenario wants. Empty where there is nothing to file ([`filing`]).
pub fn bug_reasons(run: &RunInfo, judgement: &Judgement) -> Vec<String> {
    if filing(run, judgement) != Filing::Bug {
        return vec![];
    }
    let bugs = Bugs::of(run, judgement);
    let mut why = Vec::new();
    if bugs.verdict {
        why.push(format!(
            "the verdict is `{}` where the CLI should give `{}`",
            judgement.outcome,
            run.want.map(|w| w.to_string()).unwrap_or_default()
        ));
    }
    for c in bugs.checks {
        why.push(format!(
            "check “{}” gives `{}` where the CLI should give `{}`",
            c.name,
            c.observed,
            c.want.as_deref().unwrap_or_default()
        ));
    }
    why
}

/// `a`, `a and b`, `a, b and c`.
pub fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}
