//! `history`'s oracle: the search asks for runs of some cells on one version; the oracle
//! finds that version's CLI (a simulator profile, or an install within the budget), runs them
//! and answers with what each run observed.

use std::path::Path;
use std::sync::Arc;

use tokio::sync::Mutex;

use super::super::clis::clis_for;
use super::super::installs::{InstallBudgetError, Installs};
use super::super::{probe, resolve};
use super::key;
use super::setup::Setup;
use crate::backend::Cli;
use crate::cli;
use crate::matrix::history::search::{CellAnswer, OracleError, Request};
use crate::matrix::history::{self, CheckObservation, Observation};
use crate::matrix::{CellResult, Job};

/// The search's oracle: runs the asked cells on one version.
pub struct Oracle<'a> {
    pub args: &'a cli::HistoryArgs,
    pub setup: &'a Setup,
    pub run_dir: &'a Path,
    pub installs: Arc<Mutex<Installs>>,
    pub cancel: crate::driver::Cancel,
}

impl Oracle<'_> {
    pub async fn probe(&self, req: Request) -> Result<Vec<CellAnswer>, OracleError> {
        if self.cancel.borrow().is_some() {
            return Err(OracleError::Stop("interrupted".into()));
        }
        let cli = self.cli(&req).await?;
        let mut jobs: Vec<Job> = Vec::new();
        for asked in &req.cells {
            let i = self
                .setup
                .targets
                .iter()
                .position(|t| key(t) == asked.cell)
                .expect("the search asks only for its cells");
            let target = &self.setup.targets[i];
            jobs.extend(
                (asked.first..asked.first + asked.count).map(|repetition| Job {
                    reference: resolve::scenario_reference(&target.scenario),
                    scenario: target.scenario.clone(),
                    variant: target.variant.clone(),
                    cli: cli.clone(),
                    repetition,
                    overrides: self.setup.planned[i].overrides.clone(),
                    plan: self.setup.planned[i].plan.clone(),
                    policy: resolve::policy(&self.args.exec),
                }),
            );
        }
        let scenarios: Vec<_> = self
            .setup
            .targets
            .iter()
            .map(|t| t.scenario.clone())
            .collect();
        let dir = self.run_dir.join(&req.version);
        let cells = probe::run(jobs, &self.args.exec, &scenarios, &dir, &self.cancel)
            .await
            .map_err(|e| match e {
                probe::ProbeError::Interrupted => OracleError::Stop("interrupted".into()),
                probe::ProbeError::Setup(m) => OracleError::Skip(m),
            })?;
        let answers = self.answers(&req, &cells);
        let said: Vec<String> = answers
            .iter()
            .zip(&req.cells)
            .map(|(a, asked)| {
                let r = history::Reading {
                    version: req.version.clone(),
                    runs: a.runs.clone(),
                    reports: vec![],
                    run_id: String::new(),
                };
                let confirming = if asked.first > 1 {
                    format!(
                        " (confirming: runs {} to {})",
                        asked.first,
                        asked.first + asked.count - 1
                    )
                } else {
                    String::new()
                };
                let expect = self
                    .setup
                    .targets
                    .iter()
                    .find(|t| key(t) == a.cell)
                    .and_then(|t| t.scenario.expected(&t.variant));
                format!("{} {}{confirming}", a.cell, r.agreement(expect.as_ref()))
            })
            .collect();
        eprintln!("wakeprobe: {}: {}", req.version, said.join("; "));
        Ok(answers)
    }

    /// The CLI standing for a version: a simulator profile, or an install within the budget.
    async fn cli(&self, req: &Request) -> Result<Cli, OracleError> {
        if !self.args.sim_versions.is_empty() {
            let pair = (req.version.clone(), req.version.clone());
            return clis_for(std::slice::from_ref(&pair), &self.args.sim_versions, &[])
                .await
                .map(|mut c| c.remove(0))
                .map_err(|e| OracleError::Skip(e.message));
        }
        let mut installs = self.installs.lock().await;
        installs
            .cli(&req.version, &req.needed)
            .await
            .map_err(|e| match e {
                InstallBudgetError::Spent(m) => OracleError::Stop(m),
                InstallBudgetError::Failed(m) => OracleError::Skip(m),
            })
    }

    /// Each asked cell's observations (the verdict and the tracked checks) and report paths.
    fn answers(&self, req: &Request, cells: &[CellResult]) -> Vec<CellAnswer> {
        req.cells
            .iter()
            .map(|asked| {
                let mine: Vec<&CellResult> = cells
                    .iter()
                    .filter(|c| {
                        c.job.scenario.name == asked.cell.scenario
                            && c.job.variant == asked.cell.variant
                    })
                    .collect();
                CellAnswer {
                    cell: asked.cell.clone(),
                    runs: mine.iter().map(|c| self.observe(c)).collect(),
                    reports: mine
                        .iter()
                        .map(|c| {
                            let rel = c.dir.strip_prefix(self.run_dir).unwrap_or(&c.dir);
                            rel.join("report.md").display().to_string()
                        })
                        .collect(),
                }
            })
            .collect()
    }

    fn observe(&self, cell: &CellResult) -> Observation {
        let judgement = &cell.result.judgement;
        Observation {
            verdict: judgement.outcome,
            checks: judgement
                .checks
                .iter()
                .filter(|c| self.setup.settings.checks.contains(&c.name))
                .map(|c| CheckObservation {
                    name: c.name.clone(),
                    observed: c.observed.clone(),
                    passed: c.passed,
                    meets_want: c.meets_want,
                })
                .collect(),
        }
    }
}
