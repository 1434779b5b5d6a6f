//! Redaction: what must never appear in a written file.
//!
//! Applied to every byte a run writes, before it is written: the sandbox's absolute path (and
//! the CLI's slug of it), the real HOME, the user's name inside paths, the wakeprobe binary's
//! path, and the dummy API key all become placeholders. A test scans every written file for
//! them.

use std::path::Path;

use crate::backend::DUMMY_KEY;

#[derive(Debug, Clone)]
pub struct Redactor {
    /// (needle, placeholder), longest needles first.
    rules: Vec<(String, String)>,
}

impl Redactor {
    /// The rules for a run in `sandbox`, with the harness binary at `wakeprobe`.
    pub fn for_run(sandbox: &Path, wakeprobe: &Path) -> Redactor {
        let mut rules = Vec::new();
        let sandbox = sandbox.display().to_string();
        // The CLI names its project folder by the cwd with `/`, `.` and `_` turned into `-`.
        let slug: String = sandbox
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        rules.push((sandbox, "$SANDBOX".to_string()));
        rules.push((slug, "-$SANDBOX".to_string()));
        if let Some(dir) = wakeprobe.parent() {
            rules.push((wakeprobe.display().to_string(), "$WAKEPROBE".to_string()));
            rules.push((dir.display().to_string(), "$WAKEPROBE_DIR".to_string()));
        }
        Redactor::with_base(rules)
    }

    /// Only the machine-wide rules (HOME, user name, key): for files not tied to one run.
    pub fn basic() -> Redactor {
        Redactor::with_base(Vec::new())
    }

    fn with_base(mut rules: Vec<(String, String)>) -> Redactor {
        if let Some(home) = std::env::var_os("HOME").map(|h| h.to_string_lossy().to_string())
            && home.len() > 1
        {
            rules.push((home, "$HOME".to_string()));
        }
        for var in ["USER", "LOGNAME"] {
            if let Ok(user) = std::env::var(var)
                && user.len() > 1
            {
                for prefix in ["/home/", "/Users/"] {
                    rules.push((format!("{prefix}{user}"), format!("{prefix}$USER")));
                }
            }
        }
        rules.push((DUMMY_KEY.to_string(), "$API_KEY".to_string()));
        rules.retain(|(needle, _)| needle.len() > 1);
        rules.sort_by_key(|r| std::cmp::Reverse(r.0.len()));
        rules.dedup_by(|a, b| a.0 == b.0);
        Redactor { rules }
    }

    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (needle, placeholder) in &self.rules {
            if out.contains(needle.as_str()) {
                out = out.replace(needle.as_str(), placeholder);
            }
        }
        out
    }

    /// Redacts bytes that are UTF-8; other bytes (a pty capture's broken sequences) are
    /// redacted in their lossy form.
    pub fn bytes(&self, bytes: &[u8]) -> Vec<u8> {
        self.text(&String::from_utf8_lossy(bytes)).into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_slugs_and_the_key_become_placeholders() {
        let r = Redactor::for_run(
            Path::new("/tmp/wakeprobe-x-Ab_1"),
            Path::new("/opt/wp/bin/wakeprobe"),
        );
        let text = format!(
            "cwd /tmp/wakeprobe-x-Ab_1/project slug -tmp-wakeprobe-x-Ab-1-project key {DUMMY_KEY} hook /opt/wp/bin/wakeprobe"
        );
        let out = r.text(&text);
        assert_eq!(
            out,
            "cwd $SANDBOX/project slug -$SANDBOX-project key $API_KEY hook $WAKEPROBE"
        );
    }
}
