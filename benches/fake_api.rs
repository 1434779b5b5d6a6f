//! Benchmark: the fake Messages API's per-request latency (p50/p99) against a baseline server
//! on the same stack (axum, loopback, keep-alive) that answers every request with the same SSE
//! bytes and does nothing else. The ratio is the cost of parsing, routing and journaling a
//! request the size of a real CLI request.
//!
//! `cargo bench --bench fake_api` (or `just bench`). WAKEPROBE_BENCH_REQUESTS sets the count.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::post;
use indexmap::IndexMap;
use serde_json::json;
use wakeprobe::evidence::clock::RunClock;
use wakeprobe::fake_api::{self, ApiConfig, ApiState, reply};
use wakeprobe::scenario::Step;

/// A body shaped like a real request: 12 tool schemas, a system prompt, 24 messages.
fn body(agent: &str, assistants: usize) -> Vec<u8> {
    let tools: Vec<_> = (0..12)
        .map(|i| json!({"name": format!("Tool{i}"), "description": "x".repeat(2000),
            "input_schema": {"type": "object", "properties": {"command": {"type": "string", "description": "y".repeat(1500)}}}}))
        .collect();
    let mut messages = vec![json!({"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>context</system-reminder>"},
        {"type": "text", "text": format!("Do the work.\n\n[wakeprobe:agent={agent}]")}]})];
    for i in 0..assistants {
        messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {"command": "true"}}]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "z".repeat(400)}]}));
    }
    serde_json::to_vec(&json!({"model": "m", "stream": true, "max_tokens": 1000,
        "system": [{"type": "text", "text": "s".repeat(7000)}], "tools": tools, "messages": messages}))
    .unwrap()
}

fn script(len: usize) -> IndexMap<String, Vec<Step>> {
    let steps = (0..len)
        .map(|i| Step {
            say: Some(format!("step {i}")),
            calls: vec![],
            think: Duration::ZERO,
            until: None,
            max_repeats: 1,
            line: 1,
        })
        .collect();
    IndexMap::from([("main".to_string(), steps)])
}

/// Sends `bodies` over one keep-alive connection; returns each request's latency.
fn drive(addr: SocketAddr, bodies: &[Vec<u8>]) -> Vec<Duration> {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_nodelay(true).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    let mut latencies = Vec::with_capacity(bodies.len());
    for body in bodies {
        let start = Instant::now();
        write!(
            writer,
            "POST /v1/messages?beta=true HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        )
        .unwrap();
        writer.write_all(body).unwrap();
        read_chunked_response(&mut reader);
        latencies.push(start.elapsed());
    }
    latencies
}

/// Reads one HTTP/1.1 response with a chunked or sized body, to its end.
fn read_chunked_response(reader: &mut BufReader<TcpStream>) {
    let mut line = String::new();
    let mut chunked = false;
    let mut length = 0usize;
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let lower = line.to_ascii_lowercase();
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
        if line == "\r\n" {
            break;
        }
    }
    if !chunked {
        let mut buf = vec![0; length];
        reader.read_exact(&mut buf).unwrap();
        return;
    }
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let size = usize::from_str_radix(line.trim(), 16).unwrap();
        let mut buf = vec![0; size + 2];
        reader.read_exact(&mut buf).unwrap();
        if size == 0 {
            break;
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let n: usize = std::env::var("WAKEPROBE_BENCH_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // Each request is a new step of `main` (assistant count grows), like a real conversation.
    let bodies: Vec<Vec<u8>> = (0..n).map(|i| body("main", i % 12)).collect();
    let sse = reply::Answer {
        id: "msg_1".into(),
        model: "m".into(),
        blocks: vec![reply::Block::Text("step 1".into())],
        stop_reason: "end_turn",
        stop_sequence: None,
        input_tokens: 10,
    }
    .to_sse();

    let (fake_addr, base_addr) = runtime.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move { while rx.recv().await.is_some() {} });
        let journal = tempfile::tempdir().unwrap().keep();
        let state = ApiState::new(
            ApiConfig {
                script: script(n + 1),
                track_command: "wp-track".into(),
                evidence_dir: Some(journal),
                faults: vec![],
                work_ends: None,
                triggers: Default::default(),
                notifications: wakeprobe::fake_api::request::parse_notifications,
            },
            RunClock::start(),
            tx,
        );
        let fake = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let fake_addr = fake.local_addr().unwrap();
        tokio::spawn(async move { fake_api::serve(fake, state).await.unwrap() });
        let sse = Arc::new(sse);
        let baseline = axum::Router::new().route(
            "/v1/messages",
            post(move |_body: axum::body::Bytes| {
                let sse = sse.clone();
                async move {
                    (
                        [("content-type", "text/event-stream")],
                        axum::body::Body::from(sse.as_ref().clone()),
                    )
                }
            }),
        );
        let base = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_addr = base.local_addr().unwrap();
        tokio::spawn(async move {
            use axum::serve::ListenerExt;
            let base = base.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            axum::serve(base, baseline).await.unwrap()
        });
        (fake_addr, base_addr)
    });

    // Warm up both, then measure them interleaved in rounds so drift hits both alike.
    drive(fake_addr, &bodies[..20.min(n)]);
    drive(base_addr, &bodies[..20.min(n)]);
    let (mut fake, mut base) = (Vec::new(), Vec::new());
    for chunk in bodies.chunks(250) {
        base.extend(drive(base_addr, chunk));
        fake.extend(drive(fake_addr, chunk));
    }
    fake.sort();
    base.sort();
    let (f50, f99, b50, b99) = (
        percentile(&fake, 0.5),
        percentile(&fake, 0.99),
        percentile(&base, 0.5),
        percentile(&base, 0.99),
    );
    println!(
        "fake API per-request latency over {n} requests of {} KiB (keep-alive, loopback):",
        bodies[0].len() / 1024
    );
    println!(
        "  baseline (same stack, static answer): p50 {:>8.1} µs   p99 {:>8.1} µs",
        b50.as_secs_f64() * 1e6,
        b99.as_secs_f64() * 1e6
    );
    println!(
        "  fake API (parse, route, journal):     p50 {:>8.1} µs   p99 {:>8.1} µs",
        f50.as_secs_f64() * 1e6,
        f99.as_secs_f64() * 1e6
    );
    println!(
        "  ratio fake/baseline:                  p50 {:>8.2}x     p99 {:>8.2}x",
        f50.as_secs_f64() / b50.as_secs_f64(),
        f99.as_secs_f64() / b99.as_secs_f64()
    );
}
