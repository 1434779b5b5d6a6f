use super::*;
use std::time::Duration;

const GOOD: &str = r#"
name = "tiny"
title = "A tiny scenario"
summary = "one line"
seed = "000"

[params]
bg_seconds = 12

[driver]
mode = "print"
prompt = "Go."
ceiling_seconds = "{{bg_seconds}} + 30"

[variants.print]

[variants.session]
mode = "session"
settle_seconds = 2
params = { bg_seconds = 5 }
inputs = [{ after = "result", delay_seconds = 1, text = "next" }]

[[agents.main.steps]]
call = "Agent"
spawn = "worker"
input = { description = "w", prompt = "work", run_in_background = true }

[[agents.main.steps]]
say = "Launched."

[[agents.worker.steps]]
call = "Bash"
track = "bg"
input = { command = "sleep {{bg_seconds}}", run_in_background = true }

[[agents.worker.steps]]
say = "I will be re-invoked."

[expect]
print = "not-resumable"
session = "woke"
"#;

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(Path::new("scenarios/x.toml"), text.to_string())
}

#[test]
fn a_good_file_resolves_each_variant() {
    let s = parse(GOOD).unwrap();
    assert_eq!(s.variants(), vec!["print", "session"]);
    let print = s.plan("print", &[]).unwrap();
    assert_eq!(print.driver.mode, DriverMode::Print);
    assert_eq!(print.driver.ceiling, Duration::from_secs(42));
    assert_eq!(print.expect, Some(Outcome::NotResumable.into()));
    let cmd = &print.agents["worker"][0].first_call().unwrap().input["command"];
    assert_eq!(cmd, "sleep 12");

    let session = s.plan("session", &[]).unwrap();
    assert_eq!(session.driver.mode, DriverMode::Session);
    assert_eq!(session.driver.ceiling, Duration::from_secs(35));
    assert_eq!(session.driver.inputs[0].after, Trigger::Result(1));

    let overridden = s
        .plan("print", &[("bg_seconds".into(), "3".into())])
        .unwrap();
    assert_eq!(overridden.driver.ceiling, Duration::from_secs(33));
}

#[test]
fn overrides_are_checked() {
    let s = parse(GOOD).unwrap();
    let e = s.plan("print", &[("nope".into(), "1".into())]).unwrap_err();
    assert!(
        e.to_string().starts_with("--set nope: unknown parameter"),
        "{e}"
    );
    let e = s
        .plan("print", &[("bg_seconds".into(), "soon".into())])
        .unwrap_err();
    assert!(e.to_string().contains("expected a number"), "{e}");
    let e = s.plan("nope", &[]).unwrap_err();
    assert!(e.to_string().contains("no variant `nope`"), "{e}");
}

/// Each malformed file gives one line `file:line:col: message` with the right position.
fn assert_error(text: &str, line: usize, col: usize, needle: &str) {
    let err = parse(text).expect_err("should fail").to_string();
    assert!(!err.contains('\n'), "one line: {err}");
    let prefix = format!("scenarios/x.toml:{line}:{col}: ");
    assert!(err.starts_with(&prefix), "expected {prefix}…, got {err}");
    assert!(err.contains(needle), "expected `{needle}` in {err}");
}

#[test]
fn unknown_key_is_located() {
    let text = GOOD.replace("seed = \"000\"", "sed = \"000\"");
    assert_error(&text, 5, 1, "unknown field `sed`");
}

#[test]
fn bad_type_is_located() {
    let text = GOOD.replace(
        "ceiling_seconds = \"{{bg_seconds}} + 30\"",
        "ceiling_seconds = true",
    );
    assert_error(&text, 13, 19, "a number of seconds");
}

#[test]
fn missing_field_is_reported() {
    let text = GOOD.replace("title = \"A tiny scenario\"\n", "");
    assert_error(&text, 1, 1, "missing field `title`");
}

#[test]
fn unknown_parameter_is_located() {
    let text = GOOD.replace("sleep {{bg_seconds}}", "sleep {{bg_secs}}");
    let err = parse(&text).unwrap_err().to_string();
    assert!(err.contains("unknown parameter `bg_secs`"), "{err}");
    assert!(err.starts_with("scenarios/x.toml:34:9: "), "{err}");
}

#[test]
fn unknown_mode_is_located() {
    let text = GOOD.replace("mode = \"session\"", "mode = \"sesion\"");
    assert_error(&text, 18, 8, "unknown variant `sesion`");
}

#[test]
fn step_without_say_or_call_is_located() {
    let text = GOOD.replace("say = \"Launched.\"", "think_seconds = 1");
    assert_error(&text, 28, 1, "a step needs `say`");
}

/// `calls` holds several tool calls for one message; each is checked like a step's `call`,
/// and a step has one form or the other.
#[test]
fn several_calls_in_one_step_resolve_and_their_mistakes_are_located() {
    let two = GOOD.replace(
        "call = \"Agent\"\nspawn = \"worker\"\ninput = { description = \"w\", prompt = \"work\", run_in_background = true }",
        "calls = [\n  { call = \"Agent\", spawn = \"worker\", input = { description = \"w\", prompt = \"work\", run_in_background = true } },\n  { call = \"Bash\", track = \"fg\", input = { command = \"true\" } },\n]",
    );
    let plan = parse(&two).unwrap().plan("print", &[]).unwrap();
    let step = &plan.agents["main"][0];
    let tools: Vec<&str> = step.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, ["Agent", "Bash"]);
    assert_eq!(step.calls[0].spawn.as_deref(), Some("worker"));
    assert_eq!(step.calls[1].track.as_deref(), Some("fg"));
    assert!(plan.driver.allowed_tools.contains(&"Bash".to_string()));
    // A saved plan reads back, and one saved with a single `call` still reads.
    let json = serde_json::to_value(step).unwrap();
    assert!(json.get("call").is_none() && json["calls"].as_array().unwrap().len() == 2);
    let mut old = serde_json::to_value(&plan.agents["worker"][0]).unwrap();
    let call = old["calls"][0].take();
    old.as_object_mut().unwrap().remove("calls");
    old["call"] = call;
    let read: Step = serde_json::from_value(old).unwrap();
    assert_eq!(read.first_call().unwrap().track.as_deref(), Some("bg"));

    let bad_spawn = two.replace("spawn = \"worker\", input", "spawn = \"wroker\", input");
    assert_error(&bad_spawn, 25, 29, "`spawn` names no agent: `wroker`");
    let spawn_on_bash = two.replace("{ call = \"Agent\", spawn", "{ call = \"Bash\", spawn");
    assert_error(&spawn_on_bash, 25, 28, "`spawn` needs `call = \"Agent\"`");
    let both = two.replace("calls = [", "call = \"Bash\"\ncalls = [");
    assert_error(&both, 24, 8, "a step has `call` or `calls`, not both");
    let empty = GOOD.replace("say = \"Launched.\"", "say = \"Launched.\"\ncalls = []");
    assert!(
        parse(&empty)
            .unwrap_err()
            .to_string()
            .contains("`calls` is empty")
    );
    let stray = two.replace("calls = [", "track = \"loose\"\ncalls = [");
    assert!(
        parse(&stray)
            .unwrap_err()
            .to_string()
            .contains("`track` needs `call` in the same step")
    );
}

#[test]
fn spawn_of_missing_agent_is_located() {
    let text = GOOD.replace("spawn = \"worker\"", "spawn = \"wroker\"");
    assert_error(&text, 25, 9, "`spawn` names no agent: `wroker`");
}

#[test]
fn unknown_verdict_is_located() {
    let text = GOOD.replace("print = \"not-resumable\"", "print = \"stalled\"");
    assert_error(&text, 40, 9, "unknown verdict `stalled`");
}

#[test]
fn bad_trigger_is_located() {
    let text = GOOD.replace("after = \"result\"", "after = \"resutl\"");
    assert_error(&text, 21, 21, "unknown trigger `resutl`");
}

#[test]
fn toml_syntax_error_is_located() {
    let text = GOOD.replace("bg_seconds = 12", "bg_seconds = ");
    assert_error(&text, 8, 14, "string values must be quoted");
}

#[test]
fn inputs_in_print_mode_are_rejected() {
    let text = GOOD.replace(
        "[variants.print]",
        "[variants.print]\ninputs = [{ text = \"x\" }]",
    );
    let err = parse(&text).unwrap_err().to_string();
    assert!(
        err.contains("need a driver that takes input after the prompt (`session`, `pty`")
            && err.contains("`print` takes one prompt"),
        "{err}"
    );
}

#[test]
fn every_shipped_scenario_loads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let all = load_dir(&dir).unwrap();
    assert!(!all.is_empty());
    for s in all {
        assert_eq!(
            s.path.file_stem().unwrap().to_str().unwrap(),
            s.name,
            "file name and `name` agree"
        );
    }
}

/// The suite's own scenarios load too: none of their selectors is refused as unmatchable.
#[test]
fn every_fixture_scenario_loads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios");
    let integrations = root.join("../../../integrations");
    for dir in [
        root.clone(),
        root.join("faults"),
        root.join("fuzz"),
        root.join("integration"),
        integrations,
    ] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let text = std::fs::read_to_string(&path).unwrap();
                Scenario::parse(&path, text).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Arbitrary edits of a good file never panic the loader.
        #[test]
        fn mangled_files_never_panic(cut in 0usize..1200, insert in ".{0,6}") {
            let mut text = GOOD.to_string();
            let at = cut.min(text.len());
            if text.is_char_boundary(at) {
                text.insert_str(at, &insert);
            }
            let _ = parse(&text);
        }
    }
}

const RANGED: &str = r#"
name = "ranged"
title = "A scenario with a range"
summary = "one line"

[params]
bg_seconds = { default = 12, min = 7, reason = "shorter work ends inside the CLI's grace" }
word = "done"

[driver]
mode = "print"
prompt = "Go."
ceiling_seconds = "{{bg_seconds}} + 30"

[variants.print]

[variants.session]
mode = "session"
params = { bg_seconds = { min = 1 } }

[[agents.main.steps]]
call = "Bash"
track = "bg"
input = { command = "sleep {{bg_seconds}}; echo {{word}}", run_in_background = true }

[expect]
print = "not-resumable"
session = "woke"
"#;

fn set(key: &str, value: &str) -> Vec<(String, String)> {
    vec![(key.to_string(), value.to_string())]
}

#[test]
fn a_range_admits_its_values_and_refuses_others_with_the_reason() {
    let s = parse(RANGED).unwrap();
    assert_eq!(s.default_params()["bg_seconds"], ParamValue::Int(12));
    let plan = s.plan("print", &set("bg_seconds", "7")).unwrap();
    assert_eq!(plan.expect, Some(Outcome::NotResumable.into()));
    assert_eq!(plan.param_ranges["bg_seconds"].min, Some(7.0));
    assert!(plan.outside_range.is_empty());
    let e = s.plan("print", &set("bg_seconds", "6.5")).unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("--set bg_seconds: 6.5 is outside the range where ranged/print's expected verdict holds (bg_seconds >= 7): shorter work ends inside the CLI's grace"),
        "{text}"
    );
    assert!(text.contains("--explore") && !text.contains('\n'), "{text}");
    // The session variant declares its own range.
    let session = s.plan("session", &set("bg_seconds", "2")).unwrap();
    assert_eq!(session.expect, Some(Outcome::Woke.into()));
    assert_eq!(session.param_ranges["bg_seconds"].min, Some(1.0));
}

#[test]
fn exploring_outside_the_range_drops_the_expectation_and_says_so() {
    let s = parse(RANGED).unwrap();
    let plan = s
        .plan_with("print", &set("bg_seconds", "3"), RangePolicy::Explore)
        .unwrap();
    assert_eq!(plan.expect, None);
    assert_eq!(
        plan.outside_range,
        vec!["bg_seconds=3 (outside bg_seconds >= 7)"]
    );
    let json = serde_json::to_value(&plan).unwrap();
    assert_eq!(json["param_ranges"]["bg_seconds"]["min"], 7.0);
    // Inside the range, exploring changes nothing.
    let inside = s
        .plan_with("print", &set("bg_seconds", "8"), RangePolicy::Explore)
        .unwrap();
    assert_eq!(inside.expect, Some(Outcome::NotResumable.into()));
}

#[test]
fn malformed_ranges_are_located() {
    let text = RANGED.replace("min = 7,", "min = 20,");
    assert_error(&text, 7, 14, "`bg_seconds` = 12 is outside its own range");
    let text = RANGED.replace("min = 7,", "min = 7, max = 3,");
    assert_error(&text, 7, 14, "`min` 7 is above `max` 3");
    let text = RANGED.replace("word = \"done\"", "word = { default = \"done\", min = 1 }");
    assert_error(&text, 8, 8, "its value `done` is not a number");
    let text = RANGED.replace("default = 12, ", "");
    assert_error(&text, 7, 14, "needs a `default` value");
    let text = RANGED.replace("min = 7,", "minimum = 7,");
    assert_error(&text, 7, 14, "unknown field `minimum`");
    let text = RANGED.replace("{ min = 1 }", "{ min = 13 }");
    assert_error(&text, 19, 25, "outside its own range");
}

/// A declared race: `expect` lists the outcomes the pinned CLI was measured to give; a list
/// in `want` (one behaviour the CLI should have), an empty list and a misspelt member are
/// located errors.
#[test]
fn expect_may_declare_a_race_as_a_list_and_want_may_not() {
    let text = GOOD.replace(
        "print = \"not-resumable\"",
        "print = [\"not-resumable\", \"woke\"]",
    );
    let s = parse(&text).unwrap();
    let expect = s.plan("print", &[]).unwrap().expect.unwrap();
    assert!(expect.is_race());
    assert_eq!(expect.to_string(), "woke or not-resumable");
    let one = GOOD.replace("print = \"not-resumable\"", "print = [\"woke\"]");
    assert_eq!(
        parse(&one).unwrap().plan("print", &[]).unwrap().expect,
        Some(Outcome::Woke.into())
    );
    assert_error(
        &GOOD.replace("print = \"not-resumable\"", "print = []"),
        40,
        9,
        "`expect.print` lists no verdict",
    );
    assert_error(
        &GOOD.replace(
            "print = \"not-resumable\"",
            "print = [\"woke\", \"stalled\"]",
        ),
        40,
        9,
        "unknown verdict `stalled`",
    );
    let want = format!("{GOOD}\n[want]\nprint = [\"woke\", \"not-resumable\"]\n");
    assert_error(
        &want,
        want.lines().count(),
        9,
        "`want.print` lists several verdicts",
    );
}

#[test]
fn want_states_the_behaviour_apart_from_expect() {
    let text = format!("{GOOD}\n[want]\nprint = \"woke\"\n");
    let s = parse(&text).unwrap();
    let print = s.plan("print", &[]).unwrap();
    assert_eq!(
        (print.expect, print.want),
        (Some(Outcome::NotResumable.into()), Some(Outcome::Woke))
    );
    assert_eq!(s.plan("session", &[]).unwrap().want, None);
    let line = text.lines().count();
    assert_error(
        &text.replace("print = \"woke\"", "print = \"fine\""),
        line,
        9,
        "unknown verdict `fine`",
    );
    assert_error(
        &text.replace("print = \"woke\"", "nope = \"woke\""),
        line,
        8,
        "`want.nope` names no variant",
    );
}

/// A folder with GOOD and an `invariants.toml` beside it.
fn folder_with_invariants(invariants: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny.toml"), GOOD).unwrap();
    std::fs::write(dir.path().join(invariants::FILE), invariants).unwrap();
    dir
}

#[test]
fn invariants_beside_a_scenario_join_every_plan_and_are_no_scenario() {
    let dir = folder_with_invariants(
        "[[invariants]]\nname = \"paired\"\npairs = { each = { hook = \"SubagentStart\" }, with = { hook = \"SubagentStop\" }, by = \"agent\" }\nexpect = \"yes\"\n",
    );
    let all = load_dir(dir.path()).unwrap();
    assert_eq!(all.len(), 1, "invariants.toml is not loaded as a scenario");
    for variant in all[0].variants() {
        let plan = all[0].plan(&variant, &[]).unwrap();
        assert_eq!(plan.invariants.len(), 1, "{variant}");
        assert_eq!(plan.invariants[0].expect.as_deref(), Some("yes"));
        assert!(
            plan.checks.is_empty(),
            "invariants are not the scenario's checks"
        );
    }
    let err = Scenario::load(&dir.path().join(invariants::FILE)).unwrap_err();
    assert!(err.to_string().contains("not a scenario"), "{err}");
}

#[test]
fn a_mistake_in_an_invariant_is_located_in_the_invariants_file() {
    let dir = folder_with_invariants("[[invariants]]\nname = \"x\"\ncount = { hook = \"Nope\" }\n");
    let err = load_dir(dir.path()).unwrap_err().to_string();
    assert!(
        err.ends_with("invariants.toml:3:18: unknown hook `Nope`, expected one of: SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, PostToolUseFailure, SubagentStart, SubagentStop, Stop, SessionEnd, Notification, TeammateIdle, PreCompact"),
        "{err}"
    );
}

/// `may_break` marks the invariants it names with its reason; a name the folder does not have,
/// or no reason, is a located error.
#[test]
fn may_break_names_an_invariant_of_the_folder_with_a_reason() {
    let dir = folder_with_invariants(
        "[[invariants]]\nname = \"paired\"\npairs = { each = { hook = \"SubagentStart\" }, with = { hook = \"SubagentStop\" }, by = \"agent\" }\nexpect = \"yes\"\n",
    );
    let path = dir.path().join("tiny.toml");
    let with = |table: &str| {
        let text = GOOD.replace(
            "summary = \"one line\"\n",
            &format!("summary = \"one line\"\nmay_break = {table}\n"),
        );
        std::fs::write(&path, text).unwrap();
        Scenario::load(&path).and_then(|s| {
            let variant = s.variants()[0].clone();
            s.plan(&variant, &[])
        })
    };
    let plan = with(r#"{ paired = "the scenario measures the break" }"#).unwrap();
    assert_eq!(
        plan.invariants[0].may_break.as_deref(),
        Some("the scenario measures the break")
    );
    let err = with(r#"{ pairs = "typo" }"#).unwrap_err().to_string();
    assert!(
        err.ends_with("tiny.toml:5:13: `may_break` names `pairs`, which is none of this folder's invariants: `paired`"),
        "{err}"
    );
    let err = with(r#"{ paired = " " }"#).unwrap_err().to_string();
    assert!(
        err.contains("tiny.toml:5:13: `may_break` gives no reason for `paired`"),
        "{err}"
    );
    // Copied away from its invariants (a `minimize` candidate), the scenario has none to break.
    std::fs::remove_file(dir.path().join(invariants::FILE)).unwrap();
    let plan = with(r#"{ pairs = "typo" }"#).unwrap();
    assert!(plan.invariants.is_empty());
}

#[test]
fn a_check_may_expect_one_value_per_variant() {
    let text = format!(
        "{GOOD}\n[[checks]]\nname = \"results\"\ncount = {{ type = \"result\" }}\nexpect = {{ print = \"1\", session = \">= 2\" }}\n"
    );
    let s = Scenario::parse(Path::new("t.toml"), text).unwrap();
    let expect = |v: &str| s.plan(v, &[]).unwrap().checks[0].expect.clone();
    assert_eq!(expect("print").as_deref(), Some("1"));
    assert_eq!(expect("session").as_deref(), Some(">= 2"));
    let bad = |expect: &str| {
        Scenario::parse(
            Path::new("t.toml"),
            format!("{GOOD}\n[[checks]]\nname = \"r\"\ncount = {{ type = \"result\" }}\nexpect = {expect}\n"),
        )
        .unwrap_err()
        .to_string()
    };
    assert!(
        bad("{ batch = \"1\" }")
            .contains("`expect` names no variant: `batch` (variants: print, session)")
    );
    assert!(bad("{ print = \"yes\" }").contains("`count` observes a number or a comparison"));
    assert!(bad("3").contains("`expect` is a string, or a table of strings by variant"));
}

/// A check's `want` takes the forms of its `expect` and is checked the same way, each mistake
/// located and named as `want`.
#[test]
fn a_checks_want_is_checked_like_its_expect() {
    let with = |want: &str| {
        Scenario::parse(
            Path::new("t.toml"),
            format!(
                "{GOOD}\n[[checks]]\nname = \"r\"\nexists = {{ type = \"result\" }}\nexpect = \"no\"\nwant = {want}\n"
            ),
        )
    };
    let s = with("{ print = \"yes\" }").unwrap();
    let want = |v: &str| s.plan(v, &[]).unwrap().checks[0].want.clone();
    assert_eq!(
        (want("print").as_deref(), want("session")),
        (Some("yes"), None)
    );
    let bad = |w: &str| with(w).unwrap_err().to_string();
    assert!(
        bad("\"maybe\"").contains("`exists` observes `yes`, `no` or `not-observed`, not `maybe`")
    );
    assert!(bad("{ batch = \"yes\" }").contains("`want` names no variant: `batch`"));
    assert!(bad("3").contains("`want` is a string, or a table of strings by variant"));
    let line = GOOD.lines().count() + 6;
    assert!(
        bad("3").contains(&format!("t.toml:{line}:8:")),
        "{}",
        bad("3")
    );
}

/// The book's TOML blocks are what a user copies: the scenario example of "Scenarios" and the
/// check example of "Writing checks" load as they are written.
#[test]
fn the_book_examples_load() {
    let chapter = |name: &str| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("book/src")
            .join(name);
        std::fs::read_to_string(path).unwrap()
    };
    let (scenarios, checks) = (chapter("scenarios.md"), chapter("checks.md"));
    let block_after = |text: &str, heading: &str| {
        let at = text.find(heading).expect("the book's section") + heading.len();
        let start = text[at..].find("```toml\n").expect("a toml block") + at + 8;
        let end = text[start..].find("```").unwrap() + start;
        text[start..end].to_string()
    };
    let example = block_after(&scenarios, "# Scenarios\n");
    let s = Scenario::parse(
        Path::new("scenarios/subagent-bg-turn-end.toml"),
        example.clone(),
    )
    .unwrap_or_else(|e| panic!("the book's scenario example: {e}"));
    assert!(!s.plan("print", &[]).unwrap().checks.is_empty());
    let check = block_after(&checks, "# Writing checks\n");
    let with_check = format!("{GOOD}\n{check}");
    let s = parse(&with_check).unwrap_or_else(|e| panic!("the book's check example: {e}"));
    let plan = s.plan("session", &[]).unwrap();
    assert_eq!(plan.checks[0].expect.as_deref(), Some("1"));
    // The `want` example is the library's teammate-idle check, as that file loads.
    let want = block_after(&checks, "\n**`want`** is what the CLI");
    let library =
        Scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/teammate-idle.toml"))
            .unwrap();
    let plan = library.plan("pty", &[]).unwrap();
    let name = "an idle teammate is distinguishable in Stop payloads";
    let check = plan.checks.iter().find(|c| c.name == name).unwrap();
    assert_eq!(check.want.as_deref(), Some("distinguishable"));
    let without_comments = |t: &str| {
        t.lines()
            .map(|l| l.split(" #").next().unwrap().trim_end().to_string())
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        without_comments(&library.source).contains(&without_comments(&want)),
        "the book's `want` example is not the library's check:\n{want}"
    );
}

/// A crash needs a session to resume: in a file with print and session variants it hits the
/// session's run only (the print variant's plan has no fault), and a `--fault` crash applies
/// to session plans only.
#[test]
fn a_crash_applies_to_the_session_variants_only() {
    let text =
        format!("{GOOD}\n[[faults]]\nkind = \"crash-cli\"\nwork = \"bg\"\nafter_seconds = 2\n");
    let s = parse(&text).unwrap();
    let session = s.plan("session", &[]).unwrap();
    assert_eq!(session.faults.len(), 1);
    assert_eq!(session.faults[0].kind, FaultKind::CrashCli);
    assert_eq!(
        session.faults[0].target,
        FaultTarget::Work {
            work: "bg".into(),
            after_ms: 2000,
            from: None,
        }
    );
    let print = s.plan("print", &[]).unwrap();
    assert!(print.faults.is_empty());
    assert!(!session.faults[0].applies_to(&print));
    assert!(session.faults[0].applies_to(&session));
}

/// Variant and parameter names become folder names and `--set` keys: one that climbs out of
/// its folder is refused at load, where it is written.
#[test]
fn variant_and_parameter_names_that_leave_their_folder_are_located() {
    let text = GOOD.replace("[variants.print]", "[variants.\"../../x\"]");
    assert_error(&text, 15, 1, "invalid variant name `../../x`");
    let text = GOOD.replace("[variants.print]", "[variants.\"/abs/path\"]");
    assert_error(&text, 15, 1, "invalid variant name `/abs/path`");
    let text = GOOD.replace("bg_seconds = 12", "bg_seconds = 12\n\"../x\" = 1");
    assert_error(&text, 9, 10, "invalid parameter name `../x`");
}

/// A parameter's type is its default's; a `..._seconds` parameter is a duration of 0 to a
/// day, in the file and from `--set`, with or without `--explore`.
#[test]
fn parameter_values_have_their_defaults_type_and_seconds_their_range() {
    let text = GOOD.replace("bg_seconds = 12", "bg_seconds = \"abc\"");
    assert_error(&text, 8, 14, "`bg_seconds` is a number of seconds");
    let text = GOOD.replace(
        "params = { bg_seconds = 5 }",
        "params = { bg_seconds = \"abc\" }",
    );
    assert_error(
        &text,
        20,
        25,
        "`bg_seconds` is a number (as its default `12`), not `abc`",
    );
    let s = parse(GOOD).unwrap();
    for bad in ["-1", "1e12", "86400.5"] {
        for policy in [RangePolicy::Enforce, RangePolicy::Explore] {
            let e = s
                .plan_with("print", &set("bg_seconds", bad), policy)
                .unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("--set bg_seconds: `bg_seconds` = ")
                    && e.to_string()
                        .contains("is not a number of seconds from 0 to 86400"),
                "{bad}: {e}"
            );
        }
    }
    assert!(s.plan("print", &set("bg_seconds", "0.5")).is_ok());
    // A text default that is seconds by its name takes numbers only.
    let text = GOOD.replace("bg_seconds = 12", "bg_seconds = 12\npoll_seconds = \"0.5\"");
    let s = parse(&text).unwrap();
    assert!(s.plan("print", &set("poll_seconds", "2")).is_ok());
    let e = s.plan("print", &set("poll_seconds", "soon")).unwrap_err();
    assert!(e.to_string().contains("is a number of seconds"), "{e}");
}

/// A duration a value makes absurd is refused where the duration is written, naming the
/// parameters it was made from.
#[test]
fn an_absurd_duration_names_the_parameters_that_made_it() {
    let text = GOOD.replace("bg_seconds = 12", "bg_seconds = 12\nscale = 1");
    let text = text.replace("{{bg_seconds}} + 30", "{{bg_seconds}} * {{scale}} + 30");
    let s = parse(&text).unwrap();
    let e = s
        .plan("print", &set("scale", "1e9"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "scenarios/x.toml:14:19: 12000000030 seconds is out of range (expected 0 to 86400): from bg_seconds = 12, scale = 1000000000"
    );
}

#[test]
fn an_env_value_or_prompt_with_a_nul_byte_is_located() {
    let text = GOOD.replace(
        "settle_seconds = 2",
        "settle_seconds = 2\nenv = { X = \"a\\u0000b\" }",
    );
    assert_error(&text, 20, 13, "`env.X` holds a NUL byte");
    let text = GOOD.replace("prompt = \"Go.\"", "prompt = \"G\\u0000o\"");
    assert_error(&text, 12, 10, "`prompt` holds a NUL byte");
}

#[test]
fn two_checks_with_one_name_and_max_repeats_zero_are_located() {
    let check = "\n[[checks]]\nname = \"q\"\ncount = { type = \"result\" }\n";
    let text = format!("{GOOD}{check}{check}");
    let second = GOOD.lines().count() + 6;
    assert_error(
        &text,
        second,
        1,
        "a second check named `q` (the first is on line",
    );
    let text = GOOD.replace(
        "input = { command = \"sleep {{bg_seconds}}\", run_in_background = true }",
        "input = { command = \"sleep {{bg_seconds}}\", run_in_background = true }\nuntil = \"notified\"\nmax_repeats = 0",
    );
    assert_error(&text, 36, 15, "`max_repeats` must be at least 1");
}

/// A cycle of spawns is named as one, whatever agent it starts from, `main` included.
#[test]
fn a_spawn_cycle_is_named() {
    let cycle = GOOD.replace(
        "[[agents.worker.steps]]\ncall = \"Bash\"",
        "[[agents.worker.steps]]\ncall = \"Agent\"\nspawn = \"main\"\ninput = { description = \"w\", prompt = \"p\", run_in_background = true }\n\n[[agents.worker.steps]]\ncall = \"Bash\"",
    );
    assert_error(
        &cycle,
        33,
        9,
        "agents spawn each other in a cycle: main -> worker -> main",
    );
    let two = format!(
        "{GOOD}\n[[agents.a.steps]]\ncall = \"Agent\"\nspawn = \"b\"\ninput = {{ description = \"w\", prompt = \"p\" }}\n\n[[agents.b.steps]]\ncall = \"Agent\"\nspawn = \"a\"\ninput = {{ description = \"w\", prompt = \"p\" }}\n"
    );
    let err = parse(&two).unwrap_err().to_string();
    assert!(err.contains("in a cycle: a -> b -> a"), "{err}");
}

/// Mistyped values are worded for a user: no serde type name leaks into a message.
#[test]
fn a_wrong_type_names_what_was_expected_not_a_rust_type() {
    let with_check = |c: &str| format!("{GOOD}\n[[checks]]\nname = \"q\"\n{c}\n");
    let cases = [
        with_check("count = \"x\""),
        with_check("before = { first = 3, then = 4 }"),
        with_check("count = { where = [3] }"),
        with_check("within = 3"),
        format!("{GOOD}\n[[watch]]\n"),
        format!("{GOOD}\n[[faults]]\n"),
        GOOD.replace("bg_seconds = 12", "bg_seconds = [1]"),
        GOOD.replace("bg_seconds = 12", "bg_seconds = { default = [1] }"),
        GOOD.replace("[variants.print]", "[variants]\nprint = 3"),
        GOOD.replace(
            "[[agents.worker.steps]]\nsay",
            "[agents.x]\nsteps = [3]\n[[agents.worker.steps]]\nsay",
        ),
        GOOD.replace(
            "inputs = [{ after = \"result\", delay_seconds = 1, text = \"next\" }]",
            "inputs = [3]",
        ),
    ];
    for text in cases {
        let err = parse(&text).unwrap_err().to_string();
        for leak in ["struct ", "enum ", "Raw", "ParamValue"] {
            assert!(!err.contains(leak), "`{leak}` in: {err}");
        }
    }
    let err = parse(&with_check("count = \"x\"")).unwrap_err().to_string();
    assert!(
        err.contains("expected a selector table such as { kind = \"hook\" }"),
        "{err}"
    );
}

/// A scenario file is stat'ed before it is read: a device, a FIFO or a file over 4 MiB is
/// refused with its path, without reading it.
#[test]
fn scenario_files_that_are_not_files_or_too_large_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.toml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(crate::os::files::SCENARIO_LIMIT + 1)
        .unwrap();
    let e = Scenario::load(&big).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}: 4194305 bytes is over the 4.0 MiB limit of a scenario file",
            big.display()
        )
    );
    let e = Scenario::load(Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "/dev/zero: not a regular file (a character device): give a file"
    );
    // An invariants.toml beside a scenario is held to the same.
    let folder = folder_with_invariants("");
    let inv = folder.path().join(invariants::FILE);
    std::fs::File::create(&inv)
        .unwrap()
        .set_len(crate::os::files::SCENARIO_LIMIT + 1)
        .unwrap();
    let e = load_dir(folder.path()).unwrap_err().to_string();
    assert!(
        e.contains("invariants.toml: 4194305 bytes is over the 4.0 MiB limit"),
        "{e}"
    );
}

/// The three mistakes of issue #32's Why 1, each refused at load where it is written, naming
/// what exists instead of loading a check that can never match.
#[test]
fn a_selector_no_event_can_match_is_located_with_what_exists() {
    let with_check = |c: &str| format!("{GOOD}\n[[checks]]\nname = \"q\"\n{c}\n");
    let line = GOOD.lines().count() + 4;
    // The column (1-based) where `needle` starts in the check's line.
    let col =
        |text: &str, needle: &str| text.lines().nth(line - 1).unwrap().find(needle).unwrap() + 1;
    // `work` names a tracked command, which a model request never carries.
    let text = with_check("exists = { kind = \"model_request\", work = \"bg\" }");
    assert_error(
        &text,
        line,
        col(&text, "\"bg\""),
        "`work = \"bg\"` cannot match a `model_request`",
    );
    assert!(
        parse(&text)
            .unwrap_err()
            .to_string()
            .contains("`notifications[*].task_id`")
    );
    // A status in the wrong case.
    let text = with_check("exists = { kind = \"task_updated\", status = \"Killed\" }");
    assert_error(
        &text,
        line,
        col(&text, "\"Killed"),
        "unknown status `Killed` (values are lower case: `killed`)",
    );
    // A stream-json field that never reaches a selector.
    let text = with_check(
        "exists = { type = \"result\", where = [{ path = \"subagent_stats\", exists = true }] }",
    );
    assert_error(
        &text,
        line,
        col(&text, "\"subagent_stats"),
        "`subagent_stats` is a field of none of the events",
    );
    // An enum value in the wrong case inside `where`.
    let text = with_check(
        "exists = { kind = \"user_input\", where = [{ path = \"why\", equals = \"Prompt\" }] }",
    );
    assert_error(
        &text,
        line,
        col(&text, "\"Prompt"),
        "expected one of: probe, prompt, scheduled",
    );
    // The same selectors written right load.
    for good in [
        "exists = { kind = \"model_request\", work = \"worker\" }",
        "exists = { kind = \"task_updated\", status = \"killed\" }",
        "exists = { type = \"result\", where = [{ path = \"num_turns\", exists = true }] }",
        "exists = { kind = \"hook\", where = [{ path = \"payload.anything\", exists = true }] }",
        "value = { at = { kind = \"stop\", work = \"worker\" }, path = \"stop.by\" }",
    ] {
        parse(&with_check(good)).unwrap_or_else(|e| panic!("{good}: {e}"));
    }
}

/// What only an integration under test has is refused elsewhere, located: `approve`, and the
/// presets that read an integration's lines; in mode `command`, `approve` is `allow` or `deny`.
#[test]
fn what_only_an_integration_has_is_refused_elsewhere() {
    let approve = GOOD.replace(
        "ceiling_seconds = \"{{bg_seconds}} + 30\"",
        "ceiling_seconds = \"{{bg_seconds}} + 30\"\napprove = \"allow\"",
    );
    assert_error(
        &approve,
        14,
        11,
        "`approve` applies to mode `command`, not `print`",
    );
    let preset = format!(
        "{GOOD}\n[[checks]]\nname = \"c\"\nkind = \"cli-turn-shown-once\"\nexpect = \"once\"\n"
    );
    let err = parse(&preset).unwrap_err().to_string();
    assert!(
        err.contains("check kind `cli-turn-shown-once` judges an integration under test: it applies to mode `command`, not `print`"),
        "{err}"
    );
    let command = GOOD
        .replace(
            "mode = \"print\"",
            "mode = \"command\"\ncommand = [\"node\", \"./app.mjs\"]\napprove = \"maybe\"",
        )
        .replace(
            "[variants.session]\nmode = \"session\"",
            "[variants.session]",
        )
        .replace("print = \"not-resumable\"\nsession = \"woke\"", "");
    let err = parse(&command).unwrap_err().to_string();
    assert!(
        err.contains("unknown `approve` value `maybe` (expected `allow` or `deny`)"),
        "{err}"
    );
    let fine = command.replace("approve = \"maybe\"", "approve = \"deny\"");
    let plan = parse(&fine).unwrap().plan("print", &[]).unwrap();
    assert_eq!(plan.driver.approve, Answer::Deny);
    assert!(plan.driver.command[1].ends_with("scenarios/./app.mjs"));
}

/// Issue #41: no Rust type name reaches a user, whatever number or kind of value a key gets.
#[test]
fn a_wrong_number_or_kind_of_value_is_said_without_rust_type_names() {
    let big = "99999999999999999999999";
    let base = "name = \"ex\"\ntitle = \"t\"\nsummary = \"s\"\n[driver]\nmode = \"print\"\nprompt = \"go\"\nceiling_seconds = 10\n[[agents.main.steps]]\nsay = \"hi\"\n";
    let cases = [
        format!("{base}[expect]\nprint = 3\n"),
        format!("{base}[expect]\nprint = {big}\n"),
        format!("{base}[expect]\nprint = [\"woke\", 3]\n"),
        base.replace("ceiling_seconds = 10", &format!("ceiling_seconds = {big}")),
        base.replace("title = \"t\"", &format!("title = {big}")),
        format!("{base}[params]\nbg = {big}\n"),
        format!("{base}[[faults]]\nkind = \"overloaded-529\"\ntimes = {big}\n"),
        format!("{base}[[faults]]\nkind = \"overloaded-529\"\ntimes = -1\n"),
        format!("{base}[[faults]]\nkind = \"overloaded-529\"\ndelay_ms = -1\n"),
    ];
    for text in cases {
        let err = Scenario::parse(std::path::Path::new("ex.toml"), text.clone())
            .unwrap_err()
            .to_string();
        for rust in ["i128", "u32", "u64", "untagged", "enum", "RawVerdicts"] {
            assert!(!err.contains(rust), "{err}\n{text}");
        }
        assert!(err.starts_with("ex.toml:"), "located: {err}");
    }
}

/// Two commands tracked under one name would mix their times in a verdict: the second name is
/// the error, pointing at the first.
#[test]
fn a_track_name_given_twice_is_located() {
    let text = GOOD.replace(
        "[[agents.worker.steps]]\nsay = \"I will be re-invoked.\"",
        "[[agents.worker.steps]]\ncall = \"Bash\"\ntrack = \"bg\"\ninput = { command = \"sleep 1\", run_in_background = true }\n\n[[agents.worker.steps]]\nsay = \"I will be re-invoked.\"",
    );
    assert_error(
        &text,
        38,
        9,
        "`track = \"bg\"` is already the name of a command of `worker` (line 33)",
    );
}

/// The same watch twice would judge the same pair twice.
#[test]
fn a_watch_given_twice_is_located() {
    let watch = "\n[[watch]]\nwaiter = \"worker\"\nwork = \"bg\"\n";
    let text = format!("{GOOD}{watch}{watch}");
    assert_error(
        &text,
        47,
        1,
        "a second `[[watch]]` of `worker` waiting for `bg` (the first is on line 43)",
    );
}

/// `{{@agent-id:NAME}}` names an agent the variant spawns, like `{{@task-id:NAME}}` names a
/// work: a ghost is refused before anything runs, and so is a placeholder of another kind.
#[test]
fn an_agent_id_placeholder_names_a_spawned_agent() {
    let with = |placeholder: &str| {
        GOOD.replace(
            "say = \"Launched.\"",
            &format!("say = \"Launched.\"\ncall = \"SendMessage\"\ninput = {{ to = \"{placeholder}\", message = \"hi\" }}"),
        )
    };
    assert!(parse(&with("{{@agent-id:worker}}")).is_ok());
    assert_error(
        &with("{{@agent-id:ghost}}"),
        31,
        9,
        "`{{@agent-id:ghost}}`: a tool input names a spawned agent's id as `{{@agent-id:NAME}}`, NAME an agent this variant spawns (it has: worker)",
    );
    assert_error(&with("{{@agent-id:main}}"), 31, 9, "`{{@agent-id:main}}`");
    assert_error(&with("{{@task-id:worker}}"), 31, 9, "`{{@task-id:worker}}`");
}

/// A runtime's `[expect.NAME]` entries are checked as `[expect]`'s are: a variant the
/// scenario has, at least one verdict, known verdicts.
#[test]
fn a_runtimes_expectations_are_checked_like_expect() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/bg-agent-probe.toml");
    let source = std::fs::read_to_string(&path).unwrap();
    let entry = "[expect.claude-code]\nsession = \"woke\"";
    assert!(
        source.contains(entry),
        "the library file still has its entry"
    );
    for (planted, message) in [
        (
            "bogus = \"woke\"",
            "`expect.claude-code.bogus` names no variant, expected one of: session",
        ),
        (
            "session = []",
            "`expect.claude-code.session` lists no verdict, expected one or more of:",
        ),
        (
            "session = \"wokeish\"",
            "unknown verdict `wokeish`, expected one of:",
        ),
    ] {
        let text = source.replace(entry, &format!("[expect.claude-code]\n{planted}"));
        let e = Scenario::parse(&path, text).expect_err(planted).to_string();
        assert!(e.contains(message), "{planted}: {e}");
    }
}
