//! Where a numeric scenario parameter flips the verdict: a binary search on a grid of
//! `precision` steps between two values whose verdicts differ, every probe run `--repeat` times.
//!
//! The answer is an interval, not a number: the largest value that still shows the low end's
//! verdict, the smallest that shows the high end's, and whatever was seen between them (flaky
//! mixes, or a third verdict) with its counts. Two boundary searches find it: first where the
//! low end's verdict stops, then where the high end's starts; with a sharp flip the second
//! search costs nothing. Generic over how one value is judged, like `bisect`, so the search is
//! tested without running anything; `wakeprobe threshold` plugs in real runs.

use std::collections::BTreeMap;
use std::future::Future;

use serde::{Deserialize, Serialize};

use crate::classify::{self, Outcome};

/// The most grid points a search may span (a precision far finer than runs can resolve).
pub const MAX_STEPS: u64 = 100_000;

/// One value's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Probe {
    pub value: f64,
    pub outcomes: Vec<Outcome>,
    /// The agreed verdict; `None` when the runs disagree (flaky).
    pub agreed: Option<Outcome>,
    /// `woke 3/3`, or `flaky: woke 2/3, not-resumable 1/3`.
    pub agreement: String,
}

impl Probe {
    pub fn new(value: f64, outcomes: Vec<Outcome>) -> Probe {
        let (agreed, agreement) = classify::agreement(&outcomes);
        Probe {
            value,
            outcomes,
            agreed,
            agreement,
        }
    }

    /// `woke`, or `flaky`.
    pub fn verdict(&self) -> String {
        self.agreed
            .map(|o| o.to_string())
            .unwrap_or_else(|| "flaky".into())
    }
}

/// The search's ends and step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Settings {
    pub from: f64,
    pub to: f64,
    pub precision: f64,
}

/// The flip, as an interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Threshold {
    pub settings: Settings,
    /// The runs at `from` and at `to`.
    pub low: Probe,
    pub high: Probe,
    /// The largest value that still shows the low end's verdict.
    pub below: Probe,
    /// The smallest value that shows the high end's verdict.
    pub above: Probe,
    /// Values probed strictly between `below` and `above` (flaky, or another verdict).
    pub between: Vec<Probe>,
    /// Every value run, in the order run.
    pub probes: Vec<Probe>,
}

pub const THRESHOLD_SCHEMA: u32 = 1;

/// `threshold.json`: what was searched, on which CLI, and the flip found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThresholdFile {
    pub schema: u32,
    pub scenario: String,
    pub variant: String,
    pub param: String,
    /// The CLI as labelled in the runs (`claude-2.1.332`, `sim-finalize-on-turn-end`).
    pub cli: String,
    /// Runs per probed value.
    pub repeat: u32,
    /// The other `--set` values every run had.
    pub sets: Vec<(String, String)>,
    pub threshold: Threshold,
}

/// Checks the settings without running anything.
pub fn check(settings: Settings) -> Result<(), ThresholdError> {
    Grid::new(settings).map(drop)
}

/// A round grid step for a span: about a hundredth of it, rounded down to a power of ten.
pub fn default_precision(from: f64, to: f64) -> f64 {
    let span = (to - from).abs().max(f64::MIN_POSITIVE);
    10f64.powf((span / 50.0).log10().floor())
}

#[derive(Debug, thiserror::Error)]
pub enum ThresholdError {
    #[error("--from {from} must be below --to {to}")]
    Order { from: f64, to: f64 },
    #[error(
        "--precision {precision} must be above zero and divide {from}..{to} into at most {MAX_STEPS} steps"
    )]
    Precision { from: f64, to: f64, precision: f64 },
    #[error("both ends agree ({from}: {low}; {to}: {high}): no flip between them to search")]
    Agree {
        from: f64,
        to: f64,
        low: String,
        high: String,
    },
    /// An end whose runs disagree marks no side of the flip: the search would start from it.
    #[error(
        "the end at {value} is flaky ({agreement}): choose ends where the runs agree (move it away from the flip)"
    )]
    FlakyEnd { value: f64, agreement: String },
    #[error("{value}: {message}")]
    Run { value: f64, message: String },
}

/// The grid: point `k` is `from + k * precision`, the last point is `to`, each rounded to the
/// decimals the inputs use (so probes read `4.9`, not `4.8999999`).
#[derive(Debug, Clone, Copy)]
struct Grid {
    settings: Settings,
    steps: u64,
    decimals: i32,
}

impl Grid {
    fn new(s: Settings) -> Result<Grid, ThresholdError> {
        if s.from.partial_cmp(&s.to) != Some(std::cmp::Ordering::Less)
            || !s.from.is_finite()
            || !s.to.is_finite()
        {
            return Err(ThresholdError::Order {
                from: s.from,
                to: s.to,
            });
        }
        let span = (s.to - s.from) / s.precision;
        if s.precision.is_nan()
            || s.precision <= 0.0
            || !span.is_finite()
            || span > MAX_STEPS as f64
        {
            return Err(ThresholdError::Precision {
                from: s.from,
                to: s.to,
                precision: s.precision,
            });
        }
        let decimals = [s.from, s.to, s.precision]
            .into_iter()
            .map(decimals)
            .max()
            .unwrap_or(0);
        Ok(Grid {
            settings: s,
            steps: (span - 1e-9).ceil().max(1.0) as u64,
            decimals,
        })
    }

    fn value(&self, k: u64) -> f64 {
        if k >= self.steps {
            return self.settings.to;
        }
        let x = self.settings.from + k as f64 * self.settings.precision;
        let scale = 10f64.powi(self.decimals);
        (x * scale).round() / scale
    }
}

/// How many decimals a number needs (up to 9).
fn decimals(x: f64) -> i32 {
    (0..9)
        .find(|d| {
            let scaled = x * 10f64.powi(*d);
            (scaled - scaled.round()).abs() < 1e-6
        })
        .unwrap_or(9)
}

/// The search's memory: every grid point run so far.
struct Runs<F> {
    grid: Grid,
    judge: F,
    seen: BTreeMap<u64, Probe>,
    order: Vec<Probe>,
}

impl<F, Fut> Runs<F>
where
    F: FnMut(f64) -> Fut,
    Fut: Future<Output = Result<Vec<Outcome>, String>>,
{
    async fn at(&mut self, k: u64) -> Result<Probe, ThresholdError> {
        if let Some(p) = self.seen.get(&k) {
            return Ok(p.clone());
        }
        let value = self.grid.value(k);
        let outcomes = (self.judge)(value)
            .await
            .map_err(|message| ThresholdError::Run { value, message })?;
        let probe = Probe::new(value, outcomes);
        self.seen.insert(k, probe.clone());
        self.order.push(probe.clone());
        Ok(probe)
    }

    /// Narrows `lo < hi` to adjacent grid points, keeping `keeps_lo(probe at lo)` true and
    /// `keeps_lo(probe at hi)` false.
    async fn boundary(
        &mut self,
        mut lo: u64,
        mut hi: u64,
        keeps_lo: impl Fn(&Probe) -> bool,
    ) -> Result<(u64, u64), ThresholdError> {
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if keeps_lo(&self.at(mid).await?) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok((lo, hi))
    }
}

/// Searches `[from, to]` for the flip between the two ends' verdicts.
pub async fn search<F, Fut>(settings: Settings, judge: F) -> Result<Threshold, ThresholdError>
where
    F: FnMut(f64) -> Fut,
    Fut: Future<Output = Result<Vec<Outcome>, String>>,
{
    let grid = Grid::new(settings)?;
    let mut runs = Runs {
        grid,
        judge,
        seen: BTreeMap::new(),
        order: Vec::new(),
    };
    let last = grid.steps;
    let low = runs.at(0).await?;
    let high = runs.at(last).await?;
    if let Some(end) = [&low, &high].into_iter().find(|p| p.agreed.is_none()) {
        return Err(ThresholdError::FlakyEnd {
            value: end.value,
            agreement: end.agreement.clone(),
        });
    }
    if low.agreed == high.agreed {
        return Err(ThresholdError::Agree {
            from: settings.from,
            to: settings.to,
            low: low.agreement,
            high: high.agreement,
        });
    }
    // Where the low end's verdict stops...
    let (below, first_other) = runs.boundary(0, last, |p| p.agreed == low.agreed).await?;
    // ...and where the high end's starts: from the first point past `below` that shows it.
    let start_high = *runs
        .seen
        .range(first_other..)
        .find(|(_, p)| p.agreed == high.agreed)
        .map(|(k, _)| k)
        .unwrap_or(&last);
    let (_, above) = runs
        .boundary(below, start_high, |p| p.agreed != high.agreed)
        .await?;
    let between = runs
        .seen
        .range(below + 1..above)
        .map(|(_, p)| p.clone())
        .collect();
    Ok(Threshold {
        settings,
        below: runs.seen[&below].clone(),
        above: runs.seen[&above].clone(),
        low,
        high,
        between,
        probes: runs.order,
    })
}

impl Threshold {
    /// `not-resumable` at 5.1 and above ..., `woke` at 4.9 and below ..., in between ...
    pub fn lines(&self, param: &str) -> Vec<String> {
        let mut lines = vec![format!(
            "`{}` at {param} = {} and below ({}); `{}` at {} and above ({})",
            self.below.verdict(),
            self.below.value,
            self.below.agreement,
            self.above.verdict(),
            self.above.value,
            self.above.agreement,
        )];
        if self.between.is_empty() {
            lines.push(format!(
                "the verdict flips between {} and {} (precision {})",
                self.below.value, self.above.value, self.settings.precision
            ));
        } else {
            lines.push(format!(
                "between {} and {}: {}",
                self.below.value,
                self.above.value,
                self.between
                    .iter()
                    .map(|p| format!("{} {}", p.value, p.agreement))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        lines.push(format!(
            "{} value(s) probed, {} run(s)",
            self.probes.len(),
            self.probes.iter().map(|p| p.outcomes.len()).sum::<usize>()
        ));
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    const SETTINGS: Settings = Settings {
        from: 1.0,
        to: 12.0,
        precision: 0.1,
    };

    /// A sharp flip at `at` (woke below, not-resumable from it on), `n` runs each.
    fn sharp(at: f64, value: f64) -> Vec<Outcome> {
        let o = if value < at {
            Outcome::Woke
        } else {
            Outcome::NotResumable
        };
        vec![o; 3]
    }

    #[tokio::test]
    async fn a_sharp_flip_is_found_to_the_precision_in_log2_probes() {
        for at in [1.05, 2.0, 4.95, 5.05, 7.33, 11.95] {
            let calls = Cell::new(0);
            let t = search(SETTINGS, |v| {
                calls.set(calls.get() + 1);
                async move { Ok(sharp(at, v)) }
            })
            .await
            .unwrap();
            assert!(t.below.value < at && at <= t.above.value, "{at}: {t:?}");
            assert!(
                (t.above.value - t.below.value - 0.1).abs() < 1e-9,
                "{at}: one step apart: {} {}",
                t.below.value,
                t.above.value
            );
            assert!(t.between.is_empty());
            assert_eq!(t.below.agreed, Some(Outcome::Woke));
            assert_eq!(t.above.agreed, Some(Outcome::NotResumable));
            // 110 steps: both ends, then ceil(log2(110)) = 7.
            assert!(calls.get() <= 2 + 7, "{at}: {} probes", calls.get());
            assert_eq!(calls.get(), t.probes.len(), "each value is run once");
        }
    }

    #[tokio::test]
    async fn a_flaky_band_is_reported_between_with_its_counts() {
        // Woke below 4.85, flaky up to 5.25, not-resumable from 5.25 on.
        let judge = |v: f64| async move {
            Ok(if v < 4.85 {
                vec![Outcome::Woke; 3]
            } else if v < 5.25 {
                vec![Outcome::Woke, Outcome::NotResumable, Outcome::Woke]
            } else {
                vec![Outcome::NotResumable; 3]
            })
        };
        let t = search(SETTINGS, judge).await.unwrap();
        assert_eq!(t.below.value, 4.8, "{t:?}");
        assert_eq!(t.above.value, 5.3, "{t:?}");
        assert!(!t.between.is_empty());
        for p in &t.between {
            assert!(p.value > 4.8 && p.value < 5.3);
            assert_eq!(p.agreed, None);
            assert_eq!(p.agreement, "flaky: woke 2/3, not-resumable 1/3");
        }
        let text = t.lines("bg_seconds").join("\n");
        assert!(
            text.contains("`woke` at bg_seconds = 4.8 and below (woke 3/3)")
                && text.contains("`not-resumable` at 5.3 and above (not-resumable 3/3)")
                && text.contains("flaky: woke 2/3, not-resumable 1/3"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn the_other_orientation_and_agreeing_ends() {
        let t = search(SETTINGS, |v| async move {
            Ok(vec![
                if v < 3.0 {
                    Outcome::NotResumable
                } else {
                    Outcome::Woke
                };
                2
            ])
        })
        .await
        .unwrap();
        assert_eq!((t.below.value, t.above.value), (2.9, 3.0));
        let e = search(SETTINGS, |_| async { Ok(vec![Outcome::Woke]) })
            .await
            .unwrap_err();
        assert!(matches!(e, ThresholdError::Agree { .. }), "{e}");
    }

    #[tokio::test]
    async fn a_flaky_end_is_refused_rather_than_taken_for_a_side() {
        // Measured on the real CLI under load: bg_seconds=2 gave woke 1/2, not-resumable 1/2.
        let flip = |v: f64| async move {
            Ok(if v <= 1.0 {
                vec![Outcome::Woke, Outcome::NotResumable]
            } else {
                vec![Outcome::NotResumable; 2]
            })
        };
        let e = search(SETTINGS, flip).await.unwrap_err();
        assert!(
            matches!(&e, ThresholdError::FlakyEnd { value, .. } if *value == 1.0),
            "{e}"
        );
        assert!(e.to_string().contains("flaky"), "{e}");
    }

    #[tokio::test]
    async fn bad_settings_are_refused_before_any_run() {
        let calls = Cell::new(0);
        let judge = |_| {
            calls.set(calls.get() + 1);
            async { Ok(vec![Outcome::Woke]) }
        };
        for (from, to, precision) in [(5.0, 5.0, 0.1), (6.0, 1.0, 0.1), (1.0, 2.0, 0.0)] {
            let e = search(
                Settings {
                    from,
                    to,
                    precision,
                },
                judge,
            )
            .await
            .unwrap_err();
            assert!(
                matches!(
                    e,
                    ThresholdError::Order { .. } | ThresholdError::Precision { .. }
                ),
                "{e}"
            );
        }
        let e = search(
            Settings {
                from: 0.0,
                to: 1e9,
                precision: 1.0,
            },
            judge,
        )
        .await
        .unwrap_err();
        assert!(matches!(e, ThresholdError::Precision { .. }));
        assert_eq!(calls.get(), 0);
    }

    #[test]
    fn default_precisions_are_round() {
        assert_eq!(default_precision(1.0, 12.0), 0.1);
        assert_eq!(default_precision(0.0, 90.0), 1.0);
        assert_eq!(default_precision(0.0, 1.0), 0.01);
    }

    #[test]
    fn grid_points_read_as_written() {
        let g = Grid::new(SETTINGS).unwrap();
        assert_eq!(g.steps, 110);
        assert_eq!(g.value(39), 4.9);
        assert_eq!(g.value(110), 12.0);
        let odd = Grid::new(Settings {
            from: 1.0,
            to: 2.0,
            precision: 0.3,
        })
        .unwrap();
        assert_eq!(odd.steps, 4, "1, 1.3, 1.6, 1.9, 2");
        assert_eq!(odd.value(3), 1.9);
        assert_eq!(odd.value(4), 2.0);
    }
}
