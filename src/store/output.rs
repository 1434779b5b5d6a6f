//! A file a user names for wakeprobe to write (`--junit`, `export -o`, `import -o`), checked
//! before anything runs: a file (not a folder, a device or a FIFO, which an atomic write would
//! replace) in a folder that exists and can be written, never a folder made for it from `/`
//! up, and an earlier file replaced only where that is the file's nature (a JUnit report is
//! written again by every run of a CI job) or when the user says `--force`.

use std::path::Path;

/// What to do with a file already at the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Write over it (a report written again each time).
    Replace,
    /// Refuse, naming `--force` (a file the user may have edited).
    Refuse,
}

#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The path names no file wakeprobe may write (bad input, exit 2).
    #[error("{path}: {why}")]
    Path { path: String, why: String },
    /// The folder or the file cannot be written (read-only, forbidden: a setup failure).
    #[error("{path}: cannot be written: {source}")]
    Unwritable {
        path: String,
        source: std::io::Error,
    },
}

/// What `--force` says about an existing file.
pub fn forced(force: bool) -> Existing {
    if force {
        Existing::Replace
    } else {
        Existing::Refuse
    }
}

/// Checks that `path` can be written as a new or replaced file. `made_here` is a folder this
/// invocation creates itself (`--out`): a file inside it needs no existing folder.
pub fn check_file(
    path: &Path,
    existing: Existing,
    made_here: Option<&Path>,
) -> Result<(), OutputError> {
    let shown = path.display().to_string();
    let refuse = |why: String| OutputError::Path {
        path: shown.clone(),
        why,
    };
    let unwritable = |source: rustix::io::Errno| OutputError::Unwritable {
        path: shown.clone(),
        source: source.into(),
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => return Err(refuse("is a folder: name a file".into())),
        Ok(meta) if !meta.is_file() => {
            return Err(refuse(format!(
                "is not a regular file ({}): name a file",
                crate::os::files::describe(meta.file_type())
            )));
        }
        Ok(_) if existing == Existing::Refuse => {
            return Err(refuse(
                "exists: pass --force to replace it, or name another file".into(),
            ));
        }
        Ok(_) => {
            rustix::fs::access(path, rustix::fs::Access::WRITE_OK).map_err(unwritable)?;
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            return Err(refuse("a part of the path is a file, not a folder".into()));
        }
        Err(_) => {}
    }
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match std::fs::metadata(folder) {
        Ok(meta) if meta.is_dir() => {
            let access = rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK;
            rustix::fs::access(folder, access).map_err(unwritable)
        }
        Ok(_) => Err(refuse(format!("{} is not a folder", folder.display()))),
        Err(_) if made_here.is_some_and(|out| folder.starts_with(out)) => Ok(()),
        Err(_) => Err(refuse(format!(
            "its folder {} does not exist (wakeprobe makes no folder for a file you name)",
            folder.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(path: &Path, existing: Existing, made_here: Option<&Path>) -> String {
        check_file(path, existing, made_here)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_file_in_an_existing_folder_is_written_and_nothing_is_made_for_it() {
        let tmp = tempfile::tempdir().unwrap();
        let new = tmp.path().join("x.mjs");
        assert!(check_file(&new, Existing::Refuse, None).is_ok());
        let deep = tmp.path().join("no/such/x.mjs");
        assert!(why(&deep, Existing::Refuse, None).contains("does not exist"));
        assert!(!tmp.path().join("no").exists(), "the check made nothing");
        let out = tmp.path().join("reports");
        assert!(check_file(&out.join("junit.xml"), Existing::Replace, Some(&out)).is_ok());
        assert!(
            why(Path::new("/nonexistent/dir/x.mjs"), Existing::Refuse, None)
                .contains("its folder /nonexistent/dir does not exist")
        );
    }

    #[test]
    fn an_existing_file_is_replaced_only_where_asked() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("x.toml");
        std::fs::write(&file, "mine").unwrap();
        assert!(why(&file, Existing::Refuse, None).contains("pass --force"));
        assert!(check_file(&file, Existing::Replace, None).is_ok());
    }

    #[test]
    fn folders_devices_and_paths_through_files_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(why(tmp.path(), Existing::Replace, None).contains("is a folder"));
        assert!(
            why(Path::new("/dev/null"), Existing::Replace, None)
                .contains("not a regular file (a character device)")
        );
        let file = tmp.path().join("f");
        std::fs::write(&file, "").unwrap();
        let through = file.join("j.xml");
        assert!(matches!(
            check_file(&through, Existing::Replace, None),
            Err(OutputError::Path { .. })
        ));
    }
}
