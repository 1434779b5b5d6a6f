//! `wakeprobe run`: scenarios on one CLI.

use super::invocation::{self, Outputs, Ran};
use super::{AppResult, resolve};
use crate::cli;
use crate::matrix;

/// `wakeprobe run`
pub async fn run(args: cli::RunArgs) -> AppResult {
    let scenarios = resolve::scenarios(&args.scenarios)?;
    resolve::check_exec_args(&scenarios, &args.exec)?;
    let cli = resolve::cli(&args.backend).await?;
    let jobs = resolve::jobs(&scenarios, &args.exec, &cli)?;
    let run_dir = resolve::new_run_dir(&args.exec.out)?;
    let opts = resolve::exec_options(&args.exec, &scenarios, run_dir.clone())?;
    let cancel = resolve::cancel_on_signals();
    let execution = matrix::execute(jobs, &opts, cancel.clone()).await?;
    let ran = Ran::from_execution(execution, cancel.borrow().is_some());
    let summary = invocation::finish(
        &Outputs {
            dir: &run_dir,
            junit: args.exec.junit.as_deref(),
            table: true,
            summary: true,
        },
        &ran,
    )?;
    Ok(invocation::exit_code(&summary, &ran))
}
