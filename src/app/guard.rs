//! `wakeprobe guard verify`: a guard script against the payload corpus, side by side with seed
//! 000's guard (the project's model of it, or the original from a seed report).

use std::path::PathBuf;

use super::*;
use crate::cli::Exit;

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
    let seed = if with_seed || seed_report.is_some() {
        let (label, body) = seed_guard(seed_report)?;
        let path = work.path().join("seed-000-subagent-stall-guard.sh");
        std::fs::write(&path, body).map_err(|e| AppError::setup(e.to_string()))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| AppError::setup(e.to_string()))?;
        Some((label, Verification::run(&path, &cases)))
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
        if let Some((_, seed)) = &seed {
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
    if let Some((label, seed)) = &seed {
        let (fneg, fpos, errors) = seed.misses(&cases);
        println!(
            "seed 000's guard ({label}): {fneg} false negatives, {fpos} false positives, {errors} errors (findings about that script, not failures of this check)"
        );
    }
    Ok(if mine.passed(&cases) {
        Exit::Ok
    } else {
        Exit::Mismatch
    })
}

/// The seed's guard to compare with, and where it came from: the script in a seed 000 report the
/// user has (`--seed-report`), else the project's own model of it (a plain clone has no report).
fn seed_guard(report: Option<PathBuf>) -> Result<(String, String), AppError> {
    let Some(report) = report else {
        return Ok((
            "wakeprobe's model of it".into(),
            crate::guard::SEED_MODEL.to_string(),
        ));
    };
    let text = std::fs::read_to_string(&report)
        .map_err(|e| AppError::bad_input(format!("{}: {e}", report.display())))?;
    let body = crate::guard::extract_seed_guard(&text).ok_or_else(|| {
        AppError::bad_input(format!(
            "{}: no guard script found in it (a bash block after a \"The hook script\" heading)",
            report.display()
        ))
    })?;
    Ok((format!("from {}", report.display()), body))
}
