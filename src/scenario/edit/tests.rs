//! Edits on library scenarios: flattening a variant, removing agents with what depends on
//! them, removing steps and inputs, shortening texts, changing parameters; comments stay.

use super::*;

fn library(name: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios")
            .join(format!("{name}.toml")),
    )
    .unwrap()
}

#[test]
fn a_variant_flattens_into_a_valid_single_variant_scenario() {
    let e = Editable::flatten(&library("interrupt-background-subagent"), "new-prompt").unwrap();
    let s = e.validate().unwrap();
    assert_eq!(s.variants(), ["new-prompt"]);
    let plan = s.plan("new-prompt", &[]).unwrap();
    // The variant's own scripts replaced [agents].
    assert_eq!(plan.agents["main"].len(), 6);
    assert_eq!(
        plan.agents["main"][2].first_call().unwrap().tool,
        "SendMessage"
    );
    assert!(e.text().contains("# Seed 004"), "comments stay");
    assert!(
        !e.text().contains("stop = \"woke\""),
        "other variants' expectations go"
    );

    let e = Editable::flatten(&library("positive-control"), "fg-wait").unwrap();
    let plan = e.validate().unwrap().plan("fg-wait", &[]).unwrap();
    assert_eq!(
        plan.params["fg"].to_string(),
        "timeout 2 tail -f /dev/null; true"
    );

    let e = Editable::flatten(&library("subagent-bg-turn-end"), "session").unwrap();
    let plan = e.validate().unwrap().plan("session", &[]).unwrap();
    assert!(plan.driver.probe.is_some());
    assert!(Editable::flatten(&library("subagent-bg-turn-end"), "nope").is_err());
}

/// An agent started by one entry of a step's `calls` takes that entry only; the step goes
/// when its last call goes and it says nothing.
#[test]
fn removing_an_agent_takes_its_entry_of_a_steps_calls() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/scenarios/parallel-agents.toml"),
    )
    .unwrap();
    let e = Editable::flatten(&text, "print").unwrap();
    assert_eq!(
        e.step_label("main", 0),
        "main#1: Agent, Agent, Agent, Agent, Agent in one message"
    );
    let without = e.without_agents(&["r2".into(), "r4".into()]);
    let plan = without.validate().unwrap().plan("print", &[]).unwrap();
    let spawned: Vec<&str> = plan.agents["main"][0]
        .calls
        .iter()
        .map(|c| c.spawn.as_deref().unwrap())
        .collect();
    assert_eq!(spawned, ["r1", "r3", "r5"]);
    let all: Vec<String> = (1..=5).map(|n| format!("r{n}")).collect();
    let alone = e.without_agents(&all);
    let plan = alone.validate().unwrap().plan("print", &[]).unwrap();
    assert_eq!(plan.agents.keys().collect::<Vec<_>>(), ["main"]);
    assert_eq!(
        plan.agents["main"][0].say.as_deref(),
        Some("Starting five reviewers.")
    );
    assert!(plan.agents["main"][0].calls.is_empty(), "it keeps its text");
}

#[test]
fn removing_an_agent_takes_its_spawn_step_and_what_names_it() {
    let e = Editable::flatten(&library("interrupt-background-subagent"), "stop").unwrap();
    assert_eq!(e.agents(), ["main", "worker"]);
    let without = e.without_agents(&["worker".into()]);
    let s = without.validate().unwrap();
    let plan = s.plan("stop", &[]).unwrap();
    assert_eq!(plan.agents.keys().collect::<Vec<_>>(), ["main"]);
    assert_eq!(plan.agents["main"].len(), 3, "the Agent step went");
    assert!(plan.watch.is_empty() && plan.driver.inputs.is_empty() && plan.checks.is_empty());
    // `main` is never removed.
    assert_eq!(
        e.without_agents(&["main".into()]).agents(),
        ["main", "worker"]
    );

    // An agent that only a removed agent spawns goes too.
    let nested = library("subagent-bg-turn-end").replace(
        "[[agents.worker.steps]]\ncall = \"Bash\"",
        "[[agents.worker.steps]]\ncall = \"Agent\"\nspawn = \"helper\"\ninput = { prompt = \"help\" }\n\n[[agents.helper.steps]]\nsay = \"helped\"\n\n[[agents.worker.steps]]\ncall = \"Bash\"",
    );
    let e = Editable::flatten(&nested, "print").unwrap();
    e.validate().unwrap();
    assert_eq!(e.agents(), ["main", "worker", "helper"]);
    let without = e.without_agents(&["worker".into()]);
    assert_eq!(without.agents(), ["main"]);
    without.validate().unwrap();
}

#[test]
fn steps_inputs_texts_and_params_change_and_comments_stay() {
    let e = Editable::flatten(&library("subagent-bg-turn-end"), "print").unwrap();
    assert_eq!(e.steps().len(), 8);
    assert_eq!(
        e.step_label("worker", 0),
        "worker#1: Bash `sleep {{bg_seconds}}; echo bg-done` (track bg)"
    );
    assert_eq!(
        e.step_label("main", 0),
        "main#1: Agent `Background worker` (spawns worker)"
    );
    let fewer = e.without_steps(&[("main".into(), 1), ("main".into(), 4), ("worker".into(), 2)]);
    let plan = fewer.validate().unwrap().plan("print", &[]).unwrap();
    assert_eq!(plan.agents["main"].len(), 3);
    assert_eq!(plan.agents["worker"].len(), 2);
    assert!(fewer.text().contains("# The handoff under test"));
    // Removing the spawn step leaves `worker` never spawned: not a valid scenario.
    assert!(e.without_steps(&[("main".into(), 0)]).validate().is_err());

    let texts = e.texts();
    assert!(texts.iter().any(|(s, _)| *s == TextSpot::Prompt));
    let short = e.shortened(&texts.iter().map(|(s, _)| s.clone()).collect::<Vec<_>>());
    assert!(short.texts().is_empty());
    let plan = short.validate().unwrap().plan("print", &[]).unwrap();
    assert_eq!(plan.driver.prompt, "Go.");
    assert_eq!(plan.agents["worker"][1].say.as_deref(), Some("Done."));

    assert_eq!(e.params(), [("bg_seconds".to_string(), 12.0, true)]);
    // The print variant's range (bg_seconds >= 6) stays with the flattened candidate.
    let faster = e.with_param("bg_seconds", 6.7);
    assert!(
        faster
            .text()
            .contains("bg_seconds = { default = 6, min = 6, reason = "),
        "{}",
        faster.text()
    );
    faster.validate().unwrap();
    assert!(
        e.with_param("bg_seconds", 5.0).validate().is_err(),
        "a value below the range is no candidate"
    );

    let e = Editable::flatten(&library("teammate-idle"), "pty").unwrap();
    assert_eq!(e.inputs()[1], "input 2 (\"next 2\" after turn-end:main#3)");
    let plan = e
        .without_inputs(&[0, 2])
        .validate()
        .unwrap()
        .plan("pty", &[])
        .unwrap();
    assert_eq!(plan.driver.inputs.len(), 1);
    let mut named = e.clone();
    named.set_name("teammate-idle-min");
    named.set_expect("woke");
    let s = named.validate().unwrap();
    assert_eq!(s.name, "teammate-idle-min");
    assert_eq!(
        s.expected("pty"),
        Some(crate::scenario::Expected::One(
            crate::scenario::Outcome::Woke
        ))
    );
    named.clear_expect();
    assert_eq!(named.validate().unwrap().expected("pty"), None);
}

/// A command scenario's integration, named beside the file, stays the same file when a
/// candidate is written elsewhere; other words of the command are left alone.
#[test]
fn the_integration_beside_a_scenario_is_named_absolutely() {
    let source = r#"
name = "c"
title = "c"
summary = "c"

[driver]
mode = "command"
command = ["node", "./app.mjs", "../lib/x.mjs", "fixed", "/abs/y"]
prompt = "go"
ceiling_seconds = 60

[[agents.main.steps]]
say = "done"
"#;
    let mut e = Editable::flatten(source, "command").unwrap();
    e.anchor_command(std::path::Path::new("/work/scenarios"));
    let text = e.text();
    assert!(
        text.contains(r#"command = ["node", "/work/scenarios/./app.mjs", "/work/scenarios/../lib/x.mjs", "fixed", "/abs/y"]"#),
        "{text}"
    );
    e.validate().unwrap();
}
