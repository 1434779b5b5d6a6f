//! The simulator (`--backend sim`) on every shipped scenario with each relevant behaviour
//! profile, at scaled-down durations. Every run must end cleanly (the simulator's own exit or,
//! for child-hang, the work's hang bound or the ceiling; nothing left running) and show the events its profile
//! promises; on the seed-000 scenario each profile's exact verdict and decisive events are
//! asserted. Runs go through the built `wakeprobe` binary with bounded waits; nothing here
//! sleeps to synchronise.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

const SEED: &str = "subagent-bg-turn-end";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One finished run folder, read.
pub(super) struct Run {
    pub(super) dir: PathBuf,
    pub(super) variant: String,
    pub(super) run: Value,
    pub(super) result: Value,
    pub(super) events: Vec<Value>,
    /// The CLI's stream-json lines (stream.jsonl), as the recorder kept them.
    pub(super) stream: Vec<Value>,
}

impl Run {
    pub(super) fn outcome(&self) -> &str {
        self.result["judgement"]["outcome"].as_str().unwrap_or("?")
    }

    pub(super) fn kind<'a>(
        &'a self,
        kind: &'a str,
        agent: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Value> + 'a {
        self.events
            .iter()
            .filter(move |e| e["kind"] == kind && agent.is_none_or(|a| e["agent"] == a))
    }

    pub(super) fn hooks<'a>(&'a self, hook: &'a str, agent: &'a str) -> Vec<&'a Value> {
        self.kind("hook", Some(agent))
            .filter(|e| e["hook"] == hook)
            .collect()
    }

    /// Task ids the timeline labels `label` (a track or a spawned agent).
    pub(super) fn task_ids(&self, label: &str) -> Vec<String> {
        self.kind("task_started", None)
            .filter(|e| e["label"] == label)
            .filter_map(|e| e["task_id"].as_str().map(str::to_string))
            .collect()
    }

    /// Requests of `agent` carrying a notification for one of `ids`.
    pub(super) fn notified<'a>(&'a self, agent: &'a str, ids: &[String]) -> Vec<&'a Value> {
        self.kind("model_request", Some(agent))
            .filter(|e| {
                e["notifications"].as_array().is_some_and(|ns| {
                    ns.iter()
                        .any(|n| ids.iter().any(|id| n["task_id"] == id.as_str()))
                })
            })
            .collect()
    }

    fn t(e: &Value) -> f64 {
        e["t_ms"].as_f64().unwrap_or(0.0)
    }

    pub(super) fn describe(&self) -> String {
        format!(
            "{} ({}): {}",
            self.variant,
            self.dir.display(),
            self.result["judgement"]["verdicts"]
        )
    }
}

fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `wakeprobe run SCENARIO --backend sim --profile P --set ...` to completion (bounded);
/// returns every run folder it wrote.
pub(super) fn run_sim(
    scenario: &str,
    profile: &str,
    sets: &[(String, String)],
    variants: &[&str],
    limit: Duration,
) -> Vec<Run> {
    let out = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wakeprobe"));
    cmd.args([
        "run",
        scenario,
        "--backend",
        "sim",
        "--profile",
        profile,
        "--quiet",
        // Scaled-down durations on purpose, below some variants' ranges (those runs then have
        // no expected verdict; these tests assert their own).
        "--explore",
        "-j",
        "2",
        "--out",
    ])
    .arg(out.path())
    .current_dir(root())
    .env_remove("WAKEPROBE_KEEP")
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    for (k, v) in sets {
        cmd.args(["--set", &format!("{k}={v}")]);
    }
    for v in variants {
        cmd.args(["--variant", v]);
    }
    let child = cmd.spawn().expect("spawn wakeprobe");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output = match rx.recv_timeout(limit) {
        Ok(out) => out.expect("wait for wakeprobe"),
        Err(_) => {
            crate::common::signal(pid, libc::SIGKILL);
            panic!("{scenario} on {profile}: wakeprobe did not finish within {limit:?}");
        }
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        matches!(output.status.code(), Some(0) | Some(1)),
        "{scenario} on {profile}: wakeprobe exited {:?}\n{stderr}",
        output.status
    );
    let mut runs = Vec::new();
    for invocation in std::fs::read_dir(out.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
    {
        for scenario_dir in std::fs::read_dir(invocation.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            for run in std::fs::read_dir(scenario_dir.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let dir = run.path();
                if !dir.join("run.json").exists() {
                    continue;
                }
                let run_json = read_json(&dir.join("run.json"));
                let timeline = read_json(&dir.join("timeline.json"));
                // Its draft has a short title and fits an issue.
                let drafted = crate::common::drafts::problems(&dir, None);
                assert!(
                    drafted.is_empty(),
                    "{scenario} on {profile}, {}: {}",
                    dir.display(),
                    drafted.join("; ")
                );
                // The exported script judges this evidence as wakeprobe does.
                let disagree = crate::common::judges::disagreements(&dir, None);
                assert!(
                    disagree.is_empty(),
                    "{scenario} on {profile}, {}: the exported script judges otherwise:\n{}",
                    dir.display(),
                    disagree.join("\n")
                );
                let kept = out.path().join("..").join(format!(
                    "wakeprobe-sim-test-{}-{}-{}",
                    std::process::id(),
                    profile,
                    dir.file_name().unwrap().to_string_lossy()
                ));
                runs.push(Run {
                    variant: run_json["variant"].as_str().unwrap_or("?").to_string(),
                    result: read_json(&dir.join("result.json")),
                    events: timeline["events"].as_array().cloned().unwrap_or_default(),
                    stream: std::fs::read_to_string(dir.join("stream.jsonl"))
                        .unwrap_or_default()
                        .lines()
                        .filter_map(|l| serde_json::from_str(l).ok())
                        .collect(),
                    run: run_json,
                    dir: if std::env::var_os("WAKEPROBE_KEEP").is_some() {
                        let _ = std::fs::rename(&dir, &kept);
                        kept
                    } else {
                        dir
                    },
                });
            }
        }
    }
    assert!(
        !runs.is_empty(),
        "{scenario} on {profile}: no run folder\n{stderr}"
    );
    runs.sort_by(|a, b| a.variant.cmp(&b.variant));
    runs
}

fn by_variant<'a>(runs: &'a [Run], variant: &str) -> &'a Run {
    runs.iter()
        .find(|r| r.variant == variant)
        .unwrap_or_else(|| panic!("no `{variant}` run"))
}

/// What every simulated run must satisfy, whatever the scenario: a clean end, the simulator
/// identifying itself, and the profile's signature.
pub(super) fn check_run(scenario: &str, profile: &str, run: &Run) {
    let ctx = format!(
        "{scenario}/{} on {profile}: {}",
        run.variant,
        run.describe()
    );
    assert_eq!(
        run.run["leftovers"].as_array().map(Vec::len),
        Some(0),
        "{ctx}: processes were left behind: {}",
        run.run["leftovers"]
    );
    // A waiter that is never told (or work that never ends) keeps the session open until the
    // work's hang bound or the ceiling, where the harness ends it: bounded either way.
    // Otherwise the simulator ends by itself, with status 0.
    let end = run.run["end"].as_str().unwrap_or("?");
    let harness_ended = matches!(end, "ceiling" | "work-hung");
    assert!(
        harness_ended || matches!(end, "finished" | "cli-ended"),
        "{ctx}: ended {end}"
    );
    if !harness_ended {
        assert_eq!(
            run.run["cli_exit"]["code"], 0,
            "{ctx}: the simulator's exit"
        );
    }
    let version = run.run["cli_version_reported"].as_str().unwrap_or("");
    if run.run["mode"] != "pty" {
        assert!(
            version.ends_with("-sim"),
            "{ctx}: reported version `{version}`"
        );
    }
    assert!(
        run.kind("model_request", None).next().is_some(),
        "{ctx}: no model request"
    );
    assert!(
        [
            "woke",
            "never-fired",
            "not-resumable",
            "queued-until-input",
            "child-failed",
            "unknown"
        ]
        .contains(&run.outcome()),
        "{ctx}"
    );
    let inputs = run
        .kind("user_input", None)
        .filter(|e| e["why"] == "scheduled" || e["why"] == "probe")
        .count();
    let notified_requests: Vec<&Value> = run
        .kind("model_request", None)
        .filter(|e| e["notifications"].as_array().is_some_and(|n| !n.is_empty()))
        .collect();
    match profile {
        "drop-notification" => {
            assert_eq!(
                run.kind("task_notified", None).count(),
                0,
                "{ctx}: a task_notification line was printed"
            );
            assert!(
                notified_requests.is_empty(),
                "{ctx}: a request carried a notification"
            );
        }
        "queue-until-input" if inputs == 0 => {
            assert!(
                notified_requests.is_empty(),
                "{ctx}: a notification was delivered with no input to carry it"
            );
        }
        "child-error" => {
            for e in run.kind("track_ended", None) {
                if background_track(run, e["name"].as_str().unwrap_or(""))
                    && e["exit"].get("code").is_some()
                {
                    assert_eq!(
                        e["exit"]["code"], 3,
                        "{ctx}: a background command did not fail: {e}"
                    );
                }
            }
        }
        "child-hang" => {
            for e in run.kind("track_ended", None) {
                let name = e["name"].as_str().unwrap_or("");
                assert!(
                    !background_track(run, name) || harness_ended,
                    "{ctx}: background `{name}` ended: {e}"
                );
            }
        }
        "fixed" => {
            // No subagent is finalized while a shell of its own still runs (a monitor's
            // source is no such work: it does not hold its owner's turn on any profile).
            for stop in run
                .kind("hook", None)
                .filter(|e| e["hook"] == "SubagentStop")
            {
                let agent = stop["agent"].as_str().unwrap_or("");
                for t in stop["background_tasks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|t| t["type"] != "monitor")
                {
                    let owned = run
                        .kind("task_started", Some(agent))
                        .any(|s| s["task_id"] == t["id"] && s["task_type"] == "local_bash");
                    assert!(
                        !(owned && t["status"] == "running"),
                        "{ctx}: `{agent}` stopped with its shell running"
                    );
                }
            }
        }
        "teammate-stuck-running" | "teammate-idle-flag" => {
            let want = if profile == "teammate-idle-flag" {
                "distinguishable"
            } else {
                "indistinguishable"
            };
            for c in run.result["judgement"]["checks"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if c["kind"] == "idle-teammate-distinguishable" && c["observed"] != "not-observed" {
                    assert_eq!(c["observed"], want, "{ctx}: {}", c["explanation"]);
                }
            }
        }
        _ => {}
    }
}

/// Whether `name` is a command some agent started with `run_in_background`.
fn background_track(run: &Run, name: &str) -> bool {
    run.kind("tool_call", None)
        .any(|e| e["track"] == name && e["background"] == true)
}

// ----- seed 000, profile by profile ---------------------------------------------------------

fn set(k: &str, v: u32) -> Vec<(String, String)> {
    vec![(k.to_string(), v.to_string())]
}

const LIMIT: Duration = Duration::from_secs(120);

/// The worker and its background command in a seed-000 run.
struct Seed<'a> {
    run: &'a Run,
    bg: Vec<String>,
    worker: Vec<String>,
}

impl<'a> Seed<'a> {
    fn new(run: &'a Run) -> Seed<'a> {
        let bg = run.task_ids("bg");
        let worker = run.task_ids("worker");
        assert_eq!(bg.len(), 1, "{}", run.describe());
        assert!(!worker.is_empty(), "{}", run.describe());
        Seed { run, bg, worker }
    }

    fn bg_end(&self) -> &'a Value {
        self.run
            .kind("track_ended", None)
            .find(|e| e["name"] == "bg")
            .unwrap_or_else(|| panic!("bg never ended: {}", self.run.describe()))
    }

    /// The worker was re-invoked for its command's notification, after the command ended.
    fn assert_worker_reinvoked(&self) {
        let run = self.run;
        let end = Run::t(self.bg_end());
        assert_eq!(
            run.hooks("SubagentStart", "worker").len(),
            2,
            "two SubagentStarts: {}",
            run.describe()
        );
        assert_eq!(
            run.kind("task_started", None)
                .filter(|e| e["label"] == "worker")
                .count(),
            2,
            "{}",
            run.describe()
        );
        let delivery = run
            .notified("worker", &self.bg)
            .into_iter()
            .next()
            .expect("the worker gets bg's notification");
        assert!(Run::t(delivery) >= end, "delivered after bg ended");
        let second_start = Run::t(run.hooks("SubagentStart", "worker")[1]);
        assert!(
            second_start >= end && second_start <= Run::t(delivery),
            "{}",
            run.describe()
        );
    }
}

#[test]
fn default_profile_print_stall_orphans_and_kills_after_the_grace() {
    // 8 s: longer than the ~5 s grace the CLI gives an orphan after the last result.
    let runs = run_sim(
        SEED,
        "finalize-on-turn-end",
        &set("bg_seconds", 8),
        &["print"],
        LIMIT,
    );
    let run = by_variant(&runs, "print");
    check_run(SEED, "finalize-on-turn-end", run);
    assert_eq!(run.outcome(), "not-resumable", "{}", run.describe());
    let seed = Seed::new(run);
    let stop = run.hooks("SubagentStop", "worker");
    assert_eq!(stop.len(), 1, "{}", run.describe());
    let listed_running = stop[0]["background_tasks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["type"] == "shell" && t["status"] == "running");
    assert!(
        listed_running,
        "SubagentStop lists the shell as running: {}",
        stop[0]
    );
    let killed = run
        .kind("task_updated", None)
        .find(|e| {
            seed.bg
                .contains(&e["task_id"].as_str().unwrap_or("").to_string())
        })
        .expect("bg's status update");
    assert_eq!(killed["status"], "killed");
    assert!(
        seed.bg_end()["exit"].get("signal").is_some(),
        "bg was killed by a signal"
    );
    let last_result = run
        .kind("turn_result", None)
        .map(Run::t)
        .fold(0.0, f64::max);
    let grace = Run::t(killed) - last_result;
    assert!(
        (4.5..7.5).contains(&(grace / 1000.0)),
        "killed {grace} ms after the last result"
    );
    assert!(
        run.kind("model_request", Some("worker"))
            .all(|r| Run::t(r) < Run::t(stop[0])),
        "no worker request after its SubagentStop"
    );
    assert_eq!(run.hooks("SubagentStart", "worker").len(), 1);
    // The main agent got the worker's interim report in a turn of its own.
    assert_eq!(
        run.notified("main", &seed.worker).len(),
        1,
        "{}",
        run.describe()
    );
}

#[test]
fn default_profile_reinvokes_the_subagent_while_the_session_lives() {
    // 2 s: the command ends inside the print-mode grace (the real CLI then re-invokes too).
    let runs = run_sim(
        SEED,
        "finalize-on-turn-end",
        &set("bg_seconds", 2),
        &[],
        LIMIT,
    );
    for run in &runs {
        check_run(SEED, "finalize-on-turn-end", run);
        assert_eq!(run.outcome(), "woke", "{}", run.describe());
        let seed = Seed::new(run);
        assert_eq!(seed.bg_end()["exit"]["code"], 0);
        seed.assert_worker_reinvoked();
        // Finalized at its first turn's end, before the command ended.
        let first_stop = run.hooks("SubagentStop", "worker")[0];
        assert!(Run::t(first_stop) < Run::t(seed.bg_end()));
        // Main: the interim report, then the final one.
        assert_eq!(
            run.notified("main", &seed.worker).len(),
            2,
            "{}",
            run.describe()
        );
    }
}

#[test]
fn fixed_profile_holds_the_subagent_until_its_work_completes() {
    let runs = run_sim(SEED, "fixed", &set("bg_seconds", 2), &[], LIMIT);
    for run in &runs {
        check_run(SEED, "fixed", run);
        assert_eq!(run.outcome(), "woke", "{}", run.describe());
        let seed = Seed::new(run);
        assert_eq!(
            run.hooks("SubagentStart", "worker").len(),
            1,
            "held, never re-invoked: {}",
            run.describe()
        );
        let stops = run.hooks("SubagentStop", "worker");
        assert_eq!(stops.len(), 1, "{}", run.describe());
        assert!(
            Run::t(stops[0]) > Run::t(seed.bg_end()),
            "no SubagentStop while bg ran"
        );
        assert_eq!(run.notified("worker", &seed.bg).len(), 1);
        assert_eq!(
            run.notified("main", &seed.worker).len(),
            1,
            "one final report: {}",
            run.describe()
        );
    }
}

#[test]
fn drop_notification_profile_never_fires() {
    let runs = run_sim(SEED, "drop-notification", &set("bg_seconds", 2), &[], LIMIT);
    for run in &runs {
        check_run(SEED, "drop-notification", run);
        assert_eq!(run.outcome(), "never-fired", "{}", run.describe());
        let seed = Seed::new(run);
        assert_eq!(
            seed.bg_end()["exit"]["code"],
            0,
            "the work itself completed"
        );
        // Held while the work ran, let go only afterwards: the waiter was resumable.
        let stop = run.hooks("SubagentStop", "worker");
        assert_eq!(stop.len(), 1);
        assert!(Run::t(stop[0]) > Run::t(seed.bg_end()));
    }
}

#[test]
fn queue_until_input_profile_delivers_only_after_an_input() {
    let runs = run_sim(SEED, "queue-until-input", &set("bg_seconds", 2), &[], LIMIT);
    for run in &runs {
        check_run(SEED, "queue-until-input", run);
        let seed = Seed::new(run);
        let printed = run.kind("task_notified", None).any(|e| {
            seed.bg
                .contains(&e["task_id"].as_str().unwrap_or("").to_string())
        });
        assert!(
            printed,
            "bg's notification was produced: {}",
            run.describe()
        );
        let told = run.notified("worker", &seed.bg);
        let inputs: Vec<&Value> = run
            .kind("user_input", None)
            .filter(|e| e["why"] != "prompt")
            .collect();
        if inputs.is_empty() {
            // Print mode takes no input: the notifications are produced, and wait forever.
            assert_eq!(run.outcome(), "not-resumable", "{}", run.describe());
            assert!(told.is_empty());
            assert!(
                run.notified("main", &seed.worker).is_empty(),
                "main's report waits too"
            );
        } else {
            // The session's probe is the input that releases the queue: H3.
            assert_eq!(run.outcome(), "queued-until-input", "{}", run.describe());
            assert_eq!(told.len(), 1, "{}", run.describe());
            assert!(
                Run::t(told[0]) > Run::t(inputs[0]),
                "delivered only after the input"
            );
            // The CLI took the input (main's request carrying its words) before it told the
            // worker: the order the H3 rule reads for an agent the input never reaches.
            let words = inputs[0]["text"].as_str().unwrap_or("?");
            let taken = run
                .kind("model_request", Some("main"))
                .find(|r| {
                    r["user_text"]
                        .as_array()
                        .is_some_and(|us| us.iter().any(|u| u.as_str() == Some(words)))
                })
                .unwrap_or_else(|| panic!("main took the input: {}", run.describe()));
            assert!(
                Run::t(taken) < Run::t(told[0]),
                "the input was taken before the worker was told: {}",
                run.describe()
            );
            assert!(
                Run::t(inputs[0]) > Run::t(seed.bg_end()) + 1000.0,
                "the input came after a silent settle window"
            );
        }
    }
}

#[test]
fn child_error_profile_fails_the_background_command() {
    let runs = run_sim(SEED, "child-error", &set("bg_seconds", 2), &[], LIMIT);
    for run in &runs {
        check_run(SEED, "child-error", run);
        assert_eq!(run.outcome(), "child-failed", "{}", run.describe());
        let seed = Seed::new(run);
        assert_eq!(seed.bg_end()["exit"]["code"], 3);
        let told = run.notified("worker", &seed.bg);
        assert_eq!(told.len(), 1, "the waiter is told: {}", run.describe());
        assert_eq!(told[0]["notifications"][0]["status"], "failed");
    }
}

#[test]
fn child_hang_profile_runs_past_its_hang_bound() {
    // The scenario declares `bg` hung 10 s past its length: at bg_seconds=1, 11 s after it
    // started; the harness ends the run there (the ceiling, bg_seconds + 45, is not reached).
    let runs = run_sim(SEED, "child-hang", &set("bg_seconds", 1), &["print"], LIMIT);
    let run = by_variant(&runs, "print");
    check_run(SEED, "child-hang", run);
    assert_eq!(run.outcome(), "child-failed", "{}", run.describe());
    assert_eq!(run.run["end"], "work-hung");
    let bound = Run::t(
        run.kind("work_overdue", None)
            .next()
            .expect("the hang bound is passed"),
    );
    assert!(run.kind("ceiling_hit", None).next().is_none());
    // The harness's cleanup kills it after the bound; before, it never ended.
    assert!(
        run.kind("track_ended", None).all(|e| Run::t(e) >= bound),
        "bg never ended by itself: {}",
        run.describe()
    );
    assert!(
        run.hooks("SubagentStop", "worker").is_empty(),
        "the waiter stayed live"
    );
}

// ----- a top-level waiter with a probe: every hypothesis on one scenario ----------------------

/// No shipped scenario sends a probe yet, so H3 needs one of the tests' own: the main agent
/// backgrounds a command and ends its turn; once all is quiet the driver sends an unrelated
/// input.
const PROBE_SCENARIO: &str = r#"
name = "sim-top-level-probe"
title = "A top-level wait, then an unrelated input"
summary = "Main backgrounds a command, ends its turn, and gets a probe once all is quiet"

[params]
bg_seconds = 2

[driver]
mode = "session"
prompt = "Run the long command in the background."
ceiling_seconds = "{{bg_seconds}} + 40"
settle_seconds = 2
probe = { text = "Any news?", quiet_seconds = 2 }

[[agents.main.steps]]
say = "Starting it."
call = "Bash"
track = "bg"
input = { command = "sleep {{bg_seconds}}; echo done", run_in_background = true, description = "Long background command" }

[[agents.main.steps]]
say = "It runs in the background."

[[agents.main.steps]]
say = "It finished."

[[agents.main.steps]]
say = "Answering the probe."
"#;

#[test]
fn a_top_level_waiter_shows_each_profiles_hypothesis() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sim-top-level-probe.toml");
    std::fs::write(&path, PROBE_SCENARIO).unwrap();
    let path = path.to_str().unwrap().to_string();
    let cases = [
        ("finalize-on-turn-end", "woke"),
        ("fixed", "woke"),
        ("drop-notification", "never-fired"),
        ("queue-until-input", "queued-until-input"),
        ("child-error", "child-failed"),
    ];
    std::thread::scope(|scope| {
        for (profile, expected) in cases {
            let path = &path;
            scope.spawn(move || {
                let runs = run_sim(path, profile, &[], &[], LIMIT);
                let run = by_variant(&runs, "session");
                check_run("sim-top-level-probe", profile, run);
                assert_eq!(run.outcome(), expected, "{profile}: {}", run.describe());
                let bg = run.task_ids("bg");
                let probe = run
                    .kind("user_input", None)
                    .find(|e| e["why"] == "probe")
                    .map(Run::t);
                let delivered = run.notified("main", &bg).into_iter().next().map(Run::t);
                match profile {
                    // Woken by itself: before any probe.
                    "finalize-on-turn-end" | "fixed" | "child-error" => {
                        assert!(
                            delivered.is_some() && probe.is_none_or(|p| delivered < Some(p)),
                            "{profile}"
                        );
                    }
                    // Only the probe's turn carries it.
                    "queue-until-input" => {
                        assert!(probe.is_some() && delivered >= probe, "{profile}")
                    }
                    _ => assert!(delivered.is_none(), "{profile}"),
                }
            });
        }
    });
}

// ----- every shipped scenario ---------------------------------------------------------------

/// Scaled-down parameters: every duration-like number becomes at most 2 (seconds).
fn scaled(scenario: &wakeprobe::scenario::Scenario) -> Vec<(String, String)> {
    scenario
        .default_params()
        .iter()
        .filter_map(|(k, v)| {
            let n: f64 = serde_json::to_value(v).ok()?.as_f64()?;
            let durationish = ["second", "delay", "gap", "wait", "sleep", "timeout"]
                .iter()
                .any(|w| k.contains(w));
            (durationish && n > 2.0).then(|| (k.clone(), "2".to_string()))
        })
        .collect()
}

/// The profiles that change something in this scenario.
/// Whether a variant of `scenario` runs through an Agent SDK.
fn runs_through_an_sdk(scenario: &wakeprobe::scenario::Scenario) -> bool {
    scenario.variants().iter().any(|v| {
        scenario
            .plan(v, &[])
            .is_ok_and(|p| p.driver.mode.row().host.is_some())
    })
}

fn relevant_profiles(
    scenario: &wakeprobe::scenario::Scenario,
    sets: &[(String, String)],
) -> Vec<&'static str> {
    let mut profiles = vec![
        "finalize-on-turn-end",
        "fixed",
        "drop-notification",
        "queue-until-input",
    ];
    let mut background_bash = false;
    let mut named_agent = false;
    let mut ceiling = f64::INFINITY;
    for variant in scenario.variants() {
        let Ok(plan) =
            scenario.plan_with(&variant, sets, wakeprobe::scenario::RangePolicy::Explore)
        else {
            continue;
        };
        ceiling = ceiling.min(plan.driver.ceiling.as_secs_f64());
        for steps in plan.agents.values() {
            for call in steps.iter().flat_map(|s| &s.calls) {
                background_bash |= call.tool == "Bash" && call.input["run_in_background"] == true;
                named_agent |= matches!(call.tool.as_str(), "Agent" | "Task")
                    && call.input.get("name").is_some();
            }
        }
    }
    if background_bash {
        profiles.push("child-error");
        // A hang lasts until the ceiling: only where the ceiling is short.
        if ceiling <= 60.0 {
            profiles.push("child-hang");
        }
    }
    if named_agent {
        profiles.extend(["teammate-stuck-running", "teammate-idle-flag"]);
    }
    profiles
}

/// A scenario, a profile, and the parameters it runs with.
type Cell = (String, &'static str, Vec<(String, String)>);

#[test]
fn every_shipped_scenario_runs_on_every_relevant_profile() {
    let scenarios =
        wakeprobe::scenario::load_dir(&root().join("scenarios")).expect("scenarios load");
    assert!(
        scenarios.iter().any(|s| s.name == SEED),
        "the seed-000 scenario ships"
    );
    let mut cells: Vec<Cell> = Vec::new();
    // The SDK drivers' scenarios run on the real CLI only (the simulator does not speak the
    // SDK's side of the protocol); the library run on the pinned CLI covers them.
    for s in scenarios.iter().filter(|s| !runs_through_an_sdk(s)) {
        let sets = scaled(s);
        for profile in relevant_profiles(s, &sets) {
            cells.push((s.name.clone(), profile, sets.clone()));
        }
    }
    // Many invocations at a time: each mostly waits on the simulator's sleeping tasks.
    let queue = Mutex::new(cells);
    let failures = Mutex::new(Vec::<String>::new());
    std::thread::scope(|scope| {
        for _ in 0..12 {
            scope.spawn(|| {
                loop {
                    let Some((scenario, profile, sets)) = queue.lock().unwrap().pop() else {
                        break;
                    };
                    let outcome = std::panic::catch_unwind(|| {
                        let limit = Duration::from_secs(240);
                        for run in run_sim(&scenario, profile, &sets, &[], limit) {
                            check_run(&scenario, profile, &run);
                        }
                    });
                    if let Err(e) = outcome {
                        let message = e
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("{scenario} on {profile}: {message}"));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ----- the binary itself ----------------------------------------------------------------------

#[test]
fn claude_sim_names_its_version_and_refuses_unknown_profiles() {
    let out = Command::new(env!("CARGO_BIN_EXE_claude-sim"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("-sim"));
    let out = Command::new(env!("CARGO_BIN_EXE_claude-sim"))
        .args(["-p", "hi", "--profile", "no-such-profile"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown profile"));
    let out = Command::new(env!("CARGO_BIN_EXE_wakeprobe"))
        .args([
            "run",
            SEED,
            "--backend",
            "sim",
            "--profile",
            "no-such-profile",
            "--quiet",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "bad input");
}
