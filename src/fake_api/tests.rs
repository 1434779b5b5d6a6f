use super::*;
use crate::scenario::ToolCall;
use axum::http::Request;
use http_body_util::BodyExt;
use std::time::Duration;
use tokio::sync::mpsc;
use tower::ServiceExt;

fn step(say: Option<&str>, call: Option<ToolCall>) -> Step {
    Step {
        say: say.map(str::to_string),
        calls: call.into_iter().collect(),
        think: Duration::ZERO,
        until: None,
        max_repeats: 200,
        line: 1,
    }
}

fn script() -> IndexMap<String, Vec<Step>> {
    let mut s = IndexMap::new();
    s.insert(
        "main".to_string(),
        vec![
            step(
                None,
                Some(ToolCall {
                    tool: "Agent".into(),
                    input: json!({"prompt": "work", "run_in_background": true}),
                    spawn: Some("worker".into()),
                    track: None,
                }),
            ),
            step(Some("Launched."), None),
        ],
    );
    let mut poll = step(
        None,
        Some(ToolCall {
            tool: "Bash".into(),
            input: json!({"command": "echo it's"}),
            spawn: None,
            track: Some("bg".into()),
        }),
    );
    poll.until = Some(Until::Notified);
    s.insert("worker".to_string(), vec![poll, step(Some("done"), None)]);
    s
}

fn state() -> (Arc<ApiState>, mpsc::UnboundedReceiver<Event>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let config = ApiConfig {
        script: script(),
        track_command: "wp-track".into(),
        evidence_dir: None,
        faults: vec![],
        work_ends: None,
        triggers: Default::default(),
        notifications: crate::fake_api::request::parse_notifications,
    };
    (ApiState::new(config, RunClock::start(), tx), rx)
}

fn request(agent: Option<&str>, assistants: usize, extra_user: &str, stream: bool) -> Value {
    let first = match agent {
        Some(a) => format!("hello\n\n[wakeprobe:agent={a}]"),
        None => "hello".into(),
    };
    let mut messages = vec![json!({"role": "user", "content": first})];
    for _ in 0..assistants {
        messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": "x"}]}));
        messages.push(json!({"role": "user", "content": [{"type": "text", "text": extra_user}]}));
    }
    json!({"model": "claude-test", "stream": stream, "messages": messages,
           "tools": [{"name": "Bash"}, {"name": "Task"}]})
}

async fn call(state: &Arc<ApiState>, path: &str, body: &Value) -> (StatusCode, String) {
    let response = app(state.clone())
        .oneshot(
            Request::post(path)
                .header("content-type", "application/json")
                .body(Body::from(body.to_string()))
                .unwrap(),
        )
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

#[tokio::test]
async fn main_spawns_a_tagged_worker_under_the_cli_tool_name() {
    let (state, mut rx) = state();
    let (status, body) = call(&state, "/v1/messages", &request(Some("main"), 0, "", true)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body.contains("\"name\":\"Task\""),
        "aliased to the offered tool: {body}"
    );
    assert!(body.contains("[wakeprobe:agent=worker]"), "{body}");
    assert!(body.contains("event: message_stop"));
    let first = rx.recv().await.unwrap();
    assert!(matches!(
        first.kind,
        EventKind::ModelRequest {
            route: Route::Turn,
            step: Some(0),
            ..
        }
    ));
    let second = rx.recv().await.unwrap();
    assert!(
        matches!(second.kind, EventKind::ToolCall { ref spawn, background: true, .. } if spawn.as_deref() == Some("worker"))
    );
    assert!(
        state.journal()[0]
            .note
            .as_deref()
            .unwrap()
            .contains("offered as `Task`")
    );
}

/// A step with several calls is one assistant message with one `tool_use` block each (the
/// model's parallel calls), each with its own id and event, all of the same request.
#[tokio::test]
async fn several_calls_go_in_one_message_with_one_event_each() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let agent = |n: usize| ToolCall {
        tool: "Agent".into(),
        input: json!({"prompt": format!("job {n}"), "run_in_background": true}),
        spawn: Some(format!("w{n}")),
        track: None,
    };
    let mut script = IndexMap::new();
    let mut fan_out = step(Some("Starting three."), None);
    fan_out.calls = (1..=3).map(agent).collect();
    script.insert("main".to_string(), vec![fan_out]);
    let config = ApiConfig {
        script,
        track_command: "wp-track".into(),
        evidence_dir: None,
        faults: vec![],
        work_ends: None,
        triggers: Default::default(),
        notifications: crate::fake_api::request::parse_notifications,
    };
    let state = ApiState::new(config, RunClock::start(), tx);
    let (_, body) = call(&state, "/v1/messages", &request(Some("main"), 0, "", false)).await;
    let message: Value = serde_json::from_str(&body).unwrap();
    let content = message["content"].as_array().unwrap();
    assert_eq!(content.len(), 4, "{body}");
    assert_eq!(content[0]["text"], "Starting three.");
    let ids: Vec<&str> = content[1..]
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "toolu_wp0001_main",
            "toolu_wp0001_main_2",
            "toolu_wp0001_main_3"
        ]
    );
    for (n, block) in content[1..].iter().enumerate() {
        assert_eq!(block["name"], "Task", "the offered name");
        let tag = format!("[wakeprobe:agent=w{}]", n + 1);
        assert!(block["input"]["prompt"].as_str().unwrap().ends_with(&tag));
    }
    assert_eq!(message["stop_reason"], "tool_use");
    let mut calls = Vec::new();
    while let Ok(e) = rx.try_recv() {
        if let EventKind::ToolCall { seq, spawn, .. } = e.kind {
            calls.push((seq, spawn.unwrap()));
        }
    }
    assert_eq!(
        calls,
        [(1, "w1".into()), (1, "w2".into()), (1, "w3".into())]
    );
}

#[tokio::test]
async fn a_retry_gets_the_same_step_and_the_script_can_run_out() {
    let (state, _rx) = state();
    for _ in 0..2 {
        let (_, body) = call(&state, "/v1/messages", &request(Some("main"), 0, "", true)).await;
        assert!(body.contains("tool_use"));
    }
    let (_, body) = call(
        &state,
        "/v1/messages",
        &request(Some("main"), 1, "result", true),
    )
    .await;
    assert!(body.contains("Launched."));
    let (_, body) = call(
        &state,
        "/v1/messages",
        &request(Some("main"), 2, "more", false),
    )
    .await;
    assert!(body.contains("no more steps"));
    let routes: Vec<Route> = state.journal().into_iter().map(|e| e.route).collect();
    assert_eq!(routes.last(), Some(&Route::ScriptExhausted));
}

#[tokio::test]
async fn a_tracked_command_is_wrapped_and_repeats_until_notified() {
    let (state, _rx) = state();
    let (_, body) = call(
        &state,
        "/v1/messages",
        &request(Some("worker"), 0, "", false),
    )
    .await;
    let message: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        message["content"][0]["input"]["command"],
        "wp-track bg 'echo it'\\''s'"
    );
    let (_, body) = call(
        &state,
        "/v1/messages",
        &request(Some("worker"), 1, "tool output", false),
    )
    .await;
    assert!(
        body.contains("wp-track"),
        "no notification yet: the step repeats"
    );
    let note =
        "<task-notification><task-id>b9</task-id><status>completed</status></task-notification>";
    let (_, body) = call(
        &state,
        "/v1/messages",
        &request(Some("worker"), 2, note, false),
    )
    .await;
    assert!(body.contains("\"done\""), "{body}");
    let last = state.journal().pop().unwrap();
    assert_eq!(last.notifications[0].task_id, "b9");
}

#[tokio::test]
async fn side_calls_and_strangers_get_harmless_answers() {
    let (state, _rx) = state();
    let mut classifier = request(Some("main"), 0, "", false);
    classifier["stop_sequences"] = json!(["</block>"]);
    let (_, body) = call(&state, "/v1/messages", &classifier).await;
    assert!(body.contains("<block>no") && body.contains("stop_sequence"));

    let mut title = request(Some("main"), 0, "", true);
    title["tools"] = json!([]);
    let (_, body) = call(&state, "/v1/messages", &title).await;
    assert!(body.contains("OK."));

    let (_, body) = call(&state, "/v1/messages", &request(None, 0, "", true)).await;
    assert!(body.contains("OK."));

    // A background agent's activity line, asked with its tools on (2.1.332, interactive).
    let summary = request(
        Some("main"),
        1,
        "Describe your most recent action in 3-5 words using present tense (-ing).",
        true,
    );
    let (_, body) = call(&state, "/v1/messages", &summary).await;
    assert!(!body.contains("tool_use"), "{body}");
    // On an agent's first step the question closes its first user message, and the
    // environment message still follows.
    let mut first_step = request(Some("main"), 0, "", true);
    first_step["messages"][0]["content"] = json!([
        {"type": "text", "text": "hello\n\n[wakeprobe:agent=main]"},
        {"type": "text", "text": "Describe your most recent action in 3-5 words."}
    ]);
    first_step["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "system", "content": "# Environment"}));
    let (_, body) = call(&state, "/v1/messages", &first_step).await;
    assert!(!body.contains("tool_use"), "{body}");
    let routes: Vec<Route> = state.journal().into_iter().map(|e| e.route).collect();
    assert_eq!(
        routes,
        vec![
            Route::SideCall("safety-classifier".into()),
            Route::SideCall("no-tools".into()),
            Route::Unrouted,
            Route::SideCall("activity-summary".into()),
            Route::SideCall("activity-summary".into()),
        ]
    );
    // Side calls do not move the main agent's cursor.
    let (_, body) = call(&state, "/v1/messages", &request(Some("main"), 0, "", true)).await;
    assert!(body.contains("tool_use"));
}

#[tokio::test]
async fn other_endpoints_are_clear_errors_and_count_tokens_works() {
    let (state, _rx) = state();
    let (status, body) = call(&state, "/v1/complete", &json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.contains("not_found_error") && body.contains("/v1/complete"));
    let (status, body) = call(
        &state,
        "/v1/messages/count_tokens",
        &json!({"messages": []}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("input_tokens"));
    let response = app(state.clone())
        .oneshot(
            Request::post("/v1/messages")
                .body(Body::from("not json"))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}

/// A script whose main agent stops a task by `TaskStop`, then ends its turn.
fn stop_state() -> (Arc<ApiState>, mpsc::UnboundedReceiver<Event>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut s = IndexMap::new();
    s.insert(
        "main".to_string(),
        vec![
            step(
                None,
                Some(ToolCall {
                    tool: "TaskStop".into(),
                    input: json!({"task_id": "b1"}),
                    spawn: None,
                    track: None,
                }),
            ),
            step(Some("Stopped."), None),
        ],
    );
    let config = ApiConfig {
        script: s,
        track_command: "wp-track".into(),
        evidence_dir: None,
        faults: vec![],
        work_ends: None,
        triggers: Default::default(),
        notifications: crate::fake_api::request::parse_notifications,
    };
    (ApiState::new(config, RunClock::start(), tx), rx)
}

/// A main-agent request at step `assistants`, offering `tools` and deferring `deferred`.
fn offering(assistants: usize, tools: &[&str], deferred: &[&str]) -> Value {
    let mut body = request(Some("main"), assistants, "", true);
    body["tools"] = tools.iter().map(|t| json!({"name": t})).collect();
    if !deferred.is_empty() {
        let reminder = format!(
            "The following deferred tools are now available via ToolSearch. Use ToolSearch to load them:\n{}\n\nMore.",
            deferred.join("\n")
        );
        body["messages"][0]["content"] = json!(format!("{reminder}\n[wakeprobe:agent=main]"));
    }
    body
}

async fn drain(rx: &mut mpsc::UnboundedReceiver<Event>) -> Vec<EventKind> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e.kind);
    }
    out
}

#[tokio::test]
async fn a_deferred_tool_is_loaded_with_tool_search_first_and_the_step_waits() {
    let (state, mut rx) = stop_state();
    // 2.1.332: TaskStop deferred, ToolSearch offered.
    let (_, body) = call(
        &state,
        "/v1/messages",
        &offering(0, &["Bash", "ToolSearch"], &["Monitor", "TaskStop"]),
    )
    .await;
    assert!(body.contains("\"name\":\"ToolSearch\""), "{body}");
    assert!(body.contains("select:TaskStop"), "{body}");
    let events = drain(&mut rx).await;
    assert!(events.iter().any(|k| matches!(k, EventKind::ToolCall { tool, inserted: true, .. } if tool == "ToolSearch")), "{events:?}");
    let journal = state.journal();
    assert_eq!(journal[0].answer, "tool_use:ToolSearch");
    assert!(
        journal[0].note.as_deref().unwrap().starts_with("inserted:"),
        "{:?}",
        journal[0].note
    );
    // The next request carries the loaded tool: the same step now calls it.
    let (_, body) = call(
        &state,
        "/v1/messages",
        &offering(1, &["Bash", "ToolSearch", "TaskStop"], &["Monitor"]),
    )
    .await;
    assert!(body.contains("\"name\":\"TaskStop\""), "{body}");
    assert_eq!(
        state.journal()[1].step,
        Some(0),
        "the step was held for the search"
    );
    // And the script goes on from there.
    let (_, body) = call(
        &state,
        "/v1/messages",
        &offering(2, &["Bash", "ToolSearch", "TaskStop"], &["Monitor"]),
    )
    .await;
    assert!(body.contains("Stopped."), "{body}");
}

#[tokio::test]
async fn a_tool_offered_directly_is_called_with_no_search() {
    let (state, mut rx) = stop_state();
    // 2.1.228: TaskStop is a regular tool, there is no ToolSearch.
    let (_, body) = call(
        &state,
        "/v1/messages",
        &offering(0, &["Bash", "TaskStop"], &[]),
    )
    .await;
    assert!(body.contains("\"name\":\"TaskStop\""), "{body}");
    assert!(!body.contains("ToolSearch"), "{body}");
    let events = drain(&mut rx).await;
    assert!(
        !events
            .iter()
            .any(|k| matches!(k, EventKind::ToolCall { inserted: true, .. }))
    );
}

#[tokio::test]
async fn a_tool_not_offered_at_all_ends_the_turn_and_says_so() {
    let (state, mut rx) = stop_state();
    let mut body = offering(0, &["Bash"], &[]);
    let (_, answer) = {
        let response = app(state.clone())
            .oneshot(
                Request::post("/v1/messages")
                    .header("content-type", "application/json")
                    .header("user-agent", "claude-cli/2.1.228 (external, sdk-cli)")
                    .body(Body::from(body.take().to_string()))
                    .unwrap(),
            )
            .await
            .unwrap();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        ((), String::from_utf8(bytes.to_vec()).unwrap())
    };
    assert!(
        answer.contains("2.1.228 offers no `TaskStop` tool"),
        "{answer}"
    );
    assert!(answer.contains("end_turn"), "{answer}");
    let events = drain(&mut rx).await;
    assert!(
        events.iter().any(|k| matches!(k, EventKind::ToolUnavailable { tool, cli } if tool == "TaskStop" && cli.as_deref() == Some("2.1.228"))),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_search_that_does_not_load_the_tool_is_not_repeated() {
    let (state, mut rx) = stop_state();
    let deferred = offering(0, &["Bash", "ToolSearch"], &["TaskStop"]);
    let (_, first) = call(&state, "/v1/messages", &deferred).await;
    assert!(first.contains("select:TaskStop"), "{first}");
    // Still deferred after the search: the tool cannot be had, and the run says so.
    let (_, second) = call(
        &state,
        "/v1/messages",
        &offering(1, &["Bash", "ToolSearch"], &["TaskStop"]),
    )
    .await;
    assert!(!second.contains("select:TaskStop"), "{second}");
    let events = drain(&mut rx).await;
    assert!(
        events
            .iter()
            .any(|k| matches!(k, EventKind::ToolUnavailable { .. })),
        "{events:?}"
    );
}
