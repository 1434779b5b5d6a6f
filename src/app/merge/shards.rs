//! Reading what `merge` is given: each folder's matrix output (a shard that failed to start is
//! said as missing), every run judged again from its evidence, and each run's folder copied
//! into the merged folder so that it works alone.

use std::path::{Path, PathBuf};

use super::super::AppError;
use super::super::conclude::read_matrix;
use super::super::invocation::Ran;
use crate::matrix::grid::Matrix;
use crate::matrix::shards::Missing;

/// The runs of every shard, judged again from their evidence, each with the shard folder it
/// came from (until its evidence is copied).
pub fn load_rows(matrices: &[(PathBuf, Matrix)]) -> Result<(Ran, Vec<PathBuf>), AppError> {
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
        let rows =
            super::super::invocation::load_runs(dir, super::super::invocation::Judging::Again)?
                .rows;
        from.extend(rows.iter().map(|_| dir.clone()));
        ran.rows.extend(rows);
    }
    Ok((ran, from))
}

/// Copies each run's folder into the merged folder, at the path it had in its shard (a cell
/// is in one shard only, so no two collide), and points the row at the copy: the merged folder
/// then works alone, uploaded or moved without its shards.
pub fn copy_evidence(ran: &mut Ran, from: &[PathBuf], out: &Path) -> Result<(), AppError> {
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

pub fn read_shards(dirs: &[PathBuf]) -> Result<Shards, AppError> {
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
pub fn create_out(out: &Path) -> Result<(), AppError> {
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
