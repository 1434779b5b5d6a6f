//! The JUnit files the tests produce, kept for a real schema validator. `cargo test` needs no
//! tool beyond Rust, so here each file is only checked to be well-formed XML and, when
//! `WAKEPROBE_JUNIT_SAMPLES` names a folder, written into it (`TEST-N.xml`); `.ci/run` sets it
//! and validates every sample against `tests/fixtures/junit.xsd` (Jenkins' junit-10 layout,
//! the one CI readers take) with xmllint, beside a real run's file.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Where samples go, when asked.
const SAMPLES: &str = "WAKEPROBE_JUNIT_SAMPLES";

static WRITTEN: AtomicUsize = AtomicUsize::new(0);

/// `xml` parsed (a well-formed document whose root is `<testsuites>`) and kept as a sample
/// for the schema check; the reason otherwise.
pub fn checked_and_kept(xml: &str) -> Result<(), String> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| format!("not well-formed XML: {e}"))?;
    let root = doc.root_element().tag_name().name();
    if root != "testsuites" {
        return Err(format!("the root is <{root}>, not <testsuites>"));
    }
    if let Some(dir) = std::env::var_os(SAMPLES) {
        let test = std::thread::current()
            .name()
            .unwrap_or("test")
            .replace("::", "-");
        let n = WRITTEN.fetch_add(1, Ordering::SeqCst);
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join(format!("{test}-{n}.xml"));
        std::fs::write(&path, xml).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}
