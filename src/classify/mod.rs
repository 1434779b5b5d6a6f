//! Timeline -> Verdict: the harness's judgement, with the rules written down. No I/O.
//!
//! For each waiter W and background work K (named by the scenario's `[[watch]]`, or derived:
//! every background tool call that spawns an agent or starts a tracked command), in order:
//!
//! 1. K never started (no tool call, task or tracked process for it) -> `unknown`.
//! 2. W asked past the end of its script before K ended -> `unknown` (the run left the script).
//! 3. K did not end during the run (still running when the CLI exited, the ceiling hit or the
//!    run was interrupted; a kill at the harness's cleanup does not count as an end):
//!    W finalized while K ran -> `not-resumable`; the ceiling ended the run -> `child-failed`
//!    (hung); the CLI crashed -> `unknown`; otherwise `unknown`.
//! 4. K was killed, and W had been finalized before (SubagentStop without a later activation,
//!    or the session's end for the main agent) -> `not-resumable`: the kill is a consequence.
//! 5. K failed on its own (non-zero exit, `failed` status) -> `child-failed`, saying whether and
//!    when W was told.
//! 6. K ended (completed, or killed while W was live): if W later made a request carrying K's
//!    `<task-notification>`: after an unrelated input that came while W was silent ->
//!    `queued-until-input`, else `woke` with the latency from K's end. With no such request:
//!    W finalized before K ended -> `not-resumable`; the CLI crashed -> `unknown`; the CLI killed
//!    K and ended the session -> `not-resumable`; the run ended less than the settle window
//!    after K -> `unknown`; a notification was printed on stdout but never delivered ->
//!    `not-resumable`; nothing anywhere -> `never-fired`.
//!
//! A `task_notification` line on stdout is never taken as delivery: only a model request
//! carrying the notification is. The run's outcome is the first pair's that is not `woke`
//! (declared pairs in file order), else `woke`.

pub mod checks;

use std::collections::HashSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::driver::EndReason;
use crate::evidence::{Event, EventKind, ExitDesc, InputReason, Route, Timeline};
use crate::scenario::{Check, MAIN_AGENT, Watch};

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
)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Woke,
    NeverFired,
    NotResumable,
    QueuedUntilInput,
    ChildFailed,
    Unknown,
}

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

    /// The hypothesis label used in reports.
    pub fn hypothesis(self) -> &'static str {
        match self {
            Outcome::Woke => "woke as expected",
            Outcome::NeverFired => "H1: the notification never fired",
            Outcome::NotResumable => "H2: fired, but the waiter was not resumable",
            Outcome::QueuedUntilInput => "H3: queued until the next input",
            Outcome::ChildFailed => "H4: the background work itself failed",
            Outcome::Unknown => "the evidence does not decide",
        }
    }

    pub fn parse(s: &str) -> Option<Outcome> {
        ALL_OUTCOMES.iter().copied().find(|o| o.as_str() == s)
    }
}

pub const ALL_OUTCOMES: [Outcome; 6] = [
    Outcome::Woke,
    Outcome::NeverFired,
    Outcome::NotResumable,
    Outcome::QueuedUntilInput,
    Outcome::ChildFailed,
    Outcome::Unknown,
];

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event that decides a verdict, described.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Witness {
    pub t_ms: f64,
    pub source: crate::evidence::Source,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub what: String,
}

/// The verdict for one waiter and its background work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    pub waiter: String,
    pub work: String,
    pub outcome: Outcome,
    /// From the work's end to the waiter's request carrying its notification (`woke`, H3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
    /// Why the evidence does not decide (`unknown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub witness: Vec<Witness>,
    pub explanation: String,
    pub facts: Vec<String>,
}

/// Everything the classifier reads.
pub struct Input<'a> {
    pub timeline: &'a Timeline,
    pub end: &'a EndReason,
    pub cli_exit: Option<&'a ExitDesc>,
    pub watch: &'a [Watch],
    pub checks: &'a [Check],
    pub settle_ms: f64,
}

/// A run's judgement: its outcome, each pair's verdict, each check's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Judgement {
    pub outcome: Outcome,
    pub verdicts: Vec<Verdict>,
    pub checks: Vec<checks::CheckResult>,
}

impl Judgement {
    /// The verdict that sets the run's outcome.
    pub fn primary(&self) -> Option<&Verdict> {
        self.verdicts
            .iter()
            .find(|v| v.outcome != Outcome::Woke)
            .or_else(|| self.verdicts.first())
    }

    /// True when every check with an expectation met it.
    pub fn checks_pass(&self) -> bool {
        self.checks.iter().all(|c| c.passed != Some(false))
    }
}

pub fn judge(input: &Input) -> Judgement {
    let pairs = if input.watch.is_empty() {
        derive_pairs(input.timeline)
    } else {
        input.watch.to_vec()
    };
    let verdicts: Vec<Verdict> = pairs.iter().map(|w| classify_pair(input, w)).collect();
    let outcome = if verdicts.is_empty() {
        Outcome::Unknown
    } else {
        verdicts
            .iter()
            .map(|v| v.outcome)
            .find(|o| *o != Outcome::Woke)
            .unwrap_or(Outcome::Woke)
    };
    let checks = input
        .checks
        .iter()
        .map(|c| checks::run_check(input.timeline, c))
        .collect();
    let mut judgement = Judgement {
        outcome,
        verdicts,
        checks,
    };
    if judgement.verdicts.is_empty() {
        judgement.verdicts.push(Verdict {
            waiter: MAIN_AGENT.into(),
            work: "-".into(),
            outcome: Outcome::Unknown,
            latency_ms: None,
            reason: Some("no background work was started in this run".into()),
            witness: vec![],
            explanation:
                "No agent handed work to the background, so there is nothing to wake anyone for."
                    .into(),
            facts: vec![],
        });
    }
    judgement
}

/// Waiter/work pairs from the script as it ran: every background call that spawned an agent or
/// started a tracked command.
pub fn derive_pairs(timeline: &Timeline) -> Vec<Watch> {
    let mut pairs: Vec<Watch> = Vec::new();
    for e in timeline.iter() {
        if let (
            EventKind::ToolCall {
                background: true,
                spawn,
                track,
                ..
            },
            Some(agent),
        ) = (&e.kind, &e.agent)
            && let Some(work) = spawn.clone().or_else(|| track.clone())
            && !pairs.iter().any(|p| p.work == work)
        {
            pairs.push(Watch {
                waiter: agent.clone(),
                work,
            });
        }
    }
    pairs
}

/// How background work ended.
#[derive(Debug, Clone, PartialEq)]
enum WorkEnd {
    Completed,
    Failed(String),
    Killed(String),
}

/// What the timeline says about one pair.
struct Facts<'a> {
    waiter: &'a str,
    work: &'a str,
    task_ids: HashSet<String>,
    started: Option<&'a Event>,
    end: Option<(&'a Event, WorkEnd)>,
    /// When the run stopped being the CLI's own (exit, ceiling, interrupt).
    run_end: Option<&'a Event>,
    last_t: f64,
}

fn is_request_by(e: &Event, agent: &str) -> bool {
    e.agent.as_deref() == Some(agent)
        && matches!(
            e.kind,
            EventKind::ModelRequest {
                route: Route::Turn | Route::ScriptExhausted,
                ..
            }
        )
}

fn gather<'a>(timeline: &'a Timeline, watch: &'a Watch) -> Facts<'a> {
    let work = watch.work.as_str();
    let mut task_ids = HashSet::new();
    let mut started = None;
    for e in timeline.iter() {
        match &e.kind {
            EventKind::ToolCall { spawn, track, .. }
                if spawn.as_deref() == Some(work) || track.as_deref() == Some(work) =>
            {
                started.get_or_insert(e);
            }
            EventKind::TaskStarted { task_id, label, .. } if label.as_deref() == Some(work) => {
                task_ids.insert(task_id.clone());
                started.get_or_insert(e);
            }
            EventKind::TrackStarted { name, .. } if name == work => {
                started.get_or_insert(e);
            }
            _ => {}
        }
    }
    let run_end = timeline.iter().find(|e| {
        matches!(
            e.kind,
            EventKind::CliExited { .. } | EventKind::CeilingHit { .. } | EventKind::Interrupted
        )
    });
    let cutoff = run_end.map(|e| e.t_ms).unwrap_or(f64::INFINITY);
    let mut end = None;
    let mut tracker_end = None;
    for e in timeline.iter().filter(|e| e.t_ms <= cutoff) {
        let found = match &e.kind {
            EventKind::TrackEnded { name, exit, .. } if name == work => Some(match exit {
                ExitDesc::Code(0) => WorkEnd::Completed,
                ExitDesc::Code(c) => WorkEnd::Failed(format!("exit code {c}")),
                other => WorkEnd::Killed(other.describe()),
            }),
            EventKind::ProcessExited {
                exit: ExitDesc::Vanished,
                command: Some(c),
                ..
            } if c == &format!("wp-track {work}") => Some(WorkEnd::Killed("vanished".into())),
            EventKind::TaskUpdated {
                task_id, status, ..
            } if task_ids.contains(task_id) => match status.as_str() {
                "completed" => Some(WorkEnd::Completed),
                "failed" | "error" => Some(WorkEnd::Failed(format!("status {status}"))),
                "killed" | "stopped" | "cancelled" | "canceled" => {
                    Some(WorkEnd::Killed(format!("status {status}")))
                }
                _ => None,
            },
            _ => None,
        };
        if let Some(how) = found {
            // The tracker's own report is the most precise for a command; the CLI's status
            // update for an agent.
            if matches!(
                e.kind,
                EventKind::TrackEnded { .. } | EventKind::ProcessExited { .. }
            ) {
                tracker_end.get_or_insert((e, how));
            } else if end.is_none() {
                end = Some((e, how));
            }
        }
    }
    // A command's end is when its process ended; the CLI's update says who killed it.
    let end = match (tracker_end, end) {
        (Some((t_event, t_how)), Some((_, cli_how))) => {
            let how = match (&t_how, &cli_how) {
                (WorkEnd::Killed(sig), WorkEnd::Killed(status)) => {
                    WorkEnd::Killed(format!("{sig}; the CLI reported {status}"))
                }
                _ => t_how,
            };
            Some((t_event, how))
        }
        (Some(t), None) => Some(t),
        (None, cli) => cli,
    };
    Facts {
        waiter: &watch.waiter,
        work,
        task_ids,
        started,
        end,
        run_end,
        last_t: timeline.events.last().map(|e| e.t_ms).unwrap_or(0.0),
    }
}

fn witness(e: &Event, what: impl Into<String>) -> Witness {
    Witness {
        t_ms: e.t_ms,
        source: e.source,
        agent: e.agent.clone(),
        what: what.into(),
    }
}

fn secs(t_ms: f64) -> String {
    format!("{:.2} s", t_ms / 1000.0)
}

/// When W was finalized before `t` and stayed so: its last SubagentStop before `t` with no
/// activation after it (the main agent: the session's end).
fn finalized_before<'a>(timeline: &'a Timeline, waiter: &str, t: f64) -> Option<&'a Event> {
    if waiter == MAIN_AGENT {
        return timeline.iter().find(|e| {
            e.t_ms <= t
                && (matches!(e.kind, EventKind::CliExited { .. })
                    || matches!(&e.kind, EventKind::Hook { hook, .. } if hook == "SessionEnd"))
        });
    }
    let stop = timeline
        .iter()
        .filter(|e| {
            e.t_ms <= t
                && e.agent.as_deref() == Some(waiter)
                && matches!(e.kind, EventKind::AgentFinalized { .. })
        })
        .last()?;
    let reactivated = timeline.iter().any(|e| {
        e.t_ms > stop.t_ms
            && e.t_ms <= t
            && (is_request_by(e, waiter)
                || (e.agent.as_deref() == Some(waiter)
                    && matches!(&e.kind, EventKind::Hook { hook, .. } if hook == "SubagentStart")))
    });
    (!reactivated).then_some(stop)
}

/// Records that W was finalized while K ran (and what the stop's payload listed); returns that
/// listing for the explanation.
fn note_finalized(v: &mut Verdict, tl: &Timeline, stop: &Event, f: &Facts) -> Option<String> {
    let (w, k) = (f.waiter, f.work);
    v.facts.push(format!(
        "`{w}` was finalized at {} while `{k}` was still running",
        secs(stop.t_ms)
    ));
    let listing = stop_listing(tl, stop, f);
    if let Some(l) = &listing {
        v.facts
            .push(format!("{} fired: {l}", finalized_what(w, stop)));
    }
    listing
}

/// The hook event that finalized W, with what it listed about K.
fn stop_listing(timeline: &Timeline, stop: &Event, facts: &Facts) -> Option<String> {
    timeline.iter().find_map(|e| match &e.kind {
        EventKind::Hook {
            hook,
            background_tasks: Some(tasks),
            ..
        } if e.t_ms == stop.t_ms && e.agent == stop.agent && hook == "SubagentStop" => tasks
            .iter()
            .find(|t| facts.task_ids.contains(&t.id))
            .map(|t| {
                format!(
                    "its background_tasks listed `{}` ({}) as {}",
                    facts.work, t.task_type, t.status
                )
            }),
        _ => None,
    })
}

fn classify_pair(input: &Input, watch: &Watch) -> Verdict {
    let tl = input.timeline;
    let f = gather(tl, watch);
    let (w, k) = (f.waiter, f.work);
    let mut v = Verdict {
        waiter: w.to_string(),
        work: k.to_string(),
        outcome: Outcome::Unknown,
        latency_ms: None,
        reason: None,
        witness: vec![],
        explanation: String::new(),
        facts: vec![],
    };
    let unknown = |mut v: Verdict, reason: String| {
        v.outcome = Outcome::Unknown;
        v.explanation = format!("The evidence does not decide: {reason}.");
        v.reason = Some(reason);
        v
    };
    let Some(started) = f.started else {
        return unknown(
            v,
            format!("`{k}` never started (no tool call, task or process for it)"),
        );
    };
    v.witness.push(witness(
        started,
        format!("`{w}` starts `{k}` in the background"),
    ));
    let crashed =
        matches!(input.end, EndReason::CliEnded) && input.cli_exit.is_some_and(|e| !e.success());
    let end_t = f.end.as_ref().map(|(e, _)| e.t_ms);

    // Rule 2: the waiter left its script before the decision.
    let decision_t = end_t.unwrap_or(f.last_t);
    if let Some(exhausted) = tl.iter().find(|e| {
        e.t_ms < decision_t
            && e.agent.as_deref() == Some(w)
            && matches!(
                e.kind,
                EventKind::ModelRequest {
                    route: Route::ScriptExhausted,
                    ..
                }
            )
    }) {
        v.witness.push(witness(
            exhausted,
            format!("`{w}` asks past the end of its script"),
        ));
        return unknown(
            v,
            format!(
                "`{w}`'s script ran out at {} before `{k}` ended, so the run left the experiment",
                secs(exhausted.t_ms)
            ),
        );
    }
    // The waiter's last turn end before the work ended: the moment it started waiting.
    let turn_end = tl
        .iter()
        .filter(|e| {
            e.agent.as_deref() == Some(w)
                && matches!(e.kind, EventKind::TurnEnded { .. })
                && e.t_ms >= started.t_ms
                && e.t_ms <= decision_t
        })
        .last();
    if let Some(te) = turn_end {
        v.witness.push(witness(te, format!("`{w}` ends its turn")));
    }

    let Some((end_event, how)) = f.end.clone() else {
        // Rule 3: the work outlived the run.
        let run_end_t = f.run_end.map(|e| e.t_ms).unwrap_or(f.last_t);
        if let Some(stop) = finalized_before(tl, w, run_end_t) {
            v.witness.push(witness(stop, finalized_what(w, stop)));
            if let Some(re) = f.run_end {
                v.witness.push(witness(re, run_end_what(re)));
            }
            v.outcome = Outcome::NotResumable;
            let listing = note_finalized(&mut v, tl, stop, &f);
            v.facts.push(format!(
                "`{k}` was still running when the run ended; nothing was left to wake"
            ));
            v.explanation = format!(
                "`{w}` handed `{k}` to the background{}, and was finalized at {} while it still ran{}. `{k}` had not ended when the run ended at {}, and `{w}` made no model request after its stop.",
                turn_end
                    .map(|t| format!(" and ended its turn at {}", secs(t.t_ms)))
                    .unwrap_or_default(),
                secs(stop.t_ms),
                listing.map(|l| format!(" ({l})")).unwrap_or_default(),
                secs(run_end_t),
            );
            return v;
        }
        if matches!(input.end, EndReason::Ceiling) {
            if let Some(re) = f.run_end {
                v.witness.push(witness(re, run_end_what(re)));
            }
            v.outcome = Outcome::ChildFailed;
            v.facts.push(format!(
                "`{k}` hung: still running when the ceiling ended the run at {}",
                secs(run_end_t)
            ));
            v.facts
                .push(format!("`{w}` was still in a state to be told"));
            v.explanation = format!(
                "`{k}` never ended: it was still running when the run's ceiling was reached at {}. `{w}` was still live and could have been told, so the silence is the work's own failure, not a lost notification.",
                secs(run_end_t)
            );
            return v;
        }
        if crashed {
            return unknown(
                v,
                format!(
                    "the CLI exited ({}) while `{k}` was still running",
                    input.cli_exit.map(|e| e.describe()).unwrap_or_default()
                ),
            );
        }
        return unknown(
            v,
            format!("the run ended at {} before `{k}` did", secs(run_end_t)),
        );
    };
    let end_what = match &how {
        WorkEnd::Completed => format!("`{k}` completes"),
        WorkEnd::Failed(why) => format!("`{k}` fails ({why})"),
        WorkEnd::Killed(why) => format!("`{k}` is killed ({why})"),
    };
    v.witness.push(witness(end_event, end_what));
    let finalized = finalized_before(tl, w, end_event.t_ms);

    // Rule 4: a kill after the waiter was finalized is a consequence of the finalization.
    if let (WorkEnd::Killed(why), Some(stop)) = (&how, finalized) {
        v.witness
            .insert(v.witness.len() - 1, witness(stop, finalized_what(w, stop)));
        v.outcome = Outcome::NotResumable;
        let listing = note_finalized(&mut v, tl, stop, &f);
        v.facts.push(format!(
            "the CLI killed `{k}` at {} ({why}), {:.2} s after `{w}` was finalized",
            secs(end_event.t_ms),
            (end_event.t_ms - stop.t_ms) / 1000.0
        ));
        v.facts.push(format!(
            "`{w}` made no model request after it was finalized"
        ));
        v.explanation = format!(
            "`{w}` handed `{k}` to the background{}; it was finalized at {} with `{k}` still running{}. `{k}` was then killed at {} ({why}). `{w}` made no further model request: nothing was left that could be woken.",
            turn_end
                .map(|t| format!(" and ended its turn at {}", secs(t.t_ms)))
                .unwrap_or_default(),
            secs(stop.t_ms),
            listing.map(|l| format!(" ({l})")).unwrap_or_default(),
            secs(end_event.t_ms),
        );
        return v;
    }

    let delivery = tl.iter().find(|e| {
        e.t_ms >= end_event.t_ms
            && is_request_by(e, w)
            && matches!(&e.kind, EventKind::ModelRequest { notifications, .. }
                if notifications.iter().any(|n| f.task_ids.contains(&n.task_id)))
    });
    let printed = tl.iter().find(|e| {
        e.t_ms >= end_event.t_ms
            && matches!(&e.kind, EventKind::TaskNotified { task_id, .. } if f.task_ids.contains(task_id))
    });
    if let Some(p) = printed {
        v.facts.push(format!(
            "the CLI printed a task_notification for `{k}` at {}",
            secs(p.t_ms)
        ));
    }

    // Rule 5: the work failed on its own.
    if let WorkEnd::Failed(why) = &how {
        v.outcome = Outcome::ChildFailed;
        v.facts.push(format!(
            "`{k}` failed on its own ({why}) at {}",
            secs(end_event.t_ms)
        ));
        match delivery {
            Some(d) => {
                v.latency_ms = Some(d.t_ms - end_event.t_ms);
                v.witness
                    .push(witness(d, format!("`{w}` is told of the failure")));
                v.facts.push(format!(
                    "`{w}` was told of the failure at {} ({:.2} s later)",
                    secs(d.t_ms),
                    (d.t_ms - end_event.t_ms) / 1000.0
                ));
                v.explanation = format!(
                    "`{k}` failed on its own at {} ({why}). The notification path worked: `{w}` was told at {}, {:.2} s later. The problem is the work, not the wake-up.",
                    secs(end_event.t_ms),
                    secs(d.t_ms),
                    (d.t_ms - end_event.t_ms) / 1000.0
                );
            }
            None => {
                v.facts
                    .push(format!("`{w}` was never told that `{k}` failed"));
                v.explanation = format!(
                    "`{k}` failed on its own at {} ({why}), and `{w}` was never told: there was no successful result to deliver, and the failure itself was not reported to the waiter.",
                    secs(end_event.t_ms)
                );
            }
        }
        return v;
    }

    // Rule 6: the work ended; was the waiter told, and how?
    if let Some(d) = delivery {
        let latency = d.t_ms - end_event.t_ms;
        v.latency_ms = Some(latency);
        let silent_input = tl.iter().find(|e| {
            e.t_ms >= end_event.t_ms
                && e.t_ms <= d.t_ms
                && matches!(
                    e.kind,
                    EventKind::UserInput {
                        why: InputReason::Scheduled | InputReason::Probe,
                        ..
                    }
                )
                && !tl
                    .iter()
                    .any(|r| r.t_ms > end_event.t_ms && r.t_ms < e.t_ms && is_request_by(r, w))
        });
        if let Some(i) = silent_input {
            v.witness.push(witness(i, input_what(i)));
            v.witness
                .push(witness(d, format!("`{w}` gets `{k}`'s notification")));
            v.outcome = Outcome::QueuedUntilInput;
            v.facts.push(format!(
                "`{w}` stayed silent for {:.2} s after `{k}` ended",
                (i.t_ms - end_event.t_ms) / 1000.0
            ));
            v.facts.push(format!(
                "the notification reached `{w}` only in the request after an unrelated input at {}",
                secs(i.t_ms)
            ));
            v.explanation = format!(
                "`{k}` ended at {}, and `{w}` stayed silent. An unrelated input arrived at {}; only the request that followed it, at {}, carried `{k}`'s notification. The notification was queued, not delivered: without the input, `{w}` would have waited forever.",
                secs(end_event.t_ms),
                secs(i.t_ms),
                secs(d.t_ms)
            );
            return v;
        }
        v.witness
            .push(witness(d, format!("`{w}` gets `{k}`'s notification")));
        v.outcome = Outcome::Woke;
        let how_woken = if finalized.is_some() || reactivated_between(tl, w, end_event.t_ms, d.t_ms)
        {
            v.facts.push(format!(
                "`{w}` was re-invoked after `{k}` ended (SubagentStart again)"
            ));
            "re-invoked"
        } else if let Some((stop, next)) = blocked_stop(tl, w, started.t_ms, d.t_ms) {
            v.witness
                .insert(v.witness.len() - 2, witness(stop, "a hook blocks the stop"));
            v.facts.push(format!(
                "`{w}`'s SubagentStop at {} was blocked by a hook: it continued at {} instead of being finalized",
                secs(stop.t_ms),
                secs(next.t_ms)
            ));
            if let EventKind::ModelRequest {
                injected: Some(text),
                ..
            } = &next.kind
            {
                let shown = crate::evidence::injected_gist(text);
                v.facts.push(format!(
                    "`{w}`'s next request carried the hook's reason: “{}”",
                    crate::evidence::normalize::truncate(shown, 120)
                ));
            }
            "woken after a hook blocked its stop and it kept working"
        } else {
            "woken"
        };
        v.facts.push(format!(
            "`{w}` received `{k}`'s notification {:.2} s after it ended",
            latency / 1000.0
        ));
        v.explanation = format!(
            "`{k}` ended at {}, and `{w}` was {how_woken}: its request at {} carried `{k}`'s notification, {:.2} s later, with no other input in between.",
            secs(end_event.t_ms),
            secs(d.t_ms),
            latency / 1000.0
        );
        return v;
    }
    if let Some(stop) = finalized {
        v.witness
            .insert(v.witness.len() - 1, witness(stop, finalized_what(w, stop)));
        v.outcome = Outcome::NotResumable;
        v.facts.push(format!(
            "`{w}` was finalized at {} before `{k}` ended",
            secs(stop.t_ms)
        ));
        v.facts
            .push(format!("`{w}` made no model request after `{k}` ended"));
        v.explanation = format!(
            "`{w}` was finalized at {}, before `{k}` ended at {}. {}`{w}` never made another model request, so the result never reached it.",
            secs(stop.t_ms),
            secs(end_event.t_ms),
            if printed.is_some() {
                "A notification was produced, but "
            } else {
                ""
            },
        );
        return v;
    }
    if crashed && !matches!(how, WorkEnd::Killed(_)) {
        return unknown(
            v,
            format!(
                "the CLI exited ({}) before `{w}` could be told",
                input.cli_exit.map(|e| e.describe()).unwrap_or_default()
            ),
        );
    }
    // The CLI killed the work and ended the session: the kill is the session's end reaching
    // the work, and the waiter ends with the session.
    if let (WorkEnd::Killed(why), Some(exit)) = (
        &how,
        f.run_end
            .filter(|e| matches!(e.kind, EventKind::CliExited { .. })),
    ) {
        v.witness.push(witness(exit, run_end_what(exit)));
        v.outcome = Outcome::NotResumable;
        v.facts.push(format!(
            "the CLI killed `{k}` at {} ({why}) and exited at {}, without `{w}` being told",
            secs(end_event.t_ms),
            secs(exit.t_ms)
        ));
        v.explanation = format!(
            "`{w}` handed `{k}` to the background{}. The CLI ended the session while `{k}` still ran: it killed `{k}` at {} ({why}) and exited at {}. `{w}` was never told; nothing was left that could be woken.",
            turn_end
                .map(|t| format!(" and ended its turn at {}", secs(t.t_ms)))
                .unwrap_or_default(),
            secs(end_event.t_ms),
            secs(exit.t_ms),
        );
        return v;
    }
    let observed = f.run_end.map(|e| e.t_ms).unwrap_or(f.last_t) - end_event.t_ms;
    if observed < input.settle_ms {
        return unknown(
            v,
            format!(
                "the run ended {:.2} s after `{k}` did, less than the {:.2} s settle window",
                observed / 1000.0,
                input.settle_ms / 1000.0
            ),
        );
    }
    if let Some(p) = printed {
        v.witness.push(witness(
            p,
            "the CLI prints a task_notification (not a delivery)",
        ));
        v.outcome = Outcome::NotResumable;
        v.facts.push(format!("`{w}` was live but made no request carrying the notification in the {:.2} s that followed", observed / 1000.0));
        v.explanation = format!(
            "`{k}` ended at {} and the CLI produced its notification at {}, but `{w}` was never resumed to receive it: no request of `{w}` carried it in the {:.2} s that followed.",
            secs(end_event.t_ms),
            secs(p.t_ms),
            observed / 1000.0
        );
        return v;
    }
    v.outcome = Outcome::NeverFired;
    v.facts.push(format!("no notification for `{k}` appeared anywhere (stdout or any request) in the {:.2} s after it ended", observed / 1000.0));
    v.explanation = format!(
        "`{k}` ended at {}, and no notification for it appeared anywhere: no task_notification line, no request carrying it, in the {:.2} s the run went on.",
        secs(end_event.t_ms),
        observed / 1000.0
    );
    v
}

/// A SubagentStop of `w` between `from` and `to` that `w` continued after (another request
/// with no SubagentStart between): a hook blocked it. Returns the stop and the continuation.
fn blocked_stop<'a>(
    tl: &'a Timeline,
    w: &str,
    from: f64,
    to: f64,
) -> Option<(&'a Event, &'a Event)> {
    tl.iter()
        .filter(|e| e.t_ms >= from && e.t_ms <= to && e.agent.as_deref() == Some(w) && matches!(e.kind, EventKind::AgentFinalized { .. }))
        .find_map(|stop| {
            let next = tl.iter().find(|e| {
                e.t_ms > stop.t_ms
                    && e.agent.as_deref() == Some(w)
                    && (is_request_by(e, w) || matches!(&e.kind, EventKind::Hook { hook, .. } if hook == "SubagentStart"))
            })?;
            is_request_by(next, w).then_some((stop, next))
        })
}

fn reactivated_between(tl: &Timeline, w: &str, from: f64, to: f64) -> bool {
    tl.iter().any(|e| {
        e.t_ms >= from
            && e.t_ms <= to
            && e.agent.as_deref() == Some(w)
            && matches!(&e.kind, EventKind::Hook { hook, .. } if hook == "SubagentStart")
    })
}

fn finalized_what(w: &str, e: &Event) -> String {
    match &e.kind {
        EventKind::AgentFinalized { hook } => format!("{hook} for `{w}`"),
        EventKind::CliExited { exit } => format!("the CLI exits ({})", exit.describe()),
        EventKind::Hook { hook, .. } => format!("{hook}: the session ends"),
        _ => "finalized".into(),
    }
}

fn run_end_what(e: &Event) -> String {
    match &e.kind {
        EventKind::CliExited { exit } => format!("the CLI exits ({})", exit.describe()),
        EventKind::CeilingHit { ceiling_s } => format!("the {ceiling_s:.0} s ceiling ends the run"),
        EventKind::Interrupted => "the run is interrupted".into(),
        _ => "the run ends".into(),
    }
}

fn input_what(e: &Event) -> String {
    match &e.kind {
        EventKind::UserInput {
            why: InputReason::Probe,
            ..
        } => "the driver sends a probe input".into(),
        _ => "a user input arrives".into(),
    }
}

/// Agreement of repeated runs: `not-resumable 5/5`, or `flaky: woke 3/5, not-resumable 2/5`.
pub fn agreement(outcomes: &[Outcome]) -> (Option<Outcome>, String) {
    let mut counts: Vec<(Outcome, usize)> = Vec::new();
    for o in outcomes {
        match counts.iter_mut().find(|(k, _)| k == o) {
            Some((_, n)) => *n += 1,
            None => counts.push((*o, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let total = outcomes.len();
    match counts.as_slice() {
        [] => (None, "no runs".into()),
        [(o, n)] => (Some(*o), format!("{o} {n}/{total}")),
        many => (
            None,
            format!(
                "flaky: {}",
                many.iter()
                    .map(|(o, n)| format!("{o} {n}/{total}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    }
}

#[cfg(test)]
mod tests;
