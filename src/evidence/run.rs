//! What a run was and how it ended (`run.json`), and the raw evidence it leaves for the writer.
//!
//! The driver produces these and returns them; it never writes a file. Everything after it
//! (the classifier, the reports, the store) reads them from here.

use crate::scenario::Expected;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::ExitDesc;
use super::channel::{Channel, version_with_channel};
use crate::scenario::{DriverMode, Outcome, ParamRange, Params};

/// Bumped when `run.json`'s shape changes incompatibly.
pub const RUN_SCHEMA: u32 = 1;

/// How close before a signal to the harness an end of the CLI or of its work may have been
/// caused by that signal (a signal to the whole process tree reaches them all at once, and
/// the harness hears of it a moment later). Such ends are not taken as the CLI's doing.
pub const SIGNAL_RACE_MS: f64 = 2000.0;

/// Which kind of CLI ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum BackendKind {
    /// The real Claude Code CLI.
    Claude,
    /// The `claude-sim` stand-in with a behaviour profile.
    Sim { profile: String },
    /// opencode (`opencode-ai`), run by the harness as Claude Code is.
    Opencode,
}

impl BackendKind {
    /// The runtime this CLI is: the simulator stands in for Claude Code.
    pub fn runtime(&self) -> crate::scenario::Runtime {
        match self {
            BackendKind::Claude | BackendKind::Sim { .. } => crate::scenario::Runtime::ClaudeCode,
            BackendKind::Opencode => crate::scenario::Runtime::Opencode,
        }
    }
}

/// How a run's network was isolated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Isolation {
    /// `private-netns` or `host`.
    pub network: String,
    /// Interfaces visible to the CLI (only `lo` in a private namespace).
    pub interfaces: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum EndReason {
    /// The driver's plan ran to its end and the CLI exited.
    Finished,
    /// The CLI exited while the driver still had a session open or inputs to send.
    CliEnded,
    /// The scenario's ceiling was reached: the run was cut short.
    Ceiling,
    /// The harness was interrupted (SIGINT, SIGTERM, SIGHUP): the run was cut short.
    Interrupted,
    /// The harness's own machinery failed (its supervisor died, say): the run was cut short.
    HarnessFailed,
    /// Watched work outlived the bound its scenario declares (`hang_seconds`): the run was
    /// ended on purpose, and that work counts as hung.
    WorkHung,
    /// The script called a tool this CLI does not offer at all: the run was ended there, and
    /// it decides nothing about this version.
    ToolUnavailable,
}

/// How an integration under test (driver mode `command`) ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IntegrationEnding {
    /// Its exit; none where it was never seen to end.
    pub exit: Option<ExitDesc>,
    /// It exited by itself, before the harness stopped it: an integration that had to be
    /// stopped (it never closed, or ignored SIGTERM and was killed) fails its run.
    pub by_itself: bool,
}

impl IntegrationEnding {
    /// Why the integration fails its run, when it does.
    pub fn failure(&self) -> Option<String> {
        if self.by_itself {
            return None;
        }
        Some(match &self.exit {
            Some(ExitDesc::Signal(9)) => "the integration never exited by itself: the harness had to kill it (SIGKILL, after it ignored SIGTERM)".into(),
            Some(exit) => format!(
                "the integration never exited by itself: the harness stopped it at the end of the run ({})",
                exit.describe()
            ),
            None => "the integration never exited by itself: the harness stopped it at the end of the run (its exit was not reported)".into(),
        })
    }
}

impl EndReason {
    /// True when the harness, not the CLI, ended the run before the plan was done: what would
    /// have happened next was not observed.
    pub fn cut_short(self) -> bool {
        matches!(
            self,
            EndReason::Ceiling
                | EndReason::Interrupted
                | EndReason::HarnessFailed
                | EndReason::ToolUnavailable
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Finished => "finished",
            EndReason::CliEnded => "cli-ended",
            EndReason::Ceiling => "ceiling",
            EndReason::Interrupted => "interrupted",
            EndReason::HarnessFailed => "harness-failed",
            EndReason::WorkHung => "work-hung",
            EndReason::ToolUnavailable => "tool-unavailable",
        }
    }
}

/// What a run was, how it ended, and where: `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunInfo {
    pub schema: u32,
    pub scenario: String,
    pub title: String,
    pub variant: String,
    pub repetition: u32,
    pub backend: BackendKind,
    pub cli_label: String,
    pub cli_version: String,
    /// How the CLI was asked for (`latest`, `2.1.219`, `sim:fixed`): the matrix column key.
    #[serde(default)]
    pub cli_spec: String,
    /// The version the CLI itself reported (`system/init`), when it did.
    pub cli_version_reported: Option<String>,
    /// The channel the version was installed from: `{"kind": "claude-code"}`, or
    /// `{"kind": "agent-sdk", "sdk_version": "0.3.335"}`. Absent for a binary given by path,
    /// the simulator, and runs of an older wakeprobe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli_channel: Option<Channel>,
    pub mode: DriverMode,
    pub permission_mode: String,
    /// Arguments given to the CLI after the harness's own (`--cli-arg`), e.g.
    /// `--no-session-persistence`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cli_args: Vec<String>,
    /// The Agent SDK an SDK mode ran the CLI through (`agent-sdk 0.3.335 (TypeScript)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdk: Option<String>,
    /// The Claude Code version that SDK release ships (its `claudeCodeVersion`, or the CLI its
    /// Python package bundles): a run of another version is a pairing the SDK does not ship.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdk_ships_cli: Option<String>,
    pub params: Params,
    /// Where the scenario's expected verdict holds, for parameters that declare a range.
    #[serde(default, skip_serializing_if = "indexmap::IndexMap::is_empty")]
    pub param_ranges: indexmap::IndexMap<String, ParamRange>,
    /// Values that ran outside their range on purpose (`--explore`): no expected verdict then.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside_range: Vec<String>,
    pub ceiling_s: f64,
    pub started_unix_ms: u64,
    pub duration_s: f64,
    /// From spawning the CLI to its exit, when it exited.
    pub cli_wall_s: Option<f64>,
    pub end: EndReason,
    /// What ended the run, in words, when the harness cut it short (`SIGINT at 3.02 s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_detail: Option<String>,
    /// The CLI's own exit (in driver mode `command`, as the CLI tap saw it).
    pub cli_exit: Option<ExitDesc>,
    /// Driver mode `command`: how the integration under test ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integration: Option<IntegrationEnding>,
    pub isolation: Isolation,
    /// Processes still alive after cleanup (each was killed); should be empty.
    pub leftovers: Vec<String>,
    /// Scheduled inputs that were never sent, each with the trigger that never happened.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsent_inputs: Vec<String>,
    /// The command that reproduces this run.
    pub command: String,
    /// How that command names the scenario: its name for the library's, else the path the run
    /// was given, relative to the folder it ran from (the draft's other commands use it too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The scenario file the run was planned from, as it was named (JUnit's `file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario_file: Option<String>,
    pub expect: Option<Expected>,
    /// The verdict the CLI should give (the scenario's `want`), if it states one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub want: Option<Outcome>,
    pub wakeprobe_version: String,
    /// `uname`: system, release, machine.
    pub os: String,
    /// False while the run's folder is being written, and left false when writing it failed
    /// (a full disk, say): `report` and `merge` skip such folders.
    #[serde(default = "complete_by_default")]
    pub complete: bool,
    /// Why a folder left incomplete is not whole: the file that could not be written, the
    /// system's reason, and the run's files that are missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
}

impl RunInfo {
    /// Whether an SDK drove a CLI version other than the one that SDK release ships.
    pub fn sdk_pairing_unshipped(&self) -> bool {
        let ran = self
            .cli_version_reported
            .as_deref()
            .unwrap_or(&self.cli_version);
        self.sdk_ships_cli
            .as_deref()
            .is_some_and(|ships| ships != ran)
    }

    /// The CLI's version as reports show it, with the channel where it is not the claude-code
    /// package: `2.1.335 (agent-sdk 0.3.335)`, `2.1.332`. The version the CLI reported wins
    /// over the one asked for.
    pub fn cli_version_text(&self) -> String {
        let version = self
            .cli_version_reported
            .as_deref()
            .unwrap_or(&self.cli_version);
        version_with_channel(version, self.cli_channel.as_ref())
    }

    /// The CLI label with the channel where it is not the claude-code package:
    /// `claude-2.1.335 (agent-sdk 0.3.335)`, `claude-2.1.332`, `sim-fixed`.
    pub fn cli_label_text(&self) -> String {
        version_with_channel(&self.cli_label, self.cli_channel.as_ref())
    }

    /// The matrix column this run belongs to: the CLI as asked for, or its label when the run
    /// recorded no spec.
    pub fn column(&self) -> String {
        if self.cli_spec.is_empty() {
            self.cli_label.clone()
        } else {
            self.cli_spec.clone()
        }
    }

    /// The simulator profile that ran, if the simulator did.
    pub fn profile(&self) -> Option<&str> {
        match &self.backend {
            BackendKind::Sim { profile } => Some(profile),
            BackendKind::Claude | BackendKind::Opencode => None,
        }
    }

    /// Its column's title ([`column_title`]).
    pub fn column_title(&self) -> String {
        let version = self
            .cli_version_reported
            .as_deref()
            .unwrap_or(&self.cli_version);
        column_title(
            &self.column(),
            version,
            self.cli_channel.as_ref(),
            self.profile(),
        )
    }
}

/// A matrix column's title, the same in every report: the CLI as asked for, then what it stood
/// for when that says more. `latest (2.1.337, agent-sdk 0.3.337)`, `2.1.219`, and for the
/// simulator its profile, not the simulator's own version: `2.1.228 (sim: fixed)`.
pub fn column_title(
    spec: &str,
    version: &str,
    channel: Option<&Channel>,
    profile: Option<&str>,
) -> String {
    let said: Vec<String> = match profile {
        Some(p) if spec == format!("sim:{p}") => vec![],
        Some(p) => vec![format!("sim: {p}")],
        None => {
            let mut said = Vec::new();
            if !version.is_empty() && version != spec {
                said.push(version.to_string());
            }
            said.extend(
                channel
                    .filter(|c| c.note().is_some())
                    .map(Channel::describe),
            );
            said
        }
    };
    if said.is_empty() {
        spec.to_string()
    } else {
        format!("{spec} ({})", said.join(", "))
    }
}

fn complete_by_default() -> bool {
    true
}

/// The raw evidence of a run, as the CLI produced it: kept byte for byte (redacted) next to
/// the timeline.
#[derive(Debug, Clone, Default)]
pub struct RawEvidence {
    /// stdout lines (stream-json), with their time.
    pub stream: Vec<(f64, String)>,
    /// In driver mode `command`, the lines between the integration and the CLI, as the CLI
    /// tap passed them on: (time, written to the CLI, line). Empty in the other modes.
    pub cli_lines: Vec<(f64, bool, String)>,
    /// Hook payloads, with their time.
    pub hooks: Vec<(f64, String)>,
    /// The sandbox's evidence folder (API journal, request bodies, stderr, pty bytes).
    pub raw_dir: PathBuf,
    /// The CLI's transcripts folder in the sandbox HOME.
    pub transcripts: PathBuf,
}
