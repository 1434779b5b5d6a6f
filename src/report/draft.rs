//! What one run's issue draft is made from, its title, and the headlines both the draft's
//! body (`markdown`) and its Summary (`summary`) speak of the bug with.
//!
//! A title is a maintainer's sentence, in the CLI's terms, of at most [`TITLE_MAX_CHARS`]
//! characters: the `describes` of the first check that fails its `want`, else the verdict's
//! bug with the agents and work by role (`Background subagent is never re-invoked when its
//! run_in_background command ends`), else the check by name; cut at a word only if nothing
//! shorter says it.

use crate::checks::CheckResult;
use crate::classify::filing::Bugs;
use crate::classify::result::RunResult;
use crate::classify::{Outcome, Verdict};
use crate::evidence::{Timeline, secs};
use crate::scenario::{MAIN_AGENT, Plan};

/// The longest issue title a draft gives (GitHub takes more; a maintainer reads this much).
pub const TITLE_MAX_CHARS: usize = crate::scenario::DESCRIBES_MAX_CHARS;

/// Everything one run's draft is made from.
pub struct Draft<'a> {
    pub result: &'a RunResult,
    pub timeline: &'a Timeline,
    pub plan: &'a Plan,
    pub scenario_source: Option<&'a str>,
    /// The agreement of repeated runs of this cell, e.g. `not-resumable 5/5`.
    pub agreement: Option<&'a str>,
    /// File name of the swimlane picture next to the report (named as an attachment).
    pub picture: Option<&'a str>,
}

/// What happened, in a clause: `` `worker` is finalized while `bg` still runs ``.
pub(super) fn headline(v: &Verdict) -> String {
    let (w, k) = (&v.waiter, &v.work);
    match v.outcome {
        Outcome::Woke => format!(
            "`{w}` is woken {} after `{k}` ends",
            v.latency_ms.map(secs).unwrap_or_else(|| "soon".into())
        ),
        Outcome::NotResumable => {
            format!("`{w}` is finalized while `{k}` still runs and is never re-invoked")
        }
        Outcome::NeverFired => format!("no notification for `{k}` ever reaches `{w}`"),
        Outcome::QueuedUntilInput => {
            format!("`{k}`'s notification reaches `{w}` only after an unrelated input")
        }
        Outcome::ChildFailed => format!("`{k}` fails on its own while `{w}` waits"),
        Outcome::Unknown => format!("undecided: {}", v.reason.clone().unwrap_or_default()),
    }
}

/// What a check that fails its `want` shows, in a clause: `` check “idle” observes
/// `indistinguishable` where the CLI should give `distinguishable` ``.
pub(super) fn check_headline(c: &CheckResult) -> String {
    format!(
        "check “{}” observes `{}` where the CLI should give `{}`",
        c.name,
        c.observed,
        c.want.as_deref().unwrap_or_default()
    )
}

/// The title of a run's draft (`title.txt`).
pub fn draft_title(d: &Draft) -> String {
    let bugs = Bugs::of(&d.result.run, &d.result.judgement);
    let described = bugs.checks.iter().find_map(|c| c.describes.clone());
    let primary = d.result.judgement.primary();
    let title = match (described, primary, bugs.checks.first()) {
        (Some(describes), _, _) => describes,
        (None, Some(v), _) if bugs.verdict => verdict_title(d.plan, v),
        (None, _, Some(c)) => format!(
            "{}: `{}` where the CLI should give `{}`",
            c.name,
            c.observed,
            c.want.as_deref().unwrap_or_default()
        ),
        (None, Some(v), None) if v.outcome != Outcome::Unknown => verdict_title(d.plan, v),
        _ => d.plan.title.clone(),
    };
    fit_title(&title)
}

/// The verdict as a title, the agents and work by role: what a maintainer knows them as.
pub(super) fn verdict_title(plan: &Plan, v: &Verdict) -> String {
    let waiter = waiter_role(plan, &v.waiter);
    let work = work_role(plan, &v.work, &v.waiter);
    match v.outcome {
        Outcome::NotResumable => format!("{waiter} is never re-invoked when {work} ends"),
        Outcome::NeverFired => format!(
            "No notification reaches {} when {work} ends",
            lower(&waiter)
        ),
        Outcome::QueuedUntilInput => {
            format!("{waiter} is told {work} ended only with the next unrelated input")
        }
        Outcome::ChildFailed => format!(
            "{} fails while {} waits for it",
            capital(&work),
            lower(&waiter)
        ),
        Outcome::Woke => format!("{waiter} is woken when {work} ends"),
        Outcome::Unknown => plan.title.clone(),
    }
}

/// `The main agent`, `Background subagent`, `Subagent`.
fn waiter_role(plan: &Plan, agent: &str) -> String {
    if agent == MAIN_AGENT {
        return "The main agent".into();
    }
    match spawning_call(plan, agent) {
        Some(c) if in_background(&c.input) => "Background subagent".into(),
        _ => "Subagent".into(),
    }
}

/// `its run_in_background command`, `a background command`, `its background subagent`.
fn work_role(plan: &Plan, work: &str, waiter: &str) -> String {
    let owner = plan.agents.iter().find_map(|(agent, steps)| {
        let call = steps
            .iter()
            .flat_map(|s| &s.calls)
            .find(|c| c.track.as_deref() == Some(work) || c.spawn.as_deref() == Some(work))?;
        Some((agent.as_str(), call))
    });
    let Some((owner, call)) = owner else {
        return format!("`{work}`");
    };
    let whose = if owner == waiter { "its" } else { "a" };
    match (&call.spawn, in_background(&call.input)) {
        (Some(_), true) => format!("{whose} background subagent"),
        (Some(_), false) => format!("{whose} subagent"),
        (None, true) => format!("{whose} run_in_background command"),
        (None, false) => format!("{whose} command"),
    }
}

fn spawning_call<'a>(plan: &'a Plan, agent: &str) -> Option<&'a crate::scenario::ToolCall> {
    plan.agents
        .values()
        .flatten()
        .flat_map(|s| &s.calls)
        .find(|c| c.spawn.as_deref() == Some(agent))
}

fn in_background(input: &serde_json::Value) -> bool {
    input.get("run_in_background").and_then(|b| b.as_bool()) == Some(true)
}

fn lower(text: &str) -> String {
    match text.strip_prefix("The ") {
        Some(rest) => format!("the {rest}"),
        None => {
            let mut chars = text.chars();
            chars
                .next()
                .map(|c| c.to_lowercase().chain(chars).collect())
                .unwrap_or_default()
        }
    }
}

fn capital(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// One line of at most [`TITLE_MAX_CHARS`] characters: cut at the last word that fits, with
/// `…`, where the text is longer.
pub fn fit_title(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= TITLE_MAX_CHARS {
        return line;
    }
    let room: String = line.chars().take(TITLE_MAX_CHARS - 1).collect();
    let cut = match room.rfind(' ') {
        Some(at) if at > TITLE_MAX_CHARS / 2 => &room[..at],
        _ => room.as_str(),
    };
    format!("{}…", cut.trim_end_matches([',', ':', ';', ' ']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_fits_in_80_characters_cut_at_a_word() {
        assert_eq!(fit_title("short\ntitle"), "short title");
        let long = "word ".repeat(30);
        let fit = fit_title(&long);
        assert!(fit.chars().count() <= TITLE_MAX_CHARS, "{fit}");
        assert!(fit.ends_with("word…"), "{fit}");
        let unbroken = "x".repeat(200);
        assert_eq!(fit_title(&unbroken).chars().count(), TITLE_MAX_CHARS);
    }
}
