//! The judgement checks itself. After the rules decide, each decision's claims are held
//! against the whole recorded timeline (everything, not just the part the rules read), with
//! plain scans of its own rather than the rules' helpers, so a mistake in a helper shows here
//! instead of repeating itself. A contradiction is a bug in wakeprobe's rules: the verdict
//! becomes `unknown`, naming the claim and the fact against it, the run is never filed, and
//! the invocation fails with its own exit code, so it is seen and fixed.
//!
//! The claims checked, by what the rules decided:
//! - H1, H2 (the waiter was never told): no request of the waiter carries the work's
//!   notification, anywhere in the run.
//! - "had not ended" (the work outlived the CLI, or its hang bound): no report of the work's
//!   end before that moment (its process's end, a terminal status, a notice, a request
//!   carrying its notification).
//! - a failure or a kill blamed on the work or the CLI: the harness sent no kill to the work
//!   before its end.
//! - woke, H3 (the waiter was told): the request is the waiter's and carries the work's
//!   notification; a latency runs from an end of the same work, which names one task only.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::facts::{self, Facts, WorkEnd};
use super::rules::{AfterEnd, Decision, Unended};
use crate::evidence::{Event, EventKind, TaskStatus, Timeline, secs};

/// A verdict's claim and the recorded fact that contradicts it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Contradiction {
    /// What the rules claimed, in words.
    pub claim: String,
    /// The fact against it, in words, with its time.
    pub fact: String,
}

impl Contradiction {
    fn new(claim: impl Into<String>, fact: &Event, what: impl std::fmt::Display) -> Self {
        Contradiction {
            claim: claim.into(),
            fact: format!("{what} at {}", secs(fact.t_ms)),
        }
    }

    /// The reason an `unknown` verdict gives for it.
    pub fn reason(&self) -> String {
        format!(
            "wakeprobe contradicted its own timeline: its rules found that {}, but the timeline has {}. This is a bug in wakeprobe's rules, not evidence about the CLI; the run is not filed",
            self.claim, self.fact
        )
    }
}

/// The first claim of `decision` on the pair of `f` that the whole timeline contradicts. An
/// `unknown` claims nothing; every other decision is held to what it says.
pub fn audit(whole: &Timeline, f: &Facts, decision: &Decision) -> Option<Contradiction> {
    let pair = Pair::of(whole, f);
    match decision {
        Decision::NeverStarted | Decision::ScriptExhausted { .. } => None,
        Decision::Unended(u) => unended(&pair, f, u),
        Decision::Ended { why, .. } => after_end(&pair, f, why),
    }
}

fn unended(pair: &Pair, f: &Facts, decision: &Unended) -> Option<Contradiction> {
    match decision {
        Unended::OrphanedAtExit { .. } => pair.never_told().or_else(|| {
            let exit = f.run_end.map(|e| e.t_ms).unwrap_or(f.last_t);
            pair.not_ended_by(exit, "the CLI exited")
        }),
        Unended::Hung { overdue } => {
            let bound = match &overdue.kind {
                EventKind::WorkOverdue { bound_s, .. } => bound_s * 1000.0,
                _ => 0.0,
            };
            let due = f.started.map(|s| s.t_ms + bound).unwrap_or(overdue.t_ms);
            pair.not_ended_by(due, "its hang bound passed")
        }
        Unended::CutBeforeEnd { .. }
        | Unended::CrashedBeforeEnd
        | Unended::EndUnseen
        | Unended::OutlivedRun { .. } => None,
    }
}

fn after_end(pair: &Pair, f: &Facts, decision: &AfterEnd) -> Option<Contradiction> {
    match decision {
        AfterEnd::NeverFired { .. }
        | AfterEnd::LostInRestart { .. }
        | AfterEnd::PrintedNotDelivered { .. }
        | AfterEnd::FinalizedBeforeEnd { .. } => {
            pair.never_told().or_else(|| pair.silence_was_whole())
        }
        AfterEnd::KilledAfterFinalized { .. } | AfterEnd::KilledWithSession { .. } => pair
            .never_told()
            .or_else(|| pair.silence_was_whole())
            .or_else(|| pair.not_killed_by_harness(f)),
        AfterEnd::FailedOnItsOwn { told, .. } => pair
            .not_killed_by_harness(f)
            .or_else(|| told.and_then(|d| pair.tells(d))),
        AfterEnd::Woke { delivery, .. } | AfterEnd::Queued { delivery, .. } => pair
            .tells(delivery)
            .or_else(|| pair.one_task_measured(f, delivery)),
        AfterEnd::OrderBlurred { .. }
        | AfterEnd::AnswersLost { .. }
        | AfterEnd::CutBeforeTold { .. }
        | AfterEnd::CrashedBeforeTold
        | AfterEnd::TooShort { .. }
        | AfterEnd::FiringUnseen { .. }
        | AfterEnd::NoticeUnreadable { .. } => None,
    }
}

/// One waiter and its work, as the whole timeline names them.
struct Pair<'a> {
    tl: &'a Timeline,
    waiter: &'a str,
    work: &'a str,
    /// Every task id the CLI gave the work, as the rules learned them from its `task_started`
    /// lines: which id is whose is the run's naming, not a claim about what happened.
    task_ids: BTreeSet<&'a str>,
    /// The harness restarted the CLI: a restarted CLI's `stopped` is no notice of the end.
    restarted: bool,
    /// The work is an agent: its final answer is its end.
    agent: bool,
    /// When the work first showed (its call, task or process): nothing before is about it.
    since: f64,
}

impl<'a> Pair<'a> {
    fn of(tl: &'a Timeline, f: &'a Facts) -> Pair<'a> {
        let (waiter, work) = (f.waiter, f.work);
        let task_ids = f.task_ids.iter().map(String::as_str).collect();
        Pair {
            tl,
            waiter,
            work,
            task_ids,
            agent: facts::is_agent(f.started, work),
            since: f.started.map_or(f64::INFINITY, |e| e.t_ms),
            restarted: tl
                .iter()
                .any(|e| matches!(e.kind, EventKind::CliRestarted { .. })),
        }
    }

    /// Whether a notice of this status tells the work's end.
    fn tells_end(&self, status: Option<&str>) -> bool {
        !(self.restarted && status == Some("stopped"))
    }

    /// Whether request `e`, made since the work first showed, carries its notification (one that
    /// tells the end).
    fn carries(&self, e: &Event) -> bool {
        if e.t_ms < self.since {
            return false;
        }
        match &e.kind {
            EventKind::ModelRequest {
                notifications,
                answer_lost: false,
                ..
            } => notifications.iter().any(|n| {
                n.event.is_none()
                    && self.task_ids.contains(n.task_id.as_str())
                    && self.tells_end(n.status.as_deref())
            }),
            _ => false,
        }
    }

    /// The claim "the waiter was never told": no request of the waiter's carries it.
    fn never_told(&self) -> Option<Contradiction> {
        let told = self
            .tl
            .iter()
            .find(|e| e.agent.as_deref() == Some(self.waiter) && self.carries(e))?;
        Some(Contradiction::new(
            format!("`{}` was never told of `{}`", self.waiter, self.work),
            told,
            format_args!(
                "a model request of `{}` carrying `{}`'s notification",
                self.waiter, self.work
            ),
        ))
    }

    /// The claim "the silence went on until the run ended on its own": the run was not ended by
    /// a hang timer of this work that fired after the work had ended (a late timer of the
    /// harness's, which cut the silence short).
    fn silence_was_whole(&self) -> Option<Contradiction> {
        let mark = self.tl.iter().find(
            |e| matches!(&e.kind, EventKind::WorkOverdue { work, .. } if work == self.work),
        )?;
        let EventKind::WorkOverdue { bound_s, .. } = &mark.kind else {
            return None;
        };
        let late = self.not_ended_by(self.since + bound_s * 1000.0, "")?;
        Some(Contradiction {
            claim: format!(
                "nothing told `{}` of `{}` before the run ended, on its hang timer at {}",
                self.waiter,
                self.work,
                secs(mark.t_ms)
            ),
            fact: format!("{} (within its {bound_s:.1} s bound)", late.fact),
        })
    }

    /// The claim "the work had not ended by `t`" (`when`, in words).
    fn not_ended_by(&self, t: f64, when: &str) -> Option<Contradiction> {
        let ended = self
            .tl
            .iter()
            .filter(|e| e.t_ms >= self.since && e.t_ms <= t)
            .find_map(|e| {
                let what = match &e.kind {
                    EventKind::TrackEnded { name, exit, .. } if name == self.work => {
                        format!("`{}`'s process ending ({})", self.work, exit.describe())
                    }
                    EventKind::TaskUpdated {
                        task_id, status, ..
                    } if self.task_ids.contains(task_id.as_str())
                        && TaskStatus::parse(status).is_terminal()
                        && self.tells_end(Some(status)) =>
                    {
                        format!("the CLI marking `{}` {status}", self.work)
                    }
                    EventKind::TaskNotified {
                        task_id, status, ..
                    } if self.task_ids.contains(task_id.as_str())
                        && TaskStatus::parse(status).is_terminal()
                        && self.tells_end(Some(status)) =>
                    {
                        format!("the CLI's notice that `{}` is {status}", self.work)
                    }
                    _ if self.carries(e) => {
                        format!("a model request carrying `{}`'s notification", self.work)
                    }
                    EventKind::TurnEnded { .. }
                        if self.agent
                            && facts::last_turn_end(self.tl, self.work)
                                .is_some_and(|last| std::ptr::eq(last, e)) =>
                    {
                        format!("`{}`'s final answer (its last turn ends)", self.work)
                    }
                    _ => return None,
                };
                Some((e, what))
            })?;
        Some(Contradiction::new(
            format!("`{}` had not ended when {when}", self.work),
            ended.0,
            ended.1,
        ))
    }

    /// The claim "the work's end was its own or the CLI's doing": the harness sent it no kill.
    fn not_killed_by_harness(&self, f: &Facts) -> Option<Contradiction> {
        let (end, how) = f.end.as_ref()?;
        if matches!(how, WorkEnd::KilledByFault(_) | WorkEnd::Completed) {
            return None;
        }
        let kill = self.tl.iter().find(|e| {
            e.t_ms <= end.t_ms
                && matches!(&e.kind, EventKind::WorkSignalled { work, fault, pids, .. }
                    if work == self.work
                        && *fault == crate::scenario::FaultKind::KillTask
                        && !pids.is_empty())
        })?;
        Some(Contradiction::new(
            format!(
                "`{}`'s end ({}) was not the harness's doing",
                self.work,
                end_words(how)
            ),
            kill,
            format_args!("the harness's own kill of `{}`", self.work),
        ))
    }

    /// The claim "request `d` told the waiter of the work".
    fn tells(&self, d: &Event) -> Option<Contradiction> {
        if d.agent.as_deref() == Some(self.waiter) && self.carries(d) {
            return None;
        }
        Some(Contradiction::new(
            format!(
                "`{}` was told of `{}` by the request at {}",
                self.waiter,
                self.work,
                secs(d.t_ms)
            ),
            d,
            format_args!(
                "a request of `{}` that carries no notification of `{}`",
                d.agent.as_deref().unwrap_or("an unknown agent"),
                self.work
            ),
        ))
    }

    /// A latency is measured between events of one work: its end is `work`'s own, and the
    /// work is one task (two steps sharing a name would mix two works' times).
    fn one_task_measured(&self, f: &Facts, d: &Event) -> Option<Contradiction> {
        let (end, _) = f.end.as_ref().filter(|_| !f.end_from_notice)?;
        let claim = format!(
            "`{}` was told {:.2} s after `{}` ended",
            self.waiter,
            (d.t_ms - end.t_ms).max(0.0) / 1000.0,
            self.work
        );
        if self.task_ids.len() > 1 {
            let ids: Vec<&str> = self.task_ids.iter().copied().collect();
            return Some(Contradiction::new(
                claim,
                end,
                format_args!(
                    "`{}` naming {} tasks ({}): the latency mixes two works",
                    self.work,
                    ids.len(),
                    ids.join(", ")
                ),
            ));
        }
        let own = match &end.kind {
            EventKind::TrackEnded { name, .. } => name == self.work,
            EventKind::TaskUpdated { task_id, .. } | EventKind::TaskNotified { task_id, .. } => {
                self.task_ids.contains(task_id.as_str())
            }
            EventKind::AgentFinalized { .. } => end.agent.as_deref() == Some(self.work),
            EventKind::ProcessExited { .. } => true,
            _ => self.carries(end),
        };
        (!own).then(|| {
            Contradiction::new(
                claim,
                end,
                format_args!("an end that is not `{}`'s", self.work),
            )
        })
    }
}

fn end_words(how: &WorkEnd) -> String {
    match how {
        WorkEnd::Completed => "completed".into(),
        WorkEnd::Failed(why) => format!("failed: {why}"),
        WorkEnd::Killed(why) | WorkEnd::KilledByFault(why) => format!("killed: {why}"),
    }
}
