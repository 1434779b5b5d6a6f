//! What each version of the CLI tells: which evidence it emits at all, measured per version
//! range (a sweep of the library over the oldest installable versions to `latest`; the book's
//! "What each version tells", in `book/src/verdicts.md`, is this table in words). The rules ask it before they read an
//! absence as behaviour: where a version never prints what would show a thing, its absence
//! shows nothing, and the verdict is `unknown` naming what is missing.
//!
//! A row holds from its version up to the next row's. Only what a version cannot tell at all
//! is here: whatever it does tell is read from the run itself. The simulator, and a binary
//! whose version is not a published one, offer everything (they are judged as the newest
//! version).

use crate::scenario::DriverMode;
use crate::scenario::mode::Stdout;

/// Evidence a version may or may not emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// `task_started` / `task_notification` stream lines: a task's id and label, and the
    /// moment a notification fires.
    NotificationLine,
    /// `task_updated` stream lines: a task's end as the CLI marks it.
    TaskUpdated,
    /// A background task's completion delivered inside a model request as a
    /// `<task-notification>` the harness reads.
    NoticeInRequests,
    /// `background_tasks` in Stop and SubagentStop payloads.
    BackgroundTasksInHooks,
}

impl Evidence {
    /// What the version does not print, in words.
    pub fn missing(self) -> &'static str {
        match self {
            Evidence::NotificationLine => "no task_started or task_notification line",
            Evidence::TaskUpdated => "no task_updated line",
            Evidence::NoticeInRequests => "no <task-notification> in any model request",
            Evidence::BackgroundTasksInHooks => "no background_tasks in its Stop payloads",
        }
    }
}

/// One measured range: from `from` on, the version emits `offers`.
struct Row {
    from: (u64, u64, u64),
    offers: &'static [Evidence],
}

use Evidence::*;

/// Claude Code, oldest first (measured on 2.1.0, 2.1.87, 2.1.144, 2.1.219, 2.1.332, 2.1.337;
/// 0.2.9 and 1.0.0 refuse the flags a run needs, 2.0.0 fails at start in the sandbox).
const CLAUDE_CODE: &[Row] = &[
    Row {
        from: (0, 0, 0),
        offers: &[],
    },
    Row {
        from: (2, 1, 87),
        offers: &[NotificationLine, NoticeInRequests],
    },
    Row {
        from: (2, 1, 144),
        offers: &[NotificationLine, NoticeInRequests, TaskUpdated],
    },
    Row {
        from: (2, 1, 219),
        offers: &[
            NotificationLine,
            NoticeInRequests,
            TaskUpdated,
            BackgroundTasksInHooks,
        ],
    },
];

/// opencode, oldest first (measured on 1.15.0, 1.17.0, 1.18.14, 1.18.19, 1.18.20, 1.18.33).
/// Its evidence is the bus events of `/event` or of the observer plugin and `run`'s lines:
/// the child session's start and end on every version, its notice in a request in both of its
/// forms (the plain lines of 1.15.x, the `<task …>` block after); the injection itself (a
/// synthetic message part: the moment the notification fires) only from 1.17.0, whose bus
/// carries message parts (1.15.0's does not). It runs no hooks.
const OPENCODE: &[Row] = &[
    Row {
        from: (0, 0, 0),
        offers: &[TaskUpdated, NoticeInRequests],
    },
    Row {
        from: (1, 17, 0),
        offers: &[NotificationLine, TaskUpdated, NoticeInRequests],
    },
];

/// What one run's CLI, in its driver mode, can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offers {
    /// The version, as the reports name it (`2.1.0`); none when everything is offered.
    version: Option<String>,
    /// The runtime, as prose names it.
    runtime: &'static str,
    offered: Vec<Evidence>,
}

impl Offers {
    /// Everything: the simulator, a binary of unknown version, the tests' timelines.
    pub fn all() -> Offers {
        Offers {
            version: None,
            runtime: "Claude Code",
            offered: vec![
                NotificationLine,
                TaskUpdated,
                NoticeInRequests,
                BackgroundTasksInHooks,
            ],
        }
    }

    /// What the real CLI `version` tells in `mode`: its row of the table, less what the mode
    /// keeps from the harness (a pseudo-terminal prints no stream lines).
    pub fn of_claude(version: &str, mode: DriverMode) -> Offers {
        let Some(v) = numbers(version) else {
            return Offers::all();
        };
        let row = CLAUDE_CODE
            .iter()
            .rev()
            .find(|r| r.from <= v)
            .expect("the first row starts at 0.0.0");
        let streamed = !matches!(mode.row().stdout, Stdout::Screen);
        Offers {
            version: Some(version.to_string()),
            runtime: "Claude Code",
            offered: row
                .offers
                .iter()
                .copied()
                .filter(|e| streamed || *e != NotificationLine && *e != TaskUpdated)
                .collect(),
        }
    }

    /// What opencode `version` tells (both of its modes tell the same, from the server's
    /// events or from the plugin's).
    pub fn of_opencode(version: &str) -> Offers {
        let Some(v) = numbers(version) else {
            return Offers::all();
        };
        let row = OPENCODE
            .iter()
            .rev()
            .find(|r| r.from <= v)
            .expect("the first row starts at 0.0.0");
        Offers {
            version: Some(version.to_string()),
            runtime: "opencode",
            offered: row.offers.to_vec(),
        }
    }

    pub fn has(&self, e: Evidence) -> bool {
        self.offered.contains(&e)
    }

    /// `2.1.0 prints no task_notification line`: why `e`'s absence shows nothing.
    pub fn why_not(&self, e: Evidence) -> String {
        match &self.version {
            Some(v) => format!(
                "{} {v} (in this driver mode) emits {}",
                self.runtime,
                e.missing()
            ),
            None => format!("this run emits {}", e.missing()),
        }
    }
}

/// `2.1.87` (or `2.1.87 (Claude Code)`) as numbers.
fn numbers(version: &str) -> Option<(u64, u64, u64)> {
    let v = semver::Version::parse(version.split_whitespace().next()?).ok()?;
    Some((v.major, v.minor, v.patch))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each measured version falls in its own row; a version between two measured ones is
    /// judged by the older; a mode without a stream offers no stream lines.
    #[test]
    fn each_version_is_judged_by_its_measured_row() {
        let print = DriverMode::Print;
        assert!(!Offers::of_claude("2.1.0", print).has(NotificationLine));
        assert!(Offers::of_claude("2.1.87", print).has(NotificationLine));
        assert!(!Offers::of_claude("2.1.87", print).has(TaskUpdated));
        assert!(!Offers::of_claude("2.1.143", print).has(TaskUpdated));
        assert!(Offers::of_claude("2.1.144", print).has(TaskUpdated));
        assert!(Offers::of_claude("2.1.337", print).has(BackgroundTasksInHooks));
        assert!(!Offers::of_claude("2.1.337", DriverMode::Pty).has(NotificationLine));
        assert_eq!(Offers::of_claude("not-a-version", print), Offers::all());
        assert_eq!(
            Offers::of_claude("2.1.0", print).why_not(NotificationLine),
            "Claude Code 2.1.0 (in this driver mode) emits no task_started or task_notification line"
        );
        // opencode: the firing is seen from 1.17.0, its notice in a request on every version.
        assert!(!Offers::of_opencode("1.15.4").has(NotificationLine));
        assert!(Offers::of_opencode("1.15.0").has(NoticeInRequests));
        assert!(Offers::of_opencode("1.17.0").has(NotificationLine));
        assert!(!Offers::of_opencode("1.18.33").has(BackgroundTasksInHooks));
        assert!(
            Offers::of_opencode("1.15.0")
                .why_not(NotificationLine)
                .starts_with("opencode 1.15.0 ")
        );
    }
}
