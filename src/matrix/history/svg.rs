//! `history.svg`: releases along x, one row per scenario variant, one colour per verdict
//! (striped when flaky, pale where a release was not run but lies inside a segment, grey where
//! a change was not pinned down), a black mark at every change point and its release named
//! under the axis. Deterministic: no clock, no randomness, fixed number formats.

use std::fmt::Write;

use quick_xml::escape::escape;

use super::{Agreed, CellHistory, HistoryFile};
use crate::classify::Outcome;

const CELL_W: f64 = 9.0;
const ROW_H: f64 = 22.0;
const TOP: f64 = 48.0;
const AXIS_LABELS: f64 = 96.0;
const LEGEND: f64 = 40.0;
const CHAR_W: f64 = 7.4;
const NOTE: &str = "pale: not run, inside a segment whose ends agree · ▼ and a bar: a change point (its first release named below the axis) · outlined: skipped";

/// The colour of a verdict.
pub fn colour(o: Outcome) -> &'static str {
    match o {
        Outcome::Woke => "#2da44e",
        Outcome::NeverFired => "#8250df",
        Outcome::NotResumable => "#cf222e",
        Outcome::QueuedUntilInput => "#bf8700",
        Outcome::ChildFailed => "#0969da",
        Outcome::Unknown => "#6e7781",
    }
}

fn fill(a: &Agreed) -> String {
    match a {
        Agreed::Stable { observation } => colour(observation.verdict).to_string(),
        Agreed::Flaky | Agreed::Race { .. } => "url(#flaky)".to_string(),
    }
}

struct Frame {
    left: f64,
    versions: Vec<String>,
}

impl Frame {
    fn x(&self, i: usize) -> f64 {
        self.left + i as f64 * CELL_W
    }

    fn width(&self) -> f64 {
        self.x(self.versions.len()) + 20.0
    }

    fn index(&self, v: &str) -> Option<usize> {
        self.versions.iter().position(|x| x == v)
    }
}

/// The whole picture.
pub fn render(h: &HistoryFile) -> String {
    let longest = h
        .cells
        .iter()
        .map(|c| c.scenario.len() + c.variant.len() + 1)
        .max()
        .unwrap_or(8);
    let frame = Frame {
        left: 24.0 + longest as f64 * CHAR_W,
        versions: h.versions.clone(),
    };
    let legend_items: usize = crate::classify::ALL_OUTCOMES
        .iter()
        .map(|o| o.as_str().len())
        .chain(["flaky".len(), "not pinned down".len()])
        .map(|n| n + 4)
        .sum();
    let width = frame
        .width()
        .max(20.0 + legend_items as f64 * CHAR_W)
        .max(20.0 + NOTE.chars().count() as f64 * CHAR_W);
    let rows_bottom = TOP + h.cells.len() as f64 * ROW_H;
    let height = rows_bottom + AXIS_LABELS + LEGEND;
    let mut s = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{:.0}" height="{height:.0}" font-family="monospace" font-size="12">
<defs><pattern id="flaky" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fb8f44"/><rect width="3" height="6" fill="#ffffff"/></pattern></defs>
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="10" y="22" font-size="15" font-weight="bold">{}</text>
"##,
        width,
        escape(format!("Behaviour history: {} to {}", h.from, h.to))
    );
    for (row, cell) in h.cells.iter().enumerate() {
        cell_row(&mut s, &frame, h, cell, TOP + row as f64 * ROW_H);
    }
    axis(&mut s, &frame, h, rows_bottom);
    legend(&mut s, rows_bottom + AXIS_LABELS + 18.0);
    s.push_str("</svg>\n");
    s
}

fn cell_row(s: &mut String, f: &Frame, h: &HistoryFile, cell: &CellHistory, y: f64) {
    let _ = writeln!(
        s,
        r##"<text x="10" y="{:.1}">{}</text>"##,
        y + 15.0,
        escape(format!("{}/{}", cell.scenario, cell.variant))
    );
    let skipped = |v: &str| h.skipped.iter().any(|k| k.version == v);
    for (i, v) in f.versions.iter().enumerate() {
        let x = f.x(i);
        if skipped(v) {
            let _ = writeln!(
                s,
                r##"<rect x="{x:.1}" y="{:.1}" width="{CELL_W:.1}" height="{:.1}" fill="#ffffff" stroke="#d0d7de"/>"##,
                y + 3.0,
                ROW_H - 6.0
            );
            continue;
        }
        let segment = cell.segments.iter().find(|seg| {
            let (a, b) = (f.index(&seg.first), f.index(&seg.last));
            matches!((a, b), (Some(a), Some(b)) if a <= i && i <= b)
        });
        let (colour, opacity) = match segment {
            Some(seg) if cell.reading(v).is_some() => (fill(&seg.agreed), "1"),
            Some(seg) => (fill(&seg.agreed), "0.45"),
            None => ("#d0d7de".to_string(), "1"),
        };
        let _ = writeln!(
            s,
            r##"<rect x="{x:.1}" y="{:.1}" width="{CELL_W:.1}" height="{:.1}" fill="{colour}" fill-opacity="{opacity}"><title>{}</title></rect>"##,
            y + 3.0,
            ROW_H - 6.0,
            escape(tooltip(cell, v))
        );
    }
    for change in &cell.changes {
        if let Some(i) = f.index(&change.first_after) {
            let x = f.x(i);
            let _ = writeln!(
                s,
                r##"<path d="M{x:.1} {:.1} l0 {:.1} M{:.1} {:.1} l3.5 -5 l-7 0 z" stroke="#24292f" stroke-width="2" fill="#24292f"/>"##,
                y + 1.0,
                ROW_H - 2.0,
                x,
                y + 1.0
            );
        }
    }
}

/// `2.1.225: woke 3/3`, or `2.1.226: not run (woke from 2.1.225 to 2.1.332)`.
fn tooltip(cell: &CellHistory, v: &str) -> String {
    if let Some(r) = cell.reading(v) {
        return format!("{v}: {}", r.agreement(cell.expect.as_ref()));
    }
    format!("{v}: not run")
}

/// Every release as a tick; the ends and each change point's first release named.
fn axis(s: &mut String, f: &Frame, h: &HistoryFile, y: f64) {
    let mut named: Vec<usize> = vec![0, f.versions.len().saturating_sub(1)];
    named.extend(h.changes().filter_map(|(_, c)| f.index(&c.first_after)));
    named.sort();
    named.dedup();
    let _ = writeln!(
        s,
        r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#6a737d"/>"##,
        f.left,
        f.x(f.versions.len())
    );
    for i in 0..f.versions.len() {
        let cx = f.x(i) + CELL_W / 2.0;
        let tall = if named.contains(&i) { 6.0 } else { 3.0 };
        let _ = writeln!(
            s,
            r##"<line x1="{cx:.1}" y1="{y:.1}" x2="{cx:.1}" y2="{:.1}" stroke="#6a737d"/>"##,
            y + tall
        );
    }
    for i in named.iter().filter(|i| **i < f.versions.len()) {
        let cx = f.x(*i) + CELL_W / 2.0 + 4.0;
        let _ = writeln!(
            s,
            r##"<text transform="translate({cx:.1} {:.1}) rotate(-90)" text-anchor="end" fill="#24292f">{}</text>"##,
            y + 10.0,
            escape(&f.versions[*i])
        );
    }
}

fn legend(s: &mut String, y: f64) {
    let mut x = 10.0;
    let mut item = |s: &mut String, fill: &str, label: &str| {
        let _ = writeln!(
            s,
            r##"<rect x="{x:.1}" y="{:.1}" width="12" height="12" fill="{fill}"/><text x="{:.1}" y="{y:.1}">{}</text>"##,
            y - 10.0,
            x + 16.0,
            escape(label)
        );
        x += (label.len() + 4) as f64 * CHAR_W;
    };
    for o in crate::classify::ALL_OUTCOMES {
        item(s, colour(o), o.as_str());
    }
    item(s, "url(#flaky)", "flaky");
    item(s, "#d0d7de", "not pinned down");
    let _ = writeln!(
        s,
        r##"<text x="10" y="{:.1}" fill="#6a737d">{}</text>"##,
        y + 18.0,
        escape(NOTE)
    );
}
