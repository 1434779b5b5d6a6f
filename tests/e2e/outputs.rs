//! What a run leaves for people and scripts: the issue draft's title and repro command, the
//! `gh issue create` line, `reports/latest`, `--message-format json`, `index.html`.

use std::time::Duration;

use crate::common::*;

const LIMIT: Duration = Duration::from_secs(120);

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_repro_command_never_names_an_absolute_path_and_the_draft_has_its_title() {
    let dir = tempfile::tempdir().unwrap();
    // The library's scenario by absolute path: named by its name.
    let library = root().join("scenarios/subagent-bg-turn-end.toml");
    // A scenario of the user's outside the working folder: named by its file name.
    let own = dir.path().join("mine/subagent-bg-turn-end.toml");
    std::fs::create_dir_all(own.parent().unwrap()).unwrap();
    std::fs::copy(&library, &own).unwrap();
    for (file, named) in [
        (
            &library,
            "wakeprobe run subagent-bg-turn-end --variant session",
        ),
        (
            &own,
            "wakeprobe run subagent-bg-turn-end.toml --variant session",
        ),
    ] {
        let out_dir = dir.path().join(format!("out-{}", named.len()));
        let out = output_within(
            wakeprobe(&[
                "run",
                file.to_str().unwrap(),
                "--variant",
                "session",
                "--backend",
                "sim",
                "--set",
                "bg_seconds=1",
                "--out",
                out_dir.to_str().unwrap(),
            ]),
            LIMIT,
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let run = runs(&run_dir(&out_dir)).remove(0);
        let report = std::fs::read_to_string(run.join("report.md")).unwrap();
        assert!(report.contains(named), "{named} in:\n{report}");
        assert!(!report.contains(dir.path().to_str().unwrap()), "{report}");
        assert!(!report.contains(root().to_str().unwrap()), "{report}");
        let title = std::fs::read_to_string(run.join("title.txt")).unwrap();
        assert_eq!(title.lines().count(), 1, "{title}");
        assert!(
            report.starts_with(&format!("# {}", title.trim_end())),
            "{title}"
        );
        let said = text(&out);
        let gh = format!(
            "gh issue create --title \"$(cat {}/title.txt)\" --body-file {}/report.md",
            run.display(),
            run.display()
        );
        assert!(said.contains(&gh), "{gh} in:\n{said}");
    }
}
