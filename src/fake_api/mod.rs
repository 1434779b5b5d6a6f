//! The scripted fake of the Anthropic Messages API: routing, answers, and the request journal.
//!
//! [`app`] builds the axum `Router`; the driver binds it to `127.0.0.1:0` inside the run's
//! network namespace. Each request is routed to an agent by the tag the harness put in that
//! agent's prompt ([`request::agent_tag`]), and to a step by the number of assistant messages it
//! carries (so a retried request gets the same step again). Every request is journaled and
//! becomes an [`Event`]; requests the script does not cover get a short harmless answer, never an
//! error that would derail the CLI.

pub mod fault;
pub mod reply;
pub mod request;

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use indexmap::IndexMap;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;

use crate::evidence::clock::RunClock;
use crate::evidence::{Event, EventKind, Notification, Route, Source};
use crate::scenario::{Step, ToolCall, Until};
use reply::{Answer, Block};
use request::RequestView;

/// What the fake API serves.
#[derive(Clone)]
pub struct ApiConfig {
    /// Each agent's steps, `main` first.
    pub script: IndexMap<String, Vec<Step>>,
    /// The command that wraps a tracked Bash command (`wp-track`).
    pub track_command: String,
    /// Where the journal and request bodies go; `None` keeps them in memory only.
    pub evidence_dir: Option<PathBuf>,
    /// What to break, and on which requests (`[[faults]]`).
    pub faults: Vec<crate::scenario::Fault>,
    /// Which tracked commands have ended, for faults aimed at the first request after one
    /// did; `None` when nothing reports them (then such a fault never fires).
    pub work_ends: Option<Arc<dyn fault::WorkEnds>>,
    /// The triggers the harness has seen, for faults timed from one.
    pub triggers: fault::TriggerTimes,
    /// How the runtime's notifications show in a request.
    pub notifications: request::Recognise,
}

/// Shared state of one fake API instance (one run).
pub struct ApiState {
    config: ApiConfig,
    clock: RunClock,
    sink: UnboundedSender<Event>,
    seq: AtomicU64,
    cursors: Mutex<HashMap<String, Cursor>>,
    journal: Mutex<Vec<JournalEntry>>,
    /// Spawned agent -> the tool_use id of the Agent call that started it.
    spawned: Mutex<HashMap<String, String>>,
    injector: fault::Injector,
}

#[derive(Debug, Default)]
struct Cursor {
    step: usize,
    /// Assistant-message count of the last request served: a request with the same count is a
    /// retry of that step.
    last_count: Option<usize>,
    repeats: u32,
    /// The answer to the last request was a `ToolSearch` the API inserted: the next request
    /// carries its result and gets the same step again.
    hold: bool,
    /// Tools searched for at the current step (each at most once).
    searched: Vec<String>,
}

/// One line of `api-journal.jsonl`.
#[derive(Debug, Clone, Serialize)]
pub struct JournalEntry {
    pub seq: u64,
    pub t_ms: f64,
    pub method: String,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub route: Route,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
    pub stream: bool,
    pub assistant_messages: usize,
    pub messages: usize,
    pub tools: usize,
    pub system_head: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notifications: Vec<Notification>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notifications_seen: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Which credential the request carried: `dummy` (the run's own), `none`, or `other`.
    pub credential: String,
    /// Header names, for shape comparisons across versions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    /// What was answered: `text`, `tool_use:Bash`, ...
    pub answer: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ApiState {
    pub fn new(config: ApiConfig, clock: RunClock, sink: UnboundedSender<Event>) -> Arc<ApiState> {
        if let Some(dir) = &config.evidence_dir {
            let _ = std::fs::create_dir_all(dir.join("requests"));
        }
        Arc::new(ApiState {
            injector: fault::Injector::new(config.faults.clone()),
            config,
            clock,
            sink,
            seq: AtomicU64::new(0),
            cursors: Mutex::new(HashMap::new()),
            journal: Mutex::new(Vec::new()),
            spawned: Mutex::new(HashMap::new()),
        })
    }

    /// A copy of the journal so far.
    pub fn journal(&self) -> Vec<JournalEntry> {
        self.journal.lock().expect("journal lock").clone()
    }

    fn emit(&self, t_ms: f64, agent: Option<&str>, kind: EventKind) {
        let _ = self.sink.send(Event {
            t_ms,
            source: Source::Api,
            agent: agent.map(str::to_string),
            kind,
        });
    }

    fn record(&self, entry: JournalEntry, body: Option<&Value>) {
        if let Some(dir) = &self.config.evidence_dir {
            if let Some(body) = body {
                let path = dir.join("requests").join(format!("{:04}.json", entry.seq));
                let _ = std::fs::write(
                    path,
                    serde_json::to_vec(&slim_body(body)).unwrap_or_default(),
                );
            }
            if let Ok(mut line) = serde_json::to_vec(&entry) {
                line.push(b'\n');
                if let Ok(mut f) = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(dir.join("api-journal.jsonl"))
                {
                    let _ = f.write_all(&line);
                }
            }
        }
        self.journal.lock().expect("journal lock").push(entry);
    }

    /// Picks the step for a request from a known agent, advancing its cursor.
    fn next_step(&self, agent: &str, view: &RequestView) -> Option<usize> {
        let steps = &self.config.script[agent];
        let mut cursors = self.cursors.lock().expect("cursor lock");
        let cursor = cursors.entry(agent.to_string()).or_default();
        match cursor.last_count {
            None => {}
            Some(count) if count == view.assistant_messages => {}
            Some(_) if cursor.hold => cursor.hold = false,
            Some(_) => {
                cursor.searched.clear();
                let current = steps.get(cursor.step);
                let repeat = current.is_some_and(|s| {
                    s.until == Some(Until::Notified)
                        && view.new_notifications.is_empty()
                        && cursor.repeats < s.max_repeats
                });
                if repeat {
                    cursor.repeats += 1;
                } else {
                    cursor.step += 1;
                    cursor.repeats = 0;
                }
            }
        }
        cursor.last_count = Some(view.assistant_messages);
        (cursor.step < steps.len()).then_some(cursor.step)
    }

    /// Whether to insert a `ToolSearch` for `tool` at the agent's current step: once only, so
    /// a search that does not load the tool cannot loop.
    fn search_once(&self, agent: &str, tool: &str) -> bool {
        let mut cursors = self.cursors.lock().expect("cursor lock");
        let cursor = cursors.entry(agent.to_string()).or_default();
        if cursor.searched.iter().any(|t| t == tool) {
            return false;
        }
        cursor.searched.push(tool.to_string());
        cursor.hold = true;
        true
    }
}

/// The request body as journaled: everything but the tool schemas, which are large and fixed.
fn slim_body(body: &Value) -> Value {
    let mut body = body.clone();
    if let Some(tools) = body.get_mut("tools") {
        let names: Vec<Value> = tools
            .as_array()
            .map(|t| t.iter().filter_map(|t| t.get("name").cloned()).collect())
            .unwrap_or_default();
        *tools = Value::Array(names);
    }
    body
}

/// The router: `POST /v1/messages`, `POST /v1/messages/count_tokens`, and a logged 404 for
/// anything else.
pub fn app(state: Arc<ApiState>) -> Router {
    Router::new()
        .route("/v1/messages", post(messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .fallback(unknown)
        .with_state(state)
}

/// Serves the fake API on `listener` until the task is dropped. TCP_NODELAY matters: an SSE
/// body goes out as several small writes, and Nagle's algorithm against the client's delayed
/// ACK would hold the last one back by ~40 ms per request.
pub async fn serve(listener: tokio::net::TcpListener, state: Arc<ApiState>) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app(state)).await
}

async fn count_tokens(body: Bytes) -> Json<Value> {
    Json(json!({"input_tokens": body.len() as u64 / 4 + 1}))
}

/// Classifies the request's credential without recording it.
fn credential(headers: &HeaderMap) -> String {
    let values: Vec<&str> = ["x-api-key", "authorization"]
        .iter()
        .filter_map(|h| headers.get(*h).and_then(|v| v.to_str().ok()))
        .collect();
    if values.is_empty() {
        "none".into()
    } else if values
        .iter()
        .all(|v| v.trim_start_matches("Bearer ").trim() == crate::backend::DUMMY_KEY)
    {
        "dummy".into()
    } else {
        "other".into()
    }
}

fn header_names(headers: &HeaderMap) -> Vec<String> {
    let mut names: Vec<String> = headers.keys().map(|k| k.as_str().to_string()).collect();
    names.sort();
    names.dedup();
    names
}

async fn unknown(
    State(state): State<Arc<ApiState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let seq = state.seq.fetch_add(1, Ordering::SeqCst) + 1;
    tracing::info!(%method, %uri, "fake API: request to an endpoint it does not serve (journaled)");
    state.record(
        JournalEntry {
            seq,
            t_ms: state.clock.now_ms(),
            method: method.to_string(),
            path: uri.to_string(),
            agent: None,
            route: Route::Unrouted,
            step: None,
            stream: false,
            assistant_messages: 0,
            messages: 0,
            tools: 0,
            system_head: String::new(),
            notifications: vec![],
            notifications_seen: vec![],
            user_agent: None,
            session_id: None,
            credential: credential(&headers),
            headers: header_names(&headers),
            answer: "404".into(),
            note: Some("no such endpoint".into()),
        },
        None,
    );
    let error = json!({"type": "error", "error": {"type": "not_found_error",
        "message": format!("wakeprobe fake API serves POST /v1/messages and /v1/messages/count_tokens, not {method} {uri}")}});
    (StatusCode::NOT_FOUND, Json(error)).into_response()
}

/// How the CLI's request for a background agent's activity line begins.
const ACTIVITY_SUMMARY_PROMPT: &str = "Describe your most recent action in 3-5 words";

/// Recognises a side call (not an agent turn) and names it.
fn side_call(view: &RequestView) -> Option<String> {
    // opencode asks for every session's title, beside the session's first turn.
    if view.system_head.starts_with("You are a title generator") {
        return Some("title".into());
    }
    if view.stop_sequences.iter().any(|s| s == "</block>")
        || view.system_head.starts_with("You are a security monitor")
    {
        return Some("safety-classifier".into());
    }
    // An interactive session asks for a line on what a background agent is doing while a long
    // tool call runs (2.1.332, about 30 s into it): the agent's own conversation with a
    // request appended, tools and all. It is not the agent's next step.
    if view
        .closing_text
        .as_deref()
        .is_some_and(|t| t.starts_with(ACTIVITY_SUMMARY_PROMPT))
    {
        return Some("activity-summary".into());
    }
    if view.tool_names.is_empty() {
        return Some(
            if view.stream {
                "no-tools"
            } else {
                "non-streaming"
            }
            .into(),
        );
    }
    None
}

/// One request as routed: to which agent and step, or as what kind of call.
struct Routed {
    route: Route,
    agent: Option<String>,
    step: Option<usize>,
}

/// What the fake API answers one request with, before the bytes are sent.
struct Reply {
    answer: Answer,
    think: std::time::Duration,
    /// Events recorded once the answer has been sent.
    after_send: Vec<EventKind>,
    note: Option<String>,
}

async fn messages(
    State(state): State<Arc<ApiState>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let t_ms = state.clock.now_ms();
    let seq = state.seq.fetch_add(1, Ordering::SeqCst) + 1;
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        tracing::warn!(seq, "fake API: request body is not JSON");
        let error = json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "wakeprobe fake API: the request body is not JSON"}});
        return (StatusCode::BAD_REQUEST, Json(error)).into_response();
    };
    let view = RequestView::parse_with(&body, state.config.notifications);
    let routed = route(&state, &view);
    // A fault is decided before the answer: an attempt that loses its answer must not move
    // the script (a ToolSearch inserted, an agent spawned), so its retry gets the same step.
    let hit = fault_hit(&state, &routed, &view, t_ms).await;
    let answer_lost = hit
        .as_ref()
        .is_some_and(|h| h.fault.kind.loses_the_answer());
    let user_agent = header_text(&headers, "user-agent");
    let reply = reply(&state, &routed, &view, &body, seq, answer_lost, &user_agent);
    let note = hit.as_ref().map(fault::Hit::detail).or(reply.note.clone());
    let answer_label = match &hit {
        Some(h) if answer_lost => format!("fault:{}", h.fault.kind.as_str()),
        _ => describe(&reply.answer),
    };
    let entry = journal_entry(
        (seq, t_ms),
        &uri,
        &headers,
        &routed,
        &view,
        answer_label,
        note,
    );
    state.record(entry, Some(&body));
    state.emit(
        t_ms,
        routed.agent.as_deref(),
        EventKind::ModelRequest {
            seq,
            route: routed.route.clone(),
            step: routed.step,
            notifications: view.new_notifications.clone(),
            injected: view.injected.clone(),
            tool_errors: view.tool_errors.clone(),
            user_text: view.user_text.clone(),
            answer_lost,
        },
    );
    if let Some(h) = &hit {
        let _ = state.sink.send(Event {
            t_ms,
            source: Source::Fault,
            agent: routed.agent.clone(),
            kind: EventKind::FaultInjected {
                seq,
                fault: h.fault.kind,
                detail: h.detail(),
            },
        });
        if let Some(response) = fault::status_answer(h, seq) {
            return response;
        }
    }
    respond(&state, seq, &view, reply, routed.agent, hit.as_ref())
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Routes a request: an agent's scripted turn (or past its script), a side call, or nobody's.
fn route(state: &ApiState, view: &RequestView) -> Routed {
    let known_agent = view
        .tag
        .clone()
        .filter(|a| state.config.script.contains_key(a));
    match (known_agent, side_call(view)) {
        (Some(agent), None) => match state.next_step(&agent, view) {
            Some(step) => Routed {
                route: Route::Turn,
                agent: Some(agent),
                step: Some(step),
            },
            None => Routed {
                route: Route::ScriptExhausted,
                agent: Some(agent),
                step: None,
            },
        },
        (agent, Some(what)) => Routed {
            route: Route::SideCall(what),
            agent,
            step: None,
        },
        (None, None) => Routed {
            route: Route::Unrouted,
            agent: None,
            step: None,
        },
    }
}

/// The fault that hits this request, if any (only an agent's turns are hit).
async fn fault_hit(
    state: &ApiState,
    routed: &Routed,
    view: &RequestView,
    t_ms: f64,
) -> Option<fault::Hit> {
    let (Route::Turn | Route::ScriptExhausted, Some(agent)) = (&routed.route, &routed.agent) else {
        return None;
    };
    let ended = match &state.config.work_ends {
        Some(works) if state.injector.waits_for_work(agent) => works
            .ended()
            .await
            .into_iter()
            .map(|(work, t_ns)| (work, state.clock.ms_at(t_ns)))
            .collect(),
        _ => Default::default(),
    };
    let request = fault::Request {
        agent,
        carries_notification: !view.new_notifications.is_empty(),
        streaming: view.stream,
        arrived_ms: t_ms,
        ended: &ended,
        triggers: &state.config.triggers,
    };
    state.injector.hit(&request)
}

/// The answer for a routed request: a broken placeholder when a fault takes the answer, the
/// agent's step, the end of its script, or a side call's harmless reply.
fn reply(
    state: &ApiState,
    routed: &Routed,
    view: &RequestView,
    body: &Value,
    seq: u64,
    answer_lost: bool,
    user_agent: &Option<String>,
) -> Reply {
    let plain = |answer| Reply {
        answer,
        think: Default::default(),
        after_send: vec![],
        note: None,
    };
    match (&routed.route, routed.step) {
        _ if answer_lost => plain(text_answer(
            seq,
            view,
            "(wakeprobe fault: this answer is broken.)",
        )),
        (Route::Turn, Some(index)) => {
            let agent = routed.agent.as_deref().expect("a turn has an agent");
            let (answer, think, after_send, note) =
                turn_answer(state, (agent, index, seq), view, body, user_agent);
            Reply {
                answer,
                think,
                after_send,
                note,
            }
        }
        (Route::ScriptExhausted, _) => {
            let text = format!(
                "(wakeprobe: the script for `{}` has no more steps; ending the turn.)",
                routed.agent.as_deref().unwrap_or("?")
            );
            Reply {
                answer: text_answer(seq, view, &text),
                think: Default::default(),
                after_send: vec![EventKind::TurnEnded { seq, text }],
                note: None,
            }
        }
        (Route::SideCall(what), _) if what == "safety-classifier" => {
            let mut answer = text_answer(seq, view, "<block>no");
            answer.stop_reason = "stop_sequence";
            answer.stop_sequence = Some("</block>".into());
            plain(answer)
        }
        _ => plain(text_answer(seq, view, "OK.")),
    }
}

/// The journal's line for one request.
fn journal_entry(
    (seq, t_ms): (u64, f64),
    uri: &Uri,
    headers: &HeaderMap,
    routed: &Routed,
    view: &RequestView,
    answer: String,
    note: Option<String>,
) -> JournalEntry {
    JournalEntry {
        seq,
        t_ms,
        method: "POST".into(),
        path: uri.to_string(),
        agent: routed.agent.clone(),
        route: routed.route.clone(),
        step: routed.step,
        stream: view.stream,
        assistant_messages: view.assistant_messages,
        messages: view.message_count,
        tools: view.tool_names.len(),
        system_head: view.system_head.chars().take(80).collect(),
        notifications: view.new_notifications.clone(),
        notifications_seen: view.all_notification_ids.clone(),
        user_agent: header_text(headers, "user-agent"),
        session_id: header_text(headers, "x-claude-code-session-id")
            .or_else(|| header_text(headers, "x-session-id")),
        credential: credential(headers),
        headers: header_names(headers),
        answer,
        note,
    }
}

/// Sends the answer: SSE or JSON, paced by its think time, broken where a stream fault says;
/// the answer's own events are recorded once it is sent.
fn respond(
    state: &Arc<ApiState>,
    seq: u64,
    view: &RequestView,
    reply: Reply,
    agent: Option<String>,
    hit: Option<&fault::Hit>,
) -> Response {
    let (content_type, bytes) = if view.stream {
        ("text/event-stream", reply.answer.to_sse())
    } else {
        (
            "application/json",
            reply.answer.to_message().to_string().into_bytes(),
        )
    };
    let state_for_send = state.clone();
    let after_send = reply.after_send;
    let on_send = Box::new(move || {
        let t = state_for_send.clock.now_ms();
        for kind in after_send {
            state_for_send.emit(t, agent.as_deref(), kind);
        }
    });
    // A fault left here breaks a stream (status faults answered above; a stream fault passes
    // over a non-streaming request).
    let pieces = fault::stream_pieces(&bytes, reply.think, hit.map(|h| &h.fault));
    let stream = fault::AnswerBody::new(pieces, on_send);
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CACHE_CONTROL, "no-cache")
        .header("request-id", format!("req_wakeprobe_{seq}"))
        .body(Body::from_stream(stream))
        .expect("static response parts are valid")
}

/// The answer to a request that is an agent's next scripted step: the step itself, or the
/// `ToolSearch` that loads a deferred tool first, or the end of the run where the version
/// does not offer the tool. Returns the answer, its think time, the events to record once it
/// is sent, and the journal's note.
fn turn_answer(
    state: &ApiState,
    (agent, index, seq): (&str, usize, u64),
    view: &RequestView,
    body: &Value,
    user_agent: &Option<String>,
) -> (Answer, std::time::Duration, Vec<EventKind>, Option<String>) {
    let step = &state.config.script[agent][index];
    let offers: Vec<Offer> = step.calls.iter().map(|c| offer(view, &c.tool)).collect();
    let spawned = state.spawned.lock().expect("spawn lock").clone();
    // A deferred tool is loaded first (one ToolSearch each), then the whole message is sent.
    let deferred = offers.iter().find_map(|o| match o {
        Offer::Deferred(tool) if state.search_once(agent, tool) => Some(tool.clone()),
        _ => None,
    });
    // Every tool under the name this CLI offers it by, with a note for an alias; or none,
    // where one is missing (or deferred and already searched for).
    let direct: Option<Vec<(String, Option<String>)>> = offers
        .iter()
        .map(|o| match o {
            Offer::Direct(name, alias) => Some((name.clone(), alias.clone())),
            Offer::Deferred(_) | Offer::Missing(_) => None,
        })
        .collect();
    let (answer, events, alias) = match (deferred, direct) {
        (Some(tool), _) => search_answer(agent, seq, view, &tool),
        (None, Some(names)) => {
            let aliases = names.iter().find_map(|(_, a)| a.clone());
            let names: Vec<String> = names.into_iter().map(|(n, _)| n).collect();
            let (answer, events, unfilled) = scripted_answer(
                &state.config,
                (agent, step, seq),
                &names,
                view,
                body,
                &spawned,
            );
            (answer, events, unfilled.or(aliases))
        }
        (None, None) => {
            let tool = offers
                .iter()
                .find_map(|o| match o {
                    Offer::Deferred(tool) | Offer::Missing(tool) => Some(tool.as_str()),
                    Offer::Direct(..) => None,
                })
                .unwrap_or_default();
            unavailable_answer(seq, view, tool, user_agent, step.line)
        }
    };
    for e in &events {
        if let EventKind::ToolCall {
            spawn: Some(s),
            tool_use_id,
            ..
        } = e
        {
            state
                .spawned
                .lock()
                .expect("spawn lock")
                .insert(s.clone(), tool_use_id.clone());
        }
    }
    (answer, step.think, events, alias)
}

fn text_answer(seq: u64, view: &RequestView, text: &str) -> Answer {
    Answer {
        id: format!("msg_wakeprobe_{seq:04}"),
        model: view.model.clone(),
        blocks: vec![Block::Text(text.to_string())],
        stop_reason: "end_turn",
        stop_sequence: None,
        input_tokens: 10,
    }
}

fn describe(answer: &Answer) -> String {
    answer
        .blocks
        .iter()
        .map(|b| match b {
            Block::Text(_) => "text".to_string(),
            Block::ToolUse { name, .. } => format!("tool_use:{name}"),
        })
        .collect::<Vec<_>>()
        .join("+")
}

/// Tool names that the CLI renamed across versions; the script says one, the CLI may offer the
/// other.
const TOOL_ALIASES: &[(&str, &str)] = &[("Agent", "Task"), ("Task", "Agent")];

/// How the CLI offers the tool a step calls.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Offer {
    /// In the request's `tools`, under this name (a note when it is an alias).
    Direct(String, Option<String>),
    /// Deferred: named in the request, loaded by a `ToolSearch` first.
    Deferred(String),
    /// Not offered at all.
    Missing(String),
}

fn offer(view: &RequestView, tool: &str) -> Offer {
    // A request with no tools says nothing about them: call the tool as written.
    if view.tool_names.is_empty() || view.tool_names.iter().any(|t| t == tool) {
        return Offer::Direct(tool.to_string(), None);
    }
    let names = std::iter::once(tool).chain(
        TOOL_ALIASES
            .iter()
            .filter(|(from, _)| *from == tool)
            .map(|(_, to)| *to),
    );
    for name in names {
        if view.tool_names.iter().any(|t| t == name) {
            let note = format!("tool `{tool}` offered as `{name}` by this CLI");
            return Offer::Direct(name.to_string(), Some(note));
        }
        if view.deferred_tools.iter().any(|t| t == name)
            && view.tool_names.iter().any(|t| t == "ToolSearch")
        {
            return Offer::Deferred(name.to_string());
        }
    }
    Offer::Missing(tool.to_string())
}

/// A `ToolSearch` that loads a deferred tool, inserted before the step that calls it.
fn search_answer(
    agent: &str,
    seq: u64,
    view: &RequestView,
    tool: &str,
) -> (Answer, Vec<EventKind>, Option<String>) {
    let tool_use_id = format!("toolu_wp{seq:04}_{}_search", agent.replace('-', "_"));
    let answer = Answer {
        id: format!("msg_wakeprobe_{seq:04}"),
        model: view.model.clone(),
        blocks: vec![Block::ToolUse {
            id: tool_use_id.clone(),
            name: "ToolSearch".into(),
            input: json!({"query": format!("select:{tool}")}),
        }],
        stop_reason: "tool_use",
        stop_sequence: None,
        input_tokens: 10,
    };
    let event = EventKind::ToolCall {
        seq,
        tool: "ToolSearch".into(),
        tool_use_id,
        background: false,
        spawn: None,
        track: None,
        teammate: None,
        target: None,
        inserted: true,
    };
    let note =
        format!("inserted: this CLI defers `{tool}`; loading it with ToolSearch select:{tool}");
    (answer, vec![event], Some(note))
}

/// The answer when the CLI does not offer a tool the step calls: the turn ends there, and the
/// event says why, so the run ends as `unknown` instead of following a broken script.
fn unavailable_answer(
    seq: u64,
    view: &RequestView,
    tool: &str,
    user_agent: &Option<String>,
    line: usize,
) -> (Answer, Vec<EventKind>, Option<String>) {
    let cli = user_agent
        .as_deref()
        .and_then(cli_version)
        .map(|v| format!("{v} offers"))
        .unwrap_or_else(|| "this CLI offers".into());
    let text = format!(
        "(wakeprobe: {cli} no `{tool}` tool, which the script's step at line {line} calls; ending the turn.)"
    );
    let event = EventKind::ToolUnavailable {
        tool: tool.to_string(),
        cli: user_agent.as_deref().and_then(cli_version),
    };
    let note = format!("{cli} no `{tool}` tool");
    (text_answer(seq, view, &text), vec![event], Some(note))
}

/// The version in a `claude-cli/2.1.332 (external, sdk-cli)` (or `opencode/1.18.33 ...`) user
/// agent.
fn cli_version(user_agent: &str) -> Option<String> {
    let rest = user_agent
        .strip_prefix("claude-cli/")
        .or_else(|| user_agent.strip_prefix("opencode/"))?;
    let version: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
        .collect();
    (!version.is_empty()).then_some(version)
}

/// Builds a scripted step's answer (calling each tool by `names`, the CLI's names for them, all
/// in one message), the events to emit once it is sent, and a note when a placeholder could
/// not be filled.
fn scripted_answer(
    config: &ApiConfig,
    (agent, step, seq): (&str, &Step, u64),
    names: &[String],
    view: &RequestView,
    body: &Value,
    spawned: &HashMap<String, String>,
) -> (Answer, Vec<EventKind>, Option<String>) {
    let mut blocks = Vec::new();
    let mut events = Vec::new();
    let mut note = None;
    if let Some(text) = &step.say {
        blocks.push(Block::Text(text.clone()));
    }
    for (i, (call, name)) in step.calls.iter().zip(names).enumerate() {
        let (block, event, unfilled) =
            call_block(config, (agent, seq, i), call, name, body, spawned);
        note = note.or(unfilled);
        blocks.push(block);
        events.push(event);
    }
    let stop_reason = if step.calls.is_empty() {
        events.push(EventKind::TurnEnded {
            seq,
            text: step.say.clone().unwrap_or_default(),
        });
        "end_turn"
    } else {
        "tool_use"
    };
    let answer = Answer {
        id: format!("msg_wakeprobe_{seq:04}"),
        model: view.model.clone(),
        blocks,
        stop_reason,
        stop_sequence: None,
        input_tokens: 10,
    };
    (answer, events, note)
}

/// The id of the `nth` (0-based) tool call of request `seq`: the first keeps the one-call form.
fn tool_use_id(seq: u64, agent: &str, nth: usize) -> String {
    let agent = agent.replace('-', "_");
    match nth {
        0 => format!("toolu_wp{seq:04}_{agent}"),
        n => format!("toolu_wp{seq:04}_{agent}_{}", n + 1),
    }
}

/// One tool call of an answer: its block (placeholders filled, the spawned agent's prompt
/// tagged, a tracked command wrapped), its event, and the placeholder it could not fill.
fn call_block(
    config: &ApiConfig,
    (agent, seq, nth): (&str, u64, usize),
    call: &ToolCall,
    name: &str,
    body: &Value,
    spawned: &HashMap<String, String>,
) -> (Block, EventKind, Option<String>) {
    let mut input = call.input.clone();
    let mut note = None;
    // A placeholder that cannot be filled stays as written: the CLI's answer shows it.
    let mut targets = Vec::new();
    if let Err(missing) = fill_runtime(&mut input, body, spawned, &mut targets) {
        note = Some(format!(
            "cannot fill `{{{{@{missing}}}}}` from this request"
        ));
    }
    if let Some(spawned) = &call.spawn
        && let Some(prompt) = input.get("prompt").and_then(Value::as_str)
    {
        input["prompt"] = format!("{prompt}\n\n{}", request::agent_tag(spawned)).into();
    }
    if let Some(track) = &call.track
        && let Some(command) = input.get("command").and_then(Value::as_str)
    {
        input["command"] = format!(
            "{} {track} {}",
            config.track_command,
            crate::os::subprocess::shell_quoted(command)
        )
        .into();
    }
    let tool_use_id = tool_use_id(seq, agent, nth);
    // Claude Code's `run_in_background`, opencode's `background`.
    let background = ["run_in_background", "background"]
        .iter()
        .any(|k| input.get(*k).and_then(Value::as_bool).unwrap_or(false));
    let teammate = call
        .spawn
        .as_ref()
        .and_then(|_| input.get("name").and_then(Value::as_str))
        .map(str::to_string);
    let event = EventKind::ToolCall {
        seq,
        tool: name.to_string(),
        tool_use_id: tool_use_id.clone(),
        background,
        spawn: call.spawn.clone(),
        track: call.track.clone(),
        teammate,
        target: targets.into_iter().next(),
        inserted: false,
    };
    let block = Block::ToolUse {
        id: tool_use_id,
        name: name.to_string(),
        input,
    };
    (block, event, note)
}

/// Fills run-time placeholders in a tool input: `{{@agent-id:NAME}}` becomes the CLI's id for
/// the spawned agent NAME, read from the Agent call's tool result in this request (`agentId: X`
/// or, for teammates, `agent_id: X`), and NAME joins `filled`. Returns the first placeholder
/// it could not fill.
fn fill_runtime(
    input: &mut Value,
    body: &Value,
    spawned: &HashMap<String, String>,
    filled: &mut Vec<String>,
) -> Result<(), String> {
    match input {
        Value::String(s) => {
            while let Some(start) = s.find("{{@") {
                let Some(len) = s[start..].find("}}") else {
                    break;
                };
                let inner = s[start + 3..start + len].trim().to_string();
                let name = inner.strip_prefix("agent-id:");
                let value = name
                    .and_then(|name| spawned.get(name))
                    .and_then(|tool_use_id| agent_id_in_result(body, tool_use_id))
                    .ok_or_else(|| inner.clone())?;
                filled.extend(name.map(str::to_string));
                s.replace_range(start..start + len + 2, &value);
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter_mut()
            .try_for_each(|v| fill_runtime(v, body, spawned, filled)),
        Value::Object(map) => map
            .values_mut()
            .try_for_each(|v| fill_runtime(v, body, spawned, filled)),
        _ => Ok(()),
    }
}

/// The agent id in the tool result answering `tool_use_id`.
fn agent_id_in_result(body: &Value, tool_use_id: &str) -> Option<String> {
    let messages = body.get("messages")?.as_array()?;
    let result = messages
        .iter()
        .filter_map(|m| m.get("content")?.as_array())
        .flatten()
        .find(|b| {
            b.get("type").and_then(Value::as_str) == Some("tool_result")
                && b.get("tool_use_id").and_then(Value::as_str) == Some(tool_use_id)
        })?;
    let text = request::collect_text(result.get("content"));
    ["agentId: ", "agent_id: "].iter().find_map(|key| {
        let start = text.find(key)? + key.len();
        let id: String = text[start..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '@' | '.'))
            .collect();
        (!id.is_empty()).then_some(id)
    })
}

#[cfg(test)]
mod tests;
