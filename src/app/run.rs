//! `wakeprobe run`: scenarios on one CLI.

use super::invocation::{self, Outputs};
use super::{AppResult, resolve};
use crate::cli;

/// `wakeprobe run`
pub async fn run(args: cli::RunArgs) -> AppResult {
    let scenarios = resolve::scenarios(&args.scenarios)?;
    resolve::check_exec_args(&scenarios, &args.exec)?;
    let cli = resolve::cli(&args.backend).await?;
    let jobs = resolve::jobs(&scenarios, &args.exec, &cli)?;
    let run_dir = resolve::new_run_dir(&args.exec.out)?;
    let ran = invocation::execute(jobs, &args.exec, &scenarios, &run_dir).await?;
    let summary = invocation::finish(
        &Outputs {
            dir: &run_dir,
            junit: args.exec.junit.as_deref(),
            table: true,
            summary: true,
            index: true,
            extra_cases: &[],
        },
        &ran,
    )?;
    let code = invocation::exit_code(&summary, &ran);
    invocation::emit_summary(&run_dir, None, &summary, code);
    Ok(code)
}
