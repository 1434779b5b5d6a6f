//! `wakeprobe fuzz`: generated scenarios ([`crate::fuzz::generate`]) run on a reference CLI
//! (the real one, or a simulator profile) and on the simulator under test; each pair of runs is
//! reduced to shapes and compared as `conform` does. Differing cases are sorted by kind of
//! difference, and the first case of each kind is shrunk with [`crate::matrix::minimize`] to
//! the smallest scenario that still shows that kind.
//!
//! The run folder holds `cases/` (every generated scenario), `runs/` (every run),
//! `differences/NN-KIND/` (the case's conform report, its minimal scenario and that one's
//! report), `differences/cases/cNNN.txt` (the comparison of every case that does not agree),
//! `fuzz.txt` (what was printed) and `fuzz.json`.
//!
//! This file is the flow; the pairs of runs (`pairs.rs`) and the rechecks and shrinking
//! (`shrink.rs`) are beside it; the results and their words are `crate::fuzz`'s.

mod pairs;
mod shrink;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use super::{AppError, AppResult, resolve};
use crate::cli;
use crate::fuzz::generate;
use crate::fuzz::results::{CaseResult, Totals, case_result, exit_code, group_by_kind, render};
use crate::scenario::Scenario;
use crate::store;
use pairs::Pairs;
use shrink::{Subjects, recheck, shrink_kinds, write_case_reports};

/// `wakeprobe fuzz`
pub async fn fuzz(args: cli::FuzzArgs) -> AppResult {
    let started = Instant::now();
    resolve::check_out(&args.place.out)?;
    let sim = resolve::sim_cli(&args.profile)?;
    let reference = match &args.reference_profile {
        Some(profile) => resolve::sim_cli(profile)?,
        None => resolve::claude_version(&args.claude_version).await?,
    };
    let numbers = case_numbers(&args)?;
    let run_dir = resolve::new_run_dir(&args.place.out)?;
    let scenarios = write_cases(&run_dir, args.seed, &numbers)?;
    let exec = args.exec();
    let mut opts = resolve::exec_options(&exec, &scenarios, run_dir.join("runs"))?;
    opts.progress = match args.quiet {
        true => crate::matrix::progress::Display::Off,
        false => crate::matrix::progress::Display::Full,
    };
    let pairs = Pairs {
        reference,
        sim,
        opts,
        cancel: resolve::cancel_on_signals(),
        runs: AtomicU32::new(0),
    };
    eprintln!(
        "wakeprobe: fuzz seed {}: {} case(s), {} vs {}",
        args.seed,
        numbers.len(),
        pairs.reference.label(),
        pairs.sim.label()
    );
    let compared = pairs.compare(&scenarios).await?;
    let rechecks = recheck(&pairs, &scenarios, &compared).await?;
    let cases: Vec<CaseResult> = numbers
        .iter()
        .zip(&scenarios)
        .zip(&compared)
        .zip(&rechecks)
        .map(|(((n, s), c), u)| case_result(*n, s, c, u))
        .collect();
    write_case_reports(&run_dir, &cases, &compared)?;
    let mut kinds = group_by_kind(&cases);
    let subjects = Subjects {
        numbers: &numbers,
        scenarios: &scenarios,
        compared: &compared,
        run_dir: &run_dir,
    };
    shrink_kinds(&pairs, &subjects, &mut kinds, args.shrink_runs).await?;
    let text = render(
        &Totals {
            seed: args.seed,
            reference: pairs.reference.label(),
            sim: pairs.sim.label(),
            runs: pairs.runs.load(Ordering::SeqCst),
            seconds: started.elapsed().as_secs_f64(),
        },
        &cases,
        &kinds,
    );
    print!("{text}");
    println!("{}", run_dir.display());
    store::write_atomic(&run_dir.join("fuzz.txt"), text.as_bytes())?;
    let json = serde_json::json!({
        "seed": args.seed,
        "reference": pairs.reference.label(),
        "sim": pairs.sim.label(),
        "cases": cases,
        "kinds": kinds,
        "runs": pairs.runs.load(Ordering::SeqCst),
        "seconds": started.elapsed().as_secs_f64(),
        "interrupted": pairs.cancel.borrow().is_some(),
    });
    store::write_atomic(
        &run_dir.join("fuzz.json"),
        &serde_json::to_vec_pretty(&json).unwrap_or_default(),
    )?;
    for failure in cases.iter().filter_map(|c| c.failure.as_ref()) {
        eprintln!("wakeprobe: could not start: {failure}");
    }
    Ok(exit_code(&cases, pairs.cancel.borrow().is_some()))
}

/// The case numbers to run: `--case` when given, else 1..=`--cases`.
fn case_numbers(args: &cli::FuzzArgs) -> Result<Vec<u32>, AppError> {
    if args.only.is_empty() {
        return Ok((1..=args.cases).collect());
    }
    if let Some(zero) = args.only.iter().find(|n| **n == 0) {
        return Err(AppError::bad_input(format!(
            "--case {zero}: cases are numbered from 1"
        )));
    }
    Ok(args.only.clone())
}

/// Writes every case into `cases/` and loads it back, as any scenario file is loaded.
fn write_cases(run_dir: &Path, seed: u64, numbers: &[u32]) -> Result<Vec<Arc<Scenario>>, AppError> {
    numbers
        .iter()
        .map(|n| {
            let case = generate::generate(seed, *n);
            let path = run_dir.join("cases").join(format!("{}.toml", case.name));
            store::write_atomic(&path, case.text.as_bytes())?;
            Ok(Arc::new(Scenario::load(&path)?))
        })
        .collect()
}
