//! A swimlane picture of one run (SVG): one lane per agent and per tracked background command,
//! marks for requests, delivered notifications, turn ends, finalizations, inputs and kills, a
//! bar for each background command's life. Each mark has a tooltip. Output is deterministic.

use std::fmt::Write;

use super::lanes::{Lane, LaneMap};
use crate::evidence::describe::describe;
use crate::evidence::{Event, EventKind, ExitDesc, Route, Timeline};

const LEFT: f64 = 130.0;
const WIDTH: f64 = 1000.0;
const LANE: f64 = 46.0;
const TOP: f64 = 40.0;

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// The picture's geometry: its lanes and the time scale.
struct Frame {
    lanes: Vec<String>,
    agents: usize,
    end: f64,
}

impl Frame {
    fn x(&self, t: f64) -> f64 {
        LEFT + t / self.end * WIDTH
    }

    fn y(&self, lane: &str) -> Option<f64> {
        self.lanes
            .iter()
            .position(|l| l == lane)
            .map(|i| TOP + i as f64 * LANE + LANE / 2.0)
    }

    fn lanes_bottom(&self) -> f64 {
        TOP + self.lanes.len() as f64 * LANE
    }

    fn height(&self) -> f64 {
        self.lanes_bottom() + 60.0
    }
}

/// The lane an event is drawn in: the harness's actions and the CLI's exit on the main agent's.
fn lane_of(e: &Event, map: &LaneMap) -> Option<String> {
    match map.lane(e) {
        Lane::Agent(a) | Lane::Command(a) => Some(a),
        Lane::Driver => Some(crate::scenario::MAIN_AGENT.into()),
        Lane::Session => matches!(e.kind, EventKind::CliExited { .. })
            .then(|| crate::scenario::MAIN_AGENT.into()),
    }
}

pub fn render(tl: &Timeline, title: &str) -> String {
    let map = LaneMap::of(tl);
    let frame = Frame {
        lanes: map
            .agents
            .iter()
            .chain(map.commands.iter())
            .cloned()
            .collect(),
        agents: map.agents.len(),
        end: tl.events.last().map(|e| e.t_ms).unwrap_or(1.0).max(1.0),
    };
    let mut s = String::new();
    header(&mut s, &frame, title);
    axis(&mut s, &frame);
    bars(&mut s, &frame, tl, &map.commands);
    marks(&mut s, &frame, tl, &map);
    legend(&mut s, &frame);
    s.push_str("</svg>\n");
    s
}

fn header(s: &mut String, f: &Frame, title: &str) {
    let height = f.height();
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
    for (i, lane) in f.lanes.iter().enumerate() {
        let ly = TOP + i as f64 * LANE;
        let fill = if i % 2 == 0 { "#f6f8fa" } else { "#ffffff" };
        let kind = if i < f.agents { "agent" } else { "command" };
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
}

/// Five ticks along the bottom.
fn axis(s: &mut String, f: &Frame) {
    let axis_y = f.lanes_bottom() + 15.0;
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" y1="{axis_y:.1}" x2="{:.1}" y2="{axis_y:.1}" stroke="#6a737d"/>"##,
        LEFT + WIDTH
    );
    for k in 0..=5 {
        let t = f.end * k as f64 / 5.0;
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#6a737d">{:.1} s</text>"##,
            f.x(t),
            axis_y + 16.0,
            t / 1000.0
        );
    }
}

/// A bar for each background command's life, coloured by how it ended.
fn bars(s: &mut String, f: &Frame, tl: &Timeline, commands: &[String]) {
    for name in commands {
        let start = tl
            .iter()
            .find(|e| matches!(&e.kind, EventKind::TrackStarted { name: n, .. } if n == name));
        let stop = tl
            .iter()
            .find(|e| matches!(&e.kind, EventKind::TrackEnded { name: n, .. } if n == name));
        let (Some(start), Some(ly)) = (start, f.y(name)) else {
            continue;
        };
        let (t1, color) = match stop.map(|e| (e.t_ms, &e.kind)) {
            Some((
                t,
                EventKind::TrackEnded {
                    exit: ExitDesc::Code(0),
                    ..
                },
            )) => (t, "#2da44e"),
            Some((
                t,
                EventKind::TrackEnded {
                    exit: ExitDesc::Code(_),
                    ..
                },
            )) => (t, "#bf8700"),
            Some((t, _)) => (t, "#cf222e"),
            None => (f.end, "#8c959f"),
        };
        let _ = writeln!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="10" rx="3" fill="{color}" opacity="0.55"><title>{} {:.2}–{:.2} s</title></rect>"#,
            f.x(start.t_ms),
            ly - 5.0,
            (f.x(t1) - f.x(start.t_ms)).max(1.0),
            esc(name),
            start.t_ms / 1000.0,
            t1 / 1000.0
        );
    }
}

/// A mark for each event worth one, with its description as a tooltip.
fn marks(s: &mut String, f: &Frame, tl: &Timeline, map: &LaneMap) {
    for e in tl.iter() {
        let Some(lane) = lane_of(e, map) else {
            continue;
        };
        let Some(ly) = f.y(&lane) else { continue };
        let Some(mark) = mark(e, f.x(e.t_ms), ly, f) else {
            continue;
        };
        let tip = format!("{:.3} s {}: {}", e.t_ms / 1000.0, lane, describe(e));
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
}

/// The opening tag of an event's mark at (`cx`, `ly`), if it has one.
fn mark(e: &Event, cx: f64, ly: f64, f: &Frame) -> Option<String> {
    Some(match &e.kind {
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
        | EventKind::WorkOverdue { .. } => format!(
            r##"<line x1="{cx:.1}" y1="{TOP}" x2="{cx:.1}" y2="{:.1}" stroke="#cf222e" stroke-dasharray="4 3">"##,
            f.lanes_bottom()
        ),
        _ => return None,
    })
}

fn legend(s: &mut String, f: &Frame) {
    let ly = f.height() - 18.0;
    let _ = writeln!(
        s,
        r##"<text x="10" y="{ly:.1}" fill="#24292f"><tspan fill="#0969da">●</tspan> model request  <tspan fill="#2da44e">◆</tspan> request carrying a notification  ▮ turn end  <tspan fill="#8250df">■</tspan> finalized (SubagentStop)  <tspan fill="#bf8700">▼</tspan> input  <tspan fill="#cf222e">✕</tspan> killed or failed  ·  bars: background commands (green completed, red killed, grey never ended)</text>"##
    );
}
