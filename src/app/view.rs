//! `wakeprobe view DIR...`: writes the self-contained `index.html` of saved invocation folders
//! (the one `run`, `matrix`, `merge` and `report` also write), from each run's saved result and
//! timeline, without judging or running anything.

use std::path::Path;

use super::{AppResult, invocation};
use crate::classify::result::Summary;
use crate::cli;
use crate::report::html;

/// `wakeprobe view DIR...`
pub fn view(args: &cli::ViewArgs) -> AppResult {
    for dir in &args.dirs {
        let ran = invocation::load_runs(dir, invocation::Judging::AsWritten)?;
        let stored = read_summary(dir);
        let errors = stored
            .as_ref()
            .map(|s| s.setup_errors.clone())
            .unwrap_or_default();
        let mut summary = invocation::summarize(dir, &ran, &errors);
        summary.interrupted = stored.is_some_and(|s| s.interrupted);
        invocation::write_index(dir, &summary, &ran)?;
        println!("{}", dir.join(html::INDEX_FILE).display());
    }
    Ok(cli::Exit::Ok)
}

/// The folder's `summary.json`, for what only it knows (setup errors, an interruption).
fn read_summary(dir: &Path) -> Option<Summary> {
    let bytes = std::fs::read(dir.join("summary.json")).ok()?;
    serde_json::from_slice(&bytes).ok()
}
