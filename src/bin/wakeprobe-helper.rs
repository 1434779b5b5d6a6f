//! `wakeprobe-helper`: the recorder and tracker the sandbox runs inside the CLI under test
//! (`hook-record`, `track`), as a small binary. A hook runs at every event the CLI fires, so its
//! start-up is paid dozens of times a run, on the CLI's own clock: this binary links neither the
//! argument parser nor the runtime of `wakeprobe`, which still answers the same two commands
//! where this one is not installed beside it.

fn main() {
    std::process::exit(wakeprobe::evidence::recorder::helper_main(
        std::env::args_os().skip(1).collect(),
    ));
}
