//! The install budget of a long search over releases (`history`): at most `--max-installs`
//! installs (a reinstall counts), and the versions this command installed hold at most
//! `--disk-budget` at once. Versions the search no longer needs are pruned as it goes; when
//! that is not enough, the least recently used of its own installs go too (a later need
//! reinstalls them). The pinned version and every version cached before the command started
//! are never touched; at the end, everything this command installed is removed again.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::backend::{Cli, install};
use crate::runtime::{Adapter, Runtime, qualified};

/// The versions cached in a runtime's folder.
fn cached_in(dir: &std::path::Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|v| install::is_version(v))
                .collect()
        })
        .unwrap_or_default()
}

/// What an install attempt decided.
#[derive(Debug, thiserror::Error)]
pub enum InstallBudgetError {
    /// The budget is spent: the search should stop.
    #[error("{0}")]
    Spent(String),
    /// This version could not be installed or started: the search may skip it.
    #[error("{0}")]
    Failed(String),
}

/// An install's size before it exists: what the CLI takes on disk (about 400 MB a version).
const TYPICAL_INSTALL: u64 = 400 << 20;

pub struct Installs {
    root: PathBuf,
    /// The runtime whose versions these are (its own folder in the cache).
    runtime: Runtime,
    before: BTreeSet<String>,
    /// Versions this command installed and still holds: bytes and the last probe that used it.
    ours: BTreeMap<String, (u64, u64)>,
    clock: u64,
    max_installs: u32,
    budget: u64,
    pub installs: u32,
    pub pruned: u32,
    pub peak: u64,
}

impl Installs {
    pub fn new(runtime: Runtime, max_installs: u32, budget: u64) -> Installs {
        Installs::in_root(install::cache_root(), runtime, max_installs, budget)
    }

    fn in_root(root: PathBuf, runtime: Runtime, max_installs: u32, budget: u64) -> Installs {
        let before = cached_in(&root.join(Adapter::of(runtime).cache_folder));
        Installs {
            root,
            runtime,
            before,
            ours: BTreeMap::new(),
            clock: 0,
            max_installs,
            budget,
            installs: 0,
            pruned: 0,
            peak: 0,
        }
    }

    fn held(&self) -> u64 {
        self.ours.values().map(|(bytes, _)| bytes).sum()
    }

    /// The runtime's folder of versions.
    fn dir(&self) -> PathBuf {
        self.root.join(Adapter::of(self.runtime).cache_folder)
    }

    fn prunable(&self, version: &str) -> bool {
        self.ours.contains_key(version)
            && version != Adapter::of(self.runtime).pinned
            && !self.before.contains(version)
    }

    fn prune(&mut self, version: &str) {
        if !self.prunable(version) {
            return;
        }
        match install::remove_in(&self.dir(), version) {
            Ok(_) => {
                self.ours.remove(version);
                self.pruned += 1;
                eprintln!("wakeprobe: pruned {version} (no longer needed)");
            }
            Err(e) => tracing::warn!(%e, version, "could not prune"),
        }
    }

    /// Prunes what the search no longer needs, then (least recently used first) what keeps a
    /// new install of `version` over the disk budget.
    fn make_room(&mut self, version: &str, needed: &BTreeSet<String>) {
        let stale: Vec<String> = self
            .ours
            .keys()
            .filter(|v| !needed.contains(*v) && *v != version)
            .cloned()
            .collect();
        for v in stale {
            self.prune(&v);
        }
        let next = self
            .ours
            .values()
            .map(|(b, _)| *b)
            .max()
            .unwrap_or(TYPICAL_INSTALL);
        while self.held() + next > self.budget {
            let Some(oldest) = self
                .ours
                .iter()
                .filter(|(v, _)| *v != version)
                .min_by_key(|(_, (_, used))| *used)
                .map(|(v, _)| v.clone())
            else {
                break;
            };
            self.prune(&oldest);
        }
    }

    /// The CLI for `version`, installing it within the budget if it is not cached.
    pub async fn cli(
        &mut self,
        version: &str,
        needed: &BTreeSet<String>,
    ) -> Result<Cli, InstallBudgetError> {
        self.clock += 1;
        if !install::is_cached_in(&self.dir(), version) {
            self.make_room(version, needed);
            if self.installs >= self.max_installs {
                return Err(InstallBudgetError::Spent(format!(
                    "--max-installs {} reached before installing {version}",
                    self.max_installs
                )));
            }
            self.installs += 1;
        }
        let cli = super::resolve::claude_version(&qualified(self.runtime, version))
            .await
            .map_err(|e| InstallBudgetError::Failed(e.message))?;
        if !self.before.contains(version) && version != Adapter::of(self.runtime).pinned {
            let bytes = install::dir_size(&self.dir().join(version));
            self.ours.insert(version.to_string(), (bytes, self.clock));
            self.peak = self.peak.max(self.held());
        }
        Ok(cli)
    }

    /// Removes every version this command installed.
    pub fn finish(&mut self) {
        let all: Vec<String> = self.ours.keys().cloned().collect();
        for v in all {
            self.prune(&v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache holding `before` (cached earlier) and `ours` (installed by this command), each
    /// version 1000 bytes.
    fn cache(before: &[&str], ours: &[&str], budget: u64) -> (tempfile::TempDir, Installs) {
        let dir = tempfile::tempdir().unwrap();
        let add = |v: &str| {
            let folder = dir.path().join("claude-code").join(v);
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(folder.join("blob"), vec![0u8; 1000]).unwrap();
        };
        before.iter().for_each(|v| add(v));
        let mut installs =
            Installs::in_root(dir.path().to_path_buf(), Runtime::ClaudeCode, 10, budget);
        for (i, v) in ours.iter().enumerate() {
            add(v);
            installs.ours.insert(v.to_string(), (1000, i as u64));
        }
        (dir, installs)
    }

    fn left(dir: &tempfile::TempDir) -> Vec<String> {
        install::cached_versions(dir.path())
            .into_iter()
            .map(|c| c.version)
            .collect()
    }

    #[test]
    fn versions_no_longer_needed_go_and_earlier_ones_stay() {
        let (dir, mut installs) =
            cache(&["2.1.219", PINNED], &["1.0.1", "1.0.2", "1.0.3"], 1 << 30);
        let needed: BTreeSet<String> = ["1.0.2".to_string()].into();
        installs.make_room("1.0.4", &needed);
        assert_eq!(left(&dir), vec!["1.0.2", "2.1.219", PINNED]);
        assert_eq!(installs.pruned, 2);
        installs.finish();
        assert_eq!(
            left(&dir),
            vec!["2.1.219", PINNED],
            "the end removes ours only"
        );
    }

    #[test]
    fn the_disk_budget_prunes_even_needed_versions_least_recently_used_first() {
        // Room for three installs of 1000 bytes: two held plus the next.
        let (dir, mut installs) = cache(&["2.1.219"], &["1.0.1", "1.0.2", "1.0.3"], 3000);
        let needed: BTreeSet<String> = ["1.0.1", "1.0.2", "1.0.3"].map(String::from).into();
        installs.make_room("1.0.4", &needed);
        assert_eq!(
            left(&dir),
            vec!["1.0.2", "1.0.3", "2.1.219"],
            "1.0.1 was used least recently"
        );
        // A budget below one install prunes all of ours, never the earlier ones.
        installs.budget = 10;
        installs.make_room("1.0.4", &needed);
        assert_eq!(left(&dir), vec!["2.1.219"]);
    }

    const PINNED: &str = crate::backend::PINNED_VERSION;
}
