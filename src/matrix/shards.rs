//! A matrix's identity and its shards: what `matrix --shard i/n` records about the whole it
//! belongs to (the versions as asked, scenarios, variants, `--set` values, repeats and the full
//! cell list), and the checks `merge` makes before it trusts shard outputs: every shard of
//! `1..=n` present exactly once, all of one matrix, and every cell of the matrix with its runs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::report::plural;

/// One cell of a matrix, by key: a scenario variant on a CLI as asked for.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct CellKey {
    pub scenario: String,
    pub variant: String,
    pub cli_spec: String,
}

impl std::fmt::Display for CellKey {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}/{} on {}", self.scenario, self.variant, self.cli_spec)
    }
}

/// What makes a matrix this matrix. Every shard of one matrix records the same identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Identity {
    /// The versions as asked for (`latest` stays `latest`).
    pub versions: Vec<String>,
    /// The scenarios' names.
    pub scenarios: Vec<String>,
    /// The `--variant` filter (empty: every variant).
    pub variants: Vec<String>,
    /// The `--set` values, `KEY=VALUE`.
    pub sets: Vec<String>,
    /// `--sim-version` mappings, `VERSION=PROFILE`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sim_versions: Vec<String>,
    /// Runs per cell.
    pub repeat: u32,
    /// Every cell of the whole matrix (all shards together), sorted.
    pub cells: Vec<CellKey>,
}

impl Identity {
    /// The first field in which two identities differ, in words.
    pub fn difference(&self, other: &Identity) -> Option<String> {
        let list = |v: &[String]| {
            if v.is_empty() {
                "(none)".to_string()
            } else {
                v.join(",")
            }
        };
        let fields: [(&str, String, String); 5] = [
            ("versions", list(&self.versions), list(&other.versions)),
            ("scenarios", list(&self.scenarios), list(&other.scenarios)),
            ("variants", list(&self.variants), list(&other.variants)),
            ("--set values", list(&self.sets), list(&other.sets)),
            (
                "--sim-version mappings",
                list(&self.sim_versions),
                list(&other.sim_versions),
            ),
        ];
        for (what, a, b) in fields {
            if a != b {
                return Some(format!("{what} {a} vs {b}"));
            }
        }
        if self.repeat != other.repeat {
            return Some(format!("--repeat {} vs {}", self.repeat, other.repeat));
        }
        (self.cells != other.cells).then(|| {
            format!(
                "cell lists of {} and {} cells",
                self.cells.len(),
                other.cells.len()
            )
        })
    }
}

/// Which shard a matrix output is: `index` of `count`, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShardPos {
    pub index: usize,
    pub count: usize,
}

impl std::fmt::Display for ShardPos {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Why shard outputs cannot be merged into one trustworthy matrix (exit code 6).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MergeError {
    #[error("{dir}: no matrix.json in it: not a matrix output (did its shard fail to start?)")]
    NoMatrix { dir: String },
    #[error(
        "{dir}: its matrix.json records no identity (written by an older wakeprobe): it cannot be checked against the other shards"
    )]
    NoIdentity { dir: String },
    #[error("shard {shard} given twice: {first} and {second}")]
    Twice {
        shard: ShardPos,
        first: String,
        second: String,
    },
    #[error("{first} and {second} are shards of different matrices: {difference}")]
    Different {
        first: String,
        second: String,
        difference: String,
    },
    #[error("missing shard(s) of {count}: {missing}")]
    MissingShards { count: usize, missing: String },
    #[error("{} missing from the merged runs: {}", plural(missing.len(), "cell", "cells"), list_cells(missing))]
    MissingCells { missing: Vec<String> },
}

fn list_cells(cells: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut s = cells
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if cells.len() > SHOWN {
        s.push_str(&format!("; and {} more", cells.len() - SHOWN));
    }
    s
}

/// One shard output as `merge` reads it: its folder, its identity and its position.
pub struct ShardOutput<'a> {
    pub dir: String,
    pub identity: Option<&'a Identity>,
    /// `None` for an unsharded matrix (the whole, 1/1).
    pub shard: Option<ShardPos>,
}

/// Checks that shard outputs are all the shards of one matrix, each once; returns its identity.
pub fn check_shards<'a>(outputs: &[ShardOutput<'a>]) -> Result<&'a Identity, MergeError> {
    let mut identity: Option<(&'a Identity, &str)> = None;
    let mut seen: BTreeMap<usize, &str> = BTreeMap::new();
    let mut count = None;
    for out in outputs {
        let id = out.identity.ok_or_else(|| MergeError::NoIdentity {
            dir: out.dir.clone(),
        })?;
        let pos = out.shard.unwrap_or(ShardPos { index: 1, count: 1 });
        match identity {
            None => identity = Some((id, &out.dir)),
            Some((first, first_dir)) => {
                let before = count.unwrap_or(pos.count);
                let difference = first.difference(id).or_else(|| {
                    (before != pos.count)
                        .then(|| format!("split into {before} vs {} shards", pos.count))
                });
                if let Some(difference) = difference {
                    return Err(MergeError::Different {
                        first: first_dir.to_string(),
                        second: out.dir.clone(),
                        difference,
                    });
                }
            }
        }
        count = Some(pos.count);
        if let Some(first) = seen.insert(pos.index, &out.dir) {
            return Err(MergeError::Twice {
                shard: pos,
                first: first.to_string(),
                second: out.dir.clone(),
            });
        }
    }
    let (identity, _) = identity.ok_or(MergeError::MissingShards {
        count: 0,
        missing: "no shard given".into(),
    })?;
    let count = count.unwrap_or(1);
    let missing: Vec<String> = (1..=count)
        .filter(|i| !seen.contains_key(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::MissingShards {
            count,
            missing: missing.join(", "),
        });
    }
    Ok(identity)
}

/// Cells of the identity with fewer runs than `repeat` among `present` (one key per run).
pub fn check_cells(identity: &Identity, present: &[CellKey]) -> Result<(), MergeError> {
    let mut counts: BTreeMap<&CellKey, u32> = BTreeMap::new();
    for key in present {
        *counts.entry(key).or_default() += 1;
    }
    let missing: Vec<String> = identity
        .cells
        .iter()
        .filter_map(|cell| {
            let n = counts.get(cell).copied().unwrap_or(0);
            match n {
                0 => Some(cell.to_string()),
                n if n < identity.repeat => {
                    Some(format!("{cell} ({n} of {} runs)", identity.repeat))
                }
                _ => None,
            }
        })
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(MergeError::MissingCells { missing })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(versions: &[&str]) -> Identity {
        Identity {
            versions: versions.iter().map(|v| v.to_string()).collect(),
            scenarios: vec!["a".into()],
            variants: vec![],
            sets: vec!["bg_seconds=1".into()],
            sim_versions: vec![],
            repeat: 1,
            cells: versions
                .iter()
                .map(|v| CellKey {
                    scenario: "a".into(),
                    variant: "print".into(),
                    cli_spec: v.to_string(),
                })
                .collect(),
        }
    }

    fn out<'a>(dir: &str, id: &'a Identity, i: usize, n: usize) -> ShardOutput<'a> {
        ShardOutput {
            dir: dir.into(),
            identity: Some(id),
            shard: Some(ShardPos { index: i, count: n }),
        }
    }

    #[test]
    fn all_shards_of_one_matrix_pass() {
        let id = identity(&["1", "2"]);
        let outs = [out("s2", &id, 2, 2), out("s1", &id, 1, 2)];
        assert_eq!(check_shards(&outs), Ok(&id));
        let whole = [ShardOutput {
            dir: "w".into(),
            identity: Some(&id),
            shard: None,
        }];
        assert_eq!(check_shards(&whole), Ok(&id), "an unsharded matrix is 1/1");
    }

    #[test]
    fn a_missing_twice_given_or_foreign_shard_is_refused() {
        let id = identity(&["1", "2"]);
        let other = identity(&["1", "3"]);
        assert_eq!(
            check_shards(&[out("s1", &id, 1, 3), out("s3", &id, 3, 3)]),
            Err(MergeError::MissingShards {
                count: 3,
                missing: "2/3".into()
            })
        );
        assert!(matches!(
            check_shards(&[out("a", &id, 1, 2), out("b", &id, 1, 2)]),
            Err(MergeError::Twice { .. })
        ));
        let e = check_shards(&[out("a", &id, 1, 2), out("b", &other, 2, 2)]).unwrap_err();
        assert!(
            e.to_string()
                .contains("shards of different matrices: versions 1,2 vs 1,3"),
            "{e}"
        );
        let e = check_shards(&[out("a", &id, 1, 2), out("b", &id, 2, 3)]).unwrap_err();
        assert!(matches!(e, MergeError::Different { .. }), "{e}");
        let old = [ShardOutput {
            dir: "old".into(),
            identity: None,
            shard: None,
        }];
        assert!(matches!(
            check_shards(&old),
            Err(MergeError::NoIdentity { .. })
        ));
    }

    /// `merge` names the first thing in which two shards' matrices differ.
    #[test]
    fn two_matrices_differ_by_their_first_differing_field() {
        let id = identity(&["1", "2"]);
        let differs = |change: fn(&mut Identity)| {
            let mut other = id.clone();
            change(&mut other);
            id.difference(&other)
        };
        assert_eq!(id.difference(&id.clone()), None);
        assert_eq!(
            differs(|o| o.scenarios = vec!["a".into(), "b".into()]).as_deref(),
            Some("scenarios a vs a,b")
        );
        assert_eq!(
            differs(|o| o.variants = vec!["print".into()]).as_deref(),
            Some("variants (none) vs print")
        );
        assert_eq!(
            differs(|o| o.sets.clear()).as_deref(),
            Some("--set values bg_seconds=1 vs (none)")
        );
        assert_eq!(
            differs(|o| o.sim_versions = vec!["2.1.9=fixed".into()]).as_deref(),
            Some("--sim-version mappings (none) vs 2.1.9=fixed")
        );
        assert_eq!(
            differs(|o| o.repeat = 3).as_deref(),
            Some("--repeat 1 vs 3")
        );
        assert_eq!(
            differs(|o| {
                o.cells.pop();
            })
            .as_deref(),
            Some("cell lists of 2 and 1 cells")
        );
    }

    /// A shard given twice is named by its position, with both folders.
    #[test]
    fn a_shard_given_twice_names_both_folders() {
        let id = identity(&["1", "2"]);
        let e = check_shards(&[out("a", &id, 1, 2), out("b", &id, 1, 2)]).unwrap_err();
        assert_eq!(e.to_string(), "shard 1/2 given twice: a and b");
    }

    /// A long list of missing cells shows the first eight and counts the rest.
    #[test]
    fn many_missing_cells_are_listed_eight_then_counted() {
        let versions: Vec<String> = (1..=10).map(|i| i.to_string()).collect();
        let id = identity(&versions.iter().map(String::as_str).collect::<Vec<_>>());
        let e = check_cells(&id, &[]).unwrap_err().to_string();
        assert!(
            e.starts_with("10 cells missing from the merged runs: a/print on 1; a/print on 2;"),
            "{e}"
        );
        assert!(e.ends_with("a/print on 8; and 2 more"), "{e}");
        let e = check_cells(&id, &id.cells[2..]).unwrap_err().to_string();
        assert_eq!(
            e,
            "2 cells missing from the merged runs: a/print on 1; a/print on 2"
        );
        let eight = identity(&versions[..8].iter().map(String::as_str).collect::<Vec<_>>());
        let e = check_cells(&eight, &[]).unwrap_err().to_string();
        assert!(e.ends_with("a/print on 7; a/print on 8"), "{e}");
    }

    #[test]
    fn a_cell_without_its_runs_is_missing() {
        let mut id = identity(&["1", "2"]);
        let present = vec![id.cells[0].clone()];
        let e = check_cells(&id, &present).unwrap_err();
        assert_eq!(
            e.to_string(),
            "1 cell missing from the merged runs: a/print on 2"
        );
        id.repeat = 2;
        let e = check_cells(&id, &[id.cells[0].clone(), id.cells[1].clone()]).unwrap_err();
        assert!(e.to_string().contains("2 cells missing"), "{e}");
        assert!(e.to_string().contains("a/print on 1 (1 of 2 runs)"), "{e}");
        let all: Vec<CellKey> = id.cells.iter().chain(id.cells.iter()).cloned().collect();
        assert_eq!(check_cells(&id, &all), Ok(()));
    }
}
