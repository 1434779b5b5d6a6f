//! An invocation that ends in a setup failure before its summary (the CLI could not be
//! installed, the registry did not answer, the report folder cannot be made) still ends its
//! machine outputs: the JSON stream gets its closing `summary` line with the exit code and the
//! error, and `--junit` gets a file with one `<error>` saying why. A CI reporter then shows
//! the reason instead of a missing file.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::AppError;
use crate::classify::result::Summary;
use crate::console;
use crate::store;

/// Set once the invocation has written its JUnit file: nothing is written over it.
static JUNIT_WRITTEN: AtomicBool = AtomicBool::new(false);

pub fn junit_written() {
    JUNIT_WRITTEN.store(true, Ordering::SeqCst);
}

/// The machine outputs an invocation owes when it fails as `error` before writing them.
pub fn close_outputs(command: &str, junit: Option<&Path>, error: &AppError) {
    if !console::summary_emitted() {
        let summary = Summary::build("", &[], &[], false);
        console::emit(&console::Message::Summary {
            dir: String::new(),
            matrix: None,
            summary: &summary,
            exit_code: error.code.code(),
            error: Some(error.message.clone()),
        });
    }
    if let Some(path) = junit.filter(|_| !JUNIT_WRITTEN.load(Ordering::SeqCst)) {
        let xml = crate::report::junit::render_aborted(command, &error.message);
        if let Err(e) = store::write_atomic(path, xml.as_bytes()) {
            eprintln!("wakeprobe: warning: {e}");
        }
    }
}
