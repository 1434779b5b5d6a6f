//! The tools each kind of agent is offered, as 2.1.332 offers them: the `tools` array of a
//! request (names in the CLI's order, with short schemas), the deferred tools that are only
//! named in the request until `ToolSearch` loads them, the text that names them, and
//! `ToolSearch`'s matching. Schemas are the simulator's own, abridged; names, order, the
//! deferred list and its wording follow the measured request bodies.

use serde_json::{Value, json};

/// What kind of agent a request is for: it decides the system prompt and the tools offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentKind {
    Main,
    Subagent,
    Teammate,
}

/// The name of the placeholder that keeps its place near the end of every `tools` array.
const PLACEHOLDER: &str = "DeferredToolPlaceholder";

/// Which agents a tool is for, one letter each: `M` the main agent in print or stream-json
/// mode, `I` the interactive main agent, `S` a subagent, `T` a teammate.
type Audience = &'static str;

/// Tools offered directly, in the order of a request's `tools` (2.1.332).
const DIRECT: &[(&str, Audience)] = &[
    ("Agent", "MIST"),
    ("AskUserQuestion", "I"),
    ("Bash", "MIST"),
    ("Edit", "MIST"),
    ("ListAgents", "MI"),
    ("Read", "MIST"),
    ("ReportFindings", "MI"),
    ("ScheduleWakeup", "MI"),
    ("SendMessage", "T"),
    ("Skill", "MIST"),
    ("ToolSearch", "MIST"),
    ("Workflow", "MI"),
    (PLACEHOLDER, "MIST"),
    ("Write", "MIST"),
];

/// Tools only named as deferred until `ToolSearch` loads them, in the CLI's order (2.1.332).
const DEFERRED: &[(&str, Audience)] = &[
    ("CronCreate", "MIT"),
    ("CronDelete", "MIT"),
    ("CronList", "MIT"),
    ("EnterPlanMode", "I"),
    ("EnterWorktree", "MIST"),
    ("ExitPlanMode", "I"),
    ("ExitWorktree", "MIST"),
    ("Monitor", "MIST"),
    ("NotebookEdit", "MIST"),
    ("SendMessage", "MIS"),
    ("TaskStop", "MIST"),
    ("WebFetch", "MIST"),
    ("WebSearch", "MIST"),
];

/// The letter of `Audience` that stands for this agent.
fn audience_letter(kind: AgentKind, interactive: bool) -> char {
    match (kind, interactive) {
        (AgentKind::Main, false) => 'M',
        (AgentKind::Main, true) => 'I',
        (AgentKind::Subagent, _) => 'S',
        (AgentKind::Teammate, _) => 'T',
    }
}

fn names_for(
    table: &[(&'static str, Audience)],
    kind: AgentKind,
    interactive: bool,
) -> Vec<&'static str> {
    let letter = audience_letter(kind, interactive);
    table
        .iter()
        .filter(|(_, audience)| audience.contains(letter))
        .map(|(name, _)| *name)
        .collect()
}

/// Tool names offered directly to each kind of agent (print/stream-json; the interactive main
/// agent adds AskUserQuestion; teammates get SendMessage).
pub fn tool_names(kind: AgentKind, interactive: bool) -> Vec<&'static str> {
    names_for(DIRECT, kind, interactive)
}

/// The tools each kind of agent is told are deferred (named, schema not loaded).
pub fn deferred_names(kind: AgentKind, interactive: bool) -> Vec<&'static str> {
    names_for(DEFERRED, kind, interactive)
}

/// The paragraph naming the deferred tools, exactly as the CLI words it: one name a line after
/// the colon, then a blank line.
pub fn deferred_text(names: &[&str]) -> String {
    let mut text = String::from(
        "The following deferred tools are now available via ToolSearch. Their schemas are NOT loaded — calling them directly will fail with InputValidationError. Use ToolSearch with query \"select:<name>[,<name>...]\" to load tool schemas before calling them:\n",
    );
    for name in names {
        text.push_str(name);
        text.push('\n');
    }
    text.push('\n');
    text
}

/// The names in a request's `tools`: the agent's own, with the tools it loaded inserted in
/// alphabetical place (the placeholder keeps its place before `Write`).
pub fn offered_names(kind: AgentKind, interactive: bool, loaded: &[String]) -> Vec<String> {
    let mut names: Vec<String> = tool_names(kind, interactive)
        .into_iter()
        .map(str::to_string)
        .collect();
    for tool in loaded {
        if names.contains(tool) {
            continue;
        }
        let at = names
            .iter()
            .position(|n| n != PLACEHOLDER && n.as_str() > tool.as_str())
            .unwrap_or(names.len());
        names.insert(at, tool.clone());
    }
    names
}

/// The `tools` array of a request: the offered names with their schemas.
pub fn tools(kind: AgentKind, interactive: bool, teams: bool, loaded: &[String]) -> Vec<Value> {
    offered_names(kind, interactive, loaded)
        .iter()
        .map(|name| tool_schema(name, interactive, teams))
        .collect()
}

/// What `ToolSearch` finds for `query` among `deferred`: `select:A,B` names tools exactly
/// (unknown names are skipped); anything else matches names containing the query's words,
/// at most `max` of them.
pub fn search(deferred: &[&str], query: &str, max: usize) -> Vec<String> {
    if let Some(list) = query.trim().strip_prefix("select:") {
        let mut found: Vec<String> = Vec::new();
        for name in list.split(',').map(str::trim) {
            if let Some(d) = deferred.iter().find(|d| d.eq_ignore_ascii_case(name))
                && !found.iter().any(|f| f == d)
            {
                found.push(d.to_string());
            }
        }
        return found;
    }
    let words: Vec<String> = query
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    deferred
        .iter()
        .filter(|d| {
            let lower = d.to_ascii_lowercase();
            !words.is_empty() && words.iter().any(|w| lower.contains(w.as_str()))
        })
        .take(max)
        .map(|d| d.to_string())
        .collect()
}

fn tool_schema(name: &str, interactive: bool, teams: bool) -> Value {
    let string = |d: &str| json!({"type": "string", "description": d});
    let (description, properties, required): (&str, Value, Vec<&str>) = match name {
        "Bash" => (
            "Executes a bash command, optionally in the background.",
            json!({
                "command": string("The command to execute"),
                "timeout": {"type": "number", "description": "Optional timeout in milliseconds (max 600000)"},
                "description": string("What the command does, in a few words"),
                "run_in_background": {"type": "boolean", "description": "Run the command in the background; you are notified when it completes"},
            }),
            vec!["command"],
        ),
        "Agent" => {
            let mut p = json!({
                "description": string("A short (3-5 word) description of the task"),
                "prompt": string("The task for the agent to perform"),
                "subagent_type": string("The type of specialized agent to use"),
                "model": string("Optional model override"),
            });
            if !interactive {
                p["run_in_background"] = json!({"type": "boolean", "description": "Run the agent in the background; you are notified when it completes"});
            }
            if teams {
                p["name"] = string("A name for the spawned agent (makes it a teammate)");
            }
            (
                "Launches a new agent to handle a task.",
                p,
                vec!["description", "prompt"],
            )
        }
        "SendMessage" => (
            "Sends a message to another agent or teammate.",
            json!({"to": string("Recipient: a teammate name or agent id"), "message": string("The message"), "summary": string("A 5-10 word summary")}),
            vec!["to", "message"],
        ),
        "ToolSearch" => (
            "Loads the schemas of deferred tools: `select:<name>[,<name>...]` by name, or keywords.",
            json!({"query": string("`select:<name>[,<name>...]`, or keywords"),
                   "max_results": {"type": "number", "description": "At most this many matches (default 5)"}}),
            vec!["query"],
        ),
        "TaskStop" => (
            "Stops a running background task (a shell command, a monitor or an agent) by its id.",
            json!({"task_id": string("The id of the task to stop"), "shell_id": string("Deprecated: use task_id")}),
            vec![],
        ),
        "Monitor" => (
            "Watches a source in the background: every line its command prints is an event you are notified of.",
            json!({
                "description": string("What the monitor watches for, in a few words"),
                "command": string("A shell command whose stdout lines are events"),
                "ws": string("A WebSocket URL whose messages are events (instead of command)"),
                "timeout_ms": {"type": "number", "description": "Expire after this many milliseconds (default 300000)"},
            }),
            vec!["description"],
        ),
        "Read" => (
            "Reads a file from the local filesystem.",
            json!({"file_path": string("The absolute path to the file")}),
            vec!["file_path"],
        ),
        "Write" => (
            "Writes a file to the local filesystem.",
            json!({"file_path": string("The absolute path"), "content": string("The content")}),
            vec!["file_path", "content"],
        ),
        _ => ("Not available in claude-sim.", json!({}), vec![]),
    };
    json!({
        "name": name,
        "description": description,
        "input_schema": {"type": "object", "properties": properties, "required": required, "additionalProperties": false},
    })
}

/// `system/init`'s tool list (it names the agent tool `Task`).
pub const INIT_TOOLS: &[&str] = &[
    "Task",
    "Bash",
    "CronCreate",
    "CronDelete",
    "CronList",
    "Edit",
    "EnterWorktree",
    "ExitWorktree",
    "ListAgents",
    "Monitor",
    "NotebookEdit",
    "Read",
    "ReportFindings",
    "ScheduleWakeup",
    "SendMessage",
    "Skill",
    "TaskStop",
    "ToolSearch",
    "WebFetch",
    "WebSearch",
    "Workflow",
    "Write",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake_api::request::RequestView;

    /// A request body as the fake API reads it: the deferred paragraph in a system message.
    fn request(kind: AgentKind, interactive: bool, loaded: &[String], text: &str) -> Value {
        json!({
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "go"}]},
                {"role": "system", "content": [{"type": "text", "text": text}]},
            ],
            "tools": tools(kind, interactive, false, loaded),
        })
    }

    #[test]
    fn the_deferred_paragraph_is_the_measured_text() {
        let text = deferred_text(&deferred_names(AgentKind::Subagent, false));
        assert_eq!(
            text,
            "The following deferred tools are now available via ToolSearch. Their schemas are NOT loaded — calling them directly will fail with InputValidationError. Use ToolSearch with query \"select:<name>[,<name>...]\" to load tool schemas before calling them:\nEnterWorktree\nExitWorktree\nMonitor\nNotebookEdit\nSendMessage\nTaskStop\nWebFetch\nWebSearch\n\n"
        );
        let main = deferred_text(&deferred_names(AgentKind::Main, false));
        assert!(main.ends_with(":\nCronCreate\nCronDelete\nCronList\nEnterWorktree\nExitWorktree\nMonitor\nNotebookEdit\nSendMessage\nTaskStop\nWebFetch\nWebSearch\n\n"));
    }

    #[test]
    fn the_fake_api_reads_every_agents_deferred_list() {
        for (kind, interactive) in [
            (AgentKind::Main, false),
            (AgentKind::Main, true),
            (AgentKind::Subagent, false),
            (AgentKind::Teammate, true),
        ] {
            let names = deferred_names(kind, interactive);
            let text = format!("{}# Environment\n - Platform: linux", deferred_text(&names));
            let view = RequestView::parse(&request(kind, interactive, &[], &text));
            assert_eq!(view.deferred_tools, names, "{kind:?}");
            for name in names {
                assert!(
                    !view.tool_names.iter().any(|t| t == name),
                    "{name} is deferred and offered"
                );
            }
        }
        // Teammates get SendMessage directly; every agent can search.
        assert!(tool_names(AgentKind::Teammate, true).contains(&"SendMessage"));
        assert!(!deferred_names(AgentKind::Teammate, true).contains(&"SendMessage"));
    }

    #[test]
    fn a_loaded_tool_is_offered_in_the_measured_place_and_leaves_the_deferred_list() {
        let loaded = |t: &str| vec![t.to_string()];
        assert_eq!(
            offered_names(AgentKind::Subagent, false, &loaded("Monitor")),
            [
                "Agent",
                "Bash",
                "Edit",
                "Monitor",
                "Read",
                "Skill",
                "ToolSearch",
                PLACEHOLDER,
                "Write"
            ]
        );
        assert_eq!(
            offered_names(AgentKind::Main, false, &loaded("TaskStop")),
            [
                "Agent",
                "Bash",
                "Edit",
                "ListAgents",
                "Read",
                "ReportFindings",
                "ScheduleWakeup",
                "Skill",
                "TaskStop",
                "ToolSearch",
                "Workflow",
                PLACEHOLDER,
                "Write"
            ]
        );
        let interactive = offered_names(AgentKind::Main, true, &loaded("SendMessage"));
        let at = |n: &str| interactive.iter().position(|x| x == n).unwrap();
        assert_eq!(at("SendMessage"), at("ScheduleWakeup") + 1);
        // Loading twice offers once.
        let twice = vec!["TaskStop".to_string(), "TaskStop".to_string()];
        assert_eq!(
            offered_names(AgentKind::Main, false, &twice)
                .iter()
                .filter(|n| *n == "TaskStop")
                .count(),
            1
        );
        let names = deferred_names(AgentKind::Subagent, false);
        let view = RequestView::parse(&request(
            AgentKind::Subagent,
            false,
            &loaded("Monitor"),
            &deferred_text(&names),
        ));
        assert!(view.tool_names.iter().any(|t| t == "Monitor"));
        assert!(!view.deferred_tools.iter().any(|t| t == "Monitor"));
        let schema = &tools(AgentKind::Subagent, false, false, &loaded("Monitor"))[3];
        assert_eq!(schema["name"], "Monitor");
        assert_eq!(schema["input_schema"]["required"], json!(["description"]));
    }

    #[test]
    fn tool_search_selects_by_name_or_matches_keywords() {
        let deferred = deferred_names(AgentKind::Main, false);
        assert_eq!(search(&deferred, "select:TaskStop", 5), ["TaskStop"]);
        assert_eq!(
            search(&deferred, "select:Monitor, taskstop,Nope,Monitor", 5),
            ["Monitor", "TaskStop"]
        );
        assert_eq!(search(&deferred, "cron", 2), ["CronCreate", "CronDelete"]);
        assert!(
            search(&deferred, "select:Bash", 5).is_empty(),
            "not deferred"
        );
        assert!(search(&deferred, "  ", 5).is_empty());
    }
}
