//! The draft's Summary, written for a maintainer (seed 000's shape): what happens, in the
//! CLI's terms and the roles of the agents and work involved; the case that works (the
//! scenario's `contrast`); what users can do until it is fixed (the scenario's `workaround`,
//! or the stall guard where it applies); and only then how the run measured it (the verdict,
//! what the scenario expects of this CLI today, what it should do).

use std::fmt::Write;

use super::draft::{Draft, check_headline, headline};
use crate::classify::filing::{Bugs, Filing, filing};
use crate::classify::{Outcome, Verdict};
use crate::evidence::secs;
use crate::scenario::{MAIN_AGENT, Plan, ToolCall};

/// The guard wakeprobe ships and tests (`wakeprobe guard verify`), named in the workaround.
const STALL_GUARD: &str = "sandbox-project/.claude/hooks/subagent-stall-guard.sh";

/// Writes the `## Summary` section: the bug in a maintainer's sentence (a failing check's
/// `describes`, else what happens), the facts of the run that make it a bug, the case that
/// works, the workaround, and then the measurement.
pub(super) fn write(s: &mut String, d: &Draft, primary: &Verdict, bugs: &Bugs) {
    let run = &d.result.run;
    let _ = writeln!(s, "## Summary\n");
    let described: Vec<&str> = bugs
        .checks
        .iter()
        .filter_map(|c| c.describes.as_deref())
        .collect();
    for sentence in &described {
        let _ = writeln!(s, "**{}.**\n", sentence.trim_end_matches('.'));
    }
    if bugs.verdict || bugs.checks.is_empty() {
        let _ = writeln!(s, "{}\n", what_happens(d.plan, primary));
    }
    let shown = super::facts::shown(d.timeline);
    if !shown.is_empty() && (bugs.any() || !described.is_empty()) {
        let _ = writeln!(s, "What the run shows:\n");
        for fact in &shown {
            let _ = writeln!(s, "- {fact}");
        }
        let _ = writeln!(s);
    }
    for c in bugs.checks.iter().filter(|c| c.describes.is_none()) {
        let _ = writeln!(
            s,
            "**The CLI does not do what it should:** {} (it gives `{}` today{}).\n",
            check_headline(c),
            c.observed,
            match (c.expected.as_deref(), c.passed) {
                (Some(e), Some(true)) => format!(", as the scenario expects (`{e}`)"),
                (Some(e), _) => format!(", where the scenario expects `{e}`"),
                (None, _) => String::new(),
            }
        );
    }
    if let Some(contrast) = &d.plan.contrast {
        let _ = writeln!(s, "**The case that works:** {}\n", contrast.trim());
    }
    if let Some(workaround) = workaround(d.plan, primary) {
        let _ = writeln!(s, "**Workaround:** {workaround}\n");
    }
    let _ = writeln!(s, "{}\n", measured(d, primary, bugs));
    if let Some(a) = d.agreement {
        let _ = writeln!(s, "Repeated runs of this case agree: **{a}**.\n");
    }
    if let Filing::Nothing(why) = filing(&d.result.run, &d.result.judgement) {
        let _ = writeln!(
            s,
            "> **Not an issue draft:** {why}. This report records the run; there is nothing here to file.\n"
        );
    }
    if run.end.cut_short() {
        let _ = writeln!(
            s,
            "> **This run was cut short** ({}). Everything below is what it saw up to then: a verdict that needed the rest of the run is `unknown`, and nothing that happened after the cut is attributed to the CLI.\n",
            run.end_detail.as_deref().unwrap_or(run.end.as_str())
        );
    }
    for unsent in &run.unsent_inputs {
        let _ = writeln!(s, "> Note: {unsent}.\n");
    }
}

/// What happens, for someone who knows the CLI and not wakeprobe: who hands what to the
/// background, and what the CLI then does with its end.
pub(super) fn what_happens(plan: &Plan, v: &Verdict) -> String {
    let (w, k) = (&v.waiter, &v.work);
    let waiter = capitalized(&agent_role(plan, w));
    let work = work_role(plan, k, w);
    match v.outcome {
        Outcome::NotResumable => format!(
            "{waiter} ends its turn while {work} still runs. `{w}` is finalized there and never re-invoked: when `{k}` ends, its completion notification reaches no model request of `{w}`, so the result `{w}` was waiting for is never read."
        ),
        Outcome::NeverFired => format!(
            "{waiter} ends its turn while {work} runs, and `{k}` ends, but no completion notification for `{k}` ever reaches `{w}`: no model request of `{w}` carries one."
        ),
        Outcome::QueuedUntilInput => format!(
            "{waiter} ends its turn while {work} runs. When `{k}` ends, `{w}` is not told: the notification waits until an unrelated input arrives, and reaches `{w}` in the same request as that input. With no input, `{w}` would wait forever."
        ),
        Outcome::ChildFailed => format!(
            "{} fails on its own while {} waits for it.",
            capitalized(&work),
            agent_role(plan, w)
        ),
        Outcome::Woke => format!(
            "{waiter} ends its turn while {work} runs, and is woken {} after `{k}` ends, with its completion notification.",
            v.latency_ms.map(secs).unwrap_or_else(|| "soon".into())
        ),
        Outcome::Unknown => format!(
            "The run could not decide what happens to {waiter_lc} once {work} ends: {}.",
            v.reason.as_deref().unwrap_or("the evidence is incomplete"),
            waiter_lc = agent_role(plan, w)
        ),
    }
}

/// `the main agent`, `the background subagent `worker``, `the subagent `helper``.
fn agent_role(plan: &Plan, agent: &str) -> String {
    if agent == MAIN_AGENT {
        return "the main agent".into();
    }
    let spawn = plan
        .agents
        .values()
        .flatten()
        .flat_map(|s| &s.calls)
        .find(|c| c.spawn.as_deref() == Some(agent));
    match spawn {
        Some(c) if in_background(&c.input) => format!("the background subagent `{agent}`"),
        _ => format!("the subagent `{agent}`"),
    }
}

/// The work's role: an agent (as [`agent_role`] names it), or a tracked command with its text
/// and who started it (`it`: the waiter).
fn work_role(plan: &Plan, work: &str, waiter: &str) -> String {
    if plan.agents.contains_key(work) {
        return agent_role(plan, work);
    }
    let Some((owner, call)) = tracked_by(plan, work) else {
        return format!("`{work}`");
    };
    let call = Some(call);
    let command = call
        .and_then(|c| c.input.get("command"))
        .and_then(|c| c.as_str())
        .map(|c| format!(" (`{c}`)"))
        .unwrap_or_default();
    let how = if call.is_some_and(|c| in_background(&c.input)) {
        "the `run_in_background` Bash command"
    } else {
        "the Bash command"
    };
    let whose = match owner {
        o if o == waiter => "it".to_string(),
        MAIN_AGENT => "the main agent".to_string(),
        o => format!("`{o}`"),
    };
    format!("{how} `{work}`{command} {whose} started")
}

/// The agent whose step tracks `work` as a command, and that call.
fn tracked_by<'a>(plan: &'a Plan, work: &str) -> Option<(&'a str, &'a ToolCall)> {
    plan.agents
        .iter()
        .flat_map(|(agent, steps)| {
            steps
                .iter()
                .flat_map(|s| &s.calls)
                .map(move |c| (agent.as_str(), c))
        })
        .find(|(_, c)| c.track.as_deref() == Some(work))
}

fn in_background(input: &serde_json::Value) -> bool {
    input.get("run_in_background").and_then(|b| b.as_bool()) == Some(true)
}

/// The scenario's own workaround; else, for a subagent left waiting on a background command it
/// started (the stall of seed 000), the stall guard and the foreground poll.
fn workaround(plan: &Plan, v: &Verdict) -> Option<String> {
    if let Some(w) = &plan.workaround {
        return Some(w.trim().to_string());
    }
    let stalls = matches!(v.outcome, Outcome::NotResumable | Outcome::NeverFired);
    let own_command = tracked_by(plan, &v.work).is_some_and(|(owner, _)| owner == v.waiter);
    (stalls && v.waiter != MAIN_AGENT && own_command).then(|| format!(
        "a `SubagentStop` hook that blocks a final message promising a wake-up while the subagent's own background command still runs, and sends it back to poll the command's output in one foreground Bash call (seed 000's stall guard; `{STALL_GUARD}` in wakeprobe is one, checked by `wakeprobe guard verify`, and the scenario `guard-end-to-end` runs it on the CLI). Briefs that run long commands in the foreground with an explicit `timeout` avoid the handoff."
    ))
}

/// The verdict as measured, and where the bug is when it is not the verdict: a wake-up that
/// works as wanted is said to, so it never reads as if the checks' bug were what should be.
fn measured(d: &Draft, primary: &Verdict, bugs: &Bugs) -> String {
    let verdict = format!(
        "the verdict is **{}** ({}): {}",
        primary.outcome,
        primary.outcome.hypothesis(),
        headline(primary)
    );
    if !bugs.verdict && !bugs.checks.is_empty() {
        let wanted = match d.result.run.want {
            Some(w) if w == primary.outcome => format!(", as the scenario wants (`{w}`)"),
            _ => String::new(),
        };
        return format!(
            "**Measured:** the wake-up itself is not the bug: {verdict}{wanted}. The bug is in what the check{} above observe{}: {}.",
            if bugs.checks.len() == 1 { "" } else { "s" },
            if bugs.checks.len() == 1 { "s" } else { "" },
            crate::classify::filing::join_and(
                &bugs
                    .checks
                    .iter()
                    .map(|c| format!(
                        "“{}” gives `{}` (the CLI should give `{}`)",
                        c.name,
                        c.observed,
                        c.want.as_deref().unwrap_or_default()
                    ))
                    .collect::<Vec<_>>()
            )
        );
    }
    format!("**Measured:** {verdict}.{}", standing(d))
}

/// ` The scenario expects `x` of the CLI today: as expected. The behaviour it should have is
/// `woke`.`
fn standing(d: &Draft) -> String {
    let r = d.result;
    let expect = match (&r.expect, r.matches_expect) {
        (Some(e), Some(true)) => {
            format!(" The scenario expects `{e}` of the CLI today: as expected.")
        }
        (Some(e), Some(false)) if e.allows(r.judgement.outcome) => format!(
            " The scenario expects `{e}` of the CLI today: the verdict is as expected, but **a check failed**."
        ),
        (Some(e), _) if e.allows(r.judgement.outcome) => {
            format!(" The scenario expects `{e}` of the CLI today: as expected.")
        }
        (Some(e), _) => format!(" The scenario expects `{e}` of the CLI today: **this differs**."),
        (None, Some(false)) => " A check the scenario states **failed**.".to_string(),
        _ => String::new(),
    };
    let want = match r.run.want {
        Some(w) if w == r.judgement.outcome => {
            format!(" This is the behaviour the CLI should have (`{w}`).")
        }
        Some(w) => format!(" The behaviour the CLI should have is `{w}`."),
        None => String::new(),
    };
    expect + &want
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
