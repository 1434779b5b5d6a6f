//! `wakeprobe export`: the standalone Node script, run with nothing but `node` against the
//! pinned real CLI. The seed-000 stall must reproduce (exit 1), the positive control must wake
//! (exit 0), an interrupted script must leave nothing behind, and bad input is one line, exit 2.
//! Every run is bounded, and afterwards no process carrying the script's run tag may be alive.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The pinned CLI from wakeprobe's cache (installed first on a fresh machine): the script is
/// given its binary, so it installs nothing.
fn cli_args() -> Vec<String> {
    let package = crate::common::pinned_package();
    let bin = package.join("../../.bin/claude");
    vec!["--claude-bin".into(), bin.display().to_string()]
}

/// `wakeprobe export ARGS -o DIR/repro.mjs`; returns the script's path.
fn export(dir: &Path, args: &[&str]) -> PathBuf {
    let script = dir.join("repro.mjs");
    let mut cmd = crate::common::wakeprobe(&["export"]);
    cmd.args(args).arg("-o").arg(&script);
    let out = crate::common::output_within(cmd, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "export failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    script
}

fn node(script: &Path) -> Command {
    let mut cmd = Command::new("node");
    cmd.arg(script)
        .args(cli_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Waits for the script with a ceiling; past it, SIGTERM (the script cleans up), then SIGKILL.
fn finish_within(mut child: Child, limit: Duration) -> (Option<i32>, String, String) {
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for node") {
            break status;
        }
        if Instant::now() >= deadline {
            crate::common::signal(child.id(), libc::SIGTERM);
            std::thread::sleep(Duration::from_secs(5));
            let _ = child.kill();
            let _ = child.wait();
            panic!("the script did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status.code(), stdout, stderr)
}

/// The run tag the script prints in its header (`WAKEPROBE_REPRO_RUN=...`).
fn run_tag(stdout: &str) -> String {
    let at = stdout
        .find("WAKEPROBE_REPRO_RUN=")
        .unwrap_or_else(|| panic!("no run tag in:\n{stdout}"));
    stdout[at..].split_whitespace().next().unwrap().to_string()
}

/// Live (non-zombie) processes whose environment holds `tag` (`WAKEPROBE_REPRO_RUN=...`).
fn tagged(tag: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let pid = entry.file_name().to_string_lossy().to_string();
        if pid.parse::<u32>().is_err() {
            continue;
        }
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if !env.split(|b| *b == 0).any(|kv| kv == tag.as_bytes()) {
            continue;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.contains(") Z ") {
            continue;
        }
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        found.push(format!(
            "{pid} {}",
            String::from_utf8_lossy(&cmd).replace('\0', " ")
        ));
    }
    found
}

/// Nothing the run started is alive, and its work folder is gone.
fn assert_clean(stdout: &str) {
    let tag = run_tag(stdout);
    assert_eq!(tagged(&tag), Vec::<String>::new(), "left running");
    let folder = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("work folder: "))
        .and_then(|rest| rest.split(';').next())
        .expect("the header names the work folder");
    assert!(!Path::new(folder).exists(), "{folder} was not removed");
}

#[test]
fn the_seed_000_print_stall_reproduces_with_only_node() {
    let _cli = crate::common::cli_slots(2);
    let dir = tempfile::tempdir().unwrap();
    let script = export(
        dir.path(),
        &[
            "subagent-bg-turn-end",
            "--variant",
            "print",
            "--set",
            // Well past the ~5.4 s grace, counted from the last result: under load that
            // result comes late (4.9 s after the command started on a loaded CI runner, where
            // 10 s then ended inside the grace and woke). The stall's run ends at the kill, so
            // a longer command costs nothing.
            "bg_seconds=20",
        ],
    );
    let child = node(&script).spawn().expect("node runs");
    let (code, stdout, stderr) = finish_within(child, Duration::from_secs(120));
    assert_eq!(
        code,
        Some(1),
        "the bug reproduces: exit 1\n{stdout}\n{stderr}"
    );
    for fact in [
        "SubagentStop for `worker` at",
        "listed `bg` (shell) as running",
        "`bg` was killed at",
        "s after the last result (at",
        "`worker` made no model request after SubagentStop",
        "`worker` waiting for `bg`: not-resumable",
        "RESULT: not-resumable",
    ] {
        assert!(stdout.contains(fact), "missing `{fact}` in:\n{stdout}");
    }
    // The kill comes after the last result (the CLI's orphan grace, about 5 s on 2.1.332).
    let killed = stdout
        .lines()
        .find(|l| l.contains("`bg` was killed at"))
        .unwrap();
    let after: f64 = killed
        .split(", ")
        .nth(1)
        .and_then(|s| s.split(" s after").next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no delay in `{killed}`"));
    assert!(after > 1.0, "killed {after} s after the last result");
    assert_clean(&stdout);
}

#[test]
fn the_positive_control_wakes_and_exits_zero() {
    let _cli = crate::common::cli_slots(1);
    let dir = tempfile::tempdir().unwrap();
    let script = export(
        dir.path(),
        &[
            "positive-control",
            "--variant",
            "fg-sleep",
            "--set",
            "bg_seconds=3",
        ],
    );
    let child = node(&script).spawn().expect("node runs");
    let (code, stdout, stderr) = finish_within(child, Duration::from_secs(120));
    assert_eq!(code, Some(0), "the waiter woke: exit 0\n{stdout}\n{stderr}");
    assert!(stdout.contains("`bg` completed at"), "{stdout}");
    assert!(
        stdout.contains("`worker`'s request #")
            && stdout.contains("carried `bg`'s <task-notification>"),
        "{stdout}"
    );
    assert!(stdout.contains("RESULT: woke"), "{stdout}");
    assert_clean(&stdout);
}

/// A waiter told in a request past the end of its script (a minimized scenario keeps no spare
/// steps) was still woken, as wakeprobe judges it.
#[test]
fn a_waiter_told_past_the_end_of_its_script_woke() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("short-script.toml");
    std::fs::write(
        &scenario,
        r#"name = "short-script"
title = "The main agent's script ends before the worker reports"
summary = "main has two steps; the worker's report arrives in its third request"

[driver]
mode = "print"
prompt = "Go."
ceiling_seconds = 60

[[agents.main.steps]]
call = "Agent"
spawn = "worker"
input = { description = "Worker", subagent_type = "general-purpose", run_in_background = true, prompt = "Go." }

[[agents.main.steps]]
say = "Started."

[[agents.worker.steps]]
say = "Done."
"#,
    )
    .unwrap();
    let script = export(dir.path(), &[scenario.to_str().unwrap()]);
    let child = node(&script).spawn().expect("node runs");
    let (code, stdout, stderr) = finish_within(child, Duration::from_secs(120));
    assert!(
        stdout.contains("past the end of its script; ends its turn"),
        "{stdout}"
    );
    assert_eq!(code, Some(0), "the waiter woke: exit 0\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("`main` waiting for `worker`: woke"),
        "{stdout}"
    );
    assert_clean(&stdout);
}

/// SIGTERM while the background task runs: the script kills the CLI and the task, exits 130.
#[test]
fn an_interrupted_script_kills_the_whole_tree() {
    let _cli = crate::common::cli_slots(1);
    let dir = tempfile::tempdir().unwrap();
    let script = export(
        dir.path(),
        &[
            "subagent-bg-turn-end",
            "--variant",
            "print",
            "--set",
            "bg_seconds=30",
        ],
    );
    let mut child = node(&script).spawn().expect("node runs");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut header = String::new();
    while !header.contains("WAKEPROBE_REPRO_RUN=") {
        match lines.next() {
            Some(Ok(line)) => header.push_str(&(line + "\n")),
            _ => panic!("no header:\n{header}"),
        }
    }
    let tag = run_tag(&header);
    let sleeping = crate::common::wait_for(Duration::from_secs(60), || {
        tagged(&tag).into_iter().find(|p| p.contains("sleep 30"))
    });
    crate::common::signal(child.id(), libc::SIGTERM);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = crate::common::wait_for(Duration::from_secs(30), || child.try_wait().unwrap());
    let stdout = format!("{header}{}", rest.join("\n"));
    assert!(
        sleeping.is_some(),
        "the background task never ran:\n{stdout}"
    );
    assert_eq!(status.and_then(|s| s.code()), Some(130), "{stdout}");
    assert!(stdout.contains("interrupted (SIGTERM)"), "{stdout}");
    assert_clean(&stdout);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("repro.mjs");
    // A scenario with a fault: the script has no fault injection, so it cannot reproduce it.
    let faulty = dir.path().join("faulty.toml");
    let base = std::fs::read_to_string(
        crate::common::root().join("tests/fixtures/scenarios/faults/main-wake.toml"),
    )
    .unwrap();
    std::fs::write(
        &faulty,
        format!("{base}\n[[faults]]\nkind = \"http-500\"\nrequest = 1\n"),
    )
    .unwrap();
    for args in [
        vec!["no-such-scenario"],
        vec![faulty.to_str().unwrap()],
        vec!["positive-control", "--variant", "no-such-variant"],
        vec!["positive-control", "--set", "no_such_param=1"],
        vec!["teammate-idle"],
        vec!["guard-end-to-end"],
    ] {
        let mut cmd = crate::common::wakeprobe(&["export"]);
        cmd.args(&args).arg("-o").arg(&out);
        let result = crate::common::output_within(cmd, Duration::from_secs(30));
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert!(!out.exists(), "{args:?} wrote a script");
    }
    // The script itself: an unknown argument is a usage error, before anything runs.
    let script = export(dir.path(), &["positive-control"]);
    let result = Command::new("node")
        .arg(&script)
        .arg("--no-such-flag")
        .output()
        .expect("node runs");
    assert_eq!(result.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&result.stderr).contains("unknown argument `--no-such-flag`"));
}

/// The `[[checks]]` tables of the book's TOML examples (its chapters "Scenarios" and "Writing
/// checks"), each as a `[[checks]]` block to append to a scenario file.
fn book_checks() -> Vec<String> {
    let mut found = Vec::new();
    for chapter in ["book/src/scenarios.md", "book/src/checks.md"] {
        let text = std::fs::read_to_string(crate::common::root().join(chapter)).unwrap();
        for block in text.split("```toml\n").skip(1) {
            let block = block.split("```").next().unwrap();
            let Ok(table) = block.parse::<toml::Table>() else {
                continue;
            };
            for check in table
                .get("checks")
                .and_then(|c| c.as_array())
                .into_iter()
                .flatten()
            {
                let mut one = toml::Table::new();
                one.insert("checks".into(), toml::Value::Array(vec![check.clone()]));
                found.push(toml::to_string(&one).unwrap());
            }
        }
    }
    found
}

/// The script judges a saved run as wakeprobe does: the saved runs in `tests/fixtures/runs`
/// (real 2.1.332 evidence), each with its own checks and with every check example of the book its
/// agents can carry, judged by both from the same files (`common::judges`); and each of those
/// drafts has a title of at most 80 characters and fits an issue (`common::drafts`). The
/// library's runs are checked the same ways where they are made (the simulator's profiles, the
/// pinned CLI).
#[test]
fn the_script_judges_saved_runs_as_wakeprobe_does() {
    let examples = book_checks();
    assert!(
        examples.len() >= 3,
        "the book's check examples: {examples:?}"
    );
    let runs = crate::common::root().join("tests/fixtures/runs");
    let mut judged = 0;
    let mut examples_judged = std::collections::BTreeSet::new();
    for run in std::fs::read_dir(&runs)
        .unwrap()
        .flatten()
        .map(|e| e.path())
    {
        let found = crate::common::judges::disagreements(&run, None);
        assert!(found.is_empty(), "{}:\n{}", run.display(), found.join("\n"));
        judged += 1;
        let saved = wakeprobe::store::saved::SavedRun::load(&run).unwrap();
        let source = std::fs::read_to_string(run.join("scenario.toml")).unwrap();
        let sets: Vec<(String, String)> = saved
            .plan
            .params
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect();
        for (i, example) in examples.iter().enumerate() {
            let text = format!("{source}\n{example}");
            let Ok(scenario) =
                wakeprobe::scenario::Scenario::parse(&run.join("scenario.toml"), text)
            else {
                continue; // it names an agent or work this run does not have
            };
            let Ok(plan) = scenario.plan(&saved.plan.variant, &sets) else {
                continue;
            };
            let found = crate::common::judges::disagreements(&run, Some(&plan));
            assert!(
                found.is_empty(),
                "{} with the book's check {example}:\n{}",
                run.display(),
                found.join("\n")
            );
            // Its draft, with the check failing its `want` where it states one: a short title.
            let drafted = crate::common::drafts::problems(&run, Some(&plan));
            assert!(
                drafted.is_empty(),
                "{}: {}",
                run.display(),
                drafted.join("; ")
            );
            examples_judged.insert(i);
        }
    }
    assert_eq!(judged, 6, "every captured run in tests/fixtures/runs");
    // The teammate example needs a teammate (the library's teammate-idle, on the simulator).
    assert!(
        examples_judged.len() >= examples.len() - 1,
        "{examples_judged:?} of {examples:?}"
    );
}

/// The case of issue 44 (`subagent-parked-completed`): a background subagent parked on its own
/// background command is reported `completed` to its parent before the command ends, and again
/// after its re-invocation. Its checks carry the bug (`want`), not its verdicts (`woke`): the
/// exported script judges them as wakeprobe does, exits 1 and says which check failed, with the
/// witness the draft of a wakeprobe run of the same scenario shows.
#[test]
fn the_parked_subagent_script_exits_1_on_the_failed_check_with_the_drafts_witness() {
    let _cli = crate::common::cli_slots(2);
    let dir = tempfile::tempdir().unwrap();
    let script = export(dir.path(), &["subagent-parked-completed"]);
    let mut node = node(&script);
    node.args(["--keep", "--json"]);
    let (code, stdout, stderr) =
        finish_within(node.spawn().expect("node runs"), Duration::from_secs(120));
    assert_eq!(
        code,
        Some(1),
        "the bug reproduces: exit 1\n{stdout}\n{stderr}"
    );
    let judged: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(judged["outcome"], "woke", "{judged}");
    let failed: Vec<&serde_json::Value> = judged["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["meets_want"] == false)
        .collect();
    assert_eq!(failed.len(), 2, "{judged}");
    // The words, without --json: exit 1, the failed check named, its witness shown.
    let kept = stderr
        .lines()
        .find_map(|l| l.strip_prefix("evidence (wakeprobe's run-folder shapes): "))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .unwrap_or_else(|| panic!("--keep names the folder on stderr:\n{stderr}"));
    let mut words = Command::new("node");
    words.arg(&script).args(["--judge", &kept]);
    let out = crate::common::output_within(words, Duration::from_secs(60));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("“main is told the worker completed while its command still runs” (query:before): observed `yes`")
            && text.contains("it should be `no` (the scenario's `want`): NOT MET: this is the bug")
            && text.contains("The bug reproduces: check “main is told the worker completed while its command still runs” observed `yes` where the CLI should give `no`"),
        "{text}"
    );
    // The same witness as wakeprobe's draft of the same scenario on the same CLI.
    let out_dir = tempfile::tempdir().unwrap();
    let run = crate::common::output_within(
        crate::common::wakeprobe(&[
            "run",
            "subagent-parked-completed",
            "--quiet",
            "--out",
            out_dir.path().to_str().unwrap(),
        ]),
        Duration::from_secs(120),
    );
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stdout)
    );
    let folder = crate::common::runs(&crate::common::run_dir(out_dir.path())).remove(0);
    let result = crate::common::json(&folder.join("result.json"));
    let report = std::fs::read_to_string(folder.join("report.md")).unwrap();
    let shape = |witness: &serde_json::Value, timeline: &Path| -> Vec<String> {
        let labels: Vec<(String, String)> = crate::common::events(timeline)
            .iter()
            .filter(|e| e["kind"] == "task_started")
            .map(|e| {
                (
                    e["task_id"].as_str().unwrap().to_string(),
                    e["label"].as_str().unwrap_or("?").to_string(),
                )
            })
            .collect();
        witness
            .as_array()
            .unwrap()
            .iter()
            .map(|w| {
                let mut what = w["what"].as_str().unwrap().to_string();
                for (id, label) in &labels {
                    what = what.replace(id, label);
                }
                format!("{} · {} · {what}", w["source"], w["agent"])
            })
            .collect()
    };
    let kept = Path::new(&kept);
    for check in &failed {
        let name = check["name"].as_str().unwrap();
        let ours = result["judgement"]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap();
        assert_eq!(ours["meets_want"], false, "{ours}");
        assert_eq!(
            shape(&check["witness"], kept),
            shape(&ours["witness"], &folder),
            "{name}"
        );
        for w in ours["witness"].as_array().unwrap() {
            let what = w["what"].as_str().unwrap();
            assert!(
                report.contains(what),
                "the draft shows the witness `{what}`:\n{report}"
            );
        }
    }
    std::fs::remove_dir_all(kept).unwrap();
}

/// The ```sh lines of a report.md, each one command line.
fn draft_commands(report: &str) -> Vec<String> {
    report
        .split("```sh\n")
        .skip(1)
        .flat_map(|block| {
            block
                .split("```")
                .next()
                .unwrap()
                .lines()
                .map(str::to_string)
        })
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// Runs one command line as a user would paste it: a fresh `sh` in `cwd`, with `wakeprobe` on
/// PATH and the script's CLI cache pointing at the pinned CLI the tests share (so nothing is
/// installed); returns the exit code and what it printed.
fn as_pasted(line: &str, cwd: &Path, xdg: &Path) -> (Option<i32>, String) {
    let bin_dir = crate::common::bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(line)
        .current_dir(cwd)
        .env("PATH", path)
        .env("XDG_CACHE_HOME", xdg)
        .env("WAKEPROBE_CACHE", crate::common::cache())
        .env_remove("WAKEPROBE_KEEP")
        .stdin(Stdio::null());
    let out = crate::common::output_within(sh, Duration::from_secs(240));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// Every command of a draft runs as written from the folder the user ran from: a run of a
/// scenario given by a relative path (`sc/parked-completed.toml`, as issue 44's user gave it) drafts its
/// Repro with that path; pasted into a fresh shell there, the export-and-run line reproduces
/// the bug (exit 1) and the run line runs (exit 0). A simulator run's draft names its profile,
/// offers no real-CLI repro, and its run line runs too.
#[test]
fn every_command_of_a_draft_runs_as_written_from_where_the_user_ran() {
    let _cli = crate::common::cli_slots(2);
    let user = tempfile::tempdir().unwrap();
    std::fs::create_dir(user.path().join("sc")).unwrap();
    // Not a library name: a bare name would not find it.
    let library = std::fs::read_to_string(
        crate::common::root().join("scenarios/subagent-parked-completed.toml"),
    )
    .unwrap();
    std::fs::write(
        user.path().join("sc/parked-completed.toml"),
        library.replace(
            "name = \"subagent-parked-completed\"",
            "name = \"parked-completed\"",
        ),
    )
    .unwrap();
    // The script's cache, as `~/.cache/wakeprobe-repro/VERSION`, holding the shared pinned CLI.
    let xdg = tempfile::tempdir().unwrap();
    let pinned = crate::common::pinned_package();
    let version_dir = pinned.ancestors().nth(3).unwrap().to_path_buf();
    std::fs::create_dir(xdg.path().join("wakeprobe-repro")).unwrap();
    std::os::unix::fs::symlink(
        &version_dir,
        xdg.path()
            .join("wakeprobe-repro")
            .join(wakeprobe::backend::PINNED_VERSION),
    )
    .unwrap();
    for backend in ["claude", "sim"] {
        let out = format!("out-{backend}");
        let (code, text) = as_pasted(
            &format!(
                "wakeprobe run sc/parked-completed.toml --backend {backend} --quiet --out {out}"
            ),
            user.path(),
            xdg.path(),
        );
        assert!(matches!(code, Some(0 | 1)), "{backend}: {text}");
        let folder =
            crate::common::runs(&crate::common::run_dir(&user.path().join(&out))).remove(0);
        let report = std::fs::read_to_string(folder.join("report.md")).unwrap();
        let commands = draft_commands(&report);
        let info = crate::common::json(&folder.join("run.json"));
        assert!(
            info["command"]
                .as_str()
                .unwrap()
                .starts_with("wakeprobe run sc/parked-completed.toml --variant session"),
            "{info}"
        );
        match backend {
            "claude" => {
                assert_eq!(commands.len(), 2, "{report}");
                assert!(
                    commands[0].starts_with("wakeprobe export sc/parked-completed.toml --variant session --set bg_seconds=4 --claude-version 2.1.332 -o repro.mjs && node repro.mjs"),
                    "{}",
                    commands[0]
                );
                let (code, text) = as_pasted(&commands[0], user.path(), xdg.path());
                assert_eq!(code, Some(1), "the bug reproduces:\n{text}");
                assert!(text.contains("The bug reproduces"), "{text}");
                let (code, text) = as_pasted(&commands[1], user.path(), xdg.path());
                assert_eq!(code, Some(0), "{}: {text}", commands[1]);
            }
            _ => {
                assert!(
                    report
                        .contains("claude-sim, the simulator, with profile `finalize-on-turn-end`")
                        && !report.contains("repro.mjs")
                        && !report.contains("installs Claude Code"),
                    "{report}"
                );
                assert_eq!(commands.len(), 1, "{report}");
                assert!(
                    commands[0].contains("--backend sim --profile finalize-on-turn-end"),
                    "{}",
                    commands[0]
                );
                let (code, text) = as_pasted(&commands[0], user.path(), xdg.path());
                assert!(matches!(code, Some(0 | 1)), "{}: {text}", commands[0]);
            }
        }
    }
}

/// The script's prose never contradicts itself: a request that carried a notification before
/// the work's end was reported (two channels, read apart) is said to, with no latency running
/// backwards; and the result names the version the run was of, beside the version the
/// scenario's expectation was recorded on. (Seed 000's session on 2.1.332, its command's end
/// moved after the worker's request, and its version renamed.)
#[test]
fn the_scripts_words_keep_times_and_versions_straight() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let fixture = crate::common::root().join("tests/fixtures/runs/seed000-session");
    for file in ["hooks.jsonl", "stream.jsonl", "plan.json"] {
        std::fs::copy(fixture.join(file), run.join(file)).unwrap();
    }
    let mut timeline = crate::common::json(&fixture.join("timeline.json"));
    let events = timeline["events"].as_array_mut().unwrap();
    let delivery = events
        .iter()
        .find(|e| {
            e["kind"] == "model_request" && e["agent"] == "worker" && e["notifications"].is_array()
        })
        .unwrap()["t_ms"]
        .as_f64()
        .unwrap();
    for e in events.iter_mut() {
        if (e["kind"] == "track_ended" && e["name"] == "bg")
            || (e["kind"] == "task_updated" && e["label"] == "bg")
        {
            e["t_ms"] = serde_json::json!(delivery + 40.0);
        }
    }
    events.sort_by(|a, b| {
        a["t_ms"]
            .as_f64()
            .unwrap()
            .total_cmp(&b["t_ms"].as_f64().unwrap())
    });
    std::fs::write(run.join("timeline.json"), timeline.to_string()).unwrap();
    let mut info = crate::common::json(&fixture.join("run.json"));
    info["cli_version_reported"] = "2.1.207".into();
    std::fs::write(run.join("run.json"), info.to_string()).unwrap();
    let script = export(
        dir.path(),
        &[
            "subagent-bg-turn-end",
            "--variant",
            "session",
            "--set",
            "bg_seconds=8",
        ],
    );
    let mut judge = Command::new("node");
    judge.arg(&script).arg("--judge").arg(&run);
    let out = crate::common::output_within(judge, Duration::from_secs(60));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("carried `bg`'s <task-notification>; its end was reported at")
            && text.contains("after that request (the two channels are read apart)")
            && !text.contains("0.00 s after it ended"),
        "{text}"
    );
    assert!(
        text.contains(
            "wakeprobe recorded the verdict `woke` on Claude Code 2.1.332 (its `expect`)"
        ) && text.contains("RESULT: woke, on Claude Code 2.1.207."),
        "{text}"
    );
}
