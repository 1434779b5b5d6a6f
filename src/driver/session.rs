//! The session loop: from the prompt to the moment the run ends. It records every event as it
//! arrives, sends what the schedule says is due, and ends the run for one of the reasons in
//! [`EndReason`]. It never sleeps to synchronise: it waits on events, with the next deadline
//! (the ceiling, a work's hang bound, an input due, a quiet window) as the only timer.

use std::time::Duration;

use tokio::time::Instant;

use super::fault_triggers::FaultTriggers;
use super::launch::Launched;
use super::process_faults::ProcessFaults;
use super::recorder::Recorder;
use super::schedule::{Due, Schedule};
use super::vanish::VanishWatch;
use super::{Cancel, Interrupt, RunPhase, StatusHandle};
use crate::evidence::run::EndReason;
use crate::evidence::wire::WireMessage;
use crate::evidence::{Event, EventKind, ExitDesc, InputReason, Source};
use crate::scenario::{InputAction, MAIN_AGENT, Plan};

/// How often the progress status is refreshed.
const STATUS_EVERY: Duration = Duration::from_millis(250);

/// A gap this long between two turns of the loop, which wakes at least every [`STATUS_EVERY`],
/// means the harness itself did not run (it was stopped, or starved of CPU).
const STALL_GAP: Duration = Duration::from_secs(1);

/// After a stall, how long the loop reads what reached the harness meanwhile before it judges a
/// hang bound again: the CLI's requests and the trackers' reports queued during the stall come
/// first, so a late timer does not end a run whose work had ended.
const CATCH_UP: Duration = Duration::from_millis(500);

/// Why and how the loop ended.
pub struct Ending {
    pub reason: EndReason,
    /// What ended it, in words, when the harness cut it short.
    pub detail: Option<String>,
    /// Inputs never sent, with the trigger that never happened.
    pub unsent: Vec<String>,
}

/// How the loop ended: the reason, and what ended it in words when the harness cut it short.
type End = (EndReason, Option<String>);

/// Drives the session until it ends; every event lands in `rec`.
pub async fn drive(
    run: &mut Launched,
    plan: &Plan,
    rec: &mut Recorder,
    cancel: &mut Cancel,
    status: &StatusHandle,
) -> Ending {
    rec.push(Event {
        t_ms: run.spawn_t,
        source: Source::Driver,
        agent: None,
        kind: EventKind::CliSpawned {
            pid: run.supervisor_pid,
        },
    });
    if let Some(interrupt) = *cancel.borrow() {
        // Interrupted while the world was being built.
        let (reason, detail) = interrupted(rec, interrupt, "the harness");
        return Ending {
            reason,
            detail,
            unsent: Schedule::new(&plan.driver).unsent(),
        };
    }
    send_prompt(run, plan, rec).await;
    let mut deadlines = Deadlines::new(plan, run);
    let mut vanish = VanishWatch::new();
    let mut stream_open = true;
    let mut cancel_open = true;
    let (reason, detail) = loop {
        let wake = deadlines.next_wake(rec);
        tokio::select! {
            // In this order when several are ready: a model call's event comes before the
            // stdout line that reacts to it (the fake API sends it before the reply's last
            // byte), so the task it starts is linked to its scenario name as it is read.
            biased;
            Some(event) = run.api_rx.recv() => rec.api(event),
            Some(message) = run.wire_rx.recv() => {
                if let Some(end) = on_wire(rec, &mut vanish, run.clock, message) {
                    break end;
                }
            }
            line = run.line_rx.recv(), if stream_open => match line {
                Some((t, line)) => {
                    rec.line(t, line);
                    answer_approval(run, plan, rec).await;
                }
                None => stream_open = false,
            },
            Some(event) = vanish.recv() => rec.push(event),
            Some((t, origin, line)) = run.rt_rx.recv() => rec.runtime_line(t, origin, &line),
            changed = cancel.changed(), if cancel_open => match changed {
                Ok(()) => {
                    if let Some(interrupt) = *cancel.borrow() {
                        break interrupted(rec, interrupt, "the harness");
                    }
                }
                Err(_) => cancel_open = false, // nobody can cancel any more
            },
            exit = run.supervisor.wait(), if !rec.live.supervised_ended() => {
                if let Some(end) = supervisor_exited(run, rec, exit).await {
                    break end;
                }
            }
            _ = &mut run.server => {
                let what = "the fake API stopped serving".to_string();
                rec.driver(EventKind::HarnessFailed { what: what.clone() }, None);
                break (EndReason::HarnessFailed, Some(what));
            }
            _ = tokio::time::sleep_until(wake) => {}
        }
        if let Some(end) = deadlines.end_due(rec, status) {
            break end;
        }
        deadlines.send_due(run, rec).await;
    };
    deadlines.process_faults.release(rec);
    Ending {
        reason,
        detail,
        unsent: deadlines.schedule.unsent(),
    }
}

/// A supervisor's message: recorded, its tracker's process watched; a stop it reports ends
/// the run.
fn on_wire(
    rec: &mut Recorder,
    vanish: &mut VanishWatch,
    clock: crate::evidence::clock::RunClock,
    message: WireMessage,
) -> Option<End> {
    if let Some(interrupt) = stopped_by(&message) {
        rec.wire(message);
        return Some(interrupted(rec, interrupt, "the supervisor"));
    }
    if let WireMessage::TrackStart { pid, name, .. } = &message {
        vanish.watch(*pid, name.clone(), clock);
    }
    rec.wire(message);
    None
}

/// The supervisor exited. What it said before it went (a signal it got, the CLI's exit)
/// decides what its end means, so its last messages are read first.
async fn supervisor_exited(
    run: &mut Launched,
    rec: &mut Recorder,
    exit: std::io::Result<std::process::ExitStatus>,
) -> Option<End> {
    run.socket.flush().await;
    while let Ok(message) = run.wire_rx.try_recv() {
        if let Some(interrupt) = stopped_by(&message) {
            rec.wire(message);
            return Some(interrupted(rec, interrupt, "the supervisor"));
        }
        rec.wire(message);
    }
    (!rec.live.supervised_ended()).then(|| supervisor_gone(rec, exit))
}

/// What wakes the loop besides its channels, and what it sends or ends on when it does: the
/// ceiling, the inputs' schedule, the faults, the works' hang bounds, the harness's own stalls
/// and the progress status.
struct Deadlines<'p> {
    plan: &'p Plan,
    start: Instant,
    ceiling_at: Instant,
    schedule: Schedule<'p>,
    process_faults: ProcessFaults,
    fault_triggers: FaultTriggers,
    last_status: Instant,
    stalls: StallWatch,
}

impl<'p> Deadlines<'p> {
    /// Starts the clocks, as the prompt has just been sent.
    fn new(plan: &'p Plan, run: &Launched) -> Deadlines<'p> {
        let start = Instant::now();
        Deadlines {
            plan,
            start,
            ceiling_at: start + plan.driver.ceiling,
            schedule: Schedule::new(&plan.driver),
            process_faults: ProcessFaults::new(&plan.faults, run.triggers.clone()),
            fault_triggers: FaultTriggers::new(
                &plan.faults,
                run.triggers.clone(),
                plan.driver.settle,
            ),
            last_status: Instant::now() - STATUS_EVERY,
            stalls: StallWatch::new(),
        }
    }

    /// The earliest moment something may be due: the ceiling, the next status refresh, the end
    /// of a catch-up, an input, a hang bound or a fault.
    fn next_wake(&self, rec: &Recorder) -> Instant {
        let now = Instant::now();
        let mut wake = self.ceiling_at.min(now + STATUS_EVERY);
        if let Some(at) = self.stalls.catching_up_until(now) {
            wake = wake.min(at);
        }
        if let Some(at) = self.schedule.next_wake(&rec.live) {
            wake = wake.min(at);
        }
        if let Some((_, at)) = next_hang(self.plan, rec) {
            wake = wake.min(at);
        }
        if let Some(at) = self.process_faults.next_wake(&rec.live, now, rec.now_ms()) {
            wake = wake.min(at);
        }
        if let Some(at) = self.fault_triggers.next_wake(&rec.live) {
            wake = wake.min(at);
        }
        wake
    }

    /// After a turn of the loop: notes a stall, refreshes the status, and ends the run on the
    /// ceiling, a work past its hang bound, a tool the CLI lacks, or the CLI's end.
    fn end_due(&mut self, rec: &mut Recorder, status: &StatusHandle) -> Option<End> {
        let plan = self.plan;
        let now = Instant::now();
        self.stalls.observe(rec, now);
        if self.last_status + STATUS_EVERY <= now {
            self.last_status = now;
            let phase = RunPhase::of(plan.driver.mode, self.schedule.closed(), rec.live.requests);
            report_status(status, rec, self.start, phase);
        }
        if now >= self.ceiling_at {
            let ceiling_s = plan.driver.ceiling.as_secs_f64();
            rec.driver(EventKind::CeilingHit { ceiling_s }, None);
            return Some((
                EndReason::Ceiling,
                Some(format!("the {ceiling_s:.0} s ceiling")),
            ));
        }
        if let Some((work, at)) = next_hang(plan, rec)
            && now >= at
            && self.stalls.catching_up_until(now).is_none()
        {
            return Some(hung(rec, plan, &work));
        }
        if let Some(why) = &rec.live.tool_unavailable {
            return Some((EndReason::ToolUnavailable, Some(why.clone())));
        }
        if rec.live.supervised_ended() {
            let reason = if self.schedule.closed() {
                EndReason::Finished
            } else {
                EndReason::CliEnded
            };
            return Some((reason, None));
        }
        None
    }

    /// Notes the fault triggers that now hold, fires the process faults due, and sends every
    /// input due.
    async fn send_due(&mut self, run: &mut Launched, rec: &mut Recorder) {
        self.fault_triggers
            .observe(&rec.live, Instant::now(), rec.now_ms());
        self.process_faults
            .fire_due(rec, &run.lifeline, Instant::now());
        while let Some(due) = self.schedule.poll(&rec.live, Instant::now()) {
            send(run, rec, due).await;
        }
    }
}

/// The prompt: in the CLI's arguments (print mode), else the first input.
async fn send_prompt(run: &mut Launched, plan: &Plan, rec: &mut Recorder) {
    if plan.driver.mode.prompt_is_input() {
        if let super::input::InputSink::Pty(writer) = &mut run.input {
            writer.wait_ready(Duration::from_secs(20)).await;
        }
        let _ = run.input.send(&run.tagged_prompt).await;
    }
    rec.driver(
        EventKind::UserInput {
            text: plan.driver.prompt.clone(),
            why: InputReason::Prompt,
        },
        Some(MAIN_AGENT),
    );
}

/// An integration that just showed an approval gets its user's answer at once (the scenario's
/// `approve`), recorded as the user's.
async fn answer_approval(run: &mut Launched, plan: &Plan, rec: &mut Recorder) {
    use crate::evidence::integration::Shown;
    let Some(EventKind::Shown(line)) = rec.events.last().map(|e| &e.kind) else {
        return;
    };
    if line.shown != Shown::ApprovalAsked {
        return;
    }
    let tool = line.tool.clone().unwrap_or_default();
    let id = line.id.clone();
    let answer = plan.driver.approve;
    let _ = run.input.approve(&tool, id.as_deref(), answer).await;
    rec.driver(
        EventKind::ApprovalGiven { tool, id, answer },
        Some(MAIN_AGENT),
    );
}

/// Sends one due item and records it.
async fn send(run: &mut Launched, rec: &mut Recorder, due: Due<'_>) {
    match due {
        Due::Input(input) => match &input.action {
            InputAction::Text { text } => {
                if let Some(screen) = &run.screen {
                    screen.snapshot();
                }
                let _ = run.input.send(text).await;
                rec.driver(
                    EventKind::UserInput {
                        text: text.clone(),
                        why: InputReason::Scheduled,
                    },
                    Some(MAIN_AGENT),
                );
            }
            InputAction::Control {
                subtype,
                target,
                message,
            } => {
                let task_id = target
                    .as_ref()
                    .and_then(|t| rec.live.task_ids.get(t))
                    .cloned();
                let sent = rec
                    .events
                    .iter()
                    .filter(|e| matches!(e.kind, EventKind::ControlRequest { .. }))
                    .count();
                let request_id = format!("wakeprobe-{}", sent + 1);
                let _ = run
                    .input
                    .control(
                        &request_id,
                        *subtype,
                        target.as_deref(),
                        task_id.as_deref(),
                        message.as_deref(),
                    )
                    .await;
                let target = match (target, &task_id) {
                    (Some(t), Some(id)) => Some(format!("{t} ({id})")),
                    (Some(t), None) => Some(format!("{t} (no task id known)")),
                    _ => None,
                };
                rec.driver(
                    EventKind::ControlRequest {
                        subtype: subtype.as_str().to_string(),
                        target,
                    },
                    Some(MAIN_AGENT),
                );
            }
        },
        Due::Probe(text) => {
            let _ = run.input.send(text).await;
            rec.driver(
                EventKind::UserInput {
                    text: text.to_string(),
                    why: InputReason::Probe,
                },
                Some(MAIN_AGENT),
            );
        }
        Due::Close => {
            run.input.close().await;
            rec.driver(EventKind::SessionClosed, None);
        }
    }
}

/// The earliest hang bound still pending: (work, when it passes). A bound runs from the work's
/// start as its event is stamped (the run's clock), not from when the harness read it.
fn next_hang(plan: &Plan, rec: &Recorder) -> Option<(String, Instant)> {
    let (now, now_ms) = (Instant::now(), rec.now_ms());
    plan.watch
        .iter()
        .filter_map(|w| {
            let bound = w.hang_after?;
            let started_ms = rec.live.work_started_ms.get(&w.work)?;
            let due_ms = started_ms + bound.as_secs_f64() * 1000.0;
            let at = if due_ms >= now_ms {
                now + Duration::from_secs_f64((due_ms - now_ms) / 1000.0)
            } else {
                now.checked_sub(Duration::from_secs_f64((now_ms - due_ms) / 1000.0))
                    .unwrap_or(now)
            };
            (!rec.live.work_ended(&w.work)).then(|| (w.work.clone(), at))
        })
        .min_by_key(|(_, at)| *at)
}

/// Notices when the harness itself stopped running (a gap between two turns of the loop),
/// records it as [`EventKind::HarnessStalled`], and holds deadline judgements for a moment
/// after it.
struct StallWatch {
    last_turn: Instant,
    catch_up_until: Option<Instant>,
}

impl StallWatch {
    fn new() -> StallWatch {
        StallWatch {
            last_turn: Instant::now(),
            catch_up_until: None,
        }
    }

    /// A turn of the loop at `now`: a stall since the last one is recorded.
    fn observe(&mut self, rec: &mut Recorder, now: Instant) {
        let gap = now.duration_since(self.last_turn);
        self.last_turn = now;
        if gap < STALL_GAP {
            return;
        }
        let until_ms = rec.now_ms();
        rec.push(Event {
            t_ms: until_ms - gap.as_secs_f64() * 1000.0,
            source: Source::Driver,
            agent: None,
            kind: EventKind::HarnessStalled { until_ms },
        });
        self.catch_up_until = Some(now + CATCH_UP);
    }

    /// When the catching up after a stall ends, while it lasts.
    fn catching_up_until(&self, now: Instant) -> Option<Instant> {
        self.catch_up_until.filter(|at| *at > now)
    }
}

fn hung(rec: &mut Recorder, plan: &Plan, work: &str) -> (EndReason, Option<String>) {
    let bound_s = plan
        .watch
        .iter()
        .find(|w| w.work == work)
        .and_then(|w| w.hang_after)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default();
    rec.driver(
        EventKind::WorkOverdue {
            work: work.to_string(),
            bound_s,
        },
        None,
    );
    (
        EndReason::WorkHung,
        Some(format!("`{work}` ran past its {bound_s:.1} s hang bound")),
    )
}

/// The signal a supervisor's message says it was stopped by.
fn stopped_by(message: &WireMessage) -> Option<Interrupt> {
    match message {
        WireMessage::SupervisorStopped { signal, t_ns } => Some(Interrupt {
            signal: crate::evidence::signal_name(*signal),
            at_ns: *t_ns,
        }),
        _ => None,
    }
}

/// Records the interruption at the moment the signal arrived.
pub fn interrupted(
    rec: &mut Recorder,
    interrupt: Interrupt,
    receiver: &str,
) -> (EndReason, Option<String>) {
    let t_ms = rec.ms_at(interrupt.at_ns);
    let signal = interrupt.signal;
    rec.push(Event {
        t_ms,
        source: Source::Driver,
        agent: None,
        kind: EventKind::Interrupted {
            signal: Some(signal.to_string()),
        },
    });
    (
        EndReason::Interrupted,
        Some(format!("{signal} to {receiver} at {:.2} s", t_ms / 1000.0)),
    )
}

/// The supervisor exited before reporting the CLI's exit: it could not start the CLI, or it
/// died itself. Either way the harness's machinery, not the CLI, ended the run.
fn supervisor_gone(
    rec: &mut Recorder,
    exit: std::io::Result<std::process::ExitStatus>,
) -> (EndReason, Option<String>) {
    let how = match exit {
        Ok(status) => ExitDesc::from_std(status).describe(),
        Err(e) => format!("unknown status: {e}"),
    };
    let what = format!("the supervisor exited ({how}) before the CLI did");
    rec.driver(EventKind::HarnessFailed { what: what.clone() }, None);
    (EndReason::HarnessFailed, Some(what))
}

fn report_status(status: &StatusHandle, rec: &Recorder, start: Instant, phase: RunPhase) {
    let mut s = status.lock().expect("status lock");
    s.elapsed_s = start.elapsed().as_secs_f64();
    s.requests = rec.live.requests;
    s.hooks = rec.live.hooks;
    s.running_tasks = rec.live.running();
    s.phase = phase;
}
