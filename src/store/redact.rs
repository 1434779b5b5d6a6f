//! Redaction: what must never appear in a written file.
//!
//! Applied to every byte a run writes, before it is written: the sandbox's absolute path (and
//! the CLI's slug of it), the real HOME, the user's name inside paths, the wakeprobe binary's
//! path, and the dummy API key all become placeholders. A test scans every written file for
//! them.

use std::path::Path;

use crate::backend::DUMMY_KEY;

/// What redaction hides about the machine: the real HOME and the user's names.
#[derive(Debug, Clone, Default, PartialEq)]
struct Machine {
    home: Option<String>,
    users: Vec<String>,
}

impl Machine {
    fn from_env() -> Machine {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let mut users: Vec<String> = ["USER", "LOGNAME"].iter().filter_map(|v| var(v)).collect();
        users.dedup();
        Machine {
            home: std::env::var_os("HOME")
                .map(|h| h.to_string_lossy().to_string())
                .filter(|h| !h.is_empty()),
            users,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Redactor {
    /// (needle, placeholder), longest needles first.
    rules: Vec<(String, String)>,
}

impl Redactor {
    /// The rules for a run in `sandbox`, with the harness binary at `wakeprobe`.
    pub fn for_run(sandbox: &Path, wakeprobe: &Path) -> Redactor {
        Redactor::for_run_on(sandbox, wakeprobe, &Machine::from_env())
    }

    fn for_run_on(sandbox: &Path, wakeprobe: &Path, machine: &Machine) -> Redactor {
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
        Redactor::with_base(rules, machine)
    }

    /// Only the machine-wide rules (HOME, user name, key): for files not tied to one run.
    pub fn basic() -> Redactor {
        Redactor::with_base(Vec::new(), &Machine::from_env())
    }

    fn with_base(mut rules: Vec<(String, String)>, machine: &Machine) -> Redactor {
        if let Some(home) = &machine.home {
            rules.push((home.clone(), "$HOME".to_string()));
        }
        // A one-letter user name would match inside other names (`/home/a` in `/home/ab`).
        for user in machine.users.iter().filter(|u| u.chars().count() > 1) {
            for prefix in ["/home/", "/Users/"] {
                rules.push((format!("{prefix}{user}"), format!("{prefix}$USER")));
            }
        }
        rules.push((DUMMY_KEY.to_string(), "$API_KEY".to_string()));
        // A one-character needle (HOME=/) would replace every slash.
        rules.retain(|(needle, _)| needle.chars().count() > 1);
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

    fn machine(home: &str, users: &[&str]) -> Machine {
        Machine {
            home: Some(home.to_string()),
            users: users.iter().map(|u| u.to_string()).collect(),
        }
    }

    #[test]
    fn home_and_the_users_name_in_any_home_become_placeholders() {
        let r = Redactor::with_base(Vec::new(), &machine("/home/alice", &["alice", "al"]));
        assert_eq!(
            r.text("/home/alice/x /Users/alice/y /home/al/z /srv/alice"),
            "$HOME/x /Users/$USER/y /home/$USER/z /srv/alice"
        );
        // The longest needle wins: the sandbox inside HOME is the sandbox, not HOME's.
        let run = Redactor::for_run_on(
            Path::new("/home/alice/tmp/sb"),
            Path::new("/opt/wakeprobe"),
            &machine("/home/alice", &["alice"]),
        );
        assert_eq!(
            run.text("/home/alice/tmp/sb/p /home/alice/q"),
            "$SANDBOX/p $HOME/q"
        );
    }

    #[test]
    fn one_character_needles_are_not_rules() {
        // HOME=/ and a one-letter user would otherwise rewrite every slash or that letter.
        let r = Redactor::with_base(Vec::new(), &machine("/", &["a"]));
        assert_eq!(r.text("/a/b /home/a /home/ab"), "/a/b /home/a /home/ab");
        let two = Redactor::with_base(Vec::new(), &machine("/h", &[]));
        assert_eq!(two.text("/h/x"), "$HOME/x");
        assert!(
            !r.rules.iter().any(|(n, _)| n.contains("/a")),
            "{:?}",
            r.rules
        );
    }

    #[test]
    fn bytes_are_redacted_as_text_and_broken_sequences_stay_visible() {
        let r = Redactor::with_base(Vec::new(), &machine("/home/alice", &[]));
        assert_eq!(r.bytes(b"at /home/alice/x"), b"at $HOME/x".to_vec());
        assert_eq!(
            r.bytes(b"/home/alice \xff!"),
            "$HOME \u{FFFD}!".as_bytes().to_vec()
        );
    }

    #[test]
    fn the_machine_is_read_from_the_environment() {
        // Read only: the test process's own HOME and user (set for every test run).
        let machine = Machine::from_env();
        let home = std::env::var("HOME").ok().filter(|h| !h.is_empty());
        assert_eq!(machine.home, home);
        if let Ok(user) = std::env::var("USER").or_else(|_| std::env::var("LOGNAME"))
            && !user.is_empty()
        {
            assert!(machine.users.contains(&user), "{machine:?}");
        }
    }

    #[test]
    fn the_same_user_twice_is_one_rule() {
        let r = Redactor::with_base(Vec::new(), &machine("/root", &["bob", "bob"]));
        let needles: Vec<&str> = r.rules.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            needles.iter().filter(|n| **n == "/home/bob").count(),
            1,
            "{needles:?}"
        );
        assert!(
            needles.windows(2).all(|w| w[0].len() >= w[1].len()),
            "{needles:?}"
        );
    }
}
