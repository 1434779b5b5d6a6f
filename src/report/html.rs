//! `index.html`: one self-contained page per invocation folder, to browse a downloaded CI
//! artifact without a server or a network. The grid of cells (scenario/variant by CLI) in
//! verdict colours, each cell linking to its runs; then each run with its verdict, witness,
//! timeline SVG and Mermaid source inline, and links to its report and raw evidence files.
//! No script, no external resource: every link is a relative path to a file that exists.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::Path;

use super::redact::Redactor;
use super::store::StoreError;
use super::svg::esc;
use crate::classify::result::{RunResult, Summary};
use crate::evidence::Timeline;
use crate::scenario::Outcome;

pub const INDEX_FILE: &str = "index.html";

/// One run as the page shows it: its folder (relative to the page), result, timeline picture,
/// Mermaid source and the files it links to.
pub struct PageRun {
    pub rel_dir: String,
    pub result: RunResult,
    /// The run's `timeline.svg`, when its folder holds one.
    pub svg: Option<String>,
    pub mermaid: String,
    /// Files of the run's folder, relative to it, sorted.
    pub files: Vec<String>,
}

/// The page's CSS class for an outcome (`None`: a cell whose runs disagree).
fn outcome_class(outcome: Option<Outcome>) -> &'static str {
    match outcome {
        Some(Outcome::Woke) => "woke",
        Some(Outcome::NeverFired) => "never-fired",
        Some(Outcome::NotResumable) => "not-resumable",
        Some(Outcome::QueuedUntilInput) => "queued",
        Some(Outcome::ChildFailed) => "child-failed",
        Some(Outcome::Unknown) => "unknown",
        None => "flaky",
    }
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1f24;max-width:1200px}
table{border-collapse:collapse;margin:8px 0 16px}th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.cell a{color:inherit;text-decoration:none;display:block}
.woke{background:#dafbe1}.never-fired{background:#ffd8d3}.not-resumable{background:#ffe2bf}
.queued{background:#fff3b0}.child-failed{background:#eddeff}.unknown{background:#eaeef2}.flaky{background:#fbe4f1}
.differs{font-weight:600}.legend span{display:inline-block;padding:2px 8px;margin-right:6px;border:1px solid #d0d7de}
section{border-top:1px solid #d0d7de;padding-top:8px;margin-top:20px}
svg{max-width:100%;height:auto;border:1px solid #eaeef2}pre{background:#f6f8fa;padding:8px;overflow:auto}
ul.files{columns:3;font-size:13px}";

/// The whole page for a folder's summary and its runs.
pub fn page(summary: &Summary, runs: &[PageRun], folder_files: &[String]) -> String {
    let mut out = String::new();
    let title = format!("wakeprobe {}", summary.run_id);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        esc(&title),
        esc(&title)
    );
    out.push_str(&overview(summary, runs.len()));
    out.push_str(&folder_links(folder_files));
    out.push_str(&grid(summary, runs));
    out.push_str(&legend());
    for (n, run) in runs.iter().enumerate() {
        out.push_str(&run_section(n, run));
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn overview(summary: &Summary, runs: usize) -> String {
    let cells = summary.cells.len();
    let differ = summary
        .cells
        .iter()
        .filter(|c| c.matches_expect == Some(false))
        .count();
    let mut text = format!(
        "{} in {}; {} from the expectation.",
        super::plural(runs, "run", "runs"),
        super::plural(cells, "cell", "cells"),
        super::plural(differ, "differs", "differ")
    );
    if summary.interrupted {
        text.push_str(" The invocation was interrupted: runs it cut short are `unknown`.");
    }
    let mut out = format!("<p>{}</p>\n", prose(&text));
    if !summary.setup_errors.is_empty() {
        out.push_str("<p>Cells that could not run:</p>\n<ul>\n");
        for e in &summary.setup_errors {
            let _ = writeln!(
                out,
                "<li>{}/{} on {}: {}</li>",
                esc(&e.scenario),
                esc(&e.variant),
                esc(&e.cli),
                esc(&e.message)
            );
        }
        out.push_str("</ul>\n");
    }
    out
}

/// The report's prose as HTML: escaped, with its `code` spans set as code.
fn prose(text: &str) -> String {
    let escaped = esc(text);
    if !escaped.matches('`').count().is_multiple_of(2) {
        return escaped;
    }
    escaped
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("<code>{part}</code>")
            } else {
                part.to_string()
            }
        })
        .collect()
}

/// Links to the folder's own files (summary, matrix, JUnit...).
fn folder_links(files: &[String]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let links: Vec<String> = files
        .iter()
        .map(|f| format!("<a href=\"{}\">{}</a>", href(f), esc(f)))
        .collect();
    format!("<p>Files: {}</p>\n", links.join(" · "))
}

/// A relative path as an `href`: each segment percent-encoded where a URL needs it.
fn href(path: &str) -> String {
    let mut out = String::new();
    for c in path.chars() {
        if c.is_ascii_alphanumeric() || "/._-~".contains(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

/// The anchor of the `n`th run's section.
fn anchor(n: usize) -> String {
    format!("run-{}", n + 1)
}

/// Scenario/variant rows by CLI columns; each cell in its verdict's colour, linking to its
/// first run's section.
fn grid(summary: &Summary, runs: &[PageRun]) -> String {
    let clis: BTreeSet<&str> = summary.cells.iter().map(|c| c.cli.as_str()).collect();
    let mut rows: Vec<(&str, &str)> = Vec::new();
    for c in &summary.cells {
        if !rows.contains(&(c.scenario.as_str(), c.variant.as_str())) {
            rows.push((&c.scenario, &c.variant));
        }
    }
    let mut out =
        String::from("<table class=\"grid\">\n<tr><th>scenario/variant</th><th>expect</th>");
    for cli in &clis {
        let title = runs
            .iter()
            .find(|r| r.result.run.cli_label == *cli)
            .map(|r| r.result.run.cli_label_text())
            .unwrap_or_else(|| cli.to_string());
        let _ = write!(out, "<th>{}</th>", esc(&title));
    }
    out.push_str("</tr>\n");
    for (scenario, variant) in rows {
        let cells: Vec<_> = summary
            .cells
            .iter()
            .filter(|c| c.scenario == scenario && c.variant == variant)
            .collect();
        let expect = cells
            .iter()
            .find_map(|c| c.expect.as_ref())
            .map_or("-".to_string(), |e| e.to_string());
        let _ = write!(
            out,
            "<tr><th>{}/{}</th><td>{}</td>",
            esc(scenario),
            esc(variant),
            esc(&expect)
        );
        for cli in &clis {
            match cells.iter().find(|c| c.cli == *cli) {
                Some(cell) => {
                    let first = runs.iter().position(|r| {
                        r.result.run.scenario == cell.scenario
                            && r.result.run.variant == cell.variant
                            && r.result.run.cli_label == cell.cli
                    });
                    let mark = match cell.matches_expect {
                        Some(false) => " ✗",
                        Some(true) => " ✓",
                        None => "",
                    };
                    let text = format!("{}{mark}", cell.agreement);
                    let body = match first {
                        Some(n) => format!("<a href=\"#{}\">{}</a>", anchor(n), esc(&text)),
                        None => esc(&text),
                    };
                    let differs = if cell.matches_expect == Some(false) {
                        " differs"
                    } else {
                        ""
                    };
                    let _ = write!(
                        out,
                        "<td class=\"cell {}{differs}\">{body}</td>",
                        outcome_class(cell.outcome)
                    );
                }
                None => out.push_str("<td>-</td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

fn legend() -> String {
    let mut out = String::from("<p class=\"legend\">");
    for (outcome, words) in [
        (Some(Outcome::Woke), "woke"),
        (Some(Outcome::NeverFired), "never-fired (H1)"),
        (Some(Outcome::NotResumable), "not-resumable (H2)"),
        (Some(Outcome::QueuedUntilInput), "queued-until-input (H3)"),
        (Some(Outcome::ChildFailed), "child-failed (H4)"),
        (Some(Outcome::Unknown), "unknown"),
        (None, "runs disagree"),
    ] {
        let _ = write!(
            out,
            "<span class=\"{}\">{}</span>",
            outcome_class(outcome),
            esc(words)
        );
    }
    out.push_str(" ✓ as expected, ✗ differs from <code>expect</code></p>\n");
    out
}

fn run_section(n: usize, run: &PageRun) -> String {
    let r = &run.result;
    let j = &r.judgement;
    let mut out = format!(
        "<section id=\"{}\">\n<h2>{}/{} on {} <small>({})</small></h2>\n",
        anchor(n),
        esc(&r.run.scenario),
        esc(&r.run.variant),
        esc(&r.run.cli_label_text()),
        esc(&run.rel_dir)
    );
    let expect = match (&r.expect, r.matches_expect) {
        (Some(e), Some(false)) if e.allows(j.outcome) => {
            format!(" (expected {e}: as expected, but a check failed)")
        }
        (Some(e), Some(false)) => format!(" (expected {e}: differs)"),
        (Some(e), _) => format!(" (expected {e})"),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "<p class=\"{}\">verdict: <b>{}</b> — {}{}</p>",
        outcome_class(Some(j.outcome)),
        j.outcome,
        esc(j.outcome.hypothesis()),
        esc(&expect)
    );
    if let Some(primary) = j.primary() {
        let _ = writeln!(out, "<p>{}</p>", prose(&primary.explanation));
        if !primary.witness.is_empty() {
            out.push_str("<ol>\n");
            for w in &primary.witness {
                let _ = writeln!(out, "<li>{}</li>", prose(&super::witness_line(w)));
            }
            out.push_str("</ol>\n");
        }
    }
    if !j.checks.is_empty() {
        out.push_str("<ul>\n");
        for c in &j.checks {
            let _ = writeln!(out, "<li>{}</li>", prose(&super::check_line(c)));
        }
        out.push_str("</ul>\n");
    }
    match &run.svg {
        Some(svg) => {
            out.push_str(strip_xml_declaration(svg));
            out.push('\n');
        }
        None => out.push_str("<p>(no timeline.svg in this run's folder)</p>\n"),
    }
    let _ = writeln!(
        out,
        "<details><summary>Mermaid sequence diagram (source)</summary>\n<pre>{}</pre>\n</details>",
        esc(&run.mermaid)
    );
    out.push_str("<ul class=\"files\">\n");
    for f in &run.files {
        let path = format!("{}/{f}", run.rel_dir);
        let _ = writeln!(out, "<li><a href=\"{}\">{}</a></li>", href(&path), esc(f));
    }
    out.push_str("</ul>\n</section>\n");
    out
}

fn strip_xml_declaration(svg: &str) -> &str {
    match svg.trim_start().strip_prefix("<?xml") {
        Some(rest) => rest
            .split_once("?>")
            .map_or(svg, |(_, body)| body.trim_start()),
        None => svg.trim_start(),
    }
}

/// One run to put on a folder's page: its folder, result and timeline.
pub struct RunRef<'a> {
    pub dir: &'a Path,
    pub result: &'a RunResult,
    pub timeline: &'a Timeline,
}

/// Writes `dir/index.html` for the folder's summary and its runs (folders below `dir`), through
/// the redactor like every other report.
pub fn write_index(dir: &Path, summary: &Summary, runs: &[RunRef]) -> Result<(), StoreError> {
    let page_runs: Vec<PageRun> = runs
        .iter()
        .map(|r| PageRun {
            rel_dir: relative(dir, r.dir),
            result: r.result.clone(),
            svg: std::fs::read_to_string(r.dir.join(super::PICTURE_FILE)).ok(),
            mermaid: super::mermaid::diagram(r.timeline),
            files: files_below(r.dir),
        })
        .collect();
    let folder_files: Vec<String> = FOLDER_FILES
        .iter()
        .filter(|f| dir.join(f).is_file())
        .map(|f| f.to_string())
        .collect();
    let html = page(summary, &page_runs, &folder_files);
    super::store::write_atomic(
        &dir.join(INDEX_FILE),
        Redactor::basic().text(&html).as_bytes(),
    )
}

/// `to` as a path relative to the folder `from` (a merge's runs live in the shards' folders
/// beside it); both are made absolute first.
fn relative(from: &Path, to: &Path) -> String {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (from, to) = (absolute(from), absolute(to));
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_string(); from.len() - common];
    parts.extend(
        to[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().to_string()),
    );
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

/// The invocation folder's own files the page links to when they are there.
const FOLDER_FILES: &[&str] = &["summary.json", "matrix.md", "matrix.json", "junit.xml"];

/// Every file below `dir`, relative to it, sorted (the run's evidence and reports).
pub fn files_below(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    collect(dir, dir, &mut found, 0);
    found.sort();
    found
}

fn collect(root: &Path, dir: &Path, found: &mut Vec<String>, depth: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() && depth < 4 {
            collect(root, &path, found, depth + 1);
        } else if kind.is_file()
            && let Ok(rel) = path.strip_prefix(root)
        {
            found.push(rel.display().to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrefs_encode_what_a_url_cannot_hold() {
        assert_eq!(href("a b/c#d.md"), "a%20b/c%23d.md");
        assert_eq!(href("x/ü"), "x/%C3%BC");
        assert_eq!(href("plain/run.r1/report.md"), "plain/run.r1/report.md");
    }

    #[test]
    fn a_run_outside_the_folder_is_linked_through_its_parent() {
        let from = Path::new("/r/merged");
        assert_eq!(relative(from, Path::new("/r/merged/s/v.r1")), "s/v.r1");
        assert_eq!(
            relative(from, Path::new("/r/shard1/x/s/v.r1")),
            "../shard1/x/s/v.r1"
        );
        assert_eq!(relative(from, from), ".");
    }

    #[test]
    fn prose_sets_code_spans_and_escapes_the_rest() {
        assert_eq!(
            prose("`bg` <ended> & `x`"),
            "<code>bg</code> &lt;ended&gt; &amp; <code>x</code>"
        );
        assert_eq!(prose("one ` tick"), "one ` tick");
    }

    #[test]
    fn the_xml_declaration_is_dropped_from_an_inline_svg() {
        assert_eq!(
            strip_xml_declaration("<?xml version=\"1.0\"?>\n<svg/>"),
            "<svg/>"
        );
        assert_eq!(strip_xml_declaration("<svg/>"), "<svg/>");
    }
}
