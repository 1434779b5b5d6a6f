//! Cells and their execution: scenario x variant x CLI x repetition, run concurrently.
//!
//! `wakeprobe run` is a one-CLI matrix. Each cell gets its own folder under the invocation's
//! run-id folder, and its evidence and result are written the moment it ends, so a later
//! failure or Ctrl-C loses nothing that finished.

pub mod bisect;
pub mod grid;
pub mod history;
pub mod identity;
pub mod keep;
pub mod minimize;
pub mod nemesis;
pub mod progress;
pub mod reporter;
pub mod shards;
pub mod threshold;
pub mod trust;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

use crate::backend::Cli;
use crate::classify;
use crate::classify::result::RunResult;
use crate::driver::netns::NetworkPolicy;
use crate::driver::{self, Cancel, LiveStatus, RunRequest, StatusHandle};
use crate::evidence::Timeline;
use crate::report;
use crate::scenario::{Fault, Plan, RangePolicy, Scenario};
use crate::store::redact::Redactor;

/// One run to make.
#[derive(Debug, Clone)]
pub struct Job {
    pub scenario: Arc<Scenario>,
    pub variant: String,
    pub cli: Cli,
    pub repetition: u32,
    pub overrides: Vec<(String, String)>,
    /// Values outside a parameter's range run on purpose (`--explore`).
    pub policy: RangePolicy,
    /// How the repro command names the scenario: its name for the library's, else a path
    /// relative to the working folder (never an absolute path).
    pub reference: String,
    /// The variant's plan with the overrides, the policy and the faults that apply, resolved
    /// once when the job was made (its repetitions and CLIs share it): every later stage reads
    /// this, none resolves the scenario again.
    pub plan: Arc<Plan>,
}

impl Job {
    /// `scenario/variant.cli.rN`: the cell's folder under the run-id folder.
    pub fn folder(&self) -> PathBuf {
        PathBuf::from(&self.scenario.name).join(format!(
            "{}.{}.r{}",
            self.variant,
            self.label(),
            self.repetition
        ))
    }

    /// The CLI's label, with the SDK driver that stands in for the scenario's own when one
    /// does (`claude-2.1.335+sdk`).
    pub fn label(&self) -> String {
        match self.scenario.driver_override() {
            Some(mode) => format!("{}+{mode}", self.cli.label()),
            None => self.cli.label(),
        }
    }

    /// [`Job::folder`], if it stays below the run-id folder: every part of it a plain name (no
    /// `..`, no root, no separator inside a name). Names are checked where they are read (the
    /// scenario file, the CLI's version); this is the last word before anything is written.
    pub fn checked_folder(&self) -> Result<PathBuf, String> {
        let folder = self.folder();
        let plain = folder.components().count() == 2
            && folder
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        if plain {
            Ok(folder)
        } else {
            Err(format!(
                "`{}` would not be a folder below the run folder: refusing to run it",
                folder.display()
            ))
        }
    }

    /// The matrix cell this job is a run of.
    pub fn cell_key(&self) -> shards::CellKey {
        shards::CellKey {
            scenario: self.scenario.name.clone(),
            variant: self.variant.clone(),
            cli_spec: self.cli.spec.clone(),
        }
    }

    pub fn title(&self) -> String {
        format!("{}/{}", self.scenario.name, self.variant)
    }

    /// The run as a log line names it: `top-level-control/session on latest (2.1.337) #2`
    /// (the version as asked, what it resolved to when that differs, the repetition).
    pub fn log_name(&self) -> String {
        let resolved = match &self.cli.kind {
            crate::backend::BackendKind::Claude if self.cli.version != self.cli.spec => {
                format!(" ({})", self.cli.version)
            }
            _ => String::new(),
        };
        format!(
            "{} on {}{resolved} #{}",
            self.title(),
            self.cli.spec,
            self.repetition
        )
    }

    /// The command that reproduces this cell alone: the scenario as the run was given it, the
    /// variant, the values, the driver that stood in for the scenario's own, the CLI.
    pub fn command(&self) -> String {
        let mut cmd = format!(
            "wakeprobe run {} --variant {}",
            crate::os::subprocess::shell_word(&self.reference),
            self.variant
        );
        if let Some(mode) = self.scenario.driver_override() {
            cmd.push_str(&format!(" --driver {mode}"));
        }
        for (k, v) in &self.overrides {
            cmd.push_str(&format!(" --set {k}={v}"));
        }
        if self.policy == RangePolicy::Explore {
            cmd.push_str(" --explore");
        }
        match &self.cli.kind {
            crate::backend::BackendKind::Claude => {
                cmd.push_str(&format!(" --claude-version {}", self.cli.version))
            }
            crate::backend::BackendKind::Sim { profile } => {
                cmd.push_str(&format!(" --backend sim --profile {profile}"))
            }
            crate::backend::BackendKind::Opencode => cmd.push_str(&format!(
                " --runtime opencode --cli-version {}",
                self.cli.version
            )),
        }
        cmd
    }
}

/// The jobs of the `cells` asked for (a shard's, say), in their order: every other job is left
/// out, so a shard runs its own cells and no other.
pub fn jobs_of_cells(jobs: Vec<Job>, cells: &[shards::CellKey]) -> Vec<Job> {
    jobs.into_iter()
        .filter(|j| cells.contains(&j.cell_key()))
        .collect()
}

#[derive(Debug, Clone)]
pub struct ExecOptions {
    pub run_dir: PathBuf,
    pub jobs: usize,
    /// `--fault` specs and what they resolve to: added to every plan that has the fault's
    /// agent, and to each run's repro command.
    pub faults: Vec<(String, crate::scenario::Fault)>,
    /// `--cli-arg`s: given to every run's CLI after the harness's own, and to its repro command.
    pub cli_args: Vec<String>,
    /// The Agent SDK releases the SDK modes run.
    pub sdk_versions: crate::backend::sdk::SdkVersions,
    pub template: PathBuf,
    pub keep: bool,
    pub network: NetworkPolicy,
    pub progress: progress::Display,
}

/// Adds to `plan` each `--fault` (spec, fault) that applies to it.
pub fn add_faults(plan: &mut Plan, faults: &[(String, Fault)]) {
    let applicable: Vec<Fault> = faults
        .iter()
        .map(|(_, f)| f)
        .filter(|f| f.applies_to(plan))
        .cloned()
        .collect();
    plan.faults.extend(applicable);
}

/// A finished and judged cell, written to `dir`.
#[derive(Debug, Clone)]
pub struct CellResult {
    pub job: Job,
    pub dir: PathBuf,
    pub result: RunResult,
    pub timeline: Timeline,
}

/// A cell that could not run: its CLI did not start, or its folder could not be written.
#[derive(Debug, Clone)]
pub struct SetupFailure {
    pub job: Job,
    pub message: String,
}

/// Everything an invocation ran: judged cells and setup failures, in job order.
#[derive(Debug, Default)]
pub struct Execution {
    pub cells: Vec<CellResult>,
    pub failures: Vec<SetupFailure>,
}

/// Runs every job, at most `jobs` at a time; stops starting new ones once `cancel` is set.
/// Jobs that never started are absent from the result, which keeps the jobs' order whatever
/// order they started in.
pub async fn execute(jobs: Vec<Job>, opts: &ExecOptions, cancel: Cancel) -> Execution {
    let limit = Arc::new(Semaphore::new(opts.jobs.max(1)));
    let statuses: progress::Statuses = Arc::default();
    let plans: Vec<Plan> = jobs.iter().map(|job| (*job.plan).clone()).collect();
    install_sdks(&jobs, &plans, &opts.sdk_versions).await;
    let order = longest_first(&plans);
    let board = progress::Board::start(
        statuses.clone(),
        progress::Plan {
            // In the order the runs start: the time left schedules the rest in that order.
            keys: order.iter().map(|&i| jobs[i].title()).collect(),
            ceilings: order.iter().map(|&i| plans[i].driver.ceiling).collect(),
            slots: opts.jobs.max(1),
        },
        opts.progress,
    );
    // Who hears of each run: the board, the JSON lines, the folder's writer (reporter.rs).
    let reporters: Arc<[Arc<dyn reporter::Reporter>]> = Arc::new([
        Arc::new(board.clone()) as Arc<dyn reporter::Reporter>,
        Arc::new(reporter::JsonLines),
        Arc::new(reporter::FolderWriter),
    ]);
    let mut pending: Vec<Option<(Job, Plan)>> = jobs.into_iter().zip(plans).map(Some).collect();
    let mut handles: Vec<Option<tokio::task::JoinHandle<_>>> = Vec::new();
    handles.resize_with(pending.len(), || None);
    for index in order {
        // Taken here, in the dispatch order, so the runs start in exactly that order.
        let permit = limit.clone().acquire_owned().await.expect("semaphore open");
        if cancel.borrow().is_some() {
            break;
        }
        let (job, plan) = pending[index].take().expect("each job dispatched once");
        let (cancel, statuses) = (cancel.clone(), statuses.clone());
        let (reporters, opts) = (reporters.clone(), opts.clone());
        handles[index] = Some(tokio::spawn(async move {
            let _permit = permit;
            let status: StatusHandle = Arc::new(Mutex::new(LiveStatus {
                ceiling_s: plan.driver.ceiling.as_secs_f64(),
                ..LiveStatus::default()
            }));
            statuses
                .lock()
                .expect("status list")
                .push(progress::Running {
                    name: job.log_name(),
                    key: job.title(),
                    status: status.clone(),
                });
            let _ = reporter::tell(&reporters, &reporter::RunEvent::Started { job: &job });
            let outcome = run_cell(&job, plan, &opts, cancel, status.clone(), &reporters).await;
            statuses
                .lock()
                .expect("status list")
                .retain(|r| !Arc::ptr_eq(&r.status, &status));
            let _ = reporter::tell(
                &reporters,
                &match &outcome {
                    Ok((dir, result, _)) => reporter::RunEvent::Finished {
                        job: &job,
                        dir,
                        result,
                    },
                    Err(message) => reporter::RunEvent::Failed { job: &job, message },
                },
            );
            match outcome {
                Ok((dir, result, timeline)) => Ok(CellResult {
                    job,
                    dir,
                    result,
                    timeline,
                }),
                Err(message) => Err(SetupFailure { job, message }),
            }
        }));
    }
    let mut execution = Execution::default();
    for handle in handles.into_iter().flatten() {
        match handle.await {
            Ok(Ok(cell)) => execution.cells.push(cell),
            Ok(Err(failure)) => execution.failures.push(failure),
            Err(join) => tracing::error!(%join, "a run task panicked"),
        }
    }
    board.stop();
    execution
}

/// Installs, before any run starts, each Agent SDK the jobs' driver modes go through, so a first
/// install (a minute or two) never runs inside a run's clock and ceiling. A failed install is
/// left to each run of that SDK to report, as its setup failure.
async fn install_sdks(jobs: &[Job], plans: &[Plan], versions: &crate::backend::sdk::SdkVersions) {
    let mut hosts: Vec<crate::scenario::mode::Host> = jobs
        .iter()
        .zip(plans)
        .filter(|(job, _)| !matches!(job.cli.kind, crate::backend::BackendKind::Sim { .. }))
        .filter_map(|(_, plan)| plan.driver.mode.row().host)
        .collect();
    hosts.sort_by_key(|h| *h as u8);
    hosts.dedup();
    for host in hosts {
        let version = versions.of(host).to_string();
        let root = crate::backend::install::cache_root();
        let _ = tokio::task::spawn_blocking(move || {
            crate::backend::sdk::ensure(&root, host, &version, &|line| {
                eprintln!("wakeprobe: {line}")
            })
        })
        .await;
    }
}

/// The order to start runs in: longest ceiling first (ties in job order). A run's ceiling is
/// the one bound on its length known before it starts, and starting the long ones first keeps
/// one long run from beginning last and holding the whole invocation up alone.
fn longest_first(plans: &[Plan]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..plans.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(plans[i].driver.ceiling));
    order
}

/// The `--fault` flags that apply to a plan, as the repro command repeats them.
fn fault_flags(faults: &[(String, crate::scenario::Fault)], plan: &Plan) -> String {
    faults
        .iter()
        .filter(|(_, f)| f.applies_to(plan))
        .map(|(spec, _)| format!(" --fault {spec}"))
        .collect()
}

/// The SDK release an SDK mode ran through, as the repro command names it (`--sdk-version`).
fn sdk_flags(plan: &Plan, versions: &crate::backend::sdk::SdkVersions) -> String {
    use crate::scenario::mode::Host;
    match plan.driver.mode.row().host {
        Some(host @ Host::SdkTs) => format!(" --sdk-version {}", versions.of(host)),
        Some(host @ Host::SdkPy) => format!(" --sdk-py-version {}", versions.of(host)),
        None => String::new(),
    }
}

/// The `--cli-arg` flags, as the repro command repeats them (`=` keeps a leading dash a value).
fn cli_arg_flags(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            format!(
                " {}",
                crate::os::subprocess::shell_word(&format!("--cli-arg={a}"))
            )
        })
        .collect()
}

/// A run's setup failure in words. The whole stderr of what could not start is kept as
/// `FOLDER.stderr.log` beside the run folders (there is no run folder), and named.
fn kept_failure(
    e: driver::DriverError,
    run_dir: &std::path::Path,
    folder: &std::path::Path,
) -> String {
    let message = e.to_string();
    let driver::DriverError::CliDidNotStart { log: Some(log), .. } = e else {
        return message;
    };
    let path = run_dir.join(format!("{}.stderr.log", folder.display()));
    match crate::store::write_atomic(&path, Redactor::basic().text(&log).as_bytes()) {
        Ok(()) => format!("{message} (its whole stderr: {})", path.display()),
        Err(_) => message,
    }
}

/// Runs one cell, judges it and writes its folder; an error is the cell's setup failure.
async fn run_cell(
    job: &Job,
    plan: Plan,
    opts: &ExecOptions,
    cancel: Cancel,
    status: StatusHandle,
    reporters: &[Arc<dyn reporter::Reporter>],
) -> Result<(PathBuf, RunResult, Timeline), String> {
    let folder = job.checked_folder()?;
    let output = driver::run(RunRequest {
        plan: plan.clone(),
        cli: job.cli.clone(),
        repetition: job.repetition,
        template: opts.template.clone(),
        network: opts.network,
        cli_args: opts.cli_args.clone(),
        sdk_versions: opts.sdk_versions.clone(),
        cancel,
        status,
        command: job.command()
            + &sdk_flags(&plan, &opts.sdk_versions)
            + &fault_flags(&opts.faults, &plan)
            + &cli_arg_flags(&opts.cli_args),
        reference: Some(job.reference.clone()),
    })
    .await
    .map_err(|e| kept_failure(e, &opts.run_dir, &folder))?;
    let redactor = Redactor::for_run(output.sandbox.root(), &output.wakeprobe);
    // Checks read the payloads and lines as the folder keeps them, so a saved run judges the
    // same.
    let raw = report::raw_sources(&output.raw, &redactor);
    let judgement = classify::judge_run(&output.info, &output.timeline, &plan, &raw);
    let result = RunResult::new(&output.info, judgement);
    let dir = opts.run_dir.join(folder);
    reporter::tell(
        reporters,
        &reporter::RunEvent::Judged {
            job,
            plan: &plan,
            output: &output,
            result: &result,
            dir: &dir,
        },
    )?;
    if opts.keep || std::env::var_os("WAKEPROBE_KEEP").is_some_and(|v| v == "1") {
        let mut sandbox = output.sandbox;
        let kept = sandbox.keep();
        eprintln!(
            "wakeprobe: {}: sandbox kept at {}",
            job.title(),
            kept.display()
        );
    }
    Ok((dir, result, output.timeline))
}

/// A run-id: UTC date and time plus a short suffix, sortable and unique enough (the folder is
/// created exclusively; a clash picks another suffix).
pub fn new_run_id() -> String {
    let now = std::time::SystemTime::now();
    let at: chrono::DateTime<chrono::Utc> = now.into();
    let nanos = now
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{}-{:03x}",
        at.format("%Y%m%d-%H%M%S"),
        (nanos ^ std::process::id()) & 0xfff
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::BackendKind;

    /// Repetition 2 of the seed scenario's `print` variant with `bg_seconds=7`, on `kind`.
    fn job(kind: BackendKind, version: &str, policy: RangePolicy) -> Job {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios/subagent-bg-turn-end.toml");
        let scenario = Arc::new(Scenario::load(&path).unwrap());
        let overrides = vec![("bg_seconds".to_string(), "7".to_string())];
        let plan = Arc::new(scenario.plan_with("print", &overrides, policy).unwrap());
        Job {
            scenario,
            variant: "print".into(),
            cli: Cli {
                kind,
                program: "claude".into(),
                leading_args: vec![],
                version: version.into(),
                spec: version.into(),
                channel: None,
            },
            repetition: 2,
            overrides,
            policy,
            reference: "subagent-bg-turn-end".into(),
            plan,
        }
    }

    /// A cell's folder, title and repro command name its scenario, variant, CLI and repetition;
    /// the command carries the `--set` values, `--explore` and the backend.
    #[test]
    fn a_cell_is_named_and_reproduced_by_its_job() {
        let claude = job(BackendKind::Claude, "2.1.219", RangePolicy::Enforce);
        assert_eq!(
            claude.folder(),
            PathBuf::from("subagent-bg-turn-end/print.claude-2.1.219.r2")
        );
        assert_eq!(claude.title(), "subagent-bg-turn-end/print");
        assert_eq!(
            claude.command(),
            "wakeprobe run subagent-bg-turn-end --variant print --set bg_seconds=7 --claude-version 2.1.219"
        );
        let sim = job(
            BackendKind::Sim {
                profile: "fixed".into(),
            },
            "sim",
            RangePolicy::Explore,
        );
        assert_eq!(
            sim.command(),
            "wakeprobe run subagent-bg-turn-end --variant print --set bg_seconds=7 --explore --backend sim --profile fixed"
        );
    }

    /// A job whose names would climb out of the run folder (or into a deeper one) runs
    /// nowhere: the folder is refused before anything runs.
    #[test]
    fn a_folder_that_leaves_the_run_folder_is_refused() {
        let mut j = job(BackendKind::Claude, "2.1.332", RangePolicy::Enforce);
        assert_eq!(
            j.checked_folder(),
            Ok(PathBuf::from(
                "subagent-bg-turn-end/print.claude-2.1.332.r2"
            ))
        );
        for bad in ["../../x", "/abs/path", "a/b"] {
            j.variant = bad.into();
            let e = j.checked_folder().unwrap_err();
            assert!(
                e.contains("not be a folder below the run folder"),
                "{bad}: {e}"
            );
        }
        j.variant = "print".into();
        j.cli.version = "../../../etc".into();
        assert!(j.checked_folder().is_err());
    }

    /// Runs start longest ceiling first, ties in job order: of plans whose ceilings are
    /// bg_seconds + 45, the 30 s one starts first, then the two 7 s ones as listed.
    #[test]
    fn the_longest_runs_start_first() {
        let plans: Vec<Plan> = ["7", "30", "2", "7"]
            .iter()
            .map(|bg| {
                let mut j = job(BackendKind::Claude, "2.1.332", RangePolicy::Explore);
                j.overrides = vec![("bg_seconds".into(), bg.to_string())];
                j.scenario
                    .plan_with(&j.variant, &j.overrides, j.policy)
                    .unwrap()
            })
            .collect();
        assert_eq!(longest_first(&plans), vec![1, 0, 3, 2]);
    }

    /// A shard runs exactly its own cells: of the jobs for every variant on two CLIs, shard
    /// `i` of 3 keeps the jobs (each repetition) of the cells `take_shard` gives it, and no other.
    #[test]
    fn a_shard_runs_exactly_its_own_cells() {
        let mut jobs = Vec::new();
        for version in ["2.1.219", "2.1.332"] {
            for variant in ["print", "session"] {
                for repetition in 1..=2 {
                    let mut j = job(BackendKind::Claude, version, RangePolicy::Enforce);
                    j.variant = variant.into();
                    j.repetition = repetition;
                    jobs.push(j);
                }
            }
        }
        let mut cells: Vec<shards::CellKey> = jobs.iter().map(Job::cell_key).collect();
        cells.dedup();
        assert_eq!(cells.len(), 4);
        let mut ran = Vec::new();
        for i in 1..=3 {
            let wanted = shards::take_shard(cells.clone(), Some((i, 3)), |c| {
                (c.scenario.clone(), c.variant.clone(), c.cli_spec.clone())
            });
            let mine = jobs_of_cells(jobs.clone(), &wanted);
            assert_eq!(
                mine.len(),
                2 * wanted.len(),
                "shard {i}/3: both repetitions of each cell"
            );
            assert!(
                mine.iter().all(|j| wanted.contains(&j.cell_key())),
                "shard {i}/3"
            );
            ran.extend(mine.iter().map(|j| j.folder()));
        }
        ran.sort();
        let mut all: Vec<PathBuf> = jobs.iter().map(Job::folder).collect();
        all.sort();
        assert_eq!(ran, all, "together the shards run every job once");
    }

    #[test]
    fn run_ids_sort_by_time() {
        let id = new_run_id();
        assert_eq!(id.len(), 19, "{id}");
        assert!(id.starts_with("20"), "{id}");
        assert_eq!(&id[8..9], "-");
    }
}
