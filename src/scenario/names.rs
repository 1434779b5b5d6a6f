//! The names a scenario file gives (scenario, variants, agents, parameters, checks) and the
//! rules they follow. Scenario and variant names become folder names under `--out`
//! (`<run-id>/<scenario>/<variant>.<cli>.rN`), parameter names `threshold`'s `name=value`
//! folders and `--set` keys: none may climb out of its folder (`..`, `/`) or hide in a
//! terminal (control characters), so each is checked once, at load, with its position.

use std::collections::HashMap;

use toml::Spanned;

use super::ScenarioError;
use super::params::{RawParam, is_param_name};
use super::raw::{RawCheck, RawScenario};
use super::source::Locator;

/// The longest scenario, variant, agent or parameter name: each becomes part of a folder or
/// file name (`<scenario>/<variant>.<cli>.rN`, the sandbox's `wakeprobe-<scenario>-…`), and a
/// file name holds at most 255 bytes.
pub const MAX_NAME: usize = 64;

/// Lowercase letters, digits and `-`, at most [`MAX_NAME`]: scenario, variant and agent names.
pub(super) fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The error for a name that breaks [`is_name`]; `what` is "name", "variant name", ...
pub(super) fn invalid(
    at: &Locator,
    span: std::ops::Range<usize>,
    what: &str,
    name: &str,
) -> ScenarioError {
    at.error(
        span,
        invalid_text(what, name, "lowercase letters, digits and `-`"),
    )
}

/// Why `name` is no `what`: too long (shown cut short), or holding other characters than
/// `allowed`.
fn invalid_text(what: &str, name: &str, allowed: &str) -> String {
    let count = name.chars().count();
    if name.len() > MAX_NAME {
        let head: String = name.chars().take(20).collect();
        return format!(
            "{what} `{}…` is {count} characters long: at most {MAX_NAME} (it names folders and files)",
            head.escape_debug()
        );
    }
    format!(
        "invalid {what} `{}`: expected {allowed}",
        name.escape_debug()
    )
}

/// A scenario's `name` is its file's name in the scenario library, where `wakeprobe run NAME`
/// finds it by it.
pub(super) fn check_file_name(
    at: &Locator,
    path: &std::path::Path,
    span: std::ops::Range<usize>,
    name: &str,
) -> Result<(), ScenarioError> {
    let stem = path
        .extension()
        .filter(|x| *x == "toml")
        .and(path.file_stem())
        .and_then(|s| s.to_str());
    match stem {
        Some(stem) if stem != name => Err(at.error(
            span,
            format!(
                "`name` is `{name}`, but the file is `{stem}.toml`: in the scenario library a scenario's name is its file's name, which `wakeprobe run NAME` looks for (rename one of them)"
            ),
        )),
        _ => Ok(()),
    }
}

/// Variant and parameter names of the whole file (agent names are checked per variant, with
/// the agents it runs).
pub(super) fn check_file(at: &Locator, raw: &RawScenario) -> Result<(), ScenarioError> {
    for (name, variant) in &raw.variants {
        if !is_name(name) {
            return Err(invalid(at, variant.span(), "variant name", name));
        }
    }
    let variant_params = raw.variants.values().flat_map(|v| &v.get_ref().params);
    for (name, param) in raw.params.iter().chain(variant_params) {
        check_param_name(at, name, param)?;
    }
    for (key, prose) in [("contrast", &raw.contrast), ("workaround", &raw.workaround)] {
        if let Some(p) = prose.as_ref().filter(|p| p.get_ref().trim().is_empty()) {
            return Err(at.error(
                p.span(),
                format!("`{key}` is empty: write it for a maintainer reading the draft, or leave the key out"),
            ));
        }
    }
    Ok(())
}

fn check_param_name(
    at: &Locator,
    name: &str,
    param: &Spanned<RawParam>,
) -> Result<(), ScenarioError> {
    if is_param_name(name) && name.len() <= MAX_NAME {
        return Ok(());
    }
    Err(at.error(
        param.span(),
        invalid_text("parameter name", name, "letters, digits, `_` and `-`"),
    ))
}

/// Each check has its own name: results, JUnit cases and `minimize --keep check:NAME` find a
/// check by it.
pub(super) fn check_unique_checks(
    at: &Locator,
    checks: &[Spanned<RawCheck>],
) -> Result<(), ScenarioError> {
    let mut first_at: HashMap<&str, usize> = HashMap::new();
    for check in checks {
        let name = check.get_ref().name.as_str();
        let line = at.line_col(check.span().start).0;
        if let Some(first) = first_at.insert(name, line) {
            return Err(at.error(
                check.span(),
                format!(
                    "a second check named `{name}` (the first is on line {first}): each check needs its own name"
                ),
            ));
        }
    }
    Ok(())
}
