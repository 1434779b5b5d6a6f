//! `wakeprobe merge DIR...`: shard outputs combined into one matrix, one summary and one
//! JUnit file, optionally compared with a baseline. The shards are checked first: outputs of
//! different matrices, or a shard given twice, are refused (exit 6, nothing written). A shard
//! or a cell that is missing does not hide the others: what was given is merged and written,
//! each missing part is said in every output (an error case each in JUnit), and the exit code
//! is 6 (a CI must not read a partial matrix as a whole one).

use std::path::{Path, PathBuf};

use super::conclude::{Concluding, MatrixOf, read_matrix};
use super::invocation::{self, Ran};
use super::{AppError, AppResult};
use crate::classify::result::MissingPart;
use crate::cli::{self, Exit};
use crate::matrix::grid::Matrix;
use crate::matrix::shards::{self, CellKey, MergeError, Missing, ShardOutput};
use crate::report::plural;

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
    let one = shards::check_shards(&outputs)?;
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
        missing.extend(shards::check_cells(one, &present));
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

/// The runs of every shard, judged again from their evidence, each with the shard folder it
/// came from (until its evidence is copied).
fn load_rows(matrices: &[(PathBuf, Matrix)]) -> Result<(Ran, Vec<PathBuf>), AppError> {
    let mut ran = Ran {
        rows: vec![],
        failures: vec![],
        interrupted: false,
    };
    let mut from: Vec<PathBuf> = Vec::new();
    for (dir, matrix) in matrices {
        if matrix.cells.is_empty() {
            continue; // a shard that held no cell
        }
        let rows = super::report::load_runs(dir, super::report::Judging::Again)?.rows;
        from.extend(rows.iter().map(|_| dir.clone()));
        ran.rows.extend(rows);
    }
    Ok((ran, from))
}

/// Copies each run's folder into the merged folder, at the path it had in its shard (a cell
/// is in one shard only, so no two collide), and points the row at the copy: the merged folder
/// then works alone, uploaded or moved without its shards.
fn copy_evidence(ran: &mut Ran, from: &[PathBuf], out: &Path) -> Result<(), AppError> {
    for (row, shard) in ran.rows.iter_mut().zip(from) {
        let rel = row.dir.strip_prefix(shard).unwrap_or(&row.dir);
        let rel: PathBuf = rel
            .components()
            .filter(|c| matches!(c, std::path::Component::Normal(_)))
            .collect();
        let target = out.join(&rel);
        let copied = std::fs::remove_dir_all(&target)
            .or_else(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Ok(()),
                _ => Err(e),
            })
            .and_then(|()| crate::sandbox::copy_tree(&row.dir, &target));
        copied.map_err(|e| {
            AppError::setup(format!(
                "copying {} into {}: {e}",
                row.dir.display(),
                target.display()
            ))
        })?;
        row.dir = target;
    }
    Ok(())
}

/// Each folder's matrix output (its run-id folder may be nested inside); a folder without one
/// is said as missing (its shard failed to start), and the rest still merges.
type Shards = (Vec<(PathBuf, Matrix)>, Vec<Missing>);

fn read_shards(dirs: &[PathBuf]) -> Result<Shards, AppError> {
    let (mut out, mut missing) = (Vec::new(), Vec::new());
    for dir in dirs {
        if !dir.is_dir() {
            return Err(AppError::bad_input(format!(
                "{}: not a folder",
                dir.display()
            )));
        }
        let Some(file) = find_file(dir, "matrix.json") else {
            missing.push(Missing::NoMatrix {
                dir: dir.display().to_string(),
            });
            continue;
        };
        let matrix = read_matrix(&file)?;
        let folder = file.parent().map(Path::to_path_buf).unwrap_or_default();
        out.push((folder, matrix));
    }
    Ok((out, missing))
}

/// The merged folder: created, or an existing folder reused.
fn create_out(out: &Path) -> Result<(), AppError> {
    crate::store::create_exclusive(out).or_else(|e| {
        if e.source.kind() == std::io::ErrorKind::AlreadyExists && out.is_dir() {
            Ok(())
        } else {
            Err(AppError::bad_input(format!(
                "--out {}: {}",
                out.display(),
                e.source
            )))
        }
    })
}

/// The first file called `name` under `dir` (a shard artifact may nest its run-id folder): a
/// folder's own file before any in its subfolders, the subfolders in name order, links (the
/// `latest` link) not followed.
fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    walkdir::WalkDir::new(dir)
        .sort_by_key(|e| (e.file_type().is_dir(), e.file_name().to_owned()))
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| e.file_name() == name && e.path().is_file())
        .map(walkdir::DirEntry::into_path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folders_own_file_is_found_before_its_subfolders_and_links_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let put = |p: &str| {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "{}").unwrap();
        };
        put("b/matrix.json");
        put("a/deep/er/matrix.json");
        put("z/zz/matrix.json");
        // A walk that followed the `latest` link would find z's file through it first.
        std::os::unix::fs::symlink(dir.path().join("z"), dir.path().join("latest")).unwrap();
        // The subfolders in name order, each searched whole before the next.
        assert_eq!(
            find_file(dir.path(), "matrix.json"),
            Some(dir.path().join("a/deep/er/matrix.json"))
        );
        put("matrix.json");
        assert_eq!(
            find_file(dir.path(), "matrix.json"),
            Some(dir.path().join("matrix.json"))
        );
    }
}
