//! Behaviour history: every change point of scenario variants across a list of releases.
//!
//! Where `bisect` finds one change between two versions, the history search finds all of them:
//! it runs both ends (and optional evenly spaced samples), then bisects every segment whose
//! ends differ, recursively, until each change sits between two adjacent releases; each side of
//! a change is then confirmed with `--repeat` runs, and a side whose runs disagree becomes a
//! flaky range that is searched like any other value. Many cells (scenario variants) are
//! searched at once and share every probe of a version, so each version is installed once.
//!
//! The search ([`search::search`]) is pure over an async oracle, like `bisect`: it asks for
//! runs of some cells on one version and says which versions it may still come back to, so the
//! caller can prune the rest. The readings it gathers are the data; segments and change points
//! are derived from them ([`summarize`]), so a stored history extended with newer releases is
//! summarized the same way as one run in one go. Rendered as `history.json`, `history.md`
//! ([`render`]) and `history.svg` ([`svg`]).

pub mod assemble;
pub mod render;
pub mod search;
pub mod svg;

use crate::scenario::Expected;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::classify::Outcome;

pub const HISTORY_SCHEMA: u32 = 1;

/// A scenario variant followed across releases.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct CellKey {
    pub scenario: String,
    pub variant: String,
}

impl fmt::Display for CellKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.scenario, self.variant)
    }
}

/// A tracked check's value in one run.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct CheckObservation {
    pub name: String,
    pub observed: String,
    /// Whether it met the scenario's expectation; `None` when the scenario states none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
    /// Whether it is what the check should observe (its `want`); `None` without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meets_want: Option<bool>,
}

/// What one run showed, in the tracked terms: the verdict, and the tracked checks.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Observation {
    pub verdict: Outcome,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckObservation>,
}

impl Observation {
    pub fn of(verdict: Outcome) -> Observation {
        Observation {
            verdict,
            checks: Vec::new(),
        }
    }

    /// `woke`, or `woke, check "idle": indistinguishable` (no backticks: the changelog puts
    /// the whole label in a code span).
    pub fn label(&self) -> String {
        let mut s = self.verdict.to_string();
        for c in &self.checks {
            s.push_str(&format!(", check \"{}\": {}", c.name, c.observed));
        }
        s
    }

    /// True when it is what the scenario expects (or, with no expectation, a wake-up) and no
    /// tracked check failed.
    fn is_good(&self, expect: Option<&Expected>) -> bool {
        let verdict_ok = match expect {
            Some(e) => e.allows(self.verdict),
            None => self.verdict == Outcome::Woke,
        };
        verdict_ok && self.checks_pass()
    }

    fn checks_pass(&self) -> bool {
        self.checks.iter().all(|c| c.passed != Some(false))
    }
}

/// What the runs of one cell on one version agree on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum Agreed {
    Stable {
        observation: Observation,
    },
    /// The runs disagree.
    Flaky,
    /// The runs stayed within the race their scenario declares (each verdict one of its
    /// outcomes, the checks the same in every run): one behaviour, however the race fell
    /// (each reading keeps its counts).
    Race {
        race: Expected,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        checks: Vec<CheckObservation>,
    },
}

impl Agreed {
    /// `woke`, `flaky`, or `race: woke or queued-until-input`.
    pub fn label(&self) -> String {
        match self {
            Agreed::Stable { observation } => observation.label(),
            Agreed::Flaky => "flaky".into(),
            Agreed::Race { race, checks } => {
                let mut s = format!("race: {race}");
                for c in checks {
                    s.push_str(&format!(", check \"{}\": {}", c.name, c.observed));
                }
                s
            }
        }
    }

    fn is_good(&self, expect: Option<&Expected>) -> bool {
        match self {
            Agreed::Stable { observation } => observation.is_good(expect),
            Agreed::Flaky => false,
            Agreed::Race { checks, .. } => checks.iter().all(|c| c.passed != Some(false)),
        }
    }

    fn verdict(&self) -> Option<Outcome> {
        match self {
            Agreed::Stable { observation } => Some(observation.verdict),
            Agreed::Flaky | Agreed::Race { .. } => None,
        }
    }

    fn checks(&self) -> &[CheckObservation] {
        match self {
            Agreed::Stable { observation } => &observation.checks,
            Agreed::Race { checks, .. } => checks,
            Agreed::Flaky => &[],
        }
    }

    /// The verdict is what the scenario expects (any verdict of a declared race is).
    fn verdict_expected(&self, expect: Option<&Expected>) -> bool {
        match (self, expect) {
            (Agreed::Race { .. }, _) => true,
            (Agreed::Flaky, _) => false,
            (Agreed::Stable { observation }, Some(e)) => e.allows(observation.verdict),
            (Agreed::Stable { observation }, None) => observation.verdict == Outcome::Woke,
        }
    }
}

/// How the tracked checks with a `want` moved between two sides: away from it (any check
/// that met it no longer does), toward it (one that did not now does), or neither.
fn toward_want(before: &Agreed, after: &Agreed) -> Option<ChangeKind> {
    let moves: Vec<(bool, bool)> = after
        .checks()
        .iter()
        .filter_map(|a| {
            let b = before.checks().iter().find(|b| b.name == a.name)?;
            Some((b.meets_want?, a.meets_want?))
        })
        .collect();
    if moves.iter().any(|(b, a)| *b && !*a) {
        Some(ChangeKind::Regression)
    } else if moves.iter().any(|(b, a)| !*b && *a) {
        Some(ChangeKind::Improvement)
    } else {
        None
    }
}

/// One cell's runs on one version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Reading {
    pub version: String,
    pub runs: Vec<Observation>,
    /// Each run's `report.md`, relative to the folder of the invocation that ran it.
    #[serde(default)]
    pub reports: Vec<String>,
    /// That invocation's run id (readings kept from a stored history keep theirs).
    #[serde(default)]
    pub run_id: String,
}

impl Reading {
    /// What the runs agree on under the scenario's expectation `expect`; `None` before any
    /// run.
    pub fn agreed(&self, expect: Option<&Expected>) -> Option<Agreed> {
        let first = self.runs.first()?;
        let verdicts: Vec<Outcome> = self.runs.iter().map(|r| r.verdict).collect();
        let same_checks = self.runs.iter().all(|r| r.checks == first.checks);
        let within = crate::classify::Disagreement::of(expect, &verdicts)
            == crate::classify::Disagreement::Race;
        Some(match expect {
            Some(race) if within && same_checks => Agreed::Race {
                race: race.clone(),
                checks: first.checks.clone(),
            },
            _ if self.runs.iter().all(|r| r == first) => Agreed::Stable {
                observation: first.clone(),
            },
            _ => Agreed::Flaky,
        })
    }

    /// `woke 3/3`, `flaky: woke 2/3, not-resumable 1/3`, or `race: ...` where the scenario
    /// declares that race.
    pub fn agreement(&self, expect: Option<&Expected>) -> String {
        let verdicts: Vec<Outcome> = self.runs.iter().map(|r| r.verdict).collect();
        let disagreement = crate::classify::Disagreement::of(expect, &verdicts);
        crate::classify::agreement_of(&self.runs, Observation::label, disagreement).1
    }
}

/// A release the search had to leave out (it could not be installed or started).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Skipped {
    pub version: String,
    pub reason: String,
}

/// One probe of the search: a version, how many cells, how many runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProbeRecord {
    pub version: String,
    pub cells: usize,
    pub runs: usize,
}

/// Consecutive probed releases that agree; the releases between them are taken to agree too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Segment {
    pub first: String,
    pub last: String,
    pub agreed: Agreed,
    /// How many listed (not skipped) releases it spans, `first` and `last` included.
    pub releases: usize,
    pub probed: Vec<String>,
}

/// How a change point reads against the scenario's expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    /// It was what the scenario expects (or woke) and no longer is; or it left `woke`.
    Regression,
    /// It becomes what the scenario expects; or it now wakes.
    Improvement,
    /// Neither side is better (say, a check without expectation changed its value).
    Neutral,
}

impl ChangeKind {
    /// A check moving toward or away from its `want` decides (what the CLI should do outranks
    /// what it did), unless the verdict left what was expected at the same time; otherwise
    /// leaving what the scenario expects is the regression.
    fn of(before: &Agreed, after: &Agreed, expect: Option<&Expected>) -> ChangeKind {
        let verdict_worse = before.verdict_expected(expect) && !after.verdict_expected(expect);
        match toward_want(before, after) {
            Some(ChangeKind::Regression) => return ChangeKind::Regression,
            Some(ChangeKind::Improvement) if !verdict_worse => return ChangeKind::Improvement,
            _ => {}
        }
        match (before.is_good(expect), after.is_good(expect)) {
            (true, false) => ChangeKind::Regression,
            (false, true) => ChangeKind::Improvement,
            (true, true) => ChangeKind::Neutral,
            (false, false) if after.verdict() == Some(Outcome::Woke) => ChangeKind::Improvement,
            (false, false) if before.verdict() == Some(Outcome::Woke) => ChangeKind::Regression,
            (false, false) => ChangeKind::Neutral,
        }
    }
}

/// Where one segment ends and the next begins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChangePoint {
    /// The last release with the old behaviour.
    pub last_before: String,
    /// The first release with the new behaviour.
    pub first_after: String,
    pub before: Agreed,
    pub after: Agreed,
    /// Releases between the two that were never run: empty once the change is pinned down.
    pub unresolved: Vec<String>,
    /// Both sides were run `--repeat` times (and agreed, or stayed flaky).
    pub confirmed: bool,
    pub kind: ChangeKind,
}

impl ChangePoint {
    pub fn resolved(&self) -> bool {
        self.unresolved.is_empty()
    }
}

/// One cell across the releases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CellHistory {
    pub scenario: String,
    pub variant: String,
    pub expect: Option<Expected>,
    /// Every probed release, oldest first.
    pub readings: Vec<Reading>,
    pub segments: Vec<Segment>,
    pub changes: Vec<ChangePoint>,
}

impl CellHistory {
    pub fn key(&self) -> CellKey {
        CellKey {
            scenario: self.scenario.clone(),
            variant: self.variant.clone(),
        }
    }

    pub fn reading(&self, version: &str) -> Option<&Reading> {
        self.readings.iter().find(|r| r.version == version)
    }
}

/// Derives segments and change points from a cell's readings over `versions` (oldest first;
/// skipped versions left out). `repeat` is the run count that confirms a change's sides.
pub fn summarize(
    key: &CellKey,
    expect: Option<&Expected>,
    versions: &[String],
    readings: &BTreeMap<String, Reading>,
    repeat: usize,
) -> CellHistory {
    let probed: Vec<(usize, &Reading, Agreed)> = versions
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let r = readings.get(v)?;
            Some((i, r, r.agreed(expect)?))
        })
        .collect();
    let mut segments: Vec<(usize, usize, Agreed, Vec<String>)> = Vec::new();
    for (i, r, agreed) in &probed {
        match segments.last_mut() {
            Some(last) if last.2 == *agreed => {
                last.1 = *i;
                last.3.push(r.version.clone());
            }
            _ => segments.push((*i, *i, agreed.clone(), vec![r.version.clone()])),
        }
    }
    let runs = |v: &str| readings.get(v).map_or(0, |r| r.runs.len());
    let changes = segments
        .windows(2)
        .map(|w| {
            let (before, after) = (&w[0], &w[1]);
            let (last_before, first_after) = (&versions[before.1], &versions[after.0]);
            ChangePoint {
                last_before: last_before.clone(),
                first_after: first_after.clone(),
                before: before.2.clone(),
                after: after.2.clone(),
                unresolved: versions[before.1 + 1..after.0].to_vec(),
                confirmed: runs(last_before) >= repeat && runs(first_after) >= repeat,
                kind: ChangeKind::of(&before.2, &after.2, expect),
            }
        })
        .collect();
    CellHistory {
        scenario: key.scenario.clone(),
        variant: key.variant.clone(),
        expect: expect.cloned(),
        readings: probed.iter().map(|(_, r, _)| (*r).clone()).collect(),
        segments: segments
            .into_iter()
            .map(|(a, b, agreed, probed)| Segment {
                first: versions[a].clone(),
                last: versions[b].clone(),
                agreed,
                releases: b - a + 1,
                probed,
            })
            .collect(),
        changes,
    }
}

/// How the history was searched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HistorySettings {
    pub search_repeat: u32,
    /// Runs that confirm each side of a change point.
    pub repeat: u32,
    pub samples: usize,
    /// `--set` values every run had.
    pub sets: Vec<(String, String)>,
    /// Tracked checks, by name.
    pub checks: Vec<String>,
    /// Versions mapped to simulator profiles (tests), if any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sim_versions: Vec<(String, String)>,
}

/// What the search cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HistoryStats {
    pub probes: usize,
    pub runs: usize,
    /// CLI versions installed by this command (reinstalls after a prune count again).
    pub installs: u32,
    /// Versions this command removed again.
    pub pruned: u32,
    /// The most disk the versions this command installed held at once.
    pub peak_install_bytes: u64,
    pub wall_seconds: f64,
}

/// `history.json`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HistoryFile {
    pub schema: u32,
    pub from: String,
    pub to: String,
    /// Every listed release from `from` to `to`, oldest first (skipped ones included).
    pub versions: Vec<String>,
    pub skipped: Vec<Skipped>,
    pub settings: HistorySettings,
    pub cells: Vec<CellHistory>,
    /// Every probe, in the order run (this invocation's; a stored history's are kept before).
    pub probes: Vec<ProbeRecord>,
    pub stats: HistoryStats,
    /// Why the search stopped before pinning every change down (an install budget, a signal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// With `--append`: the stored history's last release; change points after it are new.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appended_after: Option<String>,
}

impl HistoryFile {
    /// Every change point, with its cell.
    pub fn changes(&self) -> impl Iterator<Item = (&CellHistory, &ChangePoint)> {
        self.cells
            .iter()
            .flat_map(|c| c.changes.iter().map(move |p| (c, p)))
    }

    /// Change points whose new behaviour starts after the stored history's last release.
    pub fn new_changes(&self) -> Vec<(&CellHistory, &ChangePoint)> {
        let Some(after) = &self.appended_after else {
            return Vec::new();
        };
        let position = |v: &str| self.versions.iter().position(|x| x == v);
        let boundary = position(after);
        self.changes()
            .filter(|(_, p)| position(&p.first_after) > boundary)
            .collect()
    }

    /// The listed releases less the skipped ones.
    pub fn live_versions(&self) -> Vec<String> {
        let skipped: BTreeSet<&str> = self.skipped.iter().map(|s| s.version.as_str()).collect();
        self.versions
            .iter()
            .filter(|v| !skipped.contains(v.as_str()))
            .cloned()
            .collect()
    }
}

/// The readings of every cell, merged: a stored history's, then this search's (runs on the
/// same version add up). Keyed by cell, then version.
pub type ReadingMap = BTreeMap<CellKey, BTreeMap<String, Reading>>;

/// Adds `more` readings into `into`.
pub fn merge_readings(into: &mut ReadingMap, more: impl IntoIterator<Item = (CellKey, Reading)>) {
    for (cell, reading) in more {
        let slot = into
            .entry(cell)
            .or_default()
            .entry(reading.version.clone())
            .or_insert_with(|| Reading {
                version: reading.version.clone(),
                runs: Vec::new(),
                reports: Vec::new(),
                run_id: reading.run_id.clone(),
            });
        slot.runs.extend(reading.runs);
        slot.reports.extend(reading.reports);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CellKey {
        CellKey {
            scenario: "s".into(),
            variant: "v".into(),
        }
    }

    fn reading(version: &str, runs: &[Outcome]) -> Reading {
        Reading {
            version: version.into(),
            runs: runs.iter().map(|o| Observation::of(*o)).collect(),
            reports: vec![],
            run_id: "r".into(),
        }
    }

    /// One run's observation: `verdict`, with a check `idle` that states a `want` and an
    /// `expect`, meeting the one or the other.
    fn with_idle_check(verdict: Outcome, meets_want: bool) -> Agreed {
        Agreed::Stable {
            observation: Observation {
                verdict,
                checks: vec![CheckObservation {
                    name: "idle".into(),
                    observed: if meets_want {
                        "distinguishable"
                    } else {
                        "indistinguishable"
                    }
                    .into(),
                    passed: Some(!meets_want),
                    meets_want: Some(meets_want),
                }],
            },
        }
    }

    /// A check moving toward its `want` is an improvement though it leaves `expect` (the fixed
    /// CLI), away from it a regression though it now meets `expect`; and a verdict that leaves
    /// what was expected at the same time still makes the change a regression.
    #[test]
    fn a_check_moving_toward_its_want_is_an_improvement_unless_the_verdict_got_worse() {
        use Outcome::*;
        let expect = Expected::One(Unknown);
        let of = |b, a| ChangeKind::of(&b, &a, Some(&expect));
        assert_eq!(
            of(
                with_idle_check(Unknown, false),
                with_idle_check(Unknown, true)
            ),
            ChangeKind::Improvement
        );
        assert_eq!(
            of(
                with_idle_check(Unknown, true),
                with_idle_check(Unknown, false)
            ),
            ChangeKind::Regression
        );
        assert_eq!(
            of(
                with_idle_check(Unknown, false),
                with_idle_check(NeverFired, true)
            ),
            ChangeKind::Regression
        );
    }

    #[test]
    fn readings_agree_or_are_flaky_with_counts() {
        let r = reading("1", &[Outcome::Woke, Outcome::NotResumable, Outcome::Woke]);
        assert_eq!(r.agreed(None), Some(Agreed::Flaky));
        assert_eq!(r.agreement(None), "flaky: woke 2/3, not-resumable 1/3");
        let r = reading("1", &[Outcome::Woke; 2]);
        assert_eq!(r.agreement(None), "woke 2/2");
        assert_eq!(reading("1", &[]).agreed(None), None);
    }

    #[test]
    fn segments_and_change_points_come_from_the_readings() {
        let versions: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        let mut map = BTreeMap::new();
        for (v, o, n) in [
            ("0", Outcome::NotResumable, 1),
            ("4", Outcome::NotResumable, 3),
            ("5", Outcome::Woke, 3),
            ("9", Outcome::Woke, 1),
        ] {
            map.insert(v.to_string(), reading(v, &vec![o; n]));
        }
        let h = summarize(
            &key(),
            Some(&Expected::One(Outcome::Woke)),
            &versions,
            &map,
            3,
        );
        assert_eq!(h.segments.len(), 2);
        assert_eq!(
            (h.segments[0].first.as_str(), h.segments[0].last.as_str()),
            ("0", "4")
        );
        assert_eq!(h.segments[0].releases, 5);
        assert_eq!(h.changes.len(), 1);
        let c = &h.changes[0];
        assert_eq!((c.last_before.as_str(), c.first_after.as_str()), ("4", "5"));
        assert!(c.resolved() && c.confirmed);
        assert_eq!(c.kind, ChangeKind::Improvement, "to the expected verdict");
        // Unpinned: a gap of unrun releases between the sides, not confirmed.
        map.remove("4");
        let h = summarize(
            &key(),
            Some(&Expected::One(Outcome::Woke)),
            &versions,
            &map,
            3,
        );
        assert_eq!(h.changes[0].unresolved, vec!["1", "2", "3", "4"]);
        assert!(!h.changes[0].confirmed);
    }

    /// A declared race's runs that stay within it are one behaviour: readings that fell either
    /// way are one segment, with no change point, and a run outside the race is a regression.
    #[test]
    fn a_declared_race_is_one_behaviour_and_leaving_it_is_a_regression() {
        let race = Expected::of(&[Outcome::Woke, Outcome::QueuedUntilInput]).unwrap();
        let versions: Vec<String> = (0..6).map(|i| i.to_string()).collect();
        let mut map = BTreeMap::new();
        for (v, runs) in [
            ("0", vec![Outcome::Woke; 3]),
            (
                "1",
                vec![Outcome::Woke, Outcome::QueuedUntilInput, Outcome::Woke],
            ),
            ("2", vec![Outcome::QueuedUntilInput; 3]),
            ("3", vec![Outcome::Woke; 3]),
            ("5", vec![Outcome::NeverFired; 3]),
        ] {
            map.insert(v.to_string(), reading(v, &runs));
        }
        let h = summarize(&key(), Some(&race), &versions, &map, 3);
        assert_eq!(h.segments.len(), 2, "{:?}", h.segments);
        assert_eq!(
            (h.segments[0].first.as_str(), h.segments[0].last.as_str()),
            ("0", "3")
        );
        assert_eq!(
            h.segments[0].agreed.label(),
            "race: woke or queued-until-input"
        );
        let reading_1 = h.reading("1").unwrap();
        assert_eq!(
            reading_1.agreement(Some(&race)),
            "race: woke 2/3, queued-until-input 1/3"
        );
        assert_eq!(
            h.reading("2").unwrap().agreement(Some(&race)),
            "queued-until-input 3/3"
        );
        // Only leaving the race is a change, and a regression.
        let kinds: Vec<ChangeKind> = h.changes.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [ChangeKind::Regression]);
        // Without the race declared, the same disagreement is flaky and worse than waking.
        assert_eq!(reading_1.agreed(None), Some(Agreed::Flaky));
        let h = summarize(
            &key(),
            Some(&Expected::One(Outcome::Woke)),
            &versions,
            &map,
            3,
        );
        assert_eq!(h.changes[0].kind, ChangeKind::Regression);
    }

    #[test]
    fn change_kinds_follow_the_expectation() {
        let stable = |o| Agreed::Stable {
            observation: Observation::of(o),
        };
        let not_resumable = Expected::One(Outcome::NotResumable);
        let nr = Some(&not_resumable);
        use ChangeKind::*;
        assert_eq!(
            ChangeKind::of(&stable(Outcome::NotResumable), &stable(Outcome::Woke), nr),
            Regression
        );
        assert_eq!(
            ChangeKind::of(&stable(Outcome::Woke), &stable(Outcome::NotResumable), nr),
            Improvement
        );
        assert_eq!(
            ChangeKind::of(&stable(Outcome::Woke), &Agreed::Flaky, None),
            Regression
        );
        assert_eq!(
            ChangeKind::of(&Agreed::Flaky, &stable(Outcome::Woke), None),
            Improvement
        );
        assert_eq!(
            ChangeKind::of(
                &stable(Outcome::ChildFailed),
                &stable(Outcome::Unknown),
                None
            ),
            Neutral
        );
    }
}
