//! The history search: which version to run next, for which cells, how many times, until every
//! change point sits between adjacent releases with both sides confirmed.
//!
//! Each round looks at every cell's probed versions in order. Unrun starting points (the two
//! ends, samples) come first. Two neighbours that disagree are a segment to split at its
//! middle release; once they are adjacent, each side is topped up to `confirm_runs` runs. A
//! side that turns out flaky is a value of its own, so the segments next to it are searched
//! again. The lowest version with work is run next, for all the cells that need it. Every
//! answer adds at least one run to a (version, cell) pair that needs one, and none needs more
//! than `confirm_runs`, so the search ends.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;

use super::{CellKey, Observation, ProbeRecord, Reading, ReadingMap, Skipped};
use crate::scenario::Expected;

/// What to search.
#[derive(Debug, Clone)]
pub struct SearchPlan {
    /// The releases in order, oldest first; the first and last are the ends.
    pub versions: Vec<String>,
    pub cells: Vec<CellKey>,
    /// Runs of a version while searching.
    pub search_runs: u32,
    /// Runs that confirm each side of a change point.
    pub confirm_runs: u32,
    /// Evenly spaced releases run at the start, besides the ends.
    pub samples: usize,
    /// Readings already known (a stored history's), by cell and version.
    pub known: ReadingMap,
    /// Each cell's expectation, where its scenario states one (a declared race's runs that
    /// stay within it are one behaviour, not a change).
    pub expects: BTreeMap<CellKey, Expected>,
}

/// Runs asked of one cell: repetitions `first..first + count`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellRuns {
    pub cell: CellKey,
    pub first: u32,
    pub count: u32,
}

/// One probe asked of the oracle.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub version: String,
    pub cells: Vec<CellRuns>,
    /// Versions the search may come back to; any other version it ran may be pruned.
    pub needed: BTreeSet<String>,
}

/// What the oracle saw for one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CellAnswer {
    pub cell: CellKey,
    pub runs: Vec<Observation>,
    pub reports: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OracleError {
    /// This version cannot be run (install or start-up failed): leave it out and go on.
    #[error("skipped: {0}")]
    Skip(String),
    /// Stop searching (a budget ran out, a signal): keep what was found.
    #[error("stopped: {0}")]
    Stop(String),
}

/// What the search found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Found {
    /// This search's readings (not the known ones).
    pub readings: ReadingMap,
    pub skipped: Vec<Skipped>,
    pub probes: Vec<ProbeRecord>,
    pub stopped: Option<String>,
}

/// Runs the search to its end, or until the oracle stops it.
pub async fn search<F, Fut>(plan: &SearchPlan, run_id: &str, mut oracle: F) -> Found
where
    F: FnMut(Request) -> Fut,
    Fut: Future<Output = Result<Vec<CellAnswer>, OracleError>>,
{
    let mut state = State::new(plan);
    let mut found = Found::default();
    while let Some(request) = state.next_request() {
        let asked = request.cells.clone();
        let version = request.version.clone();
        match oracle(request).await {
            Ok(answers) => match state.record(&version, &asked, answers, run_id) {
                Ok(record) => {
                    for (cell, reading) in record.1 {
                        super::merge_readings(&mut found.readings, [(cell, reading)]);
                    }
                    found.probes.push(record.0);
                }
                Err(reason) => found.skipped.push(state.skip(&version, reason)),
            },
            Err(OracleError::Skip(reason)) => found.skipped.push(state.skip(&version, reason)),
            Err(OracleError::Stop(reason)) => {
                found.stopped = Some(reason);
                break;
            }
        }
    }
    found
}

/// The search's memory.
struct State<'a> {
    plan: &'a SearchPlan,
    live: Vec<bool>,
    readings: ReadingMap,
    starts: Vec<usize>,
}

/// Work for one version: the cells and their runs.
type Needs = BTreeMap<usize, Vec<CellRuns>>;

impl<'a> State<'a> {
    fn new(plan: &'a SearchPlan) -> State<'a> {
        let n = plan.versions.len();
        let mut starts: Vec<usize> = (1..=plan.samples)
            .map(|i| i * n.saturating_sub(1) / (plan.samples + 1))
            .collect();
        starts.sort();
        starts.dedup();
        State {
            plan,
            live: vec![true; n],
            readings: plan.known.clone(),
            starts,
        }
    }

    fn index(&self, version: &str) -> Option<usize> {
        self.plan.versions.iter().position(|v| v == version)
    }

    fn live_between(&self, a: usize, b: usize) -> Vec<usize> {
        (a + 1..b).filter(|i| self.live[*i]).collect()
    }

    fn runs(&self, cell: &CellKey, i: usize) -> u32 {
        self.readings
            .get(cell)
            .and_then(|m| m.get(&self.plan.versions[i]))
            .map_or(0, |r| r.runs.len() as u32)
    }

    /// The starting points still live: the first and last live release, and the samples.
    fn start_points(&self) -> Vec<usize> {
        let first = self.live.iter().position(|l| *l);
        let last = self.live.iter().rposition(|l| *l);
        let mut points: Vec<usize> = first.into_iter().chain(last).collect();
        points.extend(self.starts.iter().filter(|i| self.live[**i]));
        points.sort();
        points.dedup();
        points
    }

    /// Every (version, cell) that needs runs, and the versions the search may come back to.
    fn needs(&self) -> (Needs, BTreeSet<usize>) {
        let mut needs = Needs::new();
        let mut keep = BTreeSet::new();
        let mut need = |i: usize, cell: &CellKey, first: u32, count: u32| {
            needs.entry(i).or_default().push(CellRuns {
                cell: cell.clone(),
                first,
                count,
            });
        };
        for cell in &self.plan.cells {
            let unrun: Vec<usize> = self
                .start_points()
                .into_iter()
                .filter(|i| self.runs(cell, *i) == 0)
                .collect();
            if !unrun.is_empty() {
                for i in unrun {
                    need(i, cell, 1, self.plan.search_runs);
                }
                continue;
            }
            let probed: Vec<(usize, super::Agreed)> = (0..self.plan.versions.len())
                .filter(|i| self.live[*i])
                .filter_map(|i| {
                    let r = self.readings.get(cell)?.get(&self.plan.versions[i])?;
                    Some((i, r.agreed(self.plan.expects.get(cell))?))
                })
                .collect();
            for pair in probed.windows(2) {
                let ((a, ref before), (b, ref after)) = (pair[0].clone(), pair[1].clone());
                if before == after {
                    continue;
                }
                keep.extend([a, b]);
                let between = self.live_between(a, b);
                if between.is_empty() {
                    for end in [a, b] {
                        let have = self.runs(cell, end);
                        if have < self.plan.confirm_runs {
                            need(end, cell, have + 1, self.plan.confirm_runs - have);
                        }
                    }
                } else {
                    let mid = between[(between.len() - 1) / 2];
                    need(mid, cell, 1, self.plan.search_runs);
                }
            }
        }
        keep.extend(needs.keys().copied());
        (needs, keep)
    }

    /// The lowest version with work, for every cell that needs it.
    fn next_request(&self) -> Option<Request> {
        let (needs, keep) = self.needs();
        let (i, cells) = needs.into_iter().next()?;
        Some(Request {
            version: self.plan.versions[i].clone(),
            cells,
            needed: keep
                .into_iter()
                .map(|k| self.plan.versions[k].clone())
                .collect(),
        })
    }

    /// Adds an answer's runs; an answer missing a cell it was asked for is an error (the
    /// version is then skipped, so the search cannot ask forever).
    #[allow(clippy::type_complexity)]
    fn record(
        &mut self,
        version: &str,
        asked: &[CellRuns],
        answers: Vec<CellAnswer>,
        run_id: &str,
    ) -> Result<(ProbeRecord, Vec<(CellKey, Reading)>), String> {
        for a in asked {
            if !answers
                .iter()
                .any(|x| x.cell == a.cell && !x.runs.is_empty())
            {
                return Err(format!("the probe returned no run of {}", a.cell));
            }
        }
        let mut added = Vec::new();
        let mut runs = 0;
        for answer in answers
            .into_iter()
            .filter(|x| asked.iter().any(|a| a.cell == x.cell))
        {
            runs += answer.runs.len();
            let reading = Reading {
                version: version.to_string(),
                runs: answer.runs,
                reports: answer.reports,
                run_id: run_id.to_string(),
            };
            super::merge_readings(&mut self.readings, [(answer.cell.clone(), reading.clone())]);
            added.push((answer.cell, reading));
        }
        Ok((
            ProbeRecord {
                version: version.to_string(),
                cells: asked.len(),
                runs,
            },
            added,
        ))
    }

    /// Leaves a version out from now on (its readings with it).
    fn skip(&mut self, version: &str, reason: String) -> Skipped {
        if let Some(i) = self.index(version) {
            self.live[i] = false;
        }
        for m in self.readings.values_mut() {
            m.remove(version);
        }
        Skipped {
            version: version.to_string(),
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Agreed, summarize};
    use super::*;
    use crate::classify::Outcome;
    use std::cell::RefCell;

    fn cell(name: &str) -> CellKey {
        CellKey {
            scenario: name.into(),
            variant: "v".into(),
        }
    }

    fn versions(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("1.0.{i}")).collect()
    }

    fn index(v: &str) -> usize {
        v.rsplit('.').next().unwrap().parse().unwrap()
    }

    /// A cell's behaviour: the verdict of repetition `rep` on release `i`.
    type Truth = fn(&str, usize, u32) -> Outcome;

    /// `a`: not-resumable, woke from 7, child-failed from 23; `b`: always woke; `c`: woke,
    /// never-fired from 39; `flaky`: woke, flaky over 10..=12 (odd repetitions woke, even
    /// ones not), not-resumable from 13; `dip`: woke but unknown over 14..=16.
    fn truth(cell: &str, i: usize, rep: u32) -> Outcome {
        match cell {
            "a" if i >= 23 => Outcome::ChildFailed,
            "a" if i >= 7 => Outcome::Woke,
            "a" => Outcome::NotResumable,
            "c" if i >= 39 => Outcome::NeverFired,
            "flaky" if (10..=12).contains(&i) && rep.is_multiple_of(2) => Outcome::NotResumable,
            "flaky" if i >= 13 => Outcome::NotResumable,
            "dip" if (14..=16).contains(&i) => Outcome::Unknown,
            _ => Outcome::Woke,
        }
    }

    /// Answers from `truth`, logging every request.
    fn oracle(
        log: &RefCell<Vec<Request>>,
        truth: Truth,
    ) -> impl FnMut(Request) -> std::future::Ready<Result<Vec<CellAnswer>, OracleError>> + '_ {
        move |req: Request| {
            log.borrow_mut().push(req.clone());
            let i = index(&req.version);
            let answers = req
                .cells
                .iter()
                .map(|c| CellAnswer {
                    cell: c.cell.clone(),
                    runs: (c.first..c.first + c.count)
                        .map(|rep| Observation::of(truth(&c.cell.scenario, i, rep)))
                        .collect(),
                    reports: vec![],
                })
                .collect();
            std::future::ready(Ok(answers))
        }
    }

    fn plan(n: usize, cells: &[&str]) -> SearchPlan {
        SearchPlan {
            versions: versions(n),
            cells: cells.iter().map(|c| cell(c)).collect(),
            search_runs: 1,
            confirm_runs: 3,
            samples: 0,
            known: ReadingMap::new(),
            expects: BTreeMap::new(),
        }
    }

    /// (cell, last_before, first_after, before, after) of every change point.
    fn changes(plan: &SearchPlan, found: &Found) -> Vec<(String, usize, usize, String, String)> {
        let mut all = found.readings.clone();
        super::super::merge_readings(
            &mut all,
            plan.known
                .iter()
                .flat_map(|(c, m)| m.values().map(move |r| (c.clone(), r.clone()))),
        );
        let skipped: Vec<&str> = found.skipped.iter().map(|s| s.version.as_str()).collect();
        let live: Vec<String> = plan
            .versions
            .iter()
            .filter(|v| !skipped.contains(&v.as_str()))
            .cloned()
            .collect();
        let mut out = Vec::new();
        for c in &plan.cells {
            let h = summarize(c, None, &live, all.get(c).unwrap_or(&BTreeMap::new()), 3);
            for p in h.changes {
                assert!(p.resolved(), "{c}: {p:?}");
                assert!(p.confirmed, "{c}: {p:?}");
                out.push((
                    c.scenario.clone(),
                    index(&p.last_before),
                    index(&p.first_after),
                    p.before.label(),
                    p.after.label(),
                ));
            }
        }
        out
    }

    #[tokio::test]
    async fn finds_every_planted_change_point_and_only_those() {
        let log = RefCell::new(Vec::new());
        let plan = plan(40, &["a", "b", "c"]);
        let found = search(&plan, "r", oracle(&log, truth)).await;
        assert_eq!(found.stopped, None);
        assert_eq!(
            changes(&plan, &found),
            vec![
                ("a".into(), 6, 7, "not-resumable".into(), "woke".into()),
                ("a".into(), 22, 23, "woke".into(), "child-failed".into()),
                ("c".into(), 38, 39, "woke".into(), "never-fired".into()),
            ]
        );
        // Each version is probed once (its cells share the probe) except to confirm a side.
        let probes = log.borrow().len();
        let distinct: BTreeSet<String> = log.borrow().iter().map(|r| r.version.clone()).collect();
        // Ends, then per change about log2 of its segment: far fewer than 40 releases.
        assert!(
            distinct.len() <= 2 + 3 * 6,
            "{} versions probed",
            distinct.len()
        );
        assert!(probes <= distinct.len() + 6, "{probes} probes");
        assert_eq!(found.probes.len(), probes);
        // The constant cell `b` ran only at the ends.
        let b_runs: usize = log
            .borrow()
            .iter()
            .flat_map(|r| r.cells.iter())
            .filter(|c| c.cell.scenario == "b")
            .map(|c| c.count as usize)
            .sum();
        assert_eq!(b_runs, 2);
    }

    #[tokio::test]
    async fn a_pruned_version_is_never_asked_for_again_when_nothing_is_flaky() {
        let log = RefCell::new(Vec::new());
        let plan = plan(40, &["a", "c"]);
        search(&plan, "r", oracle(&log, truth)).await;
        let log = log.borrow();
        let mut ran: BTreeSet<String> = BTreeSet::new();
        for req in log.iter() {
            // Anything run before and not needed now may be pruned by the caller...
            let prunable: BTreeSet<String> = ran.difference(&req.needed).cloned().collect();
            // ...and is then never asked for again.
            for later in log.iter().skip_while(|r| !std::ptr::eq(*r, req)).skip(1) {
                assert!(
                    !prunable.contains(&later.version),
                    "{} pruned at {}, asked again",
                    later.version,
                    req.version
                );
            }
            assert!(req.needed.contains(&req.version));
            ran.insert(req.version.clone());
        }
    }

    #[tokio::test]
    async fn a_flaky_range_stays_flaky_and_its_edges_are_change_points() {
        let log = RefCell::new(Vec::new());
        let plan = plan(21, &["flaky"]);
        let found = search(&plan, "r", oracle(&log, truth)).await;
        assert_eq!(
            changes(&plan, &found),
            vec![
                ("flaky".into(), 9, 10, "woke".into(), "flaky".into()),
                (
                    "flaky".into(),
                    12,
                    13,
                    "flaky".into(),
                    "not-resumable".into()
                ),
            ]
        );
        let h = summarize(
            &cell("flaky"),
            None,
            &plan.versions,
            &found.readings[&cell("flaky")],
            3,
        );
        assert_eq!(h.segments[1].agreed, Agreed::Flaky);
        assert_eq!(
            (h.segments[1].first.as_str(), h.segments[1].last.as_str()),
            ("1.0.10", "1.0.12")
        );
        let r = h.reading("1.0.10").unwrap();
        assert_eq!(r.agreement(None), "flaky: woke 2/3, not-resumable 1/3");
    }

    #[tokio::test]
    async fn samples_find_a_change_that_comes_and_goes_between_agreeing_ends() {
        let log = RefCell::new(Vec::new());
        let without = plan(31, &["dip"]);
        let found = search(&without, "r", oracle(&log, truth)).await;
        assert_eq!(
            changes(&without, &found),
            vec![],
            "the ends agree: nothing to bisect"
        );
        assert_eq!(log.borrow().len(), 2);
        let mut with = plan(31, &["dip"]);
        with.samples = 3; // 7, 15, 22
        let found = search(&with, "r", oracle(&log, truth)).await;
        assert_eq!(
            changes(&with, &found),
            vec![
                ("dip".into(), 13, 14, "woke".into(), "unknown".into()),
                ("dip".into(), 16, 17, "unknown".into(), "woke".into()),
            ]
        );
    }

    #[tokio::test]
    async fn a_version_that_cannot_run_is_skipped_and_the_change_found_across_it() {
        let log = RefCell::new(Vec::new());
        let mut inner = oracle(&log, truth);
        let plan = plan(16, &["a"]);
        let found = search(&plan, "r", |req: Request| {
            let skip = req.version == "1.0.7" || req.version == "1.0.0";
            let answer = inner(req);
            async move {
                if skip {
                    Err(OracleError::Skip("npm: no such version".into()))
                } else {
                    answer.await
                }
            }
        })
        .await;
        let skipped: Vec<&str> = found.skipped.iter().map(|s| s.version.as_str()).collect();
        assert_eq!(skipped, vec!["1.0.0", "1.0.7"]);
        // 1.0.1 is the new first end; the change at 7 now shows between 6 and 8.
        assert_eq!(
            changes(&plan, &found),
            vec![("a".into(), 6, 8, "not-resumable".into(), "woke".into())]
        );
    }

    #[tokio::test]
    async fn a_stop_keeps_what_was_found_and_leaves_the_change_unpinned() {
        let log = RefCell::new(Vec::new());
        let mut inner = oracle(&log, truth);
        let calls = std::cell::Cell::new(0);
        let plan = plan(40, &["a"]);
        let found = search(&plan, "r", |req: Request| {
            calls.set(calls.get() + 1);
            let stop = calls.get() > 3;
            let answer = inner(req);
            async move {
                if stop {
                    Err(OracleError::Stop("install budget".into()))
                } else {
                    answer.await
                }
            }
        })
        .await;
        assert_eq!(found.stopped.as_deref(), Some("install budget"));
        assert_eq!(found.probes.len(), 3);
        let h = summarize(
            &cell("a"),
            None,
            &plan.versions,
            &found.readings[&cell("a")],
            3,
        );
        assert!(h.changes.iter().any(|c| !c.resolved()), "{h:?}");
    }

    #[tokio::test]
    async fn known_readings_are_extended_without_running_them_again() {
        // A stored history up to 1.0.20 (its ends and the change at 7 pinned down).
        let log = RefCell::new(Vec::new());
        let stored = plan(21, &["a"]);
        let old = search(&stored, "old", oracle(&log, truth)).await;
        log.borrow_mut().clear();
        // Extended to 1.0.30: only the new end and the new segment run.
        let mut plan = plan(31, &["a"]);
        plan.known = old.readings.clone();
        let found = search(&plan, "new", oracle(&log, truth)).await;
        let asked: Vec<usize> = log.borrow().iter().map(|r| index(&r.version)).collect();
        assert!(asked.iter().all(|i| *i >= 20), "{asked:?}");
        assert_eq!(
            changes(&plan, &found),
            vec![
                ("a".into(), 6, 7, "not-resumable".into(), "woke".into()),
                ("a".into(), 22, 23, "woke".into(), "child-failed".into()),
            ]
        );
    }
}
