//! Stopping a task from outside: the driver's `stop_task` and the model's TaskStop. A shell
//! is killed; an agent's turn is cut short and the agent stopped, with no SubagentStop.

use super::*;

impl Sim {
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
                status: Some("killed".into()),
                summary: format!("Agent \"{description}\" was stopped by user"),
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
