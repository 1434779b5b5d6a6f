//! The `wakeprobe` binary: parse, run, map the outcome to a documented exit code.

use clap::Parser;
use wakeprobe::app::{self, AppError};
use wakeprobe::cli::{Cli, Command, Exit};
use wakeprobe::console::printable;

fn main() {
    let cli = Cli::parse();
    // Fixed now, before anything can replace the file (see `wakeprobe_binary`).
    let _ = wakeprobe::backend::wakeprobe_binary();
    // The helpers run inside the CLI under test: no runtime, no logging, minimal start-up.
    match &cli.command {
        Command::HookRecord(args) => {
            wakeprobe::evidence::recorder::record_hook(&args.socket, &args.fallback);
            std::process::exit(0);
        }
        Command::Track(args) => {
            let status = wakeprobe::evidence::recorder::track(
                &args.socket.socket,
                &args.socket.fallback,
                &args.name,
                &args.command,
            );
            wakeprobe::evidence::recorder::exit_like(&status);
        }
        Command::CliTap(args) => {
            let (program, rest) = args.command.split_first().expect("clap requires a command");
            let status = wakeprobe::evidence::tap::tap(
                &args.socket.socket,
                &args.socket.fallback,
                program,
                rest,
            );
            wakeprobe::evidence::recorder::exit_like(&status);
        }
        Command::Supervise(args) => {
            let (program, rest) = args.command.split_first().expect("clap requires a command");
            std::process::exit(wakeprobe::driver::supervise::supervise(
                wakeprobe::driver::supervise::SuperviseArgs {
                    events: args.events.clone(),
                    pty: args.pty,
                    program: program.clone(),
                    args: rest.to_vec(),
                },
            ));
        }
        _ => {}
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            std::process::exit(Exit::Setup.code());
        }
    };
    if let Err(AppError { code, message }) =
        app::resolve::choose_scenarios_dir(cli.scenarios_dir.clone())
    {
        eprintln!("error: {}", printable(&message));
        std::process::exit(code.code());
    }
    let code = match runtime.block_on(app::dispatch(cli.command)) {
        Ok(code) => code,
        Err(AppError { code, message }) => {
            // Messages echo what the user gave (names, paths): never raw on a terminal.
            eprintln!("error: {}", printable(&message));
            code
        }
    };
    std::process::exit(code.code());
}
