//! One run's lifecycle: build the world, start the CLI under its supervisor, drive the session
//! (inputs, probes, the ceiling), shut everything down, and return the evidence. The driver
//! never writes a report or an evidence file: it returns what it saw, and the caller writes it.
//!
//! Every exit path (the CLI ending, the ceiling, a hang bound, a signal, the harness's own
//! failure) goes through the same shutdown ([`shutdown`]). A CLI that exits before it makes its
//! first model request did not start: that is a setup failure, not a run.

mod command;
mod fault_triggers;
mod input;
mod launch;
pub mod netns;
mod process_faults;
pub mod pty;
mod recorder;
mod runtime_io;
mod schedule;
mod sdk;

pub use sdk::SIM_SPEAKS_NO_SDK;
mod session;
mod shutdown;
pub mod socket;
pub mod supervise;
mod vanish;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::backend::Cli;
use crate::evidence::run::{EndReason, RUN_SCHEMA, RawEvidence, RunInfo};
use crate::evidence::{EventKind, ExitDesc, Timeline};
use crate::sandbox::Sandbox;
use crate::scenario::Plan;
use crate::scenario::mode::CliArgs;
use netns::NetworkPolicy;

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),
    #[error("cannot start the run: {0}")]
    Start(String),
    /// What the run started (the CLI, an integration, an SDK host) ended before the CLI's
    /// first model request: it could not start.
    #[error("{what} {how}{excerpt}")]
    CliDidNotStart {
        /// `the CLI could not start: PROGRAM`, `the integration `COMMAND``, `the Agent SDK
        /// host (sdk)`.
        what: String,
        how: String,
        /// `; its stderr: ` and the line that says what went wrong.
        excerpt: String,
        /// Its whole stderr (bounded), to keep beside the run folders.
        log: Option<String>,
    },
}

/// A signal that told the harness to stop, and when it arrived (monotonic clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupt {
    pub signal: &'static str,
    pub at_ns: u64,
}

/// Turns `Some` when the harness is told to stop (SIGINT, SIGTERM, SIGHUP).
pub type Cancel = watch::Receiver<Option<Interrupt>>;

/// Where a run is in its life, for the progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunPhase {
    /// The world is being built and the CLI started; no model request yet.
    #[default]
    Starting,
    /// The CLI is working: its agents' turns and background work.
    Running,
    /// A session's input was closed (stdin, or `/exit`): waiting for the CLI to exit.
    Closing,
    /// The CLI is gone or being stopped: the process tree is killed and swept.
    CleaningUp,
}

impl RunPhase {
    /// The phase of a run still driven: `closed` when its schedule has closed the input,
    /// `requests` the model requests so far. A print-mode run has no input to close: it runs
    /// until the CLI exits.
    pub fn of(mode: crate::scenario::DriverMode, closed: bool, requests: usize) -> RunPhase {
        if closed && mode.row().close != crate::scenario::mode::Close::CliExits {
            RunPhase::Closing
        } else if requests == 0 {
            RunPhase::Starting
        } else {
            RunPhase::Running
        }
    }
}

impl std::fmt::Display for RunPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(match self {
            RunPhase::Starting => "starting",
            RunPhase::Running => "running",
            RunPhase::Closing => "closing",
            RunPhase::CleaningUp => "cleaning up",
        })
    }
}

/// What the terminal shows while a run waits.
#[derive(Debug, Clone, Default)]
pub struct LiveStatus {
    pub phase: RunPhase,
    /// The run's ceiling: it ends by then at the latest.
    pub ceiling_s: f64,
    pub elapsed_s: f64,
    pub requests: usize,
    pub hooks: usize,
    pub running_tasks: usize,
}

pub type StatusHandle = Arc<Mutex<LiveStatus>>;

pub struct RunRequest {
    pub plan: Plan,
    pub cli: Cli,
    pub repetition: u32,
    pub template: PathBuf,
    pub network: NetworkPolicy,
    /// Given to the CLI after the harness's own arguments (`--cli-arg`).
    pub cli_args: Vec<String>,
    /// The Agent SDK releases the SDK modes run (`--sdk-version`, `--sdk-py-version`).
    pub sdk_versions: crate::backend::sdk::SdkVersions,
    pub cancel: Cancel,
    pub status: StatusHandle,
    pub command: String,
    /// How `command` names the scenario (see `RunInfo::reference`).
    pub reference: Option<String>,
}

/// A finished run: what it was, what happened, and the raw evidence behind it. The sandbox
/// is still there (the raw evidence points into it) until the output is dropped or kept.
pub struct RunOutput {
    pub info: RunInfo,
    pub timeline: Timeline,
    pub raw: RawEvidence,
    pub sandbox: Sandbox,
    /// The wakeprobe binary that ran the helpers (its path is redacted from reports).
    pub wakeprobe: PathBuf,
}

/// Runs one cell and returns its evidence.
pub async fn run(req: RunRequest) -> Result<RunOutput, DriverError> {
    let mut launched = launch::launch(&req)?;
    let stdout = match req.plan.driver.mode.row().stdout {
        crate::scenario::mode::Stdout::SdkMessages => crate::evidence::Source::Sdk,
        crate::scenario::mode::Stdout::Integration => crate::evidence::Source::Integration,
        crate::scenario::mode::Stdout::CliStream | crate::scenario::mode::Stdout::Screen => {
            crate::evidence::Source::Stream
        }
    };
    let mut rec = recorder::Recorder::new(launched.clock)
        .reading_stdout_as(stdout)
        .with_runtime(launched.evidence.take());
    let mut cancel = req.cancel.clone();
    let ending = session::drive(&mut launched, &req.plan, &mut rec, &mut cancel, &req.status).await;
    req.status.lock().expect("status lock").phase = RunPhase::CleaningUp;
    shutdown::shut_down(&mut launched, &mut rec).await;
    let ending = late_interrupt(ending, &req.cancel, &mut rec, launched.clock);
    if !rec.cli_reached_the_api() && ending.reason != EndReason::Interrupted {
        return Err(did_not_start(&req, &launched, &rec, &ending));
    }
    rec.finish();
    let info = run_info(&req, &launched, &rec, &ending);
    Ok(RunOutput {
        info,
        timeline: Timeline::new(std::mem::take(&mut rec.events)),
        raw: RawEvidence {
            stream: std::mem::take(&mut rec.stream_raw),
            cli_lines: std::mem::take(&mut rec.cli_lines_raw),
            hooks: std::mem::take(&mut rec.hooks_raw),
            raw_dir: launched.raw_dir.clone(),
            transcripts: launched.sandbox.transcripts(),
        },
        wakeprobe: launched.wakeprobe.clone(),
        sandbox: launched.sandbox,
    })
}

/// A signal that arrived just after the CLI exited may have ended it (a signal to the whole
/// process tree reaches the CLI before the harness hears of it): the run counts as
/// interrupted. One that came later found the run already over.
fn late_interrupt(
    ending: session::Ending,
    cancel: &Cancel,
    rec: &mut recorder::Recorder,
    clock: crate::evidence::clock::RunClock,
) -> session::Ending {
    let from_supervisor = rec
        .live
        .supervisor_stopped
        .map(|(signal, at_ns)| Interrupt {
            signal: crate::evidence::signal_name(signal),
            at_ns,
        });
    let (interrupt, receiver) = match (*cancel.borrow(), from_supervisor) {
        (Some(i), _) => (i, "the harness, as the CLI exited"),
        (None, Some(i)) => (i, "the supervisor, as the CLI exited"),
        (None, None) => return ending,
    };
    let at_ms = clock.ms_at(interrupt.at_ns);
    let exited_just_before = rec
        .live
        .cli_exit
        .as_ref()
        .is_some_and(|(_, t)| at_ms - t <= crate::evidence::run::SIGNAL_RACE_MS);
    if ending.reason.cut_short() || !exited_just_before {
        return ending;
    }
    let (reason, detail) = session::interrupted(rec, interrupt, receiver);
    session::Ending {
        reason,
        detail,
        unsent: ending.unsent,
    }
}

/// The most of a did-not-start stderr kept beside the run folders.
const KEPT_STDERR: usize = 64 * 1024;

/// The setup failure for a run whose CLI never reached the fake API: what the run started
/// (the CLI itself, or the integration or SDK host in its place) is named, with how it ended
/// and the line of its stderr that says why.
fn did_not_start(
    req: &RunRequest,
    launched: &launch::Launched,
    rec: &recorder::Recorder,
    ending: &session::Ending,
) -> DriverError {
    let driver = &req.plan.driver;
    let (what, before) = match driver.mode.row().args {
        CliArgs::ByIntegration => (
            format!("the integration `{}`", driver.command.join(" ")),
            "before the CLI made a model request",
        ),
        CliArgs::BySdk => (
            format!("the Agent SDK host ({})", driver.mode),
            "before the CLI made a model request",
        ),
        _ => (
            format!("the CLI could not start: {}", req.cli.program.display()),
            "before its first model request",
        ),
    };
    let how = match (rec.live.supervised_exit(), ending.reason) {
        (Some((ExitDesc::Signal(s), _)), _) => format!(
            "was killed by {} {before}",
            crate::evidence::signal_name(*s)
        ),
        (Some((ExitDesc::Code(c), _)), _) => format!("exited with status {c} {before}"),
        (Some((ExitDesc::Vanished, _)), _) => format!("vanished {before}"),
        (None, EndReason::Ceiling) => "made no model request within the run's ceiling".to_string(),
        (None, _) => format!(
            "did not run ({})",
            ending.detail.as_deref().unwrap_or("no exit status")
        ),
    };
    let log = ["stderr.log", "pty.raw"]
        .iter()
        .filter_map(|f| std::fs::read(launched.raw_dir.join(f)).ok())
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .find(|t| !t.is_empty());
    let excerpt = log
        .as_deref()
        .map(|t| {
            format!(
                "; its stderr: {}",
                crate::evidence::normalize::truncate(&telling_lines(t), 300)
            )
        })
        .unwrap_or_default();
    DriverError::CliDidNotStart {
        what,
        how,
        excerpt,
        // Its end, where a program says why it stopped.
        log: log.map(|t| {
            let skip = t.chars().count().saturating_sub(KEPT_STDERR);
            t.chars().skip(skip).collect()
        }),
    }
}

/// The lines of a failed program's stderr that say what went wrong: the first that names an
/// error (a stack trace's last lines say only where), and the last line when it differs.
fn telling_lines(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let last = lines.last().copied().unwrap_or_default();
    let telling = [
        "rror",
        "ERR",
        "xception",
        "Traceback",
        "fatal",
        "panicked",
        "not found",
    ];
    match lines.iter().find(|l| telling.iter().any(|w| l.contains(w))) {
        Some(first) if *first != last => format!("{first} … {last}"),
        Some(first) => first.to_string(),
        None => lines[lines.len().saturating_sub(3)..].join(" / "),
    }
}

/// Driver mode `command`: how the integration ended. It ended by itself when its exit ended
/// the run; an exit at the harness's cleanup (a ceiling, an interruption) was the harness's.
fn integration_ending(
    plan: &crate::scenario::Plan,
    rec: &recorder::Recorder,
    ending: &session::Ending,
) -> Option<crate::evidence::run::IntegrationEnding> {
    if plan.driver.mode.row().args != CliArgs::ByIntegration {
        return None;
    }
    Some(crate::evidence::run::IntegrationEnding {
        exit: rec.live.integration_exit.as_ref().map(|(e, _)| e.clone()),
        by_itself: matches!(ending.reason, EndReason::Finished | EndReason::CliEnded)
            && rec.live.integration_exit.is_some(),
    })
}

fn run_info(
    req: &RunRequest,
    launched: &launch::Launched,
    rec: &recorder::Recorder,
    ending: &session::Ending,
) -> RunInfo {
    let plan = &req.plan;
    let (cli_exit, cli_wall_s) = match &rec.live.cli_exit {
        Some((exit, t)) => (Some(exit.clone()), Some((t - launched.spawn_t) / 1000.0)),
        None => (None, None),
    };
    RunInfo {
        schema: RUN_SCHEMA,
        scenario: plan.scenario.clone(),
        title: plan.title.clone(),
        variant: plan.variant.clone(),
        repetition: req.repetition,
        backend: req.cli.kind.clone(),
        cli_label: match plan.driver.mode.row().args {
            CliArgs::BySdk | CliArgs::ByIntegration => {
                format!("{}+{}", req.cli.label(), plan.driver.mode)
            }
            _ => req.cli.label(),
        },
        cli_version: req.cli.version.clone(),
        cli_spec: req.cli.spec.clone(),
        cli_version_reported: rec.cli_version_reported(),
        cli_channel: req.cli.channel.clone(),
        mode: plan.driver.mode,
        permission_mode: plan.driver.permission_mode.clone(),
        cli_args: req.cli_args.clone(),
        sdk: launched.sdk.as_ref().map(|s| s.describe()),
        sdk_ships_cli: launched.sdk.as_ref().and_then(|s| s.ships_cli.clone()),
        params: plan.params.clone(),
        param_ranges: plan.param_ranges.clone(),
        outside_range: plan.outside_range.clone(),
        ceiling_s: plan.driver.ceiling.as_secs_f64(),
        started_unix_ms: launched.started_unix_ms,
        duration_s: rec.now_ms() / 1000.0,
        cli_wall_s,
        end: ending.reason,
        end_detail: ending.detail.clone(),
        cli_exit,
        integration: integration_ending(plan, rec, ending),
        isolation: launched.isolation.clone(),
        leftovers: rec
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Leftover { pid, command } => Some(format!("{pid} {command}")),
                _ => None,
            })
            .collect(),
        unsent_inputs: ending.unsent.clone(),
        command: req.command.clone(),
        reference: req.reference.clone(),
        scenario_file: plan.scenario_file.clone(),
        expect: plan.expect.clone(),
        want: plan.want,
        wakeprobe_version: env!("CARGO_PKG_VERSION").to_string(),
        os: os_description(),
        complete: true,
        incomplete: None,
    }
}

/// `Linux 6.1.0 x86_64`, from uname(2).
fn os_description() -> String {
    let u = rustix::system::uname();
    format!(
        "{} {} {}",
        u.sysname().to_string_lossy(),
        u.release().to_string_lossy(),
        u.machine().to_string_lossy()
    )
}

#[cfg(test)]
mod tests {
    use super::RunPhase;
    use crate::scenario::DriverMode;

    #[test]
    fn a_print_run_is_never_shown_closing() {
        // Print mode's schedule is closed from the start: it is running, not ending.
        assert_eq!(RunPhase::of(DriverMode::Print, true, 3), RunPhase::Running);
        assert_eq!(RunPhase::of(DriverMode::Print, true, 0), RunPhase::Starting);
        assert_eq!(
            RunPhase::of(DriverMode::Session, true, 3),
            RunPhase::Closing
        );
        assert_eq!(RunPhase::of(DriverMode::Pty, false, 1), RunPhase::Running);
    }

    #[test]
    fn the_stderr_line_that_says_what_went_wrong_is_chosen() {
        let node = "node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\nError: Cannot find module '/x/nope.mjs'\n    at Module._resolveFilename (node:internal)\n    at async asyncRunEntryPointWithESMLoader (node:internal)\n\nNode.js v20.20.2\n";
        assert_eq!(
            super::telling_lines(node),
            "Error: Cannot find module '/x/nope.mjs' … Node.js v20.20.2"
        );
        assert_eq!(
            super::telling_lines("one\ntwo\nthree\nfour"),
            "two / three / four"
        );
    }
}
