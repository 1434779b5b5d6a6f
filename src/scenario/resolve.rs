//! Resolving one variant of a scenario file into a [`Plan`]: the variant's patch over
//! `[driver]`, parameters with `--set` overrides, substituted texts and durations, typed
//! triggers and controls, every agent's steps, and the cross-references between them (who
//! spawns whom, which work a watch or a trigger names). Every mistake is one `file:line:col`
//! error.

use std::collections::BTreeSet;
use std::time::Duration;

use indexmap::IndexMap;
use toml::Spanned;

use super::ScenarioError;
use super::hook::HookName;
use super::plan::*;
use super::raw::{self, DriverMode, RawDriver, RawStep};
use super::source::{Locator, Names, VariantSource};
use super::template::{self, Params};
use super::trigger;

pub(super) fn plan(
    at: &Locator,
    src: VariantSource,
    invariants: Option<&super::invariants::Invariants>,
    params: Params,
) -> Result<Plan, ScenarioError> {
    let mut driver = resolve_driver(at, &src.driver, &src.raw.driver, &params)?;
    refuse_driver(at, &src, &driver)?;
    let effective: IndexMap<String, &Spanned<raw::RawAgent>> = src
        .raw
        .agents
        .iter()
        .map(|(name, agent)| (name.clone(), src.driver.agents.get(name).unwrap_or(agent)))
        .collect();
    check_agents(at, &effective)?;
    let mut agents = IndexMap::new();
    for (name, agent) in &effective {
        let steps = agent
            .get_ref()
            .steps
            .iter()
            .enumerate()
            .map(|(i, step)| resolve_step(at, step, &params, (src.runtime, name, i + 1)))
            .collect::<Result<Vec<_>, _>>()?;
        agents.insert(name.clone(), steps);
    }
    if src.driver.allowed_tools.is_none() {
        // By default the CLI may run what the script calls, whatever it is.
        let called = agents.values().flatten().flat_map(|s| &s.calls);
        for call in called {
            if !driver.allowed_tools.contains(&call.tool) {
                driver.allowed_tools.push(call.tool.clone());
            }
        }
    }
    let names = Names::of(&agents);
    super::references::check(at, &effective, &src.raw.watch, &names)?;
    check_inputs(at, &src.driver, &names)?;
    let watch = src
        .raw
        .watch
        .iter()
        .map(|w| resolve_watch(at, w, &names, &params))
        .collect::<Result<Vec<_>, _>>()?;
    let checks = src
        .raw
        .checks
        .iter()
        .map(|c| super::checks::resolve_check(at, c, (&names, &src)))
        .collect::<Result<Vec<_>, _>>()?;
    super::checks::refuse_integration_presets(at, &src.raw.checks, driver.mode)?;
    super::checks::refuse_unseen(at, &src.raw.checks, &checks, src.runtime)?;
    let invariants = match invariants {
        Some(inv) => inv.resolve(&names, &src)?,
        None => vec![],
    };
    let mut invariants = allow_breaks(at, src.raw.may_break.as_ref(), invariants)?;
    // The folder's invariants hold where their evidence exists: on a runtime that cannot give
    // it, one is not judged at all (never read as holding, nor as broken).
    invariants.retain(|c| super::checks::unseen_by(c, src.runtime).is_none());
    let faults = src
        .raw
        .faults
        .iter()
        .map(|f| super::fault::resolve_fault(at, f, &names))
        .filter(|f| !matches!(f, Ok(f) if !f.kind.applies_in(driver.mode)))
        .collect::<Result<Vec<_>, _>>()?;
    refuse_faults(at, &src, &faults)?;
    Ok(Plan {
        faults,
        invariants,
        scenario: src.name.to_string(),
        title: src.title.to_string(),
        variant: src.variant.to_string(),
        params,
        param_ranges: IndexMap::new(),
        outside_range: Vec::new(),
        driver,
        agents,
        expect: src.expect,
        want: src.want,
        watch,
        checks,
        scenario_file: None,
        contrast: src.raw.contrast.as_ref().map(|c| c.get_ref().clone()),
        workaround: src.raw.workaround.as_ref().map(|w| w.get_ref().clone()),
    })
}

fn resolve_watch(
    at: &Locator,
    watch: &Spanned<raw::RawWatch>,
    names: &Names,
    params: &Params,
) -> Result<Watch, ScenarioError> {
    let w = watch.get_ref();
    let work = w.work.get_ref();
    if !names.is_work(work) {
        return Err(at.error(
            w.work.span(),
            format!(
                "`work` names no spawned agent or tracked command: `{work}` (this variant has: {})",
                names.works()
            ),
        ));
    }
    let hang_after = match &w.hang_seconds {
        Some(h) => {
            let d = at.seconds(h, params)?;
            if d.is_zero() {
                return Err(at.error(h.span(), "`hang_seconds` must be greater than zero".into()));
            }
            Some(d)
        }
        None => None,
    };
    Ok(Watch {
        waiter: w.waiter.get_ref().clone(),
        work: work.clone(),
        hang_after,
    })
}

/// Names, steps and spawns of one variant's agents: every agent but `main` is spawned exactly
/// once, by an Agent step naming an existing agent.
fn check_agents(
    at: &Locator,
    agents: &IndexMap<String, &Spanned<raw::RawAgent>>,
) -> Result<(), ScenarioError> {
    if let Some((cycle, span)) = spawn_cycle(agents) {
        return Err(at.error(
            span,
            format!(
                "agents spawn each other in a cycle: {}; every agent but `{MAIN_AGENT}` is spawned once, by an agent that runs before it",
                cycle.join(" -> ")
            ),
        ));
    }
    let mut spawned = BTreeSet::new();
    for (name, agent) in agents {
        if !super::names::is_name(name) {
            return Err(super::names::invalid(at, agent.span(), "agent name", name));
        }
        if agent.get_ref().steps.is_empty() {
            return Err(at.error(agent.span(), format!("agent `{name}` has no steps")));
        }
        for target in agent
            .get_ref()
            .steps
            .iter()
            .flat_map(|s| s.get_ref().spawns())
        {
            {
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

/// The first cycle of `spawn`s (`a -> b -> a`, `main` included), with the span of the spawn
/// that closes it. A walk with its own stack: a file may chain thousands of agents.
fn spawn_cycle(
    agents: &IndexMap<String, &Spanned<raw::RawAgent>>,
) -> Option<(Vec<String>, std::ops::Range<usize>)> {
    let spawns = |name: &str| -> Vec<&Spanned<String>> {
        agents.get(name).map_or(vec![], |a| {
            a.get_ref()
                .steps
                .iter()
                .flat_map(|s| s.get_ref().spawns())
                .filter(|t| agents.contains_key(t.get_ref()))
                .collect()
        })
    };
    #[derive(Clone, Copy, PartialEq)]
    enum Seen {
        Not,
        OnPath,
        Done,
    }
    let mut seen: IndexMap<&str, Seen> = agents.keys().map(|k| (k.as_str(), Seen::Not)).collect();
    for start in agents.keys() {
        if seen[start.as_str()] != Seen::Not {
            continue;
        }
        // The path from `start`, each agent with the spawns it has left to follow.
        let mut path: Vec<(&str, Vec<&Spanned<String>>)> = vec![(start, spawns(start))];
        seen[start.as_str()] = Seen::OnPath;
        while let Some((name, left)) = path.last_mut() {
            let Some(target) = left.pop() else {
                seen[*name] = Seen::Done;
                path.pop();
                continue;
            };
            let next = target.get_ref().as_str();
            match seen[next] {
                Seen::OnPath => {
                    let from = path.iter().position(|(n, _)| *n == next).unwrap_or(0);
                    let mut cycle: Vec<String> =
                        path[from..].iter().map(|(n, _)| n.to_string()).collect();
                    cycle.push(next.to_string());
                    return Some((cycle, target.span()));
                }
                Seen::Not => {
                    seen[next] = Seen::OnPath;
                    let (key, _) = agents.get_key_value(next)?;
                    path.push((key.as_str(), spawns(next)));
                }
                Seen::Done => {}
            }
        }
    }
    None
}

/// The agents and tracked commands that triggers and control targets name must exist in the
/// variant's script: a name that never appears would leave an input waiting forever.
fn check_inputs(at: &Locator, driver: &RawDriver, names: &Names) -> Result<(), ScenarioError> {
    for input in driver.inputs.iter().flatten() {
        let i = input.get_ref();
        if let Some(after) = &i.after {
            trigger::resolve(at, after, names)?;
        }
        if let Some(target) = &i.target
            && !names.is_work(target.get_ref())
        {
            return Err(at.error(
                target.span(),
                format!(
                    "`target` names no spawned agent or tracked command: `{}` (this variant has: {})",
                    target.get_ref(),
                    names.works()
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
    let ceiling = resolve_ceiling(at, raw, table, params)?;
    let settle = match &raw.settle_seconds {
        Some(s) => at.seconds(s, params)?,
        None => Duration::from_secs(3),
    };
    if prompt.contains('\0') {
        return Err(at.error(
            raw.prompt.as_ref().map_or(table.span(), |p| p.span()),
            "`prompt` holds a NUL byte, which no command line can carry".into(),
        ));
    }
    let arguments = raw
        .permission_mode
        .iter()
        .chain(raw.allowed_tools.iter().flatten());
    if raw
        .allowed_tools
        .iter()
        .flatten()
        .any(|t| t.trim().is_empty())
    {
        return Err(at.error(
            table.span(),
            "`allowed_tools` holds an empty name: name each tool the CLI may run (e.g. \"Bash\"), or leave the key out (then it is every tool the script calls)".into(),
        ));
    }
    if let Some(word) = arguments.into_iter().find(|w| w.contains('\0')) {
        return Err(at.error(
            table.span(),
            format!(
                "`{}` holds a NUL byte, which no command line can carry",
                word.escape_debug()
            ),
        ));
    }
    let env = raw
        .env
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|(k, v)| Ok((k.clone(), env_value(at, k, v, params)?)))
        .collect::<Result<IndexMap<_, _>, ScenarioError>>()?;
    let inputs = raw
        .inputs
        .iter()
        .flatten()
        .map(|input| resolve_input(at, input, mode, params))
        .collect::<Result<Vec<_>, _>>()?;
    let probe = raw
        .probe
        .as_ref()
        .map(|p| resolve_probe(at, p, mode, settle, params))
        .transpose()?;
    let prompt_form = resolve_prompt_form(at, raw, mode)?;
    if prompt_form == PromptForm::String
        && let Some(input) = raw.inputs.iter().flatten().next()
    {
        return Err(at.error(
            input.span(),
            "`inputs` need streaming input: `prompt_form = \"string\"` takes one prompt".into(),
        ));
    }
    Ok(Driver {
        persist_session: raw.persist_session.unwrap_or(true),
        prompt_form,
        callback_hooks: resolve_callback_hooks(at, raw, mode)?,
        command: resolve_command(at, raw, table, mode)?,
        approve: resolve_approve(at, raw, mode)?,
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
            .unwrap_or_else(|| DEFAULT_ALLOWED_TOOLS.map(String::from).to_vec()),
        env,
        guard: raw.guard.unwrap_or(false),
        inputs,
        probe,
    })
}

/// `approve`: the user's answer to the integration's approvals, in mode `command` only.
fn resolve_approve(
    at: &Locator,
    raw: &RawDriver,
    mode: DriverMode,
) -> Result<super::Answer, ScenarioError> {
    use super::Answer;
    let Some(approve) = &raw.approve else {
        return Ok(Answer::default());
    };
    if mode != DriverMode::Command {
        return Err(at.error(
            approve.span(),
            format!("`approve` applies to mode `command`, not `{mode}`"),
        ));
    }
    match approve.get_ref().as_str() {
        "allow" => Ok(Answer::Allow),
        "deny" => Ok(Answer::Deny),
        other => Err(at.error(
            approve.span(),
            format!("unknown `approve` value `{other}` (expected `allow` or `deny`)"),
        )),
    }
}

/// `command`: the integration mode `command` runs, required there and nowhere else. An
/// argument that starts `./` or `../` names a file beside the scenario: it is made absolute,
/// since the integration runs in the sandbox's project folder.
fn resolve_command(
    at: &Locator,
    raw: &RawDriver,
    table: &Spanned<RawDriver>,
    mode: DriverMode,
) -> Result<Vec<String>, ScenarioError> {
    let Some(command) = &raw.command else {
        if mode == DriverMode::Command {
            return Err(at.error(
                table.span(),
                "mode `command` needs `command = [\"program\", \"arg\", ...]` in [driver]".into(),
            ));
        }
        return Ok(vec![]);
    };
    if mode != DriverMode::Command {
        return Err(at.error(
            command.span(),
            format!("`command` applies to mode `command`, not `{mode}`"),
        ));
    }
    if command.get_ref().is_empty() || command.get_ref().iter().any(|w| w.contains('\0')) {
        return Err(at.error(
            command.span(),
            "`command` needs a program first, and no word may hold a NUL byte".into(),
        ));
    }
    let folder = std::path::Path::new(&at.path)
        .parent()
        .map(|p| p.to_path_buf())
        .unwrap_or_default();
    let folder = std::path::absolute(&folder).unwrap_or(folder);
    Ok(command
        .get_ref()
        .iter()
        .map(|w| file_beside(&folder, w).unwrap_or_else(|| w.clone()))
        .collect())
}

/// A `command` word that names a file beside the scenario (`./`, `../`), as the path from
/// `folder`, the scenario's own (without `.` and `..` where the file exists); `None` for any
/// other word.
pub(crate) fn file_beside(folder: &std::path::Path, word: &str) -> Option<String> {
    if !(word.starts_with("./") || word.starts_with("../")) {
        return None;
    }
    let path = folder.join(word);
    Some(
        std::fs::canonicalize(&path)
            .unwrap_or(path)
            .display()
            .to_string(),
    )
}

/// `prompt_form`: only where an SDK hands the prompt over.
fn resolve_prompt_form(
    at: &Locator,
    raw: &RawDriver,
    mode: DriverMode,
) -> Result<PromptForm, ScenarioError> {
    let Some(form) = &raw.prompt_form else {
        return Ok(PromptForm::Stream);
    };
    if mode.row().host.is_none() {
        return Err(at.error(
            form.span(),
            format!(
                "`prompt_form` applies to the SDK drivers ({}), not `{mode}`",
                DriverMode::those(|r| r.host.is_some())
            ),
        ));
    }
    match form.get_ref().as_str() {
        "stream" => Ok(PromptForm::Stream),
        "string" => Ok(PromptForm::String),
        other => Err(at.error(
            form.span(),
            format!("unknown `prompt_form` `{other}`, expected `stream` or `string`"),
        )),
    }
}

/// `callback_hooks`: hook events an SDK host gives the SDK as callbacks.
fn resolve_callback_hooks(
    at: &Locator,
    raw: &RawDriver,
    mode: DriverMode,
) -> Result<Vec<HookName>, ScenarioError> {
    let Some(names) = &raw.callback_hooks else {
        return Ok(vec![]);
    };
    if mode.row().host.is_none() {
        return Err(at.error(
            names.span(),
            format!(
                "`callback_hooks` applies to the SDK drivers ({}), not `{mode}`",
                DriverMode::those(|r| r.host.is_some())
            ),
        ));
    }
    names
        .get_ref()
        .iter()
        .map(|n| match HookName::parse(n) {
            HookName::Other(_) => Err(at.error(
                names.span(),
                format!("unknown hook event `{n}` in `callback_hooks`"),
            )),
            known => Ok(known),
        })
        .collect()
}

/// An `env` entry's substituted value; the name and the value must be able to go into a
/// process's environment (no NUL byte, no `=` in the name), and leave the sandbox whole
/// (`scenario::env`).
fn env_value(
    at: &Locator,
    key: &str,
    value: &Spanned<String>,
    params: &Params,
) -> Result<String, ScenarioError> {
    if key.is_empty() || key.contains(['=', '\0']) {
        return Err(at.error(
            value.span(),
            format!(
                "`env` name `{}` cannot name an environment variable (empty, or holding `=` or a NUL byte)",
                key.escape_debug()
            ),
        ));
    }
    let text = at.text(value, params)?;
    if text.contains('\0') {
        return Err(at.error(
            value.span(),
            format!("`env.{key}` holds a NUL byte, which no environment can carry"),
        ));
    }
    if let Some(why) = super::env::placeholder_problem(&text) {
        return Err(at.error(value.span(), format!("`env.{key}` {why}")));
    }
    if let Some(why) = super::env::refusal(key, &text) {
        return Err(at.error(value.span(), format!("`env.{key}` {why}")));
    }
    Ok(text)
}

fn resolve_ceiling(
    at: &Locator,
    raw: &RawDriver,
    table: &Spanned<RawDriver>,
    params: &Params,
) -> Result<Duration, ScenarioError> {
    let expr = raw.ceiling_seconds.as_ref().ok_or_else(|| {
        at.error(
            table.span(),
            "missing `ceiling_seconds` in [driver]: every run needs a ceiling".into(),
        )
    })?;
    let ceiling = at.seconds(expr, params)?;
    if ceiling.is_zero() {
        return Err(at.error(
            expr.span(),
            "`ceiling_seconds` must be greater than zero".into(),
        ));
    }
    Ok(ceiling)
}

fn resolve_probe(
    at: &Locator,
    probe: &Spanned<raw::RawProbe>,
    mode: DriverMode,
    settle: Duration,
    params: &Params,
) -> Result<Probe, ScenarioError> {
    if !mode.row().later_inputs {
        return Err(at.error(
            probe.span(),
            format!(
                "a `probe` needs a driver that takes input ({}): `{mode}` cannot",
                DriverMode::those(|r| r.later_inputs)
            ),
        ));
    }
    let quiet = match &probe.get_ref().quiet_seconds {
        Some(q) => at.seconds(q, params)?,
        None => settle,
    };
    Ok(Probe {
        text: at.text(&probe.get_ref().text, params)?,
        quiet,
    })
}

fn resolve_input(
    at: &Locator,
    input: &Spanned<raw::RawInput>,
    mode: DriverMode,
    params: &Params,
) -> Result<Input, ScenarioError> {
    let i = input.get_ref();
    if !mode.row().later_inputs {
        return Err(at.error(
            input.span(),
            format!(
                "`inputs` need a driver that takes input after the prompt ({}): `{mode}` takes one prompt",
                DriverMode::those(|r| r.later_inputs)
            ),
        ));
    }
    let after = match &i.after {
        Some(a) => trigger::parse(a.get_ref()).map_err(|m| at.error(a.span(), m))?,
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
            InputAction::Text {
                text: at.text(text, params)?,
            }
        }
        (None, Some(control)) => resolve_control(at, i, control, mode, params)?,
        (Some(_), Some(c)) => {
            return Err(at.error(
                c.span(),
                "an input has `text` or `control`, not both".into(),
            ));
        }
        (None, None) => {
            return Err(at.error(input.span(), "an input needs `text` or `control`".into()));
        }
    };
    Ok(Input {
        after,
        delay,
        action,
    })
}

fn resolve_control(
    at: &Locator,
    i: &raw::RawInput,
    control: &Spanned<String>,
    mode: DriverMode,
    params: &Params,
) -> Result<InputAction, ScenarioError> {
    if mode.row().controls.is_empty() {
        return Err(at.error(
            control.span(),
            format!(
                "control requests need a driver that sends them ({}), not `{mode}`",
                DriverMode::those(|r| !r.controls.is_empty())
            ),
        ));
    }
    let subtype = Control::parse(control.get_ref()).ok_or_else(|| {
        at.error(
            control.span(),
            format!(
                "unknown control request `{}`, expected `interrupt`, `stop_task` or `send_task_message`",
                control.get_ref()
            ),
        )
    })?;
    if !mode.sends(subtype) {
        return Err(at.error(
            control.span(),
            format!(
                "the `{mode}` driver has no `{}` ({} drive it): this input does not map",
                subtype.as_str(),
                DriverMode::those(|r| r.controls.contains(&subtype))
            ),
        ));
    }
    match (subtype, &i.target) {
        (Control::Interrupt, Some(t)) => {
            return Err(at.error(t.span(), "`interrupt` takes no `target`".into()));
        }
        (Control::StopTask, None) => {
            return Err(at.error(
                control.span(),
                "`stop_task` needs a `target` (an agent or tracked command)".into(),
            ));
        }
        (Control::SendTaskMessage, target) if target.is_none() || i.message.is_none() => {
            return Err(at.error(
                control.span(),
                "`send_task_message` needs a `target` and a `message`".into(),
            ));
        }
        _ => {}
    }
    Ok(InputAction::Control {
        subtype,
        target: i.target.as_ref().map(|t| t.get_ref().clone()),
        message: i.message.as_ref().map(|m| at.text(m, params)).transpose()?,
    })
}

/// A driver the variant's runtime cannot run (its mode, the stall guard, a control request),
/// refused at the variant's table (or `[driver]`).
fn refuse_driver(at: &Locator, src: &VariantSource, driver: &Driver) -> Result<(), ScenarioError> {
    let controls: Vec<Control> = driver
        .inputs
        .iter()
        .filter_map(|i| match &i.action {
            InputAction::Control { subtype, .. } => Some(*subtype),
            InputAction::Text { .. } => None,
        })
        .collect();
    let env: Vec<&str> = driver.env.keys().map(String::as_str).collect();
    let Some(why) = src
        .runtime
        .refuses_driver(driver.mode, driver.guard, &controls, &env)
    else {
        return Ok(());
    };
    let span = src
        .raw
        .variants
        .get(src.variant)
        .map(|v| v.span())
        .unwrap_or_else(|| src.raw.driver.span());
    Err(at.error(
        span,
        format!(
            "variant `{}` cannot run on {}: {why}",
            src.variant,
            src.runtime.title()
        ),
    ))
}

/// A fault the variant's runtime cannot take: `crash-cli` restarts Claude Code on its session.
fn refuse_faults(at: &Locator, src: &VariantSource, faults: &[Fault]) -> Result<(), ScenarioError> {
    if src.runtime.row().restarts {
        return Ok(());
    }
    let Some(fault) = faults.iter().find(|f| f.kind == FaultKind::CrashCli) else {
        return Ok(());
    };
    let span = src
        .raw
        .faults
        .iter()
        .find(|f| f.get_ref().kind.get_ref() == fault.kind.as_str())
        .map(|f| f.get_ref().kind.span())
        .unwrap_or(0..0);
    Err(at.error(
        span,
        format!(
            "`crash-cli` restarts Claude Code with `--continue` on the same session: {} has no such restart",
            src.runtime.title()
        ),
    ))
}

/// Which step of which agent is resolved, and for which runtime (its verbs, its refusals).
type StepOf<'a> = (super::Runtime, &'a str, usize);

fn resolve_step(
    at: &Locator,
    step: &Spanned<RawStep>,
    params: &Params,
    of: StepOf,
) -> Result<Step, ScenarioError> {
    let s = step.get_ref();
    let line = at.line_col(step.span().start).0;
    let calls = resolve_calls(at, step, params, of)?;
    if s.say.is_none() && calls.is_empty() {
        return Err(at.error(
            step.span(),
            "a step needs `say` (text that ends the turn), `call` (a tool call) or `calls` (several in one message)".into(),
        ));
    }
    if s.until.is_some() && calls.is_empty() {
        return Err(at.error(
            step.span(),
            "`until` repeats a tool call: it needs `call` in the same step".into(),
        ));
    }
    Ok(Step {
        say: s.say.as_ref().map(|t| at.text(t, params)).transpose()?,
        calls,
        think: match &s.think_seconds {
            Some(t) => at.seconds(t, params)?,
            None => Duration::ZERO,
        },
        until: s.until,
        max_repeats: match &s.max_repeats {
            Some(m) if *m.get_ref() == 0 => {
                return Err(at.error(
                    m.span(),
                    "`max_repeats` must be at least 1: 0 would never repeat the step (leave `until` out for that)".into(),
                ));
            }
            Some(m) => *m.get_ref(),
            None => 200,
        },
        line,
    })
}

/// A step's tool calls: its one `call` (with `input`, `spawn`, `track` beside it), or each
/// entry of `calls`, never both.
fn resolve_calls(
    at: &Locator,
    step: &Spanned<RawStep>,
    params: &Params,
    of: StepOf,
) -> Result<Vec<ToolCall>, ScenarioError> {
    let s = step.get_ref();
    let one = raw::RawCall {
        call: match &s.call {
            Some(c) => c.clone(),
            None => Spanned::new(0..0, String::new()),
        },
        input: s.input.clone(),
        spawn: s.spawn.clone(),
        track: s.track.clone(),
    };
    let Some(calls) = &s.calls else {
        if s.call.is_none() {
            refuse_without_call(at, &one)?;
            return Ok(vec![]);
        }
        return Ok(vec![resolve_call(at, step.span(), &one, params, of)?]);
    };
    if let Some(span) = s.call.as_ref().map(|c| c.span()) {
        return Err(at.error(
            span,
            "a step has `call` or `calls`, not both: put this call into `calls`".into(),
        ));
    }
    refuse_without_call(at, &one)?;
    if calls.get_ref().is_empty() {
        return Err(at.error(
            calls.span(),
            "`calls` is empty: give at least one call, or write `say` alone".into(),
        ));
    }
    calls
        .get_ref()
        .iter()
        .map(|c| resolve_call(at, c.span(), c.get_ref(), params, of))
        .collect()
}

/// `input`, `spawn` and `track` on a step belong to its `call`: without one they are mistakes.
fn refuse_without_call(at: &Locator, step_level: &raw::RawCall) -> Result<(), ScenarioError> {
    for (field, span) in [
        ("input", step_level.input.as_ref().map(|x| x.span())),
        ("spawn", step_level.spawn.as_ref().map(|x| x.span())),
        ("track", step_level.track.as_ref().map(|x| x.span())),
    ] {
        if let Some(span) = span {
            return Err(at.error(span, format!("`{field}` needs `call` in the same step")));
        }
    }
    Ok(())
}

/// One tool call, as the variant's runtime makes it (its verbs), or refused where the runtime
/// cannot make it.
fn resolve_call(
    at: &Locator,
    span: std::ops::Range<usize>,
    c: &raw::RawCall,
    params: &Params,
    (runtime, agent, number): StepOf,
) -> Result<ToolCall, ScenarioError> {
    let call = resolve_written_call(at, span, c, params)?;
    (runtime.row().verbs)(&call).map_err(|why| {
        at.error(
            c.call.span(),
            format!(
                "`{agent}`'s step {number} (`call = \"{}\"`) cannot run on {}: {why}",
                c.call.get_ref(),
                runtime.title()
            ),
        )
    })
}

/// One tool call as the scenario writes it.
fn resolve_written_call(
    at: &Locator,
    span: std::ops::Range<usize>,
    c: &raw::RawCall,
    params: &Params,
) -> Result<ToolCall, ScenarioError> {
    let tool = &c.call;
    let input = match &c.input {
        Some(table) => {
            let json = serde_json::to_value(table.get_ref()).map_err(|e| {
                at.error(table.span(), format!("`input` is not JSON-compatible: {e}"))
            })?;
            template::substitute_json(&json, params).map_err(|m| at.error(table.span(), m))?
        }
        None => serde_json::json!({}),
    };
    if let Some(spawn) = &c.spawn {
        if !matches!(tool.get_ref().as_str(), "Agent" | "Task") {
            return Err(at.error(
                spawn.span(),
                format!("`spawn` needs `call = \"Agent\"`, not `{}`", tool.get_ref()),
            ));
        }
        if !input.get("prompt").is_some_and(|p| p.is_string()) {
            return Err(at.error(
                c.input.as_ref().map(|i| i.span()).unwrap_or(span),
                "an Agent call that spawns needs a string `prompt` in `input`".into(),
            ));
        }
    }
    if let Some(track) = &c.track {
        check_track(at, tool, track, &input)?;
    }
    Ok(ToolCall {
        tool: tool.get_ref().clone(),
        input,
        spawn: c.spawn.as_ref().map(|x| x.get_ref().clone()),
        track: c.track.as_ref().map(|x| x.get_ref().clone()),
    })
}

fn check_track(
    at: &Locator,
    tool: &Spanned<String>,
    track: &Spanned<String>,
    input: &serde_json::Value,
) -> Result<(), ScenarioError> {
    // Both run a shell command the harness can wrap: Monitor's lines are its events.
    if !matches!(tool.get_ref().as_str(), "Bash" | "Monitor") {
        return Err(at.error(
            track.span(),
            format!(
                "`track` needs `call = \"Bash\"` or `\"Monitor\"`, not `{}`",
                tool.get_ref()
            ),
        ));
    }
    if !input.get("command").is_some_and(|c| c.is_string()) {
        return Err(at.error(
            track.span(),
            format!(
                "a tracked {} call needs a string `command` in `input`",
                tool.get_ref()
            ),
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
    Ok(())
}

/// The invariants with the scenario's `may_break` reasons on those it names: each name must be
/// an invariant of the folder, and each reason say something. A scenario with no invariants
/// beside it (copied away, a `minimize` candidate) has nothing to break: `may_break` is moot.
fn allow_breaks(
    at: &Locator,
    may_break: Option<&Spanned<IndexMap<String, String>>>,
    mut invariants: Vec<Check>,
) -> Result<Vec<Check>, ScenarioError> {
    let Some(may_break) = may_break else {
        return Ok(invariants);
    };
    if let Some((name, _)) = may_break
        .get_ref()
        .iter()
        .find(|(_, why)| why.trim().is_empty())
    {
        return Err(at.error(
            may_break.span(),
            format!("`may_break` gives no reason for `{name}`: say why this scenario's runs may break it"),
        ));
    }
    // Copied away from its folder's invariants (a `minimize` candidate, a run folder's copy),
    // a scenario has none to break (`lint` says so).
    if invariants.is_empty() {
        return Ok(invariants);
    }
    for (name, why) in may_break.get_ref() {
        let known: Vec<String> = invariants.iter().map(|i| format!("`{}`", i.name)).collect();
        let Some(invariant) = invariants.iter_mut().find(|i| &i.name == name) else {
            return Err(at.error(
                may_break.span(),
                format!(
                    "`may_break` names `{name}`, which is none of this folder's invariants: {}",
                    known.join(", ")
                ),
            ));
        };
        invariant.may_break = Some(why.clone());
    }
    Ok(invariants)
}
