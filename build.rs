//! Rebuilds when a file is added to or removed from the embedded library (`src/library.rs`):
//! `include_dir!` tracks the contents of the files it saw, not the folders' listings.

fn main() {
    println!("cargo:rerun-if-changed=scenarios");
    println!("cargo:rerun-if-changed=sandbox-project");
}
