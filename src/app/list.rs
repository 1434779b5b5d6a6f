//! `wakeprobe list`: the scenario library, one line each.

use super::{AppError, AppResult, resolve};
use crate::cli::{self, Exit};
use crate::console::{self, Message};
use crate::scenario;

/// `wakeprobe list`
pub fn list(args: &cli::ListArgs) -> AppResult {
    let dir = match &args.dir {
        Some(dir) if !dir.is_dir() => {
            return Err(AppError::bad_input(format!(
                "--dir {}: not a folder",
                dir.display()
            )));
        }
        Some(dir) => dir.clone(),
        None => resolve::scenarios_dir()?,
    };
    let scenarios = scenario::load_dir(&dir)?;
    let mut table = comfy_table::Table::new();
    table.load_style(comfy_table::presets::NOTHING);
    table.set_header(["scenario", "seed", "variants", "summary"]);
    for s in &scenarios {
        table.add_row([
            s.name.clone(),
            s.seed.clone().unwrap_or_else(|| "-".into()),
            s.variants().join(", "),
            console::printable(&s.summary).into_owned(),
        ]);
        console::emit(&Message::Scenario {
            name: &s.name,
            seed: s.seed.as_deref(),
            variants: s.variants(),
            summary: &s.summary,
            path: s.path.display().to_string(),
        });
    }
    console::say(table);
    // The stream ends with its `summary`, as every command's does (no runs: an empty one).
    console::emit(&Message::Summary {
        dir: dir.display().to_string(),
        matrix: None,
        summary: &crate::classify::result::Summary::build("", &[], &[], false),
        exit_code: Exit::Ok.code(),
        error: None,
    });
    Ok(Exit::Ok)
}
