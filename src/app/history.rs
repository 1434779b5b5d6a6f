//! `wakeprobe history`: placeholder.

use super::{AppError, AppResult};
use crate::cli;

pub async fn history(_args: cli::HistoryArgs) -> AppResult {
    Err(AppError::bad_input("not yet"))
}
