//! `history.md`: the change points as a changelog (newest first, each with links to the runs
//! that decided it), then every cell's segments. Deterministic: the same history gives the
//! same bytes.

use std::fmt::Write;

use super::{CellHistory, ChangeKind, ChangePoint, HistoryFile, Reading};
use crate::backend::install::human_size;

/// The whole `history.md`; links go to reports of the invocation `run_id` (readings kept from
/// a stored history name their run instead).
pub fn markdown(h: &HistoryFile, run_id: &str) -> String {
    let mut s = format!("# Behaviour history: {} to {}\n\n", h.from, h.to);
    let _ = writeln!(s, "{}\n", overview(h));
    if let Some(why) = &h.stopped {
        let _ = writeln!(
            s,
            "**Stopped before every change was pinned down:** {why}. Ranges marked *not pinned down* hold releases that were never run.\n"
        );
    }
    for skipped in &h.skipped {
        let _ = writeln!(s, "- skipped {}: {}", skipped.version, skipped.reason);
    }
    if !h.skipped.is_empty() {
        s.push('\n');
    }
    s.push_str("## Change points\n\n");
    let mut changes: Vec<(&CellHistory, &ChangePoint)> = h.changes().collect();
    let position = |v: &str| h.versions.iter().position(|x| x == v);
    changes.sort_by(|a, b| {
        position(&b.1.first_after)
            .cmp(&position(&a.1.first_after))
            .then(a.0.key().cmp(&b.0.key()))
    });
    if changes.is_empty() {
        s.push_str("None: every tracked scenario behaves the same on every release run.\n");
    }
    for (cell, change) in &changes {
        let _ = writeln!(
            s,
            "- {}",
            change_line(cell, change, run_id, h.settings.repeat)
        );
    }
    s.push_str("\n## By scenario\n\n");
    for cell in &h.cells {
        cell_section(&mut s, cell, run_id);
    }
    s
}

/// `106 releases listed; 17 run in 21 probes (95 runs); ...`
fn overview(h: &HistoryFile) -> String {
    let probed: std::collections::BTreeSet<&str> =
        h.probes.iter().map(|p| p.version.as_str()).collect();
    let changes = h.changes().count();
    let cells_changed = h.cells.iter().filter(|c| !c.changes.is_empty()).count();
    format!(
        "{} releases listed, {} of them run, in {} probes ({} runs); {} install(s), {} pruned again, peak {} of installs; each side of a change confirmed with {} run(s). {} change point(s) in {} of {} scenario variant(s).",
        h.versions.len(),
        probed.len(),
        h.stats.probes,
        h.stats.runs,
        h.stats.installs,
        h.stats.pruned,
        human_size(h.stats.peak_install_bytes),
        h.settings.repeat,
        changes,
        cells_changed,
        h.cells.len()
    )
}

/// `**s/v** from **2.1.225**: `woke` (was `not-resumable`), improvement; runs: ...`
fn change_line(cell: &CellHistory, c: &ChangePoint, run_id: &str, repeat: u32) -> String {
    let kind = match c.kind {
        ChangeKind::Regression => "**regression**",
        ChangeKind::Improvement => "improvement",
        ChangeKind::Neutral => "neither better nor worse",
    };
    let at = if c.resolved() {
        format!("from **{}**", c.first_after)
    } else {
        format!(
            "somewhere after {} up to {} (not pinned down: {} release(s) between never run)",
            c.last_before,
            c.first_after,
            c.unresolved.len()
        )
    };
    let confirmed = if c.confirmed || repeat <= 1 {
        String::new()
    } else {
        " (not confirmed)".to_string()
    };
    let runs: Vec<String> = [&c.last_before, &c.first_after]
        .into_iter()
        .filter_map(|v| cell.reading(v))
        .map(|r| {
            let agreement = r.agreement(cell.expect.as_ref());
            format!("{} {agreement}{}", r.version, links(r, run_id))
        })
        .collect();
    format!(
        "**{}/{}** {at}: `{}` (was `{}`), {kind}{confirmed}; runs: {}",
        cell.scenario,
        cell.variant,
        c.after.label(),
        c.before.label(),
        runs.join("; ")
    )
}

/// ` ([1](path), [2](path))`, or ` (run RUN-ID)` for readings of another invocation.
fn links(r: &Reading, run_id: &str) -> String {
    if r.reports.is_empty() {
        return String::new();
    }
    if r.run_id != run_id {
        return format!(" (run {})", r.run_id);
    }
    let links: Vec<String> = r
        .reports
        .iter()
        .enumerate()
        .map(|(i, p)| format!("[{}]({p})", i + 1))
        .collect();
    format!(" ({})", links.join(", "))
}

fn cell_section(s: &mut String, cell: &CellHistory, run_id: &str) {
    let expect = cell
        .expect
        .as_ref()
        .map(|e| format!(" (expected on the pinned CLI: `{e}`)"))
        .unwrap_or_default();
    let _ = writeln!(s, "### {}/{}{expect}\n", cell.scenario, cell.variant);
    if let [only] = cell.segments.as_slice() {
        let _ = writeln!(
            s,
            "`{}` throughout, {} to {} (run on {}).\n",
            only.agreed.label(),
            only.first,
            only.last,
            only.probed.join(", ")
        );
        return;
    }
    s.push_str("| releases | behaviour | runs |\n|---|---|---|\n");
    for seg in &cell.segments {
        let runs: Vec<String> = seg
            .probed
            .iter()
            .filter_map(|v| cell.reading(v))
            .map(|r| {
                let agreement = r.agreement(cell.expect.as_ref());
                format!("{}: {agreement}{}", r.version, links(r, run_id))
            })
            .collect();
        let _ = writeln!(
            s,
            "| {} to {} ({} release(s)) | `{}` | {} |",
            seg.first,
            seg.last,
            seg.releases,
            seg.agreed.label(),
            runs.join("<br>")
        );
    }
    s.push('\n');
}
