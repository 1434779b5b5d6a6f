//! The CLI's own flags, as `--cli-arg` gives them: which ones would let a run reach outside
//! its sandbox.
//!
//! `--settings` takes a settings file or JSON whose `env` sets any variable of the CLI's
//! (`HOME`, `ANTHROPIC_BASE_URL`: what `scenario::env` refuses a scenario) and helpers that
//! run commands for credentials; `--mcp-config` starts servers or connects to any address. A
//! run's settings are the sandbox template's (`--template`), where a scenario's library keeps
//! them in view.

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

#[cfg(test)]
mod tests {
    use super::*;

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
