//! One-line descriptions of events, shared by every exporter so the Markdown table, the
//! picture's tooltips and the terminal say the same thing.

use super::normalize::truncate;
use super::{Event, EventKind, HookName, InputReason, Route};

/// Whether an event is worth a row in a human-facing timeline (stream lines of no consequence
/// and tool hooks are left to `timeline.json`).
pub fn is_notable(e: &Event) -> bool {
    match &e.kind {
        // The CLI's own retries of a model request: its reaction to a failing API.
        EventKind::StreamLine { subtype, .. } => subtype.as_deref() == Some("api_retry"),
        EventKind::Hook { hook, .. } => {
            !matches!(hook, HookName::PreToolUse | HookName::PostToolUse)
        }
        EventKind::ModelRequest {
            route: Route::SideCall(_) | Route::Unrouted,
            ..
        } => false,
        _ => true,
    }
}

/// What an integration showed, in words.
fn describe_shown(line: &super::integration::IntegrationLine) -> String {
    use super::integration::{Shown, StartedBy};
    let opt = |v: &Option<String>| v.as_deref().unwrap_or("?").to_string();
    match line.shown {
        Shown::Turn => match line.started_by {
            Some(StartedBy::Cli) => "the integration shows a turn the CLI started".into(),
            Some(StartedBy::Prompt) => "the integration shows a turn the prompt started".into(),
            None => "the integration shows a turn".into(),
        },
        Shown::ToolCard => format!("the integration shows a {} tool card", opt(&line.tool)),
        Shown::ApprovalAsked => format!("the integration asks to approve {}", opt(&line.tool)),
        Shown::ApprovalAnswered => format!(
            "the integration answers the {} approval: {}",
            opt(&line.tool),
            opt(&line.answer)
        ),
        Shown::Status => format!("the integration shows status {}", opt(&line.status)),
        Shown::SubagentStatus => format!(
            "the integration shows subagent {} as {}",
            opt(&line.task),
            opt(&line.status)
        ),
    }
}

/// One event in one line.
pub fn describe(e: &Event) -> String {
    match &e.kind {
        EventKind::CliSpawned { pid } => format!("CLI started (pid {pid})"),
        EventKind::ApprovalGiven { tool, answer, .. } => {
            format!("the user answers the {tool} approval: {}", answer.as_str())
        }
        EventKind::UserInput { text, why } => {
            let what = match why {
                InputReason::Prompt => "prompt",
                InputReason::Scheduled => "user input",
                InputReason::Probe => "probe input",
            };
            format!("{what}: “{}”", truncate(text, 60))
        }
        EventKind::ModelRequest { .. } => describe_request(&e.kind),
        EventKind::FaultInjected { detail, .. } => format!("fault injected: {detail}"),
        EventKind::WorkSignalled { .. }
        | EventKind::CliCrashed { .. }
        | EventKind::CliRestarted { .. } => describe_fault(&e.kind),
        EventKind::ToolCall { .. } => describe_tool_call(&e.kind),
        EventKind::TurnEnded { text, .. } => format!("ends its turn: “{}”", truncate(text, 60)),
        EventKind::TaskStarted { .. }
        | EventKind::TaskUpdated { .. }
        | EventKind::TaskNotified { .. } => describe_task(&e.kind),
        EventKind::Hook { .. } => describe_hook(&e.kind),
        EventKind::AgentFinalized { hook } => format!("finalized ({hook})"),
        EventKind::ToolUnavailable { tool, cli } => format!(
            "{} no `{tool}` tool: the script cannot go on",
            cli.as_deref()
                .map(|v| format!("{v} offers"))
                .unwrap_or_else(|| "the CLI offers".into())
        ),
        EventKind::TurnResult { .. } => describe_result(&e.kind),
        EventKind::PermissionAsked { .. }
        | EventKind::PermissionAnswered { .. }
        | EventKind::ToCli { .. }
        | EventKind::RejectedLine { .. }
        | EventKind::IntegrationExited { .. } => describe_integration_io(&e.kind),
        EventKind::Shown(line) => describe_shown(line),
        EventKind::StreamLine { line_type, subtype } => match subtype {
            Some(s) if s == "api_retry" => {
                "the CLI retries a failed model request (api_retry)".into()
            }
            Some(s) => format!("stream {line_type}/{s}"),
            None => format!("stream {line_type}"),
        },
        EventKind::TrackStarted { .. }
        | EventKind::TrackEnded { .. }
        | EventKind::ProcessExited { .. }
        | EventKind::Leftover { .. } => describe_process(&e.kind),
        EventKind::SessionClosed
        | EventKind::CeilingHit { .. }
        | EventKind::Interrupted { .. }
        | EventKind::HarnessFailed { .. }
        | EventKind::WorkOverdue { .. }
        | EventKind::HarnessStalled { .. } => describe_harness(&e.kind),
        EventKind::CliExited { exit } => format!("CLI exited ({})", exit.describe()),
        EventKind::ControlRequest { subtype, target } => format!(
            "control request {subtype}{}",
            target
                .as_deref()
                .map(|t| format!(" {t}"))
                .unwrap_or_default()
        ),
        EventKind::ControlResponse { subtype, error } => match error {
            Some(e) => format!("control response {subtype}: {e}"),
            None => format!("control response {subtype}"),
        },
        EventKind::TranscriptFact { fact, detail } => format!("transcript: {fact} ({detail})"),
        EventKind::Screen { text } => describe_screen(text),
    }
}

/// A task line of the CLI's stream: started, updated, notified.
fn describe_task(kind: &EventKind) -> String {
    match kind {
        EventKind::TaskStarted {
            task_id,
            task_type,
            label,
            ..
        } => {
            format!("task {task_id} started ({task_type}{})", label_part(label))
        }
        EventKind::TaskUpdated {
            task_id,
            status,
            label,
        } => {
            format!("task {task_id}{} → {status}", label_part_paren(label))
        }
        EventKind::TaskNotified {
            task_id,
            status,
            label,
            ..
        } => {
            format!(
                "stdout task_notification for {task_id}{} ({status})",
                label_part_paren(label)
            )
        }
        _ => String::new(),
    }
}

/// What passed between an integration (or an SDK host) and the CLI, and the integration's exit.
fn describe_integration_io(kind: &EventKind) -> String {
    match kind {
        EventKind::PermissionAsked {
            tool,
            answer: Some(answer),
            ..
        } => {
            format!("the SDK asks canUseTool for {tool} (answered {answer})")
        }
        EventKind::PermissionAsked { tool, .. } => {
            format!("the CLI asks the integration for permission to use {tool}")
        }
        EventKind::PermissionAnswered { tool, answer, .. } => {
            format!("the integration answers the CLI's {tool} permission request: {answer}")
        }
        EventKind::ToCli { line_type, subtype } => match subtype {
            Some(s) => format!("the integration writes a {line_type}/{s} line to the CLI"),
            None => format!("the integration writes a {line_type} line to the CLI"),
        },
        EventKind::RejectedLine { why, line } => {
            format!(
                "the integration wrote a line wakeprobe rejects ({why}): {}",
                truncate(line, 60)
            )
        }
        EventKind::IntegrationExited { exit } => {
            format!("the integration exits ({})", exit.describe())
        }
        _ => String::new(),
    }
}

/// A process of the run: a tracked work's start and end, a reaped child, a leftover killed.
fn describe_process(kind: &EventKind) -> String {
    match kind {
        EventKind::TrackStarted { name, pid } => format!("process `{name}` started (pid {pid})"),
        EventKind::TrackEnded { name, exit, .. } => {
            format!("process `{name}` ended ({})", exit.describe())
        }
        EventKind::ProcessExited { pid, exit, command } => format!(
            "process {pid}{} reaped ({})",
            command
                .as_deref()
                .map(|c| format!(" `{c}`"))
                .unwrap_or_default(),
            exit.describe()
        ),
        EventKind::Leftover { pid, command } => {
            format!("leftover process {pid} `{command}` killed")
        }
        _ => String::new(),
    }
}

/// What the harness itself did or met: closing the session, the ceiling, an interruption, its
/// own failure or stall, a work past its hang bound.
fn describe_harness(kind: &EventKind) -> String {
    match kind {
        EventKind::SessionClosed => "session closed by the driver".into(),
        EventKind::CeilingHit { ceiling_s } => format!("ceiling of {ceiling_s:.0} s reached"),
        EventKind::Interrupted { signal: Some(s) } => format!("run interrupted ({s})"),
        EventKind::Interrupted { signal: None } => "run interrupted".into(),
        EventKind::HarnessFailed { what } => format!("the harness failed: {what}"),
        EventKind::WorkOverdue { work, bound_s } => {
            format!("`{work}` not seen to end within its {bound_s:.1} s hang bound")
        }
        EventKind::HarnessStalled { until_ms } => format!(
            "the harness stalled until {} (stopped or starved): what reached it meanwhile is stamped late",
            super::secs(*until_ms)
        ),
        _ => String::new(),
    }
}

/// A fault the harness injected into the work or the CLI.
fn describe_fault(kind: &EventKind) -> String {
    match kind {
        EventKind::WorkSignalled {
            work,
            fault,
            signal,
            pids,
        } => match pids.as_slice() {
            [] => format!(
                "fault {} not sent: no process of `{work}` was running",
                fault.as_str()
            ),
            _ => format!(
                "fault {}: {signal} to `{work}` ({} process(es))",
                fault.as_str(),
                pids.len()
            ),
        },
        EventKind::CliCrashed { work, resume } => format!(
            "fault crash-cli: SIGKILL to the CLI while `{work}` runs, then the CLI again with {}",
            resume.join(" ")
        ),
        EventKind::CliRestarted {
            killed,
            exit,
            pid,
            error,
        } => match (pid, error) {
            (Some(pid), _) => format!(
                "CLI pid {killed} killed by the harness ({}); restarted as pid {pid}",
                exit.describe()
            ),
            (None, error) => format!(
                "CLI pid {killed} killed by the harness ({}); not restarted: {}",
                exit.describe(),
                error.as_deref().unwrap_or("unknown error")
            ),
        },
        _ => String::new(),
    }
}

/// A stream-json `result` line.
fn describe_result(kind: &EventKind) -> String {
    match kind {
        EventKind::TurnResult {
            subtype,
            num_turns,
            origin,
            ..
        } => {
            let turns = match num_turns {
                Some(1) => " (1 turn)".to_string(),
                Some(n) => format!(" ({n} turns)"),
                None => String::new(),
            };
            let started = match origin.as_deref() {
                Some("task-notification") => ", a turn the CLI started on a task notification",
                Some(_) | None => "",
            };
            format!("result {subtype}{turns}{started}")
        }
        _ => String::new(),
    }
}

fn label_part(label: &Option<String>) -> String {
    label
        .as_deref()
        .map(|l| format!(", `{l}`"))
        .unwrap_or_default()
}

fn label_part_paren(label: &Option<String>) -> String {
    label
        .as_deref()
        .map(|l| format!(" (`{l}`)"))
        .unwrap_or_default()
}

fn describe_request(kind: &EventKind) -> String {
    let EventKind::ModelRequest {
        seq,
        route,
        step,
        notifications,
        injected,
        tool_errors,
        answer_lost,
        ..
    } = kind
    else {
        return String::new();
    };
    let mut s = match (route, step) {
        (Route::Turn, Some(step)) => {
            format!("model request #{seq} (script step {})", step + 1)
        }
        (Route::ScriptExhausted, _) => {
            format!("model request #{seq} past the end of the script")
        }
        (Route::SideCall(what), _) => format!("side call #{seq} ({what})"),
        _ => format!("unrouted request #{seq}"),
    };
    if !notifications.is_empty() {
        let ids: Vec<String> = notifications
            .iter()
            .map(|n| match &n.status {
                Some(st) => format!("{} {st}", n.task_id),
                None => n.task_id.clone(),
            })
            .collect();
        s.push_str(&format!(
            ", carrying task-notification [{}]",
            ids.join(", ")
        ));
    }
    if *answer_lost {
        s.push_str(", answer broken by an injected fault");
    }
    if let Some(first) = tool_errors.first() {
        s.push_str(&format!(", reporting tool error “{}”", truncate(first, 70)));
    }
    if let Some(shown) = injected
        .as_deref()
        .map(crate::evidence::injected_gist)
        .filter(|g| !g.is_empty())
    {
        s.push_str(&format!(", with new text “{}”", truncate(&shown, 70)));
    }
    s
}

fn describe_tool_call(kind: &EventKind) -> String {
    let EventKind::ToolCall {
        tool,
        background,
        spawn,
        track,
        teammate,
        target,
        inserted,
        ..
    } = kind
    else {
        return String::new();
    };
    if *inserted {
        return format!("calls {tool} (inserted by the fake API to load a deferred tool)");
    }
    let mut s = format!("calls {tool}");
    if let Some(t) = target {
        s.push_str(&format!(" on `{t}`"));
    }
    if *background {
        s.push_str(" in the background");
    }
    if let Some(a) = spawn {
        s.push_str(&format!(", spawning `{a}`"));
    }
    if let Some(t) = teammate {
        s.push_str(&format!(" as teammate `{t}`"));
    }
    if let Some(t) = track {
        s.push_str(&format!(", tracked as `{t}`"));
    }
    s
}

fn describe_hook(kind: &EventKind) -> String {
    let EventKind::Hook {
        hook,
        background_tasks,
        stop_hook_active,
        ..
    } = kind
    else {
        return String::new();
    };
    let mut s = format!("hook {hook}");
    if let Some(tasks) = background_tasks {
        let list: Vec<String> = tasks
            .iter()
            .map(|t| format!("{} {} {}", t.task_type, t.id, t.status))
            .collect();
        s.push_str(&format!(", background_tasks [{}]", list.join(", ")));
    }
    if *stop_hook_active == Some(true) {
        s.push_str(", stop_hook_active");
    }
    s
}

/// The last non-empty line the screen showed.
fn describe_screen(text: &str) -> String {
    format!(
        "screen: “{}”",
        truncate(
            text.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim(),
            60
        )
    )
}
