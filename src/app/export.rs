//! `wakeprobe export`: resolve one scenario variant with `--set`, render it as a standalone Node
//! script (`crate::report::export`), and write it (executable) or print it.

use std::io::Write;
use std::path::Path;

use super::{AppError, AppResult, resolve};
use crate::backend::install;
use crate::cli::{ExportArgs, exit};
use crate::scenario::{DriverMode, RangePolicy};

/// `wakeprobe export`
pub async fn export(args: &ExportArgs) -> AppResult {
    if args.scenario == "all" {
        return Err(AppError::bad_input("export takes one scenario, not `all`"));
    }
    let scenario = resolve::scenarios(std::slice::from_ref(&args.scenario))?.remove(0);
    let variant = match &args.variant {
        Some(v) => v.clone(),
        None => scenario.variants().remove(0),
    };
    let policy = if args.explore {
        RangePolicy::Explore
    } else {
        RangePolicy::Enforce
    };
    resolve::check_sets_once(&args.sets)?;
    let plan = scenario.plan_with(&variant, &args.sets, policy)?;
    if plan.driver.mode == DriverMode::Pty {
        return Err(AppError::bad_input(format!(
            "{}/{variant}: a pty-mode scenario cannot be exported (the script drives print and session modes only)",
            scenario.name
        )));
    }
    if plan.driver.guard {
        return Err(AppError::bad_input(format!(
            "{}/{variant}: the scenario installs wakeprobe's stall guard, which the exported script does not carry",
            scenario.name
        )));
    }
    if !plan.faults.is_empty() {
        return Err(AppError::bad_input(format!(
            "{}/{variant}: the scenario injects faults (`[[faults]]`), which the exported script does not carry",
            scenario.name
        )));
    }
    let version = resolve_version(&args.claude_version).await?;
    let script = crate::report::export::render(&plan, &version);
    if args.output.as_os_str() == "-" {
        std::io::stdout()
            .write_all(script.as_bytes())
            .map_err(|e| AppError::setup(format!("cannot write the script: {e}")))?;
        return Ok(exit::OK);
    }
    write_executable(&args.output, script.as_bytes())
        .map_err(|e| AppError::setup(format!("cannot write {}: {e}", args.output.display())))?;
    eprintln!(
        "wrote {} ({}/{variant} on Claude Code {version}); run it with: node {}",
        args.output.display(),
        scenario.name,
        args.output.display()
    );
    Ok(exit::OK)
}

/// A concrete version: `latest` and `latest~K` ask npm once; anything else must be X.Y.Z.
async fn resolve_version(spec: &str) -> Result<String, AppError> {
    if !spec.starts_with("latest") {
        return Ok(install::resolve_version(spec, &[])?);
    }
    let published = super::matrix::published_versions().await?;
    Ok(install::resolve_version(spec, &published)?)
}

/// Written whole (atomically), then made executable.
fn write_executable(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    crate::report::store::write_atomic(path, bytes).map_err(|e| e.source)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}
