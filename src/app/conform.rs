//! `wakeprobe conform`: a scenario on the real CLI and on the simulator, timeline shapes
//! compared lane by lane.

use super::*;

pub async fn conform(args: cli::ConformArgs) -> AppResult {
    let scenarios = resolve_scenarios(std::slice::from_ref(&args.scenario))?;
    let real = claude_version(&args.claude_version).await?;
    let sim = sim_cli(&args.profile)?;
    let mut jobs = jobs_for(&scenarios, &args.exec, &real)?;
    jobs.extend(jobs_for(&scenarios, &args.exec, &sim)?);
    let run_dir = run_dir(&args.exec.out);
    let opts = exec_options(&args.exec, &scenarios, run_dir.clone())?;
    let cancel = cancel_on_signals();
    let results = matrix::execute(jobs, &opts, cancel.clone()).await?;
    if *cancel.borrow() {
        return Ok(exit::INTERRUPTED);
    }
    let comparisons =
        crate::conform::compare_cells(&results).map_err(|e| AppError::setup(e.to_string()))?;
    if comparisons.is_empty() {
        return Err(AppError::setup("no run pair finished: nothing to compare"));
    }
    let text: String = comparisons.iter().map(|c| c.render()).collect();
    print!("{text}");
    let store = |name: &str, bytes: &[u8]| {
        crate::report::store::write_atomic(&run_dir.join(name), bytes)
            .map_err(|e| AppError::setup(e.to_string()))
    };
    store("conform.txt", text.as_bytes())?;
    store(
        "conform.json",
        &serde_json::to_vec_pretty(&comparisons).unwrap_or_default(),
    )?;
    eprintln!("reports: {}", run_dir.display());
    Ok(if comparisons.iter().all(|c| c.matches()) {
        exit::OK
    } else {
        exit::MISMATCH
    })
}
