//! `report.md`: an upstream issue draft in the shape of seed 000's (Title, Version, Summary,
//! Repro, Expected, Actual, Confirmed sub-facts), followed by the verdict with its witness, a
//! timeline table and a Mermaid sequence diagram. Ready for `gh issue create --body-file`.

use std::fmt::Write;

use super::json::RunResult;
use super::mermaid;
use crate::classify::{Outcome, Verdict};
use crate::evidence::Timeline;
use crate::evidence::describe::{describe, is_notable};
use crate::evidence::secs;
use crate::scenario::{DriverMode, Plan};

/// Everything one run's draft is made from.
pub struct Draft<'a> {
    pub result: &'a RunResult,
    pub timeline: &'a Timeline,
    pub plan: &'a Plan,
    pub scenario_source: Option<&'a str>,
    /// The agreement of repeated runs of this cell, e.g. `not-resumable 5/5`.
    pub agreement: Option<&'a str>,
    /// File name of the swimlane picture next to the report.
    pub picture: Option<&'a str>,
}

fn version(d: &Draft) -> String {
    let run = &d.result.run;
    let cli = match &run.backend {
        crate::backend::BackendKind::Claude => format!(
            "Claude Code {}",
            run.cli_version_reported
                .clone()
                .unwrap_or_else(|| run.cli_version.clone())
        ),
        crate::backend::BackendKind::Sim { profile } => format!("claude-sim (profile `{profile}`)"),
    };
    format!(
        "{cli} · {} mode · permission mode `{}` · {} · wakeprobe {}",
        run.mode.as_str(),
        run.permission_mode,
        run.os,
        run.wakeprobe_version
    )
}

pub fn title(d: &Draft, v: &Verdict) -> String {
    let (w, k) = (&v.waiter, &v.work);
    let what = match v.outcome {
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
    };
    format!("{}: {what}", d.plan.title)
}

fn expected(v: &Verdict) -> String {
    let (w, k) = (&v.waiter, &v.work);
    format!(
        "When `{k}` ends, `{w}` receives its completion notification in a model request soon after, with no further input: `{w}` is held (or re-invoked) until its background work reports, or the CLI refuses to finalize `{w}` while `{k}` is still running. A failure or hang of `{k}` is reported to `{w}` too."
    )
}

fn driver_step(plan: &Plan) -> String {
    let d = &plan.driver;
    let tools = d.allowed_tools.join(" ");
    match d.mode {
        DriverMode::Print => format!(
            "Run `claude -p \"<prompt>\" --output-format stream-json --verbose --permission-mode {} --allowedTools \"{tools}\"` (print mode) with the prompt “{}”.",
            d.permission_mode, d.prompt
        ),
        DriverMode::Session => format!(
            "Run `claude -p --input-format stream-json --output-format stream-json --verbose --permission-mode {} --allowedTools \"{tools}\"` and send the prompt “{}” as a stream-json user message; keep stdin open until the session has been quiet for {:.0} s with no task running.",
            d.permission_mode,
            d.prompt,
            d.settle.as_secs_f64()
        ),
        DriverMode::Pty => format!(
            "Run `claude --permission-mode {} --allowedTools \"{tools}\"` interactively in a pseudo-terminal and type the prompt “{}”; type `/exit` once the session has been quiet for {:.0} s.",
            d.permission_mode,
            d.prompt,
            d.settle.as_secs_f64()
        ),
    }
}

fn script_steps(plan: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    for (agent, steps) in &plan.agents {
        let mut parts = Vec::new();
        for step in steps {
            let mut p = String::new();
            if let Some(call) = &step.call {
                let detail = call
                    .input
                    .get("command")
                    .and_then(|c| c.as_str())
                    .map(|c| format!(" `{c}`"))
                    .unwrap_or_default();
                let bg = if call
                    .input
                    .get("run_in_background")
                    .and_then(|b| b.as_bool())
                    == Some(true)
                {
                    " with `run_in_background: true`"
                } else {
                    ""
                };
                let _ = write!(p, "calls {}{detail}{bg}", call.tool);
                if let Some(s) = &call.spawn {
                    let _ = write!(p, " (starting `{s}`)");
                }
            }
            if let Some(say) = &step.say {
                if !p.is_empty() {
                    p.push_str(" and ");
                }
                let _ = write!(p, "says “{say}”");
                if step.call.is_none() {
                    p.push_str(" (ending its turn)");
                }
            }
            parts.push(p);
        }
        out.push(format!("`{agent}`: {}.", parts.join("; then ")));
    }
    out
}

fn witness_table(v: &Verdict) -> String {
    let mut s = String::from("| time | source | agent | what |\n|---:|---|---|---|\n");
    for w in &v.witness {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            secs(w.t_ms),
            format!("{:?}", w.source).to_lowercase(),
            w.agent.as_deref().unwrap_or(""),
            w.what.replace('|', "\\|")
        );
    }
    s
}

pub fn render(d: &Draft) -> String {
    let primary = d
        .result
        .judgement
        .primary()
        .cloned()
        .expect("a judgement always has a verdict");
    let mut s = String::new();
    let _ = writeln!(s, "# {}\n", title(d, &primary));
    let _ = writeln!(s, "**Version:** {}\n", version(d));
    summary(&mut s, d, &primary);
    repro(&mut s, d);
    let _ = writeln!(s, "## Expected\n\n{}\n", expected(&primary));
    let _ = writeln!(s, "## Actual\n\n{}\n", primary.explanation);
    sub_facts(&mut s, d);
    verdict(&mut s, d);
    checks(&mut s, d);
    timeline(&mut s, d);
    let _ = writeln!(
        s,
        "\n## Sequence\n\n```mermaid\n{}```\n",
        mermaid::diagram(d.timeline)
    );
    if let Some(p) = d.picture {
        let _ = writeln!(s, "Swimlanes: [{p}]({p})\n");
    }
    let _ = writeln!(
        s,
        "<sub>Generated by wakeprobe {} from the run's saved evidence; paths, keys and user names are redacted.</sub>",
        d.result.run.wakeprobe_version
    );
    s
}

/// The verdict's explanation, the agreement of repeated runs, and how the run was cut short.
fn summary(s: &mut String, d: &Draft, primary: &Verdict) {
    let run = &d.result.run;
    let _ = writeln!(s, "## Summary\n");
    let _ = writeln!(
        s,
        "{} *({})*\n",
        primary.explanation,
        primary.outcome.hypothesis()
    );
    if let Some(a) = d.agreement {
        let _ = writeln!(s, "Repeated runs of this case agree: **{a}**.\n");
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

fn repro(s: &mut String, d: &Draft) {
    let run = &d.result.run;
    let _ = writeln!(s, "## Repro\n");
    let mut steps = vec![
        "Create a throwaway git project with an isolated HOME (workspace trust pre-accepted) and a hook recorder on every hook event.".to_string(),
        "Point the CLI at a scripted fake of the Messages API on loopback (`ANTHROPIC_BASE_URL`, a dummy key); each agent's replies come from the script below, so the model is the only fake.".to_string(),
        driver_step(d.plan),
    ];
    for line in script_steps(d.plan) {
        steps.push(format!("The model script: {line}"));
    }
    if !run.params.is_empty() {
        let params: Vec<String> = run
            .params
            .iter()
            .map(|(k, v)| format!("`{k}={v}`"))
            .collect();
        steps.push(format!("Parameters: {}.", params.join(", ")));
    }
    if !run.outside_range.is_empty() {
        steps.push(format!(
            "Run outside the range where the scenario's expected verdict holds (`--explore`): {}; so no verdict is expected here.",
            run.outside_range.join(", ")
        ));
    }
    for (i, step) in steps.iter().enumerate() {
        let _ = writeln!(s, "{}. {step}", i + 1);
    }
    let _ = writeln!(
        s,
        "\nOne command reproduces it, offline, with no API key:\n\n```sh\n{}\n```\n",
        run.command
    );
    if let Some(src) = d.scenario_source {
        let _ = writeln!(
            s,
            "<details><summary>Scenario file ({}.toml)</summary>\n\n```toml\n{}\n```\n\n</details>\n",
            run.scenario,
            src.trim_end()
        );
    }
}

fn sub_facts(s: &mut String, d: &Draft) {
    let j = &d.result.judgement;
    let _ = writeln!(s, "## Confirmed sub-facts\n");
    for v in &j.verdicts {
        for f in &v.facts {
            let _ = writeln!(s, "- {f}");
        }
    }
    if j.verdicts.iter().all(|v| v.facts.is_empty()) {
        let _ = writeln!(s, "- (none beyond the verdict)");
    }
    let _ = writeln!(s);
}

fn verdict(s: &mut String, d: &Draft) {
    let j = &d.result.judgement;
    let _ = writeln!(s, "## Verdict\n");
    let expect = match (d.result.expect, d.result.matches_expect) {
        (Some(e), Some(true)) => format!(" (the scenario expects `{e}`: as expected)"),
        (Some(e), Some(false)) => format!(" (the scenario expects `{e}`: **differs**)"),
        _ => String::new(),
    };
    let _ = writeln!(
        s,
        "**{}** — {}{expect}\n",
        j.outcome,
        j.outcome.hypothesis()
    );
    for v in &j.verdicts {
        let latency = v
            .latency_ms
            .map(|l| format!(", latency {}", secs(l)))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "### `{}` waiting for `{}`: {}{latency}\n",
            v.waiter, v.work, v.outcome
        );
        let _ = writeln!(s, "{}\n", v.explanation);
        if !v.witness.is_empty() {
            let _ = writeln!(s, "Minimal witness:\n\n{}", witness_table(v));
        }
    }
}

fn checks(s: &mut String, d: &Draft) {
    let j = &d.result.judgement;
    if j.checks.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "### Checks\n\n| check | observed | expected | result |\n|---|---|---|---|"
    );
    for c in &j.checks {
        let result = match (c.passed, &c.expected) {
            (Some(true), _) => "pass",
            (Some(false), _) => "**fail**",
            (None, Some(_)) => "open (the run was cut short)",
            (None, None) => "recorded",
        };
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {result} |",
            c.name,
            c.observed,
            c.expected.as_deref().unwrap_or("-")
        );
    }
    let _ = writeln!(s);
    for c in &j.checks {
        let _ = writeln!(s, "`{}`: {}\n", c.name, c.explanation);
        for w in &c.witness {
            let _ = writeln!(s, "- {}", super::witness_line(w));
        }
        if !c.witness.is_empty() {
            let _ = writeln!(s);
        }
    }
}

/// The notable events on one clock; what the harness's cleanup did after a cut is shown, and
/// said to be such.
fn timeline(s: &mut String, d: &Draft) {
    let run = &d.result.run;
    let _ = writeln!(s, "## Timeline\n");
    let _ = writeln!(
        s,
        "All sources on one clock, seconds since the run started (every event is in `timeline.json`).\n"
    );
    let _ = writeln!(s, "| time | source | agent | event |\n|---:|---|---|---|");
    let cut_t = run
        .end
        .cut_short()
        .then(|| d.timeline.iter().find(|e| e.kind.ends_the_run()))
        .flatten()
        .map(|e| e.t_ms);
    for e in d.timeline.iter().filter(|e| is_notable(e)) {
        let after_cut = if cut_t.is_some_and(|t| e.t_ms > t) {
            " (after the run was cut short)"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {}{after_cut} |",
            secs(e.t_ms),
            format!("{:?}", e.source).to_lowercase(),
            e.agent.as_deref().unwrap_or(""),
            describe(e).replace('|', "\\|")
        );
    }
}
