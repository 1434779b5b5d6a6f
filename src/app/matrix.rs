//! `wakeprobe matrix`: versions x scenarios x repeats, sharded, compared with a baseline.
//! Also the pieces `merge`, `baseline` and `bisect` share: version specs, the CLIs behind
//! them, and reading, writing and comparing matrices.

use std::path::Path;
use std::sync::Arc;

use super::invocation::{self, Outputs};
use super::{AppError, AppResult, resolve};
use crate::backend::Cli;
use crate::backend::channel::Channel;
use crate::cli::{self, Exit};
use crate::console;
use crate::matrix::Job;
use crate::matrix::grid::{Comparison, Matrix};
use crate::matrix::identity::{Asked, Identity};
use crate::matrix::shards::{ShardPos, take_shard};
use crate::scenario::Scenario;
use crate::store;
use crate::store::redact::Redactor;

/// `wakeprobe matrix`
pub async fn matrix(args: cli::MatrixArgs) -> AppResult {
    let scenarios = resolve::driven(resolve::scenarios(&args.scenarios)?, &args.exec)?;
    // A baseline that cannot be read fails now, not after the runs.
    let baseline = args.baseline.as_deref().map(read_matrix).transpose()?;
    // Columns are keyed by the versions as asked for (`latest` stays `latest`, so a baseline
    // compares like with like); each resolves to an exact version to install and record.
    let versions = version_specs(&args)?;
    let mut runtimes: Vec<_> = versions
        .iter()
        .map(|v| crate::runtime::split_spec(v).0)
        .collect();
    runtimes.sort();
    runtimes.dedup();
    // Every chosen variant on each runtime of the columns, planned once for every CLI, before
    // anything is installed.
    let targets = resolve::on_runtimes(
        &resolve::chosen_targets(&scenarios, &args.exec),
        Some(&runtimes),
    )?;
    let planned = resolve::plan_targets(&targets, &args.exec)?;
    let resolved = resolve_specs(&versions, &args.sim_versions, &args.resolve).await?;
    let specs: Vec<String> = resolved.iter().map(|(s, _, _)| s.clone()).collect();
    let identity = identity_of(&args, &scenarios, &planned, &resolved);
    // A baseline made another way is refused before anything runs.
    let across = compared_across(
        &identity,
        baseline.as_ref(),
        args.baseline.as_deref(),
        args.compare_across_settings,
    )?;
    let shard = args.shard.map(|(index, count)| ShardPos { index, count });
    // Cells of this shard, decided by key before anything is installed.
    let wanted = take_shard(identity.cells.clone(), args.shard, |c| {
        (c.scenario.clone(), c.variant.clone(), c.cli_spec.clone())
    });
    let needed: Vec<(String, String)> = resolved
        .iter()
        .filter(|(s, _, _)| wanted.iter().any(|w| &w.cli_spec == s))
        .map(|(s, e, _)| (s.clone(), e.clone()))
        .collect();
    let clis = clis_for(&needed, &args.sim_versions, &args.resolve).await?;
    let mut jobs: Vec<Job> = Vec::new();
    for cli in &clis {
        jobs.extend(resolve::jobs_of(&planned, &args.exec, cli)?);
    }
    // Made once every CLI is there and every job checked: a refusal writes nothing.
    let run_dir = resolve::new_run_dir(&args.exec.out)?;
    let jobs = crate::matrix::jobs_of_cells(jobs, &wanted);
    let whole = MatrixOf {
        columns: &specs,
        identity: Some(&identity),
        shard,
    };
    if jobs.is_empty() {
        eprintln!(
            "wakeprobe: shard {} holds no cell",
            shard.map(|s| s.to_string()).unwrap_or_default()
        );
        write_matrix(&run_dir, &whole.matrix(&[]), None)?;
        let id = run_dir.file_name().unwrap_or_default().to_string_lossy();
        let summary = crate::classify::result::Summary::build(&id, &[], &[], false);
        invocation::emit_summary(
            &run_dir,
            Some(&run_dir.join("matrix.json")),
            &summary,
            Exit::Ok,
        );
        return Ok(Exit::Ok);
    }
    let ran = invocation::execute(jobs, &args.exec, &scenarios, &run_dir).await?;
    let grid = whole.matrix(&ran.results());
    let (summary, compared) = conclude(
        &Concluding {
            dir: &run_dir,
            junit: args.exec.junit.as_deref(),
            grid: &grid,
            baseline: baseline.as_ref(),
            baseline_path: args.baseline.as_deref(),
            across: &across,
            missing: None,
        },
        &ran,
    )?;
    if let Some(lines) = crate::report::terminal::invariant_lines(&summary) {
        console::say(lines);
    }
    let code = invocation::exit_code(&summary, &ran);
    let code = match compared {
        Some(c) if ![Exit::Interrupted, Exit::Setup, Exit::Contradiction].contains(&code) => c,
        _ => code,
    };
    invocation::emit_summary(&run_dir, Some(&run_dir.join("matrix.json")), &summary, code);
    Ok(code)
}

/// The whole matrix an invocation asks for, whichever shard of it runs
/// ([`Identity::of`]), with the flags that change how every run is made.
fn identity_of(
    args: &cli::MatrixArgs,
    scenarios: &[Arc<Scenario>],
    planned: &[resolve::Planned],
    resolved: &[(String, String, Option<Channel>)],
) -> Identity {
    let exec = &args.exec;
    let mut settings: Vec<String> = exec
        .driver
        .iter()
        .map(|d| format!("--driver {d}"))
        .collect();
    if exec.explore {
        settings.push("--explore".into());
    }
    settings.extend(exec.faults.iter().map(|f| format!("--fault {f}")));
    settings.extend(exec.cli_args.iter().map(|a| format!("--cli-arg={a}")));
    let sdk = crate::backend::sdk::SdkVersions {
        ts: exec.sdk_version.clone(),
        py: exec.sdk_py_version.clone(),
    };
    let mut planned: Vec<_> = planned
        .iter()
        .map(|p| {
            let t = &p.target;
            (
                t.scenario.name.clone(),
                t.variant.clone(),
                p.plan.driver.mode.row().host,
            )
        })
        .collect();
    // A variant planned on two runtimes (its plans side by side) is one row of cells.
    planned.dedup();
    Identity::of(&Asked {
        scenarios,
        variants: &exec.variants,
        sets: &exec.sets,
        planned: &planned,
        versions: resolved,
        sim_versions: &args.sim_versions,
        settings,
        sdk: &sdk,
        repeat: exec.repeat,
    })
}

/// Checks that `baseline` was made the way this matrix is (see [`Identity::made_unlike`]);
/// returns how it differs when compared anyway (`--compare-across-settings`). Bad input
/// otherwise, before anything runs.
pub fn compared_across(
    identity: &Identity,
    baseline: Option<&Matrix>,
    path: Option<&Path>,
    on_purpose: bool,
) -> Result<Vec<String>, AppError> {
    let Some(baseline) = baseline else {
        return Ok(vec![]);
    };
    let differences = identity.made_unlike_baseline(baseline.identity.as_ref());
    if differences.is_empty() || on_purpose {
        return Ok(differences);
    }
    Err(AppError::bad_input(format!(
        "{}: {}: its verdicts say nothing about this matrix's (pass --compare-across-settings to compare anyway)",
        path.map(|p| p.display().to_string()).unwrap_or_default(),
        differences.join("; ")
    )))
}
/// Which matrix a set of runs is: its columns, and (for `matrix` and `merge`) the whole it
/// belongs to and the shard it is.
pub struct MatrixOf<'a> {
    pub columns: &'a [String],
    pub identity: Option<&'a Identity>,
    pub shard: Option<ShardPos>,
}

impl MatrixOf<'_> {
    pub fn matrix(&self, results: &[crate::classify::result::RunResult]) -> Matrix {
        Matrix::build(results, self.columns).of_matrix(self.identity.cloned(), self.shard)
    }
}

/// What a matrix or a merge ends with, in `dir`: the matrix of what ran, the baseline it is
/// compared with (read from `baseline_path`), how that baseline was made otherwise
/// (`across`), and what an incomplete merge lacks (`missing`).
pub struct Concluding<'a> {
    pub dir: &'a Path,
    pub junit: Option<&'a Path>,
    pub grid: &'a Matrix,
    pub baseline: Option<&'a Matrix>,
    pub baseline_path: Option<&'a Path>,
    pub across: &'a [String],
    pub missing: Option<&'a [crate::classify::result::MissingPart]>,
}

/// The end a matrix and a merge share: the runs' outputs (summary, JUnit), compared with the
/// baseline when there is one; the matrix written and printed; the page. Returns the summary
/// and the comparison's exit code, if any.
pub fn conclude(
    c: &Concluding,
    ran: &invocation::Ran,
) -> Result<(crate::classify::result::Summary, Option<Exit>), AppError> {
    let comparison = c.baseline.map(|base| {
        let mut comparison = Comparison::of(c.grid, base);
        comparison.across_settings = c.across.to_vec();
        comparison
    });
    let file = baseline_name(c.baseline_path);
    let against = comparison.as_ref().map(|comparison| invocation::Baseline {
        comparison,
        current: c.grid,
        file: &file,
    });
    let matrix = invocation::MatrixParts {
        columns: c.grid.column_heads(),
        missing: c.missing.unwrap_or_default().to_vec(),
    };
    let summary = invocation::finish_against(
        &Outputs {
            dir: c.dir,
            junit: c.junit,
            table: false,
            summary: true,
            index: false,
            extra_cases: &[],
        },
        ran,
        against.as_ref(),
        Some(&matrix),
    )?;
    let compared = finish_matrix(c.dir, c.grid, comparison.as_ref())?;
    // Why cells failed and why drafts were written, and how to file each.
    let notes = c.grid.notes();
    if !notes.is_empty() {
        console::say(console::printable_lines(notes.trim()));
    }
    for line in crate::report::draft_lines(c.dir, &summary) {
        console::say(console::printable(&line));
    }
    invocation::write_index(c.dir, &summary, ran)?;
    Ok((summary, compared))
}

/// Writes and prints the matrix of what ran (the changed cells first when there is a
/// baseline); returns the comparison's exit code, if there was a baseline.
fn finish_matrix(
    dir: &Path,
    grid: &Matrix,
    comparison: Option<&Comparison>,
) -> Result<Option<Exit>, AppError> {
    let compared = comparison.map(comparison_code);
    write_matrix(dir, grid, comparison)?;
    console::say(grid.table(
        console::human_is_terminal(),
        console::human_width().unwrap_or(170),
        comparison,
    ));
    Ok(compared)
}

/// The baseline file as the marks name it: its file name (a CI's path says little).
fn baseline_name(path: Option<&Path>) -> String {
    path.map(|p| {
        p.file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| p.display().to_string())
    })
    .unwrap_or_default()
}

/// Prints the comparison's changed cells and maps it to the documented exit code: a
/// regression or a lost cell fails.
pub fn comparison_code(comparison: &Comparison) -> Exit {
    for line in comparison.lines() {
        console::say(line);
    }
    if comparison.fails() {
        Exit::Regression
    } else if comparison.improvements() > 0 {
        Exit::Improvement
    } else {
        Exit::Ok
    }
}

/// The CLIs for version specs: simulator profiles standing in for versions when mapped
/// (`--sim-version V=PROFILE`), else real versions installed into the cache (once each).
pub async fn clis_for(
    specs: &[(String, String)],
    sim_versions: &[(String, String)],
    pinned: &[(String, String)],
) -> Result<Vec<Cli>, AppError> {
    let mut clis = Vec::new();
    for (spec, exact) in specs {
        if !sim_versions.is_empty() {
            let profile = sim_versions
                .iter()
                .find(|(v, _)| v == spec)
                .map(|(_, p)| p)
                .ok_or_else(|| {
                    AppError::bad_input(format!(
                        "--sim-version maps no profile to `{spec}` (a version of --versions): add --sim-version {spec}=PROFILE, or list the mapped versions in --versions"
                    ))
                })?;
            let mut cli = resolve::sim_cli(profile)?;
            cli.version = spec.clone();
            cli.spec = spec.clone();
            clis.push(cli);
        } else if pinned.iter().any(|(s, _)| s == spec) {
            // `--resolve`: the exact version it was told, under the spec as asked.
            let runtime = crate::runtime::split_spec(spec).0;
            let mut cli =
                resolve::claude_version(&crate::runtime::qualified(runtime, exact)).await?;
            cli.spec = spec.clone();
            clis.push(cli);
        } else {
            // The spec as asked (`latest` resolves to `exact` again: the catalog is asked once
            // per invocation), so a cached exact version runs as cached and `latest` runs the
            // registry's release.
            let cli = resolve::claude_version(spec).await?;
            debug_assert_eq!(&cli.version, exact);
            clis.push(cli);
        }
    }
    Ok(clis)
}

/// Each version spec with the exact version it stands for (`latest` -> `2.1.335`), over both
/// channels, or as `--resolve` says; with the channel when the registry told it.
async fn resolve_specs(
    versions: &[String],
    sim_versions: &[(String, String)],
    pinned: &[(String, String)],
) -> Result<Vec<(String, String, Option<Channel>)>, AppError> {
    crate::matrix::identity::check_pins(versions, sim_versions, pinned)
        .map_err(AppError::bad_input)?;
    let mut out: Vec<(String, String, Option<Channel>)> = Vec::new();
    for v in versions {
        let (exact, channel) = if !sim_versions.is_empty() {
            (v.clone(), None)
        } else if let Some((_, pin)) = pinned.iter().find(|(s, _)| s == v) {
            (pin.clone(), None)
        } else {
            let exact = resolve::exact_version(v).await?;
            // Only a spec the registry resolved is known by its channel before it installs.
            let claude = crate::runtime::split_spec(v).0 == crate::runtime::Runtime::ClaudeCode;
            let channel = (claude && exact != *v)
                .then(|| resolve::known_channel(&exact))
                .flatten();
            (exact, channel)
        };
        if exact != *v {
            eprintln!("wakeprobe: {v} is {}", resolve::describe(&exact));
        }
        if !out.iter().any(|(s, _, _)| s == v) {
            out.push((v.clone(), exact, channel));
        }
    }
    Ok(out)
}

/// The matrix's version specs: `--versions`, each of `--runtime` (qualified when that is not
/// Claude Code: `opencode@1.18.33`) unless it names its own; else each runtime's pinned
/// version.
fn version_specs(args: &cli::MatrixArgs) -> Result<Vec<String>, AppError> {
    use crate::runtime::{Adapter, Runtime, qualified, split_spec};
    let runtimes = match args.runtime.as_slice() {
        [] => vec![Runtime::ClaudeCode],
        given => given.to_vec(),
    };
    if args.versions.is_empty() {
        return Ok(runtimes
            .iter()
            .map(|r| qualified(*r, Adapter::of(*r).pinned))
            .collect());
    }
    match runtimes.as_slice() {
        [one] => Ok(args
            .versions
            .iter()
            .map(|v| match split_spec(v) {
                (Runtime::ClaudeCode, _) => qualified(*one, v),
                _ => v.clone(),
            })
            .collect()),
        _ => Err(AppError::bad_input(
            "--versions with more than one --runtime: write each version with its runtime (`--versions 2.1.332,opencode@1.18.33`), or leave --versions out for each runtime's pinned one",
        )),
    }
}

pub fn write_matrix(
    dir: &Path,
    matrix: &Matrix,
    comparison: Option<&Comparison>,
) -> Result<(), AppError> {
    let r = Redactor::basic();
    store::write_json(&dir.join("matrix.json"), &r, matrix)?;
    store::write_atomic(
        &dir.join("matrix.md"),
        r.text(&matrix.markdown(comparison)).as_bytes(),
    )?;
    if let Some(c) = comparison {
        store::write_json(&dir.join("baseline-comparison.json"), &r, c)?;
    }
    Ok(())
}

/// A matrix.json (a baseline, a shard's output): unreadable, malformed or untrustworthy (see
/// `matrix::trust`) is bad input.
pub fn read_matrix(path: &Path) -> Result<Matrix, AppError> {
    let bytes = super::resolve::read_results_file(path)?;
    let matrix: Matrix = serde_json::from_slice(&bytes).map_err(|e| {
        AppError::bad_input(format!(
            "{}: not a wakeprobe matrix.json: {e}",
            path.display()
        ))
    })?;
    refuse(path, crate::matrix::trust::problems(&matrix))?;
    Ok(matrix)
}

/// Bad input naming `path` and its problems, if it has any.
pub fn refuse(path: &Path, problems: Vec<String>) -> Result<(), AppError> {
    if problems.is_empty() {
        return Ok(());
    }
    Err(AppError::bad_input(format!(
        "{}: {}",
        path.display(),
        problems.join("; ")
    )))
}
