//! Bash, in the foreground and in the background: a background shell's task lines, its end
//! and its notification, and the kill of a shell task (a Monitor's source is such a shell too,
//! see [`super::monitor`]).

use super::*;
use texts::MonitorEnd;

impl Sim {
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
            // 2.1.332 takes about 100 ms from the PreToolUse hook to a background command's
            // task_started: a race with another agent's turn is decided as on the CLI.
            if !self.cfg.pace.is_zero() {
                tokio::time::sleep(self.cfg.pace * 4).await;
            }
            return self.bash_background(a, command, description, tool_use_id);
        }
        let limit = Duration::from_millis(
            input["timeout"]
                .as_u64()
                .unwrap_or(120_000)
                .clamp(1000, 600_000),
        );
        let fg = self
            .bash_foreground(a, &command, &description, tool_use_id, limit, cancel)
            .await;
        foreground_result(&fg, limit)
    }

    /// Runs a foreground command to its end; one still running after [`SLOW_FOREGROUND`] is
    /// announced as a task (`task_started`), and then reports its end like one.
    async fn bash_foreground(
        self: &Arc<Self>,
        a: usize,
        command: &str,
        description: &str,
        tool_use_id: &str,
        limit: Duration,
        cancel: &Cancel,
    ) -> shell::Foreground {
        let task_id = ids::shell_task_id();
        let run_id = ids::run_id();
        let slow = Arc::new(AtomicBool::new(false));
        let on_slow = {
            let sim = self.clone();
            let slow = slow.clone();
            let (task_id, run_id, description, tool_use_id) = (
                task_id.clone(),
                run_id.clone(),
                description.to_string(),
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
            command,
            &self.cfg.cwd,
            &self.bash_env(false),
            limit,
            SLOW_FOREGROUND,
            on_slow,
            cancel.cancelled(),
        )
        .await;
        // A foreground command announced as a task reports its end too (H1 drops it).
        if slow.load(Ordering::SeqCst) && !self.cfg.profile.drops_notifications() {
            let mut line = json!({"type": "system", "subtype": "task_notification", "task_id": task_id,
                "run_id": run_id, "tool_use_id": tool_use_id,
                "status": foreground_status(&fg),
                "output_file": "", "summary": description});
            self.owned_field(a, &mut line);
            self.out.line(line);
        }
        fg
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

    /// Registers a background shell task (a command or a monitor's source) and announces it:
    /// the task list changes and `task_started` goes out. Returns its index.
    pub(super) fn start_shell_task(self: &Arc<Self>, a: usize, shell: ShellTask<'_>) -> usize {
        let run_id = ids::run_id();
        let ShellTask {
            task_id,
            command,
            description,
            tool_use_id,
            pid,
            output,
            kind,
        } = shell;
        let t = {
            let mut st = self.state();
            st.tasks.push(Task {
                id: task_id.clone(),
                run_id: run_id.clone(),
                kind: TaskKind::Shell {
                    command,
                    owner: a,
                    pid,
                    output,
                    kind,
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
        t
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
        let t = self.start_shell_task(
            a,
            ShellTask {
                task_id: task_id.clone(),
                command,
                description,
                tool_use_id,
                pid,
                output: output.clone(),
                kind: ShellKind::Bash,
            },
        );
        let sim = self.clone();
        self.spawn(async move {
            let ended = match child.wait().await {
                Ok(status) => Ended::from_status(status),
                Err(_) => Ended::Code(1),
            };
            sim.settle_signal(ended).await;
            sim.shell_ended(t, ended);
            sim.forget_pid(t);
        });
        ToolOut::ok(
            texts::bash_background_result(&task_id, &output.display().to_string()),
            json!({"stdout": "", "stderr": "", "interrupted": false, "isImage": false,
                   "noOutputExpected": false, "backgroundTaskId": task_id}),
        )
    }

    /// A signal that kills the whole tree (the harness ending the run) reaches a shell and
    /// this process at about the same time: on a shell's death by signal, wait (bounded) for
    /// ours, so that [`Self::shell_ended`] can tell the two apart.
    pub(super) async fn settle_signal(&self, ended: Ended) {
        if matches!(ended, Ended::Signal(_)) {
            let seen = self.signal_seen.notified();
            tokio::pin!(seen);
            seen.as_mut().enable();
            if !self.state().signalled {
                let _ = tokio::time::timeout(Duration::from_millis(200), seen).await;
            }
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
            let TaskKind::Shell {
                owner,
                output,
                kind,
                ..
            } = &task.kind
            else {
                return;
            };
            let summary = if *kind == ShellKind::Monitor {
                let how = if ended.success() {
                    MonitorEnd::Ended
                } else {
                    MonitorEnd::Failed(ended.code())
                };
                texts::monitor_end_summary(&task.description, how)
            } else if ended.success() {
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
                status: Some(
                    if ended.success() {
                        "completed"
                    } else {
                        "failed"
                    }
                    .into(),
                ),
                summary,
                note: None,
                result: None,
                event: None,
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

    /// A shell task's leader was reaped and what its end needed is done: nothing signals its
    /// pid again, since the kernel may give the number to another program's process (on a busy
    /// machine pids wrap within a minute or two, and the run's end kills every listed shell).
    pub(super) fn forget_pid(&self, t: usize) {
        let mut st = self.state();
        if let TaskKind::Shell { pid, .. } = &mut st.tasks[t].kind
            && let Some(pid) = pid.take()
        {
            shell::forget(pid);
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
                status: Some("stopped".into()),
                summary: format!("Task \"{}\" was stopped by main session", task.description),
                note: None,
                result: None,
                event: None,
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
            shell::kill_tree(pid, crate::os::procs::Signal::TERM);
            std::thread::spawn(move || {
                let deadline = Instant::now() + KILL_GRACE;
                while shell::alive(pid) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(25));
                }
                if shell::alive(pid) {
                    shell::kill_tree(pid, crate::os::procs::Signal::KILL);
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
}

/// The tool result of a foreground command: its output, or why it stopped (interrupted, timed
/// out, a non-zero exit), in the CLI's words.
fn foreground_result(fg: &shell::Foreground, limit: Duration) -> ToolOut {
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
        is_error,
        ..ToolOut::ok(content, response)
    }
}

/// The status a slow foreground command's notification line reports: cut short by an
/// interrupt or a stop, it reads `stopped` (as 2.1.332 reports a stopped subagent's command).
fn foreground_status(fg: &shell::Foreground) -> &'static str {
    if fg.interrupted {
        "stopped"
    } else if fg.ended.is_some_and(Ended::success) {
        "completed"
    } else {
        "failed"
    }
}

/// A background shell task about to be registered (`start_shell_task`).
pub(super) struct ShellTask<'a> {
    pub task_id: String,
    pub command: String,
    pub description: String,
    pub tool_use_id: &'a str,
    pub pid: Option<i32>,
    pub output: std::path::PathBuf,
    pub kind: ShellKind,
}
