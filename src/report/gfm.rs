//! Markdown that GitHub shows as written: text from agents, the CLI or a scenario never turns
//! into HTML (a `<system-reminder>` in an agent's text stays visible), code blocks are fenced
//! longer than any backtick run inside them, and table cells stay on one line.
//!
//! A draft is written with [`tag`] for the few HTML elements it means to use (`<details>`,
//! `<summary>`, `<sub>`), then passed once through [`finish`], which escapes every `<` and `&`
//! outside code spans and fenced blocks and only then turns the marked tags into HTML.

/// Marks the start and end of an intended tag; never left in a finished document.
const OPEN: char = '\u{E000}';
const CLOSE: char = '\u{E001}';

/// The tags a draft may use on purpose.
const ALLOWED: [&str; 6] = ["details", "/details", "summary", "/summary", "sub", "/sub"];

/// An intended HTML tag (`tag("details")` is `<details>` in the finished document).
pub fn tag(name: &str) -> String {
    debug_assert!(ALLOWED.contains(&name), "{name} is not an allowed tag");
    format!("{OPEN}{name}{CLOSE}")
}

/// A fenced code block holding `content` as is, with a fence no line of it can close.
pub fn fence(lang: &str, content: &str) -> String {
    let longest = longest_run(content, '`');
    let ticks = "`".repeat(longest.max(2) + 1);
    format!(
        "{ticks}{lang}\n{}\n{ticks}\n",
        content.trim_end_matches('\n')
    )
}

/// A table cell: one line, pipes escaped.
pub fn cell(text: &str) -> String {
    text.replace(['\r', '\n'], " ").replace('|', "\\|")
}

fn longest_run(text: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for ch in text.chars() {
        run = if ch == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

/// The finished document: every `<` and `&` outside code spans and fenced blocks escaped, the
/// intended tags made HTML, any other marker dropped.
pub fn finish(doc: &str) -> String {
    let mut out = String::with_capacity(doc.len() + doc.len() / 16);
    let mut fence: Option<usize> = None;
    for line in doc.split_inclusive('\n') {
        let ticks = line.chars().take_while(|c| *c == '`').count();
        match fence {
            Some(open) if ticks >= open && line.trim_end()[ticks..].trim().is_empty() => {
                fence = None;
                out.push_str(line);
            }
            Some(_) => out.push_str(line),
            None if ticks >= 3 => {
                fence = Some(ticks);
                out.push_str(line);
            }
            None => out.push_str(&escape_inline(line)),
        }
    }
    restore_tags(&out)
}

/// Escapes `<` and `&` outside inline code spans (a backtick run closed by a run of the same
/// length on the line, as CommonMark reads them; an unclosed run is literal backticks).
pub fn escape_inline(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '`' {
            let run = chars[i..].iter().take_while(|c| **c == '`').count();
            if let Some(end) = closing_run(&chars, i + run, run) {
                out.extend(&chars[i..end + run]);
                i = end + run;
                continue;
            }
            out.extend(&chars[i..i + run]);
            i += run;
            continue;
        }
        match chars[i] {
            '<' => out.push_str("&lt;"),
            '&' => out.push_str("&amp;"),
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// Where a backtick run of exactly `len` starts at or after `from`, if any.
fn closing_run(chars: &[char], from: usize, len: usize) -> Option<usize> {
    let mut i = from;
    while i < chars.len() {
        if chars[i] == '`' {
            let run = chars[i..].iter().take_while(|c| **c == '`').count();
            if run == len {
                return Some(i);
            }
            i += run;
        } else {
            i += 1;
        }
    }
    None
}

fn restore_tags(doc: &str) -> String {
    let mut out = String::with_capacity(doc.len());
    let mut rest = doc;
    while let Some(start) = rest.find(OPEN) {
        out.push_str(&rest[..start]);
        let after = &rest[start + OPEN.len_utf8()..];
        match after.find(CLOSE) {
            Some(end) if ALLOWED.contains(&&after[..end]) => {
                out.push('<');
                out.push_str(&after[..end]);
                out.push('>');
                rest = &after[end + CLOSE.len_utf8()..];
            }
            _ => rest = after,
        }
    }
    out.push_str(rest);
    out.replace(CLOSE, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_in_text_is_escaped_and_code_is_left_alone() {
        assert_eq!(
            escape_inline("says “<system-reminder>hi</system-reminder> & bye”"),
            "says “&lt;system-reminder>hi&lt;/system-reminder> &amp; bye”"
        );
        assert_eq!(escape_inline("`a<b` and <c>"), "`a<b` and &lt;c>");
        assert_eq!(escape_inline("``a ` <b`` <c"), "``a ` <b`` &lt;c");
        assert_eq!(escape_inline("an `unclosed <b"), "an `unclosed &lt;b");
    }

    #[test]
    fn fences_outlast_backticks_and_only_intended_tags_become_html() {
        let block = fence("toml", "a = \"```\"\n<b>");
        assert!(
            block.starts_with("````toml\n") && block.ends_with("\n````\n"),
            "{block}"
        );
        let doc = format!(
            "{}{}x <i>{}\n{block}{OPEN}script{CLOSE}\n",
            tag("details"),
            tag("summary"),
            tag("/summary")
        );
        assert_eq!(
            finish(&doc),
            format!("<details><summary>x &lt;i></summary>\n{block}script\n")
        );
    }
}
