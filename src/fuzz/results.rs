//! What a fuzz run found, apart from running it: each generated case's status (agree, agree
//! with the reference's second run, differ, unstable on the reference itself, could not start,
//! not run), the kinds of difference with the cases that show them, the exit code, and the text
//! printed. `app::fuzz` runs the pairs, rechecks and shrinks; this only judges and words.

use std::path::Path;

use serde::Serialize;

use super::kinds;
use crate::cli::Exit;
use crate::conform::{self, Comparison};
use crate::scenario::Scenario;

/// The figures of the first line: the seed, both CLIs, how many runs and how long.
pub struct Totals {
    pub seed: u64,
    pub reference: String,
    pub sim: String,
    pub runs: u32,
    pub seconds: f64,
}

/// The repetition number of the reference's second run (1 and 2 are the pair's sides).
pub const RERUN: u32 = 3;

/// What a pair of runs gave.
pub enum Compared {
    Pair(Comparison),
    /// A side could not start (its CLI, its sandbox): a setup failure, not a difference.
    SetupFailed(String),
    /// Interrupted before both sides ran.
    NotRun,
}

impl Compared {
    pub fn pair(&self) -> Option<&Comparison> {
        match self {
            Compared::Pair(c) => Some(c),
            _ => None,
        }
    }
}

/// What one case showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Agree,
    /// The simulator has the shape of the reference's second run, which differed from its
    /// first: the reference raced itself, and the simulator took one of the paths it took.
    AgreeWithRerun,
    Differ,
    /// The simulator differs only where the reference also differs from itself: a race
    /// there, not a simulator gap.
    Unstable,
    /// A side could not start (with `failure`).
    SetupFailed,
    /// Interrupted before both sides ran.
    NotRun,
}

impl Status {
    /// The simulator took a path the reference took.
    pub fn agrees(self) -> bool {
        matches!(self, Status::Agree | Status::AgreeWithRerun)
    }
}

/// One generated case and what its pair of runs showed.
#[derive(Debug, Serialize)]
pub struct CaseResult {
    pub case: u32,
    pub name: String,
    pub file: String,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The kinds in which the reference's second run differed from its first (left out of
    /// `kinds`; a case whose every kind is among them is `unstable`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reference_unstable_in: Vec<String>,
    pub kinds: Vec<String>,
    pub reference_verdict: Option<String>,
    pub sim_verdict: Option<String>,
    pub differences: usize,
}

/// A kind of difference: the cases that show it and its shrunk scenario.
#[derive(Debug, Serialize)]
pub struct KindReport {
    pub kind: String,
    pub cases: Vec<u32>,
    /// `differences/NN-KIND/`, relative to the run folder.
    pub folder: String,
    pub shrunk: Option<Shrunk>,
}

#[derive(Debug, Serialize)]
pub struct Shrunk {
    pub from_case: u32,
    pub steps_before: usize,
    pub steps_after: usize,
    pub agents_after: usize,
    pub inputs_after: usize,
    pub runs: u32,
    pub minimal: String,
}

/// What the reference's second run of a differing case showed.
#[derive(Debug, Clone, Default)]
pub struct Recheck {
    /// The kinds in which it differed from the first run (empty: stable, or not rechecked).
    pub unstable: Vec<String>,
    /// Whether the simulator's run has its shape.
    pub sim_agrees: bool,
}

pub fn case_result(
    case: u32,
    scenario: &Scenario,
    outcome: &Compared,
    recheck: &Recheck,
) -> CaseResult {
    let unstable = &recheck.unstable;
    let compared = outcome.pair();
    // A kind the reference also shows against itself is a race there, not a simulator gap;
    // the case differs only if a kind remains.
    let kinds: Vec<String> = compared
        .map(|c| kinds::kinds_of(&c.differences))
        .unwrap_or_default()
        .into_iter()
        .filter(|k| !unstable.contains(k))
        .collect();
    let verdict = |dir: &Path| conform::shape_of(dir).ok().map(|s| s.outcome);
    CaseResult {
        case,
        name: scenario.name.clone(),
        file: format!("cases/{}.toml", scenario.name),
        status: match outcome {
            Compared::NotRun => Status::NotRun,
            Compared::SetupFailed(_) => Status::SetupFailed,
            Compared::Pair(c) if c.matches() => Status::Agree,
            Compared::Pair(_) if recheck.sim_agrees => Status::AgreeWithRerun,
            Compared::Pair(_) if kinds.is_empty() => Status::Unstable,
            Compared::Pair(_) => Status::Differ,
        },
        reference_unstable_in: unstable.clone(),
        failure: match outcome {
            Compared::SetupFailed(message) => Some(message.clone()),
            _ => None,
        },
        kinds: kinds.clone(),
        reference_verdict: compared.and_then(|c| verdict(&c.real_dir)),
        sim_verdict: compared.and_then(|c| verdict(&c.sim_dir)),
        differences: compared.map_or(0, |c| c.differences.len()),
    }
}

/// Differing cases by their primary kind, in the order the kinds first appear.
pub fn group_by_kind(cases: &[CaseResult]) -> Vec<KindReport> {
    let mut out: Vec<KindReport> = Vec::new();
    for case in cases.iter().filter(|c| c.status == Status::Differ) {
        let Some(kind) = kinds::primary(&case.kinds) else {
            continue;
        };
        match out.iter_mut().find(|k| k.kind == *kind) {
            Some(k) => k.cases.push(case.case),
            None => out.push(KindReport {
                kind: kind.clone(),
                cases: vec![case.case],
                folder: format!("differences/{:02}-{}", out.len() + 1, slug(kind)),
                shrunk: None,
            }),
        }
    }
    out
}

/// `main agent (events)` -> `main-agent-events`.
pub fn slug(kind: &str) -> String {
    kind.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("-")
        .to_lowercase()
}

/// 130 when interrupted, 3 when a run could not start, 1 when a case differs, else 0.
pub fn exit_code(cases: &[CaseResult], interrupted: bool) -> Exit {
    if interrupted {
        Exit::Interrupted
    } else if cases.iter().any(|c| c.status == Status::SetupFailed) {
        Exit::Setup
    } else if cases.iter().all(|c| c.status.agrees()) {
        Exit::Ok
    } else {
        Exit::Mismatch
    }
}

/// What is printed: the counts, then each kind with its cases and shrunk scenario.
pub fn render(totals: &Totals, cases: &[CaseResult], kinds: &[KindReport]) -> String {
    let count = |status: Status| cases.iter().filter(|c| c.status == status).count();
    let mut out = format!(
        "fuzz seed {}: {} case(s), {} vs {}: {} agree",
        totals.seed,
        cases.len(),
        totals.reference,
        totals.sim,
        cases.iter().filter(|c| c.status.agrees()).count(),
    );
    let with_rerun = count(Status::AgreeWithRerun);
    if with_rerun > 0 {
        out.push_str(&format!(
            " ({with_rerun} of them with the reference's second run, which differed from its first)"
        ));
    }
    out.push_str(&format!(", {} differ", count(Status::Differ)));
    let unstable: Vec<String> = cases
        .iter()
        .filter(|c| c.status == Status::Unstable)
        .map(|c| format!("c{:03}", c.case))
        .collect();
    if !unstable.is_empty() {
        out.push_str(&format!(
            ", {} unstable on the reference itself ({})",
            unstable.len(),
            unstable.join(", ")
        ));
    }
    let failed = count(Status::SetupFailed);
    if failed > 0 {
        out.push_str(&format!(", {failed} could not start"));
    }
    let not_run = count(Status::NotRun);
    if not_run > 0 {
        out.push_str(&format!(", {not_run} not run (interrupted)"));
    }
    out.push_str(&format!(
        " ({} runs, {:.0} s)\n",
        totals.runs, totals.seconds
    ));
    for k in kinds {
        let list: Vec<String> = k.cases.iter().map(|c| format!("c{c:03}")).collect();
        out.push_str(&format!(
            "  {}: {} case(s): {}\n",
            k.kind,
            k.cases.len(),
            list.join(", ")
        ));
        if let Some(s) = &k.shrunk {
            out.push_str(&format!(
                "    shrunk from c{:03}: {} -> {} step(s), {} agent(s), {} input(s) in {} runs: {}/{}\n",
                s.from_case,
                s.steps_before,
                s.steps_after,
                s.agents_after,
                s.inputs_after,
                s.runs,
                k.folder,
                s.minimal
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::generate;

    fn differing() -> Compared {
        Compared::Pair(Comparison {
            scenario: "s".into(),
            variant: "print".into(),
            real: "claude-2.1.332".into(),
            sim: "sim-fixed".into(),
            real_dir: "/nowhere/real".into(),
            sim_dir: "/nowhere/sim".into(),
            differences: vec![conform::Difference {
                place: "verdict".into(),
                detail: vec![],
            }],
        })
    }

    fn status(recheck: Recheck) -> Status {
        let case = generate::generate(1, 1);
        let scenario = Scenario::parse(Path::new("/fuzz/c.toml"), case.text).unwrap();
        case_result(1, &scenario, &differing(), &recheck).status
    }

    #[test]
    fn a_case_agrees_where_the_simulator_took_a_path_the_reference_took() {
        let second_run_like_sim = Recheck {
            unstable: vec!["verdict".into()],
            sim_agrees: true,
        };
        assert_eq!(status(second_run_like_sim), Status::AgreeWithRerun);
        assert!(Status::AgreeWithRerun.agrees());
    }

    #[test]
    fn a_race_in_the_reference_alone_is_unstable_and_a_stable_difference_differs() {
        let raced = Recheck {
            unstable: vec!["verdict".into()],
            sim_agrees: false,
        };
        assert_eq!(status(raced), Status::Unstable);
        assert!(!Status::Unstable.agrees());
        assert_eq!(status(Recheck::default()), Status::Differ);
        assert!(!Status::Differ.agrees());
    }
}
