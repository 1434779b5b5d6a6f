//! The launch of driver mode `command`: the user's own program (an integration built on the
//! CLI) runs in place of the CLI, in the sandbox's project folder, with the environment the
//! book's "Testing your own product" (`book/src/testing-your-product.md`) documents:
//!
//! - `WAKEPROBE_CLI`: the CLI of the run's version, behind the line tap (`evidence::tap`): an
//!   executable that takes the CLI's arguments, so every line between the integration and the
//!   CLI is evidence on the run's clock (the CLI's stdout as the `stream` source);
//! - `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`: the fake API (as every mode gets them);
//! - `WAKEPROBE_SDK_ENTRY`: the TypeScript Agent SDK's entry module, so an integration written
//!   on the SDK can `import()` it;
//! - `WAKEPROBE_SDK_CONFIG`: a JSON file of the run's settings (`cwd`, `cli_path`,
//!   `permission_mode`, `allowed_tools`, `persist_session`).
//!
//! Its stdin takes the integration protocol's input lines (`driver::input`), its stdout carries
//! what it shows its user (`evidence::integration`), its stderr is kept as `stderr.log`.

use std::path::{Path, PathBuf};

use super::DriverError;
use super::sdk::HostLaunch;
use crate::backend::sdk::{self, SdkVersions};
use crate::backend::{Cli, install};
use crate::os::env::RunVar;
use crate::sandbox::Sandbox;
use crate::scenario::Driver;
use crate::scenario::mode::Host;

/// The tapped CLI's name in the sandbox's `bin/`.
const TAPPED_CLI: &str = "wp-cli";

/// The run's settings, as the integration's config file says them.
#[derive(serde::Serialize)]
struct IntegrationConfig<'a> {
    cwd: String,
    cli_path: String,
    permission_mode: &'a str,
    allowed_tools: &'a [String],
    persist_session: bool,
}

/// Finds the integration's program, installs the SDK it may import, writes its config and the
/// tapped CLI, and says what to start. A program that is missing or not executable is a setup
/// failure here, before anything runs. The simulator is allowed: an integration that speaks
/// stream-json to the CLI runs on it (one on the Agent SDK fails to start there, and says so).
pub fn prepare(
    versions: &SdkVersions,
    cli: &Cli,
    cli_args: &[String],
    driver: &Driver,
    sandbox: &Sandbox,
) -> Result<HostLaunch, DriverError> {
    let (first, rest) = driver
        .command
        .split_first()
        .ok_or_else(|| DriverError::Start("mode `command` has no `command`".into()))?;
    let program = executable(first)?;
    let installed = sdk::ensure(
        &install::cache_root(),
        Host::SdkTs,
        versions.of(Host::SdkTs),
        &|line| eprintln!("wakeprobe: {line}"),
    )
    .map_err(|e| DriverError::Start(e.to_string()))?;
    let dir = sandbox.root().join("integration");
    std::fs::create_dir_all(&dir).map_err(|e| start(&dir, e))?;
    let cli_path = tapped_cli(cli, cli_args, sandbox)?.display().to_string();
    let config = IntegrationConfig {
        cwd: sandbox.project().display().to_string(),
        cli_path: cli_path.clone(),
        permission_mode: &driver.permission_mode,
        allowed_tools: &driver.allowed_tools,
        persist_session: driver.persist_session,
    };
    let config_path = dir.join("config.json");
    let json = serde_json::to_vec_pretty(&config).expect("the config serializes");
    std::fs::write(&config_path, json).map_err(|e| start(&config_path, e))?;
    let mut env = vec![
        (RunVar::SdkConfig, config_path.display().to_string()),
        (RunVar::Cli, cli_path),
    ];
    if let Some(entry) = &installed.entry {
        env.push((RunVar::SdkEntry, entry.display().to_string()));
    }
    // Node for a `node` integration is the one the SDK was installed for.
    let program = match first.as_str() {
        "node" => installed.program.clone(),
        _ => program,
    };
    Ok(HostLaunch {
        program,
        args: rest.to_vec(),
        env,
        sdk: installed,
    })
}

/// Writes the run's CLI (its program, leading arguments, then `--cli-arg`s after the
/// integration's own) as `bin/wp-cli` under the line tap.
fn tapped_cli(cli: &Cli, cli_args: &[String], sandbox: &Sandbox) -> Result<PathBuf, DriverError> {
    let wakeprobe = crate::backend::wakeprobe_binary()
        .map_err(|e| DriverError::Start(format!("cannot find the wakeprobe binary: {e}")))?;
    let helper = crate::backend::helper_binary(&wakeprobe);
    let mut command = vec![cli.program.display().to_string()];
    command.extend(cli.leading_args.iter().cloned());
    sandbox
        .write_tapped_command(&helper, TAPPED_CLI, &command, cli_args)
        .map_err(|e| DriverError::Start(format!("integration: {e}")))
}

/// The program's path: as given when it names a path, else found on the harness's `PATH`;
/// it must be an executable file.
fn executable(name: &str) -> Result<PathBuf, DriverError> {
    let found = if name.contains('/') {
        Some(PathBuf::from(name))
    } else {
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(name))
            .find(|p| is_executable(p))
    };
    match found {
        Some(path) if is_executable(&path) => Ok(path),
        Some(path) if path.exists() => Err(DriverError::Start(format!(
            "the integration's program {} is not an executable file",
            path.display()
        ))),
        _ => Err(DriverError::Start(format!(
            "the integration's program `{name}` does not exist (nor on PATH)"
        ))),
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn start(path: &Path, e: std::io::Error) -> DriverError {
    DriverError::Start(format!("integration: {}: {e}", path.display()))
}
