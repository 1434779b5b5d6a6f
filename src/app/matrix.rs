//! `wakeprobe matrix`: versions x scenarios x repeats, sharded, compared with a baseline.
//! Also the pieces `merge`, `baseline` and `bisect` share: version specs, the CLIs behind
//! them, and reading, writing and comparing matrices.

use super::clis::{clis_for, resolve_specs, version_specs};
use super::conclude::{
    Concluding, MatrixOf, compared_across, conclude, identity_of, read_matrix, write_matrix,
};
use super::invocation;
use super::{AppResult, resolve};
use crate::cli::{self, Exit};
use crate::console;
use crate::matrix::Job;
use crate::matrix::shards::{ShardPos, take_shard};

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
