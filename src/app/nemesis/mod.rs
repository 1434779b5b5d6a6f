//! `wakeprobe nemesis SCENARIO [--variant V]`: the scenario run once clean and once under each
//! fault kind aimed at its handoff (an API fault on the waiter's first request that carries a
//! task notification; a process fault on the watched work, when it is a tracked command, a
//! second after it started; in a session, a crash of the CLI then), then a table fault -> verdict, with what each fault did to the
//! wake-up: retried and delivered, taken as it was, delivered twice, delayed by how much, or
//! lost.
//!
//! Each faulted scenario is the scenario's own file with one `[[faults]]` table and a name
//! that says the fault (`NAME--KIND`), written into the run folder's `scenarios/`, so every
//! run's report and repro command stand alone. `nemesis.json` holds the table for machines;
//! the JUnit file has one case per fault. What each row injects, what a run showed and the
//! table's words are `matrix::nemesis`; this file runs the rows and writes the files.

mod rows;

use std::sync::Arc;

use super::AppResult;
use super::invocation::{self, Outputs};
use super::resolve::{self, Target};
use crate::cli::{self, Exit};
use crate::matrix::nemesis::{faults, render};
use crate::scenario::{FaultKind, MAIN_AGENT, Scenario};
use crate::store;
use rows::{table_rows, write_faulted};

/// `wakeprobe nemesis`
pub async fn nemesis(args: cli::NemesisArgs) -> AppResult {
    let scenarios = resolve::scenarios(std::slice::from_ref(&args.scenario))?;
    let scenario = scenarios[0].clone();
    let variant = resolve::one_variant(&scenario, &args.exec, "nemesis faults")?;
    let target = |scenario: &Arc<Scenario>| Target {
        scenario: scenario.clone(),
        variant: variant.clone(),
    };
    // Every copy runs on the one CLI's runtime.
    let on_cli = [resolve::cli_runtime(&args.backend)];
    // The clean variant, planned once; its watch says where the faults aim.
    let clean = resolve::on_runtimes(&[target(&scenario)], Some(&on_cli))?;
    let mut planned = resolve::plan_targets(&clean, &args.exec)?;
    let plan = planned[0].plan.clone();
    let waiter = plan
        .watch
        .first()
        .map(|w| w.waiter.clone())
        .unwrap_or_else(|| MAIN_AGENT.to_string());
    let tracks = scenario.track_names();
    let work = plan
        .watch
        .first()
        .map(|w| w.work.clone())
        .filter(|w| tracks.contains(w));
    let kinds = faults(args.times, &waiter, work.as_deref(), plan.driver.mode);
    let cli = resolve::cli(&args.backend).await?;
    let run_dir = resolve::new_run_dir(&args.exec.out)?;
    let mut all = vec![scenario.clone()];
    all.extend(write_faulted(&run_dir, &scenario, &kinds)?);
    // Each faulted copy of the same variant, planned once.
    let faulted: Vec<Target> = all[1..].iter().map(target).collect();
    let faulted = resolve::on_runtimes(&faulted, Some(&on_cli))?;
    planned.extend(resolve::plan_targets(&faulted, &args.exec)?);
    let jobs = resolve::jobs_of(&planned, &args.exec, &cli)?;
    let ran = invocation::execute(jobs, &args.exec, &all, &run_dir).await?;
    let summary = invocation::finish(
        &Outputs {
            dir: &run_dir,
            junit: args.exec.junit.as_deref(),
            table: false,
            summary: true,
            index: true,
            extra_cases: &[],
        },
        &ran,
    )?;
    let kinds: Vec<FaultKind> = kinds.iter().map(|(k, _)| *k).collect();
    let rows = table_rows(&all, &kinds, &ran, &run_dir, (&waiter, work.as_deref()));
    let text = render(
        &scenario.name,
        &variant,
        &cli.label(),
        (&waiter, work.as_deref(), args.times),
        &rows,
    );
    if args.json {
        println!("{}", serde_json::to_string(&rows).unwrap_or_default());
    } else {
        print!("{text}");
    }
    store::write_atomic(&run_dir.join("nemesis.txt"), text.as_bytes())?;
    store::write_atomic(
        &run_dir.join("nemesis.json"),
        &serde_json::to_vec_pretty(&rows).unwrap_or_default(),
    )?;
    Ok(if ran.interrupted {
        Exit::Interrupted
    } else if !ran.failures.is_empty() {
        Exit::Setup
    } else if rows.iter().any(|r| r.differs) || summary.cells.is_empty() {
        Exit::Mismatch
    } else {
        Exit::Ok
    })
}
