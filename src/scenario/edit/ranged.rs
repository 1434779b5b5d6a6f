//! `[params]` entries that declare a range (`bg_seconds = { default = 12, min = 6 }`) in an
//! edited document: a variant's `params` merged in the way a scenario reads them (the value
//! inherited unless the variant sets one, the variant's range replacing the scenario's), and a
//! new value written as the `default`, so the range and its reason stay with the candidate.

use toml_edit::{InlineTable, Item, Value};

/// The fields of a range: a variant that declares any of them replaces all of them.
const RANGE_KEYS: [&str; 3] = ["min", "max", "reason"];

/// `base` (the scenario's entry, if any) patched by a variant's entry.
pub fn merge(base: Option<&Item>, patch: &Item) -> Item {
    let Some(patch_spec) = patch.as_inline_table() else {
        // A bare value sets the value; the scenario's range still holds.
        return match (base.and_then(Item::as_inline_table), patch.as_value()) {
            (Some(spec), Some(value)) => Item::Value(with_default(spec, value.clone()).into()),
            _ => patch.clone(),
        };
    };
    let mut spec = match base {
        Some(item) => match (item.as_inline_table(), item.as_value()) {
            (Some(spec), _) => spec.clone(),
            (None, Some(value)) => with_default(&InlineTable::new(), value.clone()),
            (None, None) => InlineTable::new(),
        },
        None => InlineTable::new(),
    };
    if RANGE_KEYS.iter().any(|k| patch_spec.contains_key(k)) {
        for k in RANGE_KEYS {
            spec.remove(k);
        }
    }
    for (k, v) in patch_spec.iter() {
        spec.insert(k, v.clone());
    }
    spec.fmt();
    Item::Value(spec.into())
}

/// The entry's value: its `default` when it is a table.
pub fn value(entry: &Item) -> Option<&Value> {
    match entry.as_inline_table() {
        Some(spec) => spec.get("default"),
        None => entry.as_value(),
    }
}

/// The entry with `value` as its value: a table keeps its range and gets a new `default`.
pub fn set_value(entry: &Item, value: Value) -> Item {
    match entry.as_inline_table() {
        Some(spec) => Item::Value(with_default(spec, value).into()),
        None => Item::Value(value),
    }
}

fn with_default(spec: &InlineTable, value: Value) -> InlineTable {
    let mut out = InlineTable::new();
    out.insert("default", value);
    for (k, v) in spec.iter().filter(|(k, _)| *k != "default") {
        out.insert(k, v.clone());
    }
    out.fmt();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use toml_edit::DocumentMut;

    fn item(text: &str) -> Item {
        let doc: DocumentMut = format!("x = {text}").parse().unwrap();
        doc["x"].clone()
    }

    fn show(i: &Item) -> String {
        i.as_value().unwrap().to_string().trim().to_string()
    }

    #[test]
    fn a_variant_range_replaces_the_scenario_range_and_inherits_the_value() {
        let base = item("{ default = 12, min = 7, reason = \"short\" }");
        assert_eq!(
            show(&merge(Some(&base), &item("{ min = 1 }"))),
            "{ default = 12, min = 1 }"
        );
        assert_eq!(
            show(&merge(
                Some(&item("12")),
                &item("{ min = 6, reason = \"r\" }")
            )),
            "{ default = 12, min = 6, reason = \"r\" }"
        );
        assert_eq!(
            show(&merge(Some(&base), &item("{ default = 9 }"))),
            "{ default = 9, min = 7, reason = \"short\" }"
        );
    }

    #[test]
    fn a_bare_value_keeps_the_scenario_range() {
        let base = item("{ default = 12, min = 7 }");
        assert_eq!(
            show(&merge(Some(&base), &item("8"))),
            "{ default = 8, min = 7 }"
        );
        assert_eq!(show(&merge(Some(&item("12")), &item("8"))), "8");
    }

    #[test]
    fn a_new_value_becomes_the_default() {
        let entry = item("{ default = 12, min = 6 }");
        assert_eq!(value(&entry).unwrap().as_integer(), Some(12));
        assert_eq!(
            show(&set_value(&entry, 7.into())),
            "{ default = 7, min = 6 }"
        );
        assert_eq!(show(&set_value(&item("3"), 7.into())), "7");
    }
}
