//! The simulator: a stand-in CLI (`claude-sim`) with one behaviour profile per hypothesis.
//!
//! It is driven exactly like the real CLI: the same flags (`-p PROMPT`, `-p --input-format
//! stream-json`, or an interactive terminal), the project's hooks run with the payloads the real
//! CLI sends, model calls go to `ANTHROPIC_BASE_URL`, Bash runs real processes, and it prints
//! the same stream-json lines and writes the same transcripts. The default profile reproduces
//! what Claude Code 2.1.332 was measured doing (`../shared/claude-cli-notes.md`, the exploration
//! findings); every other profile changes one thing, so the classifier has ground truth for each
//! hypothesis, including behaviours no released version shows.
//!
//! Layout: [`args`] (flags), [`api`] (the Messages API client and its SSE stream), [`hooks`]
//! (settings, matching, running, decisions), [`shell`] (Bash processes and tree kills),
//! [`emit`] (stdout: stream-json lines or a plain screen), [`texts`] (everything the model
//! reads: prompts, tool schemas, tool results, notifications), [`transcript`] (session and
//! subagent JSONL files), [`engine`] (agents, turns, tasks, delivery, session end) and
//! [`input`] (stdin: stream-json lines, control requests, typed lines). Every wait is bounded.

pub mod api;
pub mod args;
pub mod catalog;
pub mod emit;
pub mod engine;
pub mod hooks;
pub mod ids;
pub mod input;
pub mod shell;
pub mod texts;
pub mod transcript;

use std::time::Duration;

/// Every profile, with its one-line description.
pub const PROFILES: &[(&str, &str)] = &[
    (
        "finalize-on-turn-end",
        "Claude Code 2.1.332 as measured: a subagent is finalized when its turn ends (SubagentStop, task completed) and its shell task is orphaned; while the session lives the shell's end re-invokes it, and an orphan still running 5 s after the last result (print) or after input closes (session) is killed; the top-level agent is re-invoked by its notifications",
    ),
    (
        "fixed",
        "a subagent that ends its turn with live background work is held (no SubagentStop) and resumed with the work's notification when it completes",
    ),
    (
        "drop-notification",
        "H1: like `fixed`, but background work that ends produces no notification at all (no task_notification line, nothing delivered); a held waiter is let go after the grace",
    ),
    (
        "queue-until-input",
        "H3: 2.1.332 mechanics, but every notification (a teammate's report too) waits for the next user input (stream-json or typed) and is delivered only after it",
    ),
    (
        "child-error",
        "H4: like `fixed`, but every background command fails on its own when it ends (exit 3, injected into its shells through BASH_ENV)",
    ),
    (
        "child-hang",
        "H4: like `fixed`, but every background command never ends (its shells block at exit, injected through BASH_ENV)",
    ),
    (
        "teammate-stuck-running",
        "seed 001, as 2.1.332: an idle teammate stays `running` in Stop/SubagentStop background_tasks (otherwise the default profile)",
    ),
    (
        "teammate-idle-flag",
        "an idle teammate is listed with status `idle` in background_tasks (otherwise the default profile)",
    ),
];

/// The version the simulator stands in for (the measurements it reproduces).
pub const EMULATED_VERSION: &str = crate::backend::PINNED_VERSION;

/// A behaviour profile: which one thing differs from the measured CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    FinalizeOnTurnEnd,
    Fixed,
    DropNotification,
    QueueUntilInput,
    ChildError,
    ChildHang,
    TeammateStuckRunning,
    TeammateIdleFlag,
}

/// What the simulator does to a background command's shells (child-error, child-hang).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildFault {
    /// Every shell exits with status 3 at its natural end.
    Fail,
    /// Every shell blocks at its exit, forever.
    Hang,
}

impl Profile {
    pub const ALL: [Profile; 8] = [
        Profile::FinalizeOnTurnEnd,
        Profile::Fixed,
        Profile::DropNotification,
        Profile::QueueUntilInput,
        Profile::ChildError,
        Profile::ChildHang,
        Profile::TeammateStuckRunning,
        Profile::TeammateIdleFlag,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Profile::FinalizeOnTurnEnd => "finalize-on-turn-end",
            Profile::Fixed => "fixed",
            Profile::DropNotification => "drop-notification",
            Profile::QueueUntilInput => "queue-until-input",
            Profile::ChildError => "child-error",
            Profile::ChildHang => "child-hang",
            Profile::TeammateStuckRunning => "teammate-stuck-running",
            Profile::TeammateIdleFlag => "teammate-idle-flag",
        }
    }

    pub fn parse(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == name)
    }

    /// A subagent that ends its turn with live background work is held instead of finalized.
    pub fn holds_waiting_subagents(self) -> bool {
        matches!(
            self,
            Profile::Fixed | Profile::DropNotification | Profile::ChildError | Profile::ChildHang
        )
    }

    /// No notification is ever produced.
    pub fn drops_notifications(self) -> bool {
        self == Profile::DropNotification
    }

    /// Notifications wait for the next user input.
    pub fn queues_notifications(self) -> bool {
        self == Profile::QueueUntilInput
    }

    pub fn child_fault(self) -> Option<ChildFault> {
        match self {
            Profile::ChildError => Some(ChildFault::Fail),
            Profile::ChildHang => Some(ChildFault::Hang),
            _ => None,
        }
    }

    /// Idle teammates are listed as `idle` rather than `running`.
    pub fn flags_idle_teammates(self) -> bool {
        self == Profile::TeammateIdleFlag
    }
}

/// Print mode: how long an orphaned shell may outlive the last result before it is killed
/// (measured: 5.05 s). `CLAUDE_SIM_ORPHAN_GRACE_MS` overrides it.
pub const DEFAULT_ORPHAN_GRACE: Duration = Duration::from_millis(5000);
/// Environment variable overriding [`DEFAULT_ORPHAN_GRACE`].
pub const GRACE_ENV: &str = "CLAUDE_SIM_ORPHAN_GRACE_MS";
/// Environment variable naming the profile (the harness sets it; `--profile` wins).
pub const PROFILE_ENV: &str = crate::os::env::RunVar::SimProfile.name();
/// Environment variable setting the pause before a tool call's hooks, in ms (default 25).
pub const PACE_ENV: &str = "CLAUDE_SIM_PACE_MS";
/// Environment variable bounding the simulator's whole life, in seconds (default one hour).
pub const LIFETIME_ENV: &str = "CLAUDE_SIM_MAX_SECONDS";

/// The `claude-sim` entry point; returns the process exit code.
pub fn main() -> i32 {
    let args = match args::Args::parse_from_env() {
        Ok(args) => args,
        Err(code) => return code,
    };
    let config = match engine::Config::from_args(&args) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("claude-sim: {message}");
            return 2;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("claude-sim: cannot start the async runtime: {e}");
            return 70;
        }
    };
    let lifetime = config.lifetime;
    let code = runtime.block_on(async move {
        match tokio::time::timeout(lifetime, engine::Sim::run(config)).await {
            Ok(code) => code,
            Err(_) => {
                eprintln!("claude-sim: gave up after {lifetime:?} ({LIFETIME_ENV})");
                shell::kill_all_children();
                124
            }
        }
    });
    // Background work is never waited for beyond this point: a task still running was killed.
    runtime.shutdown_timeout(Duration::from_millis(200));
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_profile_parses_and_back() {
        assert_eq!(PROFILES.len(), Profile::ALL.len());
        for (name, description) in PROFILES {
            let p = Profile::parse(name).unwrap_or_else(|| panic!("{name} does not parse"));
            assert_eq!(p.name(), *name);
            assert!(!description.contains('\n'), "one line each");
        }
        assert_eq!(Profile::parse("nope"), None);
    }
}
