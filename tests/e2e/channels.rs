//! A version only the Agent SDK carries, on the real CLI: `--claude-version 2.1.335` installs the
//! SDK's platform package for this machine (once, into the shared cache: a ~190 MB download),
//! runs its native binary, and every record says which channel the version came from.

use std::time::Duration;

use crate::common::*;

/// Built on 2026-12-02; published only as `@anthropic-ai/claude-agent-sdk@0.3.335` (its
/// `claudeCodeVersion`), never as `@anthropic-ai/claude-code`.
const SDK_ONLY: &str = "2.1.335";
const SDK_RELEASE: &str = "0.3.335";

#[test]
fn a_version_only_the_agent_sdk_has_installs_from_its_platform_package_and_runs() {
    let _cli = cli_slots(1);
    let out = tempfile::tempdir().unwrap();
    let cmd = wakeprobe(&[
        "run",
        "subagent-bg-turn-end",
        "--variant",
        "session",
        "--claude-version",
        SDK_ONLY,
        "--set",
        "bg_seconds=3",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    // The first run on a machine downloads the platform package (~190 MB): a generous ceiling.
    let output = succeeds_leaving_nothing(cmd, Duration::from_secs(900));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let channel_note = format!("(agent-sdk {SDK_RELEASE})");
    assert!(
        stdout.contains(&format!(
            "subagent-bg-turn-end/session on claude-{SDK_ONLY} {channel_note}: woke"
        )),
        "{stdout}"
    );

    // The binary that ran is the platform package's, in the version's one cache folder.
    let package = cache()
        .join("claude-code")
        .join(SDK_ONLY)
        .join("node_modules/@anthropic-ai/claude-agent-sdk-linux-x64");
    assert!(package.join("claude").is_file(), "{}", package.display());
    assert!(
        !cache()
            .join("claude-code")
            .join(SDK_ONLY)
            .join("node_modules/@anthropic-ai/claude-code")
            .exists(),
        "nothing from the claude-code package"
    );

    let run = runs(&run_dir(out.path())).remove(0);
    let info = json(&run.join("run.json"));
    assert_eq!(info["cli_version"], SDK_ONLY);
    assert_eq!(
        info["cli_version_reported"], SDK_ONLY,
        "the CLI itself says so"
    );
    assert_eq!(
        info["cli_channel"],
        serde_json::json!({"kind": "agent-sdk", "sdk_version": SDK_RELEASE})
    );
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains(&format!("Claude Code {SDK_ONLY} {channel_note} ·")),
        "{report}"
    );
    let html = std::fs::read_to_string(run_dir(out.path()).join("index.html")).unwrap();
    assert!(
        html.contains(&format!("claude-{SDK_ONLY} {channel_note}")),
        "the html names the channel"
    );

    // `cache list` says where each cached version came from.
    let listed = output_within(wakeprobe(&["cache", "list"]), Duration::from_secs(60));
    let list = String::from_utf8_lossy(&listed.stdout);
    let row = list
        .lines()
        .find(|l| l.trim_start().starts_with(SDK_ONLY))
        .unwrap_or_else(|| panic!("{SDK_ONLY} in\n{list}"));
    assert!(row.contains(&format!("agent-sdk {SDK_RELEASE}")), "{row}");
    let pinned = list
        .lines()
        .find(|l| l.trim_start().starts_with("2.1.332"))
        .unwrap_or_else(|| panic!("2.1.332 in\n{list}"));
    assert!(pinned.contains("claude-code"), "{pinned}");
}
