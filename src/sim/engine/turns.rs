//! A turn from start to end: opening it (hooks, `system/init`, the new user message), the
//! request loop, the stop hooks and their blocks, and what a turn's end means for the agent:
//! the main agent's `result`, a subagent finalized, held or re-invoked, a teammate idle.
//! Delivery of notifications, as the profile says, lives here too.

use super::*;

/// How many paces (see `Config::pace`) the main agent's notification turn waits before it
/// opens.
const NOTICE_PACE_FACTOR: u32 = 4;

/// How long a background agent works before an interactive session asks what it is doing.
const ACTIVITY_SUMMARY_AFTER: std::time::Duration = std::time::Duration::from_secs(30);

impl Sim {
    pub(super) async fn run_turn(self: &Arc<Self>, a: usize, opening: Opening) {
        let cancel = {
            let mut st = self.state();
            let agent = &mut st.agents[a];
            agent.phase = Phase::Running;
            agent.cancel = Cancel::default();
            agent.turn_requests = 0;
            agent.turn_over = false;
            agent.cancel.clone()
        };
        // The main agent's prompt is an input: what it released follows its request.
        let mut input_pending = a == 0 && matches!(opening, Opening::Prompt(_));
        let origin = self.open_turn(a, &opening).await;
        let Some(origin) = origin else {
            if input_pending {
                self.deliver_released();
            }
            self.end_turn(a, TurnEnd::Skipped, None).await;
            return;
        };
        let how = loop {
            self.attach_live_notices(a).await;
            let (body, header) = self.request_body(a);
            let started = Instant::now();
            let reply = tokio::select! {
                r = self.api.create(&body, header.as_deref()) => r,
                _ = cancel.cancelled() => break TurnEnd::Interrupted(false),
            };
            self.state().api_ms += started.elapsed().as_millis() as u64;
            if std::mem::take(&mut input_pending) {
                self.deliver_released();
            }
            let reply = match reply {
                Ok(r) => r,
                Err(e) => break TurnEnd::Failed(format!("API Error: {e}")),
            };
            self.record_reply(a, &reply);
            if !reply.tool_uses().is_empty() {
                self.run_tools(a, &reply, &cancel).await;
                if cancel.is_cancelled() {
                    break TurnEnd::Interrupted(true);
                }
                continue;
            }
            let subagent = self.state().agents[a].kind == AgentKind::Subagent;
            if subagent && self.cfg.profile.holds_waiting_subagents() {
                let (pending, live) = {
                    let st = self.state();
                    (!st.agents[a].pending.is_empty(), live_children(&st, a))
                };
                if pending {
                    self.open_notices_message(a);
                    continue;
                }
                if live {
                    break TurnEnd::Held;
                }
            }
            match self.stop_hooks(a).await {
                Some(block) => {
                    self.feed_block(a, &block);
                    continue;
                }
                None => break TurnEnd::Done,
            }
        };
        if input_pending {
            // Cut short before its answer: the input was still taken.
            self.deliver_released();
        }
        self.end_turn(a, how, Some(origin)).await;
    }

    /// Opens a turn: hooks, `system/init`, the new user message. Returns the result line's
    /// `origin` (Null for a user prompt), or None if a hook refused the prompt.
    pub(super) async fn open_turn(self: &Arc<Self>, a: usize, opening: &Opening) -> Option<Value> {
        match opening {
            Opening::Prompt(text) => self.open_prompt(a, text).await,
            Opening::Notices if a == 0 => self.open_main_notices().await,
            Opening::Notices => {
                self.open_notices_message(a);
                Some(Value::Null)
            }
            Opening::Spawn => self.open_spawned(a),
            Opening::Inbox => self.open_inbox(a),
            Opening::Reports => self.open_reports(),
            Opening::Continue => Some(Value::Null),
        }
    }

    /// A user prompt opens the main agent's turn (blocked if a UserPromptSubmit hook says so).
    async fn open_prompt(self: &Arc<Self>, a: usize, text: &str) -> Option<Value> {
        let prompt_id = ids::uuid();
        self.state().prompt_id = Some(prompt_id.clone());
        let payload = self.payload("UserPromptSubmit", None, json!({"prompt": text}));
        let outcome = self.run_hooks("UserPromptSubmit", None, &payload).await;
        if outcome.block.is_some() {
            return None;
        }
        self.emit_init();
        // Notifications pending now are not folded in: as in 2.1.332, the prompt's turn
        // comes first and they get a turn of their own after it.
        let first = {
            let mut st = self.state();
            let first = !st.first_prompt_done;
            st.first_prompt_done = true;
            first
        };
        let mut content = if first {
            texts::context_blocks()
        } else {
            std::mem::take(&mut self.state().resumed_notices)
        };
        // queue-until-input: the notices an input released ride along with it in its own
        // message (the H3 shape: what tells the agent is the request that carries the input).
        let released = if self.cfg.profile.queues_notifications() && a == 0 {
            std::mem::take(&mut self.state().agents[a].pending)
        } else {
            vec![]
        };
        let count = released.len();
        content.extend(
            released
                .iter()
                .enumerate()
                .map(|(i, n)| n.turn_block(i + 1 == count)),
        );
        content.push(json!({"type": "text", "text": text}));
        let transcript = {
            let mut st = self.state();
            let agent = &mut st.agents[a];
            agent.tools_since_text = 0;
            // After a tool call was cut short, the next prompt joins the message that
            // holds the interrupt placeholder.
            let joins = agent.messages.last_mut().filter(|m| {
                m["role"] == "user"
                    && m["content"]
                        .as_array()
                        .and_then(|c| c.last())
                        .is_some_and(|b| {
                            b["text"]
                                .as_str()
                                .is_some_and(|t| t.starts_with(texts::INTERRUPTED_FOR_TOOL))
                        })
            });
            match joins.and_then(|m| m["content"].as_array_mut()) {
                Some(blocks) => blocks.extend(content),
                None => agent
                    .messages
                    .push(json!({"role": "user", "content": content})),
            }
            if first {
                agent.messages.push(texts::environment_message(
                    AgentKind::Main,
                    self.cfg.interactive(),
                    &self.cfg.cwd.display().to_string(),
                ));
            }
            agent.transcript.clone()
        };
        let mut extra = Map::new();
        extra.insert("promptId".into(), prompt_id.into());
        transcript.row(
            "user",
            Some(json!({"role": "user", "content": text})),
            extra,
        );
        Some(Value::Null)
    }

    /// The main agent's pending notifications open a turn of their own.
    async fn open_main_notices(self: &Arc<Self>) -> Option<Value> {
        let (notices, tools_used) = {
            let mut st = self.state();
            let notices = std::mem::take(&mut st.agents[0].pending);
            let mut tools_used: Vec<String> = Vec::new();
            for tool in notices.iter().flat_map(|n| &n.tools_used) {
                if !tools_used.contains(tool) {
                    tools_used.push(tool.clone());
                }
            }
            (notices, tools_used)
        };
        if notices.is_empty() {
            return None;
        }
        // 2.1.332 opens this turn 50-130 ms after the task's end lines (measured), so readers
        // see the end before the request that carries it: paced the same.
        if !self.cfg.pace.is_zero() {
            tokio::time::sleep(self.cfg.pace * NOTICE_PACE_FACTOR).await;
        }
        for n in &notices {
            self.state().prompt_id = Some(ids::uuid());
            let payload = self.payload("UserPromptSubmit", None, json!({"prompt": n.xml()}));
            self.run_hooks("UserPromptSubmit", None, &payload).await;
        }
        self.emit_init();
        let mut content = Vec::new();
        if !tools_used.is_empty() {
            content.push(texts::tools_used_block(&tools_used));
        }
        let count = notices.len();
        content.extend(
            notices
                .iter()
                .enumerate()
                .map(|(i, n)| n.turn_block(i + 1 == count)),
        );
        let transcript = {
            let mut st = self.state();
            st.agents[0]
                .messages
                .push(json!({"role": "user", "content": content}));
            st.agents[0].transcript.clone()
        };
        for n in &notices {
            let mut extra = Map::new();
            extra.insert("origin".into(), json!({"kind": "task-notification"}));
            transcript.row(
                "user",
                Some(json!({"role": "user", "content": n.xml()})),
                extra,
            );
        }
        Some(
            json!({"kind": "task-notification", "producer": "session-task", "runId": notices[0].run_id}),
        )
    }

    /// A spawned agent's first turn: its prompt (a teammate's wrapped as a message).
    fn open_spawned(self: &Arc<Self>, a: usize) -> Option<Value> {
        let (kind, prompt, description, transcript) = {
            let st = self.state();
            let agent = &st.agents[a];
            (
                agent.kind,
                agent.prompt.clone(),
                agent.description.clone(),
                agent.transcript.clone(),
            )
        };
        let first_text = match kind {
            AgentKind::Teammate => texts::teammate_message("team-lead", &description, &prompt),
            _ => prompt.clone(),
        };
        let mut content = texts::context_blocks();
        content.push(json!({"type": "text", "text": first_text}));
        {
            let mut st = self.state();
            let agent = &mut st.agents[a];
            agent
                .messages
                .push(json!({"role": "user", "content": content}));
            agent.messages.push(texts::environment_message(
                kind,
                self.cfg.interactive(),
                &self.cfg.cwd.display().to_string(),
            ));
        }
        transcript.row(
            "user",
            Some(json!({"role": "user", "content": first_text})),
            Map::new(),
        );
        // 2.1.332 prints a foreground subagent's prompt (and, see `record_reply`, not its
        // closing text); a background one's the other way round.
        let mut line = json!({"type": "user", "message": {"role": "user",
            "content": [{"type": "text", "text": first_text}]}});
        let printed = {
            let st = self.state();
            self.agent_fields(&st, a, &mut line) && st.agents[a].foreground
        };
        if printed {
            line["timestamp"] = ids::iso_now().into();
            self.out.line(line);
        }
        Some(Value::Null)
    }

    /// Messages to a teammate open its next turn.
    fn open_inbox(self: &Arc<Self>, a: usize) -> Option<Value> {
        let (messages, transcript) = {
            let mut st = self.state();
            let agent = &mut st.agents[a];
            (std::mem::take(&mut agent.inbox), agent.transcript.clone())
        };
        if messages.is_empty() {
            return None;
        }
        for m in messages {
            transcript.row(
                "user",
                Some(json!({"role": "user", "content": m})),
                Map::new(),
            );
            self.state().agents[a]
                .messages
                .push(json!({"role": "user", "content": m}));
        }
        self.open_notices_message(a);
        Some(Value::Null)
    }

    /// Teammates' reports open the lead's next turn.
    fn open_reports(self: &Arc<Self>) -> Option<Value> {
        let reports = std::mem::take(&mut self.state().agents[0].inbox);
        if reports.is_empty() {
            return None;
        }
        self.emit_init();
        let content: Vec<Value> = reports
            .iter()
            .map(|r| json!({"type": "text", "text": r}))
            .collect();
        let transcript = {
            let mut st = self.state();
            st.agents[0]
                .messages
                .push(json!({"role": "user", "content": content}));
            st.agents[0].transcript.clone()
        };
        for r in &reports {
            transcript.row(
                "user",
                Some(json!({"role": "user", "content": r})),
                Map::new(),
            );
        }
        Some(Value::Null)
    }

    /// Moves a subagent's pending notifications into a new user message (form (a)).
    pub(super) fn open_notices_message(&self, a: usize) {
        let mut st = self.state();
        let notices = std::mem::take(&mut st.agents[a].pending);
        if notices.is_empty() {
            return;
        }
        let count = notices.len();
        let content: Vec<Value> = notices
            .iter()
            .enumerate()
            .map(|(i, n)| n.turn_block(i + 1 == count))
            .collect();
        let agent = &mut st.agents[a];
        agent
            .messages
            .push(json!({"role": "user", "content": content}));
        let transcript = agent.transcript.clone();
        drop(st);
        let mut extra = Map::new();
        extra.insert("origin".into(), json!({"kind": "task-notification"}));
        extra.insert("isMeta".into(), true.into());
        let text = notices
            .iter()
            .map(Notice::framed)
            .collect::<Vec<_>>()
            .join("\n\n");
        transcript.row(
            "user",
            Some(json!({"role": "user", "content": text})),
            extra,
        );
    }

    /// Mid-turn delivery (form (b)): after tool results, pending notifications ride along as a
    /// role-`system` message; the main agent's also fire UserPromptSubmit.
    pub(super) async fn attach_live_notices(self: &Arc<Self>, a: usize) {
        let notices = {
            let mut st = self.state();
            let agent = &mut st.agents[a];
            // Mid-turn: tool results came back since the agent's last answer.
            let after_tools = agent
                .messages
                .iter()
                .rev()
                .take_while(|m| m["role"] != "assistant")
                .any(|m| {
                    m["role"] == "user"
                        && m["content"]
                            .as_array()
                            .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
                });
            if !after_tools || agent.pending.is_empty() {
                return;
            }
            std::mem::take(&mut agent.pending)
        };
        if a == 0 {
            for n in &notices {
                self.state().prompt_id = Some(ids::uuid());
                let payload = self.payload("UserPromptSubmit", None, json!({"prompt": n.xml()}));
                self.run_hooks("UserPromptSubmit", None, &payload).await;
            }
        }
        let transcript = {
            let mut st = self.state();
            let messages = &mut st.agents[a].messages;
            let live = texts::live_notifications(&notices);
            // A quiet nudge waiting for the same request follows the notifications in their
            // message (2.1.332, `fuzz` seed 1 cases 36 and 72).
            match messages.pop() {
                Some(last) if last == texts::quiet_nudge_message() => {
                    messages.push(texts::with_nudge(live));
                }
                Some(last) => messages.extend([last, live]),
                None => messages.push(live),
            }
            st.agents[a].transcript.clone()
        };
        // As 2.1.332 does, the transcript keeps a notification absorbed mid-turn as a
        // `queued_command` attachment.
        for n in &notices {
            let mut extra = Map::new();
            extra.insert(
                "attachment".into(),
                json!({
                    "type": "queued_command",
                    "prompt": n.xml(),
                    "commandMode": "task-notification",
                    "origin": {"kind": "task-notification", "producer": "session-task"},
                }),
            );
            transcript.row("attachment", None, extra);
        }
    }

    pub(super) fn request_body(&self, a: usize) -> (Value, Option<String>) {
        let st = self.state();
        let agent = &st.agents[a];
        let user_id = json!({"device_id": "claude-sim", "account_uuid": "", "session_id": self.cfg.session_id}).to_string();
        let body = json!({
            "model": texts::MODEL,
            "messages": agent.messages,
            "system": texts::system_blocks(agent.kind, self.cfg.interactive(), &self.cfg.version),
            "tools": catalog::tools(agent.kind, self.cfg.interactive(), self.cfg.teams, &agent.loaded_tools),
            "metadata": {"user_id": user_id},
            "max_tokens": 128000,
            "thinking": {"type": "adaptive", "display": "updates"},
            "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
            "output_config": {"effort": "medium"},
            "stream": true,
        });
        (body, agent.header_id.clone())
    }

    /// Stream-json fields a subagent's lines add; false when the CLI prints none of this
    /// agent's messages (2.1.332: a foreground subagent started by a subagent is silent).
    pub(super) fn agent_fields(&self, st: &State, a: usize, line: &mut Value) -> bool {
        let agent = &st.agents[a];
        let printed = !(agent.foreground && agent.parent != 0);
        line["parent_tool_use_id"] = agent.tool_use_id.clone().map_or(Value::Null, Value::from);
        if a != 0 {
            line["agent_id"] = agent.id.clone().into();
            line["subagent_type"] = agent.agent_type.clone().into();
            line["task_description"] = agent.description.clone().into();
        }
        printed
    }

    pub(super) fn record_reply(&self, a: usize, reply: &Reply) {
        let (transcript, progress) = {
            let mut st = self.state();
            let agent = &mut st.agents[a];
            agent.messages.push(reply.message());
            agent.tokens += reply.input_tokens + reply.output_tokens;
            agent.turn_requests += 1;
            let text = reply.text();
            if !text.is_empty() {
                agent.last_text = text;
                agent.tools_since_text = 0;
            } else if !reply.tool_uses().is_empty() {
                agent.tools_since_text += 1;
            }
            agent.turn_over = reply.tool_uses().is_empty();
            let progress = (a != 0 && agent.kind == AgentKind::Subagent)
                .then_some(agent.task)
                .flatten();
            (agent.transcript.clone(), progress)
        };
        let n = reply.content.len();
        for (i, block) in reply.content.iter().enumerate() {
            let mut line =
                json!({"type": "assistant", "message": reply.message_object(block, false)});
            let printed = {
                let st = self.state();
                let closing = st.agents[a].foreground && reply.tool_uses().is_empty();
                self.agent_fields(&st, a, &mut line) && !closing
            };
            if let Some(id) = &reply.request_id {
                line["request_id"] = id.clone().into();
            }
            line["timestamp"] = ids::iso_now().into();
            if printed {
                self.out.line(line);
            }
            transcript.row(
                "assistant",
                Some(reply.message_object(block, i + 1 == n)),
                Map::new(),
            );
            if block["type"] == "tool_use"
                && let Some(t) = progress
            {
                self.emit_progress(a, t, block);
            }
        }
        if a == 0 && self.cfg.interactive() {
            let text = reply.text();
            if !text.is_empty() {
                self.out.screen(&format!("● {text}"));
            }
        }
    }

    pub(super) fn emit_progress(&self, a: usize, t: usize, block: &Value) {
        let st = self.state();
        let agent = &st.agents[a];
        let task = &st.tasks[t];
        let what = block["input"]["description"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| block["name"].as_str().unwrap_or("tool").to_string());
        self.out.line(json!({"type": "system", "subtype": "task_progress", "task_id": task.id,
            "run_id": task.run_id, "tool_use_id": task.tool_use_id, "description": format!("Running {what}"),
            "subagent_type": agent.agent_type,
            "usage": {"total_tokens": agent.tokens, "tool_uses": agent.tool_uses + 1,
                      "duration_ms": agent.started.elapsed().as_millis() as u64},
            "last_tool_name": block["name"]}));
    }

    pub(super) async fn subagent_start(self: &Arc<Self>, a: usize) {
        // The real CLI starts the agent some 15-50 ms after announcing its task; readers that
        // link the hook's agent_id through that announcement rely on the order.
        if !self.cfg.pace.is_zero() {
            tokio::time::sleep(self.cfg.pace).await;
        }
        let payload = self.payload("SubagentStart", Some(a), json!({}));
        let agent_type = self.state().agents[a].agent_type.clone();
        self.run_hooks("SubagentStart", Some(&agent_type), &payload)
            .await;
    }

    /// An interactive session asks the model for a line on what a background agent is doing
    /// once it has worked for 30 s (2.1.332: one request per run, 30.0-30.2 s after its
    /// SubagentStart, none when it ended sooner): the agent's conversation as of its last
    /// request with the question appended to its last user message (before the environment
    /// message on a first step), tools and all. The answer goes to the agents panel,
    /// not into the conversation.
    pub(super) fn activity_summary_later(self: &Arc<Self>, a: usize) {
        if !self.cfg.interactive() {
            return;
        }
        let run = {
            let st = self.state();
            let agent = &st.agents[a];
            if agent.kind != AgentKind::Subagent {
                return;
            }
            agent.runs
        };
        let sim = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(ACTIVITY_SUMMARY_AFTER).await;
            let working = {
                let st = sim.state();
                st.agents[a].phase == Phase::Running && st.agents[a].runs == run
            };
            if !working {
                return;
            }
            let (mut body, header) = sim.request_body(a);
            let question = json!({"type": "text", "text": texts::ACTIVITY_SUMMARY});
            let mut messages = body["messages"].as_array_mut();
            // The conversation as of the agent's last request: the call in flight is left out.
            if let Some(m) = messages.as_mut()
                && m.last().is_some_and(|l| l["role"] == "assistant")
            {
                m.pop();
            }
            let last_user = messages.and_then(|m| m.iter_mut().rev().find(|m| m["role"] == "user"));
            if let Some(last) = last_user {
                let mut content = resume::blocks(&last["content"]);
                content.push(question);
                last["content"] = Value::Array(content);
            }
            // The answer only labels the agent in the panel.
            let _ = sim.api.create(&body, header.as_deref()).await;
        });
    }

    pub(super) fn rerun_lines(&self, a: usize) {
        let line = {
            let mut st = self.state();
            let Some(t) = st.agents[a].task else { return };
            let run_id = ids::run_id();
            let agent_type = st.agents[a].agent_type.clone();
            let depth = st.agents[a].depth;
            st.agents[a].started = Instant::now();
            st.agents[a].runs += 1;
            let task = &mut st.tasks[t];
            task.run_id = run_id.clone();
            task.status = TaskStatus::Running;
            task.started = Instant::now();
            json!({"type": "system", "subtype": "task_started", "task_id": task.id, "run_id": run_id,
                "tool_use_id": task.tool_use_id, "description": task.description, "subagent_type": agent_type,
                "is_backgrounded": true, "spawn_depth": depth, "task_type": "local_agent"})
        };
        self.emit_tasks_changed();
        self.out.line(line);
    }

    pub(super) async fn stop_hooks(self: &Arc<Self>, a: usize) -> Option<Block> {
        let event = if a == 0 { "Stop" } else { "SubagentStop" };
        let (active, text) = {
            let st = self.state();
            (
                st.agents[a].stop_hook_active,
                st.agents[a].last_text.clone(),
            )
        };
        let tasks = self.background_tasks_entries();
        let payload = self.payload(
            event,
            Some(a),
            json!({"stop_hook_active": active, "last_assistant_message": text, "background_tasks": tasks, "session_crons": []}),
        );
        let outcome = self.run_hooks(event, None, &payload).await;
        self.state().agents[a].stop_hook_active = false;
        outcome.block
    }

    /// A blocked stop: the reason goes back to the agent as its next input.
    pub(super) fn feed_block(&self, a: usize, block: &Block) {
        let event = if a == 0 { "Stop" } else { "SubagentStop" };
        let (user, system) = texts::stop_feedback(event, &block.command, &block.reason);
        let mut line = json!({"type": "user", "message": {"role": "user", "content": [{"type": "text",
            "text": format!("Stop hook feedback:\n{}", block.reason)}]}, "isSynthetic": true});
        let (transcript, printed) = {
            let mut st = self.state();
            let printed = self.agent_fields(&st, a, &mut line);
            let agent = &mut st.agents[a];
            agent.messages.push(user.clone());
            agent.messages.push(system);
            agent.stop_hook_active = true;
            (agent.transcript.clone(), printed)
        };
        line["timestamp"] = ids::iso_now().into();
        if printed {
            self.out.line(line);
        }
        let mut extra = Map::new();
        extra.insert("isMeta".into(), true.into());
        transcript.row("user", Some(user), extra);
    }

    pub(super) async fn end_turn(self: &Arc<Self>, a: usize, how: TurnEnd, origin: Option<Value>) {
        match &how {
            // Cut short while waiting for the model: the placeholder ends the conversation.
            // (Cut short in a tool call, `run_tools` already wrote it beside the results.)
            TurnEnd::Interrupted(false) => {
                let transcript = {
                    let mut st = self.state();
                    let agent = &mut st.agents[a];
                    agent.messages.push(json!({"role": "user", "content": [{"type": "text", "text": texts::INTERRUPTED}]}));
                    agent.transcript.clone()
                };
                transcript.row(
                    "user",
                    Some(json!({"role": "user", "content": [{"type": "text", "text": texts::INTERRUPTED}]})),
                    Map::new(),
                );
            }
            TurnEnd::Failed(e) => self.state().agents[a].last_text = e.clone(),
            _ => {}
        }
        if a == 0 {
            {
                let mut st = self.state();
                if st.agents[0].phase == Phase::Running {
                    st.agents[0].phase = Phase::Idle;
                }
            }
            let exiting = self.state().exit.is_some();
            if how != TurnEnd::Skipped && !exiting {
                self.emit_result(&how, origin.unwrap_or(Value::Null));
            }
            if self.cfg.interactive() {
                self.out.ready();
            }
            self.wake.notify_one();
            return;
        }
        let killed = self.state().agents[a].phase == Phase::Killed;
        if killed {
            self.wake.notify_one();
            return;
        }
        match how {
            TurnEnd::Held => {
                let mut st = self.state();
                st.agents[a].phase = Phase::Held;
                st.agents[a].quiet_since = None;
            }
            TurnEnd::Done | TurnEnd::Failed(_) | TurnEnd::Skipped | TurnEnd::Interrupted(_) => {
                let teammate = self.state().agents[a].kind == AgentKind::Teammate;
                if teammate {
                    self.teammate_idle(a).await;
                } else {
                    if self.state().agents[a].foreground {
                        // 2.1.332 kills a foreground subagent's own background shells as it
                        // returns (`killed`, then a `stopped` notification nobody receives),
                        // and reports about 50 ms after its SubagentStop; paced longer with
                        // shells, so that a command started just before has begun (and its
                        // tracker reported) as on the CLI.
                        let shells = live_shells(&self.state(), a, |_| true);
                        if !self.cfg.pace.is_zero() {
                            tokio::time::sleep(self.cfg.pace * if shells { 4 } else { 2 }).await;
                        }
                        self.kill_own_shells(a);
                    }
                    self.finalize(a, matches!(how, TurnEnd::Failed(_)));
                }
            }
        }
        // Anything that arrived meanwhile wakes it again.
        let again = {
            let mut st = self.state();
            let agent = &mut st.agents[a];
            let wants = !agent.pending.is_empty() || !agent.inbox.is_empty();
            match (wants, agent.phase) {
                (true, Phase::Finalized) | (true, Phase::Idle) | (true, Phase::Held) => {
                    let was = agent.phase;
                    agent.phase = Phase::Running;
                    Some((was, !agent.inbox.is_empty()))
                }
                _ => None,
            }
        };
        if let Some((was, inbox)) = again {
            let opening = if inbox {
                Opening::Inbox
            } else {
                Opening::Notices
            };
            let prelude = match was {
                Phase::Held => Prelude::None,
                Phase::Finalized => Prelude::Rerun,
                _ => Prelude::Start,
            };
            self.launch(a, opening, prelude);
        }
        self.wake.notify_one();
    }

    /// A subagent's turn ended for good (for now): SubagentStop already passed. A foreground
    /// subagent's report is the Agent call's result, not a notification to its caller (its
    /// shells are gone already: see `end_turn`).
    pub(super) fn finalize(self: &Arc<Self>, a: usize, failed: bool) {
        if self.holds_for_child(a) {
            return;
        }
        let foreground = self.state().agents[a].foreground;
        let (parent, notice, lines) = {
            let mut st = self.state();
            let live = live_children(&st, a);
            let agent = &mut st.agents[a];
            agent.phase = Phase::Finalized;
            agent.quiet_since = None;
            if let Some((path, meta)) = &mut agent.meta {
                meta["finished"] = true.into();
                transcript::write_meta(path, meta);
            }
            let Some(t) = agent.task else { return };
            let (description, last_text, tokens, tool_uses, started, parent, runs) = (
                agent.description.clone(),
                agent.last_text.clone(),
                agent.tokens,
                agent.tool_uses,
                agent.started,
                agent.parent,
                agent.runs,
            );
            let tools_used = std::mem::take(&mut agent.used_tools);
            let task = &mut st.tasks[t];
            task.status = if failed {
                TaskStatus::Failed
            } else {
                TaskStatus::Completed
            };
            let status = if failed { "failed" } else { "completed" };
            let duration = started.elapsed().as_millis() as u64;
            let output = self
                .task_dir
                .join(format!("{}.output", task.id))
                .display()
                .to_string();
            let first_run = runs == 1;
            let notice = Notice {
                task_id: task.id.clone(),
                run_id: task.run_id.clone(),
                // The first run's report names the Agent call; a re-run's does not.
                tool_use_id: first_run.then(|| task.tool_use_id.clone()),
                output_file: Some(output.clone()),
                status: Some(status.into()),
                summary: if live {
                    format!("Agent \"{description}\" is waiting on its own background work")
                } else if failed {
                    format!("Agent \"{description}\" failed")
                } else {
                    format!("Agent \"{description}\" finished")
                },
                note: Some(
                    if live {
                        texts::INTERIM_NOTE
                    } else {
                        texts::FINISHED_NOTE
                    }
                    .into(),
                ),
                result: Some(last_text.clone()),
                event: None,
                usage: Some((tokens, tool_uses, duration)),
                tools_used,
            };
            let task = &st.tasks[t];
            let updated = json!({"type": "system", "subtype": "task_updated", "task_id": task.id, "run_id": task.run_id,
                "patch": {"status": status, "end_time": ids::now_ms()}});
            let mut notified = json!({"type": "system", "subtype": "task_notification", "task_id": task.id,
                "run_id": task.run_id, "tool_use_id": task.tool_use_id, "status": status, "output_file": output,
                "summary": last_text, "usage": {"total_tokens": tokens, "tool_uses": tool_uses, "duration_ms": duration}});
            if !live && !foreground {
                notified["summary_is_report"] = true.into();
            }
            (parent, notice, (updated, notified))
        };
        self.out.line(lines.0);
        if !self.cfg.profile.drops_notifications() {
            self.out.line(lines.1);
        }
        // A foreground subagent that returns while a background agent it started still runs
        // hands that agent over: 2.1.332 prints the (unchanged) background list again.
        if !foreground || self.has_live_agent_child(a) {
            self.emit_tasks_changed();
        }
        if !foreground {
            self.deliver(parent, notice);
        }
    }

    /// Interactive sessions of 2.1.332 hold a subagent's report while an agent it started is
    /// still in its first run: that agent's report re-invokes it (SubagentStart again), and
    /// it reports after that turn; meanwhile no `background_tasks` lists it. Returns whether
    /// `a` is held so.
    fn holds_for_child(&self, a: usize) -> bool {
        if !self.cfg.interactive() {
            return false;
        }
        let mut st = self.state();
        let waiting = running_child_agents(&st, a).any(|child| child.runs == 1);
        let agent = &mut st.agents[a];
        agent.awaits_child = waiting;
        if !waiting {
            return false;
        }
        agent.phase = Phase::Finalized;
        agent.quiet_since = None;
        // Its task no longer counts as running (later `background_tasks` leave it out) until
        // the re-run starts it again.
        if let Some(t) = agent.task {
            st.tasks[t].status = TaskStatus::Completed;
        }
        true
    }

    fn has_live_agent_child(&self, a: usize) -> bool {
        running_child_agents(&self.state(), a).next().is_some()
    }

    /// Kills every running shell `a` started; their `stopped` notices go to no one.
    fn kill_own_shells(self: &Arc<Self>, a: usize) {
        let own: Vec<usize> = {
            let st = self.state();
            (0..st.tasks.len())
                .filter(|t| {
                    st.tasks[*t].status == TaskStatus::Running
                        && matches!(&st.tasks[*t].kind, TaskKind::Shell { owner, .. } if *owner == a)
                })
                .collect()
        };
        for t in own {
            let _ = self.kill_shell(t);
        }
    }

    /// A teammate finished its turn: TeammateIdle, and the lead gets its report.
    pub(super) async fn teammate_idle(self: &Arc<Self>, a: usize) {
        let (name, text) = {
            let mut st = self.state();
            let agent = &mut st.agents[a];
            agent.phase = Phase::Idle;
            (
                agent.name.clone().unwrap_or_default(),
                agent.last_text.clone(),
            )
        };
        let team = format!("session-{}", &self.cfg.session_id[..8]);
        let payload = self.payload(
            "TeammateIdle",
            Some(a),
            json!({"teammate_name": name, "team_name": team}),
        );
        self.run_hooks("TeammateIdle", None, &payload).await;
        if self.cfg.profile.drops_notifications() {
            return;
        }
        let idle = json!({"type": "idle_notification", "from": name, "timestamp": ids::iso_now(),
                          "idleReason": "available", "result": text});
        let report = texts::teammate_report(&name, "blue", &idle);
        if self.cfg.profile.queues_notifications() {
            // Held back like any notification: it reaches the lead after the next input.
            self.state().parked_reports.push(report);
            return;
        }
        self.state().agents[0].inbox.push(report);
        self.wake.notify_one();
    }

    /// A held subagent whose work ended with nothing delivered: it stops now.
    pub(super) async fn release_held(self: Arc<Self>, a: usize) {
        match self.stop_hooks(a).await {
            Some(block) => {
                self.feed_block(a, &block);
                self.run_turn(a, Opening::Continue).await;
            }
            None => self.finalize(a, false),
        }
        self.wake.notify_one();
    }

    /// Hands a notification to an agent as the profile says.
    pub(super) fn deliver(self: &Arc<Self>, target: usize, notice: Notice) {
        if self.cfg.profile.drops_notifications() {
            return;
        }
        if self.cfg.profile.queues_notifications() {
            let mut st = self.state();
            if !st.ending {
                st.parked.push((target, notice));
            }
            return;
        }
        self.deliver_now(target, notice);
    }

    pub(super) fn deliver_now(self: &Arc<Self>, meant_for: usize, notice: Notice) {
        let (target, wake) = {
            let mut st = self.state();
            if st.ending {
                return;
            }
            let agent = &st.agents[meant_for];
            // 2.1.332 drops an idle teammate's own task notifications: they neither wake it
            // nor wait for its next turn (only a message wakes it).
            if agent.kind == AgentKind::Teammate && agent.phase == Phase::Idle {
                return;
            }
            let target = recipient(&st, meant_for, &notice);
            let agent = &mut st.agents[target];
            agent.pending.push(notice);
            let wake = match agent.phase {
                Phase::Running | Phase::Killed => None,
                Phase::Idle if target == 0 => None,
                other => {
                    agent.phase = Phase::Running;
                    Some(other)
                }
            };
            (target, wake)
        };
        match wake {
            Some(Phase::Held) => {
                self.launch(target, Opening::Notices, Prelude::None);
            }
            Some(Phase::Finalized) => {
                self.launch(target, Opening::Notices, Prelude::Rerun);
            }
            Some(_) => {
                self.launch(target, Opening::Notices, Prelude::Start);
            }
            None => {}
        }
        self.wake.notify_one();
    }
}

/// Who gets a notice meant for `target`. 2.1.332 re-invokes a finalized subagent when a shell
/// of its own ends, but the report of an agent it started goes to the main agent instead,
/// unless (interactive sessions) its own report still waits for that one.
fn recipient(st: &State, target: usize, notice: &Notice) -> usize {
    let agent = &st.agents[target];
    let from_agent = st.tasks.iter().any(|t| {
        t.id == notice.task_id
            && matches!(t.kind, TaskKind::Agent { .. } | TaskKind::Teammate { .. })
    });
    if agent.kind != AgentKind::Subagent
        || agent.phase != Phase::Finalized
        || !from_agent
        || agent.awaits_child
    {
        return target;
    }
    0
}
