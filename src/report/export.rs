//! Exporting a scenario as a standalone reproduction: one Node script (ES module, no
//! dependencies) for upstream maintainers who will not install wakeprobe to read a bug report.
//!
//! This module owns the template `repro.mjs` and [`render`], which embeds a resolved [`Plan`] (as
//! JSON), the CLI version the script runs by default, and `judge.mjs`: wakeprobe's verdict rules
//! and checks, ported, so the script judges its run as wakeprobe would (a test feeds the same
//! saved runs to both). The script carries its own small fake Messages API, sandbox, tracker and
//! process-tree cleanup; it shares no code with the harness at run time. Nothing here does I/O.

use crate::scenario::Plan;

/// The script, with slots: JSON string literals for the plan, the version to run and the version
/// the plan's expectation was recorded on, and a comment line naming the export.
const TEMPLATE: &str = include_str!("repro.mjs");
/// The judgement (`classify` and `checks` in JavaScript), put in the template's judge slot.
const JUDGE: &str = include_str!("judge.mjs");
const JUDGE_SLOT: &str = "// __WAKEPROBE_JUDGE__\n";
const PLAN_SLOT: &str = "\"__WAKEPROBE_PLAN__\"";
const VERSION_SLOT: &str = "\"__WAKEPROBE_CLI_VERSION__\"";
const PINNED_SLOT: &str = "\"__WAKEPROBE_PINNED__\"";
const ABOUT_SLOT: &str = "__WAKEPROBE_ABOUT__";

/// The reproduction script for `plan`, running Claude Code `cli_version` unless told otherwise.
pub fn render(plan: &Plan, cli_version: &str) -> String {
    let plan_json = serde_json::to_string_pretty(plan).expect("a plan serializes to JSON");
    let json = |s: &str| serde_json::to_string(s).expect("a string serializes");
    // Each slot is filled in the template's own text, never in inserted text: a plan may hold
    // anything, even a slot's name.
    let (head, tail) = TEMPLATE
        .split_once(PLAN_SLOT)
        .expect("the template has a plan slot");
    let head = head.replacen(ABOUT_SLOT, &about(plan), 1);
    let tail = tail
        .replacen(VERSION_SLOT, &json(cli_version), 1)
        .replacen(PINNED_SLOT, &json(crate::backend::PINNED_VERSION), 1)
        .replacen(JUDGE_SLOT, JUDGE, 1);
    format!("{head}{plan_json}{tail}")
}

/// One comment line naming what was exported: `subagent-bg-turn-end/print (bg_seconds=7): title`.
fn about(plan: &Plan) -> String {
    let params: Vec<String> = plan
        .params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let params = if params.is_empty() {
        String::new()
    } else {
        format!(" ({})", params.join(", "))
    };
    let line = format!("{}/{}{params}: {}", plan.scenario, plan.variant, plan.title);
    line.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;
    use std::path::Path;

    fn seed_plan(sets: &[(&str, &str)]) -> Plan {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/subagent-bg-turn-end.toml");
        let sets: Vec<(String, String)> = sets
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Scenario::load(&path).unwrap().plan("print", &sets).unwrap()
    }

    /// The embedded plan reads back as the same plan, and every slot is filled.
    #[test]
    fn the_script_embeds_the_plan_and_the_version() {
        let plan = seed_plan(&[("bg_seconds", "7")]);
        let script = render(&plan, "2.1.332");
        for slot in [PLAN_SLOT, VERSION_SLOT, PINNED_SLOT, ABOUT_SLOT, JUDGE_SLOT] {
            assert!(!script.contains(slot), "{slot} left in the script");
        }
        assert!(script.contains("const CLI_VERSION = \"2.1.332\";"));
        assert!(script.contains(&format!(
            "const PINNED = \"{}\";",
            crate::backend::PINNED_VERSION
        )));
        assert!(script.contains(
            "// Exported: subagent-bg-turn-end/print (bg_seconds=7): A subagent that ends its turn"
        ));
        let start = script.find("const PLAN = ").unwrap() + "const PLAN = ".len();
        let end = start + script[start..].find(";\nconst CLI_VERSION").unwrap();
        let embedded: Plan = serde_json::from_str(&script[start..end]).unwrap();
        assert_eq!(
            serde_json::to_value(&embedded).unwrap(),
            serde_json::to_value(&plan).unwrap()
        );
        assert_eq!(
            embedded.agents["worker"][0].first_call().unwrap().input["command"],
            "sleep 7; echo bg-done"
        );
    }

    /// A plan whose text holds a slot's name does not confuse the substitution.
    #[test]
    fn text_in_the_plan_is_never_taken_for_a_slot() {
        let mut plan = seed_plan(&[]);
        let slots = format!("{VERSION_SLOT} {PINNED_SLOT} {ABOUT_SLOT} {PLAN_SLOT}");
        plan.driver.prompt = slots.clone();
        plan.title = format!("two\nlines {slots}");
        let script = render(&plan, "2.1.219");
        assert!(script.contains("const CLI_VERSION = \"2.1.219\";"));
        assert!(script.contains(&format!("print (bg_seconds=12): two lines {slots}\n")));
        assert!(script.contains(&serde_json::to_string(&plan.driver.prompt).unwrap()));
        assert!(script.contains("const PLAN = {\n"));
    }
}
