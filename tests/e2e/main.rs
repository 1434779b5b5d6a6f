//! End-to-end tests through the built binary: the real CLI and the simulator, the safety and
//! storage promises, bad input, the README's commands and the book's links. One test binary, so the long runs (each
//! mostly waiting on a CLI) overlap instead of queueing binary after binary; the test threads
//! are set in `.cargo/config.toml`.

#[path = "../common/mod.rs"]
mod common;

mod atomic;
mod bad_input;
mod book;
mod cache;
mod channels;
mod conform_seed;
mod cut_short;
mod export;
mod faults;
mod fuzz;
mod guard_unpersisted;
mod history;
mod import;
mod install;
mod integration;
mod invocation_folder;
mod library;
mod lint;
mod matrix;
mod minimize;
mod nightly;
mod opencode;
mod outputs;
mod paused;
mod readme;
mod real_cli;
mod safety;
mod sdk;
mod sim_fuzz_found;
mod sim_profiles;
mod sim_tools;
mod storage;
mod workflow;

/// The library on the pinned CLI, named to sort first: libtest starts tests in name order,
/// and this one, the suite's longest and the largest user of CLI slots, ends the suite
/// soonest when it takes its slots before the stream of short tests does.
#[test]
fn a_library_run_matches_every_expectation_on_the_pinned_cli() {
    library::every_scenario_matches_its_expectation_on_the_pinned_cli();
}
