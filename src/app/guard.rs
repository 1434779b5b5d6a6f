//! `wakeprobe guard verify`: a guard script against the payload corpus, side by side with seed
//! 000's original.

use std::path::PathBuf;

use super::*;
use crate::cli::exit;

/// The seed 000 report: `../shared/seeds/000_*.txt` from here or from the source tree.
fn find_seed_report() -> Option<PathBuf> {
    let roots = [
        PathBuf::from(".."),
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."),
    ];
    roots.iter().find_map(|root| {
        std::fs::read_dir(root.join("shared").join("seeds"))
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name().is_some_and(|n| {
                    n.to_string_lossy().starts_with("000_") && n.to_string_lossy().ends_with(".txt")
                })
            })
    })
}

/// `wakeprobe guard verify`
pub fn guard_verify(
    script: Option<PathBuf>,
    with_seed: bool,
    seed_report: Option<PathBuf>,
) -> AppResult {
    use crate::guard::{self, Verification};
    let ours = match script {
        Some(s) => s,
        None => resolve::template_dir(&None, &[])?.join(".claude/hooks/subagent-stall-guard.sh"),
    };
    if !ours.is_file() {
        return Err(AppError::bad_input(format!(
            "{}: no such guard script",
            ours.display()
        )));
    }
    // Transcripts for the corpus and the seed's script live here for the whole verification.
    let work = tempfile::tempdir().map_err(|e| AppError::setup(e.to_string()))?;
    let cases = guard::corpus(work.path());
    let mine = Verification::run(&ours, &cases);
    let seed = if with_seed {
        let report_path = seed_report.or_else(find_seed_report).ok_or_else(|| {
            AppError::bad_input("cannot find seed 000's report (pass --seed-report PATH)")
        })?;
        let text = std::fs::read_to_string(&report_path)
            .map_err(|e| AppError::bad_input(format!("{}: {e}", report_path.display())))?;
        let body = guard::extract_seed_guard(&text).ok_or_else(|| {
            AppError::bad_input(format!(
                "{}: no guard script found in it",
                report_path.display()
            ))
        })?;
        let path = work.path().join("seed-000-subagent-stall-guard.sh");
        std::fs::write(&path, body).map_err(|e| AppError::setup(e.to_string()))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| AppError::setup(e.to_string()))?;
        Some(Verification::run(&path, &cases))
    } else {
        None
    };
    let mut table = comfy_table::Table::new();
    table
        .load_style(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(150);
    let mut header = vec!["case", "expected", "ours", "ok"];
    if seed.is_some() {
        header.push("seed 000's guard");
    }
    table.set_header(header);
    for (i, case) in cases.iter().enumerate() {
        let expected = match case.expected {
            guard::Decision::Block => "block",
            guard::Decision::Pass => "pass",
        };
        let got = &mine.results[i];
        let ok = if *got == guard::Got::Decided(case.expected) {
            "✓"
        } else {
            "✗"
        };
        let mut row = vec![
            crate::evidence::normalize::truncate(&case.name, 70),
            expected.to_string(),
            got.label(),
            ok.to_string(),
        ];
        if let Some(seed) = &seed {
            let s = &seed.results[i];
            let mark = if *s == guard::Got::Decided(case.expected) {
                ""
            } else {
                " (miss)"
            };
            row.push(format!("{}{mark}", s.label()));
        }
        table.add_row(row);
    }
    println!("{table}");
    let (fneg, fpos, errors) = mine.misses(&cases);
    println!(
        "{}: {fneg} false negatives, {fpos} false positives, {errors} errors over {} cases",
        ours.display(),
        cases.len()
    );
    if let Some(seed) = &seed {
        let (fneg, fpos, errors) = seed.misses(&cases);
        println!(
            "seed 000's guard: {fneg} false negatives, {fpos} false positives, {errors} errors (findings about that script, not failures of this check)"
        );
    }
    Ok(if mine.passed(&cases) {
        exit::OK
    } else {
        exit::MISMATCH
    })
}
