//! `wakeprobe bisect SCENARIO --good V1 --bad V2`: the first published version whose verdict
//! differs, by binary search over the versions between.

use super::matrix::{clis_for, published_versions};
use super::{AppError, AppResult, resolve};
use crate::backend::install;
use crate::cli::{self, exit};
use crate::matrix::bisect::{self, Probe};
use crate::matrix::{self};

/// `wakeprobe bisect SCENARIO --good V1 --bad V2`
pub async fn bisect(args: cli::BisectArgs) -> AppResult {
    let scenarios = resolve::scenarios(std::slice::from_ref(&args.scenario))?;
    let scenario = scenarios[0].clone();
    resolve::check_exec_args(&scenarios, &args.exec)?;
    let variant = match args.exec.variants.as_slice() {
        [] => scenario.variants()[0].clone(),
        [one] => one.clone(),
        _ => {
            return Err(AppError::bad_input(
                "bisect judges one variant: pass --variant once",
            ));
        }
    };
    let mut versions: Vec<String> = if !args.sim_versions.is_empty() {
        args.sim_versions.iter().map(|(v, _)| v.clone()).collect()
    } else if !args.versions.is_empty() {
        args.versions.clone()
    } else {
        published_versions().await?
    };
    versions.sort_by_key(|v| install::version_key(v));
    versions.dedup();
    let run_dir = resolve::new_run_dir(&args.exec.out)?;
    let mut exec = args.exec.clone();
    exec.variants = vec![variant.clone()];
    let cancel = resolve::cancel_on_signals();
    let judge = |version: String| {
        let (exec, sims, scenario, run_dir, cancel) = (
            exec.clone(),
            args.sim_versions.clone(),
            scenario.clone(),
            run_dir.clone(),
            cancel.clone(),
        );
        async move {
            let pair = (version.clone(), version.clone());
            let cli = clis_for(std::slice::from_ref(&pair), &sims)
                .await
                .map_err(|e| e.message)?
                .remove(0);
            let scenarios = std::slice::from_ref(&scenario);
            let jobs = resolve::jobs(scenarios, &exec, &cli).map_err(|e| e.message)?;
            let opts = resolve::exec_options(&exec, scenarios, run_dir.join(&version))
                .map_err(|e| e.message)?;
            let execution = matrix::execute(jobs, &opts, cancel.clone())
                .await
                .map_err(|e| e.to_string())?;
            if cancel.borrow().is_some() {
                return Err("interrupted".to_string());
            }
            if let Some(failure) = execution.failures.first() {
                return Err(failure.message.clone());
            }
            let outcomes: Vec<_> = execution
                .cells
                .iter()
                .map(|c| c.result.judgement.outcome)
                .collect();
            let (outcome, agreement) = crate::classify::agreement(&outcomes);
            eprintln!("wakeprobe: {version}: {agreement}");
            Ok(Probe {
                version,
                outcome,
                agreement,
            })
        }
    };
    let report = bisect::bisect(&versions, &args.good, &args.bad, judge)
        .await
        .map_err(|e| match e {
            bisect::BisectError::Run { .. } => AppError::setup(e.to_string()),
            other => AppError::bad_input(other.to_string()),
        })?;
    println!(
        "first version whose verdict differs: {}",
        report.first_bad.version
    );
    println!("steps:");
    for p in &report.steps {
        println!("  {} {}", p.version, p.agreement);
    }
    println!();
    println!(
        "{}",
        report.paragraph(&format!("{}/{}", scenario.name, variant))
    );
    eprintln!("reports: {}", run_dir.display());
    Ok(exit::OK)
}
