//! Verifying SubagentStop guard scripts: a corpus of payloads and transcripts in the exact shape
//! the real CLI writes, run through a guard, with each decision compared to what it should be.
//!
//! Every corpus case starts from something the real Claude Code wrote (`fixtures/`, see its
//! README): SubagentStop payloads of 2.1.332, whose `background_tasks` lists every live task of
//! the session, with the agents' transcripts beside them; and a payload of 2.1.144, the last
//! version without `background_tasks`. A case replaces at most one thing in it (the message,
//! `stop_hook_active`, a status, the transcript path) and says so in its name. The malformed
//! cases are what a guard must survive. A guard *blocks* by printing `{"decision":"block",...}`
//! and exiting 0, or by exiting 2 (as the CLI reads hooks); it *passes* by exiting 0 otherwise;
//! any other exit, a timeout or output that is neither is an *error*.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// SubagentStop payloads and transcripts the real CLI wrote (paths redacted).
pub mod fixtures {
    /// 2.1.332: `worker` stops with a neutral message while its own shell runs (session-wide list).
    pub const WORKER_STOP: &str = include_str!("fixtures/sst-worker-stop.json");
    /// 2.1.332: `worker`'s second stop, its shell ended and gone from the list.
    pub const WORKER_STOP_AFTER: &str = include_str!("fixtures/sst-worker-stop-after.json");
    /// `worker`'s transcript (user and assistant records).
    pub const WORKER_TRANSCRIPT: &str = include_str!("fixtures/sst-worker.jsonl");
    /// 2.1.332: `other` stops while the main agent's shell runs.
    pub const OTHER_STOP: &str = include_str!("fixtures/sst-other-stop.json");
    pub const OTHER_TRANSCRIPT: &str = include_str!("fixtures/sst-other.jsonl");
    /// 2.1.332: `helper` stops while another subagent's shell runs.
    pub const HELPER_STOP: &str = include_str!("fixtures/gee-helper-stop.json");
    pub const HELPER_TRANSCRIPT: &str = include_str!("fixtures/gee-helper.jsonl");
    /// 2.1.332: a stop after a block (`stop_hook_active` true), only the agent's own entry left.
    pub const SELF_ONLY_STOP: &str = include_str!("fixtures/gee-worker-stop-after.json");
    pub const SELF_ONLY_TRANSCRIPT: &str = include_str!("fixtures/gee-worker.jsonl");
    /// 2.1.144: no `background_tasks`; the seed's stall message.
    pub const NO_TASKS_STOP: &str = include_str!("fixtures/v2.1.144-worker-stop.json");
    /// 2.1.332 with `--no-session-persistence`: `worker` stops with the seed's stall message
    /// while its shell runs; the transcript its payload names was never written.
    pub const UNPERSISTED_WORKER_STOP: &str = include_str!("fixtures/np-worker-stop.json");
    /// The same run: `helper` stops normally while the worker's shell runs, no transcript.
    pub const UNPERSISTED_HELPER_STOP: &str = include_str!("fixtures/np-helper-stop.json");
    /// The same run: `worker`'s stop after the guard's block (`stop_hook_active` true).
    pub const UNPERSISTED_WORKER_STOP_AFTER: &str =
        include_str!("fixtures/np-worker-stop-after.json");
}

/// wakeprobe's model of seed 000's guard, written from what the seed says it does (it greps the
/// whole payload for `stop_hook_active` true, then for a few stall phrasings): what `guard
/// verify --with-seed` compares with where no seed report is at hand.
pub const SEED_MODEL: &str = include_str!("seed000-model.sh");

/// The SubagentStop payload the corpus is mostly built on (2.1.332).
pub const CAPTURED: &str = fixtures::WORKER_STOP;

/// How long one guard invocation may take.
const LIMIT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Block,
    Pass,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Got {
    Decided(Decision),
    Error(String),
}

impl Got {
    pub fn label(&self) -> String {
        match self {
            Got::Decided(Decision::Block) => "block".into(),
            Got::Decided(Decision::Pass) => "pass".into(),
            Got::Error(e) => format!("error: {e}"),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    /// `structure`, `transcript`, `loop-guard`, `stall`, `normal` or `malformed`.
    pub group: &'static str,
    pub input: Vec<u8>,
    pub expected: Decision,
}

fn parse(fixture: &str) -> Value {
    serde_json::from_str(fixture).expect("a fixture payload is JSON")
}

/// A payload without `background_tasks` (2.1.144) with its message and `stop_hook_active`
/// replaced: only the words can tell a stall here.
pub fn words_payload(message: Option<&str>, stop_hook_active: bool) -> Value {
    let mut v = parse(fixtures::NO_TASKS_STOP);
    match message {
        Some(m) => v["last_assistant_message"] = Value::String(m.to_string()),
        None => {
            v.as_object_mut()
                .expect("an object")
                .remove("last_assistant_message");
        }
    }
    v["stop_hook_active"] = Value::Bool(stop_hook_active);
    v
}

/// A fixture payload whose `agent_transcript_path` names `transcript`, written into a new file
/// `NAME-N.jsonl` in `dir` (one per payload: cases are built first and run later).
pub fn with_transcript(fixture: &str, dir: &Path, name: &str, transcript: &str) -> Value {
    use std::io::Write;
    let (path, mut file) = (0..)
        .find_map(|n| {
            let path = dir.join(format!("{name}-{n}.jsonl"));
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path);
            match file {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
                other => Some((path, other.expect("the transcript folder is writable"))),
            }
        })
        .expect("a free file name");
    file.write_all(transcript.as_bytes())
        .expect("the transcript folder is writable");
    let mut v = parse(fixture);
    v["agent_transcript_path"] = Value::String(path.to_string_lossy().into_owned());
    v
}

/// `transcript` with one more record: its last text reply, saying `message` instead, as the CLI
/// writes an agent's last message once it has it.
pub fn transcript_ending_with(transcript: &str, message: &str) -> String {
    let last = transcript
        .lines()
        .rev()
        .find(|l| l.contains("\"type\":\"assistant\"") && l.contains("\"type\":\"text\""))
        .expect("the transcript has a text reply");
    let mut record: Value = serde_json::from_str(last).expect("a transcript record is JSON");
    record["message"]["content"] = serde_json::json!([{"text": message, "type": "text"}]);
    format!("{transcript}{record}\n")
}

/// A fixture payload with `message` as its last message and a transcript that ends with it.
fn replying(fixture: &str, dir: &Path, name: &str, transcript: &str, message: &str) -> Value {
    let mut v = with_transcript(
        fixture,
        dir,
        name,
        &transcript_ending_with(transcript, message),
    );
    v["last_assistant_message"] = Value::String(message.to_string());
    v
}

/// `worker`'s payload (2.1.332: its own shell running among the session's other work) with its
/// transcript, and `message` as its last message: what a guard must block, whatever it says.
pub fn own_work_payload(dir: &Path, message: &str, stop_hook_active: bool) -> Value {
    let mut v = replying(
        fixtures::WORKER_STOP,
        dir,
        "worker",
        fixtures::WORKER_TRANSCRIPT,
        message,
    );
    v["stop_hook_active"] = Value::Bool(stop_hook_active);
    v
}

/// `other`'s payload (2.1.332: only the main agent's shell and itself running) with its
/// transcript and `message`: no work of its own is live, so no message may block it.
pub fn others_work_payload(dir: &Path, message: &str) -> Value {
    replying(
        fixtures::OTHER_STOP,
        dir,
        "other",
        fixtures::OTHER_TRANSCRIPT,
        message,
    )
}

/// Stall-shaped final messages: the documented ones from seed 000 first, then other phrasings.
pub const STALLS: &[&str] = &[
    "The run will re-invoke me on completion.",
    "The e2e run will re-invoke me on completion.",
    "Awaiting the monitor's completion event.",
    "Started the recording in the background; I'll be notified when it finishes.",
    "Both background jobs will notify me when they're done.",
    "Waiting for the background test run to complete before continuing.",
    "I'll resume once the build finishes.",
    "Kicked off the suite. I'll check back when it's done.",
    "The task is running in the background; I'll be woken up when it completes.",
    "Ending my turn now; the completion notification will wake me.",
    "I'll pick this back up when the job completes.",
    "Once the migration finishes, I'll continue with step 3.",
    "Letting the benchmark run. I'll report back once it's done.",
    "Background e2e run started (ID bjoyqzxgm). Will continue when notified.",
    "I expect to be re-invoked when the recording completes.",
    "The monitor should notify me as soon as the run ends.",
    "I\u{2019}ll be notified when it finishes.",
];

/// Normal final messages, several of which merely contain words like "wait", "notify" or
/// "resume", or the guard's own verbs inside other words ("will", "CI will").
pub const NORMALS: &[&str] = &[
    "Done. All 42 tests pass.",
    "I waited for the test run to finish and all 42 tests pass.",
    "Added a notify() helper that the scheduler calls on completion.",
    "The monitor now emits a completion event after each run; tests cover it.",
    "Fixed the re-invocation bug in scheduler.rs; the subagent is re-invoked exactly once now.",
    "Summary: the notification path works; subagents are woken when their tasks finish.",
    "Here is the waitForCompletion() helper: it polls every 5 s up to a ceiling.",
    "The PR is merged; CI will notify the team channel.",
    "Finished: the background job completed (exit 0) and its output is in out.txt.",
    "I polled the output file until the run completed: 3 failures, details below.",
    "No background work is left; everything is done.",
    "Tests pass. The worker awaits the queue internally, by design.",
    "I'll wait for your review before merging.",
    "Renamed the event to job_completed and updated the notify hook.",
    "Report: the e2e suite ran to completion in 88 s with no failures.",
    "CI will resume once the runners are back; all tests pass.",
    "Users will be notified when the export finishes; the feature is done.",
    "The scheduler will re-invoke the job when the queue drains; merged.",
    "",
];

/// The corpus; transcripts are written into `dir`, which must outlive the runs.
pub fn corpus(dir: &Path) -> Vec<Case> {
    let neutral = parse(fixtures::WORKER_STOP)["last_assistant_message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut cases = Cases::default();
    structure_cases(dir, &neutral, &mut cases);
    ownership_cases(dir, &neutral, &mut cases);
    unreadable_transcript_cases(dir, &neutral, &mut cases);
    nudge_and_word_cases(dir, &neutral, &mut cases);
    let mut cases = cases.0;
    malformed_cases(&mut cases);
    cases
}

/// The corpus as it is built: each case a payload and the decision it must get.
#[derive(Default)]
struct Cases(Vec<Case>);

impl Cases {
    fn add(&mut self, name: String, group: &'static str, v: &Value, expected: Decision) {
        self.0.push(Case {
            name,
            group,
            input: to_json(v),
            expected,
        });
    }
}

fn to_json(v: &Value) -> Vec<u8> {
    v.to_string().into_bytes()
}

/// The payload and the transcript decide, not the words.
fn structure_cases(dir: &Path, neutral: &str, case: &mut Cases) {
    let block = Decision::Block;
    let pass = Decision::Pass;
    // Structure: the payload and the transcript decide, not the words.
    let own = own_work_payload;
    case.add(
        format!("structure: own running shell, a neutral message (2.1.332): {neutral}"),
        "structure",
        &own(dir, neutral, false),
        block,
    );
    case.add(
        format!(
            "structure: own running shell, the seed's stall message: {}",
            STALLS[0]
        ),
        "structure",
        &own(dir, STALLS[0], false),
        block,
    );
    case.add(
        "structure: own running shell, the message says it is done".into(),
        "structure",
        &own(dir, NORMALS[0], false),
        block,
    );
    let mut completed = own(dir, neutral, false);
    let own_shell = own_shell_id();
    for t in completed["background_tasks"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        if t["id"] == own_shell.as_str() {
            t["status"] = Value::String("completed".into());
        }
    }
    case.add(
        "structure: own shell completed (its status set to completed)".into(),
        "structure",
        &completed,
        pass,
    );
    case.add(
        "structure: own shell ended and gone from the list, others still running (2.1.332)".into(),
        "structure",
        &with_transcript(
            fixtures::WORKER_STOP_AFTER,
            dir,
            "worker",
            fixtures::WORKER_TRANSCRIPT,
        ),
        pass,
    );
    let mut self_only = with_transcript(
        fixtures::SELF_ONLY_STOP,
        dir,
        "self-only",
        fixtures::SELF_ONLY_TRANSCRIPT,
    );
    self_only["stop_hook_active"] = Value::Bool(false);
    case.add(
        "structure: only the agent's own entry (2.1.332, stop_hook_active set to false)".into(),
        "structure",
        &self_only,
        pass,
    );
    case.add(
        "structure: another subagent's running shell (2.1.332)".into(),
        "structure",
        &with_transcript(
            fixtures::HELPER_STOP,
            dir,
            "helper",
            fixtures::HELPER_TRANSCRIPT,
        ),
        pass,
    );
    case.add(
        "structure: the main agent's running shell (2.1.332)".into(),
        "structure",
        &with_transcript(
            fixtures::OTHER_STOP,
            dir,
            "other",
            fixtures::OTHER_TRANSCRIPT,
        ),
        pass,
    );
    case.add(
        format!(
            "structure: a stall message, only others' work running: {}",
            STALLS[0]
        ),
        "structure",
        &others_work_payload(dir, STALLS[0]),
        pass,
    );
}

/// Whose work it is, when only the prompt or nobody's transcript names it.
fn ownership_cases(dir: &Path, neutral: &str, case: &mut Cases) {
    let pass = Decision::Pass;
    let own_shell = own_shell_id();
    // The main agent's shell id in the worker's prompt (a user record), not in a tool result.
    let main_shell = parse(fixtures::OTHER_STOP)["background_tasks"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut prompt_only: Value = serde_json::from_str(
        fixtures::WORKER_TRANSCRIPT
            .lines()
            .next()
            .expect("a first record"),
    )
    .expect("a transcript record is JSON");
    prompt_only["message"]["content"] =
        Value::String(format!("Wait for the main agent's task {main_shell}."));
    let mut mentioned = with_transcript(
        fixtures::WORKER_STOP,
        dir,
        "worker-told",
        &format!(
            "{prompt_only}\n{}\n",
            fixtures::WORKER_TRANSCRIPT
                .lines()
                .find(|l| l.contains(&format!("\"text\":\"{neutral}\"")))
                .expect("the worker's last reply is in its transcript")
        ),
    );
    if let Some(tasks) = mentioned["background_tasks"].as_array_mut() {
        tasks.retain(|t| t["id"] != own_shell.as_str());
    }
    case.add(
        "structure: another agent's task named in the agent's prompt, not in a tool result".into(),
        "structure",
        &mentioned,
        pass,
    );
    let no_tasks = words_payload(Some(neutral), false);
    case.add(
        "structure: no background_tasks field (2.1.144), a neutral message: words only".into(),
        "structure",
        &no_tasks,
        pass,
    );
}

/// A payload whose `agent_transcript_path` names `path`, or has none (`None`).
fn transcript_at(mut v: Value, path: Option<&Path>) -> Value {
    match path {
        Some(p) => v["agent_transcript_path"] = Value::String(p.to_string_lossy().into_owned()),
        None => {
            v.as_object_mut()
                .expect("an object")
                .remove("agent_transcript_path");
        }
    }
    v
}

/// A fixture payload with `message` as its last message and its transcript missing, as the CLI
/// leaves it with `--no-session-persistence`: the payload still names the file.
pub fn unpersisted(fixture: &str, dir: &Path, message: &str) -> Value {
    let mut v = parse(fixture);
    v["last_assistant_message"] = Value::String(message.to_string());
    transcript_at(v, Some(&dir.join("no-such-transcript.jsonl")))
}

/// The transcript cannot be read (`--no-session-persistence` writes none): only the payload can
/// tell. Running work and a stall in words block; a neutral or a done message, nothing running
/// or the loop guard pass.
fn unreadable_transcript_cases(dir: &Path, neutral: &str, case: &mut Cases) {
    unreadable_transcript_blocks(dir, case);
    unreadable_transcript_passes(dir, neutral, case);
    captured_unreadable_transcript_cases(dir, case);
}

/// Without a transcript, a stall in words blocks while the agent's own work (or work nothing
/// attributes) runs.
fn unreadable_transcript_blocks(dir: &Path, case: &mut Cases) {
    let block = Decision::Block;
    let own = own_work_payload;
    for m in [STALLS[0], STALLS[1], STALLS[3]] {
        case.add(
            format!("no transcript: own shell running, a stall: {m}"),
            "transcript",
            &unpersisted(fixtures::WORKER_STOP, dir, m),
            block,
        );
    }
    case.add(
        format!(
            "no transcript (the path is a folder): own shell running, a stall: {}",
            STALLS[0]
        ),
        "transcript",
        &transcript_at(own(dir, STALLS[0], false), Some(dir)),
        block,
    );
    case.add(
        format!(
            "no transcript (no agent_transcript_path): own shell running, a stall: {}",
            STALLS[0]
        ),
        "transcript",
        &transcript_at(own(dir, STALLS[0], false), None),
        block,
    );
    case.add(
        format!(
            "no transcript: only the main agent's shell running (whose, nothing tells), a stall: {}",
            STALLS[0]
        ),
        "transcript",
        &unpersisted(fixtures::OTHER_STOP, dir, STALLS[0]),
        block,
    );
}

/// Without a transcript, a message that does not stall, nothing of the agent's running, or the
/// loop guard passes.
fn unreadable_transcript_passes(dir: &Path, neutral: &str, case: &mut Cases) {
    let pass = Decision::Pass;
    for (what, m) in [
        ("a neutral message", neutral),
        ("done", NORMALS[0]),
        (
            "others' verbs",
            "CI will resume once the runners are back; all tests pass.",
        ),
        ("an empty message", ""),
    ] {
        case.add(
            format!("no transcript: own shell running, {what}: {m}"),
            "transcript",
            &unpersisted(fixtures::WORKER_STOP, dir, m),
            pass,
        );
    }
    let mut self_only = unpersisted(fixtures::SELF_ONLY_STOP, dir, STALLS[0]);
    self_only["stop_hook_active"] = Value::Bool(false);
    case.add(
        "no transcript: only the agent's own entry, a stall".into(),
        "transcript",
        &self_only,
        pass,
    );
    let mut completed = unpersisted(fixtures::WORKER_STOP, dir, STALLS[0]);
    for t in completed["background_tasks"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        t["status"] = Value::String("completed".into());
    }
    case.add(
        "no transcript: every task completed, a stall".into(),
        "transcript",
        &completed,
        pass,
    );
    let mut nudged = unpersisted(fixtures::WORKER_STOP, dir, STALLS[0]);
    nudged["stop_hook_active"] = Value::Bool(true);
    case.add(
        "loop guard: no transcript, own shell running, a stall, stop_hook_active true".into(),
        "loop-guard",
        &nudged,
        pass,
    );
}

/// Payloads captured from real CLIs whose transcript is missing: 2.1.332 with
/// `--no-session-persistence`, and 2.1.144's (no `background_tasks`), judged by words alone.
fn captured_unreadable_transcript_cases(dir: &Path, case: &mut Cases) {
    let block = Decision::Block;
    let pass = Decision::Pass;
    let missing = dir.join("no-such-transcript.jsonl");
    // Captured from 2.1.332 with --no-session-persistence; only the missing path is moved here.
    for (what, fixture, expected) in [
        (
            "worker's stall, its shell running",
            fixtures::UNPERSISTED_WORKER_STOP,
            block,
        ),
        (
            "helper's normal stop, the worker's shell running",
            fixtures::UNPERSISTED_HELPER_STOP,
            pass,
        ),
        (
            "worker's stop after the block (stop_hook_active true)",
            fixtures::UNPERSISTED_WORKER_STOP_AFTER,
            pass,
        ),
    ] {
        case.add(
            format!("no transcript (2.1.332, --no-session-persistence): {what}"),
            "transcript",
            &transcript_at(parse(fixture), Some(&missing)),
            expected,
        );
    }
    // 2.1.144 names a transcript too; without background_tasks only the words decide.
    for (m, expected) in [(STALLS[1], block), (NORMALS[0], pass)] {
        let v = transcript_at(words_payload(Some(m), false), Some(&missing));
        case.add(
            format!("no transcript, no background_tasks (2.1.144): {m}"),
            "transcript",
            &v,
            expected,
        );
    }
}

/// One nudge only; and words, where the payload does not say what runs.
fn nudge_and_word_cases(dir: &Path, neutral: &str, case: &mut Cases) {
    let block = Decision::Block;
    let pass = Decision::Pass;
    // One nudge only.
    case.add(
        "loop guard: own running shell with stop_hook_active true".into(),
        "loop-guard",
        &own_work_payload(dir, neutral, true),
        pass,
    );
    for m in [STALLS[0], STALLS[2]] {
        case.add(
            format!("loop guard: no background_tasks, stop_hook_active true: {m}"),
            "loop-guard",
            &words_payload(Some(m), true),
            pass,
        );
    }

    // Words, where the payload does not say what runs.
    for (i, m) in STALLS.iter().enumerate() {
        case.add(
            format!("stall {} (no background_tasks): {m}", i + 1),
            "stall",
            &words_payload(Some(m), false),
            block,
        );
    }
    for (i, m) in NORMALS.iter().enumerate() {
        let shown = if m.is_empty() { "(empty message)" } else { m };
        case.add(
            format!("normal {} (no background_tasks): {shown}", i + 1),
            "normal",
            &words_payload(Some(m), false),
            pass,
        );
    }
}

/// Input that is not a payload: the guard passes, and never fails.
fn malformed_cases(cases: &mut Vec<Case>) {
    let half = &CAPTURED.as_bytes()[..CAPTURED.len() / 2];
    let malformed: Vec<(&str, Vec<u8>)> = vec![
        ("empty input", vec![]),
        ("not JSON", b"this is not json".to_vec()),
        ("truncated JSON", half.to_vec()),
        ("a JSON array", b"[1, 2, 3]".to_vec()),
        (
            "no last_assistant_message",
            to_json(&words_payload(None, false)),
        ),
        ("last_assistant_message is null", {
            let mut v = words_payload(Some("x"), false);
            v["last_assistant_message"] = Value::Null;
            to_json(&v)
        }),
        ("stop_hook_active is a string", {
            let mut v = words_payload(Some("Done."), false);
            v["stop_hook_active"] = Value::String("true".into());
            to_json(&v)
        }),
        (
            "a message of 100 KiB",
            to_json(&words_payload(Some(&"all good. ".repeat(10_240)), false)),
        ),
        (
            "unicode and escapes",
            to_json(&words_payload(
                Some("Fertig ✓ — \"quoted\" \\ back\\slash\nnew line\ttab"),
                false,
            )),
        ),
        ("binary garbage", vec![0, 159, 146, 150, 255, 10, 13]),
    ];
    for (name, input) in malformed {
        cases.push(Case {
            name: format!("malformed: {name}"),
            group: "malformed",
            input,
            expected: Decision::Pass,
        });
    }
}

/// The id of `worker`'s own shell in [`fixtures::WORKER_STOP`]: the one its transcript started.
pub fn own_shell_id() -> String {
    let v = parse(fixtures::WORKER_STOP);
    v["background_tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["type"] == "shell")
        .filter_map(|t| t["id"].as_str())
        .find(|id| fixtures::WORKER_TRANSCRIPT.contains(&format!("with ID: {id}.")))
        .expect("the worker's transcript started one of the listed shells")
        .to_string()
}

/// Runs a guard on one input, as the CLI would (stdin, no arguments). Its input is written, and
/// its stdout and stderr read, at the same time (a guard may write before it reads); a guard
/// that does not end within 10 s is killed with everything it started.
pub fn run_guard(script: &Path, input: &[u8]) -> Got {
    run_guard_within(script, input, LIMIT)
}

/// [`run_guard`] with another time limit.
pub fn run_guard_within(script: &Path, input: &[u8], limit: Duration) -> Got {
    let handle = match duct::cmd(script, std::iter::empty::<&str>())
        .stdin_bytes(input.to_vec())
        .stdout_capture()
        .stderr_capture()
        .full_env(crate::os::env::tool_env(&std::env::temp_dir()))
        .env("CLAUDE_PROJECT_DIR", std::env::temp_dir())
        .unchecked()
        .before_spawn(|command| {
            command.process_group(0);
            Ok(())
        })
        .start()
    {
        Ok(h) => h,
        Err(e) => return Got::Error(format!("cannot run: {e}")),
    };
    let output = match handle.wait_timeout(limit) {
        Ok(Some(output)) => output,
        Ok(None) => {
            // The guard and anything it left holding its pipes.
            for pid in handle.pids() {
                crate::os::procs::signal_group(pid, crate::os::procs::Signal::KILL);
            }
            let _ = handle.kill();
            let _ = handle.wait_timeout(Duration::from_secs(1));
            return Got::Error(format!("no answer within {limit:?}"));
        }
        Err(e) => return Got::Error(format!("cannot wait for it: {e}")),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let status = output.status;
    match status.code() {
        Some(2) => Got::Decided(Decision::Block),
        Some(0) => {
            let text = stdout.trim();
            if text.is_empty() {
                return Got::Decided(Decision::Pass);
            }
            match serde_json::from_str::<Value>(text) {
                Ok(v) if v.get("decision").and_then(Value::as_str) == Some("block") => {
                    if v.get("reason")
                        .and_then(Value::as_str)
                        .is_some_and(|r| !r.is_empty())
                    {
                        Got::Decided(Decision::Block)
                    } else {
                        Got::Error("blocks without a reason".into())
                    }
                }
                Ok(_) => Got::Decided(Decision::Pass),
                Err(_) => Got::Error(format!(
                    "prints something that is not JSON: {}",
                    crate::evidence::normalize::truncate(text, 60)
                )),
            }
        }
        Some(c) => Got::Error(format!("exit {c}")),
        None => Got::Error("killed by a signal".into()),
    }
}

/// The guard script reproduced in seed 000, from the report's text: the first fenced bash
/// block after its "hook script" heading.
pub fn extract_seed_guard(report: &str) -> Option<String> {
    let heading = report.find("The hook script")?;
    let rest = &report[heading..];
    let start = rest.find("```bash")? + "```bash".len();
    let end = rest[start..].find("```")? + start;
    let script = rest[start..end].trim_start_matches('\n').to_string();
    script.starts_with("#!").then_some(script)
}

/// One script's results over the corpus.
pub struct Verification {
    pub results: Vec<Got>,
}

impl Verification {
    pub fn run(script: &Path, cases: &[Case]) -> Verification {
        Verification {
            results: cases.iter().map(|c| run_guard(script, &c.input)).collect(),
        }
    }

    /// (false negatives, false positives, errors) against the corpus.
    pub fn misses(&self, cases: &[Case]) -> (usize, usize, usize) {
        let mut fneg = 0;
        let mut fpos = 0;
        let mut errors = 0;
        for (case, got) in cases.iter().zip(&self.results) {
            match (case.expected, got) {
                (_, Got::Error(_)) => errors += 1,
                (Decision::Block, Got::Decided(Decision::Pass)) => fneg += 1,
                (Decision::Pass, Got::Decided(Decision::Block)) => fpos += 1,
                _ => {}
            }
        }
        (fneg, fpos, errors)
    }

    pub fn passed(&self, cases: &[Case]) -> bool {
        self.misses(cases) == (0, 0, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_captured_payload_is_a_real_subagent_stop() {
        let v: Value = serde_json::from_str(CAPTURED).unwrap();
        assert_eq!(v["hook_event_name"], "SubagentStop");
        for key in [
            "agent_id",
            "agent_type",
            "agent_transcript_path",
            "background_tasks",
            "session_crons",
            "last_assistant_message",
            "stop_hook_active",
        ] {
            assert!(v.get(key).is_some(), "{key}");
        }
    }

    #[test]
    fn the_fixtures_show_what_the_cli_sends() {
        // 2.1.332: a session-wide list, the stopping agent itself included, no owner field.
        let v: Value = serde_json::from_str(fixtures::WORKER_STOP).unwrap();
        let tasks = v["background_tasks"].as_array().unwrap();
        assert!(tasks.iter().any(|t| t["id"] == v["agent_id"]));
        assert_eq!(tasks.iter().filter(|t| t["type"] == "shell").count(), 3);
        assert!(tasks.iter().all(|t| t.get("owner").is_none()));
        assert!(fixtures::WORKER_TRANSCRIPT.contains(&own_shell_id()));
        // 2.1.144: no background_tasks at all.
        let old: Value = serde_json::from_str(fixtures::NO_TASKS_STOP).unwrap();
        assert_eq!(old["hook_event_name"], "SubagentStop");
        assert!(old.get("background_tasks").is_none());
        // 2.1.332 without session persistence: the same fields, no owner field either; the
        // agent's own shell is in the list, the stall is in the words.
        let unpersisted: Value = serde_json::from_str(fixtures::UNPERSISTED_WORKER_STOP).unwrap();
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&unpersisted), keys(&v));
        let tasks = unpersisted["background_tasks"].as_array().unwrap();
        assert!(
            tasks
                .iter()
                .any(|t| t["type"] == "shell" && t["status"] == "running")
        );
        assert!(tasks.iter().all(|t| t.get("owner").is_none()));
        assert!(
            unpersisted["agent_transcript_path"]
                .as_str()
                .unwrap()
                .ends_with(&format!(
                    "agent-{}.jsonl",
                    unpersisted["agent_id"].as_str().unwrap()
                ))
        );
        // Every transcript fixture is JSONL.
        for t in [
            fixtures::WORKER_TRANSCRIPT,
            fixtures::OTHER_TRANSCRIPT,
            fixtures::HELPER_TRANSCRIPT,
            fixtures::SELF_ONLY_TRANSCRIPT,
        ] {
            for line in t.lines() {
                serde_json::from_str::<Value>(line).unwrap();
            }
        }
    }

    #[test]
    fn unpersisted_payloads_keep_the_fixture_and_name_a_transcript_that_is_not_there() {
        let dir = tempfile::tempdir().unwrap();
        let v = unpersisted(fixtures::WORKER_STOP, dir.path(), "Waiting.");
        let fixture = parse(fixtures::WORKER_STOP);
        assert_eq!(v["last_assistant_message"], "Waiting.");
        assert_eq!(v["background_tasks"], fixture["background_tasks"]);
        assert_eq!(v["agent_id"], fixture["agent_id"]);
        let path = Path::new(v["agent_transcript_path"].as_str().unwrap());
        assert!(path.starts_with(dir.path()) && !path.exists(), "{path:?}");
        assert!(
            transcript_at(v, None)
                .get("agent_transcript_path")
                .is_none()
        );
    }

    /// The model behaves as seed 000 describes its guard: the loop flag anywhere passes, a stall
    /// phrasing anywhere in the payload blocks (a task's description too), else it passes.
    #[test]
    fn the_seed_model_greps_the_whole_payload() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("model.sh");
        std::fs::write(&script, SEED_MODEL).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let got = |v: &Value| run_guard(&script, &to_json(v));
        let block = Got::Decided(Decision::Block);
        let pass = Got::Decided(Decision::Pass);
        assert_eq!(got(&words_payload(Some(STALLS[0]), false)), block);
        assert_eq!(got(&words_payload(Some(STALLS[0]), true)), pass);
        assert_eq!(got(&words_payload(Some(NORMALS[0]), false)), pass);
        let mut described = words_payload(Some(NORMALS[0]), false);
        described["background_tasks"] =
            serde_json::json!([{"id": "b1", "description": "Await the completion"}]);
        assert_eq!(got(&described), block);
    }

    #[test]
    fn labels_name_the_decision_or_the_error() {
        assert_eq!(Got::Decided(Decision::Block).label(), "block");
        assert_eq!(Got::Decided(Decision::Pass).label(), "pass");
        assert_eq!(Got::Error("no answer".into()).label(), "error: no answer");
    }

    #[test]
    fn words_payloads_set_or_drop_the_message_and_set_the_loop_flag() {
        let v = words_payload(Some("done"), true);
        assert_eq!(v["last_assistant_message"], "done");
        assert_eq!(v["stop_hook_active"], true);
        assert_eq!(v["hook_event_name"], "SubagentStop");
        let none = words_payload(None, false);
        assert!(none.get("last_assistant_message").is_none());
        assert_eq!(none["stop_hook_active"], false);
    }

    #[test]
    fn payloads_name_their_own_new_transcript_which_ends_with_the_message() {
        let dir = tempfile::tempdir().unwrap();
        let path =
            |v: &Value| std::path::PathBuf::from(v["agent_transcript_path"].as_str().unwrap());
        let first = own_work_payload(dir.path(), "Waiting.", true);
        let second = own_work_payload(dir.path(), "Done.", false);
        assert_ne!(path(&first), path(&second), "one file per payload");
        assert_eq!(first["last_assistant_message"], "Waiting.");
        assert_eq!(
            (
                first["stop_hook_active"].as_bool(),
                second["stop_hook_active"].as_bool()
            ),
            (Some(true), Some(false))
        );
        let written = std::fs::read_to_string(path(&first)).unwrap();
        assert!(written.starts_with(fixtures::WORKER_TRANSCRIPT));
        let last: Value = serde_json::from_str(written.lines().last().unwrap()).unwrap();
        assert_eq!(last["type"], "assistant");
        assert_eq!(last["message"]["content"][0]["text"], "Waiting.");
        assert_eq!(
            written.lines().count(),
            fixtures::WORKER_TRANSCRIPT.lines().count() + 1
        );
        let other = others_work_payload(dir.path(), "Done.");
        assert_eq!(
            other["agent_id"],
            serde_json::from_str::<Value>(fixtures::OTHER_STOP).unwrap()["agent_id"]
        );
        assert!(
            std::fs::read_to_string(path(&other))
                .unwrap()
                .starts_with(fixtures::OTHER_TRANSCRIPT)
        );
    }

    #[test]
    fn the_corpus_covers_every_group_and_names_each_case_once() {
        let dir = tempfile::tempdir().unwrap();
        let cases = corpus(dir.path());
        for group in [
            "structure",
            "transcript",
            "loop-guard",
            "stall",
            "normal",
            "malformed",
        ] {
            let of: Vec<_> = cases.iter().filter(|c| c.group == group).collect();
            assert!(!of.is_empty(), "no `{group}` case");
        }
        for (group, decision) in [
            ("stall", Decision::Block),
            ("normal", Decision::Pass),
            ("malformed", Decision::Pass),
        ] {
            assert!(
                cases
                    .iter()
                    .filter(|c| c.group == group)
                    .all(|c| c.expected == decision),
                "{group}"
            );
        }
        assert!(
            cases
                .iter()
                .filter(|c| c.group == "structure")
                .any(|c| c.expected == Decision::Pass)
        );
        assert!(
            cases
                .iter()
                .filter(|c| c.group == "structure")
                .any(|c| c.expected == Decision::Block)
        );
        let names: std::collections::HashSet<&str> =
            cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names.len(), cases.len(), "case names are unique");
        // Every well-formed case is a SubagentStop payload whose words are the case's.
        for c in cases.iter().filter(|c| c.group != "malformed") {
            let v: Value =
                serde_json::from_slice(&c.input).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            assert_eq!(v["hook_event_name"], "SubagentStop", "{}", c.name);
        }
        assert!(cases.len() > 40, "{}", cases.len());
        let case = |suffix: &str| {
            cases
                .iter()
                .find(|c| c.name.contains(suffix))
                .unwrap_or_else(|| panic!("no case `{suffix}`"))
        };
        // The truncated payload is half of a real one, not a byte or two.
        assert_eq!(case("truncated JSON").input.len(), CAPTURED.len() / 2);
        // The prompt names another agent's task, still live; the agent's own shell is gone.
        let mentioned: Value =
            serde_json::from_slice(&case("named in the agent's prompt").input).unwrap();
        let ids: Vec<&str> = mentioned["background_tasks"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["id"].as_str())
            .collect();
        assert!(!ids.contains(&own_shell_id().as_str()), "{ids:?}");
        assert!(ids.len() >= 2, "{ids:?}");
    }

    #[test]
    fn the_appended_reply_copies_the_last_assistant_text_record_not_a_later_user_one() {
        let user =
            r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}"#;
        let transcript = format!("{}{user}\n", fixtures::WORKER_TRANSCRIPT);
        let out = transcript_ending_with(&transcript, "Done.");
        let last: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        assert_eq!(last["type"], "assistant");
        assert_eq!(last["message"]["content"][0]["text"], "Done.");
    }

    #[test]
    fn misses_count_false_negatives_false_positives_and_errors_apart() {
        let case = |expected| Case {
            name: String::new(),
            group: "structure",
            input: Vec::new(),
            expected,
        };
        let (block, pass) = (Decision::Block, Decision::Pass);
        let cases = [
            case(block),
            case(block),
            case(pass),
            case(pass),
            case(block),
            case(block),
        ];
        let got = |d| Got::Decided(d);
        let v = Verification {
            results: vec![
                got(pass),
                got(block),
                got(block),
                Got::Error("x".into()),
                Got::Error("y".into()),
                got(pass),
            ],
        };
        assert_eq!(v.misses(&cases), (2, 1, 2));
        assert!(!v.passed(&cases));
        let clean = Verification {
            results: vec![
                got(block),
                got(block),
                got(pass),
                got(pass),
                got(block),
                got(block),
            ],
        };
        assert_eq!(clean.misses(&cases), (0, 0, 0));
        assert!(clean.passed(&cases));
    }

    #[test]
    fn a_transcript_folder_that_does_not_exist_is_an_error_not_a_search() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let result =
            std::panic::catch_unwind(|| with_transcript(fixtures::WORKER_STOP, &missing, "w", ""));
        assert!(result.is_err());
    }

    /// A guard that writes more than a pipe holds (64 KiB) before it reads its input still
    /// answers: stdin, stdout and stderr are served at the same time.
    #[test]
    fn a_guard_that_writes_more_than_a_pipe_buffer_first_still_answers() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("chatty.sh");
        std::fs::write(
            &script,
            "#!/bin/sh\n\
             head -c 200000 /dev/zero | tr '\\0' x >&2\n\
             head -c 200000 /dev/zero | tr '\\0' '\\n'\n\
             cat >/dev/null\n\
             echo '{\"decision\":\"block\",\"reason\":\"r\"}'\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let input = vec![b' '; 200_000];
        assert_eq!(run_guard(&script, &input), Got::Decided(Decision::Block));
    }

    /// A guard that never answers is reported, and what it started (holding its pipes) dies
    /// with it.
    #[test]
    fn a_guard_that_hangs_is_killed_with_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("started");
        let script = dir.path().join("hang.sh");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nsleep 300 &\necho $! > {}\nsleep 300\n",
                marker.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let started = std::time::Instant::now();
        let got = run_guard_within(&script, b"{}", Duration::from_millis(500));
        assert!(
            matches!(&got, Got::Error(e) if e.starts_with("no answer")),
            "{got:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        let pid: i32 = std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        // SAFETY: kill(2) with signal 0 only asks whether the process exists.
        while unsafe { libc::kill(pid, 0) } == 0
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z "))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the guard's child {pid} lives on"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn the_seed_guard_is_extracted_from_the_report() {
        let report = "intro\n## The hook script (for permanence)\n\n```bash\n#!/usr/bin/env bash\necho hi\n```\n";
        assert_eq!(
            extract_seed_guard(report).unwrap(),
            "#!/usr/bin/env bash\necho hi\n"
        );
        assert!(extract_seed_guard("no script here").is_none());
    }
}
