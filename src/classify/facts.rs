//! What the timeline says about one waiter and its work, gathered once for the rules: when the
//! work started and ended and how, when the run stopped being the CLI's own, and the few
//! moments the rules compare (the waiter's turn end, its finalization, the delivery).
//!
//! The timeline they read is [`Timeline::observed`]: a run the harness cut short is judged
//! only up to the cut.

use std::collections::HashSet;

use crate::evidence::run::EndReason;
use crate::evidence::{
    Event, EventKind, ExitDesc, HookName, InputReason, Route, TaskStatus, Timeline,
};
use crate::scenario::{MAIN_AGENT, Watch};

/// How background work ended.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkEnd {
    Completed,
    Failed(String),
    Killed(String),
    /// Killed by the harness on purpose (a `kill-task` fault): neither the work's failure
    /// nor the CLI's doing.
    KilledByFault(String),
}

/// What the timeline says about one pair.
pub struct Facts<'a> {
    pub waiter: &'a str,
    pub work: &'a str,
    pub task_ids: HashSet<String>,
    pub started: Option<&'a Event>,
    pub end: Option<(&'a Event, WorkEnd)>,
    /// Nothing reported the work's end but a request carrying its notification: it ended by
    /// then, at a moment not seen (no latency is measured from it).
    pub end_from_notice: bool,
    /// When the run stopped being the CLI's own (exit, ceiling, interrupt, ...).
    pub run_end: Option<&'a Event>,
    /// The harness's cut, when it ended the run before the plan was done.
    pub cut: Option<&'a Event>,
    /// This pair's work passed its declared hang bound.
    pub overdue: Option<&'a Event>,
    /// The harness's hang timer for this pair's work, fired late: the work had ended before
    /// its bound by the recorded stamps. The harness, not the work, ended the run there.
    pub late_timer: Option<&'a Event>,
    /// The first stall of the harness (stopped or starved) in the run.
    pub stall: Option<&'a Event>,
    /// The harness crashed the CLI and started it again while the work ran (the restart).
    pub restart: Option<&'a Event>,
    /// The restarted CLI reported the work `stopped` while it still ran: (the restart, that
    /// notice). Its notice is not the notice of the work's end.
    pub stale_stop: Option<(&'a Event, &'a Event)>,
    pub last_t: f64,
}

pub fn gather<'a>(timeline: &'a Timeline, watch: &'a Watch, end: EndReason) -> Facts<'a> {
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
    let run_end = timeline
        .iter()
        .find(|e| e.kind.ends_the_run() || matches!(e.kind, EventKind::CliExited { .. }));
    let cut = timeline.iter().find(|e| match &e.kind {
        // Work past its own hang bound is the child's failure, not a cut.
        EventKind::WorkOverdue { work: w, .. } => w != work,
        kind => kind.ends_the_run(),
    });
    let cut = cut.or_else(|| {
        // A late signal leaves no cut event before the CLI's exit, but the run is cut all
        // the same.
        end.cut_short().then_some(run_end).flatten()
    });
    let cutoff = run_end.map(|e| e.t_ms).unwrap_or(f64::INFINITY);
    let overdue = timeline
        .iter()
        .find(|e| matches!(&e.kind, EventKind::WorkOverdue { work: w, .. } if w == work));
    // Nothing before the work's first trace is about it; nothing after the run's end is the
    // CLI's doing (a request carrying its notice aside).
    let since = started.map_or(f64::INFINITY, |e| e.t_ms);
    let reported = work_end(timeline, work, &task_ids, (since, cutoff))
        .or_else(|| end_told_otherwise(timeline, work, &task_ids, started, (since, cutoff)));
    let end_from_notice = reported.is_none();
    let end = reported
        .or_else(|| notice_of_end(timeline, &task_ids, since))
        .map(|(e, how)| (e, harness_kill(timeline, work, e, how)));
    let end_from_notice = end_from_notice && end.is_some();
    let end_t = end.as_ref().map(|(e, _)| e.t_ms).unwrap_or(f64::INFINITY);
    // A hang bound is judged on the run's own clock, not on the harness's timer: work that
    // ended before its bound did not hang, however late the timer fired (a paused or starved
    // harness). Its overdue mark is then the harness cutting the run, nothing more.
    // A hang is judged while the run was the CLI's own, too.
    let late_timer = overdue.filter(|o| o.t_ms > cutoff || !passed_its_bound(o, started, end_t));
    // Work that ended before its hang mark: the mark ended the run after the work, a cut like
    // any other (the rules that judge ended work read no hang).
    let ended_before_mark = overdue.filter(|o| end_t < o.t_ms);
    let (overdue, cut) = match late_timer.or(ended_before_mark) {
        Some(mark) => (None, cut.or(Some(mark))),
        None => (overdue, cut),
    };
    Facts {
        waiter: &watch.waiter,
        work,
        restart: restarted_while_running(timeline, started, end_t),
        stale_stop: stale_stop(timeline, &task_ids, end_t),
        end,
        task_ids,
        started,
        run_end,
        cut,
        overdue,
        late_timer,
        end_from_notice,
        stall: timeline
            .iter()
            .find(|e| matches!(e.kind, EventKind::HarnessStalled { .. })),
        last_t: timeline.events.last().map(|e| e.t_ms).unwrap_or(0.0),
    }
}

/// Whether the work was still running when its declared hang bound passed, by the recorded
/// stamps: its start (the first event of it) plus the bound, against its end, and the mark
/// made once the bound had passed.
fn passed_its_bound(overdue: &Event, started: Option<&Event>, end_t: f64) -> bool {
    let (EventKind::WorkOverdue { bound_s, .. }, Some(started)) = (&overdue.kind, started) else {
        return true;
    };
    let due = started.t_ms + bound_s * 1000.0;
    end_t > due && overdue.t_ms >= due
}

/// The end of work whose CLI printed no status update for it (older versions print no
/// `task_updated`): the CLI's own notice of a terminal status on stdout, or for an agent its
/// own finalization (a SubagentStop it did not continue after), whichever came first. Used
/// only where neither a process's end nor a status update reported it.
fn end_told_otherwise<'a>(
    timeline: &'a Timeline,
    work: &str,
    task_ids: &HashSet<String>,
    started: Option<&Event>,
    (since, cutoff): (f64, f64),
) -> Option<(&'a Event, WorkEnd)> {
    let in_run = |e: &&Event| e.t_ms >= since && e.t_ms <= cutoff;
    let restarted = timeline
        .iter()
        .any(|e| matches!(e.kind, EventKind::CliRestarted { .. }));
    let notice = timeline.iter().filter(in_run).find_map(|e| match &e.kind {
        EventKind::TaskNotified {
            task_id, status, ..
        } if task_ids.contains(task_id)
            && TaskStatus::parse(status).is_terminal()
            && !(restarted && status == STOPPED) =>
        {
            Some((e, end_of_status(status)))
        }
        _ => None,
    });
    let is_agent = is_agent(started, work);
    let finalized = timeline
        .iter()
        .filter(in_run)
        .filter(|e| {
            is_agent
                && e.agent.as_deref() == Some(work)
                && matches!(e.kind, EventKind::AgentFinalized { .. })
        })
        .find(|stop| !continued_after(timeline, work, stop))
        .map(|stop| (stop, WorkEnd::Completed));
    let reported = match (notice, finalized) {
        (Some(n), Some(f)) if f.0.t_ms < n.0.t_ms => Some(f),
        (notice, finalized) => notice.or(finalized),
    };
    reported.or_else(|| {
        let last = last_turn_end(timeline, work).filter(|e| in_run(e))?;
        is_agent.then_some((last, WorkEnd::Completed))
    })
}

/// Whether the work is an agent, by its first trace (a spawning call, an agent's task): only
/// an agent ends with its own final answer.
pub fn is_agent(started: Option<&Event>, work: &str) -> bool {
    started.is_some_and(|e| match &e.kind {
        EventKind::ToolCall { spawn, .. } => spawn.as_deref() == Some(work),
        EventKind::TaskStarted { task_type, .. } => task_type == "local_agent",
        _ => false,
    })
}

/// An agent's last turn end, when nothing of it followed (no request of its own after): its
/// script's final answer, as the fake API served it. The one end of a background agent every
/// version shows, whatever it prints (2.1.0 prints no task line and names no subagent in its
/// hooks).
pub fn last_turn_end<'a>(timeline: &'a Timeline, agent: &str) -> Option<&'a Event> {
    let last = timeline.iter().filter(|e| e.is_request_by(agent)).last()?;
    timeline.iter().find(|e| {
        e.t_ms >= last.t_ms
            && e.agent.as_deref() == Some(agent)
            && matches!(e.kind, EventKind::TurnEnded { .. })
    })
}

/// The first request (of any agent) carrying a notification of the work's end, as the end
/// where nothing else reported it: whoever was told, the work had ended by then. A restarted
/// CLI's `stopped` is no such notice, nor is a Monitor's event. Unlike a process's end, a
/// request is never the harness's cleanup: it counts even after the CLI's exit.
fn notice_of_end<'a>(
    timeline: &'a Timeline,
    task_ids: &HashSet<String>,
    since: f64,
) -> Option<(&'a Event, WorkEnd)> {
    let restarted = timeline
        .iter()
        .any(|e| matches!(e.kind, EventKind::CliRestarted { .. }));
    timeline
        .iter()
        .filter(|e| e.t_ms >= since)
        .find_map(|e| match &e.kind {
            EventKind::ModelRequest {
                notifications,
                answer_lost: false,
                ..
            } => notifications.iter().find_map(|n| {
                let status = n.status.as_deref().unwrap_or("completed");
                let ours = n.event.is_none() && task_ids.contains(&n.task_id);
                let stale = restarted && status == STOPPED;
                (ours && !stale).then(|| (e, end_of_status(status)))
            }),
            _ => None,
        })
}

/// How a terminal status says the work ended (a status this harness does not know: it ended,
/// since a notice was sent).
fn end_of_status(status: &str) -> WorkEnd {
    match TaskStatus::parse(status) {
        TaskStatus::Failed => WorkEnd::Failed(format!("status {status}")),
        TaskStatus::Killed => WorkEnd::Killed(format!("status {status}")),
        TaskStatus::Completed | TaskStatus::Live => WorkEnd::Completed,
    }
}

/// Whether agent `w` went on after `stop` without being started again: a request of its own
/// before its next SubagentStart (a hook blocked the stop).
fn continued_after(timeline: &Timeline, w: &str, stop: &Event) -> bool {
    timeline
        .iter()
        .filter(|e| e.t_ms > stop.t_ms && e.agent.as_deref() == Some(w))
        .find(|e| e.is_request_by(w) || is_hook(e, HookName::SubagentStart))
        .is_some_and(|e| e.is_request_by(w))
}

/// The first restart of the CLI (a crash fault's) after the work started and before it ended.
fn restarted_while_running<'a>(
    timeline: &'a Timeline,
    started: Option<&Event>,
    end_t: f64,
) -> Option<&'a Event> {
    let start_t = started?.t_ms;
    timeline.iter().find(|e| {
        e.t_ms > start_t
            && e.t_ms < end_t
            && matches!(e.kind, EventKind::CliRestarted { pid: Some(_), .. })
    })
}

/// The first `stopped` notice for the work that a restarted CLI printed before the work
/// ended (at `end_t`), with the restart before it. 2.1.332 reports every shell the previous
/// process left running this way, and never its real end.
fn stale_stop<'a>(
    timeline: &'a Timeline,
    task_ids: &HashSet<String>,
    end_t: f64,
) -> Option<(&'a Event, &'a Event)> {
    timeline
        .iter()
        .filter(|e| {
            e.t_ms < end_t && matches!(e.kind, EventKind::CliRestarted { pid: Some(_), .. })
        })
        .find_map(|restart| {
            let notice = timeline.iter().find(|e| {
                e.t_ms >= restart.t_ms
                    && e.t_ms < end_t
                    && matches!(&e.kind, EventKind::TaskNotified { task_id, status, .. }
                        if task_ids.contains(task_id) && status == STOPPED)
            })?;
            Some((restart, notice))
        })
}

/// The harness's crash of the CLI last sent at or before `t`.
pub fn crash_before(timeline: &Timeline, t: f64) -> Option<&Event> {
    timeline
        .iter()
        .filter(|e| e.t_ms <= t && matches!(e.kind, EventKind::CliCrashed { .. }))
        .last()
}

/// The status of a task stopped before its end.
const STOPPED: &str = "stopped";

/// Whether a notification for the work tells its end: not the stale `stopped` of a
/// restarted CLI (see [`Facts::stale_stop`]).
fn tells_the_end(f: &Facts, status: Option<&str>) -> bool {
    f.stale_stop.is_none() || status != Some(STOPPED)
}

/// How and when the work ended, up to `cutoff`: the tracker's own report is the most precise
/// for a command, the CLI's status update for an agent; a command's end is when its process
/// ended, and the CLI's update says who killed it.
fn work_end<'a>(
    timeline: &'a Timeline,
    work: &str,
    task_ids: &HashSet<String>,
    (since, cutoff): (f64, f64),
) -> Option<(&'a Event, WorkEnd)> {
    let mut cli_end = None;
    let mut tracker_end = None;
    let vanished = format!("wp-track {work}");
    for e in timeline
        .iter()
        .filter(|e| e.t_ms >= since && e.t_ms <= cutoff)
    {
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
            } if *c == vanished => Some(WorkEnd::Killed("vanished".into())),
            EventKind::TaskUpdated {
                task_id, status, ..
            } if task_ids.contains(task_id) => match TaskStatus::parse(status) {
                TaskStatus::Completed => Some(WorkEnd::Completed),
                TaskStatus::Failed => Some(WorkEnd::Failed(format!("status {status}"))),
                TaskStatus::Killed => Some(WorkEnd::Killed(format!("status {status}"))),
                TaskStatus::Live => None,
            },
            _ => None,
        };
        if let Some(how) = found {
            if matches!(
                e.kind,
                EventKind::TrackEnded { .. } | EventKind::ProcessExited { .. }
            ) {
                tracker_end.get_or_insert((e, how));
            } else if cli_end.is_none() {
                cli_end = Some((e, how));
            }
        }
    }
    match (tracker_end, cli_end) {
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
    }
}

/// A kill the harness sent is the harness's: an end that follows it, failed or killed by
/// whatever account (a process that traps the signal and exits non-zero, the CLI's status),
/// is never the work's failure or the CLI's.
fn harness_kill(timeline: &Timeline, work: &str, end: &Event, how: WorkEnd) -> WorkEnd {
    let killed = || {
        timeline.iter().any(|f| {
            f.t_ms <= end.t_ms
                && matches!(&f.kind, EventKind::WorkSignalled { work: w, fault, pids, .. }
                    if w == work && *fault == crate::scenario::FaultKind::KillTask && !pids.is_empty())
        })
    };
    match how {
        WorkEnd::Killed(why) | WorkEnd::Failed(why) if killed() => WorkEnd::KilledByFault(why),
        how => how,
    }
}

fn is_hook(e: &Event, name: HookName) -> bool {
    matches!(&e.kind, EventKind::Hook { hook, .. } if *hook == name)
}

/// When W was finalized before `t` and stayed so: its last SubagentStop before `t` with no
/// activation after it (the main agent: the session's end).
pub fn finalized_before<'a>(timeline: &'a Timeline, waiter: &str, t: f64) -> Option<&'a Event> {
    if waiter == MAIN_AGENT {
        return timeline.iter().find(|e| {
            e.t_ms <= t
                && (matches!(e.kind, EventKind::CliExited { .. })
                    || is_hook(e, HookName::SessionEnd))
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
            && (e.is_request_by(waiter)
                || (e.agent.as_deref() == Some(waiter) && is_hook(e, HookName::SubagentStart)))
    });
    (!reactivated).then_some(stop)
}

/// W's requests at or after `from` that carry a notification of the work's end, each with
/// whether an injected fault broke its answer.
fn notice_requests<'a>(
    tl: &'a Timeline,
    f: &'a Facts,
    from: f64,
) -> impl Iterator<Item = (&'a Event, bool)> + 'a {
    tl.iter().filter_map(move |e| match &e.kind {
        // A Monitor's event is news from running work, not the notice of its end.
        EventKind::ModelRequest {
            notifications,
            answer_lost,
            ..
        } if e.t_ms >= from
            && e.is_request_by(f.waiter)
            && notifications.iter().any(|n| {
                n.event.is_none()
                    && f.task_ids.contains(&n.task_id)
                    && tells_the_end(f, n.status.as_deref())
            }) =>
        {
            Some((e, *answer_lost))
        }
        _ => None,
    })
}

/// W's request at or after `from` that carries a notification for the work, and whose answer
/// reached W (an attempt an injected fault broke delivered nothing: its retry is the delivery).
pub fn delivery<'a>(tl: &'a Timeline, f: &'a Facts, from: f64) -> Option<&'a Event> {
    notice_requests(tl, f, from).find_map(|(e, lost)| (!lost).then_some(e))
}

/// W's requests at or after `from` that carried the work's notification but whose answers an
/// injected fault broke.
pub fn lost_deliveries<'a>(tl: &'a Timeline, f: &'a Facts, from: f64) -> Vec<&'a Event> {
    notice_requests(tl, f, from)
        .filter_map(|(e, lost)| lost.then_some(e))
        .collect()
}

/// The CLI's stdout notice for the work at or after `from` (not a delivery).
pub fn printed<'a>(tl: &'a Timeline, f: &Facts, from: f64) -> Option<&'a Event> {
    tl.iter().find(|e| {
        e.t_ms >= from
            && matches!(&e.kind, EventKind::TaskNotified { task_id, status, .. }
                if f.task_ids.contains(task_id) && tells_the_end(f, Some(status)))
    })
}

/// The unrelated input (a scheduled input or a probe) the notification waited for (H3), if any.
///
/// Inputs go to one agent (the main agent). When that agent is W, the request that told W must
/// carry the input: nothing then shows W would have been told without it. A request carries an
/// input when one of its user text blocks is the input's words (whitespace collapsed); a
/// notice that came in a request of its own, before or after the input's, is the CLI's own
/// turn. Another agent never sees the input: its notice waited for it when W stayed silent
/// from the work's end until the CLI took an input sent after that end (a request carrying
/// its words), and W was told only after.
pub fn queueing_input<'a>(
    tl: &'a Timeline,
    w: &str,
    end_t: f64,
    delivery: &Event,
) -> Option<&'a Event> {
    let inputs = || {
        tl.iter().filter(|e| {
            matches!(
                e.kind,
                EventKind::UserInput {
                    why: InputReason::Scheduled | InputReason::Probe,
                    ..
                }
            )
        })
    };
    let to_w = |e: &&Event| e.agent.as_deref() == Some(w);
    if let Some(carried) = last_before(
        inputs().filter(to_w).filter(|e| carries(delivery, e)),
        delivery,
    ) {
        return Some(carried);
    }
    inputs().filter(|e| !to_w(e)).find(|input| {
        let taken = tl
            .iter()
            .find(|r| r.agent == input.agent && carries(r, input));
        input.t_ms >= end_t
            && taken.is_some_and(|r| r.t_ms <= delivery.t_ms)
            && !tl
                .iter()
                .any(|r| r.t_ms > end_t && r.t_ms < input.t_ms && r.is_request_by(w))
    })
}

/// Whether `request` carries `input`'s words.
fn carries(request: &Event, input: &Event) -> bool {
    let (EventKind::ModelRequest { user_text, .. }, EventKind::UserInput { text, .. }) =
        (&request.kind, &input.kind)
    else {
        return false;
    };
    let words = user_words(text);
    !words.is_empty() && user_text.contains(&words)
}

/// Of the same words sent more than once: the last sent before `delivery`, else the first
/// after (a stamp can trail the write under load).
fn last_before<'a>(
    mut inputs: impl Iterator<Item = &'a Event>,
    delivery: &Event,
) -> Option<&'a Event> {
    let first = inputs.next()?;
    let before = std::iter::once(first)
        .chain(inputs)
        .filter(|e| e.t_ms <= delivery.t_ms)
        .last();
    Some(before.unwrap_or(first))
}

/// An unrelated input sent between the work's end (`end_t`) and the delivery that the delivery
/// did not carry: the CLI's own turn beat it.
pub fn input_not_carried<'a>(tl: &'a Timeline, end_t: f64, delivery: &Event) -> Option<&'a Event> {
    tl.iter().find(|e| {
        e.t_ms >= end_t
            && e.t_ms <= delivery.t_ms
            && matches!(
                e.kind,
                EventKind::UserInput {
                    why: InputReason::Scheduled | InputReason::Probe,
                    ..
                }
            )
    })
}

/// An input's words as a request's `user_text` keeps them.
fn user_words(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .join(" ")
        .chars()
        .take(crate::evidence::USER_TEXT_CHARS)
        .collect()
}

/// W's first request past the end of its script before `t`.
pub fn exhausted_before<'a>(tl: &'a Timeline, w: &str, t: f64) -> Option<&'a Event> {
    tl.iter().find(|e| {
        e.t_ms < t
            && e.agent.as_deref() == Some(w)
            && matches!(
                e.kind,
                EventKind::ModelRequest {
                    route: Route::ScriptExhausted,
                    ..
                }
            )
    })
}

/// W's last turn end between `from` and `to`: the moment it started waiting.
pub fn turn_end<'a>(tl: &'a Timeline, w: &str, from: f64, to: f64) -> Option<&'a Event> {
    tl.iter()
        .filter(|e| {
            e.agent.as_deref() == Some(w)
                && matches!(e.kind, EventKind::TurnEnded { .. })
                && e.t_ms >= from
                && e.t_ms <= to
        })
        .last()
}

/// A SubagentStop of `w` between `from` and `to` that `w` continued after (another request
/// with no SubagentStart between): a hook blocked it. Returns the stop and the continuation.
pub fn blocked_stop<'a>(
    tl: &'a Timeline,
    w: &str,
    from: f64,
    to: f64,
) -> Option<(&'a Event, &'a Event)> {
    tl.iter()
        .filter(|e| {
            e.t_ms >= from
                && e.t_ms <= to
                && e.agent.as_deref() == Some(w)
                && matches!(e.kind, EventKind::AgentFinalized { .. })
        })
        .find_map(|stop| {
            let next = tl.iter().find(|e| {
                e.t_ms > stop.t_ms
                    && e.agent.as_deref() == Some(w)
                    && (e.is_request_by(w) || is_hook(e, HookName::SubagentStart))
            })?;
            next.is_request_by(w).then_some((stop, next))
        })
}

pub fn reactivated_between(tl: &Timeline, w: &str, from: f64, to: f64) -> bool {
    tl.iter().any(|e| {
        e.t_ms >= from
            && e.t_ms <= to
            && e.agent.as_deref() == Some(w)
            && is_hook(e, HookName::SubagentStart)
    })
}

/// A stall of the harness that overlaps `from..=to`: what reached the harness in it was
/// stamped late, so an order or a duration across it is not measured.
pub fn stall_between(tl: &Timeline, from: f64, to: f64) -> Option<&Event> {
    tl.iter().find(|e| match &e.kind {
        EventKind::HarnessStalled { until_ms } => e.t_ms <= to && *until_ms >= from,
        _ => false,
    })
}

/// From the work's end to the waiter's request that carried its notice; never negative: a
/// request that carries the notice came after the end, whatever the stdout line's timestamp.
pub fn latency(end: &Event, d: &Event) -> f64 {
    (d.t_ms - end.t_ms).max(0.0)
}
