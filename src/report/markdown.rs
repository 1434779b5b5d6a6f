//! `report.md`: an upstream issue draft in the shape of seed 000's (Title, Version, Summary,
//! Repro, Expected, Actual, Confirmed sub-facts), followed by the verdict's witness, the
//! timeline around the witnesses of the verdicts and checks, and a Mermaid sequence diagram of
//! the same. Ready for `gh issue create --body-file`: GitHub shows it as written (see
//! [`super::gfm`]), it links nothing an issue cannot reach (the picture and the full timeline
//! are named as attachments, and stay in the run folder), and it fits GitHub's 65,536
//! characters whatever the run's size.

use std::fmt::Write;

pub use super::draft::Draft;
use super::gfm::{self, cell, fence, tag};
use super::mermaid;
use crate::classify::Verdict;
use crate::classify::filing::{Bugs, join_and};
use crate::evidence::describe::{describe, is_notable};
use crate::evidence::secs;
use crate::evidence::{Event, Timeline};
use crate::scenario::{DriverMode, Plan};

/// GitHub refuses an issue body longer than this many characters.
pub const BODY_LIMIT: usize = 65_536;
/// What a draft aims for, leaving room for a note a person adds before filing.
const BODY_BUDGET: usize = 60_000;
/// Notable events kept on each side of a witness event: its context, not every row.
const NEIGHBOURHOOD: usize = 2;

/// How much of a run a draft shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Detail {
    /// The timeline and the diagram cut to the witnesses and their neighbourhood, the scenario
    /// file.
    Witness,
    /// The witness only: no diagram, the scenario file left to the attachments.
    Minimal,
}

fn version(d: &Draft) -> String {
    let run = &d.result.run;
    let cli = match &run.backend {
        crate::backend::BackendKind::Claude => format!("Claude Code {}", run.cli_version_text()),
        crate::backend::BackendKind::Sim { profile } => {
            format!("claude-sim, the simulator, with profile `{profile}` (not Claude Code)")
        }
        crate::backend::BackendKind::Opencode => format!("opencode {}", run.cli_version_text()),
    };
    let driver = match &run.sdk {
        Some(sdk) => format!(" · through {}", sdk_pairing(run, sdk)),
        None => String::new(),
    };
    format!(
        "{cli}{driver} · {} mode · permission mode `{}` · {} · wakeprobe {}",
        run.mode.as_str(),
        run.permission_mode,
        run.os,
        run.wakeprobe_version
    )
}

/// `agent-sdk 0.3.335 (TypeScript), which ships Claude Code 2.1.335: this run's 2.1.337 is a
/// pairing it does not ship`.
fn sdk_pairing(run: &crate::evidence::run::RunInfo, sdk: &str) -> String {
    match &run.sdk_ships_cli {
        Some(ships) if run.sdk_pairing_unshipped() => format!(
            "{sdk}, which ships Claude Code {ships}: this run's {} is a pairing it does not ship",
            run.cli_version_text()
        ),
        Some(ships) => format!("{sdk}, the Claude Code it ships ({ships})"),
        None => sdk.to_string(),
    }
}

/// The command that exports this run as a standalone Node script, or why there is none: the
/// script drives the real CLI directly in print or session mode, with no stall guard, no
/// injected faults, and only versions of the claude-code package.
fn standalone(d: &Draft) -> Result<String, String> {
    let run = &d.result.run;
    if let crate::backend::BackendKind::Sim { profile } = &run.backend {
        return Err(format!(
            "This run is of the simulator (profile `{profile}`), not of Claude Code: the standalone script runs the real CLI, so it reproduces nothing of this run."
        ));
    }
    if let Some(sdk) = &run.sdk {
        return Err(format!(
            "This run went through {sdk}: the standalone script drives the CLI directly, not through an SDK."
        ));
    }
    if run.backend == crate::backend::BackendKind::Opencode {
        return Err(
            "This run is of opencode: the standalone script runs Claude Code, so the command below is the repro.".into(),
        );
    }
    if !d.plan.driver.mode.row().exportable || d.plan.driver.guard || !d.plan.faults.is_empty() {
        return Err("The standalone script drives print and session mode only, with no stall guard and no injected faults: this run needs more.".into());
    }
    if let Some(crate::backend::channel::Channel::AgentSdk { sdk_version }) = &run.cli_channel {
        return Err(format!(
            "Claude Code {} comes from the Agent SDK {sdk_version}: the standalone script installs the claude-code package only (export with one of its versions and run the script with `--claude-bin PATH`).",
            run.cli_version
        ));
    }
    let scenario = run.reference.as_deref().unwrap_or(&run.scenario);
    let mut cmd = format!(
        "wakeprobe export {} --variant {}",
        crate::os::subprocess::shell_word(scenario),
        run.variant
    );
    for (k, v) in &run.params {
        cmd.push_str(&format!(
            " --set {}",
            crate::os::subprocess::shell_word(&format!("{k}={v}"))
        ));
    }
    if !run.outside_range.is_empty() {
        cmd.push_str(" --explore");
    }
    cmd.push_str(&format!(
        " --claude-version {} -o repro.mjs && node repro.mjs",
        run.cli_version
    ));
    Ok(cmd)
}

/// The title of a run's draft (`title.txt`): see [`super::draft`].
pub use super::draft::draft_title;

fn expected_text(v: &Verdict) -> String {
    let (w, k) = (&v.waiter, &v.work);
    format!(
        "When `{k}` ends, `{w}` receives its completion notification in a model request soon after, with no further input: `{w}` is held (or re-invoked) until its background work reports, or the CLI refuses to finalize `{w}` while `{k}` is still running. A failure or hang of `{k}` is reported to `{w}` too."
    )
}

fn driver_step(plan: &Plan, cli_args: &[String]) -> String {
    let d = &plan.driver;
    let tools = d.allowed_tools.join(" ");
    let step = match d.mode {
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
        DriverMode::Sdk | DriverMode::SdkPy => {
            let (sdk, call) = match d.mode {
                DriverMode::Sdk => ("the TypeScript Agent SDK", "`query()`"),
                _ => ("the Python Agent SDK", "`ClaudeSDKClient`"),
            };
            let input = match d.prompt_form {
                crate::scenario::PromptForm::String => "as its string prompt".to_string(),
                crate::scenario::PromptForm::Stream => format!(
                    "as its streaming input, kept open until the session has been quiet for {:.0} s with no task running",
                    d.settle.as_secs_f64()
                ),
            };
            format!(
                "Through {sdk}'s {call} (permission mode `{}`, allowed tools `{tools}`), send the prompt “{}” {input}.",
                d.permission_mode, d.prompt
            )
        }
        DriverMode::Command => format!(
            "Run the integration `{}` in the project folder with the CLI's path in `WAKEPROBE_CLI` (permission mode `{}`, allowed tools `{tools}` in its config), send it the prompt “{}” as a `say` line, and close its stdin once the session has been quiet for {:.0} s with no task running.",
            d.command
                .iter()
                .map(|a| crate::os::subprocess::shell_word(a))
                .collect::<Vec<_>>()
                .join(" "),
            d.permission_mode,
            d.prompt,
            d.settle.as_secs_f64()
        ),
    };
    if cli_args.is_empty() {
        return step;
    }
    let extra: Vec<String> = cli_args
        .iter()
        .map(|a| crate::os::subprocess::shell_word(a))
        .collect();
    format!("{step} Add `{}` to the command line.", extra.join(" "))
}

fn script_steps(plan: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    for (agent, steps) in &plan.agents {
        let mut parts = Vec::new();
        for step in steps {
            let mut p = String::new();
            let calls: Vec<String> = step.calls.iter().map(call_words).collect();
            if calls.len() > 1 {
                let _ = write!(p, "in one message, {}", calls.join(", "));
            } else {
                p.push_str(&calls.concat());
            }
            if let Some(say) = &step.say {
                if !p.is_empty() {
                    p.push_str(" and ");
                }
                let _ = write!(p, "says “{say}”");
                if step.ends_turn() {
                    p.push_str(" (ending its turn)");
                }
            }
            parts.push(p);
        }
        out.push(format!("`{agent}`: {}.", parts.join("; then ")));
    }
    out
}

/// `calls Bash `sleep 3` with `run_in_background: true``, `calls Agent (starting `worker`)`.
fn call_words(call: &crate::scenario::ToolCall) -> String {
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
    let mut p = format!("calls {}{detail}{bg}", call.tool);
    if let Some(s) = &call.spawn {
        let _ = write!(p, " (starting `{s}`)");
    }
    p
}

fn witness_table(v: &Verdict) -> String {
    let mut s = String::from("| time | source | agent | what |\n|---:|---|---|---|\n");
    for w in &v.witness {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            secs(w.t_ms),
            format!("{:?}", w.source).to_lowercase(),
            cell(w.agent.as_deref().unwrap_or("")),
            cell(&w.what)
        );
    }
    s
}

/// The draft, at the most detail that fits GitHub's limit.
pub fn render(d: &Draft) -> String {
    for detail in [Detail::Witness, Detail::Minimal] {
        let doc = gfm::finish(&compose(d, detail));
        if doc.chars().count() <= BODY_BUDGET {
            return doc;
        }
    }
    cut_to_limit(&gfm::finish(&compose(d, Detail::Minimal)))
}

/// A body still too long at minimal detail (a huge verdict text, say): cut at a line.
fn cut_to_limit(doc: &str) -> String {
    let note = "\n\n(The rest of this draft did not fit GitHub's limit: see `report.md` in the attached run folder.)\n";
    let keep = BODY_BUDGET - note.chars().count();
    let mut cut: String = doc.chars().take(keep).collect();
    if let Some(line) = cut.rfind('\n') {
        cut.truncate(line);
    }
    cut + note
}

fn compose(d: &Draft, detail: Detail) -> String {
    let primary = d
        .result
        .judgement
        .primary()
        .cloned()
        .expect("a judgement always has a verdict");
    let bugs = Bugs::of(&d.result.run, &d.result.judgement);
    let mut s = String::new();
    let _ = writeln!(s, "# {}\n", draft_title(d));
    let _ = writeln!(s, "**Version:** {}\n", version(d));
    super::summary::write(&mut s, d, &primary, &bugs);
    repro(&mut s, d, detail);
    expected_and_actual(&mut s, &primary, &bugs);
    sub_facts(&mut s, d);
    verdict(&mut s, d);
    checks(&mut s, d);
    let shown = shown_events(d, detail);
    timeline(&mut s, d, &shown);
    sequence(&mut s, &shown, detail);
    attachments(&mut s, d, detail);
    let _ = writeln!(
        s,
        "{}Generated by wakeprobe {} from the run's saved evidence; paths, keys and user names are redacted.{}",
        tag("sub"),
        d.result.run.wakeprobe_version,
        tag("/sub")
    );
    s
}

/// The events the timeline table and the diagram show, and how many notable ones were left
/// out: all of them, or the witness events with their neighbours.
struct Shown<'a> {
    events: Vec<&'a Event>,
    omitted: usize,
    cut: bool,
}

fn shown_events<'a>(d: &'a Draft, detail: Detail) -> Shown<'a> {
    let notable: Vec<&Event> = d.timeline.iter().filter(|e| is_notable(e)).collect();
    let j = &d.result.judgement;
    let witness: Vec<(f64, Option<&str>)> = j
        .verdicts
        .iter()
        .flat_map(|v| v.witness.iter())
        .chain(j.checks.iter().flat_map(|c| c.witness.iter()))
        .map(|w| (w.t_ms, w.agent.as_deref()))
        .collect();
    let around = if detail == Detail::Witness {
        NEIGHBOURHOOD
    } else {
        0
    };
    let mut keep = vec![false; notable.len()];
    for (i, e) in notable.iter().enumerate() {
        let is_witness = witness
            .iter()
            .any(|(t, a)| (e.t_ms - t).abs() < 0.5 && (a.is_none() || e.agent.as_deref() == *a));
        if is_witness {
            let (from, to) = (
                i.saturating_sub(around),
                (i + around + 1).min(notable.len()),
            );
            keep[from..to].iter_mut().for_each(|k| *k = true);
        }
    }
    let events: Vec<&Event> = notable
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(e, _)| *e)
        .collect();
    let omitted = notable.len() - events.len();
    Shown {
        omitted,
        events,
        cut: omitted > 0,
    }
}

/// The Mermaid diagram of the shown events (none at minimal detail).
fn sequence(s: &mut String, shown: &Shown, detail: Detail) {
    if detail == Detail::Minimal {
        return;
    }
    let _ = writeln!(s, "## Sequence\n");
    if shown.cut {
        let _ = writeln!(
            s,
            "The witness and its neighbourhood only; the attached `timeline.svg` draws the whole run.\n"
        );
    }
    let events: Vec<Event> = shown.events.iter().map(|e| (*e).clone()).collect();
    let diagram = mermaid::diagram(&Timeline::new(events));
    let _ = writeln!(s, "{}", fence("mermaid", &diagram));
}

/// What to attach to the issue: files an issue body cannot link to.
fn attachments(s: &mut String, d: &Draft, detail: Detail) {
    let mut files = Vec::new();
    if let Some(p) = d.picture {
        files.push(format!("`{p}` (the swimlane picture of the run)"));
    }
    files.push("`timeline.json` (every event on one clock)".to_string());
    if detail == Detail::Minimal && d.scenario_source.is_some() {
        files.push("`scenario.toml` (the scenario file)".to_string());
    }
    let _ = writeln!(
        s,
        "**Attachments:** from the run's folder, attach {} to the issue (drag the files into it), or the whole folder as a zip.\n",
        join_and(&files)
    );
}

/// How an opencode run is made (no standalone script exists for it: `wakeprobe run` is the
/// repro).
fn opencode_steps(plan: &Plan) -> Vec<String> {
    let d = &plan.driver;
    let start = match d.mode {
        DriverMode::Session => format!(
            "Run `opencode serve` on loopback, create a session (`POST /session`) and send the prompt “{}” (`POST /session/{{id}}/prompt_async`); dispose of the instance (`POST /instance/dispose`) once the session has been quiet for {:.0} s with no task running.",
            d.prompt,
            d.settle.as_secs_f64()
        ),
        _ => format!(
            "Run `opencode run --format json` with the prompt “{}” on its standard input.",
            d.prompt
        ),
    };
    vec![
        "Create a throwaway git project with an isolated HOME and XDG folders, with `OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS=true`, and an observer plugin that records every bus event.".to_string(),
        "Point opencode at a scripted fake of the Messages API on loopback (`opencode.json`: the `anthropic` provider's `baseURL`, a dummy key, model `anthropic/claude-sonnet-4-5`); each agent's replies come from the script below, so the model is the only fake.".to_string(),
        start,
    ]
}

/// The verdict in one sentence, how it stands against the scenario's `expect` and `want`,
/// the agreement of repeated runs, and how the run was cut short.
fn repro(s: &mut String, d: &Draft, detail: Detail) {
    let run = &d.result.run;
    let _ = writeln!(s, "## Repro\n");
    match standalone(d) {
        Ok(command) => {
            let _ = writeln!(
                s,
                "A standalone Node script reproduces this with nothing else installed (it installs Claude Code {} itself, runs its own fake API, and judges the run as wakeprobe does, checks included):\n\n{}",
                run.cli_version,
                fence("sh", &command)
            );
        }
        Err(why) => {
            let _ = writeln!(s, "{why}\n");
        }
    }
    let mut steps = match run.backend {
        crate::backend::BackendKind::Opencode => {
            let _ = writeln!(s, "What the run does, step by step:\n");
            opencode_steps(d.plan)
        }
        _ => {
            let _ = writeln!(s, "What the script does, step by step:\n");
            vec![
                "Create a throwaway git project with an isolated HOME (workspace trust pre-accepted) and a hook recorder on every hook event.".to_string(),
                "Point the CLI at a scripted fake of the Messages API on loopback (`ANTHROPIC_BASE_URL`, a dummy key); each agent's replies come from the script below, so the model is the only fake.".to_string(),
                driver_step(d.plan, &run.cli_args),
            ]
        }
    };
    for line in script_steps(d.plan) {
        steps.push(format!("The model script: {line}"));
    }
    for fault in &d.plan.faults {
        let from = match fault.line {
            0 => "`--fault`".to_string(),
            line => format!("line {line} of the scenario"),
        };
        let hit = d
            .result
            .judgement
            .faults
            .iter()
            .find(|r| r.line == fault.line && r.fault == fault.describe());
        match hit {
            Some(r) if !r.applied => steps.push(format!(
                "Fault planned ({from}): {}; {}.",
                fault.describe(),
                r.detail
            )),
            _ => steps.push(format!("Injected fault ({from}): {}.", fault.describe())),
        }
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
        let _ = writeln!(s, "{}. {}", i + 1, step.replace(['\r', '\n'], " "));
    }
    let _ = writeln!(
        s,
        "\nOne command reproduces it, offline, with no API key:\n\n{}",
        fence("sh", &run.command)
    );
    if let Some(src) = d.scenario_source.filter(|_| detail != Detail::Minimal) {
        let _ = writeln!(
            s,
            "{}{}Scenario file ({}.toml){}\n\n{}\n{}\n",
            tag("details"),
            tag("summary"),
            run.scenario,
            tag("/summary"),
            fence("toml", src.trim_end()),
            tag("/details")
        );
    }
}

/// Expected and Actual: of the verdict unless only checks show the bug, then of each check
/// that fails its `want` (with its witness); of both when both do.
fn expected_and_actual(s: &mut String, primary: &Verdict, bugs: &Bugs) {
    let of_verdict = bugs.verdict || bugs.checks.is_empty();
    let mut expected = Vec::new();
    let mut actual = Vec::new();
    if of_verdict {
        expected.push(expected_text(primary));
        actual.push(primary.explanation.clone());
    }
    for c in &bugs.checks {
        expected.push(format!(
            "“{}”: `{}`.",
            c.name,
            c.want.as_deref().unwrap_or_default()
        ));
        let shown_by = if c.witness.is_empty() {
            String::new()
        } else {
            ", shown by:".to_string()
        };
        let mut text = format!("“{}”: `{}`{shown_by}", c.name, c.observed);
        for w in &c.witness {
            text.push_str(&format!("\n- {}", super::witness_line(w)));
        }
        actual.push(text);
    }
    let _ = writeln!(s, "## Expected\n\n{}\n", expected.join("\n\n"));
    let _ = writeln!(s, "## Actual\n\n{}\n", actual.join("\n\n"));
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

/// Each waiter's verdict with its minimal witness. The primary verdict's explanation is the
/// Actual section; only the others' are written here.
fn verdict(s: &mut String, d: &Draft) {
    let j = &d.result.judgement;
    let _ = writeln!(s, "## Verdict\n");
    let primary = j.primary();
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
        if primary != Some(v) {
            let _ = writeln!(s, "{}\n", v.explanation);
        }
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
    // The `want` column only where a check states what the CLI should observe.
    let wants = j.checks.iter().any(|c| c.want.is_some());
    let _ = writeln!(
        s,
        "### Checks\n\n| check | observed | expected |{} result |\n|---|---|---|{}---|",
        if wants { " want |" } else { "" },
        if wants { "---|" } else { "" }
    );
    for c in &j.checks {
        let result = match (c.passed, &c.expected) {
            _ if c.vacuous => "**vacuous** (no selector matched any event)",
            _ if c.meets_want == Some(false) => "**the bug** (its `want` is not met)",
            (Some(true), _) => "pass",
            (Some(false), _) => "**fail**",
            (None, Some(_)) => "open (the run was cut short)",
            (None, None) => "recorded",
        };
        let want = match (&c.want, c.meets_want) {
            _ if !wants => String::new(),
            (None, _) => " - |".into(),
            (Some(w), Some(false)) => format!(" {} (**not met**) |", cell(w)),
            (Some(w), _) => format!(" {} |", cell(w)),
        };
        let _ = writeln!(
            s,
            "| `{}` | {} | {} |{want} {result} |",
            cell(&c.name),
            cell(&c.observed),
            cell(c.expected.as_deref().unwrap_or("-"))
        );
    }
    let _ = writeln!(s);
    for c in &j.checks {
        let layer = c
            .layer
            .map(|l| format!(" At fault: {}.", l.words()))
            .unwrap_or_default();
        let _ = writeln!(s, "`{}`: {}{layer}\n", c.name, c.explanation);
        for w in &c.witness {
            let _ = writeln!(s, "- {}", super::witness_line(w));
        }
        if !c.witness.is_empty() {
            let _ = writeln!(s);
        }
    }
}

/// The shown events on one clock; what the harness's cleanup did after a cut is shown, and
/// said to be such.
fn timeline(s: &mut String, d: &Draft, shown: &Shown) {
    let run = &d.result.run;
    let _ = writeln!(s, "## Timeline\n");
    let _ = writeln!(
        s,
        "All sources on one clock, seconds since the run started (every event is in the attached `timeline.json`)."
    );
    if shown.cut {
        let _ = writeln!(
            s,
            "Shown are the witness events of the verdicts and checks and their neighbours; {} left out.",
            super::plural(shown.omitted, "notable event is", "notable events are")
        );
    }
    let _ = writeln!(s, "\n| time | source | agent | event |\n|---:|---|---|---|");
    let cut_t = run
        .end
        .cut_short()
        .then(|| d.timeline.iter().find(|e| e.kind.ends_the_run()))
        .flatten()
        .map(|e| e.t_ms);
    let mut last: Option<&Event> = None;
    for e in &shown.events {
        if shown.cut && last.is_some_and(|l| !adjacent(d, l, e)) {
            let _ = writeln!(s, "| … | | | |");
        }
        last = Some(e);
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
            cell(e.agent.as_deref().unwrap_or("")),
            cell(&describe(e))
        );
    }
    let _ = writeln!(s);
}

/// Whether `b` directly follows `a` among the notable events.
fn adjacent(d: &Draft, a: &Event, b: &Event) -> bool {
    let mut notable = d.timeline.iter().filter(|e| is_notable(e));
    notable.any(|e| std::ptr::eq(e, a)) && notable.next().is_some_and(|e| std::ptr::eq(e, b))
}
