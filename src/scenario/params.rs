//! Parameters: their types, what a duration may be, and the range where a scenario's `expect`
//! holds.
//!
//! A parameter's type is its default's ([`ParamKind`]): a variant's value and a `--set` must
//! have it. A parameter named `..._seconds` is a duration of 0 to [`MAX_SECONDS`], whatever
//! its type: refused outside, even when exploring (that is what can run at all; a range is
//! where the expectation holds).
//!
//! A `[params]` entry is a bare value (`bg_seconds = 12`) or a table that also says where the
//! scenario's expected verdicts hold: `bg_seconds = { default = 12, min = 7, reason = "..." }`.
//! A variant may narrow or widen that range in its own `params` (`default` may be left out
//! there: the value is inherited). A `--set` outside the range is refused, with the reason,
//! unless the caller explores on purpose ([`RangePolicy::Explore`]); then the run has no
//! expected verdict, and the plan says which values were outside.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::template::ParamValue;

/// A parameter as written in `[params]` or a variant's `params`.
#[derive(Debug, Clone)]
pub enum RawParam {
    /// `bg_seconds = 12`
    Value(ParamValue),
    /// `bg_seconds = { default = 12, min = 7, reason = "..." }`
    Spec(RawParamSpec),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a parameter table such as { default = 12, min = 6, reason = \"...\" }"
)]
pub struct RawParamSpec {
    pub default: Option<ParamValue>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Why the expectation fails outside the range (shown when a `--set` is refused).
    pub reason: Option<String>,
}

impl<'de> Deserialize<'de> for RawParam {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match toml::Value::deserialize(d)? {
            table @ toml::Value::Table(_) => table
                .try_into::<RawParamSpec>()
                .map(RawParam::Spec)
                .map_err(|e| D::Error::custom(e.message().trim_end().replace('\n', " "))),
            other => other
                .try_into::<ParamValue>()
                .map(RawParam::Value)
                .map_err(|e| D::Error::custom(e.message().trim_end().replace('\n', " "))),
        }
    }
}

impl RawParam {
    /// The value this entry sets, if it sets one.
    pub fn value(&self) -> Option<&ParamValue> {
        match self {
            RawParam::Value(v) => Some(v),
            RawParam::Spec(s) => s.default.as_ref(),
        }
    }

    /// The range this entry declares, if it declares one.
    pub fn range(&self) -> Option<ParamRange> {
        match self {
            RawParam::Spec(s) if s.min.is_some() || s.max.is_some() => Some(ParamRange {
                min: s.min,
                max: s.max,
                reason: s.reason.clone(),
            }),
            _ => None,
        }
    }
}

/// Where a numeric parameter keeps the scenario's expected verdicts true (bounds included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ParamRange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ParamRange {
    pub fn contains(&self, x: f64) -> bool {
        self.min.is_none_or(|m| x >= m) && self.max.is_none_or(|m| x <= m)
    }

    /// `bg_seconds >= 7`, `bg_seconds <= 30`, `7 <= bg_seconds <= 30`.
    pub fn describe(&self, name: &str) -> String {
        match (self.min, self.max) {
            (Some(lo), Some(hi)) => format!("{lo} <= {name} <= {hi}"),
            (Some(lo), None) => format!("{name} >= {lo}"),
            (None, Some(hi)) => format!("{name} <= {hi}"),
            (None, None) => format!("any {name}"),
        }
    }

    /// A problem with the range itself (before any value is checked against it).
    pub fn problem(&self) -> Option<String> {
        match (self.min, self.max) {
            (Some(lo), Some(hi)) if lo > hi => Some(format!("`min` {lo} is above `max` {hi}")),
            (Some(x), _) | (_, Some(x)) if !x.is_finite() => {
                Some(format!("{x} is not a finite bound"))
            }
            _ => None,
        }
    }
}

/// What to do with a `--set` value outside its parameter's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RangePolicy {
    /// Refuse it: the scenario does not claim its expected verdict there.
    #[default]
    Enforce,
    /// Run it on purpose (`--explore`, `threshold`): the run then has no expected verdict.
    Explore,
}

/// What a parameter holds, as its default says: a variant's value and a `--set` must hold the
/// same (a number default takes numbers only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    Number,
    Bool,
    Text,
}

impl ParamKind {
    pub fn of(value: &ParamValue) -> ParamKind {
        match value {
            ParamValue::Int(_) | ParamValue::Float(_) => ParamKind::Number,
            ParamValue::Bool(_) => ParamKind::Bool,
            ParamValue::Text(_) => ParamKind::Text,
        }
    }

    fn described(self) -> &'static str {
        match self {
            ParamKind::Number => "a number",
            ParamKind::Bool => "true or false",
            ParamKind::Text => "text",
        }
    }
}

/// The longest duration anything in a scenario may last: a day. A value beyond it is a
/// mistake (a ceiling nobody waits for), never an experiment.
pub const MAX_SECONDS: f64 = 86_400.0;

/// A parameter named `..._seconds` is a number of seconds, whatever its default's type (a
/// text default such as `"0.5"` keeps `minimize` from shrinking it, and is still seconds).
pub fn is_seconds(name: &str) -> bool {
    name.ends_with("_seconds")
}

/// Parameter names: ASCII letters, digits, `_` and `-` (they appear in `{{name}}`, in
/// `--set name=value` and in folder names such as `threshold`'s `name=value`).
pub fn is_param_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Why `value` cannot be parameter `name`, whose default is `default`: another type than the
/// default's, or (for a `..._seconds` parameter) not a number of seconds from 0 to a day.
pub fn value_problem(name: &str, default: &ParamValue, value: &ParamValue) -> Option<String> {
    let kind = ParamKind::of(default);
    if ParamKind::of(value) != kind {
        return Some(format!(
            "`{name}` is {} (as its default `{default}`), not `{value}`",
            kind.described()
        ));
    }
    seconds_problem(name, value)
}

/// Why `value` is not a number of seconds, when `name` says it is one.
pub fn seconds_problem(name: &str, value: &ParamValue) -> Option<String> {
    if !is_seconds(name) {
        return None;
    }
    match numeric(value) {
        Some(x) if (0.0..=MAX_SECONDS).contains(&x) => None,
        Some(_) => Some(format!(
            "`{name}` = {value} is not a number of seconds from 0 to {MAX_SECONDS} (a name ending in `_seconds` makes it a duration)"
        )),
        None => Some(format!(
            "`{name}` is a number of seconds (its name ends in `_seconds`), not `{value}`"
        )),
    }
}

/// The number a parameter value stands for, if it is numeric.
pub fn numeric(value: &ParamValue) -> Option<f64> {
    match value {
        ParamValue::Int(i) => Some(*i as f64),
        ParamValue::Float(x) => Some(*x),
        ParamValue::Text(t) => t.trim().parse().ok(),
        ParamValue::Bool(_) => None,
    }
}

/// `name=value (outside name >= 7)` for every value outside its range.
pub fn outside(
    params: &IndexMap<String, ParamValue>,
    ranges: &IndexMap<String, ParamRange>,
) -> Vec<String> {
    ranges
        .iter()
        .filter_map(|(name, range)| {
            let value = params.get(name)?;
            let x = numeric(value)?;
            (!range.contains(x))
                .then(|| format!("{name}={value} (outside {})", range.describe(name)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_hold_their_bounds_and_describe_themselves() {
        let r = ParamRange {
            min: Some(7.0),
            max: None,
            reason: None,
        };
        assert!(r.contains(7.0) && r.contains(100.0) && !r.contains(6.99));
        assert_eq!(r.describe("bg_seconds"), "bg_seconds >= 7");
        let both = ParamRange {
            min: Some(2.0),
            max: Some(9.5),
            reason: None,
        };
        assert!(both.contains(2.0) && both.contains(9.5) && !both.contains(9.6));
        assert_eq!(both.describe("x"), "2 <= x <= 9.5");
        let upside_down = ParamRange {
            min: Some(3.0),
            max: Some(1.0),
            reason: None,
        };
        assert!(upside_down.problem().unwrap().contains("above"));
    }

    #[test]
    fn a_value_has_its_defaults_type_and_seconds_are_a_duration() {
        let twelve = ParamValue::Int(12);
        assert_eq!(value_problem("n", &twelve, &ParamValue::Float(0.5)), None);
        let text = ParamValue::Text("abc".into());
        assert_eq!(
            value_problem("n", &twelve, &text).as_deref(),
            Some("`n` is a number (as its default `12`), not `abc`")
        );
        assert!(value_problem("b", &ParamValue::Bool(true), &twelve).is_some());
        assert!(value_problem("t", &text, &ParamValue::Bool(true)).is_some());
        assert_eq!(
            value_problem("t", &text, &ParamValue::Text("x".into())),
            None
        );
        for bad in [ParamValue::Int(-1), ParamValue::Float(1e12), text.clone()] {
            let problem = seconds_problem("bg_seconds", &bad);
            assert!(problem.is_some_and(|p| p.contains("`bg_seconds`")), "{bad}");
        }
        for good in [
            ParamValue::Int(0),
            ParamValue::Float(86_400.0),
            ParamValue::Text("0.5".into()),
        ] {
            assert_eq!(seconds_problem("poll_seconds", &good), None, "{good}");
        }
        assert_eq!(seconds_problem("count", &ParamValue::Int(-1)), None);
        assert!(is_param_name("bg_seconds") && is_param_name("a-b1"));
        assert!(!is_param_name("") && !is_param_name("../x") && !is_param_name("a b"));
    }

    #[test]
    fn values_outside_are_named() {
        let params = IndexMap::from([
            ("bg_seconds".to_string(), ParamValue::Int(3)),
            ("fg".to_string(), ParamValue::Text("sleep 2".into())),
        ]);
        let ranges = IndexMap::from([(
            "bg_seconds".to_string(),
            ParamRange {
                min: Some(7.0),
                max: None,
                reason: None,
            },
        )]);
        assert_eq!(
            outside(&params, &ranges),
            vec!["bg_seconds=3 (outside bg_seconds >= 7)"]
        );
        let fine = IndexMap::from([("bg_seconds".to_string(), ParamValue::Float(7.5))]);
        assert!(outside(&fine, &ranges).is_empty());
    }
}
