//! Links of a saved `index.html` checked on disk, no browser: every `href` is a relative path
//! to a file that exists (percent-decoded, from the page's folder) or an anchor with a target
//! on the page. `.ci/run` does the same in headless Chromium; this bites in the inner loop.

use std::path::Path;

/// Every `href="..."` value of the page, in order.
pub fn hrefs(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(v, _)| v.to_string()))
        .collect()
}

/// `%20` and kin decoded, as a browser does before opening a `file:` path.
fn percent_decoded(href: &str) -> String {
    let bytes = href.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(b) = href
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).to_string()
}

/// The links of `page` that lead nowhere: a file that is not there, a path that climbs out of
/// the page's folder, an address off this machine, an anchor with no target.
pub fn broken_links(page: &Path) -> Vec<String> {
    let html = std::fs::read_to_string(page).unwrap();
    let folder = page.parent().unwrap();
    hrefs(&html)
        .into_iter()
        .filter(|href| {
            if let Some(id) = href.strip_prefix('#') {
                return !html.contains(&format!("id=\"{id}\""));
            }
            let path = percent_decoded(href);
            path.contains("://")
                || path.starts_with('/')
                || path.split('/').any(|part| part == "..")
                || !folder.join(&path).is_file()
        })
        .collect()
}
