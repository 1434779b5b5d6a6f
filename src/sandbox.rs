//! The throwaway world a run happens in: project, HOME, TMPDIR, helper commands, hooks.
//!
//! Layout of one sandbox (a fresh temp folder per run):
//! ```text
//! project/   copy of sandbox-project/, a git repo, .claude/settings.json with recorder hooks
//! home/      the CLI's HOME: .claude.json with the workspace trust pre-accepted
//! tmp/       the CLI's TMPDIR (background task output files land here)
//! bin/       wp-track, first on the CLI's PATH; wp-cli, the CLI under the line tap (mode command)
//! folders/   second sandboxed folders a scenario's `env` names (`{{@folder:NAME}}`), empty
//! events.sock, hooks-fallback.jsonl
//! ```
//! It knows nothing about any CLI beyond the files the CLI reads; the real HOME is never read
//! or written (git runs with the sandbox HOME and no global config).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::evidence::HookName;
use crate::os::subprocess::{Finished, run_bounded};

/// How long one git command in the sandbox may take.
const GIT_LIMIT: Duration = Duration::from_secs(60);

/// Every hook event the recorder listens to. Events a CLI version does not know are ignored by
/// it (measured on 2.1.332); their absence in a timeline is itself evidence.
pub const HOOK_EVENTS: [HookName; 11] = [
    HookName::SessionStart,
    HookName::UserPromptSubmit,
    HookName::PreToolUse,
    HookName::PostToolUse,
    HookName::SubagentStart,
    HookName::SubagentStop,
    HookName::Stop,
    HookName::SessionEnd,
    HookName::Notification,
    HookName::TeammateIdle,
    HookName::PreCompact,
];

/// Holds the pid of the harness that built a sandbox.
const OWNER_FILE: &str = "owner.pid";

/// Removes sandboxes left in the temp folder by harnesses that died (SIGKILL, power loss);
/// returns how many. A sandbox whose owner is alive, or that has no owner file, is left alone.
pub fn sweep_stale() -> usize {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if !entry
            .file_name()
            .to_string_lossy()
            .starts_with("wakeprobe-")
        {
            continue;
        }
        let Some(pid) = std::fs::read_to_string(path.join(OWNER_FILE))
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok())
        else {
            continue;
        };
        if crate::os::procs::exists(pid) || runs_of_harness_alive(pid) {
            continue;
        }
        // Claim it first by a rename: harnesses starting at the same moment all sweep, and
        // only the one whose rename succeeds removes it.
        let claimed = path.with_file_name(format!(
            ".wakeprobe-stale-{}-{}",
            std::process::id(),
            removed
        ));
        if std::fs::rename(&path, &claimed).is_ok() && std::fs::remove_dir_all(&claimed).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether processes of a dead harness's runs still live (its supervisor is ending them): a
/// CLI that is still dying would write into the sandbox's HOME again after it was removed,
/// leaving a folder with no owner that no sweep takes. A later sweep removes it.
fn runs_of_harness_alive(harness: u32) -> bool {
    !crate::os::procs::tagged_with_prefix(crate::backend::RUN_TAG_ENV, &format!("{harness}-"))
        .is_empty()
}

/// The guard's registration file in the template; removed unless a scenario opts in.
const GUARD_SETTINGS: &str = ".claude/settings.local.json";

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("cannot create the sandbox in {dir}: {source}")]
    Create { dir: String, source: std::io::Error },
    #[error("cannot copy the project template {template}: {source}")]
    Template {
        template: String,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("git failed in the sandbox project: {0}")]
    Git(String),
}

/// What goes into a sandbox.
#[derive(Debug, Clone)]
pub struct SandboxSpec {
    /// The `sandbox-project/` template folder.
    pub template: PathBuf,
    /// The binary with the recorder and tracker commands (`wakeprobe-helper` or `wakeprobe`).
    pub helper_bin: PathBuf,
    /// Install the stall guard (`settings.local.json`) from the template.
    pub guard: bool,
    /// A short name used in the folder name.
    pub label: String,
}

/// A built sandbox; removed on drop unless kept.
#[derive(Debug)]
pub struct Sandbox {
    dir: Option<tempfile::TempDir>,
    root: PathBuf,
}

impl Sandbox {
    pub fn build(spec: &SandboxSpec) -> Result<Sandbox, SandboxError> {
        let base = std::env::temp_dir();
        let dir = tempfile::Builder::new()
            .prefix(&format!("wakeprobe-{}-", spec.label))
            .tempdir_in(&base)
            .map_err(|source| SandboxError::Create {
                dir: base.display().to_string(),
                source,
            })?;
        let root = dir.path().to_path_buf();
        // Who owns this sandbox: a later harness removes it if this one died without cleaning.
        write(
            &root.join(OWNER_FILE),
            std::process::id().to_string().as_bytes(),
        )?;
        let sandbox = Sandbox {
            dir: Some(dir),
            root,
        };
        for sub in ["project", "home", "tmp", "bin"] {
            mkdir(&sandbox.root.join(sub))?;
        }
        copy_tree(&spec.template, &sandbox.project()).map_err(|source| SandboxError::Template {
            template: spec.template.display().to_string(),
            source,
        })?;
        if !spec.guard {
            let _ = std::fs::remove_file(sandbox.project().join(GUARD_SETTINGS));
        }
        sandbox.write_settings(&spec.helper_bin)?;
        sandbox.write_home()?;
        sandbox.write_track_command(&spec.helper_bin)?;
        sandbox.init_git()?;
        Ok(sandbox)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
    pub fn project(&self) -> PathBuf {
        self.root.join("project")
    }
    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }
    pub fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }
    pub fn bin(&self) -> PathBuf {
        self.root.join("bin")
    }
    /// A second sandboxed folder a scenario's `env` names (`{{@folder:NAME}}`), created empty
    /// the first time it is asked for. `name` is a plain name (`scenario::env` checked it).
    pub fn folder(&self, name: &str) -> std::io::Result<PathBuf> {
        let dir = self.root.join("folders").join(name);
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }
    pub fn events_socket(&self) -> PathBuf {
        self.root.join("events.sock")
    }
    pub fn fallback_log(&self) -> PathBuf {
        self.root.join("hooks-fallback.jsonl")
    }
    /// The CLI's transcripts folder inside the sandbox HOME.
    pub fn transcripts(&self) -> PathBuf {
        self.home().join(".claude").join("projects")
    }

    /// Keeps the folder after the run (for `--keep`, `WAKEPROBE_KEEP=1`); returns its path.
    /// A kept sandbox has no owner any more, so no later sweep removes it.
    pub fn keep(&mut self) -> PathBuf {
        if let Some(dir) = self.dir.take() {
            let _ = dir.keep();
        }
        let _ = std::fs::remove_file(self.root.join(OWNER_FILE));
        self.root.clone()
    }

    fn write_settings(&self, helper: &Path) -> Result<(), SandboxError> {
        let command = format!(
            "{} hook-record --socket {} --fallback {}",
            quote(helper),
            quote(&self.events_socket()),
            quote(&self.fallback_log()),
        );
        let mut hooks = serde_json::Map::new();
        for event in HOOK_EVENTS {
            hooks.insert(
                event.as_str().to_string(),
                json!([{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]),
            );
        }
        let path = self.project().join(".claude").join("settings.json");
        let mut settings = read_json_or_empty(&path);
        settings["hooks"] = serde_json::Value::Object(hooks);
        mkdir(&self.project().join(".claude"))?;
        write(
            &path,
            &serde_json::to_vec_pretty(&settings).expect("settings serialize"),
        )
    }

    fn write_home(&self) -> Result<(), SandboxError> {
        let project = self.project();
        let config = json!({
            "projects": { project.display().to_string(): {
                "hasTrustDialogAccepted": true,
                "hasCompletedProjectOnboarding": true,
            }},
            "hasCompletedOnboarding": true,
            "theme": "dark",
            "autoUpdates": false,
            "customApiKeyResponses": {"approved": [crate::backend::DUMMY_KEY_TAIL], "rejected": []},
        });
        write(
            &self.home().join(".claude.json"),
            &serde_json::to_vec_pretty(&config).expect("config serialize"),
        )
    }

    fn write_track_command(&self, helper: &Path) -> Result<(), SandboxError> {
        let script = format!(
            "#!/bin/sh\n# Runs a command under wakeprobe's task tracker: wp-track NAME 'COMMAND'\nexec {} track --socket {} --fallback {} \"$@\"\n",
            quote(helper),
            quote(&self.events_socket()),
            quote(&self.fallback_log()),
        );
        let path = self.bin().join("wp-track");
        write(&path, script.as_bytes())?;
        set_executable(&path)
    }

    /// Writes `bin/NAME`, a script that runs `command`, then the script's own arguments, then
    /// `trailing`, under the line tap (`evidence::tap`): every line between its caller and the
    /// command is reported on the events socket. Returns its path.
    pub fn write_tapped_command(
        &self,
        helper: &Path,
        name: &str,
        command: &[String],
        trailing: &[String],
    ) -> Result<PathBuf, SandboxError> {
        let quoted = |args: &[String]| -> String {
            args.iter()
                .map(|a| format!(" {}", crate::os::subprocess::shell_quoted(a)))
                .collect()
        };
        let script = format!(
            "#!/bin/sh\n# Runs the CLI under wakeprobe's line tap: every line to and from it is evidence.\nexec {} cli-tap --socket {} --fallback {} --{} \"$@\"{}\n",
            quote(helper),
            quote(&self.events_socket()),
            quote(&self.fallback_log()),
            quoted(command),
            quoted(trailing),
        );
        let path = self.bin().join(name);
        write(&path, script.as_bytes())?;
        set_executable(&path)?;
        Ok(path)
    }

    fn init_git(&self) -> Result<(), SandboxError> {
        let mut env = crate::os::env::tool_env(&self.home());
        env.extend(
            [
                ("GIT_CONFIG_GLOBAL", "/dev/null"),
                ("GIT_CONFIG_NOSYSTEM", "1"),
                ("GIT_AUTHOR_NAME", "wakeprobe"),
                ("GIT_AUTHOR_EMAIL", "wakeprobe@localhost"),
                ("GIT_COMMITTER_NAME", "wakeprobe"),
                ("GIT_COMMITTER_EMAIL", "wakeprobe@localhost"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        let run = |args: &[&str]| -> Result<(), SandboxError> {
            let git = duct::cmd("git", args)
                .dir(self.project())
                .full_env(env.clone())
                .stdin_null()
                .stdout_null()
                .stderr_capture();
            match run_bounded(&git, GIT_LIMIT)
                .map_err(|e| SandboxError::Git(format!("cannot run git: {e}")))?
            {
                Finished::Exited(out) if out.status.success() => Ok(()),
                Finished::Exited(out) => Err(SandboxError::Git(format!(
                    "git {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ))),
                Finished::TimedOut => Err(SandboxError::Git(format!(
                    "git {} did not finish within {} s",
                    args.join(" "),
                    GIT_LIMIT.as_secs()
                ))),
            }
        };
        // No template: the sample hooks are a dozen files per sandbox, and nothing reads them.
        run(&["init", "-q", "-b", "main", "--template="])?;
        run(&["add", "-A"])?;
        run(&["commit", "-q", "-m", "wakeprobe sandbox"])
    }
}

fn read_json_or_empty(path: &Path) -> serde_json::Value {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .filter(serde_json::Value::is_object)
        .unwrap_or_else(|| json!({}))
}

fn mkdir(path: &Path) -> Result<(), SandboxError> {
    std::fs::create_dir_all(path).map_err(|source| SandboxError::Write {
        path: path.display().to_string(),
        source,
    })
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), SandboxError> {
    std::fs::write(path, bytes).map_err(|source| SandboxError::Write {
        path: path.display().to_string(),
        source,
    })
}

fn set_executable(path: &Path) -> Result<(), SandboxError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).map_err(|source| {
        SandboxError::Write {
            path: path.display().to_string(),
            source,
        }
    })
}

/// Copies a folder tree, keeping the executable bit; symlinks are copied as links.
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry?;
        let target = to.join(
            entry
                .path()
                .strip_prefix(from)
                .expect("walked below `from`"),
        );
        let kind = entry.file_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Quotes a path for a POSIX shell.
fn quote(path: &Path) -> String {
    crate::os::subprocess::shell_quoted(&path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sandbox-project")
    }

    #[test]
    fn a_tree_copy_keeps_links_as_links_and_the_executable_bit() {
        use std::os::unix::fs::PermissionsExt;
        let from = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(from.path().join("a/b")).unwrap();
        std::fs::write(from.path().join("a/b/run.sh"), "#!/bin/sh\n").unwrap();
        set_executable(&from.path().join("a/b/run.sh")).unwrap();
        std::fs::write(from.path().join("plain.txt"), "x").unwrap();
        std::os::unix::fs::symlink("a/b/run.sh", from.path().join("link")).unwrap();
        let to = tempfile::tempdir().unwrap();
        copy_tree(from.path(), &to.path().join("copy")).unwrap();
        let copy = to.path().join("copy");
        let mode = |p: &str| {
            std::fs::metadata(copy.join(p))
                .unwrap()
                .permissions()
                .mode()
        };
        assert_eq!(mode("a/b/run.sh") & 0o111, 0o111);
        assert_eq!(mode("plain.txt") & 0o111, 0);
        assert_eq!(
            std::fs::read_link(copy.join("link")).unwrap(),
            Path::new("a/b/run.sh")
        );
    }

    #[test]
    fn builds_project_home_and_hooks() {
        let sandbox = Sandbox::build(&SandboxSpec {
            template: template(),
            helper_bin: PathBuf::from("/opt/wp/wakeprobe"),
            guard: false,
            label: "test".into(),
        })
        .unwrap();
        let settings: serde_json::Value = serde_json::from_slice(
            &std::fs::read(sandbox.project().join(".claude/settings.json")).unwrap(),
        )
        .unwrap();
        for event in HOOK_EVENTS {
            let cmd = settings["hooks"][event.as_str()][0]["hooks"][0]["command"]
                .as_str()
                .unwrap();
            assert!(
                cmd.starts_with("'/opt/wp/wakeprobe' hook-record --socket '"),
                "{cmd}"
            );
        }
        let home: serde_json::Value =
            serde_json::from_slice(&std::fs::read(sandbox.home().join(".claude.json")).unwrap())
                .unwrap();
        let key = sandbox.project().display().to_string();
        assert_eq!(
            home["projects"][key.as_str()]["hasTrustDialogAccepted"],
            true
        );
        assert!(sandbox.project().join(".git").is_dir());
        assert!(
            !sandbox.project().join(GUARD_SETTINGS).exists(),
            "guard not installed"
        );
        let track = std::fs::read_to_string(sandbox.bin().join("wp-track")).unwrap();
        assert!(track.contains("track --socket"));
        let root = sandbox.root().to_path_buf();
        drop(sandbox);
        assert!(!root.exists(), "removed on drop");
    }

    #[test]
    fn the_guard_is_installed_on_request_and_kept_folders_survive() {
        let mut sandbox = Sandbox::build(&SandboxSpec {
            template: template(),
            helper_bin: PathBuf::from("/bin/true"),
            guard: true,
            label: "guard".into(),
        })
        .unwrap();
        assert!(sandbox.project().join(GUARD_SETTINGS).exists());
        assert!(
            sandbox
                .project()
                .join(".claude/hooks/subagent-stall-guard.sh")
                .exists()
        );
        let kept = sandbox.keep();
        drop(sandbox);
        assert!(kept.exists());
        std::fs::remove_dir_all(kept).unwrap();
    }
}
