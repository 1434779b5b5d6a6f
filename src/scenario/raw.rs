//! The scenario file as written: serde types that mirror the TOML one to one.
//!
//! Every table denies unknown keys so a typo is an error with a position, never a silently
//! ignored setting. Fields that need a position for later checks are `Spanned`.

use indexmap::IndexMap;
use serde::Deserialize;

pub use super::mode::DriverMode;
use toml::Spanned;

use super::params::RawParam;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(
    expecting = "a scenario file (a table with `name`, `title`, `summary`, `[driver]` and `[agents]`)"
)]
pub struct RawScenario {
    pub name: Spanned<String>,
    pub title: String,
    pub summary: String,
    pub seed: Option<String>,
    pub reproduces: Option<String>,
    /// The runtime the scenario runs on unless `--runtime` says otherwise, and the one its
    /// `[expect]` verdicts were recorded on (`claude-code` when absent).
    pub runtime: Option<Spanned<String>>,
    #[serde(default)]
    pub params: IndexMap<String, Spanned<RawParam>>,
    pub driver: Spanned<RawDriver>,
    #[serde(default)]
    pub variants: IndexMap<String, Spanned<RawDriver>>,
    pub agents: IndexMap<String, Spanned<RawAgent>>,
    /// Per variant: a verdict, or a list of them (a declared race); per other runtime, a table
    /// of the same (`[expect.opencode]`).
    #[serde(default)]
    pub expect: IndexMap<String, Spanned<RawVerdicts>>,
    /// The verdict the CLI should give (beside `expect`, what the pinned CLI gives today).
    #[serde(default)]
    pub want: IndexMap<String, Spanned<RawVerdicts>>,
    #[serde(default)]
    pub watch: Vec<Spanned<RawWatch>>,
    #[serde(default)]
    pub checks: Vec<Spanned<RawCheck>>,
    /// What the fake API breaks, in every variant (see `scenario::fault`).
    #[serde(default)]
    pub faults: Vec<Spanned<RawFault>>,
    /// The folder's invariants this scenario's runs may break, each with why (a scenario that
    /// measures the break): a break is reported, and does not fail the run.
    pub may_break: Option<Spanned<IndexMap<String, String>>>,
    /// For a maintainer reading the draft: the case that works, in the author's words.
    pub contrast: Option<Spanned<String>>,
    /// For a maintainer reading the draft: what users can do until it is fixed.
    pub workaround: Option<Spanned<String>>,
}

/// A verdict (`"woke"`), or a list of them (`["woke", "queued-until-input"]`, a race); in
/// `[expect]`, also a table of them per variant for another runtime (`[expect.opencode]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(
    untagged,
    expecting = "expected a verdict such as \"woke\", or a list of verdicts such as [\"woke\", \"queued-until-input\"]"
)]
pub enum RawVerdicts {
    One(String),
    Many(Vec<String>),
    OnRuntime(IndexMap<String, RawVerdicts>),
}

impl RawVerdicts {
    /// The verdict names (none for a runtime's table).
    pub fn names(&self) -> Vec<&str> {
        match self {
            RawVerdicts::One(s) => vec![s.as_str()],
            RawVerdicts::Many(v) => v.iter().map(String::as_str).collect(),
            RawVerdicts::OnRuntime(_) => vec![],
        }
    }
}

/// One `[[faults]]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a fault table such as { kind = \"overloaded-529\", on = \"notification\" }")]
pub struct RawFault {
    pub kind: Spanned<String>,
    pub agent: Option<Spanned<String>>,
    pub request: Option<Spanned<u32>>,
    pub on: Option<Spanned<String>>,
    pub times: Option<Spanned<u32>>,
    pub seconds: Option<Spanned<f64>>,
    pub delay_ms: Option<Spanned<u64>>,
    pub work: Option<Spanned<String>>,
    pub after_seconds: Option<Spanned<f64>>,
    /// A process fault's trigger (as an input's `after`): `after_seconds` counts from it.
    pub after: Option<Spanned<String>>,
    /// The fault may miss the run without failing it.
    pub optional: Option<bool>,
}

/// Driver settings: the base `[driver]` table, and each `[variants.NAME]` patch over it.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(
    expecting = "a driver table such as { mode = \"print\", prompt = \"...\", ceiling_seconds = 60 }"
)]
pub struct RawDriver {
    pub mode: Option<DriverMode>,
    pub prompt: Option<Spanned<String>>,
    pub ceiling_seconds: Option<Spanned<NumExpr>>,
    pub settle_seconds: Option<Spanned<NumExpr>>,
    pub permission_mode: Option<String>,
    pub allowed_tools: Option<Vec<String>>,
    pub env: Option<IndexMap<String, Spanned<String>>>,
    pub guard: Option<bool>,
    pub inputs: Option<Vec<Spanned<RawInput>>>,
    pub probe: Option<Spanned<RawProbe>>,
    /// Whether the CLI writes its session to disk (`false`: `--no-session-persistence`, the
    /// SDKs' `persistSession: false`).
    pub persist_session: Option<bool>,
    /// SDK modes: `"stream"` (streaming input, the default) or `"string"` (the SDK's one-shot
    /// string prompt, which closes the CLI's input after it).
    pub prompt_form: Option<Spanned<String>>,
    /// SDK modes: hooks given to the SDK as callbacks (recorded as they fire), by event name.
    pub callback_hooks: Option<Spanned<Vec<String>>>,
    /// Mode `command`: the integration to run, program and arguments (`./` and `../`
    /// arguments are relative to the scenario file's folder).
    pub command: Option<Spanned<Vec<String>>>,
    /// Mode `command`: how the user answers every approval the integration shows (`allow`,
    /// the default, or `deny`).
    pub approve: Option<Spanned<String>>,
    #[serde(default)]
    pub params: IndexMap<String, Spanned<RawParam>>,
    /// In a variant: agents whose script differs from `[agents]` in this variant.
    #[serde(default)]
    pub agents: IndexMap<String, Spanned<RawAgent>>,
}

impl RawDriver {
    /// `self` with every field `patch` sets replaced; `env` and `params` merge key by key.
    pub fn patched(&self, patch: &RawDriver) -> RawDriver {
        let mut env = self.env.clone().unwrap_or_default();
        env.extend(patch.env.clone().unwrap_or_default());
        let mut params = self.params.clone();
        params.extend(patch.params.clone());
        let mut agents = self.agents.clone();
        agents.extend(patch.agents.clone());
        RawDriver {
            mode: patch.mode.or(self.mode),
            prompt: patch.prompt.clone().or_else(|| self.prompt.clone()),
            ceiling_seconds: patch
                .ceiling_seconds
                .clone()
                .or_else(|| self.ceiling_seconds.clone()),
            settle_seconds: patch
                .settle_seconds
                .clone()
                .or_else(|| self.settle_seconds.clone()),
            permission_mode: patch
                .permission_mode
                .clone()
                .or_else(|| self.permission_mode.clone()),
            allowed_tools: patch
                .allowed_tools
                .clone()
                .or_else(|| self.allowed_tools.clone()),
            env: Some(env),
            guard: patch.guard.or(self.guard),
            inputs: patch.inputs.clone().or_else(|| self.inputs.clone()),
            probe: patch.probe.clone().or_else(|| self.probe.clone()),
            persist_session: patch.persist_session.or(self.persist_session),
            prompt_form: patch
                .prompt_form
                .clone()
                .or_else(|| self.prompt_form.clone()),
            callback_hooks: patch
                .callback_hooks
                .clone()
                .or_else(|| self.callback_hooks.clone()),
            command: patch.command.clone().or_else(|| self.command.clone()),
            approve: patch.approve.clone().or_else(|| self.approve.clone()),
            params,
            agents,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "an input table such as { after = \"result\", text = \"next\" }")]
pub struct RawInput {
    #[serde(default)]
    pub after: Option<Spanned<String>>,
    pub delay_seconds: Option<Spanned<NumExpr>>,
    /// A user message (session) or typed turn (pty).
    pub text: Option<Spanned<String>>,
    /// A stream-json control request instead of text: `interrupt` or `stop_task`.
    pub control: Option<Spanned<String>>,
    /// The agent or tracked command a `stop_task` stops (or `send_task_message` writes to).
    pub target: Option<Spanned<String>>,
    /// The message of a `send_task_message` control request.
    pub message: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a probe table such as { text = \"Unrelated: what is 2+2?\" }")]
pub struct RawProbe {
    pub text: Spanned<String>,
    pub quiet_seconds: Option<Spanned<NumExpr>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "an agent table with `steps`")]
pub struct RawAgent {
    pub steps: Vec<Spanned<RawStep>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(
    expecting = "a step table such as { say = \"done\" } or { call = \"Bash\", input = { command = \"...\" } }"
)]
pub struct RawStep {
    pub say: Option<Spanned<String>>,
    pub call: Option<Spanned<String>>,
    pub input: Option<Spanned<toml::Table>>,
    pub spawn: Option<Spanned<String>>,
    pub track: Option<Spanned<String>>,
    /// Several tool calls in one assistant message (instead of `call`, `input`, `spawn`,
    /// `track`): `calls = [{ call = "Agent", spawn = "a", input = { ... } }, ...]`.
    pub calls: Option<Spanned<Vec<Spanned<RawCall>>>>,
    pub think_seconds: Option<Spanned<NumExpr>>,
    pub until: Option<Until>,
    pub max_repeats: Option<Spanned<u32>>,
}

impl RawStep {
    /// Every `spawn` of the step: its own, or its calls'.
    pub fn spawns(&self) -> Vec<&Spanned<String>> {
        let nested = self.calls.iter().flat_map(|c| c.get_ref());
        self.spawn
            .iter()
            .chain(nested.filter_map(|c| c.get_ref().spawn.as_ref()))
            .collect()
    }
}

/// One tool call of a step's `calls`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a call table such as { call = \"Agent\", spawn = \"a\", input = { ... } }")]
pub struct RawCall {
    pub call: Spanned<String>,
    pub input: Option<Spanned<toml::Table>>,
    pub spawn: Option<Spanned<String>>,
    pub track: Option<Spanned<String>>,
}

/// When a step repeats instead of advancing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Until {
    /// Serve this step again on every request until one carries a `<task-notification>`.
    Notified,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a watch table such as { waiter = \"worker\", work = \"bg\" }")]
pub struct RawWatch {
    pub waiter: Spanned<String>,
    pub work: Spanned<String>,
    /// Work still running this long after its start counts as hung.
    pub hang_seconds: Option<Spanned<NumExpr>>,
}

/// A check: a preset (`kind`) or one relation over selectors (see `query`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a check table with a `name` and a preset (`kind`) or a relation")]
pub struct RawCheck {
    pub name: String,
    pub kind: Option<Spanned<String>>,
    pub agent: Option<Spanned<String>>,
    /// A string, or a table of strings by variant (see `scenario::checks`).
    pub expect: Option<Spanned<toml::Value>>,
    /// What the check should observe (beside `expect`, what the pinned CLI gives today); the
    /// same forms as `expect`.
    pub want: Option<Spanned<toml::Value>>,
    /// The selectors may match nothing without the check being vacuous.
    #[serde(default)]
    pub allow_empty: bool,
    pub count: Option<Spanned<RawSelector>>,
    pub exists: Option<Spanned<RawSelector>>,
    pub absent: Option<Spanned<RawSelector>>,
    pub before: Option<Spanned<RawBefore>>,
    pub within: Option<Spanned<RawWithin>>,
    pub pairs: Option<Spanned<RawPairs>>,
    #[serde(rename = "while")]
    pub while_: Option<Spanned<RawWhile>>,
    pub value: Option<Spanned<RawValue>>,
    pub followed: Option<Spanned<RawFollowed>>,
    pub gap: Option<Spanned<RawGap>>,
    /// The maintainer's sentence for the bug the check catches when it fails its `want`, in
    /// the CLI's terms: the issue draft's title and the first line of its Summary.
    pub describes: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(
    expecting = "a selector table such as { kind = \"hook\" } or { hook = \"SubagentStop\", agent = \"worker\" }"
)]
pub struct RawSelector {
    pub source: Option<Spanned<String>>,
    pub kind: Option<Spanned<String>>,
    pub agent: Option<Spanned<String>>,
    pub work: Option<Spanned<String>>,
    pub hook: Option<Spanned<String>>,
    #[serde(rename = "type")]
    pub line_type: Option<Spanned<String>>,
    pub subtype: Option<Spanned<String>>,
    pub tool: Option<Spanned<String>>,
    pub status: Option<Spanned<String>>,
    #[serde(rename = "where")]
    pub predicates: Option<Vec<Spanned<RawPredicate>>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a `where` entry such as { path = \"text\", contains = \"done\" }")]
pub struct RawPredicate {
    pub path: Spanned<String>,
    pub equals: Option<Spanned<toml::Value>>,
    pub contains: Option<Spanned<String>>,
    pub matches: Option<Spanned<String>>,
    pub exists: Option<Spanned<bool>>,
    pub gt: Option<Spanned<NumExpr>>,
    pub ge: Option<Spanned<NumExpr>>,
    pub lt: Option<Spanned<NumExpr>>,
    pub le: Option<Spanned<NumExpr>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a table { from = { ... }, to = { ... } } of two selectors")]
pub struct RawGap {
    pub from: Spanned<RawSelector>,
    pub to: Spanned<RawSelector>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a table { first = { ... }, then = { ... } } of two selectors")]
pub struct RawBefore {
    pub first: Spanned<RawSelector>,
    pub then: Spanned<RawSelector>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a table { after = { ... }, then = { ... }, seconds = N } of two selectors")]
pub struct RawWithin {
    pub after: Spanned<RawSelector>,
    pub then: Spanned<RawSelector>,
    pub seconds: Option<Spanned<NumExpr>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a table { each = { ... }, with = { ... }, by = \"agent\" } of two selectors")]
pub struct RawPairs {
    pub each: Spanned<RawSelector>,
    pub with: Spanned<RawSelector>,
    pub by: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a table { count = { ... }, from = { ... }, until = { ... } } of selectors")]
pub struct RawWhile {
    pub count: Spanned<RawSelector>,
    pub from: Spanned<RawSelector>,
    pub until: Option<Spanned<RawSelector>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a table { at = { ... }, path = \"...\" } with a selector")]
pub struct RawValue {
    pub at: Spanned<RawSelector>,
    pub path: Spanned<String>,
    pub which: Option<Spanned<String>>,
    pub capture: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a table { each = { ... }, by = { ... } } of two selectors")]
pub struct RawFollowed {
    pub each: Spanned<RawSelector>,
    pub by: Spanned<RawSelector>,
    pub unless: Option<Spanned<RawSelector>>,
}

/// A number of seconds, or a string holding `{{param}}` arithmetic.
#[derive(Debug, Clone, PartialEq)]
pub enum NumExpr {
    Num(f64),
    Expr(String),
}

impl<'de> Deserialize<'de> for NumExpr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = NumExpr;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number of seconds or a string such as \"{{bg_seconds}} + 30\"")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<NumExpr, E> {
                Ok(NumExpr::Num(v as f64))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<NumExpr, E> {
                Ok(NumExpr::Num(v as f64))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<NumExpr, E> {
                Ok(NumExpr::Num(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<NumExpr, E> {
                Ok(NumExpr::Expr(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}
