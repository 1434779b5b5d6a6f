//! Rebuilds when a file is added to or removed from the embedded library (`src/library.rs`):
//! `include_dir!` tracks the contents of the files it saw, not the folders' listings. Also
//! names each build of the sources (`WAKEPROBE_BUILD_ID`), so `wakeprobe` can tell a
//! `wakeprobe-helper` of its own build from one a partial build left behind (`cargo run`
//! rebuilds only the binary it runs).

use std::time::{SystemTime, UNIX_EPOCH};

fn main() {
    println!("cargo:rerun-if-changed=scenarios");
    println!("cargo:rerun-if-changed=sandbox-project");
    println!("cargo:rerun-if-changed=src");
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    println!("cargo:rustc-env=WAKEPROBE_BUILD_ID={nanos}");
}
