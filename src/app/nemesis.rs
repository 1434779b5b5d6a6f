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

use std::path::Path;
use std::sync::Arc;

use super::invocation::{self, Outputs, Ran};
use super::{AppError, AppResult, resolve};
use crate::cli::{self, Exit};
use crate::matrix::nemesis::{Observed, Row, effect, faults, render};
use crate::scenario::{FaultKind, MAIN_AGENT, Scenario};
use crate::store;

/// `wakeprobe nemesis`
pub async fn nemesis(args: cli::NemesisArgs) -> AppResult {
    let scenarios = resolve::scenarios(std::slice::from_ref(&args.scenario))?;
    let scenario = scenarios[0].clone();
    resolve::check_exec_args(&scenarios, &args.exec)?;
    let variant = resolve::one_variant(&scenario, &args.exec, "nemesis faults")?;
    let plan = scenario.plan_with(&variant, &args.exec.sets, resolve::policy(&args.exec))?;
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
    let mut exec = args.exec.clone();
    exec.variants = vec![variant.clone()];
    let jobs = resolve::jobs(&all, &exec, &cli)?;
    let ran = invocation::execute(jobs, &exec, &all, &run_dir).await?;
    let summary = invocation::finish(
        &Outputs {
            dir: &run_dir,
            junit: exec.junit.as_deref(),
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

/// The scenario once per fault, each with its `[[faults]]` table.
fn write_faulted(
    run_dir: &Path,
    scenario: &Scenario,
    faults: &[(FaultKind, String)],
) -> Result<Vec<Arc<Scenario>>, AppError> {
    let dir = run_dir.join("scenarios");
    std::fs::create_dir_all(&dir)
        .map_err(|e| AppError::setup(format!("{}: {e}", dir.display())))?;
    faults
        .iter()
        .map(|(kind, keys)| {
            let name = faulted_name(&scenario.name, *kind);
            let mut doc: toml_edit::DocumentMut = scenario
                .source
                .parse()
                .map_err(|e| AppError::setup(format!("{}: {e}", scenario.path.display())))?;
            doc["name"] = toml_edit::value(name.as_str());
            let text = format!(
                "{}\n# Added by `wakeprobe nemesis`.\n[[faults]]\nkind = \"{}\"\n{keys}",
                doc.to_string().trim_end(),
                kind.as_str()
            );
            let path = dir.join(format!("{name}.toml"));
            store::write_atomic(&path, text.as_bytes())?;
            Ok(Arc::new(Scenario::parse(&path, text)?))
        })
        .collect()
}

fn faulted_name(scenario: &str, kind: FaultKind) -> String {
    format!("{scenario}--{}", kind.as_str())
}

/// The clean row first, then one per fault, in `kinds`' order.
fn table_rows(
    all: &[Arc<Scenario>],
    kinds: &[FaultKind],
    ran: &Ran,
    run_dir: &Path,
    (waiter, work): (&str, Option<&str>),
) -> Vec<Row> {
    let found = |s: &Scenario| ran.rows.iter().find(|r| r.result.run.scenario == s.name);
    let observe = |row: &invocation::Row| Observed::of(&row.result, &row.timeline, waiter, work);
    let clean = found(&all[0]).map(observe);
    all.iter()
        .enumerate()
        .map(|(i, s)| {
            let fault = if i == 0 {
                "none".to_string()
            } else {
                kinds[i - 1].as_str().to_string()
            };
            let Some(row) = found(s) else {
                return Row {
                    fault,
                    outcome: None,
                    latency_ms: None,
                    injected: 0,
                    deliveries: 0,
                    effect: "did not run".into(),
                    differs: false,
                    explanation: None,
                    run: None,
                };
            };
            let observed = observe(row);
            let outcome = observed.outcome;
            let differs = i > 0 && Some(outcome) != clean.as_ref().map(|c| c.outcome);
            Row {
                effect: if i == 0 {
                    "the clean run".into()
                } else {
                    effect(kinds[i - 1], &observed, clean.as_ref())
                },
                fault,
                outcome: Some(outcome),
                latency_ms: observed.latency,
                injected: observed.injected,
                deliveries: observed.deliveries,
                differs,
                explanation: differs
                    .then(|| {
                        row.result
                            .judgement
                            .primary()
                            .map(|v| v.explanation.clone())
                    })
                    .flatten(),
                run: Some(
                    row.dir
                        .strip_prefix(run_dir)
                        .unwrap_or(&row.dir)
                        .display()
                        .to_string(),
                ),
            }
        })
        .collect()
}
