//! `wakeprobe init DIR`: the built-in scenario library and sandbox-project written out for
//! editing. Run from DIR (or with `--scenarios-dir DIR/scenarios`), wakeprobe uses them.

use super::{AppError, AppResult};
use crate::cli::{Exit, InitArgs};
use crate::console;
use crate::scenario::library::{self, WriteOutError};

/// `wakeprobe init DIR [--force]`
pub fn init(args: &InitArgs) -> AppResult {
    let written = library::write_out(&args.dir, args.force).map_err(|e| match e {
        WriteOutError::Exists(_) => AppError::bad_input(format!("{}: {e}", args.dir.display())),
        WriteOutError::Io(e) => {
            AppError::setup(format!("cannot write into {}: {e}", args.dir.display()))
        }
    })?;
    let dir = args.dir.display();
    console::say(format!(
        "wrote {} files: {dir}/{}/ and {dir}/{}/\n\
         edit them, then run from {dir} (`cd {dir} && wakeprobe run`), or pass \
         --scenarios-dir {dir}/{}",
        written.len(),
        library::SCENARIOS_DIR,
        library::SANDBOX_DIR,
        library::SCENARIOS_DIR,
    ));
    Ok(Exit::Ok)
}
