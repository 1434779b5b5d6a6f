//! Timeline -> Verdict: the harness's judgement, with the rules written down. No I/O.
//!
//! For each waiter W and background work K (named by the scenario's `[[watch]]`, or derived:
//! every background tool call that spawns an agent or starts a tracked command), the rules
//! below are tried in order ([`rules`] holds one function per rule, [`explain`] the wording).
//! They read only what the run observed of the CLI: a run the harness cut short (its ceiling,
//! a signal, its own failure) is judged up to the cut, and after a signal, process ends and the
//! CLI's exit in the moments before it are not taken as the CLI's doing.
//!
//! 1. K never started (no tool call, task or tracked process for it) -> `unknown`.
//! 2. W asked past the end of its script before K ended -> `unknown` (the run left the script).
//! 3. K did not end while the run was the CLI's own:
//!    K ran past the hang bound its scenario declares -> `child-failed` (hung); the harness cut
//!    the run short -> `unknown`; the CLI crashed -> `unknown`; W was finalized and the CLI
//!    exited with K still running -> `not-resumable`; otherwise `unknown`. A kill at the
//!    harness's cleanup is never an end.
//! 4. K failed on its own (non-zero exit, `failed` status) -> `child-failed`, saying whether and
//!    when W was told.
//! 5. W made a request carrying K's `<task-notification>` after K ended: after an unrelated
//!    input that came while W was silent -> `queued-until-input`, else `woke` with the latency.
//! 6. Otherwise the verdict rests on something not happening, which needs the rest of the run:
//!    the harness cut the run short -> `unknown`. Then: K was killed after W was finalized
//!    (SubagentStop without a later activation, or the session's end for the main agent) ->
//!    `not-resumable` (the kill is a consequence); W was finalized before K ended ->
//!    `not-resumable`; the CLI crashed -> `unknown`; the CLI killed K and ended the session ->
//!    `not-resumable`; the run ended less than the settle window after K -> `unknown`; a
//!    notification was printed on stdout but never delivered -> `not-resumable`; nothing
//!    anywhere -> `never-fired`. Before the rules on finalized waiters: the harness crashed the
//!    CLI while K ran and started it again, and K's end was never reported -> `never-fired`
//!    (what the killed process had done with W no longer decides), or `unknown` when the run
//!    ended less than the settle window after K.
//!
//! A restarted CLI's `stopped` for K while K still ran is never taken as K's notification, on
//! stdout or in a request.
//!
//! A `task_notification` line on stdout is never taken as delivery: only a model request
//! carrying the notification is. The run's outcome is the first pair's that is not `woke`
//! (declared pairs in file order), else `woke`.

pub mod audit;
mod explain;
mod facts;
pub mod faults;
pub mod filing;
pub mod result;
mod rules;

use serde::{Deserialize, Serialize};

use crate::checks::{self, CheckResult};
use crate::evidence::run::{EndReason, RunInfo};
use crate::evidence::{EventKind, ExitDesc, Timeline};
pub use crate::evidence::{Witness, secs};
use crate::scenario::{Check, MAIN_AGENT, Plan, Watch};
pub use explain::witness;

pub use crate::scenario::{ALL_OUTCOMES, Expected, Outcome};

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
    /// The rules' claim that the timeline contradicts (a bug in wakeprobe): the verdict is
    /// then `unknown`, and the run is never filed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contradiction: Option<audit::Contradiction>,
}

/// Everything the classifier reads.
pub struct Input<'a> {
    pub timeline: &'a Timeline,
    pub end: &'a EndReason,
    pub cli_exit: Option<&'a ExitDesc>,
    pub watch: &'a [Watch],
    pub checks: &'a [Check],
    /// The folder's invariants: judged like checks, reported apart.
    pub invariants: &'a [Check],
    /// Raw hook payloads and stream lines (for checks' `payload.` and `line.` paths).
    pub raw: &'a checks::RawSources,
    pub settle_ms: f64,
    /// What the run's CLI version can tell at all (`evidence::offers`).
    pub offers: &'a crate::evidence::offers::Offers,
}

/// A run's judgement: its outcome, each pair's verdict, each check's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Judgement {
    pub outcome: Outcome,
    pub verdicts: Vec<Verdict>,
    pub checks: Vec<CheckResult>,
    /// Whether each invariant of the scenario's folder holds in this run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invariants: Vec<CheckResult>,
    /// The lines an integration under test wrote that are not the protocol's, each with why
    /// (kept as evidence, never dropped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected_lines: Vec<Witness>,
    /// Whether each fault the run was to inject hit it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<faults::FaultResult>,
}

impl Judgement {
    /// The verdict that sets the run's outcome.
    pub fn primary(&self) -> Option<&Verdict> {
        self.verdicts
            .iter()
            .find(|v| v.outcome != Outcome::Woke)
            .or_else(|| self.verdicts.first())
    }

    /// The verdicts whose claims their own timeline contradicts (each a bug in wakeprobe).
    pub fn contradictions(&self) -> Vec<&audit::Contradiction> {
        self.verdicts
            .iter()
            .filter_map(|v| v.contradiction.as_ref())
            .collect()
    }

    /// True when every check with an expectation met it.
    pub fn checks_pass(&self) -> bool {
        self.failed_checks().is_empty()
    }

    /// The names of the checks that did not meet their expectation.
    pub fn failed_checks(&self) -> Vec<&str> {
        self.missed_checks()
            .into_iter()
            .map(|c| c.name.as_str())
            .collect()
    }

    /// The faults that did not hit the run and may not miss it: each fails the run.
    pub fn missed_faults(&self) -> Vec<&faults::FaultResult> {
        self.faults.iter().filter(|f| f.fails()).collect()
    }

    /// The checks that did not meet their expectation.
    pub fn missed_checks(&self) -> Vec<&CheckResult> {
        // A vacuous check with an expectation observed nothing: it does not meet it.
        self.checks
            .iter()
            .filter(|c| c.passed == Some(false) || (c.vacuous && c.expected.is_some()))
            .collect()
    }

    /// The layers the checks that missed their expectation put the fault in (a run of an
    /// integration under test), each once, the CLI first.
    pub fn layers_at_fault(&self) -> Vec<crate::checks::Layer> {
        use crate::checks::Layer;
        let missed: Vec<Layer> = self
            .missed_checks()
            .iter()
            .filter_map(|c| c.layer)
            .collect();
        [Layer::Cli, Layer::Integration]
            .into_iter()
            .filter(|l| missed.contains(l))
            .collect()
    }

    /// The checks whose observation is not what the scenario wants of the CLI (`want`): each
    /// a bug this run shows, whatever `expect` says of today's CLI.
    pub fn unmet_wants(&self) -> Vec<&CheckResult> {
        self.checks
            .iter()
            .filter(|c| c.meets_want == Some(false))
            .collect()
    }

    /// The names of the folder's invariants this run broke.
    pub fn broken_invariants(&self) -> Vec<&str> {
        self.invariants
            .iter()
            .filter(|c| c.passed == Some(false))
            .map(|c| c.name.as_str())
            .collect()
    }

    /// The invariants this run broke that its scenario does not say it may break: each fails
    /// the run.
    pub fn failing_invariants(&self) -> Vec<&CheckResult> {
        self.invariants
            .iter()
            .filter(|c| c.passed == Some(false) && c.may_break.is_none())
            .collect()
    }
}

pub fn judge(input: &Input) -> Judgement {
    let pairs = if input.watch.is_empty() {
        derive_pairs(input.timeline)
    } else {
        input.watch.to_vec()
    };
    // Verdicts read only what the run observed of the CLI; checks read everything.
    let observed = input.timeline.observed(*input.end);
    let mut verdicts: Vec<Verdict> = pairs
        .iter()
        .map(|w| classify_pair(input, &observed, w))
        .collect();
    let outcome = verdicts
        .iter()
        .map(|v| v.outcome)
        .find(|o| *o != Outcome::Woke)
        .unwrap_or(if verdicts.is_empty() {
            Outcome::Unknown
        } else {
            Outcome::Woke
        });
    let evidence = checks::Evidence {
        timeline: input.timeline,
        raw: input.raw,
        end: *input.end,
    };
    let checks = checks::run_all(&evidence, input.checks);
    let invariants = checks::run_all(&evidence, input.invariants);
    if verdicts.is_empty() {
        verdicts.push(Verdict {
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
            contradiction: None,
        });
    }
    Judgement {
        outcome,
        verdicts,
        checks,
        invariants,
        rejected_lines: rejected_lines(input.timeline),
        faults: vec![],
    }
}

/// The integration's lines that are not the protocol's, each with why.
fn rejected_lines(timeline: &Timeline) -> Vec<Witness> {
    timeline
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::RejectedLine { why, line } => Some(Witness::of(
                e,
                format!(
                    "{why}: `{}`",
                    crate::evidence::normalize::truncate(line, 80)
                ),
            )),
            _ => None,
        })
        .collect()
}

/// Judges a saved or finished run with its plan: the one way every command judges.
pub fn judge_run(
    info: &RunInfo,
    timeline: &Timeline,
    plan: &Plan,
    raw: &checks::RawSources,
) -> Judgement {
    use crate::evidence::offers::Offers;
    let offers = match info.backend {
        crate::backend::BackendKind::Claude => Offers::of_claude(&info.cli_version, info.mode),
        crate::backend::BackendKind::Sim { .. } => Offers::all(),
        crate::backend::BackendKind::Opencode => Offers::of_opencode(&info.cli_version),
    };
    let judgement = judge(&Input {
        timeline,
        end: &info.end,
        cli_exit: info.cli_exit.as_ref(),
        watch: &plan.watch,
        checks: &plan.checks,
        invariants: &plan.invariants,
        raw,
        settle_ms: plan.driver.settle.as_secs_f64() * 1000.0,
        offers: &offers,
    });
    Judgement {
        faults: faults::judge(timeline, &plan.faults),
        ..judgement
    }
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
                hang_after: None,
            });
        }
    }
    pairs
}

fn classify_pair(input: &Input, observed: &Timeline, watch: &Watch) -> Verdict {
    let f = facts::gather(observed, watch, *input.end);
    let scene = explain::Scene {
        tl: observed,
        f: &f,
        started: f.started,
        cli_exit: input.cli_exit.map(|e| e.describe()),
        settle_ms: input.settle_ms,
        offers: input.offers,
    };
    let decision = match f.started {
        None => rules::Decision::NeverStarted,
        Some(started) => rules::decide(&rules::Ctx {
            input,
            tl: observed,
            f: &f,
            started,
            crashed: rules::crashed(input),
        }),
    };
    let words = explain::words(&scene, &decision);
    let verdict = Verdict {
        waiter: watch.waiter.clone(),
        work: watch.work.clone(),
        outcome: decision.outcome(),
        latency_ms: decision.latency_ms(observed, &f),
        reason: words.reason,
        witness: words.witness,
        explanation: words.explanation,
        facts: words.facts,
        contradiction: None,
    };
    match audit::audit(input.timeline, &f, &decision) {
        Some(c) => contradicted(verdict, c),
        None => verdict,
    }
}

/// A verdict whose claim the timeline contradicts: `unknown`, saying both, its witness kept.
fn contradicted(v: Verdict, c: audit::Contradiction) -> Verdict {
    Verdict {
        outcome: Outcome::Unknown,
        latency_ms: None,
        reason: Some(c.reason()),
        explanation: format!(
            "The evidence does not decide: {}. (The rules had found {}: {})",
            c.reason(),
            v.outcome,
            v.explanation
        ),
        // The rules' facts may be the very claim that is false: none is kept as confirmed.
        facts: vec![],
        contradiction: Some(c),
        ..v
    }
}

/// Agreement of repeated runs: `not-resumable 5/5`, or `flaky: woke 3/5, not-resumable 2/5`.
pub fn agreement(outcomes: &[Outcome]) -> (Option<Outcome>, String) {
    agreement_of(outcomes, |o| o.to_string(), Disagreement::Flaky)
}

/// What runs that disagree are called: `flaky`, or a `race` their scenario declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disagreement {
    Flaky,
    Race,
}

impl Disagreement {
    /// `race` when every outcome lies in the race `expect` declares, else `flaky`.
    pub fn of(expect: Option<&Expected>, outcomes: &[Outcome]) -> Disagreement {
        match expect {
            Some(e) if e.is_race() && outcomes.iter().all(|o| e.allows(*o)) => Disagreement::Race,
            _ => Disagreement::Flaky,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Disagreement::Flaky => "flaky",
            Disagreement::Race => "race",
        }
    }
}

/// Agreement of repeated observations, each `label`led: the one they share (`woke 3/3`), or
/// none and each counted, most seen first (`flaky: woke 2/3, not-resumable 1/3`; `race: ...`
/// where the scenario declares the disagreement).
pub fn agreement_of<T: Ord + Clone>(
    items: &[T],
    label: impl Fn(&T) -> String,
    disagreement: Disagreement,
) -> (Option<T>, String) {
    let mut counts: Vec<(&T, usize)> = Vec::new();
    for item in items {
        match counts.iter_mut().find(|(k, _)| *k == item) {
            Some((_, n)) => *n += 1,
            None => counts.push((item, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let total = items.len();
    match counts.as_slice() {
        [] => (None, "no runs".into()),
        [(o, n)] => (Some((*o).clone()), format!("{} {n}/{total}", label(o))),
        many => (
            None,
            format!(
                "{}: {}",
                disagreement.as_str(),
                many.iter()
                    .map(|(o, n)| format!("{} {n}/{total}", label(o)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    }
}

#[cfg(test)]
mod tests;
