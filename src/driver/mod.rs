//! One run's lifecycle: build the sandbox, start the fake API and the CLI under its supervisor,
//! feed inputs and probes on schedule, enforce the ceiling, and end by killing the whole
//! process tree and checking that nothing is left.
//!
//! Every exit path (the CLI ending, the ceiling, an error, Ctrl-C) goes through the same
//! shutdown: close the session, cut the supervisor's lifeline (it SIGTERMs then SIGKILLs every
//! descendant, orphans included), flush the event socket, and sweep the process table for
//! anything still carrying the run's environment tag. The driver never sleeps to synchronise:
//! it waits on events, with the next deadline (ceiling, input due, quiet window) as the only
//! timer.

pub mod netns;
pub mod procs;
pub mod pty;
pub mod socket;
pub mod supervise;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::backend::{self, BackendKind, Cli, EnvSpec};
use crate::evidence::clock::RunClock;
use crate::evidence::normalize::Normalizer;
use crate::evidence::wire::WireMessage;
use crate::evidence::{Event, EventKind, ExitDesc, InputReason, Source, Timeline};
use crate::fake_api::{self, ApiConfig, ApiState};
use crate::sandbox::{Sandbox, SandboxSpec};
use crate::scenario::{DriverMode, InputAction, MAIN_AGENT, Plan, Trigger};
use netns::{Isolation, NetworkPolicy};
use socket::EventSocket;
use supervise::Lifeline;

/// Bumped when `run.json`'s shape changes incompatibly.
pub const RUN_SCHEMA: u32 = 1;
/// How long the supervisor may take to clean up before it is killed itself.
const SUPERVISOR_LIMIT: Duration = Duration::from_secs(15);

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),
    #[error("cannot start the run: {0}")]
    Start(String),
    #[error("cannot write the run's evidence: {0}")]
    Store(#[from] crate::report::store::StoreError),
}

/// Why a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum EndReason {
    /// The driver's plan ran to its end and the CLI exited.
    Finished,
    /// The CLI exited while the driver still had a session open or inputs to send.
    CliEnded,
    /// The scenario's ceiling was reached.
    Ceiling,
    /// The harness was interrupted (Ctrl-C, SIGTERM).
    Interrupted,
}

/// What a run was, how it ended, and where: `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunInfo {
    pub schema: u32,
    pub scenario: String,
    pub title: String,
    pub variant: String,
    pub repetition: u32,
    pub backend: BackendKind,
    pub cli_label: String,
    pub cli_version: String,
    /// How the CLI was asked for (`latest`, `2.1.219`, `sim:fixed`): the matrix column key.
    #[serde(default)]
    pub cli_spec: String,
    /// The version the CLI itself reported (`system/init`), when it did.
    pub cli_version_reported: Option<String>,
    pub mode: DriverMode,
    pub permission_mode: String,
    pub params: crate::scenario::Params,
    pub ceiling_s: f64,
    pub started_unix_ms: u64,
    pub duration_s: f64,
    /// From spawning the CLI to its exit, when it exited.
    pub cli_wall_s: Option<f64>,
    pub end: EndReason,
    pub cli_exit: Option<ExitDesc>,
    pub isolation: Isolation,
    /// Processes still alive after cleanup (each was killed); should be empty.
    pub leftovers: Vec<String>,
    /// The command that reproduces this run.
    pub command: String,
    pub expect: Option<String>,
    pub wakeprobe_version: String,
    /// `uname`: system, release, machine.
    pub os: String,
}

/// A finished run: its record and timeline, already written to `dir`.
#[derive(Debug, Clone)]
pub struct RunRecord {
    pub info: RunInfo,
    pub timeline: Timeline,
    pub dir: PathBuf,
    /// What must not appear in anything written about this run.
    pub redactor: crate::report::redact::Redactor,
}

/// What the terminal shows while a run waits.
#[derive(Debug, Clone, Default)]
pub struct LiveStatus {
    pub phase: String,
    pub elapsed_s: f64,
    pub requests: usize,
    pub hooks: usize,
    pub running_tasks: usize,
}

pub type StatusHandle = Arc<Mutex<LiveStatus>>;

pub struct RunRequest {
    pub plan: Plan,
    pub cli: Cli,
    pub repetition: u32,
    /// The folder this run's evidence goes to (created).
    pub dir: PathBuf,
    pub template: PathBuf,
    pub keep_sandbox: bool,
    pub network: NetworkPolicy,
    pub cancel: watch::Receiver<bool>,
    pub status: StatusHandle,
    pub command: String,
    /// The scenario file's text, kept with the evidence.
    pub scenario_source: String,
}

/// Task statuses after which a task is no longer running.
const TERMINAL: &[&str] = &[
    "completed",
    "killed",
    "failed",
    "stopped",
    "error",
    "cancelled",
    "canceled",
];

/// Counters the schedule and the end condition read.
#[derive(Debug)]
struct Live {
    last_activity: Instant,
    running_tasks: HashSet<String>,
    running_tracks: HashSet<u32>,
    ended_tracks: HashSet<String>,
    started_tracks: HashSet<String>,
    /// Scenario label (agent or tracked command) -> the CLI's latest task id for it.
    task_ids: HashMap<String, String>,
    control_sent: u64,
    awaiting_turn: bool,
    results: usize,
    turn_ends: HashMap<String, usize>,
    requests: usize,
    hooks: usize,
    cli_exit: Option<(ExitDesc, f64)>,
}

impl Live {
    fn new() -> Live {
        Live {
            last_activity: Instant::now(),
            running_tasks: HashSet::new(),
            running_tracks: HashSet::new(),
            ended_tracks: HashSet::new(),
            started_tracks: HashSet::new(),
            task_ids: HashMap::new(),
            control_sent: 0,
            awaiting_turn: false,
            results: 0,
            turn_ends: HashMap::new(),
            requests: 0,
            hooks: 0,
            cli_exit: None,
        }
    }

    fn observe(&mut self, event: &Event) {
        self.last_activity = Instant::now();
        match &event.kind {
            EventKind::ModelRequest { .. } => self.requests += 1,
            EventKind::Hook { .. } => self.hooks += 1,
            EventKind::TaskStarted { task_id, label, .. } => {
                self.running_tasks.insert(task_id.clone());
                if let Some(label) = label {
                    self.task_ids.insert(label.clone(), task_id.clone());
                }
            }
            EventKind::TaskUpdated {
                task_id, status, ..
            } if TERMINAL.contains(&status.as_str()) => {
                self.running_tasks.remove(task_id);
            }
            EventKind::TaskNotified { task_id, .. } => {
                self.running_tasks.remove(task_id);
            }
            EventKind::TrackStarted { pid, name } => {
                self.running_tracks.insert(*pid);
                self.started_tracks.insert(name.clone());
            }
            EventKind::TrackEnded { name, pid, .. } => {
                self.running_tracks.remove(pid);
                self.ended_tracks.insert(name.clone());
            }
            EventKind::ProcessExited { pid, .. } => {
                self.running_tracks.remove(pid);
            }
            EventKind::TurnResult { .. } => {
                self.results += 1;
                self.awaiting_turn = false;
            }
            // An input opens a turn of the main agent: the session is not quiet until it ends
            // (a slow CLI start must not look like a quiet session).
            EventKind::UserInput { .. } => self.awaiting_turn = true,
            EventKind::TurnEnded { .. } => {
                if let Some(agent) = &event.agent {
                    *self.turn_ends.entry(agent.clone()).or_default() += 1;
                    if agent == MAIN_AGENT {
                        self.awaiting_turn = false;
                    }
                }
            }
            EventKind::CliExited { exit } => self.cli_exit = Some((exit.clone(), event.t_ms)),
            _ => {}
        }
    }

    /// No activity for `settle` and no task or tracked process running.
    /// When the session counts as quiet: no task or tracked process running, no input still
    /// waiting for the main agent's turn to end, and no activity for `settle`.
    fn quiet_since(&self, settle: Duration) -> Option<Instant> {
        (self.running_tasks.is_empty() && self.running_tracks.is_empty() && !self.awaiting_turn)
            .then(|| self.last_activity + settle)
    }

    fn triggered(&self, trigger: &Trigger, settle: Duration, now: Instant) -> bool {
        match trigger {
            Trigger::Start => true,
            Trigger::Result(n) => self.results >= *n,
            Trigger::TurnEnd(agent, n) => self.turn_ends.get(agent).copied().unwrap_or(0) >= *n,
            Trigger::TaskStart(name) => self.started_tracks.contains(name),
            Trigger::TaskEnd(name) => self.ended_tracks.contains(name),
            Trigger::Quiet => self.quiet_since(settle).is_some_and(|at| now >= at),
        }
    }
}

/// Where user input goes: nowhere (print), stdin JSON lines (session), or typed keys (pty).
enum InputSink {
    None,
    Stdin(tokio::process::ChildStdin),
    Pty(pty::PtyWriter),
}

impl InputSink {
    async fn send(&mut self, text: &str) -> std::io::Result<()> {
        match self {
            InputSink::None => Ok(()),
            InputSink::Stdin(stdin) => {
                let line = serde_json::json!({
                    "type": "user",
                    "message": {"role": "user", "content": text},
                });
                let mut bytes = serde_json::to_vec(&line).expect("static json");
                bytes.push(b'\n');
                stdin.write_all(&bytes).await?;
                stdin.flush().await
            }
            InputSink::Pty(writer) => writer.type_line(text).await,
        }
    }

    /// Sends a stream-json control request (session mode only).
    async fn control(
        &mut self,
        request_id: &str,
        subtype: &str,
        task_id: Option<&str>,
        message: Option<&str>,
    ) -> std::io::Result<()> {
        let InputSink::Stdin(stdin) = self else {
            return Ok(());
        };
        let mut request = serde_json::json!({"subtype": subtype});
        if let Some(id) = task_id {
            request["task_id"] = id.into();
        }
        if let Some(m) = message {
            request["message"] = m.into();
        }
        let line = serde_json::json!({"type": "control_request", "request_id": request_id, "request": request});
        let mut bytes = serde_json::to_vec(&line).expect("static json");
        bytes.push(b'\n');
        stdin.write_all(&bytes).await?;
        stdin.flush().await
    }

    /// Ends the session: closes stdin, or types `/exit` in a pty.
    async fn close(&mut self) {
        match std::mem::replace(self, InputSink::None) {
            InputSink::None => {}
            InputSink::Stdin(mut stdin) => {
                let _ = stdin.shutdown().await;
            }
            InputSink::Pty(mut writer) => {
                let _ = writer.type_line("/exit").await;
                *self = InputSink::Pty(writer);
            }
        }
    }
}

/// Runs one cell and writes its evidence; returns its record.
pub async fn run(req: RunRequest) -> Result<RunRecord, DriverError> {
    let clock = RunClock::start();
    let started_unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let plan = &req.plan;
    let wakeprobe = std::env::current_exe()
        .map_err(|e| DriverError::Start(format!("cannot find the wakeprobe binary: {e}")))?;
    let mut sandbox = Sandbox::build(&SandboxSpec {
        template: req.template.clone(),
        wakeprobe_bin: wakeprobe.clone(),
        guard: plan.driver.guard,
        label: plan.scenario.clone(),
    })?;
    let raw_dir = sandbox.root().join("evidence");
    std::fs::create_dir_all(&raw_dir).map_err(|e| DriverError::Start(e.to_string()))?;
    let run_tag = format!("{}-{}", std::process::id(), clock.origin_ns());

    let (api_tx, mut api_rx) = mpsc::unbounded_channel::<Event>();
    let api = ApiState::new(
        ApiConfig {
            script: plan.agents.clone(),
            track_command: "wp-track".into(),
            evidence_dir: Some(raw_dir.clone()),
        },
        clock,
        api_tx,
    );
    let (wire_tx, mut wire_rx) = mpsc::unbounded_channel::<WireMessage>();
    let mut socket = EventSocket::listen(&sandbox.events_socket(), wire_tx)
        .map_err(|e| DriverError::Start(format!("event socket: {e}")))?;

    let tagged_prompt = format!(
        "{}\n\n{}",
        plan.driver.prompt,
        fake_api::request::agent_tag(MAIN_AGENT)
    );
    let mode = plan.driver.mode;
    let args = req.cli.args(&plan.driver, &tagged_prompt);
    let mut lifeline = Lifeline::new().map_err(|e| DriverError::Start(e.to_string()))?;
    let pty_pair = if mode == DriverMode::Pty {
        Some(
            pty::PtyPair::open()
                .map_err(|e| DriverError::Start(format!("pseudo-terminal: {e}")))?,
        )
    } else {
        None
    };
    let sim_profile = match &req.cli.kind {
        BackendKind::Sim { profile } => Some(profile.clone()),
        BackendKind::Claude => None,
    };
    let spawn_t = clock.now_ms();
    let spawned = netns::bind_and_spawn(req.network, |addr| {
        let url = format!("http://{addr}");
        let env = backend::scrubbed_env(&EnvSpec {
            home: &sandbox.home(),
            tmp: &sandbox.tmp(),
            bin: &sandbox.bin(),
            api_url: &url,
            run_tag: &run_tag,
            events_socket: &sandbox.events_socket(),
            pty: pty_pair.is_some(),
            scenario_env: &plan.driver.env,
            sim_profile: sim_profile.as_deref(),
        });
        let mut cmd = lifeline.command(
            &wakeprobe,
            &sandbox.events_socket(),
            pty_pair.is_some(),
            &req.cli.program,
            &args,
        );
        cmd.env_clear()
            .envs(env)
            .current_dir(sandbox.project())
            .kill_on_drop(false);
        match &pty_pair {
            Some(pair) => {
                cmd.stdin(pair.child_stdio()?)
                    .stdout(pair.child_stdio()?)
                    .stderr(pair.child_stdio()?);
            }
            None => {
                cmd.stdin(if mode == DriverMode::Session {
                    std::process::Stdio::piped()
                } else {
                    std::process::Stdio::null()
                })
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            }
        }
        cmd.spawn()
    });
    let (listener, mut supervisor, isolation) = match spawned {
        Ok(s) => s,
        Err(e) => {
            socket.close();
            return Err(DriverError::Start(format!(
                "cannot start {}: {e}",
                req.cli.program.display()
            )));
        }
    };
    lifeline.spawned();
    let supervisor_pid = supervisor.id().unwrap_or(0);
    let server = {
        let listener = tokio::net::TcpListener::from_std(listener)
            .map_err(|e| DriverError::Start(format!("fake API listener: {e}")))?;
        let api = api.clone();
        tokio::spawn(async move {
            let _ = fake_api::serve(listener, api).await;
        })
    };

    // Output readers: stream-json lines (or the pty's bytes) and stderr.
    let (line_tx, mut line_rx) = mpsc::unbounded_channel::<(f64, String)>();
    let mut screen = None;
    let mut input = InputSink::None;
    let mut readers = Vec::new();
    if let Some(pair) = pty_pair {
        let (writer, reader) = pair
            .into_parts()
            .map_err(|e| DriverError::Start(e.to_string()))?;
        input = InputSink::Pty(writer);
        screen = Some(reader.spawn(clock, raw_dir.join("pty.raw")));
    } else {
        if let Some(stdout) = supervisor.stdout.take() {
            let tx = line_tx.clone();
            readers.push(tokio::spawn(async move {
                let mut lines = BufReader::new(stdout).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let _ = tx.send((clock.now_ms(), line));
                }
            }));
        }
        if let Some(mut stderr) = supervisor.stderr.take() {
            let path = raw_dir.join("stderr.log");
            readers.push(tokio::spawn(async move {
                let mut buf = Vec::new();
                let _ = tokio::io::AsyncReadExt::read_to_end(&mut stderr, &mut buf).await;
                buf.truncate(8 << 20);
                let _ = tokio::fs::write(path, buf).await;
            }));
        }
        if let Some(stdin) = supervisor.stdin.take() {
            input = InputSink::Stdin(stdin);
        }
    }
    drop(line_tx);

    let mut events: Vec<Event> = Vec::new();
    let mut stream_raw: Vec<(f64, String)> = Vec::new();
    let mut hooks_raw: Vec<(f64, String)> = Vec::new();
    let mut normalizer = Normalizer::new(clock);
    let mut live = Live::new();
    let push = |event: Event, live: &mut Live, events: &mut Vec<Event>| {
        live.observe(&event);
        events.push(event);
    };
    let driver_event = |kind: EventKind, agent: Option<&str>| Event {
        t_ms: clock.now_ms(),
        source: Source::Driver,
        agent: agent.map(str::to_string),
        kind,
    };
    if let Some(pid) = supervisor.id() {
        push(
            Event {
                t_ms: spawn_t,
                source: Source::Driver,
                agent: None,
                kind: EventKind::CliSpawned { pid },
            },
            &mut live,
            &mut events,
        );
    }
    let start = Instant::now();
    let ceiling_at = start + plan.driver.ceiling;
    let settle = plan.driver.settle;

    // The prompt: an argument in print mode, the first input otherwise.
    match mode {
        DriverMode::Print => push(
            driver_event(
                EventKind::UserInput {
                    text: plan.driver.prompt.clone(),
                    why: InputReason::Prompt,
                },
                Some(MAIN_AGENT),
            ),
            &mut live,
            &mut events,
        ),
        DriverMode::Session | DriverMode::Pty => {
            if mode == DriverMode::Pty
                && let InputSink::Pty(writer) = &mut input
            {
                writer.wait_ready(Duration::from_secs(20)).await;
            }
            let _ = input.send(&tagged_prompt).await;
            push(
                driver_event(
                    EventKind::UserInput {
                        text: plan.driver.prompt.clone(),
                        why: InputReason::Prompt,
                    },
                    Some(MAIN_AGENT),
                ),
                &mut live,
                &mut events,
            );
        }
    }

    let mut next_input = 0usize;
    let mut input_due: Option<Instant> = None;
    let mut probe_sent = plan.driver.probe.is_none();
    let mut session_closed = mode == DriverMode::Print;
    let mut stream_open = true;
    let mut cancel = req.cancel.clone();
    let mut vanish_rx = VanishWatch::new();
    let mut end: Option<EndReason> = None;
    let mut last_status = Instant::now() - Duration::from_secs(1);

    while end.is_none() {
        let now = Instant::now();
        // The next moment something may be due: the ceiling, an input, or the quiet window.
        let mut wake = ceiling_at;
        if let Some(due) = input_due {
            wake = wake.min(due);
        }
        if let Some(quiet) = live.quiet_since(settle) {
            wake = wake.min(quiet.max(now));
        }
        wake = wake.min(now + Duration::from_millis(500)); // status refresh
        tokio::select! {
            Some(event) = api_rx.recv() => {
                normalizer.learn_api(&event);
                push(event, &mut live, &mut events);
            }
            Some(message) = wire_rx.recv() => {
                if let WireMessage::TrackStart { pid, name, .. } = &message {
                    vanish_rx.watch(*pid, name.clone(), clock);
                }
                for event in ingest_wire(message, &clock, &mut normalizer, &mut hooks_raw) {
                    push(event, &mut live, &mut events);
                }
            }
            line = line_rx.recv(), if stream_open => match line {
                Some((t, line)) => {
                    for event in ingest_line(t, line, &mut normalizer, &mut stream_raw) {
                        push(event, &mut live, &mut events);
                    }
                }
                None => stream_open = false,
            },
            Some(event) = vanish_rx.recv() => push(event, &mut live, &mut events),
            changed = cancel.changed() => {
                if changed.is_err() || *cancel.borrow() {
                    push(driver_event(EventKind::Interrupted, None), &mut live, &mut events);
                    end = Some(EndReason::Interrupted);
                }
            }
            _ = supervisor.wait() => {
                // The supervisor only exits early if it could not start the CLI.
                if live.cli_exit.is_none() {
                    live.cli_exit = Some((ExitDesc::Vanished, clock.now_ms()));
                }
            }
            _ = tokio::time::sleep_until(wake) => {}
        }
        let now = Instant::now();
        if last_status + Duration::from_millis(250) <= now {
            last_status = now;
            let mut status = req.status.lock().expect("status lock");
            status.elapsed_s = start.elapsed().as_secs_f64();
            status.requests = live.requests;
            status.hooks = live.hooks;
            status.running_tasks = live.running_tasks.len() + live.running_tracks.len();
            status.phase = if session_closed { "ending" } else { "running" }.into();
        }
        if end.is_some() {
            break;
        }
        if now >= ceiling_at {
            push(
                driver_event(
                    EventKind::CeilingHit {
                        ceiling_s: plan.driver.ceiling.as_secs_f64(),
                    },
                    None,
                ),
                &mut live,
                &mut events,
            );
            end = Some(EndReason::Ceiling);
            break;
        }
        if live.cli_exit.is_some() {
            end = Some(if session_closed {
                EndReason::Finished
            } else {
                EndReason::CliEnded
            });
            break;
        }
        if session_closed {
            continue;
        }
        // Scheduled inputs, in order: each waits for its trigger, then its delay.
        if let Some(next) = plan.driver.inputs.get(next_input) {
            match input_due {
                None if live.triggered(&next.after, settle, now) => {
                    input_due = Some(now + next.delay);
                }
                Some(due) if now >= due => {
                    let event = match &next.action {
                        InputAction::Text { text } => {
                            if let Some(screen) = &screen {
                                screen.snapshot();
                            }
                            let _ = input.send(text).await;
                            EventKind::UserInput {
                                text: text.clone(),
                                why: InputReason::Scheduled,
                            }
                        }
                        InputAction::Control {
                            subtype,
                            target,
                            message,
                        } => {
                            live.control_sent += 1;
                            let task_id =
                                target.as_ref().and_then(|t| live.task_ids.get(t)).cloned();
                            let request_id = format!("wakeprobe-{}", live.control_sent);
                            let _ = input
                                .control(
                                    &request_id,
                                    subtype,
                                    task_id.as_deref(),
                                    message.as_deref(),
                                )
                                .await;
                            EventKind::ControlRequest {
                                subtype: subtype.clone(),
                                target: match (target, &task_id) {
                                    (Some(t), Some(id)) => Some(format!("{t} ({id})")),
                                    (Some(t), None) => Some(format!("{t} (no task id known)")),
                                    _ => None,
                                },
                            }
                        }
                    };
                    push(
                        driver_event(event, Some(MAIN_AGENT)),
                        &mut live,
                        &mut events,
                    );
                    next_input += 1;
                    input_due = None;
                }
                _ => {}
            }
            continue;
        }
        // Everything sent: once quiet, send the probe (if any), then end the session.
        if live.quiet_since(settle).is_some_and(|at| now >= at) {
            if !probe_sent {
                probe_sent = true;
                let probe = plan.driver.probe.as_ref().expect("probe present");
                let _ = input.send(&probe.text).await;
                push(
                    driver_event(
                        EventKind::UserInput {
                            text: probe.text.clone(),
                            why: InputReason::Probe,
                        },
                        Some(MAIN_AGENT),
                    ),
                    &mut live,
                    &mut events,
                );
            } else {
                input.close().await;
                session_closed = true;
                push(
                    driver_event(EventKind::SessionClosed, None),
                    &mut live,
                    &mut events,
                );
            }
        }
    }
    let end = end.expect("loop ends with a reason");
    {
        let mut status = req.status.lock().expect("status lock");
        status.phase = "cleaning up".into();
    }

    // Shutdown, the same on every path.
    input.close().await;
    lifeline.cut();
    if tokio::time::timeout(SUPERVISOR_LIMIT, supervisor.wait())
        .await
        .is_err()
    {
        tracing::warn!("supervisor did not finish cleaning up; killing it");
        procs::signal(supervisor_pid, libc::SIGKILL);
        let _ = supervisor.wait().await;
    }
    for reader in readers {
        let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
    }
    while let Ok((t, line)) = line_rx.try_recv() {
        for event in ingest_line(t, line, &mut normalizer, &mut stream_raw) {
            push(event, &mut live, &mut events);
        }
    }
    socket.flush().await;
    while let Ok(event) = api_rx.try_recv() {
        normalizer.learn_api(&event);
        push(event, &mut live, &mut events);
    }
    // What is left on the socket, then what could not reach it (it was closed) and went to
    // the fallback file.
    let pending: Vec<WireMessage> = std::iter::from_fn(|| wire_rx.try_recv().ok()).collect();
    for message in pending
        .into_iter()
        .chain(read_fallback(&sandbox.fallback_log()))
    {
        for event in ingest_wire(message, &clock, &mut normalizer, &mut hooks_raw) {
            push(event, &mut live, &mut events);
        }
    }
    socket.close();
    server.abort();
    if let Some(screen) = screen {
        for event in screen.finish().await {
            push(event, &mut live, &mut events);
        }
    }
    // The transcripts, read with seed 004's rules.
    for (_, reading) in crate::transcript::read_folder(&sandbox.transcripts()) {
        let agent = match &reading.agent_id {
            Some(id) => normalizer.agent_name(id),
            None => Some(MAIN_AGENT.to_string()),
        };
        let t_ms = reading
            .timestamp
            .as_deref()
            .and_then(crate::transcript::unix_ms)
            .map(|ms| ms.saturating_sub(started_unix_ms) as f64)
            .unwrap_or_else(|| clock.now_ms());
        for child in &reading.async_launches {
            let name = normalizer
                .agent_name(child)
                .unwrap_or_else(|| child.clone());
            push(
                Event {
                    t_ms,
                    source: Source::Transcript,
                    agent: agent.clone(),
                    kind: EventKind::TranscriptFact {
                        fact: "async-launch".into(),
                        detail: format!(
                            "the Agent call for `{name}` returned `async_launched`: a launch, not the child's outcome"
                        ),
                    },
                },
                &mut live,
                &mut events,
            );
        }
        push(
            Event {
                t_ms,
                source: Source::Transcript,
                agent,
                kind: EventKind::TranscriptFact {
                    fact: format!("status {}", reading.status.as_str()),
                    detail: reading.reason.clone(),
                },
            },
            &mut live,
            &mut events,
        );
    }
    let leftovers = sweep(&run_tag).await;
    for (pid, command) in &leftovers {
        push(
            driver_event(
                EventKind::Leftover {
                    pid: *pid,
                    command: command.clone(),
                },
                None,
            ),
            &mut live,
            &mut events,
        );
    }
    drop_redundant_vanishes(&mut events);
    normalizer.reattribute(&mut events);

    let duration_s = start.elapsed().as_secs_f64();
    let (cli_exit, cli_wall_s) = match &live.cli_exit {
        Some((exit, t)) => (Some(exit.clone()), Some((t - spawn_t) / 1000.0)),
        None => (None, None),
    };
    let info = RunInfo {
        schema: RUN_SCHEMA,
        scenario: plan.scenario.clone(),
        title: plan.title.clone(),
        variant: plan.variant.clone(),
        repetition: req.repetition,
        backend: req.cli.kind.clone(),
        cli_label: req.cli.label(),
        cli_version: req.cli.version.clone(),
        cli_spec: req.cli.spec.clone(),
        cli_version_reported: normalizer.cli_version.clone(),
        mode,
        permission_mode: plan.driver.permission_mode.clone(),
        params: plan.params.clone(),
        ceiling_s: plan.driver.ceiling.as_secs_f64(),
        started_unix_ms,
        duration_s,
        cli_wall_s,
        end,
        cli_exit,
        isolation,
        leftovers: leftovers
            .iter()
            .map(|(pid, c)| format!("{pid} {c}"))
            .collect(),
        command: req.command.clone(),
        expect: plan.expect.clone(),
        wakeprobe_version: env!("CARGO_PKG_VERSION").to_string(),
        os: os_description(),
    };
    let timeline = Timeline::new(events);
    let redactor = crate::report::redact::Redactor::for_run(sandbox.root(), &wakeprobe);
    crate::report::store::write_run_evidence(
        &req.dir,
        &redactor,
        &crate::report::store::RunEvidence {
            info: &info,
            timeline: &timeline,
            plan,
            stream: &stream_raw,
            hooks: &hooks_raw,
            raw_dir: &raw_dir,
            transcripts: &sandbox.transcripts(),
            scenario_source: &req.scenario_source,
        },
    )?;
    if req.keep_sandbox || std::env::var_os("WAKEPROBE_KEEP").is_some_and(|v| v == "1") {
        let kept = sandbox.keep();
        tracing::info!(sandbox = %kept.display(), "sandbox kept");
    }
    Ok(RunRecord {
        info,
        timeline,
        dir: req.dir,
        redactor,
    })
}

/// `Linux 6.1.0 x86_64`, from uname(2).
fn os_description() -> String {
    // SAFETY: uname fills a struct we own; its fields are NUL-terminated.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return std::env::consts::OS.to_string();
        }
        let field = |f: &[libc::c_char]| {
            std::ffi::CStr::from_ptr(f.as_ptr())
                .to_string_lossy()
                .into_owned()
        };
        format!(
            "{} {} {}",
            field(&u.sysname),
            field(&u.release),
            field(&u.machine)
        )
    }
}

/// A helper process's message as events; a hook's raw payload is kept for `hooks.jsonl`.
fn ingest_wire(
    message: WireMessage,
    clock: &RunClock,
    normalizer: &mut Normalizer,
    hooks_raw: &mut Vec<(f64, String)>,
) -> Vec<Event> {
    if let WireMessage::Hook { t_ns, payload } = &message {
        hooks_raw.push((clock.ms_at(*t_ns), payload.clone()));
    }
    normalizer.wire(message)
}

/// A stdout line as events; the raw line is kept for `stream.jsonl`.
fn ingest_line(
    t_ms: f64,
    line: String,
    normalizer: &mut Normalizer,
    stream_raw: &mut Vec<(f64, String)>,
) -> Vec<Event> {
    let events = normalizer.stream_line(t_ms, &line);
    stream_raw.push((t_ms, line));
    events
}

fn read_fallback(path: &Path) -> Vec<WireMessage> {
    std::fs::read_to_string(path)
        .map(|text| {
            text.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Kills anything still carrying the run's tag; returns what it found.
async fn sweep(run_tag: &str) -> Vec<(u32, String)> {
    let mut found: Vec<(u32, String)> = Vec::new();
    for _ in 0..20 {
        let left = procs::tagged(backend::RUN_TAG_ENV, run_tag);
        if left.is_empty() {
            break;
        }
        for p in left {
            if !found.iter().any(|(pid, _)| *pid == p.pid) {
                let cmd = procs::cmdline(p.pid);
                found.push((p.pid, if cmd.is_empty() { p.comm.clone() } else { cmd }));
            }
            procs::signal(p.pid, libc::SIGKILL);
        }
        tokio::time::sleep(Duration::from_millis(50)).await; // a SIGKILLed process needs a moment to go
    }
    found
}

/// A tracker that reported its own end also vanished; keep only the report.
fn drop_redundant_vanishes(events: &mut Vec<Event>) {
    let reported: HashSet<u32> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TrackEnded { pid, .. } => Some(*pid),
            _ => None,
        })
        .collect();
    events.retain(|e| {
        !matches!(&e.kind, EventKind::ProcessExited { pid, exit: ExitDesc::Vanished, .. } if reported.contains(pid))
    });
}

/// Watches tracked processes with pidfds, to time their end even when they are SIGKILLed and
/// cannot report it themselves.
struct VanishWatch {
    tx: mpsc::UnboundedSender<Event>,
    rx: mpsc::UnboundedReceiver<Event>,
}

impl VanishWatch {
    fn new() -> VanishWatch {
        let (tx, rx) = mpsc::unbounded_channel();
        VanishWatch { tx, rx }
    }

    async fn recv(&mut self) -> Option<Event> {
        self.rx.recv().await
    }

    fn watch(&self, pid: u32, name: String, clock: RunClock) {
        let tx = self.tx.clone();
        // SAFETY: pidfd_open returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) } as i32;
        if fd < 0 {
            return; // already gone, or no pidfd support: the tracker's own report stands
        }
        // SAFETY: the descriptor was just created and is owned here.
        let owned = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        tokio::spawn(async move {
            let Ok(afd) = pty::register(owned) else {
                return;
            };
            if afd.readable().await.is_ok() {
                let _ = tx.send(Event {
                    t_ms: clock.now_ms(),
                    source: Source::Os,
                    agent: None,
                    kind: EventKind::ProcessExited {
                        pid,
                        exit: ExitDesc::Vanished,
                        command: Some(format!("wp-track {name}")),
                    },
                });
            }
        });
    }
}
