//! `wakeprobe import TRANSCRIPT [-o FILE]`: a session transcript (or one of our run folders)
//! as a scenario file. Anything that is not a transcript is one located line and exit 2, with
//! nothing written; record types the importer does not know are skipped and counted in one line.

use std::io::Write;
use std::path::PathBuf;

use super::{AppError, AppResult};
use crate::cli::{Exit, ImportArgs};
use crate::import::{self, Options};

/// `wakeprobe import`
pub fn import(args: &ImportArgs) -> AppResult {
    let from_output = args
        .output
        .as_ref()
        .filter(|o| o.as_os_str() != "-")
        .and_then(|o| o.file_stem())
        .and_then(|s| s.to_str())
        .filter(|s| import::is_scenario_name(s))
        .map(str::to_string);
    let opts = Options {
        mode: args.mode,
        name: args.name.clone().or(from_output),
    };
    let check_output = |path: &std::path::Path, flag: &str| {
        crate::store::output::check_file(path, crate::store::output::forced(args.force), None)
            .map_err(|e| AppError::from(e).prefixed(flag))
    };
    if let Some(path) = args.output.as_ref().filter(|o| o.as_os_str() != "-") {
        check_output(path, "-o ")?;
    }
    if let Some(name) = &opts.name
        && !import::is_scenario_name(name)
    {
        return Err(AppError::bad_input(format!(
            "--name {name}: expected lowercase letters, digits and `-`"
        )));
    }
    let imported =
        import::import(&args.transcript, &opts).map_err(|e| AppError::bad_input(e.to_string()))?;
    if let Some(line) = imported.stats.unknown_line() {
        eprintln!("wakeprobe: {line}");
    }
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.toml", imported.name)));
    if output.as_os_str() == "-" {
        std::io::stdout()
            .write_all(imported.text.as_bytes())
            .map_err(|e| AppError::setup(format!("cannot write the scenario: {e}")))?;
        return Ok(Exit::Ok);
    }
    if args.output.is_none() {
        check_output(&output, "")?;
    }
    crate::store::write_atomic(&output, imported.text.as_bytes())?;
    let s = &imported.stats;
    eprintln!(
        "wrote {}: {} agent(s), {} step(s), {} input(s); run it with: wakeprobe run {}",
        output.display(),
        s.agents,
        s.steps,
        s.inputs,
        output.display()
    );
    Ok(Exit::Ok)
}
