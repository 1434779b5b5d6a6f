//! The launch of an SDK driver mode (`sdk`, `sdk-py`): instead of the CLI, the supervisor
//! starts an Agent SDK host (`sdk/host.mjs` under Node, `sdk/host.py` in the Python SDK's
//! virtual environment), written into the run's sandbox with a config file of the run's
//! settings. The host starts the run's CLI through the SDK and speaks stream-json to the
//! harness on both ends, so inputs, control requests and the end of input are sent as for a
//! kept-alive session, and what the SDK yields is read as the `sdk` evidence source.

use std::path::{Path, PathBuf};

use super::DriverError;
use crate::backend::sdk::{self, SdkInstall};
use crate::backend::{Cli, install};
use crate::os::env::RunVar;
use crate::sandbox::Sandbox;
use crate::scenario::mode::Host;
use crate::scenario::{Driver, PromptForm};

const TS_HOST: &str = include_str!("sdk/host.mjs");
const PY_HOST: &str = include_str!("sdk/host.py");

/// Why an SDK mode cannot run on the simulator.
pub const SIM_SPEAKS_NO_SDK: &str = "the simulator does not speak the Agent SDK's side of the CLI's protocol (the `initialize` request, hook callbacks, `canUseTool`): run the SDK drivers on the real CLI";

/// What the supervisor starts for an SDK mode.
pub struct HostLaunch {
    pub sdk: SdkInstall,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The harness's variables for it, beside the run's environment.
    pub env: Vec<(RunVar, String)>,
}

/// The host's settings, as its config file says them.
#[derive(serde::Serialize)]
struct HostConfig<'a> {
    cwd: String,
    cli_path: String,
    permission_mode: &'a str,
    allowed_tools: &'a [String],
    persist_session: bool,
    prompt_form: PromptForm,
    callback_hooks: Vec<&'a str>,
}

/// Installs the SDK (once, into the cache), writes the host and its config into the sandbox,
/// and says what to start.
pub fn prepare(
    host: Host,
    versions: &sdk::SdkVersions,
    cli: &Cli,
    driver: &Driver,
    sandbox: &Sandbox,
) -> Result<HostLaunch, DriverError> {
    if matches!(cli.kind, crate::backend::BackendKind::Sim { .. }) {
        return Err(DriverError::Start(SIM_SPEAKS_NO_SDK.into()));
    }
    let installed = sdk::ensure(&install::cache_root(), host, versions.of(host), &|line| {
        eprintln!("wakeprobe: {line}")
    })
    .map_err(|e| DriverError::Start(e.to_string()))?;
    let dir = sandbox.root().join("sdk-host");
    std::fs::create_dir_all(&dir).map_err(|e| start(&dir, e))?;
    let (script, text) = match host {
        Host::SdkTs => (dir.join("host.mjs"), TS_HOST),
        Host::SdkPy => (dir.join("host.py"), PY_HOST),
    };
    std::fs::write(&script, text).map_err(|e| start(&script, e))?;
    let config = HostConfig {
        cwd: sandbox.project().display().to_string(),
        cli_path: cli_path(cli),
        permission_mode: &driver.permission_mode,
        allowed_tools: &driver.allowed_tools,
        persist_session: driver.persist_session,
        prompt_form: driver.prompt_form,
        callback_hooks: driver.callback_hooks.iter().map(|h| h.as_str()).collect(),
    };
    let config_path = dir.join("config.json");
    let json = serde_json::to_vec_pretty(&config).expect("the config serializes");
    std::fs::write(&config_path, json).map_err(|e| start(&config_path, e))?;
    let mut env = vec![(RunVar::SdkConfig, config_path.display().to_string())];
    if let Some(entry) = &installed.entry {
        env.push((RunVar::SdkEntry, entry.display().to_string()));
    }
    Ok(HostLaunch {
        program: installed.program.clone(),
        args: vec![script.display().to_string()],
        env,
        sdk: installed,
    })
}

/// The executable the SDK starts: the CLI's binary, or its JavaScript entry (which the SDKs run
/// under Node themselves).
pub(super) fn cli_path(cli: &Cli) -> String {
    match cli.leading_args.first() {
        Some(entry) if entry.ends_with(".js") || entry.ends_with(".mjs") => entry.clone(),
        _ => cli.program.display().to_string(),
    }
}

fn start(path: &Path, e: std::io::Error) -> DriverError {
    DriverError::Start(format!("SDK host: {}: {e}", path.display()))
}
