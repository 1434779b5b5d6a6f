//! `wakeprobe export`: resolve one scenario variant with `--set`, render it as a standalone Node
//! script (`crate::report::export`), and write it (executable) or print it.

use std::io::Write;
use std::path::Path;

use super::{AppError, AppResult, resolve};
use crate::backend::catalog::Spec;
use crate::backend::channel::{CLAUDE_CODE_PACKAGE, Channel, ChannelName};
use crate::backend::install;
use crate::cli::{Exit, ExportArgs};
use crate::scenario::{DriverMode, RangePolicy};

/// `wakeprobe export`
pub async fn export(args: &ExportArgs) -> AppResult {
    if args.scenario == "all" {
        return Err(AppError::bad_input("export takes one scenario, not `all`"));
    }
    if args.output.as_os_str() != "-" {
        let existing = crate::store::output::forced(args.force);
        crate::store::output::check_file(&args.output, existing, None)
            .map_err(|e| AppError::from(e).prefixed("-o "))?;
    }
    let scenario = resolve::scenarios(std::slice::from_ref(&args.scenario))?.remove(0);
    // The script drives Claude Code: a scenario of another runtime is exported as it runs there.
    let scenario = resolve::on_runtime(&scenario, crate::scenario::Runtime::ClaudeCode)?;
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
    if !plan.driver.mode.row().exportable {
        return Err(AppError::bad_input(format!(
            "{}/{variant}: a {}-mode scenario cannot be exported (the script drives {} modes only)",
            scenario.name,
            plan.driver.mode,
            DriverMode::those(|r| r.exportable)
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
        return Ok(Exit::Ok);
    }
    write_executable(&args.output, script.as_bytes())
        .map_err(|e| AppError::setup(format!("cannot write {}: {e}", args.output.display())))?;
    eprintln!(
        "wrote {} ({}/{variant} on Claude Code {version}); run it with: node {}",
        args.output.display(),
        scenario.name,
        args.output.display()
    );
    Ok(Exit::Ok)
}

/// A concrete version the exported script can install: `latest`, `latest~K` and a version not
/// cached ask the registry once. The script installs the claude-code package only: a version
/// that comes from the Agent SDK is refused here, naming what to do instead.
async fn resolve_version(spec: &str) -> Result<String, AppError> {
    let parsed = Spec::parse(spec)?;
    if let Spec::Exact(v) = &parsed {
        let cached = install::cached_channel(&install::cache_root(), &v.to_string());
        if cached == Some(Channel::ClaudeCode) {
            return Ok(v.to_string());
        }
    }
    let catalog = resolve::catalog().await?;
    let release = catalog.resolve(&parsed)?;
    if release.channel == Channel::ClaudeCode {
        return Ok(release.version.to_string());
    }
    Err(AppError::bad_input(format!(
        "--claude-version {spec}: {} comes from the Agent SDK, and the exported script installs \
         only {CLAUDE_CODE_PACKAGE} (newest {}); export with one of its versions, and run the \
         script with --claude-bin PATH for this one",
        release.describe(),
        catalog
            .last_of(ChannelName::ClaudeCode)
            .map(|r| r.version.to_string())
            .unwrap_or_default()
    )))
}

/// Written whole (atomically), then made executable.
fn write_executable(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    crate::store::write_atomic(path, bytes).map_err(|e| e.source)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}
