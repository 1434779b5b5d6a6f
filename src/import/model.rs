//! The imported scenario before it is text ([`Draft`]), and its rendering as a scenario file
//! with the comments that say where each part came from. Values are encoded by `toml_edit`,
//! so any text a transcript holds comes out as valid TOML.

use indexmap::IndexMap;
use serde_json::Value;

use super::lift::Delay;
use crate::scenario::{DriverMode, ParamValue};

#[derive(Debug, Clone, Default)]
pub struct Draft {
    pub name: String,
    pub title: String,
    pub summary: String,
    pub reproduces: String,
    /// Comment lines at the top of the file.
    pub header: Vec<String>,
    /// Parameter, default, comment.
    pub params: Vec<(String, ParamValue, String)>,
    pub driver: DraftDriver,
    pub agents: IndexMap<String, Vec<DraftStep>>,
    pub watches: Vec<DraftWatch>,
    /// Variant, verdict, comment.
    pub expect: Option<(String, String, String)>,
}

#[derive(Debug, Clone)]
pub struct DraftDriver {
    pub mode: DriverMode,
    pub mode_note: String,
    pub prompt: String,
    /// A number or a `{{param}}` expression.
    pub ceiling: Delay,
    pub ceiling_note: String,
    pub env: Vec<(String, String)>,
    pub env_note: Option<String>,
    pub guard_note: Option<String>,
    pub allowed_tools: Option<(Vec<String>, String)>,
    pub inputs: Vec<DraftInput>,
    /// Comments on what the driver could not replay.
    pub notes: Vec<String>,
}

impl Default for DraftDriver {
    fn default() -> DraftDriver {
        DraftDriver {
            mode: DriverMode::Print,
            mode_note: String::new(),
            prompt: String::new(),
            ceiling: Delay::Seconds(60.0),
            ceiling_note: String::new(),
            env: vec![],
            env_note: None,
            guard_note: None,
            allowed_tools: None,
            inputs: vec![],
            notes: vec![],
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DraftInput {
    pub after: String,
    pub delay: Delay,
    pub action: DraftAction,
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DraftAction {
    Text(String),
    Control {
        control: &'static str,
        target: Option<String>,
    },
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct DraftStep {
    pub say: Option<String>,
    /// Tool name and input.
    pub call: Option<(String, Value)>,
    pub spawn: Option<String>,
    pub track: Option<String>,
    pub until_notified: bool,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DraftWatch {
    pub waiter: String,
    pub work: String,
    pub note: String,
}

/// `toml_edit`'s encoding of a JSON value (`null`s, which TOML lacks, are left out).
pub fn toml_value(v: &Value) -> Option<toml_edit::Value> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64()?.into(),
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(items) => {
            let mut a = toml_edit::Array::new();
            for item in items.iter().filter_map(toml_value) {
                a.push(item);
            }
            toml_edit::Value::Array(a)
        }
        Value::Object(map) => {
            let mut t = toml_edit::InlineTable::new();
            for (k, v) in map {
                if let Some(v) = toml_value(v) {
                    t.insert(k, v);
                }
            }
            t.fmt();
            toml_edit::Value::InlineTable(t)
        }
    })
}

fn string(s: &str) -> String {
    toml_edit::Value::from(s).to_string()
}

fn key(k: &str) -> String {
    toml_edit::Key::new(k).display_repr().into_owned()
}

fn param(p: &ParamValue) -> String {
    match p {
        ParamValue::Bool(b) => b.to_string(),
        ParamValue::Int(i) => i.to_string(),
        ParamValue::Float(x) => toml_edit::Value::from(*x).to_string(),
        ParamValue::Text(s) => string(s),
    }
}

fn delay(d: &Delay) -> String {
    match d {
        Delay::Seconds(s) => toml_edit::Value::from(*s).to_string(),
        Delay::Param(name) => string(&format!("{{{{{name}}}}}")),
        Delay::Expr(expr) => string(expr),
    }
}

/// Comment lines, each prefixed with `# `.
fn comments(out: &mut String, lines: impl IntoIterator<Item = impl AsRef<str>>) {
    for line in lines {
        for l in line.as_ref().lines() {
            out.push_str(&format!("# {l}\n").replace("# \n", "#\n"));
        }
    }
}

impl Draft {
    /// The scenario file's text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        comments(&mut out, &self.header);
        out.push('\n');
        for (k, v) in [
            ("name", &self.name),
            ("title", &self.title),
            ("summary", &self.summary),
            ("reproduces", &self.reproduces),
        ] {
            out.push_str(&format!("{k} = {}\n", string(v)));
        }
        if !self.params.is_empty() {
            out.push_str("\n[params]\n");
            for (name, value, note) in &self.params {
                comments(&mut out, [note]);
                out.push_str(&format!("{} = {}\n", key(name), param(value)));
            }
        }
        self.render_driver(&mut out);
        for (agent, steps) in &self.agents {
            for step in steps {
                render_step(&mut out, agent, step);
            }
        }
        for w in &self.watches {
            out.push('\n');
            comments(&mut out, [&w.note]);
            out.push_str(&format!(
                "[[watch]]\nwaiter = {}\nwork = {}\n",
                string(&w.waiter),
                string(&w.work)
            ));
        }
        if let Some((variant, outcome, note)) = &self.expect {
            out.push_str("\n[expect]\n");
            comments(&mut out, [note]);
            out.push_str(&format!("{} = {}\n", key(variant), string(outcome)));
        }
        out
    }

    fn render_driver(&self, out: &mut String) {
        let d = &self.driver;
        out.push_str("\n[driver]\n");
        comments(out, &d.notes);
        comments(out, [&d.mode_note]);
        out.push_str(&format!("mode = {}\n", string(d.mode.as_str())));
        out.push_str(&format!("prompt = {}\n", string(&d.prompt)));
        comments(out, [&d.ceiling_note]);
        out.push_str(&format!("ceiling_seconds = {}\n", delay(&d.ceiling)));
        if !d.env.is_empty() {
            comments(out, &d.env_note);
            let pairs: Vec<String> = d
                .env
                .iter()
                .map(|(k, v)| format!("{} = {}", key(k), string(v)))
                .collect();
            out.push_str(&format!("env = {{ {} }}\n", pairs.join(", ")));
        }
        if let Some(note) = &d.guard_note {
            comments(out, [note]);
            out.push_str("guard = true\n");
        }
        if let Some((tools, note)) = &d.allowed_tools {
            comments(out, [note]);
            let list: Vec<String> = tools.iter().map(|t| string(t)).collect();
            out.push_str(&format!("allowed_tools = [{}]\n", list.join(", ")));
        }
        if !d.inputs.is_empty() {
            out.push_str("inputs = [\n");
            for input in &d.inputs {
                if let Some(note) = &input.note {
                    for line in note.lines() {
                        out.push_str(&format!("  # {line}\n"));
                    }
                }
                let action = match &input.action {
                    DraftAction::Text(t) => format!("text = {}", string(t)),
                    DraftAction::Control { control, target } => {
                        let mut s = format!("control = {}", string(control));
                        if let Some(t) = target {
                            s.push_str(&format!(", target = {}", string(t)));
                        }
                        s
                    }
                };
                out.push_str(&format!(
                    "  {{ after = {}, delay_seconds = {}, {action} }},\n",
                    string(&input.after),
                    delay(&input.delay)
                ));
            }
            out.push_str("]\n");
        }
    }
}

fn render_step(out: &mut String, agent: &str, step: &DraftStep) {
    out.push('\n');
    comments(out, &step.notes);
    out.push_str(&format!("[[agents.{}.steps]]\n", key(agent)));
    if let Some(say) = &step.say {
        out.push_str(&format!("say = {}\n", string(say)));
    }
    if let Some((tool, input)) = &step.call {
        out.push_str(&format!("call = {}\n", string(tool)));
        if let Some(spawn) = &step.spawn {
            out.push_str(&format!("spawn = {}\n", string(spawn)));
        }
        if let Some(track) = &step.track {
            out.push_str(&format!("track = {}\n", string(track)));
        }
        if step.until_notified {
            out.push_str("until = \"notified\"\nmax_repeats = 1000\n");
        }
        if let Some(v) = toml_value(input).filter(|v| v.is_inline_table()) {
            out.push_str(&format!("input = {v}\n"));
        }
    }
}
