//! One probe of a search (`bisect`, `history`, `threshold`): a handful of jobs on one CLI,
//! run into the probe's own folder. A cut-short probe is an error the searches can act on: a
//! signal stops the search, a setup failure skips the version or value.

use std::path::Path;
use std::sync::Arc;

use super::resolve;
use crate::cli::ExecArgs;
use crate::driver::Cancel;
use crate::matrix::{self, CellResult, Job};
use crate::scenario::Scenario;

/// Why a probe gave no judged runs.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("interrupted")]
    Interrupted,
    #[error("{0}")]
    Setup(String),
}

/// Runs `jobs` into `dir`; every job judged, or an error.
pub async fn run(
    jobs: Vec<Job>,
    exec: &ExecArgs,
    scenarios: &[Arc<Scenario>],
    dir: &Path,
    cancel: &Cancel,
) -> Result<Vec<CellResult>, ProbeError> {
    if cancel.borrow().is_some() {
        return Err(ProbeError::Interrupted);
    }
    let opts = resolve::exec_options(exec, scenarios, dir.to_path_buf())
        .map_err(|e| ProbeError::Setup(e.message))?;
    let execution = matrix::execute(jobs, &opts, cancel.clone()).await;
    if cancel.borrow().is_some() {
        return Err(ProbeError::Interrupted);
    }
    if let Some(failure) = execution.failures.first() {
        return Err(ProbeError::Setup(format!(
            "{}: {}",
            failure.job.title(),
            failure.message
        )));
    }
    Ok(execution.cells)
}
