//! `wakeprobe run`: scenarios on one CLI.

use super::invocation::{self, Outputs};
use super::{AppResult, resolve};
use crate::cli;

/// `wakeprobe run`
pub async fn run(args: cli::RunArgs) -> AppResult {
    // `NAME/VARIANT` as `history` and `threshold` take it; none means the whole library.
    let specs = match args.scenarios.as_slice() {
        [] => vec!["all".to_string()],
        given => given.to_vec(),
    };
    let targets = resolve::targets(&specs, &args.exec.variants)?;
    let targets = resolve::driven_targets(targets, &args.exec)?;
    // A scenario once per chosen variant, as `history` passes them: what reads this list
    // (`--variant`, `--set` and `--fault` checks, the template's folder) takes repeats alike.
    let scenarios: Vec<_> = targets.iter().map(|t| t.scenario.clone()).collect();
    // Each target on the runtime it runs on, then planned once with its values, ranges and
    // faults, before a CLI is installed.
    let named = resolve::named_runtime(&args.backend);
    let targets = resolve::on_runtimes(&targets, named.as_ref().map(std::slice::from_ref))?;
    let planned = resolve::plan_targets(&targets, &args.exec)?;
    // One CLI per runtime the targets run on.
    let mut jobs = Vec::new();
    for (_, cli) in resolve::clis_by_runtime(&args.backend, &targets).await? {
        jobs.extend(resolve::jobs_of(&planned, &args.exec, &cli)?);
    }
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
