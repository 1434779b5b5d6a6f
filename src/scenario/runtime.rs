//! The runtimes a scenario can run on, and what each one means for the file format, in one
//! table: its name (as `runtime = "..."`, `[expect.NAME]` and `--runtime` write it), the driver
//! modes and control requests it has, what the scenario's verbs become on it (the fake API
//! answers with the runtime's own tool names and inputs), and which evidence it can offer at
//! all. A step, a driver setting or a check that a runtime cannot carry is refused where the
//! variant resolves, `file:line:col`, before anything runs; a check is never left to read the
//! absence of evidence the runtime cannot give as the absence of behaviour.
//!
//! The table sits beside the file format, at the bottom of the flow, as the driver-mode table
//! does: the resolver reads it for its refusals and translations. Everything else a runtime is
//! (its versions and installs, its sandbox, how each mode launches, feeds and closes it, how
//! its evidence becomes events, how its notification shows in a request) lives in
//! `crate::runtime`, one folder per runtime. A new runtime is one variant and one row here,
//! and one folder there.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::mode::DriverMode;
use super::plan::{CheckKind, Control, ToolCall};

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Default,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Runtime {
    /// Anthropic's Claude Code CLI (`@anthropic-ai/claude-code`), and the simulator standing in
    /// for it.
    #[default]
    ClaudeCode,
    /// opencode (`opencode-ai`), with background subagents on
    /// (`OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS=true`).
    Opencode,
}

/// Every runtime, in the order the documentation lists them.
pub const ALL_RUNTIMES: [Runtime; 2] = [Runtime::ClaudeCode, Runtime::Opencode];

/// What one runtime is, as far as a scenario file is concerned.
pub struct RuntimeRow {
    pub runtime: Runtime,
    /// How files and flags name it: `claude-code`, `opencode`.
    pub name: &'static str,
    /// How prose names it: `Claude Code`, `opencode`.
    pub title: &'static str,
    /// The driver modes it runs.
    pub modes: &'static [DriverMode],
    /// The control requests it can take in a session.
    pub controls: &'static [Control],
    /// It runs the project's hooks (the recorder's, the stall guard).
    pub hooks: bool,
    /// A `crash-cli` fault can restart it on the same session.
    pub restarts: bool,
    /// The evidence sources it offers, as a check's selector names them.
    pub sources: &'static [&'static str],
    /// Event kinds only the sources it lacks produce.
    pub unseen_kinds: &'static [&'static str],
    /// Built-in checks that read evidence it cannot give.
    pub unseen_presets: &'static [CheckKind],
    /// The scenario's tool call as this runtime's model would make it, or why it cannot.
    pub verbs: fn(&ToolCall) -> Result<ToolCall, String>,
    /// Variables the harness sets for this runtime beyond every run's own (`RunVar`): a
    /// scenario's `env` may not set them here.
    pub env_set: &'static [&'static str],
}

const TABLE: [RuntimeRow; 2] = [
    RuntimeRow {
        runtime: Runtime::ClaudeCode,
        name: "claude-code",
        title: "Claude Code",
        modes: &super::mode::ALL_MODES,
        controls: &[
            Control::Interrupt,
            Control::StopTask,
            Control::SendTaskMessage,
        ],
        hooks: true,
        restarts: true,
        sources: super::query::SOURCES,
        unseen_kinds: &[],
        unseen_presets: &[],
        verbs: |call| Ok(call.clone()),
        env_set: &[],
    },
    // Measured on opencode-ai 1.15.0 to 1.18.33: no hooks, no transcripts, no teammates; its
    // evidence is `run`'s JSON lines, the server's `/event` stream and an observer plugin's.
    RuntimeRow {
        runtime: Runtime::Opencode,
        name: "opencode",
        title: "opencode",
        modes: &[DriverMode::Print, DriverMode::Session],
        // `POST /session/{id}/abort`, of the main session or of a child's.
        controls: &[Control::Interrupt, Control::StopTask],
        hooks: false,
        restarts: false,
        sources: &["api", "stream", "events", "os", "driver"],
        unseen_kinds: &[
            "hook",
            "agent_finalized",
            "transcript_fact",
            "task_notified",
            "screen",
            "shown",
            "rejected_line",
            "approval_given",
            "permission_asked",
            "permission_answered",
            "to_cli",
            "control_response",
        ],
        unseen_presets: &[
            CheckKind::SubagentStopOnInterrupt,
            CheckKind::GuardBlockedOnce,
            CheckKind::StopsUnblocked,
            CheckKind::IdleTeammateDistinguishable,
            CheckKind::TranscriptStatus,
        ],
        verbs: opencode_verbs,
        // Its own folders in the sandbox: with them its HOME stays empty.
        env_set: &[
            "XDG_CONFIG_HOME",
            "XDG_DATA_HOME",
            "XDG_CACHE_HOME",
            "XDG_STATE_HOME",
        ],
    },
];

impl Runtime {
    pub fn row(self) -> &'static RuntimeRow {
        TABLE
            .iter()
            .find(|r| r.runtime == self)
            .expect("every runtime has a row (a test walks them)")
    }

    pub fn as_str(self) -> &'static str {
        self.row().name
    }

    pub fn title(self) -> &'static str {
        self.row().title
    }

    pub fn parse(name: &str) -> Option<Runtime> {
        ALL_RUNTIMES.into_iter().find(|r| r.as_str() == name)
    }

    /// Every name, for error messages.
    pub fn names() -> String {
        ALL_RUNTIMES.map(Runtime::as_str).join(", ")
    }

    /// Why a variant's driver cannot run on this runtime, if it cannot: its mode, its stall
    /// guard (a hook), a control request it sends, or a variable of its `env` the runtime's
    /// harness sets.
    pub fn refuses_driver(
        self,
        mode: DriverMode,
        guard: bool,
        controls: &[Control],
        env: &[&str],
    ) -> Option<String> {
        let row = self.row();
        if let Some(var) = env.iter().find(|v| row.env_set.contains(v)) {
            return Some(format!(
                "`env` sets `{var}`, which wakeprobe sets for {} (its folders in the sandbox)",
                row.title
            ));
        }
        if !row.modes.contains(&mode) {
            return Some(format!(
                "mode `{mode}` is not one {} runs (it runs {})",
                row.title,
                row.modes
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ));
        }
        if guard && !row.hooks {
            return Some(format!(
                "`guard = true` installs the stall guard, a Claude Code hook: {} runs no hooks",
                row.title
            ));
        }
        controls
            .iter()
            .find(|c| !row.controls.contains(c))
            .map(|c| {
                format!(
                    "the control request `{}` has no counterpart on {}",
                    c.as_str(),
                    row.title
                )
            })
    }

    /// Why a check's selector cannot be observed on this runtime, if it cannot.
    pub fn unseen(self, source: Option<&str>, kind: Option<&str>, hook: bool) -> Option<String> {
        let row = self.row();
        if let Some(s) = source.filter(|s| !row.sources.contains(s)) {
            return Some(format!("{} offers no `{s}` evidence", row.title));
        }
        if let Some(k) = kind.filter(|k| row.unseen_kinds.contains(k)) {
            return Some(format!("{} produces no `{k}` events", row.title));
        }
        (hook && !row.hooks).then(|| format!("{} runs no hooks", row.title))
    }
}

impl std::fmt::Display for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The scenario's verbs on opencode: a spawned agent is a `task` (with `background: true` for
/// one run in the background), a command is a foreground `bash`; every other tool is Claude
/// Code's own.
fn opencode_verbs(call: &ToolCall) -> Result<ToolCall, String> {
    let input = call.input.as_object().cloned().unwrap_or_default();
    let (tool, input) = match call.tool.as_str() {
        "Agent" | "Task" => ("task", opencode_task(&input)?),
        "Bash" => ("bash", opencode_bash(&input)?),
        "Monitor" => {
            return Err(
                "`Monitor` is Claude Code's: opencode has no tool that reports a command's lines as they come"
                    .into(),
            );
        }
        "SendMessage" | "TaskStop" | "TaskOutput" => {
            return Err(format!(
                "`{}` is Claude Code's: opencode has no tool that reaches a background task",
                call.tool
            ));
        }
        other => {
            return Err(format!(
                "`{other}` is not a verb opencode has: a scenario for both runtimes calls `Agent` (opencode's `task`) and `Bash` (opencode's `bash`)"
            ));
        }
    };
    Ok(ToolCall {
        tool: tool.into(),
        input,
        spawn: call.spawn.clone(),
        track: call.track.clone(),
    })
}

type Input = serde_json::Map<String, Value>;

/// `Agent` as opencode's `task`: description, prompt, the agent type (Claude's
/// `general-purpose` is opencode's `general`) and `background`, a JSON boolean.
fn opencode_task(input: &Input) -> Result<Value, String> {
    if let Some(key) = ["name", "team_name"]
        .iter()
        .find(|k| input.contains_key(**k))
    {
        return Err(format!(
            "an Agent call with `{key}` starts a teammate, Claude Code's: opencode has no teammates"
        ));
    }
    let known = [
        "description",
        "prompt",
        "subagent_type",
        "run_in_background",
    ];
    if let Some(key) = input.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!(
            "opencode's `task` has nothing for the Agent input `{key}` (it takes {})",
            known.join(", ")
        ));
    }
    let background = match input.get("run_in_background") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("`run_in_background` must be true or false".into()),
    };
    let agent_type = match input.get("subagent_type").and_then(Value::as_str) {
        None | Some("general-purpose") => "general",
        Some(other) => other,
    };
    let mut task = json!({
        "description": input.get("description").cloned().unwrap_or_else(|| json!("Background work")),
        "prompt": input.get("prompt").cloned().unwrap_or_default(),
        "subagent_type": agent_type,
    });
    if background {
        task["background"] = json!(true);
    }
    Ok(task)
}

/// `Bash` as opencode's `bash`: a foreground command (opencode's bash has no background flag:
/// background work on opencode is a command inside a background agent).
fn opencode_bash(input: &Input) -> Result<Value, String> {
    if input.get("run_in_background") == Some(&Value::Bool(true)) {
        return Err(
            "`run_in_background` Bash is Claude Code's: opencode's bash runs in the foreground only; run the command inside a background agent (`call = \"Agent\"` with `run_in_background = true`)"
                .into(),
        );
    }
    let known = ["command", "description", "timeout", "run_in_background"];
    if let Some(key) = input.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!(
            "opencode's `bash` has nothing for the Bash input `{key}` (it takes {})",
            known[..3].join(", ")
        ));
    }
    let mut bash = json!({
        "command": input.get("command").cloned().unwrap_or_default(),
        "description": input.get("description").cloned().unwrap_or_else(|| json!("Run a command")),
    });
    if let Some(t) = input.get("timeout") {
        bash["timeout"] = t.clone();
    }
    Ok(bash)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, input: Value) -> ToolCall {
        ToolCall {
            tool: tool.into(),
            input,
            spawn: None,
            track: None,
        }
    }

    /// Every runtime has one row; names round-trip; Claude Code takes every mode and verb as
    /// written.
    #[test]
    fn every_runtime_has_one_consistent_row() {
        for runtime in ALL_RUNTIMES {
            assert_eq!(TABLE.iter().filter(|r| r.runtime == runtime).count(), 1);
            assert_eq!(Runtime::parse(runtime.as_str()), Some(runtime));
            assert_eq!(serde_json::to_value(runtime).unwrap(), runtime.as_str());
            let row = runtime.row();
            assert!(row.modes.contains(&DriverMode::Print), "{runtime}");
            for source in row.sources {
                assert!(super::super::query::SOURCES.contains(source), "{source}");
            }
            // A runtime without hooks names the kinds only hooks produce.
            assert_eq!(row.hooks, !row.unseen_kinds.contains(&"hook"), "{runtime}");
        }
        assert_eq!(TABLE.len(), ALL_RUNTIMES.len());
        let monitor = call("Monitor", json!({"command": "x"}));
        assert_eq!(
            (Runtime::ClaudeCode.row().verbs)(&monitor).unwrap().tool,
            "Monitor"
        );
    }

    #[test]
    fn the_verbs_become_opencode_s_tools_or_are_refused_with_why() {
        let verbs = Runtime::Opencode.row().verbs;
        let agent = call(
            "Agent",
            json!({"description": "d", "prompt": "p", "run_in_background": true, "subagent_type": "general-purpose"}),
        );
        let task = verbs(&agent).unwrap();
        assert_eq!(task.tool, "task");
        assert_eq!(
            task.input,
            json!({"description": "d", "prompt": "p", "subagent_type": "general", "background": true})
        );
        let fg = verbs(&call("Agent", json!({"prompt": "p"}))).unwrap();
        assert!(fg.input.get("background").is_none(), "{fg:?}");
        let bash = verbs(&call("Bash", json!({"command": "sleep 1"}))).unwrap();
        assert_eq!(bash.tool, "bash");
        assert_eq!(bash.input["command"], "sleep 1");
        for (refused, says) in [
            (
                call("Bash", json!({"command": "x", "run_in_background": true})),
                "foreground only",
            ),
            (
                call("Agent", json!({"prompt": "p", "name": "mate"})),
                "teammates",
            ),
            (call("Monitor", json!({"command": "x"})), "Monitor"),
            (call("SendMessage", json!({})), "reaches a background task"),
            (call("Read", json!({})), "not a verb opencode has"),
        ] {
            let why = verbs(&refused).unwrap_err();
            assert!(why.contains(says), "{why}");
        }
    }

    #[test]
    fn a_driver_opencode_cannot_carry_is_refused() {
        let o = Runtime::Opencode;
        assert!(
            o.refuses_driver(DriverMode::Session, false, &[Control::Interrupt], &[])
                .is_none()
        );
        assert!(
            o.refuses_driver(DriverMode::Pty, false, &[], &[])
                .unwrap()
                .contains("`pty`")
        );
        assert!(
            o.refuses_driver(DriverMode::Print, true, &[], &[])
                .unwrap()
                .contains("guard")
        );
        assert!(
            o.refuses_driver(DriverMode::Session, false, &[Control::SendTaskMessage], &[])
                .unwrap()
                .contains("send_task_message")
        );
        assert!(
            o.refuses_driver(DriverMode::Print, false, &[], &["XDG_DATA_HOME"])
                .unwrap()
                .contains("XDG_DATA_HOME")
        );
        assert!(o.unseen(Some("hook"), None, false).is_some());
        assert!(o.unseen(None, Some("agent_finalized"), false).is_some());
        assert!(
            o.unseen(Some("api"), Some("model_request"), false)
                .is_none()
        );
        assert!(
            Runtime::ClaudeCode
                .unseen(Some("hook"), Some("hook"), true)
                .is_none()
        );
    }
}
