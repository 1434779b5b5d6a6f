//! `--message-format json`: one JSON object a line on stdout, for scripts (a run started, a run
//! finished with its verdict and report, a setup failure, a scenario of `list`, a bisection
//! step, the invocation's summary), while the human output moves to stderr. Like cargo's
//! `--message-format json`, every line is a whole object with a `type`.
//!
//! The choice is made once per process ([`set_json`]); [`emit`] writes nothing in the human
//! format, and [`say`] prints a human line where it belongs (stdout, or stderr in JSON mode).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::classify::Outcome;
use crate::classify::result::Summary;

static JSON: AtomicBool = AtomicBool::new(false);

/// Chooses the process's message format.
pub fn set_json(json: bool) {
    JSON.store(json, Ordering::SeqCst);
}

/// True when stdout carries JSON messages (and human output goes to stderr).
pub fn json() -> bool {
    JSON.load(Ordering::SeqCst)
}

/// One message. Field names are part of the format; new fields may be added.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Message<'a> {
    /// A run began (its CLI is starting).
    RunStarted {
        scenario: &'a str,
        variant: &'a str,
        cli: String,
        repetition: u32,
    },
    /// A run ended and was judged; its folder is written.
    RunFinished {
        scenario: &'a str,
        variant: &'a str,
        cli: String,
        repetition: u32,
        verdict: Outcome,
        expect: Option<crate::scenario::Expected>,
        matches_expect: Option<bool>,
        /// Why: the deciding verdict's reason when the evidence does not decide, else its
        /// explanation.
        reason: String,
        /// The checks that did not meet their expectation, by name.
        failed_checks: Vec<&'a str>,
        /// The folder's invariants this run broke, by name.
        broken_invariants: Vec<&'a str>,
        /// Why the run does not match what its scenario expects, each reason in words.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        failures: Vec<String>,
        /// Why the run has an issue draft to file (`title.txt`): what the CLI did other than
        /// what the scenario wants.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        draft_because: Vec<String>,
        /// Where the failed checks put the fault, in a run of an integration under test
        /// (`cli`, `integration`); empty elsewhere.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        layers_at_fault: Vec<crate::checks::Layer>,
        duration_s: f64,
        dir: String,
        report: String,
    },
    /// A run could not be made (its CLI did not start, its folder could not be written).
    RunFailed {
        scenario: &'a str,
        variant: &'a str,
        cli: String,
        repetition: u32,
        message: &'a str,
    },
    /// A scenario of the library (`list`).
    Scenario {
        name: &'a str,
        seed: Option<&'a str>,
        variants: Vec<String>,
        summary: &'a str,
        path: String,
    },
    /// One version judged during a bisection.
    BisectStep {
        version: &'a str,
        verdict: Option<Outcome>,
        agreement: &'a str,
    },
    /// The bisection's finding.
    Bisected {
        scenario: &'a str,
        last_good: &'a str,
        first_bad: &'a str,
        paragraph: String,
    },
    /// The invocation's end: where it wrote, its summary, and its exit code.
    Summary {
        dir: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        matrix: Option<String>,
        summary: &'a Summary,
        exit_code: i32,
        /// Why the invocation ended before it ran what it was asked to (exit 3).
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

/// Set once the invocation's closing `summary` message went out.
static SUMMARY_EMITTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the invocation's closing `summary` message went out.
pub fn summary_emitted() -> bool {
    SUMMARY_EMITTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Writes one message line on stdout in the JSON format; nothing in the human format.
pub fn emit(message: &Message) {
    if matches!(message, Message::Summary { .. }) {
        SUMMARY_EMITTED.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    if !json() {
        return;
    }
    let line = serde_json::to_string(message).expect("messages serialize");
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Prints a line of human output: on stdout, or on stderr when stdout carries JSON. A reader
/// that went away (`wakeprobe list | head`) is no error.
pub fn say(text: impl std::fmt::Display) {
    let _ = if json() {
        writeln!(std::io::stderr().lock(), "{text}")
    } else {
        writeln!(std::io::stdout().lock(), "{text}")
    };
}

/// Text from a user's input made safe to echo on a terminal: control characters (a bell, an
/// escape sequence that recolours or moves the cursor, a line break inside a one-line
/// message) and the Unicode controls that reorder what follows (U+202E and kin) are written
/// as `\u{..}` escapes; everything else, other scripts included, is kept as it is. Every error
/// line goes through it (`main`), and so does every line that echoes a file's free text.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let hidden = |c: char| {
        c.is_control()
            || matches!(
                c,
                '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}'
            )
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    };
    if !text.chars().any(hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// [`printable`] line by line: the line breaks of a multi-line text are kept.
pub fn printable_lines(text: &str) -> String {
    text.split('\n')
        .map(printable)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether human output goes to a terminal (for colour).
pub fn human_is_terminal() -> bool {
    use std::io::IsTerminal;
    if json() {
        std::io::stderr().is_terminal()
    } else {
        std::io::stdout().is_terminal()
    }
}

/// The width of the terminal the human output goes to, when it goes to one.
pub fn human_width() -> Option<u16> {
    if !human_is_terminal() {
        return None;
    }
    let size = if json() {
        rustix::termios::tcgetwinsize(std::io::stderr())
    } else {
        rustix::termios::tcgetwinsize(std::io::stdout())
    };
    size.ok().map(|w| w.ws_col).filter(|c| *c > 0)
}

#[cfg(test)]
mod tests {
    use super::{printable, printable_lines};

    #[test]
    fn controls_and_reordering_marks_are_escaped_and_the_rest_kept() {
        assert_eq!(printable("bg-turn-end"), "bg-turn-end");
        assert_eq!(printable("a\u{7}b"), "a\\u{7}b");
        assert_eq!(printable("\u{1b}[31mred"), "\\u{1b}[31mred");
        assert_eq!(printable("x\u{202e}txt.exe"), "x\\u{202e}txt.exe");
        assert_eq!(printable("one\ntwo\t"), "one\\u{a}two\\u{9}");
        assert_eq!(printable("späť ✓ 日本"), "späť ✓ 日本");
        assert_eq!(printable_lines("a\u{7}\n  b"), "a\\u{7}\n  b");
    }
}
