//! The two evidence helpers the sandbox runs: the hook recorder and the task tracker.
//!
//! Both are the small `wakeprobe-helper` binary where one of the same build is beside
//! `wakeprobe`, and `wakeprobe` itself (hidden subcommands) where it is not, so they need
//! nothing else. Both are written to never disturb what they observe: the recorder prints
//! nothing and exits 0 whatever happens; the tracker runs the command as its child, passes
//! signals through, and exits exactly as the command did.

use std::io::Read;
use std::path::Path;

use super::ExitDesc;
use super::clock::monotonic_ns;
use super::wire::WireMessage;

/// Largest hook payload kept; a payload is a few KiB, this only bounds a runaway writer.
const MAX_PAYLOAD: u64 = 16 << 20;

/// Reads a hook payload from stdin and sends it to the harness; if the socket is gone, appends
/// it to `fallback` so the run still has it. Always succeeds from the CLI's point of view.
pub fn record_hook(socket: &Path, fallback: &Path) {
    record_hook_from(std::io::stdin(), socket, fallback);
}

/// [`record_hook`] with the payload read from `input`.
fn record_hook_from(input: impl Read, socket: &Path, fallback: &Path) {
    let t_ns = monotonic_ns();
    let mut payload = String::new();
    let _ = input.take(MAX_PAYLOAD).read_to_string(&mut payload);
    let message = WireMessage::Hook { t_ns, payload };
    if message.send(socket).is_err() {
        message.append_to(fallback);
    }
}

/// Runs `command` with bash as a tracked child: reports its start and end, forwards SIGTERM,
/// SIGINT and SIGHUP, and returns how it ended (the caller exits the same way).
pub fn track(socket: &Path, fallback: &Path, name: &str, command: &str) -> ExitDesc {
    let me = std::process::id();
    let start = WireMessage::TrackStart {
        t_ns: monotonic_ns(),
        name: name.to_string(),
        pid: me,
    };
    if start.send(socket).is_err() {
        start.append_to(fallback);
    }
    // Signals to the tracker are passed on to the command, which decides how to end.
    let signals = crate::os::procs::StopSignals::catch();
    let exit = match std::process::Command::new("bash")
        .arg("-c")
        .arg(command)
        .spawn()
    {
        Ok(mut child) => {
            signals.forward_to(child.id());
            match child.wait() {
                Ok(status) => ExitDesc::from_std(status),
                Err(_) => ExitDesc::Vanished,
            }
        }
        Err(e) => {
            eprintln!("wp-track: cannot run bash: {e}");
            ExitDesc::Code(127)
        }
    };
    let end = WireMessage::TrackEnd {
        t_ns: monotonic_ns(),
        name: name.to_string(),
        pid: me,
        exit: exit.clone(),
    };
    if end.send(socket).is_err() {
        end.append_to(fallback);
    }
    exit
}

/// This build of the sources: a helper of another build may speak another wire format.
pub const BUILD_ID: &str = env!("WAKEPROBE_BUILD_ID");

const HELPER_USAGE: &str = "usage: wakeprobe-helper hook-record|track|cli-tap --socket PATH --fallback PATH ... [-- PROGRAM ARGS...] | --build-id";

/// The helper binary's command line: `hook-record --socket S --fallback F`, `track --socket S
/// --fallback F NAME COMMAND` or `cli-tap --socket S --fallback F -- PROGRAM ARGS...`, the same
/// as `wakeprobe`'s hidden subcommands, or `--build-id`. Returns the exit code (the tracker and
/// the tap exit as their command did and do not return).
pub fn helper_main(args: Vec<std::ffi::OsString>) -> i32 {
    if args.len() == 1 && args[0] == "--build-id" {
        println!("{BUILD_ID}");
        return 0;
    }
    let Some(call) = HelperCall::parse(args) else {
        eprintln!("{HELPER_USAGE}");
        return 2;
    };
    let (socket, fallback) = (Path::new(&call.socket), Path::new(&call.fallback));
    match call.verb {
        Verb::HookRecord => {
            record_hook(socket, fallback);
            0
        }
        Verb::CliTap { program, args } => {
            exit_like(&super::tap::tap(socket, fallback, &program, &args))
        }
        Verb::Track { name, command } => exit_like(&track(socket, fallback, &name, &command)),
    }
}

/// A helper's command line, read.
#[derive(Debug, PartialEq)]
struct HelperCall {
    socket: std::ffi::OsString,
    fallback: std::ffi::OsString,
    verb: Verb,
}

#[derive(Debug, PartialEq)]
enum Verb {
    HookRecord,
    Track {
        name: String,
        command: String,
    },
    /// The CLI and its arguments, everything after `--` as given.
    CliTap {
        program: String,
        args: Vec<String>,
    },
}

impl HelperCall {
    /// `VERB --socket S --fallback F ...`; `None` for anything else.
    fn parse(args: Vec<std::ffi::OsString>) -> Option<HelperCall> {
        let mut args = args.into_iter();
        let verb = args.next();
        let (mut socket, mut fallback) = (None, None);
        let mut rest = Vec::new();
        let mut verbatim = false;
        while let Some(arg) = args.next() {
            match arg.to_str() {
                _ if verbatim => rest.push(arg),
                Some("--") => verbatim = true,
                Some("--socket") => socket = args.next(),
                Some("--fallback") => fallback = args.next(),
                _ => rest.push(arg),
            }
        }
        let text = |a: &std::ffi::OsString| a.to_string_lossy().into_owned();
        let verb = match (verb.as_ref().and_then(|v| v.to_str()), rest.as_slice()) {
            (Some("hook-record"), []) if !verbatim => Verb::HookRecord,
            (Some("track"), [name, command]) if !verbatim => Verb::Track {
                name: text(name),
                command: text(command),
            },
            (Some("cli-tap"), [program, cli_args @ ..]) if verbatim => Verb::CliTap {
                program: text(program),
                args: cli_args.iter().map(text).collect(),
            },
            _ => return None,
        };
        Some(HelperCall {
            socket: socket?,
            fallback: fallback?,
            verb,
        })
    }
}

/// Ends this process the way `exit` describes: same code, or the same signal re-raised.
pub fn exit_like(exit: &ExitDesc) -> ! {
    match exit {
        ExitDesc::Code(c) => std::process::exit(*c),
        ExitDesc::Signal(s) => {
            // Die by the same signal, as the command did.
            let _ = signal_hook::low_level::emulate_default_handler(*s);
            std::process::exit(128 + s)
        }
        ExitDesc::Vanished => std::process::exit(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<std::ffi::OsString> {
        list.iter().map(Into::into).collect()
    }

    /// With its socket gone, a hook's payload is kept in the fallback file, whole, for the
    /// harness to read at the end.
    #[test]
    fn a_payload_the_socket_cannot_take_is_kept_in_the_fallback_file() {
        let dir = tempfile::tempdir().unwrap();
        let fallback = dir.path().join("fallback.jsonl");
        let payload = r#"{"hook_event_name":"Stop"}"#;
        record_hook_from(payload.as_bytes(), &dir.path().join("gone.sock"), &fallback);
        let kept: WireMessage =
            serde_json::from_str(std::fs::read_to_string(&fallback).unwrap().trim()).unwrap();
        assert!(matches!(kept, WireMessage::Hook { payload: p, .. } if p == payload));
    }

    #[test]
    fn the_helper_refuses_a_command_line_it_does_not_know() {
        let paths = ["--socket", "/nonexistent/s", "--fallback", "/nonexistent/f"];
        for bad in [
            args(&[]),
            args(&["hook-record"]),
            args(&["hook-record", "--socket", "/nonexistent/s"]),
            args(&[&["track"][..], &paths[..]].concat()),
            args(&[&["track"][..], &paths[..], &["name"][..]].concat()),
            args(&[&["record"][..], &paths[..]].concat()),
            args(&[&["hook-record"][..], &paths[..], &["extra"][..]].concat()),
            args(&[&["cli-tap"][..], &paths[..], &["claude"][..]].concat()),
            args(&[&["cli-tap"][..], &paths[..], &["--"][..]].concat()),
            args(&[&["track"][..], &paths[..], &["--", "n", "c"][..]].concat()),
        ] {
            assert_eq!(helper_main(bad.clone()), 2, "{bad:?}");
        }
        assert_eq!(helper_main(args(&["--build-id"])), 0);
        // After `--`, everything is the CLI's, its own `--socket` included.
        let tap = HelperCall::parse(args(
            &[
                &["cli-tap"][..],
                &paths[..],
                &["--", "claude", "-p", "--socket", "x"][..],
            ]
            .concat(),
        ))
        .unwrap();
        assert_eq!(
            tap.verb,
            Verb::CliTap {
                program: "claude".into(),
                args: vec!["-p".into(), "--socket".into(), "x".into()],
            }
        );
        assert_eq!(tap.socket, "/nonexistent/s");
        let parsed = |words: &[&str]| {
            HelperCall::parse(args(&[&words[..1], &paths[..], &words[1..]].concat()))
        };
        assert_eq!(parsed(&["hook-record"]).unwrap().verb, Verb::HookRecord);
        assert_eq!(
            parsed(&["track", "bg", "sleep 1"]).unwrap().verb,
            Verb::Track {
                name: "bg".into(),
                command: "sleep 1".into(),
            }
        );
        // `--` belongs to the tap alone.
        assert_eq!(parsed(&["hook-record", "--"]), None);
        assert!(!BUILD_ID.is_empty());
    }
}
