//! `claude-sim`: the simulator binary, a stand-in for the Claude Code CLI. All of its logic
//! lives in `wakeprobe::sim`; this only hands over and exits with its code.

fn main() {
    std::process::exit(wakeprobe::sim::main());
}
