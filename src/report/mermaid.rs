//! The handoffs as a Mermaid sequence diagram (GitHub renders it in the Markdown report), and a
//! strict checker for the subset of the grammar we write.
//!
//! Participants: the user (the driver), every agent in order of appearance, and every tracked
//! background command. Messages: prompts and inputs, the driver's control requests (`interrupt`,
//! `stop_task`, `send_task_message`, to their target), background spawns, delivered
//! notifications. Notes: text injected into a request (reminders, hook feedback), an agent's
//! SendMessage, turn ends, finalizations, how background work ended, the CLI's exit.

use std::collections::{BTreeMap, HashSet};

use crate::evidence::{EventKind, ExitDesc, InputReason, Route, Timeline};

fn clean(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_alphanumeric() || " .,()-:/'=+_%".contains(c) {
                c
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

struct Lanes {
    ids: BTreeMap<String, String>,
    order: Vec<(String, String)>,
}

impl Lanes {
    fn id(&mut self, name: &str, prefix: &str) -> String {
        if let Some(id) = self.ids.get(name) {
            return id.clone();
        }
        let id = format!("{prefix}{}", self.order.len());
        self.ids.insert(name.to_string(), id.clone());
        self.order.push((id.clone(), name.to_string()));
        id
    }
}

pub fn diagram(tl: &Timeline) -> String {
    let mut d = Diagram::new();
    for e in tl.iter() {
        d.event(tl, e);
    }
    d.render()
}

/// The diagram as it is drawn, event by event.
struct Diagram {
    lanes: Lanes,
    /// The driver's lane.
    user: String,
    lines: Vec<String>,
    /// Task id -> lane name (a tracked command or a spawned agent).
    task_lane: BTreeMap<String, String>,
    /// Lanes whose end has been drawn (each once).
    ended: HashSet<String>,
}

impl Diagram {
    fn new() -> Diagram {
        let mut lanes = Lanes {
            ids: BTreeMap::new(),
            order: Vec::new(),
        };
        let user = lanes.id("user", "P");
        Diagram {
            lanes,
            user,
            lines: Vec::new(),
            task_lane: BTreeMap::new(),
            ended: HashSet::new(),
        }
    }

    fn main_lane(&mut self) -> String {
        self.lanes.id(crate::scenario::MAIN_AGENT, "P")
    }

    /// A note over `lane`.
    fn note(&mut self, lane: &str, what: String) {
        let id = self.lanes.id(lane, "P");
        self.lines.push(format!("Note over {id}: {what}"));
    }

    fn event(&mut self, tl: &Timeline, e: &crate::evidence::Event) {
        let t = format!("{:.2} s", e.t_ms / 1000.0);
        let agent = e.agent.as_deref();
        match &e.kind {
            EventKind::UserInput { why, .. } => self.input(*why, &t),
            EventKind::ToolCall {
                tool,
                background,
                spawn,
                track,
                ..
            } => {
                let Some(a) = agent else { return };
                let target = spawn.as_ref().map(|s| (s, "agent"));
                let target = target.or(track.as_ref().map(|k| (k, "command")));
                let line = call_line(&mut self.lanes, (a, tool, *background), target, &t);
                self.lines.extend(line);
            }
            EventKind::ControlRequest { subtype, target } => {
                self.control(subtype, target.as_deref(), &t)
            }
            EventKind::TaskStarted {
                task_id,
                label: Some(label),
                ..
            } => {
                self.task_lane.insert(task_id.clone(), label.clone());
            }
            EventKind::TurnEnded { .. } => {
                if let Some(a) = agent {
                    self.note(a, format!("ends turn ({t})"));
                }
            }
            EventKind::AgentFinalized { hook } => {
                if let Some(a) = agent {
                    self.note(a, format!("{} finalized ({t})", clean(hook.as_str())));
                }
            }
            EventKind::TrackEnded { name, exit, .. } if self.ended.insert(name.clone()) => {
                let how = match exit {
                    ExitDesc::Code(0) => "completed".to_string(),
                    ExitDesc::Code(c) => format!("failed, exit {c}"),
                    other => format!("killed, {}", other.describe()),
                };
                self.note(name, format!("{how} ({t})"));
            }
            EventKind::TaskUpdated {
                task_id, status, ..
            } => self.task_updated(tl, task_id, status, &t),
            EventKind::ModelRequest {
                route: Route::Turn | Route::ScriptExhausted,
                notifications,
                injected,
                answer_lost,
                ..
            } => {
                let Some(a) = agent else { return };
                // A broken answer delivered nothing: its fault's note says what happened.
                let delivered = if *answer_lost {
                    &[][..]
                } else {
                    notifications.as_slice()
                };
                let request = (a, injected.as_deref(), delivered);
                let lines = request_lines(&mut self.lanes, &self.task_lane, request, &t);
                self.lines.extend(lines);
            }
            EventKind::WorkSignalled {
                work,
                fault,
                signal,
                ..
            } => self.note(
                work,
                format!("fault {} {} ({t})", clean(fault.as_str()), clean(signal)),
            ),
            EventKind::FaultInjected { fault, .. } => {
                if let Some(a) = agent {
                    let what = format!(
                        "fault {} {} ({t})",
                        clean(fault.as_str()),
                        clean(fault.effect())
                    );
                    self.note(a, what);
                }
            }
            other => self.run_notes(other, &t),
        }
    }

    fn input(&mut self, why: InputReason, t: &str) {
        let main = self.main_lane();
        let what = match why {
            InputReason::Prompt => "prompt",
            InputReason::Scheduled => "user input",
            InputReason::Probe => "probe input",
        };
        self.lines
            .push(format!("{}->>{main}: {what} ({t})", self.user));
    }

    /// The target is `name (id)`: to that participant when it is one.
    fn control(&mut self, subtype: &str, target: Option<&str>, t: &str) {
        let to = match target
            .and_then(|t| t.split_whitespace().next())
            .filter(|name| self.lanes.ids.contains_key(*name))
        {
            Some(name) => self.lanes.id(name, "P"),
            None => self.main_lane(),
        };
        self.lines.push(format!(
            "{}->>{to}: {} control request ({t})",
            self.user,
            clean(subtype)
        ));
    }

    /// A tracked command's end as the CLI reported it, once per lane.
    fn task_updated(&mut self, tl: &Timeline, task_id: &str, status: &str, t: &str) {
        let Some(label) = self.task_lane.get(task_id).cloned() else {
            return;
        };
        let is_track = !self.lanes.ids.contains_key(&label)
            || tl
                .iter()
                .any(|x| matches!(&x.kind, EventKind::TrackStarted { name, .. } if *name == label));
        if is_track && self.ended.insert(label.clone()) {
            self.note(&label, format!("{} ({t})", clean(status)));
        }
    }

    /// A crash fault's restart, and how the run ended, over the main agent.
    fn run_notes(&mut self, kind: &EventKind, t: &str) {
        if let EventKind::CliCrashed { resume, .. } = kind {
            let what = format!(
                "fault crash-cli, the CLI killed and started with {} ({t})",
                clean(&resume.join(" "))
            );
            self.note(crate::scenario::MAIN_AGENT, what);
        }
        if let Some(what) = run_end(kind) {
            self.note(crate::scenario::MAIN_AGENT, format!("{what} ({t})"));
        }
    }

    fn render(self) -> String {
        let mut out = String::from("sequenceDiagram\n");
        for (id, name) in &self.lanes.order {
            out.push_str(&format!("    participant {id} as {}\n", clean(name)));
        }
        for line in self.lines {
            out.push_str("    ");
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

/// An agent's tool call that starts work (an arrow to the work's lane) or sends a message.
fn call_line(
    lanes: &mut Lanes,
    (agent, tool, background): (&str, &str, bool),
    target: Option<(&String, &str)>,
    t: &str,
) -> Option<String> {
    let from = lanes.id(agent, "P");
    let bg = if background { " in the background" } else { "" };
    match target {
        Some((target, what)) => {
            let to = lanes.id(target, "P");
            Some(format!(
                "{from}->>{to}: starts {what} via {}{bg} ({t})",
                clean(tool)
            ))
        }
        None if tool == "SendMessage" => Some(format!(
            "Note over {from}: sends a message via SendMessage ({t})"
        )),
        None => None,
    }
}

/// A model request's injected text and the notifications it delivered.
fn request_lines(
    lanes: &mut Lanes,
    task_lane: &BTreeMap<String, String>,
    (agent, injected, notifications): (&str, Option<&str>, &[crate::evidence::Notification]),
    t: &str,
) -> Vec<String> {
    let mut lines = Vec::new();
    let to = lanes.id(agent, "P");
    if let Some(gist) = injected
        .map(crate::evidence::injected_gist)
        .filter(|g| !g.is_empty())
    {
        let gist = crate::evidence::normalize::truncate(&gist, 48);
        lines.push(format!(
            "Note over {to}: injected text: {} ({t})",
            clean(&gist)
        ));
    }
    for n in notifications {
        match task_lane.get(&n.task_id) {
            Some(label) => {
                let from = lanes.id(label, "P");
                lines.push(format!("{from}-->>{to}: notification delivered ({t})"));
            }
            None => lines.push(format!(
                "Note over {to}: notification for {} delivered ({t})",
                clean(&n.task_id)
            )),
        }
    }
    lines
}

/// How the run ended, for a note over the main agent.
fn run_end(kind: &EventKind) -> Option<String> {
    Some(match kind {
        EventKind::CliExited { exit } => format!("CLI exits, {}", clean(&exit.describe())),
        EventKind::CeilingHit { .. } => "ceiling reached".into(),
        EventKind::Interrupted { .. } => "run interrupted".into(),
        EventKind::HarnessFailed { .. } => "the harness failed".into(),
        EventKind::WorkOverdue { work, .. } => format!("{} passes its hang bound", clean(work)),
        _ => return None,
    })
}

/// Checks a diagram against the subset of Mermaid's sequence grammar we write: a header,
/// participants declared once before use, messages and notes with safe text.
pub fn check(diagram: &str) -> Result<(), String> {
    let mut lines = diagram
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    match lines.next() {
        Some((_, l)) if l.trim() == "sequenceDiagram" => {}
        other => {
            return Err(format!(
                "line 1: expected `sequenceDiagram`, got {:?}",
                other.map(|o| o.1)
            ));
        }
    }
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let text_ok = |s: &str| {
        !s.trim().is_empty()
            && !s.contains(';')
            && !s.contains('#')
            && !s.contains("-->>")
            && !s.contains("->>")
    };
    let mut declared: HashSet<String> = HashSet::new();
    for (n, raw) in lines {
        let line = raw.trim();
        let at = n + 1;
        if let Some(rest) = line.strip_prefix("participant ") {
            let (id, alias) = rest
                .split_once(" as ")
                .ok_or(format!("line {at}: participant without `as`"))?;
            if !ident(id) || alias.trim().is_empty() || !text_ok(alias) {
                return Err(format!("line {at}: bad participant `{rest}`"));
            }
            if !declared.insert(id.to_string()) {
                return Err(format!("line {at}: participant `{id}` declared twice"));
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("Note over ") {
            let (who, text) = rest
                .split_once(": ")
                .ok_or(format!("line {at}: note without `: `"))?;
            for id in who.split(',') {
                if !declared.contains(id.trim()) {
                    return Err(format!("line {at}: note over undeclared `{id}`"));
                }
            }
            if !text_ok(text) {
                return Err(format!("line {at}: bad note text `{text}`"));
            }
            continue;
        }
        let arrow = ["-->>", "->>", "--x", "-x"]
            .iter()
            .find_map(|a| line.find(a).map(|i| (i, *a)));
        let Some((i, arrow)) = arrow else {
            return Err(format!(
                "line {at}: expected a participant, a note or a message, got `{line}`"
            ));
        };
        let from = &line[..i];
        let rest = &line[i + arrow.len()..];
        let (to, text) = rest
            .split_once(": ")
            .ok_or(format!("line {at}: message without `: `"))?;
        for id in [from, to] {
            if !ident(id) || !declared.contains(id) {
                return Err(format!("line {at}: undeclared participant `{id}`"));
            }
        }
        if !text_ok(text) {
            return Err(format!("line {at}: bad message text `{text}`"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checker_rejects_what_mermaid_would() {
        assert!(
            check("sequenceDiagram\n    participant P0 as user\n    P0->>P0: hi (1 s)\n").is_ok()
        );
        assert!(check("graph TD\n").is_err());
        assert!(
            check("sequenceDiagram\n    P0->>P1: hi\n").is_err(),
            "undeclared"
        );
        assert!(
            check("sequenceDiagram\n    participant P0 as a\n    participant P0 as b\n").is_err()
        );
        assert!(check("sequenceDiagram\n    participant P0 as a\n    P0->>P0: x; y\n").is_err());
        assert!(check("sequenceDiagram\n    participant P0 as a\n    Note over P1: x\n").is_err());
        assert!(check("sequenceDiagram\n    participant P0 as a\n    whatever\n").is_err());
    }
}
