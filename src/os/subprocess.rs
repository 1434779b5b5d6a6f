//! Synchronous subprocesses with a bound (npm, git, `--version`, a guard script): built with
//! `duct`, which feeds stdin and drains stdout and stderr on threads of its own, so a child
//! that writes a lot before it reads its input cannot deadlock us; a child past its bound is
//! killed.

use std::time::Duration;

/// A word for sh: as is when it is plain, else in single quotes.
pub fn shell_word(word: &str) -> String {
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%=,".contains(c));
    if plain && !word.is_empty() {
        word.to_string()
    } else {
        shell_quoted(word)
    }
}

/// A string as one sh word in single quotes, always (what `import` reads back as it was
/// written).
pub fn shell_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// What a bounded child did.
#[derive(Debug)]
pub enum Finished {
    /// It exited (any status); its output, captured.
    Exited(std::process::Output),
    /// It was still running at the bound, and was killed.
    TimedOut,
}

/// Runs `expr` (which should capture what the caller reads) to its end or to `limit`.
pub fn run_bounded(expr: &duct::Expression, limit: Duration) -> std::io::Result<Finished> {
    let handle = expr.unchecked().start()?;
    match handle.wait_timeout(limit)? {
        Some(_) => Ok(Finished::Exited(handle.into_output()?)),
        None => {
            let _ = handle.kill();
            Ok(Finished::TimedOut)
        }
    }
}

/// Runs `expr` (which should capture its stderr) and asks it to succeed within `limit`: the
/// inner error says why not, in the last lines of its stderr, or that `what` did not finish
/// within the bound. The outer error is a child that could not be started.
pub fn run_to_success(
    expr: &duct::Expression,
    limit: Duration,
    what: &str,
) -> std::io::Result<Result<(), String>> {
    Ok(match run_bounded(expr, limit)? {
        Finished::Exited(out) if out.status.success() => Ok(()),
        Finished::Exited(out) => Err(last_lines(&String::from_utf8_lossy(&out.stderr), 4)),
        Finished::TimedOut => Err(format!(
            "{what} did not finish within {} s",
            limit.as_secs()
        )),
    })
}

/// The last `n` non-empty lines of `text`, joined with ` | `.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_succeeds_or_says_why_not() {
        let run = |script: &str, limit: u64| {
            let expr = duct::cmd!("sh", "-c", script)
                .stdout_null()
                .stderr_capture();
            run_to_success(&expr, Duration::from_secs(limit), "the step").unwrap()
        };
        assert_eq!(run("exit 0", 10), Ok(()));
        assert_eq!(
            run("echo one >&2; echo two >&2; exit 1", 10),
            Err("one | two".into())
        );
        assert_eq!(
            run("sleep 5", 0),
            Err("the step did not finish within 0 s".into())
        );
    }

    #[test]
    fn output_is_captured_and_a_hang_is_bounded() {
        let out = run_bounded(
            &duct::cmd!("sh", "-c", "echo out; echo err >&2; exit 3")
                .stdout_capture()
                .stderr_capture(),
            Duration::from_secs(10),
        )
        .unwrap();
        let Finished::Exited(o) = out else {
            panic!("it exits")
        };
        assert_eq!(o.stdout, b"out\n");
        assert_eq!(o.stderr, b"err\n");
        assert_eq!(o.status.code(), Some(3));
        let started = std::time::Instant::now();
        let hang = run_bounded(&duct::cmd!("sleep", "30"), Duration::from_millis(200)).unwrap();
        assert!(matches!(hang, Finished::TimedOut));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_child_that_writes_a_lot_before_reading_does_not_deadlock() {
        // 1 MiB on stderr before it reads stdin: more than any pipe buffer.
        let out = run_bounded(
            &duct::cmd!("sh", "-c", "head -c 1048576 /dev/zero >&2; cat")
                .stdin_bytes(vec![b'x'; 1 << 20])
                .stdout_capture()
                .stderr_capture(),
            Duration::from_secs(20),
        )
        .unwrap();
        let Finished::Exited(o) = out else {
            panic!("it exits")
        };
        assert_eq!(o.stderr.len(), 1 << 20);
        assert_eq!(o.stdout.len(), 1 << 20);
    }
}
