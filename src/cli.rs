//! Command-line definitions (clap) and exit codes. No logic lives here beyond parsing.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::driver::netns::NetworkPolicy;

/// The documented exit codes: one variant each, its number and its meaning in words (the
/// `--help` text and the book's table are made from these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Exit {
    /// Every run finished and matched its scenario's `expect`.
    Ok,
    /// A run's verdict differs from its scenario's `expect`, or a check failed.
    Mismatch,
    /// Bad input: arguments, a scenario file, a baseline file.
    BadInput,
    /// The harness could not set up: install, sandbox, spawn.
    Setup,
    /// A cell's verdict got worse against the baseline, or a cell of the baseline is missing
    /// from the run (lost coverage).
    Regression,
    /// Against the baseline nothing got worse, something got better.
    Improvement,
    /// Incomplete: the shards of a merge do not make one whole matrix, or `history` stopped
    /// before every change point was pinned down.
    Incomplete,
    /// A verdict's claim contradicts its own timeline: a bug in wakeprobe's rules (the run is
    /// `unknown` and not filed).
    Contradiction,
    /// Interrupted by SIGINT (Ctrl-C), SIGTERM or SIGHUP (what finished is written).
    Interrupted,
}

impl Exit {
    pub const ALL: [Exit; 9] = [
        Exit::Ok,
        Exit::Mismatch,
        Exit::BadInput,
        Exit::Setup,
        Exit::Regression,
        Exit::Improvement,
        Exit::Incomplete,
        Exit::Contradiction,
        Exit::Interrupted,
    ];

    /// The process's exit status.
    pub const fn code(self) -> i32 {
        match self {
            Exit::Ok => 0,
            Exit::Mismatch => 1,
            Exit::BadInput => 2,
            Exit::Setup => 3,
            Exit::Regression => 4,
            Exit::Improvement => 5,
            Exit::Incomplete => 6,
            Exit::Contradiction => 7,
            Exit::Interrupted => 130,
        }
    }

    /// What the code means, in the words `--help` prints.
    pub fn meaning(self) -> &'static str {
        match self {
            Exit::Ok => "every run finished and matched its scenario's expected verdict",
            Exit::Mismatch => "a verdict differs from `expect`, or a check failed",
            Exit::BadInput => "bad input (arguments, scenario file, baseline)",
            Exit::Setup => "setup failed (CLI install, sandbox, spawn)",
            Exit::Regression => {
                "matrix/merge --baseline, history --append: a verdict regressed, or a cell of the baseline is missing from the run (lost coverage)"
            }
            Exit::Improvement => {
                "matrix/merge --baseline, history --append: no regression, an improvement"
            }
            Exit::Incomplete => {
                "merge: a shard or a cell is missing (what was given is merged and written), a shard is given twice, or the shards belong to different matrices (nothing is written); history: stopped by --max-installs before every change was pinned down (what was found is written)"
            }
            Exit::Contradiction => {
                "wakeprobe contradicted itself: a verdict's claim disagrees with its own timeline (a bug in wakeprobe's rules; the run is unknown and not filed)"
            }
            Exit::Interrupted => {
                "interrupted by SIGINT, SIGTERM or SIGHUP (what finished is written)"
            }
        }
    }
}

/// `--help`'s closing section: every exit code and its meaning.
fn exit_codes_help() -> String {
    let mut text = String::from("Exit codes:");
    for exit in Exit::ALL {
        text.push_str(&format!("\n  {:<4} {}", exit.code(), exit.meaning()));
    }
    text
}

#[derive(Debug, Parser)]
#[command(
    name = "wakeprobe",
    version,
    about = "Controlled experiments on AI coding-agent CLIs: does background work wake the agent that waits for it?",
    after_help = exit_codes_help()
)]
pub struct Cli {
    /// The scenario library to use, before `./scenarios` and the library built into the binary.
    #[arg(
        long,
        global = true,
        env = "WAKEPROBE_SCENARIOS_DIR",
        value_name = "DIR"
    )]
    pub scenarios_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run scenarios against one CLI and write timelines, verdicts and reports.
    Run(RunArgs),
    /// List the scenarios with their one-line summary and seed.
    List(ListArgs),
    /// Check scenario files without running them: what does not load, and keys that are stale.
    Lint(LintArgs),
    /// Re-render every report of saved runs, without running anything.
    Report(ReportArgs),
    /// Write a browsable, self-contained `index.html` into saved run folders (no server needed).
    View(ViewArgs),
    /// Run scenarios across CLI versions (versions x scenarios x repeats).
    Matrix(MatrixArgs),
    /// Find the first published version whose verdict differs.
    Bisect(BisectArgs),
    /// Every change point of a scenario's behaviour across the published releases.
    History(HistoryArgs),
    /// The value of a numeric parameter at which a scenario's verdict flips.
    Threshold(ThresholdArgs),
    /// Combine shard outputs (`matrix --shard i/n`) into one matrix.
    Merge(MergeArgs),
    /// Manage the committed baseline.
    #[command(subcommand)]
    Baseline(BaselineCommand),
    /// The stall guard hook.
    #[command(subcommand)]
    Guard(GuardCommand),
    /// Compare a scenario's timeline shape on the real CLI and on the simulator.
    Conform(ConformArgs),
    /// Differential testing: generated scenarios on the real CLI and on the simulator.
    Fuzz(FuzzArgs),
    /// A scenario clean and under each fault (API, process, crash) aimed at its handoff: what
    /// each fault does to the wake-up.
    Nemesis(NemesisArgs),
    /// The cache of installed CLI versions.
    #[command(subcommand)]
    Cache(CacheCommand),
    /// Write a scenario as one standalone Node script reproducing it (for upstream reports).
    Export(ExportArgs),
    /// Turn a session transcript (or one of our run folders) into a scenario file.
    Import(ImportArgs),
    /// Shrink a scenario to the few steps that still give the same verdict (delta debugging).
    Minimize(MinimizeArgs),
    /// Write the built-in scenario library and sandbox-project into DIR, for editing.
    Init(InitArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Print the man page, or write one per subcommand into a folder.
    Man(ManArgs),
    /// (internal) Record a hook payload from stdin.
    #[command(hide = true)]
    HookRecord(HelperSocket),
    /// (internal) Run a command under the task tracker.
    #[command(hide = true)]
    Track(TrackArgs),
    /// (internal) Supervise a CLI process tree.
    #[command(hide = true, name = "__supervise")]
    Supervise(SuperviseArgs),
    /// (internal) Run the CLI for an integration, reporting every line between them.
    #[command(hide = true)]
    CliTap(CliTapArgs),
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum MessageFormat {
    /// Tables and prose on stdout.
    #[default]
    Human,
    /// One JSON object a line on stdout; the human output goes to stderr.
    Json,
}

/// The output format of a subcommand that scripts read.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// `json`: one JSON object a line on stdout (run started, run finished with its verdict
    /// and report, summary); the human output moves to stderr.
    #[arg(long, value_enum, default_value_t = MessageFormat::Human)]
    pub message_format: MessageFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendChoice {
    /// The real Claude Code CLI.
    Claude,
    /// The claude-sim simulator.
    Sim,
}

/// Which CLI to run.
#[derive(Debug, Clone, Args)]
pub struct BackendArgs {
    /// The backend.
    #[arg(long, value_enum, default_value_t = BackendChoice::Claude)]
    pub backend: BackendChoice,
    /// The runtime to run every scenario on (default: each scenario's own, `runtime = ...`,
    /// Claude Code when it names none): claude-code, or opencode (`opencode-ai`, installed
    /// into the cache on first use, pinned 1.18.33).
    #[arg(long, value_enum, value_name = "RUNTIME")]
    pub runtime: Option<crate::scenario::Runtime>,
    /// Version of the runtime to run (installed into the cache on first use): X.Y.Z, latest,
    /// latest~K; for Claude Code over both channels (the claude-code package, and builds only
    /// the Agent SDK's platform package carries) [default: the pinned version, 2.1.332 for
    /// Claude Code, 1.18.33 for opencode]. Not with --backend sim.
    #[arg(
        long,
        visible_alias = "cli-version",
        value_name = "VERSION",
        conflicts_with = "claude_bin"
    )]
    pub claude_version: Option<String>,
    /// Run this Claude Code binary instead of a cached version. Not with --backend sim.
    #[arg(long, value_name = "PATH")]
    pub claude_bin: Option<PathBuf>,
    /// Simulator behaviour profile; needs --backend sim [default: finalize-on-turn-end].
    #[arg(long)]
    pub profile: Option<String>,
}

/// The simulator's profile when `--profile` is not given.
pub const DEFAULT_PROFILE: &str = "finalize-on-turn-end";

impl BackendArgs {
    /// A flag that means nothing with the chosen backend, if one is given: a simulator run
    /// ignores the CLI's version and binary, a real CLI run the simulator's profile.
    pub fn pointless_flag(&self) -> Option<String> {
        match self.backend {
            BackendChoice::Sim if self.claude_version.is_some() => Some(
                "--claude-version has no meaning with --backend sim: the simulator stands in for the CLI (its behaviour is --profile)".into(),
            ),
            BackendChoice::Sim if self.claude_bin.is_some() => Some(
                "--claude-bin has no meaning with --backend sim: the simulator stands in for the CLI (its behaviour is --profile)".into(),
            ),
            BackendChoice::Claude if self.profile.is_some() => Some(
                "--profile chooses the simulator's behaviour: it needs --backend sim".into(),
            ),
            BackendChoice::Sim if self.runtime.is_some_and(|r| r != crate::scenario::Runtime::ClaudeCode) => Some(
                "--runtime: the simulator stands in for Claude Code only".into(),
            ),
            BackendChoice::Claude if self.claude_bin.is_some() && self.runtime.is_some_and(|r| r != crate::scenario::Runtime::ClaudeCode) => Some(
                "--claude-bin runs a Claude Code binary: not with --runtime opencode".into(),
            ),
            _ => None,
        }
    }

    /// `--claude-version`, or the pinned version.
    pub fn version(&self) -> &str {
        self.claude_version
            .as_deref()
            .unwrap_or(crate::backend::PINNED_VERSION)
    }

    /// The version spec for `runtime`: `--cli-version` (or the runtime's pinned version),
    /// qualified with a runtime other than Claude Code (`opencode@1.18.33`).
    pub fn version_on(&self, runtime: crate::scenario::Runtime) -> String {
        let version = self
            .claude_version
            .as_deref()
            .unwrap_or(crate::runtime::Adapter::of(runtime).pinned);
        crate::runtime::qualified(runtime, version)
    }

    /// `--profile`, or the default profile.
    pub fn profile(&self) -> &str {
        self.profile.as_deref().unwrap_or(DEFAULT_PROFILE)
    }
}

/// How runs are carried out and where they go.
#[derive(Debug, Clone, Args)]
pub struct ExecArgs {
    /// Only these variants (default: every variant of each scenario).
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Set a scenario parameter, e.g. --set bg_seconds=3 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub sets: Vec<(String, String)>,
    /// Allow --set values outside the range where a scenario's expected verdict holds; such
    /// runs have no expected verdict.
    #[arg(long)]
    pub explore: bool,
    /// Inject a fault, as a `[[faults]]` table written KEY=VALUE,...: e.g.
    /// --fault kind=overloaded-529,on=notification,times=2 or
    /// --fault kind=crash-cli,work=bg,after_seconds=1 (repeatable; applies to every chosen
    /// scenario that has the fault's agent or work).
    #[arg(long = "fault", value_name = "SPEC")]
    pub faults: Vec<String>,
    /// Run every scenario through this driver instead of its own: `sdk` (the TypeScript Agent
    /// SDK) or `sdk-py` (the Python one). A print-mode variant goes through the SDK's string
    /// prompt, a session variant through its streaming input; a pty variant, or an input the
    /// SDK has no call for, is refused before anything runs.
    #[arg(long, value_name = "MODE")]
    pub driver: Option<crate::scenario::DriverMode>,
    /// The TypeScript Agent SDK release the `sdk` driver runs (installed into the cache once).
    #[arg(long, value_name = "VERSION", default_value = crate::backend::sdk::PINNED_TS)]
    pub sdk_version: String,
    /// The Python Agent SDK release (`claude-agent-sdk` on PyPI) the `sdk-py` driver runs.
    #[arg(long, value_name = "VERSION", default_value = crate::backend::sdk::PINNED_PY)]
    pub sdk_py_version: String,
    /// Pass ARG to the CLI under test after the harness's own arguments (repeatable; a flag's
    /// value is one more --cli-arg), e.g. --cli-arg=--no-session-persistence. Recorded in each
    /// run's run.json and repro command.
    #[arg(long = "cli-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub cli_args: Vec<String>,
    /// Repetitions of each run; their verdicts' agreement is reported.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Runs at the same time (default: 4 per CPU, at least 8; runs mostly wait).
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// Folder for reports (a run-id folder is created inside).
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
    /// Also write a JUnit XML file.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Keep each run's sandbox folder (also WAKEPROBE_KEEP=1).
    #[arg(long)]
    pub keep: bool,
    /// Network isolation of the CLI.
    #[arg(long, value_enum, default_value_t = NetworkPolicy::Auto)]
    pub network: NetworkPolicy,
    /// The project template copied into every sandbox.
    #[arg(long, value_name = "DIR")]
    pub template: Option<PathBuf>,
    /// No progress display and no start lines: one line per finished run (for a CI log).
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario files or names, each optionally NAME/VARIANT (default: every scenario in
    /// scenarios/).
    pub scenarios: Vec<String>,
    #[command(flatten)]
    pub backend: BackendArgs,
    #[command(flatten)]
    pub exec: ExecArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Folder holding the scenario files (default: the invocation's library, as
    /// `--scenarios-dir` chooses it).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct LintArgs {
    /// Scenario files, or folders of them (each `*.toml` but `invariants.toml`).
    #[arg(required = true, value_name = "FILE")]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The folder to write `scenarios/` and `sandbox-project/` into (created if needed).
    pub dir: PathBuf,
    /// Overwrite files that already exist.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write `wakeprobe.1` and one `wakeprobe-SUBCOMMAND.1` per subcommand into this folder
    /// (default: print `wakeprobe.1` on stdout).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run folders (a run-id folder, or one run's folder).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ViewArgs {
    /// Invocation folders (a run-id folder as `run`, `matrix` or `merge` wrote it), or a
    /// folder above several.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// Versions: X.Y.Z, latest, latest~K, comma-separated (of the --runtime; a version of
    /// another runtime is written `opencode@1.18.33`) [default: each runtime's pinned version].
    #[arg(long, value_delimiter = ',')]
    pub versions: Vec<String>,
    /// The runtimes whose versions the columns are, comma-separated: claude-code, opencode
    /// [default: claude-code]. With two or more, each runs its pinned version unless
    /// --versions names them (`2.1.332,opencode@1.18.33`).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "RUNTIME")]
    pub runtime: Vec<crate::scenario::Runtime>,
    /// Scenarios: names or files, comma-separated, or `all`.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub scenarios: Vec<String>,
    /// A previous matrix.json: changed verdicts are listed first and set the exit code; a cell
    /// it has and this matrix lacks fails (lost coverage). One made another way (backend,
    /// --set values, --repeat, run settings) is refused.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Compare with a baseline made another way all the same (on purpose), saying how.
    #[arg(long, requires = "baseline")]
    pub compare_across_settings: bool,
    /// Run only shard I of N (deterministic split of cells), e.g. 2/3.
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<(usize, usize)>,
    /// Take SPEC (`latest`, `latest~K`) to mean VERSION instead of asking the registry, e.g.
    /// --resolve latest=2.1.337,latest~3=2.1.334: every shard of a nightly runs the versions
    /// its first job resolved once (comma-separated or repeated).
    #[arg(long, value_name = "SPEC=VERSION", value_parser = parse_key_value, value_delimiter = ',')]
    pub resolve: Vec<(String, String)>,
    /// Map versions to simulator profiles (VERSION=PROFILE, repeatable) instead of installing.
    #[arg(long = "sim-version", value_name = "V=PROFILE", value_parser = parse_key_value)]
    pub sim_versions: Vec<(String, String)>,
    #[command(flatten)]
    pub exec: ExecArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct BisectArgs {
    /// Scenario file or name.
    pub scenario: String,
    /// A version with the old verdict.
    #[arg(long)]
    pub good: String,
    /// A version with the new verdict.
    #[arg(long)]
    pub bad: String,
    /// The runtime whose versions to search: claude-code (both channels), or opencode.
    #[arg(long, value_enum, default_value_t = crate::scenario::Runtime::ClaudeCode)]
    pub runtime: crate::scenario::Runtime,
    /// The versions to search (default: every published one, over both channels); comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub versions: Vec<String>,
    /// Map versions to simulator profiles (VERSION=PROFILE) instead of installing.
    #[arg(long = "sim-version", value_name = "V=PROFILE", value_parser = parse_key_value)]
    pub sim_versions: Vec<(String, String)>,
    #[command(flatten)]
    pub exec: ExecArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct ThresholdArgs {
    /// Scenario (name or file), optionally with its variant: NAME/VARIANT.
    pub target: String,
    /// The numeric parameter to search (it may leave its declared range: that is the point).
    #[arg(long)]
    pub param: String,
    /// One end of the search, with one verdict.
    #[arg(long, allow_hyphen_values = true)]
    pub from: f64,
    /// The other end, with another verdict.
    #[arg(long, allow_hyphen_values = true)]
    pub to: f64,
    /// The grid step (default: a power of ten near a hundredth of the span).
    #[arg(long)]
    pub precision: Option<f64>,
    #[command(flatten)]
    pub backend: BackendArgs,
    #[command(flatten)]
    pub exec: ExecArgs,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Scenario variants to track: NAME, NAME/VARIANT, a file, or `all` (also --scenarios).
    pub targets: Vec<String>,
    /// Scenarios, comma-separated, or `all`.
    #[arg(long, value_delimiter = ',')]
    pub scenarios: Vec<String>,
    /// The runtime whose releases to follow: claude-code (both channels), or opencode.
    #[arg(long, value_enum, default_value_t = crate::scenario::Runtime::ClaudeCode)]
    pub runtime: crate::scenario::Runtime,
    /// The oldest release (required unless --append gives it).
    #[arg(long)]
    pub from: Option<String>,
    /// The newest release: X.Y.Z, latest or latest~K.
    #[arg(long, default_value = "latest")]
    pub to: String,
    /// Track a scenario check (by its name, or `all`) as well as the verdict (repeatable).
    #[arg(long = "check", value_name = "NAME")]
    pub checks: Vec<String>,
    /// Runs per version while searching; a change point is then confirmed with --repeat.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub search_repeat: u32,
    /// Also probe this many evenly spaced releases first (finds changes that come and go
    /// between two ends that agree).
    #[arg(long, default_value_t = 0)]
    pub samples: usize,
    /// The most CLI versions this command may install (reinstalls count).
    #[arg(long, default_value_t = 40)]
    pub max_installs: u32,
    /// Disk the versions this command installs may hold at once, e.g. 2G, 1500M.
    #[arg(long, default_value = "2G", value_parser = parse_size)]
    pub disk_budget: u64,
    /// Extend a stored history.json to --to: its readings are kept, only newer releases run;
    /// a new change point that is a regression exits 4.
    #[arg(long, value_name = "FILE")]
    pub append: Option<PathBuf>,
    /// Map versions to simulator profiles (VERSION=PROFILE) instead of installing.
    #[arg(long = "sim-version", value_name = "V=PROFILE", value_parser = parse_key_value)]
    pub sim_versions: Vec<(String, String)>,
    #[command(flatten)]
    pub exec: ExecArgs,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard output folders (each holds a matrix.json). None at all is an incomplete merge
    /// (exit 6), said in every output.
    pub dirs: Vec<PathBuf>,
    /// Where the merged matrix goes.
    #[arg(long, default_value = "reports/merged")]
    pub out: PathBuf,
    /// Also write a merged JUnit XML file.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// A baseline to compare the merged matrix with (see `matrix --baseline`).
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Compare with a baseline made another way all the same (on purpose), saying how.
    #[arg(long, requires = "baseline")]
    pub compare_across_settings: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Write a matrix.json as the new baseline (on purpose, never silently).
    Update {
        /// The matrix.json to adopt.
        matrix: PathBuf,
        /// The baseline file.
        #[arg(long, default_value = "baseline/matrix.json")]
        baseline: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum GuardCommand {
    /// Run a guard script against the payload corpus and report misses.
    Verify {
        /// The guard script (default: ours, in sandbox-project/).
        #[arg(long)]
        script: Option<PathBuf>,
        /// Also run seed 000's guard side by side: wakeprobe's model of it (written from the
        /// seed's description), or the original with --seed-report.
        #[arg(long)]
        with_seed: bool,
        /// A seed 000 report to take the original guard script from (implies --with-seed).
        #[arg(long, value_name = "PATH")]
        seed_report: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct ConformArgs {
    /// Scenario file or name.
    pub scenario: String,
    /// The simulator profile to compare.
    #[arg(long, default_value = "finalize-on-turn-end")]
    pub profile: String,
    /// The real CLI version.
    #[arg(long, default_value = crate::backend::PINNED_VERSION)]
    pub claude_version: String,
    #[command(flatten)]
    pub exec: ExecArgs,
}

#[derive(Debug, Args)]
pub struct NemesisArgs {
    /// Scenario file or name.
    pub scenario: String,
    /// Print the table as one JSON array on stdout instead.
    #[arg(long)]
    pub json: bool,
    /// Consecutive attempts each answer-losing fault breaks (its retries included), to find
    /// where the CLI's retries run out.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub times: u32,
    #[command(flatten)]
    pub backend: BackendArgs,
    #[command(flatten)]
    pub exec: ExecArgs,
}

#[derive(Debug, Args)]
pub struct FuzzArgs {
    /// Generated cases to run (case numbers 1..=N).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub cases: u32,
    /// The generator's seed: a seed and a case number always give the same scenario.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Only these case numbers (repeatable), e.g. to run one difference again.
    #[arg(long = "case", value_name = "N")]
    pub only: Vec<u32>,
    /// The simulator profile under test.
    #[arg(long, default_value = "finalize-on-turn-end")]
    pub profile: String,
    /// The real CLI version the simulator is compared with.
    #[arg(long, value_name = "VERSION", default_value = crate::backend::PINNED_VERSION)]
    pub claude_version: String,
    /// Compare with this simulator profile instead of the real CLI (the fuzzer's own test).
    #[arg(long, value_name = "PROFILE", conflicts_with = "claude_version")]
    pub reference_profile: Option<String>,
    /// Runs allowed to shrink the first case of each kind of difference (0: no shrinking).
    #[arg(long, default_value_t = 60)]
    pub shrink_runs: u32,
    #[command(flatten)]
    pub place: PlaceArgs,
    /// Keep each run's sandbox folder.
    #[arg(long)]
    pub keep: bool,
    /// No progress display.
    #[arg(long)]
    pub quiet: bool,
}

/// Where the runs of a command that makes its own scenarios go, and how many at once (`fuzz`,
/// `minimize`).
#[derive(Debug, Clone, Args)]
pub struct PlaceArgs {
    /// Runs at the same time (default: 4 per CPU, at least 8).
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// Folder for the command's run folder.
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
    /// Network isolation of the CLI.
    #[arg(long, value_enum, default_value_t = NetworkPolicy::Auto)]
    pub network: NetworkPolicy,
    /// The project template copied into every sandbox.
    #[arg(long, value_name = "DIR")]
    pub template: Option<PathBuf>,
}

impl PlaceArgs {
    /// Run options with these places: every variant, no overrides or faults, one repetition,
    /// no sandbox kept, no JUnit, quiet.
    pub fn exec(&self) -> ExecArgs {
        ExecArgs {
            variants: vec![],
            sets: vec![],
            faults: vec![],
            driver: None,
            sdk_version: crate::backend::sdk::PINNED_TS.into(),
            sdk_py_version: crate::backend::sdk::PINNED_PY.into(),
            cli_args: vec![],
            explore: false,
            repeat: 1,
            jobs: self.jobs,
            out: self.out.clone(),
            junit: None,
            keep: false,
            network: self.network,
            template: self.template.clone(),
            quiet: true,
        }
    }
}

impl FuzzArgs {
    /// The run options every case runs with.
    pub fn exec(&self) -> ExecArgs {
        ExecArgs {
            keep: self.keep,
            quiet: self.quiet,
            ..self.place.exec()
        }
    }
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Scenario file or name.
    pub scenario: String,
    /// The variant (default: the scenario's first).
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// Set a scenario parameter, e.g. --set bg_seconds=7 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub sets: Vec<(String, String)>,
    /// Allow --set values outside the range where the scenario's expected verdict holds.
    #[arg(long)]
    pub explore: bool,
    /// The Claude Code version the script installs and runs (X.Y.Z, latest, latest~K): one the
    /// claude-code package publishes.
    #[arg(long, value_name = "VERSION", default_value = crate::backend::PINNED_VERSION)]
    pub claude_version: String,
    /// Where the script goes (`-`: standard output), in a folder that exists.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Replace the output file if it exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A session transcript (`~/.claude/projects/<project>/<session>.jsonl`; its subagents are
    /// read from `<session>/subagents/`) or one run's folder (reports/<id>/<scenario>/<run>).
    pub transcript: PathBuf,
    /// Where the scenario goes (default: `<name>.toml` in the current folder; `-`: standard
    /// output), in a folder that exists.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace the output file if it exists.
    #[arg(long)]
    pub force: bool,
    /// The driver mode, instead of inferring it from the transcript.
    #[arg(long, value_enum)]
    pub mode: Option<crate::scenario::DriverMode>,
    /// The scenario's name (default: the output file's name, else `imported-<session>`).
    #[arg(long)]
    pub name: Option<String>,
}

/// What a minimized scenario must keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeepChoice {
    /// The run's verdict.
    Verdict,
    /// The observation of the named check.
    Check(String),
}

#[derive(Debug, Args)]
pub struct MinimizeArgs {
    /// Scenario file or name.
    pub scenario: String,
    /// What must stay the same: `verdict`, or `check:NAME` (a check's observation).
    #[arg(long, value_name = "verdict|check:NAME", value_parser = parse_keep, default_value = "verdict")]
    pub keep: KeepChoice,
    /// Stop after this many runs (each candidate costs --repeat runs).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_runs: u32,
    /// The variant to minimize (default: the scenario's first).
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// Set a scenario parameter before minimizing, e.g. --set bg_seconds=60 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub sets: Vec<(String, String)>,
    /// Runs of each candidate; a candidate is kept only if every one agrees.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    #[command(flatten)]
    pub place: PlaceArgs,
    #[command(flatten)]
    pub backend: BackendArgs,
}

impl MinimizeArgs {
    /// The run options every candidate runs with.
    pub fn exec(&self) -> ExecArgs {
        ExecArgs {
            variants: self.variant.iter().cloned().collect(),
            sets: self.sets.clone(),
            repeat: self.repeat,
            ..self.place.exec()
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Installed versions and their size.
    List,
    /// Remove installed versions, keeping the newest N (and the pinned one).
    Prune {
        #[arg(long, default_value_t = 3)]
        keep: usize,
    },
}

#[derive(Debug, Args)]
pub struct HelperSocket {
    #[arg(long)]
    pub socket: PathBuf,
    #[arg(long)]
    pub fallback: PathBuf,
}

#[derive(Debug, Args)]
pub struct TrackArgs {
    #[command(flatten)]
    pub socket: HelperSocket,
    /// The track name from the scenario.
    pub name: String,
    /// The command, run with bash -c.
    pub command: String,
}

#[derive(Debug, Args)]
pub struct CliTapArgs {
    #[command(flatten)]
    pub socket: HelperSocket,
    /// The CLI and its arguments (after `--`).
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct SuperviseArgs {
    #[arg(long)]
    pub events: PathBuf,
    #[arg(long)]
    pub pty: bool,
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub command: Vec<String>,
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("expected KEY=VALUE, got `{s}`"))?;
    if k.is_empty() {
        return Err(format!("expected KEY=VALUE, got `{s}`"));
    }
    Ok((k.to_string(), v.to_string()))
}

/// `2G`, `1500M`, `512K`, `1.5GiB`, or bytes: binary units, as `du` and `sort -S` read them.
/// bytesize reads a bare `G` (or `GB`) as 10^9, so the unit is spelled `Gi` before it parses.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bad = || format!("expected a size such as 2G, 1500M or 4096, got `{s}`");
    let number_and_prefix = s
        .trim()
        .trim_end_matches(['b', 'B'])
        .trim_end_matches(['i', 'I']);
    let binary = match number_and_prefix.ends_with(|c: char| c.is_ascii_alphabetic()) {
        true => format!("{number_and_prefix}i"),
        false => number_and_prefix.to_string(),
    };
    binary
        .parse::<bytesize::ByteSize>()
        .map(|size| size.as_u64())
        .map_err(|_| bad())
}

fn parse_keep(s: &str) -> Result<KeepChoice, String> {
    match s.split_once(':') {
        None if s == "verdict" => Ok(KeepChoice::Verdict),
        Some(("check", name)) if !name.is_empty() => Ok(KeepChoice::Check(name.to_string())),
        _ => Err(format!("expected `verdict` or `check:NAME`, got `{s}`")),
    }
}

fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("expected I/N with 1 <= I <= N, got `{s}`");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let i: usize = i.parse().map_err(|_| bad())?;
    let n: usize = n.parse().map_err(|_| bad())?;
    if i == 0 || n == 0 || i > n {
        return Err(bad());
    }
    Ok((i, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// The book's table (chapter "Exit codes and files") and `--help` list the same codes: one
    /// enum, no second list.
    #[test]
    fn the_book_lists_every_exit_code_and_no_other() {
        let chapter = include_str!("../book/src/files.md");
        let section = chapter
            .split("\n## Exit codes\n")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .expect("book/src/files.md has an Exit codes section");
        let listed: Vec<i32> = section
            .lines()
            .filter_map(|line| line.strip_prefix("| ")?.split(' ').next()?.parse().ok())
            .collect();
        let defined: Vec<i32> = Exit::ALL.iter().map(|e| e.code()).collect();
        assert_eq!(listed, defined);
        let help = exit_codes_help();
        for exit in Exit::ALL {
            assert!(help.contains(&format!("  {:<4} {}", exit.code(), exit.meaning())));
        }
    }

    #[test]
    fn shards_and_pairs_parse() {
        assert_eq!(parse_shard("2/3"), Ok((2, 3)));
        assert!(
            parse_shard("0/3").is_err() && parse_shard("4/3").is_err() && parse_shard("x").is_err()
        );
        assert_eq!(parse_key_value("a=b=c"), Ok(("a".into(), "b=c".into())));
        assert!(parse_key_value("=x").is_err());
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("1500M"), Ok(1500 << 20));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size(" 512 kb "), Ok(512 << 10));
        assert_eq!(parse_size("3T"), Ok(3 << 40));
        assert_eq!(parse_size("2GB"), Ok(2 << 30));
        for bad in ["2X", "", "G", "-1G", "2 G B"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}
