//! The stall guard: `wakeprobe guard verify` on our guard (zero misses) and on seed 000's guard
//! (the project's model of it, or a script from a report; its misses are findings), a broken
//! guard is caught; and properties over drawn messages: the agent's own live work blocks
//! whatever it says, no message blocks where only others' work runs, sentences that merely use
//! the guard's verbs never block on words, first-person stalls (curly apostrophes too) always
//! do, one nudge only, a transcript written late is waited for (also when it lands between two of
//! the guard's reads), and random input never crashes the guard.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::*;
use proptest::prelude::*;
use wakeprobe::guard::{self, Decision, Got};

fn our_guard() -> PathBuf {
    root().join("sandbox-project/.claude/hooks/subagent-stall-guard.sh")
}

fn run(input: &serde_json::Value) -> Got {
    guard::run_guard(&our_guard(), input.to_string().as_bytes())
}

const BLOCK: Got = Got::Decided(Decision::Block);
const PASS: Got = Got::Decided(Decision::Pass);

/// `guard verify` with its arguments, within two minutes: (exit code, stdout).
fn verify(args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["guard", "verify"];
    all.extend_from_slice(args);
    let out = output_within(wakeprobe(&all), Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    (out.status.code(), format!("{stdout}{stderr}"))
}

/// The summary line of the seed's guard.
fn seed_line(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.starts_with("seed 000's guard ("))
        .unwrap_or_else(|| panic!("the seed guard ran:\n{stdout}"))
}

/// On a plain clone (nothing read outside the repository): our guard misses nothing, and the
/// project's model of seed 000's guard, which greps the whole payload, is compared and misses.
#[test]
fn our_guard_passes_the_corpus_and_the_seed_guard_is_compared() {
    let (code, stdout) = verify(&["--with-seed"]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.contains("subagent-stall-guard.sh: 0 false negatives, 0 false positives, 0 errors"),
        "{stdout}"
    );
    // Every structural situation is a case, and every shape of a missing transcript.
    for case in [
        "structure: own running shell, a neutral message",
        "structure: only the agent's own entry",
        "structure: own shell completed",
        "structure: another subagent's running shell",
        "structure: the main agent's running shell",
        "structure: no background_tasks field",
        "no transcript: own shell running, a stall",
        "no transcript: own shell running, a neutral message",
        "no transcript: only the main agent's shell running",
        "no transcript, no background_tasks (2.1.144)",
        "loop guard: no transcript",
    ] {
        assert!(stdout.contains(case), "no case `{case}`:\n{stdout}");
    }
    // The seed's guard greps the whole payload and knows few phrasings: its misses are printed.
    let line = seed_line(&stdout);
    assert!(line.contains("(wakeprobe's model of it)"), "{line}");
    assert!(
        !line.contains(": 0 false negatives, 0 false positives"),
        "{line}"
    );
    assert!(stdout.contains("(miss)"));
}

/// `--seed-report` takes the script from a report the user has (here one this test writes,
/// holding a guard that passes everything): its misses are exactly the corpus's blocks.
#[test]
fn the_seed_guard_is_taken_from_a_report_when_one_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("000_report.txt");
    std::fs::write(
        &report,
        "A seed.\n\n## The hook script (for permanence)\n\n```bash\n#!/bin/sh\ncat >/dev/null\nexit 0\n```\n",
    )
    .unwrap();
    let (code, stdout) = verify(&["--seed-report", report.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stdout}");
    let line = seed_line(&stdout);
    assert!(
        line.contains(&format!("(from {})", report.display())),
        "{line}"
    );
    let blocks = stdout
        .lines()
        .filter(|l| l.contains("┆ block    ┆"))
        .count();
    assert!(blocks > 10, "{stdout}");
    assert!(
        line.contains(&format!(
            ": {blocks} false negatives, 0 false positives, 0 errors"
        )),
        "{blocks}: {line}"
    );

    std::fs::write(&report, "no script in here\n").unwrap();
    let (code, stdout) = verify(&["--seed-report", report.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stdout}");
    assert!(stdout.contains("no guard script found in it"), "{stdout}");
}

#[test]
fn a_guard_that_blocks_everything_fails_verification() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("always-block.sh");
    std::fs::write(
        &bad,
        "#!/bin/sh\necho '{\"decision\":\"block\",\"reason\":\"no\"}'\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = output_within(
        wakeprobe(&["guard", "verify", "--script", bad.to_str().unwrap()]),
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let count = |what: &str| -> usize {
        let before = stdout.split(what).next().unwrap_or_default();
        let word = before.rsplit([' ', ':', ',']).find(|w| !w.is_empty());
        word.and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("a count of {what} in {stdout}"))
    };
    // Counted, not matched as text: "50 false positives" holds "0 false positives".
    assert_eq!(count(" false negatives"), 0, "{stdout}");
    assert!(count(" false positives") > 0, "{stdout}");
}

/// The reason names the agent's own task, says how to wait for it in one call, and is JSON.
#[test]
fn the_block_names_the_task_and_the_one_call_wait() {
    let dir = tempfile::tempdir().unwrap();
    let input = guard::own_work_payload(dir.path(), "Set up the fixtures.", false).to_string();
    let out = duct::cmd(our_guard(), std::iter::empty::<&str>())
        .stdin_bytes(input)
        .stdout_capture()
        .unchecked()
        .run()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["decision"], "block");
    let reason = answer["reason"].as_str().unwrap();
    let id = guard::own_shell_id();
    assert!(reason.contains(&format!("`{id}` (shell: ")), "{reason}");
    assert!(reason.contains("ONE foreground Bash call"), "{reason}");
    assert!(
        reason.contains(&format!("grep -qF -e /{id}.output")),
        "{reason}"
    );
    assert!(reason.contains(&format!("tasks/{id}.output")), "{reason}");
    // Only the agent's own work: the other shells of the session are not named.
    for t in serde_json::from_str::<serde_json::Value>(guard::fixtures::WORKER_STOP).unwrap()
        ["background_tasks"]
        .as_array()
        .unwrap()
    {
        let other = t["id"].as_str().unwrap();
        if other != id {
            assert!(!reason.contains(other), "{other} named: {reason}");
        }
    }
}

/// With no transcript, the block names the session's running work (not the agent itself), says
/// how to wait for a shell in one call, and lets the agent end again if none of it is its own.
#[test]
fn without_a_transcript_the_block_names_the_running_work() {
    let dir = tempfile::tempdir().unwrap();
    let input = guard::unpersisted(guard::fixtures::WORKER_STOP, dir.path(), guard::STALLS[1]);
    let out = duct::cmd(our_guard(), std::iter::empty::<&str>())
        .stdin_bytes(input.to_string())
        .stdout_capture()
        .unchecked()
        .run()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["decision"], "block");
    let reason = answer["reason"].as_str().unwrap();
    for t in input["background_tasks"].as_array().unwrap() {
        let id = t["id"].as_str().unwrap();
        assert_eq!(
            reason.contains(&format!("`{id}`")),
            id != input["agent_id"],
            "{id}: {reason}"
        );
    }
    assert!(reason.contains("ONE foreground Bash call"), "{reason}");
    assert!(reason.contains("grep -qF -e /ID.output"), "{reason}");
    assert!(reason.contains("If none of it is yours"), "{reason}");
}

/// The own-work payload, its transcript path, the shell's id, and the transcript cut just
/// before the tool result that names that shell: (head, the rest).
fn split_at_the_tool_result(
    dir: &std::path::Path,
) -> (serde_json::Value, PathBuf, String, String, String) {
    let input = guard::own_work_payload(dir, "Set up the fixtures.", false);
    let path = PathBuf::from(input["agent_transcript_path"].as_str().unwrap());
    let full = std::fs::read_to_string(&path).unwrap();
    let id = guard::own_shell_id();
    let cut = full
        .lines()
        .position(|l| l.contains("\"tool_result\"") && l.contains(&id))
        .unwrap();
    let head: String = full.lines().take(cut).map(|l| format!("{l}\n")).collect();
    let rest: String = full.lines().skip(cut).map(|l| format!("{l}\n")).collect();
    (input, path, id, head, rest)
}

/// The CLI writes the transcript a moment after the fact: a tool result that lands shortly
/// after the hook started still counts; one that never lands lets the stop through, soon.
#[test]
fn a_transcript_written_late_is_waited_for_briefly() {
    let dir = tempfile::tempdir().unwrap();
    let (input, path, _, head, rest) = split_at_the_tool_result(dir.path());
    std::fs::write(&path, &head).unwrap();
    let writer = {
        let path = path.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            f.write_all(rest.as_bytes()).unwrap();
        })
    };
    let started = Instant::now();
    assert_eq!(run(&input), BLOCK, "the tool result landed 0.3 s late");
    writer.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));

    std::fs::write(&path, &head).unwrap();
    let started = Instant::now();
    assert_eq!(run(&input), PASS, "the tool result never landed");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

/// The CLI may write the tool result and the last message between two of the guard's reads of
/// the transcript. A `grep` first on PATH appends them right after the guard's first read of the
/// tool results: a guard that then trusts a later read showing the message, with the results
/// from the earlier one, lets the agent's own work go unseen.
#[test]
fn a_write_between_the_guards_reads_does_not_hide_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let (input, path, id, head, rest) = split_at_the_tool_result(dir.path());
    std::fs::write(&path, &head).unwrap();
    let rest_file = dir.path().join("rest");
    std::fs::write(&rest_file, rest).unwrap();

    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let real = ["/usr/bin/grep", "/bin/grep"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("grep");
    let wrapper = bin.join("grep");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n{real} \"$@\"; s=$?\ncase \"$*\" in *'\"tool_result\"'*) \
             [ -e {flag} ] || {{ : > {flag}; cat {rest} >> {transcript}; }};; esac\nexit $s\n",
            flag = dir.path().join("appended").display(),
            rest = rest_file.display(),
            transcript = path.display(),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();

    let path_var = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = duct::cmd(our_guard(), std::iter::empty::<&str>())
        .stdin_bytes(input.to_string())
        .env("PATH", path_var)
        .env("CLAUDE_PROJECT_DIR", dir.path())
        .stdout_capture()
        .unchecked()
        .run()
        .unwrap();
    assert!(
        dir.path().join("appended").exists(),
        "the wrapper never ran"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\"decision\":\"block\"") && stdout.contains(&id),
        "the work written between two reads went unseen: {stdout:?}"
    );
}

/// Stems that make a message stall-shaped; random normal messages avoid them.
const STALL_STEMS: &[&str] = &[
    "invok",
    "notif",
    "wake",
    "woke",
    "await",
    "wait",
    "resume",
    "continue",
    "check back",
    "pick",
    "report back",
    "come back",
    "get back",
    "ping",
    "called back",
    "complet",
    "finish",
];

fn normal_message() -> impl Strategy<Value = String> {
    let words = prop::sample::select(vec![
        "the",
        "tests",
        "pass",
        "i",
        "fixed",
        "bug",
        "in",
        "parser",
        "added",
        "docs",
        "run",
        "build",
        "ok",
        "done",
        "merged",
        "branch",
        "42",
        "files",
        "changed",
        "summary:",
        "all",
        "green",
        "will",
        "be",
        "when",
        "once",
        "it",
        "event",
        "task",
        "background",
        "job",
        "output",
        "is",
        "ready",
        "'ll",
        "me",
        "on",
        "—",
        "ü",
        "\"quoted\"",
        "\\",
        "\n",
    ]);
    prop::collection::vec(words, 0..30).prop_map(|w| w.join(" "))
}

/// A sentence that uses the guard's own verbs ("resume", "notify", "re-invoke", "wake",
/// "check back", "await"...) about someone else: not a stall, whatever the words.
fn third_party_sentence() -> impl Strategy<Value = String> {
    let subject = prop::sample::select(vec![
        "CI",
        "The scheduler",
        "The team",
        "Users",
        "The deploy job",
        "GitHub",
        "The cron job",
        "Reviewers",
        "The build bot",
        "Ops",
    ]);
    let modal = prop::sample::select(vec!["will", "should", "can", "would"]);
    let verb = prop::sample::select(vec![
        "resume",
        "continue",
        "notify the team",
        "notify the channel",
        "wake the workers",
        "re-invoke the job",
        "ping the on-call",
        "report back to the lead",
        "check back on the queue",
        "pick it back up",
        "come back online",
        "await the release",
        "be notified",
        "be woken",
        "get re-invoked",
    ]);
    let when = prop::sample::select(vec!["when", "once", "after", "as soon as"]);
    let event = prop::sample::select(vec![
        "the runners are back",
        "the build finishes",
        "the job completes",
        "it is done",
        "the run ends",
        "the export lands",
        "the queue drains",
    ]);
    let tail = prop::sample::select(vec![
        "all tests pass.",
        "nothing is left to do.",
        "the PR is merged.",
        "done.",
        "see the summary above.",
    ]);
    (subject, modal, verb, when, event, tail, any::<bool>()).prop_map(
        |(s, m, v, w, e, t, upper)| {
            let sentence = format!("{s} {m} {v} {w} {e}; {t}");
            if upper {
                sentence.to_uppercase()
            } else {
                sentence
            }
        },
    )
}

/// A first-person promise to come back later, with a straight or a curly apostrophe.
fn first_person_stall() -> impl Strategy<Value = String> {
    let who = prop::sample::select(vec!["I", "We"]);
    let apostrophe = prop::sample::select(vec!["'", "\u{2019}"]);
    let promise = prop::sample::select(vec![
        "ll be notified",
        "ll be woken up",
        "ll resume",
        "ll check back",
        "ll pick it back up",
        "ll report back",
        "ll continue",
        "ll be re-invoked",
    ]);
    let when = prop::sample::select(vec!["when", "once", "as soon as"]);
    let event = prop::sample::select(vec!["the build finishes", "it completes", "the run ends"]);
    let lead = prop::sample::select(vec![
        "",
        "Started the suite in the background. ",
        "Kicked it off; ",
    ]);
    (lead, who, apostrophe, promise, when, event)
        .prop_map(|(l, w, a, p, wh, e)| format!("{l}{w}{a}{p} {wh} {e}."))
}

fn any_message() -> impl Strategy<Value = String> {
    prop_oneof![
        normal_message(),
        third_party_sentence(),
        first_person_stall(),
        prop::sample::select(guard::STALLS.to_vec()).prop_map(str::to_string),
        ".{0,60}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Where the payload lists the agent's own running shell, every stop is blocked once,
    /// whatever the message; the stop after the block goes through.
    #[test]
    fn own_live_work_blocks_whatever_the_message(message in any_message()) {
        let dir = tempfile::tempdir().unwrap();
        prop_assert_eq!(run(&guard::own_work_payload(dir.path(), &message, false)), BLOCK);
        prop_assert_eq!(run(&guard::own_work_payload(dir.path(), &message, true)), PASS);
    }

    /// Where only others' work runs (the main agent's shell), no message blocks, not even a
    /// stall in words.
    #[test]
    fn no_message_blocks_without_own_live_work(message in any_message()) {
        let dir = tempfile::tempdir().unwrap();
        prop_assert_eq!(run(&guard::others_work_payload(dir.path(), &message)), PASS);
    }

    /// Without background_tasks only words decide: sentences that use the guard's verbs about
    /// someone else ("CI will resume once the runners are back") never block.
    #[test]
    fn the_guards_verbs_about_others_never_block_on_words(message in third_party_sentence()) {
        prop_assert_eq!(run(&guard::words_payload(Some(&message), false)), PASS, "{}", message);
    }

    /// Without background_tasks, a first-person promise to come back blocks, with a curly
    /// apostrophe as with a straight one; never twice.
    #[test]
    fn first_person_stalls_block_on_words(message in first_person_stall()) {
        prop_assert_eq!(run(&guard::words_payload(Some(&message), false)), BLOCK, "{}", message);
        prop_assert_eq!(run(&guard::words_payload(Some(&message), true)), PASS, "{}", message);
    }

    /// With no transcript to read (`--no-session-persistence`), the payload decides: while work
    /// runs, a first-person stall blocks, once.
    #[test]
    fn without_a_transcript_running_work_and_a_stall_in_words_block(message in first_person_stall()) {
        let dir = tempfile::tempdir().unwrap();
        let mut v = guard::unpersisted(guard::fixtures::WORKER_STOP, dir.path(), &message);
        prop_assert_eq!(run(&v), BLOCK, "{}", message);
        v["stop_hook_active"] = true.into();
        prop_assert_eq!(run(&v), PASS, "{}", message);
    }

    /// With no transcript to read, the guard's verbs about someone else and normal messages pass,
    /// though work runs: nothing tells the agent's work from others'.
    #[test]
    fn without_a_transcript_others_verbs_and_normal_messages_pass(
        third in third_party_sentence(),
        normal in normal_message(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let stop = guard::fixtures::WORKER_STOP;
        prop_assert_eq!(run(&guard::unpersisted(stop, dir.path(), &third)), PASS, "{}", third);
        if !STALL_STEMS.iter().any(|s| normal.to_lowercase().contains(s)) {
            prop_assert_eq!(run(&guard::unpersisted(stop, dir.path(), &normal)), PASS, "{}", normal);
        }
    }

    #[test]
    fn random_normal_messages_never_block(message in normal_message(), active in any::<bool>()) {
        prop_assume!(!STALL_STEMS.iter().any(|s| message.to_lowercase().contains(s)));
        prop_assert_eq!(run(&guard::words_payload(Some(&message), active)), PASS);
    }

    #[test]
    fn random_json_never_crashes_the_guard(value in arbitrary_json()) {
        let text = value.to_string();
        let got = guard::run_guard(&our_guard(), text.as_bytes());
        prop_assert!(matches!(got, Got::Decided(_)), "{:?}", got);
        if !STALL_STEMS.iter().any(|s| text.to_lowercase().contains(s)) {
            prop_assert_eq!(got, PASS);
        }
    }
}

fn arbitrary_json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        ".{0,30}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("last_assistant_message".to_string()),
                    Just("stop_hook_active".to_string()),
                    Just("background_tasks".to_string()),
                    "[a-z_]{1,10}"
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
