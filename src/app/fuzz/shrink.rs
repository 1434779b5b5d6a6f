//! `fuzz`'s second looks: every differing case run again on the reference (a race in the
//! reference is no evidence against the simulator), its comparison kept, and the first case
//! of each kind of difference shrunk (`matrix::minimize`) while its pair still shows that
//! kind.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use super::super::AppError;
use super::pairs::Pairs;
use crate::conform;
use crate::fuzz::kinds;
use crate::fuzz::results::{CaseResult, Compared, KindReport, Recheck, Shrunk, Status};
use crate::matrix::minimize::candidate::Candidate;
use crate::matrix::minimize::{self, Budget, Pass, Size, Subject};
use crate::scenario::Scenario;
use crate::scenario::edit::Editable;
use crate::store;

/// Every case that does not agree keeps its comparison, for reading beside its kind's.
pub fn write_case_reports(
    run_dir: &Path,
    cases: &[CaseResult],
    compared: &[Compared],
) -> Result<(), AppError> {
    for (case, outcome) in cases.iter().zip(compared) {
        if let (Some(c), false) = (outcome.pair(), case.status == Status::Agree) {
            // A case that agrees with the reference's second run keeps its first comparison:
            // the race it shows is the reference's.
            let path = run_dir.join(format!("differences/cases/c{:03}.txt", case.case));
            store::write_atomic(&path, c.render().as_bytes())?;
        }
    }
    Ok(())
}

/// The generated cases, as the kinds' shrinking needs them.
pub struct Subjects<'a> {
    pub numbers: &'a [u32],
    pub scenarios: &'a [Arc<Scenario>],
    pub compared: &'a [Compared],
    pub run_dir: &'a Path,
}

/// Writes each kind's first case (its file and comparison) into the kind's folder and
/// shrinks it there (not with `max_runs` 0, nor once interrupted).
pub async fn shrink_kinds(
    pairs: &Pairs,
    subjects: &Subjects<'_>,
    kinds: &mut [KindReport],
    max_runs: u32,
) -> Result<(), AppError> {
    let total = kinds.len();
    for (k, report) in kinds.iter_mut().enumerate() {
        let case = report.cases[0];
        let index = subjects
            .numbers
            .iter()
            .position(|n| *n == case)
            .unwrap_or(0);
        let scenario = &subjects.scenarios[index];
        let folder = subjects.run_dir.join(&report.folder);
        if let Some(c) = subjects.compared[index].pair() {
            store::write_atomic(&folder.join("conform.txt"), c.render().as_bytes())?;
            store::write_atomic(
                &folder.join(format!("{}.toml", scenario.name)),
                scenario.source.as_bytes(),
            )?;
        }
        if max_runs == 0 || pairs.cancel.borrow().is_some() {
            continue;
        }
        eprintln!(
            "wakeprobe: shrinking case {case} ({} of {total} kind(s)): {}",
            k + 1,
            report.kind
        );
        report.shrunk = Some(shrink(pairs, scenario, case, &report.kind, &folder, max_runs).await?);
    }
    Ok(())
}

/// Runs the reference a second time on every differing case: where it does not agree with
/// its own first run, the case is a race in the reference itself, not evidence against the
/// simulator (and where the simulator has the second run's shape, it agrees with a path the
/// reference took).
pub async fn recheck(
    pairs: &Pairs,
    scenarios: &[Arc<Scenario>],
    compared: &[Compared],
) -> Result<Vec<Recheck>, AppError> {
    let mut rechecks = vec![Recheck::default(); scenarios.len()];
    let differing: Vec<usize> = (0..scenarios.len())
        .filter(|i| compared[*i].pair().is_some_and(|c| !c.matches()))
        .collect();
    if differing.is_empty() || pairs.cancel.borrow().is_some() {
        return Ok(rechecks);
    }
    eprintln!(
        "wakeprobe: {} case(s) differ: running the reference once more on each",
        differing.len()
    );
    let again = pairs
        .rerun_reference(
            &differing
                .iter()
                .map(|i| scenarios[*i].clone())
                .collect::<Vec<_>>(),
        )
        .await?;
    let shape = |dir: &Path| conform::shape_of(dir).map_err(|e| AppError::setup(e.to_string()));
    for (i, dir) in differing.into_iter().zip(again) {
        if let (Some(dir), Some(first)) = (dir, compared[i].pair()) {
            let second = shape(&dir)?;
            rechecks[i] = Recheck {
                unstable: kinds::kinds_of(&conform::compare(&shape(&first.real_dir)?, &second)),
                sim_agrees: conform::compare(&second, &shape(&first.sim_dir)?).is_empty(),
            };
        }
    }
    Ok(rechecks)
}

/// Shrinks a differing case while its pair of runs still shows `kind`; writes `minimal.toml`
/// and its conform report into `folder`.
async fn shrink(
    pairs: &Pairs,
    scenario: &Scenario,
    case: u32,
    kind: &str,
    folder: &Path,
    max_runs: u32,
) -> Result<Shrunk, AppError> {
    let variant = scenario.variants().remove(0);
    let base = Editable::flatten(&scenario.source, &variant)
        .ok()
        .and_then(Candidate::checked)
        .map(Generated)
        .ok_or_else(|| AppError::setup(format!("{}: cannot be edited", scenario.name)))?;
    let counter = AtomicU32::new(0);
    let oracle = |batch: Vec<Generated>| {
        let counter = &counter;
        async move {
            if pairs.cancel.borrow().is_some() {
                return Ok(vec![false; batch.len()]);
            }
            let mut loaded = Vec::new();
            for candidate in &batch {
                let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                let mut e = candidate.0.0.clone();
                e.set_name(&format!("{}-k{n:03}", scenario.name));
                let path = folder.join("candidates").join(format!("k{n:03}.toml"));
                store::write_atomic(&path, e.text().as_bytes())?;
                loaded.push(Arc::new(Scenario::load(&path)?));
            }
            let compared = pairs.compare(&loaded).await?;
            Ok::<_, AppError>(
                compared
                    .into_iter()
                    .map(|c| {
                        c.pair().is_some_and(|c| {
                            kinds::kinds_of(&c.differences).iter().any(|k| k == kind)
                        })
                    })
                    .collect(),
            )
        }
    };
    let minimized = minimize::minimize(
        base.clone(),
        Budget {
            max_runs,
            runs_per_candidate: 2,
            spent: 0,
        },
        oracle,
        |_| {},
    )
    .await?;
    let mut minimal = minimized.subject.0.0.clone();
    minimal.set_name(&format!("{}-min", scenario.name));
    minimal.clear_expect();
    let path = folder.join("minimal.toml");
    store::write_atomic(
        &path,
        format!(
            "# Shrunk by `wakeprobe fuzz` from case {case} while the simulator still differs in: {kind}.\n\n{}",
            minimal.text()
        )
        .as_bytes(),
    )?;
    // The minimal scenario's own comparison, for the report.
    let minimal_scenario = Arc::new(Scenario::load(&path)?);
    if let Some(Compared::Pair(c)) = pairs.compare(&[minimal_scenario]).await?.pop() {
        store::write_atomic(&folder.join("minimal-conform.txt"), c.render().as_bytes())?;
    }
    let (before, after) = (base.size(), minimized.subject.size());
    Ok(Shrunk {
        from_case: case,
        steps_before: before.steps,
        steps_after: after.steps,
        agents_after: after.agents,
        inputs_after: after.inputs,
        runs: minimized.runs,
        minimal: "minimal.toml".into(),
    })
}

/// A generated case as shrinking sees it: a scenario candidate whose texts are left alone
/// (generated texts mean nothing; shortening them would only spend runs).
#[derive(Debug, Clone)]
struct Generated(Candidate);

impl Subject for Generated {
    fn units(&self, pass: Pass) -> Vec<String> {
        match pass {
            Pass::Texts => Vec::new(),
            _ => self.0.units(pass),
        }
    }
    fn without(&self, pass: Pass, removed: &[usize]) -> Option<Self> {
        self.0.without(pass, removed).map(Generated)
    }
    fn numbers(&self) -> Vec<(String, f64)> {
        self.0.numbers()
    }
    fn with_number(&self, name: &str, value: f64) -> Option<Self> {
        self.0.with_number(name, value).map(Generated)
    }
    fn integral(&self, name: &str) -> bool {
        self.0.integral(name)
    }
    fn key(&self) -> String {
        self.0.key()
    }
    fn size(&self) -> Size {
        self.0.size()
    }
}
