//! Hooks as the real CLI runs them: read from `~/.claude/settings.json`, the project's
//! `.claude/settings.json` and `.claude/settings.local.json`; each matching command runs with
//! `sh -c`, the payload JSON on stdin, `CLAUDE_PROJECT_DIR` and the session's variables in its
//! environment, all of an event's commands at once. A command blocks (a Stop/SubagentStop, a
//! PreToolUse) by printing `{"decision":"block","reason":...}` or by exiting with status 2
//! (stderr is then the reason). Every hook has a deadline (its `timeout`, else 60 s).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// One configured command.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCommand {
    pub event: String,
    pub matcher: Option<String>,
    pub command: String,
    pub timeout: Duration,
}

/// Every configured hook command.
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    commands: Vec<HookCommand>,
}

/// What one command did.
#[derive(Debug, Clone)]
pub struct HookResult {
    pub command: String,
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// What an event's commands decided, together.
#[derive(Debug, Clone, Default)]
pub struct HookOutcome {
    pub results: Vec<HookResult>,
    /// The first block, with the command that asked for it.
    pub block: Option<Block>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub reason: String,
    pub command: String,
}

impl HookSet {
    /// Reads the three settings files (missing or broken files contribute nothing).
    pub fn load(project: &Path, home: &Path) -> HookSet {
        let files: [PathBuf; 3] = [
            home.join(".claude").join("settings.json"),
            project.join(".claude").join("settings.json"),
            project.join(".claude").join("settings.local.json"),
        ];
        let mut commands = Vec::new();
        for file in files {
            let Ok(bytes) = std::fs::read(&file) else {
                continue;
            };
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(settings) => commands.extend(parse_hooks(&settings)),
                Err(e) => eprintln!("claude-sim: ignoring {}: {e}", file.display()),
            }
        }
        HookSet { commands }
    }

    pub fn from_settings(settings: &Value) -> HookSet {
        HookSet {
            commands: parse_hooks(settings),
        }
    }

    /// The commands for an event whose matcher accepts `subject` (a tool name, a source, ...).
    pub fn matching(&self, event: &str, subject: Option<&str>) -> Vec<&HookCommand> {
        self.commands
            .iter()
            .filter(|c| c.event == event && matches(c.matcher.as_deref(), subject))
            .collect()
    }

    /// Runs an event's matching commands concurrently and gathers their decisions.
    pub async fn run(
        &self,
        event: &str,
        subject: Option<&str>,
        payload: &Value,
        cwd: &Path,
        env: &[(String, String)],
    ) -> HookOutcome {
        let commands: Vec<HookCommand> =
            self.matching(event, subject).into_iter().cloned().collect();
        if commands.is_empty() {
            return HookOutcome::default();
        }
        let input = payload.to_string();
        let handles: Vec<_> = commands
            .into_iter()
            .map(|c| {
                let input = input.clone();
                let cwd = cwd.to_path_buf();
                let env = env.to_vec();
                tokio::spawn(async move { run_one(&c, &input, &cwd, &env).await })
            })
            .collect();
        let mut outcome = HookOutcome::default();
        for handle in handles {
            let Ok(result) = handle.await else { continue };
            if outcome.block.is_none() {
                outcome.block = decision(&result);
            }
            outcome.results.push(result);
        }
        outcome
    }
}

fn parse_hooks(settings: &Value) -> Vec<HookCommand> {
    let mut out = Vec::new();
    let Some(events) = settings.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, groups) in events {
        for group in groups.as_array().into_iter().flatten() {
            let matcher = group
                .get("matcher")
                .and_then(Value::as_str)
                .map(str::to_string);
            for hook in group
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if hook
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("command")
                    != "command"
                {
                    continue;
                }
                let Some(command) = hook.get("command").and_then(Value::as_str) else {
                    continue;
                };
                let timeout = hook
                    .get("timeout")
                    .and_then(Value::as_f64)
                    .filter(|t| *t > 0.0)
                    .map(Duration::from_secs_f64)
                    .unwrap_or(DEFAULT_TIMEOUT);
                out.push(HookCommand {
                    event: event.clone(),
                    matcher: matcher.clone(),
                    command: command.to_string(),
                    timeout,
                });
            }
        }
    }
    out
}

/// `*`, an empty or absent matcher match everything; otherwise `A|B` alternatives, each an
/// exact name (regular-expression matchers are taken literally).
fn matches(matcher: Option<&str>, subject: Option<&str>) -> bool {
    match (matcher.map(str::trim), subject) {
        (None | Some("") | Some("*"), _) => true,
        (Some(_), None) => true,
        (Some(m), Some(s)) => m
            .split('|')
            .any(|alt| alt.trim() == s || alt.trim() == ".*"),
    }
}

async fn run_one(
    hook: &HookCommand,
    input: &str,
    cwd: &Path,
    env: &[(String, String)],
) -> HookResult {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(&hook.command)
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return HookResult {
                command: hook.command.clone(),
                exit_code: None,
                stdout: String::new(),
                stderr: format!("cannot run the hook: {e}"),
            };
        }
    };
    let pid = child.id();
    if let Some(mut stdin) = child.stdin.take() {
        let input = input.as_bytes().to_vec();
        // A hook that never reads its stdin must not block us: write on the side.
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        });
    }
    match tokio::time::timeout(hook.timeout, child.wait_with_output()).await {
        Ok(Ok(out)) => HookResult {
            command: hook.command.clone(),
            exit_code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).to_string(),
        },
        Ok(Err(e)) => HookResult {
            command: hook.command.clone(),
            exit_code: None,
            stdout: String::new(),
            stderr: e.to_string(),
        },
        Err(_) => {
            if let Some(pid) = pid {
                crate::os::procs::signal_group(pid, crate::os::procs::Signal::KILL);
            }
            HookResult {
                command: hook.command.clone(),
                exit_code: None,
                stdout: String::new(),
                stderr: format!("hook timed out after {:?}", hook.timeout),
            }
        }
    }
}

/// A command's decision: a JSON `decision: block` (or `continue: false`), or exit status 2.
fn decision(result: &HookResult) -> Option<Block> {
    let block = |reason: String| {
        Some(Block {
            reason,
            command: result.command.clone(),
        })
    };
    if result.exit_code == Some(2) {
        return block(result.stderr.trim().to_string());
    }
    if result.exit_code != Some(0) {
        return None;
    }
    let text = result.stdout.trim();
    let json: Value = serde_json::from_str(text).ok().or_else(|| {
        text.lines()
            .last()
            .and_then(|l| serde_json::from_str(l.trim()).ok())
    })?;
    let reason = || {
        json.get("reason")
            .or_else(|| json.get("stopReason"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    if json.get("decision").and_then(Value::as_str) == Some("block") {
        return block(reason());
    }
    let denied = json
        .pointer("/hookSpecificOutput/permissionDecision")
        .and_then(Value::as_str)
        == Some("deny");
    if denied {
        let why = json
            .pointer("/hookSpecificOutput/permissionDecisionReason")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(reason);
        return block(why);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_matchers_and_commands() {
        let set = HookSet::from_settings(&json!({"hooks": {
            "Stop": [{"matcher": "*", "hooks": [{"type": "command", "command": "echo a"}]}],
            "PreToolUse": [{"matcher": "Bash|Agent", "hooks": [{"type": "command", "command": "echo b", "timeout": 5}]}]
        }}));
        assert_eq!(set.matching("Stop", None).len(), 1);
        assert_eq!(set.matching("PreToolUse", Some("Bash")).len(), 1);
        assert_eq!(set.matching("PreToolUse", Some("Read")).len(), 0);
        assert_eq!(
            set.matching("PreToolUse", Some("Agent"))[0].timeout,
            Duration::from_secs(5)
        );
    }

    #[tokio::test]
    async fn a_block_is_read_from_json_or_exit_2_and_payloads_reach_stdin() {
        let dir = tempfile::tempdir().unwrap();
        let set = HookSet::from_settings(&json!({"hooks": {
            "Stop": [{"hooks": [
                {"type": "command", "command": "cat > \"$CLAUDE_PROJECT_DIR/payload.json\"; printf '%s' '{\"decision\":\"block\",\"reason\":\"keep going\"}'"}
            ]}],
            "SubagentStop": [{"hooks": [{"type": "command", "command": "echo nope >&2; exit 2"}]}],
            "SessionEnd": [{"hooks": [{"type": "command", "command": "exit 1"}]}]
        }}));
        let env = vec![(
            "CLAUDE_PROJECT_DIR".to_string(),
            dir.path().display().to_string(),
        )];
        let out = set
            .run("Stop", None, &json!({"x": 1}), dir.path(), &env)
            .await;
        assert_eq!(out.block.unwrap().reason, "keep going");
        let written = std::fs::read_to_string(dir.path().join("payload.json")).unwrap();
        assert_eq!(written, r#"{"x":1}"#);
        let out = set
            .run("SubagentStop", None, &json!({}), dir.path(), &env)
            .await;
        assert_eq!(out.block.unwrap().reason, "nope");
        let out = set
            .run("SessionEnd", None, &json!({}), dir.path(), &env)
            .await;
        assert!(out.block.is_none());
        assert_eq!(out.results[0].exit_code, Some(1));
    }
}
