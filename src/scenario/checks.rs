//! Resolving a scenario's `[[checks]]`: a preset or one query, every part validated against
//! what the format allows and what the variant's script names, each mistake one
//! `file:line:col` line.

use toml::Spanned;

use super::ScenarioError;
use super::hook::HookName;
use super::plan::{Check, CheckKind, DESCRIBES_MAX_CHARS, MAIN_AGENT};
use super::query::*;
use super::raw::{NumExpr, RawCheck, RawPredicate, RawSelector};
use super::source::{Locator, Names, VariantSource};

pub(super) fn resolve_check(
    at: &Locator,
    check: &Spanned<RawCheck>,
    (names, src): (&Names, &VariantSource),
) -> Result<Check, ScenarioError> {
    let c = check.get_ref();
    let agent = c
        .agent
        .as_ref()
        .map(|a| agent_name(at, a, names))
        .transpose()?;
    let relations = relations(c);
    let (kind, query) = match (&c.kind, relations.as_slice()) {
        (Some(kind), []) => (Some(preset(at, kind)?), None),
        (None, [(_, span)]) => (None, Some(query(at, c, names).map_err(|e| e.or(at, span))?)),
        (Some(kind), [(name, _), ..]) => {
            return Err(at.error(
                kind.span(),
                format!("a check is a preset (`kind`) or a query (`{name}`), not both"),
            ));
        }
        (None, [_, (second, span), ..]) => {
            return Err(at.error(
                span.clone(),
                format!("a check has one relation; `{second}` is a second one (write two checks)"),
            ));
        }
        (None, []) => {
            return Err(at.error(
                check.span(),
                "a check needs a preset (`kind = \"...\"`) or a relation: count, exists, absent, before, within, pairs, while, value, followed or gap".into(),
            ));
        }
    };
    let expectation_of = |key: &'static str, value: &Option<Spanned<toml::Value>>| {
        value
            .as_ref()
            .map(|e| expectation(at, key, e, query.as_ref(), src))
            .transpose()
            .map(Option::flatten)
    };
    let expect = expectation_of("expect", &c.expect)?;
    let want = expectation_of("want", &c.want)?;
    Ok(Check {
        name: c.name.clone(),
        kind,
        agent,
        query,
        expect,
        want,
        allow_empty: c.allow_empty,
        may_break: None,
        describes: c.describes.as_ref().map(|d| describes(at, d)).transpose()?,
    })
}

/// A check's `describes`: one line, something said, short enough for an issue's title.
fn describes(at: &Locator, d: &Spanned<String>) -> Result<String, ScenarioError> {
    let text = d.get_ref().trim();
    let chars = text.chars().count();
    if text.is_empty() || text.contains(['\n', '\r']) {
        return Err(at.error(
            d.span(),
            "`describes` is one line saying the bug in the CLI's terms (it becomes the issue's title)".into(),
        ));
    }
    if chars > DESCRIBES_MAX_CHARS {
        return Err(at.error(
            d.span(),
            format!(
                "`describes` is {chars} characters; an issue title keeps at most {DESCRIBES_MAX_CHARS}: say the bug shorter"
            ),
        ));
    }
    Ok(text.to_string())
}

/// A query mistake: located where it was found, or (when only the relation is known) at it.
struct Located(Option<ScenarioError>, String);

impl Located {
    fn or(self, at: &Locator, span: &std::ops::Range<usize>) -> ScenarioError {
        self.0.unwrap_or_else(|| at.error(span.clone(), self.1))
    }
}

impl From<ScenarioError> for Located {
    fn from(e: ScenarioError) -> Located {
        Located(Some(e), String::new())
    }
}

/// The relations a raw check sets, by name, with their spans.
fn relations(c: &RawCheck) -> Vec<(&'static str, std::ops::Range<usize>)> {
    [
        ("count", c.count.as_ref().map(|x| x.span())),
        ("exists", c.exists.as_ref().map(|x| x.span())),
        ("absent", c.absent.as_ref().map(|x| x.span())),
        ("before", c.before.as_ref().map(|x| x.span())),
        ("within", c.within.as_ref().map(|x| x.span())),
        ("pairs", c.pairs.as_ref().map(|x| x.span())),
        ("while", c.while_.as_ref().map(|x| x.span())),
        ("value", c.value.as_ref().map(|x| x.span())),
        ("followed", c.followed.as_ref().map(|x| x.span())),
        ("gap", c.gap.as_ref().map(|x| x.span())),
    ]
    .into_iter()
    .filter_map(|(n, s)| s.map(|s| (n, s)))
    .collect()
}

/// A preset on an integration under test reads the integration's lines: outside mode
/// `command` there are none, and it would judge nothing.
pub(super) fn refuse_integration_presets(
    at: &Locator,
    checks: &[Spanned<RawCheck>],
    mode: super::DriverMode,
) -> Result<(), ScenarioError> {
    if mode == super::DriverMode::Command {
        return Ok(());
    }
    let misplaced = checks
        .iter()
        .filter_map(|c| c.get_ref().kind.as_ref())
        .find(|k| CheckKind::parse(k.get_ref()).is_some_and(CheckKind::is_on_integration));
    match misplaced {
        Some(kind) => Err(at.error(
            kind.span(),
            format!(
                "check kind `{}` judges an integration under test: it applies to mode `command`, not `{mode}`",
                kind.get_ref()
            ),
        )),
        None => Ok(()),
    }
}

fn preset(at: &Locator, kind: &Spanned<String>) -> Result<CheckKind, ScenarioError> {
    CheckKind::parse(kind.get_ref()).ok_or_else(|| {
        at.error(
            kind.span(),
            format!(
                "unknown check kind `{}`, expected one of: {}",
                kind.get_ref(),
                CheckKind::ALL.map(CheckKind::as_str).join(", ")
            ),
        )
    })
}

fn query(at: &Locator, c: &RawCheck, names: &Names) -> Result<Query, Located> {
    let sel = |s: &Spanned<RawSelector>| selector(at, s, names);
    let opt = |s: &Option<Spanned<RawSelector>>| s.as_ref().map(sel).transpose();
    Ok(if let Some(s) = &c.count {
        Query::Count { of: sel(s)? }
    } else if let Some(s) = &c.exists {
        Query::Exists { of: sel(s)? }
    } else if let Some(s) = &c.absent {
        Query::Absent { of: sel(s)? }
    } else if let Some(b) = &c.before {
        let b = b.get_ref();
        Query::Before {
            first: sel(&b.first)?,
            then: sel(&b.then)?,
        }
    } else if let Some(w) = &c.within {
        let w = w.get_ref();
        Query::Within {
            after: sel(&w.after)?,
            then: sel(&w.then)?,
            seconds: w
                .seconds
                .as_ref()
                .map(|s| positive_number(at, s))
                .transpose()?,
        }
    } else if let Some(p) = &c.pairs {
        let p = p.get_ref();
        Query::Pairs {
            each: sel(&p.each)?,
            with: sel(&p.with)?,
            by: p.by.as_ref().map(|b| group_by(at, b)).transpose()?,
        }
    } else if let Some(w) = &c.while_ {
        let w = w.get_ref();
        Query::While {
            count: sel(&w.count)?,
            from: sel(&w.from)?,
            until: opt(&w.until)?,
        }
    } else if let Some(g) = &c.gap {
        let g = g.get_ref();
        Query::Gap {
            from: sel(&g.from)?,
            to: sel(&g.to)?,
        }
    } else if let Some(v) = &c.value {
        let v = v.get_ref();
        Query::Value {
            at: sel(&v.at)?,
            path: FieldPath::parse(v.path.get_ref()).map_err(|m| at.error(v.path.span(), m))?,
            which: match v.which.as_ref() {
                None => Which::First,
                Some(w) if w.get_ref() == "first" => Which::First,
                Some(w) if w.get_ref() == "last" => Which::Last,
                Some(w) => {
                    return Err(at
                        .error(
                            w.span(),
                            format!(
                                "unknown `which` `{}`, expected `first` or `last`",
                                w.get_ref()
                            ),
                        )
                        .into());
                }
            },
            capture: v.capture.as_ref().map(|c| capture(at, c)).transpose()?,
        }
    } else if let Some(f) = &c.followed {
        let f = f.get_ref();
        Query::Followed {
            each: sel(&f.each)?,
            by: sel(&f.by)?,
            unless: opt(&f.unless)?,
        }
    } else {
        return Err(Located(None, "a check needs a relation".into()));
    })
}

fn selector(
    at: &Locator,
    raw: &Spanned<RawSelector>,
    names: &Names,
) -> Result<Selector, ScenarioError> {
    let s = raw.get_ref();
    let one_of = |v: &Option<Spanned<String>>, allowed: &[&str], what: &str| {
        v.as_ref()
            .map(|x| {
                if allowed.contains(&x.get_ref().as_str()) {
                    Ok(x.get_ref().clone())
                } else {
                    Err(at.error(
                        x.span(),
                        format!(
                            "unknown {what} `{}`, expected one of: {}",
                            x.get_ref(),
                            allowed.join(", ")
                        ),
                    ))
                }
            })
            .transpose()
    };
    let hooks: Vec<&str> = HookName::KNOWN.iter().map(HookName::as_str).collect();
    let resolved = Selector {
        source: one_of(&s.source, SOURCES, "source")?,
        kind: one_of(&s.kind, super::fields::kinds(), "event kind")?,
        agent: s
            .agent
            .as_ref()
            .map(|a| agent_name(at, a, names))
            .transpose()?,
        work: s
            .work
            .as_ref()
            .map(|w| work_name(at, w, names))
            .transpose()?,
        hook: one_of(&s.hook, &hooks, "hook")?,
        line_type: s.line_type.as_ref().map(|x| x.get_ref().clone()),
        subtype: s.subtype.as_ref().map(|x| x.get_ref().clone()),
        tool: s.tool.as_ref().map(|x| x.get_ref().clone()),
        status: s.status.as_ref().map(|x| x.get_ref().clone()),
        predicates: s
            .predicates
            .iter()
            .flatten()
            .map(|p| predicate(at, p, names))
            .collect::<Result<_, _>>()?,
    };
    if resolved == Selector::default() {
        return Err(at.error(
            raw.span(),
            "an empty selector `{}` matches every event: name what to look for (`kind`, `hook`, `agent`, `work`, `source`, `tool`, ...)".into(),
        ));
    }
    super::reach::check(at, raw, &resolved, names)?;
    Ok(resolved)
}

fn agent_name(at: &Locator, a: &Spanned<String>, names: &Names) -> Result<String, ScenarioError> {
    if a.get_ref() == MAIN_AGENT || names.has_agent(a.get_ref()) {
        Ok(a.get_ref().clone())
    } else {
        Err(at.error(
            a.span(),
            format!(
                "`agent` names no agent: `{}` (agents: {})",
                a.get_ref(),
                names.agent_list()
            ),
        ))
    }
}

/// Every `{{@...}}` in a `where` value is `{{@task-id:NAME}}`, NAME a work of this variant.
fn task_id_placeholders(
    at: &Locator,
    text: &str,
    span: std::ops::Range<usize>,
    names: &Names,
) -> Result<(), ScenarioError> {
    for inner in placeholders(text) {
        let name = inner.strip_prefix(TASK_ID);
        if name.is_some_and(|n| names.is_work(n)) {
            continue;
        }
        return Err(at.error(
            span,
            format!(
                "`{{{{@{inner}}}}}`: a `where` value names a task as `{{{{@task-id:NAME}}}}`, NAME a spawned agent or tracked command (this variant has: {})",
                names.works()
            ),
        ));
    }
    Ok(())
}

fn work_name(at: &Locator, w: &Spanned<String>, names: &Names) -> Result<String, ScenarioError> {
    if names.is_work(w.get_ref()) {
        Ok(w.get_ref().clone())
    } else {
        Err(at.error(
            w.span(),
            format!(
                "`work` names no spawned agent or tracked command: `{}` (this variant has: {})",
                w.get_ref(),
                names.works()
            ),
        ))
    }
}

fn predicate(
    at: &Locator,
    raw: &Spanned<RawPredicate>,
    names: &Names,
) -> Result<Predicate, ScenarioError> {
    let p = raw.get_ref();
    for text in [&p.contains, &p.matches].into_iter().flatten() {
        task_id_placeholders(at, text.get_ref(), text.span(), names)?;
    }
    if let Some(v) = &p.equals
        && let toml::Value::String(text) = v.get_ref()
    {
        task_id_placeholders(at, text, v.span(), names)?;
    }
    let path = FieldPath::parse(p.path.get_ref()).map_err(|m| at.error(p.path.span(), m))?;
    let number = |n: &Spanned<NumExpr>| -> Result<f64, ScenarioError> {
        match n.get_ref() {
            NumExpr::Num(v) => Ok(*v),
            NumExpr::Expr(_) => Err(at.error(n.span(), "expected a number".into())),
        }
    };
    let mut tests = Vec::new();
    if let Some(v) = &p.equals {
        let json = serde_json::to_value(v.get_ref())
            .map_err(|e| at.error(v.span(), format!("`equals` is not a JSON value: {e}")))?;
        tests.push(FieldTest::Equals(json));
    }
    if let Some(v) = &p.contains {
        tests.push(FieldTest::Contains(v.get_ref().clone()));
    }
    if let Some(v) = &p.matches {
        regex::Regex::new(v.get_ref()).map_err(|e| {
            at.error(
                v.span(),
                format!("not a regular expression: {}", one_line(&e)),
            )
        })?;
        tests.push(FieldTest::Matches(v.get_ref().clone()));
    }
    if let Some(v) = &p.exists {
        tests.push(FieldTest::Exists(*v.get_ref()));
    }
    for (n, make) in [
        (&p.gt, FieldTest::Gt as fn(f64) -> FieldTest),
        (&p.ge, FieldTest::Ge),
        (&p.lt, FieldTest::Lt),
        (&p.le, FieldTest::Le),
    ] {
        if let Some(n) = n {
            tests.push(make(number(n)?));
        }
    }
    match tests.len() {
        1 => Ok(Predicate {
            path,
            test: tests.remove(0),
        }),
        0 => Err(at.error(
            raw.span(),
            "a `where` entry needs one test: equals, contains, matches, exists, gt, ge, lt or le"
                .into(),
        )),
        _ => Err(at.error(
            raw.span(),
            "a `where` entry has one test; write one entry per test".into(),
        )),
    }
}

fn positive_number(at: &Locator, n: &Spanned<NumExpr>) -> Result<f64, ScenarioError> {
    match n.get_ref() {
        NumExpr::Num(v) if *v > 0.0 => Ok(*v),
        _ => Err(at.error(n.span(), "expected a number of seconds above zero".into())),
    }
}

fn group_by(at: &Locator, b: &Spanned<String>) -> Result<GroupBy, ScenarioError> {
    match b.get_ref().as_str() {
        "agent" => Ok(GroupBy::Agent),
        "work" => Ok(GroupBy::Work),
        other => Err(at.error(
            b.span(),
            format!("unknown `by` `{other}`, expected `agent` or `work`"),
        )),
    }
}

fn capture(at: &Locator, c: &Spanned<String>) -> Result<String, ScenarioError> {
    let re = regex::Regex::new(c.get_ref()).map_err(|e| {
        at.error(
            c.span(),
            format!("not a regular expression: {}", one_line(&e)),
        )
    })?;
    if re.captures_len() < 2 {
        return Err(at.error(
            c.span(),
            "a `capture` needs a group, such as `status (\\w+)`".into(),
        ));
    }
    Ok(c.get_ref().clone())
}

/// This variant's expectation (`key` is `expect` or `want`: a string, or a table of strings by
/// variant), each value checked against what the query observes, and each variant named
/// checked to exist.
fn expectation(
    at: &Locator,
    key: &str,
    expect: &Spanned<toml::Value>,
    query: Option<&Query>,
    src: &VariantSource,
) -> Result<Option<String>, ScenarioError> {
    let wrong = || {
        at.error(
            expect.span(),
            format!("`{key}` is a string, or a table of strings by variant such as `{{ print = \"0\", session = \"1\" }}`"),
        )
    };
    let values: Vec<(Option<&String>, &String)> = match expect.get_ref() {
        toml::Value::String(v) => vec![(None, v)],
        toml::Value::Table(map) => map
            .iter()
            .map(|(k, v)| match v {
                toml::Value::String(s) => Ok((Some(k), s)),
                _ => Err(wrong()),
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(wrong()),
    };
    for (variant, value) in &values {
        if let Some(v) = variant
            && !src.variants.contains(v)
        {
            return Err(at.error(
                expect.span(),
                format!(
                    "`{key}` names no variant: `{v}` (variants: {})",
                    src.variants.join(", ")
                ),
            ));
        }
        if let Some(q) = query {
            check_expect(at, q, value, expect.span())?;
        }
    }
    Ok(values
        .into_iter()
        .find(|(variant, _)| variant.is_none_or(|v| v == src.variant))
        .map(|(_, value)| value.clone()))
}

/// What `expect` may be for the query: `yes`/`no`/`not-observed`, a comparison for a number.
fn check_expect(
    at: &Locator,
    q: &Query,
    e: &str,
    span: std::ops::Range<usize>,
) -> Result<(), ScenarioError> {
    let ok = if q.is_yes_no() {
        matches!(e, "yes" | "no" | "not-observed")
    } else if q.is_numeric() {
        e == "not-observed" || Comparison::parse(e).is_some()
    } else {
        true
    };
    if ok {
        return Ok(());
    }
    let wanted = if q.is_yes_no() {
        "`yes`, `no` or `not-observed`"
    } else {
        "a number or a comparison such as `>= 1`"
    };
    Err(at.error(span, format!("`{}` observes {wanted}, not `{e}`", q.name())))
}

fn one_line(e: &regex::Error) -> String {
    e.to_string()
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .trim_start_matches("error: ")
        .to_string()
}

/// Why a resolved check cannot be observed on `runtime`, if it cannot: a preset that reads
/// hooks or transcripts, or a selector of a source or kind the runtime never produces.
pub(super) fn unseen_by(check: &Check, runtime: super::Runtime) -> Option<String> {
    if let Some(kind) = check.kind
        && runtime.row().unseen_presets.contains(&kind)
    {
        return Some(format!(
            "check kind `{}` reads evidence {} cannot give (hooks or transcripts)",
            kind.as_str(),
            runtime.title()
        ));
    }
    check
        .query
        .as_ref()?
        .selectors()
        .into_iter()
        .find_map(|(key, sel)| {
            runtime
                .unseen(
                    sel.source.as_deref(),
                    sel.kind.as_deref(),
                    sel.hook.is_some(),
                )
                .map(|why| format!("its `{key}` selector cannot match: {why}"))
        })
}

/// A check the variant's runtime cannot observe is refused, located: judging it would read the
/// absence of evidence the runtime never gives as the absence of what it asks about.
pub(super) fn refuse_unseen(
    at: &Locator,
    raw: &[Spanned<RawCheck>],
    checks: &[Check],
    runtime: super::Runtime,
) -> Result<(), ScenarioError> {
    for (spanned, check) in raw.iter().zip(checks) {
        if let Some(why) = unseen_by(check, runtime) {
            return Err(at.error(
                spanned.span(),
                format!(
                    "check `{}` cannot be observed on {}: {why}",
                    check.name,
                    runtime.title()
                ),
            ));
        }
    }
    Ok(())
}
