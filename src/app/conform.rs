//! `wakeprobe conform`: a scenario on the real CLI and on the simulator, timeline shapes
//! compared lane by lane.

use std::path::Path;

use super::invocation::{self, Outputs};
use super::{AppError, AppResult, resolve};
use crate::classify::result::ExtraCase;
use crate::classify::result::RunResult;
use crate::cli::{self, Exit};
use crate::store;

pub async fn conform(args: cli::ConformArgs) -> AppResult {
    let scenarios = resolve::scenarios(std::slice::from_ref(&args.scenario))?;
    resolve::check_exec_args(&scenarios, &args.exec)?;
    let sim = resolve::sim_cli(&args.profile)?;
    let real = resolve::claude_version(&args.claude_version).await?;
    let mut jobs = resolve::jobs(&scenarios, &args.exec, &real)?;
    jobs.extend(resolve::jobs(&scenarios, &args.exec, &sim)?);
    let run_dir = resolve::new_run_dir(&args.exec.out)?;
    let ran = invocation::execute(jobs, &args.exec, &scenarios, &run_dir).await?;
    let cells: Vec<(&RunResult, &Path)> = ran
        .rows
        .iter()
        .map(|r| (&r.result, r.dir.as_path()))
        .collect();
    let comparisons =
        crate::conform::compare_cells(&cells).map_err(|e| AppError::setup(e.to_string()))?;
    let extra: Vec<ExtraCase> = comparisons.iter().map(conform_case).collect();
    let summary = invocation::finish(
        &Outputs {
            dir: &run_dir,
            junit: args.exec.junit.as_deref(),
            table: false,
            summary: true,
            index: true,
            extra_cases: &extra,
        },
        &ran,
    )?;
    let code = invocation::exit_code(&summary, &ran);
    if code == Exit::Interrupted || code == Exit::Setup {
        return Ok(code);
    }
    if comparisons.is_empty() {
        return Err(AppError::setup("no run pair finished: nothing to compare"));
    }
    let text: String = comparisons.iter().map(|c| c.render()).collect();
    print!("{text}");
    store::write_atomic(&run_dir.join("conform.txt"), text.as_bytes())?;
    store::write_atomic(
        &run_dir.join("conform.json"),
        &serde_json::to_vec_pretty(&comparisons).unwrap_or_default(),
    )?;
    Ok(if comparisons.iter().all(|c| c.matches()) {
        Exit::Ok
    } else {
        Exit::Mismatch
    })
}

/// A comparison as a JUnit case: failed when the shapes part, with where they part.
fn conform_case(c: &crate::conform::Comparison) -> ExtraCase {
    let differences = c.differences.len();
    ExtraCase {
        name: format!(
            "conform {}/{}: {} vs {}",
            c.scenario, c.variant, c.real, c.sim
        ),
        classname: format!("wakeprobe.conform.{}", c.scenario),
        failure: (!c.matches()).then(|| {
            let first = c
                .differences
                .first()
                .map(|d| format!(": first at {}", d.place))
                .unwrap_or_default();
            (
                "shape".to_string(),
                format!(
                    "{differences} difference{}{first}",
                    if differences == 1 { "" } else { "s" }
                ),
            )
        }),
        system_out: c.render(),
    }
}
