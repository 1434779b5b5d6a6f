//! Resolving what a command names into what it runs, once and before anything runs: scenario
//! files, the CLI (installing a version if needed), the jobs with their `--set` overrides and
//! `--variant` filter, the run folder (created exclusively), and the signal watch. Every
//! mistake here is a bad-input error, located where it can be.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::AppError;
use crate::backend::catalog::{Catalog, CatalogError, Release, Spec};
use crate::backend::channel::Platform;
use crate::backend::{self, Cli, install, registry};
use crate::cli::{BackendArgs, BackendChoice, ExecArgs};
use crate::driver::{Cancel, Interrupt};
use crate::evidence::clock::monotonic_ns;
use crate::matrix::{self, ExecOptions, Job};
use crate::scenario::{self, Plan, RangePolicy, Runtime, Scenario};

/// A watch that turns `Some` on SIGINT, SIGTERM or SIGHUP, with the signal and its time.
pub fn cancel_on_signals() -> Cancel {
    use tokio::signal::unix::{SignalKind, signal};
    let (tx, rx) = tokio::sync::watch::channel(None);
    tokio::spawn(async move {
        let mut term = signal(SignalKind::terminate()).ok();
        let mut hup = signal(SignalKind::hangup()).ok();
        let next = |s: &mut Option<tokio::signal::unix::Signal>| {
            let s = s.take();
            async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
        };
        let signal = tokio::select! {
            _ = tokio::signal::ctrl_c() => "SIGINT",
            _ = next(&mut term) => "SIGTERM",
            _ = next(&mut hup) => "SIGHUP",
        };
        let at_ns = monotonic_ns();
        eprintln!("\nwakeprobe: {signal}: stopping runs and writing what finished");
        let _ = tx.send(Some(Interrupt { signal, at_ns }));
    });
    rx
}

/// Scenario files from names or paths; none means every file in `scenarios/`.
pub fn scenarios(specs: &[String]) -> Result<Vec<Arc<Scenario>>, AppError> {
    let dir = scenarios_dir()?;
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

/// The scenarios, each run by `--driver` when it is given (re-read from their text, so a
/// mapping that fails is located in the file).
pub fn driven(
    scenarios: Vec<Arc<Scenario>>,
    exec: &ExecArgs,
) -> Result<Vec<Arc<Scenario>>, AppError> {
    let Some(mode) = exec.driver else {
        return Ok(scenarios);
    };
    scenarios
        .into_iter()
        .map(|s| {
            let again = Scenario::parse(&s.path, s.source.clone())?;
            Ok(Arc::new(again.with_driver(mode)?))
        })
        .collect()
}

/// The targets, each run by `--driver` when it is given.
pub fn driven_targets(targets: Vec<Target>, exec: &ExecArgs) -> Result<Vec<Target>, AppError> {
    if exec.driver.is_none() {
        return Ok(targets);
    }
    targets
        .into_iter()
        .map(|t| {
            let scenario = driven(vec![t.scenario], exec)?.remove(0);
            Ok(Target {
                scenario,
                variant: t.variant,
            })
        })
        .collect()
}

/// A JSON file of results given as input (a baseline, a shard's `matrix.json`, a history to
/// append to): a regular file within [`files::RESULTS_LIMIT`], or bad input naming it.
pub fn read_results_file(path: &Path) -> Result<Vec<u8>, AppError> {
    use crate::os::files;
    files::read_bounded(path, files::RESULTS_LIMIT, "a results file")
        .map_err(|e| AppError::bad_input(format!("{}: {e}", path.display())))
}

/// One scenario variant a search judges.
#[derive(Debug, Clone)]
pub struct Target {
    pub scenario: Arc<Scenario>,
    pub variant: String,
}

impl Target {
    /// `scenario/variant`
    pub fn title(&self) -> String {
        format!("{}/{}", self.scenario.name, self.variant)
    }
}

/// Scenario variants from `NAME`, `NAME/VARIANT`, a file (optionally `FILE/VARIANT`) or `all`;
/// a spec without a variant means each of its variants that `--variant` lets through.
pub fn targets(specs: &[String], variants: &[String]) -> Result<Vec<Target>, AppError> {
    let mut out: Vec<Target> = Vec::new();
    for spec in specs {
        let (scenarios, named) = match scenarios(std::slice::from_ref(spec)) {
            Ok(found) => (found, None),
            // A file that exists but does not load is its own error, not a `FILE/VARIANT`.
            Err(whole) if PathBuf::from(spec).exists() => return Err(whole),
            // `FOLDER/FILE` that does not exist is a missing file, not `FILE` as a variant.
            Err(whole) => match spec.rsplit_once('/') {
                Some((left, variant))
                    if !left.is_empty() && !variant.is_empty() && !Path::new(left).is_dir() =>
                {
                    (scenarios(&[left.to_string()])?, Some(variant.to_string()))
                }
                _ => return Err(whole),
            },
        };
        for scenario in scenarios {
            let chosen: Vec<String> = match &named {
                Some(v) if scenario.variants().contains(v) => vec![v.clone()],
                Some(v) => {
                    return Err(AppError::bad_input(format!(
                        "{spec}: `{}` has no variant `{v}`, expected one of: {}",
                        scenario.name,
                        scenario.variants().join(", ")
                    )));
                }
                None => scenario
                    .variants()
                    .into_iter()
                    .filter(|v| variants.is_empty() || variants.contains(v))
                    .collect(),
            };
            for variant in chosen {
                if !out
                    .iter()
                    .any(|t| t.scenario.name == scenario.name && t.variant == variant)
                {
                    out.push(Target {
                        scenario: scenario.clone(),
                        variant,
                    });
                }
            }
        }
    }
    if out.is_empty() {
        return Err(AppError::bad_input(format!(
            "no scenario variant matches {} (with --variant {:?})",
            specs.join(", "),
            variants
        )));
    }
    Ok(out)
}

/// A chosen variant with its `--set` overrides and its plan, resolved once for the whole
/// invocation: every CLI and repetition of it shares the plan.
#[derive(Debug, Clone)]
pub struct Planned {
    pub target: Target,
    pub overrides: Vec<(String, String)>,
    pub plan: Arc<Plan>,
}

/// Resolves each target once, before any CLI is installed: the execution flags' checks,
/// `--set` (each key once, each known to a chosen scenario; a bad value or one outside its
/// range fails here), the range policy, and the `--fault`s that apply to it (one that applies
/// to no chosen variant is refused).
pub fn plan_targets(targets: &[Target], exec: &ExecArgs) -> Result<Vec<Planned>, AppError> {
    let scenarios: Vec<Arc<Scenario>> = targets.iter().map(|t| t.scenario.clone()).collect();
    check_exec_flags(&scenarios, exec)?;
    let faults = faults(&scenarios, exec)?;
    let planned = targets
        .iter()
        .map(|t| {
            let overrides = overrides_of(&t.scenario, exec);
            let mut plan = t.scenario.plan_with(&t.variant, &overrides, policy(exec))?;
            matrix::add_faults(&mut plan, &faults);
            Ok(Planned {
                target: t.clone(),
                overrides,
                plan: Arc::new(plan),
            })
        })
        .collect::<Result<Vec<Planned>, AppError>>()?;
    let plans: Vec<&Plan> = planned.iter().map(|p| p.plan.as_ref()).collect();
    faults_apply(&faults, &plans)?;
    Ok(planned)
}

/// The `--set` values a scenario has a parameter for.
fn overrides_of(scenario: &Scenario, exec: &ExecArgs) -> Vec<(String, String)> {
    exec.sets
        .iter()
        .filter(|(k, _)| scenario.default_params().contains_key(k))
        .cloned()
        .collect()
}

/// The `--scenarios-dir` the invocation was given, set once before dispatch.
static CHOSEN_SCENARIOS_DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Where the invocation's scenario library is: `--scenarios-dir` (which must be a folder).
pub fn choose_scenarios_dir(dir: Option<PathBuf>) -> Result<(), AppError> {
    let Some(dir) = dir else { return Ok(()) };
    if !dir.is_dir() {
        return Err(AppError::bad_input(format!(
            "--scenarios-dir {}: not a folder",
            dir.display()
        )));
    }
    let _ = CHOSEN_SCENARIOS_DIR.set(dir);
    Ok(())
}

/// Where the scenario library comes from, in order of precedence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LibrarySource {
    /// `--scenarios-dir DIR` (or `WAKEPROBE_SCENARIOS_DIR`).
    Chosen(PathBuf),
    /// `scenarios/` in the working folder (a checkout, or a folder made by `wakeprobe init`).
    WorkingFolder,
    /// The library built into the binary, written once into the cache.
    Embedded,
}

impl LibrarySource {
    pub fn current() -> LibrarySource {
        if let Some(dir) = CHOSEN_SCENARIOS_DIR.get() {
            return LibrarySource::Chosen(dir.clone());
        }
        if Path::new(crate::scenario::library::SCENARIOS_DIR).is_dir() {
            return LibrarySource::WorkingFolder;
        }
        LibrarySource::Embedded
    }

    /// The scenario folder.
    pub fn scenarios(&self) -> Result<PathBuf, AppError> {
        Ok(match self {
            LibrarySource::Chosen(dir) => dir.clone(),
            LibrarySource::WorkingFolder => PathBuf::from(crate::scenario::library::SCENARIOS_DIR),
            LibrarySource::Embedded => {
                embedded_root()?.join(crate::scenario::library::SCENARIOS_DIR)
            }
        })
    }
}

/// The embedded library's copy in the cache.
fn embedded_root() -> Result<PathBuf, AppError> {
    let cache = crate::backend::install::cache_root();
    crate::scenario::library::materialized(&cache).map_err(|e| {
        AppError::setup(format!(
            "cannot write the built-in scenario library under {}: {e}",
            cache.display()
        ))
    })
}

/// The scenario folder of this invocation (see `LibrarySource`).
pub fn scenarios_dir() -> Result<PathBuf, AppError> {
    LibrarySource::current().scenarios()
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
    candidates.push(PathBuf::from(crate::scenario::library::SANDBOX_DIR));
    if let Some(found) = candidates.into_iter().find(|c| c.is_dir()) {
        return Ok(found);
    }
    Ok(embedded_root()?.join(crate::scenario::library::SANDBOX_DIR))
}

/// The CLI a run uses, installing a Claude Code version if needed (or one of `--runtime`'s).
pub async fn cli(args: &BackendArgs) -> Result<Cli, AppError> {
    check_backend(args)?;
    match (args.backend, args.runtime) {
        (BackendChoice::Sim, _) => sim_cli(args.profile()),
        (BackendChoice::Claude, Some(runtime)) if runtime != Runtime::ClaudeCode => {
            claude_version(&args.version_on(runtime)).await
        }
        (BackendChoice::Claude, _) => match &args.claude_bin {
            Some(path) => Ok(install::from_path(path)?),
            None => claude_version(args.version()).await,
        },
    }
}

/// The one runtime the backend flags name for every scenario: `--runtime`, or Claude Code for
/// the simulator and `--claude-bin`; `None` lets each scenario run on its own.
pub fn named_runtime(args: &BackendArgs) -> Option<Runtime> {
    match (args.backend, args.runtime) {
        (BackendChoice::Sim, _) => Some(Runtime::ClaudeCode),
        (_, Some(runtime)) => Some(runtime),
        _ if args.claude_bin.is_some() => Some(Runtime::ClaudeCode),
        _ => None,
    }
}

/// The runtime of the one CLI [`cli`] gives for these flags: the named one, else Claude Code.
/// A command that runs on that one CLI puts its targets on it ([`on_runtimes`]) before it
/// plans them.
pub fn cli_runtime(args: &BackendArgs) -> Runtime {
    named_runtime(args).unwrap_or(Runtime::ClaudeCode)
}

/// The CLI of each runtime the targets run on: `--runtime`'s (or the simulator) for all, else
/// each scenario's own; a version flag names a version of the one runtime they share.
pub async fn clis_by_runtime(
    args: &BackendArgs,
    targets: &[Target],
) -> Result<Vec<(Runtime, Cli)>, AppError> {
    check_backend(args)?;
    if named_runtime(args).is_some() {
        let cli = cli(args).await?;
        return Ok(vec![(cli.kind.runtime(), cli)]);
    }
    let mut runtimes: Vec<Runtime> = targets.iter().map(|t| t.scenario.runtime()).collect();
    runtimes.sort();
    runtimes.dedup();
    if runtimes.len() > 1 && args.claude_version.is_some() {
        return Err(AppError::bad_input(format!(
            "--cli-version names one runtime's version, and the chosen scenarios run on {}: add --runtime",
            runtimes
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join(" and ")
        )));
    }
    let mut out = Vec::new();
    for runtime in runtimes {
        out.push((runtime, claude_version(&args.version_on(runtime)).await?));
    }
    Ok(out)
}

/// A backend flag that the chosen backend would ignore is bad input, said before anything is
/// installed or run.
pub fn check_backend(args: &BackendArgs) -> Result<(), AppError> {
    match args.pointless_flag() {
        Some(message) => Err(AppError::bad_input(message)),
        None => Ok(()),
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
        // `cargo run --release` builds wakeprobe alone: name the build that puts it beside.
        AppError::setup(
            "claude-sim is not built next to wakeprobe: `cargo build --bins` (or \
             `cargo build --release --bins` for `cargo run --release`)",
        )
    })?;
    Ok(Cli {
        kind: backend::BackendKind::Sim {
            profile: profile.to_string(),
        },
        program,
        leading_args: vec![],
        version: "sim".into(),
        spec: format!("sim:{profile}"),
        channel: None,
    })
}

/// Installs (once) and returns a Claude Code version. A version in the cache runs as cached,
/// from the channel it was installed from, without asking the registry; `latest`, `latest~K`
/// and a version not cached are resolved over both channels ([`catalog`]).
pub async fn claude_version(spec: &str) -> Result<Cli, AppError> {
    if let (runtime, version) = crate::runtime::split_spec(spec)
        && runtime != Runtime::ClaudeCode
    {
        return runtime_version(runtime, version, spec).await;
    }
    let root = install::cache_root();
    let parsed = Spec::parse(spec)?;
    let cached = match &parsed {
        Spec::Exact(v) => install::cached_channel(&root, &v.to_string()).map(|channel| Release {
            version: v.clone(),
            channel,
        }),
        Spec::Latest { .. } => None,
    };
    let release = match cached {
        Some(release) => release,
        None => catalog().await?.resolve(&parsed)?.clone(),
    };
    let spec = spec.to_string();
    tokio::task::spawn_blocking(move || {
        let mut cli = install::ensure(&root, &release, &|line| eprintln!("wakeprobe: {line}"))?;
        cli.spec = spec;
        Ok::<Cli, install::InstallError>(cli)
    })
    .await
    .map_err(|e| AppError::setup(format!("install task failed: {e}")))?
    .map_err(AppError::from)
}

/// Installs (once) and returns a version of a runtime that installs itself (its row's
/// `ensure`): a cached exact version runs as cached; `latest`, `latest~K` and a version not
/// cached are resolved over its releases. `spec` is kept as asked (`opencode@latest`).
async fn runtime_version(runtime: Runtime, version: &str, spec: &str) -> Result<Cli, AppError> {
    let adapter = crate::runtime::Adapter::of(runtime);
    let ensure = adapter
        .ensure
        .expect("a runtime other than Claude Code installs itself");
    let root = install::cache_root();
    let cached = install::is_cached_in(&root.join(adapter.cache_folder), version);
    let exact = match Spec::parse(version)? {
        Spec::Exact(v) if cached => v.to_string(),
        parsed => pick_release(runtime, &parsed, version).await?,
    };
    let spec = spec.to_string();
    tokio::task::spawn_blocking(move || {
        let mut cli = ensure(&root, &exact, &|line| eprintln!("wakeprobe: {line}"))?;
        cli.spec = spec;
        Ok::<Cli, install::InstallError>(cli)
    })
    .await
    .map_err(|e| AppError::setup(format!("install task failed: {e}")))?
    .map_err(AppError::from)
}

/// A runtime's release a spec stands for: `latest~K` counted back, an exact version that must
/// be a release (else the nearest are named).
async fn pick_release(runtime: Runtime, spec: &Spec, text: &str) -> Result<String, AppError> {
    let releases = releases_of(runtime).await?;
    if let Spec::Exact(v) = spec
        && !releases.contains(&v.to_string())
    {
        let below = releases.iter().rev().find(|r| install::version_key(r) < *v);
        let above = releases.iter().find(|r| install::version_key(r) > *v);
        let nearest: Vec<&String> = below.into_iter().chain(above).collect();
        return Err(AppError::bad_input(format!(
            "{v} is not a release of {} ({}) with a binary for this machine{}",
            runtime.title(),
            crate::runtime::Adapter::of(runtime).source,
            match nearest.as_slice() {
                [] => String::new(),
                n => format!(
                    ": the nearest are {}",
                    n.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                ),
            }
        )));
    }
    Ok(spec.pick(text, &releases)?)
}

/// The releases of runtimes that list their own, asked of the registry once per invocation.
static RUNTIME_RELEASES: tokio::sync::OnceCell<Vec<String>> = tokio::sync::OnceCell::const_new();

/// Every release of a runtime, oldest first: Claude Code's over both channels ([`catalog`]),
/// another's as its row lists them.
pub async fn releases_of(runtime: Runtime) -> Result<Vec<String>, AppError> {
    let Some(list) = crate::runtime::Adapter::of(runtime).releases else {
        return Ok(catalog().await?.versions());
    };
    RUNTIME_RELEASES
        .get_or_try_init(|| async move {
            let root = install::cache_root();
            tokio::task::spawn_blocking(move || list(&root))
                .await
                .map_err(|e| AppError::setup(format!("registry task failed: {e}")))?
                .map_err(AppError::setup)
        })
        .await
        .cloned()
}

/// The catalog of this invocation, once asked.
static CATALOG: tokio::sync::OnceCell<Catalog> = tokio::sync::OnceCell::const_new();

/// Every published version over both channels, asked of the registry once per invocation (a
/// failed answer is asked again next time).
pub async fn catalog() -> Result<&'static Catalog, AppError> {
    CATALOG
        .get_or_try_init(|| async {
            let root = install::cache_root();
            let answers = tokio::task::spawn_blocking(move || registry::ask(&root))
                .await
                .map_err(|e| AppError::setup(format!("registry task failed: {e}")))?
                .map_err(CatalogError::from)?;
            Ok::<Catalog, AppError>(Catalog::build(&answers, Platform::here()))
        })
        .await
}

/// `2.1.335 (agent-sdk 0.3.335)`: a version with its channel, when this invocation asked the
/// registry already (it never asks just to say this).
pub fn describe(version: &str) -> String {
    match CATALOG.get().and_then(|c| c.get(version)) {
        Some(release) => release.describe(),
        None => version.to_string(),
    }
}

/// The channel the catalog names for `version`, when this invocation asked the registry
/// already (it never asks just to say this).
pub fn known_channel(version: &str) -> Option<crate::backend::channel::Channel> {
    CATALOG
        .get()
        .and_then(|c| c.get(version))
        .map(|release| release.channel.clone())
}

/// A version spec resolved to its exact version: `latest` and `latest~K` over the catalog (or
/// over the releases of the runtime a qualified spec names: `opencode@latest`).
pub async fn exact_version(spec: &str) -> Result<String, AppError> {
    if let (runtime, version) = crate::runtime::split_spec(spec)
        && runtime != Runtime::ClaudeCode
    {
        return match Spec::parse(version)? {
            Spec::Exact(v) => Ok(v.to_string()),
            latest => pick_release(runtime, &latest, version).await,
        };
    }
    match Spec::parse(spec)? {
        Spec::Exact(v) => Ok(v.to_string()),
        latest => Ok(catalog().await?.resolve(&latest)?.version.to_string()),
    }
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
        faults: faults(scenarios, exec)?,
        cli_args: exec.cli_args.clone(),
        sdk_versions: sdk_versions(exec)?,
        run_dir,
        // A run mostly waits on the CLI and its sleeping tasks, so runs overlap well beyond the
        // CPU count; the cap keeps CLI start-ups from crowding each other's timing.
        jobs: exec.jobs.map(usize::from).unwrap_or((4 * cpus).max(8)),
        template: template_dir(&exec.template, scenarios)?,
        keep: exec.keep,
        network: exec.network,
        progress: match exec.quiet {
            true => crate::matrix::progress::Display::Finished,
            false => crate::matrix::progress::Display::Full,
        },
    })
}

/// `--sdk-version` and `--sdk-py-version`, checked to be versions.
fn sdk_versions(exec: &ExecArgs) -> Result<backend::sdk::SdkVersions, AppError> {
    for (flag, v, pinned) in [
        ("--sdk-version", &exec.sdk_version, backend::sdk::PINNED_TS),
        (
            "--sdk-py-version",
            &exec.sdk_py_version,
            backend::sdk::PINNED_PY,
        ),
    ] {
        if !backend::install::is_version(v) {
            return Err(AppError::bad_input(format!(
                "{flag} {v}: expected a release number such as {pinned}"
            )));
        }
    }
    Ok(backend::sdk::SdkVersions {
        ts: exec.sdk_version.clone(),
        py: exec.sdk_py_version.clone(),
    })
}

/// Checks the execution flags and every chosen variant's values, for a command that resolves
/// its plans itself (not through [`plan_targets`], which checks the values as it resolves).
pub fn check_exec_args(scenarios: &[Arc<Scenario>], exec: &ExecArgs) -> Result<(), AppError> {
    check_exec_flags(scenarios, exec)?;
    check_values(scenarios, exec)
}

/// Checks `--variant` and `--set` against the chosen scenarios (each name must mean something
/// in at least one of them), and the other execution flags, without resolving a plan.
fn check_exec_flags(scenarios: &[Arc<Scenario>], exec: &ExecArgs) -> Result<(), AppError> {
    sdk_versions(exec)?;
    check_sets_once(&exec.sets)?;
    for variant in &exec.variants {
        if !scenarios.iter().any(|s| s.variants().contains(variant)) {
            let mut known: Vec<String> = scenarios.iter().flat_map(|s| s.variants()).collect();
            known.sort();
            known.dedup();
            return Err(AppError::bad_input(format!(
                "--variant {variant}: no chosen scenario has this variant (they have: {})",
                known.join(", ")
            )));
        }
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
    faults(scenarios, exec)?;
    check_cli_args(&exec.cli_args)?;
    check_out(&exec.out)?;
    check_junit(exec.junit.as_deref(), &exec.out)
}

/// `--junit FILE`: a file to write (again, each run) in a folder that exists or that the
/// invocation makes (`--out`); said before anything runs.
pub fn check_junit(junit: Option<&Path>, out: &Path) -> Result<(), AppError> {
    use crate::store::output::{Existing, check_file};
    match junit {
        Some(path) => check_file(path, Existing::Replace, Some(out))
            .map_err(|e| AppError::from(e).prefixed("--junit ")),
        None => Ok(()),
    }
}

/// The arguments the harness gives the CLI itself: a `--cli-arg` may not give them again (the
/// run would not be the one its report describes).
const HARNESS_CLI_ARGS: &[&str] = &[
    "-p",
    "--print",
    "--input-format",
    "--output-format",
    "--verbose",
    "--permission-mode",
    "--allowedTools",
    "--allowed-tools",
];

/// `--cli-arg`s: the first must be a flag, and none may be one of the harness's own.
pub fn check_cli_args(args: &[String]) -> Result<(), AppError> {
    if let Some(first) = args.first().filter(|a| !a.starts_with('-')) {
        return Err(AppError::bad_input(format!(
            "--cli-arg {first}: expected a flag for the CLI (starting with `-`), e.g. --cli-arg=--no-session-persistence"
        )));
    }
    if let Some((arg, why)) = backend::flags::reaching(args) {
        return Err(AppError::bad_input(format!(
            "--cli-arg {arg}: it would reach outside the run's sandbox: {why}"
        )));
    }
    for arg in args {
        let name = arg.split('=').next().unwrap_or(arg);
        if HARNESS_CLI_ARGS.contains(&name) {
            return Err(AppError::bad_input(format!(
                "--cli-arg {arg}: the harness passes {name} itself (see the report's Repro)"
            )));
        }
    }
    Ok(())
}

/// Every chosen variant resolves with its `--set` values: a value of the wrong type, a
/// duration out of range, a ceiling made absurd, all said before anything is installed.
/// (Ranges, which depend on the variant a command picks, are checked with its jobs.)
fn check_values(scenarios: &[Arc<Scenario>], exec: &ExecArgs) -> Result<(), AppError> {
    for scenario in scenarios {
        let overrides: Vec<(String, String)> = exec
            .sets
            .iter()
            .filter(|(k, _)| scenario.default_params().contains_key(k))
            .cloned()
            .collect();
        let chosen = scenario
            .variants()
            .into_iter()
            .filter(|v| exec.variants.is_empty() || exec.variants.contains(v));
        for variant in chosen {
            scenario.plan_with(&variant, &overrides, RangePolicy::Explore)?;
        }
    }
    Ok(())
}

/// Each `--set` key once: a second value would silently replace the first.
pub fn check_sets_once(sets: &[(String, String)]) -> Result<(), AppError> {
    for (i, (key, value)) in sets.iter().enumerate() {
        if let Some((_, first)) = sets[..i].iter().find(|(k, _)| k == key) {
            return Err(AppError::bad_input(format!(
                "--set {key} is given twice ({key}={first}, then {key}={value}): give each parameter once"
            )));
        }
    }
    Ok(())
}

/// `--fault` specs, each resolved; its agent (or tracked work) must be one of a chosen
/// scenario's.
pub fn faults(
    scenarios: &[Arc<Scenario>],
    exec: &ExecArgs,
) -> Result<Vec<(String, crate::scenario::Fault)>, AppError> {
    let agents: std::collections::BTreeSet<String> =
        scenarios.iter().flat_map(|s| s.agent_names()).collect();
    let tracks: std::collections::BTreeSet<String> =
        scenarios.iter().flat_map(|s| s.track_names()).collect();
    exec.faults
        .iter()
        .map(|spec| {
            let fault = crate::scenario::fault::parse_spec(spec, &agents, &tracks)?;
            Ok((spec.clone(), fault))
        })
        .collect()
}

/// The one variant a command works on: `--variant` given once, else the scenario's first.
/// `what` starts the error: "bisect judges" one variant.
pub fn one_variant(scenario: &Scenario, exec: &ExecArgs, what: &str) -> Result<String, AppError> {
    match exec.variants.as_slice() {
        [] => Ok(scenario.variants()[0].clone()),
        [one] => Ok(one.clone()),
        _ => Err(AppError::bad_input(format!(
            "{what} one variant: pass --variant once"
        ))),
    }
}

/// `--out` must be able to hold run folders: said before anything is installed or run, and
/// without creating anything (bad input writes nothing). The nearest existing folder on the
/// path must be a folder (else the argument is wrong: exit 2) this process can write into
/// (else the machine is: a read-only or forbidden folder is a setup failure, exit 3).
pub fn check_out(out: &Path) -> Result<(), AppError> {
    let refuse = |source: std::io::Error| out_error(out, source);
    for ancestor in out.ancestors() {
        let ancestor = if ancestor.as_os_str().is_empty() {
            Path::new(".")
        } else {
            ancestor
        };
        let Ok(meta) = std::fs::metadata(ancestor) else {
            continue;
        };
        if !meta.is_dir() {
            return Err(refuse(std::io::Error::from_raw_os_error(libc::ENOTDIR)));
        }
        let access = rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK;
        return rustix::fs::access(ancestor, access).map_err(|e| refuse(e.into()));
    }
    Ok(())
}

/// `--out` cannot hold a run folder: a path through a file is a wrong argument (exit 2); a
/// folder that cannot be written (read-only, forbidden, full) is a setup failure (exit 3).
fn out_error(out: &Path, source: std::io::Error) -> AppError {
    let message = format!(
        "--out {}: cannot create a run folder there: {source}",
        out.display()
    );
    match source.raw_os_error() {
        Some(libc::ENOTDIR) => AppError::bad_input(message),
        _ => AppError::setup(message),
    }
}

/// Every variant of `scenarios` that `--variant` lets through.
pub fn chosen_targets(scenarios: &[Arc<Scenario>], exec: &ExecArgs) -> Vec<Target> {
    scenarios
        .iter()
        .flat_map(|scenario| {
            scenario
                .variants()
                .into_iter()
                .filter(|v| exec.variants.is_empty() || exec.variants.contains(v))
                .map(|variant| Target {
                    scenario: scenario.clone(),
                    variant,
                })
        })
        .collect()
}

/// Every (scenario, variant, repetition) job for one CLI, variants filtered by `--variant`,
/// each variant planned once here, so a bad value fails before any run.
pub fn jobs(scenarios: &[Arc<Scenario>], exec: &ExecArgs, cli: &Cli) -> Result<Vec<Job>, AppError> {
    let targets = on_runtimes(
        &chosen_targets(scenarios, exec),
        Some(&[cli.kind.runtime()]),
    )?;
    jobs_of(&plan_targets(&targets, exec)?, exec, cli)
}

/// Each target on each runtime it will run on: every one of `runtimes` when the invocation
/// names them (`--runtime`, the matrix's columns, the simulator), else its scenario's own. A
/// scenario that a runtime cannot carry is refused here, located, before any plan or install.
pub fn on_runtimes(
    targets: &[Target],
    runtimes: Option<&[Runtime]>,
) -> Result<Vec<Target>, AppError> {
    let mut out = Vec::new();
    for target in targets {
        let own = [target.scenario.runtime()];
        for runtime in runtimes.unwrap_or(&own) {
            out.push(Target {
                scenario: on_runtime(&target.scenario, *runtime)?,
                variant: target.variant.clone(),
            });
        }
    }
    Ok(out)
}

/// The scenario as it runs on `runtime` (itself when it already does); refused, located, if
/// that runtime cannot carry it.
pub fn on_runtime(scenario: &Arc<Scenario>, runtime: Runtime) -> Result<Arc<Scenario>, AppError> {
    Ok(match scenario.for_runtime(runtime)? {
        Some(on) => Arc::new(on),
        None => scenario.clone(),
    })
}

/// The runs of each planned target on `cli` (`--repeat` of each), in order; what `cli` cannot
/// run is refused (an SDK driver asked for on the simulator, a `--cli-arg` it does not accept)
/// or, where a sweep of the simulator meets an SDK scenario, left out and said.
pub fn jobs_of(planned: &[Planned], exec: &ExecArgs, cli: &Cli) -> Result<Vec<Job>, AppError> {
    if let Some(arg) = backend::flags::unaccepted(cli, &exec.cli_args) {
        return Err(AppError::bad_input(format!(
            "--cli-arg {arg}: {} does not accept it (its --help names no such flag)",
            cli.label()
        )));
    }
    let mut jobs = Vec::new();
    let mut not_simulated: Vec<String> = Vec::new();
    let runtime = cli.kind.runtime();
    for Planned {
        target: Target { scenario, variant },
        overrides,
        plan,
    } in planned
    {
        // Each target was put on its runtimes before planning (`on_runtimes`): this CLI runs
        // the ones on its own.
        if scenario.runtime() != runtime {
            continue;
        }
        if plan.driver.mode.row().host.is_some() && !exec.cli_args.is_empty() {
            return Err(AppError::bad_input(format!(
                "--cli-arg: {}/{variant} runs through the Agent SDK (`{}`), which starts the CLI with its own arguments",
                scenario.name, plan.driver.mode
            )));
        }
        if plan.driver.mode.row().host.is_some()
            && matches!(cli.kind, backend::BackendKind::Sim { .. })
        {
            // Asked for (`--driver`): refused. A scenario of the SDK drivers in a sweep of the
            // simulator: left out, and said.
            if exec.driver.is_some() {
                return Err(AppError::bad_input(format!(
                    "{}/{variant} runs on the `{}` driver: {}",
                    scenario.name,
                    plan.driver.mode,
                    crate::driver::SIM_SPEAKS_NO_SDK
                )));
            }
            not_simulated.push(format!("{}/{variant}", scenario.name));
            continue;
        }
        for repetition in 1..=exec.repeat {
            jobs.push(Job {
                reference: scenario_reference(scenario),
                scenario: scenario.clone(),
                variant: variant.clone(),
                cli: cli.clone(),
                repetition,
                overrides: overrides.clone(),
                policy: policy(exec),
                plan: plan.clone(),
            });
        }
    }
    if !not_simulated.is_empty() {
        // One short line: it prints above the progress display.
        eprintln!(
            "wakeprobe: left out {} (the simulator cannot run the Agent SDK drivers)",
            crate::report::plural(not_simulated.len(), "variant", "variants")
        );
    }
    if jobs.is_empty() {
        return Err(AppError::bad_input(match not_simulated.is_empty() {
            true => format!(
                "no run matches: variants {:?} are not in the chosen scenarios",
                exec.variants
            ),
            false => format!(
                "no run left: {} run through an Agent SDK, which needs the real CLI",
                not_simulated.join(", ")
            ),
        }));
    }
    Ok(jobs)
}

/// Each `--fault` can hit at least one chosen run: one that fits none (a crash with only print
/// variants, an agent or command no chosen variant has) is refused before anything runs,
/// never skipped in silence.
fn faults_apply(
    faults: &[(String, crate::scenario::Fault)],
    plans: &[&Plan],
) -> Result<(), AppError> {
    for (spec, fault) in faults {
        if plans.iter().any(|p| fault.applies_to(p)) {
            continue;
        }
        let why = if plans.iter().any(|p| fault.kind.applies_in(p.driver.mode)) {
            "its agent or tracked command is in none of them".to_string()
        } else {
            format!(
                "`{}` needs a variant whose driver can resume ({})",
                fault.kind.as_str(),
                crate::scenario::DriverMode::those(|r| r.resumable)
            )
        };
        return Err(AppError::bad_input(format!(
            "--fault {spec}: it applies to none of the chosen variants: {why}"
        )));
    }
    Ok(())
}

/// `--explore`: whether values outside a parameter's range may run.
pub fn policy(exec: &ExecArgs) -> RangePolicy {
    if exec.explore {
        RangePolicy::Explore
    } else {
        RangePolicy::Enforce
    }
}

/// How a report's repro command names a scenario: by name when it is the library's (what
/// `wakeprobe run NAME` finds), else by its path relative to the working folder; never by an
/// absolute path (a report travels to machines where it means nothing).
pub fn scenario_reference(scenario: &Scenario) -> String {
    let canonical = |p: &Path| p.canonicalize().ok();
    let folder = scenario.path.parent().and_then(canonical);
    let library = scenarios_dir().ok().and_then(|d| canonical(&d));
    if folder.is_some() && folder == library {
        return scenario.name.clone();
    }
    if scenario.path.is_relative() {
        return scenario.path.display().to_string();
    }
    // Outside the working folder: the file's own name, as the draft's scenario-file block
    // (and the run folder's scenario.toml) hands it over.
    crate::scenario::in_working_folder(&scenario.path)
        .map(|rel| rel.display().to_string())
        .unwrap_or_else(|| format!("{}.toml", scenario.name))
}

/// A new run-id folder under `out`, created exclusively (no two invocations share one) and
/// marked incomplete until the invocation seals it (see `folder::seal_folder`).
pub fn new_run_dir(out: &Path) -> Result<PathBuf, AppError> {
    for _ in 0..100 {
        let id = matrix::new_run_id();
        let dir = out.join(&id);
        match crate::store::create_exclusive(&dir) {
            Ok(()) => {
                // Marked incomplete now; `OUT/latest` moves to it only once it is whole.
                if let Err(e) = super::folder::open_folder(out, &id) {
                    // A folder that cannot even say it is incomplete is not left behind.
                    let _ = std::fs::remove_dir_all(&dir);
                    return Err(out_error(out, e.source));
                }
                return Ok(dir);
            }
            Err(e) if e.source.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(out_error(out, e.source)),
        }
    }
    Err(AppError::setup(format!(
        "--out {}: no free run folder name after 100 tries",
        out.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::{check_cli_args, check_out};

    /// Resolve once, then run: an invocation resolves each chosen variant's plan once, however
    /// many CLIs and repetitions run it, and every job carries that plan (no later stage
    /// resolves the scenario again).
    #[test]
    fn each_chosen_variant_is_planned_once_for_every_cli_and_repetition() {
        use clap::Parser;
        let out = tempfile::tempdir().unwrap();
        let parsed = crate::cli::Cli::try_parse_from([
            "wakeprobe",
            "run",
            "subagent-bg-turn-end",
            "--repeat",
            "3",
            "--set",
            "bg_seconds=7",
            "--out",
            out.path().to_str().unwrap(),
        ])
        .unwrap();
        let crate::cli::Command::Run(args) = parsed.command else {
            panic!("a run")
        };
        // Loading a file checks that each variant resolves with its defaults; the invocation's
        // plans are counted from there.
        let targets = super::targets(&["subagent-bg-turn-end".into()], &[]).unwrap();
        let before = crate::scenario::plans_resolved();
        let planned = super::plan_targets(&targets, &args.exec).unwrap();
        let mut jobs = Vec::new();
        for version in ["2.1.219", "2.1.332"] {
            let cli = crate::backend::Cli {
                kind: crate::backend::BackendKind::Claude,
                program: "claude".into(),
                leading_args: vec![],
                version: version.into(),
                spec: version.into(),
                channel: None,
            };
            jobs.extend(super::jobs_of(&planned, &args.exec, &cli).unwrap());
        }
        assert_eq!(targets.len(), 2, "print and session");
        assert_eq!(
            crate::scenario::plans_resolved() - before,
            targets.len(),
            "one resolution per chosen variant"
        );
        assert_eq!(jobs.len(), 2 * 3 * 2, "variants x repetitions x CLIs");
        for job in &jobs {
            let own = planned
                .iter()
                .find(|p| p.target.variant == job.variant)
                .unwrap();
            assert!(
                std::sync::Arc::ptr_eq(&job.plan, &own.plan),
                "{}",
                job.title()
            );
            assert_eq!(job.plan.params["bg_seconds"].to_string(), "7");
        }
    }

    #[test]
    fn cli_args_are_flags_and_never_the_harness_own() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_cli_args(&[]).is_ok());
        assert!(check_cli_args(&args(&["--no-session-persistence"])).is_ok());
        assert!(
            check_cli_args(&args(&["--model", "opus"])).is_ok(),
            "a flag's value"
        );
        for (bad, says) in [
            (&["opus"][..], "expected a flag"),
            (&["--verbose"][..], "the harness passes --verbose itself"),
            (
                &["--permission-mode=auto"][..],
                "passes --permission-mode itself",
            ),
            (&["--model", "x", "-p"][..], "passes -p itself"),
        ] {
            let err = check_cli_args(&args(bad)).unwrap_err();
            assert_eq!(err.code, crate::cli::Exit::BadInput, "{bad:?}");
            assert!(err.message.contains(says), "{bad:?}: {}", err.message);
        }
    }

    #[test]
    fn an_out_folder_is_checked_without_creating_it() {
        let tmp = tempfile::tempdir().unwrap();
        let fresh = tmp.path().join("a/b/reports");
        assert!(check_out(&fresh).is_ok());
        assert!(!tmp.path().join("a").exists(), "the check creates nothing");
        let file = tmp.path().join("file");
        std::fs::write(&file, "").unwrap();
        let err = check_out(&file.join("reports")).unwrap_err();
        assert_eq!(err.code, crate::cli::Exit::BadInput);
        let err = err.message;
        assert!(err.contains("Not a directory"), "{err}");
        assert!(
            check_out(std::path::Path::new("reports")).is_ok(),
            "a relative path"
        );
    }
}
