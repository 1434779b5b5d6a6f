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

fn template_dir(given: &Option<PathBuf>, scenarios: &[Arc<Scenario>]) -> Result<PathBuf, AppError> {
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
        install::ensure(&root, &version, &|line| eprintln!("wakeprobe: {line}"))
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
        jobs: exec.jobs.unwrap_or(cpus).max(1),
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

/// `wakeprobe list`
pub fn list(args: &cli::ListArgs) -> AppResult {
    let dir = if args.dir.is_dir() {
        args.dir.clone()
    } else {
        scenarios_dir()
    };
    let scenarios = scenario::load_dir(&dir)?;
    let mut table = comfy_table::Table::new();
    table.load_style(comfy_table::presets::NOTHING);
    table.set_header(["scenario", "seed", "variants", "summary"]);
    for s in &scenarios {
        table.add_row([
            s.name.clone(),
            s.seed.clone().unwrap_or_else(|| "-".into()),
            s.variants().join(", "),
            s.summary.clone(),
        ]);
    }
    println!("{table}");
    Ok(exit::OK)
}

/// Runs one subcommand.
pub async fn dispatch(command: cli::Command) -> AppResult {
    use cli::Command;
    let stale = crate::sandbox::sweep_stale();
    if stale > 0 {
        tracing::info!(stale, "removed sandboxes left by harnesses that died");
    }
    match command {
        Command::Run(args) => run(args).await,
        Command::List(args) => list(&args),
        Command::Cache(command) => cache(command),
        Command::Report(args) => report(&args),
        Command::Guard(cli::GuardCommand::Verify {
            script,
            with_seed,
            seed_report,
        }) => guard_verify(script, with_seed, seed_report),
        Command::HookRecord(_) | Command::Track(_) | Command::Supervise(_) => {
            unreachable!("helpers are handled before the runtime starts")
        }
        _ => Err(AppError::bad_input(
            "this subcommand is not implemented yet",
        )),
    }
}

/// `wakeprobe run`
async fn run(args: cli::RunArgs) -> AppResult {
    let scenarios = resolve_scenarios(&args.scenarios)?;
    let cli = resolve_cli(&args.backend).await?;
    let jobs = jobs_for(&scenarios, &args.exec, &cli)?;
    let run_dir = run_dir(&args.exec.out);
    let opts = exec_options(&args.exec, &scenarios, run_dir.clone())?;
    let cancel = cancel_on_signals();
    let results = matrix::execute(jobs, &opts, cancel.clone()).await?;
    let interrupted = *cancel.borrow();
    let summary = finish_invocation(&run_dir, &results, interrupted, args.exec.junit.as_deref())?;
    if interrupted {
        return Ok(exit::INTERRUPTED);
    }
    Ok(if summary.all_match() {
        exit::OK
    } else {
        exit::MISMATCH
    })
}

/// Writes `summary.json` (and JUnit when asked), prints the table; returns the summary.
fn finish_invocation(
    run_dir: &Path,
    results: &[matrix::CellResult],
    interrupted: bool,
    junit: Option<&Path>,
) -> Result<crate::report::json::Summary, AppError> {
    use crate::report::{json::Summary, redact::Redactor, store};
    let run_id = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let rows: Vec<(crate::report::json::RunResult, String)> = results
        .iter()
        .map(|c| (c.result.clone(), c.job.folder().display().to_string()))
        .collect();
    let summary = Summary::build(&run_id, &rows, interrupted);
    store::write_json(&run_dir.join("summary.json"), &Redactor::basic(), &summary)
        .map_err(|e| AppError::setup(e.to_string()))?;
    // Repeated cells: their drafts now know the agreement of all repetitions.
    for cell in summary.cells.iter().filter(|c| c.runs > 1) {
        for dir in &cell.dirs {
            let saved = crate::report::saved::SavedRun::load(&run_dir.join(dir))
                .map_err(|e| AppError::setup(e.to_string()))?;
            let result = saved.judge();
            saved
                .rerender(&result, Some(&cell.agreement))
                .map_err(|e| AppError::setup(e.to_string()))?;
        }
    }
    if let Some(path) = junit {
        let xml = crate::report::junit::render(
            &summary,
            &rows.iter().map(|(r, _)| r).collect::<Vec<_>>(),
        );
        store::write_atomic(path, xml.as_bytes()).map_err(|e| AppError::setup(e.to_string()))?;
    }
    let color = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let pairs: Vec<(&crate::report::json::RunResult, &crate::evidence::Timeline)> = results
        .iter()
        .map(|c| (&c.result, &c.record.timeline))
        .collect();
    println!(
        "{}",
        crate::report::terminal::summary(&summary, &pairs, color)
    );
    for c in results {
        if let Some(v) = c.result.judgement.primary()
            && (c.result.matches_expect == Some(false) || results.len() == 1)
        {
            println!(
                "{}/{} on {}: {} ({})",
                c.result.run.scenario,
                c.result.run.variant,
                c.result.run.cli_label,
                v.outcome,
                v.outcome.hypothesis()
            );
            println!("  {}", v.explanation);
        }
    }
    eprintln!("reports: {}", run_dir.display());
    Ok(summary)
}

/// `wakeprobe cache list|prune`
fn cache(command: cli::CacheCommand) -> AppResult {
    let root = install::cache_root();
    let versions = install::cached_versions(&root);
    match command {
        cli::CacheCommand::List => {
            let mut table = comfy_table::Table::new();
            table.load_style(comfy_table::presets::NOTHING);
            table.set_header(["version", "size", "path"]);
            let mut total = 0;
            for v in &versions {
                total += v.bytes;
                table.add_row([
                    v.version.clone(),
                    human_size(v.bytes),
                    v.path.display().to_string(),
                ]);
            }
            println!("{table}");
            println!(
                "{} version(s), {} in {}",
                versions.len(),
                human_size(total),
                root.display()
            );
        }
        cli::CacheCommand::Prune { keep } => {
            let removable: Vec<_> = versions
                .iter()
                .rev()
                .filter(|v| v.version != backend::PINNED_VERSION)
                .skip(keep)
                .collect();
            let mut freed = 0;
            for v in removable {
                std::fs::remove_dir_all(&v.path).map_err(|e| {
                    AppError::setup(format!("cannot remove {}: {e}", v.path.display()))
                })?;
                freed += v.bytes;
                println!("removed {} ({})", v.version, human_size(v.bytes));
            }
            println!("freed {}", human_size(freed));
        }
    }
    Ok(exit::OK)
}

pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// `wakeprobe report DIR...`: judge saved runs again and re-render every report.
fn report(args: &cli::ReportArgs) -> AppResult {
    use crate::report::{json::Summary, redact::Redactor, saved, store};
    let mut all_match = true;
    for dir in &args.dirs {
        let runs = saved::find_runs(dir).map_err(|e| AppError::bad_input(e.to_string()))?;
        let mut loaded = Vec::new();
        for run in &runs {
            let saved =
                saved::SavedRun::load(run).map_err(|e| AppError::bad_input(e.to_string()))?;
            let result = saved.judge();
            loaded.push((saved, result));
        }
        let rows: Vec<(crate::report::json::RunResult, String)> = loaded
            .iter()
            .map(|(s, r)| {
                (
                    r.clone(),
                    s.dir
                        .strip_prefix(dir)
                        .unwrap_or(&s.dir)
                        .display()
                        .to_string(),
                )
            })
            .collect();
        let run_id = dir
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let summary = Summary::build(&run_id, &rows, false);
        for (saved, result) in &loaded {
            let cell = summary.cells.iter().find(|c| {
                c.scenario == result.run.scenario
                    && c.variant == result.run.variant
                    && c.cli == result.run.cli_label
            });
            let agreement = cell.filter(|c| c.runs > 1).map(|c| c.agreement.as_str());
            saved
                .rerender(result, agreement)
                .map_err(|e| AppError::setup(e.to_string()))?;
        }
        if runs.len() > 1 || dir.join("summary.json").exists() {
            store::write_json(&dir.join("summary.json"), &Redactor::basic(), &summary)
                .map_err(|e| AppError::setup(e.to_string()))?;
        }
        let pairs: Vec<(&crate::report::json::RunResult, &crate::evidence::Timeline)> =
            loaded.iter().map(|(s, r)| (r, &s.timeline)).collect();
        let color = std::io::IsTerminal::is_terminal(&std::io::stdout());
        println!(
            "{}",
            crate::report::terminal::summary(&summary, &pairs, color)
        );
        eprintln!("re-rendered {} run(s) in {}", runs.len(), dir.display());
        all_match &= summary.all_match();
    }
    Ok(if all_match { exit::OK } else { exit::MISMATCH })
}

/// The seed 000 report: `../shared/seeds/000_*.txt` from here or from the source tree.
fn find_seed_report() -> Option<PathBuf> {
    let roots = [
        PathBuf::from(".."),
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."),
    ];
    roots.iter().find_map(|root| {
        std::fs::read_dir(root.join("shared").join("seeds"))
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name().is_some_and(|n| {
                    n.to_string_lossy().starts_with("000_") && n.to_string_lossy().ends_with(".txt")
                })
            })
    })
}

/// `wakeprobe guard verify`
fn guard_verify(
    script: Option<PathBuf>,
    with_seed: bool,
    seed_report: Option<PathBuf>,
) -> AppResult {
    use crate::guard::{self, Verification};
    let ours = match script {
        Some(s) => s,
        None => template_dir(&None, &[])?.join(".claude/hooks/subagent-stall-guard.sh"),
    };
    if !ours.is_file() {
        return Err(AppError::bad_input(format!(
            "{}: no such guard script",
            ours.display()
        )));
    }
    let cases = guard::corpus();
    let mine = Verification::run(&ours, &cases);
    let seed_dir = tempfile::tempdir().map_err(|e| AppError::setup(e.to_string()))?;
    let seed = if with_seed {
        let report_path = seed_report.or_else(find_seed_report).ok_or_else(|| {
            AppError::bad_input("cannot find seed 000's report (pass --seed-report PATH)")
        })?;
        let text = std::fs::read_to_string(&report_path)
            .map_err(|e| AppError::bad_input(format!("{}: {e}", report_path.display())))?;
        let body = guard::extract_seed_guard(&text).ok_or_else(|| {
            AppError::bad_input(format!(
                "{}: no guard script found in it",
                report_path.display()
            ))
        })?;
        let path = seed_dir.path().join("seed-000-subagent-stall-guard.sh");
        std::fs::write(&path, body).map_err(|e| AppError::setup(e.to_string()))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| AppError::setup(e.to_string()))?;
        Some(Verification::run(&path, &cases))
    } else {
        None
    };
    let mut table = comfy_table::Table::new();
    table
        .load_style(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(150);
    let mut header = vec!["case", "expected", "ours", "ok"];
    if seed.is_some() {
        header.push("seed 000's guard");
    }
    table.set_header(header);
    for (i, case) in cases.iter().enumerate() {
        let expected = match case.expected {
            guard::Decision::Block => "block",
            guard::Decision::Pass => "pass",
        };
        let got = &mine.results[i];
        let ok = if *got == guard::Got::Decided(case.expected) {
            "✓"
        } else {
            "✗"
        };
        let mut row = vec![
            crate::evidence::normalize::truncate(&case.name, 70),
            expected.to_string(),
            got.label(),
            ok.to_string(),
        ];
        if let Some(seed) = &seed {
            let s = &seed.results[i];
            let mark = if *s == guard::Got::Decided(case.expected) {
                ""
            } else {
                " (miss)"
            };
            row.push(format!("{}{mark}", s.label()));
        }
        table.add_row(row);
    }
    println!("{table}");
    let (fneg, fpos, errors) = mine.misses(&cases);
    println!(
        "{}: {fneg} false negatives, {fpos} false positives, {errors} errors over {} cases",
        ours.display(),
        cases.len()
    );
    if let Some(seed) = &seed {
        let (fneg, fpos, errors) = seed.misses(&cases);
        println!(
            "seed 000's guard: {fneg} false negatives, {fpos} false positives, {errors} errors (findings about that script, not failures of this check)"
        );
    }
    Ok(if mine.passed(&cases) {
        exit::OK
    } else {
        exit::MISMATCH
    })
}
