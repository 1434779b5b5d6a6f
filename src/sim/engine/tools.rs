//! Tool calls: hooks and permissions around every call, the dispatch to each tool family
//! ([`super::bash`], [`super::agents`], [`super::stop`], [`super::monitor`],
//! [`super::tool_search`]), the message that carries the results back, and the few file tools.

use super::*;

impl Sim {
    /// Runs one answer's tool calls: their hooks and permissions, the calls themselves, and
    /// the message that carries the results back to the agent.
    pub(super) async fn run_tools(self: &Arc<Self>, a: usize, reply: &Reply, cancel: &Cancel) {
        let uses: Vec<Value> = reply.tool_uses().into_iter().cloned().collect();
        // The real CLI takes tens of milliseconds between an answer and its first tool hook;
        // pacing the same keeps concurrent agents' interleavings close to the real ones.
        if !self.cfg.pace.is_zero() {
            tokio::time::sleep(self.cfg.pace).await;
        }
        let outs = self.execute_calls(a, &uses, cancel).await;
        self.post_tool_hooks(a, &uses, &outs).await;
        self.deliver_results(a, &uses, &outs);
        // 2.1.332 takes some 35 ms from the last PostToolUse hook to the next model request;
        // without it a subagent's background agent outruns its starter's closing turn.
        if !self.cfg.pace.is_zero() {
            tokio::time::sleep(self.cfg.pace).await;
        }
    }

    /// Checks every call first (its input, then PreToolUse and the permission), then runs
    /// those allowed in order, unless the turn was cut short; counts each call as the agent's.
    /// Returns each call's result with how long it took.
    async fn execute_calls(
        self: &Arc<Self>,
        a: usize,
        uses: &[Value],
        cancel: &Cancel,
    ) -> Vec<(ToolOut, Duration)> {
        let mut denials = Vec::new();
        for u in uses {
            let denial = match self.invalid_input(u) {
                Some(error) => Some(error),
                None => self.pre_tool(a, u).await,
            };
            denials.push(denial);
        }
        let mut outs = Vec::new();
        for (u, denied) in uses.iter().zip(denials) {
            let started = Instant::now();
            let out = match denied {
                Some(reason) => ToolOut::error(reason),
                None if cancel.is_cancelled() => ToolOut::rejected(cancel.reason()),
                None => {
                    let out = self.exec_tool(a, u, cancel).await;
                    if cancel.is_cancelled() {
                        ToolOut::rejected(cancel.reason())
                    } else {
                        out
                    }
                }
            };
            {
                let mut st = self.state();
                let agent = &mut st.agents[a];
                agent.tool_uses += 1;
                let name = u["name"].as_str().unwrap_or("").to_string();
                if !agent.used_tools.contains(&name) {
                    agent.used_tools.push(name);
                }
            }
            outs.push((out, started.elapsed()));
        }
        outs
    }

    /// PostToolUse hooks for every call that did not fail.
    async fn post_tool_hooks(
        self: &Arc<Self>,
        a: usize,
        uses: &[Value],
        outs: &[(ToolOut, Duration)],
    ) {
        for (u, (out, took)) in uses.iter().zip(outs) {
            if out.is_error {
                continue;
            }
            let payload = self.payload(
                "PostToolUse",
                Some(a),
                json!({"tool_name": u["name"], "tool_input": u["input"], "tool_response": out.response,
                       "tool_use_id": u["id"], "duration_ms": took.as_millis() as u64}),
            );
            self.run_hooks("PostToolUse", u["name"].as_str(), &payload)
                .await;
        }
    }

    /// The user message with the results: printed (as the CLI prints it for this agent), kept
    /// in the agent's conversation and written to its transcript; a turn cut short adds the
    /// interruption placeholder after it.
    fn deliver_results(&self, a: usize, uses: &[Value], outs: &[(ToolOut, Duration)]) {
        let rejected = outs.iter().any(|(out, _)| out.rejected);
        let results: Vec<Value> = uses
            .iter()
            .zip(outs)
            .map(|(u, (out, _))| {
                json!({"tool_use_id": u["id"], "type": "tool_result", "content": out.content, "is_error": out.is_error})
            })
            .collect();
        let meta: Vec<Value> = uses
            .iter()
            .zip(outs)
            .map(|(u, (out, _))| if out.rejected {
                json!({"id": u["id"], "non_execution_kind": "user-rejected"})
            } else {
                json!({"id": u["id"], "permission_decision": {"decision": "accept", "source": "config", "reason_type": "rule"}})
            })
            .collect();
        let message = json!({"role": "user", "content": results});
        let mut line = json!({"type": "user", "message": message});
        let (transcript, printed) = self.remember_results(a, &message, outs, &mut line);
        line["timestamp"] = ids::iso_now().into();
        // A subagent's line carries the result only when it is an error (or cut short).
        if let Some((out, _)) = outs.first()
            && (a == 0 || rejected || out.is_error)
        {
            line["tool_use_result"] = out.response.clone();
        }
        // A subagent cut short prints its results without the permission metadata.
        if a == 0 || !rejected {
            line["tool_result_meta"] = Value::Array(meta);
        }
        if printed {
            self.out.line(line);
        }
        // Outside interactive sessions 2.1.332 keeps a subagent's tool result in its
        // transcript without `toolUseResult`, unless the result is an error.
        let mut extra = Map::new();
        if let Some((out, _)) = outs.first()
            && (a == 0 || self.cfg.interactive() || out.is_error || rejected)
        {
            extra.insert("toolUseResult".into(), out.response.clone());
        }
        transcript.row("user", Some(message), extra);
        if rejected {
            let placeholder = json!({"role": "user", "content": [{"type": "text", "text": texts::INTERRUPTED_FOR_TOOL}]});
            let mut line = json!({"type": "user", "message": placeholder});
            let printed = {
                let st = self.state();
                self.agent_fields(&st, a, &mut line)
            };
            line["timestamp"] = ids::iso_now().into();
            if printed {
                self.out.line(line);
            }
            transcript.row("user", Some(placeholder), Map::new());
        }
    }

    /// Keeps the results message in the agent's conversation, with what follows it there (a
    /// loaded tool's note, the interruption placeholder, the CLI's nudges); fills the printed
    /// line's agent fields. Returns the agent's transcript and whether the line is printed.
    fn remember_results(
        &self,
        a: usize,
        message: &Value,
        outs: &[(ToolOut, Duration)],
        line: &mut Value,
    ) -> (Arc<Transcript>, bool) {
        let rejected = outs.iter().any(|(out, _)| out.rejected);
        let mut st = self.state();
        let printed = self.agent_fields(&st, a, line);
        let agent = &mut st.agents[a];
        // Cut short: the placeholder rides in the same message as the results.
        let mut kept = message.clone();
        if let Some(blocks) = kept["content"].as_array_mut() {
            // ToolSearch's "Tool loaded." follows the results the model reads.
            blocks.extend(
                outs.iter()
                    .filter_map(|(out, _)| out.after)
                    .map(|text| json!({"type": "text", "text": text})),
            );
            if rejected {
                blocks.push(
                    json!({"type": "text", "text": format!("{}\n", texts::INTERRUPTED_FOR_TOOL)}),
                );
            }
        }
        agent.messages.push(kept);
        // 2.1.332 nudges the main agent once its fifth tool call in a row went by with
        // nothing said (since its last text or the user's last input).
        if a == 0 && agent.tools_since_text == texts::QUIET_NUDGE_AFTER {
            agent.messages.push(texts::quiet_nudge_message());
        }
        // Teammates read the agent types too (2.1.332, `teammate-task-wake`'s shape).
        if matches!(agent.kind, AgentKind::Subagent | AgentKind::Teammate)
            && !agent.agent_types_sent
        {
            agent.agent_types_sent = true;
            agent.messages.push(texts::agent_types_message());
        }
        (agent.transcript.clone(), printed)
    }

    /// The CLI's own check of a call's input, before any hook, with no PreToolUse: a TaskStop
    /// naming no task (2.1.332, `fuzz` seed 1 case 11), a foreground command that starts with
    /// a long sleep (2.1.332, `fuzz` seed 1 after the generator's lingering agents).
    fn invalid_input(&self, u: &Value) -> Option<String> {
        match u["name"].as_str() {
            Some("TaskStop") => self.unknown_task(&u["input"]),
            Some("Bash") if u["input"]["run_in_background"] != true => {
                long_leading_sleep(u["input"]["command"].as_str().unwrap_or(""))
            }
            _ => None,
        }
    }

    /// A TaskStop's refusal when it names no task.
    fn unknown_task(&self, input: &Value) -> Option<String> {
        let id = input["task_id"]
            .as_str()
            .or_else(|| input["shell_id"].as_str())
            .unwrap_or("");
        let known = self.state().tasks.iter().any(|t| t.id == id);
        (!known).then(|| format!("No task found with ID: {id}"))
    }

    /// PreToolUse hooks and the permission check; `Some(reason)` denies the call.
    pub(super) async fn pre_tool(self: &Arc<Self>, a: usize, u: &Value) -> Option<String> {
        let name = u["name"].as_str().unwrap_or("");
        let payload = self.payload(
            "PreToolUse",
            Some(a),
            json!({"tool_name": name, "tool_input": u["input"], "tool_use_id": u["id"]}),
        );
        let outcome = self.run_hooks("PreToolUse", Some(name), &payload).await;
        if let Some(block) = outcome.block {
            return Some(format!(
                "PreToolUse hook denied this tool call: {}",
                block.reason
            ));
        }
        if !self.permitted(name) {
            return Some(format!(
                "Claude requested permissions to use {name}, but you haven't granted it yet."
            ));
        }
        None
    }

    pub(super) fn permitted(&self, tool: &str) -> bool {
        const ALWAYS: &[&str] = &["Read", "ToolSearch", "ListAgents", "Skill", "TaskStop"];
        let base = |entry: &String| entry.split('(').next().unwrap_or("").to_string();
        let is = |entry: &String| {
            let b = base(entry);
            b == tool || (b == "Task" && tool == "Agent") || (b == "Agent" && tool == "Task")
        };
        if self.cfg.disallowed.iter().any(is) {
            return false;
        }
        self.cfg.skip_permissions
            || self.cfg.allowed.is_empty()
            || ALWAYS.contains(&tool)
            || self.cfg.allowed.iter().any(is)
    }

    pub(super) async fn exec_tool(
        self: &Arc<Self>,
        a: usize,
        u: &Value,
        cancel: &Cancel,
    ) -> ToolOut {
        let input = &u["input"];
        let tool_use_id = u["id"].as_str().unwrap_or("").to_string();
        match u["name"].as_str().unwrap_or("") {
            "Bash" => self.bash(a, input, &tool_use_id, cancel).await,
            "Agent" | "Task" => self.agent_tool(a, input, &tool_use_id).await,
            "SendMessage" => self.send_message(a, input),
            "ToolSearch" => self.tool_search(a, input),
            "Monitor" => self.monitor(a, input, &tool_use_id),
            "TaskStop" => self.task_stop_tool(a, input).await,
            "Read" => {
                let path = input["file_path"].as_str().unwrap_or("");
                match std::fs::read_to_string(path) {
                    Ok(text) => {
                        let numbered: String = text
                            .lines()
                            .enumerate()
                            .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
                            .collect();
                        ToolOut::ok(
                            numbered,
                            json!({"type": "text", "file": {"filePath": path, "content": text}}),
                        )
                    }
                    Err(e) => ToolOut::error(format!("cannot read {path}: {e}")),
                }
            }
            "Write" => {
                let path = input["file_path"].as_str().unwrap_or("");
                let content = input["content"].as_str().unwrap_or("");
                match std::fs::write(path, content) {
                    Ok(()) => ToolOut::ok(
                        format!("File created successfully at: {path}"),
                        json!({"type": "create", "filePath": path}),
                    ),
                    Err(e) => ToolOut::error(format!("cannot write {path}: {e}")),
                }
            }
            other => ToolOut::error(format!("No such tool available in claude-sim: {other}")),
        }
    }

    pub(super) fn bash_env(&self, background: bool) -> Vec<(String, String)> {
        let mut env = self.session_env();
        if background && let Some(kv) = &self.fault_env {
            env.push(kv.clone());
        }
        env
    }

    pub(super) fn session_env(&self) -> Vec<(String, String)> {
        vec![
            ("CLAUDECODE".into(), "1".into()),
            (
                "CLAUDE_CODE_ENTRYPOINT".into(),
                self.cfg.entrypoint().into(),
            ),
            ("CLAUDE_CODE_SESSION_ID".into(), self.cfg.session_id.clone()),
            ("CLAUDE_PID".into(), std::process::id().to_string()),
            ("CLAUDE_EFFORT".into(), "medium".into()),
            (
                "CLAUDE_PROJECT_DIR".into(),
                self.cfg.cwd.display().to_string(),
            ),
        ]
    }
}

/// A leading `sleep` this long or longer in a foreground command is refused (2.1.332).
const LONG_SLEEP_SECONDS: f64 = 25.0;

/// 2.1.332's refusal of a foreground command whose first part is `sleep N` with N of 25 s or
/// more: the model is told to wait with `run_in_background` or Monitor instead. Parts are split
/// at `;`, `&&`, `||`, `|`, `&` and newlines, as the CLI's own split does for plain commands.
pub(crate) fn long_leading_sleep(command: &str) -> Option<String> {
    let parts: Vec<&str> = command
        .split([';', '&', '|', '\n'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let (first, rest) = parts.split_first()?;
    let argument = first.strip_prefix("sleep")?;
    let shown = argument.trim();
    let digits = |c: char| c.is_ascii_digit() || c == '.';
    if !argument.starts_with(char::is_whitespace) || !shown.chars().all(digits) {
        return None;
    }
    let seconds: f64 = shown.parse().ok()?;
    if seconds < LONG_SLEEP_SECONDS {
        return None;
    }
    let what = if rest.is_empty() {
        format!("standalone sleep {shown}")
    } else {
        format!("sleep {shown} followed by: {}", rest.join(" "))
    };
    Some(format!(
        "Blocked: {what}. To wait for a condition, use Monitor with an until-loop (e.g. `until <check>; do sleep 2; done`). \
         To wait for a command you started, use run_in_background: true. Do not chain shorter sleeps to work around this block."
    ))
}

#[cfg(test)]
mod tests {
    use super::long_leading_sleep;

    #[test]
    fn a_long_leading_sleep_in_the_foreground_is_refused_as_2_1_332_words_it() {
        let refused = long_leading_sleep("sleep 38; exit 0").unwrap();
        assert!(
            refused.starts_with("Blocked: sleep 38 followed by: exit 0. To wait"),
            "{refused}"
        );
        assert!(
            long_leading_sleep("sleep 25")
                .unwrap()
                .starts_with("Blocked: standalone sleep 25.")
        );
        for allowed in [
            "sleep 24; exit 0",
            "true; sleep 38",
            "sleep 3m",
            "sleeper 30",
            "sleep30",
            "",
        ] {
            assert_eq!(long_leading_sleep(allowed), None, "{allowed}");
        }
    }
}
