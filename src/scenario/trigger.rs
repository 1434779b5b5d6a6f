//! Triggers: the moments an input or a fault counts from (`after = TRIGGER`), parsed and
//! checked against the names the variant's script defines.

use toml::Spanned;

use super::ScenarioError;
use super::plan::Trigger;
use super::source::{Locator, Names};

/// A trigger (an input's or a fault's `after`), checked against the names it may use.
pub(super) fn resolve(
    at: &Locator,
    after: &Spanned<String>,
    names: &Names,
) -> Result<Trigger, ScenarioError> {
    let trigger = parse(after.get_ref()).map_err(|m| at.error(after.span(), m))?;
    let unknown = match &trigger {
        Trigger::TurnEnd(agent, _) if !names.agents.contains(agent) => Some(format!(
            "the trigger names no agent: `{agent}` (agents: {})",
            Names::list(&names.agents)
        )),
        Trigger::TaskStart(name) | Trigger::TaskEnd(name) if !names.tracks.contains(name) => {
            Some(format!(
                "the trigger names no tracked command: `{name}` (tracked: {})",
                Names::list(&names.tracks)
            ))
        }
        _ => None,
    };
    match unknown {
        Some(message) => Err(at.error(after.span(), message)),
        None => Ok(trigger),
    }
}

/// Parses `start`, `result`, `result#N`, `turn-end:AGENT[#N]`, `task-start:NAME`,
/// `task-end:NAME`, `quiet`.
pub(super) fn parse(text: &str) -> Result<Trigger, String> {
    let expected = "expected `start`, `result[#N]`, `turn-end:AGENT[#N]`, `task-start:NAME`, `task-end:NAME` or `quiet`";
    let (head, nth) = match text.rsplit_once('#') {
        Some((h, n)) => (
            h,
            n.parse::<usize>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| format!("`#{n}` is not a count from 1 in `{text}`"))?,
        ),
        None => (text, 1),
    };
    match head.split_once(':') {
        None if head == "start" => Ok(Trigger::Start),
        None if head == "quiet" => Ok(Trigger::Quiet),
        None if head == "result" => Ok(Trigger::Result(nth)),
        Some(("turn-end", agent)) if !agent.is_empty() => {
            Ok(Trigger::TurnEnd(agent.to_string(), nth))
        }
        Some(("task-start", name)) if !name.is_empty() => Ok(Trigger::TaskStart(name.to_string())),
        Some(("task-end", name)) if !name.is_empty() => Ok(Trigger::TaskEnd(name.to_string())),
        _ => Err(format!("unknown trigger `{text}`: {expected}")),
    }
}
