//! The minimizer against a fake subject and a fake oracle: what it keeps is exactly what the
//! oracle needs, each remaining unit is needed (1-minimal), invalid candidates are never
//! judged, no candidate is judged twice, and the budget holds.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use super::*;

/// Agents own steps; `main` cannot go, nor can an agent lose its last step.
#[derive(Debug, Clone, PartialEq)]
struct Fake {
    agents: Vec<&'static str>,
    /// (agent, step id)
    steps: Vec<(&'static str, u32)>,
    inputs: Vec<u32>,
    numbers: BTreeMap<String, f64>,
    long_texts: Vec<u32>,
}

impl Subject for Fake {
    fn units(&self, pass: Pass) -> Vec<String> {
        match pass {
            Pass::Agents => self.agents.iter().map(|a| a.to_string()).collect(),
            Pass::Steps => self.steps.iter().map(|(a, s)| format!("{a}#{s}")).collect(),
            Pass::Inputs => self.inputs.iter().map(|i| format!("input {i}")).collect(),
            Pass::Texts => self
                .long_texts
                .iter()
                .map(|t| format!("text {t}"))
                .collect(),
        }
    }

    fn without(&self, pass: Pass, removed: &[usize]) -> Option<Fake> {
        let mut next = self.clone();
        let keep = |i: usize| !removed.contains(&i);
        match pass {
            Pass::Agents => {
                next.agents = self
                    .agents
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| keep(*i))
                    .map(|(_, a)| *a)
                    .collect();
                if !next.agents.contains(&"main") {
                    return None;
                }
                next.steps.retain(|(a, _)| next.agents.contains(a));
            }
            Pass::Steps => {
                next.steps = self
                    .steps
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| keep(*i))
                    .map(|(_, s)| *s)
                    .collect();
                if next
                    .agents
                    .iter()
                    .any(|a| !next.steps.iter().any(|(b, _)| a == b))
                {
                    return None;
                }
            }
            Pass::Inputs => {
                next.inputs = self
                    .inputs
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| keep(*i))
                    .map(|(_, s)| *s)
                    .collect();
            }
            Pass::Texts => {
                next.long_texts = self
                    .long_texts
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| keep(*i))
                    .map(|(_, s)| *s)
                    .collect();
            }
        }
        Some(next)
    }

    fn numbers(&self) -> Vec<(String, f64)> {
        self.numbers.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }

    fn with_number(&self, name: &str, value: f64) -> Option<Fake> {
        let mut next = self.clone();
        next.numbers.insert(name.to_string(), value);
        Some(next)
    }

    fn integral(&self, name: &str) -> bool {
        name != "poll"
    }

    fn key(&self) -> String {
        format!("{self:?}")
    }

    fn size(&self) -> Size {
        Size {
            agents: self.agents.len(),
            steps: self.steps.len(),
            inputs: self.inputs.len(),
        }
    }
}

/// A padded subject: the bug needs worker's steps 7 and 13, main's step 1, input 2 and
/// `bg >= 6`; everything else is padding.
fn padded() -> Fake {
    let mut steps = vec![];
    for i in 0..25 {
        let agent = match i % 4 {
            0 | 1 => "main",
            2 => "worker",
            _ => "helper",
        };
        steps.push((agent, i));
    }
    steps.push(("worker", 7));
    steps.push(("worker", 13));
    steps.retain(|(a, s)| !(*s == 7 || *s == 13) || *a == "worker");
    Fake {
        agents: vec!["main", "worker", "helper", "extra"],
        steps: steps.into_iter().chain([("extra", 99)]).collect(),
        inputs: vec![1, 2, 3, 4],
        numbers: [("bg".to_string(), 60.0), ("poll".to_string(), 0.5)].into(),
        long_texts: vec![1, 2, 3],
    }
}

fn shows_the_bug(f: &Fake) -> bool {
    f.agents.contains(&"worker")
        && f.steps.contains(&("worker", 7))
        && f.steps.contains(&("worker", 13))
        && f.steps.contains(&("main", 1))
        && f.inputs.contains(&2)
        && f.numbers["bg"] >= 6.0
}

struct Judged {
    seen: BTreeSet<String>,
    batches: Vec<usize>,
}

async fn run(subject: Fake, budget: Budget) -> (Minimized<Fake>, Judged, Vec<Event>) {
    let judged = Arc::new(Mutex::new(Judged {
        seen: BTreeSet::new(),
        batches: vec![],
    }));
    let events = Arc::new(Mutex::new(Vec::new()));
    let j = judged.clone();
    let oracle = move |batch: Vec<Fake>| {
        let j = j.clone();
        async move {
            let mut j = j.lock().unwrap();
            j.batches.push(batch.len());
            let verdicts = batch
                .iter()
                .map(|c| {
                    assert!(j.seen.insert(c.key()), "judged twice: {c:?}");
                    assert!(
                        c.agents.iter().all(|a| c.steps.iter().any(|(b, _)| a == b)),
                        "invalid judged"
                    );
                    shows_the_bug(c)
                })
                .collect();
            Ok::<_, ()>(verdicts)
        }
    };
    let e = events.clone();
    let result = minimize(subject, budget, oracle, move |ev| {
        e.lock().unwrap().push(ev.clone())
    })
    .await
    .unwrap();
    let judged = Arc::try_unwrap(judged).ok().unwrap().into_inner().unwrap();
    let events = events.lock().unwrap().clone();
    (result, judged, events)
}

#[tokio::test]
async fn it_keeps_exactly_what_the_result_needs() {
    let budget = Budget {
        max_runs: 10_000,
        runs_per_candidate: 1,
        spent: 0,
    };
    let (m, judged, events) = run(padded(), budget).await;
    let s = &m.subject;
    assert_eq!(m.stop, Stop::FixedPoint);
    assert_eq!(s.agents, ["main", "worker"]);
    let mut steps = s.steps.clone();
    steps.sort();
    assert_eq!(steps, [("main", 1), ("worker", 7), ("worker", 13)]);
    assert_eq!(s.inputs, [2]);
    // bg shrank to 6, just above 5 which lost the bug, then was doubled for a margin over the
    // boundary between them. poll never lost it, so it needs no margin.
    assert_eq!(s.numbers["bg"], 12.0);
    assert!(s.numbers["poll"] <= 0.05, "{:?}", s.numbers);
    let margin = m.accepted.iter().any(|e| {
        matches!(e, Event::Accepted { pass, what, .. }
            if pass == "margin bg" && what == "bg = 12 (twice 6, the smallest value that kept the result; 5 lost it)")
    });
    assert!(margin, "{:#?}", m.accepted);
    assert!(s.long_texts.is_empty());
    // 1-minimal: removing any one remaining unit loses the bug (or is invalid).
    for pass in Pass::REMOVALS {
        for u in 0..s.units(pass).len() {
            if let Some(c) = s.without(pass, &[u]) {
                assert!(
                    !shows_the_bug(&c) || pass == Pass::Texts,
                    "{pass:?} {u} not needed"
                );
            }
        }
    }
    // Every accepted reduction was announced, and the counts add up.
    let accepted = events
        .iter()
        .filter(|e| matches!(e, Event::Accepted { .. }))
        .count();
    assert_eq!(accepted, m.accepted.len());
    assert_eq!(m.candidates, judged.seen.len());
    assert_eq!(m.runs as usize, judged.seen.len());
    assert!(
        m.skipped_invalid > 0,
        "the fake has invalid candidates to skip"
    );
    assert!(
        judged.batches.iter().any(|b| *b > 1),
        "candidates go in batches"
    );
    assert!(m.runs < 400, "{} runs", m.runs);
}

/// The margin never goes past the value minimization started from.
#[tokio::test]
async fn a_margin_stops_at_the_starting_value() {
    let budget = Budget {
        max_runs: 10_000,
        runs_per_candidate: 1,
        spent: 0,
    };
    let mut subject = padded();
    subject.numbers.insert("bg".into(), 8.0);
    let (m, _, _) = run(subject, budget).await;
    assert_eq!(m.subject.numbers["bg"], 8.0);
    assert!(shows_the_bug(&m.subject));
}

#[tokio::test]
async fn the_budget_holds_and_what_is_returned_still_shows_the_result() {
    let budget = Budget {
        max_runs: 30,
        runs_per_candidate: 3,
        spent: 0,
    };
    let (m, judged, _) = run(padded(), budget).await;
    assert_eq!(m.stop, Stop::Budget);
    assert!(m.runs <= 30, "{}", m.runs);
    assert_eq!(m.runs as usize, 3 * judged.seen.len());
    assert!(shows_the_bug(&m.subject));
    assert!(m.subject.steps.len() < padded().steps.len());
}

#[test]
fn chunks_are_even_and_options_cover_subsets_then_complements() {
    assert_eq!(split(&[0, 1, 2, 3, 4], 2), [vec![0, 1], vec![2, 3, 4]]);
    assert_eq!(split(&[0, 1, 2], 3), [vec![0], vec![1], vec![2]]);
    let opts = options(&split(&[0, 1, 2], 3));
    assert_eq!(
        opts,
        [
            vec![0],
            vec![1],
            vec![2],
            vec![1, 2],
            vec![0, 2],
            vec![0, 1]
        ]
    );
    assert_eq!(options(&[vec![5]]), [Vec::<usize>::new()]);
}
