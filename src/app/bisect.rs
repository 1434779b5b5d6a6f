//! `wakeprobe bisect SCENARIO --good V1 --bad V2`: the first published version whose verdict
//! differs, by binary search over the versions between. Every probe's runs are kept under the
//! run folder, with a `summary.json`, and with `--junit` a JUnit file holding each probe's
//! cell and one case for the bisection itself.

use std::sync::{Arc, Mutex};

use super::clis::clis_for;
use super::invocation::{self, Outputs, Ran};
use super::{AppError, AppResult, resolve};
use crate::backend::install;
use crate::classify::result::ExtraCase;
use crate::cli::{self, Exit};
use crate::console::{self, Message};
use crate::matrix::bisect::{self, BisectError, BisectReport, Probe};
use crate::matrix::{self, Execution};

/// `wakeprobe bisect SCENARIO --good V1 --bad V2`
pub async fn bisect(args: cli::BisectArgs) -> AppResult {
    let scenarios = resolve::driven(
        resolve::scenarios(std::slice::from_ref(&args.scenario))?,
        &args.exec,
    )?;
    let scenario = scenarios[0].clone();
    resolve::check_exec_args(&scenarios, &args.exec)?;
    resolve::check_runtimes(&scenarios, &[args.runtime])?;
    let variant = resolve::one_variant(&scenario, &args.exec, "bisect judges")?;
    let versions = versions(&args).await?;
    bisect::ends(&versions, &args.good, &args.bad)
        .map_err(|e| AppError::bad_input(e.to_string()))?;
    let mut exec = args.exec.clone();
    exec.variants = vec![variant.clone()];
    // What can be checked before anything is written: every simulated version's profile, and
    // the first end's CLI (installed now, as its probe would) with the runs' arguments.
    let first = (args.good.clone(), args.good.clone());
    let pairs: Vec<(String, String)> = match args.sim_versions.is_empty() {
        true => vec![first],
        false => versions.iter().map(|v| (v.clone(), v.clone())).collect(),
    };
    for cli in clis_for(&pairs, &args.sim_versions, &[]).await? {
        resolve::jobs(std::slice::from_ref(&scenario), &exec, &cli)?;
    }
    let run_dir = resolve::new_run_dir(&args.exec.out)?;
    let cancel = resolve::cancel_on_signals();
    let probes: Arc<Mutex<Execution>> = Arc::default();
    let runtime = args.runtime;
    let judge = |version: String| {
        let (exec, sims, scenario, run_dir, cancel, probes) = (
            exec.clone(),
            args.sim_versions.clone(),
            scenario.clone(),
            run_dir.clone(),
            cancel.clone(),
            probes.clone(),
        );
        async move {
            let pair = (
                crate::runtime::qualified(runtime, &version),
                version.clone(),
            );
            let cli = clis_for(std::slice::from_ref(&pair), &sims, &[])
                .await
                .map_err(|e| e.message)?
                .remove(0);
            let scenarios = std::slice::from_ref(&scenario);
            let jobs = resolve::jobs(scenarios, &exec, &cli).map_err(|e| e.message)?;
            let opts = resolve::exec_options(&exec, scenarios, run_dir.join(&version))
                .map_err(|e| e.message)?;
            let execution = matrix::execute(jobs, &opts, cancel.clone()).await;
            let probe = probe_of(&version, &execution, cancel.borrow().is_some());
            let mut all = probes.lock().expect("probe list");
            all.cells.extend(execution.cells);
            all.failures.extend(execution.failures);
            probe
        }
    };
    let found = bisect::bisect(&versions, &args.good, &args.bad, judge).await;
    let title = format!("{}/{}", scenario.name, variant);
    let case = bisect_case(&title, &found);
    let execution = std::mem::take(&mut *probes.lock().expect("probe list"));
    let interrupted = cancel.borrow().is_some();
    let summary = invocation::finish(
        &Outputs {
            dir: &run_dir,
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
    invocation::emit_summary(&run_dir, None, &summary, code);
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

/// One version's verdict from its runs, or why it has none.
fn probe_of(version: &str, execution: &Execution, interrupted: bool) -> Result<Probe, String> {
    if interrupted {
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
    console::emit(&Message::BisectStep {
        version,
        verdict: outcome,
        agreement: &agreement,
    });
    Ok(Probe {
        version: version.to_string(),
        outcome,
        agreement,
    })
}

/// The bisection as a JUnit case: passed with its paragraph, or failed with why it stopped.
fn bisect_case(title: &str, found: &Result<BisectReport, BisectError>) -> ExtraCase {
    let (failure, system_out) = match found {
        Ok(report) => (
            None,
            format!(
                "first version whose verdict differs: {}\n{}\n",
                report.first_bad.version,
                report.paragraph(title)
            ),
        ),
        Err(e) => (Some(("bisect".to_string(), e.to_string())), String::new()),
    };
    ExtraCase {
        name: format!("bisect {title}"),
        classname: "wakeprobe.bisect".into(),
        failure,
        system_out,
    }
}

fn print_report(report: &BisectReport, title: &str) {
    console::say(format!(
        "first version whose verdict differs: {}",
        report.first_bad.version
    ));
    console::say("steps:");
    for p in &report.steps {
        console::say(format!("  {} {}", p.version, p.agreement));
    }
    console::say("");
    console::say(report.paragraph(title));
    console::emit(&Message::Bisected {
        scenario: title,
        last_good: &report.last_good,
        first_bad: &report.first_bad.version,
        paragraph: report.paragraph(title),
    });
}
