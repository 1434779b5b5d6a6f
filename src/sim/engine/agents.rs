//! The Agent tool (background subagents, foreground ones, teammates) and SendMessage: spawning
//! an agent with its transcript and task, and putting a message in an agent's inbox.

use super::*;

impl Sim {
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
        // Interactive sessions of 2.1.332 launch every agent in the background, whatever
        // `run_in_background` says (measured by `wakeprobe fuzz`).
        let background =
            input["run_in_background"].as_bool() != Some(false) || self.cfg.interactive();
        let id = ids::agent_id();
        let files = self.agent_files(&id);
        let meta = json!({"agentType": subagent_type, "isBuiltIn": true, "launchedWithDefaults": true,
            "description": description, "toolUseId": tool_use_id, "spawnDepth": 1,
            "requestShape": if background { "background" } else { "foreground" },
            "requestNonInteractive": !self.cfg.interactive(), "model": texts::MODEL,
            "pickedEffortModel": texts::MODEL, "modelNotNamed": true, "finished": false});
        let run_id = ids::run_id();
        let (new, depth) = {
            let mut st = self.state();
            let depth = st.agents[a].depth + 1;
            let identity = Identity {
                id: id.clone(),
                kind: AgentKind::Subagent,
                name: name.clone(),
                description: description.clone(),
                agent_type: subagent_type.clone(),
                prompt: prompt.clone(),
                tool_use_id: Some(tool_use_id.to_string()),
                parent: a,
                depth,
                task: None,
                header_id: Some(id.clone()),
                foreground: !background,
            };
            let tracking = Tracking {
                task_id: id.clone(),
                run_id: run_id.clone(),
                kind: |agent| TaskKind::Agent { agent },
            };
            let new = self.register_agent(&mut st, identity, tracking, &files, meta);
            (new, depth)
        };
        // A foreground subagent changes no list of background tasks.
        if background {
            self.emit_tasks_changed();
        }
        let mut started = json!({"type": "system", "subtype": "task_started", "task_id": id, "run_id": run_id,
            "tool_use_id": tool_use_id, "description": description, "subagent_type": subagent_type,
            "is_backgrounded": background, "spawn_depth": depth, "task_type": "local_agent", "prompt": prompt});
        // An agent started by a subagent names its starter's task (2.1.332).
        if a != 0 {
            started["parent_task_id"] = self.state().agents[a].id.clone().into();
        }
        self.out.line(started);
        let output_text = files.output.display().to_string();
        let handle = self.launch(new, Opening::Spawn, Prelude::Start);
        if background {
            return ToolOut::ok(
                json!([{"type": "text", "text": texts::agent_launched_result(&id, &output_text)}]),
                json!({"isAsync": true, "status": "async_launched", "agentId": id, "description": description,
                    "resolvedModel": texts::MODEL, "prompt": prompt, "outputFile": output_text,
                    "canReadOutputFile": true, "canContinueAgent": true}),
            );
        }
        let _ = handle.await;
        let text = self.state().agents[new].last_text.clone();
        ToolOut::ok(
            json!([{"type": "text", "text": text}]),
            json!({"status": "completed", "prompt": prompt, "agentId": id,
                "content": [{"type": "text", "text": text}], "totalToolUseCount": 0}),
        )
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
        let files = self.agent_files(&id);
        let meta = json!({"agentType": name, "isBuiltIn": false, "description": description, "name": name,
            "spawnDepth": 0, "requestShape": "background", "requestNonInteractive": true, "model": texts::MODEL,
            "pickedEffortModel": texts::MODEL, "taskKind": "in_process_teammate", "teamName": team,
            "color": "blue", "planModeRequired": false, "spawnedAgentType": subagent_type,
            "permissionMode": self.cfg.permission_mode});
        let new = {
            let mut st = self.state();
            let identity = Identity {
                id: id.clone(),
                kind: AgentKind::Teammate,
                name: Some(name.to_string()),
                description: description.clone(),
                agent_type: name.to_string(),
                prompt: prompt.clone(),
                tool_use_id: Some(tool_use_id.to_string()),
                parent: a,
                depth: 0,
                task: None,
                header_id: Some(teammate_id.clone()),
                foreground: false,
            };
            let tracking = Tracking {
                task_id,
                run_id: ids::run_id(),
                kind: |agent| TaskKind::Teammate { agent },
            };
            self.register_agent(&mut st, identity, tracking, &files, meta)
        };
        self.launch(new, Opening::Spawn, Prelude::Start);
        ToolOut::ok(
            texts::teammate_spawned_result(&id, name),
            json!({"status": "teammate_spawned", "prompt": prompt, "agentId": id, "resolvedModel": texts::MODEL,
                "teammate_id": teammate_id, "agent_id": id, "agent_type": subagent_type, "model": texts::MODEL,
                "name": name, "color": "blue", "tmux_session_name": "in-process", "tmux_window_name": "in-process",
                "tmux_pane_id": "in-process", "team_name": team, "is_splitpane": false, "plan_mode_required": false,
                "outputFile": files.output.display().to_string()}),
        )
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
        ToolOut::ok(response.to_string(), response)
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

/// Where a spawned agent's files live: its transcript beside the session's, the task output
/// file (a link to the transcript) and the meta file.
struct AgentFiles {
    transcript: PathBuf,
    output: PathBuf,
    meta: PathBuf,
}

/// The task that tracks a spawned agent: its ids, and its kind given the agent's index.
struct Tracking {
    task_id: String,
    run_id: String,
    kind: fn(usize) -> TaskKind,
}

impl Sim {
    fn agent_files(&self, id: &str) -> AgentFiles {
        let transcript = self
            .transcript_path
            .with_extension("")
            .join("subagents")
            .join(format!("agent-{id}.jsonl"));
        let output = self.task_dir.join(format!("{id}.output"));
        let _ = std::os::unix::fs::symlink(&transcript, &output);
        let meta = transcript.with_extension("meta.json");
        AgentFiles {
            transcript,
            output,
            meta,
        }
    }

    /// Registers a spawned agent, running, with the task that tracks it (its id, run id and
    /// kind, built from the new agent's index); writes its meta file; returns the agent's index.
    fn register_agent(
        &self,
        st: &mut State,
        mut identity: Identity,
        tracking: Tracking,
        files: &AgentFiles,
        meta: Value,
    ) -> usize {
        transcript::write_meta(&files.meta, &meta);
        let transcript = Arc::new(
            Transcript::new(
                files.transcript.clone(),
                Some(identity.id.clone()),
                &self.cfg.session_id,
                &self.cfg.cwd,
                &self.cfg.version,
            )
            .persisting(self.cfg.persist_session),
        );
        let new = st.agents.len();
        st.tasks.push(Task {
            id: tracking.task_id,
            run_id: tracking.run_id,
            kind: (tracking.kind)(new),
            description: identity.description.clone(),
            tool_use_id: identity.tool_use_id.clone().unwrap_or_default(),
            status: TaskStatus::Running,
            started: Instant::now(),
        });
        identity.task = Some(st.tasks.len() - 1);
        st.agents.push(Agent::new(
            identity,
            Phase::Running,
            transcript,
            Some((files.meta.clone(), meta)),
        ));
        new
    }
}
