//! `wakeprobe lint FILE...`: the loader's static checks and the stale keys of each scenario
//! file, printed one located line each, without running anything. Exit 0 when nothing is found,
//! 2 when anything is.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::{AppError, AppResult};
use crate::cli::{self, Exit};
use crate::console::{self, printable};
use crate::scenario::{self, Scenario};

/// What lint found in one file: a line for each finding, already located.
enum Finding {
    /// The file does not load, or a variant does not plan.
    Error(String),
    /// A key that loads but means nothing today.
    Stale(String),
}

/// `wakeprobe lint`
pub fn lint(args: &cli::LintArgs) -> AppResult {
    let files = scenario_files(&args.paths)?;
    let mut printed = BTreeSet::new();
    let (mut errors, mut stale) = (0, 0);
    for file in &files {
        for finding in lint_file(file) {
            let line = match &finding {
                Finding::Error(text) => format!("error: {text}"),
                Finding::Stale(text) => format!("stale: {text}"),
            };
            // A broken `invariants.toml` breaks every scenario beside it: say it once.
            if !printed.insert(line.clone()) {
                continue;
            }
            match finding {
                Finding::Error(_) => errors += 1,
                Finding::Stale(_) => stale += 1,
            }
            console::say(printable(&line));
        }
    }
    eprintln!(
        "lint: {} file{}, {errors} error{}, {stale} stale key{}",
        files.len(),
        plural(files.len()),
        plural(errors),
        plural(stale)
    );
    Ok(if errors + stale == 0 {
        Exit::Ok
    } else {
        Exit::BadInput
    })
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The files to lint: each file named, and each folder's scenario files at any depth
/// (`*.toml` but the invariants, which load with every scenario beside them), sorted.
fn scenario_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, AppError> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found = Vec::new();
            collect_scenarios(path, &mut found)?;
            if found.is_empty() {
                return Err(AppError::bad_input(format!(
                    "{}: no scenario files (`*.toml`) in this folder",
                    path.display()
                )));
            }
            found.sort();
            files.extend(found);
        } else if std::fs::symlink_metadata(path).is_ok() {
            // A file, or what is not one (`/dev/zero`, a FIFO): loading it says which.
            files.push(path.clone());
        } else {
            return Err(AppError::bad_input(format!(
                "{}: no such file or folder",
                path.display()
            )));
        }
    }
    Ok(files)
}

fn collect_scenarios(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), AppError> {
    let listed = std::fs::read_dir(dir)
        .map_err(|e| AppError::bad_input(format!("{}: cannot list: {e}", dir.display())))?;
    for path in listed.filter_map(|e| e.ok().map(|e| e.path())) {
        if path.is_dir() {
            collect_scenarios(&path, found)?;
        } else if scenario::is_scenario_file(&path) {
            found.push(path);
        }
    }
    Ok(())
}

/// Every finding of one file: its load error, or its stale keys.
fn lint_file(path: &Path) -> Vec<Finding> {
    let loaded = match Scenario::load(path) {
        Ok(s) => s,
        Err(e) => return vec![Finding::Error(e.to_string())],
    };
    match scenario::lint::stale(&loaded) {
        Ok(found) => found
            .into_iter()
            .map(|s| {
                Finding::Stale(format!(
                    "{}:{}:{}: {}",
                    path.display(),
                    s.line,
                    s.col,
                    s.message
                ))
            })
            .collect(),
        Err(e) => vec![Finding::Error(e.to_string())],
    }
}
