//! Tool calls and the background tasks they start: hooks and permissions around every call,
//! Bash in the foreground and in the background (its task lines, its end, its kill), the
//! Agent tool (background subagents, foreground ones, teammates), SendMessage, TaskStop and
//! stop_task, and the few file tools.

use super::*;

impl Sim {
    pub(super) async fn run_tools(self: &Arc<Self>, a: usize, reply: &Reply, cancel: &Cancel) {
        let uses: Vec<Value> = reply.tool_uses().into_iter().cloned().collect();
        // The real CLI takes tens of milliseconds between an answer and its first tool hook;
        // pacing the same keeps concurrent agents' interleavings close to the real ones.
        if !self.cfg.pace.is_zero() {
            tokio::time::sleep(self.cfg.pace).await;
        }
        let mut denials = Vec::new();
        for u in &uses {
            denials.push(self.pre_tool(a, u).await);
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
        let rejected = outs.iter().any(|(out, _)| out.rejected);
        for (u, (out, took)) in uses.iter().zip(&outs) {
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
        let results: Vec<Value> = uses
            .iter()
            .zip(&outs)
            .map(|(u, (out, _))| {
                json!({"tool_use_id": u["id"], "type": "tool_result", "content": out.content, "is_error": out.is_error})
            })
            .collect();
        let meta: Vec<Value> = uses
            .iter()
            .zip(&outs)
            .map(|(u, (out, _))| if out.rejected {
                json!({"id": u["id"], "non_execution_kind": "user-rejected"})
            } else {
                json!({"id": u["id"], "permission_decision": {"decision": "accept", "source": "config", "reason_type": "rule"}})
            })
            .collect();
        let message = json!({"role": "user", "content": results});
        let mut line = json!({"type": "user", "message": message});
        let transcript = {
            let mut st = self.state();
            self.agent_fields(&st, a, &mut line);
            let agent = &mut st.agents[a];
            // Cut short: the placeholder rides in the same message as the results.
            let mut kept = message.clone();
            if rejected && let Some(blocks) = kept["content"].as_array_mut() {
                blocks.push(
                    json!({"type": "text", "text": format!("{}\n", texts::INTERRUPTED_FOR_TOOL)}),
                );
            }
            agent.messages.push(kept);
            if agent.kind == AgentKind::Subagent && !agent.agent_types_sent {
                agent.agent_types_sent = true;
                agent.messages.push(texts::agent_types_message());
            }
            agent.transcript.clone()
        };
        line["timestamp"] = ids::iso_now().into();
        if (a == 0 || rejected)
            && let Some((out, _)) = outs.first()
        {
            line["tool_use_result"] = out.response.clone();
        }
        // A subagent cut short prints its results without the permission metadata.
        if a == 0 || !rejected {
            line["tool_result_meta"] = Value::Array(meta);
        }
        self.out.line(line);
        let mut extra = Map::new();
        if let Some((out, _)) = outs.first() {
            extra.insert("toolUseResult".into(), out.response.clone());
        }
        transcript.row("user", Some(message), extra);
        if rejected {
            let placeholder = json!({"role": "user", "content": [{"type": "text", "text": texts::INTERRUPTED_FOR_TOOL}]});
            let mut line = json!({"type": "user", "message": placeholder});
            {
                let st = self.state();
                self.agent_fields(&st, a, &mut line);
            }
            line["timestamp"] = ids::iso_now().into();
            self.out.line(line);
            transcript.row("user", Some(placeholder), Map::new());
        }
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
            "TaskStop" => {
                let id = input["task_id"]
                    .as_str()
                    .or_else(|| input["shell_id"].as_str())
                    .unwrap_or("");
                match self.stop_task(id) {
                    Ok(after) => {
                        if let Some((owner, notice)) = after {
                            self.deliver(owner, notice);
                        }
                        ToolOut {
                            rejected: false,
                            content: format!("Successfully stopped task: {id}").into(),
                            is_error: false,
                            response: json!({"message": format!("Successfully stopped task: {id}"), "task_id": id}),
                        }
                    }
                    Err(e) => ToolOut::error(e),
                }
            }
            "Read" => {
                let path = input["file_path"].as_str().unwrap_or("");
                match std::fs::read_to_string(path) {
                    Ok(text) => {
                        let numbered: String = text
                            .lines()
                            .enumerate()
                            .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
                            .collect();
                        ToolOut {
                            rejected: false,
                            content: numbered.clone().into(),
                            is_error: false,
                            response: json!({"type": "text", "file": {"filePath": path, "content": text}}),
                        }
                    }
                    Err(e) => ToolOut::error(format!("cannot read {path}: {e}")),
                }
            }
            "Write" => {
                let path = input["file_path"].as_str().unwrap_or("");
                let content = input["content"].as_str().unwrap_or("");
                match std::fs::write(path, content) {
                    Ok(()) => ToolOut {
                        rejected: false,
                        content: format!("File created successfully at: {path}").into(),
                        is_error: false,
                        response: json!({"type": "create", "filePath": path}),
                    },
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

    pub(super) async fn bash(
        self: &Arc<Self>,
        a: usize,
        input: &Value,
        tool_use_id: &str,
        cancel: &Cancel,
    ) -> ToolOut {
        let Some(command) = input["command"].as_str().map(str::to_string) else {
            return ToolOut::error("InputValidationError: Bash needs a string `command`");
        };
        let description = input["description"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| command.chars().take(60).collect());
        if input["run_in_background"].as_bool() == Some(true) {
            return self.bash_background(a, command, description, tool_use_id);
        }
        let limit = Duration::from_millis(
            input["timeout"]
                .as_u64()
                .unwrap_or(120_000)
                .clamp(1000, 600_000),
        );
        let task_id = ids::shell_task_id();
        let run_id = ids::run_id();
        let slow = Arc::new(AtomicBool::new(false));
        let on_slow = {
            let sim = self.clone();
            let slow = slow.clone();
            let (task_id, run_id, description, tool_use_id) = (
                task_id.clone(),
                run_id.clone(),
                description.clone(),
                tool_use_id.to_string(),
            );
            move || {
                slow.store(true, Ordering::SeqCst);
                let mut line = json!({"type": "system", "subtype": "task_started", "task_id": task_id,
                    "run_id": run_id, "tool_use_id": tool_use_id, "description": description,
                    "is_backgrounded": false, "task_type": "local_bash"});
                sim.owner_fields(a, &mut line);
                sim.out.line(line);
            }
        };
        let fg = shell::run_foreground(
            &command,
            &self.cfg.cwd,
            &self.bash_env(false),
            limit,
            SLOW_FOREGROUND,
            on_slow,
            cancel.cancelled(),
        )
        .await;
        if slow.load(Ordering::SeqCst) {
            let mut line = json!({"type": "system", "subtype": "task_notification", "task_id": task_id,
                "run_id": run_id, "tool_use_id": tool_use_id,
                "status": if fg.ended.is_some_and(Ended::success) { "completed" } else { "failed" },
                "output_file": "", "summary": description});
            self.owned_field(a, &mut line);
            self.out.line(line);
        }
        let mut text = fg.stdout.trim_end().to_string();
        if !fg.stderr.trim().is_empty() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(fg.stderr.trim_end());
        }
        let response = json!({"stdout": fg.stdout, "stderr": fg.stderr, "interrupted": fg.interrupted || fg.timed_out,
                              "isImage": false, "noOutputExpected": false});
        let (content, is_error) = if fg.interrupted {
            (
                format!("{text}\n{}", texts::INTERRUPTED).trim().to_string(),
                true,
            )
        } else if fg.timed_out {
            (
                format!(
                    "Command timed out after {:.1}s\n{text}",
                    limit.as_secs_f64()
                )
                .trim()
                .to_string(),
                true,
            )
        } else {
            match fg.ended {
                Some(e) if e.success() => (
                    if text.is_empty() {
                        "(Bash completed with no output)".to_string()
                    } else {
                        text
                    },
                    false,
                ),
                Some(e) => (
                    format!("Exit code {}\n{text}", e.code()).trim().to_string(),
                    true,
                ),
                None => (text, true),
            }
        };
        ToolOut {
            rejected: false,
            content: content.into(),
            is_error,
            response,
        }
    }

    /// `owned_by_subagent` on a shell task's notification line, when a subagent owns it.
    pub(super) fn owned_field(&self, owner: usize, line: &mut Value) {
        if owner != 0 {
            line["owned_by_subagent"] = true.into();
        }
    }

    /// `owned_by_subagent` / `parent_task_id` on a shell task's `task_started`, when a
    /// subagent owns it.
    pub(super) fn owner_fields(&self, owner: usize, line: &mut Value) {
        if owner == 0 {
            return;
        }
        let id = self.state().agents[owner].id.clone();
        line["owned_by_subagent"] = true.into();
        line["parent_task_id"] = id.into();
    }

    pub(super) fn bash_background(
        self: &Arc<Self>,
        a: usize,
        command: String,
        description: String,
        tool_use_id: &str,
    ) -> ToolOut {
        let task_id = ids::shell_task_id();
        let output = self.task_dir.join(format!("{task_id}.output"));
        let mut child =
            match shell::spawn_background(&command, &self.cfg.cwd, &self.bash_env(true), &output) {
                Ok(c) => c,
                Err(e) => return ToolOut::error(format!("cannot start the command: {e}")),
            };
        let pid = child.id().map(|p| p as i32);
        let run_id = ids::run_id();
        let t = {
            let mut st = self.state();
            st.tasks.push(Task {
                id: task_id.clone(),
                run_id: run_id.clone(),
                kind: TaskKind::Shell {
                    command,
                    owner: a,
                    pid,
                    output: output.clone(),
                },
                description: description.clone(),
                tool_use_id: tool_use_id.to_string(),
                status: TaskStatus::Running,
                started: Instant::now(),
            });
            st.tasks.len() - 1
        };
        self.emit_tasks_changed();
        let mut line = json!({"type": "system", "subtype": "task_started", "task_id": task_id, "run_id": run_id,
            "tool_use_id": tool_use_id, "description": description, "is_backgrounded": true, "task_type": "local_bash"});
        self.owner_fields(a, &mut line);
        self.out.line(line);
        let sim = self.clone();
        self.spawn(async move {
            let ended = match child.wait().await {
                Ok(status) => Ended::from_status(status),
                Err(_) => Ended::Code(1),
            };
            // A signal that kills the whole tree (the harness ending the run) reaches the
            // shell and this process at about the same time: wait (bounded) to tell which.
            if matches!(ended, Ended::Signal(_)) {
                let seen = sim.signal_seen.notified();
                tokio::pin!(seen);
                seen.as_mut().enable();
                if !sim.state().signalled {
                    let _ = tokio::time::timeout(Duration::from_millis(200), seen).await;
                }
            }
            sim.shell_ended(t, ended);
        });
        ToolOut {
            rejected: false,
            content: texts::bash_background_result(&task_id, &output.display().to_string()).into(),
            is_error: false,
            response: json!({"stdout": "", "stderr": "", "interrupted": false, "isImage": false,
                             "noOutputExpected": false, "backgroundTaskId": task_id}),
        }
    }

    /// A background shell ended by itself.
    pub(super) fn shell_ended(self: &Arc<Self>, t: usize, ended: Ended) {
        // Ending anyway (a signal reached the whole process tree): it was killed with us.
        let ending = {
            let st = self.state();
            st.signalled || st.exit.is_some()
        };
        if ending {
            self.kill_shell(t);
            self.wake.notify_one();
            return;
        }
        let (owner, notice, task_id, run_id, tool_use_id, output) = {
            let mut st = self.state();
            let task = &mut st.tasks[t];
            if task.status != TaskStatus::Running {
                return; // killed: its killer reported it
            }
            task.status = if ended.success() {
                TaskStatus::Completed
            } else {
                TaskStatus::Failed
            };
            let TaskKind::Shell { owner, output, .. } = &task.kind else {
                return;
            };
            let summary = if ended.success() {
                format!(
                    "Background command \"{}\" completed (exit code 0)",
                    task.description
                )
            } else {
                format!(
                    "Background command \"{}\" failed with exit code {}",
                    task.description,
                    ended.code()
                )
            };
            let notice = Notice {
                task_id: task.id.clone(),
                run_id: task.run_id.clone(),
                tool_use_id: Some(task.tool_use_id.clone()),
                output_file: Some(output.display().to_string()),
                status: if ended.success() {
                    "completed"
                } else {
                    "failed"
                }
                .into(),
                summary,
                note: None,
                result: None,
                usage: None,
                tools_used: vec![],
            };
            (
                *owner,
                notice,
                task.id.clone(),
                task.run_id.clone(),
                task.tool_use_id.clone(),
                output.clone(),
            )
        };
        self.out.line(json!({"type": "system", "subtype": "task_updated", "task_id": task_id, "run_id": run_id,
            "patch": {"status": notice.status, "end_time": ids::now_ms()}}));
        if !self.cfg.profile.drops_notifications() {
            let mut line = json!({"type": "system", "subtype": "task_notification", "task_id": task_id,
                "run_id": run_id, "tool_use_id": tool_use_id, "status": notice.status,
                "output_file": output.display().to_string(), "summary": notice.summary});
            self.owned_field(owner, &mut line);
            self.out.line(line);
        }
        self.emit_tasks_changed();
        self.deliver(owner, notice);
        self.wake.notify_one();
    }

    /// Kills running background shells whose owner's phase passes `filter` (no delivery: the
    /// session is ending).
    pub(super) fn kill_running_shells(&self, filter: impl Fn(Phase) -> bool) {
        let targets: Vec<usize> = {
            let st = self.state();
            st.tasks
                .iter()
                .enumerate()
                .filter(|(_, t)| {
                    t.status == TaskStatus::Running
                        && matches!(&t.kind, TaskKind::Shell { owner, .. } if filter(st.agents[*owner].phase))
                })
                .map(|(i, _)| i)
                .collect()
        };
        for t in targets {
            self.kill_shell(t);
        }
    }

    /// Kills one shell task's tree and reports it (`killed`, notification `stopped`).
    pub(super) fn kill_shell(&self, t: usize) -> Option<(usize, Notice)> {
        let (pid, owner, notice, task_id, run_id, tool_use_id, output, description) = {
            let mut st = self.state();
            let task = &mut st.tasks[t];
            if task.status != TaskStatus::Running {
                return None;
            }
            task.status = TaskStatus::Killed;
            let TaskKind::Shell {
                owner, pid, output, ..
            } = &task.kind
            else {
                return None;
            };
            let notice = Notice {
                task_id: task.id.clone(),
                run_id: task.run_id.clone(),
                tool_use_id: Some(task.tool_use_id.clone()),
                output_file: None,
                status: "stopped".into(),
                summary: format!("Task \"{}\" was stopped by main session", task.description),
                note: None,
                result: None,
                usage: None,
                tools_used: vec![],
            };
            (
                *pid,
                *owner,
                notice,
                task.id.clone(),
                task.run_id.clone(),
                task.tool_use_id.clone(),
                output.clone(),
                task.description.clone(),
            )
        };
        if let Some(pid) = pid {
            shell::kill_tree(pid, crate::procs::Signal::TERM);
            std::thread::spawn(move || {
                let deadline = Instant::now() + KILL_GRACE;
                while shell::alive(pid) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(25));
                }
                if shell::alive(pid) {
                    shell::kill_tree(pid, crate::procs::Signal::KILL);
                }
            });
        }
        if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&output) {
            use std::io::Write;
            let _ = f.write_all(b"\n[killed]");
        }
        let updated = json!({"type": "system", "subtype": "task_updated", "task_id": task_id, "run_id": run_id,
            "patch": {"status": "killed", "end_time": ids::now_ms()}});
        let mut notified = json!({"type": "system", "subtype": "task_notification", "task_id": task_id,
            "run_id": run_id, "tool_use_id": tool_use_id, "status": "stopped",
            "output_file": output.display().to_string(), "summary": description});
        self.owned_field(owner, &mut notified);
        let notify = !self.cfg.profile.drops_notifications();
        // Killed because the CLI itself got a signal, 2.1.332 prints the notification first.
        if self.state().signalled {
            if notify {
                self.out.line(notified);
            }
            self.out.line(updated);
        } else {
            self.out.line(updated);
            if notify {
                self.out.line(notified);
            }
        }
        self.emit_tasks_changed();
        Some((owner, notice))
    }

    /// `stop_task` / TaskStop: a shell is killed; an agent's turn is cancelled and the agent
    /// stopped. Returns the notification its owner gets (delivered by the caller).
    pub(super) fn stop_task(
        self: &Arc<Self>,
        task_id: &str,
    ) -> Result<Option<(usize, Notice)>, String> {
        let found = {
            let st = self.state();
            st.tasks.iter().position(|t| t.id == task_id)
        };
        let Some(t) = found else {
            return Err(format!("No task found with ID: {task_id}"));
        };
        let agent = {
            let st = self.state();
            match &st.tasks[t].kind {
                TaskKind::Shell { .. } => None,
                TaskKind::Agent { agent } | TaskKind::Teammate { agent } => Some(*agent),
            }
        };
        match agent {
            None => Ok(self.kill_shell(t)),
            Some(a) => Ok(self.stop_agent(a, t)),
        }
    }

    /// Stops a subagent (stop_task on its task, TaskStop): its turn is cut short, its task
    /// `killed`; the parent reads that it "was stopped by user". No SubagentStop fires.
    pub(super) fn stop_agent(&self, a: usize, t: usize) -> Option<(usize, Notice)> {
        let (cancel, in_turn, transcript, lines, notice) = {
            let mut st = self.state();
            if st.tasks[t].status != TaskStatus::Running {
                return None;
            }
            st.tasks[t].status = TaskStatus::Killed;
            let task = &st.tasks[t];
            let (id, run_id, tool_use_id, description) = (
                task.id.clone(),
                task.run_id.clone(),
                task.tool_use_id.clone(),
                task.description.clone(),
            );
            let output = self
                .task_dir
                .join(format!("{id}.output"))
                .display()
                .to_string();
            let agent = &mut st.agents[a];
            let in_turn = agent.phase == Phase::Running;
            agent.phase = Phase::Killed;
            let notice = Notice {
                task_id: id.clone(),
                run_id: run_id.clone(),
                tool_use_id: (agent.runs == 1).then(|| tool_use_id.clone()),
                output_file: Some(output.clone()),
                status: "killed".into(),
                summary: format!("Agent \"{description}\" was stopped by user"),
                note: Some(texts::FINISHED_NOTE.into()),
                result: None,
                usage: None,
                tools_used: std::mem::take(&mut agent.used_tools),
            };
            (
                agent.cancel.clone(),
                in_turn,
                agent.transcript.clone(),
                (id, run_id, tool_use_id, description, output, agent.parent),
                notice,
            )
        };
        // A turn in flight ends on the interrupt placeholder itself (see `run_tools`).
        cancel.cancel(CancelReason::Stop);
        if !in_turn {
            transcript.row(
                "user",
                Some(json!({"role": "user", "content": [{"type": "text", "text": texts::INTERRUPTED}]})),
                Map::new(),
            );
        }
        let (id, run_id, tool_use_id, description, output, parent) = lines;
        self.out.line(
            json!({"type": "system", "subtype": "task_updated", "task_id": id, "run_id": run_id,
            "patch": {"status": "killed", "end_time": ids::now_ms()}}),
        );
        if !self.cfg.profile.drops_notifications() {
            self.out.line(json!({"type": "system", "subtype": "task_notification", "task_id": id, "run_id": run_id,
                "tool_use_id": tool_use_id, "status": "stopped", "output_file": output, "summary": description}));
        }
        self.emit_tasks_changed();
        Some((parent, notice))
    }

    pub(super) async fn agent_tool(
        self: &Arc<Self>,
        a: usize,
        input: &Value,
        tool_use_id: &str,
    ) -> ToolOut {
        let Some(prompt) = input["prompt"].as_str().map(str::to_string) else {
            return ToolOut::error("InputValidationError: Agent needs a string `prompt`");
        };
        let description = input["description"]
            .as_str()
            .unwrap_or("Agent task")
            .to_string();
        let subagent_type = input["subagent_type"]
            .as_str()
            .unwrap_or("general-purpose")
            .to_string();
        let name = input["name"].as_str().map(str::to_string);
        if let (Some(name), true) = (&name, self.cfg.interactive() && self.cfg.teams) {
            return self
                .spawn_teammate(a, name, prompt, description, subagent_type, tool_use_id)
                .await;
        }
        let background = input["run_in_background"].as_bool() != Some(false);
        let id = ids::agent_id();
        let transcript_path = self
            .transcript_path
            .with_extension("")
            .join("subagents")
            .join(format!("agent-{id}.jsonl"));
        let output = self.task_dir.join(format!("{id}.output"));
        let _ = std::os::unix::fs::symlink(&transcript_path, &output);
        let meta_path = transcript_path.with_extension("meta.json");
        let meta = json!({"agentType": subagent_type, "isBuiltIn": true, "launchedWithDefaults": true,
            "description": description, "toolUseId": tool_use_id, "spawnDepth": 1,
            "requestShape": if background { "background" } else { "foreground" },
            "requestNonInteractive": !self.cfg.interactive(), "model": texts::MODEL,
            "pickedEffortModel": texts::MODEL, "modelNotNamed": true, "finished": false});
        transcript::write_meta(&meta_path, &meta);
        let run_id = ids::run_id();
        let (new, depth) = {
            let mut st = self.state();
            let depth = st.agents[a].depth + 1;
            let transcript = Arc::new(Transcript::new(
                transcript_path.clone(),
                Some(id.clone()),
                &self.cfg.session_id,
                &self.cfg.cwd,
                &self.cfg.version,
            ));
            let new = st.agents.len();
            st.tasks.push(Task {
                id: id.clone(),
                run_id: run_id.clone(),
                kind: TaskKind::Agent { agent: new },
                description: description.clone(),
                tool_use_id: tool_use_id.to_string(),
                status: TaskStatus::Running,
                started: Instant::now(),
            });
            let task = st.tasks.len() - 1;
            st.agents.push(Agent::new(
                Identity {
                    id: id.clone(),
                    kind: AgentKind::Subagent,
                    name: name.clone(),
                    description: description.clone(),
                    agent_type: subagent_type.clone(),
                    prompt: prompt.clone(),
                    tool_use_id: Some(tool_use_id.to_string()),
                    parent: a,
                    depth,
                    task: Some(task),
                    header_id: Some(id.clone()),
                },
                Phase::Running,
                transcript,
                Some((meta_path, meta)),
            ));
            (new, depth)
        };
        self.emit_tasks_changed();
        self.out.line(json!({"type": "system", "subtype": "task_started", "task_id": id, "run_id": run_id,
            "tool_use_id": tool_use_id, "description": description, "subagent_type": subagent_type,
            "is_backgrounded": background, "spawn_depth": depth, "task_type": "local_agent", "prompt": prompt}));
        let output_text = output.display().to_string();
        let handle = self.launch(new, Opening::Spawn, Prelude::Start);
        if background {
            return ToolOut {
                rejected: false,
                content: json!([{"type": "text", "text": texts::agent_launched_result(&id, &output_text)}]),
                is_error: false,
                response: json!({"isAsync": true, "status": "async_launched", "agentId": id, "description": description,
                    "resolvedModel": texts::MODEL, "prompt": prompt, "outputFile": output_text,
                    "canReadOutputFile": true, "canContinueAgent": true}),
            };
        }
        let _ = handle.await;
        let text = self.state().agents[new].last_text.clone();
        ToolOut {
            rejected: false,
            content: json!([{"type": "text", "text": text}]),
            is_error: false,
            response: json!({"status": "completed", "prompt": prompt, "agentId": id,
                "content": [{"type": "text", "text": text}], "totalToolUseCount": 0}),
        }
    }

    pub(super) async fn spawn_teammate(
        self: &Arc<Self>,
        a: usize,
        name: &str,
        prompt: String,
        description: String,
        subagent_type: String,
        tool_use_id: &str,
    ) -> ToolOut {
        let id = ids::teammate_agent_id(name);
        let task_id = ids::teammate_task_id();
        let team = format!("session-{}", &self.cfg.session_id[..8]);
        let teammate_id = format!("{name}@{team}");
        let transcript_path = self
            .transcript_path
            .with_extension("")
            .join("subagents")
            .join(format!("agent-{id}.jsonl"));
        let output = self.task_dir.join(format!("{id}.output"));
        let _ = std::os::unix::fs::symlink(&transcript_path, &output);
        let meta_path = transcript_path.with_extension("meta.json");
        let meta = json!({"agentType": name, "isBuiltIn": false, "description": description, "name": name,
            "spawnDepth": 0, "requestShape": "background", "requestNonInteractive": true, "model": texts::MODEL,
            "pickedEffortModel": texts::MODEL, "taskKind": "in_process_teammate", "teamName": team,
            "color": "blue", "planModeRequired": false, "spawnedAgentType": subagent_type,
            "permissionMode": self.cfg.permission_mode});
        transcript::write_meta(&meta_path, &meta);
        let new = {
            let mut st = self.state();
            let transcript = Arc::new(Transcript::new(
                transcript_path,
                Some(id.clone()),
                &self.cfg.session_id,
                &self.cfg.cwd,
                &self.cfg.version,
            ));
            let new = st.agents.len();
            st.tasks.push(Task {
                id: task_id,
                run_id: ids::run_id(),
                kind: TaskKind::Teammate { agent: new },
                description: description.clone(),
                tool_use_id: tool_use_id.to_string(),
                status: TaskStatus::Running,
                started: Instant::now(),
            });
            let task = st.tasks.len() - 1;
            st.agents.push(Agent::new(
                Identity {
                    id: id.clone(),
                    kind: AgentKind::Teammate,
                    name: Some(name.to_string()),
                    description: description.clone(),
                    agent_type: name.to_string(),
                    prompt: prompt.clone(),
                    tool_use_id: Some(tool_use_id.to_string()),
                    parent: a,
                    depth: 0,
                    task: Some(task),
                    header_id: Some(teammate_id.clone()),
                },
                Phase::Running,
                transcript,
                Some((meta_path, meta)),
            ));
            new
        };
        self.launch(new, Opening::Spawn, Prelude::Start);
        ToolOut {
            rejected: false,
            content: texts::teammate_spawned_result(&id, name).into(),
            is_error: false,
            response: json!({"status": "teammate_spawned", "prompt": prompt, "agentId": id, "resolvedModel": texts::MODEL,
                "teammate_id": teammate_id, "agent_id": id, "agent_type": subagent_type, "model": texts::MODEL,
                "name": name, "color": "blue", "tmux_session_name": "in-process", "tmux_window_name": "in-process",
                "tmux_pane_id": "in-process", "team_name": team, "is_splitpane": false, "plan_mode_required": false,
                "outputFile": output.display().to_string()}),
        }
    }

    pub(super) fn send_message(self: &Arc<Self>, a: usize, input: &Value) -> ToolOut {
        let to = input["to"]
            .as_str()
            .or_else(|| input["recipient"].as_str())
            .unwrap_or("")
            .to_string();
        let message = input["message"]
            .as_str()
            .or_else(|| input["content"].as_str())
            .unwrap_or("")
            .to_string();
        let summary = input["summary"].as_str().unwrap_or("").to_string();
        let target = {
            let st = self.state();
            if matches!(to.as_str(), "team-lead" | "main" | "lead") {
                Some(0)
            } else {
                st.agents.iter().position(|x| {
                    x.name.as_deref() == Some(to.as_str()) || (!x.id.is_empty() && x.id == to)
                })
            }
        };
        let Some(target) = target.filter(|t| *t != a) else {
            return ToolOut::error(format!("No agent named `{to}` in this session"));
        };
        let sender = if a == 0 {
            "team-lead".to_string()
        } else {
            self.state().agents[a]
                .name
                .clone()
                .unwrap_or_else(|| "agent".into())
        };
        let to_teammate = target == 0 || self.state().agents[target].kind == AgentKind::Teammate;
        let text = if to_teammate {
            texts::teammate_message(&sender, &summary, &message)
        } else {
            message.clone()
        };
        self.send_to(target, text);
        let msg_id = ids::hex(16);
        let response = json!({"success": true, "message": format!("Message sent to {to}'s inbox"), "msg_id": msg_id,
            "routing": {"sender": sender, "target": format!("@{to}"), "targetColor": "blue",
                        "summary": summary, "content": message}});
        ToolOut {
            rejected: false,
            content: response.to_string().into(),
            is_error: false,
            response,
        }
    }

    /// Puts a message in an agent's inbox and wakes it if it is not in a turn.
    pub(super) fn send_to(self: &Arc<Self>, target: usize, text: String) {
        let wake = {
            let mut st = self.state();
            if target == 0 {
                st.agents[0].inbox.push(text);
                None
            } else {
                let agent = &mut st.agents[target];
                agent.inbox.push(text);
                match agent.phase {
                    Phase::Idle | Phase::Finalized | Phase::Held => {
                        let was = agent.phase;
                        agent.phase = Phase::Running;
                        Some(was)
                    }
                    _ => None,
                }
            }
        };
        match wake {
            Some(Phase::Finalized) => {
                self.launch(target, Opening::Inbox, Prelude::Rerun);
            }
            Some(Phase::Idle) => {
                self.launch(target, Opening::Inbox, Prelude::Start);
            }
            Some(_) => {
                self.launch(target, Opening::Inbox, Prelude::None);
            }
            None => {}
        }
        self.wake.notify_one();
    }
}
