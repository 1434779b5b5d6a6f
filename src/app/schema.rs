//! JSON Schemas for the files wakeprobe writes, generated from the types that write them.
//! `schema/*.json` holds the checked-in copies; a test fails when they drift from the types
//! (regenerate with `UPDATE_SCHEMA=1 cargo test schema`).

use schemars::schema_for;

use crate::classify::result::{RunResult, Summary};
use crate::evidence::Timeline;
use crate::evidence::run::RunInfo;

/// (file name, schema) for every published file format.
pub fn all() -> Vec<(&'static str, serde_json::Value)> {
    let to_value = |s: schemars::Schema| serde_json::to_value(s).expect("schemas serialize");
    vec![
        ("result.schema.json", to_value(schema_for!(RunResult))),
        ("summary.schema.json", to_value(schema_for!(Summary))),
        ("run.schema.json", to_value(schema_for!(RunInfo))),
        (
            "invocation.schema.json",
            to_value(schema_for!(crate::classify::result::InvocationMark)),
        ),
        ("timeline.schema.json", to_value(schema_for!(Timeline))),
        (
            "matrix.schema.json",
            to_value(schema_for!(crate::matrix::grid::Matrix)),
        ),
        (
            "history.schema.json",
            to_value(schema_for!(crate::matrix::history::HistoryFile)),
        ),
        (
            "integration-line.schema.json",
            to_value(schema_for!(crate::evidence::integration::IntegrationLine)),
        ),
        (
            "integration-input.schema.json",
            to_value(schema_for!(crate::evidence::integration::InputLine)),
        ),
        (
            "threshold.schema.json",
            to_value(schema_for!(crate::matrix::threshold::ThresholdFile)),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_in_schemas_match_the_types() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema");
        let update = std::env::var_os("UPDATE_SCHEMA").is_some();
        for (name, schema) in all() {
            let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
            let path = dir.join(name);
            if update {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &text).unwrap();
                continue;
            }
            let checked_in = std::fs::read_to_string(&path).unwrap_or_else(|_| {
                panic!(
                    "{} is missing: run UPDATE_SCHEMA=1 cargo test schema",
                    path.display()
                )
            });
            assert!(
                checked_in == text,
                "{} drifted from the types: bump the schema number if the change is incompatible, then run UPDATE_SCHEMA=1 cargo test schema",
                path.display()
            );
        }
    }
}
