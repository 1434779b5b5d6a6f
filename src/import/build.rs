//! A session's transcripts -> a [`Draft`]: which agent spawned which (the Agent call's result
//! names the child's id, as does the child's `.meta.json`), the agents' names, tracked commands,
//! steps, inputs, and what the driver needs (mode, guard, environment, tools, ceiling), each
//! with a comment saying how it was inferred.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use super::context::{Agent, Context};
use super::lift::{Delay, Lifter};
use super::model::{Draft, DraftAction, DraftStep, DraftWatch};
use super::names::{Namer, is_agent_name, is_track_name};
use super::read::{Record, Session};
use super::records::{Conversation, Entry};
use super::redact::Redactor;
use super::steps::{self, strip_tag, unwrap_track};
use super::timing::{self, Clock};
use super::{Options, Stats};
use crate::scenario::{DriverMode, MAIN_AGENT};

/// How the reasons our stall guard feeds back begin
/// (sandbox-project/.claude/hooks/subagent-stall-guard.sh): the structural block, then the
/// phrase fallback.
pub(super) const GUARD_REASONS: &[&str] = &[
    "Your own background work is still running:",
    "You ended your turn expecting to be woken when background work finishes.",
];

/// The tools a scenario allows unless it says otherwise (`scenario::resolve`).
const DEFAULT_TOOLS: &[&str] = &["Bash", "Agent", "SendMessage"];

impl Context {
    /// A text as the scenario holds it: the harness's tag stripped, redacted.
    pub fn text(&self, text: &str) -> String {
        self.redactor.text(&strip_tag(text).0).text
    }
}

pub fn build(session: &Session, opts: &Options) -> (Draft, Stats) {
    let mut cx = context(session);
    let mut draft = Draft::default();
    let mut stats = Stats::default();
    for agent in &cx.agents {
        for (kind, n) in &agent.conv.unknown {
            *stats.unknown.entry(kind.clone()).or_default() += n;
        }
    }
    for a in 0..cx.agents.len() {
        let mut agent_steps = steps::steps(&mut cx, a);
        if agent_steps.is_empty() {
            agent_steps.push(DraftStep {
                say: Some(String::new()),
                notes: vec!["this agent made no model reply in the transcript".into()],
                ..DraftStep::default()
            });
        }
        stats.steps += agent_steps.len();
        draft.agents.insert(cx.agents[a].name.clone(), agent_steps);
    }
    let clock = Clock::of(&cx);
    let inputs = timing::inputs(&mut cx, &clock);
    stats.agents = cx.agents.len();
    stats.inputs = inputs.len();
    driver(
        &mut draft,
        &mut cx,
        session,
        opts,
        inputs.into_iter().map(|(_, i)| i).collect(),
    );
    ceiling(&mut draft, &cx, &clock);
    draft.params = cx
        .lifter
        .params
        .iter()
        .map(|(name, p)| {
            let what = match p.kind {
                super::lift::Kind::Background => "a sleep or timeout in a background command",
                super::lift::Kind::Foreground => "a long sleep or timeout in a command",
                super::lift::Kind::Wait => "the pause before a user input",
            };
            let uses = if p.uses > 1 {
                format!(" ({} uses)", p.uses)
            } else {
                String::new()
            };
            (
                name.clone(),
                p.param_value(),
                format!("lifted from {what}{uses}"),
            )
        })
        .collect();
    draft.watches = watches(&cx);
    describe(&mut draft, session, opts, &stats);
    draft.header.extend(cx.header.clone());
    (draft, stats)
}

/// Reads every transcript, links children to the calls that spawned them, names agents and
/// tracked commands.
fn context(session: &Session) -> Context {
    let mut files: Vec<(Option<String>, &[Record], Option<&Value>)> =
        vec![(None, &session.main.records, None)];
    for sub in &session.subagents {
        files.push((
            Some(sub.agent_id.clone()),
            &sub.file.records,
            sub.meta.as_ref(),
        ));
    }
    let mut wire = BTreeMap::new();
    let mut cwds = BTreeSet::new();
    for (_, records, _) in &files {
        super::records::wire_inputs(records, &mut wire);
        for r in records.iter().take(50) {
            if let Some(c) = r.value.get("cwd").and_then(Value::as_str) {
                cwds.insert(c.to_string());
            }
        }
    }
    let convs: Vec<ReadAgent> = files
        .iter()
        .map(|(id, records, meta)| ReadAgent {
            id: id.clone(),
            conv: Conversation::read(records),
            meta: *meta,
        })
        .collect();
    let mut outcomes = HashMap::new();
    for read in &convs {
        for e in &read.conv.entries {
            if let Entry::ToolResult {
                tool_use_id,
                outcome,
                ..
            } = e
            {
                outcomes.insert(tool_use_id.clone(), outcome.clone());
            }
        }
    }
    let cwds: Vec<String> = cwds.into_iter().collect();
    let mut cx = Context {
        agents: Vec::new(),
        children: HashMap::new(),
        outcomes,
        wire,
        tracks: HashMap::new(),
        agent_ids: Vec::new(),
        redactor: Redactor::new(&cwds),
        lifter: Lifter::default(),
        header: Vec::new(),
    };
    link_agents(&mut cx, convs);
    name_tracks(&mut cx);
    cx
}

/// A transcript read, before it is linked to the call that spawned it.
struct ReadAgent<'a> {
    id: Option<String>,
    conv: Conversation,
    meta: Option<&'a Value>,
}

/// Orders the agents main first, then each child right after the agent that spawned it
/// (depth first, in call order), naming each.
fn link_agents(cx: &mut Context, convs: Vec<ReadAgent>) {
    let mut pending: Vec<Option<ReadAgent>> = convs.into_iter().map(Some).collect();
    let mut namer = Namer::new();
    let main = pending[0].take().expect("the main transcript");
    cx.agents.push(Agent {
        name: MAIN_AGENT.into(),
        id: None,
        conv: main.conv,
    });
    let mut a = 0;
    while a < cx.agents.len() {
        let calls: Vec<super::records::Call> = cx.agents[a]
            .conv
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::Reply(r) => Some(r.calls.clone()),
                _ => None,
            })
            .flatten()
            .filter(|c| matches!(c.tool.as_str(), "Agent" | "Task"))
            .collect();
        for call in calls {
            let by_result = cx.outcomes.get(&call.id).and_then(|o| o.agent_id.clone());
            let found = pending.iter().position(|p| {
                p.as_ref().is_some_and(|r| {
                    r.id.is_some() && r.id == by_result
                        || r.meta
                            .and_then(|m| m.get("toolUseId"))
                            .and_then(Value::as_str)
                            == Some(call.id.as_str())
                })
            });
            let Some(found) = found else { continue };
            let ReadAgent { id, conv, .. } = pending[found].take().expect("pending child");
            let name = child_name(&mut namer, &conv, &call.input);
            if let Some(id) = &id {
                cx.agent_ids.push((id.clone(), name.clone()));
            }
            cx.children.insert(call.id.clone(), cx.agents.len());
            cx.agents.push(Agent { name, id, conv });
        }
        a += 1;
    }
    for left in pending.into_iter().flatten() {
        cx.header.push(format!(
            "left out: agent-{}.jsonl (no Agent call in these transcripts spawned it)",
            left.id.unwrap_or_default()
        ));
    }
}

/// The harness's tag in the child's first prompt (a run folder), else the teammate's name,
/// else the call's description.
fn child_name(namer: &mut Namer, child: &Conversation, input: &Value) -> String {
    let tagged = child.entries.iter().find_map(|e| match e {
        Entry::Input { text, .. } => strip_tag(text).1,
        _ => None,
    });
    if let Some(name) = tagged.and_then(|t| namer.keep(&t, is_agent_name)) {
        return name;
    }
    let text = |k: &str| input.get(k).and_then(Value::as_str).unwrap_or("");
    let wanted = if text("name").is_empty() {
        text("description")
    } else {
        text("name")
    };
    namer.name(wanted, "agent")
}

/// Names the Bash and Monitor calls the scenario tracks: those the harness tracked
/// (`wp-track NAME`), background ones (every Monitor), and interrupted ones (an interrupt is
/// timed from their start).
fn name_tracks(cx: &mut Context) {
    let mut namer = Namer::new();
    for agent in &cx.agents {
        namer.keep(&agent.name, is_agent_name);
    }
    for a in 0..cx.agents.len() {
        let entries = &cx.agents[a].conv.entries;
        let interrupted: BTreeSet<String> = entries
            .windows(2)
            .filter_map(|w| match w {
                [
                    Entry::ToolResult {
                        tool_use_id,
                        outcome,
                        ..
                    },
                    Entry::Interrupt { .. },
                ] if outcome.rejected => Some(tool_use_id.clone()),
                _ => None,
            })
            .collect();
        let calls: Vec<super::records::Call> = entries
            .iter()
            .filter_map(|e| match e {
                Entry::Reply(r) => Some(r.calls.clone()),
                _ => None,
            })
            .flatten()
            .filter(|c| steps::runs_a_command(&c.tool))
            .collect();
        for call in calls {
            let input = cx.wire.get(&call.id).unwrap_or(&call.input);
            let command = input.get("command").and_then(Value::as_str).unwrap_or("");
            let background = call.tool == "Monitor"
                || input.get("run_in_background").and_then(Value::as_bool) == Some(true)
                || cx.outcomes.get(&call.id).is_some_and(|o| o.backgrounded);
            let name = match unwrap_track(command) {
                Some((name, _)) => namer
                    .keep(&name, is_track_name)
                    .unwrap_or_else(|| namer.name(&name, "bg")),
                None if background || interrupted.contains(&call.id) => {
                    let description = input.get("description").and_then(Value::as_str);
                    namer.name(description.unwrap_or(""), "bg")
                }
                None => continue,
            };
            cx.tracks.insert(call.id.clone(), name);
        }
    }
}

/// The driver: mode, prompt, inputs, environment, guard, tools.
fn driver(
    draft: &mut Draft,
    cx: &mut Context,
    session: &Session,
    opts: &Options,
    mut inputs: Vec<super::model::DraftInput>,
) {
    let main = &cx.agents[0].conv;
    let prompt = main.entries.iter().find_map(|e| match e {
        Entry::Input { text, .. } => Some(text.clone()),
        _ => None,
    });
    let d = &mut draft.driver;
    d.prompt = match prompt {
        Some(p) => cx.text(&p),
        None => {
            d.notes
                .push("no user prompt in the transcript: a placeholder".into());
            "(no prompt in the transcript)".into()
        }
    };
    let controls = inputs
        .iter()
        .filter(|i| matches!(i.action, DraftAction::Control { .. }))
        .count();
    let (texts, has_controls) = (inputs.len() - controls, controls > 0);
    (d.mode, d.mode_note) = infer_mode(main, session, opts, texts, has_controls);
    if !d.mode.row().later_inputs && !inputs.is_empty() {
        d.notes.push(format!(
            "{} later input(s) left out: {} mode takes one prompt",
            inputs.len(),
            d.mode
        ));
        inputs.clear();
    }
    if d.mode.row().controls.is_empty() {
        let before = inputs.len();
        inputs.retain(|i| !matches!(i.action, DraftAction::Control { .. }));
        if inputs.len() < before {
            d.notes.push(format!(
                "{} interrupt(s) left out: control requests need the session driver",
                before - inputs.len()
            ));
        }
    }
    d.inputs = inputs;
    let calls: Vec<&super::records::Call> = cx
        .agents
        .iter()
        .flat_map(|a| &a.conv.entries)
        .filter_map(|e| match e {
            Entry::Reply(r) => Some(&r.calls),
            _ => None,
        })
        .flatten()
        .collect();
    if calls
        .iter()
        .any(|c| matches!(c.tool.as_str(), "Agent" | "Task") && c.input.get("name").is_some())
    {
        d.env = vec![("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS".into(), "1".into())];
        d.env_note =
            Some("an Agent call names its agent (a teammate): agent teams turned on".into());
    }
    let guarded = cx
        .agents
        .iter()
        .flat_map(|a| &a.conv.entries)
        .any(|e| matches!(e, Entry::HookFeedback { text, .. } if GUARD_REASONS.iter().any(|r| text.contains(r))));
    if guarded {
        d.guard_note = Some(
            "a Stop hook fed back the stall guard's reason: wakeprobe's stall guard installed"
                .into(),
        );
    }
    let mut tools: Vec<String> = DEFAULT_TOOLS.iter().map(|t| t.to_string()).collect();
    for c in &calls {
        if !tools.contains(&c.tool) {
            tools.push(c.tool.clone());
        }
    }
    if tools.len() > DEFAULT_TOOLS.len() {
        d.allowed_tools = Some((
            tools,
            "the default tools and every other tool the transcript's agents called".into(),
        ));
    }
}

/// Print, session or pty, and how the transcript says so.
fn infer_mode(
    main: &Conversation,
    session: &Session,
    opts: &Options,
    later_inputs: usize,
    controls: bool,
) -> (DriverMode, String) {
    if let Some(mode) = opts.mode {
        return (mode, "mode: set by `--mode`".into());
    }
    if let Some(mode) = session.run.as_ref().and_then(|r| r.mode) {
        return (
            mode,
            format!(
                "mode: the run folder's run.json says the transcripts came from a `{}` run",
                mode.as_str()
            ),
        );
    }
    if main.entrypoint.as_deref() == Some("cli") || main.prompt_source.as_deref() == Some("typed") {
        return (
            DriverMode::Pty,
            "mode: the records' entrypoint is `cli` (typed prompts): an interactive session, replayed in a pseudo-terminal".into(),
        );
    }
    if later_inputs > 0 || controls {
        return (
            DriverMode::Session,
            format!(
                "mode: {later_inputs} input(s) after the prompt{}: a kept-alive session (print mode takes one prompt)",
                if controls { " and an interrupt" } else { "" }
            ),
        );
    }
    (
        DriverMode::Print,
        "mode: one prompt and no later input: print mode (a transcript cannot tell print mode from\n  a kept-alive session that got no further input; `--mode session` imports it as the latter)".into(),
    )
}

/// Every background handoff: the agent that started the work waits for it.
fn watches(cx: &Context) -> Vec<DraftWatch> {
    let mut out: Vec<DraftWatch> = Vec::new();
    for agent in &cx.agents {
        for e in &agent.conv.entries {
            let Entry::Reply(r) = e else { continue };
            for c in &r.calls {
                let input = cx.wire.get(&c.id).unwrap_or(&c.input);
                let background = c.tool == "Monitor"
                    || input.get("run_in_background").and_then(Value::as_bool) == Some(true)
                    || cx.outcomes.get(&c.id).is_some_and(|o| o.backgrounded);
                if !background {
                    continue;
                }
                let work = match c.tool.as_str() {
                    "Agent" | "Task" => cx.children.get(&c.id).map(|i| &cx.agents[*i].name),
                    "Bash" | "Monitor" => cx.tracks.get(&c.id),
                    _ => None,
                };
                if let Some(work) = work {
                    out.push(DraftWatch {
                        waiter: agent.name.clone(),
                        work: work.clone(),
                        note: format!(
                            "`{}` handed `{work}` to the background (add hang_seconds to judge a hang)",
                            agent.name
                        ),
                    });
                }
            }
        }
    }
    out
}

/// The ceiling: the lifted durations plus the rest of the session's span, with room.
fn ceiling(draft: &mut Draft, cx: &Context, clock: &Clock) {
    let (expr, lifted) = cx.lifter.sum().unwrap_or_default();
    let rest = (clock.span_seconds() - lifted).max(0.0);
    let slack = 60.0 + rest.ceil();
    let d = &mut draft.driver;
    if lifted + slack > 86_400.0 {
        d.ceiling = Delay::Seconds(86_400.0);
        d.ceiling_note =
            "the lifted durations pass a day: the ceiling is the largest allowed".into();
    } else if expr.is_empty() {
        d.ceiling = Delay::Seconds(slack);
        d.ceiling_note = format!(
            "the session's span ({:.0} s) and a minute of room",
            clock.span_seconds()
        );
    } else {
        d.ceiling = Delay::Expr(format!("{expr} + {slack}"));
        d.ceiling_note =
            "the lifted durations, the rest of the session's span and a minute of room".into();
    }
}

/// Name, title, summary, the header and the expectation.
fn describe(draft: &mut Draft, session: &Session, opts: &Options, stats: &Stats) {
    let stem = session
        .main
        .path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("session");
    let version = session
        .main
        .records
        .iter()
        .find_map(|r| r.value.get("version").and_then(Value::as_str))
        .unwrap_or("?");
    let short: String = stem.chars().take(8).collect();
    draft.name = opts.name.clone().unwrap_or_else(|| {
        let slug = super::names::slug(&short);
        format!(
            "imported-{}",
            if slug.is_empty() { "session" } else { &slug }
        )
    });
    let source = match &session.run {
        Some(run) => format!("a run of {}", run.source),
        None => format!("session {stem}"),
    };
    let prompt: String = draft.driver.prompt.chars().take(60).collect();
    draft.title = format!("Imported: {prompt}");
    draft.summary = format!(
        "Imported from {source} (Claude Code {version}): {} agent(s), {} step(s), {} input(s)",
        stats.agents, stats.steps, stats.inputs
    );
    draft.reproduces = format!("the transcripts of {source}");
    draft.header = vec![
        format!("Imported by `wakeprobe import` from {source} (Claude Code {version})."),
        "Each agent's steps are the model's replies, in order; tool results were not copied: the"
            .into(),
        "CLI produces them again. Home paths, user names and secrets were redacted.".into(),
    ];
    if let Some(outcome) = session.run.as_ref().and_then(|r| r.outcome.clone()) {
        draft.expect = Some((
            draft.driver.mode.as_str().to_string(),
            outcome,
            "the verdict of the run these transcripts came from".into(),
        ));
    }
}
