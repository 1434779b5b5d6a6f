//! The house rules of ARCHITECTURE.md, held against the code: its table of rooms (each
//! top-level module of `src/` on a floor) is read from the document itself, and every `crate::`
//! path in a room's code (tests aside) must lead to a room on a lower floor. So the document
//! cannot drift from the code, a new room must be placed before it builds green, and a circle
//! or an import against the flow fails here with its file and line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The rooms and their floors, as ARCHITECTURE.md's "Rooms" table lists them
/// (`| FLOOR | `room` | what it owns |`).
fn floors(document: &str) -> BTreeMap<String, u32> {
    let section = document
        .split("\n## Rooms\n")
        .nth(1)
        .expect("ARCHITECTURE.md has a `## Rooms` section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut floors = BTreeMap::new();
    for line in section.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(floor), Some(rooms)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let Ok(floor) = floor.parse::<u32>() else {
            continue;
        };
        for room in rooms.split(',') {
            let room = room.trim().trim_matches('`');
            assert!(
                floors.insert(room.to_string(), floor).is_none(),
                "ARCHITECTURE.md places `{room}` twice"
            );
        }
    }
    floors
}

/// The room a file under `src/` belongs to: its top-level module; `None` for the crate's
/// roots and binaries, which may import anything.
fn room_of(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    let room = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(room, "lib" | "main" | "bin")).then(|| room.to_string())
}

/// A file's code without its tests and comments: a room's tests may reach anywhere. Each
/// item under `#[cfg(test)]` (a `mod tests { … }`, a `use`, a function) is cut to its end,
/// whatever follows it stays.
fn production_code(text: &str) -> String {
    let uncommented: String = text
        .lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut code = String::new();
    let mut rest = uncommented.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        code.push_str(&rest[..at]);
        rest = &rest[at + "#[cfg(test)]".len()..];
        rest = after_item(rest);
    }
    code.push_str(rest);
    code
}

/// The text after the item that `text` starts with: up to its `;`, or its `{ … }` block.
fn after_item(text: &str) -> &str {
    let Some(open) = text.find(['{', ';']) else {
        return "";
    };
    if text.as_bytes()[open] == b';' {
        return &text[open + 1..];
    }
    let mut depth = 0;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[open + i + 1..];
                }
            }
            _ => {}
        }
    }
    ""
}

/// Each room a piece of code names through `crate::`, with the line it is named on:
/// `crate::room::…` and every top-level item of `crate::{a::…, b}`.
fn imports(code: &str) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let line = code[..at].matches('\n').count() + 1;
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_alphabetic() || c == '_') => {
                        item_start = false;
                        found.push((identifier(&group[i..]), line));
                    }
                    _ => {}
                }
            }
        } else {
            found.push((identifier(rest), line));
        }
    }
    found
}

fn identifier(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

fn source_files(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|entry| entry.expect("src/ can be read").into_path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .filter(|path| path.file_name().is_some_and(|n| n != "tests.rs"))
        .collect()
}

#[test]
fn every_import_runs_down_the_floors_of_architecture_md() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let document = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let floors = floors(&document);
    assert!(
        floors.len() > 10,
        "the Rooms table was not read: {floors:?}"
    );
    let src = root.join("src");
    let mut unplaced = Vec::new();
    let mut against = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for file in source_files(&src) {
        let relative = file.strip_prefix(&src).unwrap();
        let Some(room) = room_of(relative) else {
            continue;
        };
        seen.insert(room.clone());
        let Some(&floor) = floors.get(&room) else {
            unplaced.push(room);
            continue;
        };
        let code = production_code(&std::fs::read_to_string(&file).unwrap());
        for (to, line) in imports(&code) {
            if to == room || to.is_empty() {
                continue;
            }
            match floors.get(&to) {
                Some(&below) if below < floor => {}
                Some(&other) => against.push(format!(
                    "src/{}:{line}: `{room}` (floor {floor}) imports `{to}` (floor {other})",
                    relative.display()
                )),
                None => unplaced.push(to),
            }
        }
    }
    unplaced.sort();
    unplaced.dedup();
    assert!(
        unplaced.is_empty(),
        "rooms of src/ that ARCHITECTURE.md does not place: {unplaced:?}"
    );
    let listed_only: Vec<_> = floors.keys().filter(|r| !seen.contains(*r)).collect();
    assert!(
        listed_only.is_empty(),
        "ARCHITECTURE.md places rooms src/ does not have: {listed_only:?}"
    );
    assert!(
        against.is_empty(),
        "imports against the flow (a room may import only rooms on lower floors):\n{}",
        against.join("\n")
    );
}

/// The reader itself: a grouped import names each of its rooms, a comment and a test module
/// name none.
#[test]
fn the_reader_finds_grouped_imports_and_skips_tests_and_comments() {
    let code = production_code(
        "use crate::os::env;\nuse crate::{scenario::{Plan, Fault}, evidence};\n// crate::app\n#[cfg(test)]\nmod tests { fn f() { use crate::app; } }\n#[cfg(test)]\nuse crate::matrix;\nfn after() { crate::driver::x(); }\n",
    );
    let found: Vec<String> = imports(&code).into_iter().map(|(r, _)| r).collect();
    assert_eq!(found, ["os", "scenario", "evidence", "driver"]);
}

/// A subcommand's file is its flow (resolve, execute, finish), short enough to read at once:
/// each module `app::dispatch` sends a subcommand to (`app/NAME.rs` or `app/NAME/mod.rs`) is
/// under 150 lines; what it needs beside its flow lives in its folder or a lower room.
#[test]
fn every_subcommands_file_is_under_150_lines() {
    let app = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/app");
    let dispatch = std::fs::read_to_string(app.join("mod.rs")).unwrap();
    let arms = dispatch
        .split("async fn run_subcommand")
        .nth(1)
        .expect("app/mod.rs dispatches in run_subcommand");
    let mut modules: Vec<String> = arms
        .split("=>")
        .skip(1)
        .filter_map(|arm| {
            let call = arm.trim_start();
            let (module, _) = call.split_once("::")?;
            module
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_')
                .then(|| module.to_string())
        })
        .collect();
    modules.sort();
    modules.dedup();
    assert!(
        modules.len() >= 15,
        "the dispatch was not read: {modules:?}"
    );
    let long: Vec<String> = modules
        .iter()
        .filter_map(|module| {
            let file = [
                app.join(format!("{module}.rs")),
                app.join(module).join("mod.rs"),
            ]
            .into_iter()
            .find(|f| f.is_file())
            .unwrap_or_else(|| panic!("no file for app::{module}"));
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            (lines >= 150).then(|| format!("{}: {lines} lines", file.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "subcommand files of 150 lines or more:\n{}",
        long.join("\n")
    );
}
