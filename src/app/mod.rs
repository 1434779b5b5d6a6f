//! Wiring subcommands to the modules that do the work: resolving scenarios, CLIs and folders,
//! then handing over. Errors come back typed with the exit code they map to.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::watch;

use crate::backend::{self, Cli, install};
use crate::cli::{self, BackendArgs, BackendChoice, ExecArgs, exit};
use crate::matrix::{self, ExecOptions, Job};
use crate::scenario::{self, Scenario};

/// An error with the exit code it means.
#[derive(Debug)]
pub struct AppError {
    pub code: i32,
    pub message: String,
}

impl AppError {
    pub fn bad_input(message: impl Into<String>) -> AppError {
        AppError {
            code: exit::BAD_INPUT,
            message: message.into(),
        }
    }
    pub fn setup(message: impl Into<String>) -> AppError {
        AppError {
            code: exit::SETUP,
            message: message.into(),
        }
    }
}

impl From<scenario::ScenarioError> for AppError {
    fn from(e: scenario::ScenarioError) -> AppError {
        AppError::bad_input(e.to_string())
    }
}

impl From<install::InstallError> for AppError {
    fn from(e: install::InstallError) -> AppError {
        match e {
            install::InstallError::BadVersion(_) => AppError::bad_input(e.to_string()),
            other => AppError::setup(other.to_string()),
        }
    }
}

impl From<matrix::ExecError> for AppError {
    fn from(e: matrix::ExecError) -> AppError {
        match e {
            matrix::ExecError::Scenario(s) => s.into(),
            other => AppError::setup(other.to_string()),
        }
    }
}

pub type AppResult = Result<i32, AppError>;

/// A watch that turns true on Ctrl-C or SIGTERM.
pub fn cancel_on_signals() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
        }
        eprintln!("\nwakeprobe: interrupted; stopping runs and writing what finished");
        let _ = tx.send(true);
    });
    rx
}

/// Scenario files from names or paths; none means every file in `scenarios/`.
pub fn resolve_scenarios(specs: &[String]) -> Result<Vec<Arc<Scenario>>, AppError> {
    let dir = scenarios_dir();
    if specs.is_empty() || specs.iter().any(|s| s == "all") {
        let all = scenario::load_dir(&dir)?;
        if all.is_empty() {
            return Err(AppError::bad_input(format!(
                "no scenario files in {}",
                dir.display()
            )));
        }
        return Ok(all.into_iter().map(Arc::new).collect());
    }
    specs
        .iter()
        .map(|spec| {
            let as_path = PathBuf::from(spec);
            let path = if as_path.exists() {
                as_path
            } else {
                let named = dir.join(format!("{spec}.toml"));
                if !named.exists() {
                    return Err(AppError::bad_input(format!(
                        "{spec}: no such file, and no scenario named `{spec}` in {}",
                        dir.display()
                    )));
                }
                named
            };
            Ok(Arc::new(Scenario::load(&path)?))
        })
        .collect()
}

/// `scenarios/` in the working folder, else the one this binary was built from.
pub fn scenarios_dir() -> PathBuf {
    let local = PathBuf::from("scenarios");
    if local.is_dir() {
        return local;
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

pub fn template_dir(
    given: &Option<PathBuf>,
    scenarios: &[Arc<Scenario>],
) -> Result<PathBuf, AppError> {
    if let Some(dir) = given {
        return dir.is_dir().then(|| dir.clone()).ok_or_else(|| {
            AppError::bad_input(format!("--template {}: not a folder", dir.display()))
        });
    }
    let mut candidates: Vec<PathBuf> = scenarios
        .iter()
        .filter_map(|s| {
            s.path
                .canonicalize()
                .ok()?
                .parent()?
                .parent()
                .map(|p| p.join("sandbox-project"))
        })
        .collect();
    candidates.push(PathBuf::from("sandbox-project"));
    candidates.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sandbox-project"));
    candidates
        .into_iter()
        .find(|c| c.is_dir())
        .ok_or_else(|| AppError::setup("cannot find sandbox-project/ (pass --template DIR)"))
}

/// The CLI a run uses, installing a Claude Code version if needed.
pub async fn resolve_cli(args: &BackendArgs) -> Result<Cli, AppError> {
    match args.backend {
        BackendChoice::Sim => sim_cli(&args.profile),
        BackendChoice::Claude => match &args.claude_bin {
            Some(path) => Ok(install::from_path(path)?),
            None => claude_version(&args.claude_version).await,
        },
    }
}

pub fn sim_cli(profile: &str) -> Result<Cli, AppError> {
    if !crate::sim::PROFILES
        .iter()
        .any(|(name, _)| *name == profile)
    {
        return Err(AppError::bad_input(format!(
            "unknown simulator profile `{profile}`, expected one of: {}",
            crate::sim::PROFILES
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let program = backend::sim_binary().ok_or_else(|| {
        AppError::setup("claude-sim is not built next to wakeprobe (cargo build --bins)")
    })?;
    Ok(Cli {
        kind: backend::BackendKind::Sim {
            profile: profile.to_string(),
        },
        program,
        leading_args: vec![],
        version: "sim".into(),
        spec: format!("sim:{profile}"),
    })
}

/// Installs (once) and returns a Claude Code version; `latest`/`latest~K` ask npm.
pub async fn claude_version(spec: &str) -> Result<Cli, AppError> {
    let root = install::cache_root();
    let spec = spec.to_string();
    tokio::task::spawn_blocking(move || {
        let version = if spec.starts_with("latest") {
            let published = install::published_versions(&root)?;
            install::resolve_version(&spec, &published)?
        } else {
            install::resolve_version(&spec, &[])?
        };
        let mut cli = install::ensure(&root, &version, &|line| eprintln!("wakeprobe: {line}"))?;
        cli.spec = spec;
        Ok::<Cli, install::InstallError>(cli)
    })
    .await
    .map_err(|e| AppError::setup(format!("install task failed: {e}")))?
    .map_err(AppError::from)
}

pub fn exec_options(
    exec: &ExecArgs,
    scenarios: &[Arc<Scenario>],
    run_dir: PathBuf,
) -> Result<ExecOptions, AppError> {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    Ok(ExecOptions {
        run_dir,
        // A run mostly waits on the CLI and its sleeping tasks, so runs overlap well beyond the
        // CPU count; the cap keeps CLI start-ups from crowding each other's timing.
        jobs: exec.jobs.unwrap_or((4 * cpus).max(8)).max(1),
        template: template_dir(&exec.template, scenarios)?,
        keep: exec.keep,
        network: exec.network,
        progress: !exec.quiet,
    })
}

/// Every (scenario, variant, repetition) job for one CLI, variants filtered by `--variant`.
pub fn jobs_for(
    scenarios: &[Arc<Scenario>],
    exec: &ExecArgs,
    cli: &Cli,
) -> Result<Vec<Job>, AppError> {
    let mut jobs = Vec::new();
    for scenario in scenarios {
        let variants: Vec<String> = scenario
            .variants()
            .into_iter()
            .filter(|v| exec.variants.is_empty() || exec.variants.contains(v))
            .collect();
        for variant in &variants {
            // Checks --set against this scenario's parameters up front.
            let overrides: Vec<(String, String)> = exec
                .sets
                .iter()
                .filter(|(k, _)| scenario.default_params().contains_key(k))
                .cloned()
                .collect();
            scenario.plan(variant, &overrides)?;
            for repetition in 1..=exec.repeat {
                jobs.push(Job {
                    scenario: scenario.clone(),
                    variant: variant.clone(),
                    cli: cli.clone(),
                    repetition,
                    overrides: overrides.clone(),
                });
            }
        }
    }
    if jobs.is_empty() {
        return Err(AppError::bad_input(format!(
            "no run matches: variants {:?} are not in the chosen scenarios",
            exec.variants
        )));
    }
    for (key, _) in &exec.sets {
        if !scenarios
            .iter()
            .any(|s| s.default_params().contains_key(key))
        {
            return Err(AppError::bad_input(format!(
                "--set {key}: no chosen scenario has this parameter"
            )));
        }
    }
    Ok(jobs)
}

pub fn run_dir(out: &Path) -> PathBuf {
    out.join(matrix::new_run_id())
}

mod cache;
mod conform;
mod export;
mod guard;
mod matrix_cmd;
mod report;
mod run;

pub use cache::human_size;
pub use run::finish_invocation;

/// Runs one subcommand.
pub async fn dispatch(command: cli::Command) -> AppResult {
    use cli::Command;
    let stale = crate::sandbox::sweep_stale();
    if stale > 0 {
        tracing::info!(stale, "removed sandboxes left by harnesses that died");
    }
    match command {
        Command::Run(args) => run::run(args).await,
        Command::List(args) => run::list(&args),
        Command::Cache(command) => cache::cache(command),
        Command::Report(args) => report::report(&args),
        Command::Matrix(args) => matrix_cmd::matrix(args).await,
        Command::Merge(args) => matrix_cmd::merge(&args),
        Command::Baseline(cli::BaselineCommand::Update { matrix, baseline }) => {
            matrix_cmd::baseline_update(&matrix, &baseline)
        }
        Command::Bisect(args) => matrix_cmd::bisect(args).await,
        Command::Conform(args) => conform::conform(args).await,
        Command::Export(args) => export::export(&args).await,
        Command::Guard(cli::GuardCommand::Verify {
            script,
            with_seed,
            seed_report,
        }) => guard::guard_verify(script, with_seed, seed_report),
        Command::HookRecord(_) | Command::Track(_) | Command::Supervise(_) => {
            unreachable!("helpers are handled before the runtime starts")
        }
    }
}
