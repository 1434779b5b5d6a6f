//! A history file put together: the stored readings and a search's, summarized over every
//! release ([`assemble`]); written as its three files ([`write_files`]); its change points in
//! words ([`change_lines`]).

use std::path::Path;

use super::search::Found;
use super::{
    CellKey, ChangeKind, HISTORY_SCHEMA, HistoryFile, HistorySettings, HistoryStats, ReadingMap,
};
use crate::store::{self, StoreError, redact::Redactor};

/// What a history file is assembled from besides the search's findings.
pub struct Assembly<'a> {
    /// The history it extends (`--append`).
    pub stored: Option<&'a HistoryFile>,
    /// Every release of the history, oldest first.
    pub versions: &'a [String],
    pub settings: &'a HistorySettings,
    /// Each followed cell with its scenario's expectation.
    pub cells: Vec<(CellKey, Option<crate::classify::Expected>)>,
}

/// A stored history's readings, as the search's starting knowledge.
pub fn known_readings(stored: Option<&HistoryFile>) -> ReadingMap {
    let mut map = ReadingMap::new();
    if let Some(s) = stored {
        super::merge_readings(
            &mut map,
            s.cells
                .iter()
                .flat_map(|c| c.readings.iter().map(move |r| (c.key(), r.clone()))),
        );
    }
    map
}

/// The history file: the stored readings and this search's, summarized over every release.
pub fn assemble(from: Assembly, found: Found, stats: HistoryStats) -> HistoryFile {
    let mut readings = known_readings(from.stored);
    super::merge_readings(
        &mut readings,
        found
            .readings
            .into_iter()
            .flat_map(|(c, m)| m.into_values().map(move |r| (c.clone(), r))),
    );
    let mut skipped = from.stored.map(|s| s.skipped.clone()).unwrap_or_default();
    skipped.extend(found.skipped);
    let mut probes = from.stored.map(|s| s.probes.clone()).unwrap_or_default();
    probes.extend(found.probes);
    let mut file = HistoryFile {
        schema: HISTORY_SCHEMA,
        from: from.versions[0].clone(),
        to: from.versions.last().cloned().unwrap_or_default(),
        versions: from.versions.to_vec(),
        skipped,
        settings: from.settings.clone(),
        cells: Vec::new(),
        probes,
        stats,
        stopped: found.stopped,
        appended_after: from.stored.map(|s| s.to.clone()),
    };
    let live = file.live_versions();
    let mut keys = from.cells;
    if let Some(s) = from.stored {
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
            super::summarize(k, expect.as_ref(), &live, r, from.settings.repeat as usize)
        })
        .collect();
    file
}

/// `history.json`, `history.md` and `history.svg` in `run_dir`.
pub fn write_files(run_dir: &Path, run_id: &str, file: &HistoryFile) -> Result<(), StoreError> {
    let r = Redactor::basic();
    store::write_json(&run_dir.join("history.json"), &r, file)?;
    store::write_atomic(
        &run_dir.join("history.md"),
        r.text(&super::render::markdown(file, run_id)).as_bytes(),
    )?;
    store::write_atomic(
        &run_dir.join("history.svg"),
        super::svg::render(file).as_bytes(),
    )?;
    Ok(())
}

/// One line per change point, oldest first, then the figures (and why the search stopped
/// early).
pub fn change_lines(file: &HistoryFile) -> Vec<String> {
    let mut lines = Vec::new();
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
        lines.push(format!(
            "{}/{} {at}: `{}` (was `{}`) [{kind}]",
            cell.scenario,
            cell.variant,
            c.after.label(),
            c.before.label()
        ));
    }
    lines.push(format!(
        "{count} change point(s) over {} releases ({} to {}): {} probes, {} runs, {} install(s), peak {} of installs, {:.0} s",
        file.versions.len(),
        file.from,
        file.to,
        file.stats.probes,
        file.stats.runs,
        file.stats.installs,
        crate::backend::install::human_size(file.stats.peak_install_bytes),
        file.stats.wall_seconds
    ));
    if let Some(why) = &file.stopped {
        lines.push(format!("stopped early: {why}"));
    }
    lines
}
