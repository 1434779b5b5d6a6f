//! The reference book (`book/`, built with mdBook) and the README that points into it, checked
//! on disk with no tool but a Markdown parser: every relative link of README.md and of the
//! book's pages leads to a file that exists and, with a `#fragment` into a Markdown file, to a
//! heading that exists there (mdBook's ids); a page's links stay inside the book (the built
//! HTML holds nothing else); every page is in SUMMARY.md. `.ci/run` builds the book with
//! mdBook and checks the links of the built HTML as well.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::common::root;

/// A Markdown file's link destinations and its headings' anchors, as mdBook makes them.
struct Page {
    links: Vec<String>,
    anchors: BTreeSet<String>,
}

/// mdBook's id for a heading: its text lowercased, whitespace to `-`, every character but
/// letters, digits, `-` and `_` dropped; a repeated id gets `-1`, `-2`... as mdBook numbers
/// them.
fn anchor_of(text: &str, seen: &mut BTreeSet<String>) -> String {
    let base: String = text
        .trim()
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect();
    let mut id = base.clone();
    let mut n = 0;
    while seen.contains(&id) {
        n += 1;
        id = format!("{base}-{n}");
    }
    seen.insert(id.clone());
    id
}

fn page(path: &Path) -> Page {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut links, mut anchors) = (Vec::new(), BTreeSet::new());
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(&text, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Link { dest_url, .. }) => links.push(dest_url.to_string()),
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let text = heading.take().unwrap_or_default();
                anchor_of(&text, &mut anchors);
            }
            _ => {}
        }
    }
    Page { links, anchors }
}

/// `path` with `.` and `..` taken out, as a browser resolves a relative link.
fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

fn book_pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("book/src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    assert!(pages.len() > 10, "the book's pages: {pages:?}");
    pages
}

/// What is wrong with each relative link of `file` (empty when all resolve); a link of a page
/// of the book (the folder `book`) must also stay inside it.
fn broken_links(file: &Path, book: &Path) -> Vec<String> {
    let inside_book = file.starts_with(book);
    let mut broken = Vec::new();
    for link in page(file).links {
        if link.starts_with("http://")
            || link.starts_with("https://")
            || link.starts_with("mailto:")
        {
            continue;
        }
        let (target, fragment) = match link.split_once('#') {
            Some((t, f)) => (t, Some(f)),
            None => (link.as_str(), None),
        };
        let target = if target.is_empty() {
            file.to_path_buf()
        } else {
            normalized(&file.parent().unwrap().join(target))
        };
        if !target.exists() {
            broken.push(format!("{link}: no such file"));
        } else if inside_book && !target.starts_with(book) {
            broken.push(format!(
                "{link}: outside the book (the built book has no such page)"
            ));
        } else if let Some(fragment) = fragment
            && target.extension().is_some_and(|x| x == "md")
            && !page(&target).anchors.contains(fragment)
        {
            broken.push(format!("{link}: no heading with that anchor"));
        }
    }
    broken
}

#[test]
fn every_relative_link_of_the_readme_and_the_book_resolves() {
    let mut files = vec![root().join("README.md")];
    files.extend(book_pages());
    let broken: Vec<String> = files
        .iter()
        .flat_map(|f| {
            let name = f.strip_prefix(root()).unwrap().display().to_string();
            let book = root().join("book/src");
            broken_links(f, &book)
                .into_iter()
                .map(move |b| format!("{name}: {b}"))
        })
        .collect();
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The checker bites: a missing file, a heading that is not there, and a page link that leaves
/// the book are each found.
#[test]
fn the_link_check_finds_what_is_broken() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book/src");
    std::fs::create_dir_all(book.join("more")).unwrap();
    std::fs::write(dir.path().join("README.md"), "# Front door\n").unwrap();
    std::fs::write(book.join("checks.md"), "# Writing checks\n").unwrap();
    let planted = book.join("more/planted.md");
    std::fs::write(
        &planted,
        "# A page\n\n## `wakeprobe run [SCENARIO...]`\n\n## Twice\n\n## Twice\n\n\
         [ok](#wakeprobe-run-scenario) [ok](#twice-1) [ok](../checks.md#writing-checks)\n\
         [gone](../nothing.md) [anchor](../checks.md#no-such-heading) [out](../../../README.md)\n\
         `[code](../nothing.md)` [ok](https://example.invalid/x.md)\n",
    )
    .unwrap();
    let broken = broken_links(&planted, &book);
    assert_eq!(broken.len(), 3, "{broken:?}");
    assert!(broken[0].starts_with("../nothing.md: no such file"));
    assert!(broken[1].starts_with("../checks.md#no-such-heading: no heading"));
    assert!(broken[2].starts_with("../../../README.md: outside the book"));
}

/// mdBook builds only what SUMMARY.md lists: a page left out would be missing from the book
/// while a link on GitHub still finds it.
#[test]
fn every_page_of_the_book_is_in_its_summary() {
    let summary = root().join("book/src/SUMMARY.md");
    let listed: BTreeSet<String> = page(&summary).links.into_iter().collect();
    for p in book_pages() {
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if name != "SUMMARY.md" {
            assert!(listed.contains(&name), "SUMMARY.md does not list {name}");
        }
    }
}

/// Every schema wakeprobe publishes is named in the book's "Exit codes and files".
#[test]
fn every_schema_is_in_the_book() {
    let files = std::fs::read_to_string(root().join("book/src/files.md")).unwrap();
    for entry in std::fs::read_dir(root().join("schema")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        assert!(
            files.contains(&format!("`schema/{name}`")),
            "files.md names schema/{name}"
        );
    }
}
