//! `index.html`: one self-contained page per invocation folder, to browse a downloaded CI
//! artifact without a server or a network. Pass or fail comes first: the closing count, the
//! failing cells (regressions against a baseline first), the grid of cells (scenario/variant by
//! CLI) coloured by pass or fail with the verdict kept as text, each cell linking to its runs;
//! then the failing runs, each with its verdict, witness, failed checks explained, timeline SVG
//! and Mermaid source inline and links to its files, and the passing runs collapsed below.
//! No script, no external resource: every link is a relative path to a file that exists.

use std::fmt::Write;
use std::path::Path;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use quick_xml::escape::escape;

use crate::classify::result::{CellSummary, RunResult, Summary};
use crate::store::redact::Redactor;
use crate::store::{RunRef, StoreError};

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

/// A cell's standing, which decides its colour and its place on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Standing {
    /// Worse than the baseline.
    Regression,
    /// A verdict or check differs from the expectation (with no baseline to excuse it).
    Fail,
    /// Better than the baseline.
    Improvement,
    Pass,
    /// The scenario states no expectation: nothing to pass or fail.
    Open,
}

impl Standing {
    fn of(cell: &CellSummary) -> Standing {
        use crate::classify::result::Against;
        match cell.baseline.as_ref().map(|b| b.against) {
            Some(Against::Regression) => Standing::Regression,
            Some(Against::Improvement) => Standing::Improvement,
            _ if cell.fails() => Standing::Fail,
            _ if cell.matches_expect.is_none() && cell.baseline.is_none() => Standing::Open,
            _ => Standing::Pass,
        }
    }

    fn failing(self) -> bool {
        matches!(self, Standing::Regression | Standing::Fail)
    }

    /// The CSS class: the failure colour for both kinds of failure.
    fn class(self) -> &'static str {
        match self {
            Standing::Regression => "fail regression",
            Standing::Fail => "fail",
            Standing::Improvement => "pass improvement",
            Standing::Pass => "pass",
            Standing::Open => "open",
        }
    }

    /// The small mark beside the verdict.
    fn mark(self, cell: &CellSummary) -> String {
        let expectation = match cell.matches_expect {
            Some(true) => " ✓",
            Some(false) => " ✗",
            None => "",
        };
        let against = cell
            .baseline
            .as_ref()
            .map(|b| format!(" · {}", b.against))
            .unwrap_or_default();
        format!("{expectation}{against}")
    }
}

/// The cell a run belongs to.
fn cell_of<'a>(summary: &'a Summary, r: &RunResult) -> Option<&'a CellSummary> {
    summary.cells.iter().find(|c| {
        c.scenario == r.run.scenario && c.variant == r.run.variant && c.cli == r.run.cli_label
    })
}

/// A run's standing: its cell's.
fn run_standing(summary: &Summary, r: &RunResult) -> Standing {
    cell_of(summary, r).map_or(Standing::Open, Standing::of)
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1f24;max-width:1200px}
table{border-collapse:collapse;margin:8px 0 16px}th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.cell a{color:inherit;text-decoration:none;display:block}
.pass{background:#dafbe1}.fail{background:#ffd8d3}.open{background:#eaeef2}
.regression{font-weight:700;outline:2px solid #cf222e}.improvement{font-weight:600}
p.closing{font-size:16px;font-weight:600}ul.failing li{margin:4px 0}.legend span{display:inline-block;padding:2px 8px;margin-right:6px;border:1px solid #d0d7de}
section{border-top:1px solid #d0d7de;padding-top:8px;margin-top:20px}
svg{max-width:100%;height:auto;border:1px solid #eaeef2}pre{background:#f6f8fa;padding:8px;overflow:auto}
ul.files{columns:3;font-size:13px}div.failed-check{border-left:3px solid #cf222e;padding-left:8px;margin:6px 0}";

/// The whole page for a folder's summary and its runs.
pub fn page(summary: &Summary, runs: &[PageRun], folder_files: &[String]) -> String {
    let mut out = String::new();
    let title = format!("wakeprobe {}", summary.run_id);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    out.push_str(&overview(summary, runs.len()));
    let order = run_order(summary, runs);
    out.push_str(&failing_list(summary, runs, &order));
    out.push_str(&drafts_list(summary));
    out.push_str(&folder_links(folder_files));
    out.push_str(&grid(summary, runs));
    out.push_str(&legend());
    let (failing, rest): (Vec<usize>, Vec<usize>) = order
        .iter()
        .partition(|&&n| run_standing(summary, &runs[n].result).failing());
    for n in failing {
        out.push_str(&run_section(
            n,
            &runs[n],
            run_standing(summary, &runs[n].result),
        ));
    }
    if !rest.is_empty() {
        let _ = writeln!(
            out,
            "<details class=\"rest\"><summary>The other {} (passing, or with no expectation)</summary>",
            super::plural(rest.len(), "run", "runs")
        );
        for n in rest {
            out.push_str(&run_section(
                n,
                &runs[n],
                run_standing(summary, &runs[n].result),
            ));
        }
        out.push_str("</details>\n");
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// The runs' order on the page: regressions, then failures, then the rest, each in their
/// given order. Anchors keep the given numbering.
fn run_order(summary: &Summary, runs: &[PageRun]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&n| run_standing(summary, &runs[n].result));
    order
}

/// What an incomplete merge lacks, then the cells of the baseline this invocation lost, then
/// the failing cells, regressions first, each linking to its first run.
fn failing_list(summary: &Summary, runs: &[PageRun], order: &[usize]) -> String {
    let mut cells: Vec<&CellSummary> = summary.cells.iter().filter(|c| c.fails()).collect();
    if cells.is_empty() && summary.lost.is_empty() && summary.missing.is_empty() {
        return String::new();
    }
    cells.sort_by_key(|c| Standing::of(c));
    let mut out = String::from("<h2>Failing</h2>\n<ul class=\"failing\">\n");
    for part in &summary.missing {
        let _ = writeln!(
            out,
            "<li class=\"fail missing\">{}</li>",
            prose(&part.message)
        );
    }
    for lost in &summary.lost {
        let _ = writeln!(
            out,
            "<li class=\"fail lost\">{}: {}</li>",
            escape(lost.name()),
            prose(&lost.sentence())
        );
    }
    for cell in cells {
        let name = format!("{}/{} on {}", cell.scenario, cell.variant, column_of(cell));
        let why = match &cell.baseline {
            Some(mark) if mark.against == crate::classify::result::Against::Regression => {
                mark.sentence(&cell.agreement)
            }
            _ if !cell.failures.is_empty() => format!(
                "{} ({} of {} runs failed): {}",
                cell.agreement,
                cell.failed_runs,
                cell.runs,
                cell.failures.join("; ")
            ),
            _ => format!(
                "{}, expected {}",
                cell.agreement,
                cell.expect
                    .as_ref()
                    .map_or_else(|| "its checks to pass".to_string(), |e| e.to_string())
            ),
        };
        let first = order
            .iter()
            .copied()
            .find(|&n| cell_of(summary, &runs[n].result).is_some_and(|c| std::ptr::eq(c, cell)));
        let label = match first {
            Some(n) => format!("<a href=\"#{}\">{}</a>", anchor(n), escape(&name)),
            None => escape(&name).into_owned(),
        };
        let _ = writeln!(
            out,
            "<li class=\"{}\">{label}: {}</li>",
            Standing::of(cell).class(),
            prose(&why)
        );
    }
    out.push_str("</ul>\n");
    out
}

/// The cells with an issue draft to file, each saying why (what the CLI does other than the
/// scenario's `want`) and where the drafts are.
fn drafts_list(summary: &Summary) -> String {
    let cells: Vec<&CellSummary> = summary
        .cells
        .iter()
        .filter(|c| !c.bugs.is_empty())
        .collect();
    if cells.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h2>Drafts to file</h2>\n<ul class=\"failing\">\n");
    for cell in cells {
        let where_: Vec<String> = cell
            .drafts
            .iter()
            .map(|d| {
                format!(
                    "<a href=\"{}\">{}</a>",
                    href(&format!("{d}/report.md")),
                    escape(d)
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "<li>{}/{} on {}: {} ({})</li>",
            escape(&cell.scenario),
            escape(&cell.variant),
            escape(&cell.cli),
            prose(&cell.bugs.join("; ")),
            where_.join(", ")
        );
    }
    out.push_str("</ul>\n");
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
    let mut out = format!(
        "<p class=\"closing\">{}</p>\n<p>{}</p>\n",
        escape(summary.closing_line()),
        prose(&text)
    );
    if !summary.setup_errors.is_empty() {
        out.push_str("<p>Cells that could not run:</p>\n<ul>\n");
        for e in &summary.setup_errors {
            let _ = writeln!(
                out,
                "<li>{}/{} on {}: {}</li>",
                escape(&e.scenario),
                escape(&e.variant),
                escape(&e.cli),
                escape(&e.message)
            );
        }
        out.push_str("</ul>\n");
    }
    out
}

/// The report's prose as HTML: escaped, with its `code` spans set as code.
fn prose(text: &str) -> String {
    let escaped = escape(text);
    if !escaped.matches('`').count().is_multiple_of(2) {
        return escaped.into_owned();
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
        .map(|f| format!("<a href=\"{}\">{}</a>", href(f), escape(f)))
        .collect();
    format!("<p>Files: {}</p>\n", links.join(" · "))
}

/// What an `href` keeps as it is: letters, digits, the path separator and `._-~` (RFC 3986's
/// unreserved characters); everything else is percent-encoded.
const HREF_KEEPS: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'.')
    .remove(b'_')
    .remove(b'-')
    .remove(b'~');

/// A relative path as an `href`: each segment percent-encoded where a URL needs it.
fn href(path: &str) -> String {
    utf8_percent_encode(path, HREF_KEEPS).to_string()
}

/// The anchor of the `n`th run's section.
fn anchor(n: usize) -> String {
    format!("run-{}", n + 1)
}

/// The column a cell is in: the CLI as asked for, or its label in files without a spec.
fn column_of(cell: &CellSummary) -> &str {
    if cell.cli_spec.is_empty() {
        &cell.cli
    } else {
        &cell.cli_spec
    }
}

/// The grid's columns (key, title): a matrix's in the order asked; otherwise each CLI that
/// ran, in version order (semver, never as text: 2.1.87 before 2.1.207), the others after.
fn columns(summary: &Summary, runs: &[PageRun]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = summary
        .columns
        .iter()
        .map(|c| (c.spec.clone(), c.title.clone()))
        .collect();
    let mut more: Vec<(Option<semver::Version>, String, String)> = Vec::new();
    let keys = summary
        .cells
        .iter()
        .map(column_of)
        .chain(summary.lost.iter().map(|l| l.cli_spec.as_str()));
    for key in keys {
        if out.iter().any(|(k, _)| k == key) || more.iter().any(|(_, k, _)| k == key) {
            continue;
        }
        let run = runs.iter().find(|r| r.result.run.column() == key);
        let version = run.and_then(|r| semver::Version::parse(&r.result.run.cli_version).ok());
        let title = run.map_or_else(|| key.to_string(), |r| r.result.run.column_title());
        more.push((version, key.to_string(), title));
    }
    // A version first, in its order; then the rest as they came.
    more.sort_by(|a, b| match (&a.0, &b.0) {
        (Some(x), Some(y)) => x.cmp(y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    out.extend(more.into_iter().map(|(_, k, t)| (k, t)));
    out
}

/// Scenario/variant rows by CLI columns; each cell in its verdict's colour, linking to its
/// first run's section; a cell of the baseline the invocation lost, in the failure colour.
fn grid(summary: &Summary, runs: &[PageRun]) -> String {
    let clis = columns(summary, runs);
    let mut rows: Vec<(&str, &str)> = Vec::new();
    let keys = summary
        .cells
        .iter()
        .map(|c| (c.scenario.as_str(), c.variant.as_str()))
        .chain(
            summary
                .lost
                .iter()
                .map(|l| (l.scenario.as_str(), l.variant.as_str())),
        );
    for key in keys {
        if !rows.contains(&key) {
            rows.push(key);
        }
    }
    // Rows with a regression first, then rows with a failure, then the rest.
    let worst = |row: &(&str, &str)| {
        summary
            .cells
            .iter()
            .filter(|c| (c.scenario.as_str(), c.variant.as_str()) == *row)
            .map(Standing::of)
            .min()
    };
    let lost_in = |row: &(&str, &str)| {
        summary
            .lost
            .iter()
            .any(|l| (l.scenario.as_str(), l.variant.as_str()) == *row)
    };
    rows.sort_by_key(|r| {
        if lost_in(r) {
            Standing::Fail
        } else {
            worst(r).filter(|s| s.failing()).unwrap_or(Standing::Pass)
        }
    });
    let mut out =
        String::from("<table class=\"grid\">\n<tr><th>scenario/variant</th><th>expect</th>");
    for (_, title) in &clis {
        let _ = write!(out, "<th>{}</th>", escape(title));
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
            escape(scenario),
            escape(variant),
            escape(&expect)
        );
        for (cli, _) in &clis {
            let lost = summary
                .lost
                .iter()
                .find(|l| l.scenario == scenario && l.variant == variant && l.cli_spec == *cli);
            if let Some(lost) = lost {
                let _ = write!(
                    out,
                    "<td class=\"cell fail lost\">lost coverage<small> · baseline {}</small></td>",
                    escape(&lost.before)
                );
                continue;
            }
            match cells.iter().find(|c| column_of(c) == cli) {
                Some(cell) => out.push_str(&grid_cell(cell, runs)),
                None => out.push_str("<td>-</td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// One cell of the grid: its verdict in its standing's colour, linking to its first run.
fn grid_cell(cell: &CellSummary, runs: &[PageRun]) -> String {
    let first = runs.iter().position(|r| {
        r.result.run.scenario == cell.scenario
            && r.result.run.variant == cell.variant
            && r.result.run.cli_label == cell.cli
    });
    let standing = Standing::of(cell);
    let text = format!(
        "{}<small>{}</small>",
        escape(&cell.agreement),
        escape(standing.mark(cell))
    );
    let body = match first {
        Some(n) => format!("<a href=\"#{}\">{text}</a>", anchor(n)),
        None => text,
    };
    format!("<td class=\"cell {}\">{body}</td>", standing.class())
}

fn legend() -> String {
    let mut out = String::from("<p class=\"legend\">");
    for (class, words) in [
        (
            "fail",
            "fails: differs from the expectation, or a regression",
        ),
        ("pass", "passes"),
        ("open", "no expectation"),
    ] {
        let _ = write!(out, "<span class=\"{class}\">{}</span>", escape(words));
    }
    out.push_str(
        " ✓ as expected, ✗ differs from <code>expect</code>; against a baseline each cell says \
         regression, improvement, unchanged or new (only a regression fails); a cell of the \
         baseline this run lacks is lost coverage, a failure</p>\n",
    );
    out
}

fn run_section(n: usize, run: &PageRun, standing: Standing) -> String {
    let r = &run.result;
    let j = &r.judgement;
    let mut out = format!(
        "<section id=\"{}\">\n<h2>{}/{} on {} <small>({})</small></h2>\n",
        anchor(n),
        escape(&r.run.scenario),
        escape(&r.run.variant),
        escape(r.run.cli_label_text()),
        escape(&run.rel_dir)
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
        standing.class(),
        j.outcome,
        escape(j.outcome.hypothesis()),
        escape(&expect)
    );
    for why in crate::classify::filing::bug_reasons(&r.run, &r.judgement) {
        let _ = writeln!(out, "<p><b>Draft to file:</b> {}</p>", prose(&why));
    }
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
    for c in j.checks.iter().filter(|c| c.passed == Some(false)) {
        out.push_str(&failed_check(c));
    }
    if j.checks.iter().any(|c| c.passed != Some(false)) {
        out.push_str("<ul>\n");
        for c in j.checks.iter().filter(|c| c.passed != Some(false)) {
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
        escape(&run.mermaid)
    );
    out.push_str("<ul class=\"files\">\n");
    for f in &run.files {
        let path = format!("{}/{f}", run.rel_dir);
        let _ = writeln!(
            out,
            "<li><a href=\"{}\">{}</a></li>",
            href(&path),
            escape(f)
        );
    }
    out.push_str("</ul>\n</section>\n");
    out
}

/// A failed check: its line, its explanation and the events that witness it.
fn failed_check(c: &crate::checks::CheckResult) -> String {
    let mut out = format!(
        "<div class=\"failed-check\">\n<p><b>{}</b></p>\n<p>{}</p>\n",
        prose(&super::check_line(c)),
        prose(&c.explanation)
    );
    if !c.witness.is_empty() {
        out.push_str("<ol>\n");
        for w in &c.witness {
            let _ = writeln!(out, "<li>{}</li>", prose(&super::witness_line(w)));
        }
        out.push_str("</ol>\n");
    }
    out.push_str("</div>\n");
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
    crate::store::write_atomic(
        &dir.join(INDEX_FILE),
        Redactor::basic().text(&html).as_bytes(),
    )
}

/// `to` as a path relative to the folder `from` (a merge's runs live in the shards' folders
/// beside it); both are made absolute first.
fn relative(from: &Path, to: &Path) -> String {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (from, to) = (absolute(from), absolute(to));
    // None only where `from` climbs (`..`) after the two part: then the absolute path.
    let path = pathdiff::diff_paths(&to, &from).unwrap_or(to);
    if path.as_os_str().is_empty() {
        ".".to_string()
    } else {
        path.to_string_lossy().into_owned()
    }
}

/// The invocation folder's own files the page links to when they are there.
const FOLDER_FILES: &[&str] = &["summary.json", "matrix.md", "matrix.json", "junit.xml"];

/// Every file below `dir` (at most four folders down, links not followed), relative to it,
/// sorted: the run's evidence and reports.
pub fn files_below(dir: &Path) -> Vec<String> {
    let mut found: Vec<String> = walkdir::WalkDir::new(dir)
        .max_depth(5)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| Some(e.path().strip_prefix(dir).ok()?.display().to_string()))
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrefs_encode_what_a_url_cannot_hold() {
        assert_eq!(href("a b/c#d.md"), "a%20b/c%23d.md");
        assert_eq!(href("x/ü"), "x/%C3%BC");
        assert_eq!(href("plain/run.r1/report.md"), "plain/run.r1/report.md");
        assert_eq!(href("a_b-c~d/100%"), "a_b-c~d/100%25");
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
    fn files_below_are_relative_sorted_at_most_four_folders_down_and_skip_links() {
        let dir = tempfile::tempdir().unwrap();
        for p in ["b.txt", "a/1/2/3/four.txt", "a/1/2/3/4/five.txt", "a.txt"] {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        std::os::unix::fs::symlink(dir.path().join("b.txt"), dir.path().join("c.txt")).unwrap();
        assert_eq!(
            files_below(dir.path()),
            ["a.txt", "a/1/2/3/four.txt", "b.txt"]
        );
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
