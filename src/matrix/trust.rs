//! What a `matrix.json` must be before anything relies on it: a schema this wakeprobe reads,
//! each cell once, names that are plain file names (they become folder names and links), and
//! for a baseline an identity its cells agree with (how it was made is what a comparison
//! checks first). A file that fails is bad input, said before anything is written.

use std::collections::BTreeSet;

use super::grid::{MATRIX_SCHEMA, Matrix};

/// A name that is one plain path component: not empty, not `.` or `..`, no separator, no
/// control character.
fn plain(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\'])
        && !name.chars().any(char::is_control)
}

/// What is wrong with `matrix` as any reader takes it (schema, duplicates, names), first
/// problem first; empty when nothing is.
pub fn problems(matrix: &Matrix) -> Vec<String> {
    let mut out = Vec::new();
    if !(1..=MATRIX_SCHEMA).contains(&matrix.schema) {
        out.push(format!(
            "schema {}: this wakeprobe reads matrix schemas 1 to {MATRIX_SCHEMA}",
            matrix.schema
        ));
    }
    let mut seen = BTreeSet::new();
    for cell in &matrix.cells {
        for name in [&cell.scenario, &cell.variant, &cell.cli_spec] {
            if !plain(name) {
                out.push(format!(
                    "cell {}: `{}` is not a plain file name (it would name a folder)",
                    cell.cell_key(),
                    name.escape_debug()
                ));
            }
        }
        if !seen.insert(cell.key()) {
            out.push(format!("cell {} given twice", cell.cell_key()));
        }
    }
    out
}

/// [`problems`], and what a baseline needs besides: an identity, whose cells hold every cell
/// of the matrix and whose names are plain too.
pub fn baseline_problems(matrix: &Matrix) -> Vec<String> {
    let mut out = problems(matrix);
    let Some(identity) = &matrix.identity else {
        out.push(
            "it records no identity (an older wakeprobe wrote it): how it was made is unknown, so no comparison could check it"
                .into(),
        );
        return out;
    };
    for key in &identity.cells {
        if ![&key.scenario, &key.variant, &key.cli_spec]
            .iter()
            .all(|n| plain(n))
        {
            out.push(format!(
                "its identity names `{}`, not a plain file name",
                key.to_string().escape_debug()
            ));
        }
    }
    for cell in &matrix.cells {
        if !identity.cells.contains(&cell.cell_key()) {
            out.push(format!(
                "cell {} is not in the matrix its identity describes",
                cell.cell_key()
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn baseline() -> Matrix {
        let text = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("baseline/matrix.json"),
        )
        .unwrap();
        serde_json::from_slice(&text).unwrap()
    }

    /// The committed baseline is one; each kind of tampering is named.
    #[test]
    fn a_tampered_matrix_is_named_by_what_is_wrong() {
        let good = baseline();
        assert_eq!(baseline_problems(&good), Vec::<String>::new());
        let mut m = good.clone();
        m.schema = 999;
        assert_eq!(
            problems(&m),
            ["schema 999: this wakeprobe reads matrix schemas 1 to 3"]
        );
        let mut m = good.clone();
        m.cells.push(m.cells[0].clone());
        assert_eq!(
            problems(&m),
            ["cell child-error/session on 2.1.219 given twice"]
        );
        let mut m = good.clone();
        m.cells[0].scenario = "../../etc".into();
        assert!(problems(&m)[0].contains("`../../etc` is not a plain file name"));
        assert!(
            baseline_problems(&m)
                .iter()
                .any(|p| p.contains("not in the matrix its identity describes")),
        );
        let mut m = good;
        m.identity = None;
        assert!(problems(&m).is_empty(), "any reader takes it");
        assert!(baseline_problems(&m)[0].contains("records no identity"));
        for bad in ["", ".", "..", "a/b", "a\\b", "a\nb"] {
            assert!(!plain(bad), "{bad:?}");
        }
        for good in ["latest~3", "sim:fixed", "2.1.219", "top-level-control"] {
            assert!(plain(good), "{good}");
        }
    }
}
