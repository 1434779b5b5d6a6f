//! The importer on transcripts the real CLI wrote (tests/fixtures/runs/*/transcripts) and on
//! small hand-made ones for what those do not show.

use std::path::{Path, PathBuf};

use super::*;
use crate::scenario::{InputAction, Plan, Trigger};

fn session_file(run: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs")
        .join(run)
        .join("transcripts/-$SANDBOX-project");
    std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a session transcript")
}

fn plan_of(imported: &Imported) -> Plan {
    let scenario = Scenario::parse(Path::new("x.toml"), imported.text.clone()).unwrap();
    scenario.plan(&scenario.variants()[0], &[]).unwrap()
}

fn import_text(lines: &[serde_json::Value], opts: &Options) -> Imported {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s1.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    import(&path, opts).unwrap()
}

#[test]
fn the_seed_print_transcript_becomes_its_scenario() {
    let imported = import(&session_file("seed000-print"), &Options::default()).unwrap();
    let plan = plan_of(&imported);
    assert_eq!(
        plan.driver.prompt,
        "Start the background worker and let it run its long command."
    );
    assert_eq!(plan.driver.mode, DriverMode::Print);
    assert!(
        imported
            .text
            .contains("# mode: one prompt and no later input")
    );
    assert_eq!(plan.agents.keys().collect::<Vec<_>>(), ["main", "worker"]);
    let spawn = plan.agents["main"][0].first_call().unwrap();
    assert_eq!(spawn.spawn.as_deref(), Some("worker"));
    assert!(
        !spawn.input["prompt"]
            .as_str()
            .unwrap()
            .contains("wakeprobe")
    );
    let bg = plan.agents["worker"][0].first_call().unwrap();
    assert_eq!(bg.track.as_deref(), Some("bg"));
    assert_eq!(bg.input["command"], "sleep 8; echo bg-done");
    assert!(
        imported
            .text
            .contains("command = \"sleep {{bg_seconds}}; echo bg-done\"")
    );
    assert_eq!(
        plan.params.get("bg_seconds"),
        Some(&crate::scenario::ParamValue::Int(8))
    );
    let pairs: Vec<(&str, &str)> = plan
        .watch
        .iter()
        .map(|w| (w.waiter.as_str(), w.work.as_str()))
        .collect();
    assert_eq!(pairs, [("main", "worker"), ("worker", "bg")]);
    assert_eq!(
        plan.agents["worker"][1].say.as_deref(),
        Some("The run will re-invoke me on completion.")
    );
    // `--set` scales the lifted duration.
    let scenario = Scenario::parse(Path::new("x.toml"), imported.text.clone()).unwrap();
    let scaled = scenario
        .plan("print", &[("bg_seconds".into(), "3".into())])
        .unwrap();
    assert_eq!(
        scaled.agents["worker"][0].first_call().unwrap().input["command"],
        "sleep 3; echo bg-done"
    );
    assert!(scaled.driver.ceiling < plan.driver.ceiling);
}

#[test]
fn the_mode_can_be_given() {
    let opts = Options {
        mode: Some(DriverMode::Session),
        name: Some("seed-session".into()),
    };
    let imported = import(&session_file("seed000-session"), &opts).unwrap();
    let plan = plan_of(&imported);
    assert_eq!(plan.driver.mode, DriverMode::Session);
    assert_eq!(plan.scenario, "seed-session");
    // The harness's answer past the end of the script is not a step.
    assert!(!imported.text.contains("no more steps"));
}

#[test]
fn interrupts_become_control_requests_timed_from_the_interrupted_command() {
    let plan = plan_of(&import(&session_file("interrupt-main"), &Options::default()).unwrap());
    assert_eq!(plan.driver.mode, DriverMode::Session);
    let inputs = &plan.driver.inputs;
    assert_eq!(inputs.len(), 2, "{inputs:?}");
    assert_eq!(inputs[0].after, Trigger::TaskStart("work".into()));
    assert!(matches!(
        inputs[0].action,
        InputAction::Control {
            subtype: crate::scenario::Control::Interrupt,
            ..
        }
    ));
    assert_eq!(inputs[1].after, Trigger::TaskEnd("work".into()));
    assert_eq!(
        inputs[1].action,
        InputAction::Text {
            text: "Carry on with the short check instead.".into()
        }
    );
    assert!((0.9..=1.2).contains(&inputs[1].delay.as_secs_f64()));

    let plan = plan_of(&import(&session_file("interrupt-stop"), &Options::default()).unwrap());
    assert!(matches!(
        &plan.driver.inputs[0].action,
        InputAction::Control { target: Some(t), .. } if t == "worker"
    ));
}

fn record(kind: &str, message: serde_json::Value, t: &str) -> serde_json::Value {
    serde_json::json!({
        "type": kind, "message": message, "timestamp": format!("2026-12-01T10:00:{t}Z"),
        "cwd": "/home/alice/shop", "sessionId": "s1", "version": "2.1.400",
    })
}

#[test]
fn unknown_records_are_counted_and_secrets_and_paths_redacted() {
    let lines = vec![
        record(
            "user",
            serde_json::json!({"role": "user", "content": "Deploy with ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrst"}),
            "00.000",
        ),
        serde_json::json!({"type": "hologram", "timestamp": "2026-12-01T10:00:00.100Z"}),
        serde_json::json!({"type": "hologram"}),
        serde_json::json!({"no": "type"}),
        record(
            "assistant",
            serde_json::json!({"id": "m1", "role": "assistant", "content": [
                {"type": "text", "text": "Tailing alice's log; the token ghp_0123456789abcdefghij leaked."},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "tail -f /home/alice/shop/log/app.log > /home/alice/out.txt; sleep 600", "run_in_background": true, "description": "Tail the log"}}]}),
            "01.000",
        ),
        record(
            "user",
            serde_json::json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "Command running in background with ID: b1"}]}),
            "01.500",
        ),
        record(
            "assistant",
            serde_json::json!({"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "Waiting."}]}),
            "02.000",
        ),
    ];
    let imported = import_text(&lines, &Options::default());
    assert_eq!(
        imported.stats.unknown_line().as_deref(),
        Some("skipped 3 record(s) of unknown types: (no type) (1), hologram (2)")
    );
    let text = &imported.text;
    assert!(
        !text.contains("alice") && !text.contains("sk-ant-") && !text.contains("ghp_"),
        "{text}"
    );
    assert!(text.contains("ANTHROPIC_API_KEY=<redacted>"), "{text}");
    assert!(
        text.contains(
            "command = \"tail -f $PWD/log/app.log > $HOME/out.txt; sleep {{bg_seconds}}\""
        ),
        "{text}"
    );
    assert!(
        text.contains("Tailing $USER's log; the token <redacted> leaked."),
        "{text}"
    );
    assert!(
        text.contains("# this command referred to the user's own paths"),
        "{text}"
    );
    let plan = plan_of(&imported);
    assert_eq!(
        plan.agents["main"][0]
            .first_call()
            .unwrap()
            .track
            .as_deref(),
        Some("tail-the-log")
    );
    assert_eq!(plan.watch[0].work, "tail-the-log");
}

#[test]
fn agent_ids_become_placeholders_and_long_waits_parameters() {
    let agent_call = serde_json::json!({"id": "m1", "role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "Agent", "input": {"description": "Run the Tests!", "prompt": "Run them.", "run_in_background": true, "subagent_type": "general-purpose"}}]});
    let lines = [
        record(
            "user",
            serde_json::json!({"role": "user", "content": "Test it."}),
            "00.000",
        ),
        record("assistant", agent_call, "01.000"),
        {
            let mut r = record(
                "user",
                serde_json::json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "launched"}]}),
                "01.100",
            );
            r["toolUseResult"] =
                serde_json::json!({"status": "async_launched", "agentId": "a0123456789abcdef"});
            r
        },
        record(
            "assistant",
            serde_json::json!({"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "Started."}]}),
            "01.200",
        ),
        {
            let mut r = record(
                "user",
                serde_json::json!({"role": "user", "content": "Any news?"}),
                "41.200",
            );
            r["promptSource"] = "sdk".into();
            r
        },
        record(
            "assistant",
            serde_json::json!({"id": "m3", "role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "SendMessage", "input": {"to": "a0123456789abcdef", "message": "Status?"}}]}),
            "41.300",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s1.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    let sub = dir.path().join("s1/subagents");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(
        sub.join("agent-a0123456789abcdef.jsonl"),
        format!(
            "{}\n{}\n",
            record(
                "user",
                serde_json::json!({"role": "user", "content": "Run them."}),
                "01.050"
            ),
            record(
                "assistant",
                serde_json::json!({"id": "s1", "role": "assistant", "content": [{"type": "text", "text": "Passed."}]}),
                "02.000"
            )
        ),
    )
    .unwrap();
    let imported = import(&path, &Options::default()).unwrap();
    let plan = plan_of(&imported);
    assert_eq!(plan.driver.mode, DriverMode::Session);
    assert_eq!(
        plan.agents.keys().collect::<Vec<_>>(),
        ["main", "run-the-tests"]
    );
    let send = plan.agents["main"][2].first_call().unwrap();
    assert_eq!(send.input["to"], "{{@agent-id:run-the-tests}}");
    // The input waits for the latest moment a trigger can name: the subagent's turn end.
    assert!(
        imported.text.contains("wait_seconds = 39"),
        "{}",
        imported.text
    );
    assert_eq!(
        plan.driver.inputs[0].after,
        Trigger::TurnEnd("run-the-tests".into(), 1)
    );
    assert_eq!(plan.driver.inputs[0].delay.as_secs(), 39);
}

/// A run with our stall guard imports with the guard installed only if the importer knows every
/// reason the guard can feed back: each `block` of the hook begins with one it knows.
#[test]
fn every_reason_the_stall_guard_gives_is_recognised() {
    let hook = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("sandbox-project/.claude/hooks/subagent-stall-guard.sh"),
    )
    .unwrap();
    let reasons: Vec<&str> = hook
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("block "))
        .map(|r| r.trim_start_matches(['"', '\'']))
        .collect();
    assert!(reasons.len() >= 2, "the guard's blocks: {reasons:?}");
    for reason in reasons {
        assert!(
            build::GUARD_REASONS.iter().any(|k| reason.starts_with(k)),
            "the importer does not know this reason of the guard: {reason}"
        );
    }
}

#[test]
fn a_tool_search_is_no_step_and_a_monitor_is_tracked_and_watched() {
    let lines = vec![
        record(
            "user",
            serde_json::json!({"role": "user", "content": "Watch for the flag."}),
            "00.000",
        ),
        record(
            "assistant",
            serde_json::json!({"id": "m1", "role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "ToolSearch", "input": {"query": "select:Monitor"}}]}),
            "01.000",
        ),
        record(
            "user",
            serde_json::json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "tool_reference", "tool_name": "Monitor"}]}]}),
            "01.100",
        ),
        record(
            "assistant",
            serde_json::json!({"id": "m2", "role": "assistant", "content": [
                {"type": "tool_use", "id": "t2", "name": "Monitor", "input": {"command": "wp-track mon 'sleep 3; echo FIRED'", "description": "Wait for the flag"}}]}),
            "02.000",
        ),
        record(
            "user",
            serde_json::json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "Monitor started (task b1)"}]}),
            "02.100",
        ),
        record(
            "assistant",
            serde_json::json!({"id": "m3", "role": "assistant", "content": [{"type": "text", "text": "Armed."}]}),
            "02.200",
        ),
    ];
    let imported = import_text(&lines, &Options::default());
    let plan = plan_of(&imported);
    let main = &plan.agents["main"];
    assert_eq!(main.len(), 2, "{}", imported.text);
    let monitor = main[0].first_call().unwrap();
    assert_eq!(monitor.tool, "Monitor");
    assert_eq!(monitor.track.as_deref(), Some("mon"));
    assert_eq!(monitor.input["command"], "sleep 3; echo FIRED");
    assert!(
        plan.watch
            .iter()
            .any(|w| w.waiter == "main" && w.work == "mon"),
        "{}",
        imported.text
    );
}
