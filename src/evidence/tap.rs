//! The CLI tap: the helper an integration (driver mode `command`) starts in place of the CLI
//! (`WAKEPROBE_CLI` names a script that runs it). It starts the real CLI as its child, passes
//! every byte through both ways unchanged, and reports each line on the run's event socket with
//! the moment it passed: the CLI's stdout lines (what reached the integration) and the lines
//! the integration wrote to the CLI's stdin (its prompts, its answers to permission requests).
//!
//! That is what lets a verdict name the layer at fault: a notification the CLI printed reached
//! the integration; one it never printed did not. Like the tracker, the tap never disturbs
//! what it carries: a line is passed on before it is reported, signals go to the CLI, and the
//! tap exits exactly as the CLI did.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use super::ExitDesc;
use super::clock::monotonic_ns;
use super::wire::WireMessage;

/// Largest line kept in the evidence; a longer one is passed on whole and reported cut.
const MAX_REPORTED: usize = 4 << 20;

/// Runs `program args` as the tapped CLI and returns how it ended (the caller exits the same
/// way). A CLI that cannot start is exit 127 with the reason on stderr, as a shell says it.
pub fn tap(socket: &Path, fallback: &Path, program: &str, args: &[String]) -> ExitDesc {
    tap_between(
        socket,
        fallback,
        program,
        args,
        std::io::stdin(),
        std::io::stdout(),
    )
}

/// The tap with its two ends given: `input` is passed to the CLI's stdin, its stdout to
/// `output`.
fn tap_between(
    socket: &Path,
    fallback: &Path,
    program: &str,
    args: &[String],
    input: impl Read + Send + 'static,
    output: impl Write + Send + 'static,
) -> ExitDesc {
    let signals = crate::os::procs::StopSignals::catch();
    let mut child = match Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!("wakeprobe cli tap: cannot run {program}: {e}");
            return ExitDesc::Code(127);
        }
    };
    signals.forward_to(child.id());
    let reporter = Reporter {
        socket: socket.to_path_buf(),
        fallback: fallback.to_path_buf(),
    };
    if let Some(to_cli) = child.stdin.take() {
        let reporter = reporter.clone();
        // Our stdin is the integration's pipe to the CLI; at its end the CLI's stdin closes.
        std::thread::spawn(move || pump(input, to_cli, true, &reporter));
    }
    let from_cli = child.stdout.take().map(|out| {
        let reporter = reporter.clone();
        std::thread::spawn(move || pump(out, output, false, &reporter))
    });
    let exit = match child.wait() {
        Ok(status) => ExitDesc::from_std(status),
        Err(_) => ExitDesc::Vanished,
    };
    // Every line the CLI printed is passed on before the tap goes (a child of the CLI may
    // still hold its stdout: the pump ends when they all close it).
    if let Some(pump) = from_cli {
        let _ = pump.join();
    }
    reporter.exited(&exit);
    exit
}

#[derive(Clone)]
struct Reporter {
    socket: std::path::PathBuf,
    fallback: std::path::PathBuf,
}

impl Reporter {
    fn report(&self, t_ns: u64, to_cli: bool, line: &[u8]) {
        self.send(WireMessage::CliLine {
            t_ns,
            to_cli,
            line: text_within(line, MAX_REPORTED),
        });
    }

    /// The CLI's own exit: the integration's is the supervisor's to report.
    fn exited(&self, exit: &ExitDesc) {
        self.send(WireMessage::TappedCliExited {
            t_ns: monotonic_ns(),
            exit: exit.clone(),
        });
    }

    fn send(&self, message: WireMessage) {
        if message.send(&self.socket).is_err() {
            message.append_to(&self.fallback);
        }
    }
}

/// A line as text (invalid UTF-8 replaced), cut to at most `limit` bytes on a character's
/// boundary.
fn text_within(line: &[u8], limit: usize) -> String {
    let mut text = String::from_utf8_lossy(line).into_owned();
    if text.len() > limit {
        let mut cut = limit;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text
}

/// Copies `from` to `to` line by line, each line passed on (and flushed) before it is reported.
/// Ends at the end of `from`, or when `to` is closed; dropping `to` then closes it.
fn pump(from: impl Read, mut to: impl Write, to_cli: bool, reporter: &Reporter) {
    let mut from = BufReader::new(from);
    let mut line = Vec::new();
    loop {
        line.clear();
        match from.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let t_ns = monotonic_ns();
        if to.write_all(&line).and_then(|()| to.flush()).is_err() {
            return;
        }
        let trimmed = line.strip_suffix(b"\n").unwrap_or(&line);
        let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
        if !trimmed.iter().all(u8::is_ascii_whitespace) {
            reporter.report(t_ns, to_cli, trimmed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte passes through unchanged, each non-blank line is reported in order with its
    /// direction, and a line that ends without a newline is still passed on and reported.
    #[test]
    fn lines_pass_through_unchanged_and_are_reported_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let reporter = Reporter {
            socket: dir.path().join("no-socket"),
            fallback: dir.path().join("fallback.jsonl"),
        };
        let input = b"{\"a\":1}\n\n{\"b\":\"\xc3\xa9\"}\r\nlast";
        let mut out = Vec::new();
        pump(&input[..], &mut out, true, &reporter);
        assert_eq!(out, input, "passed through byte for byte");
        let reported: Vec<WireMessage> = std::fs::read_to_string(dir.path().join("fallback.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let lines: Vec<(bool, String)> = reported
            .iter()
            .map(|m| match m {
                WireMessage::CliLine { to_cli, line, .. } => (*to_cli, line.clone()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            lines,
            vec![
                (true, "{\"a\":1}".to_string()),
                (true, "{\"b\":\"é\"}".to_string()),
                (true, "last".to_string()),
            ]
        );
        let times: Vec<u64> = reported.iter().map(WireMessage::t_ns).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    }

    /// A line longer than the limit is reported cut on a character's boundary; one at the
    /// limit whole.
    #[test]
    fn a_long_line_is_cut_on_a_character() {
        assert_eq!(text_within("abcé".as_bytes(), 5), "abcé");
        assert_eq!(text_within("abcé".as_bytes(), 4), "abc");
        assert_eq!(text_within("abcdé".as_bytes(), 4), "abcd");
        assert_eq!(text_within(b"ab\xffc", 10), "ab\u{fffd}c");
    }

    /// The tap exits as its CLI did, and a CLI that cannot start is 127.
    #[test]
    fn the_tap_ends_as_its_cli_did() {
        let dir = tempfile::tempdir().unwrap();
        let (socket, fallback) = (dir.path().join("s"), dir.path().join("f"));
        let run = |program: &str, args: &[&str]| {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            tap_between(&socket, &fallback, program, &args, &b""[..], Vec::new())
        };
        assert_eq!(run("sh", &["-c", "echo hi; exit 3"]), ExitDesc::Code(3));
        assert_eq!(run("/nonexistent/cli", &[]), ExitDesc::Code(127));
        let reported = std::fs::read_to_string(&fallback).unwrap();
        assert!(
            reported.contains(r#""to_cli":false,"line":"hi""#),
            "{reported}"
        );
    }
}
