//! Turning raw evidence (stream-json lines, hook payloads, wire messages) into `Event`s.
//!
//! The normalizer is fed in arrival order and keeps the links that let later events name their
//! agent and task: the fake API's tool calls (tool_use id -> calling agent and the scenario's
//! spawn/track label), the CLI's `task_started` lines (task id -> tool_use id), and agent ids
//! (the CLI's id for a subagent -> the scenario's agent name). Every field is read leniently:
//! versions add and drop fields, and a missing one must never end a run.

use crate::evidence::HookName;
use std::collections::HashMap;

use serde_json::Value;

use super::clock::RunClock;
use super::wire::WireMessage;
use super::{BackgroundTask, Event, EventKind, Source};
use crate::scenario::MAIN_AGENT;

#[derive(Debug, Clone, Default)]
struct ToolUse {
    agent: Option<String>,
    label: Option<String>,
    spawn: Option<String>,
}

#[derive(Debug, Clone, Default)]
struct Task {
    owner: Option<String>,
    label: Option<String>,
}

/// Stateful converter from raw evidence to events, one per run.
#[derive(Debug)]
pub struct Normalizer {
    clock: RunClock,
    tool_uses: HashMap<String, ToolUse>,
    tasks: HashMap<String, Task>,
    agent_ids: HashMap<String, String>,
    track_owner: HashMap<String, String>,
    /// Teammate name (the Agent call's `name`) -> scenario agent.
    teammates: HashMap<String, String>,
    hooks_seen: usize,
    /// The CLI's permission requests to an integration: request id -> (tool, asking agent).
    permission_requests: HashMap<String, (String, Option<String>)>,
    /// The ids of every control request the CLI sent, permission or not.
    requests_read: std::collections::HashSet<String>,
    /// An integration's answers read before the request they answer (the two pipes are read
    /// apart): request id -> (when it was written, the line), judged once the request is read.
    early_answers: HashMap<String, (f64, String)>,
    /// The CLI version the `init` line reported.
    pub cli_version: Option<String>,
    /// The supervisor's child is an integration under test (driver mode `command`), which
    /// runs the CLI under the tap: its end is the integration's, the tap reports the CLI's.
    pub supervises_integration: bool,
}

impl Normalizer {
    pub fn new(clock: RunClock) -> Normalizer {
        Normalizer {
            clock,
            tool_uses: HashMap::new(),
            tasks: HashMap::new(),
            agent_ids: HashMap::new(),
            track_owner: HashMap::new(),
            teammates: HashMap::new(),
            hooks_seen: 0,
            permission_requests: HashMap::new(),
            requests_read: Default::default(),
            early_answers: HashMap::new(),
            cli_version: None,
            supervises_integration: false,
        }
    }

    /// Learns from the fake API's own events (they are already normalized).
    pub fn learn_api(&mut self, event: &Event) {
        if let EventKind::ToolCall {
            tool_use_id,
            spawn,
            track,
            teammate,
            ..
        } = &event.kind
        {
            if let (Some(name), Some(agent)) = (teammate, spawn) {
                self.teammates.insert(name.clone(), agent.clone());
            }
            if let Some(track) = track
                && let Some(agent) = &event.agent
            {
                self.track_owner.insert(track.clone(), agent.clone());
            }
            self.tool_uses.insert(
                tool_use_id.clone(),
                ToolUse {
                    agent: event.agent.clone(),
                    label: spawn.clone().or_else(|| track.clone()),
                    spawn: spawn.clone(),
                },
            );
        }
    }

    fn event(&self, t_ms: f64, source: Source, agent: Option<String>, kind: EventKind) -> Event {
        Event {
            t_ms,
            source,
            agent,
            kind,
        }
    }

    /// One line of the CLI's stdout (`Source::Stream`), or of an SDK host's
    /// (`Source::Sdk`: the SDK's messages have the CLI's shapes).
    pub fn stream_line(&mut self, t_ms: f64, line: &str, source: Source) -> Vec<Event> {
        if source == Source::Integration {
            let kind = super::integration::event_of(line);
            return vec![self.event(t_ms, source, None, kind)];
        }
        match serde_json::from_str::<Value>(line) {
            Ok(v) => self.stream_value(t_ms, &v, source),
            Err(_) => vec![self.event(
                t_ms,
                source,
                None,
                EventKind::StreamLine {
                    line_type: "non-json".into(),
                    subtype: None,
                },
            )],
        }
    }

    /// One stdout line, parsed.
    fn stream_value(&mut self, t_ms: f64, v: &Value, source: Source) -> Vec<Event> {
        let line_type = str_field(v, "type").unwrap_or_else(|| "unknown".into());
        let subtype = str_field(v, "subtype");
        let kind = match (line_type.as_str(), subtype.as_deref()) {
            ("system", Some("init")) => {
                self.cli_version = str_field(v, "claude_code_version");
                None
            }
            ("system", Some("task_started")) => self.task_started(v),
            ("system", Some("task_updated")) => {
                let task_id = str_field(v, "task_id");
                let status = v
                    .get("patch")
                    .and_then(|p| str_field(p, "status"))
                    .or_else(|| str_field(v, "status"));
                match (task_id, status) {
                    (Some(task_id), Some(status)) => {
                        let task = self.tasks.get(&task_id).cloned().unwrap_or_default();
                        return vec![self.event(
                            t_ms,
                            source,
                            task.owner,
                            EventKind::TaskUpdated {
                                task_id,
                                status,
                                label: task.label,
                            },
                        )];
                    }
                    _ => None,
                }
            }
            ("system", Some("task_notification")) => str_field(v, "task_id").map(|task_id| {
                let task = self.tasks.get(&task_id).cloned().unwrap_or_default();
                EventKind::TaskNotified {
                    task_id,
                    status: str_field(v, "status").unwrap_or_else(|| "unknown".into()),
                    label: task.label,
                    summary: str_field(v, "summary").map(|s| truncate(&s, 200)),
                }
            }),
            ("control_request", _) => self.permission_request(v),
            ("control_response", _) => {
                let response = v.get("response").cloned().unwrap_or_default();
                Some(EventKind::ControlResponse {
                    subtype: str_field(&response, "subtype").unwrap_or_else(|| "unknown".into()),
                    error: str_field(&response, "error"),
                })
            }
            ("result", _) => Some(EventKind::TurnResult {
                subtype: subtype.clone().unwrap_or_else(|| "unknown".into()),
                num_turns: v.get("num_turns").and_then(Value::as_u64),
                is_error: v.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                origin: v.get("origin").and_then(|o| str_field(o, "kind")),
            }),
            ("wakeprobe_sdk", _) => return self.sdk_host_line(t_ms, v),
            _ => None,
        };
        let agent = match &kind {
            Some(EventKind::TaskStarted { task_id, .. })
            | Some(EventKind::TaskNotified { task_id, .. }) => {
                self.tasks.get(task_id).and_then(|t| t.owner.clone())
            }
            Some(EventKind::TurnResult { .. }) => Some(MAIN_AGENT.to_string()),
            Some(EventKind::PermissionAsked { request_id, .. }) => request_id
                .as_ref()
                .and_then(|id| self.permission_requests.get(id))
                .and_then(|(_, agent)| agent.clone()),
            _ => None,
        };
        let kind = kind.unwrap_or(EventKind::StreamLine { line_type, subtype });
        vec![self.event(t_ms, source, agent, kind)]
    }

    /// A line of the SDK host's own: a hook callback fired (an event like a recorder hook's,
    /// from the SDK), `canUseTool` was asked, or the host said something else (kept by shape).
    fn sdk_host_line(&mut self, t_ms: f64, v: &Value) -> Vec<Event> {
        match str_field(v, "event").as_deref() {
            Some("hook") => {
                let payload = v.get("payload").cloned().unwrap_or(Value::Null);
                let mut events = self.hook(t_ms, &payload.to_string());
                for e in &mut events {
                    e.source = Source::Sdk;
                }
                events
            }
            Some("can_use_tool") => {
                let agent_id = str_field(v, "agent_id");
                let agent = match &agent_id {
                    Some(id) => self.agent_ids.get(id).cloned(),
                    None => Some(MAIN_AGENT.to_string()),
                };
                vec![self.event(
                    t_ms,
                    Source::Sdk,
                    agent,
                    EventKind::PermissionAsked {
                        tool: str_field(v, "tool_name").unwrap_or_else(|| "unknown".into()),
                        tool_use_id: str_field(v, "tool_use_id"),
                        agent_id,
                        answer: Some(str_field(v, "answer").unwrap_or_else(|| "allow".into())),
                        request_id: None,
                    },
                )]
            }
            other => vec![self.event(
                t_ms,
                Source::Sdk,
                None,
                EventKind::StreamLine {
                    line_type: "wakeprobe_sdk".into(),
                    subtype: other.map(str::to_string),
                },
            )],
        }
    }

    /// The CLI's `can_use_tool` control request to the program driving it: a permission
    /// asked (other control requests stay stream lines).
    fn permission_request(&mut self, v: &Value) -> Option<EventKind> {
        self.requests_read.extend(str_field(v, "request_id"));
        let request = v.get("request")?;
        if str_field(request, "subtype").as_deref() != Some("can_use_tool") {
            return None;
        }
        let tool = str_field(request, "tool_name").unwrap_or_else(|| "unknown".into());
        let agent_id = str_field(request, "agent_id");
        let agent = match &agent_id {
            Some(id) => self.agent_ids.get(id).cloned(),
            None => Some(MAIN_AGENT.to_string()),
        };
        let request_id = str_field(v, "request_id");
        if let Some(id) = &request_id {
            self.permission_requests
                .insert(id.clone(), (tool.clone(), agent));
        }
        Some(EventKind::PermissionAsked {
            tool,
            tool_use_id: str_field(request, "tool_use_id"),
            agent_id,
            answer: None,
            request_id,
        })
    }

    /// One line between an integration and its CLI, as the CLI tap passed it on: the CLI's
    /// stdout is read as the `stream` source (a main-agent `assistant` line is the main
    /// agent's, so a turn's start can be told); what the integration wrote to the CLI is a
    /// permission answer or a `to_cli` line.
    fn cli_line(&mut self, t_ms: f64, to_cli: bool, line: &str) -> Vec<Event> {
        let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        if !to_cli {
            if v.is_null() {
                return self.stream_line(t_ms, line, Source::Stream);
            }
            let main_assistant =
                v["type"] == "assistant" && v.get("parent_tool_use_id").is_none_or(Value::is_null);
            let mut events = self.stream_value(t_ms, &v, Source::Stream);
            if main_assistant {
                for e in &mut events {
                    e.agent.get_or_insert_with(|| MAIN_AGENT.to_string());
                }
            }
            events.extend(self.answers_now_known(&events));
            return events;
        }
        if let Some(id) = self.early_answer(&v) {
            self.early_answers.insert(id, (t_ms, line.to_string()));
            return vec![];
        }
        self.line_to_cli(t_ms, &v)
    }

    /// The request id of an answer to a permission request not read yet.
    fn early_answer(&self, v: &Value) -> Option<String> {
        if str_field(v, "type").as_deref() != Some("control_response") {
            return None;
        }
        let id = v.get("response").and_then(|r| str_field(r, "request_id"))?;
        (!self.requests_read.contains(&id)).then_some(id)
    }

    /// The early answers to the permission requests among `events`, now that they are read.
    fn answers_now_known(&mut self, events: &[Event]) -> Vec<Event> {
        let asked: Vec<String> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::PermissionAsked {
                    request_id: Some(id),
                    ..
                } => Some(id.clone()),
                _ => None,
            })
            .collect();
        let early: Vec<(f64, String)> = asked
            .iter()
            .filter_map(|id| self.early_answers.remove(id))
            .collect();
        early
            .into_iter()
            .flat_map(|(t, line)| self.cli_line(t, true, &line))
            .collect()
    }

    /// What is left when the run ends: answers whose request was never read, each kept as a
    /// line the integration wrote to the CLI.
    pub fn finish(&mut self) -> Vec<Event> {
        let mut early: Vec<(f64, String)> = self.early_answers.drain().map(|(_, a)| a).collect();
        early.sort_by(|a, b| a.0.total_cmp(&b.0));
        early
            .into_iter()
            .flat_map(|(t, line)| {
                let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                self.line_to_cli(t, &v)
            })
            .collect()
    }

    /// A line the integration wrote to the CLI: an answer to a permission request, or another
    /// line (a prompt, a control request).
    fn line_to_cli(&mut self, t_ms: f64, v: &Value) -> Vec<Event> {
        let line_type = str_field(v, "type").unwrap_or_else(|| "non-json".into());
        let response = v.get("response").unwrap_or(&Value::Null);
        let answered = str_field(response, "request_id")
            .and_then(|id| Some((self.permission_requests.get(&id)?.clone(), id)));
        let (agent, kind) = match (line_type.as_str(), answered) {
            ("control_response", Some(((tool, agent), request_id))) => {
                let answer = response
                    .get("response")
                    .and_then(|r| str_field(r, "behavior"))
                    .or_else(|| str_field(response, "subtype").filter(|s| s == "error"))
                    .unwrap_or_else(|| "unknown".into());
                (
                    agent,
                    EventKind::PermissionAnswered {
                        request_id,
                        tool,
                        answer,
                    },
                )
            }
            _ => (
                (line_type == "user").then(|| MAIN_AGENT.to_string()),
                EventKind::ToCli {
                    subtype: str_field(v, "subtype")
                        .or_else(|| v.get("request").and_then(|r| str_field(r, "subtype"))),
                    line_type,
                },
            ),
        };
        vec![self.event(t_ms, Source::Stream, agent, kind)]
    }

    fn task_started(&mut self, v: &Value) -> Option<EventKind> {
        let task_id = str_field(v, "task_id")?;
        let tool_use_id = str_field(v, "tool_use_id");
        let tool_use = tool_use_id
            .as_ref()
            .and_then(|id| self.tool_uses.get(id))
            .cloned()
            .unwrap_or_default();
        let task = self.link_task(&task_id, &tool_use);
        Some(EventKind::TaskStarted {
            task_id,
            task_type: str_field(v, "task_type").unwrap_or_else(|| "unknown".into()),
            tool_use_id,
            label: task.label,
            description: str_field(v, "description").map(|d| truncate(&d, 120)),
        })
    }

    /// Records which model call started a task: its owner and scenario name, and for a
    /// spawned agent its CLI id.
    fn link_task(&mut self, task_id: &str, tool_use: &ToolUse) -> Task {
        if let Some(spawned) = &tool_use.spawn {
            // The CLI names a subagent by its task id in hook payloads (`agent_id`).
            self.agent_ids.insert(task_id.to_string(), spawned.clone());
        }
        let task = Task {
            owner: tool_use.agent.clone(),
            label: tool_use.label.clone(),
        };
        self.tasks.insert(task_id.to_string(), task.clone());
        task
    }

    /// A hook payload as the recorder received it.
    pub fn hook(&mut self, t_ms: f64, payload: &str) -> Vec<Event> {
        let raw = self.hooks_seen;
        self.hooks_seen += 1;
        let v: Value = serde_json::from_str(payload).unwrap_or(Value::Null);
        let hook =
            HookName::parse(&str_field(&v, "hook_event_name").unwrap_or_else(|| "unparsed".into()));
        let agent_id = str_field(&v, "agent_id");
        if let Some(id) = &agent_id
            && !self.agent_ids.contains_key(id)
        {
            // Teammates have no task_started line (and no stream at all in a pty): their
            // hooks name them (`agent_type` is the teammate's name); else the transcript.
            let named = str_field(&v, "agent_type")
                .or_else(|| str_field(&v, "teammate_name"))
                .and_then(|n| self.teammates.get(&n).cloned())
                .or_else(|| self.name_from_transcript(&v));
            if let Some(name) = named {
                self.agent_ids.insert(id.clone(), name);
            }
        }
        let teammate = str_field(&v, "teammate_name").and_then(|n| self.teammates.get(&n).cloned());
        let agent = match &agent_id {
            Some(id) => self.agent_ids.get(id).cloned().or(teammate),
            None if teammate.is_some() => teammate,
            // Hooks with no agent id that only the main agent can have fired.
            None if hook.is_tool()
                || matches!(hook, HookName::Stop | HookName::UserPromptSubmit) =>
            {
                Some(MAIN_AGENT.to_string())
            }
            None => None,
        };
        let background_tasks = v
            .get("background_tasks")
            .and_then(Value::as_array)
            .map(|tasks| tasks.iter().map(background_task).collect());
        let detail = match &hook {
            h if h.is_tool() => str_field(&v, "tool_name"),
            HookName::SessionEnd | HookName::SessionStart => {
                str_field(&v, "reason").or_else(|| str_field(&v, "source"))
            }
            HookName::TeammateIdle => str_field(&v, "teammate_name"),
            HookName::SubagentStart => str_field(&v, "agent_type"),
            HookName::Stop | HookName::SubagentStop => {
                str_field(&v, "last_assistant_message").map(|m| truncate(&m, 160))
            }
            _ => None,
        };
        let mut events = vec![self.event(
            t_ms,
            Source::Hook,
            agent.clone(),
            EventKind::Hook {
                hook: hook.clone(),
                raw,
                agent_id,
                background_tasks,
                stop_hook_active: v.get("stop_hook_active").and_then(Value::as_bool),
                detail,
                stops_task: stopped_task(&hook, &v),
            },
        )];
        if hook == HookName::SubagentStop {
            events.push(self.event(
                t_ms,
                Source::Hook,
                agent,
                EventKind::AgentFinalized { hook },
            ));
        }
        events
    }

    /// A subagent's transcript path names its file `agent-<id>.jsonl`; its first user line holds
    /// the harness's tag. Reading it is the fallback link when no `task_started` line gave one.
    fn name_from_transcript(&self, v: &Value) -> Option<String> {
        let path = str_field(v, "agent_transcript_path")?;
        let text = std::fs::read_to_string(path).ok()?;
        let first_user = text.lines().find(|l| l.contains("\"user\""))?;
        let start = first_user.find("[wakeprobe:agent=")? + "[wakeprobe:agent=".len();
        let end = first_user[start..].find(']')? + start;
        Some(first_user[start..end].to_string())
    }

    /// Links what was read before the event that names it, once the run is over: tasks whose
    /// `task_started` line was read before the model call that started them (see
    /// [`Self::link_late_tasks`]), and hook events whose `agent_id` was learned only after they
    /// arrived (a loaded CLI can run a SubagentStart hook before printing the `task_started`
    /// that links the id to the scenario's agent). The finalization recorded with a hook
    /// follows it.
    pub fn reattribute(&mut self, events: &mut [Event]) {
        self.link_late_tasks(events);
        let mut last_named: Option<(f64, String)> = None;
        for e in events.iter_mut() {
            match &e.kind {
                EventKind::Hook {
                    agent_id: Some(id), ..
                } if e.agent.is_none() => {
                    if let Some(name) = self.agent_ids.get(id) {
                        e.agent = Some(name.clone());
                        last_named = Some((e.t_ms, name.clone()));
                    }
                }
                EventKind::AgentFinalized { .. } if e.agent.is_none() => {
                    if let Some((t, name)) = &last_named
                        && *t == e.t_ms
                    {
                        e.agent = Some(name.clone());
                    }
                }
                _ => {}
            }
        }
    }

    /// Tasks that were unlinked when their `task_started` line was read, because the model
    /// call that started them had not been learned yet: on a loaded machine the harness can
    /// take the CLI's stdout line first. Each gets its owner and scenario name now, on every
    /// event of it.
    fn link_late_tasks(&mut self, events: &mut [Event]) {
        let mut linked: HashMap<String, Task> = HashMap::new();
        for e in events.iter_mut() {
            let EventKind::TaskStarted {
                task_id,
                tool_use_id: Some(tool_use_id),
                label,
                ..
            } = &mut e.kind
            else {
                continue;
            };
            let Some(tool_use) = self.tool_uses.get(tool_use_id).cloned() else {
                continue;
            };
            if self.tasks.get(task_id).is_some_and(|t| t.owner.is_some()) {
                continue; // linked as it was read
            }
            let task = self.link_task(task_id, &tool_use);
            label.clone_from(&task.label);
            e.agent.clone_from(&task.owner);
            linked.insert(task_id.clone(), task);
        }
        for e in events.iter_mut() {
            let (EventKind::TaskUpdated { task_id, label, .. }
            | EventKind::TaskNotified { task_id, label, .. }) = &mut e.kind
            else {
                continue;
            };
            if let Some(task) = linked.get(task_id.as_str()) {
                label.clone_from(&task.label);
                e.agent.clone_from(&task.owner);
            }
        }
    }

    /// The scenario's name for a CLI agent id, once learned.
    pub fn agent_name(&self, agent_id: &str) -> Option<String> {
        self.agent_ids.get(agent_id).cloned()
    }

    /// A message from a helper process.
    pub fn wire(&mut self, message: WireMessage) -> Vec<Event> {
        let t_ms = self.clock.ms_at(message.t_ns());
        match message {
            WireMessage::Hook { payload, .. } => self.hook(t_ms, &payload),
            WireMessage::TrackStart { name, pid, .. } => {
                let owner = self.track_owner.get(&name).cloned();
                vec![self.event(
                    t_ms,
                    Source::Os,
                    owner,
                    EventKind::TrackStarted { name, pid },
                )]
            }
            WireMessage::TrackEnd {
                name, pid, exit, ..
            } => {
                let owner = self.track_owner.get(&name).cloned();
                vec![self.event(
                    t_ms,
                    Source::Os,
                    owner,
                    EventKind::TrackEnded { name, pid, exit },
                )]
            }
            WireMessage::Reaped {
                pid,
                exit,
                command,
                cli,
                ..
            } => {
                let kind = if cli && self.supervises_integration {
                    EventKind::IntegrationExited { exit }
                } else if cli {
                    EventKind::CliExited { exit }
                } else {
                    EventKind::ProcessExited { pid, exit, command }
                };
                vec![self.event(t_ms, Source::Os, None, kind)]
            }
            WireMessage::CliRestarted {
                killed,
                exit,
                pid,
                error,
                ..
            } => vec![self.event(
                t_ms,
                Source::Os,
                None,
                EventKind::CliRestarted {
                    killed,
                    exit,
                    pid,
                    error,
                },
            )],
            // The driver records the interruption itself, as the run's end.
            WireMessage::SupervisorStopped { .. } => vec![],
            WireMessage::CliLine { to_cli, line, .. } => self.cli_line(t_ms, to_cli, &line),
            WireMessage::TappedCliExited { exit, .. } => {
                vec![self.event(t_ms, Source::Os, None, EventKind::CliExited { exit })]
            }
        }
    }
}

fn background_task(v: &Value) -> BackgroundTask {
    const KNOWN: &[&str] = &["id", "type", "status", "description"];
    BackgroundTask {
        id: str_field(v, "id").unwrap_or_default(),
        task_type: str_field(v, "type").unwrap_or_default(),
        status: str_field(v, "status").unwrap_or_default(),
        description: str_field(v, "description").map(|d| truncate(&d, 120)),
        other_fields: v
            .as_object()
            .map(|o| {
                o.keys()
                    .filter(|k| !KNOWN.contains(&k.as_str()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// A string field, or a number rendered as text (ids are numbers in some versions).
fn str_field(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `s` whole when it is at most `max` columns wide, else cut to at most `max` columns and
/// `…`: display width, so a wide character (CJK, most emoji) counts two and a column of cut
/// texts stays a column; a character is never split.
pub fn truncate(s: &str, max: usize) -> String {
    use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
    if s.width() <= max {
        return s.to_string();
    }
    let mut columns = 0;
    let mut cut: String = s
        .chars()
        .take_while(|c| {
            // A control character counts one, as `width()` counts it above.
            columns += c.width().unwrap_or(1);
            columns <= max
        })
        .collect();
    cut.push('…');
    cut
}

/// The task a done TaskStop call named (its PostToolUse payload's `task_id`, or `shell_id`
/// as older versions call it).
fn stopped_task(hook: &HookName, payload: &Value) -> Option<String> {
    if *hook != HookName::PostToolUse
        || str_field(payload, "tool_name").as_deref() != Some("TaskStop")
    {
        return None;
    }
    let input = payload.get("tool_input")?;
    let id = input.get("task_id").or_else(|| input.get("shell_id"))?;
    id.as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::ExitDesc;
    use proptest::prelude::*;

    /// An SDK host's own lines: a hook callback is a hook event from the SDK, `canUseTool` a
    /// permission asked with the host's answer, anything else a line kept by its event name.
    #[test]
    fn an_sdk_hosts_lines_are_its_hooks_and_its_permission_answers() {
        let mut n = normalizer_with_spawn();
        let hook = n.stream_line(
            3.0,
            r#"{"type":"wakeprobe_sdk","event":"hook","payload":{"hook_event_name":"Stop"}}"#,
            Source::Sdk,
        );
        assert!(matches!(&hook[0].kind, EventKind::Hook { hook, .. } if *hook == HookName::Stop));
        assert_eq!(hook[0].source, Source::Sdk);
        let asked = n.stream_line(
            4.0,
            r#"{"type":"wakeprobe_sdk","event":"can_use_tool","tool_name":"Bash","answer":"deny"}"#,
            Source::Sdk,
        );
        assert_eq!(
            asked[0].kind,
            EventKind::PermissionAsked {
                tool: "Bash".into(),
                tool_use_id: None,
                agent_id: None,
                answer: Some("deny".into()),
                request_id: None,
            }
        );
        assert_eq!(asked[0].agent.as_deref(), Some(MAIN_AGENT));
        let other = n.stream_line(
            5.0,
            r#"{"type":"wakeprobe_sdk","event":"ended"}"#,
            Source::Sdk,
        );
        assert_eq!(
            other[0].kind,
            EventKind::StreamLine {
                line_type: "wakeprobe_sdk".into(),
                subtype: Some("ended".into()),
            }
        );
    }

    /// The two pipes of the tap are read apart: an answer written after its request (5177.0 ms
    /// against 5176.2 ms) can be read first. It is judged once the request is read, at its own
    /// moment, never dropped; an answer whose request never came is kept as a line to the CLI.
    #[test]
    fn an_answer_read_before_its_request_is_still_its_answer() {
        let mut n = normalizer_with_spawn();
        let tap = |n: &mut Normalizer, t_ns: u64, to_cli: bool, line: &str| {
            n.wire(WireMessage::CliLine {
                t_ns,
                to_cli,
                line: line.into(),
            })
        };
        let answer = r#"{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"allow"}}}"#;
        assert_eq!(tap(&mut n, 5_177_000_000, true, answer), vec![]);
        let read = tap(
            &mut n,
            5_176_200_000,
            false,
            r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"toolu_b","input":{}}}"#,
        );
        let kinds: Vec<(f64, &EventKind)> = read.iter().map(|e| (e.t_ms, &e.kind)).collect();
        assert!(
            matches!(kinds[0].1, EventKind::PermissionAsked { .. }),
            "{kinds:?}"
        );
        assert_eq!(
            kinds[1].1,
            &EventKind::PermissionAnswered {
                request_id: "r1".into(),
                tool: "Bash".into(),
                answer: "allow".into(),
            }
        );
        assert!(kinds[1].0 > kinds[0].0, "each at its own moment: {kinds:?}");
        let orphan =
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"r9"}}"#;
        assert_eq!(tap(&mut n, 6_000_000_000, true, orphan), vec![]);
        let left = n.finish();
        assert!(
            matches!(&left[..], [e] if matches!(&e.kind, EventKind::ToCli { line_type, .. } if line_type == "control_response")),
            "{left:?}"
        );
    }

    /// One line the CLI tap passed, at 5 ms: to the CLI (the integration's) or from it.
    fn tap_line(n: &mut Normalizer, to_cli: bool, line: &str) -> Vec<Event> {
        n.wire(WireMessage::CliLine {
            t_ns: 5_000_000,
            to_cli,
            line: line.into(),
        })
    }

    /// The lines the CLI tap passed between an integration and the CLI: the CLI's own are
    /// stream events (a main-agent assistant line is the main agent's, a subagent's is not),
    /// and the integration's lines (a control request, a line that is not JSON) `to_cli`
    /// events.
    #[test]
    fn tapped_lines_are_the_stream_and_the_integrations_lines() {
        let mut n = normalizer_with_spawn();
        let tap = tap_line;
        let user = tap(
            &mut n,
            true,
            r#"{"type":"user","message":{"role":"user","content":"go"}}"#,
        );
        assert!(matches!(&user[0].kind, EventKind::ToCli { line_type, .. } if line_type == "user"));
        assert_eq!(user[0].agent.as_deref(), Some(MAIN_AGENT));
        assert_eq!(user[0].source, Source::Stream);
        let main = tap(
            &mut n,
            false,
            r#"{"type":"assistant","parent_tool_use_id":null,"message":{}}"#,
        );
        assert_eq!(main[0].agent.as_deref(), Some(MAIN_AGENT));
        let sub = tap(
            &mut n,
            false,
            r#"{"type":"assistant","parent_tool_use_id":"toolu_a","message":{}}"#,
        );
        assert_eq!(sub[0].agent, None);
        let control = tap(
            &mut n,
            true,
            r#"{"type":"control_request","request_id":"x","request":{"subtype":"interrupt"}}"#,
        );
        assert_eq!(
            control[0].kind,
            EventKind::ToCli {
                line_type: "control_request".into(),
                subtype: Some("interrupt".into()),
            }
        );
        let junk = tap(&mut n, true, "not json");
        assert!(
            matches!(&junk[0].kind, EventKind::ToCli { line_type, .. } if line_type == "non-json")
        );
        assert_eq!(junk[0].t_ms, 5.0);
    }

    /// The CLI's tapped `can_use_tool` request is a permission asked, the integration's control
    /// response to it the answer (matched by request id, an error answer included); a response
    /// to a request that asked no permission is a `to_cli` event.
    #[test]
    fn tapped_permission_requests_and_their_answers() {
        let mut n = normalizer_with_spawn();
        let tap = tap_line;
        let asked = tap(
            &mut n,
            false,
            r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Write","tool_use_id":"toolu_w","input":{}}}"#,
        );
        assert_eq!(
            asked[0].kind,
            EventKind::PermissionAsked {
                tool: "Write".into(),
                tool_use_id: Some("toolu_w".into()),
                agent_id: None,
                answer: None,
                request_id: Some("r1".into()),
            }
        );
        assert_eq!(asked[0].agent.as_deref(), Some(MAIN_AGENT));
        let other_request = tap(
            &mut n,
            false,
            r#"{"type":"control_request","request_id":"r2","request":{"subtype":"hook_callback"}}"#,
        );
        assert!(matches!(
            other_request[0].kind,
            EventKind::StreamLine { .. }
        ));
        let answer = tap(
            &mut n,
            true,
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"deny","message":"no"}}}"#,
        );
        assert_eq!(
            answer[0].kind,
            EventKind::PermissionAnswered {
                request_id: "r1".into(),
                tool: "Write".into(),
                answer: "deny".into(),
            }
        );
        // A response to a request that asked no permission, an error, a line that is not JSON.
        let unrelated = tap(
            &mut n,
            true,
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"r2"}}"#,
        );
        assert!(
            matches!(&unrelated[0].kind, EventKind::ToCli { line_type, .. } if line_type == "control_response")
        );
        tap(
            &mut n,
            false,
            r#"{"type":"control_request","request_id":"r3","request":{"subtype":"can_use_tool","tool_name":"Bash"}}"#,
        );
        let error = tap(
            &mut n,
            true,
            r#"{"type":"control_response","response":{"subtype":"error","request_id":"r3","error":"gone"}}"#,
        );
        assert!(
            matches!(&error[0].kind, EventKind::PermissionAnswered { answer, .. } if answer == "error")
        );
    }

    fn normalizer_with_spawn() -> Normalizer {
        let mut n = Normalizer::new(RunClock::with_origin(0));
        n.learn_api(&Event {
            t_ms: 1.0,
            source: Source::Api,
            agent: Some("main".into()),
            kind: EventKind::ToolCall {
                seq: 1,
                tool: "Agent".into(),
                tool_use_id: "toolu_a".into(),
                background: true,
                spawn: Some("worker".into()),
                track: None,
                teammate: None,
                target: None,
                inserted: false,
            },
        });
        n.learn_api(&Event {
            t_ms: 2.0,
            source: Source::Api,
            agent: Some("worker".into()),
            kind: EventKind::ToolCall {
                seq: 2,
                tool: "Bash".into(),
                tool_use_id: "toolu_b".into(),
                background: true,
                spawn: None,
                track: Some("bg".into()),
                teammate: None,
                target: None,
                inserted: false,
            },
        });
        n
    }

    #[test]
    fn tasks_and_hooks_are_linked_to_scenario_agents() {
        let mut n = normalizer_with_spawn();
        let e = n.stream_line(
            3.0,
            r#"{"type":"system","subtype":"task_started","task_id":"a1","task_type":"local_agent","tool_use_id":"toolu_a"}"#, Source::Stream);
        assert!(
            matches!(&e[0].kind, EventKind::TaskStarted { label: Some(l), .. } if l == "worker")
        );
        assert_eq!(e[0].agent.as_deref(), Some("main"));
        let e = n.stream_line(
            4.0,
            r#"{"type":"system","subtype":"task_started","task_id":"b1","task_type":"local_bash","tool_use_id":"toolu_b"}"#, Source::Stream);
        assert_eq!(e[0].agent.as_deref(), Some("worker"));
        let e = n.hook(
            5.0,
            r#"{"hook_event_name":"SubagentStop","agent_id":"a1","stop_hook_active":false,
                "background_tasks":[{"id":"b1","type":"shell","status":"running","command":"sleep 3"}]}"#,
        );
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].agent.as_deref(), Some("worker"));
        match &e[0].kind {
            EventKind::Hook {
                background_tasks: Some(tasks),
                ..
            } => {
                assert_eq!(tasks[0].status, "running");
                assert_eq!(tasks[0].other_fields, vec!["command"]);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(e[1].kind, EventKind::AgentFinalized { .. }));
        let e = n.stream_line(
            6.0,
            r#"{"type":"system","subtype":"task_updated","task_id":"b1","patch":{"status":"killed"}}"#, Source::Stream);
        assert!(
            matches!(&e[0].kind, EventKind::TaskUpdated { status, label: Some(l), .. } if status == "killed" && l == "bg")
        );
    }

    #[test]
    fn a_task_stop_names_the_task_it_stops() {
        let mut n = Normalizer::new(RunClock::with_origin(0));
        let stops = |e: &[Event]| match &e[0].kind {
            EventKind::Hook { stops_task, .. } => stops_task.clone(),
            other => panic!("{other:?}"),
        };
        let e = n.hook(
            1.0,
            r#"{"hook_event_name":"PostToolUse","tool_name":"TaskStop","tool_input":{"task_id":"a1"}}"#,
        );
        assert_eq!(stops(&e).as_deref(), Some("a1"));
        let e = n.hook(
            2.0,
            r#"{"hook_event_name":"PreToolUse","tool_name":"TaskStop","tool_input":{"task_id":"a1"}}"#,
        );
        assert_eq!(stops(&e), None, "asked for, not done");
        let e = n.hook(
            3.0,
            r#"{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"task_id":"a1"}}"#,
        );
        assert_eq!(stops(&e), None);
    }

    #[test]
    fn wire_messages_use_the_senders_clock() {
        let mut n = normalizer_with_spawn();
        let e = n.wire(WireMessage::TrackEnd {
            t_ns: 2_500_000,
            name: "bg".into(),
            pid: 7,
            exit: ExitDesc::Signal(15),
        });
        assert_eq!(e[0].t_ms, 2.5);
        assert_eq!(e[0].agent.as_deref(), Some("worker"));
    }

    #[test]
    fn unknown_lines_are_kept_by_shape() {
        let mut n = Normalizer::new(RunClock::with_origin(0));
        let e = n.stream_line(
            1.0,
            r#"{"type":"system","subtype":"hook_started"}"#,
            Source::Stream,
        );
        assert!(
            matches!(&e[0].kind, EventKind::StreamLine { subtype: Some(s), .. } if s == "hook_started")
        );
        let e = n.stream_line(1.0, "garbage", Source::Stream);
        assert!(
            matches!(&e[0].kind, EventKind::StreamLine { line_type, .. } if line_type == "non-json")
        );
        let e = n.stream_line(
            1.0,
            r#"{"type":"system","subtype":"init","claude_code_version":"9.9.9"}"#,
            Source::Stream,
        );
        assert_eq!(e.len(), 1);
        assert_eq!(n.cli_version.as_deref(), Some("9.9.9"));
    }

    #[test]
    fn hooks_seen_before_their_agent_is_known_are_named_afterwards() {
        let mut n = normalizer_with_spawn();
        let mut events = n.hook(1.0, r#"{"hook_event_name":"SubagentStop","agent_id":"a1"}"#);
        assert_eq!(events[0].agent, None);
        n.stream_line(
            2.0,
            r#"{"type":"system","subtype":"task_started","task_id":"a1","task_type":"local_agent","tool_use_id":"toolu_a"}"#, Source::Stream);
        n.reattribute(&mut events);
        assert_eq!(events[0].agent.as_deref(), Some("worker"));
        assert_eq!(
            events[1].agent.as_deref(),
            Some("worker"),
            "the finalization follows its hook"
        );
    }

    #[test]
    fn a_task_read_before_the_call_that_started_it_is_linked_at_the_end() {
        let mut late = Normalizer::new(RunClock::with_origin(0));
        let mut events = late.stream_line(
            3.0,
            r#"{"type":"system","subtype":"task_started","task_id":"b1","task_type":"local_bash","tool_use_id":"toolu_b"}"#, Source::Stream);
        events.extend(late.stream_line(
            9.0,
            r#"{"type":"system","subtype":"task_updated","task_id":"b1","patch":{"status":"completed"}}"#, Source::Stream));
        events.extend(late.stream_line(
            9.1,
            r#"{"type":"system","subtype":"task_notification","task_id":"b1","status":"completed"}"#, Source::Stream));
        events.extend(late.stream_line(
            9.2,
            r#"{"type":"system","subtype":"task_started","task_id":"a1","task_type":"local_agent","tool_use_id":"toolu_a"}"#, Source::Stream));
        let mut hook = late.hook(9.5, r#"{"hook_event_name":"SubagentStop","agent_id":"a1"}"#);
        events.append(&mut hook);
        // The model calls are learned only now, as a starved harness may take them.
        let learned = normalizer_with_spawn();
        late.tool_uses = learned.tool_uses;
        late.reattribute(&mut events);
        let named: Vec<(Option<&str>, Option<&str>)> = events
            .iter()
            .map(|e| {
                let label = match &e.kind {
                    EventKind::TaskStarted { label, .. }
                    | EventKind::TaskUpdated { label, .. }
                    | EventKind::TaskNotified { label, .. } => label.as_deref(),
                    _ => None,
                };
                (e.agent.as_deref(), label)
            })
            .collect();
        assert_eq!(
            named,
            vec![
                (Some("worker"), Some("bg")),
                (Some("worker"), Some("bg")),
                (Some("worker"), Some("bg")),
                (Some("main"), Some("worker")),
                (Some("worker"), None),
                (Some("worker"), None),
            ]
        );
    }

    proptest! {
        #[test]
        fn arbitrary_lines_and_payloads_never_panic(s in ".{0,200}") {
            let mut n = Normalizer::new(RunClock::with_origin(0));
            prop_assert_eq!(n.stream_line(0.0, &s, Source::Stream).len(), 1);
            prop_assert!(!n.hook(0.0, &s).is_empty());
        }
    }

    #[test]
    fn texts_are_cut_by_display_width_never_inside_a_character() {
        assert_eq!(truncate("abcdef", 4), "abcd…");
        assert_eq!(truncate("abcd", 4), "abcd");
        // Each of these is two columns wide: four columns hold two of them.
        assert_eq!(truncate("日本語です", 4), "日本…");
        assert_eq!(truncate("日本", 4), "日本");
        assert_eq!(truncate("a日本", 4), "a日…");
        assert_eq!(truncate("e\u{301}tude", 2), "e\u{301}t…");
    }
}
