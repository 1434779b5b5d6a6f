//! The simulator's engine: agents, their turns, background tasks, notification delivery and
//! the end of the session, with the behaviour profile deciding the few points where versions
//! (and hypotheses) differ.
//!
//! One [`Sim`] holds the whole session behind a mutex that is never held across an await. The
//! main agent's turns run one at a time in the session loop ([`Sim::run`]); each subagent turn
//! is its own task. A background shell's watcher and the stdin reader change the state and
//! wake the loop. What the measured CLI (2.1.332) does, and so the default profile:
//! - a subagent that ends its turn fires SubagentStop and is finalized (task `completed`, a
//!   notification to its parent saying whether it left background work running);
//! - a finalized subagent whose shell ends while the session lives is re-invoked: a second
//!   `task_started` for the same task id (new run id), a second SubagentStart, a request whose
//!   last user message holds the notification;
//! - the main agent, idle, gets each notification in a new turn (UserPromptSubmit with the
//!   bare `<task-notification>`, `system/init` again); mid-turn, notifications ride along as a
//!   role-`system` message after the next tool results;
//! - print mode holds a turn's `result` while a subagent is still running; it ends once nothing
//!   can wake the main agent, except that a shell orphaned by a finalized subagent gets a grace
//!   (5 s after the last result, or after the input closed) before it is killed.
//!
//! This file holds the state, the session loop, the driver's entry points and the builders of
//! stream lines and hook payloads; [`turns`] holds a turn's life and notification delivery;
//! [`tools`] holds tool calls, dispatched by family: [`bash`] (shells and their tasks),
//! [`agents`] (Agent, teammates, SendMessage), [`stop`] (TaskStop, stop_task), [`monitor`]
//! (Monitor and its events) and [`tool_search`] (deferred tools and their loading).

mod agents;
mod bash;
mod monitor;
mod resume;
mod stop;
mod tool_search;
pub(crate) mod tools;
mod turns;

use std::collections::VecDeque;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tokio::sync::Notify;

use super::Profile;
use super::api::{Api, Reply};
use super::args::Args;
use super::catalog;
use super::emit::{Out, OutMode};
use super::hooks::{Block, HookSet};
use super::ids;
use super::input::{Input, read_stream_json, read_terminal};
use super::shell::{self, Ended};
use super::texts::{self, AgentKind, Notice};
use super::transcript::{self, Transcript};

/// A foreground command still running after this long is reported as a task.
const SLOW_FOREGROUND: Duration = Duration::from_secs(3);
/// Between SIGTERM and SIGKILL when a task is killed.
const KILL_GRACE: Duration = Duration::from_millis(1500);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `-p PROMPT`: one prompt, then the session ends when nothing is left to do.
    Print,
    /// `-p --input-format stream-json`: user messages and control requests on stdin.
    Session,
    /// No `-p`: an interactive terminal, turns typed as lines, `/exit` ends.
    Interactive,
}

/// Everything fixed for the session.
#[derive(Debug, Clone)]
pub struct Config {
    pub profile: Profile,
    pub mode: Mode,
    pub prompt: Option<String>,
    pub out_mode: OutMode,
    pub cwd: PathBuf,
    pub home: PathBuf,
    pub tmp: PathBuf,
    pub session_id: String,
    pub version: String,
    pub permission_mode: String,
    pub allowed: Vec<String>,
    pub disallowed: Vec<String>,
    pub skip_permissions: bool,
    pub grace: Duration,
    /// The pause before a tool call's hooks (`CLAUDE_SIM_PACE_MS`, default 25 ms).
    pub pace: Duration,
    pub lifetime: Duration,
    pub teams: bool,
    pub base_url: String,
    pub api_key: String,
    /// `--continue`: `session_id` is the project's most recent session, taken up again.
    pub resume: bool,
    /// False with `--no-session-persistence`: no transcript is written.
    pub persist_session: bool,
}

impl Config {
    pub fn from_args(args: &Args) -> Result<Config, String> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let profile_name = args
            .profile
            .clone()
            .or_else(|| env(super::PROFILE_ENV))
            .unwrap_or_else(|| "finalize-on-turn-end".into());
        let profile = Profile::parse(&profile_name).ok_or_else(|| {
            format!(
                "unknown profile `{profile_name}`, expected one of: {}",
                super::PROFILES
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
        let mode = match (args.print, args.stream_json_input()) {
            (true, true) => Mode::Session,
            (true, false) => Mode::Print,
            (false, _) => Mode::Interactive,
        };
        if mode == Mode::Interactive && args.no_session_persistence {
            // The real CLI's own words (2.1.332).
            return Err("--no-session-persistence only works with --print.".into());
        }
        if mode == Mode::Print && args.prompt.is_none() {
            return Err("-p needs a prompt (or --input-format stream-json)".into());
        }
        let out_mode = match mode {
            Mode::Interactive => OutMode::Screen,
            _ if args.stream_json_output() => OutMode::StreamJson,
            _ => OutMode::Text,
        };
        let cwd = std::env::current_dir().map_err(|e| format!("no working folder: {e}"))?;
        let home = env("HOME").map(PathBuf::from).ok_or("HOME is not set")?;
        let tmp = env("TMPDIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        let base_url =
            env("ANTHROPIC_BASE_URL").unwrap_or_else(|| "https://api.anthropic.com".into());
        let api_key = env("ANTHROPIC_API_KEY").unwrap_or_default();
        let ms = |k: &str| env(k).and_then(|v| v.parse::<u64>().ok());
        let session_id = match args.continue_session {
            true => resume::latest_session(&home, &cwd)
                .ok_or("No conversation found to continue (--continue)")?,
            false => ids::uuid(),
        };
        Ok(Config {
            profile,
            mode,
            prompt: args.prompt.clone(),
            out_mode,
            cwd,
            home,
            tmp,
            session_id,
            version: format!("{}-sim", super::EMULATED_VERSION),
            permission_mode: args.permission_mode.clone(),
            allowed: args.allowed(),
            disallowed: args.disallowed(),
            skip_permissions: args.dangerously_skip_permissions
                || args.permission_mode == "bypassPermissions",
            grace: ms(super::GRACE_ENV)
                .map(Duration::from_millis)
                .unwrap_or(super::DEFAULT_ORPHAN_GRACE),
            pace: Duration::from_millis(ms(super::PACE_ENV).unwrap_or(25)),
            lifetime: Duration::from_secs(ms(super::LIFETIME_ENV).unwrap_or(3600)),
            teams: env("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS").is_some_and(|v| v != "0"),
            base_url,
            api_key,
            resume: args.continue_session,
            persist_session: !args.no_session_persistence,
        })
    }

    fn interactive(&self) -> bool {
        self.mode == Mode::Interactive
    }

    fn entrypoint(&self) -> &'static str {
        if self.interactive() { "cli" } else { "sdk-cli" }
    }
}

/// Why a turn was cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    /// The driver's `interrupt` control request.
    Interrupt,
    /// `stop_task` / TaskStop on the agent.
    Stop,
    /// The session is ending (a signal, `/exit`).
    Exit,
}

/// A cancellation flag a turn can wait on.
#[derive(Clone, Default)]
pub struct Cancel(Arc<(AtomicBool, Notify, Mutex<Option<CancelReason>>)>);

impl Cancel {
    pub fn cancel(&self, reason: CancelReason) {
        self.0.2.lock().expect("cancel lock").get_or_insert(reason);
        self.0.0.store(true, Ordering::SeqCst);
        self.0.1.notify_waiters();
    }

    pub fn reason(&self) -> Option<CancelReason> {
        *self.0.2.lock().expect("cancel lock")
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.0.load(Ordering::SeqCst)
    }

    pub async fn cancelled(&self) {
        loop {
            let notified = self.0.1.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// In a turn (or about to start one).
    Running,
    /// Turn ended, still addressable: the main agent, or an idle teammate.
    Idle,
    /// Turn ended with live background work; kept live by the profile (no SubagentStop yet).
    Held,
    /// Finalized at its turn's end (SubagentStop fired, task completed).
    Finalized,
    /// Stopped from outside (stop_task, session end).
    Killed,
}

struct Agent {
    id: String,
    kind: AgentKind,
    name: Option<String>,
    description: String,
    agent_type: String,
    prompt: String,
    /// The Agent tool call that spawned it.
    tool_use_id: Option<String>,
    parent: usize,
    depth: u32,
    task: Option<usize>,
    /// The id sent as `x-claude-code-agent-id`.
    header_id: Option<String>,
    /// Spawned with `run_in_background: false`: its caller waits for it.
    foreground: bool,
    messages: Vec<Value>,
    pending: Vec<Notice>,
    inbox: Vec<String>,
    phase: Phase,
    stop_hook_active: bool,
    last_text: String,
    tool_uses: u64,
    tokens: u64,
    started: Instant,
    used_tools: Vec<String>,
    cancel: Cancel,
    transcript: Arc<Transcript>,
    meta: Option<(PathBuf, Value)>,
    turn_requests: u64,
    /// A held agent whose work has all ended: since when (for the release after the grace).
    quiet_since: Option<Instant>,
    /// How many times it has been (re)started.
    runs: u32,
    /// The model ended this turn (its last answer had no tool call): idle from the model's
    /// side even while the CLI still runs its stop hooks.
    turn_over: bool,
    /// A subagent or teammate reads the available agent types once, after its first tool
    /// result.
    agent_types_sent: bool,
    /// Deferred tools this agent loaded with ToolSearch (offered from its next request on).
    loaded_tools: Vec<String>,
    /// Tool-only answers since its last text or the user's last input (the main agent's
    /// quiet nudge).
    tools_since_text: u32,
    /// Interactive sessions: its turn ended while an agent it started was in its first run,
    /// so its report waits for that agent's, which re-invokes it.
    awaits_child: bool,
}

/// Who an agent is: everything about it that is fixed when it is created.
struct Identity {
    id: String,
    kind: AgentKind,
    name: Option<String>,
    description: String,
    agent_type: String,
    prompt: String,
    tool_use_id: Option<String>,
    parent: usize,
    depth: u32,
    task: Option<usize>,
    header_id: Option<String>,
    foreground: bool,
}

impl Agent {
    /// A new agent: its identity, its first phase and its transcript; every counter at zero.
    fn new(
        who: Identity,
        phase: Phase,
        transcript: Arc<Transcript>,
        meta: Option<(PathBuf, Value)>,
    ) -> Agent {
        Agent {
            id: who.id,
            kind: who.kind,
            name: who.name,
            description: who.description,
            agent_type: who.agent_type,
            prompt: who.prompt,
            tool_use_id: who.tool_use_id,
            parent: who.parent,
            depth: who.depth,
            task: who.task,
            header_id: who.header_id,
            foreground: who.foreground,
            messages: Vec::new(),
            pending: Vec::new(),
            inbox: Vec::new(),
            phase,
            stop_hook_active: false,
            last_text: String::new(),
            tool_uses: 0,
            tokens: 0,
            started: Instant::now(),
            used_tools: Vec::new(),
            cancel: Cancel::default(),
            transcript,
            meta,
            turn_requests: 0,
            quiet_since: None,
            runs: 1,
            turn_over: false,
            agent_types_sent: false,
            loaded_tools: Vec::new(),
            awaits_child: false,
            tools_since_text: 0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TaskStatus {
    Running,
    Completed,
    Failed,
    Killed,
}

/// What started a shell task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShellKind {
    /// Bash with `run_in_background` (or a slow foreground command's report).
    Bash,
    /// A Monitor's source: each stdout line is an event for its owner.
    Monitor,
}

enum TaskKind {
    Shell {
        command: String,
        owner: usize,
        pid: Option<i32>,
        output: PathBuf,
        kind: ShellKind,
    },
    Agent {
        agent: usize,
    },
    Teammate {
        agent: usize,
    },
}

struct Task {
    id: String,
    run_id: String,
    kind: TaskKind,
    description: String,
    tool_use_id: String,
    status: TaskStatus,
    /// The last time it was (re)started.
    started: Instant,
}

struct State {
    agents: Vec<Agent>,
    tasks: Vec<Task>,
    inputs: VecDeque<String>,
    input_closed_at: Option<Instant>,
    exit: Option<&'static str>,
    ending: bool,
    held_results: Vec<Value>,
    last_result_at: Option<Instant>,
    parked: Vec<(usize, Notice)>,
    /// Notices for other agents that an input released: delivered once the main agent's request
    /// that carries the input has been answered (queue-until-input), so the input is taken first.
    released: Vec<(usize, Notice)>,
    /// Teammate reports waiting for an input (queue-until-input).
    parked_reports: Vec<String>,
    prompt_id: Option<String>,
    result_index: u64,
    first_prompt_done: bool,
    api_ms: u64,
    /// A signal ends the session (exit status 143, as the real CLI).
    signalled: bool,
    /// Notices of a resumed session (`--continue`), for the next prompt's message.
    resumed_notices: Vec<Value>,
}

/// What opens a turn.
#[derive(Debug, Clone)]
enum Opening {
    /// A user prompt (main agent).
    Prompt(String),
    /// The agent's pending notifications, as a new user message.
    Notices,
    /// A spawned agent's first turn: its prompt.
    Spawn,
    /// Messages sent to the agent (SendMessage), as a new user message.
    Inbox,
    /// Teammate reports to the lead (main agent).
    Reports,
    /// Continue after a hook's feedback was appended.
    Continue,
}

#[derive(Debug, Clone, PartialEq)]
enum TurnEnd {
    Done,
    Held,
    /// Cut short; `true` when a tool call was running (its result reads "rejected").
    Interrupted(bool),
    Failed(String),
    Skipped,
}

struct ToolOut {
    content: Value,
    is_error: bool,
    response: Value,
    /// Cut short by an interrupt or a stop (no PostToolUse; the result reads "rejected").
    rejected: bool,
    /// Text that follows the results in the same user message (ToolSearch's "Tool loaded.").
    after: Option<&'static str>,
}

impl ToolOut {
    /// A result the model reads as `content`; hooks and stream lines see `response`.
    fn ok(content: impl Into<Value>, response: Value) -> ToolOut {
        ToolOut {
            content: content.into(),
            is_error: false,
            response,
            rejected: false,
            after: None,
        }
    }

    /// A result that reports an error (no PostToolUse).
    fn failed(content: impl Into<Value>, response: Value) -> ToolOut {
        ToolOut {
            is_error: true,
            ..ToolOut::ok(content, response)
        }
    }

    fn error(text: impl Into<String>) -> ToolOut {
        let text = text.into();
        ToolOut::failed(
            format!("<tool_use_error>{text}</tool_use_error>"),
            Value::String(format!("Error: {text}")),
        )
    }

    fn rejected(reason: Option<CancelReason>) -> ToolOut {
        let mut text = texts::REJECTED.to_string();
        if reason == Some(CancelReason::Interrupt) {
            text.push_str(texts::REJECTED_WHILE_RUNNING);
        }
        ToolOut {
            rejected: true,
            ..ToolOut::failed(text, "User rejected tool use".into())
        }
    }
}

pub struct Sim {
    cfg: Config,
    out: Out,
    hooks: HookSet,
    api: Api,
    st: Mutex<State>,
    wake: Notify,
    /// Notified once a signal is ending the session.
    signal_seen: Notify,
    task_dir: PathBuf,
    fault_env: Option<(String, String)>,
    transcript_path: PathBuf,
    started: Instant,
}

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

impl Sim {
    fn new(cfg: Config) -> Result<Sim, String> {
        let slug = ids::slug(&cfg.cwd);
        let project_dir = cfg.home.join(".claude").join("projects").join(&slug);
        let transcript_path = project_dir.join(format!("{}.jsonl", cfg.session_id));
        // SAFETY: getuid never fails.
        let uid = rustix::process::getuid().as_raw();
        let session_tmp = cfg
            .tmp
            .join(format!("claude-{uid}"))
            .join(&slug)
            .join(&cfg.session_id);
        let task_dir = session_tmp.join("tasks");
        std::fs::create_dir_all(&task_dir)
            .map_err(|e| format!("cannot create {}: {e}", task_dir.display()))?;
        let fault_env = match cfg.profile.child_fault() {
            Some(fault) => {
                let file = shell::fault_file(&session_tmp.join("sim"), fault)
                    .map_err(|e| format!("cannot write the fault file: {e}"))?;
                Some(("BASH_ENV".to_string(), file.display().to_string()))
            }
            None => None,
        };
        let user_agent = format!(
            "claude-cli/{} (external, {})",
            cfg.version,
            cfg.entrypoint()
        );
        let api = Api::new(&cfg.base_url, &cfg.api_key, &user_agent, &cfg.session_id)
            .map_err(|e| e.to_string())?;
        let hooks = HookSet::load(&cfg.cwd, &cfg.home);
        let main_transcript = Arc::new(
            Transcript::new(
                transcript_path.clone(),
                None,
                &cfg.session_id,
                &cfg.cwd,
                &cfg.version,
            )
            .persisting(cfg.persist_session),
        );
        let main = Agent::new(
            Identity {
                id: String::new(),
                kind: AgentKind::Main,
                name: None,
                description: "main".into(),
                agent_type: "main".into(),
                prompt: String::new(),
                tool_use_id: None,
                parent: 0,
                depth: 0,
                task: None,
                header_id: None,
                foreground: false,
            },
            Phase::Idle,
            main_transcript,
            None,
        );
        Ok(Sim {
            out: Out::new(cfg.out_mode, &cfg.session_id),
            hooks,
            api,
            st: Mutex::new(State {
                agents: vec![main],
                tasks: Vec::new(),
                inputs: VecDeque::new(),
                input_closed_at: None,
                exit: None,
                ending: false,
                held_results: Vec::new(),
                last_result_at: None,
                parked: Vec::new(),
                released: Vec::new(),
                parked_reports: Vec::new(),
                prompt_id: None,
                result_index: 0,
                first_prompt_done: false,
                api_ms: 0,
                signalled: false,
                resumed_notices: Vec::new(),
            }),
            wake: Notify::new(),
            signal_seen: Notify::new(),
            task_dir,
            fault_env,
            transcript_path,
            started: Instant::now(),
            cfg,
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().expect("simulator state lock")
    }

    /// Runs a whole session; returns the exit code.
    pub async fn run(cfg: Config) -> i32 {
        let sim = match Sim::new(cfg) {
            Ok(s) => Arc::new(s),
            Err(message) => {
                eprintln!("claude-sim: {message}");
                return 1;
            }
        };
        if sim.cfg.resume {
            sim.resume().await;
        } else {
            sim.session_start("startup").await;
        }
        match sim.cfg.mode {
            Mode::Print => {
                let prompt = sim.cfg.prompt.clone().unwrap_or_default();
                let mut st = sim.state();
                st.inputs.push_back(prompt);
                st.input_closed_at = Some(Instant::now());
            }
            Mode::Session => {
                let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                tokio::spawn(read_stream_json(tx));
                tokio::spawn(sim.clone().take_inputs(rx));
            }
            Mode::Interactive => {
                sim.out.screen(&format!(
                    "claude-sim {} ({})",
                    sim.cfg.version,
                    sim.cfg.profile.name()
                ));
                sim.out.ready();
                let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                tokio::spawn(read_terminal(tx));
                tokio::spawn(sim.clone().take_inputs(rx));
            }
        }
        sim.watch_signals();
        let reason = sim.session_loop().await;
        sim.finish(reason).await
    }

    /// Acts on what the driver sends, in order, until its input is over.
    async fn take_inputs(self: Arc<Self>, mut rx: tokio::sync::mpsc::UnboundedReceiver<Input>) {
        while let Some(input) = rx.recv().await {
            match input {
                Input::User(text) => self.user_input(text),
                Input::Control { id, request } => self.control(&id, &request),
                Input::Exit => return self.exit_requested(),
                Input::Closed => return self.input_closed(),
            }
        }
    }

    /// SIGTERM or SIGINT ends the session at once, turns in flight included (the real CLI
    /// exits cleanly with SessionEnd `other`).
    fn watch_signals(self: &Arc<Self>) {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return;
        };
        let sim = self.clone();
        tokio::spawn(async move {
            tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
            let cancels: Vec<Cancel> = {
                let mut st = sim.state();
                st.exit.get_or_insert("other");
                st.signalled = true;
                st.agents.iter().map(|a| a.cancel.clone()).collect()
            };
            for c in cancels {
                c.cancel(CancelReason::Exit);
            }
            sim.signal_seen.notify_waiters();
            sim.wake.notify_one();
        });
    }

    async fn session_loop(self: &Arc<Self>) -> &'static str {
        loop {
            if self.out.broken() {
                return "other";
            }
            let (next, releases) = self.decide();
            for a in releases {
                self.launch_release(a);
            }
            let deadline = match next {
                Next::Turn(opening) => {
                    self.run_turn(0, opening).await;
                    continue;
                }
                Next::End(reason) => return reason,
                Next::KillOrphans => {
                    self.kill_running_shells(|owner_phase| {
                        owner_phase == Phase::Finalized || owner_phase == Phase::Killed
                    });
                    continue;
                }
                Next::Wait(deadline) => deadline,
            };
            let sleep = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(tokio::time::Instant::from_std(d)).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = sleep => {}
            }
        }
    }

    /// What the session does next; also which held agents are due for release.
    fn decide(&self) -> (Next, Vec<usize>) {
        let now = Instant::now();
        let mut st = self.state();
        if let Some(reason) = st.exit {
            return (Next::End(reason), vec![]);
        }
        // Held agents whose work all ended with nothing delivered are let go after the grace.
        let mut releases = Vec::new();
        let mut release_deadline: Option<Instant> = None;
        for a in 1..st.agents.len() {
            if st.agents[a].phase != Phase::Held {
                continue;
            }
            let live = live_children(&st, a);
            let agent = &mut st.agents[a];
            if live || !agent.pending.is_empty() {
                agent.quiet_since = None;
                continue;
            }
            let since = *agent.quiet_since.get_or_insert(now);
            if now >= since + self.cfg.grace {
                agent.phase = Phase::Running;
                releases.push(a);
            } else {
                let due = since + self.cfg.grace;
                release_deadline = Some(release_deadline.map_or(due, |d| d.min(due)));
            }
        }
        let subagents_busy = st.agents[1..].iter().any(|a| {
            matches!(a.phase, Phase::Running | Phase::Held) && a.kind == AgentKind::Subagent
        });
        // Print mode prints held results once no subagent can still report.
        if self.cfg.mode == Mode::Print
            && !st.held_results.is_empty()
            && !subagents_busy
            && releases.is_empty()
            && st.agents[0].pending.is_empty()
            && st.inputs.is_empty()
        {
            for line in std::mem::take(&mut st.held_results) {
                self.out.line(line);
            }
            st.last_result_at = Some(now);
        }
        if !releases.is_empty() {
            return (Next::Wait(Some(now)), releases);
        }
        if let Some(text) = st.inputs.pop_front() {
            return (Next::Turn(Opening::Prompt(text)), vec![]);
        }
        if !st.agents[0].pending.is_empty() {
            return (Next::Turn(Opening::Notices), vec![]);
        }
        if !st.agents[0].inbox.is_empty() {
            return (Next::Turn(Opening::Reports), vec![]);
        }
        let Some(closed_at) = st.input_closed_at else {
            return (Next::Wait(release_deadline), vec![]);
        };
        // Input is over: end once nothing can wake the main agent.
        let agents_busy = st.agents[1..]
            .iter()
            .any(|a| matches!(a.phase, Phase::Running | Phase::Held));
        let mut waiting_on_shell = false;
        let mut orphans = false;
        for t in &st.tasks {
            if let (TaskKind::Shell { owner, .. }, TaskStatus::Running) = (&t.kind, t.status) {
                match st.agents[*owner].phase {
                    Phase::Finalized | Phase::Killed => orphans = true,
                    _ => waiting_on_shell = true,
                }
            }
        }
        if agents_busy || waiting_on_shell {
            return (Next::Wait(release_deadline), vec![]);
        }
        if !orphans {
            return (Next::End("other"), vec![]);
        }
        let from = st.last_result_at.map_or(closed_at, |r| r.max(closed_at));
        let due = from + self.cfg.grace;
        if now >= due {
            st.ending = true;
            return (Next::KillOrphans, vec![]);
        }
        (Next::Wait(Some(due)), vec![])
    }

    fn spawn(&self, future: impl Future<Output = ()> + Send + 'static) {
        let boxed: BoxFuture = Box::pin(future);
        tokio::spawn(boxed);
    }

    /// Starts a turn of `a` on its own task, after its prelude. Every turn that is not the
    /// main agent's starts here (a plain function, so the turn futures stay nameable).
    fn launch(
        self: &Arc<Self>,
        a: usize,
        opening: Opening,
        prelude: Prelude,
    ) -> tokio::task::JoinHandle<()> {
        let sim = self.clone();
        let boxed: BoxFuture = Box::pin(async move {
            if prelude == Prelude::Rerun {
                sim.rerun_lines(a);
            }
            if prelude != Prelude::None {
                sim.subagent_start(a).await;
                sim.activity_summary_later(a);
            }
            sim.run_turn(a, opening).await;
        });
        tokio::spawn(boxed)
    }

    /// Lets a held agent go (plain function, see [`Sim::launch`]).
    fn launch_release(self: &Arc<Self>, a: usize) {
        let sim = self.clone();
        let boxed: BoxFuture = Box::pin(async move { sim.release_held(a).await });
        tokio::spawn(boxed);
    }

    /// SessionStart, for a new session (`startup`) or one taken up again (`resume`).
    async fn session_start(self: &Arc<Self>, source: &str) {
        let commands = self.hooks.matching("SessionStart", Some(source)).len();
        if commands == 0 {
            return;
        }
        let ids: Vec<String> = (0..commands).map(|_| ids::uuid()).collect();
        for id in &ids {
            self.out.line(
                json!({"type": "system", "subtype": "hook_started", "hook_id": id,
                "hook_name": format!("SessionStart:{source}"), "hook_event": "SessionStart"}),
            );
        }
        let mut extra = json!({"source": source});
        if source == "resume" {
            // The keys 2.1.332 adds on a resume (the figures are the simulator's own).
            let idle = std::fs::metadata(&self.transcript_path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .map_or(0, |d| d.as_secs());
            extra["seconds_since_last_response"] = idle.into();
            extra["context_tokens"] = 0.into();
            extra["prompt_cache_likely_expired"] = false.into();
            extra["estimated_cache_write_usd"] = 0.0.into();
        }
        if self.cfg.interactive() {
            extra["model"] = texts::MODEL.into();
        }
        let payload = self.payload("SessionStart", None, extra);
        let outcome = self.run_hooks("SessionStart", Some(source), &payload).await;
        for (id, r) in ids.iter().zip(outcome.results.iter()) {
            let ok = r.exit_code == Some(0);
            self.out.line(json!({"type": "system", "subtype": "hook_response", "hook_id": id,
                "hook_name": format!("SessionStart:{source}"), "hook_event": "SessionStart",
                "output": format!("{}{}", r.stdout, r.stderr), "stdout": r.stdout, "stderr": r.stderr,
                "exit_code": r.exit_code.unwrap_or(1), "outcome": if ok { "success" } else { "error" }}));
        }
    }

    async fn finish(self: &Arc<Self>, reason: &'static str) -> i32 {
        let held = {
            let mut st = self.state();
            st.ending = true;
            for a in 1..st.agents.len() {
                st.agents[a].cancel.cancel(CancelReason::Exit);
            }
            std::mem::take(&mut st.held_results)
        };
        for line in held {
            self.out.line(line);
        }
        // Whatever still runs now dies with the session.
        self.kill_running_shells(|_| true);
        let payload = self.payload("SessionEnd", None, json!({"reason": reason}));
        self.run_hooks("SessionEnd", Some(reason), &payload).await;
        self.main_transcript()
            .note("last-prompt", json!({"lastPrompt": self.cfg.prompt}));
        // Give killed shells their moment to go, bounded; SIGKILL what is left.
        let deadline = Instant::now() + KILL_GRACE;
        loop {
            let alive: Vec<i32> = self
                .shell_pids()
                .into_iter()
                .filter(|p| shell::alive(*p))
                .collect();
            if alive.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                for p in alive {
                    shell::kill_tree(p, crate::os::procs::Signal::KILL);
                }
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        if self.cfg.out_mode == OutMode::Text {
            let text = self.state().agents[0].last_text.clone();
            self.out.screen(&text);
        }
        if self.state().signalled {
            128 + libc::SIGTERM
        } else {
            0
        }
    }

    fn shell_pids(&self) -> Vec<i32> {
        self.state()
            .tasks
            .iter()
            .filter_map(|t| match &t.kind {
                TaskKind::Shell { pid: Some(p), .. } => Some(*p),
                _ => None,
            })
            .collect()
    }

    fn main_transcript(&self) -> Arc<Transcript> {
        self.state().agents[0].transcript.clone()
    }

    /// A user message arrived (stream-json or typed).
    pub fn user_input(self: &Arc<Self>, text: String) {
        let for_main = {
            let mut st = self.state();
            st.inputs.push_back(text);
            let reports = std::mem::take(&mut st.parked_reports);
            st.agents[0].inbox.extend(reports);
            let (for_main, others): (Vec<_>, Vec<_>) = std::mem::take(&mut st.parked)
                .into_iter()
                .partition(|(t, _)| *t == 0);
            st.released.extend(others);
            for_main
        };
        // queue-until-input: an input releases everything that waited for one. The main
        // agent's notices ride in the input's own message; the others follow its request.
        for (target, notice) in for_main {
            self.deliver_now(target, notice);
        }
        self.wake.notify_one();
    }

    /// The main agent's request carrying an input was answered: the notices the input released
    /// for other agents go out now (after the CLI took the input, as the H3 shape has it).
    pub(super) fn deliver_released(self: &Arc<Self>) {
        let released = std::mem::take(&mut self.state().released);
        for (target, notice) in released {
            self.deliver_now(target, notice);
        }
    }

    /// The input is over (stdin closed, or the terminal went away).
    pub fn input_closed(&self) {
        let mut st = self.state();
        st.input_closed_at.get_or_insert(Instant::now());
        if self.cfg.interactive() {
            st.exit.get_or_insert("other");
        }
        drop(st);
        self.wake.notify_one();
    }

    /// `/exit` typed in the terminal.
    pub fn exit_requested(&self) {
        self.state().exit.get_or_insert("prompt_input_exit");
        self.wake.notify_one();
    }

    /// A stream-json control request; answers it on stdout.
    pub fn control(self: &Arc<Self>, request_id: &str, request: &Value) {
        let subtype = request["subtype"].as_str().unwrap_or("");
        let respond = |response: Value| {
            self.out.line(json!({"type": "control_response",
                "response": {"subtype": "success", "request_id": request_id, "response": response}}));
        };
        match subtype {
            "interrupt" => {
                let cancel = {
                    let st = self.state();
                    (st.agents[0].phase == Phase::Running).then(|| st.agents[0].cancel.clone())
                };
                if let Some(c) = cancel {
                    c.cancel(CancelReason::Interrupt);
                }
                respond(json!({"still_queued": []}));
            }
            "stop_task" => {
                let task_id = request["task_id"].as_str().unwrap_or("").to_string();
                match self.stop_task(&task_id, texts::StopBy::User) {
                    Ok(after) => {
                        respond(json!({}));
                        if let Some((owner, notice)) = after {
                            self.deliver(owner, notice);
                        }
                    }
                    Err(message) => self.out.line(json!({"type": "control_response",
                        "response": {"subtype": "error", "request_id": request_id, "error": message}})),
                }
            }
            _ => respond(json!({})),
        }
        self.wake.notify_one();
    }

    fn emit_init(&self) {
        let cwd = self.cfg.cwd.display().to_string();
        self.out.line(json!({
            "type": "system", "subtype": "init", "cwd": cwd, "session_id": self.cfg.session_id,
            "tools": catalog::INIT_TOOLS, "mcp_servers": [], "model": texts::MODEL,
            "permissionMode": self.cfg.permission_mode, "slash_commands": ["compact", "context", "init"],
            "terminal_slash_commands": [], "apiKeySource": "ANTHROPIC_API_KEY",
            "claude_code_version": self.cfg.version, "output_style": "default",
            "agents": ["claude", "Explore", "general-purpose", "Plan", "statusline-setup"], "skills": [],
            "plugins": [], "capabilities": ["interrupt_receipt_v1", "lifecycle_wakeup_source_v1"],
            "analytics_disabled": true, "product_feedback_disabled": true, "served_by_anthropic": false,
            "sandbox_enabled": false, "memory_paths": {}, "original_cwd": cwd, "additional_directories": [],
            "messaging_socket_path": self.cfg.tmp.join("cc-socks").join(format!("{}.sock", std::process::id())).display().to_string(),
            "fast_mode_state": "off", "fast_mode_disabled_reason": "sdk_opt_in_required",
            "per_turn_effort_active": false, "ultrathink_available": false, "ultrathink_typed_raises": false,
            "view_mode": "default",
        }));
    }

    /// `background_tasks_changed` with every running background task.
    fn emit_tasks_changed(&self) {
        let tasks: Vec<Value> = {
            let st = self.state();
            st.tasks
                .iter()
                .filter(|t| t.status == TaskStatus::Running)
                .filter_map(|t| match &t.kind {
                    TaskKind::Shell { owner, .. } => {
                        let mut v = json!({"task_id": t.id, "run_id": t.run_id, "task_type": "local_bash", "description": t.description});
                        if *owner != 0 {
                            v["parent_task_id"] = st.agents[*owner].id.clone().into();
                        }
                        Some(v)
                    }
                    // A foreground subagent is not a background task: its caller waits for it.
                    TaskKind::Agent { agent } if st.agents[*agent].foreground => None,
                    TaskKind::Agent { agent } => Some(json!({"task_id": t.id, "run_id": t.run_id, "task_type": "local_agent",
                        "subagent_type": st.agents[*agent].agent_type, "description": t.description})),
                    TaskKind::Teammate { .. } => None,
                })
                .collect()
        };
        self.out
            .line(json!({"type": "system", "subtype": "background_tasks_changed", "tasks": tasks}));
    }

    /// Stop/SubagentStop `background_tasks`: every running background task, teammates
    /// included (a foreground subagent is not one).
    fn background_tasks_entries(&self) -> Vec<Value> {
        let st = self.state();
        st.tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Running)
            .filter(|t| !matches!(t.kind, TaskKind::Agent { agent } if st.agents[agent].foreground))
            .map(|t| match &t.kind {
                TaskKind::Shell { command, kind, .. } => json!({"id": t.id,
                    "type": if *kind == ShellKind::Monitor { "monitor" } else { "shell" }, "status": "running",
                    "description": t.description, "command": command}),
                TaskKind::Agent { agent } => json!({"id": t.id, "type": "subagent", "status": "running",
                    "description": t.description, "agent_type": st.agents[*agent].agent_type}),
                TaskKind::Teammate { agent } => {
                    let idle = st.agents[*agent].phase == Phase::Idle || st.agents[*agent].turn_over;
                    let status = if idle && self.cfg.profile.flags_idle_teammates() { "idle" } else { "running" };
                    json!({"id": t.id, "type": "teammate", "status": status, "description": t.description})
                }
            })
            .collect()
    }

    fn emit_result(&self, how: &TurnEnd, origin: Value) {
        let mut st = self.state();
        let index = st.result_index;
        st.result_index += 1;
        let agent = &st.agents[0];
        let (is_error, subtype) = match how {
            TurnEnd::Failed(_) => (true, "success"),
            TurnEnd::Interrupted(_) => (true, "error_during_execution"),
            _ => (false, "success"),
        };
        let spawned = st
            .agents
            .iter()
            .filter(|a| a.kind == AgentKind::Subagent)
            .count();
        let usage = json!({"input_tokens": agent.tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                           "output_tokens": 0, "service_tier": "standard"});
        let mut line = json!({
            "type": "result", "subtype": subtype, "is_error": is_error,
            "duration_ms": self.started.elapsed().as_millis() as u64, "duration_api_ms": st.api_ms,
            "num_turns": agent.turn_requests, "result": agent.last_text, "stop_reason": "end_turn",
            "total_cost_usd": 0.0, "usage": usage, "modelUsage": {}, "permission_denials": [],
            "terminal_reason": "completed",
            "fast_mode_state": "off", "fast_mode_disabled_reason": "sdk_opt_in_required",
            "subagent_stats": {"spawned": spawned, "requested": {"background": spawned, "foreground": 0, "unset": 0},
                "started_in_background": spawned, "max_depth": 1, "spawned_by_subagents": 0, "completed": 0, "failed": 0,
                "killed": {"parent": 0, "user": 0, "system": 0},
                "refused": {"depth_limit": 0, "concurrency_limit": 0, "budget": 0}, "by_type": {}},
            "safety_stops": 0, "api_error_status": null, "ttft_ms": 1, "ttft_stream_ms": 1, "time_to_request_ms": 1,
            "first_content_frame_ms": 1, "queued_turn_count": 0, "result_index": index,
            "model_usage_since_last_result": {},
            "session_id": self.cfg.session_id, "uuid": ids::uuid(),
        });
        if !origin.is_null() {
            line["origin"] = origin;
        }
        if let TurnEnd::Interrupted(in_tool) = how {
            // What 2.1.332 prints for a turn cut short: no answer, the reason in `errors`.
            if let Some(map) = line.as_object_mut() {
                for key in [
                    "result",
                    "api_error_status",
                    "ttft_ms",
                    "ttft_stream_ms",
                    "time_to_request_ms",
                    "first_content_frame_ms",
                ] {
                    map.remove(key);
                }
            }
            let stop = if *in_tool { "tool_use" } else { "end_turn" };
            line["stop_reason"] = stop.into();
            line["terminal_reason"] = if *in_tool {
                "aborted_tools"
            } else {
                "aborted_streaming"
            }
            .into();
            line["errors"] = json!([format!(
                "[ede_diagnostic] result_type=user last_content_type=n/a stop_reason={stop}"
            )]);
        }
        let hold = self.cfg.mode == Mode::Print
            && st.agents[1..].iter().any(|a| {
                a.kind == AgentKind::Subagent && matches!(a.phase, Phase::Running | Phase::Held)
            });
        if hold {
            st.held_results.push(line);
            return;
        }
        for held in std::mem::take(&mut st.held_results) {
            self.out.line(held);
        }
        st.last_result_at = Some(Instant::now());
        self.out.line(line);
    }

    /// A hook payload with the fields the real CLI sends for `event`.
    fn payload(&self, event: &str, a: Option<usize>, extra: Value) -> Value {
        let st = self.state();
        let mut p = Map::new();
        p.insert("session_id".into(), self.cfg.session_id.clone().into());
        p.insert(
            "transcript_path".into(),
            self.transcript_path.display().to_string().into(),
        );
        p.insert("cwd".into(), self.cfg.cwd.display().to_string().into());
        let with_prompt = event != "SessionStart";
        if let (true, Some(id)) = (with_prompt, &st.prompt_id) {
            p.insert("prompt_id".into(), id.clone().into());
        }
        if matches!(
            event,
            "UserPromptSubmit"
                | "PreToolUse"
                | "PostToolUse"
                | "Stop"
                | "SubagentStop"
                | "TeammateIdle"
        ) {
            p.insert(
                "permission_mode".into(),
                self.cfg.permission_mode.clone().into(),
            );
        }
        let sub = a.filter(|a| *a != 0).map(|a| &st.agents[a]);
        if let Some(agent) = sub {
            if matches!(
                event,
                "PreToolUse" | "PostToolUse" | "SubagentStart" | "SubagentStop" | "TeammateIdle"
            ) {
                p.insert("agent_id".into(), agent.id.clone().into());
                p.insert("agent_type".into(), agent.agent_type.clone().into());
            }
            if event == "SubagentStop" {
                p.insert(
                    "agent_transcript_path".into(),
                    agent.transcript.path.display().to_string().into(),
                );
            }
        }
        if matches!(
            event,
            "PreToolUse" | "PostToolUse" | "Stop" | "SubagentStop"
        ) {
            p.insert("effort".into(), json!({"level": "medium"}));
        }
        p.insert("hook_event_name".into(), event.into());
        if let Some(extra) = extra.as_object() {
            p.extend(extra.clone());
        }
        Value::Object(p)
    }

    async fn run_hooks(
        &self,
        event: &str,
        subject: Option<&str>,
        payload: &Value,
    ) -> super::hooks::HookOutcome {
        let env = self.session_env();
        self.hooks
            .run(event, subject, payload, &self.cfg.cwd, &env)
            .await
    }
}

/// What happens before a launched turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prelude {
    /// Nothing: a held agent resumes its run.
    None,
    /// SubagentStart (a new agent, or an idle teammate woken).
    Start,
    /// A finalized subagent runs again: a new run id, `task_started`, then SubagentStart.
    Rerun,
}

/// Next step of the session loop.
enum Next {
    Turn(Opening),
    Wait(Option<Instant>),
    KillOrphans,
    End(&'static str),
}

/// True while a background Bash owned by `a` runs: the work that keeps its turn open (a
/// Monitor's source does not: 2.1.332 reports the subagent finished while it runs).
fn live_children(st: &State, a: usize) -> bool {
    live_shells(st, a, |k| k == ShellKind::Bash)
}

/// The agents `a` started whose task still runs.
fn running_child_agents(st: &State, a: usize) -> impl Iterator<Item = &Agent> {
    st.tasks.iter().filter_map(move |t| match t.kind {
        TaskKind::Agent { agent }
            if t.status == TaskStatus::Running && st.agents[agent].parent == a =>
        {
            Some(&st.agents[agent])
        }
        _ => None,
    })
}

/// True while a background shell owned by `a` whose kind passes `kind` runs.
fn live_shells(st: &State, a: usize, kind: impl Fn(ShellKind) -> bool) -> bool {
    st.tasks.iter().any(|t| {
        t.status == TaskStatus::Running
            && matches!(&t.kind, TaskKind::Shell { owner, kind: k, .. } if *owner == a && kind(*k))
    })
}
