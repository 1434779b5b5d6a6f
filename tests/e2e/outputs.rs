//! What a run leaves for people and scripts: the issue draft's title and repro command, the
//! `gh issue create` line, `reports/latest`, `--message-format json`, `index.html`.

use serde_json::json;
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

/// `wakeprobe run SCENARIOS --variant session` on the simulator with 1 s of background work.
fn session_run_on_the_simulator(scenarios: &[&str], out: &std::path::Path) -> std::process::Output {
    let mut args = vec!["run"];
    args.extend_from_slice(scenarios);
    let out = out.to_str().unwrap();
    args.extend([
        "--variant",
        "session",
        "--backend",
        "sim",
        "--set",
        "bg_seconds=1",
        "--quiet",
        "--out",
        out,
    ]);
    output_within(wakeprobe(&args), LIMIT)
}

#[test]
fn the_repro_command_never_names_an_absolute_path_and_a_simulator_run_offers_no_draft() {
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
        // A simulator run is no bug report: no title, no `gh` line, and the report says why.
        assert!(!run.join("title.txt").exists());
        assert!(
            report.contains("**Not an issue draft:** a simulator run"),
            "{report}"
        );
        let said = text(&out);
        assert!(!said.contains("gh issue create"), "{said}");
        assert!(!said.contains("issue draft"), "{said}");
        // stderr is no terminal: plain lines as each run starts and ends, no redraws.
        let err = String::from_utf8_lossy(&out.stderr);
        let started =
            err.find("[start 1/1] subagent-bg-turn-end/session on sim:finalize-on-turn-end #1\n");
        let done = err.find("[1/1] subagent-bg-turn-end/session on sim:finalize-on-turn-end #1: ");
        assert!(started.is_some() && started < done, "{err}");
        assert!(!err.contains('\r') && !err.contains("\x1b["), "{err:?}");
    }
}

/// Every stdout line as a JSON object with a `type`.
fn messages(out: &std::process::Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
            assert!(v["type"].is_string(), "{l}");
            v
        })
        .collect()
}

fn types(messages: &[serde_json::Value]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| m["type"].as_str().unwrap())
        .collect()
}

#[test]
fn message_format_json_puts_one_object_a_line_on_stdout_and_people_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = output_within(
        wakeprobe(&[
            "run",
            "subagent-bg-turn-end",
            "--backend",
            "sim",
            "--set",
            "bg_seconds=1",
            "--explore", // below the print stall's range: no expected verdict
            "--out",
            out_dir.to_str().unwrap(),
            "--message-format",
            "json",
        ]),
        LIMIT,
    );
    let all = messages(&out);
    let kinds = types(&all);
    assert_eq!(
        kinds.iter().filter(|k| **k == "run-started").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "run-finished").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(kinds.last(), Some(&"summary"), "{kinds:?}");
    for finished in all.iter().filter(|m| m["type"] == "run-finished") {
        assert!(finished["verdict"].is_string(), "{finished}");
        assert!(
            !finished["reason"].as_str().unwrap().is_empty(),
            "{finished}"
        );
        assert_eq!(finished["failed_checks"], json!([]), "{finished}");
        assert_eq!(finished["broken_invariants"], json!([]), "{finished}");
        let report = std::path::Path::new(finished["report"].as_str().unwrap());
        assert!(report.is_file(), "{finished}");
    }
    let summary = all.last().unwrap();
    assert_eq!(
        summary["exit_code"].as_i64(),
        out.status.code().map(i64::from)
    );
    assert_eq!(summary["summary"]["cells"].as_array().unwrap().len(), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("┆ verdict"),
        "the table moved to stderr:\n{stderr}"
    );

    // list: one scenario a line, as many as the library holds, then the summary.
    let out = output_within(wakeprobe(&["list", "--message-format", "json"]), LIMIT);
    let mut all = messages(&out);
    let library = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name() != "invariants.toml") // not a scenario
        .count();
    assert_eq!(all.pop().map(|m| m["type"].clone()), Some("summary".into()));
    assert_eq!(all.len(), library);
    assert!(
        all.iter()
            .all(|m| m["type"] == "scenario" && m["variants"].is_array())
    );

    // bisect: each version judged, the finding, the summary.
    let out = output_within(
        wakeprobe(&[
            "bisect",
            "top-level-control",
            "--variant",
            "session",
            "--good",
            "1.0.0",
            "--bad",
            "1.0.1",
            "--sim-version",
            "1.0.0=fixed",
            "--sim-version",
            "1.0.1=child-error",
            "--set",
            "bg_seconds=1",
            "--out",
            dir.path().join("bisect").to_str().unwrap(),
            "--message-format",
            "json",
        ]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let all = messages(&out);
    let kinds: Vec<&str> = types(&all)
        .into_iter()
        .filter(|k| !k.starts_with("run-"))
        .collect();
    assert_eq!(kinds, ["bisect-step", "bisect-step", "bisected", "summary"]);
    assert_eq!(all[all.len() - 2]["first_bad"], "1.0.1");
}

#[test]
fn latest_names_the_newest_run_folder() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("reports");
    let mut ids = Vec::new();
    for _ in 0..2 {
        let out = session_run_on_the_simulator(&["top-level-control"], &out_dir);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let latest = std::fs::read_link(out_dir.join("latest")).expect("latest is a symlink");
        assert!(latest.is_relative(), "{latest:?}");
        assert!(!ids.contains(&latest), "a new run folder");
        assert!(out_dir.join("latest/summary.json").is_file());
        ids.push(latest);
    }
    let newest = std::fs::read_dir(&out_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name())
        .max()
        .unwrap();
    assert_eq!(ids[1].as_os_str(), newest);
    // Reading the whole folder sees each run once, not again through `latest`.
    let out = output_within(wakeprobe(&["report", out_dir.to_str().unwrap()]), LIMIT);
    assert!(text(&out).contains("re-rendered 2 runs"), "{}", text(&out));
}

/// Every row the terminal showed, trailing blanks trimmed. The program draws for the pty's
/// size; the emulated screen is as wide, and tall enough that nothing scrolls away, so every
/// row it ever left is still there to read (the progress display moves the cursor only
/// relative to itself, so the extra height changes nothing it draws). Rows, not lines: the
/// display pads its lines to the width and lets the terminal wrap.
fn terminal_rows(bytes: &[u8], cols: u16) -> Vec<String> {
    const TALL: u16 = 5000;
    let nonzero = |n: u16| std::num::NonZeroU16::new(n).unwrap();
    let mut parser = vt100::Parser::new(nonzero(TALL), nonzero(cols), 0);
    parser.process(bytes);
    let screen = parser.screen();
    assert!(
        screen.cursor_position().0 < TALL - 1,
        "the emulated screen is tall enough"
    );
    let mut rows: Vec<String> = screen
        .rows(0, cols)
        .map(|r| r.trim_end().to_string())
        .collect();
    while rows.last().is_some_and(|l| l.is_empty()) {
        rows.pop();
    }
    rows
}

#[test]
fn a_library_run_in_an_80_column_terminal_leaves_no_stale_lines() {
    // No CLI slot: the simulator costs little CPU, and what is checked is the display.
    use std::io::Read;
    let (rows, cols) = (24, 80);
    let pty = wakeprobe::driver::pty::PtyPair::open_sized(rows, cols).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = wakeprobe(&[
        "run",
        "--backend",
        "sim",
        "--set",
        "bg_seconds=1",
        "--explore", // below the print stall's range: no expected verdict
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    cmd.stdin(pty.child_stdio().unwrap())
        .stdout(pty.child_stdio().unwrap())
        .stderr(pty.child_stdio().unwrap())
        .env("TERM", "xterm-256color")
        .env_remove("COLUMNS");
    let mut child = cmd.spawn().unwrap();
    drop(cmd); // its copies of the terminal end: the reader sees EIO once the run is gone
    let mut master = std::fs::File::from(pty.into_master());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let mut buf = [0u8; 8192];
        // EIO once every holder of the terminal end is gone.
        while let Ok(n @ 1..) = master.read(&mut buf) {
            bytes.extend_from_slice(&buf[..n]);
        }
        let _ = tx.send(bytes);
    });
    let Ok(bytes) = rx.recv_timeout(Duration::from_secs(300)) else {
        let _ = child.kill();
        panic!("the library run did not finish within 300 s");
    };
    let status = child.wait().unwrap();
    assert!(matches!(status.code(), Some(0 | 1)), "{status:?}");
    let rows = terminal_rows(&bytes, cols);
    let all = rows.join("\n");
    // No progress line anywhere: the display cleared every one it drew.
    for row in &rows {
        let progress = row.contains("(ceilings)")
            || row.contains(" · req ")
            || row.chars().any(|c| ('\u{2800}'..='\u{28ff}').contains(&c));
        assert!(!progress, "a progress line left behind: {row:?}\n{all}");
    }
    // Above the results table: only the finish lines, one per run, each whole on its row.
    let table = rows
        .iter()
        .position(|r| r.starts_with('┌'))
        .unwrap_or_else(|| panic!("no results table:\n{all}"));
    let mut titles: Vec<&str> = Vec::new();
    // (The library's SDK scenarios are left out on the simulator, in one line that says so.)
    // (And the CLI, named once right above the table when every row ran the same one.)
    assert!(
        rows[table - 1].starts_with("cli: "),
        "the CLI named once above the table:\n{all}"
    );
    for row in rows[..table - 1]
        .iter()
        .filter(|r| !r.is_empty() && !r.starts_with("wakeprobe: left out "))
    {
        let title = finish_line_title(row)
            .unwrap_or_else(|| panic!("not a finish line above the table: {row:?}\n{all}"));
        titles.push(title);
    }
    let runs = runs(&run_dir(dir.path())).len();
    titles.sort();
    titles.dedup();
    assert_eq!(titles.len(), runs, "one finish line per run:\n{all}");
    // The table is whole and fits: each of its rows a table row, as wide as the terminal.
    let end = table
        + rows[table..]
            .iter()
            .position(|r| r.starts_with('└'))
            .unwrap();
    for row in &rows[table..=end] {
        assert!(row.starts_with(['┌', '│', '╞', '├', '└']), "{row:?}\n{all}");
        assert!(row.chars().count() <= cols as usize, "{row:?}");
    }
    // Then where the reports are, and the one closing count.
    let [.., reports, closing] = rows.as_slice() else {
        panic!("no closing lines:\n{all}")
    };
    assert!(reports.starts_with("reports: "), "{all}");
    assert!(closing.contains(" passed, "), "{all}");
}

/// The run's title in `[3/21] scenario/variant on sim:fixed #1: verdict …, 1.2s` (cut with
/// `…` when the terminal is narrower than the line).
fn finish_line_title(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('[')?;
    let (count, rest) = rest.split_once("] ")?;
    let (a, b) = count.split_once('/')?;
    a.parse::<u32>().ok()?;
    b.parse::<u32>().ok()?;
    let (title, detail) = rest.split_once(" on ")?;
    let whole = detail.ends_with('s') || detail.ends_with('…');
    (title.contains('/') && !title.contains(' ') && whole).then_some(title)
}

/// `%XX` escapes turned back into the bytes they stand for.
fn percent_decoded(href: &str) -> String {
    percent_encoding::percent_decode_str(href)
        .decode_utf8()
        .unwrap()
        .into_owned()
}

/// Every `href` of a page: (the raw value, whether it resolves: an anchor the page holds, or a
/// relative path to a file that exists beside the page).
fn page_links(page: &std::path::Path) -> Vec<(String, bool)> {
    let html = std::fs::read_to_string(page).unwrap();
    let ids: Vec<String> = regex::Regex::new(r#"id="([^"]+)""#)
        .unwrap()
        .captures_iter(&html)
        .map(|c| c[1].to_string())
        .collect();
    regex::Regex::new(r#"href="([^"]*)""#)
        .unwrap()
        .captures_iter(&html)
        .map(|c| {
            let raw = c[1].to_string();
            let ok = match raw.strip_prefix('#') {
                Some(id) => ids.iter().any(|i| i == id),
                None => {
                    !raw.contains(':')
                        && page.parent().unwrap().join(percent_decoded(&raw)).is_file()
                }
            };
            (raw, ok)
        })
        .collect()
}

#[test]
fn a_run_writes_a_self_contained_index_and_view_writes_the_same_page_again() {
    let dir = tempfile::tempdir().unwrap();
    let out =
        session_run_on_the_simulator(&["subagent-bg-turn-end", "top-level-control"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let run = run_dir(dir.path());
    let page = run.join("index.html");
    let written = std::fs::read_to_string(&page).unwrap();
    // No script, nothing fetched from anywhere: it opens from a downloaded artifact.
    for banned in ["<script", "http://", "https://", "<link", "<img"] {
        let outside_svg_namespace = written.replace("http://www.w3.org/2000/svg", "");
        assert!(
            !outside_svg_namespace.contains(banned),
            "index.html holds {banned}"
        );
    }
    // A section per run, with its timeline inline and its Mermaid source.
    assert_eq!(written.matches("<section id=\"run-").count(), 2);
    assert_eq!(written.matches("<svg ").count(), 2);
    assert_eq!(written.matches("sequenceDiagram").count(), 2);
    // The grid: each cell in its pass/fail colour, its verdict as text, linking to its run.
    assert!(
        written.contains(
            "<td class=\"cell pass\"><a href=\"#run-1\">woke 1/1<small> ✓</small></a></td>"
        ),
        "{written}"
    );
    // Every link resolves: the report, the summary, every raw evidence file.
    let links = page_links(&page);
    let dead: Vec<_> = links.iter().filter(|(_, ok)| !ok).collect();
    assert!(dead.is_empty(), "links to nothing: {dead:?}");
    for wanted in [
        "summary.json",
        "/report.md",
        "/api-journal.jsonl",
        "/hooks.jsonl",
    ] {
        assert!(
            links.iter().any(|(l, _)| l.ends_with(wanted)),
            "no link to {wanted}: {links:?}"
        );
    }
    // `view` writes the same page from the saved files alone.
    std::fs::remove_file(&page).unwrap();
    let viewed = output_within(wakeprobe(&["view", run.to_str().unwrap()]), LIMIT);
    assert_eq!(viewed.status.code(), Some(0), "{}", text(&viewed));
    assert_eq!(
        String::from_utf8_lossy(&viewed.stdout).trim(),
        page.display().to_string()
    );
    assert_eq!(std::fs::read_to_string(&page).unwrap(), written);
}

/// A check that fails is named in its run's `run-finished` line, beside the reason, so a
/// script need not open the report to say what broke.
#[test]
fn a_failed_check_is_named_in_the_json_line_of_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("scenarios/subagent-bg-turn-end.toml")).unwrap()
        + "\n[[checks]]\nname = \"the worker's tools erred\"\nkind = \"tool-errors\"\nagent = \"worker\"\nexpect = \"errors\"\n";
    let scenario = dir.path().join("planted.toml");
    std::fs::write(&scenario, text).unwrap();
    let out = output_within(
        wakeprobe(&[
            "run",
            scenario.to_str().unwrap(),
            "--variant",
            "session",
            "--backend",
            "sim",
            "--set",
            "bg_seconds=1",
            "--out",
            dir.path().join("out").to_str().unwrap(),
            "--message-format",
            "json",
        ]),
        LIMIT,
    );
    let all = messages(&out);
    let finished = all
        .iter()
        .find(|m| m["type"] == "run-finished")
        .expect("a run-finished line");
    assert_eq!(
        finished["failed_checks"],
        json!(["the worker's tools erred"]),
        "{finished}"
    );
    assert_eq!(out.status.code(), Some(1), "{finished}");
}
