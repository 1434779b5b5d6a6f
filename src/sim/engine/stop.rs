//! Stopping a task from outside: the driver's `stop_task` (the user) and the model's TaskStop.
//! A shell (a Monitor's source included) is killed; an agent's turn is cut short and the agent
//! stopped, with no SubagentStop. TaskStop answers in 2.1.332's words: a JSON text naming the
//! task, its type and its command (an agent's description).

use super::*;
use texts::StopBy;

/// How many paces (see `Config::pace`) the TaskStop tool takes after the kill.
const STOP_PACE_FACTOR: u32 = 4;

impl Sim {
    /// The TaskStop tool: stops the task and tells its owner (a `killed` notification). A
    /// subagent may not stop another agent, not even one it started (2.1.332's refusal).
    pub(super) async fn task_stop_tool(self: &Arc<Self>, a: usize, input: &Value) -> ToolOut {
        let id = input["task_id"]
            .as_str()
            .or_else(|| input["shell_id"].as_str())
            .unwrap_or("");
        let refused = {
            let st = self.state();
            let other_agent = st.tasks.iter().any(|t| {
                t.id == id
                    && matches!(t.kind, TaskKind::Agent { agent } | TaskKind::Teammate { agent } if agent != a)
            });
            (a != 0 && other_agent).then(|| st.agents[a].id.clone())
        };
        if let Some(caller) = refused {
            return ToolOut::error(format!(
                "The main session, the user or the agent itself can stop task {id}; agent {caller} cannot stop it."
            ));
        }
        let described = {
            let st = self.state();
            st.tasks.iter().find(|t| t.id == id).map(|t| match &t.kind {
                TaskKind::Shell { command, .. } => {
                    ("local_bash", command.clone(), t.description.clone())
                }
                TaskKind::Agent { .. } | TaskKind::Teammate { .. } => {
                    ("local_agent", t.description.clone(), t.description.clone())
                }
            })
        };
        match (described, self.stop_task(id, StopBy::Model)) {
            (Some((task_type, command, description)), Ok(after)) => {
                if let Some((owner, notice)) = after {
                    self.deliver(owner, notice);
                }
                // 2.1.332 makes its next request 70-200 ms after the kill (measured), so the
                // kill's stream lines are read before that request is seen: paced the same.
                if !self.cfg.pace.is_zero() {
                    tokio::time::sleep(self.cfg.pace * STOP_PACE_FACTOR).await;
                }
                let message = format!("Successfully stopped task: {id} ({description})");
                ToolOut::ok(
                    task_stopped_text(&message, id, task_type, &command),
                    json!({"message": message, "task_id": id, "task_type": task_type, "command": command}),
                )
            }
            (_, Err(e)) => ToolOut::error(e),
            (None, Ok(_)) => ToolOut::error(format!("No task found with ID: {id}")),
        }
    }

    /// `stop_task` / TaskStop: a shell is killed; an agent's turn is cancelled and the agent
    /// stopped. Returns the notification its owner gets (delivered by the caller).
    pub(super) fn stop_task(
        self: &Arc<Self>,
        task_id: &str,
        by: StopBy,
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
            Some(a) => Ok(self.stop_agent(a, t, by)),
        }
    }

    /// Stops a subagent (stop_task on its task, TaskStop): its turn is cut short, its task
    /// `killed`; the parent reads that it "was stopped by user" (or "by Claude", TaskStop).
    /// No SubagentStop fires.
    pub(super) fn stop_agent(&self, a: usize, t: usize, by: StopBy) -> Option<(usize, Notice)> {
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
                status: Some("killed".into()),
                summary: texts::agent_stopped_summary(&description, by),
                note: Some(texts::FINISHED_NOTE.into()),
                result: None,
                event: None,
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
}

/// TaskStop's result as the model reads it: the response as compact JSON, keys in the CLI's
/// order (message, task_id, task_type, command).
fn task_stopped_text(message: &str, id: &str, task_type: &str, command: &str) -> String {
    let q = |s: &str| Value::String(s.to_string()).to_string();
    format!(
        "{{\"message\":{},\"task_id\":{},\"task_type\":{},\"command\":{}}}",
        q(message),
        q(id),
        q(task_type),
        q(command)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_stops_text_is_the_measured_json() {
        assert_eq!(
            task_stopped_text(
                "Successfully stopped task: afe508900ae1a6bb9 (Long check)",
                "afe508900ae1a6bb9",
                "local_agent",
                "Long check"
            ),
            r#"{"message":"Successfully stopped task: afe508900ae1a6bb9 (Long check)","task_id":"afe508900ae1a6bb9","task_type":"local_agent","command":"Long check"}"#
        );
    }
}
