//! opencode, the runtime of seed 003 (`opencode-ai` on npm), with background subagents on.
//!
//! Print mode is `opencode run --format json` with the prompt on stdin (in the arguments it
//! would arrive quoted); the process ends when the main session goes idle and cancels what is
//! still running. Session mode is `opencode serve` on loopback, fed over its HTTP API
//! (`serve`). Its evidence: `run`'s JSON lines, `/event`, and an observer plugin loaded into
//! every run (`sandbox`), read by `normalize`; its notification in a request by `notice`; its
//! versions and installs by `install`.

pub mod install;
pub mod normalize;
pub mod notice;
pub mod sandbox;
pub mod serve;

use super::{Start, StartArgs, StdinUse};
use crate::evidence::runtime::RuntimeEvidence;
use crate::scenario::DriverMode;

/// The version the notes were measured on.
pub const PINNED_VERSION: &str = "1.18.33";

/// `opencode@1.18.33`
pub fn spec_of(version: &str) -> String {
    super::qualified(super::Runtime::Opencode, version)
}

/// `run --format json` (the prompt on stdin), or `serve` on the harness's port.
pub fn start(s: &StartArgs) -> Start {
    let mut args = s.cli.leading_args.clone();
    let stdin = match s.port {
        Some(port) => {
            args.extend(
                [
                    "serve",
                    "--port",
                    &port.to_string(),
                    "--hostname",
                    "127.0.0.1",
                ]
                .map(str::to_string),
            );
            StdinUse::Null
        }
        None => {
            args.extend(["run", "--format", "json"].map(str::to_string));
            StdinUse::Prompt
        }
    };
    Start { args, stdin }
}

/// The reader of a run's evidence: bus events from the plugin in print mode (run has no
/// server), from `/event` in a session.
pub fn evidence(origin_unix_ms: f64, mode: DriverMode) -> Option<Box<dyn RuntimeEvidence>> {
    Some(Box::new(normalize::OpencodeEvidence::new(
        origin_unix_ms,
        mode != DriverMode::Session,
    )))
}
