//! Identifiers and clocks in the real CLI's formats: session UUIDs, agent ids (`a` + 16 hex),
//! shell task ids (`b` + 8 of `[a-z0-9]`), run ids, ISO timestamps, and the path slug that
//! names a project's transcript and task folders.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Random bytes from the kernel; a time-seeded generator if `/dev/urandom` is unreadable.
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .is_ok()
    {
        return buf;
    }
    static STATE: AtomicU64 = AtomicU64::new(0);
    let mut x = STATE.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
        ^ now_ms()
        ^ std::process::id() as u64;
    for b in &mut buf {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    buf
}

pub fn hex(n: usize) -> String {
    random_bytes(n.div_ceil(2))
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()[..n]
        .to_string()
}

fn base36_chars(n: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    random_bytes(n)
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

/// A random (version 4) UUID.
pub fn uuid() -> String {
    let mut b = random_bytes(16);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A subagent's id: `a` and 16 hex digits.
pub fn agent_id() -> String {
    format!("a{}", hex(16))
}

/// A teammate's agent id: `a<name>-` and 16 hex digits.
pub fn teammate_agent_id(name: &str) -> String {
    format!("a{name}-{}", hex(16))
}

/// A shell task's id: `b` and 8 characters.
pub fn shell_task_id() -> String {
    format!("b{}", base36_chars(8))
}

/// A teammate task's id: `t` and 8 characters.
pub fn teammate_task_id() -> String {
    format!("t{}", base36_chars(8))
}

/// A run id: the time in base 36 and 8 hex digits.
pub fn run_id() -> String {
    let mut t = now_ms();
    let mut digits = Vec::new();
    while t > 0 {
        digits.push(std::char::from_digit((t % 36) as u32, 36).unwrap_or('0'));
        t /= 36;
    }
    digits.reverse();
    format!("{}-{}", digits.into_iter().collect::<String>(), hex(8))
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `2026-11-30T12:24:00.637Z`
pub fn iso_now() -> String {
    iso(now_ms())
}

pub fn iso(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// A path as the CLI names its project folders: every character that is not a letter or a
/// digit becomes `-` (`/tmp/a_b/proj` -> `-tmp-a-b-proj`).
pub fn slug(path: &std::path::Path) -> String {
    path.display()
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_match_the_real_cli() {
        let a = agent_id();
        assert!(
            a.len() == 17 && a.starts_with('a') && a[1..].chars().all(|c| c.is_ascii_hexdigit())
        );
        let b = shell_task_id();
        assert!(b.len() == 9 && b.starts_with('b') && b.chars().all(|c| c.is_ascii_alphanumeric()));
        let u = uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(run_id().contains('-'));
        assert_eq!(iso(1_796_040_175_423), "2026-11-30T12:02:55.423Z");
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            slug(std::path::Path::new("/tmp/explore/runs/a_print/proj")),
            "-tmp-explore-runs-a-print-proj"
        );
    }
}
