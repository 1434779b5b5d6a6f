//! What `threshold` checks before anything runs: one scenario variant, a numeric parameter
//! that `--set` leaves alone, and both ends of the range planned.

use super::super::{AppError, resolve};
use crate::cli;
use crate::scenario::{RangePolicy, params};

/// The one scenario variant searched.
pub fn one_target(args: &cli::ThresholdArgs) -> Result<resolve::Target, AppError> {
    let mut targets = resolve::driven_targets(
        resolve::targets(std::slice::from_ref(&args.target), &args.exec.variants)?,
        &args.exec,
    )?;
    match targets.len() {
        1 => Ok(targets.remove(0)),
        _ if args.target.contains('/') || !args.exec.variants.is_empty() => {
            Err(AppError::bad_input("threshold judges one scenario variant"))
        }
        _ => Ok(targets.remove(0)),
    }
}

/// The parameter must be a numeric parameter of the scenario that `--set` does not also set;
/// both ends must resolve. Returns the other `--set` values.
pub fn check_param(
    args: &cli::ThresholdArgs,
    target: &resolve::Target,
) -> Result<Vec<(String, String)>, AppError> {
    let defaults = target.scenario.default_params();
    let default = defaults.get(&args.param).ok_or_else(|| {
        AppError::bad_input(format!(
            "--param {}: `{}` has no such parameter, expected one of: {}",
            args.param,
            target.scenario.name,
            defaults.keys().cloned().collect::<Vec<_>>().join(", ")
        ))
    })?;
    if params::numeric(default).is_none() {
        return Err(AppError::bad_input(format!(
            "--param {}: its default `{default}` is not a number",
            args.param
        )));
    }
    if args.exec.sets.iter().any(|(k, _)| *k == args.param) {
        return Err(AppError::bad_input(format!(
            "--set {}: the searched parameter takes its values from --from and --to",
            args.param
        )));
    }
    let sets = resolve::plan_targets(std::slice::from_ref(target), &args.exec)?
        .remove(0)
        .overrides;
    for end in [args.from, args.to] {
        let mut overrides = sets.clone();
        overrides.push((args.param.clone(), end.to_string()));
        target
            .scenario
            .plan_with(&target.variant, &overrides, RangePolicy::Explore)?;
    }
    Ok(sets)
}
