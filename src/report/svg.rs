//! A swimlane picture of one run (SVG): one lane per agent and per tracked background command,
//! marks for requests, delivered notifications, injected text, turn ends, finalizations, the
//! driver's inputs and control requests (`interrupt`, `stop_task`, `send_task_message`), an
//! agent's SendMessage, kills and the run's end, and a bar for each background command's life.
//! The verdict is written under the title; a legend names every kind of mark drawn. When the
//! witness's moments sit close together on the run's scale, a zoomed inset below draws them on
//! a second scale. Each mark has a tooltip. Output is deterministic.

use std::fmt::Write;

use quick_xml::escape::escape;

use crate::classify::result::RunResult;
use crate::evidence::describe::describe;
use crate::evidence::lanes::{Lane, LaneMap};
use crate::evidence::{Event, EventKind, ExitDesc, Route, Timeline};

const LEFT: f64 = 130.0;
const WIDTH: f64 = 1000.0;
const LANE: f64 = 46.0;
/// Where the first lane starts (below the title and the verdict).
const TOP: f64 = 58.0;
/// Marks closer than this (px) on the run's scale are hard to tell apart.
const CROWDED_PX: f64 = 14.0;

/// What the picture says besides its marks: its title, the verdict, and the witness's times.
pub struct Caption {
    pub title: String,
    pub verdict: Option<String>,
    pub witness_ms: Vec<f64>,
}

impl Caption {
    /// The caption of a judged run: the verdict with its hypothesis and expectation.
    pub fn of(title: &str, result: &RunResult) -> Caption {
        let j = &result.judgement;
        let expect = match (&result.expect, result.matches_expect) {
            (Some(e), Some(true)) => format!(" (expected {e}: as expected)"),
            (Some(e), Some(false)) if e.allows(j.outcome) => {
                format!(" (expected {e}: as expected, but a check failed)")
            }
            (Some(e), _) => format!(" (expected {e}: differs)"),
            _ => String::new(),
        };
        Caption {
            title: title.to_string(),
            verdict: Some(format!(
                "verdict: {} — {}{expect}",
                j.outcome,
                j.outcome.hypothesis()
            )),
            witness_ms: j
                .verdicts
                .iter()
                .flat_map(|v| v.witness.iter().map(|w| w.t_ms))
                .collect(),
        }
    }

    /// A caption with a title only.
    pub fn titled(title: &str) -> Caption {
        Caption {
            title: title.to_string(),
            verdict: None,
            witness_ms: vec![],
        }
    }
}

/// The kinds of mark, each with its legend entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mark {
    Request,
    Notified,
    Injected,
    TurnEnd,
    Finalized,
    Input,
    Control,
    Message,
    Failed,
    RunEnd,
    Fault,
}

impl Mark {
    const ALL: [Mark; 11] = [
        Mark::Request,
        Mark::Notified,
        Mark::Injected,
        Mark::TurnEnd,
        Mark::Finalized,
        Mark::Input,
        Mark::Control,
        Mark::Message,
        Mark::Failed,
        Mark::RunEnd,
        Mark::Fault,
    ];

    fn key(self) -> &'static str {
        match self {
            Mark::Request => "request",
            Mark::Notified => "notified",
            Mark::Injected => "injected",
            Mark::TurnEnd => "turn-end",
            Mark::Finalized => "finalized",
            Mark::Input => "input",
            Mark::Control => "control",
            Mark::Message => "message",
            Mark::Failed => "failed",
            Mark::RunEnd => "run-end",
            Mark::Fault => "fault",
        }
    }

    fn legend(self) -> &'static str {
        match self {
            Mark::Request => "model request",
            Mark::Notified => "request carrying a notification",
            Mark::Injected => {
                "request with injected text (a reminder, hook feedback, a user message)"
            }
            Mark::TurnEnd => "turn end",
            Mark::Finalized => "finalized (SubagentStop)",
            Mark::Input => "the driver's input (prompt, message, probe)",
            Mark::Control => {
                "the driver's control request (interrupt, stop_task, send_task_message)"
            }
            Mark::Message => "SendMessage from an agent",
            Mark::Failed => "killed or failed",
            Mark::RunEnd => "the CLI's exit, or the harness ending the run",
            Mark::Fault => "a fault the harness injected into a model request's answer",
        }
    }

    /// The mark's element at (`cx`, `ly`), without its closing tag; `bottom` is where a
    /// full-height mark ends.
    fn shape(self, cx: f64, ly: f64, top: f64, bottom: f64) -> String {
        let k = self.key();
        match self {
            Mark::Request => format!(
                r##"<circle data-mark="{k}" cx="{cx:.1}" cy="{ly:.1}" r="4" fill="#0969da">"##
            ),
            Mark::Notified => format!(
                r##"<path data-mark="{k}" d="M{cx:.1} {:.1} l7 7 l-7 7 l-7 -7 z" fill="#2da44e">"##,
                ly - 7.0
            ),
            Mark::Injected => format!(
                r##"<path data-mark="{k}" d="M{:.1} {:.1} l8 4 l-8 4 z" fill="#bc4c00">"##,
                cx - 4.0,
                ly - 20.0
            ),
            Mark::TurnEnd => format!(
                r##"<rect data-mark="{k}" x="{:.1}" y="{:.1}" width="3" height="22" fill="#24292f">"##,
                cx - 1.5,
                ly - 11.0
            ),
            Mark::Finalized => format!(
                r##"<rect data-mark="{k}" x="{:.1}" y="{:.1}" width="10" height="10" fill="#8250df">"##,
                cx - 5.0,
                ly - 5.0
            ),
            Mark::Input => format!(
                r##"<path data-mark="{k}" d="M{cx:.1} {:.1} l6 10 l-12 0 z" fill="#bf8700">"##,
                ly - 16.0
            ),
            Mark::Control => format!(
                r##"<rect data-mark="{k}" x="{:.1}" y="{:.1}" width="12" height="12" fill="white" stroke="#bf3989" stroke-width="2.5">"##,
                cx - 6.0,
                ly - 6.0
            ),
            Mark::Message => format!(
                r##"<path data-mark="{k}" d="M{:.1} {:.1} h14 v10 h-14 z l7 5 l7 -5" fill="white" stroke="#1a7f37" stroke-width="1.5">"##,
                cx - 7.0,
                ly + 6.0
            ),
            Mark::Failed => format!(
                r##"<path data-mark="{k}" d="M{:.1} {:.1} l10 10 M{:.1} {:.1} l-10 10" stroke="#cf222e" stroke-width="3">"##,
                cx - 5.0,
                ly - 5.0,
                cx + 5.0,
                ly - 5.0
            ),
            Mark::RunEnd => format!(
                r##"<line data-mark="{k}" x1="{cx:.1}" y1="{top:.1}" x2="{cx:.1}" y2="{bottom:.1}" stroke="#cf222e" stroke-dasharray="4 3">"##
            ),
            // A lightning bolt under the request it broke.
            Mark::Fault => format!(
                r##"<path data-mark="{k}" d="M{:.1} {:.1} l-5 8 h5 l-3 8 l8 -11 h-5 l3 -5 z" fill="#d1242f">"##,
                cx + 1.0,
                ly + 6.0
            ),
        }
    }

    fn close(self) -> &'static str {
        match self {
            Mark::Request => "</circle>",
            Mark::TurnEnd | Mark::Finalized | Mark::Control => "</rect>",
            Mark::RunEnd => "</line>",
            _ => "</path>",
        }
    }
}

/// One event's mark: its kind, its lane, and a short label drawn beside it.
struct Placed<'a> {
    event: &'a Event,
    mark: Mark,
    lane: String,
    label: Option<String>,
}

/// The marks of a timeline, in time order.
fn placed<'a>(tl: &'a Timeline, map: &LaneMap) -> Vec<Placed<'a>> {
    let main = crate::scenario::MAIN_AGENT.to_string();
    let lane_of = |e: &Event| match map.lane(e) {
        Lane::Agent(a) | Lane::Command(a) => Some(a),
        Lane::Driver => Some(main.clone()),
        Lane::Session => matches!(e.kind, EventKind::CliExited { .. }).then(|| main.clone()),
    };
    let mut out = Vec::new();
    for e in tl.iter() {
        let Some(lane) = lane_of(e) else { continue };
        let mut push = |mark: Mark, lane: String, label: Option<String>| {
            out.push(Placed {
                event: e,
                mark,
                lane,
                label,
            })
        };
        match &e.kind {
            EventKind::ModelRequest {
                route: Route::Turn | Route::ScriptExhausted,
                notifications,
                injected,
                ..
            } => {
                let kind = if notifications.is_empty() {
                    Mark::Request
                } else {
                    Mark::Notified
                };
                push(kind, lane.clone(), None);
                if injected.is_some() {
                    push(Mark::Injected, lane, None);
                }
            }
            EventKind::TurnEnded { .. } => push(Mark::TurnEnd, lane, None),
            EventKind::AgentFinalized { .. } => push(Mark::Finalized, lane, None),
            EventKind::UserInput { .. } => push(Mark::Input, lane, None),
            EventKind::ControlRequest { subtype, target } => {
                let target_lane = target
                    .as_deref()
                    .and_then(|t| t.split_whitespace().next())
                    .filter(|t| map.agents.iter().chain(&map.commands).any(|l| l == t))
                    .map(str::to_string);
                push(
                    Mark::Control,
                    target_lane.unwrap_or(lane),
                    Some(subtype.clone()),
                );
            }
            EventKind::ToolCall { tool, .. } if tool == "SendMessage" => {
                push(Mark::Message, lane, Some("SendMessage".into()))
            }
            EventKind::TrackEnded { exit, .. } if !exit.success() => push(Mark::Failed, lane, None),
            EventKind::FaultInjected { fault, .. } | EventKind::WorkSignalled { fault, .. } => {
                push(Mark::Fault, lane, Some(fault.as_str().to_string()))
            }
            EventKind::CliCrashed { .. } => push(
                Mark::Fault,
                lane,
                Some(crate::scenario::FaultKind::CrashCli.as_str().to_string()),
            ),
            EventKind::CliExited { .. }
            | EventKind::CeilingHit { .. }
            | EventKind::Interrupted { .. }
            | EventKind::HarnessFailed { .. }
            | EventKind::WorkOverdue { .. } => push(Mark::RunEnd, lane, None),
            _ => {}
        }
    }
    out
}

/// One panel's geometry: its lanes, its time window, where it starts.
struct Frame<'a> {
    lanes: &'a [String],
    agents: usize,
    t0: f64,
    t1: f64,
    top: f64,
}

impl Frame<'_> {
    fn x(&self, t: f64) -> f64 {
        LEFT + (t - self.t0) / (self.t1 - self.t0) * WIDTH
    }

    fn shows(&self, t: f64) -> bool {
        t >= self.t0 && t <= self.t1
    }

    fn y(&self, lane: &str) -> Option<f64> {
        self.lanes
            .iter()
            .position(|l| l == lane)
            .map(|i| self.top + i as f64 * LANE + LANE / 2.0)
    }

    fn bottom(&self) -> f64 {
        self.top + self.lanes.len() as f64 * LANE
    }

    /// The panel with its axis.
    fn height(&self) -> f64 {
        self.bottom() - self.top + 40.0
    }
}

pub fn render(tl: &Timeline, caption: &Caption) -> String {
    let map = LaneMap::of(tl);
    let lanes: Vec<String> = map
        .agents
        .iter()
        .chain(map.commands.iter())
        .cloned()
        .collect();
    let end = tl.events.last().map(|e| e.t_ms).unwrap_or(1.0).max(1.0);
    let main = Frame {
        lanes: &lanes,
        agents: map.agents.len(),
        t0: 0.0,
        t1: end,
        top: TOP,
    };
    let marks = placed(tl, &map);
    let inset = zoom_window(caption, &main).map(|(t0, t1)| Frame {
        lanes: &lanes,
        agents: map.agents.len(),
        t0,
        t1,
        top: main.top + main.height() + 34.0,
    });
    let kinds = kinds_drawn(&marks);
    let legend_top = inset.as_ref().unwrap_or(&main);
    let legend_top = legend_top.top + legend_top.height() + 10.0;
    let height = legend_top + 20.0 * kinds.len().div_ceil(2) as f64 + 30.0;
    let mut s = String::new();
    header(&mut s, caption, height);
    panel(&mut s, &main, tl, &marks);
    if let Some(inset) = &inset {
        zoom_bracket(&mut s, &main, inset);
        panel(&mut s, inset, tl, &marks);
    }
    legend(&mut s, &kinds, legend_top);
    s.push_str("</svg>\n");
    s
}

/// The window the inset zooms into: the largest cluster of the witness's moments that sit
/// closer than a mark's width on the run's scale, with room around it, if there is one.
fn zoom_window(caption: &Caption, main: &Frame) -> Option<(f64, f64)> {
    let mut times = caption.witness_ms.clone();
    times.sort_by(f64::total_cmp);
    times.dedup();
    let ms_per_px = (main.t1 - main.t0) / WIDTH;
    let near = CROWDED_PX * ms_per_px;
    let mut clusters: Vec<Vec<f64>> = Vec::new();
    for t in times {
        match clusters.last_mut() {
            Some(c) if t - c[c.len() - 1] < near => c.push(t),
            _ => clusters.push(vec![t]),
        }
    }
    let best = clusters
        .into_iter()
        .filter(|c| c.len() > 1)
        .max_by_key(|c| c.len())?;
    let (first, last) = (best[0], best[best.len() - 1]);
    let pad = (last - first).max(50.0);
    Some(((first - pad).max(main.t0), (last + pad).min(main.t1)))
}

fn kinds_drawn(marks: &[Placed]) -> Vec<Mark> {
    Mark::ALL
        .into_iter()
        .filter(|k| marks.iter().any(|m| m.mark == *k))
        .collect()
}

fn header(s: &mut String, caption: &Caption, height: f64) {
    let width = LEFT + WIDTH + 40.0;
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<title>{}</title>"#, escape(&caption.title));
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="10" y="20" font-weight="bold">{}</text>"#,
        escape(&caption.title)
    );
    if let Some(verdict) = &caption.verdict {
        let _ = writeln!(
            s,
            r##"<text data-verdict="" x="10" y="40" fill="#24292f">{}</text>"##,
            escape(verdict)
        );
    }
}

/// A panel: its lanes, its axis, the command bars and the marks inside its window.
fn panel(s: &mut String, f: &Frame, tl: &Timeline, marks: &[Placed]) {
    for (i, lane) in f.lanes.iter().enumerate() {
        let ly = f.top + i as f64 * LANE;
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
            escape(lane)
        );
    }
    axis(s, f);
    bars(s, f, tl);
    for m in marks.iter().filter(|m| f.shows(m.event.t_ms)) {
        let Some(ly) = f.y(&m.lane) else { continue };
        let cx = f.x(m.event.t_ms);
        let tip = format!(
            "{:.3} s {}: {}",
            m.event.t_ms / 1000.0,
            m.lane,
            describe(m.event)
        );
        let _ = writeln!(
            s,
            "{}<title>{}</title>{}",
            m.mark.shape(cx, ly, f.top, f.bottom()),
            escape(&tip),
            m.mark.close()
        );
        if let Some(label) = &m.label {
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" font-size="10" fill="#bf3989">{}</text>"##,
                cx + 8.0,
                ly - 8.0,
                escape(label)
            );
        }
    }
}

/// Five ticks along the panel's bottom.
fn axis(s: &mut String, f: &Frame) {
    let axis_y = f.bottom() + 15.0;
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" y1="{axis_y:.1}" x2="{:.1}" y2="{axis_y:.1}" stroke="#6a737d"/>"##,
        LEFT + WIDTH
    );
    let span = f.t1 - f.t0;
    let digits = if span < 1000.0 { 3 } else { 1 };
    for k in 0..=5 {
        let t = f.t0 + span * k as f64 / 5.0;
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#6a737d">{:.digits$} s</text>"##,
            f.x(t),
            axis_y + 16.0,
            t / 1000.0
        );
    }
}

/// Where the inset's window lies on the run's scale, and what the inset is.
fn zoom_bracket(s: &mut String, main: &Frame, inset: &Frame) {
    let (x0, x1) = (
        main.x(inset.t0),
        main.x(inset.t1).max(main.x(inset.t0) + 2.0),
    );
    let _ = writeln!(
        s,
        r##"<rect data-zoom="" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#0969da" fill-opacity="0.08" stroke="#0969da" stroke-dasharray="3 2"/>"##,
        main.top,
        x1 - x0,
        main.bottom() - main.top
    );
    let _ = writeln!(
        s,
        r##"<text x="10" y="{:.1}" font-weight="bold" fill="#0969da">Zoom: the witness, {:.3}–{:.3} s (the shaded window above)</text>"##,
        inset.top - 10.0,
        inset.t0 / 1000.0,
        inset.t1 / 1000.0
    );
}

/// A bar for each background command's life inside the panel, coloured by how it ended.
fn bars(s: &mut String, f: &Frame, tl: &Timeline) {
    for name in &f.lanes[f.agents..] {
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
            None => (f.t1, "#8c959f"),
        };
        let (a, b) = (start.t_ms.max(f.t0), t1.min(f.t1));
        if a > b {
            continue;
        }
        let _ = writeln!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="10" rx="3" fill="{color}" opacity="0.55"><title>{} {:.2}–{:.2} s</title></rect>"#,
            f.x(a),
            ly - 5.0,
            (f.x(b) - f.x(a)).max(1.0),
            escape(name),
            start.t_ms / 1000.0,
            t1 / 1000.0
        );
    }
}

/// One entry per kind of mark drawn, with the mark itself, in two columns.
fn legend(s: &mut String, kinds: &[Mark], top: f64) {
    for (i, kind) in kinds.iter().enumerate() {
        let (col, row) = (i % 2, i / 2);
        let x = 20.0 + col as f64 * 560.0;
        let y = top + 10.0 + row as f64 * 20.0;
        // Marks drawn above or below their lane's line sit on the legend's line here.
        let ly = match kind {
            Mark::Injected => y + 16.0,
            Mark::Input => y + 11.0,
            Mark::Message => y - 11.0,
            _ => y,
        };
        let _ = writeln!(
            s,
            r##"<g data-legend="{}">{}{}<text x="{:.1}" y="{:.1}" fill="#24292f">{}</text></g>"##,
            kind.key(),
            kind.shape(x, ly, y - 9.0, y + 9.0),
            kind.close(),
            x + 16.0,
            y + 4.0,
            escape(kind.legend())
        );
    }
    let y = top + 14.0 + kinds.len().div_ceil(2) as f64 * 20.0;
    let _ = writeln!(
        s,
        r##"<text x="20" y="{y:.1}" fill="#6a737d">bars: background commands (green completed, amber failed, red killed, grey never ended)</text>"##
    );
}
