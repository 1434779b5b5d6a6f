//! Durations lifted out of an imported script into `[params]`, so `--set` scales them: a
//! `sleep N` or `timeout N` in a Bash command (every one in a background command, the long ones
//! in the foreground) and long waits before an input. Equal durations of one kind share one
//! parameter.

use indexmap::IndexMap;

use crate::scenario::ParamValue;
use crate::scenario::params::MAX_SECONDS;

/// Foreground sleeps and input waits at least this long are lifted.
pub const LONG_SECONDS: f64 = 5.0;

/// What a lifted duration was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A sleep or timeout in a background command.
    Background,
    /// A long sleep or timeout in a foreground command.
    Foreground,
    /// The pause before a user input.
    Wait,
}

impl Kind {
    fn base(self) -> &'static str {
        match self {
            Kind::Background => "bg_seconds",
            Kind::Foreground => "sleep_seconds",
            Kind::Wait => "wait_seconds",
        }
    }
}

/// A lifted parameter: its value, its kind, and where it came from (for its comment).
#[derive(Debug, Clone)]
pub struct Lifted {
    pub value: f64,
    pub kind: Kind,
    pub uses: usize,
}

impl Lifted {
    pub fn param_value(&self) -> ParamValue {
        if self.value.fract() == 0.0 && self.value.abs() < 1e15 {
            ParamValue::Int(self.value as i64)
        } else {
            ParamValue::Float(self.value)
        }
    }
}

/// A delay as the scenario writes it.
#[derive(Debug, Clone, PartialEq)]
pub enum Delay {
    Seconds(f64),
    Param(String),
    /// `{{param}}` arithmetic.
    Expr(String),
}

#[derive(Debug, Default)]
pub struct Lifter {
    pub params: IndexMap<String, Lifted>,
}

impl Lifter {
    /// The command with its sleeps and timeouts lifted (all of them in a background command,
    /// the long ones otherwise).
    pub fn command(&mut self, command: &str, background: bool) -> String {
        let mut out = String::with_capacity(command.len());
        let mut rest = command;
        while let Some((start, word)) = next_duration_word(rest) {
            let after = &rest[start + word.len()..];
            let spaces = after.len() - after.trim_start_matches([' ', '\t']).len();
            let number = &after[spaces..];
            let len = number_len(number);
            let suffix = usize::from(number[len..].starts_with('s'));
            let ends = number[len + suffix..]
                .chars()
                .next()
                .is_none_or(|c| c.is_whitespace() || ";&|)`'\"".contains(c));
            let value = number[..len]
                .parse::<f64>()
                .ok()
                .filter(|_| spaces > 0 && ends);
            // Beyond a day a sleep means "never returns" (a hung command); a `..._seconds`
            // parameter cannot hold it, so it stays as written.
            let lift = value.filter(|v| (background || *v >= LONG_SECONDS) && *v <= MAX_SECONDS);
            out.push_str(&rest[..start + word.len() + spaces]);
            rest = match lift {
                Some(v) => {
                    let kind = if background {
                        Kind::Background
                    } else {
                        Kind::Foreground
                    };
                    out.push_str(&format!("{{{{{}}}}}", self.param(kind, v)));
                    &number[len + suffix..]
                }
                None => number,
            };
        }
        out.push_str(rest);
        out
    }

    /// A pause before an input: a parameter when long.
    pub fn delay(&mut self, seconds: f64) -> Delay {
        let rounded = (seconds * 10.0).round() / 10.0;
        if rounded >= LONG_SECONDS {
            Delay::Param(self.param(Kind::Wait, rounded.round()))
        } else {
            Delay::Seconds(rounded.max(0.0))
        }
    }

    fn param(&mut self, kind: Kind, value: f64) -> String {
        if let Some((name, p)) = self
            .params
            .iter_mut()
            .find(|(_, p)| p.kind == kind && p.value == value)
        {
            p.uses += 1;
            return name.clone();
        }
        let count = self.params.values().filter(|p| p.kind == kind).count();
        let name = match count {
            0 => kind.base().to_string(),
            n => format!("{}_{}", kind.base(), n + 1),
        };
        self.params.insert(
            name.clone(),
            Lifted {
                value,
                kind,
                uses: 1,
            },
        );
        name
    }

    /// The sum of the lifted durations as a `{{a}} + {{b}}` expression, and its default value.
    pub fn sum(&self) -> Option<(String, f64)> {
        if self.params.is_empty() {
            return None;
        }
        let expr = self
            .params
            .keys()
            .map(|k| format!("{{{{{k}}}}}"))
            .collect::<Vec<_>>()
            .join(" + ");
        Some((expr, self.params.values().map(|p| p.value).sum()))
    }
}

/// The next `sleep` or `timeout` that starts a shell word, and its offset.
fn next_duration_word(text: &str) -> Option<(usize, &'static str)> {
    let mut from = 0;
    loop {
        let (i, word) = ["sleep", "timeout"]
            .iter()
            .filter_map(|w| text[from..].find(w).map(|i| (from + i, *w)))
            .min()?;
        let starts_word = text[..i]
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace() || ";&|(`'\"".contains(c));
        if starts_word {
            return Some((i, word));
        }
        from = i + word.len();
    }
}

/// Length of a decimal number at the start of `s`.
fn number_len(s: &str) -> usize {
    let int = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if int == 0 {
        return 0;
    }
    match s[int..].strip_prefix('.') {
        Some(frac) => {
            let f = frac
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(frac.len());
            if f == 0 { int } else { int + 1 + f }
        }
        None => int,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_and_background_durations_become_parameters() {
        let mut l = Lifter::default();
        assert_eq!(
            l.command("sleep 300; echo done", true),
            "sleep {{bg_seconds}}; echo done"
        );
        assert_eq!(l.command("sleep 2", false), "sleep 2");
        assert_eq!(
            l.command("timeout 30s make test && sleep 300", false),
            "timeout {{sleep_seconds}} make test && sleep {{sleep_seconds_2}}"
        );
        assert_eq!(l.command("(sleep 300)", true), "(sleep {{bg_seconds}})");
        assert_eq!(
            l.command("sleep 100000", true),
            "sleep 100000",
            "a hang stays"
        );
        assert_eq!(l.command("sleep 1.5 &", true), "sleep {{bg_seconds_2}} &");
        assert_eq!(
            l.command("nosleep 300; sleep x; sleep 3m", true),
            "nosleep 300; sleep x; sleep 3m"
        );
        assert_eq!(l.params["bg_seconds"].uses, 2);
        assert_eq!(
            l.params["bg_seconds_2"].param_value(),
            ParamValue::Float(1.5)
        );
        assert_eq!(l.delay(2.04), Delay::Seconds(2.0));
        assert_eq!(l.delay(299.6), Delay::Param("wait_seconds".into()));
        assert_eq!(l.params["wait_seconds"].value, 300.0);
        let (expr, total) = l.sum().unwrap();
        assert_eq!(
            expr,
            "{{bg_seconds}} + {{sleep_seconds}} + {{sleep_seconds_2}} + {{bg_seconds_2}} + {{wait_seconds}}"
        );
        assert_eq!(total, 300.0 + 30.0 + 300.0 + 1.5 + 300.0);
    }
}
