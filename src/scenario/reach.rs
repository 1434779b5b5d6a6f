//! Whether a selector can pick any event at all, judged against what each event kind carries
//! (`scenario::fields`): a field, a shorthand or a value no event can have is a located
//! mistake at load, naming what does exist, instead of a check that silently matches nothing.

use std::collections::BTreeSet;
use std::ops::Range;

use toml::Spanned;

use super::ScenarioError;
use super::fields::{Fields, STOP_KINDS, TASK_STATUSES, fields_of, normalize, table};
use super::query::{FieldTest, Selector};
use super::raw::RawSelector;
use super::source::{Locator, Names};

/// The kinds a selector shorthand is carried by (`work` also by any event of a spawned agent).
fn shorthand_kinds(shorthand: &str) -> &'static [&'static str] {
    match shorthand {
        "hook" => &["hook"],
        "type" => &["turn_result", "stream_line", "to_cli"],
        "subtype" => &[
            "turn_result",
            "control_request",
            "control_response",
            "stream_line",
            "to_cli",
        ],
        // What an integration showed carries the tool and the status it names, too.
        "tool" => &[
            "tool_call",
            "tool_unavailable",
            "permission_asked",
            "permission_answered",
            "approval_given",
            "shown",
        ],
        "status" => &["task_updated", "task_notified", "shown"],
        "work" => &[
            "tool_call",
            "task_started",
            "task_updated",
            "task_notified",
            "track_started",
            "track_ended",
            "work_overdue",
            "session_closed",
            "ceiling_hit",
            "control_request",
        ],
        _ => &[],
    }
}

/// Refuses a selector no event can match; `sel` is `raw` resolved.
pub(super) fn check(
    at: &Locator,
    raw: &Spanned<RawSelector>,
    sel: &Selector,
    names: &Names,
) -> Result<(), ScenarioError> {
    let r = raw.get_ref();
    let mut kinds: BTreeSet<&str> = match sel.kind.as_deref() {
        Some("stop") => STOP_KINDS.iter().copied().collect(),
        Some(k) => [k].into(),
        None => table().keys().map(String::as_str).collect(),
    };
    let spawned_agent = sel
        .work
        .as_deref()
        .is_some_and(|w| names.has_agent(w) && !names.is_track(w));
    let shorthands = [
        ("hook", &r.hook),
        ("type", &r.line_type),
        ("subtype", &r.subtype),
        ("tool", &r.tool),
        ("status", &r.status),
        ("work", &r.work),
    ];
    for (name, value) in shorthands {
        let Some(value) = value else { continue };
        // A spawned agent's name picks every event of that agent, of any kind.
        if name == "work" && spawned_agent {
            continue;
        }
        let carried: BTreeSet<&str> = shorthand_kinds(name).iter().copied().collect();
        let left: BTreeSet<&str> = kinds.intersection(&carried).copied().collect();
        if left.is_empty() {
            return Err(at.error(
                value.span(),
                not_carried(name, value.get_ref(), &kinds, sel),
            ));
        }
        kinds = left;
    }
    if let Some(status) = &r.status {
        known_value(at, "status", status, TASK_STATUSES)?;
    }
    for (raw_p, p) in r.predicates.iter().flatten().zip(&sel.predicates) {
        let path = normalize(&p.path);
        let carrying: Vec<&str> = kinds
            .iter()
            .copied()
            .filter(|k| carries(k, &path))
            .collect();
        if carrying.is_empty() {
            return Err(at.error(raw_p.get_ref().path.span(), no_field(&path, &kinds)));
        }
        if let (FieldTest::Equals(serde_json::Value::String(v)), Some(eq)) =
            (&p.test, &raw_p.get_ref().equals)
        {
            equals_known(at, &path, v, &carrying, eq.span())?;
        }
    }
    Ok(())
}

/// Whether events of `kind` can have a value at `path` (anything under a hook's `payload`, or
/// under the stream-json `line` of an event read from one).
fn carries(kind: &str, path: &str) -> bool {
    let Some(fields) = fields_of(kind) else {
        return false;
    };
    let under = |root: &str| path == root || path.starts_with(&format!("{root}."));
    (kind == "hook" && under("payload"))
        || (super::fields::STREAM_KINDS.contains(&kind) && under("line"))
        || fields.contains_key(path)
}

/// `status = "Killed"`: refused, naming the known values.
fn known_value(
    at: &Locator,
    what: &str,
    v: &Spanned<String>,
    known: &[&str],
) -> Result<(), ScenarioError> {
    if known.contains(&v.get_ref().as_str()) {
        return Ok(());
    }
    let case = known
        .iter()
        .find(|k| k.eq_ignore_ascii_case(v.get_ref()))
        .map(|k| format!(" (values are lower case: `{k}`)"))
        .unwrap_or_default();
    Err(at.error(
        v.span(),
        format!(
            "unknown {what} `{}`{case}, expected one of: {}",
            v.get_ref(),
            known.join(", ")
        ),
    ))
}

/// An `equals` on a field whose values are a known set must name one of them.
fn equals_known(
    at: &Locator,
    path: &str,
    v: &str,
    kinds: &[&str],
    span: Range<usize>,
) -> Result<(), ScenarioError> {
    let mut known = BTreeSet::new();
    for k in kinds {
        let fields = fields_of(k).unwrap_or_default();
        let Some(values) = fields.get(path).filter(|v| !v.free && !v.known.is_empty()) else {
            return Ok(());
        };
        known.extend(values.known.clone());
    }
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    known_value(
        at,
        &format!("value of `{path}`"),
        &Spanned::new(span, v.into()),
        &known,
    )
}

fn not_carried(name: &str, value: &str, kinds: &BTreeSet<&str>, sel: &Selector) -> String {
    let on = shorthand_kinds(name).join(", ");
    match (sel.kind.as_deref(), kinds.iter().next()) {
        (Some(k), _) => format!(
            "`{name} = \"{value}\"` cannot match a `{k}`: `{name}` is carried by {on}; a `{k}` has {}",
            field_list(&fields_of(k).unwrap_or_default())
        ),
        _ if kinds.len() == 1 => format!(
            "`{name}` is carried by {on}, and the rest of this selector picks only `{}`",
            kinds.iter().next().unwrap_or(&"")
        ),
        _ => format!(
            "`{name}` is carried by {on}, and the rest of this selector picks none of those ({})",
            kinds.iter().copied().collect::<Vec<_>>().join(", ")
        ),
    }
}

fn no_field(path: &str, kinds: &BTreeSet<&str>) -> String {
    match kinds.iter().collect::<Vec<_>>().as_slice() {
        [k] => format!(
            "`{path}` is not a field of `{k}`; it has {}",
            field_list(&fields_of(k).unwrap_or_default())
        ),
        many if many.len() <= 4 => format!(
            "`{path}` is a field of none of the events this selector picks; {}",
            many.iter()
                .map(|k| format!(
                    "`{k}` has {}",
                    field_list(&fields_of(k).unwrap_or_default())
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        _ => format!(
            "no event kind has a field `{path}` (name a `kind` to be told its fields, or see schema/timeline.schema.json)"
        ),
    }
}

/// `agent`, `notifications[*].task_id`, ...: the fields of a kind, `kind` and the clock left out.
fn field_list(fields: &Fields) -> String {
    fields
        .keys()
        .filter(|p| !matches!(p.as_str(), "kind" | "t_ms"))
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
