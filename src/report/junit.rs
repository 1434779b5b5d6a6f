//! JUnit XML (with `quick-junit`, as nextest writes it): one `<testsuite>` per cell (scenario
//! variant x CLI) holding its one `<testcase>`, suite properties carrying the verdict, the
//! agreement, the expectation and the version. A verdict that differs from `expect` is a
//! `<failure>` saying both; a failed check is a `<failure>` naming the check with what it
//! observed and expected; a run that decided nothing (`unknown` where something else was
//! expected) and a cell whose CLI could not start are `<error>`s, not failures. Each case's
//! `system-out` holds its explanation and the folders of its runs.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::json::{CellSummary, RunResult, SetupError, Summary};
use crate::classify::Outcome;

/// The JUnit file for an invocation's summary and the runs behind it.
pub fn render(summary: &Summary, results: &[&RunResult]) -> String {
    let mut report = Report::new(format!("wakeprobe {}", summary.run_id));
    let mut total = Duration::ZERO;
    for cell in &summary.cells {
        let runs: Vec<&&RunResult> = results
            .iter()
            .filter(|r| {
                r.run.scenario == cell.scenario
                    && r.run.variant == cell.variant
                    && r.run.cli_label == cell.cli
            })
            .collect();
        let time = Duration::from_secs_f64(runs.iter().map(|r| r.run.duration_s).sum::<f64>());
        total += time;
        report.add_test_suite(cell_suite(cell, &runs, time));
    }
    for error in &summary.setup_errors {
        report.add_test_suite(setup_suite(error));
    }
    report.set_time(total);
    report.to_string().unwrap_or_default()
}

fn cell_suite(cell: &CellSummary, runs: &[&&RunResult], time: Duration) -> TestSuite {
    let name = format!("{}/{} on {}", cell.scenario, cell.variant, cell.cli);
    let version = runs
        .first()
        .map(|r| {
            r.run
                .cli_version_reported
                .clone()
                .unwrap_or_else(|| r.run.cli_version.clone())
        })
        .unwrap_or_default();
    let mut suite = TestSuite::new(name.clone());
    let verdict = cell
        .outcome
        .map(|o| o.to_string())
        .unwrap_or_else(|| "flaky".into());
    suite.add_properties([
        Property::new("verdict", verdict),
        Property::new("agreement", cell.agreement.clone()),
        Property::new(
            "expect",
            cell.expect
                .map(|e| e.as_str())
                .unwrap_or("none")
                .to_string(),
        ),
        Property::new("cli", cell.cli.clone()),
        Property::new("cli_version", version),
        Property::new("runs", cell.runs.to_string()),
    ]);
    let mut case = TestCase::new(name, case_status(cell, runs));
    case.set_classname(format!("wakeprobe.{}", cell.scenario))
        .set_time(time);
    case.set_system_out(system_out(cell, runs));
    suite.add_test_case(case);
    suite
}

/// Passed, skipped (no expectation), failed (a verdict or a check differs), or an error (the
/// run decided nothing where the scenario expects a verdict).
fn case_status(cell: &CellSummary, runs: &[&&RunResult]) -> TestCaseStatus {
    match cell.matches_expect {
        Some(true) => return TestCaseStatus::success(),
        None => {
            let mut status = TestCaseStatus::skipped();
            status.set_message("the scenario states no expected verdict for this variant");
            return status;
        }
        Some(false) => {}
    }
    let first = runs.first();
    let reason = first
        .and_then(|r| r.judgement.primary())
        .map(|v| v.explanation.clone())
        .unwrap_or_default();
    if cell.outcome == Some(Outcome::Unknown) && cell.expect != Some(Outcome::Unknown) {
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
        status
            .set_type("undecided")
            .set_message(format!(
                "expected {}, but the run decided nothing: {}",
                cell.expect.map(|e| e.as_str()).unwrap_or("checks to pass"),
                first
                    .and_then(|r| r.judgement.primary())
                    .and_then(|v| v.reason.clone())
                    .unwrap_or_default()
            ))
            .set_description(reason);
        return status;
    }
    let verdict_differs = cell.expect.is_some_and(|e| Some(e) != cell.outcome);
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    if verdict_differs {
        status
            .set_type("verdict")
            .set_message(format!(
                "expected {}, got {}",
                cell.expect.map(|e| e.as_str()).unwrap_or("-"),
                cell.agreement
            ))
            .set_description(reason);
    } else {
        let failed = first.map(|r| failed_checks(r)).unwrap_or_default();
        status
            .set_type("check")
            .set_message(failed.join("; "))
            .set_description(reason);
    }
    status
}

/// `check `NAME`: observed X, expected Y`, for each failed check of a run.
fn failed_checks(run: &RunResult) -> Vec<String> {
    run.judgement
        .checks
        .iter()
        .filter(|c| c.passed == Some(false))
        .map(|c| {
            format!(
                "check `{}`: observed {}, expected {}",
                c.name,
                c.observed,
                c.expected.as_deref().unwrap_or("-")
            )
        })
        .collect()
}

/// The verdict's prose and where each run's report is.
fn system_out(cell: &CellSummary, runs: &[&&RunResult]) -> String {
    let mut out = String::new();
    if let Some(v) = runs.first().and_then(|r| r.judgement.primary()) {
        out.push_str(&format!("{}: {}\n", v.outcome, v.explanation));
    }
    for c in runs
        .first()
        .map(|r| r.judgement.checks.as_slice())
        .unwrap_or_default()
    {
        out.push_str(&format!("{}\n", super::check_line(c)));
        for w in &c.witness {
            out.push_str(&format!("  {}\n", super::witness_line(w)));
        }
    }
    for dir in &cell.dirs {
        out.push_str(&format!("report: {dir}/report.md\n"));
    }
    out
}

/// A cell whose CLI could not start: an error, not a verdict.
fn setup_suite(error: &SetupError) -> TestSuite {
    let name = format!("{}/{} on {}", error.scenario, error.variant, error.cli);
    let mut suite = TestSuite::new(name.clone());
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    status.set_type("setup").set_message(error.message.clone());
    let mut case = TestCase::new(name, status);
    case.set_classname(format!("wakeprobe.{}", error.scenario));
    suite.add_test_case(case);
    suite
}
