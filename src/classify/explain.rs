//! The wording of verdicts: a decision becomes a witness (the few events that decide it, each
//! described), a list of confirmed facts, and a paragraph that explains the outcome the way a
//! good bug report would. Nothing here decides anything.

use super::facts::{self, Facts, WorkEnd, latency};
use super::rules::{AfterEnd, Decision, Unended, Woken};
use super::{Outcome, Witness};
use crate::evidence::secs;
use crate::evidence::{Event, EventKind, HookName, InputReason, Timeline};

impl Outcome {
    /// The hypothesis label used in reports. It names what happened, never whether that was
    /// expected: the expectation is the scenario's, and reports state it apart.
    pub fn hypothesis(self) -> &'static str {
        match self {
            Outcome::Woke => "the waiter was told",
            Outcome::NeverFired => "H1: the notification never fired",
            Outcome::NotResumable => "H2: fired, but the waiter was not resumable",
            Outcome::QueuedUntilInput => "H3: queued until the next input",
            Outcome::ChildFailed => "H4: the background work itself failed",
            Outcome::Unknown => "the evidence does not decide",
        }
    }
}

pub fn witness(e: &Event, what: impl Into<String>) -> Witness {
    Witness::of(e, what)
}

/// Everything the wording reads besides the decision.
pub struct Scene<'a> {
    pub tl: &'a Timeline,
    pub f: &'a Facts<'a>,
    pub started: Option<&'a Event>,
    pub cli_exit: Option<String>,
    pub settle_ms: f64,
    pub offers: &'a crate::evidence::offers::Offers,
}

/// A decision in words: the witness, the confirmed facts, the explanation, and for `unknown`
/// the reason. The outcome and the latency are the decision's own (`Decision::outcome`).
#[derive(Debug, Default)]
pub struct Wording {
    pub witness: Vec<Witness>,
    pub explanation: String,
    pub facts: Vec<String>,
    pub reason: Option<String>,
}

/// The wording of a decision.
pub fn words(scene: &Scene, decision: &Decision) -> Wording {
    let mut v = judged(scene, decision);
    v.facts.extend(fault_facts(scene));
    v
}

/// The faults the harness injected into the waiter's requests: each one a fact, so a verdict
/// reached under faults says so (and a lost answer is never mistaken for the CLI's doing).
fn fault_facts(scene: &Scene) -> Vec<String> {
    let waiter = |e: &crate::evidence::Event| e.agent.as_deref() == Some(scene.f.waiter);
    scene
        .tl
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::FaultInjected { detail, .. } if waiter(e) => Some(format!(
                "The harness injected a fault at {}: {detail}.",
                secs(e.t_ms)
            )),
            EventKind::WorkSignalled { work, .. } | EventKind::CliCrashed { work, .. }
                if work == scene.f.work =>
            {
                Some(format!(
                    "The harness injected a fault at {}: {}.",
                    secs(e.t_ms),
                    crate::evidence::describe::describe(e)
                ))
            }
            _ => None,
        })
        .collect()
}

fn judged(scene: &Scene, decision: &Decision) -> Wording {
    let (w, k) = (scene.f.waiter, scene.f.work);
    let mut v = Wording::default();
    let Some(started) = scene.started else {
        return never_started(scene, v);
    };
    v.witness.push(witness(
        started,
        format!("`{w}` starts `{k}` in the background"),
    ));
    match decision {
        Decision::NeverStarted => never_started(scene, v),
        Decision::ScriptExhausted { exhausted } => {
            v.witness.push(witness(
                exhausted,
                format!("`{w}` asks past the end of its script"),
            ));
            unknown(
                v,
                format!(
                    "`{w}`'s script ran out at {} before `{k}` ended, so the run left the experiment",
                    secs(exhausted.t_ms)
                ),
            )
        }
        Decision::Unended(u) => {
            let turn = waiter_turn(scene, &mut v, started);
            unended(scene, u, v, &turn)
        }
        Decision::Ended { end, why } => {
            let turn = waiter_turn(scene, &mut v, started);
            ended(scene, why, v, &turn, end.event, end.how)
        }
    }
}

/// The waiter's turn end that started its wait, as a witness line; ` and ended its turn at
/// T` for the explanation (empty when it did not).
fn waiter_turn(scene: &Scene, v: &mut Wording, started: &Event) -> String {
    let w = scene.f.waiter;
    let turn_end = facts::turn_end(scene.tl, w, started.t_ms, super::rules::decision_t(scene.f));
    if let Some(te) = turn_end {
        v.witness.push(witness(te, format!("`{w}` ends its turn")));
    }
    turn_end
        .map(|t| format!(" and ended its turn at {}", secs(t.t_ms)))
        .unwrap_or_default()
}

/// Work with no trace of a start: the harness's cut, when there is one, is the reason, since
/// the run ended before the start could be seen.
fn never_started(scene: &Scene, v: Wording) -> Wording {
    let k = scene.f.work;
    match scene.f.cut {
        Some(cut) if matches!(cut.kind, EventKind::ToolUnavailable { .. }) => {
            unknown(v, format!("`{k}` never started: {}", cut_what(cut)))
        }
        Some(cut) => cut_short(v, cut, format!("before `{k}` started")),
        None => unknown(
            v,
            format!("`{k}` never started (no tool call, task or process for it)"),
        ),
    }
}

/// The harness's hang timer fired after the work had ended (by the recorded stamps): the
/// harness was late, and its cut decides nothing about the CLI.
fn late_timer(mut v: Wording, scene: &Scene, timer: &Event, end: &Event) -> Wording {
    let (w, k) = (scene.f.waiter, scene.f.work);
    let bound = match &timer.kind {
        EventKind::WorkOverdue { bound_s, .. } => *bound_s,
        _ => 0.0,
    };
    v.witness.push(witness(
        timer,
        format!(
            "the harness's {bound:.1} s hang timer for `{k}` fires late; the harness ends the run"
        ),
    ));
    unknown(
        v,
        format!(
            "the harness ended the run at {} on `{k}`'s {bound:.1} s hang bound, but `{k}` had ended at {}, within it: the harness's timer fired late{}, so whether `{w}` was told was not observed",
            secs(timer.t_ms),
            secs(end.t_ms),
            stall_note(scene)
        ),
    )
}

/// ` (the harness was stalled from A to B ...)`, where the run recorded a stall.
fn stall_note(scene: &Scene) -> String {
    scene
        .f
        .stall
        .and_then(stall_words)
        .map(|w| format!(" ({w})"))
        .unwrap_or_default()
}

/// A stall of the harness in words.
fn stall_words(stall: &Event) -> Option<String> {
    match &stall.kind {
        EventKind::HarnessStalled { until_ms } => Some(format!(
            "the harness itself was stalled from {} to {}: stopped or starved of CPU",
            secs(stall.t_ms),
            secs(*until_ms)
        )),
        _ => None,
    }
}

/// The harness cut the run short at `cut`: `unknown`, saying when, why and what was missed.
fn cut_short(mut v: Wording, cut: &Event, missed: String) -> Wording {
    v.witness.push(witness(cut, run_end_what(cut)));
    let reason = format!(
        "the run was cut short at {} ({}) {missed}",
        secs(cut.t_ms),
        cut_what(cut)
    );
    unknown(v, reason)
}

fn unknown(mut v: Wording, reason: String) -> Wording {
    v.explanation = format!("The evidence does not decide: {reason}.");
    v.reason = Some(reason);
    v
}

/// Work that did not end while the run was the CLI's own.
fn unended(scene: &Scene, decision: &Unended, mut v: Wording, turn: &str) -> Wording {
    let (w, k) = (scene.f.waiter, scene.f.work);
    let run_end_t = scene.f.run_end.map(|e| e.t_ms).unwrap_or(scene.f.last_t);
    match decision {
        Unended::Hung { overdue } => {
            let bound = match &overdue.kind {
                EventKind::WorkOverdue { bound_s, .. } => *bound_s,
                _ => 0.0,
            };
            v.witness.push(witness(overdue, run_end_what(overdue)));
            v.facts.push(format!(
                "`{k}` hung: still running past the {bound:.1} s hang bound its scenario declares; the harness ended the run at {}",
                secs(overdue.t_ms)
            ));
            let state = match facts::finalized_before(scene.tl, w, overdue.t_ms) {
                Some(stop) => format!("`{w}` had been finalized at {}", secs(stop.t_ms)),
                None => format!("`{w}` was still in a state to be told"),
            };
            v.facts.push(state.clone());
            v.explanation = format!(
                "`{k}` never ended: it was still running past the {bound:.1} s hang bound its scenario declares, so the harness ended the run at {}. {state}. The silence is the work's own failure, not a lost notification.",
                secs(overdue.t_ms)
            );
            v
        }
        Unended::CutBeforeEnd { cut } => cut_short(
            v,
            cut,
            format!("before `{k}` ended; what the CLI would have done next was not observed"),
        ),
        Unended::CrashedBeforeEnd => unknown(
            v,
            format!(
                "the CLI exited ({}) while `{k}` was still running",
                scene.cli_exit.clone().unwrap_or_default()
            ),
        ),
        Unended::OrphanedAtExit { stop } => {
            v.witness.push(witness(stop, finalized_what(w, stop)));
            if let Some(re) = scene.f.run_end {
                v.witness.push(witness(re, run_end_what(re)));
            }
            let listing = note_finalized(&mut v, scene, stop);
            v.facts.push(format!(
                "`{k}` was still running when the CLI exited; nothing was left to wake"
            ));
            v.explanation = format!(
                "`{w}` handed `{k}` to the background{turn}, and was finalized at {} while it still ran{}. `{k}` had not ended when the CLI exited at {}, and `{w}` made no model request after its stop. (The harness stopped `{k}` only after the CLI was gone.)",
                secs(stop.t_ms),
                listing.map(|l| format!(" ({l})")).unwrap_or_default(),
                secs(run_end_t),
            );
            v
        }
        Unended::OutlivedRun { run_end_t } => unknown(
            v,
            format!("the run ended at {} before `{k}` did", secs(*run_end_t)),
        ),
        Unended::EndUnseen => unknown(
            v,
            format!(
                "`{k}` is an agent, and this session printed no task lines (an interactive one): when `{k}` ended, and so whether `{w}` was told, was not observed"
            ),
        ),
    }
}

/// Work that ended.
fn ended(
    scene: &Scene,
    decision: &AfterEnd,
    mut v: Wording,
    turn: &str,
    end: &Event,
    how: &WorkEnd,
) -> Wording {
    let (w, k) = (scene.f.waiter, scene.f.work);
    v.witness.push(witness(end, end_what(k, how)));
    let at = Ended { scene, turn, end };
    let printed = facts::printed(scene.tl, scene.f, end.t_ms);
    // A kill after the waiter's finalization says what it needs itself.
    let killed = matches!(decision, AfterEnd::KilledAfterFinalized { .. });
    if let Some(p) = printed.filter(|_| !killed) {
        v.facts.push(format!(
            "the CLI printed a task_notification for `{k}` at {}",
            secs(p.t_ms)
        ));
    }
    match decision {
        AfterEnd::KilledAfterFinalized { stop, why } => at.killed_after_finalized(v, stop, why),
        AfterEnd::FailedOnItsOwn { why, told, .. } => {
            use crate::evidence::offers::Evidence;
            let unreadable = (!scene.offers.has(Evidence::NoticeInRequests))
                .then(|| scene.offers.why_not(Evidence::NoticeInRequests));
            failed(v, (w, k), end, why, *told, unreadable)
        }
        AfterEnd::Queued { input, delivery } => queued(v, w, k, end, input, delivery),
        AfterEnd::Woke { delivery, how } => at.woke(v, delivery, how),
        AfterEnd::OrderBlurred {
            input,
            delivery,
            stall,
        } => order_blurred(v, scene, input, delivery, stall),
        AfterEnd::AnswersLost { first, attempts } => at.answers_lost(v, first, *attempts),
        AfterEnd::CutBeforeTold { cut } if scene.f.late_timer == Some(*cut) => {
            late_timer(v, scene, cut, end)
        }
        AfterEnd::CutBeforeTold { cut } => cut_short(
            v,
            cut,
            format!(
                "after `{k}` ended at {} and before `{w}` was told; whether it would have been was not observed",
                secs(end.t_ms)
            ),
        ),
        AfterEnd::FinalizedBeforeEnd { stop } => {
            at.finalized_before_end(v, stop, printed.is_some())
        }
        AfterEnd::CrashedBeforeTold => unknown(
            v,
            format!(
                "the CLI exited ({}) before `{w}` could be told",
                scene.cli_exit.clone().unwrap_or_default()
            ),
        ),
        AfterEnd::KilledWithSession { exit, why } => at.killed_with_session(v, exit, why),
        AfterEnd::TooShort { observed_ms } => unknown(
            v,
            format!(
                "the run ended {:.2} s after `{k}` did, less than the {:.2} s settle window",
                observed_ms / 1000.0,
                scene.settle_ms / 1000.0
            ),
        ),
        AfterEnd::PrintedNotDelivered {
            printed,
            observed_ms,
        } => at.printed_not_delivered(v, printed, *observed_ms),
        AfterEnd::NeverFired { observed_ms } => at.never_fired(v, *observed_ms),
        AfterEnd::FiringUnseen { observed_ms, why } => at.firing_unseen(v, *observed_ms, why),
        AfterEnd::NoticeUnreadable { request, why } => at.notice_unreadable(v, request, why),
        AfterEnd::LostInRestart {
            restart,
            stale,
            observed_ms,
        } => at.lost_in_restart(v, how, restart, *stale, *observed_ms),
    }
}

/// What every wording of ended work reads: the scene, the waiter's turn end in words, and the
/// work's end.
struct Ended<'s, 'a> {
    scene: &'s Scene<'a>,
    turn: &'s str,
    end: &'s Event,
}

/// The work's end in words, for its witness line.
fn end_what(k: &str, how: &WorkEnd) -> String {
    match how {
        WorkEnd::Completed => format!("`{k}` completes"),
        WorkEnd::Failed(why) => format!("`{k}` fails ({why})"),
        WorkEnd::Killed(why) => format!("`{k}` is killed ({why})"),
        WorkEnd::KilledByFault(why) => format!("`{k}` is killed by the harness's fault ({why})"),
    }
}

impl Ended<'_, '_> {
    fn names(&self) -> (&str, &str) {
        (self.scene.f.waiter, self.scene.f.work)
    }

    /// The waiter got the notification: whether an input raced it, and how its latency reads.
    fn woke(&self, v: Wording, delivery: &Event, how: &Woken) -> Wording {
        let (scene, end) = (self.scene, self.end);
        let raced = facts::input_not_carried(scene.tl, end.t_ms, delivery);
        let latency = if scene.f.end_from_notice {
            Latency::EndUnreported
        } else {
            match facts::stall_between(scene.tl, end.t_ms, delivery.t_ms).and_then(stall_words) {
                Some(stall) => Latency::Stalled(stall),
                None => Latency::Measured,
            }
        };
        woke(v, self.names(), end, delivery, how, raced, latency)
    }

    /// No request carried the notice, but the run could not see whether one fired.
    fn firing_unseen(&self, v: Wording, observed_ms: f64, why: &str) -> Wording {
        let (w, k) = self.names();
        unknown(
            v,
            format!(
                "`{k}` ended at {} and no request of `{w}` carried its notification in the {:.2} s that followed, but {why}: whether a notification fired (H1) or waited (H2, H3) is not observable",
                secs(self.end.t_ms),
                observed_ms / 1000.0
            ),
        )
    }

    /// The waiter made a request, but the run could not read whether it carried the notice.
    fn notice_unreadable(&self, mut v: Wording, request: &Event, why: &str) -> Wording {
        let (w, k) = self.names();
        v.witness
            .push(witness(request, format!("`{w}` makes a request")));
        unknown(
            v,
            format!(
                "`{k}` ended at {} and `{w}` made a model request at {}, but {why}: whether that request carried the notification is not known",
                secs(self.end.t_ms),
                secs(request.t_ms)
            ),
        )
    }

    /// The CLI killed the work after finalizing the waiter.
    fn killed_after_finalized(&self, mut v: Wording, stop: &Event, why: &str) -> Wording {
        let (w, k) = self.names();
        let (end, turn) = (self.end, self.turn);
        v.witness
            .insert(v.witness.len() - 1, witness(stop, finalized_what(w, stop)));
        let listing = note_finalized(&mut v, self.scene, stop);
        v.facts.push(format!(
            "the CLI killed `{k}` at {} ({why}), {:.2} s after `{w}` was finalized",
            secs(end.t_ms),
            (end.t_ms - stop.t_ms) / 1000.0
        ));
        v.facts.push(format!(
            "`{w}` made no model request after it was finalized"
        ));
        v.explanation = format!(
            "`{w}` handed `{k}` to the background{turn}; it was finalized at {} with `{k}` still running{}. `{k}` was then killed at {} ({why}). `{w}` made no further model request: nothing was left that could be woken.",
            secs(stop.t_ms),
            listing.map(|l| format!(" ({l})")).unwrap_or_default(),
            secs(end.t_ms),
        );
        v
    }

    fn answers_lost(&self, mut v: Wording, first: &Event, attempts: usize) -> Wording {
        let (w, k) = self.names();
        v.witness.push(witness(
            first,
            format!("`{w}`'s request carries the notification; a fault breaks its answer"),
        ));
        unknown(
            v,
            format!(
                "`{w}` was woken for `{k}` at {} ({attempts} request(s) carried the notification), but the harness's injected faults broke every answer, so whether the wake-up would have reached `{w}` was not observed",
                secs(first.t_ms)
            ),
        )
    }

    fn finalized_before_end(&self, mut v: Wording, stop: &Event, printed: bool) -> Wording {
        let (w, k) = self.names();
        v.witness
            .insert(v.witness.len() - 1, witness(stop, finalized_what(w, stop)));
        v.facts.push(format!(
            "`{w}` was finalized at {} before `{k}` ended",
            secs(stop.t_ms)
        ));
        v.facts
            .push(format!("`{w}` made no model request after `{k}` ended"));
        v.explanation = format!(
            "`{w}` was finalized at {}, before `{k}` ended at {}. {}`{w}` never made another model request, so the result never reached it.",
            secs(stop.t_ms),
            secs(self.end.t_ms),
            if printed {
                "A notification was produced, but "
            } else {
                ""
            },
        );
        v
    }

    fn killed_with_session(&self, mut v: Wording, exit: &Event, why: &str) -> Wording {
        let (w, k) = self.names();
        let (end, turn) = (self.end, self.turn);
        v.witness.push(witness(exit, run_end_what(exit)));
        v.facts.push(format!(
            "the CLI killed `{k}` at {} ({why}) and exited at {}, without `{w}` being told",
            secs(end.t_ms),
            secs(exit.t_ms)
        ));
        v.explanation = format!(
            "`{w}` handed `{k}` to the background{turn}. The CLI ended the session while `{k}` still ran: it killed `{k}` at {} ({why}) and exited at {}. `{w}` was never told; nothing was left that could be woken.",
            secs(end.t_ms),
            secs(exit.t_ms),
        );
        v
    }

    fn printed_not_delivered(&self, mut v: Wording, printed: &Event, observed_ms: f64) -> Wording {
        let (w, k) = self.names();
        v.witness.push(witness(
            printed,
            "the CLI prints a task_notification (not a delivery)",
        ));
        v.facts.push(format!("`{w}` was live but made no request carrying the notification in the {:.2} s that followed", observed_ms / 1000.0));
        v.explanation = format!(
            "`{k}` ended at {} and the CLI produced its notification at {}, but `{w}` was never resumed to receive it: no request of `{w}` carried it in the {:.2} s that followed.",
            secs(self.end.t_ms),
            secs(printed.t_ms),
            observed_ms / 1000.0
        );
        v
    }

    fn never_fired(&self, mut v: Wording, observed_ms: f64) -> Wording {
        let (_, k) = self.names();
        v.facts.push(format!("no notification for `{k}` appeared anywhere (stdout or any request) in the {:.2} s after it ended", observed_ms / 1000.0));
        v.explanation = format!(
            "`{k}` ended at {}, and no notification for it appeared anywhere: no task_notification line, no request carrying it, in the {:.2} s the run went on.",
            secs(self.end.t_ms),
            observed_ms / 1000.0
        );
        v
    }

    /// The harness crashed the CLI while the work ran; the work's end was never reported.
    fn lost_in_restart(
        &self,
        mut v: Wording,
        how: &WorkEnd,
        restart: &Event,
        stale: Option<&Event>,
        observed_ms: f64,
    ) -> Wording {
        let (w, k) = self.names();
        let (end, turn) = (self.end, self.turn);
        let crash = facts::crash_before(self.scene.tl, restart.t_ms).unwrap_or(restart);
        let at = v.witness.len() - 1; // before the work's end
        v.witness.insert(
            at,
            witness(
                crash,
                format!("the harness crashes the CLI while `{k}` runs, and resumes it"),
            ),
        );
        let told = match stale {
            Some(stale) => {
                v.witness.insert(
                    at + 1,
                    witness(
                        stale,
                        format!("the restarted CLI reports `{k}` stopped while it still runs"),
                    ),
                );
                v.facts.push(format!(
                    "the restarted CLI reported `{k}` stopped at {}, {:.2} s before it ended",
                    secs(stale.t_ms),
                    (end.t_ms - stale.t_ms) / 1000.0
                ));
                format!(
                    "at {} the restarted CLI reported `{k}` stopped (\"didn't finish before the previous session ended\"), though it was still running",
                    secs(stale.t_ms)
                )
            }
            None => format!("the restarted CLI did not mention `{k}` while it ran"),
        };
        v.facts.push(format!(
            "no notification of `{k}`'s end appeared anywhere in the {:.2} s after it",
            observed_ms / 1000.0
        ));
        v.explanation = format!(
            "`{w}` handed `{k}` to the background{turn}. The harness crashed the CLI at {} while `{k}` ran and started it again on the same session; {told}. `{k}` ended at {} ({}), and no notification of that end appeared anywhere in the {:.2} s the run went on: after the restart the CLI no longer followed `{k}`.",
            secs(crash.t_ms),
            secs(end.t_ms),
            end_words(how),
            observed_ms / 1000.0
        );
        v
    }
}

/// How the work ended, in a few words for a sentence.
fn end_words(how: &WorkEnd) -> String {
    match how {
        WorkEnd::Completed => "completed".into(),
        WorkEnd::Failed(why) => format!("failed, {why}"),
        WorkEnd::Killed(why) | WorkEnd::KilledByFault(why) => format!("killed, {why}"),
    }
}

/// `unreadable`: why the version's notices in a request cannot be read, where they cannot
/// (then "never told" is not observed, and is not said).
fn failed(
    mut v: Wording,
    (w, k): (&str, &str),
    end: &Event,
    why: &str,
    told: Option<&Event>,
    unreadable: Option<String>,
) -> Wording {
    v.facts.push(format!(
        "`{k}` failed on its own ({why}) at {}",
        secs(end.t_ms)
    ));
    match (told, unreadable) {
        (Some(d), _) => {
            v.witness
                .push(witness(d, format!("`{w}` is told of the failure")));
            v.facts.push(format!(
                "`{w}` was told of the failure at {} ({:.2} s later)",
                secs(d.t_ms),
                latency(end, d) / 1000.0
            ));
            v.explanation = format!(
                "`{k}` failed on its own at {} ({why}). The notification path worked: `{w}` was told at {}, {:.2} s later. The problem is the work, not the wake-up.",
                secs(end.t_ms),
                secs(d.t_ms),
                latency(end, d) / 1000.0
            );
        }
        (None, Some(unreadable)) => {
            v.facts.push(format!(
                "whether `{w}` was told that `{k}` failed is not observable: {unreadable}"
            ));
            v.explanation = format!(
                "`{k}` failed on its own at {} ({why}). Whether `{w}` was told is not observable: {unreadable}.",
                secs(end.t_ms)
            );
        }
        (None, None) => {
            v.facts
                .push(format!("`{w}` was never told that `{k}` failed"));
            v.explanation = format!(
                "`{k}` failed on its own at {} ({why}), and `{w}` was never told: there was no successful result to deliver, and the failure itself was not reported to the waiter.",
                secs(end.t_ms)
            );
        }
    }
    v
}

/// Said when the request reached the fake API before the stdout line reporting the end.
fn channel_note(end: &Event, d: &Event) -> String {
    if d.t_ms >= end.t_ms {
        return String::new();
    }
    format!(
        " (the request reached the fake API {:.2} s before the CLI's stdout reported the end: two channels, read apart; the notice itself shows the end came first)",
        (end.t_ms - d.t_ms) / 1000.0
    )
}

fn queued(mut v: Wording, w: &str, k: &str, end: &Event, input: &Event, d: &Event) -> Wording {
    let with_it = input.agent.as_deref() == Some(w);
    v.witness.push(witness(input, input_what(input)));
    v.witness.push(witness(
        d,
        if with_it {
            format!("`{w}` gets `{k}`'s notification together with the input")
        } else {
            format!("`{w}` gets `{k}`'s notification after the input")
        },
    ));
    let when = if input.t_ms >= end.t_ms {
        format!(
            "{:.2} s after `{k}` ended at {}",
            (input.t_ms - end.t_ms) / 1000.0,
            secs(end.t_ms)
        )
    } else {
        format!(
            "{:.2} s before `{k}` ended at {}",
            (end.t_ms - input.t_ms) / 1000.0,
            secs(end.t_ms)
        )
    };
    if with_it {
        v.facts.push(format!(
            "the request that told `{w}` of `{k}`, at {}, also carried the input sent at {}",
            secs(d.t_ms),
            secs(input.t_ms)
        ));
        v.explanation = format!(
            "An unrelated input was sent at {} ({when}). `{w}` got `{k}`'s notification only at {}, in the same request that brought it the input: the notification waited for the input, and nothing in the run shows `{w}` would have been told without it.",
            secs(input.t_ms),
            secs(d.t_ms)
        );
    } else {
        v.facts.push(format!(
            "`{w}` stayed silent from `{k}`'s end until the unrelated input at {}",
            secs(input.t_ms)
        ));
        v.explanation = format!(
            "`{k}` ended at {}, and `{w}` stayed silent. An unrelated input was sent at {}; only after the CLI took it did `{w}`'s request at {} carry `{k}`'s notification: the notification waited for the input.",
            secs(end.t_ms),
            secs(input.t_ms),
            secs(d.t_ms)
        );
    }
    v
}

/// `raced`: an unrelated input sent between the end and the delivery that the delivery did not
/// carry (the CLI's own turn beat it).
/// Whether a wake-up's latency was measured, and if not why.
enum Latency {
    Measured,
    /// The harness stalled between the end and the request (in words): the stamp is late.
    Stalled(String),
    /// Nothing but the notice itself reported the end.
    EndUnreported,
}

fn woke(
    mut v: Wording,
    (w, k): (&str, &str),
    end: &Event,
    d: &Event,
    how: &Woken,
    raced: Option<&Event>,
    latency: Latency,
) -> Wording {
    v.witness
        .push(witness(d, format!("`{w}` gets `{k}`'s notification")));
    let how_woken = match how {
        Woken::Reinvoked => {
            v.facts.push(format!(
                "`{w}` was re-invoked after `{k}` ended (SubagentStart again)"
            ));
            "re-invoked"
        }
        Woken::AfterBlockedStop { stop, next } => {
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
                    crate::evidence::normalize::truncate(&shown, 120)
                ));
            }
            "woken after a hook blocked its stop and it kept working"
        }
        Woken::Live => "woken",
    };
    let (ended, later) = match &latency {
        Latency::Measured => {
            let latency = facts::latency(end, d) / 1000.0;
            v.facts.push(format!(
                "`{w}` received `{k}`'s notification {latency:.2} s after it ended"
            ));
            (
                format!("`{k}` ended at {}", secs(end.t_ms)),
                format!(", {latency:.2} s later{}", channel_note(end, d)),
            )
        }
        Latency::Stalled(stall) => {
            v.facts.push(format!(
                "the latency is not measured (stamped late: {stall})"
            ));
            (
                format!("`{k}` ended at {}", secs(end.t_ms)),
                format!(" (the latency is not measured, stamped late: {stall})"),
            )
        }
        Latency::EndUnreported => {
            v.facts.push(format!(
                "nothing reported `{k}`'s end before its notice, so the latency is not measured"
            ));
            (
                format!("`{k}` ended (no report of its end came before its notice)"),
                String::new(),
            )
        }
    };
    let inputs = match raced {
        Some(input) => {
            v.facts.push(format!(
                "an input sent at {} was not in the request that told `{w}`",
                secs(input.t_ms)
            ));
            format!(
                "; an input sent at {} was not part of that request, so the CLI told `{w}` by itself",
                secs(input.t_ms)
            )
        }
        None => ", with no other input in between".into(),
    };
    v.explanation = format!(
        "{ended}, and `{w}` was {how_woken}: its request at {} carried `{k}`'s notification{later}{inputs}.",
        secs(d.t_ms),
    );
    v
}

/// The order of an input to another agent and the delivery is blurred by a stall.
fn order_blurred(
    mut v: Wording,
    scene: &Scene,
    input: &Event,
    delivery: &Event,
    stall: &Event,
) -> Wording {
    let (w, k) = (scene.f.waiter, scene.f.work);
    v.witness.push(witness(input, input_what(input)));
    v.witness.push(witness(
        delivery,
        format!("`{w}` gets `{k}`'s notification"),
    ));
    v.witness.push(witness(stall, "the harness stalls"));
    v.witness.sort_by(|a, b| a.t_ms.total_cmp(&b.t_ms));
    unknown(
        v,
        format!(
            "`{w}` was told of `{k}` at {} and an input went to another agent at {}, but the harness stalled in between ({}): which came first is not measured, so a wake-up cannot be told from a notification queued until the input",
            secs(delivery.t_ms),
            secs(input.t_ms),
            stall_words(stall).unwrap_or_default()
        ),
    )
}

/// Records that W was finalized while K ran (and what the stop's payload listed); returns that
/// listing for the explanation.
fn note_finalized(v: &mut Wording, scene: &Scene, stop: &Event) -> Option<String> {
    let (w, k) = (scene.f.waiter, scene.f.work);
    v.facts.push(format!(
        "`{w}` was finalized at {} while `{k}` was still running",
        secs(stop.t_ms)
    ));
    let listing = stop_listing(scene, stop);
    if let Some(l) = &listing {
        v.facts
            .push(format!("{} fired: {l}", finalized_what(w, stop)));
    }
    listing
}

/// What the hook event that finalized W listed about K.
fn stop_listing(scene: &Scene, stop: &Event) -> Option<String> {
    scene.tl.iter().find_map(|e| match &e.kind {
        EventKind::Hook {
            hook,
            background_tasks: Some(tasks),
            ..
        } if e.t_ms == stop.t_ms && e.agent == stop.agent && *hook == HookName::SubagentStop => {
            tasks
                .iter()
                .find(|t| scene.f.task_ids.contains(&t.id))
                .map(|t| {
                    format!(
                        "its background_tasks listed `{}` ({}) as {}",
                        scene.f.work, t.task_type, t.status
                    )
                })
        }
        _ => None,
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

/// How the run ended, as a witness line.
fn run_end_what(e: &Event) -> String {
    match &e.kind {
        EventKind::CliExited { exit } => format!("the CLI exits ({})", exit.describe()),
        EventKind::CeilingHit { ceiling_s } => format!("the {ceiling_s:.0} s ceiling ends the run"),
        EventKind::Interrupted { signal } => match signal {
            Some(s) => format!("the run is interrupted ({s})"),
            None => "the run is interrupted".into(),
        },
        EventKind::HarnessFailed { what } => format!("the harness fails: {what}"),
        EventKind::WorkOverdue { work, bound_s } => {
            format!("`{work}` passes its {bound_s:.1} s hang bound; the harness ends the run")
        }
        EventKind::ToolUnavailable { .. } => {
            format!("{}; the harness ends the run", cut_what(e))
        }
        _ => "the run ends".into(),
    }
}

/// What cut a run short, in a few words.
fn cut_what(e: &Event) -> String {
    match &e.kind {
        EventKind::CeilingHit { ceiling_s } => format!("its {ceiling_s:.0} s ceiling"),
        EventKind::Interrupted { signal: Some(s) } => format!("{s} to the harness"),
        EventKind::Interrupted { signal: None } => "an interruption".into(),
        EventKind::HarnessFailed { what } => format!("the harness failed: {what}"),
        EventKind::WorkOverdue { work, .. } => {
            format!("`{work}` not seen to end within its hang bound")
        }
        EventKind::ToolUnavailable { tool, cli } => format!(
            "{} offers no {tool} tool, which the script calls",
            cli.as_deref().unwrap_or("this CLI")
        ),
        EventKind::CliExited { exit } => {
            format!("a signal, as the CLI exited ({})", exit.describe())
        }
        _ => "the harness ended it".into(),
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
