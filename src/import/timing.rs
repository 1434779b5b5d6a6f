//! When the user's later inputs came, and when a run was cut short, relative to what a
//! scenario can name: each input waits for the latest nameable moment before it (an agent's
//! Nth turn end, a tracked command's start or end, else the session's start) and then its
//! delay. An interrupt placeholder in a transcript becomes the control request that causes
//! one: `interrupt` for the main agent, `stop_task` for a subagent (unless a model stopped it
//! with `TaskStop`).

use serde_json::Value;

use super::context::Context;
use super::model::{DraftAction, DraftInput};
use super::records::{Entry, Ms};

/// How much later than an input another agent's turn end may be recorded and still be what
/// the input reacted to.
const REACTION_MS: Ms = 250;

/// A moment a trigger can name.
#[derive(Debug, Clone)]
struct Moment {
    at: Ms,
    trigger: String,
    /// The main agent's Nth turn end.
    main_turn: Option<usize>,
    /// For a turn end: when that turn's first reply came (an input cannot be a reaction to
    /// a turn that had not begun by then).
    began: Option<Ms>,
}

/// The moments a trigger can name, in time order.
#[derive(Debug, Default)]
pub struct Clock {
    /// The first record's time: the session's start.
    pub start: Ms,
    /// The last record's time.
    pub end: Ms,
    moments: Vec<Moment>,
}

impl Clock {
    pub fn of(cx: &Context) -> Clock {
        let mut clock = Clock {
            start: u64::MAX,
            end: 0,
            moments: Vec::new(),
        };
        for (a, agent) in cx.agents.iter().enumerate() {
            let mut turn_ends = 0;
            let mut began: Option<Ms> = None;
            for entry in &agent.conv.entries {
                if let Some(at) = entry_time(entry) {
                    clock.start = clock.start.min(at);
                    clock.end = clock.end.max(at);
                }
                let Entry::Reply(r) = entry else { continue };
                began = began.or(r.at);
                if r.ends_turn() {
                    turn_ends += 1;
                    let name = &agent.name;
                    let trigger = match turn_ends {
                        1 => format!("turn-end:{name}"),
                        n => format!("turn-end:{name}#{n}"),
                    };
                    clock.push_turn_end(r.at, trigger, (a == 0).then_some(turn_ends), began);
                    began = None;
                }
                for call in &r.calls {
                    if let Some(track) = cx.tracks.get(&call.id) {
                        clock.push(r.at, format!("task-start:{track}"), None);
                        clock.push(task_end(cx, &call.id), format!("task-end:{track}"), None);
                    }
                }
            }
        }
        if clock.start == u64::MAX {
            clock.start = 0;
        }
        clock.moments.sort_by_key(|m| m.at);
        clock
    }

    fn push(&mut self, at: Option<Ms>, trigger: String, main_turn: Option<usize>) {
        self.push_turn_end(at, trigger, main_turn, None);
    }

    fn push_turn_end(
        &mut self,
        at: Option<Ms>,
        trigger: String,
        main_turn: Option<usize>,
        began: Option<Ms>,
    ) {
        if let Some(at) = at {
            self.moments.push(Moment {
                at,
                trigger,
                main_turn,
                began,
            });
        }
    }

    /// What an input at `at` waits for, and the seconds after it. `main_turns` is how many
    /// turns the main agent had ended before the input in its transcript: those and no
    /// later ones can be waited for, whatever their records' times (a record is written once
    /// the answer has streamed in, a moment after the harness or a quick user reacted to it).
    /// Another agent's turn end recorded just after the input wins for the same reason.
    pub fn anchor(&self, at: Ms, main_turns: usize) -> (String, f64) {
        let reacted_to = self.moments.iter().find(|m| {
            m.at > at
                && m.at <= at + REACTION_MS
                && m.main_turn.is_none()
                && m.trigger.starts_with("turn-end:")
                && m.began.is_none_or(|b| b <= at)
        });
        if let Some(m) = reacted_to {
            return (m.trigger.clone(), 0.0);
        }
        let waitable = |m: &&Moment| match m.main_turn {
            Some(n) => n <= main_turns && (m.at <= at || n == main_turns),
            None => m.at <= at,
        };
        match self.moments.iter().filter(waitable).max_by_key(|m| m.at) {
            Some(m) => (m.trigger.clone(), at.saturating_sub(m.at) as f64 / 1000.0),
            None => (
                "start".into(),
                at.saturating_sub(self.start) as f64 / 1000.0,
            ),
        }
    }

    /// How many turns the main agent had ended by `at`.
    pub fn main_turns_before(&self, at: Ms) -> usize {
        self.moments
            .iter()
            .filter(|m| m.main_turn.is_some() && m.at <= at)
            .count()
    }

    /// Seconds from the first record to the last.
    pub fn span_seconds(&self) -> f64 {
        self.end.saturating_sub(self.start) as f64 / 1000.0
    }
}

fn entry_time(e: &Entry) -> Option<Ms> {
    match e {
        Entry::Input { at, .. }
        | Entry::ToolResult { at, .. }
        | Entry::Notification { at, .. }
        | Entry::Interrupt { at, .. }
        | Entry::HookFeedback { at, .. } => *at,
        Entry::Reply(r) => r.at,
    }
}

/// When a tracked command ended: its tool result (foreground), or the first sign of its
/// notification (background).
fn task_end(cx: &Context, tool_use_id: &str) -> Option<Ms> {
    let outcome = cx.outcomes.get(tool_use_id);
    match outcome.and_then(|o| o.task_id.as_ref()) {
        Some(task) => cx
            .agents
            .iter()
            .flat_map(|a| &a.conv.entries)
            .filter_map(|e| match e {
                Entry::Notification {
                    at,
                    task_id: Some(t),
                    ..
                } if t == task => *at,
                _ => None,
            })
            .min(),
        None => cx
            .agents
            .iter()
            .flat_map(|a| &a.conv.entries)
            .find_map(|e| match e {
                Entry::ToolResult {
                    at,
                    tool_use_id: id,
                    ..
                } if id == tool_use_id => *at,
                _ => None,
            }),
    }
}

/// The main agent's inputs after its prompt, and the control requests the interrupts imply,
/// in time order.
pub fn inputs(cx: &mut Context, clock: &Clock) -> Vec<(Ms, DraftInput)> {
    let mut out: Vec<(Ms, DraftInput)> = Vec::new();
    let mut texts: Vec<(Option<Ms>, String, usize)> = Vec::new();
    let mut turns = 0;
    for e in &cx.agents[0].conv.entries {
        match e {
            Entry::Reply(r) if r.ends_turn() => turns += 1,
            Entry::Input { at, text } => texts.push((*at, text.clone(), turns)),
            _ => {}
        }
    }
    for (at, text, turns) in texts.into_iter().skip(1) {
        let at = at.unwrap_or(clock.end);
        let (after, seconds) = clock.anchor(at, turns);
        let text = cx.text(&text);
        out.push((
            at,
            DraftInput {
                after,
                delay: cx.lifter.delay(seconds),
                action: DraftAction::Text(text),
                note: None,
            },
        ));
    }
    for a in 0..cx.agents.len() {
        out.extend(controls(cx, clock, a));
    }
    out.sort_by_key(|(at, _)| *at);
    out
}

/// The control requests behind agent `a`'s interrupt placeholders.
fn controls(cx: &mut Context, clock: &Clock, a: usize) -> Vec<(Ms, DraftInput)> {
    let mut out = Vec::new();
    let mut last_call: Option<(Option<Ms>, String)> = None;
    let mut turns = 0;
    for entry in cx.agents[a].conv.entries.clone() {
        match entry {
            Entry::Reply(r) if r.ends_turn() => turns += 1,
            Entry::Reply(r) if !r.calls.is_empty() => {
                last_call = r.calls.last().map(|c| (r.at, c.id.clone()));
            }
            Entry::Interrupt { at: Some(at), .. } => {
                if a != 0 && stopped_by_a_model(cx, a) {
                    continue;
                }
                let tracked = last_call.as_ref().and_then(|(t, id)| {
                    let track = cx.tracks.get(id)?;
                    Some((
                        format!("task-start:{track}"),
                        t.and_then(|t| at.checked_sub(t))?,
                    ))
                });
                let (after, seconds) = match tracked {
                    Some((after, ms)) => (after, ms as f64 / 1000.0),
                    None if a == 0 => clock.anchor(at, turns),
                    None => clock.anchor(at, clock.main_turns_before(at)),
                };
                let (control, target, what) = if a == 0 {
                    ("interrupt", None, "the main agent's turn".to_string())
                } else {
                    let name = cx.agents[a].name.clone();
                    ("stop_task", Some(name.clone()), format!("`{name}`"))
                };
                out.push((
                    at,
                    DraftInput {
                        after,
                        delay: cx.lifter.delay(seconds),
                        action: DraftAction::Control { control, target },
                        note: Some(format!(
                            "the transcript of {what} ends a call on the interrupt placeholder: replayed as the `{control}` control request"
                        )),
                    },
                ));
            }
            _ => {}
        }
    }
    out
}

/// Whether some agent's `TaskStop` call named subagent `a`.
fn stopped_by_a_model(cx: &Context, a: usize) -> bool {
    let Some(id) = cx.agents[a].id.as_deref() else {
        return false;
    };
    cx.agents
        .iter()
        .flat_map(|agent| &agent.conv.entries)
        .filter_map(|e| match e {
            Entry::Reply(r) => Some(&r.calls),
            _ => None,
        })
        .flatten()
        .any(|c| c.tool == "TaskStop" && contains_str(&c.input, id))
}

fn contains_str(v: &Value, needle: &str) -> bool {
    match v {
        Value::String(s) => s.contains(needle),
        Value::Array(items) => items.iter().any(|i| contains_str(i, needle)),
        Value::Object(map) => map.values().any(|i| contains_str(i, needle)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn_end(at: Ms, trigger: &str, main_turn: Option<usize>, began: Ms) -> Moment {
        Moment {
            at,
            trigger: trigger.into(),
            main_turn,
            began: Some(began),
        }
    }

    #[test]
    fn an_input_reacts_only_to_a_turn_that_had_begun_before_it() {
        let main = turn_end(1_000, "turn-end:main", Some(1), 500);
        // The watcher's turn began after the input (the input caused it): not its trigger.
        let caused = Clock {
            start: 0,
            end: 10_000,
            moments: vec![
                main.clone(),
                turn_end(5_100, "turn-end:watcher#2", None, 5_050),
            ],
        };
        assert_eq!(caused.anchor(5_000, 1), ("turn-end:main".to_string(), 4.0));
        // A turn already under way, recorded a moment after the input: what it reacted to.
        let reacted = Clock {
            start: 0,
            end: 10_000,
            moments: vec![main, turn_end(5_100, "turn-end:watcher#2", None, 4_000)],
        };
        assert_eq!(
            reacted.anchor(5_000, 1),
            ("turn-end:watcher#2".to_string(), 0.0)
        );
    }
}
