//! Names a variant's script must keep apart or must resolve: each tracked command's name once
//! (two commands under one name would mix their times in a verdict), each `[[watch]]` pair
//! once (a second would judge the same thing twice), and every run-time placeholder in a tool
//! input (`{{@agent-id:NAME}}`) naming an agent the script spawns. Each mistake is one
//! `file:line:col` error.

use indexmap::IndexMap;
use toml::Spanned;

use super::ScenarioError;
use super::raw::{RawAgent, RawWatch};
use super::source::{Locator, Names};
use crate::scenario::MAIN_AGENT;

/// The prefix of a placeholder that the fake API fills with a spawned agent's id.
pub const AGENT_ID: &str = "agent-id:";

/// Every reference rule over one variant's agents and watches.
pub(super) fn check(
    at: &Locator,
    agents: &IndexMap<String, &Spanned<RawAgent>>,
    watches: &[Spanned<RawWatch>],
    names: &Names,
) -> Result<(), ScenarioError> {
    unique_tracks(at, agents)?;
    unique_watches(at, watches)?;
    placeholders(at, agents, names)
}

/// A tracked command's name is given once in the variant.
fn unique_tracks(
    at: &Locator,
    agents: &IndexMap<String, &Spanned<RawAgent>>,
) -> Result<(), ScenarioError> {
    let mut seen: IndexMap<&str, (&str, usize)> = IndexMap::new();
    for (agent, raw) in agents {
        for step in &raw.get_ref().steps {
            let Some(track) = &step.get_ref().track else {
                continue;
            };
            let line = at.line_col(track.span().start).0;
            if let Some((first_agent, first_line)) = seen.insert(track.get_ref(), (agent, line)) {
                return Err(at.error(
                    track.span(),
                    format!(
                        "`track = \"{}\"` is already the name of a command of `{first_agent}` (line {first_line}): each tracked command needs its own name, or a verdict would mix their times",
                        track.get_ref()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A `[[watch]]` pair (waiter, work) is declared once.
fn unique_watches(at: &Locator, watches: &[Spanned<RawWatch>]) -> Result<(), ScenarioError> {
    for (i, watch) in watches.iter().enumerate() {
        let w = watch.get_ref();
        let earlier = watches[..i].iter().find(|other| {
            let o = other.get_ref();
            o.waiter.get_ref() == w.waiter.get_ref() && o.work.get_ref() == w.work.get_ref()
        });
        if let Some(first) = earlier {
            return Err(at.error(
                watch.span(),
                format!(
                    "a second `[[watch]]` of `{}` waiting for `{}` (the first is on line {}): each pair is judged once",
                    w.waiter.get_ref(),
                    w.work.get_ref(),
                    at.line_col(first.span().start).0
                ),
            ));
        }
    }
    Ok(())
}

/// Every `{{@...}}` in a tool input is `{{@agent-id:NAME}}`, NAME an agent the script spawns.
fn placeholders(
    at: &Locator,
    agents: &IndexMap<String, &Spanned<RawAgent>>,
    names: &Names,
) -> Result<(), ScenarioError> {
    let spawned = || {
        let list: Vec<&str> = names
            .agents
            .iter()
            .map(String::as_str)
            .filter(|a| *a != MAIN_AGENT)
            .collect();
        if list.is_empty() {
            "none in this variant".to_string()
        } else {
            list.join(", ")
        }
    };
    for raw in agents.values() {
        for step in &raw.get_ref().steps {
            let Some(input) = &step.get_ref().input else {
                continue;
            };
            let mut texts = Vec::new();
            input
                .get_ref()
                .values()
                .for_each(|v| strings_in(v, &mut texts));
            for inner in texts.iter().flat_map(|t| runtime_placeholders(t)) {
                let agent = inner.strip_prefix(AGENT_ID);
                if agent.is_some_and(|a| a != MAIN_AGENT && names.has_agent(a)) {
                    continue;
                }
                return Err(at.error(
                    input.span(),
                    format!(
                        "`{{{{@{inner}}}}}`: a tool input names a spawned agent's id as `{{{{@agent-id:NAME}}}}`, NAME an agent this variant spawns (it has: {})",
                        spawned()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Every string in a TOML value, depth first.
fn strings_in<'a>(value: &'a toml::Value, out: &mut Vec<&'a str>) {
    match value {
        toml::Value::String(s) => out.push(s),
        toml::Value::Array(items) => items.iter().for_each(|v| strings_in(v, out)),
        toml::Value::Table(t) => t.values().for_each(|v| strings_in(v, out)),
        _ => {}
    }
}

/// The inner text of each `{{@...}}` in `text`, trimmed.
fn runtime_placeholders(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{@") {
        let after = &rest[open + 3..];
        let Some(close) = after.find("}}") else { break };
        found.push(after[..close].trim().to_string());
        rest = &after[close + 2..];
    }
    found
}
