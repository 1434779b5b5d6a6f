//! The seam between running and reporting (cargo-nextest's runner and its reporters): the
//! runner says what happens to each run as a [`RunEvent`], and each [`Reporter`] takes what it
//! cares for. The progress board, the JSON lines and the run folder's writer are reporters; a
//! new one (a log format, a dashboard) is one more implementation, and the runner does not
//! change.

use std::path::Path;

use super::Job;
use crate::classify::result::RunResult;
use crate::console::{self, Message};
use crate::driver::RunOutput;
use crate::scenario::Plan;
use crate::store::redact::Redactor;

/// What happened to one run.
pub enum RunEvent<'a> {
    /// The run was dispatched.
    Started { job: &'a Job },
    /// The run ended and was judged; its folder is to be written at `dir`.
    Judged {
        job: &'a Job,
        plan: &'a Plan,
        output: &'a RunOutput,
        result: &'a RunResult,
        dir: &'a Path,
    },
    /// The run's folder is written: it is finished.
    Finished {
        job: &'a Job,
        dir: &'a Path,
        result: &'a RunResult,
    },
    /// The run could not start, or its folder could not be written.
    Failed { job: &'a Job, message: &'a str },
}

/// A consumer of run events.
pub trait Reporter: Send + Sync {
    /// Takes one event. An `Err` fails the run with that message: only a reporter the run
    /// cannot go without (the folder's writer) returns one.
    fn report(&self, event: &RunEvent) -> Result<(), String>;
}

/// The progress board (`progress::Board`) as a reporter: a line per start and finish, the
/// estimate of what is left.
impl Reporter for super::progress::Board {
    fn report(&self, event: &RunEvent) -> Result<(), String> {
        match event {
            RunEvent::Started { job } => self.started(&job.log_name()),
            RunEvent::Finished { job, result, .. } => {
                self.finished(&job.log_name(), &job.title(), Ok(result))
            }
            RunEvent::Failed { job, message } => {
                self.finished(&job.log_name(), &job.title(), Err(message))
            }
            RunEvent::Judged { .. } => {}
        }
        Ok(())
    }
}

/// The `--message-format json` lines: `run-started`, `run-finished`, `run-failed`.
pub struct JsonLines;

impl Reporter for JsonLines {
    fn report(&self, event: &RunEvent) -> Result<(), String> {
        match event {
            RunEvent::Started { job } => console::emit(&Message::RunStarted {
                scenario: &job.scenario.name,
                variant: &job.variant,
                cli: job.cli.label(),
                repetition: job.repetition,
            }),
            RunEvent::Finished { job, dir, result } => console::emit(&finished(job, dir, result)),
            RunEvent::Failed { job, message } => console::emit(&Message::RunFailed {
                scenario: &job.scenario.name,
                variant: &job.variant,
                cli: job.cli.label(),
                repetition: job.repetition,
                message,
            }),
            RunEvent::Judged { .. } => {}
        }
        Ok(())
    }
}

/// The `run-finished` message of a run.
fn finished<'a>(job: &'a Job, dir: &Path, result: &'a RunResult) -> Message<'a> {
    Message::RunFinished {
        scenario: &job.scenario.name,
        variant: &job.variant,
        cli: job.cli.label(),
        repetition: job.repetition,
        verdict: result.judgement.outcome,
        expect: result.expect.clone(),
        matches_expect: result.matches_expect,
        reason: result
            .judgement
            .primary()
            .map(|v| v.reason.clone().unwrap_or_else(|| v.explanation.clone()))
            .unwrap_or_default(),
        failed_checks: result.judgement.failed_checks(),
        broken_invariants: result.judgement.broken_invariants(),
        failures: result.failures(),
        draft_because: crate::classify::filing::bug_reasons(&result.run, &result.judgement),
        layers_at_fault: result.judgement.layers_at_fault(),
        duration_s: result.run.duration_s,
        dir: dir.display().to_string(),
        report: dir.join(crate::store::REPORT_FILE).display().to_string(),
    }
}

/// The run folder's writer: every file of a judged run, redacted, written the moment it ends
/// (so a later failure loses nothing).
pub struct FolderWriter;

impl Reporter for FolderWriter {
    fn report(&self, event: &RunEvent) -> Result<(), String> {
        let RunEvent::Judged {
            job,
            plan,
            output,
            result,
            dir,
        } = event
        else {
            return Ok(());
        };
        let redactor = Redactor::for_run(output.sandbox.root(), &output.wakeprobe);
        crate::report::write_run(
            dir,
            &redactor,
            &crate::store::RunFiles {
                result,
                timeline: &output.timeline,
                raw: &output.raw,
                plan,
                scenario_source: &job.scenario.source,
            },
        )
        // The error names the file it could not write, under `dir`.
        .map_err(|e| e.to_string())
    }
}

/// Every reporter takes `event` (one's error does not keep it from the others); the first
/// error, if any.
pub fn tell(reporters: &[std::sync::Arc<dyn Reporter>], event: &RunEvent) -> Result<(), String> {
    let mut first = Ok(());
    for reporter in reporters {
        let told = reporter.report(event);
        if first.is_ok() {
            first = told;
        }
    }
    first
}
