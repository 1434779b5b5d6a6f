//! `minimize`'s runner: what it resolves (`prepare`: the variant flattened, `--set` applied,
//! the check to keep), the unreduced scenario's runs that fix the result to keep
//! (`fix_target`), and each batch of candidates run `--repeat` times at once and judged.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use super::super::{AppError, resolve};
use crate::backend::Cli;
use crate::classify::Outcome;
use crate::cli::{self, Exit, KeepChoice};
use crate::driver::Cancel;
use crate::matrix::keep::{self, Keep, Kept, Seen, Target};
use crate::matrix::minimize::candidate::Candidate;
use crate::matrix::{self, ExecOptions, Job};
use crate::scenario::edit::Editable;
use crate::scenario::{RangePolicy, Scenario};
use crate::store;

/// Runs candidates: each `--repeat` times, all at once.
pub struct Runner {
    pub cli: Cli,
    pub variant: String,
    pub name: String,
    pub repeat: u32,
    pub opts: ExecOptions,
    pub dir: PathBuf,
    pub keep: Keep,
    pub cancel: Cancel,
    pub counter: AtomicU32,
    pub runs: AtomicU32,
    /// Every judged candidate's runs, by the candidate's key: which checks they observed.
    pub seen: Mutex<std::collections::HashMap<String, Vec<Seen>>>,
}

impl Runner {
    /// Every run of every candidate, by candidate; an error is a setup failure.
    pub async fn run(&self, batch: &[Editable]) -> Result<Vec<Vec<Seen>>, AppError> {
        let mut jobs = Vec::new();
        let mut paths = Vec::new();
        for e in batch {
            let n = self.counter.fetch_add(1, Ordering::SeqCst);
            let mut e = e.clone();
            let name = if n == 0 {
                format!("{}-original", self.name)
            } else {
                format!("{}-c{n:04}", self.name)
            };
            e.set_name(&name);
            let path = self.dir.join("candidates").join(format!("{name}.toml"));
            store::write_atomic(&path, e.text().as_bytes())?;
            // On the runtime of the CLI it runs on, as the scenario it came from.
            let scenario =
                resolve::on_runtime(&Arc::new(Scenario::load(&path)?), self.cli.kind.runtime())?;
            paths.push(scenario.path.clone());
            let mut plan = scenario.plan_with(&self.variant, &[], RangePolicy::Enforce)?;
            matrix::add_faults(&mut plan, &self.opts.faults);
            let plan = Arc::new(plan);
            for repetition in 1..=self.repeat {
                jobs.push(Job {
                    reference: super::resolve::scenario_reference(&scenario),
                    scenario: scenario.clone(),
                    variant: self.variant.clone(),
                    cli: self.cli.clone(),
                    repetition,
                    overrides: vec![],
                    // A candidate carries its values in its text: inside its range, as
                    // `prepare` checked the --set values against the scenario's.
                    policy: RangePolicy::Enforce,
                    plan: plan.clone(),
                });
            }
        }
        let execution = matrix::execute(jobs, &self.opts, self.cancel.clone()).await;
        if let Some(f) = execution.failures.first() {
            return Err(AppError::setup(format!("{}: {}", f.job.title(), f.message)));
        }
        self.runs
            .fetch_add(execution.cells.len() as u32, Ordering::SeqCst);
        Ok(paths
            .iter()
            .map(|path| {
                execution
                    .cells
                    .iter()
                    .filter(|c| c.job.scenario.path == *path)
                    .map(|c| keep::seen(&c.result, &c.timeline, &self.keep))
                    .collect()
            })
            .collect())
    }
}

/// The scenario, its variant, and the unreduced candidate (flattened, `--set` applied).
pub struct Prepared {
    pub scenario: Arc<Scenario>,
    pub scenarios: Vec<Arc<Scenario>>,
    pub variant: String,
    pub base: Candidate,
}

pub fn prepare(args: &cli::MinimizeArgs, exec: &cli::ExecArgs) -> Result<Prepared, AppError> {
    let scenarios = resolve::driven(
        resolve::scenarios(std::slice::from_ref(&args.scenario))?,
        exec,
    )?;
    // The scenario as it runs on the CLI's runtime: its checks are that runtime's.
    let scenario = resolve::on_runtime(&scenarios[0], resolve::cli_runtime(&args.backend))?;
    resolve::check_exec_args(&scenarios, exec)?;
    let variant = exec
        .variants
        .first()
        .cloned()
        .unwrap_or_else(|| scenario.variants()[0].clone());
    let plan = scenario.plan(&variant, &exec.sets)?;
    if let KeepChoice::Check(name) = &args.keep
        && !plan.checks.iter().any(|c| c.name == *name)
    {
        let known: Vec<&str> = plan.checks.iter().map(|c| c.name.as_str()).collect();
        return Err(AppError::bad_input(format!(
            "--keep check:{name}: {}/{variant} has no such check (it has: {})",
            scenario.name,
            if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            }
        )));
    }
    let mut base = Editable::flatten(&scenario.source, &variant).map_err(AppError::bad_input)?;
    // Candidates are written elsewhere: an integration beside the scenario is named absolutely.
    let folder = scenario.path.parent().unwrap_or(std::path::Path::new("."));
    base.anchor_command(&std::path::absolute(folder).unwrap_or(folder.to_path_buf()));
    for (k, v) in &exec.sets {
        base = base.with_param_text(k, v).map_err(AppError::bad_input)?;
    }
    let base = Candidate::checked(base).ok_or_else(|| {
        AppError::bad_input(format!(
            "{}/{variant}: cannot flatten to one variant",
            scenario.name
        ))
    })?;
    Ok(Prepared {
        scenario,
        scenarios,
        variant,
        base,
    })
}

impl Runner {
    /// Whether each candidate still shows the result in every one of its runs. Once
    /// interrupted, nothing does (and nothing runs): the search then ends quickly.
    pub async fn judge(
        &self,
        batch: Vec<Candidate>,
        target: &Target,
    ) -> Result<Vec<bool>, AppError> {
        if self.cancel.borrow().is_some() {
            return Ok(vec![false; batch.len()]);
        }
        let docs: Vec<Editable> = batch.into_iter().map(|c| c.0).collect();
        let seen = self.run(&docs).await?;
        let mut memory = self.seen.lock().expect("seen lock");
        Ok(docs
            .iter()
            .zip(seen)
            .map(|(doc, runs)| {
                let kept = runs.len() == self.repeat as usize
                    && runs.iter().all(|r| target.misses(r).is_none());
                memory.insert(doc.text(), runs);
                kept
            })
            .collect())
    }
}

/// Runs the unreduced scenario `--repeat` times: every run must agree on what to keep, and
/// that is what every candidate must keep, with the experiment around it (`matrix::keep`).
pub async fn fix_target(
    runner: &Runner,
    base: &Candidate,
    name: &str,
    variant: &str,
) -> Result<Target, AppError> {
    let seen = runner.run(std::slice::from_ref(&base.0)).await?.remove(0);
    if runner.cancel.borrow().is_some() {
        return Err(AppError {
            code: Exit::Interrupted,
            message: "interrupted before the result to keep was known".into(),
        });
    }
    runner
        .seen
        .lock()
        .expect("seen lock")
        .insert(base.0.text(), seen.clone());
    let target =
        Target::of(&seen).ok_or_else(|| AppError::setup("the unreduced scenario did not run"))?;
    let first = &target.kept;
    if *first == Kept::Verdict(Outcome::Unknown) && seen.iter().all(|o| o.kept == *first) {
        return Err(AppError::bad_input(format!(
            "{name}/{variant} is judged `unknown`: the evidence decides nothing, so there is no result to keep (minimize a variant with a verdict, or keep a check with --keep check:NAME)"
        )));
    }
    if *first == Kept::NoCheck || seen.iter().any(|o| o.kept != *first) {
        let all: Vec<String> = seen.iter().map(|o| o.kept.to_string()).collect();
        return Err(AppError {
            code: Exit::Mismatch,
            message: format!(
                "{name}/{variant} does not give one result to keep: {} (minimizing needs a result every run agrees on)",
                all.join(", ")
            ),
        });
    }
    Ok(target)
}

/// What `--keep` asks for, as `matrix::keep` reads it.
pub fn keep_of(choice: &KeepChoice) -> Keep {
    match choice {
        KeepChoice::Verdict => Keep::Verdict,
        KeepChoice::Check(name) => Keep::Check(name.clone()),
    }
}
