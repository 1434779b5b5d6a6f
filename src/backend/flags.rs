//! The CLI's own flags, as `--cli-arg` gives them: which ones the chosen CLI accepts (its
//! `--help` names them; asked once per binary, before anything is written), and which would
//! let a run reach outside its sandbox.
//!
//! `--settings` takes a settings file or JSON whose `env` sets any variable of the CLI's
//! (`HOME`, `ANTHROPIC_BASE_URL`: what `scenario::env` refuses a scenario) and helpers that
//! run commands for credentials; `--mcp-config` starts servers or connects to any address. A
//! run's settings are the sandbox template's (`--template`), where a scenario's library keeps
//! them in view.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Duration;

use super::Cli;
use crate::os::subprocess::{Finished, run_bounded};

/// Flags of the CLI's that reach outside the sandbox, with why.
const REACHING: &[(&str, &str)] = &[
    (
        "--settings",
        "its settings can set any variable of the CLI's environment (`env`: HOME, ANTHROPIC_BASE_URL) and run credential helpers; a run's settings are the sandbox template's `.claude/settings.json` (--template DIR)",
    ),
    (
        "--mcp-config",
        "an MCP server is a command or an address outside the sandbox; give the template's `.mcp.json` instead (--template DIR)",
    ),
];

/// The first `--cli-arg` that reaches outside the sandbox, and why.
pub fn reaching(args: &[String]) -> Option<(&str, &'static str)> {
    args.iter().find_map(|arg| {
        let name = arg.split('=').next().unwrap_or(arg);
        REACHING
            .iter()
            .find(|(flag, _)| *flag == name)
            .map(|(_, why)| (arg.as_str(), *why))
    })
}

/// How long a CLI's `--help` may take.
const HELP_LIMIT: Duration = Duration::from_secs(20);

/// The first `--cli-arg` flag `cli` does not name in its `--help`, or `None` when every one is
/// named (or the help cannot be read: then the run says what the CLI thinks).
pub fn unaccepted<'a>(cli: &Cli, args: &'a [String]) -> Option<&'a str> {
    let flags = help_flags(cli)?;
    args.iter()
        .filter(|a| looks_like_flag(a))
        .find(|a| !flags.contains(a.split('=').next().unwrap_or(a)))
        .map(String::as_str)
}

/// `-x` or `--name`, not a negative number given as a value.
fn looks_like_flag(arg: &str) -> bool {
    let rest = arg.trim_start_matches('-');
    arg.starts_with('-') && rest.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
}

/// The flags `cli --help` names, asked once per program in this invocation.
fn help_flags(cli: &Cli) -> Option<BTreeSet<String>> {
    static ASKED: Mutex<BTreeMap<Vec<String>, Option<BTreeSet<String>>>> =
        Mutex::new(BTreeMap::new());
    let mut command = vec![cli.program.display().to_string()];
    command.extend(cli.leading_args.iter().cloned());
    let mut asked = ASKED.lock().unwrap_or_else(|e| e.into_inner());
    asked
        .entry(command.clone())
        .or_insert_with(|| ask_help(&command))
        .clone()
}

fn ask_help(command: &[String]) -> Option<BTreeSet<String>> {
    let home = tempfile::tempdir().ok()?;
    let mut args = command[1..].to_vec();
    args.push("--help".into());
    let expr = duct::cmd(&command[0], &args)
        .full_env(crate::os::env::tool_env(home.path()))
        .stdin_null()
        .stdout_capture()
        .stderr_null();
    let Ok(Finished::Exited(out)) = run_bounded(&expr, HELP_LIMIT) else {
        return None;
    };
    let flags = flags_in(&String::from_utf8_lossy(&out.stdout));
    (out.status.success() && !flags.is_empty()).then_some(flags)
}

/// Every `-x` and `--name` a help text names.
fn flags_in(help: &str) -> BTreeSet<String> {
    help.split(|c: char| c.is_whitespace() || ",[]()<>=|".contains(c))
        .filter(|word| looks_like_flag(word))
        .map(|word| {
            let end = word
                .char_indices()
                .skip_while(|(_, c)| *c == '-')
                .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
                .map_or(word.len(), |(i, _)| i);
            word[..end].to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_of_a_help_text_are_read() {
        let help = "Options:\n  -p, --print   Print\n  --allowedTools, --allowed-tools <tools...>\n  --model=<m>  The model.\n  -d, --debug [filter]  e.g. --debug=hooks\n  Use -1 for none";
        let flags = flags_in(help);
        for f in [
            "-p",
            "--print",
            "--allowedTools",
            "--allowed-tools",
            "--model",
            "-d",
            "--debug",
        ] {
            assert!(flags.contains(f), "{f}: {flags:?}");
        }
        assert!(!flags.contains("-1"));
        assert!(looks_like_flag("--no-such") && !looks_like_flag("-1") && !looks_like_flag("opus"));
    }

    #[test]
    fn a_flag_the_cli_does_not_name_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let cli_at = |script: &str| {
            let path = dir.path().join(format!("cli-{}", script.len()));
            std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            Cli {
                kind: crate::backend::BackendKind::Claude,
                program: path,
                leading_args: vec![],
                version: "1.0.0".into(),
                spec: String::new(),
                channel: None,
            }
        };
        let cli = cli_at("echo '  --model <m>  The model'; echo '  --no-session-persistence'");
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(unaccepted(&cli, &args(&["--model", "opus"])), None);
        assert_eq!(
            unaccepted(&cli, &args(&["--model=opus", "--no-such"])),
            Some("--no-such")
        );
        // A help that cannot be read checks nothing.
        let silent = cli_at("exit 1");
        assert_eq!(unaccepted(&silent, &args(&["--no-such"])), None);
    }

    #[test]
    fn settings_and_mcp_servers_are_refused_in_either_spelling() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(reaching(&args(&["--no-session-persistence", "--model", "opus"])).is_none());
        let settings = args(&["--settings", r#"{"env":{"HOME":"/root"}}"#]);
        let (arg, why) = reaching(&settings).unwrap();
        assert_eq!(arg, "--settings");
        assert!(why.contains("env"));
        assert!(reaching(&args(&["--settings={}"])).is_some());
        assert!(reaching(&args(&["--mcp-config", "x.json"])).is_some());
    }
}
