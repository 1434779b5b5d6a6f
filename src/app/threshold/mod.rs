//! `wakeprobe threshold SCENARIO[/VARIANT] --param NAME --from A --to B`: the value of a
//! numeric parameter at which the verdict flips, found by `matrix::threshold` over real runs
//! (each probed value run `--repeat` times, into its own folder), written to `threshold.json`.

mod setup;

use std::sync::Arc;

use super::{AppError, AppResult, probe, resolve};
use crate::cli::{self, Exit};
use crate::matrix::Job;
use crate::matrix::threshold::{self, Settings, THRESHOLD_SCHEMA, ThresholdError, ThresholdFile};
use crate::scenario::RangePolicy;
use crate::store;
use crate::store::redact::Redactor;
use setup::{check_param, one_target};

/// `wakeprobe threshold`
pub async fn threshold(args: cli::ThresholdArgs) -> AppResult {
    // The variant on the runtime of the CLI it runs on.
    let target = resolve::on_runtimes(
        &[one_target(&args)?],
        Some(&[resolve::cli_runtime(&args.backend)]),
    )?
    .remove(0);
    let settings = Settings {
        from: args.from,
        to: args.to,
        precision: args
            .precision
            .unwrap_or_else(|| threshold::default_precision(args.from, args.to)),
    };
    threshold::check(settings).map_err(|e| AppError::bad_input(e.to_string()))?;
    let sets = check_param(&args, &target)?;
    resolve::check_out(&args.exec.out)?;
    let cli = resolve::cli(&args.backend).await?;
    let run_dir = resolve::new_run_dir(&args.exec.out)?;
    let cancel = resolve::cancel_on_signals();
    let scenarios = vec![target.scenario.clone()];
    let faults = resolve::faults(&scenarios, &args.exec)?;
    let judge = |value: f64| {
        let text = value.to_string();
        let mut overrides = sets.clone();
        overrides.push((args.param.clone(), text.clone()));
        // The value's plan, once for its repetitions (both ends resolved before anything ran).
        let plan = target
            .scenario
            .plan_with(&target.variant, &overrides, RangePolicy::Explore)
            .map(|mut plan| {
                crate::matrix::add_faults(&mut plan, &faults);
                Arc::new(plan)
            })
            .map_err(|e| e.to_string());
        let dir = run_dir.join(format!("{}={text}", args.param));
        let (exec, scenarios, cancel, param) = (&args.exec, &scenarios, &cancel, &args.param);
        let (cli, target) = (cli.clone(), target.clone());
        async move {
            let plan = plan?;
            let jobs: Vec<Job> = (1..=exec.repeat)
                .map(|repetition| Job {
                    reference: resolve::scenario_reference(&target.scenario),
                    scenario: target.scenario.clone(),
                    variant: target.variant.clone(),
                    cli: cli.clone(),
                    repetition,
                    overrides: overrides.clone(),
                    policy: RangePolicy::Explore,
                    plan: plan.clone(),
                })
                .collect();
            let cells = probe::run(jobs, exec, scenarios, &dir, cancel)
                .await
                .map_err(|e| e.to_string())?;
            let outcomes: Vec<_> = cells.iter().map(|c| c.result.judgement.outcome).collect();
            eprintln!(
                "wakeprobe: {param}={text}: {}",
                crate::classify::agreement(&outcomes).1
            );
            Ok(outcomes)
        }
    };
    let found = threshold::search(settings, judge).await;
    if cancel.borrow().is_some() {
        eprintln!(
            "reports: {}",
            crate::console::printable(&run_dir.display().to_string())
        );
        return Ok(Exit::Interrupted);
    }
    let found = found.map_err(|e| match e {
        ThresholdError::Run { .. } => AppError::setup(e.to_string()),
        other => AppError::bad_input(other.to_string()),
    })?;
    let file = ThresholdFile {
        schema: THRESHOLD_SCHEMA,
        scenario: target.scenario.name.clone(),
        variant: target.variant.clone(),
        param: args.param.clone(),
        cli: cli.label(),
        repeat: args.exec.repeat,
        sets,
        threshold: found,
    };
    store::write_json(&run_dir.join("threshold.json"), &Redactor::basic(), &file)?;
    println!("{} on {}, {}:", target.title(), file.cli, args.param);
    for line in file.threshold.lines(&args.param) {
        println!("  {line}");
    }
    eprintln!(
        "reports: {}",
        crate::console::printable(&run_dir.display().to_string())
    );
    Ok(Exit::Ok)
}
