//! The terminal summary: one row per cell (a scenario variant on one CLI), with the verdict,
//! the agreement of its repetitions, the expectation, the key latency and the handoff times.
//! Coloured when stdout is a terminal, plain when piped.

use comfy_table::{Cell, Color, ContentArrangement, Table, presets};

use super::json::{RunResult, Summary};
use crate::classify::Outcome;
use crate::evidence::{EventKind, ExitDesc, Route, Timeline};

/// A run's key handoff times, e.g. `worker turn-end 0.69s · SubagentStop(worker) 0.70s · bg killed 5.95s`.
pub fn handoffs(timeline: &Timeline) -> String {
    let mut parts: Vec<String> = Vec::new();
    for e in timeline.iter() {
        let t = e.t_ms / 1000.0;
        let agent = e.agent.as_deref().unwrap_or("?");
        let part = match &e.kind {
            EventKind::TurnEnded { .. } if agent != crate::scenario::MAIN_AGENT => {
                Some(format!("{agent} turn-end {t:.2}s"))
            }
            EventKind::AgentFinalized { hook } => Some(format!("{hook}({agent}) {t:.2}s")),
            EventKind::TrackEnded { name, exit, .. } => {
                Some(format!("{name} {} {t:.2}s", short_exit(exit)))
            }
            EventKind::ModelRequest {
                notifications,
                route: Route::Turn | Route::ScriptExhausted,
                ..
            } if !notifications.is_empty() => Some(format!("{agent} notified {t:.2}s")),
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
    parts.join(" · ")
}

fn short_exit(exit: &ExitDesc) -> String {
    match exit {
        ExitDesc::Code(0) => "ended".into(),
        ExitDesc::Code(c) => format!("exit {c}"),
        ExitDesc::Signal(_) | ExitDesc::Vanished => "killed".into(),
    }
}

fn outcome_color(o: Option<Outcome>) -> Color {
    match o {
        Some(Outcome::Woke) => Color::Green,
        Some(Outcome::Unknown) | None => Color::Yellow,
        Some(_) => Color::Red,
    }
}

/// The summary table. `results` are the runs behind `summary`, with their timelines.
pub fn summary(summary: &Summary, results: &[(&RunResult, &Timeline)], color: bool) -> String {
    let mut table = Table::new();
    table
        .load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(160);
    if !color {
        table.force_no_tty();
    } else {
        table.enforce_styling();
    }
    table.set_header([
        "scenario",
        "cli",
        "verdict",
        "expected",
        "latency",
        "duration",
        "key handoffs",
    ]);
    for cell in &summary.cells {
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
        let expected = match (cell.expect, cell.matches_expect) {
            (Some(e), Some(true)) => format!("✓ {e}"),
            (Some(e), Some(false)) => format!("✗ {e}"),
            (None, Some(true)) => "✓ checks".into(),
            (None, Some(false)) => "✗ checks".into(),
            (_, None) => "-".into(),
        };
        let mut durations: Vec<f64> = runs.iter().map(|(r, _)| r.run.duration_s).collect();
        durations.sort_by(f64::total_cmp);
        let duration = durations
            .get(durations.len() / 2)
            .map(|d| format!("{d:.1}s"))
            .unwrap_or_default();
        let latency = cell
            .latency_ms
            .map(|l| format!("{:.2}s", l / 1000.0))
            .unwrap_or_else(|| "-".into());
        let handoff = runs.first().map(|(_, t)| handoffs(t)).unwrap_or_default();
        let mut verdict_cell = Cell::new(verdict);
        let mut expected_cell = Cell::new(expected);
        if color {
            verdict_cell = verdict_cell.fg(outcome_color(cell.outcome));
            expected_cell = expected_cell.fg(match cell.matches_expect {
                Some(false) => Color::Red,
                _ => Color::Reset,
            });
        }
        table.add_row(vec![
            Cell::new(format!("{}/{}", cell.scenario, cell.variant)),
            Cell::new(&cell.cli),
            verdict_cell,
            expected_cell,
            Cell::new(latency),
            Cell::new(duration),
            Cell::new(handoff),
        ]);
    }
    table.to_string()
}
