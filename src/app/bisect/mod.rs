//! `wakeprobe bisect SCENARIO --good V1 --bad V2`: the first published version whose verdict
//! differs, by binary search over the versions between. Every probe's runs are kept under the
//! run folder, with a `summary.json`, and with `--junit` a JUnit file holding each probe's
//! cell and one case for the bisection itself.

mod probe;

use std::sync::Mutex;

use super::clis::clis_for;
use super::invocation::{self, Outputs, Ran};
use super::resolve::{self, Target};
use super::{AppError, AppResult};
use crate::backend::install;
use crate::cli::{self, Exit};
use crate::matrix::bisect::{self, BisectError};
use probe::{Prober, print_report};

/// `wakeprobe bisect SCENARIO --good V1 --bad V2`
pub async fn bisect(args: cli::BisectArgs) -> AppResult {
    let scenarios = resolve::driven(
        resolve::scenarios(std::slice::from_ref(&args.scenario))?,
        &args.exec,
    )?;
    let scenario = scenarios[0].clone();
    let variant = resolve::one_variant(&scenario, &args.exec, "bisect judges")?;
    // The variant on the runtime it is bisected on, planned once for every probe, before
    // any version is looked up.
    let target = Target {
        scenario: scenario.clone(),
        variant: variant.clone(),
    };
    let targets = resolve::on_runtimes(&[target], Some(&[args.runtime]))?;
    let planned = resolve::plan_targets(&targets, &args.exec)?;
    let versions = versions(&args).await?;
    bisect::ends(&versions, &args.good, &args.bad)
        .map_err(|e| AppError::bad_input(e.to_string()))?;
    // What can be checked before anything is written: every simulated version's profile, and
    // the first end's CLI (installed now, as its probe would) with the runs' arguments.
    let first = (args.good.clone(), args.good.clone());
    let pairs: Vec<(String, String)> = match args.sim_versions.is_empty() {
        true => vec![first],
        false => versions.iter().map(|v| (v.clone(), v.clone())).collect(),
    };
    for cli in clis_for(&pairs, &args.sim_versions, &[]).await? {
        resolve::jobs_of(&planned, &args.exec, &cli)?;
    }
    let prober = Prober {
        planned,
        scenarios: scenarios.clone(),
        exec: args.exec.clone(),
        sim_versions: args.sim_versions.clone(),
        runtime: args.runtime,
        run_dir: resolve::new_run_dir(&args.exec.out)?,
        cancel: resolve::cancel_on_signals(),
        probes: Mutex::default(),
    };
    let judge = |version: String| prober.probe(version);
    let found = bisect::bisect(&versions, &args.good, &args.bad, judge).await;
    let title = format!("{}/{}", scenario.name, variant);
    let case = bisect::junit_case(&title, &found);
    let execution = std::mem::take(&mut *prober.probes.lock().expect("probe list"));
    let interrupted = prober.cancel.borrow().is_some();
    let run_dir = &prober.run_dir;
    let summary = invocation::finish(
        &Outputs {
            dir: run_dir,
            junit: args.exec.junit.as_deref(),
            table: false,
            summary: true,
            index: true,
            extra_cases: std::slice::from_ref(&case),
        },
        &Ran::from_execution(execution, interrupted),
    )?;
    let report = found.map_err(|e| match e {
        BisectError::Run { .. } => AppError::setup(e.to_string()),
        other => AppError::bad_input(other.to_string()),
    });
    let code = report.as_ref().map(|_| Exit::Ok).unwrap_or_else(|e| e.code);
    if let Ok(report) = &report {
        print_report(report, &title);
    }
    invocation::emit_summary(run_dir, None, &summary, code);
    report.map(|_| code)
}

/// The versions to search, oldest first: the mapped ones, the listed ones, or every published
/// one over both channels.
async fn versions(args: &cli::BisectArgs) -> Result<Vec<String>, AppError> {
    let mut versions: Vec<String> = if !args.sim_versions.is_empty() {
        args.sim_versions.iter().map(|(v, _)| v.clone()).collect()
    } else if !args.versions.is_empty() {
        args.versions.clone()
    } else {
        resolve::releases_of(args.runtime).await?
    };
    versions.sort_by_key(|v| install::version_key(v));
    versions.dedup();
    Ok(versions)
}
