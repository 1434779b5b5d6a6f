//! Invariants: statements that should hold in every run of every scenario in a folder, kept in
//! `invariants.toml` beside the scenarios (`[[invariants]]`, each written like a check). Every
//! scenario loaded from the folder carries them into its plans; each run reports whether each
//! holds, and the summary says per scenario where one breaks. An invariant's `expect` is the
//! value that means it holds; it never changes whether a run met its own expectation.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::ScenarioError;
use super::plan::Check;
use super::raw::RawCheck;
use super::source::{Locator, Names, VariantSource};

/// The file name, beside the scenarios it applies to.
pub const FILE: &str = "invariants.toml";

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an invariants file: `[[invariants]]` tables, each written like a check"
)]
struct RawInvariants {
    #[serde(default)]
    invariants: Vec<Spanned<RawCheck>>,
}

/// A folder's invariants, as written.
#[derive(Debug)]
pub(super) struct Invariants {
    path: String,
    source: String,
    raw: Vec<Spanned<RawCheck>>,
}

/// The invariants beside a scenario file, when its folder has them.
pub(super) fn beside(scenario: &Path) -> Result<Option<Invariants>, ScenarioError> {
    let Some(dir) = scenario.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(None);
    };
    let path = dir.join(FILE);
    if !path.exists() {
        return Ok(None);
    }
    let source = super::read_source(&path)?;
    let path = path.display().to_string();
    let at = Locator {
        path: path.clone(),
        source: &source,
    };
    let raw: RawInvariants = toml::from_str(&source).map_err(|e| at.toml_error(&e))?;
    super::names::check_unique_checks(&at, &raw.invariants)?;
    Ok(Some(Invariants {
        path,
        raw: raw.invariants,
        source,
    }))
}

impl Invariants {
    /// The file's text, as read.
    pub(super) fn source(&self) -> &str {
        &self.source
    }

    /// The invariants resolved for one variant: names they use must exist in its script, and
    /// mistakes are located in the invariants file.
    pub(super) fn resolve(
        &self,
        names: &Names,
        src: &VariantSource,
    ) -> Result<Vec<Check>, ScenarioError> {
        let at = Locator {
            path: self.path.clone(),
            source: &self.source,
        };
        self.raw
            .iter()
            .map(|c| super::checks::resolve_check(&at, c, (names, src)))
            .collect()
    }
}
