//! Names for what an imported scenario refers to: spawned agents and tracked commands, made
//! from the text that describes them (lowercase, dashed, short) and unique within the scenario.

use std::collections::BTreeSet;

use crate::scenario::MAIN_AGENT;

/// The names given so far (agents and tracks share one space: a watch or a trigger names
/// either).
#[derive(Debug, Default)]
pub struct Namer {
    taken: BTreeSet<String>,
}

impl Namer {
    pub fn new() -> Namer {
        Namer {
            taken: [MAIN_AGENT.to_string()].into(),
        }
    }

    /// `wanted` made a valid name (or `fallback` if nothing is left of it), unique.
    pub fn name(&mut self, wanted: &str, fallback: &str) -> String {
        let mut base = slug(wanted);
        if base.is_empty() {
            base = fallback.to_string();
        }
        let mut name = base.clone();
        let mut n = 2;
        while self.taken.contains(&name) {
            name = format!("{base}-{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    /// Takes a name as it is, if `valid` and free (a name the harness gave in an earlier run).
    pub fn keep(&mut self, name: &str, valid: fn(&str) -> bool) -> Option<String> {
        (valid(name) && !self.taken.contains(name)).then(|| {
            self.taken.insert(name.to_string());
            name.to_string()
        })
    }
}

/// An agent name: lowercase letters, digits and `-`.
pub fn is_agent_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// A track name: letters, digits, `-` and `_`.
pub fn is_track_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Lowercase ASCII letters and digits, words joined by `-`, at most 30 characters (cut at a
/// word boundary).
pub fn slug(text: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            word.push(c.to_ascii_lowercase());
        } else if !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut out = String::new();
    for w in words {
        let extra = if out.is_empty() { w.len() } else { w.len() + 1 };
        if out.len() + extra > 30 {
            if out.is_empty() {
                out = w[..30].to_string();
            }
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&w);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_dashed_short_and_unique() {
        assert_eq!(slug("Background worker"), "background-worker");
        assert_eq!(
            slug("  Run the tests (unit + e2e)!"),
            "run-the-tests-unit-e2e"
        );
        assert_eq!(
            slug("A very long description that goes on and on"),
            "a-very-long-description-that"
        );
        assert_eq!(slug("Ünïcode only: ✓"), "n-code-only");
        let mut n = Namer::new();
        assert_eq!(n.name("Worker", "agent"), "worker");
        assert_eq!(n.name("worker", "agent"), "worker-2");
        assert_eq!(n.name("Main", "agent"), "main-2");
        assert_eq!(n.name("!!!", "agent"), "agent");
        assert_eq!(n.keep("bg_1", is_track_name), Some("bg_1".into()));
        assert_eq!(n.keep("bg_1", is_track_name), None);
        assert_eq!(n.keep("bg_2", is_agent_name), None);
        assert_eq!(n.keep("Bad Name", is_track_name), None);
    }
}
