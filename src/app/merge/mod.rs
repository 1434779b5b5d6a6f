//! `wakeprobe merge DIR...`: shard outputs combined into one matrix, one summary and one
//! JUnit file, optionally compared with a baseline. The shards are checked first: outputs of
//! different matrices, or a shard given twice, are refused (exit 6, nothing written). A shard
//! or a cell that is missing does not hide the others: what was given is merged and written,
//! each missing part is said in every output (an error case each in JUnit), and the exit code
//! is 6 (a CI must not read a partial matrix as a whole one).

mod shards;

use super::conclude::{Concluding, MatrixOf, read_matrix};
use super::invocation;
use super::{AppError, AppResult};
use crate::classify::result::MissingPart;
use crate::cli::{self, Exit};
use crate::matrix::shards::{self as matrix_shards, CellKey, MergeError, Missing, ShardOutput};
use crate::report::plural;
use shards::{copy_evidence, create_out, load_rows, read_shards};

impl From<MergeError> for AppError {
    fn from(e: MergeError) -> AppError {
        AppError {
            code: Exit::Incomplete,
            message: e.to_string(),
        }
    }
}

/// `wakeprobe merge DIR...`
pub fn merge(args: &cli::MergeArgs) -> AppResult {
    let baseline = args.baseline.as_deref().map(read_matrix).transpose()?;
    super::resolve::check_junit(args.junit.as_deref(), &args.out)?;
    let (matrices, mut missing) = read_shards(&args.dirs)?;
    let outputs: Vec<ShardOutput> = matrices
        .iter()
        .map(|(dir, m)| ShardOutput {
            dir: dir.display().to_string(),
            identity: m.identity.as_ref(),
            shard: m.shard,
        })
        .collect();
    let one = matrix_shards::check_shards(&outputs)?;
    if args.dirs.is_empty() {
        missing.push(Missing::NoShards);
    }
    let identity = one.as_ref().map(|o| o.identity);
    let across = match identity {
        Some(identity) => super::conclude::compared_across(
            identity,
            baseline.as_ref(),
            args.baseline.as_deref(),
            args.compare_across_settings,
        )?,
        None => vec![],
    };
    let (mut ran, from) = load_rows(&matrices)?;
    if let Some(one) = &one {
        let present: Vec<CellKey> = ran
            .rows
            .iter()
            .map(|r| CellKey {
                scenario: r.result.run.scenario.clone(),
                variant: r.result.run.variant.clone(),
                cli_spec: r.result.run.column(),
            })
            .collect();
        missing.extend(one.missing.clone());
        missing.extend(matrix_shards::check_cells(one, &present));
    }
    // What is missing is said first, and again in every output.
    for m in &missing {
        eprintln!("wakeprobe: {m}");
    }
    create_out(&args.out)?;
    copy_evidence(&mut ran, &from, &args.out)?;
    let no_columns = Vec::new();
    let of = MatrixOf {
        columns: identity.map_or(&no_columns, |i| &i.versions),
        identity,
        shard: None,
    };
    let grid = of.matrix(&ran.results());
    let parts: Vec<MissingPart> = missing.iter().flat_map(Missing::parts).collect();
    let (summary, compared) = super::conclude::conclude(
        &Concluding {
            dir: &args.out,
            junit: args.junit.as_deref(),
            grid: &grid,
            // Nothing to compare when no shard said which matrix it is.
            baseline: baseline.as_ref().filter(|_| identity.is_some()),
            baseline_path: args.baseline.as_deref(),
            across: &across,
            missing: Some(&parts),
        },
        &ran,
    )?;
    eprintln!(
        "merged {} of {} into {}",
        plural(matrices.len(), "shard", "shards"),
        plural(ran.rows.len(), "run", "runs"),
        args.out.display()
    );
    let code = if summary.contradicted_runs() > 0 {
        Exit::Contradiction
    } else if !missing.is_empty() {
        Exit::Incomplete
    } else {
        compared.unwrap_or(if summary.all_match() {
            Exit::Ok
        } else {
            Exit::Mismatch
        })
    };
    invocation::emit_summary(
        &args.out,
        Some(&args.out.join("matrix.json")),
        &summary,
        code,
    );
    Ok(code)
}
