//! Every exporter over fixed runs: two real runs of the seed-000 scenario on the pinned CLI
//! (print: the stall; session: the re-invocation), saved as evidence in tests/fixtures/runs.
//! Snapshots catch any change of output; the Mermaid block is checked against the grammar and
//! the JUnit file against the JUnit structure CI systems read (in Rust; no xmllint needed).

mod common;

use std::path::{Path, PathBuf};

use wakeprobe::report::json::{RunResult, Summary};
use wakeprobe::report::saved::SavedRun;
use wakeprobe::report::{junit, markdown, mermaid, svg, terminal};

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
    let table = terminal::summary(&sum, &[(&pr, &p.timeline), (&sr, &s.timeline)], false);
    insta::assert_snapshot!("terminal_seed000", table);
}

#[test]
fn svg_picture() {
    let (saved, _) = load("seed000-print");
    let picture = svg::render(&saved.timeline, "seed000 print");
    assert!(picture.starts_with("<svg") && picture.trim_end().ends_with("</svg>"));
    insta::assert_snapshot!("svg_seed000_print", picture);
}

#[test]
fn junit_xml_follows_the_junit_structure() {
    let (_, pr) = load("seed000-print");
    let (_, mut sr) = load("seed000-session");
    // One failing case, to cover <failure>.
    sr.matches_expect = Some(false);
    sr.expect = wakeprobe::classify::Outcome::parse("not-resumable");
    let sum = summary(&[(&pr, "print"), (&sr, "session")]);
    let xml = junit::render(&sum, &[&pr, &sr], &[]);
    insta::assert_snapshot!("junit_seed000", xml);
    common::junit::validate(&xml).unwrap_or_else(|p| panic!("{p:#?}\n{xml}"));
    // The check is strict: properties inside a testcase, a case without a name, and a
    // failure before a skipped element are each rejected.
    for (what, wrong) in [
        (
            "properties in a testcase",
            xml.replacen(
                "<testcase ",
                "<testcase name=\"x\"><properties><property name=\"a\" value=\"b\"/></properties></testcase><testcase ",
                1,
            ),
        ),
        (
            "a nameless case",
            xml.replacen(" name=\"subagent-bg-turn-end/print", " label=\"x", 1),
        ),
        (
            "elements out of order",
            xml.replacen(
                "<testcase ",
                "<testcase name=\"x\"><failure/><skipped/></testcase><testcase ",
                1,
            ),
        ),
        ("a count that is not a number", xml.replacen(" tests=\"", " tests=\"x", 1)),
    ] {
        assert!(
            common::junit::validate(&wrong).is_err(),
            "{what} must be rejected"
        );
    }
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
    common::junit::validate(&xml).unwrap_or_else(|p| panic!("{p:#?}\n{xml}"));
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
    differs.expect = Some(Outcome::NotResumable);
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
    let escaped = prose
        .replace('&', "&amp;")
        .replace('\'', "&apos;")
        .replace('"', "&quot;");
    assert!(
        case.contains(&format!("woke: {}", escaped.split('<').next().unwrap())),
        "{case}"
    );
}
