//! Editing a scenario file as a document (TOML in, TOML out, with `toml_edit`): the edits
//! `wakeprobe minimize` makes (remove agents, steps or inputs; shorten texts; change a
//! parameter), each keeping every comment and line it does not touch, so a minimized scenario
//! still reads like the file it came from. An edit does not check the result: callers validate
//! a candidate with [`Editable::validate`] (the same [`Scenario::parse`] every file goes
//! through) and skip it when invalid.
//!
//! Editing the document rather than rebuilding it from the parsed model: the model drops the
//! file's comments and layout, and a scenario is read by people.

use std::collections::BTreeSet;
use std::path::Path;

use toml_edit::{DocumentMut, Item, TableLike, Value};

use super::{MAIN_AGENT, Scenario, ScenarioError};

/// A place in a scenario that holds a text worth shortening.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextSpot {
    /// `say` of an agent's step (0-based index).
    Say(String, usize),
    /// `input.prompt` of an agent's step (an Agent call's prompt).
    CallPrompt(String, usize),
    /// `text` of the driver's Nth input.
    Input(usize),
    /// The driver's prompt.
    Prompt,
}

/// A scenario file flattened to one variant, as an editable document.
#[derive(Debug, Clone)]
pub struct Editable {
    doc: DocumentMut,
    variant: String,
}

/// Texts this short are left as they are.
const SHORT: usize = 8;

impl Editable {
    /// Parses a scenario's text and keeps only `variant`: its patch is applied to `[driver]`,
    /// `[params]` and `[agents]`, the other variants and their expectations (`expect`, `want`) go.
    pub fn flatten(source: &str, variant: &str) -> Result<Editable, String> {
        let mut doc: DocumentMut = source
            .parse()
            .map_err(|e: toml_edit::TomlError| e.to_string())?;
        let patch = doc
            .get("variants")
            .and_then(|v| v.as_table_like())
            .map(|vs| vs.get(variant).cloned());
        match patch {
            None => {}
            Some(None) => return Err(format!("no variant `{variant}`")),
            Some(Some(patch)) => apply_patch(&mut doc, variant, &patch),
        }
        // What the CLI does (`expect`) and should do (`want`), per variant: the variant's own.
        for table in ["expect", "want"] {
            if let Some(by_variant) = doc.get_mut(table).and_then(Item::as_table_like_mut) {
                retain_keys(by_variant, |k| k == variant);
            }
        }
        Ok(Editable {
            doc,
            variant: variant.to_string(),
        })
    }

    pub fn variant(&self) -> &str {
        &self.variant
    }

    pub fn text(&self) -> String {
        self.doc.to_string()
    }

    /// The candidate as a scenario, if it is a valid one.
    pub fn validate(&self) -> Result<Scenario, ScenarioError> {
        Scenario::parse(Path::new("candidate.toml"), self.text())
    }

    /// Agent names in file order, `main` first.
    pub fn agents(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .doc
            .get("agents")
            .and_then(Item::as_table_like)
            .map(|t| t.iter().map(|(k, _)| k.to_string()).collect())
            .unwrap_or_default();
        names.sort_by_key(|n| n != MAIN_AGENT);
        names
    }

    /// Every step as (agent, 0-based index), agent by agent.
    pub fn steps(&self) -> Vec<(String, usize)> {
        self.agents()
            .into_iter()
            .flat_map(|a| (0..self.step_tables(&a).len()).map(move |i| (a.clone(), i)))
            .collect()
    }

    /// A step in a few words: `worker#2: Bash \`sleep 3\` (track bg)`.
    pub fn step_label(&self, agent: &str, index: usize) -> String {
        let steps = self.step_tables(agent);
        let Some(step) = steps.get(index) else {
            return format!("{agent}#{}", index + 1);
        };
        let text = |k: &str| step.get(k).and_then(Item::as_str).map(str::to_string);
        let calls = step_calls(*step);
        if !calls.is_empty() {
            let tools: Vec<&str> = calls
                .iter()
                .filter_map(|c| c.get("call").and_then(Value::as_str))
                .collect();
            return format!("{agent}#{}: {} in one message", index + 1, tools.join(", "));
        }
        let what = match text("call") {
            Some(tool) => {
                let input = step.get("input").and_then(Item::as_table_like);
                let detail = input
                    .and_then(|i| {
                        i.get("command")
                            .or_else(|| i.get("description"))
                            .and_then(Item::as_str)
                    })
                    .map(|d| format!(" `{}`", short(d, 40)))
                    .unwrap_or_default();
                let mut s = format!("{tool}{detail}");
                if let Some(spawn) = text("spawn") {
                    s.push_str(&format!(" (spawns {spawn})"));
                }
                if let Some(track) = text("track") {
                    s.push_str(&format!(" (track {track})"));
                }
                s
            }
            None => format!("say \"{}\"", short(&text("say").unwrap_or_default(), 40)),
        };
        format!("{agent}#{}: {what}", index + 1)
    }

    /// The driver's inputs, labelled.
    pub fn inputs(&self) -> Vec<String> {
        self.input_values()
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let t = v.as_inline_table();
                let get = |k: &str| t.and_then(|t| t.get(k)).and_then(Value::as_str);
                let what = get("text")
                    .map(|x| format!("\"{}\"", short(x, 40)))
                    .or_else(|| get("control").map(str::to_string))
                    .unwrap_or_default();
                format!(
                    "input {} ({} after {})",
                    i + 1,
                    what,
                    get("after").unwrap_or("start")
                )
            })
            .collect()
    }

    /// Texts longer than a few characters, where they are.
    pub fn texts(&self) -> Vec<(TextSpot, String)> {
        let mut out = Vec::new();
        let long = |s: Option<&str>| s.is_some_and(|s| s.chars().count() > SHORT);
        if long(
            self.driver()
                .and_then(|d| d.get("prompt"))
                .and_then(Item::as_str),
        ) {
            out.push((TextSpot::Prompt, "the prompt".to_string()));
        }
        for (i, v) in self.input_values().iter().enumerate() {
            if long(
                v.as_inline_table()
                    .and_then(|t| t.get("text"))
                    .and_then(Value::as_str),
            ) {
                out.push((TextSpot::Input(i), format!("the text of input {}", i + 1)));
            }
        }
        for agent in self.agents() {
            for (i, step) in self.step_tables(&agent).iter().enumerate() {
                if long(step.get("say").and_then(Item::as_str)) {
                    out.push((
                        TextSpot::Say(agent.clone(), i),
                        format!("the text of {agent}#{}", i + 1),
                    ));
                }
                let prompt = step
                    .get("input")
                    .and_then(Item::as_table_like)
                    .and_then(|t| t.get("prompt"))
                    .and_then(Item::as_str);
                if long(prompt) {
                    out.push((
                        TextSpot::CallPrompt(agent.clone(), i),
                        format!("the prompt of {agent}#{}", i + 1),
                    ));
                }
            }
        }
        out
    }

    /// Numeric parameters and whether each is a whole number.
    pub fn params(&self) -> Vec<(String, f64, bool)> {
        self.doc
            .get("params")
            .and_then(Item::as_table_like)
            .map(|t| {
                t.iter()
                    .filter_map(|(k, v)| Some((k, ranged::value(v)?)))
                    .filter_map(|(k, v)| match (v.as_integer(), v.as_float()) {
                        (Some(i), _) => Some((k.to_string(), i as f64, true)),
                        (_, Some(f)) => Some((k.to_string(), f, false)),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Makes the driver's `command` arguments that name a file beside the scenario (`./`,
    /// `../`) absolute, from `folder`, the scenario's own: a candidate written elsewhere still
    /// runs the same integration.
    pub fn anchor_command(&mut self, folder: &Path) {
        let Some(command) = self
            .doc
            .get_mut("driver")
            .and_then(|d| d.get_mut("command"))
            .and_then(Item::as_array_mut)
        else {
            return;
        };
        for word in command.iter_mut() {
            if let Some(anchored) = word
                .as_str()
                .and_then(|w| super::resolve::file_beside(folder, w))
            {
                *word = Value::from(anchored);
            }
        }
    }

    pub fn set_name(&mut self, name: &str) {
        self.doc["name"] = toml_edit::value(name);
    }

    /// Sets the expected verdict of the variant.
    pub fn set_expect(&mut self, outcome: &str) {
        if self.doc.get("expect").is_none() {
            self.doc["expect"] = Item::Table(toml_edit::Table::new());
        }
        if let Some(t) = self.doc["expect"].as_table_like_mut() {
            t.insert(&self.variant, toml_edit::value(outcome));
        }
    }

    /// Without an expected verdict (a minimization that kept something else cannot vouch for
    /// it).
    pub fn clear_expect(&mut self) {
        self.doc.remove("expect");
    }

    /// Without these agents (never `main`), every agent only they spawn, the steps that
    /// spawn them, and the watches, inputs and checks that name them or their commands.
    pub fn without_agents(&self, names: &[String]) -> Editable {
        let mut next = self.clone();
        let mut gone: BTreeSet<String> =
            names.iter().filter(|n| *n != MAIN_AGENT).cloned().collect();
        loop {
            let spawned: Vec<String> = gone
                .iter()
                .flat_map(|a| self.step_fields(a, "spawn"))
                .filter(|s| !gone.contains(s))
                .collect();
            if spawned.is_empty() {
                break;
            }
            gone.extend(spawned);
        }
        let mut names_gone = gone.clone();
        for a in &gone {
            names_gone.extend(self.step_fields(a, "track"));
        }
        if let Some(agents) = next.doc.get_mut("agents").and_then(Item::as_table_like_mut) {
            retain_keys(agents, |k| !gone.contains(k));
        }
        for agent in next.agents() {
            let spawns: Vec<usize> = next
                .step_tables(&agent)
                .iter()
                .enumerate()
                .filter(|(_, s)| {
                    s.get("spawn")
                        .and_then(Item::as_str)
                        .is_some_and(|x| gone.contains(x))
                })
                .map(|(i, _)| i)
                .collect();
            next.remove_steps_of(&agent, &spawns);
            next.drop_spawning_calls(&agent, &gone);
        }
        next.drop_references(&names_gone);
        next
    }

    /// Without these steps, given as (agent, index).
    pub fn without_steps(&self, steps: &[(String, usize)]) -> Editable {
        let mut next = self.clone();
        for agent in self.agents() {
            let indices: Vec<usize> = steps
                .iter()
                .filter(|(a, _)| *a == agent)
                .map(|(_, i)| *i)
                .collect();
            next.remove_steps_of(&agent, &indices);
        }
        next
    }

    /// Without the checks of these names.
    pub fn without_checks(&self, names: &[String]) -> Editable {
        let mut next = self.clone();
        if let Some(checks) = next
            .doc
            .get_mut("checks")
            .and_then(Item::as_array_of_tables_mut)
        {
            checks.retain(|c| {
                !c.get("name")
                    .and_then(Item::as_str)
                    .is_some_and(|n| names.iter().any(|x| x == n))
            });
        }
        next
    }

    /// Without the driver's inputs at these indices.
    pub fn without_inputs(&self, indices: &[usize]) -> Editable {
        let mut next = self.clone();
        if let Some(inputs) = next.inputs_array_mut() {
            let mut sorted = indices.to_vec();
            sorted.sort_unstable_by(|a, b| b.cmp(a));
            sorted.dedup();
            for i in sorted {
                if i < inputs.len() {
                    inputs.remove(i);
                }
            }
        }
        next
    }

    /// With these texts shortened to a word.
    pub fn shortened(&self, spots: &[TextSpot]) -> Editable {
        let mut next = self.clone();
        for spot in spots {
            match spot {
                TextSpot::Prompt => {
                    if let Some(d) = next.doc.get_mut("driver").and_then(Item::as_table_like_mut) {
                        d.insert("prompt", toml_edit::value("Go."));
                    }
                }
                TextSpot::Input(i) => {
                    if let Some(t) = next
                        .inputs_array_mut()
                        .and_then(|a| a.get_mut(*i))
                        .and_then(Value::as_inline_table_mut)
                    {
                        t.insert("text", "Go on.".into());
                    }
                }
                TextSpot::Say(agent, i) => next.edit_step(agent, *i, |s| {
                    s.insert("say", toml_edit::value("Done."));
                }),
                TextSpot::CallPrompt(agent, i) => next.edit_step(agent, *i, |s| {
                    if let Some(input) = s.get_mut("input").and_then(Item::as_table_like_mut) {
                        input.insert("prompt", toml_edit::value("Go."));
                    }
                }),
            }
        }
        next
    }

    /// With a parameter's default changed (a whole number stays one).
    pub fn with_param(&self, name: &str, value: f64) -> Editable {
        let mut next = self.clone();
        let integral = self
            .params()
            .iter()
            .any(|(k, _, whole)| k == name && *whole);
        if let Some(p) = next.doc.get_mut("params").and_then(Item::as_table_like_mut)
            && let Some(entry) = p.get(name)
        {
            let v: Value = if integral {
                (value as i64).into()
            } else {
                value.into()
            };
            let entry = ranged::set_value(entry, v);
            p.insert(name, entry);
        }
        next
    }

    /// With a parameter's default set from `--set` text, typed like the default it replaces.
    pub fn with_param_text(&self, name: &str, text: &str) -> Result<Editable, String> {
        let mut next = self.clone();
        let params = next
            .doc
            .get_mut("params")
            .and_then(Item::as_table_like_mut)
            .ok_or_else(|| format!("--set {name}: the scenario has no [params]"))?;
        let entry = params
            .get(name)
            .ok_or_else(|| format!("--set {name}: no such parameter"))?;
        let old = ranged::value(entry).ok_or_else(|| format!("--set {name}: no such parameter"))?;
        let value: Value = match old {
            Value::Integer(_) | Value::Float(_) => match text.parse::<i64>() {
                Ok(i) => i.into(),
                Err(_) => text
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| format!("--set {name}: expected a number, got `{text}`"))?
                    .into(),
            },
            Value::Boolean(_) => text
                .parse::<bool>()
                .map_err(|_| format!("--set {name}: expected true or false, got `{text}`"))?
                .into(),
            _ => text.into(),
        };
        let entry = ranged::set_value(entry, value);
        params.insert(name, entry);
        Ok(next)
    }

    fn driver(&self) -> Option<&dyn TableLike> {
        self.doc.get("driver").and_then(Item::as_table_like)
    }

    fn input_values(&self) -> Vec<Value> {
        self.driver()
            .and_then(|d| d.get("inputs"))
            .and_then(Item::as_array)
            .map(|a| a.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn inputs_array_mut(&mut self) -> Option<&mut toml_edit::Array> {
        self.doc
            .get_mut("driver")
            .and_then(Item::as_table_like_mut)
            .and_then(|d| d.get_mut("inputs"))
            .and_then(Item::as_array_mut)
    }

    fn steps_item(&self, agent: &str) -> Option<&Item> {
        self.doc
            .get("agents")
            .and_then(Item::as_table_like)
            .and_then(|a| a.get(agent))
            .and_then(Item::as_table_like)
            .and_then(|a| a.get("steps"))
    }

    fn steps_item_mut(&mut self, agent: &str) -> Option<&mut Item> {
        self.doc
            .get_mut("agents")
            .and_then(Item::as_table_like_mut)
            .and_then(|a| a.get_mut(agent))
            .and_then(Item::as_table_like_mut)
            .and_then(|a| a.get_mut("steps"))
    }

    /// An agent's steps, whether written as `[[agents.NAME.steps]]` or `steps = [...]`.
    fn step_tables(&self, agent: &str) -> Vec<&dyn TableLike> {
        match self.steps_item(agent) {
            Some(Item::ArrayOfTables(aot)) => aot.iter().map(|t| t as &dyn TableLike).collect(),
            Some(item) => item
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_inline_table().map(|t| t as &dyn TableLike))
                        .collect()
                })
                .unwrap_or_default(),
            None => vec![],
        }
    }

    /// Every value of `field` in the agent's steps: each step's own, and its `calls`' entries'.
    fn step_fields(&self, agent: &str, field: &str) -> Vec<String> {
        let mut found = Vec::new();
        for step in self.step_tables(agent) {
            found.extend(step.get(field).and_then(Item::as_str).map(str::to_string));
            for call in step_calls(step) {
                found.extend(call.get(field).and_then(Value::as_str).map(str::to_string));
            }
        }
        found
    }

    /// Without the entries of the agent's `calls` that spawn one of `gone`: a step whose calls
    /// all go is removed when it says nothing, and keeps its text otherwise.
    fn drop_spawning_calls(&mut self, agent: &str, gone: &BTreeSet<String>) {
        let spawns_gone = |v: &Value| {
            v.as_inline_table()
                .and_then(|t| t.get("spawn"))
                .and_then(Value::as_str)
                .is_some_and(|x| gone.contains(x))
        };
        let mut emptied = Vec::new();
        for index in 0..self.step_tables(agent).len() {
            let mut silent_and_empty = false;
            self.edit_step(agent, index, |step| {
                let Some(calls) = step.get_mut("calls").and_then(Item::as_array_mut) else {
                    return;
                };
                calls.retain(|v| !spawns_gone(v));
                if calls.is_empty() {
                    step.remove("calls");
                    silent_and_empty = step.get("say").is_none();
                }
            });
            if silent_and_empty {
                emptied.push(index);
            }
        }
        self.remove_steps_of(agent, &emptied);
    }

    fn edit_step(&mut self, agent: &str, index: usize, f: impl FnOnce(&mut dyn TableLike)) {
        match self.steps_item_mut(agent) {
            Some(Item::ArrayOfTables(aot)) => {
                if let Some(t) = aot.get_mut(index) {
                    f(t);
                }
            }
            Some(item) => {
                if let Some(t) = item
                    .as_array_mut()
                    .and_then(|a| a.get_mut(index))
                    .and_then(Value::as_inline_table_mut)
                {
                    f(t);
                }
            }
            None => {}
        }
    }

    fn remove_steps_of(&mut self, agent: &str, indices: &[usize]) {
        let mut sorted = indices.to_vec();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        sorted.dedup();
        match self.steps_item_mut(agent) {
            Some(Item::ArrayOfTables(aot)) => {
                for i in sorted {
                    if i < aot.len() {
                        aot.remove(i);
                    }
                }
            }
            Some(item) => {
                if let Some(a) = item.as_array_mut() {
                    for i in sorted {
                        if i < a.len() {
                            a.remove(i);
                        }
                    }
                }
            }
            None => {}
        }
    }

    /// Drops watches, inputs and checks that name any of `names` (agents or commands).
    fn drop_references(&mut self, names: &BTreeSet<String>) {
        let named = |s: Option<&str>| s.is_some_and(|s| names.contains(s));
        if let Some(watches) = self
            .doc
            .get_mut("watch")
            .and_then(Item::as_array_of_tables_mut)
        {
            watches.retain(|w| {
                !named(w.get("waiter").and_then(Item::as_str))
                    && !named(w.get("work").and_then(Item::as_str))
            });
        }
        if let Some(checks) = self
            .doc
            .get_mut("checks")
            .and_then(Item::as_array_of_tables_mut)
        {
            // A check names work by its agent, a `work` selector, or a `{{@task-id:NAME}}`.
            let mentions = |c: &toml_edit::Table| {
                let text = c.to_string();
                names.iter().any(|n| {
                    text.contains(&format!("{{{{@task-id:{n}}}}}"))
                        || text.contains(&format!("work = \"{n}\""))
                })
            };
            checks.retain(|c| !named(c.get("agent").and_then(Item::as_str)) && !mentions(c));
        }
        if let Some(inputs) = self.inputs_array_mut() {
            inputs.retain(|v| {
                let t = v.as_inline_table();
                let get = |k: &str| t.and_then(|t| t.get(k)).and_then(Value::as_str);
                let trigger_names = get("after").map(trigger_subject);
                !named(trigger_names.as_deref()) && !named(get("target"))
            });
        }
    }
}

/// Keeps the keys of a table for which `keep` holds.
fn retain_keys(table: &mut dyn TableLike, keep: impl Fn(&str) -> bool) {
    let gone: Vec<String> = table
        .iter()
        .map(|(k, _)| k.to_string())
        .filter(|k| !keep(k))
        .collect();
    for k in gone {
        table.remove(&k);
    }
}

/// The agent or command a trigger names (`turn-end:worker#2` -> `worker`).
fn trigger_subject(trigger: &str) -> String {
    let head = trigger.rsplit_once('#').map_or(trigger, |(h, _)| h);
    head.split_once(':').map_or("", |(_, n)| n).to_string()
}

/// Applies `[variants.NAME]` to the document and leaves that variant alone, empty.
fn apply_patch(doc: &mut DocumentMut, variant: &str, patch: &Item) {
    let Some(patch) = patch.as_table_like() else {
        return;
    };
    for (key, item) in patch.iter() {
        match key {
            "agents" => {
                for (name, agent) in item.as_table_like().into_iter().flat_map(|t| t.iter()) {
                    let mut agent = agent.clone();
                    if let Some(t) = agent.as_table_mut() {
                        t.set_position(None);
                    }
                    if let Some(agents) = doc.get_mut("agents").and_then(Item::as_table_like_mut) {
                        agents.insert(name, agent);
                    }
                }
            }
            "params" | "env" => {
                let target = if key == "params" {
                    doc.entry("params")
                        .or_insert(Item::Table(toml_edit::Table::new()))
                } else {
                    let driver = doc["driver"]
                        .as_table_like_mut()
                        .expect("[driver] is a table");
                    if driver.get("env").is_none() {
                        driver.insert("env", toml_edit::value(toml_edit::InlineTable::new()));
                    }
                    driver.get_mut("env").expect("env inserted")
                };
                if let Some(target) = target.as_table_like_mut() {
                    for (k, v) in item.as_table_like().into_iter().flat_map(|t| t.iter()) {
                        let merged = if key == "params" {
                            ranged::merge(target.get(k), v)
                        } else {
                            v.clone()
                        };
                        target.insert(k, merged);
                    }
                }
            }
            _ => {
                if let Some(driver) = doc["driver"].as_table_like_mut() {
                    driver.insert(key, item.clone());
                }
            }
        }
    }
    let mut variants = toml_edit::Table::new();
    variants.set_implicit(true);
    variants.insert(variant, Item::Table(toml_edit::Table::new()));
    doc["variants"] = Item::Table(variants);
}

fn short(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        format!("{}…", one_line.chars().take(max).collect::<String>())
    }
}

mod ranged;
/// The entries of a step's `calls` (several tool calls in one message), if it has them.
fn step_calls(step: &dyn TableLike) -> Vec<&toml_edit::InlineTable> {
    step.get("calls")
        .and_then(Item::as_array)
        .map(|a| a.iter().filter_map(Value::as_inline_table).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
