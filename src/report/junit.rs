//! JUnit XML (with `quick-junit`, as nextest writes it): one `<testsuite>` per cell (scenario
//! variant x CLI) holding its one `<testcase>`, suite properties carrying the verdict, the
//! agreement, the expectation and the version. A verdict that differs from `expect` is a
//! `<failure>` saying both; a failed check is a `<failure>` naming the check with what it
//! observed and expected; a run that decided nothing (`unknown` where something else was
//! expected) and a cell whose CLI could not start are `<error>`s, not failures. Against a
//! baseline, a cell it has and the run lacks is a `<failure type="lost-coverage">`; each part
//! an incomplete merge lacks (a shard, a cell) is an `<error>`. Each case's `system-out` holds
//! its explanation and the folders of its runs.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use crate::checks::CheckResult;
use crate::classify::Outcome;
use crate::classify::result::{
    CellSummary, ExtraCase, LostCell, MissingPart, RunResult, SetupError, Summary,
};

/// The JUnit file for an invocation's summary, the runs behind it, and any extra cases.
pub fn render(summary: &Summary, results: &[&RunResult], extra: &[ExtraCase]) -> String {
    // Named alike every night (a reporter keeps a history by name); the run id is in each
    // case's report paths.
    let mut report = Report::new("wakeprobe");
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
    for lost in &summary.lost {
        report.add_test_suite(lost_suite(lost));
    }
    for part in &summary.missing {
        report.add_test_suite(missing_suite(part));
    }
    for case in extra {
        report.add_test_suite(extra_suite(case));
    }
    report.set_time(total);
    report.to_string().unwrap_or_default()
}

fn cell_suite(cell: &CellSummary, runs: &[&&RunResult], time: Duration) -> TestSuite {
    // The CLI as asked (`latest`, not what it resolved to tonight): stable from run to run.
    let on = if cell.cli_spec.is_empty() {
        &cell.cli
    } else {
        &cell.cli_spec
    };
    let name = format!("{}/{} on {on}", cell.scenario, cell.variant);
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
                .as_ref()
                .map_or_else(|| "none".to_string(), |e| e.to_string()),
        ),
        Property::new("cli", cell.cli.clone()),
        Property::new("cli_version", version),
        Property::new("runs", cell.runs.to_string()),
    ]);
    if let Some(mark) = &cell.baseline {
        suite.add_properties([
            Property::new("baseline", mark.against.as_str()),
            Property::new("baseline_file", mark.baseline.clone()),
        ]);
    }
    let mut case = TestCase::new(name, case_status(cell, runs));
    case.set_classname(format!("wakeprobe.{}", cell.scenario))
        .set_time(time);
    // Where a reporter (dorny/test-reporter, GitLab) points its annotation.
    if let Some(file) = runs.iter().find_map(|r| r.run.scenario_file.as_deref()) {
        case.extra.insert("file".into(), file.into());
    }
    suite.set_time(time);
    case.set_system_out(system_out(cell, runs));
    suite.add_test_case(case);
    suite
}

/// An error of wakeprobe's own: a run's verdict contradicted its timeline (never the CLI's
/// failure, whatever the baseline says).
fn contradiction_status(runs: &[&&RunResult]) -> Option<TestCaseStatus> {
    let c = runs
        .iter()
        .find_map(|r| r.judgement.contradictions().first().copied())?;
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    status
        .set_type("contradiction")
        .set_message("wakeprobe contradicted its own timeline (a bug in its rules)")
        .set_description(c.reason());
    Some(status)
}

/// An error (a run crashed, or decided nothing where the scenario expects a verdict), else
/// passed, skipped (no expectation) or failed (a verdict or a check differs).
fn case_status(cell: &CellSummary, runs: &[&&RunResult]) -> TestCaseStatus {
    if let Some(status) = contradiction_status(runs) {
        return status;
    }
    if let Some(status) = baseline_status(cell, runs) {
        return status;
    }
    if let Some(status) = error_status(cell, runs) {
        return status;
    }
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
    // A declared race's runs may disagree among themselves: the verdict differs only where a
    // run left the set.
    let verdict_differs = cell
        .expect
        .as_ref()
        .is_some_and(|e| runs.iter().any(|r| !e.allows(r.judgement.outcome)));
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    if verdict_differs {
        status
            .set_type("verdict")
            .set_message(format!(
                "expected {}, got {}",
                cell.expect
                    .as_ref()
                    .map_or_else(|| "-".to_string(), |e| e.to_string()),
                cell.agreement
            ))
            .set_description(reason);
    } else if let Some(why) = first
        .and_then(|r| r.run.integration.as_ref())
        .and_then(|i| i.failure())
    {
        status
            .set_type("integration-not-closed")
            .set_message(why)
            .set_description(reason);
    } else if let Some(faults) = first
        .map(|r| r.judgement.missed_faults())
        .filter(|f| !f.is_empty())
    {
        // The run was not the experiment asked for: a fault never hit it.
        let lines: Vec<String> = faults
            .iter()
            .map(|f| format!("fault {}: {}", f.fault, f.detail))
            .collect();
        status
            .set_type("fault-not-applied")
            .set_message(lines.join("; "))
            .set_description(reason);
    } else {
        // What failed is a check, or a broken invariant: the text is its own, not the verdict's.
        let missed: Vec<Missed> = first.map(|r| missed(r)).unwrap_or_default();
        // `invariant` only when nothing else failed: a failed check names the case's type.
        let kind = match missed.iter().any(|m| matches!(m, Missed::Check(_))) {
            true => "check",
            false => "invariant",
        };
        let lines: Vec<String> = missed.iter().map(Missed::line).collect();
        let texts: Vec<String> = missed.iter().map(Missed::text).collect();
        status
            .set_type(kind)
            .set_message(lines.join("; "))
            .set_description(texts.join("\n"));
    }
    status
}

/// Against a baseline: a regression is a failure naming both verdicts and the baseline, even
/// where the run decided nothing; an improvement, or a difference the baseline already had,
/// passes. A new cell is judged as without a baseline.
fn baseline_status(cell: &CellSummary, runs: &[&&RunResult]) -> Option<TestCaseStatus> {
    use crate::classify::result::Against;
    let mark = cell.baseline.as_ref()?;
    match mark.against {
        Against::Regression => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status
                .set_type("regression")
                .set_message(mark.sentence(&cell.agreement))
                .set_description(
                    runs.first()
                        .and_then(|r| r.judgement.primary())
                        .map(|v| v.explanation.clone())
                        .unwrap_or_default(),
                );
            Some(status)
        }
        Against::Improvement | Against::Unchanged if error_status(cell, runs).is_none() => {
            Some(TestCaseStatus::success())
        }
        Against::Improvement | Against::Unchanged | Against::New => None,
    }
}

/// How a run failed to give evidence at all: the CLI crashed (a signal the harness did not
/// send), the harness's own machinery failed, or the run decided nothing (`unknown`) where
/// the scenario does not expect exactly that.
fn run_error(run: &RunResult) -> Option<(&'static str, String)> {
    use crate::evidence::run::EndReason;
    let info = &run.run;
    let harness_signal = matches!(info.end, EndReason::Interrupted | EndReason::Ceiling);
    if info.end == EndReason::HarnessFailed {
        return Some((
            "harness",
            format!(
                "the harness failed: {}",
                info.end_detail.as_deref().unwrap_or("no detail")
            ),
        ));
    }
    if let Some(exit @ crate::evidence::ExitDesc::Signal(_)) = &info.cli_exit
        && !harness_signal
    {
        return Some(("crashed", format!("the CLI crashed ({})", exit.describe())));
    }
    let unknown = run.judgement.outcome == Outcome::Unknown
        && !run
            .expect
            .as_ref()
            .is_some_and(|e| e.allows(Outcome::Unknown));
    unknown.then(|| {
        let why = run
            .judgement
            .primary()
            .and_then(|v| v.reason.clone())
            .unwrap_or_else(|| "no reason recorded".into());
        (
            "undecided",
            format!(
                "expected {}, but the run decided nothing: {why}",
                run.expect
                    .as_ref()
                    .map_or_else(|| "a verdict".to_string(), |e| e.to_string())
            ),
        )
    })
}

fn error_status(cell: &CellSummary, runs: &[&&RunResult]) -> Option<TestCaseStatus> {
    let (run, (kind, message)) = runs.iter().find_map(|r| run_error(r).map(|e| (r, e)))?;
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    let of = if cell.runs > 1 {
        format!(" (run {} of {})", run.run.repetition, cell.runs)
    } else {
        String::new()
    };
    status
        .set_type(kind)
        .set_message(format!("{message}{of}"))
        .set_description(
            run.judgement
                .primary()
                .map(|v| v.explanation.clone())
                .unwrap_or_default(),
        );
    Some(status)
}

/// What made a run miss besides its verdict.
enum Missed<'a> {
    /// A check that failed, or observed nothing where it expects something.
    Check(&'a CheckResult),
    /// An invariant the run broke that its scenario does not say it may break.
    Invariant(&'a CheckResult),
}

/// Each check a run failed, then each invariant it broke unannounced.
fn missed(run: &RunResult) -> Vec<Missed<'_>> {
    let checks = run.judgement.missed_checks().into_iter().map(Missed::Check);
    let invariants = run
        .judgement
        .failing_invariants()
        .into_iter()
        .map(Missed::Invariant);
    checks.chain(invariants).collect()
}

impl Missed<'_> {
    fn result(&self) -> &CheckResult {
        match self {
            Missed::Check(c) | Missed::Invariant(c) => c,
        }
    }

    /// `check` or `invariant`: the failure's type, and the first word of its lines.
    fn kind(&self) -> &'static str {
        match self {
            Missed::Check(_) => "check",
            Missed::Invariant(_) => "invariant",
        }
    }

    /// `check `NAME`: observed X, expected Y` (or `invariant `NAME` broke: ...`).
    fn line(&self) -> String {
        let c = self.result();
        let what = match self {
            Missed::Invariant(_) => " broke",
            Missed::Check(c) if c.vacuous => " is vacuous (no selector matched any event)",
            Missed::Check(_) => "",
        };
        format!(
            "{} `{}`{what}: observed {}, expected {}",
            self.kind(),
            c.name,
            c.observed,
            c.expected.as_deref().unwrap_or("-")
        )
    }

    /// Its own explanation and witness, for the failure's text.
    fn text(&self) -> String {
        let c = self.result();
        let mut text = format!("{} `{}`: {}", self.kind(), c.name, c.explanation);
        for w in &c.witness {
            text.push_str(&format!("\n  {}", super::witness_line(w)));
        }
        text
    }
}

/// The verdict's prose and where each run's report is.
fn system_out(cell: &CellSummary, runs: &[&&RunResult]) -> String {
    let mut out = String::new();
    if let Some(mark) = &cell.baseline {
        out.push_str(&format!("{}\n", mark.sentence(&cell.agreement)));
    }
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

/// The JUnit file of an invocation that failed before it ran anything: one `<error>` saying
/// why (a CI reporter shows it, instead of a missing file).
pub fn render_aborted(command: &str, message: &str) -> String {
    let mut report = Report::new(format!("wakeprobe {command}"));
    report.add_test_suite(untimed_suite(
        format!("wakeprobe {command}: setup"),
        "wakeprobe.setup".into(),
        setup_error(message),
        None,
    ));
    report.to_string().unwrap_or_default()
}

/// A cell whose CLI could not start: an error, not a verdict.
fn setup_suite(error: &SetupError) -> TestSuite {
    untimed_suite(
        format!("{}/{} on {}", error.scenario, error.variant, error.cli),
        format!("wakeprobe.{}", error.scenario),
        setup_error(&error.message),
        None,
    )
}

/// A cell of the baseline this invocation did not cover: a failure (coverage lost).
fn lost_suite(lost: &LostCell) -> TestSuite {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    status
        .set_type("lost-coverage")
        .set_message(lost.sentence());
    untimed_suite(
        lost.name(),
        format!("wakeprobe.{}", lost.scenario),
        status,
        None,
    )
}

/// What an incomplete merge lacks (a shard, a cell, a folder's output): an error, since
/// nothing of it was judged.
fn missing_suite(part: &MissingPart) -> TestSuite {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    status
        .set_type(part.kind.as_str())
        .set_message(part.message.clone());
    untimed_suite(part.name.clone(), "wakeprobe.merge".into(), status, None)
}

fn setup_error(message: &str) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    status.set_type("setup").set_message(message);
    status
}

fn extra_suite(extra: &ExtraCase) -> TestSuite {
    let status = match &extra.failure {
        None => TestCaseStatus::success(),
        Some((kind, message)) => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status.set_type(kind.clone()).set_message(message.clone());
            status
        }
    };
    untimed_suite(
        extra.name.clone(),
        extra.classname.clone(),
        status,
        Some(&extra.system_out),
    )
}

/// A suite of one case that times no run of its own (a setup error; a comparison, whose runs
/// are timed in their cells). Its time is written as zero: reporters add the times up, and a
/// missing one became NaN in dorny/test-reporter.
fn untimed_suite(
    name: String,
    classname: String,
    status: TestCaseStatus,
    system_out: Option<&str>,
) -> TestSuite {
    let mut case = TestCase::new(name.clone(), status);
    case.set_classname(classname).set_time(Duration::ZERO);
    if let Some(out) = system_out {
        case.set_system_out(out);
    }
    let mut suite = TestSuite::new(name);
    suite.add_test_case(case).set_time(Duration::ZERO);
    suite
}
