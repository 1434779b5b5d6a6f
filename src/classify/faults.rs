//! Whether each fault a run was to inject hit it. A fault that never fired (its request never
//! came, its work had ended, its trigger never happened) leaves a run that is not the
//! experiment asked for: like a vacuous check, it is reported as not applied, and it fails the
//! run unless the fault says `optional = true`. A process fault that found its work already
//! gone (no process signalled) did not fire either.

use serde::{Deserialize, Serialize};

use crate::evidence::{Event, EventKind, Timeline};
use crate::scenario::{Fault, FaultTarget};

/// One planned fault, and whether the run shows it hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FaultResult {
    /// The fault in words (`overloaded-529 on `main`'s request #3`).
    pub fault: String,
    /// Its line in the scenario file; 0 for a `--fault`.
    #[serde(default)]
    pub line: usize,
    pub applied: bool,
    /// The fault may miss (`optional = true`): then not being applied fails nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// When it hit, or why it did not.
    pub detail: String,
}

impl FaultResult {
    /// Whether this fault fails the run: it was not applied and may not miss.
    pub fn fails(&self) -> bool {
        !self.applied && !self.optional
    }
}

/// Each of `faults` judged on the run's timeline.
pub fn judge(timeline: &Timeline, faults: &[Fault]) -> Vec<FaultResult> {
    faults
        .iter()
        .map(|f| {
            let hit = timeline.iter().find(|e| hits(f, e));
            FaultResult {
                fault: f.describe(),
                line: f.line,
                applied: hit.is_some(),
                optional: f.optional,
                detail: match hit {
                    Some(e) => format!(
                        "applied at {}: {}",
                        crate::evidence::secs(e.t_ms),
                        crate::evidence::describe::describe(e)
                    ),
                    None => not_applied(f),
                },
            }
        })
        .collect()
}

/// Whether event `e` is fault `f` hitting the run.
fn hits(f: &Fault, e: &Event) -> bool {
    match (&f.target, &e.kind) {
        (
            FaultTarget::Work { work, .. },
            EventKind::WorkSignalled {
                work: w,
                fault,
                pids,
                ..
            },
        ) => w == work && *fault == f.kind && !pids.is_empty(),
        (FaultTarget::Work { work, .. }, EventKind::CliCrashed { work: w, .. }) => w == work,
        (FaultTarget::Work { .. }, _) => false,
        (_, EventKind::FaultInjected { fault, .. }) => {
            *fault == f.kind && e.agent.as_deref() == Some(f.agent.as_str())
        }
        _ => false,
    }
}

/// Why a fault of this target did not fire, in words.
fn not_applied(f: &Fault) -> String {
    let why = match &f.target {
        FaultTarget::Request(n) => format!("`{}` made fewer than {n} model requests", f.agent),
        FaultTarget::Notification => {
            format!("no request of `{}` carried a notification", f.agent)
        }
        FaultTarget::WorkEnded(work) => {
            format!("`{}` made no request after `{work}` ended", f.agent)
        }
        FaultTarget::AfterTrigger { trigger, .. } => format!(
            "`{trigger}` did not happen, or `{}` made no request after it",
            f.agent
        ),
        FaultTarget::Work { work, .. } => format!(
            "`{work}` was not running when the fault was due (it had ended, never started, or the run ended first)"
        ),
    };
    format!("not applied: {why}, so the run is not the experiment asked for")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::Source;
    use crate::evidence::test_events::ev;
    use crate::scenario::FaultKind;

    fn fault(kind: FaultKind, agent: &str, target: FaultTarget) -> Fault {
        Fault {
            kind,
            agent: agent.into(),
            target,
            times: 1,
            seconds: 0.0,
            delay_ms: 0,
            line: 7,
            optional: false,
        }
    }

    /// A fault hits only as itself: its kind on its agent's request, its kill with a process
    /// signalled; another agent's fault, or a kill that found the work gone, is no hit.
    #[test]
    fn a_fault_is_applied_only_by_its_own_hit() {
        let http = fault(FaultKind::Http500, "main", FaultTarget::Request(2));
        let injected = |agent| {
            ev(
                1.0,
                Source::Fault,
                Some(agent),
                EventKind::FaultInjected {
                    seq: 2,
                    fault: FaultKind::Http500,
                    detail: "500".into(),
                },
            )
        };
        let kill = fault(
            FaultKind::KillTask,
            "main",
            FaultTarget::Work {
                work: "bg".into(),
                after_ms: 100,
                from: None,
            },
        );
        let signalled = |pids: Vec<u32>| {
            ev(
                2.0,
                Source::Fault,
                None,
                EventKind::WorkSignalled {
                    work: "bg".into(),
                    fault: FaultKind::KillTask,
                    signal: "SIGKILL".into(),
                    pids,
                },
            )
        };
        let judged = |events: Vec<Event>, f: &Fault| {
            judge(&Timeline::new(events), std::slice::from_ref(f)).remove(0)
        };
        assert!(judged(vec![injected("main")], &http).applied);
        let other = judged(vec![injected("worker")], &http);
        assert!(!other.applied && other.fails());
        assert_eq!(
            other.detail,
            "not applied: `main` made fewer than 2 model requests, so the run is not the experiment asked for"
        );
        assert!(judged(vec![signalled(vec![9])], &kill).applied);
        assert!(!judged(vec![signalled(vec![])], &kill).applied);
        let optional = Fault {
            optional: true,
            ..kill
        };
        assert!(!judged(vec![], &optional).fails());
    }
}
