//! The relations a query observes, over the events its selectors pick. Every function returns
//! the observed value, the events that show it, a paragraph saying why, and whether the unseen
//! rest of a cut-short run could change it.

use regex::Regex;

use super::prose::{self, at, witness};
use super::view::{EventView, as_text, lookup};
use super::{Evidence, Observation, Settled};
use crate::evidence::secs;
use crate::scenario::query::{FieldPath, GroupBy, Query, Selector, Which};

/// Observes a query on the evidence.
pub fn evaluate(ev: &Evidence, query: &Query) -> Observation {
    let views = EventView::all(ev);
    let pick =
        |s: &Selector| -> Vec<&EventView> { views.iter().filter(|v| v.matches(s)).collect() };
    match query {
        Query::Count { of } => count(&pick(of), of),
        Query::Exists { of } => exists(&pick(of), of, true),
        Query::Absent { of } => exists(&pick(of), of, false),
        Query::Before { first, then } => before(&pick(first), &pick(then), first, then),
        Query::Within {
            after,
            then,
            seconds,
        } => within(&pick(after), &pick(then), (after, then), *seconds, &views),
        Query::Pairs { each, with, by } => pairs(&pick(each), &pick(with), (each, with), *by),
        Query::While { count, from, until } => while_holds(
            &pick(count),
            &pick(from),
            until.as_ref().map(&pick).unwrap_or_default(),
            (count, from),
        ),
        Query::Value {
            at,
            path,
            which,
            capture,
        } => value(&pick(at), at, path, *which, capture.as_deref()),
        Query::Followed { each, by, unless } => {
            followed(&pick(each), &views, (each, by, unless.as_ref()))
        }
        Query::Gap { from, to } => gap(&pick(from), &pick(to), (from, to)),
    }
}

/// Seconds from the first `from` to the first `to` after it in the timeline's order.
fn gap(a: &[&EventView], b: &[&EventView], (from, to): (&Selector, &Selector)) -> Observation {
    let (fa, fb) = (prose::selector(from), prose::selector(to));
    let Some(a0) = a.first() else {
        return observation(
            "not-observed",
            vec![],
            format!("No {fa} in the run, so there is no gap to measure."),
            Settled::Open,
        );
    };
    let Some(b0) = b.iter().find(|v| v.index > a0.index) else {
        return observation(
            "not-observed",
            vec![witness(a0)],
            format!(
                "The first of the {fa} came {}, and no {fb} followed it, so there is no gap to measure.",
                at(a0)
            ),
            Settled::Open,
        );
    };
    let seconds = (b0.event.t_ms - a0.event.t_ms) / 1000.0;
    observation(
        format!("{seconds:.3}"),
        vec![witness(a0), witness(b0)],
        format!(
            "The first of the {fb} after the first of the {fa} came {} after it ({} to {}).",
            secs(b0.event.t_ms - a0.event.t_ms),
            at(a0),
            at(b0)
        ),
        Settled::Final,
    )
}

fn observation(
    observed: impl Into<String>,
    witness: Vec<crate::evidence::Witness>,
    explanation: String,
    settled: Settled,
) -> Observation {
    Observation {
        observed: observed.into(),
        witness,
        explanation,
        settled,
    }
}

/// "once", "twice", "3 times".
fn times(n: usize) -> String {
    match n {
        1 => "once".into(),
        2 => "twice".into(),
        n => format!("{n} times"),
    }
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn count(found: &[&EventView], of: &Selector) -> Observation {
    let what = prose::selector(of);
    let explanation = match found.first() {
        None => format!("No {what} in the run."),
        Some(first) => format!(
            "{what}: {} in the run, the first {}.",
            found.len(),
            at(first)
        ),
    };
    observation(
        found.len().to_string(),
        found.iter().take(3).map(|v| witness(v)).collect(),
        explanation,
        Settled::Growing,
    )
}

/// `exists` (`want = true`) or `absent` (`want = false`).
fn exists(found: &[&EventView], of: &Selector, want: bool) -> Observation {
    let what = prose::selector(of);
    let (explanation, settled) = match found.first() {
        None => (format!("No {what} in the run."), Settled::Open),
        Some(first) => (
            format!(
                "{} {what} in the run, the first {}.",
                found.len(),
                at(first)
            ),
            Settled::Final,
        ),
    };
    observation(
        yes_no(found.is_empty() != want),
        found.first().map(|v| witness(v)).into_iter().collect(),
        explanation,
        settled,
    )
}

fn before(a: &[&EventView], b: &[&EventView], first: &Selector, then: &Selector) -> Observation {
    let (fa, fb) = (prose::selector(first), prose::selector(then));
    let Some(b0) = b.first() else {
        return observation(
            "not-observed",
            a.first().map(|v| witness(v)).into_iter().collect(),
            format!("No {fb} in the run, so there is no order to tell."),
            Settled::Open,
        );
    };
    match a.first() {
        Some(a0) if a0.index < b0.index => observation(
            "yes",
            vec![witness(a0), witness(b0)],
            format!(
                "The first of the {fa} ({}) came before the first of the {fb} ({}).",
                at(a0),
                at(b0)
            ),
            Settled::Final,
        ),
        Some(a0) => observation(
            "no",
            vec![witness(b0), witness(a0)],
            format!(
                "The first of the {fb} ({}) came before the first of the {fa} ({}).",
                at(b0),
                at(a0)
            ),
            Settled::Final,
        ),
        None => observation(
            "no",
            vec![witness(b0)],
            format!(
                "The first of the {fb} came {} with no {fa} before it.",
                at(b0)
            ),
            Settled::Final,
        ),
    }
}

fn within(
    a: &[&EventView],
    b: &[&EventView],
    (after, then): (&Selector, &Selector),
    seconds: Option<f64>,
    all: &[EventView],
) -> Observation {
    let (fa, fb) = (prose::selector(after), prose::selector(then));
    let Some(a0) = a.first() else {
        return observation(
            "not-observed",
            vec![],
            format!("No {fa} in the run, so nothing had to follow it."),
            Settled::Open,
        );
    };
    let window = seconds.map(|s| s * 1000.0).unwrap_or(f64::INFINITY);
    let bound = seconds
        .map(|s| format!(" within {s} s"))
        .unwrap_or_default();
    match b.iter().find(|v| v.index > a0.index) {
        Some(b0) => {
            let gap = b0.event.t_ms - a0.event.t_ms;
            observation(
                yes_no(gap <= window),
                vec![witness(a0), witness(b0)],
                format!(
                    "The first of the {fa} came {}, and the first of the {fb} after it {}, {} later{}.",
                    at(a0),
                    at(b0),
                    secs(gap),
                    if gap <= window {
                        String::new()
                    } else {
                        format!(": not{bound}")
                    }
                ),
                Settled::Final,
            )
        }
        None => {
            let last = all.last().map(|v| v.event.t_ms).unwrap_or(0.0);
            // Past the window, nothing the unseen rest could bring would be in time.
            let closed = last >= a0.event.t_ms + window;
            observation(
                "no",
                vec![witness(a0)],
                format!(
                    "The first of the {fa} came {}, and no {fb} followed it{bound}.",
                    at(a0)
                ),
                if closed {
                    Settled::Final
                } else {
                    Settled::Open
                },
            )
        }
    }
}

/// What broke a pairing.
enum Break<'e, 'a> {
    /// An `each` with no `with` before the next `each` or the end.
    Unpaired(&'e EventView<'a>),
    /// An `each` with a second `with`.
    Twice(&'e EventView<'a>, &'e EventView<'a>),
    /// A `with` before any `each`.
    Orphan(&'e EventView<'a>),
}

fn pairs(
    each: &[&EventView],
    with: &[&EventView],
    (es, ws): (&Selector, &Selector),
    by: Option<GroupBy>,
) -> Observation {
    let (fe, fw) = (prose::selector(es), prose::selector(ws));
    let key = |v: &EventView| -> Option<String> {
        match by {
            None => None,
            Some(GroupBy::Agent) => v.event.agent.clone(),
            Some(GroupBy::Work) => v.work().map(str::to_string),
        }
    };
    // Both lists in timeline order, an event that is an `each` counting as one.
    let mut merged: Vec<(bool, &EventView)> = each.iter().map(|v| (true, *v)).collect();
    merged.extend(
        with.iter()
            .filter(|w| !each.iter().any(|e| e.index == w.index))
            .map(|v| (false, *v)),
    );
    merged.sort_by_key(|(_, v)| v.index);
    let mut open: Vec<(Option<String>, &EventView, usize)> = Vec::new();
    let mut breaks: Vec<Break> = Vec::new();
    for (is_each, v) in merged {
        let k = key(v);
        let slot = open.iter().position(|(key, _, _)| *key == k);
        match (is_each, slot) {
            (true, Some(i)) => {
                let (_, prev, n) = open.remove(i);
                if n == 0 {
                    breaks.push(Break::Unpaired(prev));
                }
                open.push((k, v, 0));
            }
            (true, None) => open.push((k, v, 0)),
            (false, Some(i)) => {
                open[i].2 += 1;
                if open[i].2 == 2 {
                    breaks.push(Break::Twice(open[i].1, v));
                }
            }
            (false, None) => breaks.push(Break::Orphan(v)),
        }
    }
    let ends_unpaired = open.iter().filter(|(_, _, n)| *n == 0).count();
    breaks.extend(
        open.iter()
            .filter(|(_, _, n)| *n == 0)
            .map(|(_, v, _)| Break::Unpaired(v)),
    );
    if each.is_empty() && breaks.is_empty() {
        return observation(
            "not-observed",
            vec![],
            format!("No {fe} in the run, so there was nothing to pair."),
            Settled::Open,
        );
    }
    let Some(first) = breaks.first() else {
        return observation(
            "yes",
            each.iter()
                .take(1)
                .chain(with.iter().take(1))
                .map(|v| witness(v))
                .collect(),
            format!(
                "Each of the {} {fe} was followed by exactly one of the {fw}.",
                each.len()
            ),
            Settled::Open,
        );
    };
    // Only a missing partner at the end could still come in the unseen rest.
    let settled = if breaks.len() == ends_unpaired {
        Settled::Open
    } else {
        Settled::Final
    };
    let (w, why) = match first {
        Break::Unpaired(e) => (vec![witness(e)], format!("the one {} had none", at(e))),
        Break::Twice(e, second) => (
            vec![witness(e), witness(second)],
            format!("the one {} had a second {}", at(e), at(second)),
        ),
        Break::Orphan(o) => (
            vec![witness(o)],
            format!("one of the {fw} came {} with no {fe} before it", at(o)),
        ),
    };
    observation(
        "no",
        w,
        format!(
            "Not every one of the {} {fe} was followed by exactly one of the {fw} ({} break(s)): {why}.",
            each.len(),
            breaks.len()
        ),
        settled,
    )
}

fn while_holds(
    counted: &[&EventView],
    from: &[&EventView],
    until: Vec<&EventView>,
    (cs, fs): (&Selector, &Selector),
) -> Observation {
    let (fc, ff) = (prose::selector(cs), prose::selector(fs));
    let Some(start) = from.first() else {
        return observation(
            "not-observed",
            vec![],
            format!("No {ff} in the run, so the condition never held."),
            Settled::Open,
        );
    };
    // Intervals open at a `from` and close at the next `until`.
    let mut intervals: Vec<(usize, usize)> = Vec::new();
    let mut open: Option<usize> = None;
    let mut marks: Vec<(usize, bool)> = from.iter().map(|v| (v.index, true)).collect();
    marks.extend(until.iter().map(|v| (v.index, false)));
    marks.sort();
    for (index, opens) in marks {
        match (open, opens) {
            (None, true) => open = Some(index),
            (Some(o), false) => {
                intervals.push((o, index));
                open = None;
            }
            _ => {}
        }
    }
    if let Some(o) = open {
        intervals.push((o, usize::MAX));
    }
    let inside: Vec<&&EventView> = counted
        .iter()
        .filter(|v| intervals.iter().any(|(a, b)| v.index > *a && v.index < *b))
        .collect();
    let mut w = vec![witness(start)];
    w.extend(inside.iter().take(2).map(|v| witness(v)));
    observation(
        inside.len().to_string(),
        w,
        format!(
            "The condition held {}, first from the {ff} {}; {fc} that came while it held: {}.",
            times(intervals.len()),
            at(start),
            inside.len()
        ),
        Settled::Growing,
    )
}

fn value(
    found: &[&EventView],
    sel: &Selector,
    path: &FieldPath,
    which: Which,
    capture: Option<&str>,
) -> Observation {
    let what = prose::selector(sel);
    let settled = match which {
        Which::First => Settled::Final,
        Which::Last => Settled::Open,
    };
    let picked = match which {
        Which::First => found.first(),
        Which::Last => found.last(),
    };
    let Some(v) = picked else {
        return observation(
            "not-observed",
            vec![],
            format!("No {what} in the run."),
            Settled::Open,
        );
    };
    let place = if which == Which::First {
        "first"
    } else {
        "last"
    };
    let Some(raw) = lookup(&v.json, path).first().map(|x| as_text(x)) else {
        return observation(
            "not-observed",
            vec![witness(v)],
            format!("The {place} of the {what} ({}) has no `{path}`.", at(v)),
            settled,
        );
    };
    let text = match capture {
        None => Some(raw.clone()),
        Some(pattern) => Regex::new(pattern)
            .ok()
            .and_then(|re| re.captures(&raw)?.get(1).map(|m| m.as_str().to_string())),
    };
    match text {
        Some(t) => observation(
            t.clone(),
            vec![witness(v)],
            format!(
                "At the {place} of the {what} ({}), `{path}` is “{raw}”.",
                at(v)
            ),
            settled,
        ),
        None => observation(
            "not-observed",
            vec![witness(v)],
            format!(
                "At the {place} of the {what} ({}), `{path}` is “{raw}”, which the capture does not match.",
                at(v)
            ),
            settled,
        ),
    }
}

fn followed(
    each: &[&EventView],
    all: &[EventView],
    (es, by, unless): (&Selector, &Selector, Option<&Selector>),
) -> Observation {
    let (fe, fb) = (prose::selector(es), prose::selector(by));
    let mut hits: Vec<(&EventView, &EventView)> = Vec::new();
    for e in each {
        let next = all[e.index + 1..]
            .iter()
            .find(|v| v.matches(by) || unless.is_some_and(|u| v.matches(u)));
        if let Some(n) = next.filter(|n| n.matches(by)) {
            hits.push((e, n));
        }
    }
    let unless_part = unless
        .map(|u| format!(" before any {}", prose::selector(u)))
        .unwrap_or_default();
    observation(
        hits.len().to_string(),
        hits.iter()
            .take(2)
            .flat_map(|(a, b)| [witness(a), witness(b)])
            .collect(),
        format!(
            "{} of the {} {fe} were followed by one of the {fb}{unless_part}{}.",
            hits.len(),
            each.len(),
            hits.first()
                .map(|(a, _)| format!(", the first {}", at(a)))
                .unwrap_or_default()
        ),
        Settled::Growing,
    )
}
