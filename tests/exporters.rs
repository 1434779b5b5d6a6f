//! Every exporter over fixed runs: two real runs of the seed-000 scenario on the pinned CLI
//! (print: the stall; session: the re-invocation), saved as evidence in tests/fixtures/runs.
//! Snapshots catch any change of output; the Mermaid block is checked against the grammar; the
//! JUnit files are checked to be well-formed here (no xmllint needed) and kept, with
//! `WAKEPROBE_JUNIT_SAMPLES`, for `.ci/run` to validate against the JUnit XSD.

mod common;

use std::path::{Path, PathBuf};

use wakeprobe::checks::CheckResult;
use wakeprobe::classify::result::{RunResult, Summary};
use wakeprobe::report::{junit, markdown, mermaid, svg, terminal};
use wakeprobe::store::saved::SavedRun;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs")
        .join(name)
}

fn load(name: &str) -> (SavedRun, RunResult) {
    let saved = SavedRun::load(&fixture(name)).unwrap();
    let result = saved.judge();
    (saved, result)
}

fn summary(results: &[(&RunResult, &str)]) -> Summary {
    let rows: Vec<(RunResult, String)> = results
        .iter()
        .map(|(r, d)| ((*r).clone(), d.to_string()))
        .collect();
    Summary::build("fixture", &rows, &[], false)
}

#[test]
fn the_fixtures_judge_as_they_did_when_captured() {
    assert_eq!(
        load("seed000-print").1.judgement.outcome.as_str(),
        "not-resumable"
    );
    assert_eq!(load("seed000-session").1.judgement.outcome.as_str(), "woke");
}

#[test]
fn markdown_draft() {
    let (saved, result) = load("seed000-print");
    let draft = markdown::Draft {
        result: &result,
        timeline: &saved.timeline,
        plan: &saved.plan,
        scenario_source: saved.scenario_source.as_deref(),
        agreement: Some("not-resumable 5/5"),
        picture: Some("timeline.svg"),
    };
    let md = markdown::render(&draft);
    for section in [
        "# ",
        "**Version:** Claude Code 2.1.332",
        "## Summary",
        "## Repro",
        "## Expected",
        "## Actual",
        "## Confirmed sub-facts",
        "## Verdict",
        "Minimal witness:",
        "## Timeline",
        "```mermaid",
        "<details><summary>Scenario file",
        "wakeprobe run scenarios/subagent-bg-turn-end.toml",
        "not-resumable 5/5",
        "timeline.svg",
    ] {
        assert!(md.contains(section), "missing `{section}`");
    }
    let block = md
        .split("```mermaid\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    mermaid::check(block).unwrap();
    insta::assert_snapshot!("markdown_seed000_print", md);
}

/// The draft's Summary as a maintainer reads it: what happens first, the scenario's own
/// contrast and workaround when it gives them, the stall guard only for a subagent left on its
/// own background command, and the measurement after.
#[test]
fn the_summary_leads_with_what_happens_then_the_contrast_and_the_workaround() {
    let summary_of = |plan: &wakeprobe::scenario::Plan, result: &RunResult, saved: &SavedRun| {
        let md = markdown::render(&markdown::Draft {
            result,
            timeline: &saved.timeline,
            plan,
            scenario_source: None,
            agreement: None,
            picture: None,
        });
        md.split("## Summary\n")
            .nth(1)
            .unwrap()
            .split("\n## ")
            .next()
            .unwrap()
            .to_string()
    };
    let (saved, result) = load("seed000-print");
    let text = summary_of(&saved.plan, &result, &saved);
    let happens = text.find("The background subagent `worker` ends its turn while the `run_in_background` Bash command `bg`").expect(&text);
    let guard = text
        .find("**Workaround:** a `SubagentStop` hook")
        .expect(&text);
    let measured = text
        .find("**Measured:** the verdict is **not-resumable**")
        .expect(&text);
    assert!(happens < guard && guard < measured, "{text}");
    assert!(
        !text.contains("The case that works"),
        "no contrast given: {text}"
    );

    let mut plan = saved.plan.clone();
    plan.contrast = Some("A top-level agent doing the same is re-invoked.".into());
    plan.workaround = Some("Poll in the foreground.".into());
    let text = summary_of(&plan, &result, &saved);
    assert!(
        text.contains("**The case that works:** A top-level agent doing the same is re-invoked."),
        "{text}"
    );
    assert!(
        text.contains("**Workaround:** Poll in the foreground."),
        "{text}"
    );
    assert!(
        !text.contains("SubagentStop"),
        "the scenario's own workaround replaces the guard: {text}"
    );

    // Woken, the guard is not offered; nor for the main agent.
    let (saved, result) = load("seed000-session");
    let text = summary_of(&saved.plan, &result, &saved);
    assert!(text.contains("and is woken"), "{text}");
    assert!(!text.contains("**Workaround:**"), "{text}");
    // The main agent left on a background command of its own, as the worker was.
    let mut plan = saved.plan.clone();
    plan.agents["main"] = plan.agents["worker"].clone();
    let mut v = result.judgement.verdicts[0].clone();
    v.waiter = "main".into();
    v.work = "bg".into();
    v.outcome = wakeprobe::classify::Outcome::NotResumable;
    let mut main = result.clone();
    main.judgement.verdicts = vec![v];
    let text = summary_of(&plan, &main, &saved);
    assert!(
        text.starts_with("\nThe main agent ends its turn while the `run_in_background` Bash command `bg` (`sleep 8; echo bg-done`) it started"),
        "{text}"
    );
    assert!(
        !text.contains("**Workaround:**"),
        "the guard is for subagents: {text}"
    );
}

#[test]
fn mermaid_of_both_runs_parses() {
    for name in ["seed000-print", "seed000-session"] {
        let (saved, _) = load(name);
        let diagram = mermaid::diagram(&saved.timeline);
        mermaid::check(&diagram).unwrap_or_else(|e| panic!("{name}: {e}\n{diagram}"));
    }
}

#[test]
fn json_result() {
    let (_, result) = load("seed000-session");
    insta::assert_json_snapshot!("result_seed000_session", result);
}

#[test]
fn terminal_table() {
    let (p, pr) = load("seed000-print");
    let (s, sr) = load("seed000-session");
    let sum = summary(&[(&pr, "print"), (&sr, "session")]);
    let table = terminal::summary(
        &sum,
        &[(&pr, &p.timeline), (&sr, &s.timeline)],
        false,
        terminal::DEFAULT_WIDTH,
    );
    insta::assert_snapshot!("terminal_seed000", table);
}

#[test]
fn terminal_table_at_80_columns_fits_with_whole_verdicts() {
    let (p, pr) = load("seed000-print");
    let (s, sr) = load("seed000-session");
    let sum = summary(&[(&pr, "print"), (&sr, "session")]);
    let pairs = [(&pr, &p.timeline), (&sr, &s.timeline)];
    let table = terminal::summary(&sum, &pairs, false, 80);
    for line in table.lines() {
        assert!(line.chars().count() <= 80, "{line:?}\n{table}");
    }
    // The handoffs would wrap a word a row: left out. The verdict, its expectation mark and
    // the times are never cut; a run takes at most two rows.
    assert!(!table.contains("key handoffs"), "{table}");
    assert!(
        table.contains("┆ not-resumable ✓ ┆ -       ┆ 6.9s"),
        "{table}"
    );
    assert!(
        table.contains("┆ woke ✓          ┆ 0.06s   ┆ 11.8s"),
        "{table}"
    );
    assert!(table.lines().count() <= 4 + 2 * 2, "{table}");
    // Names kept whole, one row each; the CLI, the same on every row, named once above.
    for name in [
        "subagent-bg-turn-end/print ",
        "subagent-bg-turn-end/session ",
    ] {
        assert!(table.contains(name), "{name} whole in\n{table}");
    }
    assert_eq!(table.matches("claude-2.1.332").count(), 1, "{table}");
    assert!(table.starts_with("cli: claude-2.1.332\n"), "{table}");
    insta::assert_snapshot!("terminal_seed000_80_columns", table);
}

#[test]
fn svg_picture() {
    let (saved, result) = load("seed000-print");
    let picture = svg::render(&saved.timeline, &svg::Caption::of("seed000 print", &result));
    assert!(picture.starts_with("<svg") && picture.trim_end().ends_with("</svg>"));
    insta::assert_snapshot!("svg_seed000_print", picture);
}

#[test]
fn junit_xml_is_the_snapshot_and_a_sample_for_the_xsd() {
    let (_, pr) = load("seed000-print");
    let (_, mut sr) = load("seed000-session");
    // One failing case, to cover <failure>.
    sr.matches_expect = Some(false);
    sr.expect = wakeprobe::classify::Outcome::parse("not-resumable").map(Into::into);
    let sum = summary(&[(&pr, "print"), (&sr, "session")]);
    let xml = junit::render(&sum, &[&pr, &sr], &[]);
    insta::assert_snapshot!("junit_seed000", xml);
    common::junit::checked_and_kept(&xml).unwrap_or_else(|p| panic!("{p:#?}\n{xml}"));
}

/// The case of one cell, by its name's start.
fn junit_case<'a>(xml: &'a str, name: &str) -> &'a str {
    let start = xml
        .find(&format!("<testcase name=\"{name}"))
        .unwrap_or_else(|| panic!("no case {name} in\n{xml}"));
    let end = xml[start..].find("</testcase>").unwrap() + start;
    &xml[start..end]
}

#[test]
fn junit_errors_for_undecided_and_crashed_runs_and_names_what_failed() {
    use wakeprobe::classify::Outcome;
    use wakeprobe::evidence::ExitDesc;
    let (_, pr) = load("seed000-print");
    let (_, sr) = load("seed000-session");
    // Undecided where a verdict is expected: an error, even with no expectation stated.
    let mut unknown = sr.clone();
    unknown.judgement.outcome = Outcome::Unknown;
    unknown.expect = None;
    unknown.matches_expect = None;
    // Crashed: the CLI died on a signal the harness did not send, whatever the verdict.
    let mut crashed = pr.clone();
    crashed.run.variant = "crashed".into();
    crashed.run.cli_exit = Some(ExitDesc::Signal(11));
    let sum = summary(&[(&unknown, "session"), (&crashed, "crashed")]);
    let xml = junit::render(&sum, &[&unknown, &crashed], &[]);
    common::junit::checked_and_kept(&xml).unwrap_or_else(|p| panic!("{p:#?}\n{xml}"));
    let case = junit_case(&xml, "subagent-bg-turn-end/session");
    assert!(
        case.contains("<error") && case.contains("type=\"undecided\""),
        "{case}"
    );
    let case = junit_case(&xml, "subagent-bg-turn-end/crashed");
    assert!(
        case.contains("<error") && case.contains("the CLI crashed (SIGSEGV)"),
        "{case}"
    );
    // A failed verdict names what was expected and what came; system-out has the report's
    // path and the prose.
    let mut differs = sr.clone();
    differs.expect = Some(Outcome::NotResumable.into());
    differs.matches_expect = Some(false);
    let sum = summary(&[(&differs, "session")]);
    let xml = junit::render(&sum, &[&differs], &[]);
    let case = junit_case(&xml, "subagent-bg-turn-end/session");
    assert!(
        case.contains("<failure") && case.contains("expected not-resumable, got woke 1/1"),
        "{case}"
    );
    assert!(case.contains("report: session/report.md"), "{case}");
    let prose = &differs.judgement.primary().unwrap().explanation;
    // Escaped as quick-junit writes text (with quick-xml's escaper).
    let escaped = quick_xml::escape::escape(prose);
    assert!(case.contains(&format!("woke: {escaped}")), "{case}");
}

/// A missed check or a broken invariant is a `<failure>` in its own words (its name, what it
/// observed and expected, its explanation and witness, not the verdict's prose); a declared
/// break fails nothing; each suite has its `time` and each case the scenario's `file`.
#[test]
fn junit_names_the_check_or_invariant_that_failed_in_its_own_words() {
    let (_, sr) = load("seed000-session");
    let mut broke = sr.clone();
    broke.run.scenario_file = Some("scenarios/subagent-bg-turn-end.toml".into());
    let invariant = CheckResult {
        name: "every SubagentStart has exactly one SubagentStop".into(),
        kind: "query:pairs".into(),
        agent: None,
        observed: "no".into(),
        expected: Some("yes".into()),
        passed: Some(false),
        want: None,
        meets_want: None,
        witness: vec![],
        explanation: "worker started and never stopped".into(),
        matched: vec![],
        vacuous: false,
        may_break: None,
        layer: None,
        describes: None,
    };
    broke.judgement.invariants = vec![invariant.clone()];
    let broke = RunResult::new(&broke.run, broke.judgement);
    assert_eq!(broke.matches_expect, Some(false));
    let sum = summary(&[(&broke, "session")]);
    let xml = junit::render(&sum, &[&broke], &[]);
    common::junit::checked_and_kept(&xml).unwrap_or_else(|p| panic!("{p:#?}\n{xml}"));
    let case = junit_case(&xml, "subagent-bg-turn-end/session");
    assert!(
        case.contains(r#"file="scenarios/subagent-bg-turn-end.toml""#),
        "{case}"
    );
    assert!(
        case.contains(r#"type="invariant""#)
            && case.contains("invariant `every SubagentStart has exactly one SubagentStop` broke: observed no, expected yes")
            && case.contains("worker started and never stopped"),
        "{case}"
    );
    let suite = &xml[xml.find("<testsuite ").unwrap()..];
    let suite = &suite[..suite.find('>').unwrap()];
    assert!(suite.contains(" time=\""), "{suite}");

    // Declared by the scenario: reported, and the run passes.
    let mut declared = sr.clone();
    declared.judgement.invariants = vec![CheckResult {
        may_break: Some("measured".into()),
        layer: None,
        ..invariant
    }];
    let declared = RunResult::new(&declared.run, declared.judgement);
    assert_eq!(declared.matches_expect, Some(true));

    // A failed check beside it: `check`, in the check's words.
    let mut checked = broke.clone();
    checked.judgement.checks = vec![CheckResult {
        name: "told".into(),
        observed: "0".into(),
        expected: Some("1".into()),
        explanation: "no notification reached main".into(),
        ..checked.judgement.invariants[0].clone()
    }];
    let sum = summary(&[(&checked, "session")]);
    let xml = junit::render(&sum, &[&checked], &[]);
    let case = junit_case(&xml, "subagent-bg-turn-end/session");
    assert!(
        case.contains(r#"type="check""#)
            && case
                .contains("check `told`: observed 0, expected 1; invariant `every SubagentStart")
            && case.contains("check `told`: no notification reached main"),
        "{case}"
    );
}

fn draft<'a>(saved: &'a SavedRun, result: &'a RunResult) -> markdown::Draft<'a> {
    markdown::Draft {
        result,
        timeline: &saved.timeline,
        plan: &saved.plan,
        scenario_source: saved.scenario_source.as_deref(),
        agreement: None,
        picture: Some("timeline.svg"),
    }
}

/// What GitHub would read as raw HTML in a Markdown document (a GFM parse: tables,
/// strikethrough, task lists), and the text it would show.
fn gfm_html_and_text(md: &str) -> (Vec<String>, String) {
    use pulldown_cmark::{Event, Options, Parser};
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let (mut html, mut text) = (Vec::new(), String::new());
    for event in Parser::new_ext(md, options) {
        match event {
            Event::Html(h) | Event::InlineHtml(h) => html.push(h.trim().to_string()),
            Event::Text(t) | Event::Code(t) => text.push_str(&t),
            _ => {}
        }
    }
    (html, text)
}

const INTENDED_HTML: [&str; 5] = [
    "<details><summary>",
    "</summary>",
    "</details>",
    "<sub>",
    "</sub>",
];

#[test]
fn report_md_shows_html_from_agents_and_the_cli_as_text() {
    // An agent's text made of tags, and a user's input with tags beside the CLI's own injected
    // `<system-reminder>` (in the captured run's requests): the reminder is folded away, the
    // rest shown as text.
    let (mut saved, _) = load("interrupt-stop");
    for e in saved.timeline.events.iter_mut() {
        match &mut e.kind {
            wakeprobe::evidence::EventKind::TurnEnded { text, .. } => {
                *text = "<b>done</b> & <img src=x onerror=alert(1)>\n| not a row".into();
            }
            wakeprobe::evidence::EventKind::ModelRequest {
                injected: Some(text),
                ..
            } => {
                *text = format!("{text} Use <i>this</i> one");
            }
            _ => {}
        }
    }
    let result = saved.judge();
    let md = markdown::render(&draft(&saved, &result));
    let (html, text) = gfm_html_and_text(&md);
    for h in &html {
        assert!(
            INTENDED_HTML.iter().any(|i| h.starts_with(i)),
            "raw HTML GitHub would hide or render: {h}"
        );
    }
    for visible in [
        "<b>done</b> & <img src=x onerror=alert(1)>",
        "Use <i>this</i> one",
    ] {
        assert!(
            text.contains(visible),
            "`{visible}` is not shown as text:\n{text}"
        );
    }
    assert!(
        !text.contains("system-reminder") && !text.contains("gitStatus"),
        "the CLI's injected context is folded away:\n{text}"
    );
}

#[test]
fn report_md_says_each_thing_once_and_links_nothing_an_issue_cannot_reach() {
    let (saved, result) = load("seed000-print");
    let md = markdown::render(&draft(&saved, &result));
    let explanation = &result.judgement.primary().unwrap().explanation;
    assert_eq!(md.matches(explanation.as_str()).count(), 1, "{md}");
    let paragraphs: Vec<&str> = md
        .split("\n\n")
        .map(str::trim)
        .filter(|p| p.len() > 40)
        .collect();
    for (i, p) in paragraphs.iter().enumerate() {
        assert!(!paragraphs[i + 1..].contains(p), "repeated: {p}");
    }
    // Links: only absolute URLs would work in an issue, and the draft needs none.
    use pulldown_cmark::{Event, Parser, Tag};
    for event in Parser::new(&md) {
        if let Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) = event {
            panic!("a link an issue cannot follow: {dest_url}");
        }
    }
    assert!(md.contains("attach `timeline.svg`"), "{md}");
    assert!(!md.contains("(s)"), "plurals are written out: {md}");
}

#[test]
fn pictures_draw_control_and_injected_inputs() {
    let (mut saved, result) = load("interrupt-stop");
    // A user's words beside the CLI's own reminder in the last request that has injected text.
    if let Some(wakeprobe::evidence::EventKind::ModelRequest {
        injected: Some(text),
        ..
    }) = saved
        .timeline
        .events
        .iter_mut()
        .map(|e| &mut e.kind)
        .rfind(|k| {
            matches!(
                k,
                wakeprobe::evidence::EventKind::ModelRequest {
                    injected: Some(_),
                    ..
                }
            )
        })
    {
        *text = format!("{text} Use the short check.");
    }
    let diagram = mermaid::diagram(&saved.timeline);
    mermaid::check(&diagram).unwrap_or_else(|e| panic!("{e}\n{diagram}"));
    let worker = diagram
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("participant ")?
                .strip_suffix(" as worker")
        })
        .expect("a worker participant")
        .to_string();
    assert!(
        diagram.contains(&format!(
            "P0->>{worker}: stop_task control request (2.46 s)"
        )),
        "{diagram}"
    );
    assert!(
        diagram.contains("Note over P1: injected text: Use the short check."),
        "{diagram}"
    );
    assert!(
        !diagram.contains("system-reminder"),
        "folded away: {diagram}"
    );
    let picture = svg::render(
        &saved.timeline,
        &svg::Caption::of("interrupt-stop", &result),
    );
    // The stop_task mark sits in the worker's lane, labelled.
    let control = picture
        .lines()
        .find(|l| l.contains(r#"data-mark="control""#))
        .expect("a control mark");
    assert!(
        control.contains("worker: control request stop_task"),
        "{control}"
    );
    assert!(picture.contains(r#"data-mark="injected""#));
    assert!(picture.contains(">stop_task</text>"));
    // The verdict is on it, and every kind of mark drawn has a legend entry.
    assert!(
        picture.contains(&format!("verdict: {}", result.judgement.outcome)),
        "{picture}"
    );
    for kind in picture.split(r#"data-mark=""#).skip(1) {
        let kind = &kind[..kind.find('"').unwrap()];
        assert!(
            picture.contains(&format!(r#"data-legend="{kind}""#)),
            "no legend for `{kind}`"
        );
    }
}

#[test]
fn close_key_moments_get_a_zoomed_inset() {
    // seed000-print: the worker ends its turn at 1.43 s and is finalized at 1.46 s, on a 6.9 s
    // run: 4 px apart on the run's scale.
    let (saved, result) = load("seed000-print");
    let picture = svg::render(&saved.timeline, &svg::Caption::of("seed000 print", &result));
    assert!(picture.contains("data-zoom"), "an inset is drawn");
    let finalized: Vec<f64> = picture
        .lines()
        .filter(|l| l.contains(r#"data-mark="finalized""#) && l.contains("<title>"))
        .map(|l| {
            let x = l.split("x=\"").nth(1).unwrap();
            x[..x.find('"').unwrap()].parse().unwrap()
        })
        .collect();
    let turn_end: Vec<f64> = picture
        .lines()
        .filter(|l| {
            l.contains(r#"data-mark="turn-end""#) && l.contains("1.43") && l.contains("worker")
        })
        .map(|l| {
            let x = l.split("x=\"").nth(1).unwrap();
            x[..x.find('"').unwrap()].parse().unwrap()
        })
        .collect();
    assert_eq!(
        (finalized.len(), turn_end.len()),
        (2, 2),
        "drawn in both panels"
    );
    let gaps: Vec<f64> = (0..2).map(|i| (finalized[i] - turn_end[i]).abs()).collect();
    assert!(
        gaps[0] < 14.0 && gaps[1] > 30.0,
        "apart in the inset: {gaps:?}"
    );
}

#[test]
fn a_huge_timeline_fits_github_with_the_witness_kept() {
    use wakeprobe::evidence::{Event, EventKind, ExitDesc, Source};
    let (mut saved, _) = load("seed000-print");
    for i in 0..10_000u32 {
        saved.timeline.events.push(Event {
            t_ms: 2000.0 + i as f64 * 0.4,
            source: Source::Os,
            agent: None,
            kind: EventKind::ProcessExited {
                pid: 100_000 + i,
                exit: ExitDesc::Code(0),
                command: Some(format!("helper-{i} <with> a long & noisy command line")),
            },
        });
    }
    saved.timeline = wakeprobe::evidence::Timeline::new(saved.timeline.events);
    let result = saved.judge();
    assert_eq!(result.judgement.outcome.as_str(), "not-resumable");
    let md = markdown::render(&draft(&saved, &result));
    assert!(
        md.chars().count() <= markdown::BODY_LIMIT,
        "{} characters",
        md.chars().count()
    );
    for kept in [
        "finalized (SubagentStop)",
        "ends its turn: “The run will re-invoke me",
    ] {
        assert!(md.contains(kept), "the witness is kept: {kept}");
    }
    assert!(
        md.contains("notable events are left out"),
        "the cut is said"
    );
    assert!(md.contains("attached `timeline.json`"));
    let block = md
        .split("```mermaid\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    mermaid::check(block).unwrap();
    let (html, _) = gfm_html_and_text(&md);
    assert!(
        html.iter()
            .all(|h| INTENDED_HTML.iter().any(|i| h.starts_with(i))),
        "{html:?}"
    );
}

/// A draft (title.txt, and with it the `gh` line) only for the real CLI when the verdict is not
/// the behaviour the scenario wants; otherwise the report says why there is nothing to file.
#[test]
fn a_draft_is_offered_only_where_the_real_cli_shows_the_bug() {
    use wakeprobe::classify::Outcome;
    use wakeprobe::classify::filing::{Filing, filing};
    let (saved, result) = load("seed000-print");
    assert_eq!(result.judgement.outcome, Outcome::NotResumable);
    let mut bug = result.clone();
    bug.run.want = Some(Outcome::Woke);
    let mut fixed = result.clone();
    fixed.run.want = Some(Outcome::NotResumable);
    let mut unstated = result.clone();
    unstated.run.want = None;
    let mut sim = bug.clone();
    sim.run.backend = wakeprobe::backend::BackendKind::Sim {
        profile: "default".into(),
    };
    // Undecided, with a check that fails its `want`: no title either.
    let mut undecided = bug.clone();
    undecided.judgement.outcome = Outcome::Unknown;
    undecided.judgement.verdicts[0].outcome = Outcome::Unknown;
    undecided.judgement.verdicts[0].reason = Some("`worker`'s script ran out".into());
    let mut check = wakeprobe::checks::CheckResult {
        name: "c".into(),
        kind: "query:count".into(),
        agent: None,
        observed: "2".into(),
        expected: Some("2".into()),
        passed: Some(true),
        want: Some("1".into()),
        meets_want: Some(false),
        witness: vec![],
        explanation: String::new(),
        matched: vec![],
        vacuous: false,
        may_break: None,
        layer: None,
        describes: None,
    };
    check.describes = Some("Reported twice".into());
    undecided.judgement.checks = vec![check];
    let redactor = wakeprobe::store::redact::Redactor::basic();
    for (case, r, files) in [
        ("bug", &bug, true),
        ("fixed", &fixed, false),
        ("no want", &unstated, false),
        ("simulator", &sim, false),
        ("undecided", &undecided, false),
    ] {
        assert_eq!(filing(&r.run, &r.judgement) == Filing::Bug, files, "{case}");
        let dir = tempfile::tempdir().unwrap();
        // A title left by an earlier rendering goes when there is nothing to file.
        std::fs::write(dir.path().join("title.txt"), "stale\n").unwrap();
        wakeprobe::report::write_run_reports(
            dir.path(),
            &redactor,
            r,
            &saved.timeline,
            &saved.plan,
            None,
            None,
        )
        .unwrap();
        assert_eq!(dir.path().join("title.txt").exists(), files, "{case}");
        let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
        assert_eq!(!md.contains("**Not an issue draft:**"), files, "{case}");
        assert!(!md.contains("**this differs**") || case == "bug", "{case}");
        // The standalone script runs the real CLI: a simulator run's draft offers none, and
        // names the profile instead.
        assert_eq!(
            md.contains("wakeprobe export subagent-bg-turn-end"),
            case != "simulator",
            "{case}"
        );
        assert_eq!(
            md.contains("claude-sim, the simulator, with profile `default`"),
            case == "simulator",
            "{case}"
        );
    }
}

/// A check that fails its `want` is a bug to file even where the verdict is what the CLI should
/// give: the title, the Summary, Expected and Actual speak of that check (and of the verdict
/// too where both fail), and nothing says "differs" where the values match.
#[test]
fn a_draft_speaks_of_the_check_that_fails_its_want() {
    use wakeprobe::classify::Outcome;
    use wakeprobe::classify::filing::{Filing, filing};
    let (saved, mut result) = load("seed000-session");
    assert_eq!(result.judgement.outcome, Outcome::Woke);
    result.run.want = Some(Outcome::Woke);
    let check = |meets_want: bool| CheckResult {
        name: "the stop lists the idle teammate as idle".into(),
        kind: "query:exists".into(),
        agent: None,
        observed: if meets_want { "yes" } else { "no" }.into(),
        expected: Some("no".into()),
        passed: Some(!meets_want),
        want: Some("yes".into()),
        meets_want: Some(meets_want),
        witness: vec![],
        explanation: "No Stop payload lists the teammate as idle.".into(),
        matched: vec![("exists".into(), 0)],
        vacuous: false,
        may_break: None,
        layer: None,
        describes: None,
    };
    let mut unmet = result.clone();
    unmet.judgement.checks = vec![check(false)];
    let mut met = result.clone();
    met.judgement.checks = vec![check(true)];
    assert_eq!(filing(&unmet.run, &unmet.judgement), Filing::Bug);
    assert_eq!(
        filing(&met.run, &met.judgement),
        Filing::Nothing(
            "the CLI does what it should (`woke`) and check “the stop lists the idle teammate as idle” observes what it should (`yes`)".into()
        )
    );
    let md = markdown::render(&draft(&saved, &unmet));
    let title = markdown::draft_title(&draft(&saved, &unmet));
    let headline = "check “the stop lists the idle teammate as idle” observes `no` where the CLI should give `yes`";
    assert_eq!(
        title,
        "the stop lists the idle teammate as idle: `no` where the CLI should give `yes`"
    );
    let section = |name: &str| {
        let from = md.find(&format!("## {name}\n")).unwrap();
        let rest = &md[from + name.len() + 4..];
        rest[..rest.find("\n## ").unwrap()].to_string()
    };
    assert!(section("Summary").contains(headline), "{md}");
    assert!(
        section("Summary").contains("as the scenario expects (`no`)"),
        "{md}"
    );
    assert!(!md.contains("differs"), "{md}");
    // Expected and Actual in the check's words and values, no query jargon.
    assert!(
        section("Expected").contains("“the stop lists the idle teammate as idle”: `yes`."),
        "{md}"
    );
    assert!(!section("Expected").contains("query:"), "{md}");
    assert!(
        !section("Expected").contains("receives its completion"),
        "{md}"
    );
    assert!(
        section("Actual").contains("“the stop lists the idle teammate as idle”: `no`"),
        "{md}"
    );
    // The wake-up works as wanted: the Summary says so, and that the bug is the check's.
    assert!(
        section("Summary").contains("the wake-up itself is not the bug")
            && !section("Summary").contains("is the behaviour the CLI should have"),
        "{md}"
    );
    // Both fail: the title is the verdict's, in the CLI's terms; Expected speaks of both.
    let mut both = unmet.clone();
    both.run.want = Some(Outcome::NotResumable);
    let title = markdown::draft_title(&draft(&saved, &both));
    assert_eq!(
        title,
        "Background subagent is woken when its run_in_background command ends"
    );
    let md = markdown::render(&draft(&saved, &both));
    let expected = &md[md.find("## Expected").unwrap()..md.find("## Actual").unwrap()];
    assert!(
        expected.contains("receives its completion") && expected.contains("idle”: `yes`"),
        "{expected}"
    );
    // A check that says its bug in the CLI's terms (`describes`): that sentence is the title
    // and leads the Summary.
    let mut described = unmet.clone();
    described.judgement.checks[0].describes =
        Some("An idle teammate is listed in Stop payloads as a running one".into());
    let title = markdown::draft_title(&draft(&saved, &described));
    assert_eq!(
        title,
        "An idle teammate is listed in Stop payloads as a running one"
    );
    let md = markdown::render(&draft(&saved, &described));
    assert!(
        md.contains(
            "## Summary\n\n**An idle teammate is listed in Stop payloads as a running one.**"
        ),
        "{md}"
    );
}

/// A check that puts the fault in an integration under test: the terminal names the layer in
/// words under the verdict and on the check's line, the draft says it beside the check, and it
/// is no Claude Code issue even where it fails a `want`.
#[test]
fn the_layer_at_fault_is_named_and_an_integrations_bug_is_not_filed() {
    use wakeprobe::checks::Layer;
    use wakeprobe::classify::Outcome;
    use wakeprobe::classify::filing::{Filing, filing};
    let (saved, mut result) = load("seed000-session");
    result.run.want = Some(Outcome::Woke);
    let check = |layer: Layer| CheckResult {
        name: "the CLI-started turn is shown exactly once".into(),
        kind: "cli-turn-shown-once".into(),
        agent: None,
        observed: "dropped".into(),
        expected: Some("once".into()),
        passed: Some(false),
        want: Some("once".into()),
        meets_want: Some(false),
        witness: vec![],
        explanation: "The integration dropped the CLI's own turn.".into(),
        matched: vec![],
        vacuous: false,
        may_break: None,
        layer: Some(layer),
        describes: None,
    };
    let mut integration = result.clone();
    integration.judgement.checks = vec![check(Layer::Integration)];
    let lines = terminal::verdict_lines(&integration);
    assert!(
        lines.contains("\n  at fault: the integration (the CLI sent what it should, and the integration dropped or misread it; 1 check)"),
        "{lines}"
    );
    assert!(
        lines.contains("observed dropped (at fault: the integration), expected once: FAIL"),
        "{lines}"
    );
    let md = markdown::render(&draft(&saved, &integration));
    assert!(
        md.contains("The integration dropped the CLI's own turn. At fault: the integration."),
        "{md}"
    );
    assert!(
        matches!(filing(&integration.run, &integration.judgement), Filing::Nothing(why) if why.contains("in the integration under test, not in Claude Code")),
    );
    let mut cli = result.clone();
    cli.judgement.checks = vec![check(Layer::Cli)];
    let lines = terminal::verdict_lines(&cli);
    assert!(
        lines.contains(
            "at fault: the CLI (what the integration should show never reached it; 1 check)"
        ),
        "{lines}"
    );
    assert_eq!(
        filing(&cli.run, &cli.judgement),
        Filing::Bug,
        "the CLI's fault is Claude Code's to fix"
    );
}

/// Eleven good runs and one bad one of one cell: the closing line counts the runs (11 passed,
/// 1 failed) as well as the cell; the summary's cell and the run's own lines say why it failed
/// (which check, its value and the expectation) and why the run has a draft (its `want`).
#[test]
fn repeated_runs_are_counted_by_run_and_each_says_why_it_failed_or_has_a_draft() {
    use wakeprobe::classify::Outcome;
    let (_, mut good) = load("seed000-session");
    good.run.want = Some(Outcome::Woke);
    let check = |observed: &str| CheckResult {
        name: "reported once".into(),
        kind: "query:count".into(),
        agent: None,
        observed: observed.into(),
        expected: Some("1".into()),
        passed: Some(observed == "1"),
        want: Some("1".into()),
        meets_want: Some(observed == "1"),
        witness: vec![],
        explanation: String::new(),
        matched: vec![],
        vacuous: false,
        may_break: None,
        layer: None,
        describes: None,
    };
    let with = |observed: &str, repetition: u32| {
        let mut r = good.clone();
        r.run.repetition = repetition;
        r.judgement.checks = vec![check(observed)];
        RunResult::new(&r.run, r.judgement)
    };
    let mut runs: Vec<RunResult> = (1..=11).map(|n| with("1", n)).collect();
    runs.push(with("2", 12));
    let rows: Vec<(&RunResult, &str)> = runs.iter().map(|r| (r, "d")).collect();
    let sum = summary(&rows);
    assert_eq!(
        sum.closing_line(),
        "runs: 11 passed, 1 failed; cells (one passes when all its runs do): 0 passed, 1 failed"
    );
    let cell = &sum.cells[0];
    assert_eq!((cell.runs, cell.failed_runs), (12, 1));
    assert_eq!(
        cell.failures,
        ["check “reported once” observed `2` where the scenario expects `1`"]
    );
    assert_eq!(
        cell.bugs,
        ["check “reported once” gives `2` where the CLI should give `1`"]
    );
    assert_eq!(cell.drafts.len(), 1);
    let lines = wakeprobe::report::why_lines(&runs[11]);
    assert_eq!(
        lines,
        [
            "subagent-bg-turn-end/session on claude-2.1.332 r12 failed: check “reported once” observed `2` where the scenario expects `1`",
            "subagent-bg-turn-end/session on claude-2.1.332 r12 has a draft to file: check “reported once” gives `2` where the CLI should give `1`",
        ]
    );
    assert!(wakeprobe::report::why_lines(&runs[0]).is_empty());
    // The check's own line says its `want` is not met, beside its `expect`.
    let line = wakeprobe::report::check_line(&runs[11].judgement.checks[0]);
    assert!(
        line.ends_with(
            "observed 2, expected 1: FAIL; want 1: NOT MET (the bug the scenario describes)"
        ),
        "{line}"
    );
    // Without repeats the line stays as it was.
    let one = summary(&[(&runs[0], "d")]);
    assert_eq!(one.closing_line(), "1 passed, 0 failed");
    // The page lists the failing cell with why, and the draft with its reason and folder.
    let pages: Vec<wakeprobe::report::html::PageRun> = runs
        .iter()
        .map(|r| wakeprobe::report::html::PageRun {
            rel_dir: "d".into(),
            result: r.clone(),
            svg: None,
            mermaid: String::new(),
            files: vec![],
        })
        .collect();
    let page = wakeprobe::report::html::page(&sum, &pages, &[]);
    assert!(
        page.contains("(1 of 12 runs failed): check “reported once” observed <code>2</code> where the scenario expects <code>1</code>"),
        "{page}"
    );
    assert!(
        page.contains("<h2>Drafts to file</h2>")
            && page.contains("check “reported once” gives <code>2</code> where the CLI should give <code>1</code>"),
        "{page}"
    );
}

/// The Summary states what makes the bug from the timeline: on seed 000's kept-alive session
/// (2.1.332), the worker reported `completed` to `main` while its own command still ran, then
/// started again under the same task id.
#[test]
fn the_summary_states_the_timelines_facts_that_make_the_bug() {
    use wakeprobe::classify::Outcome;
    let (saved, mut result) = load("seed000-session");
    result.run.want = Some(Outcome::NotResumable);
    let md = markdown::render(&draft(&saved, &result));
    let summary = md
        .split("## Summary\n")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    for fact in [
        "What the run shows:",
        "`worker` was started again at",
        "under the same task id, after it had been reported `completed` at",
        "`worker` was reported `completed` at",
        "while `bg`, the background command it started, was still running (it ended at",
    ] {
        assert!(summary.contains(fact), "`{fact}` in:\n{summary}");
    }
}
