//! The nemesis table's rows: which fault each row injects at the scenario's handoff (its
//! `[[faults]]` keys), what one faulted run showed (read from its timeline and result), what
//! the fault did to the wake-up against the clean run, in words, and the table itself.
//! `app::nemesis` runs the rows and writes the files.

use serde::Serialize;

use crate::classify::result::RunResult;
use crate::evidence::{EventKind, Timeline};
use crate::scenario::{DriverMode, FaultKind, Outcome};

/// How long a `stop-task` row keeps the work stopped.
const STOP_SECONDS: u32 = 5;

/// The fault each row injects, with its `[[faults]]` table's keys after `kind`: an API fault
/// on `waiter`'s first request with a notification (`times` applies to the kinds that lose
/// the answer: a retry meets the fault again), a process fault on `work` (a tracked command;
/// none without one) a second after it started.
pub fn faults(
    times: u32,
    waiter: &str,
    work: Option<&str>,
    mode: DriverMode,
) -> Vec<(FaultKind, String)> {
    FaultKind::ALL
        .into_iter()
        // A refused request is no transient fault a CLI rides out: it ends the turn on every
        // runtime (it makes a child fail, in `child-fails`), so it is no row here.
        .filter(|kind| *kind != FaultKind::Http400)
        .filter(|kind| kind.applies_in(mode))
        .filter_map(|kind| match (kind, work) {
            (FaultKind::KillTask | FaultKind::CrashCli, Some(w)) => {
                Some((kind, process_keys(w, "")))
            }
            (FaultKind::StopTask, Some(w)) => Some((
                kind,
                process_keys(w, &format!("seconds = {STOP_SECONDS}\n")),
            )),
            (k, None) if k.hits_a_process() => None,
            _ => Some((kind, request_keys(kind, waiter, times))),
        })
        .collect()
}

/// A process fault's keys: `work`, a second after it started, and the kind's own `extra`.
fn process_keys(work: &str, extra: &str) -> String {
    format!("work = \"{work}\"\nafter_seconds = 1\n{extra}")
}

/// An API fault's keys: `waiter`'s first request with a notification, the kind's setting,
/// and `times` for the kinds that lose the answer.
fn request_keys(kind: FaultKind, waiter: &str, times: u32) -> String {
    let mut keys = format!("agent = \"{waiter}\"\non = \"notification\"\n");
    keys.push_str(match kind {
        FaultKind::Http429 => "seconds = 1\n",
        FaultKind::Stall => "seconds = 5\n",
        FaultKind::Slow => "delay_ms = 200\n",
        _ => "",
    });
    if times > 1 && kind.loses_the_answer() {
        keys.push_str(&format!("times = {times}\n"));
    }
    keys
}

/// One row of the table.
#[derive(Debug, Serialize)]
pub struct Row {
    /// `none` for the clean run.
    pub fault: String,
    pub outcome: Option<Outcome>,
    pub latency_ms: Option<f64>,
    /// Attempts the fault broke or slowed.
    pub injected: usize,
    /// The waiter's requests that carried the notification and got an answer.
    pub deliveries: usize,
    /// What the fault did to the wake-up, in words.
    pub effect: String,
    /// The verdict differs from the clean run's.
    pub differs: bool,
    /// The verdict's explanation, for the rows that differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The run's folder, relative to the run-id folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

/// What one faulted run showed.
pub struct Observed {
    pub outcome: Outcome,
    pub latency: Option<f64>,
    pub injected: usize,
    pub deliveries: usize,
    /// From the first faulted request to its whole answer having gone out (a stalled or slow
    /// answer that was still delivered).
    answer_s: Option<f64>,
    /// The CLI ended a turn in error after the first fault (it gave the request up), and
    /// whether an input of the driver came after that.
    gave_up: Option<GaveUp>,
    /// How long the watched command ran, start to end (a tracked command only).
    work_s: Option<f64>,
}

impl Observed {
    /// What the run of `result` with `timeline` showed, for `waiter` and the watched `work`.
    pub fn of(
        result: &RunResult,
        timeline: &Timeline,
        waiter: &str,
        work: Option<&str>,
    ) -> Observed {
        Observed {
            outcome: result.judgement.outcome,
            latency: latency(result),
            injected: injected(timeline),
            deliveries: deliveries(timeline, waiter),
            answer_s: answer_time(timeline),
            gave_up: gave_up(timeline),
            work_s: work.and_then(|w| work_time(timeline, w)),
        }
    }
}

/// The CLI gave a faulted request up: its turn ended in error.
struct GaveUp {
    then_input: bool,
}

/// What the fault did to the wake-up, against the clean run.
pub fn effect(kind: FaultKind, o: &Observed, clean: Option<&Observed>) -> String {
    let clean_outcome = clean.map(|c| c.outcome);
    let clean_latency = clean.and_then(|c| c.latency);
    let clean_deliveries = clean.map(|c| c.deliveries).unwrap_or(0);
    if o.injected == 0 {
        return if kind.hits_a_process() {
            "never hit: the work had no process running a second after it started".into()
        } else {
            "never hit: no request carried a notification".into()
        };
    }
    if o.deliveries == 0 && kind.loses_the_answer() {
        return format!(
            "wake-up lost: no answer got through ({} broken), not delivered again",
            o.injected
        );
    }
    if clean_outcome == Some(Outcome::Woke) && o.outcome != Outcome::Woke {
        return format!("wake-up lost ({})", o.outcome);
    }
    if o.outcome != Outcome::Woke {
        return format!("{} (as the clean run is not woken)", o.outcome);
    }
    let delay = match (o.latency, clean_latency) {
        (Some(l), Some(c)) => format!(", {:+.2} s", (l - c) / 1000.0),
        _ => String::new(),
    };
    let answer = o
        .answer_s
        .map(|s| format!(", the answer took {s:.2} s"))
        .unwrap_or_default();
    if o.deliveries > clean_deliveries.max(1) {
        format!("delivered {} times{delay}", o.deliveries)
    } else if let Some(g) = &o.gave_up {
        let then = if g.then_input {
            "delivered with the next input"
        } else {
            "delivered later"
        };
        format!(
            "the CLI gave the request up ({} broken), {then}{delay}",
            o.injected
        )
    } else if kind.loses_the_answer() {
        format!("retried and delivered{delay}")
    } else if kind == FaultKind::CutBeforeStop {
        "taken as it was, no retry".into()
    } else if kind == FaultKind::KillTask {
        format!("killed, and the waiter was told{delay}")
    } else if kind == FaultKind::StopTask {
        let late = match (o.work_s, clean.and_then(|c| c.work_s)) {
            (Some(w), Some(c)) => format!(", the work's end {:+.2} s", w - c),
            _ => String::new(),
        };
        format!("stopped {STOP_SECONDS} s{late}, then delivered{delay}")
    } else {
        format!("delivered late{answer}")
    }
}

/// Seconds `work` ran: from its tracker's start to its end.
fn work_time(tl: &Timeline, work: &str) -> Option<f64> {
    let at = |started: bool| {
        tl.iter().find_map(|e| match &e.kind {
            EventKind::TrackStarted { name, .. } if started && name == work => Some(e.t_ms),
            EventKind::TrackEnded { name, .. } if !started && name == work => Some(e.t_ms),
            _ => None,
        })
    };
    Some((at(false)? - at(true)?) / 1000.0)
}

fn latency(result: &RunResult) -> Option<f64> {
    result.judgement.primary().and_then(|v| v.latency_ms)
}

/// Seconds from the first faulted request to the end of its answer (the fake API records
/// the answer's tool call or turn end once the whole body is sent), if it was delivered.
fn answer_time(tl: &Timeline) -> Option<f64> {
    let (t, seq) = tl.iter().find_map(|e| match e.kind {
        EventKind::FaultInjected { seq, .. } => Some((e.t_ms, seq)),
        _ => None,
    })?;
    let sent = tl.iter().find(|e| {
        matches!(e.kind, EventKind::TurnEnded { seq: s, .. } | EventKind::ToolCall { seq: s, .. } if s == seq)
    })?;
    Some((sent.t_ms - t) / 1000.0)
}

/// An error `result` after the first fault: the CLI gave the faulted request up.
fn gave_up(tl: &Timeline) -> Option<GaveUp> {
    let first = tl
        .iter()
        .find(|e| matches!(e.kind, EventKind::FaultInjected { .. }))?;
    let error = tl.iter().find(|e| {
        e.t_ms >= first.t_ms && matches!(e.kind, EventKind::TurnResult { is_error: true, .. })
    })?;
    let then_input = tl
        .iter()
        .any(|e| e.t_ms > error.t_ms && matches!(e.kind, EventKind::UserInput { .. }));
    Some(GaveUp { then_input })
}

/// Attempts a fault broke or slowed, and processes signals reached.
fn injected(tl: &Timeline) -> usize {
    tl.iter()
        .filter(|e| match &e.kind {
            EventKind::FaultInjected { .. } => true,
            EventKind::WorkSignalled { pids, signal, .. } => {
                !pids.is_empty() && signal != "SIGCONT"
            }
            EventKind::CliRestarted { .. } => true,
            _ => false,
        })
        .count()
}

/// The waiter's requests that carried a task's end (not a Monitor event, nor the `stopped` a
/// CLI restarted after a crash says of work it no longer follows) and got an answer.
fn deliveries(tl: &Timeline, waiter: &str) -> usize {
    let restarted = tl
        .iter()
        .any(|e| matches!(e.kind, EventKind::CliRestarted { .. }));
    let tells_an_end = |n: &crate::evidence::Notification| {
        n.event.is_none() && !(restarted && n.status.as_deref() == Some("stopped"))
    };
    tl.iter()
        .filter(|e| e.agent.as_deref() == Some(waiter))
        .filter(|e| {
            matches!(&e.kind, EventKind::ModelRequest { notifications, answer_lost: false, .. }
                if notifications.iter().any(tells_an_end))
        })
        .count()
}

pub fn render(
    scenario: &str,
    variant: &str,
    cli: &str,
    (waiter, work, times): (&str, Option<&str>, u32),
    rows: &[Row],
) -> String {
    let mut table = comfy_table::Table::new();
    table
        .load_style(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_header(["fault", "verdict", "latency", "what it did to the wake-up"]);
    for r in rows {
        table.add_row([
            r.fault.clone(),
            r.outcome
                .map(|o| format!("{o}{}", if r.differs { " ≠" } else { "" }))
                .unwrap_or_else(|| "-".into()),
            r.latency_ms
                .map(|l| format!("{:.2}s", l / 1000.0))
                .unwrap_or_else(|| "-".into()),
            r.effect.clone(),
        ]);
    }
    let repeat = if times > 1 {
        format!(" ({times} attempts in a row for the faults that lose the answer)")
    } else {
        String::new()
    };
    let processes = work
        .map(|w| format!(", each process fault on `{w}` 1 s after it started"))
        .unwrap_or_default();
    let mut text = format!(
        "nemesis {scenario}/{variant} on {cli}: each API fault on `{waiter}`'s first request with a notification{repeat}{processes}\n{table}\n"
    );
    for r in rows.iter().filter(|r| r.differs) {
        if let Some(e) = &r.explanation {
            text.push_str(&format!("{}: {e}\n", r.fault));
        }
    }
    text
}
