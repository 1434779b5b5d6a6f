//! A matrix's shards: which shard an output is, and the checks `merge` makes before it trusts
//! shard outputs. Outputs of different matrices (their identities differ, see `identity`) or a
//! shard given twice are refused; a shard or a cell that is missing is said (exit 6) while the
//! rest still merges, so one failed runner does not hide the other shards' findings.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::identity::CellKey;
use super::identity::Identity;
use crate::classify::result::{MissingKind, MissingPart};
use crate::report::plural;

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

/// Why shard outputs cannot be merged at all: they are not the parts of one matrix (exit code
/// 6, nothing written: a merged page would mix matrices).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MergeError {
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
}

/// What the outputs of one matrix lack to be the whole of it. They still merge, and the merge
/// says what it lacks, in every output, and exits 6.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum Missing {
    #[error("no shard output given to merge")]
    NoShards,
    #[error("{dir}: no matrix.json in it: not a matrix output (did its shard fail to start?)")]
    NoMatrix { dir: String },
    #[error("missing shard(s) of {count}: {}", list_shards(missing))]
    Shards {
        count: usize,
        missing: Vec<ShardPos>,
    },
    #[error("{} missing from the merged runs: {}", plural(missing.len(), "cell", "cells"), list_cells(missing))]
    Cells { missing: Vec<String> },
}

fn list_shards(shards: &[ShardPos]) -> String {
    shards
        .iter()
        .map(ShardPos::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Missing {
    /// One part per thing missing (a shard, a cell, a folder's output), as the summary and
    /// JUnit (an error case each) name them.
    pub fn parts(&self) -> Vec<MissingPart> {
        let part = |kind, name: String, message: String| MissingPart {
            kind,
            name,
            message,
        };
        match self {
            Missing::NoShards => vec![part(MissingKind::Shard, "no shard".into(), self.to_string())],
            Missing::NoMatrix { dir } => {
                vec![part(MissingKind::Output, dir.clone(), self.to_string())]
            }
            Missing::Shards { count, missing } => missing
                .iter()
                .map(|pos| {
                    part(
                        MissingKind::Shard,
                        format!("shard {pos}"),
                        format!(
                            "missing shard(s) of {count}: {pos}: no output of it was given to merge (did its runner fail?)"
                        ),
                    )
                })
                .collect(),
            Missing::Cells { missing } => missing
                .iter()
                .map(|cell| {
                    part(
                        MissingKind::Cell,
                        cell.clone(),
                        format!("{cell}: missing from the merged runs (its shard was cut short?)"),
                    )
                })
                .collect(),
        }
    }
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

/// Shard outputs found to be parts of one matrix: its identity, how many shards it has, and
/// which of them were not given.
#[derive(Debug, PartialEq)]
pub struct OneMatrix<'a> {
    pub identity: &'a Identity,
    pub count: usize,
    pub present: Vec<usize>,
    pub missing: Option<Missing>,
}

/// Checks that shard outputs are shards of one matrix, each once; returns its identity and
/// the shards not given (`None`: no output given at all).
pub fn check_shards<'a>(outputs: &[ShardOutput<'a>]) -> Result<Option<OneMatrix<'a>>, MergeError> {
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
    let Some((identity, _)) = identity else {
        return Ok(None);
    };
    let count = count.unwrap_or(1);
    let missing: Vec<ShardPos> = (1..=count)
        .filter(|i| !seen.contains_key(i))
        .map(|index| ShardPos { index, count })
        .collect();
    Ok(Some(OneMatrix {
        identity,
        count,
        present: seen.into_keys().collect(),
        missing: (!missing.is_empty()).then_some(Missing::Shards { count, missing }),
    }))
}

/// The cells of the given shards with fewer runs than `repeat` among `present` (one key per
/// run): a cell of a shard not given is that shard's absence, said once.
pub fn check_cells(matrix: &OneMatrix, present: &[CellKey]) -> Option<Missing> {
    let identity = matrix.identity;
    let mut counts: BTreeMap<&CellKey, u32> = BTreeMap::new();
    for key in present {
        *counts.entry(key).or_default() += 1;
    }
    let expected: Vec<CellKey> = matrix
        .present
        .iter()
        .flat_map(|&i| {
            take_shard(identity.cells.clone(), Some((i, matrix.count)), |c| {
                (c.scenario.clone(), c.variant.clone(), c.cli_spec.clone())
            })
        })
        .collect();
    let missing: Vec<String> = identity
        .cells
        .iter()
        .filter(|cell| expected.contains(cell))
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
    (!missing.is_empty()).then_some(Missing::Cells { missing })
}

/// The cells of shard `i` of `n` (1-based): the cells sorted by key (scenario, variant, CLI
/// spec), then every n-th from the i-th. Every shard of one matrix sees the same cell list, so
/// shards never overlap, together cover every cell, and differ in size by one at most.
pub fn take_shard<T>(
    mut cells: Vec<T>,
    shard: Option<(usize, usize)>,
    key: impl Fn(&T) -> (String, String, String),
) -> Vec<T> {
    let Some((i, n)) = shard else { return cells };
    cells.sort_by_key(|c| key(c));
    cells
        .into_iter()
        .enumerate()
        .filter(|(k, _)| k % n == i - 1)
        .map(|(_, c)| c)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(versions: &[&str]) -> Identity {
        crate::matrix::identity::tests::identity(versions)
    }

    fn out<'a>(dir: &str, id: &'a Identity, i: usize, n: usize) -> ShardOutput<'a> {
        ShardOutput {
            dir: dir.into(),
            identity: Some(id),
            shard: Some(ShardPos { index: i, count: n }),
        }
    }

    /// The whole matrix, given as one output.
    fn whole(id: &Identity) -> OneMatrix<'_> {
        OneMatrix {
            identity: id,
            count: 1,
            present: vec![1],
            missing: None,
        }
    }

    #[test]
    fn all_shards_of_one_matrix_pass() {
        let id = identity(&["1", "2"]);
        let outs = [out("s2", &id, 2, 2), out("s1", &id, 1, 2)];
        let one = check_shards(&outs).unwrap().unwrap();
        assert_eq!((one.identity, one.count, one.missing), (&id, 2, None));
        let alone = [ShardOutput {
            dir: "w".into(),
            identity: Some(&id),
            shard: None,
        }];
        assert_eq!(
            check_shards(&alone),
            Ok(Some(whole(&id))),
            "an unsharded matrix is 1/1"
        );
        assert_eq!(check_shards(&[]), Ok(None), "nothing given");
    }

    /// A shard not given is said (the rest merges); one given twice, or of another matrix,
    /// refuses the merge.
    #[test]
    fn a_missing_shard_is_said_and_a_twice_given_or_foreign_one_refused() {
        let id = identity(&["1", "2"]);
        let other = identity(&["1", "3"]);
        let one = check_shards(&[out("s1", &id, 1, 3), out("s3", &id, 3, 3)])
            .unwrap()
            .unwrap();
        let missing = one.missing.unwrap();
        assert_eq!(missing.to_string(), "missing shard(s) of 3: 2/3");
        let parts = missing.parts();
        assert_eq!(parts.len(), 1);
        assert_eq!(
            (parts[0].kind, parts[0].name.as_str()),
            (MissingKind::Shard, "shard 2/3")
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
        let e = check_cells(&whole(&id), &[]).unwrap().to_string();
        assert!(
            e.starts_with("10 cells missing from the merged runs: a/print on 1; a/print on 2;"),
            "{e}"
        );
        assert!(e.ends_with("a/print on 8; and 2 more"), "{e}");
        let e = check_cells(&whole(&id), &id.cells[2..])
            .unwrap()
            .to_string();
        assert_eq!(
            e,
            "2 cells missing from the merged runs: a/print on 1; a/print on 2"
        );
    }

    #[test]
    fn a_cell_without_its_runs_is_missing() {
        let mut id = identity(&["1", "2"]);
        let present = vec![id.cells[0].clone()];
        let e = check_cells(&whole(&id), &present).unwrap();
        assert_eq!(
            e.to_string(),
            "1 cell missing from the merged runs: a/print on 2"
        );
        id.repeat = 2;
        let e = check_cells(&whole(&id), &[id.cells[0].clone(), id.cells[1].clone()]).unwrap();
        assert!(e.to_string().contains("2 cells missing"), "{e}");
        assert!(e.to_string().contains("a/print on 1 (1 of 2 runs)"), "{e}");
        let all: Vec<CellKey> = id.cells.iter().chain(id.cells.iter()).cloned().collect();
        assert_eq!(check_cells(&whole(&id), &all), None);
    }

    /// The cells of a shard not given are that shard's absence, not cells missing each.
    #[test]
    fn the_cells_of_a_missing_shard_are_not_counted_again() {
        let id = identity(&["1", "2", "3", "4"]);
        let one = check_shards(&[out("s1", &id, 1, 2)]).unwrap().unwrap();
        let first = take_shard(id.cells.clone(), Some((1, 2)), |c| {
            (c.scenario.clone(), c.variant.clone(), c.cli_spec.clone())
        });
        assert_eq!(check_cells(&one, &first), None);
        assert!(check_cells(&one, &first[1..]).is_some());
    }

    #[test]
    fn shards_partition_the_cells() {
        let keys: Vec<(String, String, String)> = (0..60)
            .map(|i| (format!("s{i}"), "v".to_string(), format!("2.1.{i}")))
            .collect();
        let key = |k: &(String, String, String)| k.clone();
        for n in 1..7 {
            let shards: Vec<Vec<(String, String, String)>> = (1..=n)
                .map(|i| take_shard(keys.clone(), Some((i, n)), key))
                .collect();
            for k in &keys {
                let owners = shards.iter().filter(|s| s.contains(k)).count();
                assert_eq!(owners, 1, "{k:?} in exactly one of {n} shards");
            }
            let sizes: Vec<usize> = shards.iter().map(Vec::len).collect();
            let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(max - min <= 1, "balanced: {sizes:?}");
        }
        assert_eq!(take_shard(keys.clone(), None, key).len(), 60);
    }
}
