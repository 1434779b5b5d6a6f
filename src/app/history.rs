//! `wakeprobe history SCENARIO[/VARIANT]... --from V1 --to V2|latest`: every change point of
//! the chosen scenario variants across the published releases between, found by
//! `matrix::history` over real runs (all cells of a version share one probe and one install),
//! within an install and disk budget; written as `history.json`, `history.md` and
//! `history.svg`. `--append FILE` extends a stored history to a newer release and exits 4 when
//! a new change point is a regression.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Mutex;

use super::installs::{InstallBudgetError, Installs};
use super::matrix::clis_for;
use super::resolve::{self, Target};
use super::{AppError, AppResult, probe};
use crate::backend::catalog::Spec;
use crate::backend::{Cli, install};
use crate::cli::{self, Exit};
use crate::matrix::history::search::{self, CellAnswer, Found, OracleError, Request, SearchPlan};
use crate::matrix::history::{
    self, CellKey, ChangeKind, CheckObservation, HISTORY_SCHEMA, HistoryFile, HistorySettings,
    HistoryStats, Observation, ReadingMap,
};
use crate::matrix::{CellResult, Job};
use crate::store;
use crate::store::redact::Redactor;

/// Everything resolved before anything runs.
struct Setup {
    targets: Vec<Target>,
    /// Each target's plan, resolved once (in the order of `targets`).
    planned: Vec<resolve::Planned>,
    versions: Vec<String>,
    stored: Option<HistoryFile>,
    settings: HistorySettings,
}

/// `wakeprobe history`
pub async fn history(args: cli::HistoryArgs) -> AppResult {
    let setup = resolve_setup(&args).await?;
    let Some(search_versions) = search_range(&setup) else {
        println!(
            "the stored history already reaches {}: nothing to add",
            setup.versions.last().map(String::as_str).unwrap_or("?")
        );
        return Ok(Exit::Ok);
    };
    let run_dir = resolve::new_run_dir(&args.exec.out)?;
    let run_id = file_name(&run_dir);
    let started = Instant::now();
    let plan = SearchPlan {
        versions: search_versions,
        cells: setup.targets.iter().map(key).collect(),
        search_runs: args.search_repeat,
        confirm_runs: args.exec.repeat.max(args.search_repeat),
        samples: args.samples,
        known: known_readings(setup.stored.as_ref()),
        expects: setup
            .targets
            .iter()
            .filter_map(|t| Some((key(t), t.scenario.expected(&t.variant)?)))
            .collect(),
    };
    let installs = Arc::new(Mutex::new(Installs::new(
        args.runtime,
        args.max_installs,
        args.disk_budget,
    )));
    let cancel = resolve::cancel_on_signals();
    let oracle = Oracle {
        args: &args,
        setup: &setup,
        run_dir: &run_dir,
        installs: installs.clone(),
        cancel: cancel.clone(),
    };
    let found = search::search(&plan, &run_id, |req| oracle.probe(req)).await;
    let mut installs = installs.lock().await;
    installs.finish();
    let stats = HistoryStats {
        probes: found.probes.len(),
        runs: found.probes.iter().map(|p| p.runs).sum(),
        installs: installs.installs,
        pruned: installs.pruned,
        peak_install_bytes: installs.peak,
        wall_seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    };
    let file = assemble(&setup, found, stats);
    write(&run_dir, &run_id, &file)?;
    print_changes(&file);
    eprintln!(
        "reports: {}",
        crate::console::printable(&run_dir.display().to_string())
    );
    Ok(exit_code(&file, cancel.borrow().is_some()))
}

fn key(t: &Target) -> CellKey {
    CellKey {
        scenario: t.scenario.name.clone(),
        variant: t.variant.clone(),
    }
}

fn file_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default()
}

/// Targets, checks, `--set` values, the stored history and the release list: every mistake
/// is bad input, found before anything is installed or run.
async fn resolve_setup(args: &cli::HistoryArgs) -> Result<Setup, AppError> {
    if args.exec.junit.is_some() {
        return Err(AppError::bad_input(
            "--junit: history writes history.json, history.md and history.svg, not JUnit",
        ));
    }
    let mut specs: Vec<String> = args.targets.clone();
    specs.extend(args.scenarios.iter().cloned());
    if specs.is_empty() {
        return Err(AppError::bad_input(
            "name the scenarios to follow: SCENARIO[/VARIANT]..., or --scenarios all",
        ));
    }
    let targets =
        resolve::driven_targets(resolve::targets(&specs, &args.exec.variants)?, &args.exec)?;
    let targets = resolve::on_runtimes(&targets, Some(&[args.runtime]))?;
    let planned = resolve::plan_targets(&targets, &args.exec)?;
    resolve::check_out(&args.exec.out)?;
    let checks = check_tracked(&planned, &args.checks)?;
    let stored = args.append.as_deref().map(read_history).transpose()?;
    let settings = HistorySettings {
        search_repeat: args.search_repeat,
        repeat: args.exec.repeat.max(args.search_repeat),
        samples: args.samples,
        sets: args.exec.sets.clone(),
        checks,
        sim_versions: args.sim_versions.clone(),
    };
    if let Some(s) = &stored
        && s.settings.sets != settings.sets
    {
        return Err(AppError::bad_input(format!(
            "--append: the stored history ran with --set {:?}; pass the same values",
            s.settings.sets
        )));
    }
    let versions = release_list(args, stored.as_ref()).await?;
    Ok(Setup {
        targets,
        planned,
        versions,
        stored,
        settings,
    })
}

/// Every `--check NAME` must name a check of at least one chosen scenario; `all` names every
/// check they have. Returns the tracked names.
fn check_tracked(planned: &[resolve::Planned], checks: &[String]) -> Result<Vec<String>, AppError> {
    let known: BTreeSet<String> = planned
        .iter()
        .flat_map(|p| p.plan.checks.iter().map(|c| c.name.clone()))
        .collect();
    if checks.iter().any(|c| c == "all") {
        return Ok(known.into_iter().collect());
    }
    for name in checks {
        if !known.contains(name) {
            return Err(AppError::bad_input(format!(
                "--check {name}: no chosen scenario has a check of that name (they have: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.iter().cloned().collect::<Vec<_>>().join(", ")
                }
            )));
        }
    }
    Ok(checks.to_vec())
}

pub fn read_history(path: &Path) -> Result<HistoryFile, AppError> {
    let bytes = super::resolve::read_results_file(path)?;
    let file: HistoryFile = serde_json::from_slice(&bytes).map_err(|e| {
        AppError::bad_input(format!(
            "{}: not a wakeprobe history.json: {e}",
            path.display()
        ))
    })?;
    if file.schema != HISTORY_SCHEMA {
        return Err(AppError::bad_input(format!(
            "{}: history schema {} (this wakeprobe reads {HISTORY_SCHEMA})",
            path.display(),
            file.schema
        )));
    }
    Ok(file)
}

/// The releases from `--from` (or the stored history's first) to `--to`, oldest first: both
/// channels' published versions in semver order, or the versions `--sim-version` maps.
async fn release_list(
    args: &cli::HistoryArgs,
    stored: Option<&HistoryFile>,
) -> Result<Vec<String>, AppError> {
    let mut listed: Vec<String> = if args.sim_versions.is_empty() {
        resolve::releases_of(args.runtime).await?
    } else {
        args.sim_versions.iter().map(|(v, _)| v.clone()).collect()
    };
    if let Some(s) = stored {
        listed.extend(s.versions.iter().cloned());
    }
    listed.sort_by_key(|v| install::version_key(v));
    listed.dedup();
    let from = match (&args.from, stored) {
        (Some(f), _) => f.clone(),
        (None, Some(s)) => s.from.clone(),
        (None, None) => return Err(AppError::bad_input("--from is required (or --append FILE)")),
    };
    let to = Spec::parse(&args.to)?.pick(&args.to, &listed)?;
    let position = |v: &str, flag: &str| {
        listed
            .iter()
            .position(|x| x == v)
            .ok_or_else(|| AppError::bad_input(format!("--{flag} {v}: not a listed release")))
    };
    let (a, b) = (position(&from, "from")?, position(&to, "to")?);
    if a >= b {
        return Err(AppError::bad_input(format!(
            "--from {from} must come before --to {to} in release order"
        )));
    }
    if to != args.to {
        eprintln!("wakeprobe: {} is {}", args.to, resolve::describe(&to));
    }
    Ok(listed[a..=b].to_vec())
}

/// The releases this invocation searches: all of them, or with a stored history, from its
/// last release on (`None` when there is nothing newer).
fn search_range(setup: &Setup) -> Option<Vec<String>> {
    let Some(stored) = &setup.stored else {
        return Some(setup.versions.clone());
    };
    let start = setup.versions.iter().position(|v| *v == stored.to)?;
    (start + 1 < setup.versions.len()).then(|| setup.versions[start..].to_vec())
}

/// A stored history's readings, as the search's starting knowledge.
fn known_readings(stored: Option<&HistoryFile>) -> ReadingMap {
    let mut map = ReadingMap::new();
    if let Some(s) = stored {
        history::merge_readings(
            &mut map,
            s.cells
                .iter()
                .flat_map(|c| c.readings.iter().map(move |r| (c.key(), r.clone()))),
        );
    }
    map
}

/// The search's oracle: runs the asked cells on one version.
struct Oracle<'a> {
    args: &'a cli::HistoryArgs,
    setup: &'a Setup,
    run_dir: &'a Path,
    installs: Arc<Mutex<Installs>>,
    cancel: crate::driver::Cancel,
}

impl Oracle<'_> {
    async fn probe(&self, req: Request) -> Result<Vec<CellAnswer>, OracleError> {
        if self.cancel.borrow().is_some() {
            return Err(OracleError::Stop("interrupted".into()));
        }
        let cli = self.cli(&req).await?;
        let mut jobs: Vec<Job> = Vec::new();
        for asked in &req.cells {
            let i = self
                .setup
                .targets
                .iter()
                .position(|t| key(t) == asked.cell)
                .expect("the search asks only for its cells");
            let target = &self.setup.targets[i];
            jobs.extend(
                (asked.first..asked.first + asked.count).map(|repetition| Job {
                    reference: resolve::scenario_reference(&target.scenario),
                    scenario: target.scenario.clone(),
                    variant: target.variant.clone(),
                    cli: cli.clone(),
                    repetition,
                    overrides: self.setup.planned[i].overrides.clone(),
                    plan: self.setup.planned[i].plan.clone(),
                    policy: resolve::policy(&self.args.exec),
                }),
            );
        }
        let scenarios: Vec<_> = self
            .setup
            .targets
            .iter()
            .map(|t| t.scenario.clone())
            .collect();
        let dir = self.run_dir.join(&req.version);
        let cells = probe::run(jobs, &self.args.exec, &scenarios, &dir, &self.cancel)
            .await
            .map_err(|e| match e {
                probe::ProbeError::Interrupted => OracleError::Stop("interrupted".into()),
                probe::ProbeError::Setup(m) => OracleError::Skip(m),
            })?;
        let answers = self.answers(&req, &cells);
        let said: Vec<String> = answers
            .iter()
            .zip(&req.cells)
            .map(|(a, asked)| {
                let r = history::Reading {
                    version: req.version.clone(),
                    runs: a.runs.clone(),
                    reports: vec![],
                    run_id: String::new(),
                };
                let confirming = if asked.first > 1 {
                    format!(
                        " (confirming: runs {} to {})",
                        asked.first,
                        asked.first + asked.count - 1
                    )
                } else {
                    String::new()
                };
                let expect = self
                    .setup
                    .targets
                    .iter()
                    .find(|t| key(t) == a.cell)
                    .and_then(|t| t.scenario.expected(&t.variant));
                format!("{} {}{confirming}", a.cell, r.agreement(expect.as_ref()))
            })
            .collect();
        eprintln!("wakeprobe: {}: {}", req.version, said.join("; "));
        Ok(answers)
    }

    /// The CLI standing for a version: a simulator profile, or an install within the budget.
    async fn cli(&self, req: &Request) -> Result<Cli, OracleError> {
        if !self.args.sim_versions.is_empty() {
            let pair = (req.version.clone(), req.version.clone());
            return clis_for(std::slice::from_ref(&pair), &self.args.sim_versions, &[])
                .await
                .map(|mut c| c.remove(0))
                .map_err(|e| OracleError::Skip(e.message));
        }
        let mut installs = self.installs.lock().await;
        installs
            .cli(&req.version, &req.needed)
            .await
            .map_err(|e| match e {
                InstallBudgetError::Spent(m) => OracleError::Stop(m),
                InstallBudgetError::Failed(m) => OracleError::Skip(m),
            })
    }

    /// Each asked cell's observations (the verdict and the tracked checks) and report paths.
    fn answers(&self, req: &Request, cells: &[CellResult]) -> Vec<CellAnswer> {
        req.cells
            .iter()
            .map(|asked| {
                let mine: Vec<&CellResult> = cells
                    .iter()
                    .filter(|c| {
                        c.job.scenario.name == asked.cell.scenario
                            && c.job.variant == asked.cell.variant
                    })
                    .collect();
                CellAnswer {
                    cell: asked.cell.clone(),
                    runs: mine.iter().map(|c| self.observe(c)).collect(),
                    reports: mine
                        .iter()
                        .map(|c| {
                            let rel = c.dir.strip_prefix(self.run_dir).unwrap_or(&c.dir);
                            rel.join("report.md").display().to_string()
                        })
                        .collect(),
                }
            })
            .collect()
    }

    fn observe(&self, cell: &CellResult) -> Observation {
        let judgement = &cell.result.judgement;
        Observation {
            verdict: judgement.outcome,
            checks: judgement
                .checks
                .iter()
                .filter(|c| self.setup.settings.checks.contains(&c.name))
                .map(|c| CheckObservation {
                    name: c.name.clone(),
                    observed: c.observed.clone(),
                    passed: c.passed,
                    meets_want: c.meets_want,
                })
                .collect(),
        }
    }
}

/// The history file: the stored readings and this search's, summarized over every release.
fn assemble(setup: &Setup, found: Found, stats: HistoryStats) -> HistoryFile {
    let mut readings = known_readings(setup.stored.as_ref());
    history::merge_readings(
        &mut readings,
        found
            .readings
            .into_iter()
            .flat_map(|(c, m)| m.into_values().map(move |r| (c.clone(), r))),
    );
    let mut skipped = setup
        .stored
        .as_ref()
        .map(|s| s.skipped.clone())
        .unwrap_or_default();
    skipped.extend(found.skipped);
    let mut probes = setup
        .stored
        .as_ref()
        .map(|s| s.probes.clone())
        .unwrap_or_default();
    probes.extend(found.probes);
    let mut file = HistoryFile {
        schema: HISTORY_SCHEMA,
        from: setup.versions[0].clone(),
        to: setup.versions.last().cloned().unwrap_or_default(),
        versions: setup.versions.clone(),
        skipped,
        settings: setup.settings.clone(),
        cells: Vec::new(),
        probes,
        stats,
        stopped: found.stopped,
        appended_after: setup.stored.as_ref().map(|s| s.to.clone()),
    };
    let live = file.live_versions();
    let mut keys: Vec<(CellKey, Option<crate::classify::Expected>)> = setup
        .targets
        .iter()
        .map(|t| (key(t), t.scenario.expected(&t.variant)))
        .collect();
    if let Some(s) = &setup.stored {
        let kept: Vec<_> = s
            .cells
            .iter()
            .filter(|c| !keys.iter().any(|(k, _)| *k == c.key()))
            .map(|c| (c.key(), c.expect.clone()))
            .collect();
        keys.extend(kept);
    }
    keys.sort();
    file.cells = keys
        .iter()
        .map(|(k, expect)| {
            let empty = Default::default();
            let r = readings.get(k).unwrap_or(&empty);
            history::summarize(k, expect.as_ref(), &live, r, setup.settings.repeat as usize)
        })
        .collect();
    file
}

pub fn write(run_dir: &Path, run_id: &str, file: &HistoryFile) -> Result<(), AppError> {
    let r = Redactor::basic();
    store::write_json(&run_dir.join("history.json"), &r, file)?;
    store::write_atomic(
        &run_dir.join("history.md"),
        r.text(&history::render::markdown(file, run_id)).as_bytes(),
    )?;
    store::write_atomic(
        &run_dir.join("history.svg"),
        history::svg::render(file).as_bytes(),
    )?;
    Ok(())
}

/// One line per change point, oldest first, then the figures.
fn print_changes(file: &HistoryFile) {
    let mut count = 0;
    for (cell, c) in file.changes() {
        count += 1;
        let at = if c.resolved() {
            format!("from {}", c.first_after)
        } else {
            format!(
                "between {} and {} (not pinned down)",
                c.last_before, c.first_after
            )
        };
        let kind = match c.kind {
            ChangeKind::Regression => "REGRESSION",
            ChangeKind::Improvement => "improvement",
            ChangeKind::Neutral => "change",
        };
        println!(
            "{}/{} {at}: `{}` (was `{}`) [{kind}]",
            cell.scenario,
            cell.variant,
            c.after.label(),
            c.before.label()
        );
    }
    println!(
        "{count} change point(s) over {} releases ({} to {}): {} probes, {} runs, {} install(s), peak {} of installs, {:.0} s",
        file.versions.len(),
        file.from,
        file.to,
        file.stats.probes,
        file.stats.runs,
        file.stats.installs,
        install::human_size(file.stats.peak_install_bytes),
        file.stats.wall_seconds
    );
    if let Some(why) = &file.stopped {
        println!("stopped early: {why}");
    }
}

/// Interrupted 130; stopped by the budget 6; with `--append`, a new regression 4, only new
/// improvements 5; else 0.
fn exit_code(file: &HistoryFile, interrupted: bool) -> Exit {
    if interrupted {
        return Exit::Interrupted;
    }
    if file.stopped.is_some() {
        return Exit::Incomplete;
    }
    let new = file.new_changes();
    if new.iter().any(|(_, c)| c.kind == ChangeKind::Regression) {
        Exit::Regression
    } else if new.iter().any(|(_, c)| c.kind == ChangeKind::Improvement) {
        Exit::Improvement
    } else {
        Exit::Ok
    }
}
