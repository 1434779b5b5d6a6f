//! Reading a Messages API request: who is calling, at which step, and what it carries.
//!
//! Parsing is lenient on purpose: fields come and go between CLI versions, and a request the
//! harness does not understand must still get a harmless answer, never an error that derails
//! the CLI.

use serde_json::Value;

use crate::evidence::Notification;

/// The marker the harness appends to every prompt it hands an agent.
pub fn agent_tag(agent: &str) -> String {
    format!("[wakeprobe:agent={agent}]")
}

/// How a runtime's notifications are found in a request's text: Claude Code's
/// `<task-notification>` blocks ([`parse_notifications`]), or another runtime's own form (its
/// row in `crate::runtime` names it).
pub type Recognise = fn(&str) -> Vec<Notification>;

/// What the router needs from a request body.
#[derive(Debug, Clone, Default)]
pub struct RequestView {
    pub stream: bool,
    pub model: String,
    /// The agent named by the tag in the first user message, if any.
    pub tag: Option<String>,
    /// Number of assistant messages: the step the agent is at.
    pub assistant_messages: usize,
    pub message_count: usize,
    pub tool_names: Vec<String>,
    pub stop_sequences: Vec<String>,
    /// The first characters of the system prompt, for journals and side-call recognition.
    pub system_head: String,
    /// Notifications in the messages after the last assistant message.
    pub new_notifications: Vec<Notification>,
    /// Task ids of every notification anywhere in the request.
    pub all_notification_ids: Vec<String>,
    /// Text new in this request that is neither a tool result nor a notification: a user
    /// message, a hook's feedback, a teammate's message (whitespace collapsed, shortened).
    pub injected: Option<String>,
    /// The user's words new in this request (see `EventKind::ModelRequest::user_text`).
    pub user_text: Vec<String>,
    /// Tool results in this request that are errors (the CLI refused or the tool failed),
    /// shortened.
    pub tool_errors: Vec<String>,
    /// Tools the CLI defers: named in the request ("available via ToolSearch") but not in
    /// `tools` until a `ToolSearch` with `select:NAME` loads them.
    pub deferred_tools: Vec<String>,
    /// The last text block of the last user message when no model message follows it: where
    /// the CLI appends a question it asks on its own behalf (an agent's activity line).
    pub closing_text: Option<String>,
}

impl RequestView {
    /// A request of Claude Code's (its `<task-notification>` blocks).
    pub fn parse(body: &Value) -> RequestView {
        RequestView::parse_with(body, parse_notifications)
    }

    /// A request whose notifications `recognise` finds.
    pub fn parse_with(body: &Value, recognise: Recognise) -> RequestView {
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let first_user = messages
            .iter()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"));
        let tag = first_user.and_then(|m| find_tag(&collect_text(m.get("content"))));
        let last_assistant = messages
            .iter()
            .rposition(|m| m.get("role").and_then(Value::as_str) == Some("assistant"));
        let trailing = match last_assistant {
            Some(i) => &messages[i + 1..],
            None => messages,
        };
        let trailing_text: String = trailing
            .iter()
            .map(|m| collect_text(m.get("content")))
            .collect::<Vec<_>>()
            .join("\n");
        let all_text: String = messages
            .iter()
            .map(|m| collect_text(m.get("content")))
            .collect::<Vec<_>>()
            .join("\n");
        let system_head = match body.get("system") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => collect_text(Some(other)),
            None => String::new(),
        };
        let mut deferred_tools = deferred_tools(&format!("{system_head}\n{all_text}"));
        let tool_names: Vec<String> = body
            .get("tools")
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t.get("name").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        deferred_tools.retain(|t| !tool_names.contains(t));
        RequestView {
            closing_text: closing_text(messages),
            deferred_tools,
            tool_names,
            injected: injected_text(trailing),
            user_text: user_text(trailing),
            tool_errors: tool_errors(trailing),
            stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
            model: body
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("claude-fake")
                .to_string(),
            tag,
            assistant_messages: messages
                .iter()
                .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
                .count(),
            message_count: messages.len(),
            stop_sequences: body
                .get("stop_sequences")
                .and_then(Value::as_array)
                .map(|s| {
                    s.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            system_head: system_head.chars().take(200).collect(),
            new_notifications: recognise(&trailing_text),
            all_notification_ids: recognise(&all_text)
                .into_iter()
                .map(|n| n.task_id)
                .collect(),
        }
    }
}

/// The last text block of the last user message, when no model message follows it.
fn closing_text(messages: &[Value]) -> Option<String> {
    let role = |m: &Value| m.get("role").and_then(Value::as_str).map(str::to_string);
    let at = messages
        .iter()
        .rposition(|m| role(m).as_deref() == Some("user"))?;
    if messages[at..]
        .iter()
        .any(|m| role(m).as_deref() == Some("assistant"))
    {
        return None;
    }
    match messages[at].get("content")? {
        Value::String(text) => Some(text.clone()),
        Value::Array(blocks) => blocks
            .iter()
            .rev()
            .find(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .and_then(|b| b.get("text").and_then(Value::as_str))
            .map(str::to_string),
        _ => None,
    }
}

/// The tools a request lists as deferred: after each "available via ToolSearch", the lines
/// that follow the colon up to the first blank line, one tool name each.
fn deferred_tools(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (at, _) in text.match_indices("available via ToolSearch") {
        let after = &text[at..];
        let Some(colon) = after.find(":\n") else {
            continue;
        };
        for line in after[colon + 2..].lines() {
            let name = line.trim();
            let is_name = !name.is_empty()
                && name.len() <= 64
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !is_name {
                break;
            }
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
    names
}

/// The error tool results in `messages`, each shortened to its first words.
fn tool_errors(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| m.get("content")?.as_array())
        .flatten()
        .filter(|b| {
            b.get("type").and_then(Value::as_str) == Some("tool_result")
                && b.get("is_error").and_then(Value::as_bool) == Some(true)
        })
        .map(|b| {
            let text = collect_text(b.get("content"));
            crate::evidence::normalize::truncate(
                &text.split_whitespace().collect::<Vec<_>>().join(" "),
                160,
            )
        })
        .collect()
}

/// The text blocks of `messages` that are not tool results and carry no notification.
fn injected_text(messages: &[Value]) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for m in messages {
        match m.get("content") {
            Some(Value::String(s)) => parts.push(s),
            Some(Value::Array(blocks)) => {
                for b in blocks {
                    if b.get("type").and_then(Value::as_str) == Some("text")
                        && let Some(t) = b.get("text").and_then(Value::as_str)
                    {
                        parts.push(t);
                    }
                }
            }
            _ => {}
        }
    }
    let text = parts
        .into_iter()
        .filter(|t| !t.contains("<task-notification>"))
        .collect::<Vec<_>>()
        .join(" ");
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then(|| crate::evidence::normalize::truncate(&text, 600))
}

/// The user's own words in `messages`: each text block of a user message, with the parts the
/// CLI wraps in `<system-reminder>` or `<task-notification>` removed; blocks left empty are
/// dropped.
fn user_text(messages: &[Value]) -> Vec<String> {
    let blocks = messages
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .flat_map(|m| match m.get("content") {
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect(),
            _ => vec![],
        });
    blocks
        .map(|text| {
            let text = crate::evidence::without_element(text, "system-reminder");
            let text = crate::evidence::without_element(&text, "task-notification");
            let words: Vec<&str> = text.split_whitespace().collect();
            words
                .join(" ")
                .chars()
                .take(crate::evidence::USER_TEXT_CHARS)
                .collect::<String>()
        })
        .filter(|t| !t.is_empty())
        .collect()
}

/// Every string under `text` or `content` keys (and plain string content), in order.
pub fn collect_text(content: Option<&Value>) -> String {
    let mut out = Vec::new();
    fn walk<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::String(s) => out.push(s),
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(map) => {
                for key in ["text", "content"] {
                    if let Some(inner) = map.get(key) {
                        walk(inner, out);
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(c) = content {
        walk(c, &mut out);
    }
    out.join("\n")
}

fn find_tag(text: &str) -> Option<String> {
    let start = text.find("[wakeprobe:agent=")? + "[wakeprobe:agent=".len();
    let end = text[start..].find(']')? + start;
    let name = &text[start..end];
    (!name.is_empty()).then(|| name.to_string())
}

/// Extracts `<task-notification>` blocks: their `<task-id>`, `<status>`, `<tool-use-id>` and a
/// Monitor's `<event>`.
pub fn parse_notifications(text: &str) -> Vec<Notification> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("<task-notification>") {
        let body_start = open + "<task-notification>".len();
        let body_end = rest[body_start..]
            .find("</task-notification>")
            .map(|e| body_start + e)
            .unwrap_or(rest.len());
        let body = &rest[body_start..body_end];
        if let Some(task_id) = element(body, "task-id") {
            let n = Notification {
                task_id,
                status: element(body, "status"),
                tool_use_id: element(body, "tool-use-id"),
                event: element(body, "event"),
            };
            if !found.contains(&n) {
                found.push(n);
            }
        }
        rest = &rest[body_end..];
    }
    found
}

fn element(body: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = body.find(&open)? + open.len();
    let end = body[start..].find(&close)? + start;
    Some(body[start..end].trim().to_string()).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn finds_tag_step_and_new_notifications() {
        let body = json!({
            "model": "claude-x", "stream": true,
            "tools": [{"name": "Bash"}, {"name": "Agent"}],
            "system": [{"type": "text", "text": "You are Claude Code"}],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "<system-reminder>ctx</system-reminder>"},
                    {"type": "text", "text": "Do it.\n\n[wakeprobe:agent=worker]"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                    {"type": "text", "text": "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>"}]}
            ]
        });
        let v = RequestView::parse(&body);
        assert_eq!(v.tag.as_deref(), Some("worker"));
        assert_eq!(v.assistant_messages, 1);
        assert!(v.stream);
        assert_eq!(v.tool_names, vec!["Bash", "Agent"]);
        assert_eq!(v.system_head, "You are Claude Code");
        assert_eq!(v.new_notifications.len(), 1);
        assert_eq!(v.new_notifications[0].task_id, "b1");
        assert_eq!(v.new_notifications[0].status.as_deref(), Some("completed"));
    }

    /// The user's words are what decides H3: the CLI's reminders and notifications are taken
    /// out of a block, tool results and model messages are not words, and only what follows
    /// the last assistant message is new.
    #[test]
    fn user_text_keeps_the_users_words_and_nothing_the_cli_added() {
        let body = json!({
            "messages": [
                {"role": "user", "content": "Old prompt."},
                {"role": "assistant", "content": [{"type": "text", "text": "Said."}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "result words"},
                    {"type": "text", "text": "<system-reminder>\nctx\n</system-reminder>"},
                    {"type": "text", "text": "<task-notification>\n<task-id>b1</task-id>\n</task-notification>\nAny   update\non the check?"},
                    {"type": "text", "text": "Second <system-reminder>x</system-reminder>block"},
                    {"type": "text", "text": "<system-reminder>never closed"}]}
            ]
        });
        let v = RequestView::parse(&body);
        assert_eq!(
            v.user_text,
            vec!["Any update on the check?", "Second block"],
            "{v:?}"
        );
        let long = "w ".repeat(2 * crate::evidence::USER_TEXT_CHARS);
        let body = json!({"messages": [{"role": "user", "content": long}]});
        let v = RequestView::parse(&body);
        assert_eq!(
            v.user_text[0].chars().count(),
            crate::evidence::USER_TEXT_CHARS
        );
    }

    #[test]
    fn deferred_tools_are_read_from_the_reminder_and_leave_when_loaded() {
        // The shape 2.1.332 sends (its first user message), shortened.
        let reminder = "The following deferred tools are now available via ToolSearch. Their schemas are NOT loaded \u{2014} calling them directly will fail with InputValidationError. Use ToolSearch with query \"select:<name>[,<name>...]\" to load tool schemas before calling them:\nMonitor\nSendMessage\nTaskStop\n\nAvailable agent types for the Agent tool:\n- claude: Catch-all";
        let body = |tools: Value| {
            json!({"tools": tools, "messages": [
                {"role": "user", "content": [{"type": "text", "text": reminder},
                    {"type": "text", "text": "go [wakeprobe:agent=main]"}]}]})
        };
        let v = RequestView::parse(&body(json!([{"name": "Bash"}, {"name": "ToolSearch"}])));
        assert_eq!(v.deferred_tools, vec!["Monitor", "SendMessage", "TaskStop"]);
        let loaded =
            RequestView::parse(&body(json!([{"name": "ToolSearch"}, {"name": "TaskStop"}])));
        assert_eq!(loaded.deferred_tools, vec!["Monitor", "SendMessage"]);
        let older = RequestView::parse(&json!({"tools": [{"name": "TaskStop"}],
            "messages": [{"role": "user", "content": "go [wakeprobe:agent=main]"}]}));
        assert!(older.deferred_tools.is_empty());
    }

    #[test]
    fn old_notifications_are_not_new() {
        let body = json!({"messages": [
            {"role": "user", "content": "go [wakeprobe:agent=main]"},
            {"role": "user", "content": "<task-notification><task-id>b1</task-id></task-notification>"},
            {"role": "assistant", "content": "seen"},
            {"role": "user", "content": "next"}
        ]});
        let v = RequestView::parse(&body);
        assert!(v.new_notifications.is_empty());
        assert_eq!(v.all_notification_ids, vec!["b1"]);
        assert_eq!(v.tag.as_deref(), Some("main"));
    }

    #[test]
    fn the_tag_counts_only_in_the_first_user_message() {
        let body = json!({"messages": [
            {"role": "user", "content": "title this"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "[wakeprobe:agent=worker]"}
        ]});
        assert_eq!(RequestView::parse(&body).tag, None);
    }

    /// One content block: text (maybe with a tag or a notification), a tool call, a tool
    /// result, or something unexpected.
    fn block() -> impl Strategy<Value = Value> {
        prop_oneof![
            "[a-z ]{0,20}".prop_map(|t| json!({"type": "text", "text": t})),
            "[a-z]{1,8}".prop_map(|a| json!({"type": "text", "text": format!("go [wakeprobe:agent={a}]")})),
            "[a-z0-9]{1,8}".prop_map(|id| json!({"type": "text", "text": format!(
                "<task-notification><task-id>{id}</task-id><status>completed</status></task-notification>"
            )})),
            "[a-z]{1,6}".prop_map(|n| json!({"type": "tool_use", "id": "t1", "name": n, "input": {}})),
            any::<bool>().prop_map(|e| json!({"type": "tool_result", "tool_use_id": "t1", "is_error": e, "content": "x"})),
            Just(json!({"type": 7})),
            Just(json!(null)),
        ]
    }

    fn message() -> impl Strategy<Value = Value> {
        let role = prop_oneof![
            Just(json!("user")),
            Just(json!("assistant")),
            Just(json!("system")),
            Just(json!(3))
        ];
        let content = prop_oneof![
            "[a-z \\[\\]=:]{0,30}".prop_map(Value::String),
            prop::collection::vec(block(), 0..4).prop_map(Value::Array),
            Just(json!({"odd": true})),
        ];
        (role, content).prop_map(|(role, content)| json!({"role": role, "content": content}))
    }

    fn request_body() -> impl Strategy<Value = Value> {
        (
            prop::option::of(prop::collection::vec(message(), 0..6)),
            prop::option::of(any::<bool>()),
            prop::option::of(prop_oneof![
                "[a-z ]{0,20}".prop_map(Value::String),
                prop::collection::vec(block(), 0..2).prop_map(Value::Array),
            ]),
            prop::option::of(prop::collection::vec("[A-Za-z]{1,8}", 0..4)),
        )
            .prop_map(|(messages, stream, system, tools)| {
                let mut body = serde_json::Map::new();
                if let Some(m) = messages {
                    body.insert("messages".into(), Value::Array(m));
                }
                if let Some(s) = stream {
                    body.insert("stream".into(), json!(s));
                }
                if let Some(s) = system {
                    body.insert("system".into(), s);
                }
                if let Some(t) = tools {
                    let tools: Vec<Value> = t.iter().map(|n| json!({"name": n})).collect();
                    body.insert("tools".into(), Value::Array(tools));
                }
                Value::Object(body)
            })
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(s in ".{0,200}") {
            let _ = parse_notifications(&s);
            let _ = find_tag(&s);
        }

                #[test]
        fn arbitrary_json_never_panics(s in "[\\[\\]{}\",:a-z0-9 ]{0,120}") {
            if let Ok(v) = serde_json::from_str::<Value>(&s) {
                let _ = RequestView::parse(&v);
            }
        }

        /// Request-shaped bodies, with every field present, absent or of the wrong type: the
        /// view never panics, counts what is there, and finds the tag and the notifications
        /// wherever the text holds them.
        #[test]
        fn request_shaped_bodies_are_read_leniently(body in request_body()) {
            let view = RequestView::parse(&body);
            let messages = body["messages"].as_array().map(Vec::len).unwrap_or(0);
            prop_assert_eq!(view.message_count, messages);
            prop_assert!(view.assistant_messages <= view.message_count);
            let text = body.to_string();
            if view.tag.is_some() {
                prop_assert!(text.contains("[wakeprobe:agent="));
            }
            for n in &view.new_notifications {
                prop_assert!(view.all_notification_ids.contains(&n.task_id));
            }
        }
    }
}
