//! `wakeprobe lint`: what a scenario file says that the tool no longer needs. The static checks
//! are the loader's own (a file that does not load, or a variant that does not plan, is an
//! error); on top of them, keys that still load but mean nothing today: a `seed` naming none of
//! the project's source reports, a script step calling `ToolSearch` (the fake API loads a
//! deferred tool itself, and on versions that offer the tool directly the step loads nothing),
//! an `allowed_tools` that repeats what the CLI gets without it, and a check whose outcome
//! cannot differ between a buggy and a fixed run (its `want` is its `expect`, or a comparison
//! every count meets).

use std::collections::BTreeSet;

use regex::Regex;

use super::plan::DEFAULT_ALLOWED_TOOLS;
use super::{Scenario, ScenarioError};

/// The project's source reports a `seed` names (`seeds/000_...` to `seeds/004_...`).
pub const SEEDS: [&str; 5] = ["000", "001", "002", "003", "004"];

/// One stale key, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

/// Every stale key of a loaded scenario, in file order; an error where a variant does not plan
/// with its default parameters (a mistake the loader leaves to the plan).
pub fn stale(s: &Scenario) -> Result<Vec<Stale>, ScenarioError> {
    let mut found = Vec::new();
    if let Some(seed) = s.seed.as_deref().filter(|seed| !SEEDS.contains(seed)) {
        found.push(s.stale_at(
            r"(?m)^\s*seed\s*=",
            format!(
                "`seed = \"{seed}\"` names none of the project's source reports ({}); say what the scenario reproduces in `reproduces`",
                SEEDS.join(", ")
            ),
        ));
    }
    if s.raw.may_break.is_some() && s.invariants.is_none() {
        found.push(s.stale_at(
            r"(?m)^\s*may_break\s*=",
            format!(
                "`may_break` names invariants, but no `{}` is beside this file: here it has none to break",
                super::invariants::FILE
            ),
        ));
    }
    let mut tool_search_lines = BTreeSet::new();
    let mut repeated_default = false;
    for variant in s.variants() {
        let plan = s.plan(&variant, &[])?;
        let calls: Vec<(usize, &str)> = plan
            .agents
            .values()
            .flatten()
            .flat_map(|step| step.calls.iter().map(|c| (step.line, c.tool.as_str())))
            .collect();
        tool_search_lines.extend(
            calls
                .iter()
                .filter(|(_, tool)| *tool == "ToolSearch")
                .map(|(line, _)| *line),
        );
        if let Some(given) = s.given_allowed_tools(&variant) {
            let called = calls.iter().map(|(_, tool)| *tool);
            let default: BTreeSet<&str> = DEFAULT_ALLOWED_TOOLS.into_iter().chain(called).collect();
            repeated_default |=
                given.iter().map(String::as_str).collect::<BTreeSet<_>>() == default;
        }
    }
    for (name, why) in blind_checks(s)? {
        found.push(s.stale_at(
            &format!(r#"(?m)^\s*name\s*=\s*"{}""#, regex::escape(&name)),
            format!("check “{name}” cannot tell a buggy run from a fixed one: {why}"),
        ));
    }
    for line in tool_search_lines {
        found.push(Stale {
            line,
            col: 1,
            message: "a step calls `ToolSearch`: the fake API loads a deferred tool itself when the script calls it (and on versions that offer the tool directly, this step loads nothing); call the tool".into(),
        });
    }
    if repeated_default {
        found.push(s.stale_at(
            r"(?m)^\s*allowed_tools\s*=",
            format!(
                "`allowed_tools` repeats what the CLI may run without it ({} and every tool the script calls); leave it out, or list only what the CLI may run",
                DEFAULT_ALLOWED_TOOLS.join(", ")
            ),
        ));
    }
    found.sort_by_key(|f| (f.line, f.col));
    Ok(found)
}

/// The checks (by name, once) whose outcome cannot differ between a run showing the bug and a
/// run of a fixed CLI, with why: a `want` equal to the `expect` (today's CLI already meets
/// it), or an `expect`/`want` comparison that every count meets.
fn blind_checks(s: &Scenario) -> Result<Vec<(String, String)>, ScenarioError> {
    let mut found: Vec<(String, String)> = Vec::new();
    for variant in s.variants() {
        for c in s.plan(&variant, &[])?.checks {
            let numeric = c.query.as_ref().is_some_and(|q| q.is_numeric());
            let why = match (&c.expect, &c.want) {
                (Some(e), Some(w)) if e == w => Some(format!(
                    "its `want` is its `expect` (`{w}`): today's CLI already meets it"
                )),
                _ => [("expect", &c.expect), ("want", &c.want)]
                    .into_iter()
                    .find_map(|(key, stated)| {
                        let stated = stated.as_deref()?;
                        (numeric && holds_of_every_count(stated)).then(|| {
                            format!(
                                "`{key} = \"{stated}\"` holds of every count, so no run fails it"
                            )
                        })
                    }),
            };
            if let Some(why) = why.filter(|_| !found.iter().any(|(n, _)| *n == c.name)) {
                found.push((c.name.clone(), why));
            }
        }
    }
    Ok(found)
}

/// Whether a comparison holds of every count (a number that is never negative).
fn holds_of_every_count(stated: &str) -> bool {
    use super::query::{CompareOp, Comparison};
    let Some(c) = Comparison::parse(stated) else {
        return false;
    };
    match c.op {
        CompareOp::Ge => c.value <= 0.0,
        CompareOp::Gt => c.value < 0.0,
        CompareOp::Ne => c.value < 0.0,
        CompareOp::Eq | CompareOp::Lt | CompareOp::Le => false,
    }
}

impl Scenario {
    /// A stale key at the first match of `pattern` in the file (its first line if none).
    fn stale_at(&self, pattern: &str, message: String) -> Stale {
        let at = Regex::new(pattern)
            .ok()
            .and_then(|re| re.find(&self.source))
            .map(|m| m.start() + (m.as_str().len() - m.as_str().trim_start().len()))
            .unwrap_or(0);
        let (line, col) = self.locator().line_col(at);
        Stale { line, col, message }
    }

    /// The `allowed_tools` the file gives for `variant` (its own, else `[driver]`'s).
    fn given_allowed_tools(&self, variant: &str) -> Option<&Vec<String>> {
        self.raw
            .variants
            .get(variant)
            .and_then(|v| v.get_ref().allowed_tools.as_ref())
            .or(self.raw.driver.get_ref().allowed_tools.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    const BASE: &str = r#"name = "t"
title = "t"
summary = "s"

[driver]
mode = "print"
prompt = "go"
ceiling_seconds = 10

[[agents.main.steps]]
call = "Monitor"
input = { command = "true" }

[[agents.main.steps]]
say = "done"
"#;

    fn stale_of(text: &str) -> Vec<usize> {
        let s = Scenario::parse(Path::new("t.toml"), text.to_string()).expect("loads");
        stale(&s).expect("plans").iter().map(|f| f.line).collect()
    }

    #[test]
    fn allowed_tools_is_stale_only_when_it_equals_the_default_with_the_called_tools() {
        let with = |tools: &str| {
            BASE.replace(
                "ceiling_seconds = 10",
                &format!("ceiling_seconds = 10\nallowed_tools = {tools}"),
            )
        };
        assert_eq!(stale_of(BASE), Vec::<usize>::new());
        assert_eq!(
            stale_of(&with(r#"["SendMessage", "Bash", "Monitor", "Agent"]"#)),
            [9]
        );
        // Narrower than the default, or wider: each says something.
        assert_eq!(
            stale_of(&with(r#"["Bash", "Monitor"]"#)),
            Vec::<usize>::new()
        );
        assert_eq!(
            stale_of(&with(
                r#"["Bash", "Agent", "SendMessage", "Monitor", "Read"]"#
            )),
            Vec::<usize>::new()
        );
    }

    /// A check that observes the same in a buggy run and a fixed one is named: its `want` is
    /// its `expect`, or a comparison every count meets; a real `want` is not.
    #[test]
    fn a_check_that_cannot_tell_a_bug_from_a_fix_is_named() {
        let with = |check: &str| format!("{BASE}\n[[checks]]\nname = \"c\"\n{check}\n");
        let lines = |check: &str| stale_of(&with(check));
        assert_eq!(
            lines(
                r#"count = { kind = "hook" }
expect = "2"
want = "1""#
            ),
            Vec::<usize>::new()
        );
        assert_eq!(
            lines(
                r#"count = { kind = "hook" }
expect = "2"
want = "2""#
            ),
            [18]
        );
        assert_eq!(
            lines(
                r#"count = { kind = "hook" }
want = ">= 0""#
            ),
            [18]
        );
        assert_eq!(
            lines(
                r#"count = { kind = "hook" }
expect = "!= -1""#
            ),
            [18]
        );
        assert_eq!(
            lines(
                r#"count = { kind = "hook" }
want = "> 0""#
            ),
            Vec::<usize>::new()
        );
        assert_eq!(
            lines(
                r#"exists = { kind = "hook" }
expect = "no"
want = "yes""#
            ),
            Vec::<usize>::new()
        );
        let s = Scenario::parse(
            Path::new("t.toml"),
            with("exists = { kind = \"hook\" }\nexpect = \"yes\"\nwant = \"yes\""),
        )
        .unwrap();
        let message = &stale(&s).unwrap()[0].message;
        assert!(message.contains("check “c” cannot tell a buggy run from a fixed one: its `want` is its `expect` (`yes`)"), "{message}");
    }

    #[test]
    fn a_seed_of_the_project_is_not_stale_and_any_other_is() {
        let with = |seed: &str| {
            BASE.replace(
                "summary = \"s\"",
                &format!("summary = \"s\"\nseed = \"{seed}\""),
            )
        };
        assert_eq!(stale_of(&with("004")), Vec::<usize>::new());
        assert_eq!(stale_of(&with("005")), [4]);
    }

    #[test]
    fn a_may_break_with_no_invariants_beside_is_stale() {
        let with = BASE.replace(
            "summary = \"s\"",
            "summary = \"s\"\nmay_break = { \"pairs\" = \"measures it\" }",
        );
        assert_eq!(stale_of(&with), [4]);
    }
}
