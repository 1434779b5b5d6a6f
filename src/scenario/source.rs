//! What resolving a variant reads, shared by the resolvers of its parts (`resolve`, `checks`,
//! `invariants`): where an error points (`Locator`), the raw file and the variant's merged
//! driver (`VariantSource`), and the names its script defines (`Names`).

use std::collections::BTreeSet;
use std::ops::Range;
use std::time::Duration;

use indexmap::IndexMap;
use toml::Spanned;

use super::ScenarioError;
use super::outcome::Expected;
use super::outcome::Outcome;
use super::params::MAX_SECONDS;
use super::plan::{MAIN_AGENT, Step};
use super::raw::{NumExpr, RawDriver, RawScenario};
use super::template::{self, Params};

/// Turns byte spans into `file:line:col` errors.
pub(super) struct Locator<'a> {
    pub path: String,
    pub source: &'a str,
}

impl Locator<'_> {
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.source.len());
        let before = &self.source[..offset];
        let line = before.matches('\n').count() + 1;
        let col = before
            .rfind('\n')
            .map_or(before, |nl| &before[nl + 1..])
            .chars()
            .count()
            + 1;
        (line, col)
    }

    /// A TOML parser's error, located, in the scenario's words: no Rust type names.
    pub fn toml_error(&self, e: &toml::de::Error) -> ScenarioError {
        let message = e.message().trim_end().replace('\n', " ");
        self.error(e.span().unwrap_or(0..0), humane(&message))
    }

    pub fn error(&self, span: Range<usize>, message: String) -> ScenarioError {
        let (line, col) = self.line_col(span.start);
        ScenarioError::Invalid {
            path: self.path.clone(),
            line,
            col,
            message,
        }
    }

    pub(super) fn text(
        &self,
        value: &Spanned<String>,
        params: &Params,
    ) -> Result<String, ScenarioError> {
        template::substitute(value.get_ref(), params).map_err(|m| self.error(value.span(), m))
    }

    pub(super) fn seconds(
        &self,
        value: &Spanned<NumExpr>,
        params: &Params,
    ) -> Result<Duration, ScenarioError> {
        let n = match value.get_ref() {
            NumExpr::Num(n) => *n,
            NumExpr::Expr(e) => template::substitute(e, params)
                .and_then(|s| template::eval_arithmetic(&s))
                .map_err(|m| self.error(value.span(), m))?,
        };
        if !(0.0..=MAX_SECONDS).contains(&n) {
            return Err(self.error(
                value.span(),
                format!(
                    "{n} seconds is out of range (expected 0 to {MAX_SECONDS}){}",
                    from_params(value.get_ref(), params)
                ),
            ));
        }
        Ok(Duration::from_secs_f64(n))
    }
}

/// A deserializer's message with the Rust types it names said in words: `as i128` (an integer
/// TOML cannot hold), `expected u32`, an untagged enum's name.
pub(super) fn humane(message: &str) -> String {
    const WORDS: &[(&str, &str)] = &[
        ("u8", "a whole number from 0 to 255"),
        ("u16", "a whole number from 0 to 65535"),
        ("u32", "a whole number from 0 to 4294967295"),
        ("u64", "a whole number from 0 to 18446744073709551615"),
        ("usize", "a whole number from 0 to 18446744073709551615"),
        ("i32", "a whole number"),
        ("i64", "a whole number"),
        ("f32", "a number"),
        ("f64", "a number"),
    ];
    let mut text = message.to_string();
    if let Some(at) = text.find("` as i128") {
        // `invalid type: integer `N` as i128, expected X`
        let start = text[..at].rfind('`').map_or(0, |i| i + 1);
        let number = text[start..at].to_string();
        let expected = text
            .split_once(", expected ")
            .map(|(_, x)| x.to_string())
            .filter(|x| !x.starts_with("any "));
        text = format!(
            "{number} is too large a number (TOML integers are at most {}){}",
            i64::MAX,
            expected
                .map(|x| format!(": expected {x}"))
                .unwrap_or_default()
        );
    }
    for (rust, words) in WORDS {
        for lead in ["expected ", "expected a value of type "] {
            let from = format!("{lead}{rust}");
            if text.ends_with(&from) {
                text = format!("{}expected {words}", &text[..text.len() - from.len()]);
            }
        }
    }
    if text.starts_with("data did not match any variant of untagged enum") {
        text = "a value of another kind than this key takes".into();
    }
    text
}

/// `: from bg_seconds = 1e12` for the parameters an expression of seconds uses, so the
/// message names the key that made it absurd.
fn from_params(expr: &NumExpr, params: &Params) -> String {
    let NumExpr::Expr(text) = expr else {
        return String::new();
    };
    let used: Vec<String> = template::names_in(text)
        .into_iter()
        .filter_map(|name| Some(format!("{name} = {}", params.get(name)?)))
        .collect();
    if used.is_empty() {
        String::new()
    } else {
        format!(": from {}", used.join(", "))
    }
}

/// What a variant resolves from: the raw file and the variant's merged driver table.
pub(super) struct VariantSource<'a> {
    pub raw: &'a RawScenario,
    pub driver: RawDriver,
    pub name: &'a str,
    pub variant: &'a str,
    pub title: &'a str,
    pub expect: Option<Expected>,
    pub want: Option<Outcome>,
    /// Every variant of the scenario, for expectations given per variant.
    pub variants: Vec<String>,
    /// The runtime the variant resolves for: its verbs, refusals and evidence.
    pub runtime: super::Runtime,
}

/// The names a variant's script defines: its agents, and its tracked commands.
pub(super) struct Names {
    pub(super) agents: BTreeSet<String>,
    pub(super) tracks: BTreeSet<String>,
}

impl Names {
    pub(super) fn of(agents: &IndexMap<String, Vec<Step>>) -> Names {
        Names {
            agents: agents.keys().cloned().collect(),
            tracks: agents
                .values()
                .flatten()
                .flat_map(|s| &s.calls)
                .filter_map(|c| c.track.clone())
                .collect(),
        }
    }

    pub(super) fn has_agent(&self, name: &str) -> bool {
        self.agents.contains(name)
    }

    pub(super) fn agent_list(&self) -> String {
        Names::list(&self.agents)
    }

    /// A tracked command's name.
    pub(super) fn is_track(&self, name: &str) -> bool {
        self.tracks.contains(name)
    }

    /// Work a watch or a stop can name: a spawned agent or a tracked command.
    pub(super) fn is_work(&self, name: &str) -> bool {
        self.tracks.contains(name) || (name != MAIN_AGENT && self.agents.contains(name))
    }

    pub(super) fn list(set: &BTreeSet<String>) -> String {
        if set.is_empty() {
            "none in this variant".into()
        } else {
            set.iter().cloned().collect::<Vec<_>>().join(", ")
        }
    }

    pub(super) fn works(&self) -> String {
        let mut all: BTreeSet<String> = self.tracks.clone();
        all.extend(self.agents.iter().filter(|a| *a != MAIN_AGENT).cloned());
        Names::list(&all)
    }
}
