//! Evidence on one clock: the `Event` enum and the `Timeline` every later stage reads.
//!
//! `Event` is the contract between the driver and everything after it (classifier, reports,
//! conformance). Each evidence source (fake-API journal, hook payloads, stream-json lines, OS
//! markers and process exits, transcripts) is turned into events by [`normalize::Normalizer`],
//! stamped in milliseconds since the run started on [`clock::RunClock`].

pub mod channel;
pub mod clock;
pub mod describe;
pub mod integration;
pub mod lanes;
pub mod normalize;
pub mod offers;
pub mod recorder;
pub mod run;
pub mod runtime;
pub mod tap;
#[cfg(test)]
pub mod test_events;
pub mod transcript;
pub mod wire;

use serde::{Deserialize, Serialize};

pub use crate::scenario::HookName;

/// The longest user text a model request event keeps of one block.
pub const USER_TEXT_CHARS: usize = 1000;

/// Bumped when the timeline's JSON shape changes incompatibly.
pub const TIMELINE_SCHEMA: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Event {
    /// Milliseconds since the run started.
    pub t_ms: f64,
    pub source: Source,
    /// The scenario's agent name (`main`, `worker`, ...) when the event belongs to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Where an event was observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The fake Messages API's journal.
    Api,
    /// A recorder hook's payload.
    Hook,
    /// A stream-json line on the CLI's stdout.
    Stream,
    /// The OS: tracked processes, reaped processes, exits.
    Os,
    /// The driver's own actions (inputs, ceiling, interrupt).
    Driver,
    /// The CLI's session or subagent transcripts.
    Transcript,
    /// The pseudo-terminal's screen.
    Screen,
    /// A fault the harness injected on purpose (`[[faults]]`).
    Fault,
    /// An Agent SDK: a message its stream yielded, or a call it made into the harness's host
    /// (a hook callback, `canUseTool`).
    Sdk,
    /// A program under test (driver mode `command`): what it showed its user.
    Integration,
    /// The runtime's own event stream: opencode's server `/event`, or its observer plugin.
    Events,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// The CLI process (under its supervisor) was started.
    CliSpawned { pid: u32 },
    /// An integration showed its user something (`evidence::integration`).
    Shown(integration::IntegrationLine),
    /// A line on an integration's stdout that is not the protocol's, and why.
    RejectedLine { why: String, line: String },
    /// The driver, as the integration's user, answered an approval it showed (the scenario's
    /// `approve`).
    ApprovalGiven {
        tool: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        answer: integration::Answer,
    },
    /// The driver sent user input: the prompt, a scheduled input, or a probe.
    UserInput { text: String, why: InputReason },
    /// The fake API received a model request and decided how to answer it.
    ModelRequest {
        seq: u64,
        route: Route,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<usize>,
        /// Task notifications that are new in this request (after the last assistant message).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notifications: Vec<Notification>,
        /// New text that is neither a tool result nor a notification (user input, hook
        /// feedback), shortened.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        injected: Option<String>,
        /// Error tool results this request reports back (refused or failed tool calls).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_errors: Vec<String>,
        /// The user's words new in this request: each text block of a user message after the
        /// last assistant message, with the CLI's own `<system-reminder>` and
        /// `<task-notification>` parts taken out (whitespace collapsed, each at most
        /// [`USER_TEXT_CHARS`] characters). What decides whether a request carried an input.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        user_text: Vec<String>,
        /// A fault the harness injected kept the answer from the agent (an error status, a
        /// broken stream): the agent saw nothing of this attempt.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        answer_lost: bool,
    },
    /// The harness broke a model request's answer on purpose (`[[faults]]`).
    FaultInjected {
        seq: u64,
        fault: crate::scenario::FaultKind,
        detail: String,
    },
    /// The harness signalled a tracked command's processes on purpose (a process fault).
    WorkSignalled {
        work: String,
        fault: crate::scenario::FaultKind,
        signal: String,
        /// The processes signalled (none when the work had already ended).
        pids: Vec<u32>,
    },
    /// The harness crashed the CLI on purpose (`crash-cli`, `work` running): the supervisor
    /// kills it and starts it again with `resume` after its own arguments.
    CliCrashed { work: String, resume: Vec<String> },
    /// The supervisor killed the CLI (`killed`, which ended as `exit`) for a crash fault and
    /// started it again as `pid`, or could not (`error`). Not the CLI's exit: the run goes on.
    CliRestarted {
        killed: u32,
        exit: ExitDesc,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The fake API answered with a tool call.
    ToolCall {
        seq: u64,
        tool: String,
        tool_use_id: String,
        #[serde(default)]
        background: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spawn: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        track: Option<String>,
        /// The `name` given to a spawned agent (a teammate, where the CLI supports them).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        teammate: Option<String>,
        /// The spawned agent this call's input names (a TaskStop's `task_id`, filled from
        /// `{{@agent-id:NAME}}`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
        /// The fake API made this call itself, not the script: a `ToolSearch` that loads a
        /// deferred tool before the scripted call that needs it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        inserted: bool,
    },
    /// The fake API answered with text that ends the agent's turn.
    TurnEnded { seq: u64, text: String },
    /// The CLI reported a task (background Bash, subagent, teammate) started.
    TaskStarted {
        task_id: String,
        task_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_use_id: Option<String>,
        /// The scenario's track name (Bash) or agent name (Agent) behind the task.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
    /// The CLI changed a task's status (`completed`, `killed`, ...).
    TaskUpdated {
        task_id: String,
        status: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
    /// The CLI printed a `task_notification` line. Not proof of delivery to any agent.
    TaskNotified {
        task_id: String,
        status: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
    },
    /// A hook fired (from the recorder's payload).
    Hook {
        hook: HookName,
        /// Index of the raw payload in `hooks.jsonl`.
        raw: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        background_tasks: Option<Vec<BackgroundTask>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_hook_active: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// The task a TaskStop call named (on its PostToolUse): a stopped agent runs no
        /// SubagentStop, and in pty mode nothing else says it ended.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stops_task: Option<String>,
    },
    /// A subagent was finalized (SubagentStop) or went idle (TeammateIdle).
    AgentFinalized { hook: HookName },
    /// The stream's `result` line: a top-level turn finished.
    TurnResult {
        subtype: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        num_turns: Option<u64>,
        #[serde(default)]
        is_error: bool,
        /// What started the turn, as the CLI says (`origin.kind`): `task-notification` for a
        /// turn it started by itself after background work reported; absent for a prompt's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        origin: Option<String>,
    },
    /// A tool needs permission: an Agent SDK asked the host's `canUseTool` (the host allows
    /// every call and says so in `answer`), or the CLI asked the integration it runs under
    /// (its `can_use_tool` control request, seen by the CLI tap: the answer, if any, is a
    /// `permission_answered` event of the same `request_id`).
    PermissionAsked {
        tool: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_use_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
    },
    /// An integration answered the CLI's permission request `request_id` (`allow`, `deny`,
    /// or `error`), as the CLI tap saw it go to the CLI.
    PermissionAnswered {
        request_id: String,
        tool: String,
        answer: String,
    },
    /// A line an integration wrote to the CLI's stdin other than a permission answer, by its
    /// stream-json `type` (`user`: a prompt) and `subtype`, as the CLI tap saw it.
    ToCli {
        #[serde(rename = "type")]
        line_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subtype: Option<String>,
    },
    /// Any other stream-json line, kept by type and subtype (for shape comparisons).
    StreamLine {
        #[serde(rename = "type")]
        line_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subtype: Option<String>,
    },
    /// A tracked command started (from the task tracker).
    TrackStarted { name: String, pid: u32 },
    /// A tracked command ended; `exit` says how.
    TrackEnded {
        name: String,
        pid: u32,
        exit: ExitDesc,
    },
    /// A process under the supervisor was reaped.
    ProcessExited {
        pid: u32,
        exit: ExitDesc,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<String>,
    },
    /// The CLI process ended.
    CliExited { exit: ExitDesc },
    /// The driver sent a stream-json control request (`interrupt`, `stop_task`).
    ControlRequest {
        subtype: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
    },
    /// The CLI answered a control request.
    ControlResponse {
        subtype: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The driver closed the session (stdin, or `/exit` in a pty).
    SessionClosed,
    /// The run's ceiling ended the run.
    CeilingHit { ceiling_s: f64 },
    /// The run was interrupted: a signal to the harness (SIGINT, SIGTERM, SIGHUP) or to its
    /// supervisor. What the CLI did after it is not the CLI's own behaviour.
    Interrupted {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
    },
    /// The harness's own machinery failed (its supervisor died, the fake API stopped): the
    /// run was cut short.
    HarnessFailed { what: String },
    /// The harness's timer for watched work's hang bound fired: the work was not seen to end
    /// by then. Whether it really ran past its bound is judged from the recorded stamps
    /// (`classify`), since a paused or starved harness fires its timers late.
    WorkOverdue { work: String, bound_s: f64 },
    /// The integration under test (driver mode `command`: the program that drives the CLI)
    /// exited; the CLI's own exit is `CliExited`.
    IntegrationExited { exit: ExitDesc },
    /// The harness itself did not run from this moment until `until_ms` (it was stopped, or
    /// starved of CPU): what reached it meanwhile was stamped late, and its timers fired late.
    HarnessStalled { until_ms: f64 },
    /// A process the run started was still alive after cleanup and had to be killed.
    Leftover { pid: u32, command: String },
    /// A fact read from a transcript (seed 004's rules).
    TranscriptFact { fact: String, detail: String },
    /// What the pseudo-terminal showed at a moment.
    Screen { text: String },
    /// The script calls a tool this CLI does not offer (neither directly nor deferred): the
    /// agent's turn was ended there, and what follows is not the script's scenario.
    ToolUnavailable {
        tool: String,
        /// The CLI's version, from its user agent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cli: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InputReason {
    Prompt,
    Scheduled,
    Probe,
}

/// How the fake API routed a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "route", content = "detail")]
pub enum Route {
    /// A scripted step of a known agent.
    Turn,
    /// A known agent asked past the end of its script.
    ScriptExhausted,
    /// A recognised side call (title, safety classifier, ...), answered harmlessly.
    SideCall(String),
    /// No agent tag: answered harmlessly.
    Unrouted,
}

/// One `<task-notification>` found in a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Notification {
    pub task_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// A Monitor's event (one line of its command's output), when the notification is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
}

/// An entry of a Stop/SubagentStop payload's `background_tasks`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BackgroundTask {
    pub id: String,
    #[serde(rename = "type")]
    pub task_type: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fields beyond the four above, by name (they vary between versions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_fields: Vec<String>,
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExitDesc {
    Code(i32),
    Signal(i32),
    /// The process vanished without a status we could read (killed with SIGKILL, say).
    Vanished,
}

impl ExitDesc {
    pub fn from_wait_status(status: i32) -> ExitDesc {
        if libc::WIFEXITED(status) {
            ExitDesc::Code(libc::WEXITSTATUS(status))
        } else if libc::WIFSIGNALED(status) {
            ExitDesc::Signal(libc::WTERMSIG(status))
        } else {
            ExitDesc::Vanished
        }
    }

    pub fn from_std(status: std::process::ExitStatus) -> ExitDesc {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(c), _) => ExitDesc::Code(c),
            (None, Some(s)) => ExitDesc::Signal(s),
            _ => ExitDesc::Vanished,
        }
    }

    pub fn success(&self) -> bool {
        matches!(self, ExitDesc::Code(0))
    }

    /// `exit 0`, `SIGTERM`, ...
    pub fn describe(&self) -> String {
        match self {
            ExitDesc::Code(c) => format!("exit {c}"),
            ExitDesc::Signal(s) => signal_name(*s).to_string(),
            ExitDesc::Vanished => "vanished".to_string(),
        }
    }
}

pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => "signal",
    }
}

/// A task status as the CLI reports it (`task_updated`, `background_tasks`), classified.
/// The raw text stays on the events; this is how the harness reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    /// Still going (`running`, `pending`, `idle`, or a status this harness does not know).
    Live,
    Completed,
    /// Failed on its own (`failed`, `error`).
    Failed,
    /// Ended by someone (`killed`, `stopped`, `cancelled`).
    Killed,
}

impl TaskStatus {
    pub fn parse(status: &str) -> TaskStatus {
        match status {
            "completed" => TaskStatus::Completed,
            "failed" | "error" => TaskStatus::Failed,
            "killed" | "stopped" | "cancelled" | "canceled" => TaskStatus::Killed,
            _ => TaskStatus::Live,
        }
    }

    /// True once the task is no longer running.
    pub fn is_terminal(self) -> bool {
        self != TaskStatus::Live
    }
}

/// The part of a request's injected text worth showing: from a hook's feedback on when there is
/// one (the CLI wraps it in boilerplate), else the text with the CLI's own `<system-reminder>`
/// context folded away (it is in `requests/` for whoever needs it); empty when nothing else is
/// left.
pub fn injected_gist(text: &str) -> String {
    if let Some(i) = text.find("hook feedback:") {
        return text[i..].to_string();
    }
    let mut text = without_element(text, "system-reminder");
    // Context the CLI adds as plain text (the list of agent types, of deferred tools): it runs
    // to the end of what is kept.
    if let Some(at) = CLI_CONTEXT.iter().filter_map(|m| text.find(m)).min() {
        text.truncate(at);
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How context the CLI injects as plain text begins (2.1.332).
const CLI_CONTEXT: [&str; 2] = [
    "Available agent types for the Agent tool",
    "The following deferred tools are now available via ToolSearch",
];

/// `text` with every `<tag>...</tag>` element taken out (an unclosed one to the end).
pub fn without_element(text: &str, tag: &str) -> String {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(&open) {
        out.push_str(&rest[..at]);
        rest = match rest[at..].find(&close) {
            Some(end) => &rest[at + end + close.len()..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// One event that decides a verdict or a check, described.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Witness {
    pub t_ms: f64,
    pub source: Source,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub what: String,
}

impl Event {
    /// A model request of `agent`'s own turn (not a side call).
    pub fn is_request_by(&self, agent: &str) -> bool {
        self.agent.as_deref() == Some(agent)
            && matches!(
                self.kind,
                EventKind::ModelRequest {
                    route: Route::Turn | Route::ScriptExhausted,
                    ..
                }
            )
    }
}

impl Witness {
    pub fn of(e: &Event, what: impl Into<String>) -> Witness {
        Witness {
            t_ms: e.t_ms,
            source: e.source,
            agent: e.agent.clone(),
            what: what.into(),
        }
    }
}

/// A time on the run's clock as prose: `1.23 s`.
pub fn secs(t_ms: f64) -> String {
    format!("{:.2} s", t_ms / 1000.0)
}

/// A run's events in time order, with what the run was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Timeline {
    pub schema: u32,
    pub events: Vec<Event>,
}

impl Timeline {
    /// Orders events by time; ties keep their arrival order.
    pub fn new(mut events: Vec<Event>) -> Timeline {
        events.sort_by(|a, b| a.t_ms.total_cmp(&b.t_ms));
        Timeline {
            schema: TIMELINE_SCHEMA,
            events,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Event> {
        self.events.iter()
    }

    /// The part of the timeline that shows the CLI's own behaviour: everything, for a run that
    /// ended on its own; up to the cut, for a run the harness ended (its ceiling, a signal, its
    /// own failure, a hang bound). After a signal, ends of processes and of the CLI in the
    /// moments before it are left out too: a signal to the whole process tree reaches them
    /// before the harness hears of it, so they are not the CLI's doing.
    pub fn observed(&self, end: run::EndReason) -> Timeline {
        let Some(cut) = self.iter().find(|e| e.kind.ends_the_run()) else {
            return self.clone();
        };
        let interrupted =
            matches!(cut.kind, EventKind::Interrupted { .. }) || end == run::EndReason::Interrupted;
        let raced = |e: &Event| {
            interrupted && e.t_ms >= cut.t_ms - run::SIGNAL_RACE_MS && e.kind.signal_could_cause()
        };
        Timeline::new(
            self.iter()
                .filter(|e| e.t_ms <= cut.t_ms && !raced(e))
                .cloned()
                .collect(),
        )
    }
}

impl EventKind {
    /// A hook event with nothing but its name, its payload's index and the agent id it names
    /// (tests and sources that know no more add the rest by matching).
    pub fn hook(hook: HookName, raw: usize, agent_id: Option<&str>) -> EventKind {
        EventKind::Hook {
            hook,
            raw,
            agent_id: agent_id.map(str::to_string),
            background_tasks: None,
            stop_hook_active: None,
            detail: None,
            stops_task: None,
        }
    }

    /// Events by which the harness ends a run.
    pub fn ends_the_run(&self) -> bool {
        matches!(
            self,
            EventKind::CeilingHit { .. }
                | EventKind::ToolUnavailable { .. }
                | EventKind::Interrupted { .. }
                | EventKind::HarnessFailed { .. }
                | EventKind::WorkOverdue { .. }
        )
    }

    /// Events a signal to the whole process tree could cause: a process ending other than by
    /// a clean exit, the CLI's exit, a task marked or reported failed or killed (its
    /// `task_updated` or its `task_notification`).
    fn signal_could_cause(&self) -> bool {
        match self {
            EventKind::CliExited { .. } => true,
            EventKind::TrackEnded { exit, .. } | EventKind::ProcessExited { exit, .. } => {
                !exit.success()
            }
            EventKind::TaskUpdated { status, .. } | EventKind::TaskNotified { status, .. } => {
                matches!(
                    TaskStatus::parse(status),
                    TaskStatus::Failed | TaskStatus::Killed
                )
            }
            _ => false,
        }
    }
}
