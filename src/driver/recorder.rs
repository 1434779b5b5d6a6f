//! The run's recorder: every event in arrival order, the raw lines behind them, and the live
//! counters the schedule and the end condition read. It owns the normalizer, so each source
//! (fake API, helper messages, stdout lines) goes through one method.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use tokio::time::Instant;

use crate::evidence::clock::RunClock;
use crate::evidence::normalize::Normalizer;
use crate::evidence::runtime::{Origin, RuntimeEvidence};
use crate::evidence::wire::WireMessage;
use crate::evidence::{Event, EventKind, ExitDesc, HookName, Source, TaskStatus};
use crate::scenario::{MAIN_AGENT, Trigger};

/// Counters the schedule and the end condition read.
#[derive(Debug)]
pub struct Live {
    pub last_activity: Instant,
    running_tasks: HashSet<String>,
    /// Subagents in a turn, by the hooks' agent id: SubagentStart until SubagentStop,
    /// TeammateIdle, a TaskStop naming it, or its task's end. In pty mode the hooks are all
    /// that says a background agent still works.
    running_agents: HashSet<String>,
    running_tracks: HashSet<u32>,
    /// Tracked command -> its tracker's pid, while it runs.
    pub track_pids: HashMap<String, u32>,
    ended_tracks: HashSet<String>,
    started_tracks: HashSet<String>,
    /// Scenario label (agent or tracked command) -> the CLI's latest task id for it.
    pub task_ids: HashMap<String, String>,
    /// Scenario label -> when its work started (the first task or process for it), on the run
    /// clock (ms), as its event says: a source read late does not move it.
    pub work_started_ms: HashMap<String, f64>,
    awaiting_turn: bool,
    results: usize,
    turn_ends: HashMap<String, usize>,
    pub requests: usize,
    pub hooks: usize,
    pub cli_exit: Option<(ExitDesc, f64)>,
    /// The integration's exit (driver mode `command`).
    pub integration_exit: Option<(ExitDesc, f64)>,
    /// The exit of the supervisor's child: the CLI, or the integration that runs it. The run
    /// is over when it exits.
    supervised_exit: Option<(ExitDesc, f64)>,
    /// The supervisor's child is an integration under test, not the CLI.
    supervises_integration: bool,
    /// A signal from outside that stopped the supervisor (its number, its time in ns).
    pub supervisor_stopped: Option<(i32, u64)>,
    /// The script called a tool this CLI does not offer: the run cannot go on as written.
    pub tool_unavailable: Option<String>,
}

impl Live {
    fn new() -> Live {
        Live {
            last_activity: Instant::now(),
            running_tasks: HashSet::new(),
            running_agents: HashSet::new(),
            running_tracks: HashSet::new(),
            track_pids: HashMap::new(),
            ended_tracks: HashSet::new(),
            started_tracks: HashSet::new(),
            task_ids: HashMap::new(),
            work_started_ms: HashMap::new(),
            awaiting_turn: false,
            tool_unavailable: None,
            results: 0,
            turn_ends: HashMap::new(),
            requests: 0,
            hooks: 0,
            cli_exit: None,
            integration_exit: None,
            supervised_exit: None,
            supervises_integration: false,
            supervisor_stopped: None,
        }
    }

    fn observe(&mut self, event: &Event) {
        self.last_activity = Instant::now();
        match &event.kind {
            EventKind::ModelRequest { .. } => self.requests += 1,
            EventKind::TaskStarted { task_id, label, .. } => {
                self.running_tasks.insert(task_id.clone());
                if let Some(label) = label {
                    self.task_ids.insert(label.clone(), task_id.clone());
                    self.work_started_ms
                        .entry(label.clone())
                        .or_insert(event.t_ms);
                }
            }
            EventKind::TaskUpdated {
                task_id, status, ..
            } if TaskStatus::parse(status).is_terminal() => {
                self.running_tasks.remove(task_id);
                self.running_agents.remove(task_id);
            }
            EventKind::TaskNotified { task_id, .. } => {
                self.running_tasks.remove(task_id);
                self.running_agents.remove(task_id);
            }
            EventKind::Hook {
                hook,
                agent_id,
                stops_task,
                ..
            } => {
                self.hooks += 1;
                self.observe_agent_hook(hook, agent_id.as_deref(), stops_task.as_deref());
            }
            EventKind::TrackStarted { pid, name } => {
                self.running_tracks.insert(*pid);
                self.track_pids.insert(name.clone(), *pid);
                self.started_tracks.insert(name.clone());
                self.work_started_ms
                    .entry(name.clone())
                    .or_insert(event.t_ms);
            }
            EventKind::TrackEnded { name, pid, .. } => {
                self.running_tracks.remove(pid);
                self.track_pids.remove(name);
                self.ended_tracks.insert(name.clone());
            }
            EventKind::ProcessExited { pid, .. } => {
                self.running_tracks.remove(pid);
            }
            EventKind::TurnResult { .. } => {
                self.results += 1;
                self.awaiting_turn = false;
            }
            // An input opens a turn of the main agent: the session is not quiet until it ends
            // (a slow CLI start must not look like a quiet session).
            EventKind::UserInput { .. } => self.awaiting_turn = true,
            EventKind::TurnEnded { .. } => {
                if let Some(agent) = &event.agent {
                    *self.turn_ends.entry(agent.clone()).or_default() += 1;
                    if agent == MAIN_AGENT {
                        self.awaiting_turn = false;
                    }
                }
            }
            EventKind::CliExited { exit } => {
                self.cli_exit = Some((exit.clone(), event.t_ms));
                if !self.supervises_integration {
                    self.supervised_exit = Some((exit.clone(), event.t_ms));
                }
            }
            // The integration ran the CLI: its end ends the run (the CLI's may come first).
            EventKind::IntegrationExited { exit } => {
                self.supervised_exit = Some((exit.clone(), event.t_ms));
                self.integration_exit = Some((exit.clone(), event.t_ms));
            }
            // The killed CLI's turn and tasks went with it (its tracked processes live on,
            // still tracked): what is running is what the restarted CLI reports.
            EventKind::CliRestarted { .. } => {
                self.running_tasks.clear();
                self.running_agents.clear();
                self.awaiting_turn = false;
            }
            EventKind::ToolUnavailable { tool, cli } => {
                let cli = cli.as_deref().unwrap_or("this CLI");
                self.tool_unavailable
                    .get_or_insert_with(|| format!("{cli} offers no {tool} tool"));
            }
            _ => {}
        }
    }

    /// A subagent's turn starts or ends, or a TaskStop ends the agent it names.
    fn observe_agent_hook(&mut self, hook: &HookName, agent_id: Option<&str>, stops: Option<&str>) {
        if let Some(stopped) = stops {
            self.running_agents.remove(stopped);
        }
        let Some(id) = agent_id else { return };
        match hook {
            HookName::SubagentStart => {
                self.running_agents.insert(id.to_string());
            }
            HookName::SubagentStop | HookName::TeammateIdle => {
                self.running_agents.remove(id);
            }
            _ => {}
        }
    }

    /// Tasks, subagents in a turn and tracked processes still running.
    /// Whether the supervisor's child (the CLI, or the integration that runs it) has exited.
    pub fn supervised_ended(&self) -> bool {
        self.supervised_exit.is_some()
    }

    /// How and when the supervisor's child (the CLI, or the integration that runs it) exited.
    pub fn supervised_exit(&self) -> Option<&(ExitDesc, f64)> {
        self.supervised_exit.as_ref()
    }

    pub fn running(&self) -> usize {
        self.running_tasks.len() + self.running_agents.len() + self.running_tracks.len()
    }

    /// Whether work with this label (a tracked command or an agent) has ended.
    pub fn work_ended(&self, label: &str) -> bool {
        self.ended_tracks.contains(label)
            || self
                .task_ids
                .get(label)
                .is_some_and(|id| !self.running_tasks.contains(id))
    }

    /// When the session counts as quiet: no task or tracked process running, no input still
    /// waiting for the main agent's turn to end, and no activity for `window`.
    pub fn quiet_since(&self, window: Duration) -> Option<Instant> {
        (self.running() == 0 && !self.awaiting_turn).then(|| self.last_activity + window)
    }

    pub fn triggered(&self, trigger: &Trigger, settle: Duration, now: Instant) -> bool {
        match trigger {
            Trigger::Start => true,
            Trigger::Result(n) => self.results >= *n,
            Trigger::TurnEnd(agent, n) => self.turn_ends.get(agent).copied().unwrap_or(0) >= *n,
            Trigger::TaskStart(name) => self.started_tracks.contains(name),
            Trigger::TaskEnd(name) => self.ended_tracks.contains(name),
            Trigger::Quiet => self.quiet_since(settle).is_some_and(|at| now >= at),
        }
    }
}

/// Every event of the run so far, with the raw evidence behind them.
pub struct Recorder {
    clock: RunClock,
    pub events: Vec<Event>,
    pub live: Live,
    pub normalizer: Normalizer,
    /// stdout lines as they came, for `stream.jsonl`.
    pub stream_raw: Vec<(f64, String)>,
    /// Hook payloads as they came, for `hooks.jsonl`.
    pub hooks_raw: Vec<(f64, String)>,
    /// Lines between an integration and its CLI (mode `command`), for `cli-stream.jsonl`.
    pub cli_lines_raw: Vec<(f64, bool, String)>,
    /// Whose lines stdout carries: the CLI's (`Stream`) or an SDK host's (`Sdk`).
    stdout_source: Source,
    /// The reader of a runtime's own evidence (a runtime other than Claude Code), which then
    /// reads its stdout too.
    runtime: Option<Box<dyn RuntimeEvidence>>,
}

impl Recorder {
    pub fn new(clock: RunClock) -> Recorder {
        Recorder {
            clock,
            events: Vec::new(),
            live: Live::new(),
            normalizer: Normalizer::new(clock),
            stream_raw: Vec::new(),
            hooks_raw: Vec::new(),
            cli_lines_raw: Vec::new(),
            stdout_source: Source::Stream,
            runtime: None,
        }
    }

    /// A recorder whose runtime reads its own evidence with `reader`.
    pub fn with_runtime(mut self, reader: Option<Box<dyn RuntimeEvidence>>) -> Recorder {
        self.runtime = reader;
        self
    }

    /// One line of the runtime's own evidence.
    pub fn runtime_line(&mut self, t_ms: f64, origin: Origin, line: &str) {
        let Some(reader) = self.runtime.as_mut() else {
            return;
        };
        for event in reader.line(t_ms, origin, line) {
            self.push(event);
        }
    }

    /// The version the CLI reported of itself (its `init` line, or the runtime's own word).
    pub fn cli_version_reported(&self) -> Option<String> {
        match &self.runtime {
            Some(reader) => reader.version(),
            None => self.normalizer.cli_version.clone(),
        }
    }

    /// A recorder whose stdout lines come from `source` (an SDK host's: `Source::Sdk`; an
    /// integration's: `Source::Integration`, whose own exit is then apart from the CLI's).
    pub fn reading_stdout_as(mut self, source: Source) -> Recorder {
        self.stdout_source = source;
        self.normalizer.supervises_integration = source == Source::Integration;
        self.live.supervises_integration = source == Source::Integration;
        self
    }

    pub fn push(&mut self, event: Event) {
        self.live.observe(&event);
        self.events.push(event);
    }

    /// An event of the driver's own, stamped now.
    pub fn driver(&mut self, kind: EventKind, agent: Option<&str>) {
        let event = Event {
            t_ms: self.clock.now_ms(),
            source: Source::Driver,
            agent: agent.map(str::to_string),
            kind,
        };
        self.push(event);
    }

    /// A fault the driver injected itself (a process fault), at `t_ms`: taken before the
    /// signal is sent, so the fault comes before what it caused on the one clock.
    pub fn fault(&mut self, t_ms: f64, kind: EventKind) {
        let event = Event {
            t_ms,
            source: Source::Fault,
            agent: None,
            kind,
        };
        self.push(event);
    }

    /// An event from the fake API (already normalized; the normalizer learns its links).
    pub fn api(&mut self, event: Event) {
        self.normalizer.learn_api(&event);
        if let Some(reader) = self.runtime.as_mut() {
            reader.learn_api(&event);
        }
        self.push(event);
    }

    /// A helper process's message; a hook's raw payload is kept for `hooks.jsonl`.
    pub fn wire(&mut self, message: WireMessage) {
        match &message {
            WireMessage::Hook { t_ns, payload } => {
                self.hooks_raw
                    .push((self.clock.ms_at(*t_ns), payload.clone()));
            }
            WireMessage::SupervisorStopped { t_ns, signal } => {
                self.live.supervisor_stopped.get_or_insert((*signal, *t_ns));
            }
            WireMessage::CliLine { t_ns, to_cli, line } => {
                self.cli_lines_raw
                    .push((self.clock.ms_at(*t_ns), *to_cli, line.clone()));
            }
            _ => {}
        }
        for event in self.normalizer.wire(message) {
            self.push(event);
        }
    }

    /// The run is over: what the normalizer still held back is recorded (an answer whose
    /// request never came).
    pub fn finish(&mut self) {
        for event in self.normalizer.finish() {
            self.push(event);
        }
    }

    /// A stdout line; the raw line is kept for `stream.jsonl` (and the payload of an SDK
    /// hook callback for `hooks.jsonl`, where checks' `payload.` paths read it).
    pub fn line(&mut self, t_ms: f64, line: String) {
        if self.stdout_source == Source::Sdk
            && let Some(payload) = sdk_hook_payload(&line)
        {
            self.hooks_raw.push((t_ms, payload));
        }
        let events = match self.runtime.as_mut() {
            Some(reader) => reader.line(t_ms, Origin::Stdout, &line),
            None => self.normalizer.stream_line(t_ms, &line, self.stdout_source),
        };
        for event in events {
            self.push(event);
        }
        self.stream_raw.push((t_ms, line));
    }

    pub fn now_ms(&self) -> f64 {
        self.clock.now_ms()
    }

    /// A monotonic reading on the run's clock.
    pub fn ms_at(&self, ns: u64) -> f64 {
        self.clock.ms_at(ns)
    }

    /// Whether the CLI made any model request: its first step of the scenario.
    pub fn cli_reached_the_api(&self) -> bool {
        self.live.requests > 0
    }
}

/// The payload of an SDK host's `hook` line, as text.
fn sdk_hook_payload(line: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    (v["type"] == "wakeprobe_sdk" && v["event"] == "hook").then(|| v["payload"].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(hook: HookName, agent_id: Option<&str>, stops_task: Option<&str>) -> Event {
        let mut kind = EventKind::hook(hook, 0, agent_id);
        if let EventKind::Hook { stops_task: s, .. } = &mut kind {
            *s = stops_task.map(str::to_string);
        }
        Event {
            t_ms: 0.0,
            source: Source::Hook,
            agent: None,
            kind,
        }
    }

    fn quiet(live: &Live) -> bool {
        live.quiet_since(Duration::ZERO).is_some()
    }

    /// In pty mode no stream says a background agent runs: its hooks must, or the driver
    /// closes the session under it (2.1.332 then asks whether to stop it, and the run ends at
    /// its ceiling).
    #[test]
    fn a_subagent_in_its_turn_keeps_the_session_from_being_quiet() {
        for end in [
            hook(HookName::SubagentStop, Some("a1"), None),
            hook(HookName::TeammateIdle, Some("a1"), None),
            hook(HookName::PostToolUse, None, Some("a1")),
        ] {
            let mut live = Live::new();
            live.observe(&hook(HookName::SubagentStart, Some("a1"), None));
            assert!(!quiet(&live));
            live.observe(&hook(HookName::PostToolUse, Some("a1"), None));
            assert!(!quiet(&live), "a tool call is not the agent's end");
            live.observe(&end);
            assert!(quiet(&live), "{end:?}");
        }
    }
}
