//! Process faults (`kill-task`, `stop-task`, `crash-cli`): the harness signals a tracked
//! command's processes itself, or has the supervisor kill the CLI and start it again, a set
//! time after the work started, or after a trigger (an input's `after`) fired. The session
//! loop asks when the next one is due and lets this module send what is; each signal is an
//! event on the timeline (source `fault`), so the verdict never blames the work or the CLI
//! for the harness's kill.
//!
//! The tracker (`wp-track`) is spared: it waits on the command it runs and reports how the
//! command ended, so a kill shows as the command's end by SIGKILL, and a stop as a late end.

use std::time::Duration;

use tokio::time::Instant;

use super::recorder::{Live, Recorder};
use super::supervise::{Command, Lifeline};
use crate::evidence::EventKind;
use crate::fake_api::fault::TriggerTimes;
use crate::os::procs::{self, Signal};
use crate::scenario::{Fault, FaultKind, FaultTarget, RESUME_FLAG, Trigger};

/// Where one process fault is in its life.
#[derive(Debug)]
enum Stage {
    /// Waiting for its time after the work started.
    Waiting,
    /// Stopped these processes (pinned, so the SIGCONT cannot reach a process that reused a
    /// number meanwhile); they are continued at the instant.
    Stopped {
        procs: Vec<procs::Pinned>,
        until: Instant,
    },
    Done,
}

struct Pending {
    kind: FaultKind,
    work: String,
    /// Counted from this trigger, not the work's start.
    from: Option<Trigger>,
    after: Duration,
    stop_for: Duration,
    stage: Stage,
}

/// The run's process faults, in file order, and when their triggers were seen.
pub struct ProcessFaults {
    pending: Vec<Pending>,
    triggers: TriggerTimes,
}

impl ProcessFaults {
    pub fn new(faults: &[Fault], triggers: TriggerTimes) -> ProcessFaults {
        let pending = faults
            .iter()
            .filter_map(|f| match &f.target {
                FaultTarget::Work {
                    work,
                    after_ms,
                    from,
                } if f.kind.hits_a_process() => Some(Pending {
                    kind: f.kind,
                    work: work.clone(),
                    from: from.clone(),
                    after: Duration::from_millis(*after_ms),
                    stop_for: Duration::from_secs_f64(f.seconds),
                    stage: Stage::Waiting,
                }),
                _ => None,
            })
            .collect();
        ProcessFaults { pending, triggers }
    }

    /// The next moment a fault is due: its time after its work started (or its trigger was
    /// seen), or a stop's end. `None` while nothing it waits for has happened. `now_ms` is
    /// the run clock's reading at `now`.
    pub fn next_wake(&self, live: &Live, now: Instant, now_ms: f64) -> Option<Instant> {
        self.pending
            .iter()
            .filter_map(|p| match &p.stage {
                Stage::Waiting => p.due(live, &self.triggers, now, now_ms),
                Stage::Stopped { until, .. } => Some(*until),
                Stage::Done => None,
            })
            .min()
    }

    /// Sends every signal due at `now` (a crash through the supervisor, over `lifeline`) and
    /// records each.
    pub fn fire_due(&mut self, rec: &mut Recorder, lifeline: &Lifeline, now: Instant) {
        for p in &mut self.pending {
            match &p.stage {
                Stage::Waiting => {
                    let due = p.due(&rec.live, &self.triggers, now, rec.now_ms());
                    if due.is_none_or(|at| now < at) {
                        continue;
                    }
                    if p.kind == FaultKind::CrashCli {
                        crash(rec, lifeline, p);
                        p.stage = Stage::Done;
                        continue;
                    }
                    let pinned = command_procs(&rec.live, &p.work);
                    let at = rec.now_ms();
                    let signal = match p.kind {
                        FaultKind::StopTask => Signal::STOP,
                        _ => Signal::KILL,
                    };
                    for proc in &pinned {
                        proc.signal(signal);
                    }
                    // Counted from the signal, not from `now`: reading the process table can
                    // take a while on a loaded machine.
                    let sent = Instant::now();
                    record(rec, at, p, signal, &pinned);
                    p.stage = match p.kind {
                        FaultKind::StopTask if !pinned.is_empty() => Stage::Stopped {
                            procs: pinned,
                            until: sent + p.stop_for,
                        },
                        _ => Stage::Done,
                    };
                }
                Stage::Stopped { until, .. } if now >= *until => p.continue_stopped(rec),
                _ => {}
            }
        }
    }

    /// Continues whatever is still stopped (the run ends before a stop's end): a stopped
    /// process would not act on the shutdown's SIGTERM.
    pub fn release(&mut self, rec: &mut Recorder) {
        for p in &mut self.pending {
            p.continue_stopped(rec);
        }
    }
}

impl Pending {
    /// SIGCONT to what this fault stopped, recorded; nothing unless it is stopped.
    fn continue_stopped(&mut self, rec: &mut Recorder) {
        if let Stage::Stopped { procs, .. } = &self.stage {
            let at = rec.now_ms();
            for proc in procs {
                proc.signal(Signal::CONT);
            }
            record(rec, at, self, Signal::CONT, procs);
            self.stage = Stage::Done;
        }
    }

    /// When the fault is due: `after` past the moment its trigger was seen, or past its work's
    /// start as the start's event dates it on the run clock (not when the harness read the
    /// event, which can lag on a loaded machine).
    fn due(
        &self,
        live: &Live,
        triggers: &TriggerTimes,
        now: Instant,
        now_ms: f64,
    ) -> Option<Instant> {
        let from_ms = match &self.from {
            Some(trigger) => triggers.seen(trigger)?,
            None => *live.work_started_ms.get(&self.work)?,
        };
        let left_ms = from_ms + self.after.as_secs_f64() * 1000.0 - now_ms;
        Some(now + Duration::from_secs_f64(left_ms.max(0.0) / 1000.0))
    }
}

/// The tracked command's processes, pinned: every live descendant of its tracker (the shell
/// running the command and what it started), not the tracker. None once the work has ended. Read
/// from the kernel's children lists, not a scan of `/proc`: on a loaded machine the scan
/// took long enough to move the fault late.
fn command_procs(live: &Live, work: &str) -> Vec<procs::Pinned> {
    live.track_pids
        .get(work)
        .map(|tracker| procs::children_tree(*tracker))
        .unwrap_or_default()
        .into_iter()
        .filter_map(procs::pin)
        .collect()
}

/// A `crash-cli`: while the work runs, the supervisor kills the CLI and starts it again with
/// `--continue` (it reports both); once the work has ended there is nothing to crash into,
/// and the fault is recorded as not sent.
fn crash(rec: &mut Recorder, lifeline: &Lifeline, p: &Pending) {
    let at = rec.now_ms();
    if !rec.live.track_pids.contains_key(&p.work) {
        record(rec, at, p, Signal::KILL, &[]);
        return;
    }
    let resume = vec![RESUME_FLAG.to_string()];
    let sent = lifeline.send(&Command::Restart {
        extra_args: resume.clone(),
    });
    if sent {
        rec.fault(
            at,
            EventKind::CliCrashed {
                work: p.work.clone(),
                resume,
            },
        );
    } else {
        record(rec, at, p, Signal::KILL, &[]);
    }
}

fn record(rec: &mut Recorder, at: f64, p: &Pending, signal: Signal, procs: &[procs::Pinned]) {
    let name = match signal {
        Signal::STOP => "SIGSTOP",
        Signal::CONT => "SIGCONT",
        _ => "SIGKILL",
    };
    rec.fault(
        at,
        EventKind::WorkSignalled {
            work: p.work.clone(),
            fault: p.kind,
            signal: name.to_string(),
            pids: procs.iter().map(|p| p.pid).collect(),
        },
    );
}
