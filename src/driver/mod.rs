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
    /// The CLI ended before its first model request: it could not start.
    #[error("the CLI could not start: {program} {how}{stderr}")]
    CliDidNotStart {
        program: String,
        how: String,
        stderr: String,
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

/// The setup failure for a CLI that never reached the fake API.
fn did_not_start(
    req: &RunRequest,
    launched: &launch::Launched,
    rec: &recorder::Recorder,
    ending: &session::Ending,
) -> DriverError {
    let how = match (&rec.live.cli_exit, ending.reason) {
        (Some((ExitDesc::Signal(s), _)), _) => format!(
            "was killed by {} before its first model request",
            crate::evidence::signal_name(*s)
        ),
        (Some((ExitDesc::Code(c), _)), _) => {
            format!("exited with status {c} before its first model request")
        }
        (Some((ExitDesc::Vanished, _)), _) => "vanished before its first model request".to_string(),
        (None, EndReason::Ceiling) => "made no model request within the run's ceiling".to_string(),
        (None, _) => format!(
            "did not run ({})",
            ending.detail.as_deref().unwrap_or("no exit status")
        ),
    };
    let stderr = ["stderr.log", "pty.raw"]
        .iter()
        .filter_map(|f| std::fs::read(launched.raw_dir.join(f)).ok())
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .find(|t| !t.is_empty())
        .map(|t| {
            let tail: String = t
                .lines()
                .rev()
                .take(3)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join(" / ");
            format!(
                "; its stderr: {}",
                crate::evidence::normalize::truncate(&tail, 300)
            )
        })
        .unwrap_or_default();
    DriverError::CliDidNotStart {
        program: req.cli.program.display().to_string(),
        how,
        stderr,
    }
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
        scenario_file: plan.scenario_file.clone(),
        expect: plan.expect.clone(),
        want: plan.want,
        wakeprobe_version: env!("CARGO_PKG_VERSION").to_string(),
        os: os_description(),
        complete: true,
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
}
