//! The end of every run, the same on every path: close the session, cut the supervisor's
//! lifeline (it SIGTERMs then SIGKILLs every descendant, orphans included), drain every
//! evidence channel, read the transcripts, and sweep the process table for anything still
//! carrying the run's tag.

use std::collections::HashSet;
use std::time::Duration;

use super::launch::Launched;
use super::recorder::Recorder;
use crate::backend;
use crate::evidence::wire::WireMessage;
use crate::evidence::{Event, EventKind, ExitDesc, Source};
use crate::os::procs;
use crate::scenario::MAIN_AGENT;

/// How long the supervisor may take to clean up before it is killed itself.
const SUPERVISOR_LIMIT: Duration = Duration::from_secs(30);
/// How long each output reader may take to reach the end of its stream.
const READER_LIMIT: Duration = Duration::from_secs(2);

/// Stops everything the run started and gathers the last of its evidence into `rec`.
pub async fn shut_down(run: &mut Launched, rec: &mut Recorder) {
    run.input.close().await;
    run.lifeline.cut();
    if tokio::time::timeout(SUPERVISOR_LIMIT, run.supervisor.wait())
        .await
        .is_err()
    {
        tracing::warn!("supervisor did not finish cleaning up; killing it");
        procs::signal(run.supervisor_pid, procs::Signal::KILL);
        let _ = run.supervisor.wait().await;
    }
    for reader in run.readers.drain(..) {
        let _ = tokio::time::timeout(READER_LIMIT, reader).await;
    }
    run.runtime_io.finish().await;
    while let Ok((t, line)) = run.line_rx.try_recv() {
        rec.line(t, line);
    }
    run.socket.flush().await;
    while let Ok(event) = run.api_rx.try_recv() {
        rec.api(event);
    }
    // After the fake API's: a runtime's line names the tool call it answers.
    while let Ok((t, origin, line)) = run.rt_rx.try_recv() {
        rec.runtime_line(t, origin, &line);
    }
    // What is left on the socket, then what could not reach it (it was closed) and went to
    // the fallback file.
    let pending: Vec<WireMessage> = std::iter::from_fn(|| run.wire_rx.try_recv().ok()).collect();
    for message in pending
        .into_iter()
        .chain(crate::evidence::transcript::read_jsonl(
            &run.sandbox.fallback_log(),
        ))
    {
        rec.wire(message);
    }
    run.server.abort();
    if let Some(screen) = run.screen.take() {
        for event in screen.finish().await {
            rec.push(event);
        }
    }
    read_transcripts(run, rec);
    for (pid, command) in sweep(&run.run_tag).await {
        rec.driver(EventKind::Leftover { pid, command }, None);
    }
    drop_redundant_vanishes(&mut rec.events);
    rec.normalizer.reattribute(&mut rec.events);
}

/// The transcripts, read with seed 004's rules.
fn read_transcripts(run: &Launched, rec: &mut Recorder) {
    for (_, reading) in crate::evidence::transcript::read_folder(&run.sandbox.transcripts()) {
        let agent = match &reading.agent_id {
            Some(id) => rec.normalizer.agent_name(id),
            None => Some(MAIN_AGENT.to_string()),
        };
        let t_ms = reading
            .timestamp
            .as_deref()
            .and_then(crate::evidence::transcript::unix_ms)
            .map(|ms| ms.saturating_sub(run.started_unix_ms) as f64)
            .unwrap_or_else(|| rec.now_ms());
        for child in &reading.async_launches {
            let name = rec
                .normalizer
                .agent_name(child)
                .unwrap_or_else(|| child.clone());
            rec.push(transcript_fact(
                t_ms,
                &agent,
                "async-launch".into(),
                format!(
                    "the Agent call for `{name}` returned `async_launched`: a launch, not the child's outcome"
                ),
            ));
        }
        rec.push(transcript_fact(
            t_ms,
            &agent,
            format!("status {}", reading.status.as_str()),
            reading.reason.clone(),
        ));
    }
}

fn transcript_fact(t_ms: f64, agent: &Option<String>, fact: String, detail: String) -> Event {
    Event {
        t_ms,
        source: Source::Transcript,
        agent: agent.clone(),
        kind: EventKind::TranscriptFact { fact, detail },
    }
}

/// Kills anything still carrying the run's tag; returns what it found.
async fn sweep(run_tag: &str) -> Vec<(u32, String)> {
    let mut found: Vec<(u32, String)> = Vec::new();
    for _ in 0..20 {
        let left = procs::tagged(backend::RUN_TAG_ENV, run_tag);
        if left.is_empty() {
            break;
        }
        for p in left {
            if !found.iter().any(|(pid, _)| *pid == p.pid) {
                let cmd = procs::cmdline(p.pid);
                found.push((p.pid, if cmd.is_empty() { p.comm.clone() } else { cmd }));
            }
            procs::signal(p.pid, procs::Signal::KILL);
        }
        tokio::time::sleep(Duration::from_millis(50)).await; // a SIGKILLed process needs a moment to go
    }
    found
}

/// A tracker that reported its own end also vanished; keep only the report.
fn drop_redundant_vanishes(events: &mut Vec<Event>) {
    let reported: HashSet<u32> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TrackEnded { pid, .. } => Some(*pid),
            _ => None,
        })
        .collect();
    events.retain(|e| {
        !matches!(&e.kind, EventKind::ProcessExited { pid, exit: ExitDesc::Vanished, .. } if reported.contains(pid))
    });
}
