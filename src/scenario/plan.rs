//! One variant of a scenario, resolved: what a run executes. Concrete durations, substituted
//! texts, typed triggers and controls, every agent's model script. Saved with each run as
//! `plan.json`, so a saved run can be judged again without its scenario file.

use std::time::Duration;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::hook::HookName;
use super::outcome::Expected;
use super::outcome::Outcome;
use super::params::ParamRange;
use super::raw::{DriverMode, Until};
use super::template::Params;

/// The agent the driver's prompt talks to.
pub const MAIN_AGENT: &str = "main";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub scenario: String,
    pub title: String,
    pub variant: String,
    pub params: Params,
    /// The ranges where the scenario's expected verdict holds, for the parameters that have one.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub param_ranges: IndexMap<String, ParamRange>,
    /// Values run outside their range on purpose (`--explore`): then `expect` is `None`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside_range: Vec<String>,
    pub driver: Driver,
    pub agents: IndexMap<String, Vec<Step>>,
    pub expect: Option<Expected>,
    /// The verdict the CLI should give (plans saved before `want` existed have none).
    #[serde(default)]
    pub want: Option<Outcome>,
    pub watch: Vec<Watch>,
    pub checks: Vec<Check>,
    /// The folder's invariants (`invariants.toml`), judged like checks and reported apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invariants: Vec<Check>,
    /// What the fake API breaks (`[[faults]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<Fault>,
    /// The scenario file, as it was named (a built-in library's path is in the cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario_file: Option<String>,
    /// The scenario's `contrast`: the case that works, for the draft's Summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contrast: Option<String>,
    /// The scenario's `workaround`, for the draft's Summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workaround: Option<String>,
}

/// What the CLI may run when a scenario gives no `allowed_tools`, besides every tool its script
/// calls.
pub const DEFAULT_ALLOWED_TOOLS: [&str; 3] = ["Bash", "Agent", "SendMessage"];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Driver {
    pub mode: DriverMode,
    pub prompt: String,
    #[serde(with = "secs")]
    pub ceiling: Duration,
    #[serde(with = "secs")]
    pub settle: Duration,
    pub permission_mode: String,
    pub allowed_tools: Vec<String>,
    pub env: IndexMap<String, String>,
    pub guard: bool,
    pub inputs: Vec<Input>,
    pub probe: Option<Probe>,
    /// The CLI writes its session (transcripts) to disk.
    #[serde(default = "yes")]
    pub persist_session: bool,
    /// How an SDK host hands over the prompt.
    #[serde(default)]
    pub prompt_form: PromptForm,
    /// Hooks an SDK host gives the SDK as callbacks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub callback_hooks: Vec<HookName>,
    /// Mode `command`: the integration's program and arguments, paths made absolute.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Mode `command`: the user's answer to every approval the integration shows.
    #[serde(default)]
    pub approve: Answer,
}

/// A user's answer to an approval.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Let the tool run.
    #[default]
    Allow,
    /// Refuse it.
    Deny,
}

impl Answer {
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Allow => "allow",
            Answer::Deny => "deny",
        }
    }
}

fn yes() -> bool {
    true
}

/// How an SDK host hands the prompt to the SDK.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptForm {
    /// Streaming input: the prompt, then every later input, until the session's input ends.
    #[default]
    Stream,
    /// The SDK's string prompt: one prompt, after which the SDK closes the CLI's input (as
    /// print mode does).
    String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Input {
    pub after: Trigger,
    #[serde(with = "secs")]
    pub delay: Duration,
    pub action: InputAction,
}

/// A stream-json control request the driver can send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    /// Interrupt the main agent's turn.
    Interrupt,
    /// Stop a background task (an agent or a tracked command).
    StopTask,
    /// Write a message to a background task.
    SendTaskMessage,
}

impl Control {
    pub fn as_str(self) -> &'static str {
        match self {
            Control::Interrupt => "interrupt",
            Control::StopTask => "stop_task",
            Control::SendTaskMessage => "send_task_message",
        }
    }

    pub fn parse(s: &str) -> Option<Control> {
        [
            Control::Interrupt,
            Control::StopTask,
            Control::SendTaskMessage,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
    }
}

/// What a scheduled input does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum InputAction {
    /// Send a user message (typed in a pty).
    Text { text: String },
    /// Send a stream-json control request (`interrupt`, or `stop_task` for a named task).
    Control {
        subtype: Control,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

/// An unrelated input sent once the session has been quiet for `quiet`, to tell a lost
/// notification (H1) from a queued one (H3).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Probe {
    pub text: String,
    #[serde(with = "secs")]
    pub quiet: Duration,
}

/// What a scheduled input waits for before its delay starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "on", content = "arg")]
pub enum Trigger {
    /// The session start.
    Start,
    /// The Nth `result` line on stdout (1-based).
    Result(usize),
    /// The Nth end of a turn by this agent.
    TurnEnd(String, usize),
    /// The start of a tracked process.
    TaskStart(String),
    /// The end of a tracked background process.
    TaskEnd(String),
    /// The session has been quiet for the settle window.
    Quiet,
}

impl std::fmt::Display for Trigger {
    /// The trigger as a scenario file writes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trigger::Start => f.write_str("start"),
            Trigger::Result(1) => f.write_str("result"),
            Trigger::Result(n) => write!(f, "result#{n}"),
            Trigger::TurnEnd(agent, 1) => write!(f, "turn-end:{agent}"),
            Trigger::TurnEnd(agent, n) => write!(f, "turn-end:{agent}#{n}"),
            Trigger::TaskStart(name) => write!(f, "task-start:{name}"),
            Trigger::TaskEnd(name) => write!(f, "task-end:{name}"),
            Trigger::Quiet => f.write_str("quiet"),
        }
    }
}

/// One model reply: its text, and the tool calls it makes, all in one assistant message (the
/// CLI runs several calls of one message side by side, as the real model's parallel calls).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(from = "SavedStep")]
pub struct Step {
    pub say: Option<String>,
    /// In the order the message holds them; empty: the reply ends the turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<ToolCall>,
    #[serde(with = "secs")]
    pub think: Duration,
    pub until: Option<Until>,
    pub max_repeats: u32,
    /// 1-based line of the step in the scenario file, for journals and errors.
    pub line: usize,
}

impl Step {
    /// The reply's first tool call (the one `until` repeats, the one reports name first).
    pub fn first_call(&self) -> Option<&ToolCall> {
        self.calls.first()
    }

    /// Whether the reply ends the agent's turn (it calls no tool).
    pub fn ends_turn(&self) -> bool {
        self.calls.is_empty()
    }
}

/// A step as `plan.json` holds it: plans saved before a step could hold several calls wrote
/// its one call as `call`.
#[derive(Deserialize)]
struct SavedStep {
    say: Option<String>,
    #[serde(default)]
    call: Option<ToolCall>,
    #[serde(default)]
    calls: Vec<ToolCall>,
    #[serde(with = "secs")]
    think: Duration,
    until: Option<Until>,
    max_repeats: u32,
    line: usize,
}

impl From<SavedStep> for Step {
    fn from(s: SavedStep) -> Step {
        Step {
            say: s.say,
            calls: s.call.into_iter().chain(s.calls).collect(),
            think: s.think,
            until: s.until,
            max_repeats: s.max_repeats,
            line: s.line,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolCall {
    pub tool: String,
    pub input: serde_json::Value,
    /// The agent this Agent call starts (the harness tags its prompt).
    pub spawn: Option<String>,
    /// A name under which the harness tracks this Bash command's process.
    pub track: Option<String>,
}

/// A waiter and the background work it waits for, named explicitly.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Watch {
    pub waiter: String,
    /// A tracked Bash task name, or an agent name.
    pub work: String,
    /// Work still running this long after it started counts as hung (H4): the harness ends
    /// the run there, on purpose. Without it, only the ceiling ends a hang, and a run cut
    /// short by the ceiling decides nothing.
    #[serde(default, with = "opt_secs", skip_serializing_if = "Option::is_none")]
    pub hang_after: Option<Duration>,
}

/// The facts a scenario can check besides the wake-up (see `classify::checks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckKind {
    IdleTeammateDistinguishable,
    SingleContinuation,
    SubagentStopOnInterrupt,
    GuardBlockedOnce,
    StopsUnblocked,
    ToolErrors,
    TranscriptStatus,
    /// Mode `command`: each turn the CLI started by itself is shown once.
    CliTurnShownOnce,
    /// Mode `command`: each permission request of the CLI is shown and answered.
    ApprovalsAnswered,
    /// Mode `command`: the status returns to idle after the last notification.
    IdleAfterNotification,
    /// Mode `command`: a restored subagent has the status its transcript implies.
    RestoredStatus,
}

impl CheckKind {
    pub const ALL: [CheckKind; 11] = [
        CheckKind::IdleTeammateDistinguishable,
        CheckKind::SingleContinuation,
        CheckKind::SubagentStopOnInterrupt,
        CheckKind::GuardBlockedOnce,
        CheckKind::StopsUnblocked,
        CheckKind::ToolErrors,
        CheckKind::TranscriptStatus,
        CheckKind::CliTurnShownOnce,
        CheckKind::ApprovalsAnswered,
        CheckKind::IdleAfterNotification,
        CheckKind::RestoredStatus,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CheckKind::IdleTeammateDistinguishable => "idle-teammate-distinguishable",
            CheckKind::SingleContinuation => "single-continuation",
            CheckKind::SubagentStopOnInterrupt => "subagent-stop-on-interrupt",
            CheckKind::GuardBlockedOnce => "guard-blocked-once",
            CheckKind::StopsUnblocked => "stops-unblocked",
            CheckKind::ToolErrors => "tool-errors",
            CheckKind::TranscriptStatus => "transcript-status",
            CheckKind::CliTurnShownOnce => "cli-turn-shown-once",
            CheckKind::ApprovalsAnswered => "approvals-answered",
            CheckKind::IdleAfterNotification => "idle-after-notification",
            CheckKind::RestoredStatus => "restored-status",
        }
    }

    pub fn parse(s: &str) -> Option<CheckKind> {
        CheckKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// A preset on an integration under test (mode `command`): it reads the integration's
    /// lines beside the CLI's, not one agent's events.
    pub fn is_on_integration(self) -> bool {
        matches!(
            self,
            CheckKind::CliTurnShownOnce
                | CheckKind::ApprovalsAnswered
                | CheckKind::IdleAfterNotification
                | CheckKind::RestoredStatus
        )
    }
}

/// A fact a scenario checks besides the wake-up: a built-in preset (`kind`) or a query over the
/// timeline (see `scenario::query` and `crate::checks`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<CheckKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<super::query::Query>,
    pub expect: Option<String>,
    /// What the check should observe (`want`): a failed `want` is a bug to file, and a move
    /// toward it across versions an improvement, while `expect` stays what the CLI does today.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub want: Option<String>,
    /// The query's selectors may match nothing (`allow_empty`): an empty match is then an
    /// observation, not a vacuous check.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_empty: bool,
    /// For an invariant: why this scenario's runs may break it (`may_break`). A break is then
    /// reported with the reason, and does not fail the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub may_break: Option<String>,
    /// The bug this check catches, in the CLI's terms, one line of at most
    /// [`DESCRIBES_MAX_CHARS`] characters (`describes`): the draft's title when it fails its
    /// `want`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub describes: Option<String>,
}

/// The longest `describes` a check may carry: it becomes an issue's title.
pub const DESCRIBES_MAX_CHARS: usize = 80;

/// Durations as seconds (a float) in `plan.json`.
mod secs {
    use std::time::Duration;

    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = <f64 as serde::Deserialize>::deserialize(d)?;
        Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
    }
}

mod opt_secs {
    use std::time::Duration;

    pub fn serialize<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        let secs = <Option<f64> as serde::Deserialize>::deserialize(d)?;
        secs.map(|s| Duration::try_from_secs_f64(s).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// What a fault does: the fake API's broken answer instead of a clean one, or the harness's
/// signal to a tracked command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// HTTP 429 `rate_limit_error`, with a `retry-after` header (`seconds`, default 1).
    #[serde(rename = "http-429")]
    Http429,
    /// HTTP 500 `api_error`.
    #[serde(rename = "http-500")]
    Http500,
    /// HTTP 400 `invalid_request_error`: the request itself refused, which neither runtime
    /// retries (the agent's turn fails there).
    #[serde(rename = "http-400")]
    Http400,
    /// HTTP 529 `overloaded_error`.
    #[serde(rename = "overloaded-529")]
    Overloaded529,
    /// Status 200 and the headers, then the connection ends before the first stream event.
    ResetAfterHeaders,
    /// The first stream events (the message start and its first block), then the connection
    /// ends with the body unfinished.
    ResetMidStream,
    /// An `error` stream event (`overloaded_error`) after the message start, then the end.
    ErrorEvent,
    /// The whole message but its `message_stop`; the body then ends cleanly.
    CutBeforeStop,
    /// The stream pauses `seconds` after the message start, then completes.
    Stall,
    /// `delay_ms` between stream events.
    Slow,
    /// SIGKILL to a tracked command (its shell and what it runs; the tracker itself lives on
    /// and reports how the command ended), `after_seconds` after the work started.
    KillTask,
    /// SIGSTOP to a tracked command `after_seconds` after the work started, and SIGCONT
    /// `seconds` later: the work is late by as much, as when a laptop sleeps.
    StopTask,
    /// SIGKILL to the CLI itself (not its background work), `after_seconds` after a tracked
    /// command started, then the CLI started again with `--continue` on the same stdin and
    /// stdout: does the work still report after a crash and a resume? Session mode only.
    CrashCli,
}

impl FaultKind {
    pub const ALL: [FaultKind; 13] = [
        FaultKind::Http429,
        FaultKind::Http500,
        FaultKind::Http400,
        FaultKind::Overloaded529,
        FaultKind::ResetAfterHeaders,
        FaultKind::ResetMidStream,
        FaultKind::ErrorEvent,
        FaultKind::CutBeforeStop,
        FaultKind::Stall,
        FaultKind::Slow,
        FaultKind::KillTask,
        FaultKind::StopTask,
        FaultKind::CrashCli,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Http429 => "http-429",
            FaultKind::Http500 => "http-500",
            FaultKind::Http400 => "http-400",
            FaultKind::Overloaded529 => "overloaded-529",
            FaultKind::ResetAfterHeaders => "reset-after-headers",
            FaultKind::ResetMidStream => "reset-mid-stream",
            FaultKind::ErrorEvent => "error-event",
            FaultKind::CutBeforeStop => "cut-before-stop",
            FaultKind::Stall => "stall",
            FaultKind::Slow => "slow",
            FaultKind::KillTask => "kill-task",
            FaultKind::StopTask => "stop-task",
            FaultKind::CrashCli => "crash-cli",
        }
    }

    pub fn parse(s: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// What the fault does to the answer, in a few words for diagrams.
    pub fn effect(self) -> &'static str {
        match self {
            FaultKind::Stall => "stalls the answer",
            FaultKind::Slow => "slows the answer",
            FaultKind::CutBeforeStop => "cuts message_stop off the answer",
            FaultKind::KillTask => "kills the work",
            FaultKind::StopTask => "stops the work for a while",
            FaultKind::CrashCli => "crashes the CLI and resumes it",
            _ => "breaks the answer",
        }
    }

    /// Whether the fault breaks a stream (and so leaves a non-streaming request alone: the
    /// CLI's fallback after repeated stream errors gets a clean answer).
    pub fn needs_a_stream(self) -> bool {
        !matches!(
            self,
            FaultKind::Http429 | FaultKind::Http500 | FaultKind::Http400 | FaultKind::Overloaded529
        ) && !self.hits_a_process()
    }

    /// Whether the fault hits a process (the driver sends it: a tracked command, or the CLI)
    /// rather than a model request (the fake API answers it).
    pub fn hits_a_process(self) -> bool {
        matches!(
            self,
            FaultKind::KillTask | FaultKind::StopTask | FaultKind::CrashCli
        )
    }

    /// Whether the fault can hit a run in `mode`: a crash needs a session to resume.
    pub fn applies_in(self, mode: DriverMode) -> bool {
        self != FaultKind::CrashCli || mode.row().resumable
    }

    /// Whether the agent gets no usable answer from a faulted attempt (it has to retry). A
    /// stall or a slow stream still delivers the whole answer, late; a message cut before its
    /// `message_stop` holds the whole answer too, and whether the CLI takes it is what the
    /// fault tests (2.1.332 does, without a retry).
    pub fn loses_the_answer(self) -> bool {
        !matches!(
            self,
            FaultKind::Stall | FaultKind::Slow | FaultKind::CutBeforeStop
        ) && !self.hits_a_process()
    }
}

/// The flag a crashed CLI is started again with: the most recent session in the project.
pub const RESUME_FLAG: &str = "--continue";

/// Which of an agent's model requests a fault hits first, or which tracked work and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "on", content = "arg")]
pub enum FaultTarget {
    /// The agent's Nth model request (1-based; every attempt counts, retries included).
    Request(u32),
    /// The agent's first request that carries a task notification.
    Notification,
    /// The agent's first request after a tracked command (`track = NAME`) ended: the one that
    /// should carry its notification, also when the CLI does not deliver it.
    WorkEnded(String),
    /// The agent's first request that arrives `after_ms` after the harness saw `trigger` (an
    /// input's `after`).
    AfterTrigger { trigger: Trigger, after_ms: u64 },
    /// A tracked command (`track = NAME`), this long after its work started, or after
    /// `from` fired (a trigger, as an input's `after`).
    Work {
        work: String,
        after_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<Trigger>,
    },
}

impl std::fmt::Display for FaultTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FaultTarget::Request(n) => write!(f, "request #{n}"),
            FaultTarget::Notification => f.write_str("first request with a notification"),
            FaultTarget::WorkEnded(work) => write!(f, "first request after `{work}` ended"),
            FaultTarget::AfterTrigger { trigger, after_ms } => write!(
                f,
                "first request {} s after `{trigger}`",
                *after_ms as f64 / 1000.0
            ),
            FaultTarget::Work {
                work,
                after_ms,
                from: None,
            } => write!(
                f,
                "`{work}`, {} s after it started",
                *after_ms as f64 / 1000.0
            ),
            FaultTarget::Work {
                work,
                after_ms,
                from: Some(trigger),
            } => write!(
                f,
                "`{work}`, {} s after `{trigger}`",
                *after_ms as f64 / 1000.0
            ),
        }
    }
}

/// One fault, resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fault {
    pub kind: FaultKind,
    /// Whose requests it hits.
    pub agent: String,
    pub target: FaultTarget,
    /// How many consecutive attempts it breaks, from the first one it hits.
    pub times: u32,
    /// A stall's length, or a 429's `retry-after`.
    pub seconds: f64,
    /// A slow stream's pause between events.
    pub delay_ms: u64,
    /// 1-based line of the fault in the scenario file; 0 for a `--fault`.
    pub line: usize,
    /// The fault may miss the run (`optional = true`): not applied, it fails nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
}

impl Fault {
    /// The kind's own setting in words (a stall's length, a 429's `retry-after`, a slow
    /// stream's pause), for the kinds that have one.
    pub fn setting(&self) -> Option<String> {
        match self.kind {
            FaultKind::Stall => Some(format!("stalled {} s", self.seconds)),
            FaultKind::Http429 => Some(format!("retry-after {} s", self.seconds)),
            FaultKind::Slow => Some(format!("{} ms between events", self.delay_ms)),
            FaultKind::StopTask => Some(format!("stopped {} s", self.seconds)),
            FaultKind::CrashCli => Some(format!("restarted with {}", RESUME_FLAG)),
            _ => None,
        }
    }

    /// Whether the fault has something to hit in `plan`: its agent, and its tracked work; a
    /// crash needs a session to resume (see [`FaultKind::CrashCli`]).
    pub fn applies_to(&self, plan: &Plan) -> bool {
        if !self.kind.applies_in(plan.driver.mode) {
            return false;
        }
        let tracks = |work: &String| {
            plan.agents
                .values()
                .flatten()
                .flat_map(|s| &s.calls)
                .any(|c| c.track.as_ref() == Some(work))
        };
        match &self.target {
            FaultTarget::Work { work, .. } => tracks(work),
            FaultTarget::WorkEnded(work) => plan.agents.contains_key(&self.agent) && tracks(work),
            _ => plan.agents.contains_key(&self.agent),
        }
    }

    /// The tracked work whose end the fault waits for, if it does.
    pub fn waits_for_work(&self) -> Option<&str> {
        match &self.target {
            FaultTarget::WorkEnded(work) => Some(work),
            _ => None,
        }
    }

    /// One line for reports: `overloaded-529 on main's first request with a notification, 2 times`.
    pub fn describe(&self) -> String {
        let mut text = match &self.target {
            FaultTarget::Work { .. } => format!("{} on {}", self.kind.as_str(), self.target),
            _ => format!(
                "{} on `{}`'s {}",
                self.kind.as_str(),
                self.agent,
                self.target
            ),
        };
        if let Some(setting) = self.setting() {
            text.push_str(&format!(" ({setting})"));
        }
        if self.times > 1 {
            text.push_str(&format!(", {} consecutive attempts", self.times));
        }
        text
    }
}
