//! The driver modes and what each one means, in one table: how the CLI's standard input is
//! wired and where the driver's inputs go, how a session closes, which inputs, faults and
//! control requests apply, and which arguments the CLI gets. Every place whose behaviour
//! depends on the mode asks this table (`DriverMode::row`), so a new mode is one enum variant,
//! one row here, and one launch file in `driver/`; a site cannot quietly take another mode's
//! path.
//!
//! The table sits beside the file format, at the bottom of the flow, because the resolver
//! (which inputs a variant may have) and the driver (how to wire them) both read it.

use serde::Deserialize;

use super::plan::Control;

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Deserialize,
    serde::Serialize,
    schemars::JsonSchema,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum DriverMode {
    /// `claude -p PROMPT`: one print-mode invocation.
    Print,
    /// `claude -p --input-format stream-json`: a kept-alive session fed JSON lines on stdin.
    Session,
    /// The interactive CLI in a pseudo-terminal, turns typed as text + Enter.
    Pty,
    /// Through the TypeScript Agent SDK's `query()` under Node: the prompt and inputs as its
    /// streaming input (or its string prompt), every message it yields recorded.
    Sdk,
    /// The same through the Python Agent SDK (`claude-agent-sdk`, `ClaudeSDKClient`).
    SdkPy,
    /// The user's own program (`[driver] command`), which drives the CLI however it likes and
    /// reports what it shows its user as JSON lines (`driver/command.rs`).
    Command,
}

/// Every mode, in the order the documentation lists them.
pub const ALL_MODES: [DriverMode; 6] = [
    DriverMode::Print,
    DriverMode::Session,
    DriverMode::Pty,
    DriverMode::Sdk,
    DriverMode::SdkPy,
    DriverMode::Command,
];

/// How the CLI's standard input is wired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdin {
    /// Nothing: the prompt is in the arguments.
    Null,
    /// A pipe the driver writes stream-json lines to.
    StreamJson,
    /// A pseudo-terminal the driver types into (and whose screen it reads).
    Terminal,
    /// A pipe the driver writes the integration protocol's lines to (`{"type":"say",...}`).
    Integration,
}

/// How a run's session ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Close {
    /// Nothing to close: the run lasts until the CLI exits by itself.
    CliExits,
    /// The driver closes stdin once the session has been quiet.
    EndOfInput,
    /// The driver types `/exit` once the session has been quiet.
    TypedExit,
}

/// The CLI's arguments for a mode, before the permission flags every mode gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CliArgs {
    /// `-p PROMPT --output-format stream-json --verbose`.
    PrintPrompt,
    /// `-p --input-format stream-json --output-format stream-json --verbose`.
    StreamJsonSession,
    /// None: the interactive CLI.
    Interactive,
    /// None of the harness's: an SDK host starts the CLI with the SDK's own.
    BySdk,
    /// None of the harness's: the integration starts the CLI as it likes.
    ByIntegration,
}

/// The program the harness starts in place of the CLI: the CLI itself, or an Agent SDK host
/// that starts it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Host {
    /// The TypeScript SDK, run by Node (`src/driver/sdk/host.mjs`).
    SdkTs,
    /// The Python SDK, in a virtual environment (`src/driver/sdk/host.py`).
    SdkPy,
}

/// What the program's stdout carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdout {
    /// The CLI's stream-json lines.
    CliStream,
    /// The messages an SDK yields (and the host's own lines).
    SdkMessages,
    /// A terminal's screen.
    Screen,
    /// What an integration shows its user (`schema/integration-line.schema.json`).
    Integration,
}

/// What one mode does.
#[derive(Debug)]
pub struct ModeRow {
    pub mode: DriverMode,
    pub stdin: Stdin,
    pub stdout: Stdout,
    pub close: Close,
    pub args: CliArgs,
    /// The SDK host the harness starts instead of the CLI, if any.
    pub host: Option<Host>,
    /// It takes input after the prompt: `inputs`, a `probe`.
    pub later_inputs: bool,
    /// The control requests it can send (`interrupt`, `stop_task`, `send_task_message`).
    pub controls: &'static [Control],
    /// A `crash-cli` fault can restart its CLI with `--continue` on the same input.
    pub resumable: bool,
    /// `wakeprobe export` writes a standalone script for it.
    pub exportable: bool,
}

const TABLE: [ModeRow; 6] = [
    ModeRow {
        mode: DriverMode::Print,
        stdin: Stdin::Null,
        stdout: Stdout::CliStream,
        close: Close::CliExits,
        args: CliArgs::PrintPrompt,
        host: None,
        later_inputs: false,
        controls: &[],
        resumable: false,
        exportable: true,
    },
    ModeRow {
        mode: DriverMode::Session,
        stdin: Stdin::StreamJson,
        stdout: Stdout::CliStream,
        close: Close::EndOfInput,
        args: CliArgs::StreamJsonSession,
        host: None,
        later_inputs: true,
        controls: &[
            Control::Interrupt,
            Control::StopTask,
            Control::SendTaskMessage,
        ],
        resumable: true,
        exportable: true,
    },
    ModeRow {
        mode: DriverMode::Pty,
        stdin: Stdin::Terminal,
        stdout: Stdout::Screen,
        close: Close::TypedExit,
        args: CliArgs::Interactive,
        host: None,
        later_inputs: true,
        controls: &[],
        resumable: false,
        exportable: false,
    },
    // The SDKs take their input as stream-json lines from the harness (the host turns them
    // into SDK calls): `interrupt()` and `stopTask()`/`stop_task()`; they have no call that
    // writes to a task.
    ModeRow {
        mode: DriverMode::Sdk,
        stdin: Stdin::StreamJson,
        stdout: Stdout::SdkMessages,
        close: Close::EndOfInput,
        args: CliArgs::BySdk,
        host: Some(Host::SdkTs),
        later_inputs: true,
        controls: &[Control::Interrupt, Control::StopTask],
        resumable: false,
        exportable: false,
    },
    ModeRow {
        mode: DriverMode::SdkPy,
        stdin: Stdin::StreamJson,
        stdout: Stdout::SdkMessages,
        close: Close::EndOfInput,
        args: CliArgs::BySdk,
        host: Some(Host::SdkPy),
        later_inputs: true,
        controls: &[Control::Interrupt, Control::StopTask],
        resumable: false,
        exportable: false,
    },
    // The user's program: it takes the protocol's lines (`say` for the prompt and inputs,
    // `interrupt`, `stop_task`, `approve`) and ends its session when its stdin closes.
    ModeRow {
        mode: DriverMode::Command,
        stdin: Stdin::Integration,
        stdout: Stdout::Integration,
        close: Close::EndOfInput,
        args: CliArgs::ByIntegration,
        host: None,
        later_inputs: true,
        controls: &[Control::Interrupt, Control::StopTask],
        resumable: false,
        exportable: false,
    },
];

impl DriverMode {
    pub fn as_str(self) -> &'static str {
        match self {
            DriverMode::Print => "print",
            DriverMode::Session => "session",
            DriverMode::Pty => "pty",
            DriverMode::Sdk => "sdk",
            DriverMode::SdkPy => "sdk-py",
            DriverMode::Command => "command",
        }
    }

    /// This mode's row of the table.
    pub fn row(self) -> &'static ModeRow {
        TABLE
            .iter()
            .find(|r| r.mode == self)
            .expect("every mode has a row (a test walks them)")
    }

    /// The prompt goes in as the first input, not in the CLI's arguments.
    pub fn prompt_is_input(self) -> bool {
        self.row().stdin != Stdin::Null
    }

    /// It can send this control request.
    pub fn sends(self, control: Control) -> bool {
        self.row().controls.contains(&control)
    }

    /// The modes that have a facet, for messages: `session or pty`.
    pub fn those(facet: impl Fn(&ModeRow) -> bool) -> String {
        let names: Vec<&str> = ALL_MODES
            .iter()
            .filter(|m| facet(m.row()))
            .map(|m| m.as_str())
            .collect();
        match names.as_slice() {
            [] => "no mode".into(),
            [one] => format!("`{one}`"),
            [init @ .., last] => format!(
                "{} or `{last}`",
                init.iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

impl std::fmt::Display for DriverMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every mode has exactly one row, and the table agrees with itself: a mode that takes
    /// control requests takes input after the prompt; one that reads no input closes by the
    /// CLI's own exit.
    #[test]
    fn every_mode_has_one_consistent_row() {
        for mode in ALL_MODES {
            assert_eq!(TABLE.iter().filter(|r| r.mode == mode).count(), 1, "{mode}");
            let row = mode.row();
            assert!(row.controls.is_empty() || row.later_inputs, "{mode}");
            assert_eq!(row.host.is_some(), row.args == CliArgs::BySdk, "{mode}");
            assert_eq!(
                row.host.is_some(),
                row.stdout == Stdout::SdkMessages,
                "{mode}"
            );
            assert_eq!(
                row.stdin == Stdin::Null,
                row.close == Close::CliExits,
                "{mode}"
            );
            assert_eq!(row.later_inputs, row.stdin != Stdin::Null, "{mode}");
            let json = serde_json::to_value(mode).unwrap();
            assert_eq!(json, mode.as_str());
        }
        assert_eq!(TABLE.len(), ALL_MODES.len());
        assert_eq!(
            DriverMode::those(|r| r.later_inputs),
            "`session`, `pty`, `sdk`, `sdk-py` or `command`"
        );
        assert_eq!(
            DriverMode::those(|r| r.controls.contains(&Control::SendTaskMessage)),
            "`session`"
        );
    }
}
