//! The stall guard: `wakeprobe guard verify` on our guard (zero misses) and on seed 000's
//! original script (extracted from the seed report at test time; its misses are findings), a
//! broken guard is caught, and random input never crashes our guard or makes it block a
//! message with no stall phrase.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::*;
use proptest::prelude::*;
use wakeprobe::guard::{self, Decision, Got};

fn our_guard() -> PathBuf {
    root().join("sandbox-project/.claude/hooks/subagent-stall-guard.sh")
}

fn seed_report() -> PathBuf {
    root().join("../shared/seeds/000_9de3bdae13b505a9.txt")
}

#[test]
fn our_guard_passes_the_corpus_and_the_seed_guard_is_compared() {
    let report = seed_report();
    assert!(
        report.exists(),
        "the seed reports sit beside the repository ({})",
        report.display()
    );
    let out = output_within(
        wakeprobe(&[
            "guard",
            "verify",
            "--with-seed",
            "--seed-report",
            report.to_str().unwrap(),
        ]),
        Duration::from_secs(120),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("0 false negatives, 0 false positives, 0 errors"),
        "{stdout}"
    );
    // The seed's guard greps the whole payload and knows few phrasings: its misses are printed.
    let seed_line = stdout
        .lines()
        .find(|l| l.starts_with("seed 000's guard:"))
        .expect("the seed guard ran");
    assert!(
        !seed_line.starts_with("seed 000's guard: 0 false negatives, 0 false positives"),
        "{seed_line}"
    );
    assert!(stdout.contains("(miss)"));
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
    assert!(
        stdout.contains("0 false negatives") && !stdout.contains("0 false positives"),
        "{stdout}"
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn random_normal_messages_never_block(message in normal_message(), active in any::<bool>()) {
        prop_assume!(!STALL_STEMS.iter().any(|s| message.to_lowercase().contains(s)));
        let input = guard::words_payload(Some(&message), active).to_string();
        prop_assert_eq!(guard::run_guard(&our_guard(), input.as_bytes()), Got::Decided(Decision::Pass));
    }

    #[test]
    fn random_json_never_crashes_the_guard(value in arbitrary_json()) {
        let text = value.to_string();
        let got = guard::run_guard(&our_guard(), text.as_bytes());
        prop_assert!(matches!(got, Got::Decided(_)), "{:?}", got);
        if !STALL_STEMS.iter().any(|s| text.to_lowercase().contains(s)) {
            prop_assert_eq!(got, Got::Decided(Decision::Pass));
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
                    "[a-z_]{1,10}"
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
