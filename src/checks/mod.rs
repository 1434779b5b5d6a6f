//! Checks: facts a scenario states about its run besides the wake-up, each observed from the
//! timeline with a witness and a paragraph of prose. A check is a *query* written in the
//! scenario file (one relation over selectors of events, see `scenario::query`) or one of the
//! built-in *presets*; most presets are themselves queries evaluated by the same engine.
//!
//! Checks read what the run observed of the CLI (`Timeline::observed`). In a run the harness
//! cut short, an observation the unseen rest of the run could still change is reported as it
//! stood, and its pass/fail is left open (`passed` is empty) instead of guessed.

mod presets;
mod prose;
mod relations;
pub mod stops;
mod view;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::evidence::run::EndReason;
use crate::evidence::{Timeline, Witness};
use crate::scenario::query::Comparison;
use crate::scenario::{Check, MAIN_AGENT};

pub use presets::{Preset, preset};
pub use view::EventView;

/// What a check observed, judged against its expectation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckResult {
    pub name: String,
    /// The preset's name, or `query:RELATION` for a query.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub observed: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// `None` when the scenario states no expectation, or when the run was cut short before
    /// the observation was settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
    /// What the check should observe (the scenario's `want`), beside `expected`, what the
    /// pinned CLI gives today.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub want: Option<String>,
    /// Whether the observation is what the check should observe; `None` without a `want`, or
    /// when the observation is open or vacuous. `Some(false)` is a bug to file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meets_want: Option<bool>,
    pub witness: Vec<Witness>,
    pub explanation: String,
    /// How many events each of the query's selectors matched, by the selector's key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched: Vec<(String, usize)>,
    /// No selector matched any event (and the scenario did not allow that): the check saw
    /// nothing, so it neither passes nor fails (`passed` is empty).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vacuous: bool,
    /// For an invariant the scenario may break: why. A break is then no failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub may_break: Option<String>,
    /// Where the observation puts the fault, for a check of an integration under test: the
    /// CLI (what the integration should show never reached it) or the integration (it did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<Layer>,
    /// The bug the check catches, in the CLI's terms (the scenario's `describes`): a draft's
    /// title when the check fails its `want`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub describes: Option<String>,
}

/// The layer a fault is in, in a run of an integration under test (mode `command`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// Claude Code: what the integration should show never reached it.
    Cli,
    /// The program built on it: what reached it was dropped, shown twice or misread.
    Integration,
}

impl Layer {
    /// The layer in words: `the CLI`, `the integration`.
    pub fn words(self) -> &'static str {
        match self {
            Layer::Cli => "the CLI",
            Layer::Integration => "the integration",
        }
    }
}

/// What a relation observed.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub observed: String,
    pub witness: Vec<Witness>,
    pub explanation: String,
    /// Whether the rest of the run, had it been seen, could not change the value: a count
    /// can only grow, an absence can end. Matters only for runs cut short.
    pub settled: Settled,
}

/// How far the unseen rest of a run could change an observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Nothing later could change it (an event was seen, an order was seen).
    Final,
    /// Later events could change it (an absence, a universal statement).
    Open,
    /// A count: later events could only make it grow.
    Growing,
}

/// Everything checks read: the timeline, the raw sources beside it and how the run ended.
pub struct Evidence<'a> {
    pub timeline: &'a Timeline,
    pub raw: &'a RawSources,
    pub end: EndReason,
}

/// The raw evidence a selector's `where` paths reach beyond the timeline, as the run folder
/// keeps it (redacted), so a saved run judges the same as the live one.
#[derive(Debug, Clone, Default)]
pub struct RawSources {
    /// The hook payloads, by the index a hook event carries (`raw`): under `payload.`.
    pub payloads: Vec<Value>,
    /// The CLI's (or SDK host's) stdout lines with their stamps: under `line.` of the events
    /// read from them (every stream event is stamped with its line's time).
    pub lines: Vec<(f64, Value)>,
}

/// Runs every check of a plan.
pub fn run_all(ev: &Evidence, checks: &[Check]) -> Vec<CheckResult> {
    let observed = ev.timeline.observed(ev.end);
    let seen = Evidence {
        timeline: &observed,
        raw: ev.raw,
        end: ev.end,
    };
    checks.iter().map(|c| run(&seen, c)).collect()
}

/// Observes one check and judges it against its expectation.
pub fn run(ev: &Evidence, check: &Check) -> CheckResult {
    let agent = check.agent.as_deref().unwrap_or(MAIN_AGENT);
    let query = check
        .query
        .as_ref()
        .map(|q| q.with_task_ids(&|name: &str| task_id_of(ev.timeline, name)));
    let (kind, observation) = match (&query, check.kind) {
        (Some(Err(work)), _) => (
            format!("query:{}", check.query.as_ref().map_or("", |q| q.name())),
            Observation {
                observed: "not-observed".into(),
                witness: vec![],
                explanation: format!(
                    "`{work}` never became a task in this run, so `{{{{@task-id:{work}}}}}` names no task id and the check has nothing to look at."
                ),
                settled: Settled::Open,
            },
        ),
        (Some(Ok(query)), _) => (
            format!("query:{}", query.name()),
            relations::evaluate(ev, query),
        ),
        (None, Some(kind)) => (kind.as_str().to_string(), preset(kind).observe(ev, agent)),
        (None, None) => (
            "none".into(),
            Observation {
                observed: "not-observed".into(),
                witness: vec![],
                explanation: "The check states neither a preset nor a query.".into(),
                settled: Settled::Final,
            },
        ),
    };
    let mut result = judge(check, kind, observation, ev.end);
    result.layer = check.kind.and_then(|k| preset(k).layer(&result.observed));
    if let Some(Ok(query)) = &query {
        result.matched = matched(ev, query);
        mark_vacuous(&mut result, check, query);
    }
    result
}

/// The CLI's task id for the work `name` (a tracked command or a spawned agent): the first task
/// the run saw start under that name.
fn task_id_of(timeline: &Timeline, name: &str) -> Option<String> {
    timeline.iter().find_map(|e| match &e.kind {
        crate::evidence::EventKind::TaskStarted { task_id, label, .. }
            if label.as_deref() == Some(name) =>
        {
            Some(task_id.clone())
        }
        _ => None,
    })
}

/// How many events each selector of `query` matches.
fn matched(ev: &Evidence, query: &crate::scenario::query::Query) -> Vec<(String, usize)> {
    let views = EventView::all(ev);
    query
        .selectors()
        .into_iter()
        .map(|(key, s)| {
            (
                key.to_string(),
                views.iter().filter(|v| v.matches(s)).count(),
            )
        })
        .collect()
}

/// A query whose selectors matched nothing observed nothing: vacuous, neither pass nor fail.
/// `absent` is about matching nothing, so it is never vacuous; nor is an `exists` that states
/// `no` in its `expect` or `want` (zero matches is then the very observation, often the bug
/// itself); nor is a check that allows it.
fn mark_vacuous(r: &mut CheckResult, check: &Check, query: &crate::scenario::query::Query) {
    use crate::scenario::query::Query;
    let empty = r.matched.iter().all(|(_, n)| *n == 0);
    let absent = matches!(query, Query::Absent { .. });
    let absence_stated = matches!(query, Query::Exists { .. })
        && [&check.expect, &check.want]
            .iter()
            .any(|s| s.as_deref() == Some("no"));
    if !empty || absent || absence_stated || check.allow_empty {
        return;
    }
    r.vacuous = true;
    r.passed = None;
    r.meets_want = None;
    r.explanation = format!(
        "Vacuous: no selector of this check matched any event ({}), so it observed nothing; `{}` would hold of any run. Check the selectors against the timeline, or write `allow_empty = true` if an empty match is what the check means. {}",
        r.matched
            .iter()
            .map(|(k, n)| format!("`{k}` {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        r.observed,
        r.explanation
    );
}

fn judge(check: &Check, kind: String, o: Observation, end: EndReason) -> CheckResult {
    let unseen_rest = end.cut_short() || end == EndReason::WorkHung;
    let expect = against(&o, unseen_rest, check.expect.as_deref());
    let want = against(&o, unseen_rest, check.want.as_deref());
    let left_open: Vec<&str> = [expect, want]
        .into_iter()
        .flatten()
        .filter(|(_, open, _)| *open)
        .map(|(_, _, stated)| stated)
        .collect();
    let settled = |j: Option<(bool, bool, &str)>| j.filter(|(_, open, _)| !open).map(|j| j.0);
    let mut explanation = o.explanation.clone();
    if !left_open.is_empty() {
        explanation.push_str(&format!(
            " The run was cut short ({}), so the rest of it, which was not seen, could still change this: whether it meets `{}` is left open.",
            cut_words(end),
            left_open.join("` or `")
        ));
    }
    CheckResult {
        name: check.name.clone(),
        kind,
        agent: check.agent.clone(),
        passed: settled(expect),
        expected: check.expect.clone(),
        want: check.want.clone(),
        meets_want: settled(want),
        observed: o.observed,
        witness: o.witness,
        explanation,
        matched: vec![],
        vacuous: false,
        may_break: check.may_break.clone(),
        layer: None,
        describes: check.describes.clone(),
    }
}

/// An observation against `stated` (the check's `expect` or `want`): whether it meets it,
/// whether the unseen rest of a cut-short run leaves that open, and what was stated.
fn against<'s>(
    o: &Observation,
    unseen_rest: bool,
    stated: Option<&'s str>,
) -> Option<(bool, bool, &'s str)> {
    let stated = stated?;
    let open = unseen_rest && !conclusive(o, stated);
    Some((meets(stated, &o.observed), open, stated))
}

/// What cut a run short, in a few words.
fn cut_words(end: EndReason) -> &'static str {
    match end {
        EndReason::Ceiling => "by its ceiling",
        EndReason::Interrupted => "by a signal to the harness",
        EndReason::HarnessFailed => "by a failure of the harness",
        EndReason::WorkHung => "when watched work passed its hang bound",
        EndReason::ToolUnavailable => "where the script called a tool this CLI does not offer",
        EndReason::Finished | EndReason::CliEnded => "early",
    }
}

/// Whether an observation meets an expectation: the same text, or a comparison a number holds.
pub fn meets(expect: &str, observed: &str) -> bool {
    if expect == observed {
        return true;
    }
    match (Comparison::parse(expect), observed.parse::<f64>()) {
        (Some(cmp), Ok(n)) => cmp.holds(n),
        _ => false,
    }
}

/// Whether a judgement against `stated` (an `expect` or a `want`) of a cut-short run's
/// observation stands whatever the rest would show.
fn conclusive(o: &Observation, stated: &str) -> bool {
    match o.settled {
        Settled::Final => true,
        Settled::Open => false,
        // A count can only grow: the verdict stands when every larger count gives the same.
        Settled::Growing => match (Comparison::parse(stated), o.observed.parse::<f64>()) {
            (Some(c), Ok(n)) => c.settled_by_growth(n),
            _ => false,
        },
    }
}

#[cfg(test)]
mod edge_tests;
#[cfg(test)]
mod tests;
