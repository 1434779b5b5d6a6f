//! Redaction of what a transcript says about its user before it goes into a scenario file:
//! the project folder becomes `$PWD`, home folders become `$HOME`, the user's name `$USER`, and
//! tokens and keys `<redacted>`. In a Bash command the placeholders expand in the sandbox (its
//! own project and HOME), so a redacted command still runs there; the caller flags commands
//! whose paths changed.

/// Names too common to replace as words wherever they appear.
const COMMON_USERS: &[&str] = &[
    "root", "user", "admin", "ubuntu", "dev", "runner", "ec2-user", "vagrant", "node", "app",
    "home", "builder", "ci",
];

/// Prefixes of well-known secret formats; each is followed by at least 12 token characters.
const TOKEN_PREFIXES: &[&str] = &[
    "sk-ant-",
    "sk-proj-",
    "sk-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxr-",
    "AKIA",
    "ASIA",
    "AIza",
    "npm_",
    "hf_",
    "Bearer ",
];

/// Environment names whose values are secrets (`FOO_TOKEN=...`).
const SECRET_NAME_ENDINGS: &[&str] = &[
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIALS",
];

#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// The project folders (records' `cwd`), longest first.
    projects: Vec<String>,
    users: Vec<String>,
}

/// A redacted text, and whether it referred to the user's own paths.
#[derive(Debug, Clone, PartialEq)]
pub struct Redacted {
    pub text: String,
    pub had_paths: bool,
}

impl Redactor {
    /// A redactor for a session run in these working folders.
    pub fn new(cwds: &[String]) -> Redactor {
        let mut projects: Vec<String> = cwds
            .iter()
            .filter(|c| c.starts_with('/') || c.starts_with('$'))
            .map(|c| c.trim_end_matches('/').to_string())
            .filter(|c| c.len() > 1)
            .collect();
        projects.sort_by_key(|p| std::cmp::Reverse(p.len()));
        projects.dedup();
        let mut users: Vec<String> = cwds.iter().filter_map(|c| home_user(c)).collect();
        users.sort();
        users.dedup();
        users.retain(|u| u.len() >= 3 && !COMMON_USERS.contains(&u.as_str()));
        Redactor { projects, users }
    }

    pub fn text(&self, text: &str) -> Redacted {
        let mut out = text.to_string();
        for p in &self.projects {
            out = out.replace(p.as_str(), "$PWD");
        }
        out = homes(&out);
        let had_paths = out != text;
        for user in &self.users {
            out = replace_word(&out, user, "$USER");
        }
        out = secret_assignments(&tokens(&out));
        Redacted {
            text: out,
            had_paths,
        }
    }
}

/// The user of a home folder path (`/home/alice/...`, `/Users/alice/...`).
fn home_user(path: &str) -> Option<String> {
    let rest = path
        .strip_prefix("/home/")
        .or_else(|| path.strip_prefix("/Users/"))?;
    let user = rest.split('/').next()?;
    (!user.is_empty()).then(|| user.to_string())
}

/// `/home/NAME`, `/Users/NAME` and `/root` (at a path boundary) become `$HOME`.
fn homes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((i, prefix)) = ["/home/", "/Users/", "/root"]
        .iter()
        .filter_map(|p| rest.find(p).map(|i| (i, *p)))
        .min()
    {
        let boundary = rest[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '.' || c == '$'));
        let after = &rest[i + prefix.len()..];
        let name_len = if prefix == "/root" {
            0
        } else {
            after
                .find(|c: char| c == '/' || c.is_whitespace() || "'\"`:;,)]}".contains(c))
                .unwrap_or(after.len())
        };
        let end_ok = after[name_len..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '-'));
        if boundary && end_ok && (prefix == "/root" || name_len > 0) {
            out.push_str(&rest[..i]);
            out.push_str("$HOME");
            rest = &after[name_len..];
        } else {
            out.push_str(&rest[..i + prefix.len()]);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn replace_word(text: &str, word: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(word) {
        let before = rest[..i].chars().next_back();
        let after = rest[i + word.len()..].chars().next();
        out.push_str(&rest[..i]);
        if before.is_none_or(|c| !is_word_char(c)) && after.is_none_or(|c| !is_word_char(c)) {
            out.push_str(with);
        } else {
            out.push_str(word);
        }
        rest = &rest[i + word.len()..];
    }
    out.push_str(rest);
    out
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'
}

/// Known secret formats become `<redacted>`.
fn tokens(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let boundary = i == 0 || !is_token_char(text[..i].chars().next_back().unwrap_or(' '));
        let hit = boundary
            .then(|| {
                TOKEN_PREFIXES.iter().find_map(|p| {
                    let rest = text[i..].strip_prefix(p)?;
                    let len = rest.find(|c: char| !is_token_char(c)).unwrap_or(rest.len());
                    (len >= 12).then_some(p.len() + len)
                })
            })
            .flatten();
        match hit {
            Some(len) => {
                out.push_str("<redacted>");
                i += len;
            }
            None => {
                let c = text[i..].chars().next().expect("in bounds");
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// `NAME_TOKEN=value` (and `KEY`, `SECRET`, `PASSWORD`...): the value becomes `<redacted>`.
fn secret_assignments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(eq) = rest.find('=') {
        let name_start = rest[..eq]
            .rfind(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .map_or(0, |i| i + 1);
        let name = &rest[name_start..eq];
        let secret = SECRET_NAME_ENDINGS.iter().any(|e| name.ends_with(e));
        let value = &rest[eq + 1..];
        let (quote, body) = match value.chars().next() {
            Some(q @ ('"' | '\'')) => (Some(q), &value[1..]),
            _ => (None, value),
        };
        let len = match quote {
            Some(q) => body.find(q).unwrap_or(body.len()),
            None => body
                .find(|c: char| c.is_whitespace() || c == ';' || c == '&' || c == '|')
                .unwrap_or(body.len()),
        };
        out.push_str(&rest[..=eq]);
        if secret && len > 0 && !body[..len].starts_with('$') && body[..len] != *"<redacted>" {
            if let Some(q) = quote {
                out.push(q);
            }
            out.push_str("<redacted>");
            rest = &body[len..];
        } else {
            rest = value;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_users_and_secrets_become_placeholders() {
        let r = Redactor::new(&["/home/alice/src/shop".into()]);
        let got = r.text("cd /home/alice/src/shop/api && cat /home/alice/.npmrc /home/bob/x");
        assert_eq!(got.text, "cd $PWD/api && cat $HOME/.npmrc $HOME/x");
        assert!(got.had_paths);
        let got = r.text("Thanks alice; alicex and Alice stay. /root/x and /rooted stay?");
        assert_eq!(
            got.text,
            "Thanks $USER; alicex and Alice stay. $HOME/x and /rooted stay?"
        );
        let got = r.text(
            "curl -H 'Authorization: Bearer abcdefghijklmnop1234' ANTHROPIC_API_KEY=sk-ant-api03-AAAABBBBCCCCDDDD x ghp_0123456789abcdefghij GITHUB_TOKEN=\"s3cr3t value\" PATH=/usr/bin sleep 3",
        );
        assert_eq!(
            got.text,
            "curl -H 'Authorization: <redacted>' ANTHROPIC_API_KEY=<redacted> x <redacted> GITHUB_TOKEN=\"<redacted>\" PATH=/usr/bin sleep 3"
        );
        assert!(!got.had_paths);
        // Common user names are not replaced as words.
        let r = Redactor::new(&["/home/user/p".into()]);
        assert_eq!(r.text("the user said").text, "the user said");
        // Our own run folders' placeholders.
        let r = Redactor::new(&["$SANDBOX/project".into()]);
        assert_eq!(r.text("ls $SANDBOX/project/src").text, "ls $PWD/src");
    }
}
