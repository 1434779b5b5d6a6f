//! The results every later stage reads: one run's (`RunResult`, written as `result.json`), one
//! invocation's (`Summary`, `summary.json`), with the cells that group repeated runs, and
//! whether an invocation's folder is whole (`invocation.json`). Plain data and the arithmetic
//! on it (agreement, medians, whether expectations were met); the exporters in `report` only
//! print them.
//!
//! Each carries a `schema` number, bumped on incompatible change; `schema/*.json` holds JSON
//! Schemas generated from these types, and a test fails when they drift.

use crate::scenario::Expected;
use serde::{Deserialize, Serialize};

use super::{Judgement, Outcome};
use crate::evidence::run::RunInfo;

pub const RESULT_SCHEMA: u32 = 1;
pub const SUMMARY_SCHEMA: u32 = 1;
pub const INVOCATION_SCHEMA: u32 = 1;

/// `invocation.json`, an invocation folder's own mark (as `run.json`'s `complete` is a run
/// folder's): written `complete: false` the moment the folder exists, and again when the
/// invocation ends, `complete: true` with its exit code once everything it writes is written,
/// or still `complete: false` with the error that ended it. A folder whose mark says
/// `complete: false` and no error was cut short: the harness was killed, the machine stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InvocationMark {
    pub schema: u32,
    pub complete: bool,
    /// The exit code the invocation ended with, once it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Why the invocation ended before its folder was whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One run's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunResult {
    pub schema: u32,
    pub run: RunInfo,
    pub judgement: Judgement,
    /// The scenario's expected verdict for this variant.
    pub expect: Option<Expected>,
    /// `None` without an expectation; checks with expectations count too, and a broken
    /// invariant the scenario does not say it may break is a miss.
    pub matches_expect: Option<bool>,
}

impl RunResult {
    pub fn new(info: &RunInfo, judgement: Judgement) -> RunResult {
        let expect = info.expect.clone();
        let verdict_ok = expect.as_ref().map(|e| e.allows(judgement.outcome));
        let checks_ok = judgement
            .checks
            .iter()
            .any(|c| c.passed.is_some() || c.vacuous)
            .then(|| judgement.checks_pass());
        // A broken invariant, a fault that never hit, or an integration that had to be
        // stopped fails the run whatever its verdict (an interrupted run is the user's).
        let integration_ok = info.end == crate::evidence::run::EndReason::Interrupted
            || info.integration.as_ref().is_none_or(|i| i.by_itself);
        let whole = judgement.failing_invariants().is_empty()
            && judgement.missed_faults().is_empty()
            && integration_ok;
        let matches_expect = match (verdict_ok, checks_ok) {
            (None, None) if whole => None,
            (a, b) => Some(a.unwrap_or(true) && b.unwrap_or(true) && whole),
        };
        RunResult {
            schema: RESULT_SCHEMA,
            run: info.clone(),
            judgement,
            expect,
            matches_expect,
        }
    }

    /// Why the run does not match what its scenario expects, each reason in words: the
    /// verdict, each check that missed (and the layer it puts the fault in), each invariant
    /// broken that the scenario does not say it may break. Empty when it matches.
    pub fn failures(&self) -> Vec<String> {
        let mut why = Vec::new();
        if let Some(e) = self
            .expect
            .as_ref()
            .filter(|e| !e.allows(self.judgement.outcome))
        {
            why.push(format!(
                "verdict `{}` where the scenario expects `{e}`",
                self.judgement.outcome
            ));
        }
        for c in self.judgement.missed_checks() {
            let layer = c
                .layer
                .map(|l| format!(" (at fault: {})", l.words()))
                .unwrap_or_default();
            let observed = if c.vacuous {
                "nothing (vacuous)".to_string()
            } else {
                format!("`{}`", c.observed)
            };
            why.push(format!(
                "check “{}” observed {observed} where the scenario expects `{}`{layer}",
                c.name,
                c.expected.as_deref().unwrap_or_default()
            ));
        }
        for i in self.judgement.failing_invariants() {
            why.push(format!(
                "invariant “{}” broke (observed `{}`)",
                i.name, i.observed
            ));
        }
        why
    }

    /// The folder-independent identity of the cell this run belongs to.
    pub fn cell_key(&self) -> String {
        format!(
            "{}/{}@{}",
            self.run.scenario, self.run.variant, self.run.cli_label
        )
    }
}

/// One row of the invocation's summary: a cell with all its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CellSummary {
    pub scenario: String,
    pub variant: String,
    pub cli: String,
    /// The CLI as asked for (`latest`, `2.1.228`, `sim:fixed`): the matrix column, and the
    /// name JUnit gives the cell (stable from night to night). Absent in older files.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cli_spec: String,
    pub outcome: Option<Outcome>,
    pub agreement: String,
    pub runs: usize,
    pub expect: Option<Expected>,
    pub matches_expect: Option<bool>,
    /// Median latency of the woken runs, in milliseconds.
    pub latency_ms: Option<f64>,
    /// Run folders relative to the summary.
    pub dirs: Vec<String>,
    /// How each invariant of the scenario's folder fared in the cell's runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invariants: Vec<InvariantCell>,
    /// How the cell compares with the baseline, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineMark>,
    /// Runs whose verdict the rules reached against their own timeline (a bug in wakeprobe):
    /// the cell fails whatever else it shows.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub contradicted_runs: usize,
    /// How many of its runs did not match what the scenario expects.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed_runs: usize,
    /// Why they did not, each reason once ([`RunResult::failures`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// Why its runs have an issue draft to file, each reason once: what the CLI did other than
    /// what the scenario wants ([`super::filing::bug_reasons`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bugs: Vec<String>,
    /// The run folders with a draft to file (`title.txt`), relative to the summary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drafts: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Each item once, in first-seen order.
fn distinct(items: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for item in items {
        if !seen.contains(&item) {
            seen.push(item);
        }
    }
    seen
}

impl CellSummary {
    /// Whether the cell fails the invocation: a run the harness contradicted itself on, a
    /// regression against the baseline when there is one (an improvement or a known
    /// difference does not), else a verdict or check that differs from the expectation.
    pub fn fails(&self) -> bool {
        if self.contradicted_runs > 0 {
            return true;
        }
        match self.baseline.as_ref().map(|b| b.against) {
            Some(Against::Regression) => true,
            Some(Against::Improvement | Against::Unchanged) => false,
            Some(Against::New) | None => self.matches_expect == Some(false),
        }
    }

    pub fn is_regression(&self) -> bool {
        self.baseline
            .as_ref()
            .is_some_and(|b| b.against == Against::Regression)
    }
}

/// A cell against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Against {
    Regression,
    Improvement,
    /// The same verdict and checks as in the baseline (or the same declared race).
    Unchanged,
    /// Not in the baseline.
    New,
}

impl Against {
    pub fn as_str(self) -> &'static str {
        match self {
            Against::Regression => "regression",
            Against::Improvement => "improvement",
            Against::Unchanged => "unchanged",
            Against::New => "new",
        }
    }
}

impl std::fmt::Display for Against {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One cell's comparison with the baseline: what it is, and for a change both verdicts and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BaselineMark {
    pub against: Against,
    /// The baseline file compared with.
    pub baseline: String,
    /// The baseline's verdict (its agreement) and CLI version; absent for a new cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_version: Option<String>,
    /// Why a change is a regression or an improvement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl BaselineMark {
    /// `regression against baseline.json: woke 1/1 (2.1.332) -> not-resumable 1/1: why`.
    pub fn sentence(&self, after: &str) -> String {
        let mut s = format!("{} against {}", self.against, self.baseline);
        if let Some(before) = &self.before {
            let version = self
                .before_version
                .as_deref()
                .map(|v| format!(" ({v})"))
                .unwrap_or_default();
            s.push_str(&format!(": {before}{version} -> {after}"));
        }
        if let Some(why) = &self.why {
            s.push_str(&format!(": {why}"));
        }
        s
    }
}

/// One invariant in one cell: what its runs observed, and whether it held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InvariantCell {
    pub name: String,
    /// The distinct observed values, in run order.
    pub observed: Vec<String>,
    /// `false` when a run broke it, `true` when every run kept it; `None` when it states no
    /// expectation, does not apply (nothing it speaks of happened), or a run was cut short
    /// before it was settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holds: Option<bool>,
    /// Why the scenario's runs may break it (`may_break`): a break then fails nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub may_break: Option<String>,
}

impl InvariantCell {
    fn of(runs: &[&RunResult]) -> Vec<InvariantCell> {
        let Some(first) = runs.first() else {
            return vec![];
        };
        first
            .judgement
            .invariants
            .iter()
            .map(|inv| {
                let results: Vec<&crate::checks::CheckResult> = runs
                    .iter()
                    .filter_map(|r| r.judgement.invariants.iter().find(|i| i.name == inv.name))
                    .collect();
                let mut observed: Vec<String> = Vec::new();
                for r in &results {
                    if !observed.contains(&r.observed) {
                        observed.push(r.observed.clone());
                    }
                }
                // `not-observed`: nothing the invariant speaks of happened; it does not apply.
                let applying: Vec<&&crate::checks::CheckResult> = results
                    .iter()
                    .filter(|r| r.observed != "not-observed")
                    .collect();
                let holds = if applying.iter().any(|r| r.passed == Some(false)) {
                    Some(false)
                } else if !applying.is_empty() && applying.iter().all(|r| r.passed == Some(true)) {
                    Some(true)
                } else {
                    None
                };
                InvariantCell {
                    name: inv.name.clone(),
                    observed,
                    holds,
                    may_break: inv.may_break.clone(),
                }
            })
            .collect()
    }
}

/// A cell that could not run: its CLI did not start, or its folder could not be written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SetupError {
    pub scenario: String,
    pub variant: String,
    pub cli: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    pub schema: u32,
    pub run_id: String,
    pub cells: Vec<CellSummary>,
    /// Cells that could not run at all (exit code 3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup_errors: Vec<SetupError>,
    pub interrupted: bool,
    /// A matrix's columns, in the order asked, each with its title (`latest (2.1.337,
    /// agent-sdk 0.3.337)`, `2.1.228 (sim: fixed)`); empty outside a matrix.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<ColumnHead>,
    /// Cells of the baseline this invocation did not cover (lost coverage: each fails).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<LostCell>,
    /// What an incomplete merge lacks: shards not given, cells without their runs, folders
    /// without a matrix (exit code 6).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<MissingPart>,
}

/// A matrix column: the CLI as asked for, and its title.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ColumnHead {
    pub spec: String,
    pub title: String,
}

/// A cell the baseline has and this invocation does not: coverage lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LostCell {
    pub scenario: String,
    pub variant: String,
    pub cli_spec: String,
    /// Its verdict in the baseline (the agreement) and the version it ran on there.
    pub before: String,
    pub before_version: String,
    /// The baseline file.
    pub baseline: String,
}

impl LostCell {
    /// `child-error/session on latest`
    pub fn name(&self) -> String {
        format!("{}/{} on {}", self.scenario, self.variant, self.cli_spec)
    }

    /// `lost coverage: in matrix.json (woke 1/1, 2.1.335), not in this run`
    pub fn sentence(&self) -> String {
        format!(
            "lost coverage: in {} ({}, {}), not in this run",
            self.baseline, self.before, self.before_version
        )
    }
}

/// What kind of part an incomplete merge lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MissingKind {
    /// A shard of the matrix whose output was not given (or no shard at all).
    Shard,
    /// A cell of a shard that was given, without its runs (the shard was cut short).
    Cell,
    /// A folder given to merge that holds no matrix output.
    Output,
}

impl MissingKind {
    /// The JUnit error type: `missing-shard`, `missing-cell`, `missing-output`.
    pub fn as_str(self) -> &'static str {
        match self {
            MissingKind::Shard => "missing-shard",
            MissingKind::Cell => "missing-cell",
            MissingKind::Output => "missing-output",
        }
    }
}

/// One thing an incomplete merge lacks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MissingPart {
    pub kind: MissingKind,
    /// `shard 2/3`, a cell, a folder.
    pub name: String,
    pub message: String,
}

/// What a group of repeated runs of one cell says together, computed here once for every file
/// that holds cells (the summary's `CellSummary`, the matrix's `MatrixCell`): the agreed
/// outcome (or `None` when flaky), the agreement text, the median latency of its primary
/// verdicts, whether every run met its expectation (`None` when none states one), and how many
/// runs failed, why, and why they have a draft.
pub struct CellStats {
    pub outcome: Option<Outcome>,
    /// Every outcome the runs gave, in outcome order.
    pub seen: Vec<Outcome>,
    pub agreement: String,
    pub latency_ms: Option<f64>,
    pub matches_expect: Option<bool>,
    /// Runs that did not match what the scenario expects.
    pub failed_runs: usize,
    /// Why they did not, each reason once ([`RunResult::failures`]).
    pub failures: Vec<String>,
    /// Why the runs have a draft to file, each reason once.
    pub bugs: Vec<String>,
}

impl CellStats {
    pub fn of(runs: &[&RunResult]) -> CellStats {
        let outcomes: Vec<Outcome> = runs.iter().map(|r| r.judgement.outcome).collect();
        let expect = runs.first().and_then(|r| r.expect.as_ref());
        let (outcome, agreement) = super::agreement_of(
            &outcomes,
            |o| o.to_string(),
            super::Disagreement::of(expect, &outcomes),
        );
        let mut latencies: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.judgement.primary().and_then(|v| v.latency_ms))
            .collect();
        latencies.sort_by(f64::total_cmp);
        let matches: Vec<Option<bool>> = runs.iter().map(|r| r.matches_expect).collect();
        let mut seen = outcomes.clone();
        seen.sort();
        seen.dedup();
        CellStats {
            outcome,
            seen,
            agreement,
            latency_ms: latencies.get(latencies.len() / 2).copied(),
            matches_expect: if matches.iter().all(Option::is_none) {
                None
            } else {
                Some(matches.iter().all(|m| *m != Some(false)))
            },
            failed_runs: matches.iter().filter(|m| **m == Some(false)).count(),
            failures: distinct(runs.iter().flat_map(|r| r.failures())),
            bugs: distinct(
                runs.iter()
                    .flat_map(|r| super::filing::bug_reasons(&r.run, &r.judgement)),
            ),
        }
    }
}

impl Summary {
    pub fn build(
        run_id: &str,
        results: &[(RunResult, String)],
        setup_errors: &[SetupError],
        interrupted: bool,
    ) -> Summary {
        let mut cells: Vec<CellSummary> = Vec::new();
        let mut keys: Vec<String> = Vec::new();
        for (r, _) in results {
            if !keys.contains(&r.cell_key()) {
                keys.push(r.cell_key());
            }
        }
        for key in keys {
            let group: Vec<&(RunResult, String)> = results
                .iter()
                .filter(|(r, _)| r.cell_key() == key)
                .collect();
            let first = &group[0].0;
            let stats = CellStats::of(&group.iter().map(|(r, _)| r).collect::<Vec<_>>());
            cells.push(CellSummary {
                scenario: first.run.scenario.clone(),
                variant: first.run.variant.clone(),
                cli: first.run.cli_label.clone(),
                cli_spec: first.run.cli_spec.clone(),
                outcome: stats.outcome,
                agreement: stats.agreement,
                runs: group.len(),
                expect: first.expect.clone(),
                matches_expect: stats.matches_expect,
                latency_ms: stats.latency_ms,
                dirs: group.iter().map(|(_, d)| d.clone()).collect(),
                invariants: InvariantCell::of(&group.iter().map(|(r, _)| r).collect::<Vec<_>>()),
                baseline: None,
                contradicted_runs: group
                    .iter()
                    .filter(|(r, _)| !r.judgement.contradictions().is_empty())
                    .count(),
                failed_runs: stats.failed_runs,
                failures: stats.failures,
                bugs: stats.bugs,
                drafts: group
                    .iter()
                    .filter(|(r, _)| {
                        super::filing::filing(&r.run, &r.judgement) == super::filing::Filing::Bug
                    })
                    .map(|(_, d)| d.clone())
                    .collect(),
            });
        }
        Summary {
            schema: SUMMARY_SCHEMA,
            run_id: run_id.to_string(),
            cells,
            setup_errors: setup_errors.to_vec(),
            interrupted,
            columns: vec![],
            lost: vec![],
            missing: vec![],
        }
    }

    /// Runs whose verdict contradicted their own timeline, over every cell.
    pub fn contradicted_runs(&self) -> usize {
        self.cells.iter().map(|c| c.contradicted_runs).sum()
    }

    pub fn all_match(&self) -> bool {
        self.cells.iter().all(|c| c.matches_expect != Some(false))
    }

    /// No cell fails ([`CellSummary::fails`]): against the baseline when one was given; no
    /// cell of the baseline is lost and nothing of a merge is missing.
    pub fn all_pass(&self) -> bool {
        !self.cells.iter().any(CellSummary::fails)
            && self.lost.is_empty()
            && self.missing.is_empty()
    }

    /// Cells that pass, fail, and regressed (a regression is also a failure).
    pub fn tally(&self) -> (usize, usize, usize) {
        let failed = self.cells.iter().filter(|c| c.fails()).count();
        let regressions = self.cells.iter().filter(|c| c.is_regression()).count();
        (self.cells.len() - failed, failed, regressions)
    }

    /// `N passed, N failed (N regressions)`: the invocation's closing line. Cells of repeated
    /// runs are counted by run too: one bad run of twelve is one failed run, eleven passed.
    pub fn closing_line(&self) -> String {
        let (passed, failed, regressions) = self.tally();
        let runs: usize = self.cells.iter().map(|c| c.runs).sum();
        let mut line = if runs > self.cells.len() {
            let failed_runs: usize = self.cells.iter().map(|c| c.failed_runs).sum();
            format!(
                "runs: {} passed, {failed_runs} failed; cells (one passes when all its runs do): {passed} passed, {failed} failed",
                runs - failed_runs
            )
        } else {
            format!("{passed} passed, {failed} failed")
        };
        if self.cells.iter().any(|c| c.baseline.is_some()) {
            let noun = if regressions == 1 {
                "regression"
            } else {
                "regressions"
            };
            line.push_str(&format!(" ({regressions} {noun})"));
        }
        if !self.lost.is_empty() {
            line.push_str(&format!(
                ", {} lost (in the baseline, not in this run)",
                self.lost.len()
            ));
        }
        if !self.setup_errors.is_empty() {
            line.push_str(&format!(", {} could not run", self.setup_errors.len()));
        }
        let missing = |kind| self.missing.iter().filter(|m| m.kind == kind).count();
        for (kind, one, many) in [
            (MissingKind::Shard, "shard missing", "shards missing"),
            (MissingKind::Cell, "cell missing", "cells missing"),
            (
                MissingKind::Output,
                "folder without a matrix",
                "folders without a matrix",
            ),
        ] {
            let n = missing(kind);
            if n > 0 {
                line.push_str(&format!(", {n} {}", if n == 1 { one } else { many }));
            }
        }
        line
    }
}

/// A test case beyond the cells: a conformance comparison, a bisection's finding.
#[derive(Debug, Clone)]
pub struct ExtraCase {
    /// Its suite and case name, e.g. `conform subagent-bg-turn-end/print`.
    pub name: String,
    pub classname: String,
    /// `Some((type, message))` when it failed.
    pub failure: Option<(String, String)>,
    pub system_out: String,
}
