//! Wiring subcommands to the modules that do the work: one file per subcommand, the shared
//! resolution of scenarios, CLIs and folders in [`resolve`], and one writer for what every
//! invocation leaves at its end in [`invocation`]. Errors come back typed with the exit code
//! they map to.

mod aborted;
mod baseline;
mod bisect;
mod cache;
mod clis;
mod conclude;
mod conform;
mod docs;
mod error;
mod export;
mod folder;
mod fuzz;
mod guard;
mod history;
mod import;
mod init;
mod installs;
mod invocation;
mod lint;
mod list;
mod matrix;
mod merge;
mod minimize;
mod nemesis;
mod probe;
mod report;
pub mod resolve;
mod run;
pub mod schema;
mod threshold;
mod view;

use crate::cli::{self, Exit};

pub use error::{AppError, AppResult};

pub use crate::backend::install::human_size;

/// Runs one subcommand.
pub async fn dispatch(command: cli::Command) -> AppResult {
    use cli::Command;
    let stale = crate::sandbox::sweep_stale();
    if stale > 0 {
        tracing::info!(stale, "removed sandboxes left by harnesses that died");
    }
    let json = match &command {
        Command::Run(a) => Some(&a.output),
        Command::List(a) => Some(&a.output),
        Command::Matrix(a) => Some(&a.output),
        Command::Bisect(a) => Some(&a.output),
        Command::Merge(a) => Some(&a.output),
        _ => None,
    }
    .is_some_and(|o| o.message_format == cli::MessageFormat::Json);
    crate::console::set_json(json);
    let closes = match &command {
        Command::Run(a) => Some(("run", a.exec.junit.clone())),
        Command::Matrix(a) => Some(("matrix", a.exec.junit.clone())),
        Command::Merge(a) => Some(("merge", a.junit.clone())),
        _ => None,
    };
    let result = folder::seal_folder(run_subcommand(command).await);
    if let (Err(e), Some((name, junit))) = (&result, closes)
        && e.code == Exit::Setup
    {
        aborted::close_outputs(name, junit.as_deref(), e);
    }
    result
}

async fn run_subcommand(command: cli::Command) -> AppResult {
    use cli::Command;
    match command {
        Command::Run(args) => run::run(args).await,
        Command::List(args) => list::list(&args),
        Command::Lint(args) => lint::lint(&args),
        Command::Cache(command) => cache::cache(command),
        Command::Report(args) => report::report(&args),
        Command::View(args) => view::view(&args),
        Command::Matrix(args) => matrix::matrix(args).await,
        Command::Merge(args) => merge::merge(&args),
        Command::Baseline(cli::BaselineCommand::Update { matrix, baseline }) => {
            baseline::update(&matrix, &baseline)
        }
        Command::Bisect(args) => bisect::bisect(args).await,
        Command::History(args) => history::history(args).await,
        Command::Threshold(args) => threshold::threshold(args).await,
        Command::Conform(args) => conform::conform(args).await,
        Command::Fuzz(args) => fuzz::fuzz(args).await,
        Command::Nemesis(args) => nemesis::nemesis(args).await,
        Command::Export(args) => export::export(&args).await,
        Command::Import(args) => import::import(&args),
        Command::Minimize(args) => minimize::minimize(args).await,
        Command::Init(args) => init::init(&args),
        Command::Completions(args) => docs::completions(&args),
        Command::Man(args) => docs::man(&args),
        Command::Guard(cli::GuardCommand::Verify {
            script,
            with_seed,
            seed_report,
        }) => guard::guard_verify(script, with_seed, seed_report),
        Command::HookRecord(_) | Command::Track(_) | Command::Supervise(_) | Command::CliTap(_) => {
            unreachable!("helpers are handled before the runtime starts")
        }
    }
}
