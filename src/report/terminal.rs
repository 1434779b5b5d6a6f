//! The terminal summary: one row per cell (a scenario variant on one CLI), with the verdict,
//! the agreement of its repetitions, the expectation, the key latency and the handoff times.
//! Coloured when stdout is a terminal, plain when piped.

use comfy_table::{Cell, Color, ContentArrangement, Table, presets};

use crate::classify::result::{CellSummary, InvariantCell, RunResult, Summary};
use crate::evidence::run::EndReason;
use crate::evidence::{EventKind, ExitDesc, Route, Timeline};

/// A run's key handoff times, e.g. `worker turn-end 0.69s · SubagentStop(worker) 0.70s · bg killed 5.95s`.
/// A run the harness cut short ends with the cut: what its cleanup (or a signal) did is not a
/// handoff.
pub fn handoffs(timeline: &Timeline, end: EndReason) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cut = None;
    for e in timeline.observed(end).iter() {
        let t = e.t_ms / 1000.0;
        let agent = e.agent.as_deref().unwrap_or("?");
        let ended = match &e.kind {
            EventKind::CeilingHit { .. } => Some(format!("ceiling {t:.2}s")),
            EventKind::Interrupted { signal } => Some(format!(
                "{} {t:.2}s",
                signal.as_deref().unwrap_or("interrupted")
            )),
            EventKind::HarnessFailed { .. } => Some(format!("harness failed {t:.2}s")),
            EventKind::WorkOverdue { work, .. } => Some(format!("{work} overdue {t:.2}s")),
            _ => None,
        };
        if ended.is_some() {
            cut = ended;
            break;
        }
        let part = match &e.kind {
            EventKind::TurnEnded { .. } if agent != crate::scenario::MAIN_AGENT => {
                Some(format!("{agent} turn-end {t:.2}s"))
            }
            EventKind::AgentFinalized { hook } => Some(format!("{hook}({agent}) {t:.2}s")),
            EventKind::HarnessStalled { until_ms } => {
                Some(format!("harness stalled {t:.2}-{:.2}s", until_ms / 1000.0))
            }
            EventKind::TrackEnded { name, exit, .. } => {
                Some(format!("{name} {} {t:.2}s", short_exit(exit)))
            }
            EventKind::ModelRequest {
                notifications,
                route: Route::Turn | Route::ScriptExhausted,
                ..
            } if !notifications.is_empty() => Some(format!("{agent} notified {t:.2}s")),
            EventKind::FaultInjected { fault, .. } | EventKind::WorkSignalled { fault, .. } => {
                Some(format!("fault {} {t:.2}s", fault.as_str()))
            }
            EventKind::CliCrashed { .. } => Some(format!("fault crash-cli {t:.2}s")),
            _ => None,
        };
        if let Some(p) = part {
            // Keep the first occurrence of each kind of mark per agent.
            let key: String = p
                .rsplit_once(' ')
                .map(|(k, _)| k.to_string())
                .unwrap_or_default();
            if !parts.iter().any(|q| q.starts_with(&key)) {
                parts.push(p);
            }
        }
    }
    if parts.len() > 5 {
        parts.truncate(5);
        parts.push("…".into());
    }
    parts.extend(cut);
    parts.join(" · ")
}

fn short_exit(exit: &ExitDesc) -> String {
    match exit {
        ExitDesc::Code(0) => "ended".into(),
        ExitDesc::Code(c) => format!("exit {c}"),
        ExitDesc::Signal(_) | ExitDesc::Vanished => "killed".into(),
    }
}

/// A cell's colour says pass or fail (against the baseline when there is one), never the
/// verdict: a passing `not-resumable ✓` is green, a failing `woke ✗` red.
fn pass_color(fails: Option<bool>) -> Color {
    match fails {
        Some(false) => Color::Green,
        Some(true) => Color::Red,
        None => Color::Reset,
    }
}

/// The width of a table printed to no terminal.
pub const DEFAULT_WIDTH: u16 = 160;

/// The narrowest terminal given the wide layout: below it the handoffs would wrap a word a
/// row and the verdicts would be cut mid-word.
pub const WIDE_MIN_WIDTH: u16 = 120;

/// How the summary table is laid out for the width it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// scenario, cli, verdict, expected, latency, duration, key handoffs.
    Wide,
    /// scenario, cli, verdict with its expectation mark, latency, duration: the key handoffs
    /// are left out (each run's `report.md` has them) and the short columns are never cut.
    Narrow,
}

impl Layout {
    fn for_width(width: u16) -> Layout {
        if width >= WIDE_MIN_WIDTH {
            Layout::Wide
        } else {
            Layout::Narrow
        }
    }

    /// The header, without the `cli` column when every row names the same CLI (it is said
    /// once, above the table).
    fn header(self, show_cli: bool) -> Vec<&'static str> {
        let mut header = self.all_columns();
        if !show_cli {
            header.retain(|h| *h != "cli");
        }
        header
    }

    fn all_columns(self) -> Vec<&'static str> {
        match self {
            Layout::Wide => vec![
                "scenario",
                "cli",
                "verdict",
                "expected",
                "latency",
                "duration",
                "key handoffs",
            ],
            Layout::Narrow => vec!["scenario", "cli", "verdict", "latency", "duration"],
        }
    }
}

/// One row's texts, before layout.
struct Row {
    scenario: String,
    cli: String,
    verdict: String,
    expected: String,
    /// `✓` or `✗ EXPECTED`, for the narrow layout's verdict column.
    mark: String,
    latency: String,
    duration: String,
    handoffs: String,
    /// Whether the cell fails; `None` when it has nothing to pass or fail.
    fails: Option<bool>,
    unexpected: bool,
}

/// The summary table, arranged to `width` columns. `results` are the runs behind `summary`,
/// with their timelines.
pub fn summary(
    summary: &Summary,
    results: &[(&RunResult, &Timeline)],
    color: bool,
    width: u16,
) -> String {
    let layout = Layout::for_width(width);
    let mut table = Table::new();
    table
        .load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(width);
    if !color {
        table.force_no_tty();
    } else {
        table.enforce_styling();
    }
    let mut rows: Vec<Row> = summary.cells.iter().map(|c| row(c, results)).collect();
    let one_cli = rows
        .first()
        .map(|first| first.cli.clone())
        .filter(|cli| rows.iter().all(|r| &r.cli == cli));
    if layout == Layout::Narrow {
        variants_below_when_narrow(&mut rows, width, one_cli.is_none());
    }
    table.set_header(layout.header(one_cli.is_none()));
    for row in &rows {
        let mut cells = cells(row, layout, color);
        if one_cli.is_some() {
            cells.remove(1);
        }
        table.add_row(cells);
    }
    if layout == Layout::Narrow {
        keep_short_columns_whole(&mut table, one_cli.is_none());
    }
    match one_cli {
        Some(cli) => format!("cli: {cli}\n{table}"),
        None => table.to_string(),
    }
}

/// Where the longest `scenario/variant` leaves the narrow layout's other columns too little
/// room, every name is written on two lines, the variant below its scenario (`/variant`): a
/// name is never cut mid-word, and the table still fits `width`.
fn variants_below_when_narrow(rows: &mut [Row], width: u16, show_cli: bool) {
    let widest = |f: fn(&Row) -> &str, header: usize| {
        rows.iter()
            .map(|r| unicode_width::UnicodeWidthStr::width(f(r)))
            .max()
            .unwrap_or(0)
            .max(header)
    };
    let latency = widest(|r| &r.latency, "latency".len());
    let duration = widest(|r| &r.duration, "duration".len());
    // Borders and padding: `│ ` and ` │` at the ends, ` ┆ ` between columns; the verdict's
    // lower bound of 15; a CLI column, when there is one, wraps down to about 10.
    let columns = 4 + usize::from(show_cli);
    let fixed = 4 + 3 * (columns - 1) + 15 + latency + duration + if show_cli { 10 } else { 0 };
    let room = usize::from(width).saturating_sub(fixed);
    if widest(|r| &r.scenario, 0) <= room {
        return;
    }
    for row in rows {
        if let Some((scenario, variant)) = row.scenario.split_once('/') {
            row.scenario = format!("{scenario}\n/{variant}");
        }
    }
}

/// The narrow layout's verdict column is never narrower than its longest verdict with a `✓`
/// (`not-resumable ✓`), latency and duration never cut. Names are kept whole: the scenario
/// never wraps when the CLI is said once above the table (its column is gone, so there is
/// room); with a CLI column, the CLI wraps (at its `-`) rather than the scenario.
fn keep_short_columns_whole(table: &mut Table, show_cli: bool) {
    use comfy_table::{ColumnConstraint, Width};
    let verdict = ColumnConstraint::LowerBoundary(Width::Fixed(15));
    let shift = usize::from(show_cli);
    for (i, constraint) in [
        (0, ColumnConstraint::ContentWidth),
        (1 + shift, verdict),
        (2 + shift, ColumnConstraint::ContentWidth),
        (3 + shift, ColumnConstraint::ContentWidth),
    ] {
        if let Some(column) = table.column_mut(i) {
            column.set_constraint(constraint);
        }
    }
}

/// A summary cell's texts.
fn row(cell: &crate::classify::result::CellSummary, results: &[(&RunResult, &Timeline)]) -> Row {
    let runs: Vec<&(&RunResult, &Timeline)> = results
        .iter()
        .filter(|(r, _)| {
            r.run.scenario == cell.scenario
                && r.run.variant == cell.variant
                && r.run.cli_label == cell.cli
        })
        .collect();
    let verdict = if cell.runs > 1 {
        cell.agreement.clone()
    } else {
        cell.outcome
            .map(|o| o.to_string())
            .unwrap_or_else(|| cell.agreement.clone())
    };
    let (expected, mark) = match (&cell.expect, cell.matches_expect) {
        (Some(e), Some(true)) => (format!("✓ {e}"), "✓".to_string()),
        (Some(e), Some(false)) => (format!("✗ {e}"), format!("✗ expected {e}")),
        (None, Some(true)) => ("✓ checks".into(), "✓".into()),
        (None, Some(false)) => ("✗ checks".into(), "✗ checks".into()),
        (_, None) => ("-".into(), String::new()),
    };
    let mut durations: Vec<f64> = runs.iter().map(|(r, _)| r.run.duration_s).collect();
    durations.sort_by(f64::total_cmp);
    Row {
        scenario: format!("{}/{}", cell.scenario, cell.variant),
        cli: runs
            .first()
            .map(|(r, _)| r.run.cli_label_text())
            .unwrap_or_else(|| cell.cli.clone()),
        verdict,
        expected,
        mark,
        latency: cell
            .latency_ms
            .map(|l| format!("{:.2}s", l / 1000.0))
            .unwrap_or_else(|| "-".into()),
        duration: durations
            .get(durations.len() / 2)
            .map(|d| format!("{d:.1}s"))
            .unwrap_or_default(),
        handoffs: runs
            .first()
            .map(|(r, t)| handoffs(t, r.run.end))
            .unwrap_or_default(),
        fails: (cell.matches_expect.is_some() || cell.baseline.is_some()).then(|| cell.fails()),
        unexpected: cell.matches_expect == Some(false),
    }
}

/// A row's cells in `layout`, coloured when `color`.
fn cells(row: &Row, layout: Layout, color: bool) -> Vec<Cell> {
    let verdict = match layout {
        Layout::Wide => row.verdict.clone(),
        Layout::Narrow => format!("{} {}", row.verdict, row.mark)
            .trim_end()
            .to_string(),
    };
    let mut verdict = Cell::new(verdict);
    let mut expected = Cell::new(&row.expected);
    if color {
        verdict = verdict.fg(pass_color(row.fails));
        expected = expected.fg(if row.unexpected {
            Color::Red
        } else {
            Color::Reset
        });
    }
    let (scenario, cli) = (Cell::new(&row.scenario), Cell::new(&row.cli));
    let (latency, duration) = (Cell::new(&row.latency), Cell::new(&row.duration));
    match layout {
        Layout::Wide => vec![
            scenario,
            cli,
            verdict,
            expected,
            latency,
            duration,
            Cell::new(&row.handoffs),
        ],
        Layout::Narrow => vec![scenario, cli, verdict, latency, duration],
    }
}

/// The lines under the table for one run: its verdict with the hypothesis, whether that is
/// what the scenario expects, how the run ended when the harness cut it short, and the
/// explanation. The expectation is stated here exactly as the table's ✓/✗ states it.
pub fn verdict_lines(result: &RunResult) -> String {
    let run = &result.run;
    let Some(v) = result.judgement.primary() else {
        return format!(
            "{}/{} on {}: no verdict",
            run.scenario,
            run.variant,
            run.cli_label_text()
        );
    };
    let expectation = match (&result.expect, result.matches_expect) {
        (Some(e), Some(true)) if e.is_race() => {
            format!(", within the race the scenario declares ({e})")
        }
        (Some(e), Some(true)) => format!(", as the scenario expects ({e})"),
        (Some(e), Some(false)) if !result.judgement.missed_faults().is_empty() => {
            format!(", but a fault it was to inject never hit it (expected {e})")
        }
        (_, Some(false)) if run.integration.as_ref().is_some_and(|i| !i.by_itself) => {
            ", but the integration had to be stopped".to_string()
        }
        (Some(e), Some(false)) if e.allows(result.judgement.outcome) => {
            format!(", as the scenario expects ({e}), but a check failed")
        }
        (Some(e), Some(false)) => format!(", but the scenario expects {e}"),
        (None, Some(false)) => ", and a check failed".to_string(),
        _ => String::new(),
    };
    let mut text = format!(
        "{}/{} on {}: {} ({}){expectation}",
        run.scenario,
        run.variant,
        run.cli_label_text(),
        v.outcome,
        v.outcome.hypothesis()
    );
    if run.end.cut_short() {
        text.push_str(&format!(
            "\n  the run was cut short: {}",
            run.end_detail.as_deref().unwrap_or(run.end.as_str())
        ));
    }
    for unsent in &run.unsent_inputs {
        text.push_str(&format!("\n  {unsent}"));
    }
    if !result.judgement.contradictions().is_empty() {
        text.push_str(
            "\n  WAKEPROBE BUG: a verdict contradicts its own timeline; the run is unknown and not filed (exit 7). Please report it with this run's folder.",
        );
    }
    text.push_str(&format!("\n  {}", v.explanation));
    if let Some(fault) = fault_line(result) {
        text.push_str(&format!("\n  {fault}"));
    }
    if let Some(why) = run.integration.as_ref().and_then(|i| i.failure()) {
        text.push_str(&format!("\n  {why}: the run fails"));
    }
    for f in result.judgement.faults.iter().filter(|f| !f.applied) {
        let effect = if f.optional {
            "optional, so it fails nothing"
        } else {
            "the run fails"
        };
        text.push_str(&format!("\n  fault {}: {} ({effect})", f.fault, f.detail));
    }
    let rejected = &result.judgement.rejected_lines;
    if !rejected.is_empty() {
        text.push_str(&format!(
            "\n  the integration wrote {} outside the protocol (kept as evidence):",
            super::plural(rejected.len(), "line", "lines")
        ));
        for w in rejected {
            text.push_str(&format!(
                "\n    {}: {}",
                crate::evidence::secs(w.t_ms),
                w.what
            ));
        }
    }
    for c in &result.judgement.checks {
        text.push_str(&format!(
            "\n  {}\n    {}",
            super::check_line(c),
            c.explanation
        ));
    }
    text
}

/// Where the failed checks of an integration under test put the fault: `at fault: the
/// integration (the CLI sent what it should; 2 checks)`.
fn fault_line(result: &RunResult) -> Option<String> {
    use crate::checks::Layer;
    let layers = result.judgement.layers_at_fault();
    let count = |layer: Layer| {
        result
            .judgement
            .missed_checks()
            .iter()
            .filter(|c| c.layer == Some(layer))
            .count()
    };
    let said: Vec<String> = layers
        .iter()
        .map(|&l| {
            let why = match l {
                Layer::Cli => "what the integration should show never reached it",
                Layer::Integration => {
                    "the CLI sent what it should, and the integration dropped or misread it"
                }
            };
            format!(
                "{} ({why}; {})",
                l.words(),
                super::plural(count(l), "check", "checks")
            )
        })
        .collect();
    (!said.is_empty()).then(|| format!("at fault: {}", said.join("; and ")))
}

/// Each invariant at a glance: the cells where it held, and the ones where it broke.
pub fn invariant_lines(summary: &Summary) -> Option<String> {
    let mut names: Vec<&str> = Vec::new();
    for inv in summary.cells.iter().flat_map(|c| &c.invariants) {
        if !names.contains(&inv.name.as_str()) {
            names.push(&inv.name);
        }
    }
    if names.is_empty() {
        return None;
    }
    let many_clis = summary.cells.iter().any(|c| c.cli != summary.cells[0].cli);
    let mut text = String::from("invariants:");
    for name in names {
        let cells: Vec<(&CellSummary, &InvariantCell)> = summary
            .cells
            .iter()
            .filter_map(|c| c.invariants.iter().find(|i| i.name == name).map(|i| (c, i)))
            .collect();
        let held = cells.iter().filter(|(_, i)| i.holds == Some(true)).count();
        let cell_name = |c: &CellSummary| match many_clis {
            true => format!("{}/{} on {}", c.scenario, c.variant, c.cli),
            false => format!("{}/{}", c.scenario, c.variant),
        };
        let broke: Vec<&(&CellSummary, &InvariantCell)> = cells
            .iter()
            .filter(|(_, i)| i.holds == Some(false))
            .collect();
        // A break the scenario declares (`may_break`) is reported with its reason, not failed.
        let failing: Vec<String> = broke
            .iter()
            .filter(|(_, i)| i.may_break.is_none())
            .map(|(c, _)| cell_name(c))
            .collect();
        // Cells that break it for the same declared reason are named together, the reason once.
        let mut declared: Vec<(&str, Vec<String>)> = Vec::new();
        for (c, i) in &broke {
            let Some(why) = i.may_break.as_deref() else {
                continue;
            };
            match declared.iter_mut().find(|(w, _)| *w == why) {
                Some((_, cells)) => cells.push(cell_name(c)),
                None => declared.push((why, vec![cell_name(c)])),
            }
        }
        let declared: Vec<String> = declared
            .into_iter()
            .map(|(why, cells)| format!("{} ({why})", cells.join(", ")))
            .collect();
        let moot = cells
            .iter()
            .filter(|(_, i)| i.observed.iter().all(|o| o == "not-observed"))
            .count();
        let open = cells.len() - held - broke.len() - moot;
        text.push_str(&format!(
            "\n  {} {name}: holds in {held} of {} cells",
            if failing.is_empty() { "✓" } else { "✗" },
            cells.len()
        ));
        if moot > 0 {
            text.push_str(&format!(", {moot} where it does not apply"));
        }
        if open > 0 {
            text.push_str(&format!(", {open} not settled"));
        }
        if !failing.is_empty() {
            text.push_str(&format!("; breaks in {}", failing.join(", ")));
        }
        if !declared.is_empty() {
            text.push_str(&format!(
                "; breaks, as declared, in {}",
                declared.join(", ")
            ));
        }
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The colour says pass or fail, not the verdict: an expected `not-resumable` passes
    /// (green), an unexpected `woke` fails (red), an improvement against a baseline passes
    /// although it differs from `expect`, a cell with nothing to meet is uncoloured.
    #[test]
    fn a_row_is_coloured_by_pass_or_fail_not_by_its_verdict() {
        let of = |outcome: &str, matches: Option<bool>, against: Option<&str>| {
            let cell: crate::classify::result::CellSummary =
                serde_json::from_value(serde_json::json!({
                    "scenario": "s", "variant": "v", "cli": "c", "outcome": outcome,
                    "agreement": format!("{outcome} 1/1"), "runs": 1, "expect": null,
                    "matches_expect": matches, "latency_ms": null, "dirs": [],
                    "baseline": against.map(|a| serde_json::json!({"against": a, "baseline": "b"}))
                }))
                .unwrap();
            pass_color(row(&cell, &[]).fails)
        };
        assert_eq!(of("not-resumable", Some(true), None), Color::Green);
        assert_eq!(of("woke", Some(false), None), Color::Red);
        assert_eq!(of("woke", Some(false), Some("improvement")), Color::Green);
        assert_eq!(of("woke", Some(true), Some("regression")), Color::Red);
        assert_eq!(of("woke", None, None), Color::Reset);
    }

    fn cell(variant: &str, cli: &str, observed: &str, holds: Option<bool>) -> serde_json::Value {
        serde_json::json!({
            "scenario": "s", "variant": variant, "cli": cli, "outcome": null, "agreement": "",
            "runs": 1, "expect": null, "matches_expect": null, "latency_ms": null, "dirs": [],
            "invariants": [{ "name": "pairs", "observed": [observed], "holds": holds }]
        })
    }

    fn lines(cells: Vec<serde_json::Value>) -> String {
        let summary: Summary = serde_json::from_value(serde_json::json!({
            "schema": 1, "run_id": "r", "cells": cells, "interrupted": false
        }))
        .unwrap();
        invariant_lines(&summary).unwrap()
    }

    /// Each cell counts once in one of: holds, breaks, does not apply, not settled; a break is
    /// named with its CLI when the cells span several.
    #[test]
    fn invariant_lines_count_every_cell_once_and_name_the_breaks() {
        let text = lines(vec![
            cell("a", "claude-2.1.228", "yes", Some(true)),
            cell("b", "claude-2.1.228", "no", Some(false)),
            cell("c", "claude-2.1.332", "not-observed", None),
            cell("d", "claude-2.1.332", "no", None),
        ]);
        assert_eq!(
            text,
            "invariants:\n  ✗ pairs: holds in 1 of 4 cells, 1 where it does not apply, \
             1 not settled; breaks in s/b on claude-2.1.228"
        );
        let one_cli = lines(vec![
            cell("a", "claude-2.1.332", "yes", Some(true)),
            cell("b", "claude-2.1.332", "no", Some(false)),
        ]);
        assert!(one_cli.ends_with("breaks in s/b"), "{one_cli}");
    }

    /// A break the scenario declares is named with its reason and does not mark the invariant
    /// failed; an undeclared one beside it still does.
    #[test]
    fn a_declared_break_is_named_with_its_reason_and_fails_nothing() {
        let mut declared = cell("b", "claude-2.1.332", "no", Some(false));
        declared["invariants"][0]["may_break"] = "stopped by the model".into();
        let text = lines(vec![
            cell("a", "claude-2.1.332", "yes", Some(true)),
            declared.clone(),
        ]);
        assert_eq!(
            text,
            "invariants:\n  ✓ pairs: holds in 1 of 2 cells; breaks, as declared, in s/b (stopped by the model)"
        );
        let mut again = declared.clone();
        again["variant"] = "b2".into();
        let both = lines(vec![
            declared,
            cell("c", "claude-2.1.332", "no", Some(false)),
            again,
        ]);
        assert!(both.starts_with("invariants:\n  ✗ pairs"), "{both}");
        assert!(
            both.ends_with(
                "; breaks in s/c; breaks, as declared, in s/b, s/b2 (stopped by the model)"
            ),
            "{both}"
        );
    }
}
