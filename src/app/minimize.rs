//! `wakeprobe minimize SCENARIO --keep verdict|check:NAME`: the scenario variant, flattened
//! and with `--set` values as its defaults, is run `--repeat` times to fix the result to
//! keep; then [`crate::matrix::minimize`] removes agents, steps and inputs, shrinks parameters
//! and shortens texts while every repetition of a candidate still gives that result. Each
//! batch of candidates runs in parallel through [`matrix::execute`]; invalid candidates are
//! skipped, never run. The run folder gets `minimal.toml`, `minimize.log` and
//! `minimize.json`, and every candidate's file and runs (`candidates/`, `runs/`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::{AppError, AppResult, resolve};
use crate::backend::Cli;
use crate::classify::Outcome;
use crate::cli::{self, Exit, KeepChoice};
use crate::driver::Cancel;
use crate::matrix::keep::{self, Keep, Kept, Seen, Target};
use crate::matrix::minimize::{self, Budget, Event, Pass, Size, Stop, Subject};
use crate::matrix::{self, ExecOptions, Job};
use crate::scenario::edit::Editable;
use crate::scenario::{RangePolicy, Scenario};
use crate::store;

/// A candidate scenario: an edited document that is known to be valid.
#[derive(Debug, Clone)]
pub(super) struct Candidate(pub(super) Editable);

impl Candidate {
    pub(super) fn checked(e: Editable) -> Option<Candidate> {
        let scenario = e.validate().ok()?;
        scenario.plan(e.variant(), &[]).ok()?;
        Some(Candidate(e))
    }
}

impl Subject for Candidate {
    fn units(&self, pass: Pass) -> Vec<String> {
        let e = &self.0;
        match pass {
            Pass::Agents => e.agents().into_iter().skip(1).collect(),
            Pass::Steps => e.steps().iter().map(|(a, i)| e.step_label(a, *i)).collect(),
            Pass::Inputs => e.inputs(),
            Pass::Texts => e.texts().into_iter().map(|(_, label)| label).collect(),
        }
    }

    fn without(&self, pass: Pass, removed: &[usize]) -> Option<Candidate> {
        let e = &self.0;
        let next = match pass {
            Pass::Agents => {
                e.without_agents(&pick(e.agents().into_iter().skip(1).collect(), removed))
            }
            Pass::Steps => e.without_steps(&pick(e.steps(), removed)),
            Pass::Inputs => e.without_inputs(removed),
            Pass::Texts => e.shortened(&pick(
                e.texts().into_iter().map(|(s, _)| s).collect(),
                removed,
            )),
        };
        Candidate::checked(next)
    }

    fn numbers(&self) -> Vec<(String, f64)> {
        self.0
            .params()
            .into_iter()
            .map(|(name, value, _)| (name, value))
            .collect()
    }

    fn with_number(&self, name: &str, value: f64) -> Option<Candidate> {
        Candidate::checked(self.0.with_param(name, value))
    }

    fn integral(&self, name: &str) -> bool {
        self.0
            .params()
            .iter()
            .any(|(n, _, whole)| n == name && *whole)
    }

    fn key(&self) -> String {
        self.0.text()
    }

    fn size(&self) -> Size {
        Size {
            agents: self.0.agents().len(),
            steps: self.0.steps().len(),
            inputs: self.0.inputs().len(),
        }
    }
}

/// The items at these indices.
fn pick<T>(all: Vec<T>, indices: &[usize]) -> Vec<T> {
    all.into_iter()
        .enumerate()
        .filter(|(i, _)| indices.contains(i))
        .map(|(_, x)| x)
        .collect()
}

/// What `--keep` asks for, as `matrix::keep` reads it.
fn keep_of(choice: &KeepChoice) -> Keep {
    match choice {
        KeepChoice::Verdict => Keep::Verdict,
        KeepChoice::Check(name) => Keep::Check(name.clone()),
    }
}

/// Runs candidates: each `--repeat` times, all at once.
struct Runner {
    cli: Cli,
    variant: String,
    name: String,
    repeat: u32,
    opts: ExecOptions,
    dir: PathBuf,
    keep: Keep,
    cancel: Cancel,
    counter: AtomicU32,
    runs: AtomicU32,
    /// Every judged candidate's runs, by the candidate's key: which checks they observed.
    seen: Mutex<std::collections::HashMap<String, Vec<Seen>>>,
}

impl Runner {
    /// Every run of every candidate, by candidate; an error is a setup failure.
    async fn run(&self, batch: &[Editable]) -> Result<Vec<Vec<Seen>>, AppError> {
        let mut jobs = Vec::new();
        let mut paths = Vec::new();
        for e in batch {
            let n = self.counter.fetch_add(1, Ordering::SeqCst);
            let mut e = e.clone();
            let name = if n == 0 {
                format!("{}-original", self.name)
            } else {
                format!("{}-c{n:04}", self.name)
            };
            e.set_name(&name);
            let path = self.dir.join("candidates").join(format!("{name}.toml"));
            store::write_atomic(&path, e.text().as_bytes())?;
            let scenario = Arc::new(Scenario::load(&path)?);
            paths.push(scenario.path.clone());
            let mut plan = scenario.plan_with(&self.variant, &[], RangePolicy::Enforce)?;
            matrix::add_faults(&mut plan, &self.opts.faults);
            let plan = Arc::new(plan);
            for repetition in 1..=self.repeat {
                jobs.push(Job {
                    reference: super::resolve::scenario_reference(&scenario),
                    scenario: scenario.clone(),
                    variant: self.variant.clone(),
                    cli: self.cli.clone(),
                    repetition,
                    overrides: vec![],
                    // A candidate carries its values in its text: inside its range, as
                    // `prepare` checked the --set values against the scenario's.
                    policy: RangePolicy::Enforce,
                    plan: plan.clone(),
                });
            }
        }
        let execution = matrix::execute(jobs, &self.opts, self.cancel.clone()).await;
        if let Some(f) = execution.failures.first() {
            return Err(AppError::setup(format!("{}: {}", f.job.title(), f.message)));
        }
        self.runs
            .fetch_add(execution.cells.len() as u32, Ordering::SeqCst);
        Ok(paths
            .iter()
            .map(|path| {
                execution
                    .cells
                    .iter()
                    .filter(|c| c.job.scenario.path == *path)
                    .map(|c| keep::seen(&c.result, &c.timeline, &self.keep))
                    .collect()
            })
            .collect())
    }
}

/// The scenario, its variant, and the unreduced candidate (flattened, `--set` applied).
struct Prepared {
    scenario: Arc<Scenario>,
    scenarios: Vec<Arc<Scenario>>,
    variant: String,
    base: Candidate,
}

fn prepare(args: &cli::MinimizeArgs, exec: &cli::ExecArgs) -> Result<Prepared, AppError> {
    let scenarios = resolve::driven(
        resolve::scenarios(std::slice::from_ref(&args.scenario))?,
        exec,
    )?;
    let scenario = scenarios[0].clone();
    resolve::check_exec_args(&scenarios, exec)?;
    let variant = exec
        .variants
        .first()
        .cloned()
        .unwrap_or_else(|| scenario.variants()[0].clone());
    let plan = scenario.plan(&variant, &exec.sets)?;
    if let KeepChoice::Check(name) = &args.keep
        && !plan.checks.iter().any(|c| c.name == *name)
    {
        let known: Vec<&str> = plan.checks.iter().map(|c| c.name.as_str()).collect();
        return Err(AppError::bad_input(format!(
            "--keep check:{name}: {}/{variant} has no such check (it has: {})",
            scenario.name,
            if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            }
        )));
    }
    let mut base = Editable::flatten(&scenario.source, &variant).map_err(AppError::bad_input)?;
    // Candidates are written elsewhere: an integration beside the scenario is named absolutely.
    let folder = scenario.path.parent().unwrap_or(std::path::Path::new("."));
    base.anchor_command(&std::path::absolute(folder).unwrap_or(folder.to_path_buf()));
    for (k, v) in &exec.sets {
        base = base.with_param_text(k, v).map_err(AppError::bad_input)?;
    }
    let base = Candidate::checked(base).ok_or_else(|| {
        AppError::bad_input(format!(
            "{}/{variant}: cannot flatten to one variant",
            scenario.name
        ))
    })?;
    Ok(Prepared {
        scenario,
        scenarios,
        variant,
        base,
    })
}

impl Runner {
    /// Whether each candidate still shows the result in every one of its runs. Once
    /// interrupted, nothing does (and nothing runs): the search then ends quickly.
    async fn judge(&self, batch: Vec<Candidate>, target: &Target) -> Result<Vec<bool>, AppError> {
        if self.cancel.borrow().is_some() {
            return Ok(vec![false; batch.len()]);
        }
        let docs: Vec<Editable> = batch.into_iter().map(|c| c.0).collect();
        let seen = self.run(&docs).await?;
        let mut memory = self.seen.lock().expect("seen lock");
        Ok(docs
            .iter()
            .zip(seen)
            .map(|(doc, runs)| {
                let kept = runs.len() == self.repeat as usize
                    && runs.iter().all(|r| target.misses(r).is_none());
                memory.insert(doc.text(), runs);
                kept
            })
            .collect())
    }
}

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

/// Runs the unreduced scenario `--repeat` times: every run must agree on what to keep, and
/// that is what every candidate must keep, with the experiment around it (`matrix::keep`).
async fn fix_target(
    runner: &Runner,
    base: &Candidate,
    name: &str,
    variant: &str,
) -> Result<Target, AppError> {
    let seen = runner.run(std::slice::from_ref(&base.0)).await?.remove(0);
    if runner.cancel.borrow().is_some() {
        return Err(AppError {
            code: Exit::Interrupted,
            message: "interrupted before the result to keep was known".into(),
        });
    }
    runner
        .seen
        .lock()
        .expect("seen lock")
        .insert(base.0.text(), seen.clone());
    let target =
        Target::of(&seen).ok_or_else(|| AppError::setup("the unreduced scenario did not run"))?;
    let first = &target.kept;
    if *first == Kept::Verdict(Outcome::Unknown) && seen.iter().all(|o| o.kept == *first) {
        return Err(AppError::bad_input(format!(
            "{name}/{variant} is judged `unknown`: the evidence decides nothing, so there is no result to keep (minimize a variant with a verdict, or keep a check with --keep check:NAME)"
        )));
    }
    if *first == Kept::NoCheck || seen.iter().any(|o| o.kept != *first) {
        let all: Vec<String> = seen.iter().map(|o| o.kept.to_string()).collect();
        return Err(AppError {
            code: Exit::Mismatch,
            message: format!(
                "{name}/{variant} does not give one result to keep: {} (minimizing needs a result every run agrees on)",
                all.join(", ")
            ),
        });
    }
    Ok(target)
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

struct Outputs<'a> {
    dir: &'a Path,
    scenario: &'a Scenario,
    variant: &'a str,
    original: &'a Candidate,
    minimized: &'a minimize::Minimized<Candidate>,
    target: &'a Kept,
    verdict: Option<Outcome>,
    /// Checks the minimal scenario can no longer observe: dropped from it.
    dropped: &'a [String],
    runs: u32,
    /// Candidates that ran (after an interrupt the search judges the rest without running).
    candidates: u32,
    seconds: f64,
    interrupted: bool,
    log: &'a [String],
}

impl Outputs<'_> {
    fn stop(&self) -> &'static str {
        match (self.interrupted, self.minimized.stop) {
            (true, _) => "interrupted",
            (false, Stop::Budget) => "run budget spent",
            (false, Stop::FixedPoint) => "fixed point: no reduction keeps the result",
        }
    }

    /// The closing line.
    fn summary(&self) -> String {
        let dropped = match self.dropped {
            [] => String::new(),
            names => format!(
                "; dropped {} it can no longer observe: {}",
                if names.len() == 1 {
                    "a check"
                } else {
                    "checks"
                },
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        format!(
            "minimal: {} (from {}), `{}` kept, after {} run(s) of {} candidate(s) ({} invalid skipped) in {:.1} s; {}{dropped}",
            self.minimized.subject.size(),
            self.original.size(),
            self.target,
            self.runs,
            self.candidates,
            self.minimized.skipped_invalid,
            self.seconds,
            self.stop()
        )
    }
}

/// `minimal.toml`, `minimize.log`, `minimize.json`; returns the minimal scenario's path.
fn write_outputs(o: &Outputs) -> Result<PathBuf, AppError> {
    let mut minimal = o.minimized.subject.0.without_checks(o.dropped);
    minimal.set_name(&format!("{}-min", o.scenario.name));
    match o.verdict {
        Some(verdict) => minimal.set_expect(verdict.as_str()),
        None => minimal.clear_expect(),
    }
    let path = o.dir.join("minimal.toml");
    let dropped: String = o
        .dropped
        .iter()
        .map(|n| format!("# Dropped check `{n}`: the minimal scenario can no longer observe it.\n"))
        .collect();
    let text = format!(
        "# Minimized by `wakeprobe minimize` from {} (variant {}): {} -> {}, keeping `{}`.\n# What was removed: minimize.log next to this file.\n{dropped}\n{}",
        o.scenario.path.display(),
        o.variant,
        o.original.size(),
        o.minimized.subject.size(),
        o.target,
        minimal.text()
    );
    store::write_atomic(&path, text.as_bytes())?;
    let stop = o.stop();
    let mut log = format!(
        "minimize {} --variant {}: keeping `{}`\nfrom: {}\nto:   {}\nruns: {} ({} candidate(s), {} invalid skipped), {:.1} s; stopped: {stop}\n\nreductions, in order:\n",
        o.scenario.path.display(),
        o.variant,
        o.target,
        o.original.size(),
        o.minimized.subject.size(),
        o.runs,
        o.candidates,
        o.minimized.skipped_invalid,
        o.seconds
    );
    for line in o.log {
        log.push_str(&format!("  {line}\n"));
    }
    for name in o.dropped {
        log.push_str(&format!(
            "\ndropped check `{name}`: the original's runs observed it, the minimal scenario's do not\n"
        ));
    }
    store::write_atomic(&o.dir.join("minimize.log"), log.as_bytes())?;
    let json = serde_json::json!({
        "scenario": o.scenario.path.display().to_string(),
        "variant": o.variant,
        "kept": o.target.to_string(),
        "from": o.original.size(),
        "to": o.minimized.subject.size(),
        "runs": o.runs,
        "candidates": o.candidates,
        "skipped_invalid": o.minimized.skipped_invalid,
        "seconds": o.seconds,
        "stop": stop,
        "accepted": o.minimized.accepted,
        "dropped_checks": o.dropped,
        "minimal": "minimal.toml",
    });
    store::write_atomic(
        &o.dir.join("minimize.json"),
        &serde_json::to_vec_pretty(&json).unwrap_or_default(),
    )?;
    Ok(path)
}
