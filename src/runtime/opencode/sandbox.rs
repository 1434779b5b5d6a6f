//! What an opencode run's sandbox holds beyond the project: its configuration pointing at the
//! fake API, its own config, data, cache and state folders, the observer plugin, and the
//! environment that keeps everything on loopback.
//!
//! Measured on 1.18.33 with a loopback DNS logger: with `OPENCODE_DISABLE_MODELS_FETCH=true`
//! (no models.dev catalogue fetch) and the global config folder seeded with an empty
//! `node_modules/` and a `package-lock.json` that already names `@opencode-ai/plugin` (no
//! background `npm install`), nothing but the fake API is looked up. HOME stays empty once the
//! XDG folders are set. `"permission": {"*": "allow"}` removes every ask (`run` rejects asks on
//! its own). The plugin lives outside the project: a `.opencode/` folder there would be one
//! more config folder to seed.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::os::env::RunVar;
use crate::sandbox::{Sandbox, SandboxError};

/// The observer plugin, written into every sandbox.
const PLUGIN: &str = include_str!("wp-events-plugin.js");
/// Where the plugin writes, inside the run's evidence folder (copied into its report folder).
pub const EVENTS_FILE: &str = "opencode-events.jsonl";
/// The model the project configures; the bundled catalogue knows it with no fetch.
const MODEL: &str = "anthropic/claude-sonnet-4-5";

fn write(path: &Path, text: &str) -> Result<(), SandboxError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| SandboxError::Write {
            path: dir.display().to_string(),
            source,
        })?;
    }
    std::fs::write(path, text).map_err(|source| SandboxError::Write {
        path: path.display().to_string(),
        source,
    })
}

/// The XDG folders of the run: `(variable, folder)` (its row in `scenario::runtime` keeps a
/// scenario's `env` off them).
fn xdg(sandbox: &Sandbox) -> Vec<(&'static str, PathBuf)> {
    let root = sandbox.root().join("xdg");
    [
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_STATE_HOME", "state"),
    ]
    .into_iter()
    .map(|(var, dir)| (var, root.join(dir)))
    .collect()
}

/// Writes opencode's files for a run against the fake API at `api_url` (`http://127.0.0.1:P`),
/// its plugin writing into `evidence`; returns what opencode's environment adds to the
/// scrubbed one.
pub fn prepare(
    sandbox: &Sandbox,
    api_url: &str,
    evidence: &Path,
) -> Result<crate::runtime::Env, SandboxError> {
    let folders = xdg(sandbox);
    for (_, dir) in &folders {
        std::fs::create_dir_all(dir).map_err(|source| SandboxError::Write {
            path: dir.display().to_string(),
            source,
        })?;
    }
    let config_home = &folders[0].1;
    let global = config_home.join("opencode");
    std::fs::create_dir_all(global.join("node_modules")).map_err(|source| SandboxError::Write {
        path: global.display().to_string(),
        source,
    })?;
    let plugin_dep = json!({"dependencies": {"@opencode-ai/plugin": "*"}});
    write(&global.join("package.json"), &plugin_dep.to_string())?;
    write(
        &global.join("package-lock.json"),
        &json!({"packages": {"": plugin_dep}}).to_string(),
    )?;
    let plugin = sandbox
        .root()
        .join("opencode-plugin")
        .join("wp-events-plugin.js");
    write(&plugin, PLUGIN)?;
    let config = json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"anthropic": {"options": {
            "baseURL": format!("{api_url}/v1"),
            "apiKey": crate::backend::DUMMY_KEY,
        }}},
        "model": MODEL,
        "autoupdate": false,
        "share": "disabled",
        "permission": {"*": "allow"},
        "plugin": [format!("file://{}", plugin.display())],
    });
    write(
        &sandbox.project().join("opencode.json"),
        &serde_json::to_string_pretty(&config).expect("a JSON value"),
    )?;
    let mut env: crate::runtime::Env = folders
        .into_iter()
        .map(|(var, dir)| (var, dir.display().to_string()))
        .collect();
    env.extend(
        [
            RunVar::OpencodeBackgroundSubagents,
            RunVar::OpencodeNoModelsFetch,
            RunVar::OpencodeNoAutoupdate,
            // The project's `.claude/` (the harness's recorder hooks) is Claude Code's.
            RunVar::OpencodeNoClaudeCode,
        ]
        .map(|var| (var.name(), "true".to_string())),
    );
    env.push((
        RunVar::OpencodeEvents.name(),
        evidence.join(EVENTS_FILE).display().to_string(),
    ));
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sandbox_points_opencode_at_the_fake_and_nowhere_else() {
        let template = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::build(&crate::sandbox::SandboxSpec {
            template: template.path().to_path_buf(),
            helper_bin: PathBuf::from("/bin/true"),
            guard: false,
            label: "opencode-test".into(),
        })
        .unwrap();
        let evidence = sandbox.root().join("evidence");
        let env = prepare(&sandbox, "http://127.0.0.1:9", &evidence).unwrap();
        let get = |k: &str| {
            env.iter()
                .find(|(var, _)| *var == k)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            get("OPENCODE_DISABLE_MODELS_FETCH").as_deref(),
            Some("true")
        );
        assert_eq!(
            get("OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS").as_deref(),
            Some("true")
        );
        let config_home = PathBuf::from(get("XDG_CONFIG_HOME").unwrap());
        assert!(config_home.starts_with(sandbox.root()));
        // Seeded so no background `npm install` starts.
        assert!(config_home.join("opencode/node_modules").is_dir());
        let lock = std::fs::read_to_string(config_home.join("opencode/package-lock.json")).unwrap();
        assert!(lock.contains("@opencode-ai/plugin"), "{lock}");
        let config: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(sandbox.project().join("opencode.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            config["provider"]["anthropic"]["options"]["baseURL"],
            "http://127.0.0.1:9/v1"
        );
        assert_eq!(config["permission"]["*"], "allow");
        let plugin = config["plugin"][0]
            .as_str()
            .unwrap()
            .strip_prefix("file://")
            .unwrap();
        assert!(Path::new(plugin).is_file() && !plugin.contains("/project/"));
        assert!(
            get("WAKEPROBE_OPENCODE_EVENTS")
                .unwrap()
                .starts_with(&evidence.display().to_string())
        );
    }
}
