//! Cells and their execution: scenario x variant x CLI x repetition, run concurrently.
//!
//! `wakeprobe run` is a one-CLI matrix. Each cell gets its own folder under the invocation's
//! run-id folder, and its evidence and result are written the moment it ends, so a later
//! failure or Ctrl-C loses nothing that finished.

pub mod bisect;
pub mod grid;
pub mod progress;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::{Semaphore, watch};

use crate::backend::Cli;
use crate::classify;
use crate::driver::netns::NetworkPolicy;
use crate::driver::{self, LiveStatus, RunRecord, RunRequest, StatusHandle};
use crate::report::{self, json::RunResult};
use crate::scenario::{Scenario, ScenarioError};

/// One run to make.
#[derive(Debug, Clone)]
pub struct Job {
    pub scenario: Arc<Scenario>,
    pub variant: String,
    pub cli: Cli,
    pub repetition: u32,
    pub overrides: Vec<(String, String)>,
}

impl Job {
    /// `scenario/variant.cli.rN`: the cell's folder under the run-id folder.
    pub fn folder(&self) -> PathBuf {
        PathBuf::from(&self.scenario.name).join(format!(
            "{}.{}.r{}",
            self.variant,
            self.cli.label(),
            self.repetition
        ))
    }

    pub fn title(&self) -> String {
        format!("{}/{}", self.scenario.name, self.variant)
    }

    /// The command that reproduces this cell alone.
    pub fn command(&self) -> String {
        let mut cmd = format!(
            "wakeprobe run {} --variant {}",
            self.scenario.path.display(),
            self.variant
        );
        for (k, v) in &self.overrides {
            cmd.push_str(&format!(" --set {k}={v}"));
        }
        match &self.cli.kind {
            crate::backend::BackendKind::Claude => {
                cmd.push_str(&format!(" --claude-version {}", self.cli.version))
            }
            crate::backend::BackendKind::Sim { profile } => {
                cmd.push_str(&format!(" --backend sim --profile {profile}"))
            }
        }
        cmd
    }
}

#[derive(Debug, Clone)]
pub struct ExecOptions {
    pub run_dir: PathBuf,
    pub jobs: usize,
    pub template: PathBuf,
    pub keep: bool,
    pub network: NetworkPolicy,
    pub progress: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("{cell}: {source}")]
    Driver {
        cell: String,
        source: driver::DriverError,
    },
}

/// A finished cell.
#[derive(Debug, Clone)]
pub struct CellResult {
    pub job: Job,
    pub record: RunRecord,
    pub result: RunResult,
}

/// Runs every job, at most `jobs` at a time; stops starting new ones once `cancel` is set.
/// Results come back in job order; jobs that never started are absent.
pub async fn execute(
    jobs: Vec<Job>,
    opts: &ExecOptions,
    cancel: watch::Receiver<bool>,
) -> Result<Vec<CellResult>, ExecError> {
    let limit = Arc::new(Semaphore::new(opts.jobs.max(1)));
    let statuses: Arc<Mutex<Vec<(String, StatusHandle)>>> = Arc::default();
    let board = progress::Board::start(statuses.clone(), jobs.len(), opts.progress);
    let mut handles = Vec::new();
    for job in jobs {
        let plan = job.scenario.plan(&job.variant, &job.overrides)?;
        let limit = limit.clone();
        let cancel = cancel.clone();
        let statuses = statuses.clone();
        let board = board.clone();
        let opts = opts.clone();
        let watch = plan.watch.clone();
        let checks = plan.checks.clone();
        let settle_ms = plan.driver.settle.as_secs_f64() * 1000.0;
        let saved_plan = plan.clone();
        let source = job.scenario.source.clone();
        handles.push(tokio::spawn(async move {
            let _permit = limit.acquire_owned().await.expect("semaphore open");
            if *cancel.borrow() {
                return None;
            }
            let status: StatusHandle = Arc::new(Mutex::new(LiveStatus::default()));
            statuses
                .lock()
                .expect("status list")
                .push((job.title(), status.clone()));
            let dir = opts.run_dir.join(job.folder());
            let result = driver::run(RunRequest {
                plan,
                cli: job.cli.clone(),
                repetition: job.repetition,
                dir,
                template: opts.template.clone(),
                keep_sandbox: opts.keep,
                network: opts.network,
                cancel,
                status: status.clone(),
                command: job.command(),
                scenario_source: job.scenario.source.clone(),
            })
            .await;
            statuses
                .lock()
                .expect("status list")
                .retain(|(_, s)| !Arc::ptr_eq(s, &status));
            let result = result.and_then(|record| {
                let judgement = classify::judge(&classify::Input {
                    timeline: &record.timeline,
                    end: &record.info.end,
                    cli_exit: record.info.cli_exit.as_ref(),
                    watch: &watch,
                    checks: &checks,
                    settle_ms,
                });
                let result = RunResult::new(&record, judgement);
                report::write_run_reports(
                    &record.dir,
                    &record.redactor,
                    &result,
                    &record.timeline,
                    &saved_plan,
                    Some(&source),
                    None,
                )
                .map_err(driver::DriverError::Store)?;
                Ok((record, result))
            });
            board.finished(&job.title(), result.as_ref().ok().map(|(_, r)| r));
            Some(match result {
                Ok((record, result)) => Ok(CellResult {
                    job,
                    record,
                    result,
                }),
                Err(source) => Err(ExecError::Driver {
                    cell: job.title(),
                    source,
                }),
            })
        }));
    }
    let mut results = Vec::new();
    let mut first_error = None;
    for handle in handles {
        match handle.await {
            Ok(Some(Ok(cell))) => results.push(cell),
            Ok(Some(Err(e))) => {
                if first_error.is_none() {
                    first_error = Some(e);
                }
            }
            Ok(None) => {}
            Err(join) => tracing::error!(%join, "a run task panicked"),
        }
    }
    board.stop();
    match first_error {
        Some(e) if results.is_empty() => Err(e),
        Some(e) => {
            tracing::error!("{e}");
            Ok(results)
        }
        None => Ok(results),
    }
}

/// A run-id: UTC date and time plus a short suffix, sortable and unique enough.
pub fn new_run_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}-{:03x}",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60,
        (now.subsec_nanos() ^ std::process::id()) & 0xfff
    )
}

/// Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_are_right() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_422), (2025, 11, 30));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        let id = new_run_id();
        assert_eq!(id.len(), 19, "{id}");
    }
}
