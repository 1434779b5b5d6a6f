//! `wakeprobe completions SHELL` and `wakeprobe man`: generated from the command-line
//! definition itself (clap_complete, clap_mangen), so they never drift from it.

use std::io::Write;

use clap::CommandFactory;

use super::{AppError, AppResult};
use crate::cli::{Cli, CompletionsArgs, Exit, ManArgs};

/// `wakeprobe completions SHELL`: the script on stdout.
pub fn completions(args: &CompletionsArgs) -> AppResult {
    let mut command = Cli::command();
    // Into memory first: clap_complete panics when its writer fails (`| head`).
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "wakeprobe", &mut script);
    let mut out = std::io::stdout().lock();
    match out.write_all(&script).and_then(|()| out.flush()) {
        Ok(()) => Ok(Exit::Ok),
        // A reader that went away has what it wanted.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Exit::Ok),
        Err(e) => Err(AppError::setup(format!(
            "cannot write the completions: {e}"
        ))),
    }
}

/// `wakeprobe man [--dir DIR]`: `wakeprobe.1` on stdout, or every page into DIR.
pub fn man(args: &ManArgs) -> AppResult {
    let command = Cli::command();
    let written = match &args.dir {
        Some(dir) => std::fs::create_dir_all(dir)
            .and_then(|()| clap_mangen::generate_to(command, dir))
            .map(|()| format!("man pages: {}", dir.display())),
        None => {
            let mut page = Vec::new();
            let mut out = std::io::stdout().lock();
            clap_mangen::Man::new(command)
                .render(&mut page)
                .and_then(|()| out.write_all(&page))
                .and_then(|()| out.flush())
                .or_else(|e| match e.kind() {
                    std::io::ErrorKind::BrokenPipe => Ok(()),
                    _ => Err(e),
                })
                .map(|()| String::new())
        }
    }
    .map_err(|e| AppError::setup(format!("cannot write the man page: {e}")))?;
    if !written.is_empty() {
        eprintln!("{written}");
    }
    Ok(Exit::Ok)
}
