//! What `history` resolves before anything is installed or run: the targets on the runtime,
//! each planned once, the tracked checks, the stored history it extends and the release list.

use std::collections::BTreeSet;
use std::path::Path;

use super::super::AppError;
use super::super::resolve::{self, Target};
use crate::backend::catalog::Spec;
use crate::backend::install;
use crate::cli;
use crate::matrix::history::{HISTORY_SCHEMA, HistoryFile, HistorySettings};

/// Everything resolved before anything runs.
pub struct Setup {
    pub targets: Vec<Target>,
    /// Each target's plan, resolved once (in the order of `targets`).
    pub planned: Vec<resolve::Planned>,
    pub versions: Vec<String>,
    pub stored: Option<HistoryFile>,
    pub settings: HistorySettings,
}

/// Targets, checks, `--set` values, the stored history and the release list: every mistake
/// is bad input, found before anything is installed or run.
pub async fn resolve_setup(args: &cli::HistoryArgs) -> Result<Setup, AppError> {
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
    let bytes = resolve::read_results_file(path)?;
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
pub fn search_range(setup: &Setup) -> Option<Vec<String>> {
    let Some(stored) = &setup.stored else {
        return Some(setup.versions.clone());
    };
    let start = setup.versions.iter().position(|v| *v == stored.to)?;
    (start + 1 < setup.versions.len()).then(|| setup.versions[start..].to_vec())
}
