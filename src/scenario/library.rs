//! The scenario library and `sandbox-project/`, embedded in the binary so that an installed
//! wakeprobe needs no source tree. The code that reads files reads a copy written once into
//! the cache (`CACHE/library/<content hash>/`, with `scenarios/` and `sandbox-project/` side by
//! side, as in the source tree); `wakeprobe init DIR` writes the same files out for editing.

use std::io;
use std::path::{Path, PathBuf};

use include_dir::{Dir, DirEntry, include_dir};

static SCENARIOS: Dir = include_dir!("$CARGO_MANIFEST_DIR/scenarios");
static SANDBOX: Dir = include_dir!("$CARGO_MANIFEST_DIR/sandbox-project");

/// The library's scenario folder, under a library root.
pub const SCENARIOS_DIR: &str = "scenarios";
/// The sandbox template, under a library root.
pub const SANDBOX_DIR: &str = "sandbox-project";

/// One embedded file: its path under a library root and its bytes.
pub struct File {
    pub path: PathBuf,
    pub bytes: &'static [u8],
}

impl File {
    /// Hook scripts must stay runnable: a file that starts with `#!` is written executable.
    pub fn executable(&self) -> bool {
        self.bytes.starts_with(b"#!")
    }
}

/// Every embedded file, in a stable order.
pub fn files() -> Vec<File> {
    let mut out = Vec::new();
    for (root, dir) in [(SCENARIOS_DIR, &SCENARIOS), (SANDBOX_DIR, &SANDBOX)] {
        collect(Path::new(root), dir, &mut out);
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn collect(root: &Path, dir: &'static Dir<'static>, out: &mut Vec<File>) {
    for entry in dir.entries() {
        match entry {
            DirEntry::Dir(d) => collect(root, d, out),
            DirEntry::File(f) => out.push(File {
                path: root.join(f.path()),
                bytes: f.contents(),
            }),
        }
    }
}

/// A hex digest of every path and byte (FNV-1a, 64 bits): a new build with other contents
/// gets a new cache folder.
fn digest(files: &[File]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes.iter().chain(&[0u8]) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for f in files {
        eat(f.path.to_string_lossy().as_bytes());
        eat(f.bytes);
    }
    format!("{h:016x}")
}

/// The library root in the cache under `cache`, written on first use. Concurrent first uses
/// each write a private folder and rename it into place; the first rename wins, the others
/// drop theirs.
pub fn materialized(cache: &Path) -> io::Result<PathBuf> {
    let files = files();
    let root = cache.join("library").join(digest(&files));
    if root.is_dir() {
        return Ok(root);
    }
    let parent = root.parent().expect("a library root has a parent");
    std::fs::create_dir_all(parent)?;
    let staging = tempfile::Builder::new()
        .prefix(".writing-")
        .tempdir_in(parent)?;
    write_files(staging.path(), &files)?;
    match std::fs::rename(staging.path(), &root) {
        Ok(()) => {
            // Renamed away: nothing left for the guard to remove.
            let _ = staging.keep();
            Ok(root)
        }
        Err(_) if root.is_dir() => Ok(root),
        Err(e) => Err(e),
    }
}

/// What `write_out` did not do.
#[derive(Debug, thiserror::Error)]
pub enum WriteOutError {
    #[error("{} (pass --force to overwrite)", already(.0))]
    Exists(Vec<PathBuf>),
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// `2 files already exist: a, b`, `14 files already exist: a, b, c and 11 more`
fn already(paths: &[PathBuf]) -> String {
    const SHOWN: usize = 3;
    let mut text = match paths.len() {
        1 => "1 file already exists: ".to_string(),
        n => format!("{n} files already exist: "),
    };
    let shown: Vec<String> = paths
        .iter()
        .take(SHOWN)
        .map(|p| p.display().to_string())
        .collect();
    text.push_str(&shown.join(", "));
    if paths.len() > SHOWN {
        text.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    text
}

/// Writes the library under `root` (`root/scenarios/`, `root/sandbox-project/`) and returns
/// the files written. Without `overwrite`, nothing is written when any of them exists.
pub fn write_out(root: &Path, overwrite: bool) -> Result<Vec<PathBuf>, WriteOutError> {
    let files = files();
    if !overwrite {
        let existing: Vec<PathBuf> = files
            .iter()
            .map(|f| root.join(&f.path))
            .filter(|p| p.exists())
            .collect();
        if !existing.is_empty() {
            return Err(WriteOutError::Exists(existing));
        }
    }
    write_files(root, &files)?;
    Ok(files.iter().map(|f| root.join(&f.path)).collect())
}

fn write_files(root: &Path, files: &[File]) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for f in files {
        let path = root.join(&f.path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, f.bytes)?;
        let mode = if f.executable() { 0o755 } else { 0o644 };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file of the source tree's library, relative to the source root.
    fn source_files() -> Vec<PathBuf> {
        fn walk(dir: &Path, base: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, base, out);
                } else {
                    out.push(p.strip_prefix(base).unwrap().to_path_buf());
                }
            }
        }
        let base = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut out = Vec::new();
        for d in [SCENARIOS_DIR, SANDBOX_DIR] {
            walk(&base.join(d), base, &mut out);
        }
        out.sort();
        out
    }

    #[test]
    fn the_binary_holds_every_library_file_byte_for_byte() {
        let embedded: Vec<PathBuf> = files().into_iter().map(|f| f.path).collect();
        assert_eq!(
            embedded,
            source_files(),
            "a file of the library is not embedded"
        );
        let base = Path::new(env!("CARGO_MANIFEST_DIR"));
        for f in files() {
            assert_eq!(std::fs::read(base.join(&f.path)).unwrap(), f.bytes);
        }
    }

    #[test]
    fn written_out_once_with_runnable_hooks_and_never_over_a_users_edit() {
        use std::os::unix::fs::PermissionsExt;
        let cache = tempfile::tempdir().unwrap();
        let root = materialized(cache.path()).unwrap();
        assert_eq!(
            materialized(cache.path()).unwrap(),
            root,
            "one copy per content"
        );
        let hook = root
            .join(SANDBOX_DIR)
            .join(".claude/hooks/subagent-stall-guard.sh");
        let mode = std::fs::metadata(&hook).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0o111, "the guard hook is executable");
        assert!(
            root.join(SCENARIOS_DIR)
                .join("subagent-bg-turn-end.toml")
                .is_file()
        );

        let dir = tempfile::tempdir().unwrap();
        let written = write_out(dir.path(), false).unwrap();
        assert_eq!(written.len(), files().len());
        let edited = dir.path().join(SCENARIOS_DIR).join("child-hang.toml");
        std::fs::write(&edited, "# mine").unwrap();
        let Err(WriteOutError::Exists(existing)) = write_out(dir.path(), false) else {
            panic!("init over an existing library must refuse");
        };
        assert_eq!(existing.len(), files().len());
        assert_eq!(std::fs::read_to_string(&edited).unwrap(), "# mine");
        write_out(dir.path(), true).unwrap();
        assert_ne!(std::fs::read_to_string(&edited).unwrap(), "# mine");
    }
}
