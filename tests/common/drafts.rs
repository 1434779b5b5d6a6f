//! What every issue draft must be, checked on a saved run: a title of one line of at most 80
//! characters (`title.txt`, where the run has something to file, holds it), and a body well
//! under GitHub's 65,536 characters.

use std::path::Path;

use wakeprobe::report::markdown;
use wakeprobe::scenario::Plan;
use wakeprobe::store::saved::SavedRun;

/// The most a title may hold, and the most a body aims for (GitHub's limit less room).
pub const TITLE_MAX: usize = 80;
pub const BODY_MAX: usize = 60_000;

/// What is wrong with the draft of the run in `dir`, judged with `plan` (the run's own, and its
/// written `report.md` and `title.txt`, when `None`); empty when nothing is.
pub fn problems(dir: &Path, plan: Option<&Plan>) -> Vec<String> {
    let saved = SavedRun::load(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut found = Vec::new();
    let (result, body, written_title) = match plan {
        None => (
            saved.written_result(),
            std::fs::read_to_string(dir.join("report.md")).unwrap_or_default(),
            std::fs::read_to_string(dir.join("title.txt")).ok(),
        ),
        Some(plan) => {
            let judgement =
                wakeprobe::classify::judge_run(&saved.info, &saved.timeline, plan, &saved.raw);
            let result = wakeprobe::classify::result::RunResult::new(&saved.info, judgement);
            (result, String::new(), None)
        }
    };
    let plan = plan.unwrap_or(&saved.plan);
    let draft = markdown::Draft {
        result: &result,
        timeline: &saved.timeline,
        plan,
        scenario_source: saved.scenario_source.as_deref(),
        agreement: None,
        picture: Some("timeline.svg"),
    };
    let title = markdown::draft_title(&draft);
    if title.chars().count() > TITLE_MAX || title.contains(['\n', '\r']) || title.is_empty() {
        found.push(format!(
            "title of {} characters: {title}",
            title.chars().count()
        ));
    }
    if let Some(written) = written_title
        && written.trim_end() != title
    {
        found.push(format!(
            "title.txt holds `{}`, not `{title}`",
            written.trim_end()
        ));
    }
    let body = if body.is_empty() {
        markdown::render(&draft)
    } else {
        body
    };
    if body.chars().count() > BODY_MAX {
        found.push(format!("a draft of {} characters", body.chars().count()));
    }
    found
}
