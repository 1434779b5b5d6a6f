//! Scenario files: the format, its validation with `file:line:col` errors, and parameters.
//!
//! A scenario is loaded once ([`Scenario::load`]), which checks every variant with the default
//! parameters so a broken file fails before anything runs. [`Scenario::plan`] then resolves one
//! variant with `--set` overrides into a [`Plan`]: concrete durations, substituted texts, and the
//! model script of every agent. This module never spawns anything.

mod raw;
pub mod template;

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use indexmap::IndexMap;
use serde::Serialize;
use toml::Spanned;

pub use raw::{DriverMode, NumExpr, Until};
use raw::{RawDriver, RawScenario, RawStep};
pub use template::{ParamValue, Params};

/// The agent the driver's prompt talks to.
pub const MAIN_AGENT: &str = "main";

/// Verdict names a scenario may expect (the classifier's outcomes).
pub const OUTCOMES: &[&str] = &[
    "woke",
    "never-fired",
    "not-resumable",
    "queued-until-input",
    "child-failed",
    "unknown",
];

/// Scenario-level checks the classifier knows (see `classify::checks`).
pub const CHECK_KINDS: &[&str] = &[
    "idle-teammate-distinguishable",
    "single-continuation",
    "subagent-stop-on-interrupt",
    "guard-blocked-once",
    "stops-unblocked",
    "tool-errors",
    "transcript-status",
];

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{path}:{line}:{col}: {message}")]
    Invalid {
        path: String,
        line: usize,
        col: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    File { path: String, message: String },
    #[error("--set {key}: {message}")]
    Override { key: String, message: String },
    #[error("{path}: no variant `{variant}`, expected one of: {known}")]
    NoVariant {
        path: String,
        variant: String,
        known: String,
    },
}

/// A loaded, validated scenario file.
#[derive(Debug)]
pub struct Scenario {
    pub path: PathBuf,
    pub source: String,
    pub name: String,
    pub title: String,
    pub summary: String,
    pub seed: Option<String>,
    pub reproduces: Option<String>,
    raw: RawScenario,
}

/// One variant of a scenario, resolved with concrete parameters: what a run executes.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Plan {
    pub scenario: String,
    pub title: String,
    pub variant: String,
    pub params: Params,
    pub driver: Driver,
    pub agents: IndexMap<String, Vec<Step>>,
    pub expect: Option<String>,
    pub watch: Vec<Watch>,
    pub checks: Vec<Check>,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Driver {
    pub mode: DriverMode,
    pub prompt: String,
    #[serde(serialize_with = "secs", deserialize_with = "de_secs")]
    pub ceiling: Duration,
    #[serde(serialize_with = "secs", deserialize_with = "de_secs")]
    pub settle: Duration,
    pub permission_mode: String,
    pub allowed_tools: Vec<String>,
    pub env: IndexMap<String, String>,
    pub guard: bool,
    pub inputs: Vec<Input>,
    pub probe: Option<Probe>,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Input {
    pub after: Trigger,
    #[serde(serialize_with = "secs", deserialize_with = "de_secs")]
    pub delay: Duration,
    pub action: InputAction,
}

/// What a scheduled input does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum InputAction {
    /// Send a user message (typed in a pty).
    Text { text: String },
    /// Send a stream-json control request (`interrupt`, or `stop_task` for a named task).
    Control {
        subtype: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Probe {
    pub text: String,
    #[serde(serialize_with = "secs", deserialize_with = "de_secs")]
    pub quiet: Duration,
}

/// What a scheduled input waits for before its delay starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", tag = "on", content = "arg")]
pub enum Trigger {
    /// The session start.
    Start,
    /// The Nth `result` line on stdout (1-based).
    Result(usize),
    /// The Nth end of a turn by this agent.
    TurnEnd(String, usize),
    /// The start of a tracked process.
    TaskStart(String),
    /// The end of a tracked background process.
    TaskEnd(String),
    /// The session has been quiet for the settle window.
    Quiet,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Step {
    pub say: Option<String>,
    pub call: Option<ToolCall>,
    #[serde(serialize_with = "secs", deserialize_with = "de_secs")]
    pub think: Duration,
    pub until: Option<Until>,
    pub max_repeats: u32,
    /// 1-based line of the step in the scenario file, for journals and errors.
    pub line: usize,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ToolCall {
    pub tool: String,
    pub input: serde_json::Value,
    /// The agent this Agent call starts (the harness tags its prompt).
    pub spawn: Option<String>,
    /// A name under which the harness tracks this Bash command's process.
    pub track: Option<String>,
}

/// A waiter and the background work it waits for, named explicitly.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Watch {
    pub waiter: String,
    /// A tracked Bash task name, or an agent name.
    pub work: String,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Check {
    pub name: String,
    pub kind: String,
    pub agent: Option<String>,
    pub expect: Option<String>,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn de_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let secs = <f64 as serde::Deserialize>::deserialize(d)?;
    Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
}

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let source = std::fs::read_to_string(path).map_err(|e| ScenarioError::File {
            path: path.display().to_string(),
            message: format!("cannot read: {e}"),
        })?;
        Scenario::parse(path, source)
    }

    /// Validates scenario text; `path` is used in messages.
    pub fn parse(path: &Path, source: String) -> Result<Scenario, ScenarioError> {
        let at = Locator {
            path: path.display().to_string(),
            source: &source,
        };
        let raw: RawScenario = toml::from_str(&source).map_err(|e| {
            at.error(
                e.span().unwrap_or(0..0),
                e.message().trim_end().replace('\n', " "),
            )
        })?;
        let name = raw.name.get_ref().clone();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(at.error(
                raw.name.span(),
                format!("invalid name `{name}`: expected lowercase letters, digits and `-`"),
            ));
        }
        if raw.summary.contains('\n') {
            return Err(at.error(0..0, "`summary` must be one line".into()));
        }
        let scenario = Scenario {
            path: path.to_path_buf(),
            name,
            title: raw.title.clone(),
            summary: raw.summary.clone(),
            seed: raw.seed.clone(),
            reproduces: raw.reproduces.clone(),
            raw,
            source,
        };
        scenario.validate()?;
        Ok(scenario)
    }

    fn locator(&self) -> Locator<'_> {
        Locator {
            path: self.path.display().to_string(),
            source: &self.source,
        }
    }

    /// Variant names in file order; a scenario without `[variants]` has one, named after its mode.
    pub fn variants(&self) -> Vec<String> {
        if self.raw.variants.is_empty() {
            vec![
                self.raw
                    .driver
                    .get_ref()
                    .mode
                    .map(DriverMode::as_str)
                    .unwrap_or("print")
                    .to_string(),
            ]
        } else {
            self.raw.variants.keys().cloned().collect()
        }
    }

    /// The parameters and their defaults.
    pub fn default_params(&self) -> Params {
        self.raw
            .params
            .iter()
            .map(|(k, v)| (k.clone(), v.get_ref().clone()))
            .collect()
    }

    /// The expected verdict of a variant, if the file states one.
    pub fn expected(&self, variant: &str) -> Option<String> {
        self.raw.expect.get(variant).map(|v| v.get_ref().clone())
    }

    fn validate(&self) -> Result<(), ScenarioError> {
        let at = self.locator();
        if !self.raw.agents.contains_key(MAIN_AGENT) {
            return Err(at.error(
                0..0,
                format!("missing `[agents.{MAIN_AGENT}]`: the agent the prompt talks to"),
            ));
        }
        let variants = self.variants();
        for (variant, value) in &self.raw.expect {
            if !variants.contains(variant) {
                return Err(at.error(
                    value.span(),
                    format!(
                        "`expect.{variant}` names no variant, expected one of: {}",
                        variants.join(", ")
                    ),
                ));
            }
            if !OUTCOMES.contains(&value.get_ref().as_str()) {
                return Err(at.error(
                    value.span(),
                    format!(
                        "unknown verdict `{}`, expected one of: {}",
                        value.get_ref(),
                        OUTCOMES.join(", ")
                    ),
                ));
            }
        }
        if let Some((name, agent)) = self.raw.driver.get_ref().agents.iter().next() {
            return Err(at.error(
                agent.span(),
                format!("`agents.{name}` in [driver]: per-variant scripts belong in [variants.NAME.agents]"),
            ));
        }
        for variant in self.raw.variants.values() {
            for (name, agent) in &variant.get_ref().agents {
                if !self.raw.agents.contains_key(name) {
                    return Err(at.error(
                        agent.span(),
                        format!("a variant overrides `{name}`, which is not in [agents]"),
                    ));
                }
            }
        }
        for watch in &self.raw.watch {
            let waiter = watch.get_ref().waiter.get_ref();
            if !self.raw.agents.contains_key(waiter) {
                return Err(at.error(
                    watch.get_ref().waiter.span(),
                    format!("`waiter` names no agent: `{waiter}`"),
                ));
            }
        }
        for check in &self.raw.checks {
            let kind = check.get_ref().kind.get_ref();
            if !CHECK_KINDS.contains(&kind.as_str()) {
                return Err(at.error(
                    check.get_ref().kind.span(),
                    format!(
                        "unknown check kind `{kind}`, expected one of: {}",
                        CHECK_KINDS.join(", ")
                    ),
                ));
            }
        }
        // Every variant must resolve with the defaults: a broken file fails at load, not mid-run.
        for variant in variants {
            self.plan(&variant, &[])?;
        }
        Ok(())
    }

    /// Resolves one variant with `--set key=value` overrides.
    pub fn plan(
        &self,
        variant: &str,
        overrides: &[(String, String)],
    ) -> Result<Plan, ScenarioError> {
        let at = self.locator();
        let base = self.raw.driver.get_ref();
        let driver_raw = if self.raw.variants.is_empty() {
            if variant != self.variants()[0] {
                return Err(self.no_variant(variant));
            }
            base.clone()
        } else {
            let patch = self
                .raw
                .variants
                .get(variant)
                .ok_or_else(|| self.no_variant(variant))?;
            base.patched(patch.get_ref())
        };

        let mut params = self.default_params();
        for (key, span_value) in &driver_raw.params {
            if !params.contains_key(key) {
                return Err(at.error(
                    span_value.span(),
                    format!("variant sets unknown parameter `{key}`"),
                ));
            }
            params.insert(key.clone(), span_value.get_ref().clone());
        }
        for (key, text) in overrides {
            let default = params.get(key).ok_or_else(|| ScenarioError::Override {
                key: key.clone(),
                message: format!(
                    "unknown parameter in {}, expected one of: {}",
                    self.path.display(),
                    self.raw
                        .params
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })?;
            let value = default
                .parse_like(text)
                .map_err(|message| ScenarioError::Override {
                    key: key.clone(),
                    message,
                })?;
            params.insert(key.clone(), value);
        }

        let driver = resolve_driver(&at, &driver_raw, &self.raw.driver, &params)?;
        let effective: IndexMap<String, &Spanned<raw::RawAgent>> = self
            .raw
            .agents
            .iter()
            .map(|(name, agent)| (name.clone(), driver_raw.agents.get(name).unwrap_or(agent)))
            .collect();
        check_agents(&at, &effective)?;
        let mut agents = IndexMap::new();
        for (name, agent) in &effective {
            let steps = agent
                .get_ref()
                .steps
                .iter()
                .map(|step| resolve_step(&at, step, &params))
                .collect::<Result<Vec<_>, _>>()?;
            agents.insert(name.clone(), steps);
        }
        let watch = self
            .raw
            .watch
            .iter()
            .map(|w| Watch {
                waiter: w.get_ref().waiter.get_ref().clone(),
                work: w.get_ref().work.get_ref().clone(),
            })
            .collect();
        let checks = self
            .raw
            .checks
            .iter()
            .map(|c| {
                let c = c.get_ref();
                Check {
                    name: c.name.clone(),
                    kind: c.kind.get_ref().clone(),
                    agent: c.agent.clone(),
                    expect: c.expect.as_ref().map(|e| e.get_ref().clone()),
                }
            })
            .collect();
        Ok(Plan {
            scenario: self.name.clone(),
            title: self.title.clone(),
            variant: variant.to_string(),
            params,
            driver,
            agents,
            expect: self.expected(variant),
            watch,
            checks,
        })
    }

    fn no_variant(&self, variant: &str) -> ScenarioError {
        ScenarioError::NoVariant {
            path: self.path.display().to_string(),
            variant: variant.to_string(),
            known: self.variants().join(", "),
        }
    }
}

/// Names, steps and spawns of one variant's agents: every agent but `main` is spawned exactly
/// once, by an Agent step naming an existing agent.
fn check_agents(
    at: &Locator,
    agents: &IndexMap<String, &Spanned<raw::RawAgent>>,
) -> Result<(), ScenarioError> {
    let mut spawned = BTreeSet::new();
    for (name, agent) in agents {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(at.error(
                agent.span(),
                format!("invalid agent name `{name}`: expected lowercase letters, digits and `-`"),
            ));
        }
        if agent.get_ref().steps.is_empty() {
            return Err(at.error(agent.span(), format!("agent `{name}` has no steps")));
        }
        for step in &agent.get_ref().steps {
            if let Some(target) = &step.get_ref().spawn {
                if !agents.contains_key(target.get_ref()) {
                    return Err(at.error(
                        target.span(),
                        format!("`spawn` names no agent: `{}`", target.get_ref()),
                    ));
                }
                if !spawned.insert(target.get_ref().clone()) {
                    return Err(at.error(
                        target.span(),
                        format!("agent `{}` is spawned twice", target.get_ref()),
                    ));
                }
            }
        }
    }
    for (name, agent) in agents {
        if name != MAIN_AGENT && !spawned.contains(name) {
            return Err(at.error(
                agent.span(),
                format!(
                    "agent `{name}` is never spawned (add `spawn = \"{name}\"` to an Agent step)"
                ),
            ));
        }
    }
    Ok(())
}

fn resolve_driver(
    at: &Locator,
    raw: &RawDriver,
    table: &Spanned<RawDriver>,
    params: &Params,
) -> Result<Driver, ScenarioError> {
    let mode = raw.mode.ok_or_else(|| {
        at.error(
            table.span(),
            "missing `mode` in [driver] (expected \"print\", \"session\" or \"pty\")".into(),
        )
    })?;
    let prompt = raw
        .prompt
        .as_ref()
        .ok_or_else(|| at.error(table.span(), "missing `prompt` in [driver]".into()))?;
    let prompt = at.text(prompt, params)?;
    let ceiling = raw.ceiling_seconds.as_ref().ok_or_else(|| {
        at.error(
            table.span(),
            "missing `ceiling_seconds` in [driver]: every run needs a ceiling".into(),
        )
    })?;
    let ceiling = at.seconds(ceiling, params)?;
    if ceiling.is_zero() {
        return Err(at.error(
            raw.ceiling_seconds
                .as_ref()
                .map(|c| c.span())
                .unwrap_or(0..0),
            "`ceiling_seconds` must be greater than zero".into(),
        ));
    }
    let settle = match &raw.settle_seconds {
        Some(s) => at.seconds(s, params)?,
        None => Duration::from_secs(3),
    };
    let env = raw
        .env
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|(k, v)| Ok((k.clone(), at.text(v, params)?)))
        .collect::<Result<IndexMap<_, _>, ScenarioError>>()?;
    let inputs = raw
        .inputs
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|input| {
            let i = input.get_ref();
            if mode == DriverMode::Print {
                return Err(at.error(
                    input.span(),
                    "`inputs` need a session or pty driver: print mode takes one prompt".into(),
                ));
            }
            let after = match &i.after {
                Some(a) => parse_trigger(a.get_ref()).map_err(|m| at.error(a.span(), m))?,
                None => Trigger::Start,
            };
            let delay = match &i.delay_seconds {
                Some(d) => at.seconds(d, params)?,
                None => Duration::ZERO,
            };
            let action = match (&i.text, &i.control) {
                (Some(text), None) => {
                    if let Some(t) = &i.target {
                        return Err(at.error(t.span(), "`target` goes with `control`, not `text`".into()));
                    }
                    InputAction::Text { text: at.text(text, params)? }
                }
                (None, Some(control)) => {
                    if mode != DriverMode::Session {
                        return Err(at.error(
                            control.span(),
                            "control requests need the session driver (stream-json input)".into(),
                        ));
                    }
                    let subtype = control.get_ref().as_str();
                    match (subtype, &i.target) {
                        ("interrupt", None) => {}
                        ("stop_task", Some(_)) => {}
                        ("send_task_message", Some(_)) if i.message.is_some() => {}
                        ("send_task_message", _) => {
                            return Err(at.error(control.span(), "`send_task_message` needs a `target` and a `message`".into()));
                        }
                        ("stop_task", None) => {
                            return Err(at.error(control.span(), "`stop_task` needs a `target` (an agent or tracked command)".into()));
                        }
                        ("interrupt", Some(t)) => {
                            return Err(at.error(t.span(), "`interrupt` takes no `target`".into()));
                        }
                        _ => {
                            return Err(at.error(
                                control.span(),
                                format!("unknown control request `{subtype}`, expected `interrupt`, `stop_task` or `send_task_message`"),
                            ));
                        }
                    }
                    InputAction::Control {
                        subtype: subtype.to_string(),
                        target: i.target.as_ref().map(|t| t.get_ref().clone()),
                        message: i.message.as_ref().map(|m| at.text(m, params)).transpose()?,
                    }
                }
                (Some(_), Some(c)) => {
                    return Err(at.error(c.span(), "an input has `text` or `control`, not both".into()));
                }
                (None, None) => {
                    return Err(at.error(input.span(), "an input needs `text` or `control`".into()));
                }
            };
            Ok(Input { after, delay, action })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let probe = match &raw.probe {
        Some(p) => {
            if mode == DriverMode::Print {
                return Err(at.error(
                    p.span(),
                    "a `probe` needs a session or pty driver: print mode cannot take input".into(),
                ));
            }
            let quiet = match &p.get_ref().quiet_seconds {
                Some(q) => at.seconds(q, params)?,
                None => settle,
            };
            Some(Probe {
                text: at.text(&p.get_ref().text, params)?,
                quiet,
            })
        }
        None => None,
    };
    Ok(Driver {
        mode,
        prompt,
        ceiling,
        settle,
        permission_mode: raw
            .permission_mode
            .clone()
            .unwrap_or_else(|| "default".into()),
        allowed_tools: raw
            .allowed_tools
            .clone()
            .unwrap_or_else(|| vec!["Bash".into(), "Agent".into(), "SendMessage".into()]),
        env,
        guard: raw.guard.unwrap_or(false),
        inputs,
        probe,
    })
}

/// Parses `start`, `result`, `result#N`, `turn-end:AGENT[#N]`, `task-start:NAME`,
/// `task-end:NAME`, `quiet`.
fn parse_trigger(text: &str) -> Result<Trigger, String> {
    let expected = "expected `start`, `result[#N]`, `turn-end:AGENT[#N]`, `task-start:NAME`, `task-end:NAME` or `quiet`";
    let (head, nth) = match text.rsplit_once('#') {
        Some((h, n)) => (
            h,
            n.parse::<usize>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| format!("`#{n}` is not a count from 1 in `{text}`"))?,
        ),
        None => (text, 1),
    };
    match head.split_once(':') {
        None if head == "start" => Ok(Trigger::Start),
        None if head == "quiet" => Ok(Trigger::Quiet),
        None if head == "result" => Ok(Trigger::Result(nth)),
        Some(("turn-end", agent)) if !agent.is_empty() => {
            Ok(Trigger::TurnEnd(agent.to_string(), nth))
        }
        Some(("task-start", name)) if !name.is_empty() => Ok(Trigger::TaskStart(name.to_string())),
        Some(("task-end", name)) if !name.is_empty() => Ok(Trigger::TaskEnd(name.to_string())),
        _ => Err(format!("unknown trigger `{text}`: {expected}")),
    }
}

fn resolve_step(
    at: &Locator,
    step: &Spanned<RawStep>,
    params: &Params,
) -> Result<Step, ScenarioError> {
    let s = step.get_ref();
    let line = at.line_col(step.span().start).0;
    if s.say.is_none() && s.call.is_none() {
        return Err(at.error(
            step.span(),
            "a step needs `say` (text that ends the turn) or `call` (a tool call), or both".into(),
        ));
    }
    if s.call.is_none() {
        for (field, span) in [
            ("input", s.input.as_ref().map(|x| x.span())),
            ("spawn", s.spawn.as_ref().map(|x| x.span())),
            ("track", s.track.as_ref().map(|x| x.span())),
        ] {
            if let Some(span) = span {
                return Err(at.error(span, format!("`{field}` needs `call` in the same step")));
            }
        }
    }
    let call = match &s.call {
        None => None,
        Some(tool) => {
            let input = match &s.input {
                Some(table) => {
                    let json = serde_json::to_value(table.get_ref()).map_err(|e| {
                        at.error(table.span(), format!("`input` is not JSON-compatible: {e}"))
                    })?;
                    template::substitute_json(&json, params)
                        .map_err(|m| at.error(table.span(), m))?
                }
                None => serde_json::json!({}),
            };
            if let Some(spawn) = &s.spawn {
                if !matches!(tool.get_ref().as_str(), "Agent" | "Task") {
                    return Err(at.error(
                        spawn.span(),
                        format!("`spawn` needs `call = \"Agent\"`, not `{}`", tool.get_ref()),
                    ));
                }
                if !input.get("prompt").is_some_and(|p| p.is_string()) {
                    return Err(at.error(
                        s.input.as_ref().map(|i| i.span()).unwrap_or(step.span()),
                        "an Agent call that spawns needs a string `prompt` in `input`".into(),
                    ));
                }
            }
            if let Some(track) = &s.track {
                if tool.get_ref() != "Bash" {
                    return Err(at.error(
                        track.span(),
                        format!("`track` needs `call = \"Bash\"`, not `{}`", tool.get_ref()),
                    ));
                }
                if !input.get("command").is_some_and(|c| c.is_string()) {
                    return Err(at.error(
                        track.span(),
                        "a tracked Bash call needs a string `command` in `input`".into(),
                    ));
                }
                let name = track.get_ref();
                if name.is_empty()
                    || !name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                {
                    return Err(at.error(
                        track.span(),
                        format!("invalid track name `{name}`: expected letters, digits, `-`, `_`"),
                    ));
                }
            }
            Some(ToolCall {
                tool: tool.get_ref().clone(),
                input,
                spawn: s.spawn.as_ref().map(|x| x.get_ref().clone()),
                track: s.track.as_ref().map(|x| x.get_ref().clone()),
            })
        }
    };
    if s.until.is_some() && call.is_none() {
        return Err(at.error(
            step.span(),
            "`until` repeats a tool call: it needs `call` in the same step".into(),
        ));
    }
    Ok(Step {
        say: s.say.as_ref().map(|t| at.text(t, params)).transpose()?,
        call,
        think: match &s.think_seconds {
            Some(t) => at.seconds(t, params)?,
            None => Duration::ZERO,
        },
        until: s.until,
        max_repeats: s.max_repeats.unwrap_or(200),
        line,
    })
}

/// Turns byte spans into `file:line:col` errors.
struct Locator<'a> {
    path: String,
    source: &'a str,
}

impl Locator<'_> {
    fn line_col(&self, offset: usize) -> (usize, usize) {
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

    fn error(&self, span: Range<usize>, message: String) -> ScenarioError {
        let (line, col) = self.line_col(span.start);
        ScenarioError::Invalid {
            path: self.path.clone(),
            line,
            col,
            message,
        }
    }

    fn text(&self, value: &Spanned<String>, params: &Params) -> Result<String, ScenarioError> {
        template::substitute(value.get_ref(), params).map_err(|m| self.error(value.span(), m))
    }

    fn seconds(
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
        if !(0.0..=86_400.0).contains(&n) {
            return Err(self.error(
                value.span(),
                format!("{n} seconds is out of range (expected 0 to 86400)"),
            ));
        }
        Ok(Duration::from_secs_f64(n))
    }
}

/// Loads every `*.toml` in a folder, sorted by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, ScenarioError> {
    let entries = std::fs::read_dir(dir).map_err(|e| ScenarioError::File {
        path: dir.display().to_string(),
        message: format!("cannot list scenarios: {e}"),
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    paths.iter().map(|p| Scenario::load(p)).collect()
}

#[cfg(test)]
mod tests;
