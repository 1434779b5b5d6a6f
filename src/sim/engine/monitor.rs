//! The Monitor tool: a background source whose every stdout line is an event for the agent that
//! armed it. Each line reaches that agent as a `<task-notification>` with an `<event>` and no
//! status (re-invoking it if it is no longer in a turn, like any notification); when the
//! command ends, a last notification says the stream ended (`completed`, or `failed` with its
//! exit code); past its timeout the source is killed and the monitor reads `expired`. The
//! source is a shell task of kind [`ShellKind::Monitor`]: it is listed, stopped and reaped like
//! a background Bash, but it does not keep its owner's turn open (2.1.332 reports a subagent
//! whose only live child is a monitor as finished).

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::bash::ShellTask;
use super::*;
use texts::MonitorEnd;

impl Sim {
    pub(super) fn monitor(self: &Arc<Self>, a: usize, input: &Value, tool_use_id: &str) -> ToolOut {
        let Some(command) = input["command"].as_str().map(str::to_string) else {
            return ToolOut::error(
                "InputValidationError: claude-sim's Monitor needs a string `command` (no `ws`)",
            );
        };
        let Some(description) = input["description"].as_str().map(str::to_string) else {
            return ToolOut::error("InputValidationError: Monitor needs a string `description`");
        };
        let timeout_ms = input["timeout_ms"]
            .as_u64()
            .unwrap_or(texts::MONITOR_TIMEOUT_MS);
        let task_id = ids::shell_task_id();
        let output = self.task_dir.join(format!("{task_id}.output"));
        let mut child =
            match shell::spawn_monitor(&command, &self.cfg.cwd, &self.bash_env(true), &output) {
                Ok(c) => c,
                Err(e) => return ToolOut::error(format!("cannot start the monitor: {e}")),
            };
        let pid = child.id().map(|p| p as i32);
        let stdout = child.stdout.take();
        let t = self.start_shell_task(
            a,
            ShellTask {
                task_id: task_id.clone(),
                command,
                description,
                tool_use_id,
                pid,
                output: output.clone(),
                kind: ShellKind::Monitor,
            },
        );
        let sim = self.clone();
        let limit = Duration::from_millis(timeout_ms);
        self.spawn(async move {
            let watched = async {
                if let Some(stdout) = stdout {
                    sim.relay_events(t, stdout, &output).await;
                }
                child.wait().await
            };
            let ended = match tokio::time::timeout(limit, watched).await {
                Ok(Ok(status)) => Ended::from_status(status),
                Ok(Err(_)) => Ended::Code(1),
                Err(_) => {
                    sim.monitor_expired(t);
                    // Reap it (the kill ends it within its grace), so that its pid is let go.
                    let _ = tokio::time::timeout(KILL_GRACE * 2, child.wait()).await;
                    return sim.forget_pid(t);
                }
            };
            sim.settle_signal(ended).await;
            sim.shell_ended(t, ended);
            sim.forget_pid(t);
        });
        ToolOut::ok(
            texts::monitor_started_result(&task_id, timeout_ms),
            json!({"taskId": task_id, "timeoutMs": timeout_ms, "persistent": false}),
        )
    }

    /// Copies each stdout line of a monitor's source to its output file and delivers it to the
    /// monitor's owner as an event, until the pipe closes.
    async fn relay_events(
        self: &Arc<Self>,
        t: usize,
        stdout: tokio::process::ChildStdout,
        output: &std::path::Path,
    ) {
        let mut file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(output)
            .await
            .ok();
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(text)) = lines.next_line().await {
            if let Some(f) = file.as_mut() {
                let _ = f.write_all(format!("{text}\n").as_bytes()).await;
            }
            let event = {
                let st = self.state();
                let task = &st.tasks[t];
                match (&task.kind, task.status) {
                    (TaskKind::Shell { owner, .. }, TaskStatus::Running) => Some((
                        *owner,
                        Notice::monitor_event(&task.id, &task.run_id, &task.description, &text),
                    )),
                    _ => None,
                }
            };
            if let Some((owner, notice)) = event {
                self.deliver(owner, notice);
            }
        }
    }

    /// A monitor past its timeout: its source is killed and its owner told it expired.
    fn monitor_expired(self: &Arc<Self>, t: usize) {
        if let Some((owner, mut notice)) = self.kill_shell(t) {
            let description = self.state().tasks[t].description.clone();
            notice.summary = texts::monitor_end_summary(&description, MonitorEnd::Expired);
            self.deliver(owner, notice);
        }
        self.wake.notify_one();
    }
}
