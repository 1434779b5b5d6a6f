//! The JUnit XML structure CI systems read (Jenkins' junit-10 layout, the one
//! `tests/fixtures/junit.xsd` states), checked in Rust so `cargo test` needs no `xmllint`:
//! element nesting and order, required attributes, no unknown attributes, numeric counts and
//! times. `.ci/run` also validates a real run's file against the XSD with xmllint.

use roxmltree::{Document, Node};

/// One element's rules: allowed attributes (required ones first, marked `!`), and its children
/// as an ordered sequence of (name, min, max) groups.
struct Rule {
    name: &'static str,
    attributes: &'static [&'static str],
    children: &'static [(&'static str, usize, usize)],
    text: bool,
}

const MANY: usize = usize::MAX;

const RULES: &[Rule] = &[
    Rule {
        name: "testsuites",
        // `skipped` is not in Jenkins' junit-10, but quick-junit (as nextest) writes it and CI
        // readers accept it; the fixture XSD says the same.
        attributes: &[
            "name", "time", "tests", "failures", "disabled", "errors", "skipped",
        ],
        children: &[("testsuite", 0, MANY)],
        text: false,
    },
    Rule {
        name: "testsuite",
        attributes: &[
            "!name",
            "!tests",
            "failures",
            "errors",
            "time",
            "disabled",
            "skipped",
            "skips",
            "timestamp",
            "hostname",
            "id",
            "package",
            "assertions",
            "file",
            "skip",
            "log",
            "url",
        ],
        children: &[
            ("properties", 0, 1),
            ("testcase", 0, MANY),
            ("system-out", 0, 1),
            ("system-err", 0, 1),
        ],
        text: false,
    },
    Rule {
        name: "properties",
        attributes: &[],
        children: &[("property", 1, MANY)],
        text: false,
    },
    Rule {
        name: "property",
        attributes: &["!name", "!value"],
        children: &[],
        text: false,
    },
    Rule {
        name: "testcase",
        attributes: &[
            "!name",
            "assertions",
            "time",
            "classname",
            "status",
            "file",
            "line",
        ],
        children: &[
            ("skipped", 0, 1),
            ("error", 0, MANY),
            ("failure", 0, MANY),
            ("system-out", 0, MANY),
            ("system-err", 0, MANY),
        ],
        text: false,
    },
    Rule {
        name: "skipped",
        attributes: &["message"],
        children: &[],
        text: true,
    },
    Rule {
        name: "failure",
        attributes: &["type", "message"],
        children: &[],
        text: true,
    },
    Rule {
        name: "error",
        attributes: &["type", "message"],
        children: &[],
        text: true,
    },
    Rule {
        name: "system-out",
        attributes: &[],
        children: &[],
        text: true,
    },
    Rule {
        name: "system-err",
        attributes: &[],
        children: &[],
        text: true,
    },
];

/// Checks `xml` against the JUnit structure; returns every violation found.
pub fn validate(xml: &str) -> Result<(), Vec<String>> {
    let doc = Document::parse(xml).map_err(|e| vec![format!("not well-formed XML: {e}")])?;
    let root = doc.root_element();
    let mut problems = Vec::new();
    if root.tag_name().name() != "testsuites" {
        problems.push(format!(
            "the root element is <{}>, expected <testsuites>",
            root.tag_name().name()
        ));
    }
    check(root, &mut problems);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

fn check(node: Node, problems: &mut Vec<String>) {
    let name = node.tag_name().name();
    let Some(rule) = RULES.iter().find(|r| r.name == name) else {
        problems.push(format!("unknown element <{name}>"));
        return;
    };
    for wanted in rule.attributes.iter().filter_map(|a| a.strip_prefix('!')) {
        if node.attribute(wanted).is_none() {
            problems.push(format!("<{name}> lacks the required attribute `{wanted}`"));
        }
    }
    for attr in node.attributes() {
        let known = rule
            .attributes
            .iter()
            .any(|a| a.trim_start_matches('!') == attr.name());
        if !known {
            problems.push(format!(
                "<{name}> has an unknown attribute `{}`",
                attr.name()
            ));
        }
        if matches!(
            attr.name(),
            "tests" | "failures" | "errors" | "skipped" | "disabled"
        ) && attr.value().parse::<u64>().is_err()
        {
            problems.push(format!(
                "<{name} {}=\"{}\">: not a count",
                attr.name(),
                attr.value()
            ));
        }
        if attr.name() == "time" && !is_surefire_time(attr.value()) {
            problems.push(format!("<{name} time=\"{}\">: not a time", attr.value()));
        }
    }
    let children: Vec<Node> = node.children().filter(Node::is_element).collect();
    if !rule.text
        && node
            .children()
            .any(|c| c.is_text() && !c.text().unwrap_or("").trim().is_empty())
    {
        problems.push(format!("<{name}> holds text"));
    }
    // The children must follow the rule's sequence, each group within its bounds.
    let mut at = 0;
    for (group, min, max) in rule.children {
        let count = children[at..]
            .iter()
            .take_while(|c| c.tag_name().name() == *group)
            .count();
        if count < *min || count > *max {
            problems.push(format!(
                "<{name}> holds {count} <{group}>, expected {min} to {}",
                if *max == MANY {
                    "many".to_string()
                } else {
                    max.to_string()
                }
            ));
        }
        at += count;
    }
    if let Some(extra) = children.get(at) {
        problems.push(format!(
            "<{name}> holds <{}> where it is not allowed (order: {})",
            extra.tag_name().name(),
            rule.children
                .iter()
                .map(|(g, _, _)| *g)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for child in children {
        check(child, problems);
    }
}

/// The schema's SUREFIRE_TIME: digits (optionally grouped by commas) and up to three decimals.
fn is_surefire_time(s: &str) -> bool {
    let (whole, fraction) = s.split_once('.').unwrap_or((s, ""));
    fraction.len() <= 3
        && fraction.chars().all(|c| c.is_ascii_digit())
        && whole.chars().all(|c| c.is_ascii_digit() || c == ',')
        && !whole.starts_with(',')
}
