//! Bisection over published versions by verdict, as cargo-bisect-rustc does it: confirm that the
//! two ends really differ, then binary-search the versions between them, each step run with
//! `--repeat` to resist flakiness, and name the first version whose verdict differs.
//!
//! The search is generic over how one version is judged, so the logic is tested without running
//! anything; `wakeprobe bisect` plugs in real runs.

use std::future::Future;

use crate::classify::Outcome;
use crate::report::plural;

/// One version's judgement during the search.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub version: String,
    /// The agreed outcome; `None` when the repetitions disagreed.
    pub outcome: Option<Outcome>,
    pub agreement: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BisectReport {
    pub good: Probe,
    pub bad: Probe,
    /// The last version that still behaves like `good`.
    pub last_good: String,
    /// The first version whose verdict differs from `good`'s.
    pub first_bad: Probe,
    /// Every version run, in order (the two ends first).
    pub steps: Vec<Probe>,
    /// Versions strictly between the ends.
    pub candidates: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum BisectError {
    #[error("{0} is not in the version list")]
    NotListed(String),
    #[error("--good {good} must come before --bad {bad} in version order")]
    Order { good: String, bad: String },
    #[error("both ends agree ({good}: {good_verdict}; {bad}: {bad_verdict}): nothing to bisect")]
    Agree {
        good: String,
        good_verdict: String,
        bad: String,
        bad_verdict: String,
    },
    #[error("{version}: {message}")]
    Run { version: String, message: String },
}

/// The positions of `good` and `bad` in `versions` (ordered oldest first): both listed, and
/// `good` older. Checked before anything runs, and again by [`bisect`].
pub fn ends(versions: &[String], good: &str, bad: &str) -> Result<(usize, usize), BisectError> {
    let index = |v: &str| {
        versions
            .iter()
            .position(|x| x == v)
            .ok_or_else(|| BisectError::NotListed(v.to_string()))
    };
    let (lo, hi) = (index(good)?, index(bad)?);
    if lo >= hi {
        return Err(BisectError::Order {
            good: good.into(),
            bad: bad.into(),
        });
    }
    Ok((lo, hi))
}

/// Binary search over `versions` (ordered oldest first) between `good` and `bad`.
pub async fn bisect<F, Fut>(
    versions: &[String],
    good: &str,
    bad: &str,
    mut judge: F,
) -> Result<BisectReport, BisectError>
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<Probe, String>>,
{
    let (mut lo, mut hi) = ends(versions, good, bad)?;
    let mut run = |v: String| {
        let fut = judge(v.clone());
        async move {
            fut.await.map_err(|message| BisectError::Run {
                version: v,
                message,
            })
        }
    };
    let good_probe = run(versions[lo].clone()).await?;
    let bad_probe = run(versions[hi].clone()).await?;
    if good_probe.outcome == bad_probe.outcome {
        return Err(BisectError::Agree {
            good: good.into(),
            good_verdict: good_probe.agreement.clone(),
            bad: bad.into(),
            bad_verdict: bad_probe.agreement.clone(),
        });
    }
    let mut steps = vec![good_probe.clone(), bad_probe.clone()];
    let candidates = hi - lo - 1;
    let mut first_bad = bad_probe.clone();
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let probe = run(versions[mid].clone()).await?;
        steps.push(probe.clone());
        // Anything that is not the good verdict (another verdict, or flaky) counts as changed.
        if probe.outcome.is_some() && probe.outcome == good_probe.outcome {
            lo = mid;
        } else {
            hi = mid;
            first_bad = probe;
        }
    }
    Ok(BisectReport {
        last_good: versions[lo].clone(),
        good: good_probe,
        bad: bad_probe,
        first_bad,
        steps,
        candidates,
    })
}

impl BisectReport {
    /// A paragraph ready for an issue.
    pub fn paragraph(&self, scenario: &str) -> String {
        let verdict = |p: &Probe| {
            p.outcome
                .map(|o| o.to_string())
                .unwrap_or_else(|| "flaky".into())
        };
        format!(
            "Bisected `{scenario}` between {} (`{}`, {}) and {} (`{}`, {}), both confirmed first. Over the {} between them, {} found the change: the verdict is `{}` up to **{}** and `{}` from **{}** on ({}).",
            self.good.version,
            verdict(&self.good),
            self.good.agreement,
            self.bad.version,
            verdict(&self.bad),
            self.bad.agreement,
            plural(self.candidates, "published version", "published versions"),
            plural(self.steps.len(), "run", "runs"),
            verdict(&self.good),
            self.last_good,
            verdict(&self.first_bad),
            self.first_bad.version,
            self.first_bad.agreement,
        )
    }
}

/// The bisection as a JUnit case: passed with its paragraph, or failed with why it stopped.
pub fn junit_case(
    title: &str,
    found: &Result<BisectReport, BisectError>,
) -> crate::classify::result::ExtraCase {
    let (failure, system_out) = match found {
        Ok(report) => (
            None,
            format!(
                "first version whose verdict differs: {}\n{}\n",
                report.first_bad.version,
                report.paragraph(title)
            ),
        ),
        Err(e) => (Some(("bisect".to_string(), e.to_string())), String::new()),
    };
    crate::classify::result::ExtraCase {
        name: format!("bisect {title}"),
        classname: "wakeprobe.bisect".into(),
        failure,
        system_out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("1.0.{i}")).collect()
    }

    async fn judge_with_change_at(change: usize, v: String) -> Result<Probe, String> {
        let i: usize = v.rsplit('.').next().unwrap().parse().unwrap();
        let outcome = if i < change {
            Outcome::NotResumable
        } else {
            Outcome::Woke
        };
        Ok(Probe {
            version: v,
            outcome: Some(outcome),
            agreement: format!("{outcome} 3/3"),
        })
    }

    #[tokio::test]
    async fn finds_every_planted_change_in_log2_steps() {
        for n in [2usize, 3, 5, 16, 33] {
            for change in 1..n {
                let list = versions(n);
                let r = bisect(&list, &list[0], &list[n - 1], |v| {
                    judge_with_change_at(change, v)
                })
                .await
                .unwrap();
                assert_eq!(r.first_bad.version, format!("1.0.{change}"));
                assert_eq!(r.last_good, format!("1.0.{}", change - 1));
                let bound = 2 + (n as f64 - 1.0).log2().ceil() as usize;
                assert!(
                    r.steps.len() <= bound,
                    "n={n} change={change}: {} steps > {bound}",
                    r.steps.len()
                );
            }
        }
    }

    #[tokio::test]
    async fn agreeing_ends_and_bad_order_are_refused() {
        let list = versions(8);
        let e = bisect(&list, "1.0.5", "1.0.7", |v| judge_with_change_at(3, v))
            .await
            .unwrap_err();
        assert!(matches!(e, BisectError::Agree { .. }), "{e}");
        let e = bisect(&list, "1.0.7", "1.0.1", |v| judge_with_change_at(3, v))
            .await
            .unwrap_err();
        assert!(matches!(e, BisectError::Order { .. }));
        let e = bisect(&list, "9.9.9", "1.0.1", |v| judge_with_change_at(3, v))
            .await
            .unwrap_err();
        assert!(matches!(e, BisectError::NotListed(_)));
    }
}
