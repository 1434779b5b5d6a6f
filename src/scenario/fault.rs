//! Resolving the faults a scenario injects (`[[faults]]`, `--fault`; the types are in `plan`):
//! what the fake API does wrong, and to which of an agent's model requests. Real sessions meet
//! 429s, overloaded answers and broken streams, and those are the moments a pending
//! notification is most likely to be lost; a fault lets a run put one exactly on the request
//! that should carry the notification.
//!
//! A process fault hits a process instead, a set time after a tracked command's work started:
//! the harness signals the command's processes itself (`kill-task`, `stop-task`), or kills
//! the CLI and starts it again on the same session (`crash-cli`).
//!
//! Every fault has a bound: it repeats on at most [`MAX_TIMES`] consecutive attempts, and a
//! stall, a retry-after, a stopped task's pause and a process fault's delay last at most
//! [`MAX_SECONDS`].

use toml::Spanned;

use super::ScenarioError;
use super::plan::{Fault, FaultKind, FaultTarget, MAIN_AGENT, RESUME_FLAG};
use super::raw::DriverMode;
use super::raw::RawFault;
use super::source::{Locator, Names};

/// The most consecutive attempts one fault may break.
pub const MAX_TIMES: u32 = 20;
/// The longest stall or `retry-after` a fault may ask for.
pub const MAX_SECONDS: f64 = 120.0;
/// The longest pause between two stream events of a slow stream.
pub const MAX_DELAY_MS: u64 = 5_000;

/// A `--fault` spec (`KEY=VALUE,...`, the keys of a `[[faults]]` table) resolved against
/// the agents it may name. Errors name the spec and the pair (as its line) and column.
pub fn parse_spec<'a>(
    spec: &str,
    agents: impl IntoIterator<Item = &'a String>,
    tracks: impl IntoIterator<Item = &'a String>,
) -> Result<Fault, ScenarioError> {
    // One pair a line, string values quoted: then the scenario's own parser and messages apply.
    let text: String = spec
        .split(',')
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) if v.trim().parse::<f64>().is_ok() || v.trim().parse::<bool>().is_ok() => {
                format!("{} = {}\n", k.trim(), v.trim())
            }
            Some((k, v)) => format!("{} = {:?}\n", k.trim(), v.trim()),
            None => format!("{pair}\n"),
        })
        .collect();
    let at = Locator {
        path: format!("--fault {spec}: pair"),
        source: &text,
    };
    let raw: RawFault = toml::from_str(&text).map_err(|e| at.toml_error(&e))?;
    let names = Names {
        agents: agents.into_iter().cloned().collect(),
        tracks: tracks.into_iter().cloned().collect(),
    };
    let mut fault = resolve_fault(&at, &Spanned::new(0..text.len(), raw), &names)?;
    fault.line = 0;
    Ok(fault)
}

/// Resolves one `[[faults]]` entry; every mistake is one located error.
pub(super) fn resolve_fault(
    at: &Locator,
    fault: &Spanned<RawFault>,
    names: &Names,
) -> Result<Fault, ScenarioError> {
    let f = fault.get_ref();
    let kind = fault_kind(at, f)?;
    if kind.hits_a_process() {
        return resolve_process_fault(at, fault, kind, names);
    }
    refuse_process_keys(at, f, kind)?;
    Ok(Fault {
        kind,
        agent: fault_agent(at, f, names)?,
        target: request_target(at, fault, names)?,
        times: fault_times(at, f)?,
        seconds: request_seconds(at, fault, kind)?,
        delay_ms: fault_delay_ms(at, fault, kind)?,
        line: at.line_col(fault.span().start).0,
        optional: f.optional.unwrap_or(false),
    })
}

fn fault_kind(at: &Locator, f: &RawFault) -> Result<FaultKind, ScenarioError> {
    FaultKind::parse(f.kind.get_ref()).ok_or_else(|| {
        let known: Vec<&str> = FaultKind::ALL.iter().map(|k| k.as_str()).collect();
        at.error(
            f.kind.span(),
            format!(
                "unknown fault kind `{}`, expected one of: {}",
                f.kind.get_ref(),
                known.join(", ")
            ),
        )
    })
}

/// A fault on model requests takes no `work` (but with `on = "work-ended"`) and no
/// `after_seconds` (but with `after`).
fn refuse_process_keys(at: &Locator, f: &RawFault, kind: FaultKind) -> Result<(), ScenarioError> {
    let waits_for_work = f.on.as_ref().is_some_and(|on| on.get_ref() == WORK_ENDED);
    let process_keys = [
        (
            "work",
            f.work
                .as_ref()
                .filter(|_| !waits_for_work)
                .map(|x| x.span()),
        ),
        (
            "after_seconds",
            f.after_seconds
                .as_ref()
                .filter(|_| f.after.is_none())
                .map(|x| x.span()),
        ),
    ];
    let Some((key, span)) = process_keys.iter().find_map(|(k, s)| Some((k, s.clone()?))) else {
        return Ok(());
    };
    Err(at.error(
        span,
        format!(
            "`{key}` applies to `kill-task`, `stop-task` and `crash-cli`{}, not `{}`",
            if *key == "after_seconds" {
                ", and to faults with `after`"
            } else {
                ""
            },
            kind.as_str()
        ),
    ))
}

/// The agent whose requests the fault hits (default: the main agent).
fn fault_agent(at: &Locator, f: &RawFault, names: &Names) -> Result<String, ScenarioError> {
    match &f.agent {
        Some(a) if !names.has_agent(a.get_ref()) => Err(at.error(
            a.span(),
            format!(
                "`agent` names no agent: `{}` (the agents are: {})",
                a.get_ref(),
                names.agent_list()
            ),
        )),
        Some(a) => Ok(a.get_ref().clone()),
        None => Ok(MAIN_AGENT.to_string()),
    }
}

/// Which of the agent's requests the fault hits: exactly one of `request`, `on`, `after`.
fn request_target(
    at: &Locator,
    fault: &Spanned<RawFault>,
    names: &Names,
) -> Result<FaultTarget, ScenarioError> {
    let f = fault.get_ref();
    let both = |span, other: &str| {
        Err(at.error(span, format!("a fault has one target: {other}, not both")))
    };
    match (&f.request, &f.on) {
        (None, None) if f.after.is_some() => after_trigger(at, f, names),
        (_, Some(on)) if f.after.is_some() => both(on.span(), "`on = ...` or `after = TRIGGER`"),
        (Some(n), None) if f.after.is_some() => {
            both(n.span(), "`request = N` or `after = TRIGGER`")
        }
        (Some(n), None) if *n.get_ref() >= 1 => Ok(FaultTarget::Request(*n.get_ref())),
        (Some(n), None) => Err(at.error(n.span(), "`request` counts from 1".into())),
        (None, Some(on)) if on.get_ref() == "notification" => Ok(FaultTarget::Notification),
        (None, Some(on)) if on.get_ref() == WORK_ENDED => Ok(FaultTarget::WorkEnded(tracked_work(
            at,
            fault,
            names,
            format!("`on = \"{WORK_ENDED}\"` needs `work`, the name of a tracked command"),
        )?)),
        (None, Some(on)) => Err(at.error(
            on.span(),
            format!(
                "unknown `on` = `{}`, expected `notification` or `{WORK_ENDED}`",
                on.get_ref()
            ),
        )),
        (Some(_), Some(on)) => both(on.span(), "`request = N` or `on = ...`"),
        (None, None) => Err(at.error(
            fault.span(),
            "a fault needs a target: `request = N` (the agent's Nth model request), \
             `on = \"notification\"`, `on = \"work-ended\"` with `work = NAME`, or \
             `after = TRIGGER`"
                .into(),
        )),
    }
}

/// How many consecutive attempts the fault breaks (default 1).
fn fault_times(at: &Locator, f: &RawFault) -> Result<u32, ScenarioError> {
    match &f.times {
        Some(t) if !(1..=MAX_TIMES).contains(t.get_ref()) => {
            Err(at.error(t.span(), format!("`times` must be 1 to {MAX_TIMES}")))
        }
        Some(t) => Ok(*t.get_ref()),
        None => Ok(1),
    }
}

/// A stall's length or a 429's retry-after (default 1 s; a stall must say).
fn request_seconds(
    at: &Locator,
    fault: &Spanned<RawFault>,
    kind: FaultKind,
) -> Result<f64, ScenarioError> {
    match (&fault.get_ref().seconds, kind) {
        (Some(s), FaultKind::Stall | FaultKind::Http429) => {
            let v = *s.get_ref();
            if v > 0.0 && v <= MAX_SECONDS {
                Ok(v)
            } else {
                Err(at.error(
                    s.span(),
                    format!("`seconds` must be more than 0 and at most {MAX_SECONDS}"),
                ))
            }
        }
        (Some(s), _) => Err(at.error(
            s.span(),
            format!(
                "`seconds` applies to `stall`, `http-429` and `stop-task`, not `{}`",
                kind.as_str()
            ),
        )),
        (None, FaultKind::Stall) => Err(at.error(fault.span(), "a `stall` needs `seconds`".into())),
        (None, _) => Ok(1.0),
    }
}

/// A slow stream's pause between events (only `slow`, which must say).
fn fault_delay_ms(
    at: &Locator,
    fault: &Spanned<RawFault>,
    kind: FaultKind,
) -> Result<u64, ScenarioError> {
    match (&fault.get_ref().delay_ms, kind) {
        (Some(d), FaultKind::Slow) if (1..=MAX_DELAY_MS).contains(d.get_ref()) => Ok(*d.get_ref()),
        (Some(d), FaultKind::Slow) => {
            Err(at.error(d.span(), format!("`delay_ms` must be 1 to {MAX_DELAY_MS}")))
        }
        (Some(d), _) => Err(at.error(
            d.span(),
            format!("`delay_ms` applies to `slow`, not `{}`", kind.as_str()),
        )),
        (None, FaultKind::Slow) => {
            Err(at.error(fault.span(), "a `slow` fault needs `delay_ms`".into()))
        }
        (None, _) => Ok(0),
    }
}

/// Refuses a `crash-cli` in a scenario none of whose variants is a session (`modes`, one per
/// variant): the CLI is started again with `--continue` on the same stdin, and only a session
/// has one to resume on (a print-mode CLI has its prompt in its arguments; a restart in a pty
/// is not built). In a scenario with both, the crash applies to its session variants.
pub(super) fn check_modes(
    at: &Locator,
    raw: &[Spanned<RawFault>],
    modes: &[DriverMode],
) -> Result<(), ScenarioError> {
    let crash = raw
        .iter()
        .find(|f| f.get_ref().kind.get_ref() == FaultKind::CrashCli.as_str());
    match crash {
        Some(r) if !modes.iter().any(|m| m.row().resumable) => Err(at.error(
            r.get_ref().kind.span(),
            format!(
                "`crash-cli` restarts the CLI with `{RESUME_FLAG}` on the same stdin, which \
                 needs a variant whose driver can resume ({}; this scenario has none)",
                DriverMode::those(|r| r.resumable)
            ),
        )),
        _ => Ok(()),
    }
}

/// `after = TRIGGER` (with `after_seconds`, default 0): the agent's first request that
/// arrives that long after the harness saw the trigger.
fn after_trigger(at: &Locator, f: &RawFault, names: &Names) -> Result<FaultTarget, ScenarioError> {
    let Some(after) = &f.after else {
        unreachable!("called with `after`")
    };
    let trigger = super::trigger::resolve(at, after, names)?;
    let after_ms = match &f.after_seconds {
        Some(s) if !(0.0..=MAX_SECONDS).contains(s.get_ref()) => {
            return Err(at.error(
                s.span(),
                format!("`after_seconds` must be 0 to {MAX_SECONDS}"),
            ));
        }
        Some(s) => (*s.get_ref() * 1000.0).round() as u64,
        None => 0,
    };
    Ok(FaultTarget::AfterTrigger { trigger, after_ms })
}

/// `on = "work-ended"`: the first request after a tracked command ended.
const WORK_ENDED: &str = "work-ended";

/// The tracked command a fault's `work` names; `missing` says what to write when it has none.
fn tracked_work(
    at: &Locator,
    fault: &Spanned<RawFault>,
    names: &Names,
    missing: String,
) -> Result<String, ScenarioError> {
    match &fault.get_ref().work {
        Some(w) if names.tracks.contains(w.get_ref()) => Ok(w.get_ref().clone()),
        Some(w) => Err(at.error(
            w.span(),
            format!(
                "`work` names no tracked command: `{}` (the tracked commands are: {})",
                w.get_ref(),
                Names::list(&names.tracks)
            ),
        )),
        None => Err(at.error(fault.span(), missing)),
    }
}

/// A `kill-task`, `stop-task` or `crash-cli`: a tracked command named by `work`,
/// `after_seconds` after its work started (or after the trigger `after` names, from which a
/// delay of 0 is allowed); a stop lasts `seconds`. The keys of request faults are refused by name.
fn resolve_process_fault(
    at: &Locator,
    fault: &Spanned<RawFault>,
    kind: FaultKind,
    names: &Names,
) -> Result<Fault, ScenarioError> {
    let f = fault.get_ref();
    let not_here = [
        ("agent", f.agent.as_ref().map(|x| x.span())),
        ("request", f.request.as_ref().map(|x| x.span())),
        ("on", f.on.as_ref().map(|x| x.span())),
        ("times", f.times.as_ref().map(|x| x.span())),
        ("delay_ms", f.delay_ms.as_ref().map(|x| x.span())),
    ];
    if let Some((key, span)) = not_here.iter().find_map(|(k, s)| Some((k, s.clone()?))) {
        return Err(at.error(
            span,
            format!(
                "`{key}` applies to faults on model requests, not `{}` (it hits `work`)",
                kind.as_str()
            ),
        ));
    }
    let work = tracked_work(
        at,
        fault,
        names,
        format!(
            "a `{}` needs `work`, the name of a tracked command (`track = NAME`)",
            kind.as_str()
        ),
    )?;
    let seconds_in_bounds = |s: &Spanned<f64>, key: &str| {
        let v = *s.get_ref();
        if v > 0.0 && v <= MAX_SECONDS {
            Ok(v)
        } else {
            Err(at.error(
                s.span(),
                format!("`{key}` must be more than 0 and at most {MAX_SECONDS}"),
            ))
        }
    };
    let from = f
        .after
        .as_ref()
        .map(|a| super::trigger::resolve(at, a, names))
        .transpose()?;
    let after = match &f.after_seconds {
        Some(a) if from.is_some() && *a.get_ref() == 0.0 => 0.0,
        Some(a) => seconds_in_bounds(a, "after_seconds")?,
        None if from.is_some() => 0.0,
        None => {
            return Err(at.error(
                fault.span(),
                format!(
                    "a `{}` needs `after_seconds`, its time after the work started, or \
                     `after`, a trigger to count it from",
                    kind.as_str()
                ),
            ));
        }
    };
    let seconds = match (&f.seconds, kind) {
        (Some(s), FaultKind::StopTask) => seconds_in_bounds(s, "seconds")?,
        (None, FaultKind::StopTask) => {
            return Err(at.error(
                fault.span(),
                "a `stop-task` needs `seconds`, how long the work stays stopped".into(),
            ));
        }
        (Some(s), _) => {
            return Err(at.error(
                s.span(),
                format!("`seconds` applies to `stop-task`, not `{}`", kind.as_str()),
            ));
        }
        (None, _) => 0.0,
    };
    Ok(Fault {
        kind,
        agent: MAIN_AGENT.to_string(),
        target: FaultTarget::Work {
            work,
            after_ms: (after * 1000.0).round() as u64,
            from,
        },
        times: 1,
        seconds,
        delay_ms: 0,
        line: at.line_col(fault.span().start).0,
        optional: fault.get_ref().optional.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::FaultKind;

    #[test]
    fn every_kind_is_written_as_the_scenario_names_it() {
        for kind in FaultKind::ALL {
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, kind.as_str());
            assert_eq!(FaultKind::parse(kind.as_str()), Some(kind));
        }
    }
}
