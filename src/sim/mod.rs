//! The simulator: a stand-in CLI (`claude-sim`) with one behaviour profile per hypothesis.
//!
//! It is driven exactly like the real CLI (same flags, hooks, stream-json, transcripts) and
//! gives the classifier ground truth, including behaviours no current CLI version shows.

/// Every profile, with its one-line description.
pub const PROFILES: &[(&str, &str)] = &[
    (
        "finalize-on-turn-end",
        "what the seed reports saw: a subagent is finalized when its turn ends and its shell task is orphaned; the top-level session is re-invoked",
    ),
    (
        "fixed",
        "a subagent with live background work is held and re-invoked when the work completes",
    ),
    (
        "drop-notification",
        "H1: background work ends but no notification is ever produced",
    ),
    (
        "queue-until-input",
        "H3: notifications wait until the next user input",
    ),
    (
        "child-error",
        "H4: background work fails on its own (non-zero exit)",
    ),
    ("child-hang", "H4: background work never ends"),
    (
        "teammate-stuck-running",
        "seed 001: an idle teammate stays `running` in background_tasks",
    ),
    (
        "teammate-idle-flag",
        "an idle teammate is marked idle in background_tasks",
    ),
];
