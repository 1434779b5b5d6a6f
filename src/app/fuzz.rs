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

use super::minimize::Candidate;
use super::{AppError, AppResult, resolve};
use crate::backend::Cli;
use crate::cli;
use crate::conform::{self, Comparison};
use crate::driver::Cancel;
use crate::fuzz::results::{
    CaseResult, Compared, KindReport, RERUN, Recheck, Shrunk, Status, Totals, case_result,
    exit_code, group_by_kind, render,
};
use crate::fuzz::{generate, kinds};
use crate::matrix::minimize::{self, Budget, Pass, Size, Subject};
use crate::matrix::{self, ExecOptions, Job};
use crate::scenario::edit::Editable;
use crate::scenario::{RangePolicy, Scenario};
use crate::store;

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
            let plan = case_plan(scenario)?;
            for (side, cli) in [&self.reference, &self.sim].into_iter().enumerate() {
                // The side is the repetition, so that a profile compared with itself runs twice.
                jobs.push(case_job(scenario, cli, side as u32 + 1, plan.clone()));
            }
        }
        let execution = matrix::execute(jobs, &self.opts, self.cancel.clone()).await;
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
            .map(|scenario| {
                Ok(case_job(
                    scenario,
                    &self.reference,
                    RERUN,
                    case_plan(scenario)?,
                ))
            })
            .collect::<Result<Vec<Job>, AppError>>()?;
        let execution = matrix::execute(jobs, &self.opts, self.cancel.clone()).await;
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

/// A case's only variant, planned (once for every run of it).
fn case_plan(scenario: &Scenario) -> Result<Arc<crate::scenario::Plan>, AppError> {
    let variant = scenario.variants().remove(0);
    Ok(Arc::new(scenario.plan_with(
        &variant,
        &[],
        RangePolicy::Enforce,
    )?))
}

/// One run of a case's only variant on `cli`, numbered `repetition`, with its plan.
fn case_job(
    scenario: &Arc<Scenario>,
    cli: &Cli,
    repetition: u32,
    plan: Arc<crate::scenario::Plan>,
) -> Job {
    Job {
        reference: resolve::scenario_reference(scenario),
        scenario: scenario.clone(),
        variant: scenario.variants().remove(0),
        cli: cli.clone(),
        repetition,
        overrides: vec![],
        policy: RangePolicy::Enforce,
        plan,
    }
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
    opts.progress = match args.quiet {
        true => crate::matrix::progress::Display::Off,
        false => crate::matrix::progress::Display::Full,
    };
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
        &Totals {
            seed: args.seed,
            reference: pairs.reference.label(),
            sim: pairs.sim.label(),
            runs: pairs.runs.load(Ordering::SeqCst),
            seconds: started.elapsed().as_secs_f64(),
        },
        &cases,
        &kinds,
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
