//! Who an event belongs to, decided once for every picture of a run: the swimlanes (`svg`),
//! the sequence diagram (`mermaid`) and the conformance shapes (`conform`) all read the same
//! names (a task id's label, who started it, the agents in order of their first request, the
//! tracked commands in order of their start) and the same lane for each event.

use std::collections::BTreeMap;

use crate::evidence::{Event, EventKind, Route, Timeline};
use crate::scenario::MAIN_AGENT;

/// Where an event belongs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lane {
    /// A scenario agent.
    Agent(String),
    /// A tracked background command, by its track name.
    Command(String),
    /// What the harness did: inputs, the session's end, the ceiling, signals.
    Driver,
    /// The rest: the CLI's own lines with no agent.
    Session,
}

/// The names a run's timeline teaches.
#[derive(Debug, Default)]
pub struct LaneMap {
    /// task id -> the scenario label of its work (a track or a spawned agent).
    labels: BTreeMap<String, String>,
    /// task id -> the CLI's task type (`local_bash`, `local_agent`).
    types: BTreeMap<String, String>,
    /// task id -> the agent whose tool call started it.
    owners: BTreeMap<String, String>,
    /// The agents, main first, then in order of their first request.
    pub agents: Vec<String>,
    /// Tracked commands in order of their start.
    pub commands: Vec<String>,
}

impl LaneMap {
    pub fn of(tl: &Timeline) -> LaneMap {
        let mut map = LaneMap {
            agents: vec![MAIN_AGENT.to_string()],
            ..LaneMap::default()
        };
        for e in tl.iter() {
            match &e.kind {
                EventKind::ModelRequest {
                    route: Route::Turn | Route::ScriptExhausted,
                    ..
                } => {
                    if let Some(a) = &e.agent
                        && !map.agents.contains(a)
                    {
                        map.agents.push(a.clone());
                    }
                }
                EventKind::TrackStarted { name, .. } if !map.commands.contains(name) => {
                    map.commands.push(name.clone())
                }
                EventKind::TaskStarted {
                    task_id,
                    label,
                    task_type,
                    ..
                } => {
                    if let Some(l) = label {
                        map.labels.insert(task_id.clone(), l.clone());
                    }
                    map.types.insert(task_id.clone(), task_type.clone());
                    if let Some(owner) = &e.agent {
                        map.owners.insert(task_id.clone(), owner.clone());
                    }
                }
                _ => {}
            }
        }
        map
    }

    /// The scenario label of a task id, when the run named it.
    pub fn label(&self, task_id: &str) -> Option<&str> {
        self.labels.get(task_id).map(String::as_str)
    }

    /// The agent whose tool call started a task.
    pub fn owner(&self, task_id: &str) -> Option<&str> {
        self.owners.get(task_id).map(String::as_str)
    }

    /// The tracked command a task id runs, if it is a shell task.
    fn command_of(&self, task_id: &str) -> Option<&str> {
        let is_shell = self.types.get(task_id).is_some_and(|t| t.contains("bash"));
        is_shell.then(|| self.label(task_id)).flatten()
    }

    /// The lane of an event: a tracked command's own events (and the CLI's updates of its
    /// task) in the command's lane; the harness's actions in the driver's; the rest with its
    /// agent, or the session.
    pub fn lane(&self, e: &Event) -> Lane {
        match &e.kind {
            EventKind::TrackStarted { name, .. }
            | EventKind::TrackEnded { name, .. }
            | EventKind::WorkSignalled { work: name, .. } => Lane::Command(name.clone()),
            EventKind::TaskUpdated { task_id, .. } => match self.command_of(task_id) {
                Some(command) => Lane::Command(command.to_string()),
                None => self.agent_lane(e),
            },
            EventKind::UserInput { .. }
            | EventKind::ControlRequest { .. }
            | EventKind::SessionClosed
            | EventKind::CeilingHit { .. }
            | EventKind::Interrupted { .. }
            | EventKind::HarnessFailed { .. }
            | EventKind::WorkOverdue { .. }
            | EventKind::HarnessStalled { .. } => Lane::Driver,
            EventKind::CliExited { .. } => Lane::Session,
            _ => self.agent_lane(e),
        }
    }

    fn agent_lane(&self, e: &Event) -> Lane {
        match &e.agent {
            Some(a) => Lane::Agent(a.clone()),
            None => Lane::Session,
        }
    }
}
