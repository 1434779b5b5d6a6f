//! `fuzz`'s pairs: each generated case run on the reference CLI and on the simulator under
//! test, both reduced to shapes and compared as `conform` does.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use super::super::{AppError, resolve};
use crate::backend::Cli;
use crate::conform::{self, Comparison};
use crate::driver::Cancel;
use crate::fuzz::results::{Compared, RERUN};
use crate::matrix::{self, ExecOptions, Job};
use crate::scenario::{RangePolicy, Scenario};

/// Runs scenarios on both CLIs and compares each pair.
pub struct Pairs {
    pub reference: Cli,
    pub sim: Cli,
    pub opts: ExecOptions,
    pub cancel: Cancel,
    pub runs: AtomicU32,
}

impl Pairs {
    /// Each scenario's comparison, or why there is none: a side did not start (a setup
    /// failure, kept with its message) or never ran (interrupted).
    pub async fn compare(&self, scenarios: &[Arc<Scenario>]) -> Result<Vec<Compared>, AppError> {
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
    pub async fn rerun_reference(
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
pub fn case_plan(scenario: &Scenario) -> Result<Arc<crate::scenario::Plan>, AppError> {
    let variant = scenario.variants().remove(0);
    Ok(Arc::new(scenario.plan_with(
        &variant,
        &[],
        RangePolicy::Enforce,
    )?))
}

/// One run of a case's only variant on `cli`, numbered `repetition`, with its plan.
pub fn case_job(
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
