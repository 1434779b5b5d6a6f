//! Minimizing a scenario while a run keeps showing the same result: delta debugging (Zeller's
//! ddmin) over the units of each pass (agents, then steps, then inputs), then shrinking each
//! numeric parameter toward smaller values that keep the result, then shortening texts; round
//! after round until a fixed point or the run budget. Last, each number that shrank to just
//! above a value that lost the result is doubled (a margin over the boundary between them), so
//! the minimal scenario still shows the result on a slower or busier machine.
//!
//! Pure: the subject (what can be removed or changed, and whether the result is still a valid
//! scenario) and the oracle (does a batch of candidates still show the result) are given by the
//! caller. Candidates of one batch are handed to the oracle together, so it can run them in
//! parallel; a candidate already judged is never judged again.

use std::collections::HashMap;
use std::future::Future;

/// What one pass of delta debugging removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pass {
    Agents,
    Steps,
    Inputs,
    /// Long texts (removing one shortens it).
    Texts,
}

impl Pass {
    pub const REMOVALS: [Pass; 4] = [Pass::Agents, Pass::Steps, Pass::Inputs, Pass::Texts];

    pub fn as_str(self) -> &'static str {
        match self {
            Pass::Agents => "agents",
            Pass::Steps => "steps",
            Pass::Inputs => "inputs",
            Pass::Texts => "texts",
        }
    }
}

/// How big a subject is, for the progress line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Size {
    pub agents: usize,
    pub steps: usize,
    pub inputs: usize,
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} agent(s), {} step(s), {} input(s)",
            self.agents, self.steps, self.inputs
        )
    }
}

/// What can be minimized.
pub trait Subject: Clone {
    /// The removable units of a pass, as labels a reader understands (`worker#2: Bash`).
    fn units(&self, pass: Pass) -> Vec<String>;
    /// This subject without the units (indices into [`Subject::units`]); `None` when that
    /// leaves no valid subject (such a candidate is skipped, never judged).
    fn without(&self, pass: Pass, removed: &[usize]) -> Option<Self>;
    /// The numbers that can shrink (parameters), by name.
    fn numbers(&self) -> Vec<(String, f64)>;
    fn with_number(&self, name: &str, value: f64) -> Option<Self>;
    /// Whether a number takes whole values only.
    fn integral(&self, name: &str) -> bool;
    /// The candidate's identity (equal keys: the same candidate).
    fn key(&self) -> String;
    fn size(&self) -> Size;
}

#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Runs allowed in all.
    pub max_runs: u32,
    /// Runs one candidate costs (`--repeat`).
    pub runs_per_candidate: u32,
    /// Runs already spent before minimizing (fixing the result to keep); they count.
    pub spent: u32,
}

/// What happened, as it happens.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// A batch of candidates is about to be judged.
    Batch {
        pass: String,
        candidates: usize,
        runs: u32,
        max_runs: u32,
    },
    /// A reduction kept the result and was taken.
    Accepted {
        pass: String,
        what: String,
        size: Size,
        runs: u32,
    },
}

/// Why minimization stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    /// No reduction kept the result any more.
    FixedPoint,
    /// The run budget is spent.
    Budget,
}

/// The outcome: the smallest subject found and what it took.
#[derive(Debug, Clone)]
pub struct Minimized<S> {
    pub subject: S,
    pub accepted: Vec<Event>,
    pub runs: u32,
    pub candidates: usize,
    pub skipped_invalid: usize,
    pub stop: Stop,
}

/// The machinery around the oracle: the cache, the budget, the log.
struct Search<S, F> {
    oracle: F,
    budget: Budget,
    cache: HashMap<String, bool>,
    runs: u32,
    candidates: usize,
    skipped_invalid: usize,
    accepted: Vec<Event>,
    on_event: Box<dyn FnMut(&Event) + Send>,
    out_of_budget: bool,
    /// Per number, the largest value its last shrinking saw lose the result.
    lost: HashMap<String, f64>,
    _subject: std::marker::PhantomData<S>,
}

impl<S, F, Fut, E> Search<S, F>
where
    S: Subject,
    F: FnMut(Vec<S>) -> Fut,
    Fut: Future<Output = Result<Vec<bool>, E>>,
{
    /// Judges candidates (cached ones from the cache), within the budget; the first that
    /// keeps the result, if any, by its index. `None` candidates are invalid: skipped.
    async fn first_passing(
        &mut self,
        pass: &str,
        candidates: &[Option<S>],
    ) -> Result<Option<usize>, E> {
        self.skipped_invalid += candidates.iter().filter(|c| c.is_none()).count();
        let mut fresh: Vec<(usize, S)> = Vec::new();
        for (i, c) in candidates.iter().enumerate() {
            if let Some(c) = c
                && !self.cache.contains_key(&c.key())
                && !fresh.iter().any(|(_, f)| f.key() == c.key())
            {
                fresh.push((i, c.clone()));
            }
        }
        let per = self.budget.runs_per_candidate.max(1);
        let affordable = (self.budget.max_runs.saturating_sub(self.runs) / per) as usize;
        if fresh.len() > affordable {
            fresh.truncate(affordable);
            self.out_of_budget = true;
        }
        if !fresh.is_empty() {
            (self.on_event)(&Event::Batch {
                pass: pass.to_string(),
                candidates: fresh.len(),
                runs: self.runs,
                max_runs: self.budget.max_runs,
            });
            let verdicts = (self.oracle)(fresh.iter().map(|(_, c)| c.clone()).collect()).await?;
            self.runs += per * fresh.len() as u32;
            self.candidates += fresh.len();
            for ((_, c), ok) in fresh.iter().zip(verdicts) {
                self.cache.insert(c.key(), ok);
            }
        }
        Ok(candidates.iter().position(|c| {
            c.as_ref()
                .is_some_and(|c| self.cache.get(&c.key()) == Some(&true))
        }))
    }

    fn accept(&mut self, pass: &str, what: String, subject: &S) {
        let event = Event::Accepted {
            pass: pass.to_string(),
            what,
            size: subject.size(),
            runs: self.runs,
        };
        (self.on_event)(&event);
        self.accepted.push(event);
    }

    /// ddmin over one pass's units; returns the reduced subject and whether it changed.
    async fn ddmin(&mut self, subject: S, pass: Pass) -> Result<(S, bool), E> {
        let labels = subject.units(pass);
        let mut kept: Vec<usize> = (0..labels.len()).collect();
        let mut current = subject.clone();
        let mut changed = false;
        let mut n = 2usize;
        while !kept.is_empty() && !self.out_of_budget {
            let chunks = split(&kept, n.min(kept.len()));
            let options = options(&chunks);
            let candidates: Vec<Option<S>> = options
                .iter()
                .map(|keep| {
                    let removed: Vec<usize> =
                        (0..labels.len()).filter(|u| !keep.contains(u)).collect();
                    subject.without(pass, &removed)
                })
                .collect();
            match self.first_passing(pass.as_str(), &candidates).await? {
                Some(i) => {
                    let gone: Vec<&str> = kept
                        .iter()
                        .filter(|u| !options[i].contains(u))
                        .map(|u| labels[*u].as_str())
                        .collect();
                    let verb = if pass == Pass::Texts {
                        "shortened"
                    } else {
                        "removed"
                    };
                    kept = options[i].clone();
                    current = candidates[i].clone().expect("a passing candidate is valid");
                    changed = true;
                    self.accept(
                        pass.as_str(),
                        format!("{verb} {}", gone.join(", ")),
                        &current,
                    );
                    // Reduced to a subset: start over at two chunks; to a complement: one
                    // chunk fewer.
                    n = if chunks.len() > 2 && i < chunks.len() {
                        2
                    } else {
                        (n.saturating_sub(1)).max(2)
                    };
                }
                None if n >= kept.len() => break,
                None => n = (2 * n).min(kept.len()),
            }
        }
        Ok((current, changed))
    }

    /// Shrinks each number toward smaller values that keep the result.
    async fn shrink_numbers(&mut self, mut subject: S) -> Result<(S, bool), E> {
        let mut changed = false;
        for (name, start) in subject.numbers() {
            if start <= 0.0 || self.out_of_budget {
                continue;
            }
            let integral = subject.integral(&name);
            let round = |v: f64| {
                if integral {
                    v.floor()
                } else {
                    (v * 100.0).round() / 100.0
                }
            };
            let mut best = start;
            let mut below = 0.0f64;
            let mut ladder: Vec<f64> = [2.0, 4.0, 8.0, 16.0]
                .iter()
                .map(|d| round(start / d))
                .collect();
            ladder.dedup();
            loop {
                ladder.retain(|v| *v < best && *v >= below);
                if ladder.is_empty() || self.out_of_budget {
                    break;
                }
                let candidates: Vec<Option<S>> = ladder
                    .iter()
                    .map(|v| subject.with_number(&name, *v))
                    .collect();
                // The smallest value that keeps the result.
                let mut order: Vec<usize> = (0..ladder.len()).collect();
                order.sort_by(|a, b| ladder[*a].total_cmp(&ladder[*b]));
                let sorted: Vec<Option<S>> = order.iter().map(|i| candidates[*i].clone()).collect();
                match self
                    .first_passing(&format!("number {name}"), &sorted)
                    .await?
                {
                    Some(k) => {
                        let value = ladder[order[k]];
                        below = order[..k].iter().map(|i| ladder[*i]).fold(below, f64::max);
                        best = value;
                        subject = sorted[k].clone().expect("valid");
                        changed = true;
                        self.accept(
                            &format!("number {name}"),
                            format!("{name} = {}", fmt_number(value)),
                            &subject,
                        );
                    }
                    None => below = below.max(ladder.iter().copied().fold(0.0, f64::max)),
                }
                let gap = best - below;
                let step = if integral {
                    1.0
                } else {
                    (best * 0.05).max(0.05)
                };
                if gap <= step {
                    break;
                }
                ladder = (1..=3)
                    .map(|k| round(below + gap * k as f64 / 4.0))
                    .filter(|v| *v > below)
                    .collect();
                ladder.dedup();
            }
            if below > 0.0 {
                self.lost.insert(name, below);
            } else {
                self.lost.remove(&name);
            }
        }
        Ok((subject, changed))
    }

    /// Doubles each number that shrank to just above a value that lost the result (never past
    /// where it started), when that still keeps the result: the boundary lies between the two,
    /// so twice the smallest value that kept the result is at least twice the boundary, and a
    /// timing boundary moves with the machine's load: a repro at its edge is a flaky one.
    async fn keep_margins(
        &mut self,
        mut subject: S,
        origin: &HashMap<String, f64>,
    ) -> Result<S, E> {
        for (name, value) in subject.numbers() {
            let (Some(&lost), Some(&start)) = (self.lost.get(&name), origin.get(&name)) else {
                continue;
            };
            let twice = (2.0 * value * 100.0).round() / 100.0;
            let target = twice.min(start);
            if target <= value || self.out_of_budget {
                continue;
            }
            let candidate = [subject.with_number(&name, target)];
            if self
                .first_passing(&format!("margin {name}"), &candidate)
                .await?
                == Some(0)
            {
                subject = candidate[0].clone().expect("valid");
                self.accept(
                    &format!("margin {name}"),
                    format!(
                        "{name} = {} (twice {}, the smallest value that kept the result; {} lost it)",
                        fmt_number(target),
                        fmt_number(value),
                        fmt_number(lost)
                    ),
                    &subject,
                );
            }
        }
        Ok(subject)
    }
}

fn fmt_number(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// What to try keeping at one granularity: each chunk alone (when there are more than two),
/// then everything but each chunk. A single unit: nothing.
fn options(chunks: &[Vec<usize>]) -> Vec<Vec<usize>> {
    if chunks.len() == 1 && chunks[0].len() == 1 {
        return vec![vec![]];
    }
    let mut out: Vec<Vec<usize>> = Vec::new();
    if chunks.len() > 2 {
        out.extend(chunks.iter().cloned());
    }
    for i in 0..chunks.len() {
        out.push(
            chunks
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .flat_map(|(_, c)| c.iter().copied())
                .collect(),
        );
    }
    out
}

/// `items` in `n` nearly equal consecutive chunks.
fn split(items: &[usize], n: usize) -> Vec<Vec<usize>> {
    let n = n.max(1);
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..n {
        let end = start + (items.len() - start) / (n - i);
        out.push(items[start..end].to_vec());
        start = end;
    }
    out.retain(|c| !c.is_empty());
    out
}

/// Minimizes `subject`: passes and number shrinking, round after round, until nothing more
/// can go or the budget is spent. The oracle says, for each candidate of a batch, whether it
/// still shows the result.
pub async fn minimize<S, F, Fut, E>(
    subject: S,
    budget: Budget,
    oracle: F,
    on_event: impl FnMut(&Event) + Send + 'static,
) -> Result<Minimized<S>, E>
where
    S: Subject,
    F: FnMut(Vec<S>) -> Fut,
    Fut: Future<Output = Result<Vec<bool>, E>>,
{
    let mut search = Search {
        oracle,
        budget,
        cache: HashMap::new(),
        runs: budget.spent,
        candidates: 0,
        skipped_invalid: 0,
        accepted: Vec::new(),
        on_event: Box::new(on_event),
        out_of_budget: false,
        lost: HashMap::new(),
        _subject: std::marker::PhantomData,
    };
    search.cache.insert(subject.key(), true);
    let origin: HashMap<String, f64> = subject.numbers().into_iter().collect();
    let mut current = subject;
    loop {
        let mut changed = false;
        for pass in [Pass::Agents, Pass::Steps, Pass::Inputs] {
            let (next, c) = search.ddmin(current, pass).await?;
            current = next;
            changed |= c;
        }
        let (next, c) = search.shrink_numbers(current).await?;
        current = next;
        changed |= c;
        let (next, c) = search.ddmin(current, Pass::Texts).await?;
        current = next;
        changed |= c;
        if search.out_of_budget || !changed {
            break;
        }
    }
    let current = search.keep_margins(current, &origin).await?;
    Ok(Minimized {
        subject: current,
        accepted: search.accepted,
        runs: search.runs,
        candidates: search.candidates,
        skipped_invalid: search.skipped_invalid,
        stop: if search.out_of_budget {
            Stop::Budget
        } else {
            Stop::FixedPoint
        },
    })
}

pub mod candidate;
pub mod outputs;
#[cfg(test)]
mod tests;
