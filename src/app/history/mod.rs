//! `wakeprobe history SCENARIO[/VARIANT]... --from V1 --to V2|latest`: every change point of
//! the chosen scenario variants across the published releases between, found by
//! `matrix::history` over real runs (all cells of a version share one probe and one install),
//! within an install and disk budget; written as `history.json`, `history.md` and
//! `history.svg`. `--append FILE` extends a stored history to a newer release and exits 4 when
//! a new change point is a regression.
//!
//! The subcommand reads its arguments once (`setup`), runs the search with an oracle that
//! probes one version at a time (`oracle`), and assembles, writes and prints the file
//! (`matrix::history::assemble`).

mod oracle;
mod setup;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Mutex;

use super::AppResult;
use super::installs::Installs;
use super::resolve::{self, Target};
use crate::cli::{self, Exit};
use crate::matrix::history::search::{self, SearchPlan};
use crate::matrix::history::{CellKey, ChangeKind, HistoryFile, HistoryStats, assemble};

pub use setup::read_history;

/// `wakeprobe history`
pub async fn history(args: cli::HistoryArgs) -> AppResult {
    let setup = setup::resolve_setup(&args).await?;
    let Some(search_versions) = setup::search_range(&setup) else {
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
        known: assemble::known_readings(setup.stored.as_ref()),
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
    let oracle = oracle::Oracle {
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
    let file = assemble::assemble(
        assemble::Assembly {
            stored: setup.stored.as_ref(),
            versions: &setup.versions,
            settings: &setup.settings,
            cells: setup
                .targets
                .iter()
                .map(|t| (key(t), t.scenario.expected(&t.variant)))
                .collect(),
        },
        found,
        stats,
    );
    assemble::write_files(&run_dir, &run_id, &file)?;
    for line in assemble::change_lines(&file) {
        println!("{line}");
    }
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
