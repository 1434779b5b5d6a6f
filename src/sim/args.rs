//! `claude-sim`'s flags: the subset of the real CLI's that the harness passes, with the same
//! spellings (`-p`, `--input-format`, `--output-format`, `--verbose`, `--permission-mode`,
//! `--allowedTools`, `--continue`, `--no-session-persistence`, `--permission-prompt-tool`,
//! accepted and unused), plus `--profile` (the harness uses `CLAUDE_SIM_PROFILE` instead).

use clap::Parser;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "claude-sim",
    about = "A stand-in for the Claude Code CLI with scripted behaviour profiles (wakeprobe)",
    disable_version_flag = true
)]
pub struct Args {
    /// Print mode: answer PROMPT (or stream-json input) and exit.
    #[arg(short = 'p', long = "print")]
    pub print: bool,
    /// The prompt (print mode).
    pub prompt: Option<String>,
    /// `text` or `stream-json` (a kept-alive session fed JSON lines on stdin).
    #[arg(long, default_value = "text")]
    pub input_format: String,
    /// `text`, `json` or `stream-json`.
    #[arg(long, default_value = "text")]
    pub output_format: String,
    #[arg(long)]
    pub verbose: bool,
    #[arg(long, default_value = "default")]
    pub permission_mode: String,
    /// Tools allowed without asking, space- or comma-separated (repeatable).
    #[arg(long = "allowedTools", visible_alias = "allowed-tools", num_args = 1..)]
    pub allowed_tools: Vec<String>,
    #[arg(long = "disallowedTools", visible_alias = "disallowed-tools", num_args = 1..)]
    pub disallowed_tools: Vec<String>,
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long)]
    pub dangerously_skip_permissions: bool,
    #[arg(long)]
    pub include_partial_messages: bool,
    /// Where the real CLI sends its permission requests (`stdio`: to the program driving it).
    /// Accepted and unused: the simulator runs what `--allowedTools` allows and asks nothing.
    #[arg(long)]
    pub permission_prompt_tool: Option<String>,
    /// Write no transcripts (print mode only), as the real CLI: the subagents' meta files are
    /// still written, and SubagentStop still names the transcript that is not there.
    #[arg(long)]
    pub no_session_persistence: bool,
    /// Take up the project's most recent session again.
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,
    /// The behaviour profile (default: `$CLAUDE_SIM_PROFILE`, else finalize-on-turn-end).
    #[arg(long)]
    pub profile: Option<String>,
    /// Print the version and exit.
    #[arg(short = 'v', long = "version")]
    pub version: bool,
}

impl Args {
    /// Parses the process arguments; `Err(code)` when the process should exit at once
    /// (`--version`, `--help`, or a usage error, already reported).
    pub fn parse_from_env() -> Result<Args, i32> {
        Args::parse_from_iter(std::env::args_os())
    }

    pub fn parse_from_iter<I, T>(args: I) -> Result<Args, i32>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        match Args::try_parse_from(args) {
            Ok(args) if args.version => {
                println!("{}-sim (Claude Code simulator)", super::EMULATED_VERSION);
                Err(0)
            }
            Ok(args) => Ok(args),
            Err(e) => {
                let code = if e.use_stderr() { 2 } else { 0 };
                let _ = e.print();
                Err(code)
            }
        }
    }

    /// The allowed tools as single names.
    pub fn allowed(&self) -> Vec<String> {
        split_tools(&self.allowed_tools)
    }

    pub fn disallowed(&self) -> Vec<String> {
        split_tools(&self.disallowed_tools)
    }

    pub fn stream_json_input(&self) -> bool {
        self.input_format == "stream-json"
    }

    pub fn stream_json_output(&self) -> bool {
        self.output_format == "stream-json"
    }
}

fn split_tools(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split([' ', ',']))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_no_session_persistence_as_the_real_cli_spells_it() {
        let a =
            Args::parse_from_iter(["claude-sim", "-p", "x", "--no-session-persistence"]).unwrap();
        assert!(a.no_session_persistence);
        let b = Args::parse_from_iter(["claude-sim", "-p", "x"]).unwrap();
        assert!(!b.no_session_persistence);
    }

    #[test]
    fn parses_what_the_harness_passes() {
        let a = Args::parse_from_iter([
            "claude-sim",
            "-p",
            "do it",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "default",
            "--allowedTools",
            "Bash Agent SendMessage",
        ])
        .unwrap();
        assert!(a.print && a.stream_json_output() && !a.stream_json_input());
        assert_eq!(a.prompt.as_deref(), Some("do it"));
        assert_eq!(a.allowed(), vec!["Bash", "Agent", "SendMessage"]);
        let a = Args::parse_from_iter([
            "claude-sim",
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "default",
            "--allowedTools",
            "Bash Agent",
        ])
        .unwrap();
        assert!(a.print && a.stream_json_input() && a.prompt.is_none());
        let a = Args::parse_from_iter([
            "claude-sim",
            "--permission-mode",
            "default",
            "--allowedTools",
            "Bash",
        ])
        .unwrap();
        assert!(!a.print);
    }
}
