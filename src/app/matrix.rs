//! `wakeprobe matrix`: versions x scenarios x repeats, sharded, compared with a baseline.
//! Also the pieces `merge`, `baseline` and `bisect` share: version specs, the CLIs behind
//! them, and reading, writing and comparing matrices.

use std::path::Path;
use std::sync::Arc;

use super::invocation::{self, Outputs};
use super::{AppError, AppResult, resolve};
use crate::backend::Cli;
use crate::cli::{self, exit};
use crate::console;
use crate::matrix::Job;
use crate::matrix::grid::{Comparison, Matrix, take_shard};
use crate::matrix::shards::{CellKey, Identity, ShardPos};
use crate::scenario::Scenario;
use crate::store;
use crate::store::redact::Redactor;

/// `wakeprobe matrix`
pub async fn matrix(args: cli::MatrixArgs) -> AppResult {
    let scenarios = resolve::driven(resolve::scenarios(&args.scenarios)?, &args.exec)?;
    resolve::check_exec_args(&scenarios, &args.exec)?;
    // A baseline that cannot be read fails now, not after the runs.
    let baseline = args.baseline.as_deref().map(read_matrix).transpose()?;
    // Columns are keyed by the versions as asked for (`latest` stays `latest`, so a baseline
    // compares like with like); each resolves to an exact version to install and record.
    let resolved = resolve_specs(&args.versions, &args.sim_versions).await?;
    let specs: Vec<String> = resolved.iter().map(|(s, _)| s.clone()).collect();
    let identity = identity_of(&args, &scenarios, &specs);
    let shard = args.shard.map(|(index, count)| ShardPos { index, count });
    // Cells of this shard, decided by key before anything is installed.
    let wanted = take_shard(identity.cells.clone(), args.shard, |c| {
        (c.scenario.clone(), c.variant.clone(), c.cli_spec.clone())
    });
    let needed: Vec<(String, String)> = resolved
        .iter()
        .filter(|(s, _)| wanted.iter().any(|w| &w.cli_spec == s))
        .cloned()
        .collect();
    let run_dir = resolve::new_run_dir(&args.exec.out)?;
    let clis = clis_for(&needed, &args.sim_versions).await?;
    let mut jobs: Vec<Job> = Vec::new();
    for cli in &clis {
        jobs.extend(resolve::jobs(&scenarios, &args.exec, cli)?);
    }
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
            exit::OK,
        );
        return Ok(exit::OK);
    }
    let ran = invocation::execute(jobs, &args.exec, &scenarios, &run_dir).await?;
    let grid = whole.matrix(&ran.results());
    let (summary, compared) = conclude(
        &run_dir,
        args.exec.junit.as_deref(),
        &grid,
        baseline.as_ref(),
        args.baseline.as_deref(),
        &ran,
    )?;
    if let Some(lines) = crate::report::terminal::invariant_lines(&summary) {
        console::say(lines);
    }
    let code = invocation::exit_code(&summary, &ran);
    let code = match compared {
        Some(c) if code != exit::INTERRUPTED && code != exit::SETUP => c,
        _ => code,
    };
    invocation::emit_summary(&run_dir, Some(&run_dir.join("matrix.json")), &summary, code);
    Ok(code)
}

/// The whole matrix an invocation asks for, whichever shard of it runs: every cell of every
/// shard, and what chose them.
fn identity_of(args: &cli::MatrixArgs, scenarios: &[Arc<Scenario>], specs: &[String]) -> Identity {
    let mut cells: Vec<CellKey> = scenarios
        .iter()
        .flat_map(|s| s.variants().into_iter().map(move |v| (s.name.clone(), v)))
        .filter(|(_, v)| args.exec.variants.is_empty() || args.exec.variants.contains(v))
        .flat_map(|(scenario, variant)| {
            specs.iter().map(move |spec| CellKey {
                scenario: scenario.clone(),
                variant: variant.clone(),
                cli_spec: spec.clone(),
            })
        })
        .collect();
    cells.sort();
    let pairs = |v: &[(String, String)]| v.iter().map(|(k, x)| format!("{k}={x}")).collect();
    Identity {
        versions: specs.to_vec(),
        scenarios: scenarios.iter().map(|s| s.name.clone()).collect(),
        variants: args.exec.variants.clone(),
        sets: pairs(&args.exec.sets),
        sim_versions: pairs(&args.sim_versions),
        repeat: args.exec.repeat,
        cells,
    }
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

/// The end a matrix and a merge share, in `dir`: the runs' outputs (summary, JUnit), compared
/// with `baseline` (read from `baseline_path`) when there is one; the matrix written and
/// printed; the page. Returns the summary and the comparison's exit code, if any.
pub fn conclude(
    dir: &Path,
    junit: Option<&Path>,
    grid: &Matrix,
    baseline: Option<&Matrix>,
    baseline_path: Option<&Path>,
    ran: &invocation::Ran,
) -> Result<(crate::classify::result::Summary, Option<i32>), AppError> {
    let comparison = baseline.map(|base| Comparison::of(grid, base));
    let file = baseline_name(baseline_path);
    let against = comparison.as_ref().map(|comparison| invocation::Baseline {
        comparison,
        current: grid,
        file: &file,
    });
    let summary = invocation::finish_against(
        &Outputs {
            dir,
            junit,
            table: false,
            summary: true,
            index: false,
            extra_cases: &[],
        },
        ran,
        against.as_ref(),
    )?;
    let compared = finish_matrix(dir, grid, comparison.as_ref())?;
    // Why cells failed and why drafts were written, and how to file each.
    let notes = grid.notes();
    if !notes.is_empty() {
        console::say(console::printable_lines(notes.trim()));
    }
    for line in crate::report::draft_lines(dir, &summary) {
        console::say(console::printable(&line));
    }
    invocation::write_index(dir, &summary, ran)?;
    Ok((summary, compared))
}

/// Writes and prints the matrix of what ran (the changed cells first when there is a
/// baseline); returns the comparison's exit code, if there was a baseline.
fn finish_matrix(
    dir: &Path,
    grid: &Matrix,
    comparison: Option<&Comparison>,
) -> Result<Option<i32>, AppError> {
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

/// Prints the comparison's changed cells and maps it to the documented exit code.
pub fn comparison_code(comparison: &Comparison) -> i32 {
    for line in comparison.lines() {
        console::say(line);
    }
    if comparison.regressions() > 0 {
        exit::REGRESSION
    } else if comparison.improvements() > 0 {
        exit::IMPROVEMENT
    } else {
        exit::OK
    }
}

/// The CLIs for version specs: simulator profiles standing in for versions when mapped
/// (`--sim-version V=PROFILE`), else real versions installed into the cache (once each).
pub async fn clis_for(
    specs: &[(String, String)],
    sim_versions: &[(String, String)],
) -> Result<Vec<Cli>, AppError> {
    let mut clis = Vec::new();
    for (spec, exact) in specs {
        if !sim_versions.is_empty() {
            let profile = sim_versions
                .iter()
                .find(|(v, _)| v == spec)
                .map(|(_, p)| p)
                .ok_or_else(|| {
                    AppError::bad_input(format!("--sim-version maps no profile to `{spec}`"))
                })?;
            let mut cli = resolve::sim_cli(profile)?;
            cli.version = spec.clone();
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
/// channels.
async fn resolve_specs(
    versions: &[String],
    sim_versions: &[(String, String)],
) -> Result<Vec<(String, String)>, AppError> {
    let mut out: Vec<(String, String)> = Vec::new();
    for v in versions {
        let exact = if sim_versions.is_empty() {
            resolve::exact_version(v).await?
        } else {
            v.clone()
        };
        if exact != *v {
            eprintln!("wakeprobe: {v} is {}", resolve::describe(&exact));
        }
        if !out.iter().any(|(s, _)| s == v) {
            out.push((v.clone(), exact));
        }
    }
    Ok(out)
}

/// Every published version over both channels, in semver order.
pub async fn published_versions() -> Result<Vec<String>, AppError> {
    Ok(resolve::catalog().await?.versions())
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

/// A matrix.json (a baseline, a shard's output): unreadable or malformed is bad input.
pub fn read_matrix(path: &Path) -> Result<Matrix, AppError> {
    let bytes = super::resolve::read_results_file(path)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        AppError::bad_input(format!(
            "{}: not a wakeprobe matrix.json: {e}",
            path.display()
        ))
    })
}
