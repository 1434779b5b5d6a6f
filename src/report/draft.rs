//! What one run's issue draft is made from, and the headlines both the draft's body
//! (`markdown`) and its Summary (`summary`) speak of the bug with.

use crate::checks::CheckResult;
use crate::classify::result::RunResult;
use crate::classify::{Outcome, Verdict};
use crate::evidence::{Timeline, secs};
use crate::scenario::Plan;

/// Everything one run's draft is made from.
pub struct Draft<'a> {
    pub result: &'a RunResult,
    pub timeline: &'a Timeline,
    pub plan: &'a Plan,
    pub scenario_source: Option<&'a str>,
    /// The agreement of repeated runs of this cell, e.g. `not-resumable 5/5`.
    pub agreement: Option<&'a str>,
    /// File name of the swimlane picture next to the report (named as an attachment).
    pub picture: Option<&'a str>,
}

/// What happened, in a clause: `` `worker` is finalized while `bg` still runs ``.
pub(super) fn headline(v: &Verdict) -> String {
    let (w, k) = (&v.waiter, &v.work);
    match v.outcome {
        Outcome::Woke => format!(
            "`{w}` is woken {} after `{k}` ends",
            v.latency_ms.map(secs).unwrap_or_else(|| "soon".into())
        ),
        Outcome::NotResumable => {
            format!("`{w}` is finalized while `{k}` still runs and is never re-invoked")
        }
        Outcome::NeverFired => format!("no notification for `{k}` ever reaches `{w}`"),
        Outcome::QueuedUntilInput => {
            format!("`{k}`'s notification reaches `{w}` only after an unrelated input")
        }
        Outcome::ChildFailed => format!("`{k}` fails on its own while `{w}` waits"),
        Outcome::Unknown => format!("undecided: {}", v.reason.clone().unwrap_or_default()),
    }
}

/// What a check that fails its `want` shows, in a clause: `` check “idle” observes
/// `indistinguishable` where the CLI should give `distinguishable` ``.
pub(super) fn check_headline(c: &CheckResult) -> String {
    format!(
        "check “{}” observes `{}` where the CLI should give `{}`",
        c.name,
        c.observed,
        c.want.as_deref().unwrap_or_default()
    )
}
