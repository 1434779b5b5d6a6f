//! `wakeprobe fuzz`: generated scenarios ([`crate::fuzz::generate`]) run on a reference CLI
//! (the real one, or a simulator profile) and on the simulator under test; each pair of runs is
//! reduced to shapes and compared as `conform` does. Differing cases are sorted by kind of
//! difference, and the first case of each kind is shrunk with [`crate::matrix::minimize`] to
//! the smallest scenario that still shows that kind.
//!
//! The run folder holds `cases/` (every generated scenario), `runs/` (every run),
//! `differences/NN-KIND/` (the case's conform report, its minimal scenario and that one's
//! report), `differences/cases/cNNN.txt` (the comparison of every case that does not agree),
//! `fuzz.txt` (what was printed) and `fuzz.json`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use serde::Serialize;

use super::minimize::Candidate;
use super::{AppError, AppResult, resolve};
use crate::backend::Cli;
use crate::cli::{self, exit};
use crate::conform::{self, Comparison};
use crate::driver::Cancel;
use crate::fuzz::{generate, kinds};
use crate::matrix::minimize::{self, Budget, Pass, Size, Subject};
use crate::matrix::{self, ExecOptions, Job};
use crate::report::store;
use crate::scenario::edit::Editable;
use crate::scenario::{RangePolicy, Scenario};

/// Runs scenarios on both CLIs and compares each pair.
struct Pairs {
    reference: Cli,
    sim: Cli,
    opts: ExecOptions,
    cancel: Cancel,
    runs: AtomicU32,
}

impl Pairs {
    /// Each scenario's comparison, or why there is none: a side did not start (a setup
    /// failure, kept with its message) or never ran (interrupted).
    async fn compare(&self, scenarios: &[Arc<Scenario>]) -> Result<Vec<Compared>, AppError> {
        let mut jobs = Vec::new();
        for scenario in scenarios {
            for (side, cli) in [&self.reference, &self.sim].into_iter().enumerate() {
                // The side is the repetition, so that a profile compared with itself runs twice.
                jobs.push(case_job(scenario, cli, side as u32 + 1));
            }
        }
        let execution = matrix::execute(jobs, &self.opts, self.cancel.clone()).await?;
        self.runs
            .fetch_add(execution.cells.len() as u32, Ordering::SeqCst);
        let cell = |scenario: &Scenario, repetition: u32| {
            execution
                .cells
                .iter()
                .find(|c| c.job.scenario.path == scenario.path && c.job.repetition == repetition)
        };
        scenarios
            .iter()
            .map(|scenario| {
                if let Some(f) = execution
                    .failures
                    .iter()
                    .find(|f| f.job.scenario.path == scenario.path)
                {
                    return Ok(Compared::SetupFailed(format!(
                        "{}: {}",
                        f.job.title(),
                        f.message
                    )));
                }
                let (Some(real), Some(sim)) = (cell(scenario, 1), cell(scenario, 2)) else {
                    return Ok(Compared::NotRun);
                };
                let shape =
                    |dir: &Path| conform::shape_of(dir).map_err(|e| AppError::setup(e.to_string()));
                Ok(Compared::Pair(Comparison {
                    scenario: scenario.name.clone(),
                    variant: real.job.variant.clone(),
                    real: self.reference.label(),
                    sim: self.sim.label(),
                    real_dir: real.dir.clone(),
                    sim_dir: sim.dir.clone(),
                    differences: conform::compare(&shape(&real.dir)?, &shape(&sim.dir)?),
                }))
            })
            .collect()
    }

    /// Runs the reference once more on each scenario: the folder of each run that finished.
    async fn rerun_reference(
        &self,
        scenarios: &[Arc<Scenario>],
    ) -> Result<Vec<Option<std::path::PathBuf>>, AppError> {
        let jobs = scenarios
            .iter()
            .map(|scenario| case_job(scenario, &self.reference, RERUN))
            .collect();
        let execution = matrix::execute(jobs, &self.opts, self.cancel.clone()).await?;
        self.runs
            .fetch_add(execution.cells.len() as u32, Ordering::SeqCst);
        Ok(scenarios
            .iter()
            .map(|s| {
                execution
                    .cells
                    .iter()
                    .find(|c| c.job.scenario.path == s.path)
                    .map(|c| c.dir.clone())
            })
            .collect())
    }
}

/// One run of a case's only variant on `cli`, numbered `repetition`.
fn case_job(scenario: &Arc<Scenario>, cli: &Cli, repetition: u32) -> Job {
    Job {
        reference: resolve::scenario_reference(scenario),
        scenario: scenario.clone(),
        variant: scenario.variants().remove(0),
        cli: cli.clone(),
        repetition,
        overrides: vec![],
        policy: RangePolicy::Enforce,
    }
}

/// The repetition number of the reference's second run (1 and 2 are the pair's sides).
const RERUN: u32 = 3;

/// What a pair of runs gave.
enum Compared {
    Pair(Comparison),
    /// A side could not start (its CLI, its sandbox): a setup failure, not a difference.
    SetupFailed(String),
    /// Interrupted before both sides ran.
    NotRun,
}

impl Compared {
    fn pair(&self) -> Option<&Comparison> {
        match self {
            Compared::Pair(c) => Some(c),
            _ => None,
        }
    }
}

/// What one case showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Status {
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
    fn agrees(self) -> bool {
        matches!(self, Status::Agree | Status::AgreeWithRerun)
    }
}

/// One generated case and what its pair of runs showed.
#[derive(Debug, Serialize)]
struct CaseResult {
    case: u32,
    name: String,
    file: String,
    status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure: Option<String>,
    /// The kinds in which the reference's second run differed from its first (left out of
    /// `kinds`; a case whose every kind is among them is `unstable`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    reference_unstable_in: Vec<String>,
    kinds: Vec<String>,
    reference_verdict: Option<String>,
    sim_verdict: Option<String>,
    differences: usize,
}

/// A kind of difference: the cases that show it and its shrunk scenario.
#[derive(Debug, Serialize)]
struct KindReport {
    kind: String,
    cases: Vec<u32>,
    /// `differences/NN-KIND/`, relative to the run folder.
    folder: String,
    shrunk: Option<Shrunk>,
}

#[derive(Debug, Serialize)]
struct Shrunk {
    from_case: u32,
    steps_before: usize,
    steps_after: usize,
    agents_after: usize,
    inputs_after: usize,
    runs: u32,
    minimal: String,
}

/// `wakeprobe fuzz`
pub async fn fuzz(args: cli::FuzzArgs) -> AppResult {
    let started = Instant::now();
    resolve::check_out(&args.place.out)?;
    let sim = resolve::sim_cli(&args.profile)?;
    let reference = match &args.reference_profile {
        Some(profile) => resolve::sim_cli(profile)?,
        None => resolve::claude_version(&args.claude_version).await?,
    };
    let numbers = case_numbers(&args)?;
    let run_dir = resolve::new_run_dir(&args.place.out)?;
    let scenarios = write_cases(&run_dir, args.seed, &numbers)?;
    let exec = args.exec();
    let mut opts = resolve::exec_options(&exec, &scenarios, run_dir.join("runs"))?;
    opts.progress = !args.quiet;
    let pairs = Pairs {
        reference,
        sim,
        opts,
        cancel: resolve::cancel_on_signals(),
        runs: AtomicU32::new(0),
    };
    eprintln!(
        "wakeprobe: fuzz seed {}: {} case(s), {} vs {}",
        args.seed,
        numbers.len(),
        pairs.reference.label(),
        pairs.sim.label()
    );
    let compared = pairs.compare(&scenarios).await?;
    let rechecks = recheck(&pairs, &scenarios, &compared).await?;
    let cases: Vec<CaseResult> = numbers
        .iter()
        .zip(&scenarios)
        .zip(&compared)
        .zip(&rechecks)
        .map(|(((n, s), c), u)| case_result(*n, s, c, u))
        .collect();
    write_case_reports(&run_dir, &cases, &compared)?;
    let mut kinds = group_by_kind(&cases);
    let subjects = Subjects {
        numbers: &numbers,
        scenarios: &scenarios,
        compared: &compared,
        run_dir: &run_dir,
    };
    shrink_kinds(&pairs, &subjects, &mut kinds, args.shrink_runs).await?;
    let text = render(
        &args,
        &pairs,
        &cases,
        &kinds,
        started.elapsed().as_secs_f64(),
    );
    print!("{text}");
    println!("{}", run_dir.display());
    store::write_atomic(&run_dir.join("fuzz.txt"), text.as_bytes())?;
    let json = serde_json::json!({
        "seed": args.seed,
        "reference": pairs.reference.label(),
        "sim": pairs.sim.label(),
        "cases": cases,
        "kinds": kinds,
        "runs": pairs.runs.load(Ordering::SeqCst),
        "seconds": started.elapsed().as_secs_f64(),
        "interrupted": pairs.cancel.borrow().is_some(),
    });
    store::write_atomic(
        &run_dir.join("fuzz.json"),
        &serde_json::to_vec_pretty(&json).unwrap_or_default(),
    )?;
    for failure in cases.iter().filter_map(|c| c.failure.as_ref()) {
        eprintln!("wakeprobe: could not start: {failure}");
    }
    Ok(exit_code(&cases, pairs.cancel.borrow().is_some()))
}

/// 130 when interrupted, 3 when a run could not start, 1 when a case differs, else 0.
fn exit_code(cases: &[CaseResult], interrupted: bool) -> i32 {
    if interrupted {
        exit::INTERRUPTED
    } else if cases.iter().any(|c| c.status == Status::SetupFailed) {
        exit::SETUP
    } else if cases.iter().all(|c| c.status.agrees()) {
        exit::OK
    } else {
        exit::MISMATCH
    }
}

/// Every case that does not agree keeps its comparison, for reading beside its kind's.
fn write_case_reports(
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
struct Subjects<'a> {
    numbers: &'a [u32],
    scenarios: &'a [Arc<Scenario>],
    compared: &'a [Compared],
    run_dir: &'a Path,
}

/// Writes each kind's first case (its file and comparison) into the kind's folder and
/// shrinks it there (not with `max_runs` 0, nor once interrupted).
async fn shrink_kinds(
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

/// What the reference's second run of a differing case showed.
#[derive(Debug, Clone, Default)]
struct Recheck {
    /// The kinds in which it differed from the first run (empty: stable, or not rechecked).
    unstable: Vec<String>,
    /// Whether the simulator's run has its shape.
    sim_agrees: bool,
}

/// Runs the reference a second time on every differing case: where it does not agree with
/// its own first run, the case is a race in the reference itself, not evidence against the
/// simulator (and where the simulator has the second run's shape, it agrees with a path the
/// reference took).
async fn recheck(
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

/// The case numbers to run: `--case` when given, else 1..=`--cases`.
fn case_numbers(args: &cli::FuzzArgs) -> Result<Vec<u32>, AppError> {
    if args.only.is_empty() {
        return Ok((1..=args.cases).collect());
    }
    if let Some(zero) = args.only.iter().find(|n| **n == 0) {
        return Err(AppError::bad_input(format!(
            "--case {zero}: cases are numbered from 1"
        )));
    }
    Ok(args.only.clone())
}

/// Writes every case into `cases/` and loads it back, as any scenario file is loaded.
fn write_cases(run_dir: &Path, seed: u64, numbers: &[u32]) -> Result<Vec<Arc<Scenario>>, AppError> {
    numbers
        .iter()
        .map(|n| {
            let case = generate::generate(seed, *n);
            let path = run_dir.join("cases").join(format!("{}.toml", case.name));
            store::write_atomic(&path, case.text.as_bytes())?;
            Ok(Arc::new(Scenario::load(&path)?))
        })
        .collect()
}

fn case_result(
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
fn group_by_kind(cases: &[CaseResult]) -> Vec<KindReport> {
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
fn slug(kind: &str) -> String {
    kind.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("-")
        .to_lowercase()
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

/// What is printed: the counts, then each kind with its cases and shrunk scenario.
fn render(
    args: &cli::FuzzArgs,
    pairs: &Pairs,
    cases: &[CaseResult],
    kinds: &[KindReport],
    seconds: f64,
) -> String {
    let count = |status: Status| cases.iter().filter(|c| c.status == status).count();
    let mut out = format!(
        "fuzz seed {}: {} case(s), {} vs {}: {} agree",
        args.seed,
        cases.len(),
        pairs.reference.label(),
        pairs.sim.label(),
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
        " ({} runs, {seconds:.0} s)\n",
        pairs.runs.load(Ordering::SeqCst)
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
