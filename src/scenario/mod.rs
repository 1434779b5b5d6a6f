//! Scenario files: the format, its validation with `file:line:col` errors, and parameters.
//!
//! A scenario is loaded once ([`Scenario::load`]), which checks every variant with the default
//! parameters so a broken file fails before anything runs. [`Scenario::plan`] then resolves one
//! variant with `--set` overrides into a [`Plan`]: concrete durations, substituted texts, and the
//! model script of every agent. This module never spawns anything.

mod checks;
pub mod edit;
pub mod env;
pub mod fault;
pub mod fields;
mod hook;
mod invariants;
pub mod library;
pub mod lint;
pub mod mode;
mod names;
mod outcome;
pub mod params;
mod plan;
pub mod query;
mod raw;
mod reach;
mod references;
mod resolve;
pub mod runtime;
mod source;
pub mod template;
mod trigger;

use std::path::{Path, PathBuf};

use indexmap::IndexMap;

pub use hook::HookName;
pub use outcome::{ALL_OUTCOMES, Expected, Outcome};
pub use params::{ParamRange, RangePolicy};
pub use plan::*;
use raw::RawScenario;
pub use raw::{DriverMode, NumExpr, Until};
pub use runtime::Runtime;
use source::{Locator, VariantSource};
pub use template::{ParamValue, Params};

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
    /// The folder's `invariants.toml`, when it has one.
    invariants: Option<invariants::Invariants>,
    /// The driver every variant runs on instead of its own (`--driver`), if any.
    driver_override: Option<DriverMode>,
    /// The runtime the file names (`runtime = "..."`), Claude Code when it names none.
    own_runtime: Runtime,
    /// The runtime its variants resolve for instead (`--runtime`, a matrix column), if any.
    runtime_override: Option<Runtime>,
}

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        if path.file_name().is_some_and(|n| n == invariants::FILE) {
            return Err(ScenarioError::File {
                path: path.display().to_string(),
                message:
                    "this file holds the invariants of the scenarios beside it, not a scenario"
                        .into(),
            });
        }
        let source = read_source(path)?;
        Scenario::parse(path, source)
    }

    /// Validates scenario text; `path` is used in messages.
    pub fn parse(path: &Path, source: String) -> Result<Scenario, ScenarioError> {
        let scenario = Scenario::parse_unchecked(path, &source)?;
        scenario.validate()?;
        Ok(scenario)
    }

    /// The scenario text read into its parts, with the checks of its parts' own syntax but
    /// before any variant is resolved.
    fn parse_unchecked(path: &Path, source: &str) -> Result<Scenario, ScenarioError> {
        let source = source.to_string();
        let at = Locator {
            path: path.display().to_string(),
            source: &source,
        };
        let raw: RawScenario = toml::from_str(&source).map_err(|e| at.toml_error(&e))?;
        let name = raw.name.get_ref().clone();
        if !names::is_name(&name) {
            return Err(names::invalid(&at, raw.name.span(), "name", &name));
        }
        names::check_file(&at, &raw)?;
        if raw.summary.contains('\n') {
            return Err(at.error(0..0, "`summary` must be one line".into()));
        }
        let own_runtime = match &raw.runtime {
            None => Runtime::default(),
            Some(name) => Runtime::parse(name.get_ref()).ok_or_else(|| {
                at.error(
                    name.span(),
                    format!(
                        "unknown runtime `{}`, expected one of: {}",
                        name.get_ref(),
                        Runtime::names()
                    ),
                )
            })?,
        };
        let scenario = Scenario {
            path: path.to_path_buf(),
            name,
            title: raw.title.clone(),
            summary: raw.summary.clone(),
            seed: raw.seed.clone(),
            reproduces: raw.reproduces.clone(),
            raw,
            source,
            invariants: invariants::beside(path)?,
            driver_override: None,
            own_runtime,
            runtime_override: None,
        };
        Ok(scenario)
    }

    /// The runtime its variants resolve for: `--runtime` (or a matrix column's), else the
    /// file's own.
    pub fn runtime(&self) -> Runtime {
        self.runtime_override.unwrap_or(self.own_runtime)
    }

    /// The runtime the file names, Claude Code when it names none.
    pub fn own_runtime(&self) -> Runtime {
        self.own_runtime
    }

    /// The runtimes the file states expectations on: its own, and each `[expect.NAME]`.
    pub fn expected_runtimes(&self) -> Vec<Runtime> {
        let mut all = vec![self.own_runtime];
        for (key, value) in &self.raw.expect {
            if let (raw::RawVerdicts::OnRuntime(_), Some(r)) =
                (value.get_ref(), Runtime::parse(key))
                && !all.contains(&r)
            {
                all.push(r);
            }
        }
        all
    }

    /// The same scenario (its `--driver` kept) resolved for `runtime` (see
    /// [`Scenario::on_runtime`]); `None` when it already is.
    pub fn for_runtime(&self, runtime: Runtime) -> Result<Option<Scenario>, ScenarioError> {
        if runtime == self.runtime() {
            return Ok(None);
        }
        let mut again = Scenario::parse(&self.path, self.source.clone())?;
        again.driver_override = self.driver_override;
        again.on_runtime(runtime).map(Some)
    }

    /// This scenario with every variant resolved for `runtime`: its verbs become that
    /// runtime's tools, its expectations are the ones recorded on it, and a step, a driver
    /// setting or a check the runtime cannot carry is refused here, located, before anything
    /// runs.
    pub fn on_runtime(mut self, runtime: Runtime) -> Result<Scenario, ScenarioError> {
        self.runtime_override = Some(runtime);
        for variant in self.variants() {
            self.plan_with(&variant, &[], RangePolicy::Explore)?;
        }
        Ok(self)
    }

    /// In the scenario library (`scenarios/`, `--scenarios-dir`), where `wakeprobe run NAME`
    /// finds `NAME.toml`, a scenario's `name` must be its file's name. A file run or linted by
    /// its path may be named otherwise (a run folder's `scenario.toml`, `minimize`'s
    /// `minimal.toml`, the integration examples).
    pub fn check_named_as_its_file(&self) -> Result<(), ScenarioError> {
        names::check_file_name(
            &self.locator(),
            &self.path,
            self.raw.name.span(),
            &self.name,
        )
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

    /// The agents the file scripts (every variant has the same ones).
    pub fn agent_names(&self) -> Vec<String> {
        self.raw.agents.keys().cloned().collect()
    }

    /// The names of its tracked commands (`track = NAME`).
    pub fn track_names(&self) -> Vec<String> {
        let variants = self
            .raw
            .variants
            .values()
            .flat_map(|v| v.get_ref().agents.values());
        self.raw
            .agents
            .values()
            .chain(variants)
            .flat_map(|a| &a.get_ref().steps)
            .filter_map(|s| Some(s.get_ref().track.as_ref()?.get_ref().clone()))
            .collect()
    }

    /// The parameters and their defaults.
    pub fn default_params(&self) -> Params {
        self.raw
            .params
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.get_ref().value()?.clone())))
            .collect()
    }

    /// The range where a variant's expected verdict holds, per parameter that declares one
    /// (the variant's own range replaces the scenario's).
    pub fn param_ranges(&self, variant: &str) -> IndexMap<String, ParamRange> {
        let mut ranges: IndexMap<String, ParamRange> = self
            .raw
            .params
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.get_ref().range()?)))
            .collect();
        if let Some(patch) = self.raw.variants.get(variant) {
            for (k, v) in &patch.get_ref().params {
                if let Some(range) = v.get_ref().range() {
                    ranges.insert(k.clone(), range);
                }
            }
        }
        ranges
    }

    /// The expected verdict of a variant (one, or a declared race) on the runtime it resolves
    /// for, if the file states one (validated at load): `[expect]` holds the file's own
    /// runtime's, `[expect.NAME]` another runtime's.
    pub fn expected(&self, variant: &str) -> Option<Expected> {
        let runtime = self.runtime();
        let verdicts = if runtime == self.own_runtime {
            self.raw.expect.get(variant)?.get_ref().clone()
        } else {
            match self.raw.expect.get(runtime.as_str())?.get_ref() {
                raw::RawVerdicts::OnRuntime(table) => table.get(variant)?.clone(),
                _ => return None,
            }
        };
        let names = verdicts.names();
        let outcomes: Vec<Outcome> = names.iter().filter_map(|n| Outcome::parse(n)).collect();
        Expected::of(&outcomes)
    }

    /// The verdict the CLI should give for a variant (`want`), if the file states one.
    pub fn wanted(&self, variant: &str) -> Option<Outcome> {
        let names = self.raw.want.get(variant)?.get_ref().names();
        names.first().and_then(|n| Outcome::parse(n))
    }

    fn validate(&self) -> Result<(), ScenarioError> {
        let at = self.locator();
        if !self.raw.agents.contains_key(MAIN_AGENT) {
            return Err(at.error(
                0..0,
                format!("missing `[agents.{MAIN_AGENT}]`: the agent the prompt talks to"),
            ));
        }
        self.validate_verdicts(&at, "expect", &self.raw.expect)?;
        self.validate_verdicts(&at, "want", &self.raw.want)?;
        self.validate_runtime_verdicts(&at)?;
        self.validate_params(&at)?;
        names::check_unique_checks(&at, &self.raw.checks)?;
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
        // Every variant must resolve with the defaults: a broken file fails at load, not mid-run.
        let mut modes = Vec::new();
        for variant in self.variants() {
            modes.push(self.plan(&variant, &[])?.driver.mode);
        }
        fault::check_modes(&at, &self.raw.faults, &modes)?;
        // ... and on every runtime it states expectations on.
        for runtime in self.expected_runtimes() {
            if runtime != self.runtime() {
                let mut on = Scenario::parse_unchecked(&self.path, &self.source)?;
                on.runtime_override = Some(runtime);
                for variant in on.variants() {
                    on.plan(&variant, &[])?;
                }
            }
        }
        Ok(())
    }

    /// `[expect.NAME]` tables: each names a runtime other than the file's own, and each of its
    /// entries a variant and known verdicts.
    fn validate_runtime_verdicts(&self, at: &Locator) -> Result<(), ScenarioError> {
        for (key, value) in &self.raw.expect {
            let raw::RawVerdicts::OnRuntime(table) = value.get_ref() else {
                continue;
            };
            let message = match Runtime::parse(key) {
                None => Some(format!(
                    "`[expect.{key}]` names no runtime, expected one of: {} (a variant's verdict is a string or a list)",
                    Runtime::names()
                )),
                Some(r) if r == self.own_runtime => Some(format!(
                    "`[expect.{key}]`: {key} is this scenario's own runtime; its verdicts go in `[expect]` itself"
                )),
                Some(_) => table.iter().find_map(|(variant, verdicts)| {
                    self.verdicts_problem(
                        &format!("expect.{key}"),
                        variant,
                        &verdicts.names(),
                        false,
                    )
                }),
            };
            if let Some(message) = message {
                return Err(at.error(value.span(), message));
            }
        }
        Ok(())
    }

    /// What is wrong with the entry `TABLE.VARIANT = NAMES` (`expect`, `want`, `expect.RUNTIME`),
    /// if anything: a variant the scenario lacks, no verdict, several where only one may stand
    /// (`one`), or a name that is no verdict.
    fn verdicts_problem(
        &self,
        table: &str,
        variant: &str,
        names: &[&str],
        one: bool,
    ) -> Option<String> {
        let variants = self.variants();
        if !variants.iter().any(|v| v == variant) {
            return Some(format!(
                "`{table}.{variant}` names no variant, expected one of: {}",
                variants.join(", ")
            ));
        }
        match names {
            [] => Some(format!(
                "`{table}.{variant}` lists no verdict, expected one or more of: {}",
                Outcome::names()
            )),
            [_, _, ..] if one => Some(format!(
                "`{table}.{variant}` lists several verdicts: `{table}` is the one verdict the CLI should give (a race belongs in `expect`)"
            )),
            _ => names.iter().find(|n| Outcome::parse(n).is_none()).map(|n| {
                format!(
                    "unknown verdict `{n}`, expected one of: {}",
                    Outcome::names()
                )
            }),
        }
    }

    /// Each `expect`/`want` entry names a variant and known verdicts; only `expect` may list
    /// several (a declared race): `want` is what the CLI should do, one verdict.
    fn validate_verdicts(
        &self,
        at: &Locator,
        table: &str,
        verdicts: &indexmap::IndexMap<String, toml::Spanned<raw::RawVerdicts>>,
    ) -> Result<(), ScenarioError> {
        let variants = self.variants();
        for (variant, value) in verdicts {
            if let raw::RawVerdicts::OnRuntime(_) = value.get_ref() {
                if table == "want" {
                    return Err(at.error(
                        value.span(),
                        format!("`want.{variant}` is a table: `want` is what every runtime should do, one verdict per variant"),
                    ));
                }
                continue; // a runtime's table (`validate_runtime_verdicts`)
            }
            let message =
                self.verdicts_problem(table, variant, &value.get_ref().names(), table == "want");
            if let Some(message) = message {
                return Err(at.error(value.span(), message));
            }
        }
        // `[expect]` for some variants and not others is a slip: each variant runs, and one
        // without an expectation would pass by comparing with nothing.
        let missing: Vec<&String> = variants
            .iter()
            .filter(|v| !verdicts.contains_key(*v))
            .collect();
        if let (Some((_, first)), [_, ..], "expect") = (verdicts.first(), missing.as_slice(), table)
        {
            return Err(at.error(
                first.span(),
                format!(
                    "`expect` gives no verdict for {}: give every variant one, or leave `[expect]` out (every run is then a measurement, compared with nothing)",
                    missing
                        .iter()
                        .map(|v| format!("`{v}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        Ok(())
    }

    /// Every `[params]` entry has a value; every range is well formed, on a numeric
    /// parameter, and holds the value its table sets (the default, or the variant's).
    fn validate_params(&self, at: &Locator) -> Result<(), ScenarioError> {
        for (name, spanned) in &self.raw.params {
            let Some(default) = spanned.get_ref().value() else {
                return Err(at.error(
                    spanned.span(),
                    format!("`{name}` needs a `default` value in [params]"),
                ));
            };
            if let Some(message) = params::seconds_problem(name, default) {
                return Err(at.error(spanned.span(), message));
            }
        }
        self.validate_variant_values(at)?;
        let tables = std::iter::once(&self.raw.params)
            .chain(self.raw.variants.values().map(|v| &v.get_ref().params));
        for table in tables {
            for (name, spanned) in table {
                let Some(range) = spanned.get_ref().range() else {
                    continue;
                };
                let value = spanned
                    .get_ref()
                    .value()
                    .or_else(|| self.raw.params.get(name).and_then(|p| p.get_ref().value()));
                let problem = range
                    .problem()
                    .or_else(|| match value.map(params::numeric) {
                        Some(None) => Some(format!(
                            "`{name}` has a range, but its value `{}` is not a number",
                            value.expect("matched Some")
                        )),
                        Some(Some(x)) if !range.contains(x) => Some(format!(
                            "`{name}` = {x} is outside its own range ({})",
                            range.describe(name)
                        )),
                        _ => None,
                    });
                if let Some(message) = problem {
                    return Err(at.error(spanned.span(), message));
                }
            }
        }
        Ok(())
    }

    /// A variant's parameter values have their defaults' types (a variant setting a parameter
    /// that `[params]` lacks is refused when its plan is made).
    fn validate_variant_values(&self, at: &Locator) -> Result<(), ScenarioError> {
        for variant in self.raw.variants.values() {
            for (name, spanned) in &variant.get_ref().params {
                let default = self.raw.params.get(name).and_then(|p| p.get_ref().value());
                let (Some(default), Some(value)) = (default, spanned.get_ref().value()) else {
                    continue;
                };
                if let Some(message) = params::value_problem(name, default, value) {
                    return Err(at.error(spanned.span(), message));
                }
            }
        }
        Ok(())
    }

    /// Resolves one variant with `--set key=value` overrides; a value outside its range is
    /// refused (see [`Scenario::plan_with`]).
    pub fn plan(
        &self,
        variant: &str,
        overrides: &[(String, String)],
    ) -> Result<Plan, ScenarioError> {
        self.plan_with(variant, overrides, RangePolicy::Enforce)
    }

    /// Resolves one variant with `--set key=value` overrides. A value outside the range where
    /// the variant's expected verdict holds is an error under [`RangePolicy::Enforce`]; under
    /// [`RangePolicy::Explore`] it runs, the plan names it and has no expected verdict.
    pub fn plan_with(
        &self,
        variant: &str,
        overrides: &[(String, String)],
        policy: RangePolicy,
    ) -> Result<Plan, ScenarioError> {
        #[cfg(test)]
        RESOLVED.with(|n| n.set(n.get() + 1));
        let at = self.locator();
        let base = self.raw.driver.get_ref();
        let driver = if self.raw.variants.is_empty() {
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
        let driver = match self.driver_override {
            Some(mode) => self.driven_by(variant, driver, mode)?,
            None => driver,
        };
        let params = self.params_for(&at, &driver, overrides)?;
        let ranges = self.param_ranges(variant);
        let outside = params::outside(&params, &ranges);
        if let (RangePolicy::Enforce, Some(first)) = (policy, outside.first()) {
            let key = first.split('=').next().unwrap_or_default().to_string();
            return Err(self.outside_range(variant, &key, &params, &ranges));
        }
        let mut plan = resolve::plan(
            &at,
            VariantSource {
                raw: &self.raw,
                driver,
                name: &self.name,
                variant,
                title: &self.title,
                expect: self.expected(variant),
                want: self.wanted(variant),
                variants: self.variants(),
                runtime: self.runtime(),
            },
            self.invariants.as_ref(),
            params,
        )?;
        if !outside.is_empty() {
            plan.expect = None;
        }
        plan.param_ranges = ranges;
        plan.outside_range = outside;
        plan.scenario_file = Some(shown_path(&self.path));
        Ok(plan)
    }

    /// This scenario with every variant run by the SDK driver `mode` (`--driver`). A variant
    /// keeps what it means where the SDK can say it: a print-mode variant goes through the
    /// SDK's string prompt (one prompt; the SDK closes the CLI's input after it, as print mode
    /// does), a session variant through its streaming input. What does not map is refused
    /// here, before anything runs, located: a pty variant, or an input the SDK has no call for.
    pub fn with_driver(mut self, mode: DriverMode) -> Result<Scenario, ScenarioError> {
        if mode.row().host.is_none() {
            return Err(ScenarioError::File {
                path: self.path.display().to_string(),
                message: format!(
                    "--driver {mode}: only the SDK drivers ({}) can stand in for a scenario's own",
                    DriverMode::those(|r| r.host.is_some())
                ),
            });
        }
        self.driver_override = Some(mode);
        for variant in self.variants() {
            self.plan_with(&variant, &[], RangePolicy::Explore)?;
        }
        Ok(self)
    }

    /// The driver table of `variant` run by `mode` instead (see [`Scenario::with_driver`]).
    fn driven_by(
        &self,
        variant: &str,
        mut driver: raw::RawDriver,
        mode: DriverMode,
    ) -> Result<raw::RawDriver, ScenarioError> {
        let own = driver.mode.unwrap_or(DriverMode::Print);
        let span = self
            .raw
            .variants
            .get(variant)
            .map(|v| v.span())
            .unwrap_or_else(|| self.raw.driver.span());
        match own.row().stdin {
            mode::Stdin::Terminal => {
                return Err(self.locator().error(
                    span,
                    format!(
                        "variant `{variant}` runs in a pseudo-terminal (`{own}`), which the `{mode}` driver cannot stand in for"
                    ),
                ));
            }
            mode::Stdin::Null if driver.prompt_form.is_none() => {
                driver.prompt_form = Some(toml::Spanned::new(span.clone(), "string".into()));
            }
            _ => {}
        }
        driver.mode = Some(mode);
        Ok(driver)
    }

    /// The SDK driver standing in for the variants' own (`--driver`), if any.
    pub fn driver_override(&self) -> Option<DriverMode> {
        self.driver_override
    }

    /// The text of the `invariants.toml` beside the file, when there is one: it judges the
    /// scenario's runs as much as the file itself does.
    pub fn invariants_source(&self) -> Option<&str> {
        self.invariants.as_ref().map(|i| i.source())
    }

    /// The error for a `--set` outside the range where the expected verdict holds.
    fn outside_range(
        &self,
        variant: &str,
        key: &str,
        params: &Params,
        ranges: &IndexMap<String, ParamRange>,
    ) -> ScenarioError {
        let range = &ranges[key];
        let reason = range
            .reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        ScenarioError::Override {
            key: key.to_string(),
            message: format!(
                "{} is outside the range where {}/{variant}'s expected verdict holds ({}){reason}; pass --explore to run it anyway, with no expected verdict",
                params[key],
                self.name,
                range.describe(key)
            ),
        }
    }

    /// The defaults, patched by the variant's `params`, then by `--set`.
    fn params_for(
        &self,
        at: &Locator,
        driver: &raw::RawDriver,
        overrides: &[(String, String)],
    ) -> Result<Params, ScenarioError> {
        let mut params = self.default_params();
        for (key, span_value) in &driver.params {
            if !params.contains_key(key) {
                return Err(at.error(
                    span_value.span(),
                    format!("variant sets unknown parameter `{key}`"),
                ));
            }
            if let Some(value) = span_value.get_ref().value() {
                params.insert(key.clone(), value.clone());
            }
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
            if let Some(message) = params::seconds_problem(key, &value) {
                return Err(ScenarioError::Override {
                    key: key.clone(),
                    message,
                });
            }
            params.insert(key.clone(), value);
        }
        Ok(params)
    }

    fn no_variant(&self, variant: &str) -> ScenarioError {
        ScenarioError::NoVariant {
            path: self.path.display().to_string(),
            variant: variant.to_string(),
            known: self.variants().join(", "),
        }
    }
}

/// A scenario file's path as reports name it: relative to the working folder when it is
/// inside it (a repository's `scenarios/x.toml`), else as it was named.
fn shown_path(path: &Path) -> String {
    in_working_folder(path)
        .unwrap_or_else(|| path.to_path_buf())
        .display()
        .to_string()
}

/// `path` relative to the working folder, when it is inside it (both resolved, links and all).
pub fn in_working_folder(path: &Path) -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?.canonicalize().ok()?;
    let path = path.canonicalize().ok()?;
    path.strip_prefix(cwd).ok().map(Path::to_path_buf)
}

/// A scenario file's text (or an `invariants.toml`'s): a regular file within
/// [`os::files::SCENARIO_LIMIT`], checked before it is read.
pub(crate) fn read_source(path: &Path) -> Result<String, ScenarioError> {
    use crate::os::files;
    files::read_text_bounded(path, files::SCENARIO_LIMIT, "a scenario file").map_err(|e| {
        ScenarioError::File {
            path: path.display().to_string(),
            message: match e {
                files::ReadError::Io(e) => format!("cannot read: {e}"),
                other => other.to_string(),
            },
        }
    })
}

/// Whether a file in a scenario folder is a scenario: a `*.toml`, but not the folder's
/// `invariants.toml` (it loads with every scenario beside it).
pub fn is_scenario_file(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "toml")
        && path.file_name().is_none_or(|n| n != invariants::FILE)
}

/// Loads every `*.toml` in a folder, sorted by file name; each must be named as its file.
pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, ScenarioError> {
    let entries = std::fs::read_dir(dir).map_err(|e| ScenarioError::File {
        path: dir.display().to_string(),
        message: format!("cannot list scenarios: {e}"),
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| is_scenario_file(p))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let scenario = Scenario::load(p)?;
            scenario.check_named_as_its_file()?;
            Ok(scenario)
        })
        .collect()
}

#[cfg(test)]
thread_local! {
    static RESOLVED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many plans this thread has resolved: a test holds an invocation to resolving each
/// chosen variant once.
#[cfg(test)]
pub fn plans_resolved() -> usize {
    RESOLVED.with(|n| n.get())
}

#[cfg(test)]
mod tests;
