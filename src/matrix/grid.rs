//! The version matrix: cells keyed by scenario, variant and CLI (as asked for), built from run
//! results alone, so a matrix merged from shards is the matrix of one unsharded run. Rendered as
//! `matrix.json`, `matrix.md` and a terminal table; compared with a baseline.

use crate::scenario::Expected;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::identity::CellKey;
use super::identity::Identity;
use super::shards::ShardPos;
use crate::classify::Outcome;
use crate::classify::result::{
    Against, BaselineMark, CellStats, ColumnHead, LostCell, RunResult, Summary,
};

/// 3: the identity records the resolved versions, the scenarios' contents, the backend, the run
/// settings and what was left out by design; 2: the identity of the whole matrix and the shard
/// (older files read as unsharded, with no identity). Every older schema still reads.
pub const MATRIX_SCHEMA: u32 = 3;

/// One cell: a scenario variant on one CLI, over all its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MatrixCell {
    pub scenario: String,
    pub variant: String,
    /// The CLI as asked for (`latest`, `2.1.219`, `sim:fixed`): the column key.
    pub cli_spec: String,
    /// What it resolved to (`2.1.332`), as the CLI reported it when it did.
    pub cli_version: String,
    /// The channel that version came from (absent for the simulator, a binary given by path,
    /// and files of an older wakeprobe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli_channel: Option<crate::backend::channel::Channel>,
    pub cli_label: String,
    /// The simulator profile standing in for the version, when the simulator ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The agreed outcome; `None` when repetitions disagree (flaky).
    pub outcome: Option<Outcome>,
    pub agreement: String,
    pub runs: usize,
    pub expect: Option<Expected>,
    pub matches_expect: Option<bool>,
    pub latency_ms: Option<f64>,
    /// The verdict the CLI should give (the scenario's `want`); absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub want: Option<Outcome>,
    /// Every verdict the runs gave, in outcome order (absent in older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen: Vec<Outcome>,
    /// The checks that state a `want`, and whether the runs meet it (absent in older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wanted_checks: Vec<WantedCheck>,
    /// How many runs did not match what the scenario expects, and why (each reason once).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed_runs: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// Why its runs have a draft to file: what the CLI does other than the scenario's `want`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bugs: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A check with a `want` over a cell's runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WantedCheck {
    pub name: String,
    /// Every run observed what the check should (`true`), none did (`false`); `None` when the
    /// runs disagree or some left it undecided.
    pub meets_want: Option<bool>,
}

impl WantedCheck {
    /// The checks with a `want` of a cell's runs, in the first run's order.
    fn of(runs: &[&RunResult]) -> Vec<WantedCheck> {
        let Some(first) = runs.first() else {
            return Vec::new();
        };
        first
            .judgement
            .checks
            .iter()
            .filter(|c| c.want.is_some())
            .map(|c| {
                let each: Vec<Option<bool>> = runs
                    .iter()
                    .map(|r| {
                        r.judgement
                            .checks
                            .iter()
                            .find(|o| o.name == c.name)
                            .and_then(|o| o.meets_want)
                    })
                    .collect();
                WantedCheck {
                    name: c.name.clone(),
                    meets_want: each[0].filter(|_| each.iter().all(|e| *e == each[0])),
                }
            })
            .collect()
    }
}

impl MatrixCell {
    pub fn cell_key(&self) -> CellKey {
        CellKey {
            scenario: self.scenario.clone(),
            variant: self.variant.clone(),
            cli_spec: self.cli_spec.clone(),
        }
    }

    pub fn key(&self) -> (String, String, String) {
        (
            self.scenario.clone(),
            self.variant.clone(),
            self.cli_spec.clone(),
        )
    }

    fn row(&self) -> String {
        format!("{}/{}", self.scenario, self.variant)
    }

    /// What ran, as a comparison names it: `2.1.335 (agent-sdk 0.3.335)`, `sim: fixed`.
    pub fn version_text(&self) -> String {
        match &self.profile {
            Some(p) => format!("sim: {p}"),
            None => crate::backend::channel::version_with_channel(
                &self.cli_version,
                self.cli_channel.as_ref(),
            ),
        }
    }

    /// [`MatrixCell::short`], then how it stands against the baseline when there is one:
    /// `woke ✓ (regression)`.
    pub fn text_against(&self, comparison: Option<&Comparison>) -> String {
        match comparison {
            Some(c) => format!("{} ({})", self.short(), c.against(self)),
            None => self.short(),
        }
    }

    /// Whether the cell passes: not a regression against the baseline when there is one
    /// (improvements and known differences pass), else whether it matches its expectation.
    pub fn passes(&self, comparison: Option<&Comparison>) -> Option<bool> {
        match comparison.map(|c| c.against(self)) {
            Some(Against::Regression) => Some(false),
            Some(Against::Improvement | Against::Unchanged) => Some(true),
            Some(Against::New) | None => self.matches_expect,
        }
    }

    /// `not-resumable 3/3 ✓`; `woke 3/3 ✗ check, 1/3 runs`: a verdict as expected with a check
    /// that is not, in one run of three; `woke ✓ bug`: as expected, and the CLI does not do
    /// what the scenario wants (a draft to file).
    pub fn short(&self) -> String {
        let verdict_ok = match (&self.expect, self.outcome) {
            (Some(e), Some(o)) => e.allows(o),
            (None, _) => true,
            (Some(_), None) => false,
        };
        let mut mark = match self.matches_expect {
            Some(true) => " ✓".to_string(),
            Some(false) if verdict_ok => " ✗ check".to_string(),
            Some(false) => " ✗".to_string(),
            None => String::new(),
        };
        if self.runs > 1 && self.failed_runs > 0 && self.failed_runs < self.runs {
            mark.push_str(&format!(", {}/{} runs", self.failed_runs, self.runs));
        }
        if !self.bugs.is_empty() {
            mark.push_str(" bug");
        }
        if self.runs > 1 {
            format!("{}{mark}", self.agreement)
        } else {
            format!(
                "{}{mark}",
                self.outcome
                    .map(|o| o.to_string())
                    .unwrap_or_else(|| self.agreement.clone())
            )
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Matrix {
    pub schema: u32,
    /// Column keys in the order asked for.
    pub columns: Vec<String>,
    pub cells: Vec<MatrixCell>,
    /// The whole matrix this output belongs to (absent in files of an older wakeprobe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    /// Which shard this output is (`--shard i/n`); absent for the whole matrix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardPos>,
}

impl Matrix {
    /// Groups results into cells; `columns` gives the column order (unknown specs go last).
    pub fn build(results: &[RunResult], columns: &[String]) -> Matrix {
        let mut groups: BTreeMap<(String, String, String), Vec<&RunResult>> = BTreeMap::new();
        for r in results {
            let spec = r.run.column();
            groups
                .entry((r.run.scenario.clone(), r.run.variant.clone(), spec))
                .or_default()
                .push(r);
        }
        let mut cols: Vec<String> = columns.to_vec();
        let mut cells = Vec::new();
        for ((scenario, variant, spec), runs) in groups {
            if !cols.contains(&spec) {
                cols.push(spec.clone());
            }
            let stats = CellStats::of(&runs);
            let first = runs[0];
            cells.push(MatrixCell {
                scenario,
                variant,
                cli_version: first
                    .run
                    .cli_version_reported
                    .clone()
                    .unwrap_or_else(|| first.run.cli_version.clone()),
                cli_channel: first.run.cli_channel.clone(),
                cli_label: first.run.cli_label.clone(),
                profile: first.run.profile().map(str::to_string),
                cli_spec: spec,
                outcome: stats.outcome,
                agreement: stats.agreement,
                runs: runs.len(),
                expect: first.expect.clone(),
                matches_expect: stats.matches_expect,
                latency_ms: stats.latency_ms,
                want: first.run.want,
                seen: stats.seen,
                wanted_checks: WantedCheck::of(&runs),
                failed_runs: stats.failed_runs,
                failures: stats.failures,
                bugs: stats.bugs,
            });
        }
        Matrix {
            schema: MATRIX_SCHEMA,
            columns: cols,
            cells,
            identity: None,
            shard: None,
        }
    }

    /// The same matrix, recorded as (shard `shard` of) the matrix `identity`.
    pub fn of_matrix(mut self, identity: Option<Identity>, shard: Option<ShardPos>) -> Matrix {
        self.identity = identity;
        self.shard = shard;
        self
    }

    fn rows(&self) -> Vec<String> {
        let mut rows: Vec<String> = Vec::new();
        for c in &self.cells {
            if !rows.contains(&c.row()) {
                rows.push(c.row());
            }
        }
        rows
    }

    fn cell(&self, row: &str, column: &str) -> Option<&MatrixCell> {
        self.cells
            .iter()
            .find(|c| c.row() == row && c.cli_spec == column)
    }

    /// `latest (2.1.332)`, `latest (2.1.335, agent-sdk 0.3.335)`, `2.1.228 (sim: fixed)`,
    /// `2.1.219` ([`crate::evidence::run::column_title`], as every report titles it).
    pub fn column_title(&self, column: &str) -> String {
        let Some(cell) = self.cells.iter().find(|c| c.cli_spec == column) else {
            return column.to_string();
        };
        crate::evidence::run::column_title(
            column,
            &cell.cli_version,
            cell.cli_channel.as_ref(),
            cell.profile.as_deref(),
        )
    }

    /// The columns in their order, each with its title (for the page).
    pub fn column_heads(&self) -> Vec<ColumnHead> {
        self.columns
            .iter()
            .map(|c| ColumnHead {
                spec: c.clone(),
                title: self.column_title(c),
            })
            .collect()
    }

    /// The matrix as a Markdown table (versions as columns, scenarios as rows).
    pub fn markdown(&self, comparison: Option<&Comparison>) -> String {
        let mut s = String::from("# wakeprobe matrix\n\n");
        if let Some(c) = comparison {
            s.push_str(&c.markdown());
        }
        s.push_str("| scenario |");
        for col in &self.columns {
            s.push_str(&format!(" {} |", self.column_title(col)));
        }
        s.push_str("\n|---|");
        for _ in &self.columns {
            s.push_str("---|");
        }
        s.push('\n');
        for row in self.rows() {
            s.push_str(&format!("| {row} |"));
            for col in &self.columns {
                let text = self
                    .cell(&row, col)
                    .map(|c| c.text_against(comparison))
                    .unwrap_or_else(|| "-".into());
                s.push_str(&format!(" {text} |"));
            }
            s.push('\n');
        }
        s.push_str("\n✓ matches what the scenario expects; ✗ the verdict differs from `expect`; ✗ check: the verdict is as expected, a check is not; `, K/M runs`: K of the M repeated runs did not match; `bug`: the CLI does not do what the scenario wants (a draft to file); `N/M` is the agreement of repeated runs.");
        if comparison.is_some() {
            s.push_str(" Each cell says how it stands against the baseline: regression, improvement, unchanged or new.");
        }
        s.push('\n');
        s.push_str(&self.notes());
        s
    }

    /// Why each cell failed, and why it has a draft, one line per cell (none when none does).
    pub fn notes(&self) -> String {
        let mut s = String::new();
        for c in self
            .cells
            .iter()
            .filter(|c| !c.failures.is_empty() || !c.bugs.is_empty())
        {
            if s.is_empty() {
                s.push_str("\nWhy:\n\n");
            }
            let mut parts = Vec::new();
            if !c.failures.is_empty() {
                parts.push(format!(
                    "failed ({} of {} runs): {}",
                    c.failed_runs,
                    c.runs,
                    c.failures.join("; ")
                ));
            }
            if !c.bugs.is_empty() {
                parts.push(format!("draft to file: {}", c.bugs.join("; ")));
            }
            s.push_str(&format!(
                "- `{}` on `{}`: {}\n",
                c.row(),
                c.cli_spec,
                parts.join(". ")
            ));
        }
        s
    }

    /// The matrix as a terminal table, arranged to `width` columns.
    pub fn table(&self, color: bool, width: u16, comparison: Option<&Comparison>) -> String {
        use comfy_table::{Cell, Color, ContentArrangement, Table, presets};
        let mut table = Table::new();
        table
            .load_style(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(width);
        if color {
            table.enforce_styling();
        } else {
            table.force_no_tty();
        }
        let mut header = vec!["scenario".to_string()];
        header.extend(self.columns.iter().map(|c| self.column_title(c)));
        table.set_header(header);
        for row in self.rows() {
            let mut cells = vec![Cell::new(&row)];
            for col in &self.columns {
                let cell = self.cell(&row, col);
                let text = cell.map(|c| c.text_against(comparison));
                let mut c = Cell::new(text.unwrap_or_else(|| "-".into()));
                if color {
                    c = c.fg(match cell.and_then(|c| c.passes(comparison)) {
                        Some(true) => Color::Green,
                        Some(false) => Color::Red,
                        None => Color::Reset,
                    });
                }
                cells.push(c);
            }
            table.add_row(cells);
        }
        table.to_string()
    }
}

/// How a cell changed against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    /// It matched its expectation (or woke) before and no longer does, or its verdict moved
    /// with nothing to say it is better (anything but to `woke`).
    Regression,
    /// It did not match its expectation (or did not wake) before and now does, or it now wakes
    /// where neither verdict was the expected one.
    Improvement,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Change {
    pub scenario: String,
    pub variant: String,
    pub cli_spec: String,
    pub before: String,
    pub after: String,
    pub before_version: String,
    pub after_version: String,
    pub kind: ChangeKind,
    /// Why it is that kind, in words (toward or away from the scenario's `want`).
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Comparison {
    pub changes: Vec<Change>,
    /// Cells in the matrix that the baseline does not have.
    pub new: Vec<String>,
    /// Cells in the baseline that this matrix does not cover: lost coverage, each a failure.
    pub missing: Vec<Lost>,
    /// Cells in the baseline that this matrix meant to run and has no runs of (a CLI that
    /// could not start, a shard not merged): each fails as what happened to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrun: Vec<String>,
    /// How the matrix was made unlike the baseline, compared anyway on purpose
    /// (`--compare-across-settings`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub across_settings: Vec<String>,
}

/// A cell of the baseline the compared matrix does not cover, with its baseline verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Lost {
    pub scenario: String,
    pub variant: String,
    pub cli_spec: String,
    pub before: String,
    pub before_version: String,
}

impl Lost {
    fn name(&self) -> String {
        format!("{}/{} on {}", self.scenario, self.variant, self.cli_spec)
    }
}

fn is_good(c: &MatrixCell) -> Option<bool> {
    c.matches_expect.or(match c.outcome {
        Some(Outcome::Woke) => Some(true),
        Some(_) => Some(false),
        None => None,
    })
}

/// Whether a changed cell got better or worse, and why in words. With a `want` (the behaviour
/// the CLI should have), a move toward it is an improvement and a move away from it, or
/// between two verdicts neither of which is wanted, a regression. Without one, or when only
/// the checks changed: matching the scenario's `expect` (or waking) is the good side.
fn judge_change(before: &MatrixCell, after: &MatrixCell) -> (ChangeKind, String) {
    if let Some(judged) = checks_toward_want(before, after) {
        return judged;
    }
    let want = after.want.or(before.want);
    if let Some(w) = want
        && before.outcome != after.outcome
    {
        return match (before.outcome == Some(w), after.outcome == Some(w)) {
            (false, true) => (
                ChangeKind::Improvement,
                format!("toward the behaviour the CLI should have (`{w}`)"),
            ),
            (true, _) => (
                ChangeKind::Regression,
                format!("away from the behaviour the CLI should have (`{w}`)"),
            ),
            (false, false) => (
                ChangeKind::Regression,
                format!("changed, and still not the behaviour the CLI should have (`{w}`)"),
            ),
        };
    }
    let (what, matches) = if before.outcome == after.outcome {
        ("its checks", "match")
    } else {
        ("its verdict", "matches")
    };
    match (is_good(before), is_good(after)) {
        (Some(false) | None, Some(true)) => (
            ChangeKind::Improvement,
            format!("{what} now {matches} what the scenario expects"),
        ),
        (Some(true), _) => (
            ChangeKind::Regression,
            format!("{what} no longer {matches} what the scenario expects"),
        ),
        // Neither side is what was expected: waking is still better than not.
        _ if after.outcome == Some(Outcome::Woke) => (
            ChangeKind::Improvement,
            "it wakes now (the scenario states no `want`)".to_string(),
        ),
        _ => (
            ChangeKind::Regression,
            "it changed with nothing to say it is better (the scenario states no `want`)"
                .to_string(),
        ),
    }
}

/// A check with a `want` that moved: away from it is a regression, toward it an improvement
/// (unless another moved away); `None` when none moved, or the verdict moved too (then the
/// verdict's `want` or expectation decides).
fn checks_toward_want(before: &MatrixCell, after: &MatrixCell) -> Option<(ChangeKind, String)> {
    if before.outcome != after.outcome {
        return None;
    }
    let moved = |from: bool, to: bool| -> Vec<&str> {
        after
            .wanted_checks
            .iter()
            .filter(|a| {
                before.wanted_checks.iter().any(|b| {
                    b.name == a.name && b.meets_want == Some(from) && a.meets_want == Some(to)
                })
            })
            .map(|a| a.name.as_str())
            .collect()
    };
    let names = |n: Vec<&str>| {
        n.iter()
            .map(|n| format!("“{n}”"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (away, toward) = (moved(true, false), moved(false, true));
    if !away.is_empty() {
        Some((
            ChangeKind::Regression,
            format!(
                "check {} moved away from what the CLI should do (its `want`)",
                names(away)
            ),
        ))
    } else if !toward.is_empty() {
        Some((
            ChangeKind::Improvement,
            format!(
                "check {} now observes what the CLI should do (its `want`)",
                names(toward)
            ),
        ))
    } else {
        None
    }
}

/// Both sides stayed within the race the scenario declares, with the checks as they were: the
/// race fell another way, which is no change (never a regression).
fn within_one_race(before: &MatrixCell, after: &MatrixCell) -> bool {
    let Some(race) = after.expect.as_ref().filter(|e| e.is_race()) else {
        return false;
    };
    let within = |c: &MatrixCell| !c.seen.is_empty() && c.seen.iter().all(|o| race.allows(*o));
    within(before) && within(after) && before.matches_expect == after.matches_expect
}

impl Comparison {
    pub fn of(current: &Matrix, baseline: &Matrix) -> Comparison {
        let mut out = Comparison::default();
        for cell in &current.cells {
            let Some(before) = baseline.cells.iter().find(|b| b.key() == cell.key()) else {
                out.new.push(format!(
                    "{}/{} on {}",
                    cell.scenario, cell.variant, cell.cli_spec
                ));
                continue;
            };
            if before.outcome == cell.outcome && before.matches_expect == cell.matches_expect {
                continue;
            }
            if within_one_race(before, cell) {
                continue;
            }
            let (kind, why) = judge_change(before, cell);
            out.changes.push(Change {
                scenario: cell.scenario.clone(),
                variant: cell.variant.clone(),
                cli_spec: cell.cli_spec.clone(),
                before: before.agreement.clone(),
                after: cell.agreement.clone(),
                before_version: before.version_text(),
                after_version: cell.version_text(),
                kind,
                why,
            });
        }
        // A cell the matrix meant to run is not lost coverage: what kept it from running
        // (a setup failure, a missing shard) is said as such.
        let planned = |key: &CellKey| {
            current
                .identity
                .as_ref()
                .is_some_and(|id| id.cells.contains(key))
        };
        for b in &baseline.cells {
            if current.cells.iter().any(|c| c.key() == b.key()) {
                continue;
            }
            if planned(&b.cell_key()) {
                out.unrun.push(b.cell_key().to_string());
            } else {
                out.missing.push(Lost {
                    scenario: b.scenario.clone(),
                    variant: b.variant.clone(),
                    cli_spec: b.cli_spec.clone(),
                    before: b.agreement.clone(),
                    before_version: b.version_text(),
                });
            }
        }
        out.changes
            .sort_by_key(|c| c.kind != ChangeKind::Regression);
        out
    }

    pub fn regressions(&self) -> usize {
        self.changes
            .iter()
            .filter(|c| c.kind == ChangeKind::Regression)
            .count()
    }

    /// Cells of the baseline not covered (lost coverage).
    pub fn lost(&self) -> usize {
        self.missing.len()
    }

    /// Whether the comparison fails the invocation: a regression, or coverage lost.
    pub fn fails(&self) -> bool {
        self.regressions() > 0 || self.lost() > 0
    }

    pub fn improvements(&self) -> usize {
        self.changes
            .iter()
            .filter(|c| c.kind == ChangeKind::Improvement)
            .count()
    }

    /// How `cell` (of the compared matrix) stands against the baseline.
    pub fn against(&self, cell: &MatrixCell) -> Against {
        let named = format!("{}/{} on {}", cell.scenario, cell.variant, cell.cli_spec);
        match self.change_of(cell) {
            Some(c) if c.kind == ChangeKind::Regression => Against::Regression,
            Some(_) => Against::Improvement,
            None if self.new.contains(&named) => Against::New,
            None => Against::Unchanged,
        }
    }

    fn change_of(&self, cell: &MatrixCell) -> Option<&Change> {
        self.changes.iter().find(|c| {
            c.scenario == cell.scenario && c.variant == cell.variant && c.cli_spec == cell.cli_spec
        })
    }

    /// `cell`'s mark against the baseline file `baseline`: what it is, both verdicts, why.
    pub fn mark(&self, cell: &MatrixCell, baseline: &str) -> BaselineMark {
        let change = self.change_of(cell);
        BaselineMark {
            against: self.against(cell),
            baseline: baseline.to_string(),
            before: change.map(|c| c.before.clone()),
            before_version: change.map(|c| c.before_version.clone()),
            why: change.map(|c| c.why.clone()),
        }
    }

    /// Marks every cell of `summary` (cells of `current`) against the baseline `baseline`,
    /// and lists the baseline's cells it lost.
    pub fn mark_summary(&self, summary: &mut Summary, current: &Matrix, baseline: &str) {
        for cell in &mut summary.cells {
            let of_matrix = current.cells.iter().find(|m| {
                m.scenario == cell.scenario && m.variant == cell.variant && m.cli_label == cell.cli
            });
            cell.baseline = of_matrix.map(|m| self.mark(m, baseline));
        }
        summary.lost = self
            .missing
            .iter()
            .map(|l| LostCell {
                scenario: l.scenario.clone(),
                variant: l.variant.clone(),
                cli_spec: l.cli_spec.clone(),
                before: l.before.clone(),
                before_version: l.before_version.clone(),
                baseline: baseline.to_string(),
            })
            .collect();
    }

    /// The changed cells first, as lines (after what was compared across settings).
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .across_settings
            .iter()
            .map(|d| format!("comparing across settings on purpose: {d}"))
            .collect();
        let changes = self.changes.iter().map(|c| {
            format!(
                "{} {}/{} on {}: {} ({}) -> {} ({}): {}",
                match c.kind {
                    ChangeKind::Regression => "REGRESSION",
                    ChangeKind::Improvement => "improvement",
                },
                c.scenario,
                c.variant,
                c.cli_spec,
                c.before,
                c.before_version,
                c.after,
                c.after_version,
                c.why
            )
        });
        lines.extend(changes);
        lines.extend(
            self.new
                .iter()
                .map(|n| format!("new cell (not in the baseline): {n}")),
        );
        lines.extend(self.missing.iter().map(|m| {
            format!(
                "LOST COVERAGE {}: in the baseline ({} on {}), not in this run",
                m.name(),
                m.before,
                m.before_version
            )
        }));
        lines.extend(
            self.unrun
                .iter()
                .map(|m| format!("not run (in the baseline, planned here): {m}")),
        );
        if lines.len() == self.across_settings.len() {
            lines.push("no change against the baseline".into());
        }
        lines
    }

    fn markdown(&self) -> String {
        let mut s = String::from("## Changes against the baseline\n\n");
        for line in self.lines() {
            s.push_str(&format!("- {line}\n"));
        }
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(scenario: &str, spec: &str, outcome: Outcome, matches: Option<bool>) -> MatrixCell {
        MatrixCell {
            scenario: scenario.into(),
            variant: "print".into(),
            cli_spec: spec.into(),
            cli_version: spec.into(),
            cli_channel: None,
            cli_label: format!("claude-{spec}"),
            profile: None,
            outcome: Some(outcome),
            agreement: format!("{outcome} 1/1"),
            runs: 1,
            expect: None,
            matches_expect: matches,
            latency_ms: None,
            want: None,
            seen: vec![outcome],
            wanted_checks: vec![],
            failed_runs: 0,
            failures: vec![],
            bugs: vec![],
        }
    }

    /// `cell`, with one check that states a `want` and met it or not.
    fn with_wanted_check(mut c: MatrixCell, meets_want: bool) -> MatrixCell {
        c.wanted_checks = vec![WantedCheck {
            name: "idle".into(),
            meets_want: Some(meets_want),
        }];
        c
    }

    /// A check that moves toward its `want` is an improvement, though it leaves the scenario's
    /// `expect` (what the CLI did): the fixed CLI must never read as a regression. Away from
    /// it is a regression, though it now matches `expect`.
    #[test]
    fn a_check_moving_toward_its_want_is_an_improvement_and_away_a_regression() {
        use Outcome::*;
        let today = with_wanted_check(cell("idle", "latest", Unknown, Some(true)), false);
        let fixed = with_wanted_check(cell("idle", "latest", Unknown, Some(false)), true);
        let c = Comparison::of(&matrix(vec![fixed.clone()]), &matrix(vec![today.clone()]));
        assert_eq!(
            c.lines(),
            [
                "improvement idle/print on latest: unknown 1/1 (latest) -> unknown 1/1 (latest): check “idle” now observes what the CLI should do (its `want`)"
            ]
        );
        let c = Comparison::of(&matrix(vec![today]), &matrix(vec![fixed]));
        assert_eq!(
            c.lines(),
            [
                "REGRESSION idle/print on latest: unknown 1/1 (latest) -> unknown 1/1 (latest): check “idle” moved away from what the CLI should do (its `want`)"
            ]
        );
    }

    fn matrix(cells: Vec<MatrixCell>) -> Matrix {
        Matrix {
            schema: MATRIX_SCHEMA,
            columns: vec!["latest".into()],
            cells,
            identity: None,
            shard: None,
        }
    }

    /// A declared race that fell the other way is no change; leaving the race is a regression,
    /// and so is the same move where the scenario declares no race.
    #[test]
    fn a_change_within_a_declared_race_is_never_a_regression() {
        let race = Expected::of(&[Outcome::Woke, Outcome::QueuedUntilInput]);
        let racing = |outcome, seen: Vec<Outcome>| {
            let mut c = cell("r", "latest", outcome, Some(true));
            c.expect = race.clone();
            c.want = Some(Outcome::Woke);
            c.seen = seen;
            c
        };
        let before = matrix(vec![racing(Outcome::Woke, vec![Outcome::Woke])]);
        let flipped = matrix(vec![racing(
            Outcome::QueuedUntilInput,
            vec![Outcome::QueuedUntilInput],
        )]);
        let mixed = matrix(vec![racing(
            Outcome::Woke,
            vec![Outcome::Woke, Outcome::QueuedUntilInput],
        )]);
        for after in [&flipped, &mixed] {
            let c = Comparison::of(after, &before);
            assert_eq!(
                (c.regressions(), c.improvements()),
                (0, 0),
                "{:?}",
                c.lines()
            );
        }
        let mut left = racing(Outcome::NeverFired, vec![Outcome::NeverFired]);
        left.matches_expect = Some(false);
        let c = Comparison::of(&matrix(vec![left]), &before);
        assert_eq!(c.regressions(), 1, "{:?}", c.lines());
        let undeclared = |m: &Matrix| {
            let mut m = m.clone();
            m.cells[0].expect = Some(Expected::One(Outcome::Woke));
            m.cells[0].matches_expect = Some(m.cells[0].outcome == Some(Outcome::Woke));
            m
        };
        let c = Comparison::of(&undeclared(&flipped), &undeclared(&before));
        assert_eq!(c.regressions(), 1, "{:?}", c.lines());
    }

    #[test]
    fn a_worse_verdict_is_a_regression_and_a_better_one_an_improvement() {
        let before = matrix(vec![
            cell("a", "latest", Outcome::Woke, Some(true)),
            cell("b", "latest", Outcome::NotResumable, Some(false)),
        ]);
        let after = matrix(vec![
            cell("a", "latest", Outcome::NotResumable, Some(false)),
            cell("b", "latest", Outcome::Woke, Some(true)),
        ]);
        let c = Comparison::of(&after, &before);
        assert_eq!((c.regressions(), c.improvements()), (1, 1));
        assert!(
            c.lines()[0].starts_with("REGRESSION a/print"),
            "{:?}",
            c.lines()
        );
        assert_eq!(
            Comparison::of(&before, &before).lines(),
            vec!["no change against the baseline"]
        );
    }

    #[test]
    fn a_move_toward_want_is_an_improvement_even_against_expect() {
        let wanted = |mut c: MatrixCell| {
            c.want = Some(Outcome::Woke);
            c
        };
        // Today's CLI finalizes the waiter, as `expect` says; the CLI should wake it.
        let today = matrix(vec![wanted(cell(
            "a",
            "latest",
            Outcome::NotResumable,
            Some(true),
        ))]);
        let fixed = matrix(vec![wanted(cell(
            "a",
            "latest",
            Outcome::Woke,
            Some(false),
        ))]);
        let c = Comparison::of(&fixed, &today);
        assert_eq!(
            (c.regressions(), c.improvements()),
            (0, 1),
            "{:?}",
            c.lines()
        );
        assert!(
            c.lines()[0].ends_with("toward the behaviour the CLI should have (`woke`)"),
            "{:?}",
            c.lines()
        );
        let c = Comparison::of(&today, &fixed);
        assert_eq!((c.regressions(), c.improvements()), (1, 0));
        assert!(c.lines()[0].ends_with("away from the behaviour the CLI should have (`woke`)"));
        let other = matrix(vec![wanted(cell(
            "a",
            "latest",
            Outcome::NeverFired,
            Some(false),
        ))]);
        let c = Comparison::of(&other, &today);
        assert_eq!(
            c.regressions(),
            1,
            "between two unwanted verdicts: {:?}",
            c.lines()
        );
        assert!(c.lines()[0].contains("still not the behaviour"));
    }

    /// A judged run of `scenario/print` on the CLI asked for as `spec`, which reported
    /// `reported` (when it did), with the scenario's expected verdict `expect`.
    fn run(
        scenario: &str,
        spec: &str,
        reported: Option<&str>,
        outcome: Outcome,
        expect: Option<Outcome>,
    ) -> RunResult {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/runs/seed000-print/run.json");
        let mut info: crate::evidence::run::RunInfo =
            serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
        info.scenario = scenario.into();
        info.variant = "print".into();
        info.cli_spec = spec.into();
        info.cli_version = "unreported".into();
        info.cli_version_reported = reported.map(str::to_string);
        info.expect = expect.map(Expected::One);
        let judgement = crate::classify::Judgement {
            outcome,
            verdicts: vec![],
            checks: vec![],
            invariants: vec![],
            rejected_lines: vec![],
            faults: vec![],
        };
        RunResult::new(&info, judgement)
    }

    /// A cell whose verdict is as expected but a check is not says so (`✗ check`), with how
    /// many of its repeated runs failed, and one with a draft to file says `bug`; the notes
    /// below the table say why, in the check's words.
    #[test]
    fn a_cell_says_which_check_failed_in_how_many_runs_and_why_it_has_a_draft() {
        use Outcome::*;
        let check = |observed: &str| crate::checks::CheckResult {
            name: "reported once".into(),
            kind: "query:count".into(),
            agent: None,
            observed: observed.into(),
            expected: Some("1".into()),
            passed: Some(observed == "1"),
            want: Some("1".into()),
            meets_want: Some(observed == "1"),
            witness: vec![],
            explanation: String::new(),
            matched: vec![],
            vacuous: false,
            may_break: None,
            layer: None,
            describes: None,
        };
        let with = |observed: &str| {
            let r = run("a", "latest", Some("2.1.332"), Woke, Some(Woke));
            let mut j = r.judgement.clone();
            j.checks = vec![check(observed)];
            RunResult::new(&r.run, j)
        };
        let mut results: Vec<RunResult> = (0..11).map(|_| with("1")).collect();
        results.push(with("2"));
        let m = Matrix::build(&results, &["latest".to_string()]);
        let cell = &m.cells[0];
        assert_eq!((cell.runs, cell.failed_runs), (12, 1));
        assert_eq!(cell.short(), "woke 12/12 ✗ check, 1/12 runs bug");
        let md = m.markdown(None);
        assert!(
            md.contains("- `a/print` on `latest`: failed (1 of 12 runs): check “reported once” observed `2` where the scenario expects `1`. draft to file: check “reported once” gives `2` where the CLI should give `1`"),
            "{md}"
        );
    }

    /// Runs group into one cell per scenario variant and CLI as asked for; columns keep the
    /// order asked for, a spec nobody asked for goes last; a column is titled with the version
    /// it resolved to when that says more; a cell shows its verdict (its agreement when
    /// repeated) and whether it matches the expectation; an empty cell is `-`.
    #[test]
    fn the_matrix_groups_runs_into_cells_and_renders_them() {
        use Outcome::*;
        let results = [
            run("a", "latest", Some("2.1.332"), Woke, Some(Woke)),
            run("a", "2.1.219", Some("2.1.219"), NotResumable, Some(Woke)),
            run("a", "latest", Some("2.1.332"), Woke, Some(Woke)),
            run("b", "latest", None, NeverFired, None),
            run("b", "sim:x", None, Woke, None),
            run("b", "sim:x", None, NotResumable, None),
        ];
        let columns = ["2.1.219".to_string(), "latest".to_string()];
        let m = Matrix::build(&results, &columns);
        assert_eq!(m.columns, ["2.1.219", "latest", "sim:x"]);
        assert_eq!(m.cells.len(), 4);
        let latest = m
            .cells
            .iter()
            .find(|c| c.key() == ("a".into(), "print".into(), "latest".into()))
            .unwrap();
        assert_eq!((latest.runs, latest.cli_version.as_str()), (2, "2.1.332"));
        assert_eq!(latest.cell_key().to_string(), "a/print on latest");
        assert_eq!(
            m.markdown(None),
            "# wakeprobe matrix\n\n\
             | scenario | 2.1.219 | latest (2.1.332) | sim:x (unreported) |\n\
             |---|---|---|---|\n\
             | a/print | not-resumable ✗ | woke 2/2 ✓ | - |\n\
             | b/print | - | never-fired | flaky: woke 1/2, not-resumable 1/2 |\n\
             \n✓ matches what the scenario expects; ✗ the verdict differs from `expect`; ✗ check: the verdict is as expected, a check is not; `, K/M runs`: K of the M repeated runs did not match; `bug`: the CLI does not do what the scenario wants (a draft to file); `N/M` is the agreement of repeated runs.\n\
             \nWhy:\n\n\
             - `a/print` on `2.1.219`: failed (1 of 1 runs): verdict `not-resumable` where the scenario expects `woke`\n"
        );
        let table = m.table(false, 200, None);
        for text in [
            "latest (2.1.332)",
            "b/print",
            "woke 2/2 ✓",
            "not-resumable ✗",
            "flaky: woke 1/2, not-resumable 1/2",
        ] {
            assert!(table.contains(text), "{text} in\n{table}");
        }
        let shard = ShardPos { index: 2, count: 3 };
        let recorded = m.clone().of_matrix(None, Some(shard));
        assert_eq!((recorded.cells, recorded.shard), (m.cells, Some(shard)));
    }

    /// A column from the Agent SDK channel says so in its title; claude-code's does not.
    #[test]
    fn a_column_names_the_agent_sdk_channel() {
        use crate::backend::channel::Channel;
        let mut sdk = run("a", "latest", Some("2.1.335"), Outcome::Woke, None);
        sdk.run.cli_channel = Some(Channel::AgentSdk {
            sdk_version: "0.3.335".into(),
        });
        let mut exact = sdk.clone();
        exact.run.cli_spec = "2.1.335".into();
        let mut code = run("a", "2.1.332", Some("2.1.332"), Outcome::Woke, None);
        code.run.cli_channel = Some(Channel::ClaudeCode);
        let m = Matrix::build(&[sdk, exact, code], &[]);
        let header = m.markdown(None).lines().nth(2).unwrap().to_string();
        assert_eq!(
            header,
            "| scenario | 2.1.332 | 2.1.335 (agent-sdk 0.3.335) | latest (2.1.335, agent-sdk 0.3.335) |"
        );
    }

    /// The comparison in Markdown heads the matrix, and names cells new or gone.
    #[test]
    fn a_comparison_names_new_and_missing_cells_first_in_the_markdown() {
        let before = matrix(vec![
            cell("a", "latest", Outcome::Woke, Some(true)),
            cell("gone", "latest", Outcome::Woke, Some(true)),
        ]);
        let after = matrix(vec![
            cell("a", "latest", Outcome::Woke, Some(true)),
            cell("fresh", "latest", Outcome::Woke, Some(true)),
        ]);
        let c = Comparison::of(&after, &before);
        assert_eq!(
            c.lines(),
            [
                "new cell (not in the baseline): fresh/print on latest",
                "LOST COVERAGE gone/print on latest: in the baseline (woke 1/1 on latest), not in this run",
            ]
        );
        assert!(
            after.markdown(Some(&c)).starts_with(
                "# wakeprobe matrix\n\n## Changes against the baseline\n\n\
                 - new cell (not in the baseline): fresh/print on latest\n\
                 - LOST COVERAGE gone/print on latest: in the baseline (woke 1/1 on latest), not in this run\n\n| scenario |"
            ),
            "{}",
            after.markdown(Some(&c))
        );
    }

    /// Without a `want`, each change says why it is better or worse: against the scenario's
    /// expectation when one side meets it (its verdict, or only its checks), else waking beats
    /// not waking. Regressions are listed first.
    #[test]
    fn a_change_without_want_says_why_it_is_better_or_worse() {
        use Outcome::*;
        let pairs = [
            // (name, before, after, line)
            (
                "worse",
                cell("worse", "latest", Woke, Some(true)),
                cell("worse", "latest", NotResumable, Some(false)),
                "REGRESSION worse/print on latest: woke 1/1 (latest) -> not-resumable 1/1 (latest): its verdict no longer matches what the scenario expects",
            ),
            (
                "checks",
                cell("checks", "latest", NotResumable, Some(false)),
                cell("checks", "latest", NotResumable, Some(true)),
                "improvement checks/print on latest: not-resumable 1/1 (latest) -> not-resumable 1/1 (latest): its checks now match what the scenario expects",
            ),
            (
                "wakes",
                cell("wakes", "latest", NeverFired, Some(false)),
                cell("wakes", "latest", Woke, Some(false)),
                "improvement wakes/print on latest: never-fired 1/1 (latest) -> woke 1/1 (latest): it wakes now (the scenario states no `want`)",
            ),
            (
                "moved",
                cell("moved", "latest", Woke, Some(false)),
                cell("moved", "latest", NeverFired, Some(false)),
                "REGRESSION moved/print on latest: woke 1/1 (latest) -> never-fired 1/1 (latest): it changed with nothing to say it is better (the scenario states no `want`)",
            ),
            (
                "unexpected",
                cell("unexpected", "latest", NeverFired, None),
                cell("unexpected", "latest", Woke, None),
                "improvement unexpected/print on latest: never-fired 1/1 (latest) -> woke 1/1 (latest): its verdict now matches what the scenario expects",
            ),
        ];
        for (name, before, after, line) in pairs {
            let c = Comparison::of(&matrix(vec![after]), &matrix(vec![before]));
            assert_eq!(c.lines(), [line], "{name}");
        }
        let before: Vec<MatrixCell> = ["x", "y"]
            .map(|s| cell(s, "latest", NeverFired, Some(false)))
            .into();
        let after = vec![
            cell("x", "latest", Woke, Some(true)),
            cell("y", "latest", NotResumable, Some(false)),
        ];
        let c = Comparison::of(&matrix(after), &matrix(before));
        let kinds: Vec<ChangeKind> = c.changes.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [ChangeKind::Regression, ChangeKind::Improvement]);
    }

    /// With a `want`, a change of the checks alone is still judged against the expectation.
    #[test]
    fn a_change_of_checks_alone_is_judged_by_expect_even_with_a_want() {
        let wanted = |mut c: MatrixCell| {
            c.want = Some(Outcome::Woke);
            c
        };
        let before = matrix(vec![wanted(cell(
            "a",
            "latest",
            Outcome::NotResumable,
            Some(true),
        ))]);
        let after = matrix(vec![wanted(cell(
            "a",
            "latest",
            Outcome::NotResumable,
            Some(false),
        ))]);
        let c = Comparison::of(&after, &before);
        assert_eq!(c.regressions(), 1);
        assert!(
            c.lines()[0].ends_with("its checks no longer match what the scenario expects"),
            "{:?}",
            c.lines()
        );
    }
}
