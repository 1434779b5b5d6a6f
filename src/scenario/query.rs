//! Declarative checks: what a scenario's `[[checks]]` may say about the timeline, resolved and
//! validated. A check is a preset (`kind`, one of the built-in facts) or a *query*: one
//! relation over *selectors* of events. The engine that evaluates them is `crate::checks`;
//! this module owns the format and its mistakes (each one `file:line:col`).
//!
//! Selectors pick events by source, kind, agent, work, hook, stream type/subtype, tool, task
//! status, and by fields at a path with a comparison. Relations: `count`, `exists`, `absent`,
//! `before`, `within`, `pairs`, `while`, `value`, `followed`.

use serde::{Deserialize, Serialize};

/// Event sources a selector may name.
pub const SOURCES: &[&str] = &[
    "api",
    "hook",
    "stream",
    "os",
    "driver",
    "transcript",
    "screen",
    "sdk",
    "integration",
    "events",
];

/// Which events a relation is about: every given field must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Selector {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The scenario agent the event belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// A tracked command or a spawned agent the event is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<String>,
    /// A hook event name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<String>,
    /// A stream-json line's `type` (`result`, `system`, ...).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub line_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtype: Option<String>,
    /// The tool a tool call names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A task's status (`completed`, `killed`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, rename = "where", skip_serializing_if = "Vec::is_empty")]
    pub predicates: Vec<Predicate>,
}

/// A field of the event (or of a hook's raw payload, under `payload.`) and a test on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Predicate {
    pub path: FieldPath,
    pub test: FieldTest,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldTest {
    Equals(serde_json::Value),
    Contains(String),
    /// A regular expression (validated when the scenario loads).
    Matches(String),
    Exists(bool),
    Gt(f64),
    Ge(f64),
    Lt(f64),
    Le(f64),
}

/// `background_tasks[*].status`, `payload.stop_hook_active`, `notifications[0].task_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldPath(pub Vec<PathStep>);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathStep {
    Key(String),
    Index(usize),
    /// `[*]`: any element.
    Any,
}

impl FieldPath {
    /// Parses a dotted path with `[N]` and `[*]`; the error says what was expected.
    pub fn parse(text: &str) -> Result<FieldPath, String> {
        let mut steps = Vec::new();
        for part in text.split('.') {
            let (key, mut rest) = match part.find('[') {
                Some(i) => (&part[..i], &part[i..]),
                None => (part, ""),
            };
            if key.is_empty() && (steps.is_empty() || rest.is_empty()) {
                return Err(format!(
                    "`{text}`: expected a path such as `background_tasks[*].status`"
                ));
            }
            if !key.is_empty() {
                if !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(format!("`{text}`: `{key}` is not a field name"));
                }
                steps.push(PathStep::Key(key.to_string()));
            }
            while let Some(inner) = rest.strip_prefix('[') {
                let close = inner
                    .find(']')
                    .ok_or_else(|| format!("`{text}`: a `[` without its `]`"))?;
                let index = &inner[..close];
                steps.push(match index {
                    "*" => PathStep::Any,
                    n => PathStep::Index(n.parse().map_err(|_| {
                        format!("`{text}`: `[{n}]` is not an index (a number or `*`)")
                    })?),
                });
                rest = &inner[close + 1..];
            }
            if !rest.is_empty() {
                return Err(format!("`{text}`: unexpected `{rest}`"));
            }
        }
        Ok(FieldPath(steps))
    }
}

impl std::fmt::Display for FieldPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut first = true;
        for step in &self.0 {
            match step {
                PathStep::Key(k) => {
                    if !first {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                PathStep::Index(n) => write!(f, "[{n}]")?,
                PathStep::Any => f.write_str("[*]")?,
            }
            first = false;
        }
        Ok(())
    }
}

/// How matching events are grouped for `pairs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    Agent,
    Work,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Which {
    First,
    Last,
}

/// One relation over selectors, with what it observes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "relation")]
pub enum Query {
    /// How many events match: a number.
    Count { of: Selector },
    /// Whether any event matches: `yes` or `no`.
    Exists { of: Selector },
    /// Whether no event matches: `yes` or `no`.
    Absent { of: Selector },
    /// Whether the first `first` comes before the first `then`: `yes`, `no`, or
    /// `not-observed` when either never happens.
    Before { first: Selector, then: Selector },
    /// Whether every `after` is followed by a `then` (within `seconds` when given): `yes`,
    /// `no`, or `not-observed` when no `after` happens.
    Within {
        after: Selector,
        then: Selector,
        seconds: Option<f64>,
    },
    /// Whether every `each` is followed by exactly one `with` before the next `each` (of the
    /// same agent or work, with `by`): `yes`, `no`, or `not-observed`.
    Pairs {
        each: Selector,
        with: Selector,
        by: Option<GroupBy>,
    },
    /// How many `count` events happen from the first `from` until the next `until` (or the
    /// end): a number; `not-observed` when `from` never happens.
    While {
        count: Selector,
        from: Selector,
        until: Option<Selector>,
    },
    /// The value of a field at the first (or last) `at` event, as text; a `capture` regex
    /// keeps its first group. `not-observed` when there is no such event or field.
    Value {
        at: Selector,
        path: FieldPath,
        which: Which,
        capture: Option<String>,
    },
    /// How many `each` events are followed by a `by` before any `unless`: a number.
    Followed {
        each: Selector,
        by: Selector,
        unless: Option<Selector>,
    },
    /// Seconds from the first `from` to the first `to` after it: a number; `not-observed`
    /// when either never happens.
    Gap { from: Selector, to: Selector },
}

impl Query {
    pub fn name(&self) -> &'static str {
        match self {
            Query::Count { .. } => "count",
            Query::Exists { .. } => "exists",
            Query::Absent { .. } => "absent",
            Query::Before { .. } => "before",
            Query::Within { .. } => "within",
            Query::Pairs { .. } => "pairs",
            Query::While { .. } => "while",
            Query::Value { .. } => "value",
            Query::Followed { .. } => "followed",
            Query::Gap { .. } => "gap",
        }
    }

    /// Every selector of the relation, by its key (`of`, `first`, `then`, ...).
    pub fn selectors(&self) -> Vec<(&'static str, &Selector)> {
        match self {
            Query::Count { of } | Query::Exists { of } | Query::Absent { of } => vec![("of", of)],
            Query::Before { first, then } => vec![("first", first), ("then", then)],
            Query::Within { after, then, .. } => vec![("after", after), ("then", then)],
            Query::Pairs { each, with, .. } => vec![("each", each), ("with", with)],
            Query::While {
                count, from, until, ..
            } => {
                let mut all = vec![("count", count), ("from", from)];
                all.extend(until.as_ref().map(|u| ("until", u)));
                all
            }
            Query::Value { at, .. } => vec![("at", at)],
            Query::Gap { from, to } => vec![("from", from), ("to", to)],
            Query::Followed { each, by, unless } => {
                let mut all = vec![("each", each), ("by", by)];
                all.extend(unless.as_ref().map(|u| ("unless", u)));
                all
            }
        }
    }

    /// Every selector of the relation, to change in place (the order of [`Query::selectors`]).
    pub fn selectors_mut(&mut self) -> Vec<&mut Selector> {
        match self {
            Query::Count { of } | Query::Exists { of } | Query::Absent { of } => vec![of],
            Query::Before { first, then } => vec![first, then],
            Query::Within { after, then, .. } => vec![after, then],
            Query::Pairs { each, with, .. } => vec![each, with],
            Query::While { count, from, until } => {
                let mut all = vec![count, from];
                all.extend(until.as_mut());
                all
            }
            Query::Value { at, .. } => vec![at],
            Query::Followed { each, by, unless } => {
                let mut all = vec![each, by];
                all.extend(unless.as_mut());
                all
            }
            Query::Gap { from, to } => vec![from, to],
        }
    }

    /// The query with every `{{@task-id:NAME}}` of its `where` values filled from `id_of`
    /// (a regex gets the id escaped); `Err(NAME)` for the first work with no id.
    pub fn with_task_ids(&self, id_of: &dyn Fn(&str) -> Option<String>) -> Result<Query, String> {
        let mut q = self.clone();
        for s in q.selectors_mut() {
            for p in &mut s.predicates {
                match &mut p.test {
                    FieldTest::Equals(serde_json::Value::String(t)) | FieldTest::Contains(t) => {
                        *t = fill_task_ids(t, &|name: &str| id_of(name))?;
                    }
                    FieldTest::Matches(t) => {
                        *t = fill_task_ids(t, &|name: &str| {
                            id_of(name).map(|id| regex::escape(&id))
                        })?;
                    }
                    _ => {}
                }
            }
        }
        Ok(q)
    }

    /// Whether the relation observes a number (so `expect` may be a comparison).
    pub fn is_numeric(&self) -> bool {
        matches!(
            self,
            Query::Count { .. } | Query::While { .. } | Query::Followed { .. } | Query::Gap { .. }
        )
    }

    /// Whether the relation observes `yes` / `no` / `not-observed`.
    pub fn is_yes_no(&self) -> bool {
        matches!(
            self,
            Query::Exists { .. }
                | Query::Absent { .. }
                | Query::Before { .. }
                | Query::Within { .. }
                | Query::Pairs { .. }
        )
    }
}

/// The prefix of a `where` placeholder naming a work's task id: `{{@task-id:job}}`.
pub const TASK_ID: &str = "task-id:";

/// The inner text of every `{{@...}}` placeholder in `text` (`task-id:job`), in order.
pub fn placeholders(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{@") {
        let after = &rest[open + 3..];
        let Some(close) = after.find("}}") else {
            break;
        };
        found.push(after[..close].trim());
        rest = &after[close + 2..];
    }
    found
}

/// `text` with each `{{@task-id:NAME}}` replaced by `id_of(NAME)`; `Err(NAME)` where that is
/// `None`. Other text, and other placeholders, stay as they are.
pub fn fill_task_ids(text: &str, id_of: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("{{@") {
        let after = &rest[open + 3..];
        let Some(close) = after.find("}}") else {
            break;
        };
        out.push_str(&rest[..open]);
        match after[..close].trim().strip_prefix(TASK_ID) {
            Some(name) => out.push_str(&id_of(name).ok_or_else(|| name.to_string())?),
            None => out.push_str(&rest[open..open + 3 + close + 2]),
        }
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// An expectation on a number: `>= 2`, `== 0`, `< 3`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    pub op: CompareOp,
    pub value: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

impl Comparison {
    /// `>= 2`, `==0`, `< 1.5`; a plain number means `==`.
    pub fn parse(text: &str) -> Option<Comparison> {
        let t = text.trim();
        let (op, rest) = [
            (">=", CompareOp::Ge),
            ("<=", CompareOp::Le),
            ("==", CompareOp::Eq),
            ("!=", CompareOp::Ne),
            (">", CompareOp::Gt),
            ("<", CompareOp::Lt),
        ]
        .iter()
        .find_map(|(p, op)| t.strip_prefix(p).map(|r| (*op, r)))
        .unwrap_or((CompareOp::Eq, t));
        let value = rest.trim().parse::<f64>().ok()?;
        Some(Comparison { op, value })
    }

    /// Whether every count from `n` up gives the same answer as `n`: a count that can only
    /// grow cannot change it.
    pub fn settled_by_growth(&self, n: f64) -> bool {
        match self.op {
            CompareOp::Ge | CompareOp::Gt => self.holds(n),
            CompareOp::Le | CompareOp::Lt => !self.holds(n),
            CompareOp::Eq | CompareOp::Ne => n > self.value,
        }
    }

    pub fn holds(&self, n: f64) -> bool {
        match self.op {
            CompareOp::Eq => n == self.value,
            CompareOp::Ne => n != self.value,
            CompareOp::Gt => n > self.value,
            CompareOp::Ge => n >= self.value,
            CompareOp::Lt => n < self.value,
            CompareOp::Le => n <= self.value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_and_print() {
        for text in [
            "background_tasks[*].status",
            "payload.stop_hook_active",
            "notifications[0].task_id",
            "a.b.c",
        ] {
            assert_eq!(FieldPath::parse(text).unwrap().to_string(), text);
        }
        for bad in ["", "a..b", "a[", "a[x]", "a]b", "a-b", ".a"] {
            assert!(FieldPath::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn comparisons_parse_and_hold() {
        assert!(Comparison::parse(">= 2").unwrap().holds(2.0));
        assert!(!Comparison::parse(">2").unwrap().holds(2.0));
        assert!(Comparison::parse("0").unwrap().holds(0.0));
        assert!(Comparison::parse("!= 0").unwrap().holds(1.0));
        assert!(Comparison::parse("<= 1.5").unwrap().holds(1.5));
        assert!(Comparison::parse("< 1").unwrap().holds(0.0));
        assert!(Comparison::parse("yes").is_none());
        assert!(Comparison::parse(">= x").is_none());
    }
}
