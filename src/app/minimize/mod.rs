//! `wakeprobe minimize SCENARIO --keep verdict|check:NAME`: the scenario variant, flattened
//! and with `--set` values as its defaults, is run `--repeat` times to fix the result to
//! keep; then [`crate::matrix::minimize`] removes agents, steps and inputs, shrinks parameters
//! and shortens texts while every repetition of a candidate still gives that result. Each
//! batch of candidates runs in parallel through [`matrix::execute`]; invalid candidates are
//! skipped, never run. The run folder gets `minimal.toml`, `minimize.log` and
//! `minimize.json`, and every candidate's file and runs (`candidates/`, `runs/`).
//!
//! This file is the flow; the runner (`runner.rs`) resolves and runs; the candidate and the
//! outputs are `matrix::minimize`'s.

mod runner;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::{AppResult, resolve};
use crate::classify::Outcome;
use crate::cli::{self, Exit, KeepChoice};
use crate::matrix::keep;
use crate::matrix::minimize::candidate::Candidate;
use crate::matrix::minimize::outputs::{Outputs, write_outputs};
use crate::matrix::minimize::{self, Budget, Event, Subject};
use runner::{Prepared, Runner, fix_target, keep_of, prepare};

/// `wakeprobe minimize`
pub async fn minimize(args: cli::MinimizeArgs) -> AppResult {
    let started = Instant::now();
    let exec = args.exec();
    let Prepared {
        scenario,
        scenarios,
        variant,
        base,
    } = prepare(&args, &exec)?;
    let cli = resolve::cli(&args.backend).await?;
    let run_dir = resolve::new_run_dir(&exec.out)?;
    let mut opts = resolve::exec_options(&exec, &scenarios, run_dir.join("runs"))?;
    opts.progress = crate::matrix::progress::Display::Off;
    let cancel = resolve::cancel_on_signals();
    let runner = Arc::new(Runner {
        cli,
        variant: variant.clone(),
        name: scenario.name.clone(),
        repeat: exec.repeat,
        opts,
        dir: run_dir.clone(),
        keep: keep_of(&args.keep),
        cancel: cancel.clone(),
        counter: AtomicU32::new(0),
        runs: AtomicU32::new(0),
        seen: Mutex::default(),
    });
    let target = fix_target(&runner, &base, &scenario.name, &variant).await?;
    eprintln!(
        "wakeprobe: keeping {} `{}` of {}/{variant}: {} ({} run(s) each, at most {} runs)",
        match &args.keep {
            KeepChoice::Verdict => "the verdict".to_string(),
            KeepChoice::Check(n) => format!("check `{n}` observing"),
        },
        target.kept,
        scenario.name,
        base.size(),
        exec.repeat,
        args.max_runs
    );
    let oracle = {
        let (runner, target) = (runner.clone(), target.clone());
        move |batch: Vec<Candidate>| {
            let (runner, target) = (runner.clone(), target.clone());
            async move { runner.judge(batch, &target).await }
        }
    };
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let log_events = log.clone();
    let minimized = minimize::minimize(
        base.clone(),
        Budget {
            max_runs: args.max_runs,
            runs_per_candidate: exec.repeat,
            spent: runner.runs.load(Ordering::SeqCst),
        },
        oracle,
        move |event| report_event(event, &log_events),
    )
    .await?;
    let interrupted = cancel.borrow().is_some();
    let dropped = {
        let memory = runner.seen.lock().expect("seen lock");
        let of = |c: &Candidate| memory.get(&c.0.text()).cloned().unwrap_or_default();
        keep::unobservable(&of(&base), &of(&minimized.subject), &runner.keep)
    };
    let outputs = Outputs {
        dir: &run_dir,
        scenario: &scenario,
        variant: &variant,
        original: &base,
        minimized: &minimized,
        target: &target.kept,
        verdict: Outcome::parse(&target.kept.to_string())
            .filter(|_| args.keep == KeepChoice::Verdict),
        dropped: &dropped,
        runs: runner.runs.load(Ordering::SeqCst),
        candidates: runner.counter.load(Ordering::SeqCst).saturating_sub(1),
        seconds: started.elapsed().as_secs_f64(),
        interrupted,
        log: &log.lock().expect("log lock"),
    };
    let written = write_outputs(&outputs)?;
    println!("{}", outputs.summary());
    println!("{}", written.display());
    Ok(if interrupted {
        Exit::Interrupted
    } else {
        Exit::Ok
    })
}

/// Prints an accepted reduction (and a progress line for each batch) as it happens.
fn report_event(event: &Event, log: &Mutex<Vec<String>>) {
    match event {
        Event::Batch {
            pass,
            candidates,
            runs,
            max_runs,
        } => eprintln!(
            "wakeprobe: [{runs}/{max_runs} runs] {pass}: trying {candidates} candidate(s)"
        ),
        Event::Accepted {
            pass,
            what,
            size,
            runs,
        } => {
            let line = format!("{pass}: {what} -> {size} (after {runs} runs)");
            eprintln!("wakeprobe: {line}");
            log.lock().expect("log lock").push(line);
        }
    }
}
