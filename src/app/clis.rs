//! The CLIs that version specs stand for, shared by `matrix`, `bisect` and `history`: each
//! spec resolved to its exact version (`latest` -> `2.1.337`, over both channels, or as
//! `--resolve` says), a simulator profile where `--sim-version` maps one, else the version
//! installed into the cache (once each).

use super::{AppError, resolve};
use crate::backend::Cli;
use crate::backend::channel::Channel;
use crate::cli;

/// The CLIs for version specs: simulator profiles standing in for versions when mapped
/// (`--sim-version V=PROFILE`), else real versions installed into the cache (once each).
pub async fn clis_for(
    specs: &[(String, String)],
    sim_versions: &[(String, String)],
    pinned: &[(String, String)],
) -> Result<Vec<Cli>, AppError> {
    let mut clis = Vec::new();
    for (spec, exact) in specs {
        if !sim_versions.is_empty() {
            let profile = sim_versions
                .iter()
                .find(|(v, _)| v == spec)
                .map(|(_, p)| p)
                .ok_or_else(|| {
                    AppError::bad_input(format!(
                        "--sim-version maps no profile to `{spec}` (a version of --versions): add --sim-version {spec}=PROFILE, or list the mapped versions in --versions"
                    ))
                })?;
            let mut cli = resolve::sim_cli(profile)?;
            cli.version = spec.clone();
            cli.spec = spec.clone();
            clis.push(cli);
        } else if pinned.iter().any(|(s, _)| s == spec) {
            // `--resolve`: the exact version it was told, under the spec as asked.
            let runtime = crate::runtime::split_spec(spec).0;
            let mut cli =
                resolve::claude_version(&crate::runtime::qualified(runtime, exact)).await?;
            cli.spec = spec.clone();
            clis.push(cli);
        } else {
            // The spec as asked (`latest` resolves to `exact` again: the catalog is asked once
            // per invocation), so a cached exact version runs as cached and `latest` runs the
            // registry's release.
            let cli = resolve::claude_version(spec).await?;
            debug_assert_eq!(&cli.version, exact);
            clis.push(cli);
        }
    }
    Ok(clis)
}

/// Each version spec with the exact version it stands for (`latest` -> `2.1.335`), over both
/// channels, or as `--resolve` says; with the channel when the registry told it.
pub async fn resolve_specs(
    versions: &[String],
    sim_versions: &[(String, String)],
    pinned: &[(String, String)],
) -> Result<Vec<(String, String, Option<Channel>)>, AppError> {
    crate::matrix::identity::check_pins(versions, sim_versions, pinned)
        .map_err(AppError::bad_input)?;
    let mut out: Vec<(String, String, Option<Channel>)> = Vec::new();
    for v in versions {
        let (exact, channel) = if !sim_versions.is_empty() {
            (v.clone(), None)
        } else if let Some((_, pin)) = pinned.iter().find(|(s, _)| s == v) {
            (pin.clone(), None)
        } else {
            let exact = resolve::exact_version(v).await?;
            // Only a spec the registry resolved is known by its channel before it installs.
            let claude = crate::runtime::split_spec(v).0 == crate::runtime::Runtime::ClaudeCode;
            let channel = (claude && exact != *v)
                .then(|| resolve::known_channel(&exact))
                .flatten();
            (exact, channel)
        };
        if exact != *v {
            eprintln!("wakeprobe: {v} is {}", resolve::describe(&exact));
        }
        if !out.iter().any(|(s, _, _)| s == v) {
            out.push((v.clone(), exact, channel));
        }
    }
    Ok(out)
}

/// The matrix's version specs: `--versions`, each of `--runtime` (qualified when that is not
/// Claude Code: `opencode@1.18.33`) unless it names its own; else each runtime's pinned
/// version.
pub fn version_specs(args: &cli::MatrixArgs) -> Result<Vec<String>, AppError> {
    use crate::runtime::{Adapter, Runtime, qualified, split_spec};
    let runtimes = match args.runtime.as_slice() {
        [] => vec![Runtime::ClaudeCode],
        given => given.to_vec(),
    };
    if args.versions.is_empty() {
        return Ok(runtimes
            .iter()
            .map(|r| qualified(*r, Adapter::of(*r).pinned))
            .collect());
    }
    match runtimes.as_slice() {
        [one] => Ok(args
            .versions
            .iter()
            .map(|v| match split_spec(v) {
                (Runtime::ClaudeCode, _) => qualified(*one, v),
                _ => v.clone(),
            })
            .collect()),
        _ => Err(AppError::bad_input(
            "--versions with more than one --runtime: write each version with its runtime (`--versions 2.1.332,opencode@1.18.33`), or leave --versions out for each runtime's pinned one",
        )),
    }
}
