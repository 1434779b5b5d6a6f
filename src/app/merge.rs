//! `wakeprobe merge DIR...`: shard outputs combined into one matrix, one summary and one
//! JUnit file, optionally compared with a baseline.

use std::path::{Path, PathBuf};

use super::invocation::{self, Outputs, Ran};
use super::matrix::{finish_matrix, read_matrix};
use super::{AppError, AppResult};
use crate::cli::{self, exit};
use crate::report::saved;

/// `wakeprobe merge DIR...`
pub fn merge(args: &cli::MergeArgs) -> AppResult {
    let baseline = args.baseline.as_deref().map(read_matrix).transpose()?;
    let mut ran = Ran {
        rows: vec![],
        failures: vec![],
        interrupted: false,
    };
    let mut columns: Vec<String> = Vec::new();
    for dir in &args.dirs {
        if let Some(m) = find_file(dir, "matrix.json") {
            for c in read_matrix(&m)?.columns {
                if !columns.contains(&c) {
                    columns.push(c);
                }
            }
        }
        match super::report::load_runs(dir) {
            Ok(shard) => ran.rows.extend(shard.rows),
            Err(_) if saved::find_runs(dir).is_err() => continue, // a shard with no cell
            Err(e) => return Err(e),
        }
    }
    if ran.rows.is_empty() {
        return Err(AppError::bad_input("no runs in the given folders"));
    }
    crate::report::store::create_exclusive(&args.out).or_else(|e| {
        if e.source.kind() == std::io::ErrorKind::AlreadyExists && args.out.is_dir() {
            Ok(())
        } else {
            Err(AppError::bad_input(format!(
                "--out {}: {}",
                args.out.display(),
                e.source
            )))
        }
    })?;
    let summary = invocation::finish(
        &Outputs {
            dir: &args.out,
            junit: args.junit.as_deref(),
            table: false,
            summary: true,
        },
        &ran,
    )?;
    let compared = finish_matrix(&args.out, &ran, &columns, baseline.as_ref())?;
    eprintln!(
        "merged {} run(s) into {}",
        ran.rows.len(),
        args.out.display()
    );
    Ok(compared.unwrap_or(if summary.all_match() {
        exit::OK
    } else {
        exit::MISMATCH
    }))
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
