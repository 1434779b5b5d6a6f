//! A swimlane picture of one run (SVG): one lane per agent and per tracked background command,
//! marks for requests, delivered notifications, turn ends, finalizations, inputs and kills, a
//! bar for each background command's life. Each mark has a tooltip. Output is deterministic.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::describe::describe;
use crate::evidence::{Event, EventKind, ExitDesc, Route, Timeline};

const LEFT: f64 = 130.0;
const WIDTH: f64 = 1000.0;
const LANE: f64 = 46.0;
const TOP: f64 = 40.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Lane name for an event: its agent, or the tracked command it is about.
fn lane_of(e: &Event, task_lanes: &BTreeMap<String, String>) -> Option<String> {
    match &e.kind {
        EventKind::TrackStarted { name, .. } | EventKind::TrackEnded { name, .. } => {
            Some(name.clone())
        }
        EventKind::TaskUpdated { task_id, .. } => task_lanes.get(task_id).cloned(),
        EventKind::UserInput { .. } => Some(crate::scenario::MAIN_AGENT.into()),
        EventKind::CliExited { .. }
        | EventKind::CeilingHit { .. }
        | EventKind::Interrupted { .. }
        | EventKind::HarnessFailed { .. }
        | EventKind::WorkOverdue { .. }
        | EventKind::SessionClosed => Some(crate::scenario::MAIN_AGENT.into()),
        _ => e.agent.clone(),
    }
}

pub fn render(tl: &Timeline, title: &str) -> String {
    // Lanes: agents in order of appearance, then tracked commands.
    let mut agents: Vec<String> = vec![crate::scenario::MAIN_AGENT.to_string()];
    let mut tracks: Vec<String> = Vec::new();
    let mut task_lanes: BTreeMap<String, String> = BTreeMap::new();
    for e in tl.iter() {
        if let Some(a) = &e.agent
            && matches!(
                e.kind,
                EventKind::ModelRequest {
                    route: Route::Turn | Route::ScriptExhausted,
                    ..
                }
            )
            && !agents.contains(a)
        {
            agents.push(a.clone());
        }
        match &e.kind {
            EventKind::TrackStarted { name, .. } if !tracks.contains(name) => {
                tracks.push(name.clone())
            }
            EventKind::TaskStarted {
                task_id,
                label: Some(l),
                task_type,
                ..
            } if task_type.contains("bash") => {
                task_lanes.insert(task_id.clone(), l.clone());
            }
            _ => {}
        }
    }
    let lanes: Vec<String> = agents.iter().chain(tracks.iter()).cloned().collect();
    let end = tl.events.last().map(|e| e.t_ms).unwrap_or(1.0).max(1.0);
    let x = |t: f64| LEFT + t / end * WIDTH;
    let y = |lane: &str| {
        lanes
            .iter()
            .position(|l| l == lane)
            .map(|i| TOP + i as f64 * LANE + LANE / 2.0)
    };
    let height = TOP + lanes.len() as f64 * LANE + 60.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{:.0}" height="{height:.0}" viewBox="0 0 {:.0} {height:.0}" font-family="sans-serif" font-size="12">"#,
        LEFT + WIDTH + 40.0,
        LEFT + WIDTH + 40.0
    );
    let _ = writeln!(s, r#"<title>{}</title>"#, esc(title));
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="10" y="20" font-weight="bold">{}</text>"#,
        esc(title)
    );
    for (i, lane) in lanes.iter().enumerate() {
        let ly = TOP + i as f64 * LANE;
        let fill = if i % 2 == 0 { "#f6f8fa" } else { "#ffffff" };
        let kind = if i < agents.len() { "agent" } else { "command" };
        let _ = writeln!(
            s,
            r##"<rect x="0" y="{ly:.1}" width="{:.0}" height="{LANE:.0}" fill="{fill}"/>"##,
            LEFT + WIDTH + 40.0
        );
        let _ = writeln!(
            s,
            r##"<text x="10" y="{:.1}">{} <tspan fill="#6a737d">({kind})</tspan></text>"##,
            ly + LANE / 2.0 + 4.0,
            esc(lane)
        );
    }
    // Axis: five ticks.
    let axis_y = TOP + lanes.len() as f64 * LANE + 15.0;
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" y1="{axis_y:.1}" x2="{:.1}" y2="{axis_y:.1}" stroke="#6a737d"/>"##,
        LEFT + WIDTH
    );
    for k in 0..=5 {
        let t = end * k as f64 / 5.0;
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#6a737d">{:.1} s</text>"##,
            x(t),
            axis_y + 16.0,
            t / 1000.0
        );
    }
    // Background command bars.
    for name in &tracks {
        let start = tl
            .iter()
            .find(|e| matches!(&e.kind, EventKind::TrackStarted { name: n, .. } if n == name));
        let stop = tl
            .iter()
            .find(|e| matches!(&e.kind, EventKind::TrackEnded { name: n, .. } if n == name));
        if let (Some(start), Some(ly)) = (start, y(name)) {
            let (t1, color) = match stop.map(|e| &e.kind) {
                Some(EventKind::TrackEnded {
                    exit: ExitDesc::Code(0),
                    ..
                }) => (stop.unwrap().t_ms, "#2da44e"),
                Some(EventKind::TrackEnded {
                    exit: ExitDesc::Code(_),
                    ..
                }) => (stop.unwrap().t_ms, "#bf8700"),
                Some(_) => (stop.unwrap().t_ms, "#cf222e"),
                None => (end, "#8c959f"),
            };
            let _ = writeln!(
                s,
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="10" rx="3" fill="{color}" opacity="0.55"><title>{} {:.2}–{:.2} s</title></rect>"#,
                x(start.t_ms),
                ly - 5.0,
                (x(t1) - x(start.t_ms)).max(1.0),
                esc(name),
                start.t_ms / 1000.0,
                t1 / 1000.0
            );
        }
    }
    // Marks.
    for e in tl.iter() {
        let Some(lane) = lane_of(e, &task_lanes) else {
            continue;
        };
        let Some(ly) = y(&lane) else { continue };
        let cx = x(e.t_ms);
        let tip = format!("{:.3} s {}: {}", e.t_ms / 1000.0, lane, describe(e));
        let mark = match &e.kind {
            EventKind::ModelRequest {
                route: Route::Turn | Route::ScriptExhausted,
                notifications,
                ..
            } => {
                if notifications.is_empty() {
                    format!(r##"<circle cx="{cx:.1}" cy="{ly:.1}" r="4" fill="#0969da">"##)
                } else {
                    format!(
                        r##"<path d="M{cx:.1} {:.1} l7 7 l-7 7 l-7 -7 z" fill="#2da44e">"##,
                        ly - 7.0
                    )
                }
            }
            EventKind::TurnEnded { .. } => format!(
                r##"<rect x="{:.1}" y="{:.1}" width="3" height="22" fill="#24292f">"##,
                cx - 1.5,
                ly - 11.0
            ),
            EventKind::AgentFinalized { .. } => format!(
                r##"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="#8250df">"##,
                cx - 5.0,
                ly - 5.0
            ),
            EventKind::UserInput { .. } => format!(
                r##"<path d="M{cx:.1} {:.1} l6 10 l-12 0 z" fill="#bf8700">"##,
                ly - 16.0
            ),
            EventKind::TrackEnded { exit, .. } if !exit.success() => format!(
                r##"<path d="M{:.1} {:.1} l10 10 M{:.1} {:.1} l-10 10" stroke="#cf222e" stroke-width="3">"##,
                cx - 5.0,
                ly - 5.0,
                cx + 5.0,
                ly - 5.0
            ),
            EventKind::CliExited { .. }
            | EventKind::CeilingHit { .. }
            | EventKind::Interrupted { .. }
            | EventKind::HarnessFailed { .. }
            | EventKind::WorkOverdue { .. } => {
                format!(
                    r##"<line x1="{cx:.1}" y1="{TOP}" x2="{cx:.1}" y2="{:.1}" stroke="#cf222e" stroke-dasharray="4 3">"##,
                    TOP + lanes.len() as f64 * LANE
                )
            }
            _ => continue,
        };
        let close = if mark.starts_with("<circle") {
            "</circle>"
        } else if mark.starts_with("<rect") {
            "</rect>"
        } else if mark.starts_with("<line") {
            "</line>"
        } else {
            "</path>"
        };
        let _ = writeln!(s, "{mark}<title>{}</title>{close}", esc(&tip));
    }
    // Legend.
    let ly = height - 18.0;
    let _ = writeln!(
        s,
        r##"<text x="10" y="{ly:.1}" fill="#24292f"><tspan fill="#0969da">●</tspan> model request  <tspan fill="#2da44e">◆</tspan> request carrying a notification  ▮ turn end  <tspan fill="#8250df">■</tspan> finalized (SubagentStop)  <tspan fill="#bf8700">▼</tspan> input  <tspan fill="#cf222e">✕</tspan> killed or failed  ·  bars: background commands (green completed, red killed, grey never ended)</text>"##
    );
    s.push_str("</svg>\n");
    s
}
