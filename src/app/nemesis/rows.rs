//! `nemesis`'s files and table: the scenario written once per fault (its own file with one
//! `[[faults]]` table, named `NAME--KIND`), and the table's rows from what each run showed
//! (`matrix::nemesis` words each effect).

use std::path::Path;
use std::sync::Arc;

use super::super::AppError;
use super::super::invocation::{self, Ran};
use crate::matrix::nemesis::{Observed, Row, effect};
use crate::scenario::{FaultKind, Scenario};
use crate::store;

/// The scenario once per fault, each with its `[[faults]]` table.
pub fn write_faulted(
    run_dir: &Path,
    scenario: &Scenario,
    faults: &[(FaultKind, String)],
) -> Result<Vec<Arc<Scenario>>, AppError> {
    let dir = run_dir.join("scenarios");
    std::fs::create_dir_all(&dir)
        .map_err(|e| AppError::setup(format!("{}: {e}", dir.display())))?;
    faults
        .iter()
        .map(|(kind, keys)| {
            let name = faulted_name(&scenario.name, *kind);
            let mut doc: toml_edit::DocumentMut = scenario
                .source
                .parse()
                .map_err(|e| AppError::setup(format!("{}: {e}", scenario.path.display())))?;
            doc["name"] = toml_edit::value(name.as_str());
            let text = format!(
                "{}\n# Added by `wakeprobe nemesis`.\n[[faults]]\nkind = \"{}\"\n{keys}",
                doc.to_string().trim_end(),
                kind.as_str()
            );
            let path = dir.join(format!("{name}.toml"));
            store::write_atomic(&path, text.as_bytes())?;
            Ok(Arc::new(Scenario::parse(&path, text)?))
        })
        .collect()
}

fn faulted_name(scenario: &str, kind: FaultKind) -> String {
    format!("{scenario}--{}", kind.as_str())
}

/// The clean row first, then one per fault, in `kinds`' order.
pub fn table_rows(
    all: &[Arc<Scenario>],
    kinds: &[FaultKind],
    ran: &Ran,
    run_dir: &Path,
    (waiter, work): (&str, Option<&str>),
) -> Vec<Row> {
    let found = |s: &Scenario| ran.rows.iter().find(|r| r.result.run.scenario == s.name);
    let observe = |row: &invocation::Row| Observed::of(&row.result, &row.timeline, waiter, work);
    let clean = found(&all[0]).map(observe);
    all.iter()
        .enumerate()
        .map(|(i, s)| {
            let fault = if i == 0 {
                "none".to_string()
            } else {
                kinds[i - 1].as_str().to_string()
            };
            let Some(row) = found(s) else {
                return Row {
                    fault,
                    outcome: None,
                    latency_ms: None,
                    injected: 0,
                    deliveries: 0,
                    effect: "did not run".into(),
                    differs: false,
                    explanation: None,
                    run: None,
                };
            };
            let observed = observe(row);
            let outcome = observed.outcome;
            let differs = i > 0 && Some(outcome) != clean.as_ref().map(|c| c.outcome);
            Row {
                effect: if i == 0 {
                    "the clean run".into()
                } else {
                    effect(kinds[i - 1], &observed, clean.as_ref())
                },
                fault,
                outcome: Some(outcome),
                latency_ms: observed.latency,
                injected: observed.injected,
                deliveries: observed.deliveries,
                differs,
                explanation: differs
                    .then(|| {
                        row.result
                            .judgement
                            .primary()
                            .map(|v| v.explanation.clone())
                    })
                    .flatten(),
                run: Some(
                    row.dir
                        .strip_prefix(run_dir)
                        .unwrap_or(&row.dir)
                        .display()
                        .to_string(),
                ),
            }
        })
        .collect()
}
