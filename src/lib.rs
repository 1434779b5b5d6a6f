//! wakeprobe: controlled experiments on AI coding-agent CLIs' background-task wake-ups.
//!
//! See `ARCHITECTURE.md` for the flow, the rooms and what each may import; each module's
//! header says what it owns.

#![warn(clippy::too_many_lines)]

pub mod app;
pub mod backend;
pub mod checks;
pub mod classify;
pub mod cli;
pub mod conform;
pub mod console;
pub mod driver;
pub mod evidence;
pub mod fake_api;
pub mod fuzz;
pub mod guard;
pub mod import;
pub mod matrix;
pub mod os;
pub mod report;
pub mod runtime;
pub mod sandbox;
pub mod scenario;
pub mod sim;
pub mod store;
