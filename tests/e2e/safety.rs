//! Safety: nothing a run starts outlives it (ceiling, Ctrl-C), no byte leaves loopback, and
//! the user's real HOME and credentials are never touched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::*;

fn hang() -> String {
    root()
        .join("tests/fixtures/scenarios/hang.toml")
        .display()
        .to_string()
}

#[test]
fn a_run_stopped_by_its_ceiling_leaves_no_process() {
    let _cli = cli_slots(1);
    let out = tempfile::tempdir().unwrap();
    // A 20 s ceiling: a busy machine's CLI can take 10 s to start the command, and the test
    // is about what the ceiling does to a command that runs.
    let cmd = wakeprobe(&[
        "run",
        &hang(),
        "--set",
        "ceiling=20",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    succeeds_leaving_nothing(cmd, Duration::from_secs(120));
    let run = &runs(&run_dir(out.path()))[0];
    assert!(
        !kind(&events(run), "track_started", None).is_empty(),
        "the endless command never started within the ceiling: this machine is too busy for the test"
    );
    let info = json(&run.join("run.json"));
    assert_eq!(info["end"], "ceiling");
    assert_eq!(
        info["leftovers"].as_array().unwrap().len(),
        0,
        "the supervisor got everything: {info}"
    );
    let result = json(&run.join("result.json"));
    assert_eq!(result["judgement"]["outcome"], "unknown");
    let reason = result["judgement"]["verdicts"][0]["reason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("cut short") && reason.contains("ceiling"),
        "the ceiling cut the run short: {reason}"
    );
    // The escaped, TERM-ignoring grandchild was reaped by the supervisor.
    let reaped = kind(&events(run), "process_exited", None)
        .iter()
        .filter(|e| e["command"] == "sleep" && e["exit"]["signal"] == 9)
        .count();
    assert!(reaped >= 1, "the TERM-ignoring sleep was SIGKILLed");
}

#[test]
fn ctrl_c_stops_the_run_and_leaves_no_process() {
    let _cli = cli_slots(1);
    let out = tempfile::tempdir().unwrap();
    let mut cmd = wakeprobe(&[
        "run",
        &hang(),
        "--set",
        "ceiling=120",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait until the endless command (a tagged `sleep`) really runs.
    let running = wait_for(Duration::from_secs(60), || {
        tagged_by(pid)
            .into_iter()
            .find(|(_, cmd)| cmd.starts_with("sleep 300"))
    });
    assert!(running.is_some(), "the background command started");
    ctrl_c_leaves_nothing(child);
    let run = &runs(&run_dir(out.path()))[0];
    assert_eq!(json(&run.join("run.json"))["end"], "interrupted");
    assert!(
        run_dir(out.path()).join("summary.json").exists(),
        "what finished is written"
    );
}

/// Every file under `dir` with its content hash and modification time.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime)> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().filter_map(|e| e.ok()) {
            let meta = entry.metadata().unwrap();
            if meta.is_symlink() {
                continue; // `latest`, a name for a run folder walked by its own
            }
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::fs::read(entry.path()).unwrap().hash(&mut h);
                files.insert(entry.path(), (h.finish(), meta.modified().unwrap()));
            }
        }
    }
    files
}

fn all_text(dir: &Path) -> String {
    let mut text = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().filter_map(|e| e.ok()) {
            if entry.path().is_dir() {
                stack.push(entry.path());
            } else {
                text.push_str(&String::from_utf8_lossy(
                    &std::fs::read(entry.path()).unwrap(),
                ));
            }
        }
    }
    text
}

/// The word every planted credential holds.
const CANARY: &str = "canary-6f1d2c9a";

/// A real HOME of the test's own, planted with the credential files a user has (the CLI's
/// OAuth token and API key, an AWS key, npm's and pip's registry tokens).
fn planted_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let files = [
        (
            ".claude/.credentials.json",
            format!(r#"{{"claudeAiOauth":{{"accessToken":"{CANARY}-oauth"}}}}"#),
        ),
        (
            ".claude.json",
            format!(r#"{{"primaryApiKey":"{CANARY}-primary","hasCompletedOnboarding":true}}"#),
        ),
        (
            ".aws/credentials",
            format!("[default]\naws_secret_access_key={CANARY}-aws\n"),
        ),
        (
            ".npmrc",
            format!(
                "//registry.npmjs.org/:_authToken={CANARY}-npm\nregistry=http://{CANARY}.invalid/\n"
            ),
        ),
        (
            ".config/pip/pip.conf",
            format!("[global]\nindex-url = http://user:{CANARY}-pip@{CANARY}.invalid/simple\n"),
        ),
    ];
    for (path, text) in files {
        let path = home.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    home
}

/// `cmd` as a user with `home` and API keys in the environment would run it.
fn with_canary_keys(cmd: &mut std::process::Command, home: &Path) {
    cmd.env("HOME", home)
        .env("ANTHROPIC_API_KEY", format!("{CANARY}-env"))
        .env("ANTHROPIC_AUTH_TOKEN", format!("{CANARY}-token"))
        .env("CLAUDE_CODE_OAUTH_TOKEN", format!("{CANARY}-oauth-env"))
        .env("AWS_ACCESS_KEY_ID", format!("AKIA{CANARY}"))
        .env("AWS_SECRET_ACCESS_KEY", format!("{CANARY}-aws-env"))
        .env("NPM_TOKEN", format!("{CANARY}-npm-env"))
        .env("npm_config__authToken", format!("{CANARY}-npm-config"));
}

#[test]
fn credentials_in_the_real_home_never_reach_the_cli_and_nothing_leaves_loopback() {
    let _cli = cli_slots(1);
    let home = planted_home();
    let before = snapshot(home.path());

    let out = tempfile::tempdir().unwrap();
    let mut cmd = wakeprobe(&[
        "run",
        "subagent-bg-turn-end",
        "--variant",
        "session",
        "--set",
        "bg_seconds=1",
        "--quiet",
        "--network",
        "isolated",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    with_canary_keys(&mut cmd, home.path());
    cmd.env("HTTPS_PROXY", "http://192.0.2.1:9")
        .env("HTTP_PROXY", "http://192.0.2.1:9");
    let output = output_within(cmd, Duration::from_secs(180));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    assert_eq!(
        snapshot(home.path()),
        before,
        "the real HOME was not touched"
    );
    let run = &runs(&run_dir(out.path()))[0];
    let info = json(&run.join("run.json"));
    assert_eq!(info["isolation"]["network"], "private-netns", "{info}");
    assert_eq!(
        info["isolation"]["interfaces"],
        serde_json::json!(["lo"]),
        "only loopback exists"
    );
    let journal = std::fs::read_to_string(run.join("api-journal.jsonl")).unwrap();
    let requests: Vec<serde_json::Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!requests.is_empty(), "the CLI talked to the fake API");
    for r in &requests {
        assert_eq!(r["credential"], "dummy", "only the run's dummy key: {r}");
    }
    let everything = all_text(out.path());
    assert!(
        !everything.contains(CANARY),
        "no canary in anything written"
    );
}

/// A scenario whose one tool call writes the CLI's children's environment into `{{dump}}`.
const ENV_DUMP: &str = r#"name = "env-dump"
title = "The environment a tool call of the CLI's sees"
summary = "test fixture: a Bash step writes its environment down"

[params]
dump = "/dev/null"

[driver]
mode = "print"
prompt = "Write the environment down."
ceiling_seconds = 90
settle_seconds = 2

[[agents.main.steps]]
call = "Bash"
input = { command = "env > {{dump}}", description = "Write the environment down" }

[[agents.main.steps]]
say = "Done."
"#;

/// The environments of the processes carrying a run tag of `harness`, read from `/proc` until
/// `done` is set (each process once), with their command lines.
fn watch_tagged_environments(
    harness: u32,
    done: &std::sync::atomic::AtomicBool,
) -> Vec<(String, String)> {
    let prefix = format!("WAKEPROBE_RUN={harness}-");
    let mut seen = BTreeMap::new();
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        for entry in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            if !env
                .split(|b| *b == 0)
                .any(|kv| kv.starts_with(prefix.as_bytes()))
            {
                continue;
            }
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            seen.entry(pid).or_insert((
                String::from_utf8_lossy(&cmd).replace('\0', " "),
                String::from_utf8_lossy(&env).replace('\0', "\n"),
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    seen.into_values().collect()
}

/// One run with canaries planted: what its tagged processes had in their environment, and
/// what its Bash step wrote down. `dir` holds the scenario (and what it needs) and the dump.
fn run_with_canaries(
    dir: &Path,
    scenario: &str,
    extra: &[&str],
    home: &Path,
) -> (Vec<(String, String)>, String) {
    let dump = dir.join("cli-child.env");
    let out = dir.join("out");
    let set = format!("dump={}", dump.display());
    let scenario = dir.join(scenario);
    let mut args = vec!["run", scenario.to_str().unwrap(), "--set", &set, "--quiet"];
    args.extend_from_slice(extra);
    args.extend(["--out", out.to_str().unwrap()]);
    let mut cmd = wakeprobe(&args);
    with_canary_keys(&mut cmd, home);
    cmd.env("HTTPS_PROXY", format!("http://user:{CANARY}@192.0.2.1:9"))
        .env("http_proxy", format!("http://user:{CANARY}@192.0.2.1:9"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let done = std::sync::atomic::AtomicBool::new(false);
    let (seen, output) = std::thread::scope(|s| {
        let watcher = s.spawn(|| watch_tagged_environments(pid, &done));
        let output = child.wait_with_output().unwrap();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (watcher.join().unwrap(), output)
    });
    assert_eq!(
        output.status.code(),
        Some(0),
        "{extra:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        !all_text(&out).contains(CANARY),
        "{extra:?}: a canary in a report file"
    );
    let written = std::fs::read_to_string(&dump)
        .unwrap_or_else(|e| panic!("{extra:?}: the Bash step wrote no environment: {e}"));
    (seen, written)
}

/// Issue #41: with credentials in the real HOME and API keys (and a proxy holding a password)
/// in the harness's environment, a print run, a run through each Agent SDK and a command-mode
/// run leave the real HOME as it was, and no canary reaches any process of the run (read from
/// `/proc` while it runs), the environment a tool call sees, or any report file.
#[test]
fn no_canary_reaches_a_child_of_any_driver_and_the_real_home_is_untouched() {
    let _cli = cli_slots(4);
    let home = planted_home();
    let before = snapshot(home.path());
    let command = ENV_DUMP.replace(
        "mode = \"print\"",
        "mode = \"command\"\ncommand = [\"sh\", \"./integration.sh\"]",
    );
    let cases: [(&str, &str, &[&str]); 4] = [
        ("print", ENV_DUMP, &[]),
        ("sdk", ENV_DUMP, &["--driver", "sdk"]),
        ("sdk-py", ENV_DUMP, &["--driver", "sdk-py"]),
        ("command", &command, &[]),
    ];
    let dirs: Vec<tempfile::TempDir> = cases.iter().map(|_| tempfile::tempdir().unwrap()).collect();
    for ((_, text, _), dir) in cases.iter().zip(&dirs) {
        std::fs::write(dir.path().join("env-dump.toml"), text).unwrap();
        // The integration writes its own environment down, then runs the book's minimal one.
        std::fs::copy(
            root().join("integrations/minimal.mjs"),
            dir.path().join("minimal.mjs"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("integration.sh"),
            format!(
                "env > {}\nexec node {}\n",
                dir.path().join("integration.env").display(),
                dir.path().join("minimal.mjs").display()
            ),
        )
        .unwrap();
    }
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .iter()
            .zip(&dirs)
            .map(|((_, _, extra), dir)| {
                let home = home.path();
                s.spawn(move || run_with_canaries(dir.path(), "env-dump.toml", extra, home))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (((name, _, _), dir), (seen, written)) in cases.iter().zip(&dirs).zip(results) {
        assert!(
            seen.len() >= 2,
            "{name}: the supervisor and the CLI at least were seen: {seen:?}"
        );
        let mut environments: Vec<(String, String)> = seen;
        environments.push(("the Bash step".into(), written));
        if *name == "command" {
            let own = std::fs::read_to_string(dir.path().join("integration.env")).unwrap();
            environments.push(("the integration".into(), own));
        }
        for (process, env) in &environments {
            assert!(
                !env.contains(CANARY),
                "{name}: {process} had a canary:\n{env}"
            );
            for line in env.lines() {
                let key = line.split('=').next().unwrap();
                assert!(
                    !key.eq_ignore_ascii_case("https_proxy")
                        && !key.eq_ignore_ascii_case("http_proxy"),
                    "{name}: {process} had a proxy: {line}"
                );
                assert!(
                    !(key == "HOME" && line.ends_with(&home.path().display().to_string())),
                    "{name}: {process} had the real HOME"
                );
            }
        }
    }
    assert_eq!(
        snapshot(home.path()),
        before,
        "the real HOME was not touched"
    );
}

/// Issue #41: npm (asked for the versions, then to install one) runs with none of the user's
/// keys, its HOME and configuration in wakeprobe's cache, never the user's `~/.npmrc` (whose
/// registry token and registry are canaries). A fake `npm` first on PATH writes down its
/// environment, answers `view` from the recorded registry answers, and fails the install.
#[test]
fn npm_gets_no_key_no_real_home_and_no_npmrc_of_the_user() {
    let home = planted_home();
    let before = snapshot(home.path());
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("bin");
    std::fs::create_dir_all(&fake).unwrap();
    let fixtures = root().join("src/backend/fixtures/registry");
    let record = dir.path().join("npm-env");
    std::fs::create_dir_all(&record).unwrap();
    let script = format!(
        r#"#!/bin/sh
env > "{record}/$$.env"
case "$*" in
  *claudeCodeVersion*) cat "{fixtures}/claude-agent-sdk.releases.json" ;;
  *" versions "*) cat "{fixtures}/claude-code.versions.json" ;;
  *) echo "npm error no network in this test" >&2; exit 1 ;;
esac
"#,
        record = record.display(),
        fixtures = fixtures.display(),
    );
    let npm = fake.join("npm");
    std::fs::write(&npm, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&npm, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cache = dir.path().join("cache");
    let out = dir.path().join("out");
    let mut cmd = wakeprobe(&[
        "run",
        "top-level-control",
        "--claude-version",
        "2.1.300",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    with_canary_keys(&mut cmd, home.path());
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap());
    cmd.env("WAKEPROBE_CACHE", &cache)
        .env("PATH", path)
        .env("npm_config_registry", "http://127.0.0.1:9/");
    let output = output_within(cmd, Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(3),
        "the install failed: {stderr}"
    );
    assert!(stderr.contains("no network in this test"), "{stderr}");
    let envs: Vec<String> = std::fs::read_dir(&record)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(envs.len(), 3, "two `npm view`s and one `npm install`");
    // What npm may get: a tool's environment, the user's registry settings (a mirror, a proxy,
    // a CA bundle: `REGISTRY_SETTINGS`), its own places.
    let allowed = [
        "PATH",
        "HOME",
        "TMPDIR",
        "LANG",
        "npm_config_registry",
        "npm_config_cache",
        "npm_config_userconfig",
        "npm_config_globalconfig",
        "npm_config_update_notifier",
        // how long npm waits for a registry that does not answer
        "npm_config_fetch_retries",
        "npm_config_fetch_retry_mintimeout",
        "npm_config_fetch_retry_maxtimeout",
        "npm_config_fetch_timeout",
        // set by sh itself
        "PWD",
        "SHLVL",
        "_",
    ];
    let cache = cache.display().to_string();
    for env in &envs {
        assert!(!env.contains(CANARY), "a canary reached npm:\n{env}");
        for line in env.lines() {
            let (key, value) = line.split_once('=').unwrap_or((line, ""));
            assert!(
                allowed.contains(&key) || wakeprobe::os::env::REGISTRY_SETTINGS.contains(&key),
                "npm got {key}:\n{env}"
            );
            if key == "npm_config_globalconfig" {
                assert_eq!(value, "/dev/null", "no global configuration");
            } else if ["HOME", "npm_config_userconfig", "npm_config_cache"].contains(&key) {
                assert!(
                    value.starts_with(&cache),
                    "{key}={value} is not in the cache"
                );
            }
        }
        assert!(
            env.contains("npm_config_registry=http://127.0.0.1:9/"),
            "the user's mirror"
        );
    }
    assert_eq!(
        snapshot(home.path()),
        before,
        "the real HOME was not touched"
    );
    assert!(!out.exists(), "nothing was written");
}

/// Issue #41: a scenario that sets what the harness sets (HOME, PATH, the fake API's address,
/// the run tag), a `--set` that points a variable outside the sandbox, and a `--cli-arg` that
/// would give the CLI its environment are refused before anything runs, located and named.
#[test]
fn a_scenario_or_a_flag_that_reaches_for_the_harness_variables_is_refused() {
    use crate::bad_input::{TIMED, refused};
    let with_env = |env: &str| {
        TIMED.replace(
            "ceiling_seconds = 10\n",
            &format!("ceiling_seconds = 10\nenv = {{ {env} }}\n"),
        )
    };
    for (var, why) in [
        ("HOME", "every run's CLI gets a fresh home in its sandbox"),
        ("PATH", "the sandbox's helpers first"),
        ("ANTHROPIC_BASE_URL", "the run's fake API on loopback"),
        ("WAKEPROBE_RUN", "it tags every process of the run"),
        ("https_proxy", "chooses where requests go"),
        ("NODE_OPTIONS", "loads code or configuration"),
    ] {
        let (code, line) = refused(&with_env(&format!("{var} = \"/root\"")), &[]);
        assert_eq!(code, 2, "{line}");
        assert!(
            line.starts_with("error: broken.toml:12:")
                && line.contains(&format!("`env.{var}`"))
                && line.contains(why),
            "{var}: {line}"
        );
    }
    let placed = with_env("CLAUDE_CONFIG_DIR = \"{{dir}}\"").replace(
        "bg_seconds = 1\n",
        "bg_seconds = 1\ndir = \"{{@folder:config}}\"\n",
    );
    let (code, line) = refused(&placed, &["--set", "dir=/root/.claude"]);
    assert_eq!(code, 2, "{line}");
    assert!(
        line.contains("`env.CLAUDE_CONFIG_DIR`") && line.contains("not `/root/.claude`"),
        "{line}"
    );
    let (code, line) = refused(
        TIMED,
        &[
            "--cli-arg=--settings",
            r#"--cli-arg={"env":{"HOME":"/root"}}"#,
        ],
    );
    assert_eq!(code, 2, "{line}");
    assert!(
        line.contains("--cli-arg --settings") && line.contains("outside the run's sandbox"),
        "{line}"
    );
}

/// Pid numbers wrap within a minute or two on a busy machine (32768 by default, and every
/// thread takes one): the simulator must never signal a pid it has already reaped. A finished
/// background shell's number is handed to a bystander in its own process group (root only,
/// through `/proc/sys/kernel/ns_last_pid`) before the run ends; the run's end must not touch it.
#[test]
fn the_simulator_never_signals_a_process_that_took_a_finished_shells_pid() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().display().to_string();
    let scenario = tmp.path().join("pid-reuse.toml");
    std::fs::write(
        &scenario,
        format!(
            r#"name = "pid-reuse"
title = "A finished shell's pid taken by a bystander"
summary = "test fixture: a short background command, then a wait for the test"

[driver]
mode = "print"
prompt = "Go."
ceiling_seconds = "60"

[[agents.main.steps]]
call = "Bash"
input = {{ command = "echo $$ > {dir}/shell.pid", run_in_background = true, description = "Short command" }}

[[agents.main.steps]]
call = "Bash"
input = {{ command = "timeout 40 sh -c 'while [ ! -e {dir}/go ]; do sleep 0.05; done'", description = "Wait for the test" }}

[[agents.main.steps]]
say = "Done."
"#
        ),
    )
    .unwrap();
    let out = tmp.path().join("out");
    let cmd = wakeprobe(&[
        "run",
        scenario.to_str().unwrap(),
        "--backend",
        "sim",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    std::thread::scope(|scope| {
        let run = scope.spawn(|| succeeds_leaving_nothing(cmd, Duration::from_secs(90)));
        let go = || std::fs::write(tmp.path().join("go"), "").unwrap();
        let pid: i32 = wait_for(Duration::from_secs(60), || {
            std::fs::read_to_string(tmp.path().join("shell.pid"))
                .ok()?
                .trim()
                .parse()
                .ok()
        })
        .expect("the short command never ran");
        // Reaped by the simulator: the number is free.
        let freed = wait_for(Duration::from_secs(10), || {
            (!Path::new(&format!("/proc/{pid}")).exists()).then_some(())
        });
        let bystander = freed.and_then(|()| take_pid(pid));
        go();
        // The run's own checks (exit 0, nothing left) panic only after the bystander is gone.
        let finished = run.join();
        let fate = bystander.map(|mut bystander| {
            let fate = bystander.try_wait().unwrap();
            let _ = bystander.kill();
            let _ = bystander.wait();
            fate
        });
        if let Err(panic) = finished {
            std::panic::resume_unwind(panic);
        }
        let Some(fate) = fate else {
            eprintln!("skipped: pid {pid} could not be given to a bystander (needs root)");
            return;
        };
        assert_eq!(
            fate, None,
            "the run's end signalled pid {pid}, reaped long before"
        );
    });
}

/// Starts `sleep` as pid `pid` in its own process group, if the kernel lets us pick the
/// number; a few tries, since other processes may take it first.
fn take_pid(pid: i32) -> Option<std::process::Child> {
    use std::os::unix::process::CommandExt;
    for _ in 0..50 {
        std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).ok()?;
        let mut child = std::process::Command::new("sleep")
            .arg("120")
            .process_group(0)
            .spawn()
            .ok()?;
        if child.id() as i32 == pid {
            return Some(child);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    None
}

/// Issue #41: a scenario that needs another home names a second sandboxed folder: the CLI gets
/// a fresh, empty folder inside the run's sandbox (never a path outside), made before it starts.
#[test]
fn a_second_home_is_a_sandboxed_folder() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("config-dir.txt");
    let scenario = dir.path().join("env-dump.toml");
    std::fs::write(
        &scenario,
        ENV_DUMP
            .replace(
                "settle_seconds = 2\n",
                "settle_seconds = 2\nenv = { CLAUDE_CONFIG_DIR = \"{{@folder:config}}\" }\n",
            )
            .replace(
                "env > {{dump}}",
                "echo $CLAUDE_CONFIG_DIR > {{dump}}; ls -A $CLAUDE_CONFIG_DIR | wc -l >> {{dump}}",
            ),
    )
    .unwrap();
    let set = format!("dump={}", dump.display());
    let out = dir.path().join("out");
    let cmd = wakeprobe(&[
        "run",
        scenario.to_str().unwrap(),
        "--backend",
        "sim",
        "--set",
        &set,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    succeeds_leaving_nothing(cmd, Duration::from_secs(60));
    let text = std::fs::read_to_string(&dump).unwrap();
    let mut lines = text.lines();
    let folder = Path::new(lines.next().unwrap());
    let sandbox = folder.parent().and_then(Path::parent).unwrap();
    assert!(folder.ends_with("folders/config"), "{text}");
    assert!(
        sandbox.starts_with(std::env::temp_dir())
            && sandbox
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("wakeprobe-env-dump-")),
        "inside the run's sandbox: {text}"
    );
    assert_eq!(lines.next(), Some("0"), "made empty before the CLI started");
}
