//! Exporters (terminal table, JSON, Markdown issue draft, JUnit, swimlane picture, the page).
//! Nothing here runs anything: every report is a function of saved evidence.

mod draft;
pub mod export;
mod facts;
pub mod gfm;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod mermaid;
mod summary;
pub mod svg;
pub mod terminal;

use std::path::Path;

use crate::classify::result::RunResult;
use crate::evidence::Timeline;
use crate::scenario::Plan;
use crate::store::saved::SavedRun;
use crate::store::{
    self, PICTURE_FILE, REPORT_FILE, RESULT_FILE, RunFiles, TITLE_FILE, redact::Redactor,
};

/// `1 run`, `2 runs`: a count with its noun in the right number.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Writes a saved run's result.json, report.md and timeline.svg again.
pub fn rerender(
    saved: &SavedRun,
    result: &RunResult,
    agreement: Option<&str>,
) -> Result<(), store::StoreError> {
    write_run_reports(
        &saved.dir,
        &Redactor::basic(),
        result,
        &saved.timeline,
        &saved.plan,
        saved.scenario_source.as_deref(),
        agreement,
    )
}

/// Writes every per-run report next to the run's evidence: `result.json`, `report.md`,
/// `title.txt` and `timeline.svg`, each redacted and written atomically.
pub fn write_run_reports(
    dir: &Path,
    redactor: &Redactor,
    result: &RunResult,
    timeline: &Timeline,
    plan: &Plan,
    scenario_source: Option<&str>,
    agreement: Option<&str>,
) -> Result<(), store::StoreError> {
    store::write_json(&dir.join(RESULT_FILE), redactor, result)?;
    let draft = draft::Draft {
        result,
        timeline,
        plan,
        scenario_source,
        agreement,
        picture: Some(PICTURE_FILE),
    };
    let title = format!(
        "{}/{} on {}",
        result.run.scenario, result.run.variant, result.run.cli_label
    );
    store::write_atomic(
        &dir.join(PICTURE_FILE),
        redactor
            .text(&svg::render(timeline, &svg::Caption::of(&title, result)))
            .as_bytes(),
    )?;
    // A title (and with it the `gh` line) only where there is something to file.
    match crate::classify::filing::filing(&result.run, &result.judgement) {
        crate::classify::filing::Filing::Bug => store::write_atomic(
            &dir.join(TITLE_FILE),
            redactor
                .text(&(markdown::draft_title(&draft) + "\n"))
                .as_bytes(),
        )?,
        crate::classify::filing::Filing::Nothing(_) => {
            match std::fs::remove_file(dir.join(TITLE_FILE)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(store::StoreError {
                        path: dir.join(TITLE_FILE).display().to_string(),
                        source,
                    });
                }
            }
        }
    }
    store::write_atomic(
        &dir.join(REPORT_FILE),
        redactor.text(&markdown::render(&draft)).as_bytes(),
    )
}

/// Writes a finished run's folder: created exclusively, `run.json` marked incomplete until the
/// evidence and every report are written.
pub fn write_run(dir: &Path, redactor: &Redactor, run: &RunFiles) -> Result<(), store::StoreError> {
    store::create_exclusive(dir)?;
    store::begin_run(dir, redactor, &run.result.run)?;
    write_run_files(dir, redactor, run).inspect_err(|e| {
        store::fail_run(dir, redactor, &run.result.run, e);
    })?;
    store::end_run(dir, redactor, &run.result.run)
}

/// Everything of a run's folder between its two marks.
fn write_run_files(
    dir: &Path,
    redactor: &Redactor,
    run: &RunFiles,
) -> Result<(), store::StoreError> {
    store::write_run_evidence(
        dir,
        redactor,
        &store::RunEvidence {
            timeline: run.timeline,
            plan: run.plan,
            raw: run.raw,
            scenario_source: run.scenario_source,
        },
    )?;
    write_run_reports(
        dir,
        redactor,
        run.result,
        run.timeline,
        run.plan,
        Some(run.scenario_source),
        None,
    )
}

/// Hook payloads and stream lines as `hooks.jsonl` and `stream.jsonl` keep them (redacted; text
/// that is not JSON as a string), hooks in the order hook events index them.
pub fn raw_sources(
    raw: &crate::evidence::run::RawEvidence,
    redactor: &Redactor,
) -> crate::checks::RawSources {
    let value = |text: &str| {
        let text = redactor.text(text.trim());
        serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))
    };
    crate::checks::RawSources {
        payloads: raw.hooks.iter().map(|(_, p)| value(p)).collect(),
        lines: raw.stream.iter().map(|(t, l)| (*t, value(l))).collect(),
    }
}

/// `check `NAME` (query:count): observed 2, expected >= 1: pass; want 1: NOT MET (the bug)`,
/// the same in every exporter.
pub fn check_line(c: &crate::checks::CheckResult) -> String {
    let mut verdict = match (c.passed, &c.expected) {
        _ if c.vacuous => ": VACUOUS (no selector matched any event)".to_string(),
        (Some(true), Some(e)) => format!(", expected {e}: pass"),
        (Some(false), Some(e)) => format!(", expected {e}: FAIL"),
        (None, Some(e)) => format!(", expected {e}: open (the run was cut short)"),
        _ => String::new(),
    };
    if let Some(w) = c.want.as_deref().filter(|_| !c.vacuous) {
        let met = match c.meets_want {
            Some(true) => "met",
            Some(false) => "NOT MET (the bug the scenario describes)",
            None => "undecided",
        };
        let sep = if verdict.is_empty() { ":" } else { ";" };
        verdict.push_str(&format!("{sep} want {w}: {met}"));
    }
    let layer = c
        .layer
        .map(|l| format!(" (at fault: {})", l.words()))
        .unwrap_or_default();
    format!(
        "check `{}` ({}): observed {}{layer}{verdict}",
        c.name, c.kind, c.observed
    )
}

/// What the terminal says of a run beyond its verdict lines, when it did not match what its
/// scenario expects or has a draft to file: why, one line each, named by its repetition.
pub fn why_lines(result: &RunResult) -> Vec<String> {
    let run = &result.run;
    let name = format!(
        "{}/{} on {} r{}",
        run.scenario,
        run.variant,
        run.cli_label_text(),
        run.repetition
    );
    let mut lines: Vec<String> = result
        .failures()
        .into_iter()
        .map(|why| format!("{name} failed: {why}"))
        .collect();
    lines.extend(
        crate::classify::filing::bug_reasons(&result.run, &result.judgement)
            .into_iter()
            .map(|why| format!("{name} has a draft to file: {why}")),
    );
    lines
}

/// The command that files a run's draft as a GitHub issue, in the repository of the runtime
/// that ran (`anthropics/claude-code`, `anomalyco/opencode`).
pub fn issue_command(dir: &Path, runtime: crate::scenario::Runtime) -> String {
    let quoted =
        |file: &str| crate::os::subprocess::shell_word(&dir.join(file).display().to_string());
    format!(
        "gh issue create -R {} --title \"$(cat {})\" --body-file {}",
        crate::runtime::Adapter::of(runtime).issues,
        quoted(crate::store::TITLE_FILE),
        quoted(crate::store::REPORT_FILE)
    )
}

/// After a matrix: each cell with drafts to file, why (what the CLI does other than the
/// scenario's `want`), and the command that files its first draft.
pub fn draft_lines(dir: &Path, summary: &crate::classify::result::Summary) -> Vec<String> {
    summary
        .cells
        .iter()
        .filter_map(|c| {
            let first = c.drafts.first()?;
            Some(format!(
                "issue draft for {}/{} on {} ({}): {}",
                c.scenario,
                c.variant,
                c.cli,
                c.bugs.join("; "),
                issue_command(&dir.join(first), crate::runtime::split_spec(&c.cli_spec).0)
            ))
        })
        .collect()
}

/// `1.23 s · hook · worker · SubagentStop ...`: one witness event.
pub fn witness_line(w: &crate::evidence::Witness) -> String {
    let source = serde_json::to_value(w.source)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    format!(
        "{} · {source} · {} · {}",
        crate::evidence::secs(w.t_ms),
        w.agent.as_deref().unwrap_or("-"),
        w.what
    )
}
