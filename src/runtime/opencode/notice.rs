//! How opencode's notification shows in a model request, read into the same [`Notification`]
//! Claude Code's `<task-notification>` becomes.
//!
//! From 1.15.13 the delivery is a block `<task id="ses_…" state="completed">` (or
//! `state="error"`, from 1.18.20, for a child whose model call failed); 1.15.0 to 1.15.4 write
//! plain lines, `Background task completed: …` then `task_id: ses_…` and `state: completed`.
//! The `task` call's own result has the same shape with `state="running"` (`state: running`):
//! that is the launch's acknowledgement, not a notification, and is left out.

use std::sync::OnceLock;

use regex::Regex;

use crate::evidence::Notification;

/// The launch's acknowledgement: the task runs.
const RUNNING: &str = "running";

/// Every notification in `text`, each once, in order.
pub fn notifications(text: &str) -> Vec<Notification> {
    static BLOCK: OnceLock<Regex> = OnceLock::new();
    static LINES: OnceLock<Regex> = OnceLock::new();
    let block = BLOCK.get_or_init(|| {
        Regex::new(r#"<task id="(ses_[A-Za-z0-9]+)" state="([a-z_]+)">"#).expect("a valid regex")
    });
    let lines = LINES.get_or_init(|| {
        Regex::new(r"(?m)^task_id: (ses_[A-Za-z0-9]+)[^\n]*\nstate: ([a-z_]+)")
            .expect("a valid regex")
    });
    let mut found: Vec<(usize, Notification)> = block
        .captures_iter(text)
        .chain(lines.captures_iter(text))
        .filter(|c| &c[2] != RUNNING)
        .map(|c| {
            let at = c.get(0).map_or(0, |m| m.start());
            let n = Notification {
                task_id: c[1].to_string(),
                status: Some(c[2].to_string()),
                tool_use_id: None,
                event: None,
            };
            (at, n)
        })
        .collect();
    found.sort_by_key(|(at, _)| *at);
    let mut out: Vec<Notification> = Vec::new();
    for (_, n) in found {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // As 1.18.33 sends them (`fixtures/a_sleep6-serve-1.18.33`, `b_api400-serve-1.18.33`).
    const LAUNCH: &str = "<task id=\"ses_db70826fbffex8i7nmtUAekj5l\" state=\"running\">\n<summary>Background task started</summary>\n<task_result>\nThe task is working in the background. You will be notified automatically when it finishes.\n</task_result>\n</task>";
    const DONE: &str = "<task id=\"ses_db70826fbffex8i7nmtUAekj5l\" state=\"completed\">\n<summary>Background task completed: sleep worker</summary>\n<task_result>\nWORKER RESULT: slept 6 s.\n</task_result>\n</task>";
    const FAILED: &str = "<task id=\"ses_db7066b4affeDDnQcCpf8Vk\" state=\"error\">\n<summary>Background task failed: sleep worker</summary>\n<task_error>\nSubagent failed (task_id: ses_db7066b4affeDDnQcCpf8Vk): fake: invalid request\n</task_error>\n</task>";
    // 1.15.0's plain lines.
    const OLD_LAUNCH: &str = "task_id: ses_db6eda8c6ffebrQHIsTA7CT0Rx (for polling this task with task_status)\nstate: running\n\n<task_result>\nBackground task started.\n</task_result>";
    const OLD_DONE: &str = "Background task completed: sleep worker\ntask_id: ses_db6eda8c6ffebrQHIsTA7CT0Rx\nstate: completed\n\n<task_result>\nWORKER RESULT\n</task_result>";

    #[test]
    fn deliveries_are_notifications_and_launches_are_not() {
        assert!(notifications(LAUNCH).is_empty());
        assert!(notifications(OLD_LAUNCH).is_empty());
        let both = notifications(&format!("{LAUNCH}\n{DONE}\n{FAILED}"));
        let said: Vec<(&str, Option<&str>)> = both
            .iter()
            .map(|n| (n.task_id.as_str(), n.status.as_deref()))
            .collect();
        assert_eq!(
            said,
            [
                ("ses_db70826fbffex8i7nmtUAekj5l", Some("completed")),
                ("ses_db7066b4affeDDnQcCpf8Vk", Some("error")),
            ]
        );
        let old = notifications(&format!("{OLD_LAUNCH}\n\n{OLD_DONE}"));
        assert_eq!(old.len(), 1);
        assert_eq!(old[0].task_id, "ses_db6eda8c6ffebrQHIsTA7CT0Rx");
        assert_eq!(old[0].status.as_deref(), Some("completed"));
        // Claude Code's form is not opencode's.
        assert!(
            notifications("<task-notification><task-id>b1</task-id></task-notification>")
                .is_empty()
        );
    }
}
