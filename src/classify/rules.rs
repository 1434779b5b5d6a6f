//! The rules, in the order they are tried: each looks at the facts of one waiter and its work
//! and either decides or passes. A decision names the rule and the events that decide it; the
//! wording is in `explain`. The order is the one written at the top of `classify`.

use super::facts::{self, Facts, WorkEnd};
use super::{Input, Outcome};
use crate::evidence::offers::Evidence;
use crate::evidence::run::EndReason;
use crate::evidence::{Event, EventKind, Source, Timeline};

/// What decided a verdict, with the events that decide it: before the rules (no start, a
/// script that ran out), or a rule for work that did not end, or one for work that did. Each
/// family is its own type, so the wording of each is one exhaustive match.
#[derive(Debug, Clone)]
pub enum Decision<'a> {
    /// No tool call, task or process for the work.
    NeverStarted,
    /// The waiter asked past the end of its script before the work ended.
    ScriptExhausted { exhausted: &'a Event },
    /// The work did not end while the run was the CLI's own.
    Unended(Unended<'a>),
    /// The work ended (at `end.event`, `end.how`), and what followed.
    Ended { end: End<'a>, why: AfterEnd<'a> },
}

/// The work's end, as the facts found it.
#[derive(Debug, Clone, Copy)]
pub struct End<'a> {
    pub event: &'a Event,
    pub how: &'a WorkEnd,
}

/// The decisions on work that did not end while the run was the CLI's own.
#[derive(Debug, Clone)]
pub enum Unended<'a> {
    /// The work outlived the bound its scenario declares (H4, hung).
    Hung { overdue: &'a Event },
    /// The harness cut the run short before the work ended.
    CutBeforeEnd { cut: &'a Event },
    /// The CLI crashed while the work still ran.
    CrashedBeforeEnd,
    /// The work is an agent and the session printed no task lines (an interactive one): its
    /// end could not be seen, so neither could what followed it.
    EndUnseen,
    /// The CLI ended the session with the waiter finalized and the work still running (H2).
    OrphanedAtExit { stop: &'a Event },
    /// The run ended before the work did, for no reason above.
    OutlivedRun { run_end_t: f64 },
}

/// The decisions on work that ended.
#[derive(Debug, Clone)]
pub enum AfterEnd<'a> {
    /// The work failed on its own (H4), and the waiter was told or not.
    FailedOnItsOwn {
        why: String,
        told: Option<&'a Event>,
    },
    /// The notification came only with an unrelated input: the request that carried it carried
    /// the input too (H3).
    Queued {
        input: &'a Event,
        delivery: &'a Event,
    },
    /// The waiter got the notification.
    Woke { delivery: &'a Event, how: Woken<'a> },
    /// The notification reached the waiter after an input to another agent by the stamps, but
    /// the harness stalled in between: which came first is not measured.
    OrderBlurred {
        input: &'a Event,
        delivery: &'a Event,
        stall: &'a Event,
    },
    /// The waiter's requests carried the notification, but injected faults broke every
    /// answer: the harness, not the CLI, kept it from the waiter.
    AnswersLost { first: &'a Event, attempts: usize },
    /// The harness cut the run short after the work ended and before the waiter was told.
    CutBeforeTold { cut: &'a Event },
    /// The CLI killed the work after finalizing the waiter (H2: the kill is a consequence).
    KilledAfterFinalized { stop: &'a Event, why: String },
    /// The waiter was finalized before the work ended and never asked again (H2).
    FinalizedBeforeEnd { stop: &'a Event },
    /// The CLI crashed after the work ended, before the waiter was told.
    CrashedBeforeTold,
    /// The CLI killed the work and ended the session (H2).
    KilledWithSession { exit: &'a Event, why: String },
    /// Too little of the run followed the work's end to decide.
    TooShort { observed_ms: f64 },
    /// The CLI printed a notification but never delivered it (H2).
    PrintedNotDelivered {
        printed: &'a Event,
        observed_ms: f64,
    },
    /// Nothing anywhere (H1).
    NeverFired { observed_ms: f64 },
    /// Nothing anywhere, but this version prints nothing that would show a notification fire:
    /// H1 cannot be told from H2 or H3.
    FiringUnseen { observed_ms: f64, why: String },
    /// The waiter made requests after the work ended, but this version's notices in a request
    /// are not in a form the harness reads: whether one carried it is not known.
    NoticeUnreadable { request: &'a Event, why: String },
    /// The harness crashed the CLI while the work ran and started it again; the work's real
    /// end was never reported (H1). The restarted CLI may have called it stopped (`stale`).
    LostInRestart {
        restart: &'a Event,
        stale: Option<&'a Event>,
        observed_ms: f64,
    },
}

impl Decision<'_> {
    /// The outcome this decision gives: the one place a rule's decision becomes a verdict.
    pub fn outcome(&self) -> Outcome {
        match self {
            Decision::NeverStarted | Decision::ScriptExhausted { .. } => Outcome::Unknown,
            Decision::Unended(u) => u.outcome(),
            Decision::Ended { why, .. } => why.outcome(),
        }
    }

    /// From the work's end to the request that told the waiter, where one did and the harness
    /// ran throughout (a stall in between stamps the request late: not measured).
    pub fn latency_ms(&self, tl: &Timeline, f: &Facts) -> Option<f64> {
        let Decision::Ended { why, .. } = self else {
            return None;
        };
        let told = match why {
            AfterEnd::Woke { delivery, .. } | AfterEnd::Queued { delivery, .. } => *delivery,
            AfterEnd::FailedOnItsOwn { told, .. } => (*told)?,
            _ => return None,
        };
        let (end, _) = f.end.as_ref()?;
        if f.end_from_notice || facts::stall_between(tl, end.t_ms, told.t_ms).is_some() {
            return None;
        }
        Some(facts::latency(end, told))
    }
}

impl Unended<'_> {
    fn outcome(&self) -> Outcome {
        match self {
            Unended::Hung { .. } => Outcome::ChildFailed,
            Unended::OrphanedAtExit { .. } => Outcome::NotResumable,
            Unended::CutBeforeEnd { .. }
            | Unended::CrashedBeforeEnd
            | Unended::EndUnseen
            | Unended::OutlivedRun { .. } => Outcome::Unknown,
        }
    }
}

impl AfterEnd<'_> {
    fn outcome(&self) -> Outcome {
        match self {
            AfterEnd::FailedOnItsOwn { .. } => Outcome::ChildFailed,
            AfterEnd::KilledAfterFinalized { .. }
            | AfterEnd::FinalizedBeforeEnd { .. }
            | AfterEnd::KilledWithSession { .. }
            | AfterEnd::PrintedNotDelivered { .. } => Outcome::NotResumable,
            AfterEnd::Queued { .. } => Outcome::QueuedUntilInput,
            AfterEnd::Woke { .. } => Outcome::Woke,
            AfterEnd::NeverFired { .. } | AfterEnd::LostInRestart { .. } => Outcome::NeverFired,
            AfterEnd::AnswersLost { .. }
            | AfterEnd::CutBeforeTold { .. }
            | AfterEnd::CrashedBeforeTold
            | AfterEnd::OrderBlurred { .. }
            | AfterEnd::FiringUnseen { .. }
            | AfterEnd::NoticeUnreadable { .. }
            | AfterEnd::TooShort { .. } => Outcome::Unknown,
        }
    }
}

/// How a woken waiter was woken.
#[derive(Debug, Clone)]
pub enum Woken<'a> {
    /// It was live and its next request carried the notification.
    Live,
    /// It had been finalized and was started again.
    Reinvoked,
    /// A hook blocked its stop; it kept working (the stop and the continuation).
    AfterBlockedStop { stop: &'a Event, next: &'a Event },
}

/// Everything a rule reads.
pub struct Ctx<'a> {
    pub input: &'a Input<'a>,
    pub tl: &'a Timeline,
    pub f: &'a Facts<'a>,
    pub started: &'a Event,
    /// The CLI exited with a failure on its own (not at the harness's hand).
    pub crashed: bool,
}

type UnendedRule = for<'a> fn(&Ctx<'a>) -> Option<Unended<'a>>;
type EndedRule = for<'a> fn(&Ctx<'a>, End<'a>) -> Option<AfterEnd<'a>>;

/// Rules for work that did not end while the run was the CLI's own; [`outlived_run`] decides
/// when none of them does.
const UNENDED: &[UnendedRule] = &[
    hung,
    cut_before_end,
    crashed_before_end,
    end_unseen,
    orphaned_at_exit,
];

/// Rules for work that ended, given how; [`never_fired`] decides when none of them does.
const ENDED: &[EndedRule] = &[
    failed_on_its_own,
    told,
    answers_lost,
    cut_before_told,
    notice_unreadable,
    lost_in_restart,
    killed_after_finalized,
    finalized_before_end,
    crashed_before_told,
    killed_with_session,
    too_short,
    printed_not_delivered,
];

pub fn decide<'a>(ctx: &Ctx<'a>) -> Decision<'a> {
    if let Some(d) = script_exhausted(ctx) {
        return d;
    }
    match &ctx.f.end {
        Some((event, how)) => {
            let end = End { event, how };
            let why = ENDED
                .iter()
                .find_map(|rule| rule(ctx, end))
                .unwrap_or_else(|| never_fired(ctx, end));
            Decision::Ended { end, why }
        }
        None => Decision::Unended(
            UNENDED
                .iter()
                .find_map(|rule| rule(ctx))
                .unwrap_or_else(|| outlived_run(ctx)),
        ),
    }
}

/// The time the decision is about: the work's end, else the last event.
pub fn decision_t(f: &Facts) -> f64 {
    f.end.as_ref().map(|(e, _)| e.t_ms).unwrap_or(f.last_t)
}

fn script_exhausted<'a>(ctx: &Ctx<'a>) -> Option<Decision<'a>> {
    let exhausted = facts::exhausted_before(ctx.tl, ctx.f.waiter, decision_t(ctx.f))?;
    Some(Decision::ScriptExhausted { exhausted })
}

fn run_end_t(ctx: &Ctx) -> f64 {
    ctx.f.run_end.map(|e| e.t_ms).unwrap_or(ctx.f.last_t)
}

fn hung<'a>(ctx: &Ctx<'a>) -> Option<Unended<'a>> {
    ctx.f.overdue.map(|overdue| Unended::Hung { overdue })
}

fn cut_before_end<'a>(ctx: &Ctx<'a>) -> Option<Unended<'a>> {
    ctx.f.cut.map(|cut| Unended::CutBeforeEnd { cut })
}

fn crashed_before_end<'a>(ctx: &Ctx<'a>) -> Option<Unended<'a>> {
    ctx.crashed.then_some(Unended::CrashedBeforeEnd)
}

/// An agent's end is only ever seen in the task lines of a printing session; an interactive
/// session prints none, and its tracker is none of ours.
fn end_unseen<'a>(ctx: &Ctx<'a>) -> Option<Unended<'a>> {
    let agent = matches!(
        &ctx.started.kind,
        EventKind::ToolCall { spawn: Some(_), .. }
    );
    let printed = ctx
        .tl
        .iter()
        .any(|e| matches!(e.source, Source::Stream | Source::Sdk));
    (agent && !printed).then_some(Unended::EndUnseen)
}

fn orphaned_at_exit<'a>(ctx: &Ctx<'a>) -> Option<Unended<'a>> {
    let stop = facts::finalized_before(ctx.tl, ctx.f.waiter, run_end_t(ctx))?;
    Some(Unended::OrphanedAtExit { stop })
}

fn outlived_run<'a>(ctx: &Ctx<'a>) -> Unended<'a> {
    Unended::OutlivedRun {
        run_end_t: run_end_t(ctx),
    }
}

fn failed_on_its_own<'a>(ctx: &Ctx<'a>, at: End<'a>) -> Option<AfterEnd<'a>> {
    let End { event: end, how } = at;
    let WorkEnd::Failed(why) = how else {
        return None;
    };
    Some(AfterEnd::FailedOnItsOwn {
        why: why.clone(),
        told: facts::delivery(ctx.tl, ctx.f, told_from(ctx, end)),
    })
}

/// Where to look for the waiter being told: from the work's start, not its end. A request that
/// carries the work's notice proves the work had ended, and it can reach the fake API a few
/// milliseconds before the stdout line that reports the end (two channels, read apart).
fn told_from(ctx: &Ctx, end: &Event) -> f64 {
    ctx.started.t_ms.min(end.t_ms)
}

/// Runs after `told`: no request brought the notification with an answer, but some did
/// without one (every answer broken by an injected fault).
fn answers_lost<'a>(ctx: &Ctx<'a>, at: End<'a>) -> Option<AfterEnd<'a>> {
    let end = at.event;
    let lost = facts::lost_deliveries(ctx.tl, ctx.f, told_from(ctx, end));
    let first = *lost.first()?;
    Some(AfterEnd::AnswersLost {
        first,
        attempts: lost.len(),
    })
}

fn told<'a>(ctx: &Ctx<'a>, at: End<'a>) -> Option<AfterEnd<'a>> {
    let end = at.event;
    let delivery = facts::delivery(ctx.tl, ctx.f, told_from(ctx, end))?;
    let w = ctx.f.waiter;
    if let Some(input) = facts::queueing_input(ctx.tl, w, end.t_ms, delivery) {
        // An input to another agent is judged by the order of stamps, which a stall blurs; a
        // request that carried the input's words carried it whatever the stamps say.
        let by_order = input.agent.as_deref() != Some(w);
        if let Some(stall) = facts::stall_between(ctx.tl, end.t_ms, delivery.t_ms)
            && by_order
        {
            return Some(AfterEnd::OrderBlurred {
                input,
                delivery,
                stall,
            });
        }
        return Some(AfterEnd::Queued { input, delivery });
    }
    let finalized = facts::finalized_before(ctx.tl, w, end.t_ms);
    let how =
        if finalized.is_some() || facts::reactivated_between(ctx.tl, w, end.t_ms, delivery.t_ms) {
            Woken::Reinvoked
        } else if let Some((stop, next)) =
            facts::blocked_stop(ctx.tl, w, ctx.started.t_ms, delivery.t_ms)
        {
            Woken::AfterBlockedStop { stop, next }
        } else {
            Woken::Live
        };
    Some(AfterEnd::Woke { delivery, how })
}

/// Every rule after this one decides on something that did not happen (no request, no
/// notice): that needs the rest of the run, which a cut run does not have.
fn cut_before_told<'a>(ctx: &Ctx<'a>, _: End<'a>) -> Option<AfterEnd<'a>> {
    ctx.f.cut.map(|cut| AfterEnd::CutBeforeTold { cut })
}

fn killed_after_finalized<'a>(ctx: &Ctx<'a>, at: End<'a>) -> Option<AfterEnd<'a>> {
    let End { event: end, how } = at;
    let WorkEnd::Killed(why) = how else {
        return None;
    };
    let stop = facts::finalized_before(ctx.tl, ctx.f.waiter, end.t_ms)?;
    Some(AfterEnd::KilledAfterFinalized {
        stop,
        why: why.clone(),
    })
}

fn finalized_before_end<'a>(ctx: &Ctx<'a>, at: End<'a>) -> Option<AfterEnd<'a>> {
    let end = at.event;
    let stop = facts::finalized_before(ctx.tl, ctx.f.waiter, end.t_ms)?;
    Some(AfterEnd::FinalizedBeforeEnd { stop })
}

fn crashed_before_told<'a>(ctx: &Ctx<'a>, at: End<'a>) -> Option<AfterEnd<'a>> {
    let how = at.how;
    (ctx.crashed && !matches!(how, WorkEnd::Killed(_))).then_some(AfterEnd::CrashedBeforeTold)
}

/// The CLI killed the work and ended the session: the kill is the session's end reaching the
/// work, and the waiter ends with the session.
fn killed_with_session<'a>(ctx: &Ctx<'a>, at: End<'a>) -> Option<AfterEnd<'a>> {
    let how = at.how;
    let WorkEnd::Killed(why) = how else {
        return None;
    };
    let exit = ctx
        .f
        .run_end
        .filter(|e| matches!(e.kind, EventKind::CliExited { .. }))?;
    Some(AfterEnd::KilledWithSession {
        exit,
        why: why.clone(),
    })
}

/// How long the run went on after the work ended.
fn observed_after_end(ctx: &Ctx, at: End) -> f64 {
    run_end_t(ctx) - at.event.t_ms
}

fn too_short<'a>(ctx: &Ctx<'a>, at: End<'a>) -> Option<AfterEnd<'a>> {
    let observed_ms = observed_after_end(ctx, at);
    (observed_ms < ctx.input.settle_ms).then_some(AfterEnd::TooShort { observed_ms })
}

/// Before the rules on finalized waiters: when the harness crashed the CLI while the work ran,
/// what the waiter's state was in the killed process no longer decides anything. Like every
/// rule on something not happening, it needs the settle window after the work's end.
fn lost_in_restart<'a>(ctx: &Ctx<'a>, at: End<'a>) -> Option<AfterEnd<'a>> {
    let restart = ctx.f.restart?;
    let observed_ms = observed_after_end(ctx, at);
    if observed_ms < ctx.input.settle_ms {
        return Some(AfterEnd::TooShort { observed_ms });
    }
    Some(AfterEnd::LostInRestart {
        restart,
        stale: ctx.f.stale_stop.map(|(_, notice)| notice),
        observed_ms,
    })
}

fn printed_not_delivered<'a>(ctx: &Ctx<'a>, at: End<'a>) -> Option<AfterEnd<'a>> {
    let end = at.event;
    let printed = facts::printed(ctx.tl, ctx.f, end.t_ms)?;
    Some(AfterEnd::PrintedNotDelivered {
        printed,
        observed_ms: observed_after_end(ctx, at),
    })
}

fn never_fired<'a>(ctx: &Ctx<'a>, at: End<'a>) -> AfterEnd<'a> {
    let observed_ms = observed_after_end(ctx, at);
    let offers = ctx.input.offers;
    if !offers.has(Evidence::NotificationLine) {
        return AfterEnd::FiringUnseen {
            observed_ms,
            why: offers.why_not(Evidence::NotificationLine),
        };
    }
    AfterEnd::NeverFired { observed_ms }
}

/// Every rule after this one reads "no request carried the notice": that needs a version whose
/// notices in a request the harness can read, or a waiter that made no request after the end.
fn notice_unreadable<'a>(ctx: &Ctx<'a>, at: End<'a>) -> Option<AfterEnd<'a>> {
    let offers = ctx.input.offers;
    if offers.has(Evidence::NoticeInRequests) {
        return None;
    }
    let end = at.event;
    let request = ctx
        .tl
        .iter()
        .find(|e| e.t_ms > end.t_ms && e.is_request_by(ctx.f.waiter))?;
    Some(AfterEnd::NoticeUnreadable {
        request,
        why: offers.why_not(Evidence::NoticeInRequests),
    })
}

/// The CLI exited with a failure on its own: not at the end of a run the harness cut short.
pub fn crashed(input: &Input) -> bool {
    *input.end == EndReason::CliEnded && input.cli_exit.is_some_and(|e| !e.success())
}
