//! `{{param}}` substitution and the small arithmetic used by duration fields.
//!
//! Durations are parameters so a test can run the 90 s positive control in 3 s: a duration field
//! is a number or a string such as `"{{bg_seconds}} + 30"`, substituted, then evaluated with
//! `+ - * /` and parentheses. Nothing else is evaluated: a scenario is data, not a program.

use indexmap::IndexMap;
use std::fmt;

/// A parameter's value: what `--set k=v` and `[params]` hold.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(untagged, expecting = "a number, true or false, or a string")]
pub enum ParamValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Bool(b) => write!(f, "{b}"),
            ParamValue::Int(i) => write!(f, "{i}"),
            ParamValue::Float(x) => write!(f, "{x}"),
            ParamValue::Text(s) => f.write_str(s),
        }
    }
}

impl ParamValue {
    /// Parses a `--set` value with the type of the parameter's default.
    pub fn parse_like(&self, text: &str) -> Result<ParamValue, String> {
        match self {
            ParamValue::Bool(_) => text
                .parse()
                .map(ParamValue::Bool)
                .map_err(|_| format!("expected true or false, got `{text}`")),
            ParamValue::Int(_) | ParamValue::Float(_) => {
                if let Ok(i) = text.parse::<i64>() {
                    Ok(ParamValue::Int(i))
                } else {
                    text.parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite())
                        .map(ParamValue::Float)
                        .ok_or_else(|| format!("expected a number, got `{text}`"))
                }
            }
            ParamValue::Text(_) => Ok(ParamValue::Text(text.to_string())),
        }
    }

    fn as_json(&self) -> serde_json::Value {
        match self {
            ParamValue::Bool(b) => (*b).into(),
            ParamValue::Int(i) => (*i).into(),
            ParamValue::Float(x) => serde_json::Number::from_f64(*x)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            ParamValue::Text(s) => s.clone().into(),
        }
    }
}

pub type Params = IndexMap<String, ParamValue>;

/// Replaces every `{{name}}` (spaces inside the braces allowed) with the parameter's value.
pub fn substitute(text: &str, params: &Params) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after
            .find("}}")
            .ok_or_else(|| "unclosed `{{` in template (expected `{{name}}`)".to_string())?;
        let name = after[..close].trim();
        if name.starts_with('@') {
            // A run-time placeholder (`{{@agent-id:worker}}`), filled in by the fake API.
            out.push_str(&rest[open..open + 2 + close + 2]);
            rest = &after[close + 2..];
            continue;
        }
        let value = params
            .get(name)
            .ok_or_else(|| unknown_param(name, params))?;
        out.push_str(&value.to_string());
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The parameter names a text uses (`{{name}}`, run-time `{{@...}}` placeholders left out),
/// each once, in order.
pub fn names_in(text: &str) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else { break };
        let name = after[..close].trim();
        if !name.starts_with('@') && !names.contains(&name) {
            names.push(name);
        }
        rest = &after[close + 2..];
    }
    names
}

fn unknown_param(name: &str, params: &Params) -> String {
    let known: Vec<&str> = params.keys().map(String::as_str).collect();
    if known.is_empty() {
        format!("unknown parameter `{name}`: this scenario declares no [params]")
    } else {
        format!(
            "unknown parameter `{name}`, expected one of: {}",
            known.join(", ")
        )
    }
}

/// Substitutes inside every string of a JSON value. A string that is exactly one `{{name}}`
/// takes the parameter's own type, so `timeout = "{{ms}}"` becomes a number.
pub fn substitute_json(
    value: &serde_json::Value,
    params: &Params,
) -> Result<serde_json::Value, String> {
    use serde_json::Value;
    Ok(match value {
        Value::String(s) => {
            let trimmed = s.trim();
            let whole = trimmed
                .strip_prefix("{{")
                .and_then(|t| t.strip_suffix("}}"))
                .filter(|inner| !inner.contains("{{") && !inner.contains("}}"));
            match whole.and_then(|name| params.get(name.trim())) {
                Some(p) => p.as_json(),
                None => Value::String(substitute(s, params)?),
            }
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| substitute_json(v, params))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), substitute_json(v, params)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => other.clone(),
    })
}

/// Evaluates `+ - * /` with parentheses over decimal numbers.
pub fn eval_arithmetic(expr: &str) -> Result<f64, String> {
    let tokens = tokenize(expr)?;
    let mut parser = Arith {
        tokens,
        pos: 0,
        depth: 0,
    };
    let value = parser.sum()?;
    if parser.pos != parser.tokens.len() {
        return Err(format!(
            "unexpected `{}` in `{expr}`",
            parser.tokens[parser.pos]
        ));
    }
    if !value.is_finite() {
        return Err(format!("`{expr}` is not a finite number"));
    }
    Ok(value)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Num(f64),
    Op(char),
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Num(n) => write!(f, "{n}"),
            Token::Op(c) => write!(f, "{c}"),
        }
    }
}

fn tokenize(expr: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = expr.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if "+-*/()".contains(c) {
            tokens.push(Token::Op(c));
            chars.next();
        } else if c.is_ascii_digit() || c == '.' {
            let mut end = i;
            while let Some(&(j, d)) = chars.peek() {
                if d.is_ascii_digit() || d == '.' {
                    end = j + d.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            let n = expr[i..end]
                .parse()
                .map_err(|_| format!("`{}` is not a number", &expr[i..end]))?;
            tokens.push(Token::Num(n));
        } else {
            return Err(format!(
                "unexpected `{c}` in `{expr}` (expected a number, + - * / or parentheses)"
            ));
        }
    }
    if tokens.is_empty() {
        return Err("expected a number, got an empty expression".into());
    }
    Ok(tokens)
}

/// How deeply parentheses and signs may nest: far beyond any real duration, well within the
/// stack of a recursive descent.
const MAX_NESTING: usize = 64;

struct Arith {
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
}

impl Arith {
    fn peek_op(&self) -> Option<char> {
        match self.tokens.get(self.pos) {
            Some(Token::Op(c)) => Some(*c),
            _ => None,
        }
    }

    fn sum(&mut self) -> Result<f64, String> {
        let mut acc = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek_op() {
            self.pos += 1;
            let rhs = self.product()?;
            acc = if op == '+' { acc + rhs } else { acc - rhs };
        }
        Ok(acc)
    }

    fn product(&mut self) -> Result<f64, String> {
        let mut acc = self.atom()?;
        while let Some(op @ ('*' | '/')) = self.peek_op() {
            self.pos += 1;
            let rhs = self.atom()?;
            acc = if op == '*' { acc * rhs } else { acc / rhs };
        }
        Ok(acc)
    }

    fn atom(&mut self) -> Result<f64, String> {
        self.depth += 1;
        let value = self.nested_atom();
        self.depth -= 1;
        value
    }

    fn nested_atom(&mut self) -> Result<f64, String> {
        if self.depth > MAX_NESTING {
            return Err(format!(
                "the expression nests deeper than {MAX_NESTING} levels of parentheses or signs"
            ));
        }
        let token = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        match token {
            Some(Token::Num(n)) => Ok(n),
            Some(Token::Op('-')) => Ok(-self.atom()?),
            Some(Token::Op('(')) => {
                let v = self.sum()?;
                match self.tokens.get(self.pos) {
                    Some(Token::Op(')')) => {
                        self.pos += 1;
                        Ok(v)
                    }
                    _ => Err("expected `)`".into()),
                }
            }
            Some(t) => Err(format!("unexpected `{t}`")),
            None => Err("expression ends too early".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn params() -> Params {
        let mut p = Params::new();
        p.insert("bg_seconds".into(), ParamValue::Int(12));
        p.insert("word".into(), ParamValue::Text("done".into()));
        p
    }

    #[test]
    fn substitutes_names_with_and_without_spaces() {
        assert_eq!(
            substitute("sleep {{bg_seconds}}; echo {{ word }}", &params()).unwrap(),
            "sleep 12; echo done"
        );
    }

    #[test]
    fn the_names_a_text_uses_are_listed_once() {
        assert_eq!(
            names_in("{{a}} + {{ b }} * {{a}} {{@agent-id:w}} {{open"),
            vec!["a", "b"]
        );
    }

    #[test]
    fn unknown_and_unclosed_names_are_errors() {
        let err = substitute("{{nope}}", &params()).unwrap_err();
        assert!(err.contains("unknown parameter `nope`") && err.contains("bg_seconds"));
        assert!(
            substitute("{{bg_seconds", &params())
                .unwrap_err()
                .contains("unclosed")
        );
    }

    #[test]
    fn a_lone_placeholder_keeps_its_type_in_json() {
        let v = serde_json::json!({"timeout": "{{bg_seconds}}", "cmd": "sleep {{bg_seconds}}"});
        let out = substitute_json(&v, &params()).unwrap();
        assert_eq!(out, serde_json::json!({"timeout": 12, "cmd": "sleep 12"}));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(eval_arithmetic(&deep).unwrap_err().contains("nests deeper"));
        assert!(eval_arithmetic(&"-".repeat(100_000)).is_err());
        let fine = format!("{}1{}", "(".repeat(60), ")".repeat(60));
        assert_eq!(eval_arithmetic(&fine), Ok(1.0));
    }

    #[test]
    fn arithmetic_respects_precedence_and_parentheses() {
        assert_eq!(eval_arithmetic("12 + 30").unwrap(), 42.0);
        assert_eq!(eval_arithmetic("2 + 3 * 4").unwrap(), 14.0);
        assert_eq!(eval_arithmetic("(2 + 3) * 4").unwrap(), 20.0);
        assert_eq!(eval_arithmetic("-1.5 + 3").unwrap(), 1.5);
        assert!(eval_arithmetic("1 +").is_err());
        assert!(eval_arithmetic("1 / 0").is_err());
        assert!(eval_arithmetic("ten").is_err());
        assert!(eval_arithmetic("").is_err());
    }

    proptest! {
        #[test]
        fn arithmetic_never_panics(s in "[0-9+*/(). -]{0,24}") {
            let _ = eval_arithmetic(&s);
        }

        #[test]
        fn substitution_never_panics(s in ".{0,40}") {
            let _ = substitute(&s, &params());
        }
    }
}
