//! `bisect`'s probes: one version's CLI found (a simulator profile or an install), the
//! variant's planned runs executed on it, and its verdict (or why it has none) said as it is
//! known; the found change printed at the end.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::super::clis::clis_for;
use super::super::resolve::{self, Planned};
use crate::cli::ExecArgs;
use crate::console::{self, Message};
use crate::driver::Cancel;
use crate::matrix::bisect::{BisectReport, Probe};
use crate::matrix::{self, Execution};
use crate::scenario::{Runtime, Scenario};

/// What every probe shares: the plan, the flags, where runs go, and every probe's runs.
pub struct Prober {
    pub planned: Vec<Planned>,
    pub scenarios: Vec<Arc<Scenario>>,
    pub exec: ExecArgs,
    pub sim_versions: Vec<(String, String)>,
    pub runtime: Runtime,
    pub run_dir: PathBuf,
    pub cancel: Cancel,
    pub probes: Mutex<Execution>,
}

impl Prober {
    /// The variant's runs on `version`, judged.
    pub async fn probe(&self, version: String) -> Result<Probe, String> {
        let pair = (
            crate::runtime::qualified(self.runtime, &version),
            version.clone(),
        );
        let cli = clis_for(std::slice::from_ref(&pair), &self.sim_versions, &[])
            .await
            .map_err(|e| e.message)?
            .remove(0);
        let jobs = resolve::jobs_of(&self.planned, &self.exec, &cli).map_err(|e| e.message)?;
        let opts = resolve::exec_options(&self.exec, &self.scenarios, self.run_dir.join(&version))
            .map_err(|e| e.message)?;
        let execution = matrix::execute(jobs, &opts, self.cancel.clone()).await;
        let probe = probe_of(&version, &execution, self.cancel.borrow().is_some());
        let mut all = self.probes.lock().expect("probe list");
        all.cells.extend(execution.cells);
        all.failures.extend(execution.failures);
        probe
    }
}

/// One version's verdict from its runs, or why it has none.
fn probe_of(version: &str, execution: &Execution, interrupted: bool) -> Result<Probe, String> {
    if interrupted {
        return Err("interrupted".to_string());
    }
    if let Some(failure) = execution.failures.first() {
        return Err(failure.message.clone());
    }
    let outcomes: Vec<_> = execution
        .cells
        .iter()
        .map(|c| c.result.judgement.outcome)
        .collect();
    let (outcome, agreement) = crate::classify::agreement(&outcomes);
    eprintln!("wakeprobe: {version}: {agreement}");
    console::emit(&Message::BisectStep {
        version,
        verdict: outcome,
        agreement: &agreement,
    });
    Ok(Probe {
        version: version.to_string(),
        outcome,
        agreement,
    })
}

pub fn print_report(report: &BisectReport, title: &str) {
    console::say(format!(
        "first version whose verdict differs: {}",
        report.first_bad.version
    ));
    console::say("steps:");
    for p in &report.steps {
        console::say(format!("  {} {}", p.version, p.agreement));
    }
    console::say("");
    console::say(report.paragraph(title));
    console::emit(&Message::Bisected {
        scenario: title,
        last_good: &report.last_good,
        first_bad: &report.first_bad.version,
        paragraph: report.paragraph(title),
    });
}
