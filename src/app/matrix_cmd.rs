//! `wakeprobe matrix`, `merge`, `baseline update` and `bisect`: versions x scenarios, sharded
//! and merged, compared with a baseline, bisected by verdict.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{
    AppError, AppResult, claude_version, exec_options, finish_invocation, jobs_for, run_dir,
    sim_cli,
};
use crate::backend::{Cli, install};
use crate::cli::{self, exit};
use crate::matrix::bisect::{self, Probe};
use crate::matrix::grid::{Comparison, Matrix, in_shard};
use crate::matrix::{self, Job};
use crate::report::json::RunResult;
use crate::report::{redact::Redactor, store};
use crate::scenario::Scenario;

/// The CLIs for version specs: simulator profiles standing in for versions when mapped
/// (`--sim-version V=PROFILE`), else real versions installed into the cache (once each).
async fn clis_for(
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
            let mut cli = sim_cli(profile)?;
            cli.version = spec.clone();
            cli.spec = spec.clone();
            clis.push(cli);
        } else {
            let mut cli = claude_version(exact).await?;
            cli.spec = spec.clone();
            clis.push(cli);
        }
    }
    Ok(clis)
}

fn write_matrix(
    dir: &Path,
    matrix: &Matrix,
    comparison: Option<&Comparison>,
) -> Result<(), AppError> {
    let r = Redactor::basic();
    store::write_json(&dir.join("matrix.json"), &r, matrix)
        .map_err(|e| AppError::setup(e.to_string()))?;
    store::write_atomic(
        &dir.join("matrix.md"),
        r.text(&matrix.markdown(comparison)).as_bytes(),
    )
    .map_err(|e| AppError::setup(e.to_string()))?;
    if let Some(c) = comparison {
        store::write_json(&dir.join("baseline-comparison.json"), &r, c)
            .map_err(|e| AppError::setup(e.to_string()))?;
    }
    Ok(())
}

fn read_matrix(path: &Path) -> Result<Matrix, AppError> {
    let bytes =
        std::fs::read(path).map_err(|e| AppError::bad_input(format!("{}: {e}", path.display())))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        AppError::bad_input(format!(
            "{}: not a wakeprobe matrix.json: {e}",
            path.display()
        ))
    })
}

/// Prints the comparison first and maps it to the documented exit code.
fn compare(
    matrix: &Matrix,
    baseline: Option<&Path>,
) -> Result<(Option<Comparison>, i32), AppError> {
    let Some(path) = baseline else {
        return Ok((None, exit::OK));
    };
    let base = read_matrix(path)?;
    let comparison = Comparison::of(matrix, &base);
    for line in comparison.lines() {
        println!("{line}");
    }
    let code = if comparison.regressions() > 0 {
        exit::REGRESSION
    } else if comparison.improvements() > 0 {
        exit::IMPROVEMENT
    } else {
        exit::OK
    };
    Ok((Some(comparison), code))
}

/// `wakeprobe matrix`
pub async fn matrix(args: cli::MatrixArgs) -> AppResult {
    let scenarios = super::resolve_scenarios(&args.scenarios)?;
    // Columns are keyed by the versions as asked for (`latest` stays `latest`, so a baseline
    // compares like with like); each resolves to an exact version to install and record.
    let resolved = resolve_specs(&args.versions, &args.sim_versions).await?;
    let specs: Vec<String> = resolved.iter().map(|(s, _)| s.clone()).collect();
    // Cells of this shard, decided by key before anything is installed.
    let wanted: Vec<(Arc<Scenario>, String, String)> = scenarios
        .iter()
        .flat_map(|s| s.variants().into_iter().map(move |v| (s.clone(), v)))
        .filter(|(_, v)| args.exec.variants.is_empty() || args.exec.variants.contains(v))
        .flat_map(|(s, v)| {
            specs
                .iter()
                .map(move |spec| (s.clone(), v.clone(), spec.clone()))
        })
        .filter(|(s, v, spec)| in_shard(&(s.name.clone(), v.clone(), spec.clone()), args.shard))
        .collect();
    let needed: Vec<(String, String)> = resolved
        .iter()
        .filter(|(s, _)| wanted.iter().any(|w| &w.2 == s))
        .cloned()
        .collect();
    let clis = clis_for(&needed, &args.sim_versions).await?;
    let mut jobs: Vec<Job> = Vec::new();
    for cli in &clis {
        jobs.extend(jobs_for(&scenarios, &args.exec, cli)?);
    }
    jobs.retain(|j| {
        wanted
            .iter()
            .any(|(s, v, spec)| s.name == j.scenario.name && *v == j.variant && *spec == j.cli.spec)
    });
    let run_dir = run_dir(&args.exec.out);
    std::fs::create_dir_all(&run_dir)
        .map_err(|e| AppError::setup(format!("{}: {e}", run_dir.display())))?;
    if jobs.is_empty() {
        eprintln!("wakeprobe: shard {:?} holds no cell", args.shard);
        let empty = Matrix::build(&[], &specs);
        write_matrix(&run_dir, &empty, None)?;
        return Ok(exit::OK);
    }
    let opts = exec_options(&args.exec, &scenarios, run_dir.clone())?;
    let cancel = super::cancel_on_signals();
    let results = matrix::execute(jobs, &opts, cancel.clone()).await?;
    let interrupted = *cancel.borrow();
    let summary = finish_invocation(
        &run_dir,
        &results,
        interrupted,
        args.exec.junit.as_deref(),
        false,
    )?;
    let run_results: Vec<RunResult> = results.iter().map(|c| c.result.clone()).collect();
    let grid = Matrix::build(&run_results, &specs);
    let (comparison, code) = compare(&grid, args.baseline.as_deref())?;
    write_matrix(&run_dir, &grid, comparison.as_ref())?;
    println!(
        "{}",
        grid.table(std::io::IsTerminal::is_terminal(&std::io::stdout()))
    );
    eprintln!("reports: {}", run_dir.display());
    if interrupted {
        return Ok(exit::INTERRUPTED);
    }
    if args.baseline.is_some() {
        return Ok(code);
    }
    Ok(if summary.all_match() {
        exit::OK
    } else {
        exit::MISMATCH
    })
}

/// Each version spec with the exact version it stands for (`latest` -> `2.1.332`).
async fn resolve_specs(
    versions: &[String],
    sim_versions: &[(String, String)],
) -> Result<Vec<(String, String)>, AppError> {
    let needs_registry =
        sim_versions.is_empty() && versions.iter().any(|v| v.starts_with("latest"));
    let published = if needs_registry {
        let root = install::cache_root();
        tokio::task::spawn_blocking(move || install::published_versions(&root))
            .await
            .map_err(|e| AppError::setup(e.to_string()))??
    } else {
        Vec::new()
    };
    let mut out: Vec<(String, String)> = Vec::new();
    for v in versions {
        let exact = if sim_versions.is_empty() {
            install::resolve_version(v, &published)?
        } else {
            v.clone()
        };
        if exact != *v {
            eprintln!("wakeprobe: {v} is {exact}");
        }
        if !out.iter().any(|(s, _)| s == v) {
            out.push((v.clone(), exact));
        }
    }
    Ok(out)
}

/// `wakeprobe merge DIR...`
pub fn merge(args: &cli::MergeArgs) -> AppResult {
    use crate::report::{json::Summary, saved};
    let mut results: Vec<(RunResult, String)> = Vec::new();
    let mut columns: Vec<String> = Vec::new();
    for dir in &args.dirs {
        if let Ok(m) =
            read_matrix(&find_file(dir, "matrix.json").unwrap_or_else(|| dir.join("matrix.json")))
        {
            for c in m.columns {
                if !columns.contains(&c) {
                    columns.push(c);
                }
            }
        }
        let runs = match saved::find_runs(dir) {
            Ok(r) => r,
            Err(saved::SavedError::Empty(_)) => continue, // a shard with no cell
            Err(e) => return Err(AppError::bad_input(e.to_string())),
        };
        for run in runs {
            let path = run.join(crate::report::RESULT_FILE);
            let bytes = std::fs::read(&path)
                .map_err(|e| AppError::bad_input(format!("{}: {e}", path.display())))?;
            let result: RunResult = serde_json::from_slice(&bytes)
                .map_err(|e| AppError::bad_input(format!("{}: {e}", path.display())))?;
            results.push((result, run.display().to_string()));
        }
    }
    if results.is_empty() {
        return Err(AppError::bad_input("no runs in the given folders"));
    }
    std::fs::create_dir_all(&args.out)
        .map_err(|e| AppError::setup(format!("{}: {e}", args.out.display())))?;
    let summary = Summary::build("merged", &results, false);
    store::write_json(&args.out.join("summary.json"), &Redactor::basic(), &summary)
        .map_err(|e| AppError::setup(e.to_string()))?;
    if let Some(path) = &args.junit {
        let xml = crate::report::junit::render(
            &summary,
            &results.iter().map(|(r, _)| r).collect::<Vec<_>>(),
        );
        store::write_atomic(path, xml.as_bytes()).map_err(|e| AppError::setup(e.to_string()))?;
    }
    let only: Vec<RunResult> = results.into_iter().map(|(r, _)| r).collect();
    let grid = Matrix::build(&only, &columns);
    let (comparison, code) = compare(&grid, args.baseline.as_deref())?;
    write_matrix(&args.out, &grid, comparison.as_ref())?;
    println!(
        "{}",
        grid.table(std::io::IsTerminal::is_terminal(&std::io::stdout()))
    );
    eprintln!("merged {} run(s) into {}", only.len(), args.out.display());
    if args.baseline.is_some() {
        return Ok(code);
    }
    Ok(if summary.all_match() {
        exit::OK
    } else {
        exit::MISMATCH
    })
}

/// The first file called `name` under `dir` (a shard artifact may nest its run-id folder).
fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    if dir.join(name).is_file() {
        return Some(dir.join(name));
    }
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .find_map(|e| {
            let p = e.path();
            if p.is_dir() {
                find_file(&p, name)
            } else {
                None
            }
        })
}

/// `wakeprobe baseline update MATRIX`
pub fn baseline_update(matrix: &Path, baseline: &Path) -> AppResult {
    let new = read_matrix(matrix)?;
    match read_matrix(baseline) {
        Ok(old) => {
            println!(
                "updating {} (was: {} cells)",
                baseline.display(),
                old.cells.len()
            );
            for line in Comparison::of(&new, &old).lines() {
                println!("  {line}");
            }
        }
        Err(_) => println!("writing a new baseline {}", baseline.display()),
    }
    store::write_json(baseline, &Redactor::basic(), &new)
        .map_err(|e| AppError::setup(e.to_string()))?;
    println!(
        "{} now holds {} cells from {}",
        baseline.display(),
        new.cells.len(),
        matrix.display()
    );
    Ok(exit::OK)
}

/// `wakeprobe bisect SCENARIO --good V1 --bad V2`
pub async fn bisect(args: cli::BisectArgs) -> AppResult {
    let scenarios = super::resolve_scenarios(std::slice::from_ref(&args.scenario))?;
    let scenario = scenarios[0].clone();
    let variant = match args.exec.variants.as_slice() {
        [] => scenario.variants()[0].clone(),
        [one] => one.clone(),
        _ => {
            return Err(AppError::bad_input(
                "bisect judges one variant: pass --variant once",
            ));
        }
    };
    let mut versions: Vec<String> = if !args.sim_versions.is_empty() {
        args.sim_versions.iter().map(|(v, _)| v.clone()).collect()
    } else if !args.versions.is_empty() {
        args.versions.clone()
    } else {
        let root = install::cache_root();
        tokio::task::spawn_blocking(move || install::published_versions(&root))
            .await
            .map_err(|e| AppError::setup(e.to_string()))??
    };
    versions.sort_by_key(|v| install::version_key(v));
    versions.dedup();
    let run_dir = run_dir(&args.exec.out);
    let exec = args.exec.clone();
    let sims = args.sim_versions.clone();
    let scenario_for = scenario.clone();
    let variant_for = variant.clone();
    let cancel = super::cancel_on_signals();
    let judge = |version: String| {
        let (exec, sims, scenario, variant, run_dir, cancel) = (
            exec.clone(),
            sims.clone(),
            scenario_for.clone(),
            variant_for.clone(),
            run_dir.clone(),
            cancel.clone(),
        );
        async move {
            let pair = (version.clone(), version.clone());
            let cli = clis_for(std::slice::from_ref(&pair), &sims)
                .await
                .map_err(|e| e.message)?
                .remove(0);
            let mut exec = exec;
            exec.variants = vec![variant];
            let jobs =
                jobs_for(std::slice::from_ref(&scenario), &exec, &cli).map_err(|e| e.message)?;
            let opts = exec_options(
                &exec,
                std::slice::from_ref(&scenario),
                run_dir.join(&version),
            )
            .map_err(|e| e.message)?;
            let results = matrix::execute(jobs, &opts, cancel.clone())
                .await
                .map_err(|e| e.to_string())?;
            if *cancel.borrow() {
                return Err("interrupted".to_string());
            }
            let outcomes: Vec<_> = results.iter().map(|c| c.result.judgement.outcome).collect();
            let (outcome, agreement) = crate::classify::agreement(&outcomes);
            eprintln!("wakeprobe: {version}: {agreement}");
            Ok(Probe {
                version,
                outcome,
                agreement,
            })
        }
    };
    let report = bisect::bisect(&versions, &args.good, &args.bad, judge)
        .await
        .map_err(|e| match e {
            bisect::BisectError::Run { .. } => AppError::setup(e.to_string()),
            other => AppError::bad_input(other.to_string()),
        })?;
    println!(
        "first version whose verdict differs: {}",
        report.first_bad.version
    );
    println!("steps:");
    for p in &report.steps {
        println!("  {} {}", p.version, p.agreement);
    }
    println!();
    println!(
        "{}",
        report.paragraph(&format!("{}/{}", scenario.name, variant))
    );
    eprintln!("reports: {}", run_dir.display());
    Ok(exit::OK)
}
