//! End-to-end tests through the built binary: the real CLI and the simulator, the safety and
//! storage promises, bad input, the README's commands. One test binary, so the long runs (each
//! mostly waiting on a CLI) overlap instead of queueing binary after binary; the test threads
//! are set in `.cargo/config.toml`.

#[path = "../common/mod.rs"]
mod common;

mod atomic;
mod bad_input;
mod cache;
mod conform_seed;
mod cut_short;
mod export;
mod faults;
mod fuzz;
mod history;
mod import;
mod install;
mod library;
mod matrix;
mod minimize;
mod outputs;
mod readme;
mod real_cli;
mod safety;
mod sim_fuzz_found;
mod sim_profiles;
mod sim_tools;
mod storage;
mod workflow;
