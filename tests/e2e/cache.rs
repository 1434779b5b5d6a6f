//! The CLI cache through the binary: a cached version that no longer runs is detected and
//! reinstalled, a failed install leaves no lock file or half folder behind, and `cache list` /
//! `cache prune` show and remove versions (never the pinned one). Each test has a cache of its
//! own; npm's download cache is shared with the machine's, so nothing is fetched twice.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::*;

const PINNED: &str = "2.1.332";

/// A cache of its own whose npm cache is the machine's.
fn own_cache() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(cache().join("npm-cache")).unwrap();
    std::os::unix::fs::symlink(cache().join("npm-cache"), dir.path().join("npm-cache")).unwrap();
    dir
}

fn package(root: &Path, version: &str) -> PathBuf {
    root.join("claude-code")
        .join(version)
        .join("node_modules/@anthropic-ai/claude-code")
}

/// Names in the cache's version folder that are not versions: locks, half installs.
fn debris(root: &Path) -> Vec<String> {
    std::fs::read_dir(root.join("claude-code"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_cached_cli_that_does_not_run_is_reinstalled() {
    let _cli = cli_slots(1);
    let own = own_cache();
    // A cached install whose binary was cut short (a full disk during an earlier install, say).
    let real = pinned_package();
    let broken = package(own.path(), PINNED);
    std::fs::create_dir_all(broken.join("bin")).unwrap();
    std::fs::copy(real.join("package.json"), broken.join("package.json")).unwrap();
    let bytes = std::fs::read(real.join("bin/claude.exe")).expect("the pinned CLI is cached");
    std::fs::write(broken.join("bin/claude.exe"), &bytes[..1 << 20]).unwrap();
    std::fs::set_permissions(
        broken.join("bin/claude.exe"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut cmd = wakeprobe(&[
        "run",
        "top-level-control",
        "--variant",
        "session",
        "--set",
        "bg_seconds=1",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    cmd.env("WAKEPROBE_CACHE", own.path());
    let (pid, output) = run_within(cmd, Duration::from_secs(300));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the cached @anthropic-ai/claude-code@{PINNED} does not run"
        )) && stderr.contains("reinstalling it"),
        "{stderr}"
    );
    assert_eq!(tagged_by(pid), vec![]);
    let fixed = std::fs::metadata(broken.join("bin/claude.exe"))
        .unwrap()
        .len();
    assert_eq!(fixed, bytes.len() as u64, "the binary is whole again");
    assert_eq!(
        debris(own.path()),
        Vec::<String>::new(),
        "no lock or half install"
    );
}

/// An install npm finishes but whose CLI does not run fails, and leaves nothing: npm is told
/// to leave out optional dependencies (`omit=optional` in the cache's `npmrc`, npm's own
/// configuration file), so the claude-code package comes without its platform binary and its
/// stub does not answer `--version`. Only the small wrapper package is downloaded.
#[test]
fn a_failed_install_leaves_no_lock_file_and_no_half_install() {
    let own = own_cache();
    let out = tempfile::tempdir().unwrap();
    let mut cmd = wakeprobe(&[
        "run",
        "top-level-control",
        "--claude-version",
        "2.1.331",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    std::fs::write(own.path().join("npmrc"), "omit=optional\n").unwrap();
    cmd.env("WAKEPROBE_CACHE", own.path());
    let output = output_within(cmd, Duration::from_secs(300));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(
            "the installed @anthropic-ai/claude-code@2.1.331 has no runnable entry point: \
             `--version`"
        ),
        "{stderr}"
    );
    assert_eq!(debris(own.path()), Vec::<String>::new());
    assert!(!own.path().join("claude-code/2.1.331").exists());
}

#[test]
fn cache_list_and_prune_keep_the_pinned_version() {
    let own = tempfile::tempdir().unwrap();
    for (version, size) in [
        ("2.1.100", 10),
        ("2.1.200", 2000),
        (PINNED, 300),
        ("2.1.400", 4),
    ] {
        let dir = own.path().join("claude-code").join(version);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("blob"), vec![0u8; size]).unwrap();
    }
    let run = |args: &[&str]| {
        let mut cmd = wakeprobe(args);
        cmd.env("WAKEPROBE_CACHE", own.path());
        let out = output_within(cmd, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    // A version installed from the Agent SDK channel: its platform package's manifest.
    let sdk = own
        .path()
        .join("claude-code/2.1.400/node_modules/@anthropic-ai/claude-agent-sdk-linux-x64");
    std::fs::create_dir_all(&sdk).unwrap();
    std::fs::write(sdk.join("package.json"), r#"{"version":"0.3.400"}"#).unwrap();
    let code = own
        .path()
        .join("claude-code")
        .join(PINNED)
        .join("node_modules/@anthropic-ai/claude-code");
    std::fs::create_dir_all(&code).unwrap();
    std::fs::write(code.join("package.json"), r#"{"version":"2.1.332"}"#).unwrap();
    let list = run(&["cache", "list"]);
    let row = |version: &str| {
        list.lines()
            .find(|l| l.trim_start().starts_with(version))
            .unwrap_or_else(|| panic!("{version} in\n{list}"))
            .to_string()
    };
    assert!(row("2.1.400").contains("agent-sdk 0.3.400"), "{list}");
    assert!(row(PINNED).contains("claude-code"), "{list}");
    assert!(row("2.1.100").contains("none (no package"), "{list}");
    assert!(list.contains("4 version(s), 2.3 KiB"), "{list}");
    let pruned = run(&["cache", "prune", "--keep", "1"]);
    // Newest first: 2.1.400 is kept, the pinned one always; the rest go.
    assert!(pruned.contains("removed 2.1.200 (2.0 KiB)"), "{pruned}");
    assert!(pruned.contains("removed 2.1.100 (10 B)"), "{pruned}");
    let left: Vec<String> = std::fs::read_dir(own.path().join("claude-code"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    let mut left = left;
    left.sort();
    assert_eq!(left, vec![PINNED.to_string(), "2.1.400".to_string()]);
}
