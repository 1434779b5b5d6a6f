//! Building one run's world and starting the CLI in it: the sandbox, the fake API, the event
//! socket, the supervisor with the CLI under it (in a private network namespace when allowed),
//! and the readers of its output. What comes back is everything the session loop and the
//! shutdown need.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

use super::input::InputSink;
use super::netns;
use super::pty;
use super::socket::EventSocket;
use super::supervise::Lifeline;
use super::{DriverError, RunRequest};
use crate::backend::{self, EnvSpec};
use crate::evidence::Event;
use crate::evidence::clock::RunClock;
use crate::evidence::run::{BackendKind, Isolation};
use crate::evidence::runtime::{Origin, RuntimeEvidence};
use crate::evidence::wire::WireMessage;
use crate::fake_api::fault::TriggerTimes;
use crate::fake_api::{self, ApiConfig, ApiState};
use crate::runtime::{Adapter, StartArgs, StdinUse};
use crate::sandbox::{Sandbox, SandboxSpec};
use crate::scenario::MAIN_AGENT;
use crate::scenario::mode::{CliArgs, Stdin};

/// A started run: the world, the CLI under its supervisor, and the channels evidence arrives on.
pub struct Launched {
    pub clock: RunClock,
    pub started_unix_ms: u64,
    pub sandbox: Sandbox,
    pub raw_dir: PathBuf,
    /// The environment tag every process of the run carries (the leftover sweep's key).
    pub run_tag: String,
    pub wakeprobe: PathBuf,
    pub api_rx: mpsc::UnboundedReceiver<Event>,
    pub wire_rx: mpsc::UnboundedReceiver<WireMessage>,
    pub line_rx: mpsc::UnboundedReceiver<(f64, String)>,
    pub socket: EventSocket,
    pub server: tokio::task::JoinHandle<()>,
    pub supervisor: tokio::process::Child,
    pub supervisor_pid: u32,
    pub lifeline: Lifeline,
    pub readers: Vec<tokio::task::JoinHandle<()>>,
    pub screen: Option<pty::ScreenHandle>,
    pub input: InputSink,
    pub isolation: Isolation,
    /// When the CLI was spawned, on the run's clock.
    pub spawn_t: f64,
    /// The prompt with the main agent's tag, as the CLI receives it.
    pub tagged_prompt: String,
    /// The triggers faults count from, as the session loop sees them (the fake API reads).
    pub triggers: TriggerTimes,
    /// The Agent SDK an SDK mode's host runs the CLI through.
    pub sdk: Option<crate::backend::sdk::SdkInstall>,
    /// Lines of the runtime's own evidence (a runtime other than Claude Code).
    pub rt_rx: mpsc::UnboundedReceiver<(f64, Origin, String)>,
    /// The runtime's reader of them, handed to the recorder.
    pub evidence: Option<Box<dyn RuntimeEvidence>>,
    /// The runtime's own channels, ended at shutdown.
    pub runtime_io: super::runtime_io::RuntimeIo,
}

/// Builds the sandbox, starts the fake API and the CLI.
pub fn launch(req: &RunRequest) -> Result<Launched, DriverError> {
    let World {
        clock,
        started_unix_ms,
        adapter,
        wakeprobe,
        sandbox,
        raw_dir,
        run_tag,
    } = World::build(req)?;
    let plan = &req.plan;
    let (wire_tx, wire_rx) = mpsc::unbounded_channel::<WireMessage>();
    let socket = EventSocket::listen(&sandbox.events_socket(), wire_tx)
        .map_err(|e| DriverError::Start(format!("event socket: {e}")))?;
    let (api, api_rx, triggers) = fake_api_state(req, adapter, &raw_dir, &socket, clock);
    let tagged_prompt = tagged_prompt(req);
    let mut lifeline = Lifeline::new().map_err(|e| DriverError::Start(e.to_string()))?;
    let host = prepare_host(req, &sandbox)?;
    let pty_pair = open_terminal(req)?;
    let spawn_t = clock.now_ms();
    // `start` holds from the spawn on. Noted here, before the CLI can make its first request:
    // the session loop notes triggers after events, and on a loaded machine the first request
    // could come before it looked (a fault `after = "start"` then hit request 2, not 1).
    triggers.record(&crate::scenario::Trigger::Start, spawn_t);
    let parts = SpawnParts {
        sandbox: &sandbox,
        wakeprobe: &wakeprobe,
        run_tag: &run_tag,
        tagged_prompt: &tagged_prompt,
        pty: pty_pair.as_ref(),
        host: host.as_ref(),
        adapter,
        raw_dir: &raw_dir,
    };
    let Spawned {
        listener,
        mut supervisor,
        isolation,
        netns,
        started,
    } = match spawn_in_network(req, &parts, &mut lifeline) {
        Ok(spawned) => spawned,
        Err(e) => {
            socket.close();
            return Err(e);
        }
    };
    lifeline.spawned();
    let supervisor_pid = supervisor.id().unwrap_or(0);
    let server = serve_fake_api(listener, api)?;
    let (line_tx, line_rx) = mpsc::unbounded_channel::<(f64, String)>();
    let (listening_tx, listening) = tokio::sync::watch::channel(false);
    let mut outputs = read_outputs(
        &mut supervisor,
        pty_pair,
        clock,
        &raw_dir,
        (line_tx, started.1.map(|_| listening_tx)),
    )?;
    if plan.driver.mode.row().stdin == Stdin::Integration {
        outputs.input = outputs.input.speaking_integration();
    }
    let wired = super::runtime_io::wire(super::runtime_io::Wiring {
        adapter,
        started,
        input: &mut outputs.input,
        raw_dir: &raw_dir,
        netns: &netns,
        listening,
        clock,
        prompt: &tagged_prompt,
        supervisor: supervisor_pid,
        mode: plan.driver.mode,
        origin_unix_ms: started_unix_ms as f64,
    });
    Ok(Launched {
        clock,
        started_unix_ms,
        sandbox,
        raw_dir,
        run_tag,
        wakeprobe,
        api_rx,
        wire_rx,
        line_rx,
        socket,
        server,
        supervisor,
        supervisor_pid,
        lifeline,
        readers: outputs.readers,
        screen: outputs.screen,
        input: outputs.input,
        isolation,
        spawn_t,
        tagged_prompt,
        triggers,
        sdk: host.map(|h| h.sdk),
        rt_rx: wired.lines,
        evidence: wired.evidence,
        runtime_io: wired.io,
    })
}

/// The run's ground, laid before anything starts: its clock, the runtime's row, the sandbox
/// with the folder raw evidence goes to, and the tag its processes carry.
struct World {
    clock: RunClock,
    started_unix_ms: u64,
    adapter: &'static Adapter,
    wakeprobe: PathBuf,
    sandbox: Sandbox,
    raw_dir: PathBuf,
    run_tag: String,
}

impl World {
    fn build(req: &RunRequest) -> Result<World, DriverError> {
        let clock = RunClock::start();
        let started_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let plan = &req.plan;
        let adapter = Adapter::of(req.cli.kind.runtime());
        let wakeprobe = crate::backend::wakeprobe_binary()
            .map_err(|e| DriverError::Start(format!("cannot find the wakeprobe binary: {e}")))?;
        let sandbox = Sandbox::build(&SandboxSpec {
            template: req.template.clone(),
            helper_bin: crate::backend::helper_binary(&wakeprobe),
            guard: plan.driver.guard,
            label: plan.scenario.clone(),
        })?;
        let raw_dir = sandbox.root().join("evidence");
        std::fs::create_dir_all(&raw_dir).map_err(|e| DriverError::Start(e.to_string()))?;
        let run_tag = format!("{}-{}", std::process::id(), clock.origin_ns());
        Ok(World {
            clock,
            started_unix_ms,
            adapter,
            wakeprobe,
            sandbox,
            raw_dir,
            run_tag,
        })
    }
}

/// The fake API's state (the scenario's script and faults, the work ends the event socket
/// hears), the receiver of the events it records, and the triggers faults count from (shared
/// with the session loop).
fn fake_api_state(
    req: &RunRequest,
    adapter: &Adapter,
    raw_dir: &std::path::Path,
    socket: &EventSocket,
    clock: RunClock,
) -> (
    std::sync::Arc<ApiState>,
    mpsc::UnboundedReceiver<Event>,
    TriggerTimes,
) {
    let plan = &req.plan;
    let (sink, api_rx) = mpsc::unbounded_channel::<Event>();
    let triggers = TriggerTimes::default();
    let api = ApiState::new(
        ApiConfig {
            script: plan.agents.clone(),
            track_command: "wp-track".into(),
            evidence_dir: Some(raw_dir.to_path_buf()),
            faults: plan.faults.clone(),
            work_ends: Some(socket.work_ends()),
            triggers: triggers.clone(),
            notifications: adapter.notifications,
        },
        clock,
        sink,
    );
    (api, api_rx, triggers)
}

/// The prompt with the main agent's tag, as the CLI receives it.
fn tagged_prompt(req: &RunRequest) -> String {
    format!(
        "{}\n\n{}",
        req.plan.driver.prompt,
        fake_api::request::agent_tag(MAIN_AGENT)
    )
}

/// The pseudo-terminal the CLI runs on, in a mode that talks to it through one.
fn open_terminal(req: &RunRequest) -> Result<Option<pty::PtyPair>, DriverError> {
    (req.plan.driver.mode.row().stdin == Stdin::Terminal)
        .then(pty::PtyPair::open)
        .transpose()
        .map_err(|e| DriverError::Start(format!("pseudo-terminal: {e}")))
}

/// What starts in the CLI's place: the integration's command, or an SDK mode's host; `None`
/// where the CLI itself is started.
fn prepare_host(
    req: &RunRequest,
    sandbox: &Sandbox,
) -> Result<Option<super::sdk::HostLaunch>, DriverError> {
    let driver = &req.plan.driver;
    Ok(match driver.mode.row().args {
        CliArgs::ByIntegration => Some(super::command::prepare(
            &req.sdk_versions,
            &req.cli,
            &req.cli_args,
            driver,
            sandbox,
        )?),
        _ => driver
            .mode
            .row()
            .host
            .map(|h| super::sdk::prepare(h, &req.sdk_versions, &req.cli, driver, sandbox))
            .transpose()?,
    })
}

/// What spawning left: the fake API's listener, the supervisor with the CLI under it, the
/// network isolation achieved with its namespace, and how the CLI's standard input is used
/// with the port of the server it opens.
struct Spawned {
    listener: std::net::TcpListener,
    supervisor: tokio::process::Child,
    isolation: Isolation,
    netns: netns::Netns,
    started: (StdinUse, Option<u16>),
}

/// Binds the fake API's listener and spawns the supervised CLI, both in the run's network; a
/// failure names the program that would not start.
fn spawn_in_network(
    req: &RunRequest,
    parts: &SpawnParts,
    lifeline: &mut Lifeline,
) -> Result<Spawned, DriverError> {
    let mut started = (StdinUse::ByMode, None);
    let spawned = netns::bind_and_spawn(req.network, |addr| {
        let (child, stdin, port) =
            spawn_supervised(req, parts, &format!("http://{addr}"), lifeline)?;
        started = (stdin, port);
        Ok(child)
    });
    match spawned {
        Ok((listener, supervisor, isolation, netns)) => Ok(Spawned {
            listener,
            supervisor,
            isolation,
            netns,
            started,
        }),
        Err(e) => Err(DriverError::Start(format!(
            "cannot start {}: {e}",
            parts
                .host
                .map_or(&req.cli.program, |h| &h.program)
                .display()
        ))),
    }
}

/// Serves the fake API on the listener bound in the run's network.
fn serve_fake_api(
    listener: std::net::TcpListener,
    api: std::sync::Arc<ApiState>,
) -> Result<tokio::task::JoinHandle<()>, DriverError> {
    let listener = tokio::net::TcpListener::from_std(listener)
        .map_err(|e| DriverError::Start(format!("fake API listener: {e}")))?;
    Ok(tokio::spawn(async move {
        if let Err(e) = fake_api::serve(listener, api).await {
            tracing::error!(%e, "the fake API stopped");
        }
    }))
}

struct SpawnParts<'a> {
    sandbox: &'a Sandbox,
    wakeprobe: &'a std::path::Path,
    run_tag: &'a str,
    tagged_prompt: &'a str,
    pty: Option<&'a pty::PtyPair>,
    /// An SDK mode's host, started in place of the CLI.
    host: Option<&'a super::sdk::HostLaunch>,
    /// The runtime's row: its sandbox files, environment and start.
    adapter: &'static Adapter,
    raw_dir: &'a std::path::Path,
}

/// The scenario's `env` with each second sandboxed folder (`{{@folder:NAME}}`) made and named.
fn with_folders(
    env: &indexmap::IndexMap<String, String>,
    sandbox: &Sandbox,
) -> std::io::Result<indexmap::IndexMap<String, String>> {
    env.iter()
        .map(|(name, value)| {
            let value = crate::scenario::env::fill(value, |folder| {
                sandbox.folder(folder).map(|p| p.display().to_string())
            })?;
            Ok((name.clone(), value))
        })
        .collect()
}

/// Spawns the supervisor with the CLI under it, in the scrubbed environment (with what the
/// runtime adds); returns it, how the CLI's standard input is used, and the port of the server
/// it opens in a mode that talks to one (picked here, in the run's network).
fn spawn_supervised(
    req: &RunRequest,
    parts: &SpawnParts,
    api_url: &str,
    lifeline: &mut Lifeline,
) -> std::io::Result<(tokio::process::Child, StdinUse, Option<u16>)> {
    let plan = &req.plan;
    let port = (parts.adapter.serves)(plan.driver.mode)
        .then(netns::free_port)
        .transpose()?;
    let sim_profile = match &req.cli.kind {
        BackendKind::Sim { profile } => Some(profile.as_str()),
        BackendKind::Claude | BackendKind::Opencode => None,
    };
    let env = backend::scrubbed_env(&EnvSpec {
        home: &parts.sandbox.home(),
        tmp: &parts.sandbox.tmp(),
        bin: &parts.sandbox.bin(),
        api_url,
        run_tag: parts.run_tag,
        events_socket: &parts.sandbox.events_socket(),
        pty: parts.pty.is_some(),
        scenario_env: &with_folders(&plan.driver.env, parts.sandbox)?,
        sim_profile,
    });
    let runtime_env = (parts.adapter.prepare)(parts.sandbox, api_url, parts.raw_dir)
        .map_err(std::io::Error::other)?;
    let start = (parts.adapter.start)(&StartArgs {
        cli: &req.cli,
        driver: &plan.driver,
        tagged_prompt: parts.tagged_prompt,
        port,
    });
    let (program, args, host_env) = match parts.host {
        Some(host) => (
            &host.program,
            host.args.clone(),
            host.env
                .iter()
                .map(|(var, value)| (var.name(), value.clone()))
                .collect(),
        ),
        None => {
            let mut args = start.args;
            args.extend(req.cli_args.iter().cloned());
            (&req.cli.program, args, vec![])
        }
    };
    let mut cmd = lifeline.command(
        parts.wakeprobe,
        &parts.sandbox.events_socket(),
        parts.pty.is_some(),
        program,
        &args,
    );
    cmd.env_clear()
        .envs(env)
        .envs(runtime_env)
        .envs(host_env)
        .current_dir(parts.sandbox.project())
        .kill_on_drop(false);
    match parts.pty {
        Some(pair) => {
            cmd.stdin(pair.child_stdio()?)
                .stdout(pair.child_stdio()?)
                .stderr(pair.child_stdio()?);
        }
        None => {
            cmd.stdin(match (start.stdin, plan.driver.mode.row().stdin) {
                (StdinUse::Prompt, _) => std::process::Stdio::piped(),
                (StdinUse::Null, _) => std::process::Stdio::null(),
                (_, Stdin::StreamJson | Stdin::Integration) => std::process::Stdio::piped(),
                (_, Stdin::Null | Stdin::Terminal) => std::process::Stdio::null(),
            })
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        }
    }
    Ok((cmd.spawn()?, start.stdin, port))
}

struct Outputs {
    readers: Vec<tokio::task::JoinHandle<()>>,
    screen: Option<pty::ScreenHandle>,
    input: InputSink,
}

/// Starts reading the CLI's output: stream-json lines and stderr, or the pty's screen. A
/// server's "listening" line on stdout trips `listening`, when given.
fn read_outputs(
    supervisor: &mut tokio::process::Child,
    pty_pair: Option<pty::PtyPair>,
    clock: RunClock,
    raw_dir: &std::path::Path,
    (line_tx, listening): (
        mpsc::UnboundedSender<(f64, String)>,
        Option<tokio::sync::watch::Sender<bool>>,
    ),
) -> Result<Outputs, DriverError> {
    if let Some(pair) = pty_pair {
        let (writer, reader) = pair
            .into_parts()
            .map_err(|e| DriverError::Start(e.to_string()))?;
        return Ok(Outputs {
            readers: Vec::new(),
            screen: Some(reader.spawn(clock, raw_dir.join("pty.raw"))),
            input: InputSink::Pty(writer),
        });
    }
    let mut readers = Vec::new();
    if let Some(stdout) = supervisor.stdout.take() {
        readers.push(tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(l) = &listening
                    && line.contains(" listening on ")
                {
                    let _ = l.send(true);
                }
                let _ = line_tx.send((clock.now_ms(), line));
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
    let input = match supervisor.stdin.take() {
        Some(stdin) => InputSink::Stdin(stdin),
        None => InputSink::None,
    };
    Ok(Outputs {
        readers,
        screen: None,
        input,
    })
}
