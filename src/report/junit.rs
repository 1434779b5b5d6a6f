//! JUnit XML: one testcase per cell (scenario variant x CLI), failing when the verdict differs
//! from the scenario's `expect`. Properties carry the verdict, the agreement and the version.

use super::json::{RunResult, Summary};

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

/// One `<testsuite>` per cell (scenario variant x CLI) holding its one `<testcase>`: suite
/// properties carry the verdict, agreement, expectation and CLI version, where the JUnit schema
/// allows properties.
pub fn render(summary: &Summary, results: &[&RunResult]) -> String {
    let failures = summary
        .cells
        .iter()
        .filter(|c| c.matches_expect == Some(false))
        .count();
    let total_time: f64 = results.iter().map(|r| r.run.duration_s).sum();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    xml.push_str(&format!(
        "<testsuites name=\"wakeprobe {}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{total_time:.3}\">\n",
        esc(&summary.run_id),
        summary.cells.len()
    ));
    for cell in &summary.cells {
        let runs: Vec<&&RunResult> = results
            .iter()
            .filter(|r| {
                r.run.scenario == cell.scenario
                    && r.run.variant == cell.variant
                    && r.run.cli_label == cell.cli
            })
            .collect();
        let time: f64 = runs.iter().map(|r| r.run.duration_s).sum();
        let version = runs
            .first()
            .map(|r| {
                r.run
                    .cli_version_reported
                    .clone()
                    .unwrap_or_else(|| r.run.cli_version.clone())
            })
            .unwrap_or_default();
        let failed = usize::from(cell.matches_expect == Some(false));
        let skipped = usize::from(cell.matches_expect.is_none());
        let name = format!("{}/{} on {}", cell.scenario, cell.variant, cell.cli);
        xml.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"1\" failures=\"{failed}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time:.3}\">\n",
            esc(&name)
        ));
        xml.push_str("    <properties>\n");
        let verdict = cell
            .outcome
            .map(|o| o.to_string())
            .unwrap_or_else(|| "flaky".into());
        for (prop, value) in [
            ("verdict", verdict.as_str()),
            ("agreement", cell.agreement.as_str()),
            ("expect", cell.expect.map(|e| e.as_str()).unwrap_or("none")),
            ("cli", cell.cli.as_str()),
            ("cli_version", version.as_str()),
            ("runs", &cell.runs.to_string()),
        ] {
            xml.push_str(&format!(
                "      <property name=\"{prop}\" value=\"{}\"/>\n",
                esc(value)
            ));
        }
        xml.push_str("    </properties>\n");
        xml.push_str(&format!(
            "    <testcase classname=\"wakeprobe.{}\" name=\"{}\" time=\"{time:.3}\">\n",
            esc(&cell.scenario),
            esc(&name)
        ));
        match cell.matches_expect {
            Some(false) => {
                let explanation = runs
                    .iter()
                    .filter_map(|r| r.judgement.primary().map(|v| v.explanation.clone()))
                    .next()
                    .unwrap_or_default();
                xml.push_str(&format!(
                    "      <failure message=\"expected {}, got {}\" type=\"verdict\">{}</failure>\n",
                    esc(cell.expect.map(|e| e.as_str()).unwrap_or("checks to pass")),
                    esc(&cell.agreement),
                    esc(&explanation)
                ));
            }
            None => xml.push_str("      <skipped message=\"the scenario states no expected verdict for this variant\"/>\n"),
            Some(true) => {}
        }
        xml.push_str("    </testcase>\n  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}
