//! Injecting a scenario's faults into the fake API's answers: which request a fault hits
//! ([`Injector`]), and the broken answer itself ([`broken_answer`], [`AnswerBody`]).
//!
//! A fault is decided before the answer is computed, so an attempt that gets no usable answer
//! changes nothing in the script's state: the retry carries the same assistant messages and
//! gets the same step (see the cursor in `fake_api`).

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::Response;
use serde_json::json;

use crate::scenario::{Fault, FaultKind, FaultTarget, Trigger};

/// Which requests the faults hit, counted per agent.
pub struct Injector {
    faults: Vec<Fault>,
    state: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    /// Model requests seen per agent (every attempt).
    requests: HashMap<String, u32>,
    /// Attempts each fault has broken so far.
    fired: Vec<u32>,
}

/// Which tracked commands have ended, as the harness knows it when a request arrives.
pub trait WorkEnds: Send + Sync {
    /// Each tracked command that has ended, with the moment it ended (monotonic ns, as its
    /// tracker measured it), once every report the trackers sent before this call has been
    /// read: a tracker reports its command's end before it exits, so before the CLI can
    /// notice and make the request that follows.
    fn ended(&self) -> Pin<Box<dyn Future<Output = HashMap<String, u64>> + Send + '_>>;
}

/// When each trigger a fault counts from was first seen by the harness (ms on the run's
/// clock): the session loop writes, the fake API and the process faults read.
#[derive(Clone, Default)]
pub struct TriggerTimes(Arc<Mutex<Vec<(Trigger, f64)>>>);

impl TriggerTimes {
    /// When `trigger` was first seen, if it was.
    pub fn seen(&self, trigger: &Trigger) -> Option<f64> {
        let times = self.0.lock().expect("trigger lock");
        times.iter().find(|(t, _)| t == trigger).map(|(_, ms)| *ms)
    }

    /// Records `trigger` as seen at `ms`, unless it was seen before.
    pub fn record(&self, trigger: &Trigger, ms: f64) {
        let mut times = self.0.lock().expect("trigger lock");
        if !times.iter().any(|(t, _)| t == trigger) {
            times.push((trigger.clone(), ms));
        }
    }
}

/// One model request, as a fault's target sees it.
pub struct Request<'a> {
    pub agent: &'a str,
    pub carries_notification: bool,
    pub streaming: bool,
    /// When it arrived, on the run's clock (ms).
    pub arrived_ms: f64,
    /// The tracked commands known to have ended, each with its end on the run's clock
    /// (filled only when a fault waits for one). A command that ended while the request was
    /// being decided is not before it.
    pub ended: &'a HashMap<String, f64>,
    /// The triggers the harness has seen, and when.
    pub triggers: &'a TriggerTimes,
}

/// A fault hitting one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub fault: Fault,
    /// The agent's request number (1-based, every attempt).
    pub request: u32,
    /// Which of the fault's `times` attempts this is (1-based).
    pub attempt: u32,
}

impl Hit {
    /// What was done, for the timeline and the journal.
    pub fn detail(&self) -> String {
        let mut text = format!(
            "{} on `{}`'s request #{}",
            self.fault.kind.as_str(),
            self.fault.agent,
            self.request
        );
        if self.fault.times > 1 {
            text.push_str(&format!(
                " (attempt {} of {})",
                self.attempt, self.fault.times
            ));
        }
        if let Some(setting) = self.fault.setting() {
            text.push_str(&format!(", {setting}"));
        }
        text
    }
}

impl Injector {
    /// The faults on model requests of `faults` (the driver sends the process faults).
    pub fn new(faults: Vec<Fault>) -> Injector {
        let faults: Vec<Fault> = faults
            .into_iter()
            .filter(|f| !f.kind.hits_a_process())
            .collect();
        let fired = vec![0; faults.len()];
        Injector {
            faults,
            state: Mutex::new(Counts {
                requests: HashMap::new(),
                fired,
            }),
        }
    }

    /// Whether a fault that has not fired yet waits for the end of a tracked command before
    /// it hits one of `agent`'s requests (the request then asks which have ended).
    pub fn waits_for_work(&self, agent: &str) -> bool {
        let state = self.state.lock().expect("fault lock");
        self.faults
            .iter()
            .zip(&state.fired)
            .any(|(f, fired)| f.agent == agent && *fired == 0 && f.waits_for_work().is_some())
    }

    /// Counts one model request of its agent and returns the fault that hits it, if any: a
    /// fault hits its target request, then the agent's next requests until it has broken
    /// `times` attempts. The first fault in file order wins when two hit one request. A
    /// stream fault passes over a non-streaming request (it has no stream to break).
    pub fn hit(&self, req: &Request<'_>) -> Option<Hit> {
        if self.faults.is_empty() {
            return None;
        }
        let mut state = self.state.lock().expect("fault lock");
        let request = {
            let n = state.requests.entry(req.agent.to_string()).or_default();
            *n += 1;
            *n
        };
        let index = self.faults.iter().enumerate().position(|(i, f)| {
            let fired = state.fired[i];
            f.agent == req.agent
                && fired < f.times
                && (req.streaming || !f.kind.needs_a_stream())
                && (fired > 0
                    || match &f.target {
                        FaultTarget::Request(n) => *n == request,
                        FaultTarget::Notification => req.carries_notification,
                        FaultTarget::WorkEnded(work) => {
                            req.ended.get(work).is_some_and(|end| *end < req.arrived_ms)
                        }
                        FaultTarget::AfterTrigger { trigger, after_ms } => req
                            .triggers
                            .seen(trigger)
                            .is_some_and(|t| t + *after_ms as f64 <= req.arrived_ms),
                        FaultTarget::Work { .. } => false,
                    })
        })?;
        state.fired[index] += 1;
        Some(Hit {
            fault: self.faults[index].clone(),
            request,
            attempt: state.fired[index],
        })
    }
}

/// The error answer of a status fault, or `None` for a fault that breaks the stream instead.
pub fn status_answer(hit: &Hit, seq: u64) -> Option<Response> {
    let (status, error_type, message) = match hit.fault.kind {
        FaultKind::Http429 => (
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            "wakeprobe fault: rate limited",
        ),
        FaultKind::Http500 => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "api_error",
            "wakeprobe fault: internal server error",
        ),
        FaultKind::Http400 => (
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "wakeprobe fault: invalid request",
        ),
        FaultKind::Overloaded529 => (
            StatusCode::from_u16(529).expect("529 is a valid status"),
            "overloaded_error",
            "wakeprobe fault: Overloaded",
        ),
        _ => return None,
    };
    let body = json!({"type": "error", "error": {"type": error_type, "message": message},
        "request_id": format!("req_wakeprobe_{seq}")});
    let mut builder = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .header("request-id", format!("req_wakeprobe_{seq}"));
    if hit.fault.kind == FaultKind::Http429 {
        builder = builder.header(header::RETRY_AFTER, format!("{}", hit.fault.seconds.ceil()));
    }
    Some(
        builder
            .body(Body::from(body.to_string()))
            .expect("static response parts are valid"),
    )
}

/// One piece of an answer's body as it goes out.
#[derive(Debug)]
pub enum Piece {
    Data(Bytes),
    Pause(Duration),
    /// The connection ends here, the body unfinished.
    Break,
}

/// An SSE answer split into its events, with what the fault (if any) does to them.
pub fn stream_pieces(sse: &[u8], think: Duration, fault: Option<&Fault>) -> VecDeque<Piece> {
    let events = split_events(sse);
    let mut pieces = VecDeque::new();
    // No timer for a zero think-time: the timer wheel's 1 ms tick would add that much to every
    // answer.
    if !think.is_zero() {
        pieces.push_back(Piece::Pause(think));
    }
    let Some(fault) = fault else {
        pieces.push_back(Piece::Data(Bytes::copy_from_slice(sse)));
        return pieces;
    };
    let is_stop = |e: &[u8]| String::from_utf8_lossy(e).contains("\"message_stop\"");
    match fault.kind {
        FaultKind::ResetAfterHeaders => {
            // A pause first, so the status line and headers go out before the connection ends.
            pieces.push_back(Piece::Pause(Duration::from_millis(50)));
            pieces.push_back(Piece::Break);
        }
        FaultKind::ResetMidStream => {
            pieces.extend(events.iter().take(2).map(|e| Piece::Data(e.clone())));
            pieces.push_back(Piece::Pause(Duration::from_millis(50)));
            pieces.push_back(Piece::Break);
        }
        FaultKind::ErrorEvent => {
            pieces.extend(events.iter().take(1).map(|e| Piece::Data(e.clone())));
            let error = json!({"type": "error", "error": {"type": "overloaded_error",
                "message": "wakeprobe fault: Overloaded"}});
            pieces.push_back(Piece::Data(Bytes::from(format!(
                "event: error\ndata: {error}\n\n"
            ))));
        }
        FaultKind::CutBeforeStop => {
            pieces.extend(
                events
                    .iter()
                    .filter(|e| !is_stop(e))
                    .map(|e| Piece::Data(e.clone())),
            );
        }
        FaultKind::Stall => {
            let mut rest = events.into_iter();
            pieces.extend(rest.next().map(Piece::Data));
            pieces.push_back(Piece::Pause(Duration::from_secs_f64(fault.seconds)));
            pieces.extend(rest.map(Piece::Data));
        }
        FaultKind::Slow => {
            let pause = Duration::from_millis(fault.delay_ms);
            for (i, e) in events.into_iter().enumerate() {
                if i > 0 {
                    pieces.push_back(Piece::Pause(pause));
                }
                pieces.push_back(Piece::Data(e));
            }
        }
        // Never handed a process fault (`Injector::new` keeps none): the answer goes out whole.
        FaultKind::KillTask | FaultKind::StopTask | FaultKind::CrashCli => {
            pieces.push_back(Piece::Data(Bytes::copy_from_slice(sse)));
        }
        FaultKind::Http429 | FaultKind::Http500 | FaultKind::Http400 | FaultKind::Overloaded529 => {
            unreachable!("status faults are answered by status_answer")
        }
    }
    pieces
}

/// The events of an SSE body, each with its blank-line terminator.
fn split_events(sse: &[u8]) -> Vec<Bytes> {
    let mut events = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i + 1 < sse.len() {
        if &sse[i..i + 2] == b"\n\n" {
            events.push(Bytes::copy_from_slice(&sse[start..i + 2]));
            start = i + 2;
            i += 2;
        } else {
            i += 1;
        }
    }
    if start < sse.len() {
        events.push(Bytes::copy_from_slice(&sse[start..]));
    }
    events
}

/// An answer body sent piece by piece; `on_sent` runs once the whole body has gone out (never
/// for a body that breaks).
pub struct AnswerBody {
    pieces: VecDeque<Piece>,
    pause: Option<Pin<Box<tokio::time::Sleep>>>,
    on_sent: Option<Box<dyn FnOnce() + Send>>,
}

impl AnswerBody {
    pub fn new(pieces: VecDeque<Piece>, on_sent: Box<dyn FnOnce() + Send>) -> AnswerBody {
        AnswerBody {
            pieces,
            pause: None,
            on_sent: Some(on_sent),
        }
    }
}

impl futures_core::Stream for AnswerBody {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(pause) = self.pause.as_mut() {
                if pause.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.pause = None;
            }
            match self.pieces.pop_front() {
                Some(Piece::Pause(d)) => self.pause = Some(Box::pin(tokio::time::sleep(d))),
                Some(Piece::Data(bytes)) => {
                    if self.pieces.is_empty()
                        && let Some(on_sent) = self.on_sent.take()
                    {
                        on_sent();
                    }
                    return Poll::Ready(Some(Ok(bytes)));
                }
                Some(Piece::Break) => {
                    self.on_sent = None;
                    self.pieces.clear();
                    return Poll::Ready(Some(Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionReset,
                        "wakeprobe fault: connection reset",
                    ))));
                }
                None => return Poll::Ready(None),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One request of `agent`, no tracked command having ended.
    fn hit(injector: &Injector, agent: &str, notification: bool, streaming: bool) -> Option<Hit> {
        injector.hit(&Request {
            agent,
            carries_notification: notification,
            streaming,
            arrived_ms: 0.0,
            ended: &HashMap::new(),
            triggers: &TriggerTimes::default(),
        })
    }

    fn fault(kind: FaultKind, target: FaultTarget, times: u32) -> Fault {
        Fault {
            kind,
            agent: "main".into(),
            target,
            times,
            seconds: 1.0,
            delay_ms: 10,
            line: 1,
            optional: false,
        }
    }

    #[test]
    fn a_fault_hits_its_request_then_the_next_attempts_up_to_times() {
        let injector = Injector::new(vec![fault(
            FaultKind::Overloaded529,
            FaultTarget::Request(2),
            2,
        )]);
        let hits: Vec<Option<u32>> = (0..5)
            .map(|_| hit(&injector, "main", false, true).map(|h| h.request))
            .collect();
        assert_eq!(hits, vec![None, Some(2), Some(3), None, None]);
        assert_eq!(
            hit(&injector, "worker", false, true),
            None,
            "another agent's requests"
        );
    }

    #[test]
    fn a_notification_fault_waits_for_the_first_request_with_one() {
        let injector = Injector::new(vec![fault(
            FaultKind::Http500,
            FaultTarget::Notification,
            1,
        )]);
        assert!(hit(&injector, "main", false, true).is_none());
        let first = hit(&injector, "main", true, true).expect("hits the notification");
        assert_eq!((first.request, first.attempt), (2, 1));
        assert!(hit(&injector, "main", true, true).is_none(), "once only");
    }

    #[test]
    fn a_trigger_fault_hits_the_first_request_its_delay_after_the_trigger_was_seen() {
        let trigger = Trigger::TurnEnd("main".into(), 1);
        let injector = Injector::new(vec![fault(
            FaultKind::Http500,
            FaultTarget::AfterTrigger {
                trigger: trigger.clone(),
                after_ms: 500,
            },
            1,
        )]);
        let triggers = TriggerTimes::default();
        let at = |arrived_ms: f64| {
            injector
                .hit(&Request {
                    agent: "main",
                    carries_notification: false,
                    streaming: true,
                    arrived_ms,
                    ended: &HashMap::new(),
                    triggers: &triggers,
                })
                .map(|h| h.request)
        };
        assert_eq!(at(100.0), None, "the trigger not seen yet");
        triggers.record(&trigger, 1000.0);
        triggers.record(&trigger, 5000.0); // seen once: the first sighting stands
        assert_eq!(triggers.seen(&trigger), Some(1000.0));
        assert_eq!(at(1499.0), None, "before its delay");
        assert_eq!(at(1500.0), Some(3));
        assert_eq!(at(1600.0), None, "once only");
    }

    #[test]
    fn a_work_ended_fault_waits_for_the_first_request_after_its_work_ended() {
        let injector = Injector::new(vec![fault(
            FaultKind::Overloaded529,
            FaultTarget::WorkEnded("bg".into()),
            2,
        )]);
        assert!(injector.waits_for_work("main"));
        assert!(!injector.waits_for_work("worker"));
        // Requests at 1000 ms; each end is given on the run's clock.
        let at = |ended: &[(&str, f64)], notification: bool| {
            let ended: HashMap<String, f64> =
                ended.iter().map(|(n, t)| (n.to_string(), *t)).collect();
            injector
                .hit(&Request {
                    agent: "main",
                    carries_notification: notification,
                    streaming: true,
                    arrived_ms: 1000.0,
                    ended: &ended,
                    triggers: &TriggerTimes::default(),
                })
                .map(|h| (h.request, h.attempt))
        };
        assert_eq!(at(&[], false), None);
        assert_eq!(at(&[("other", 900.0)], true), None, "another work's end");
        assert_eq!(
            at(&[("bg", 1000.5)], false),
            None,
            "it ended while the request was being decided: not before it"
        );
        assert_eq!(
            at(&[("bg", 900.0)], false),
            Some((4, 1)),
            "with or without a notification"
        );
        assert!(!injector.waits_for_work("main"), "it has fired");
        assert_eq!(at(&[], false), Some((5, 2)), "the next attempt");
        assert_eq!(at(&[("bg", 900.0)], true), None, "times = 2");
    }

    #[test]
    fn a_stream_fault_passes_over_a_non_streaming_request() {
        let injector = Injector::new(vec![fault(
            FaultKind::ErrorEvent,
            FaultTarget::Request(1),
            2,
        )]);
        assert!(hit(&injector, "main", false, true).is_some());
        assert!(
            hit(&injector, "main", false, false).is_none(),
            "the fallback is clean"
        );
        assert!(
            hit(&injector, "main", false, true).is_some(),
            "the second attempt"
        );
        let status = Injector::new(vec![fault(FaultKind::Http500, FaultTarget::Request(1), 1)]);
        assert!(
            hit(&status, "main", false, false).is_some(),
            "a status needs no stream"
        );
    }

    #[test]
    fn each_stream_fault_shapes_the_body_as_its_kind_says() {
        let sse = b"event: message_start\ndata: {\"type\":\"message_start\"}\n\n\
event: content_block_start\ndata: {}\n\n\
event: message_delta\ndata: {}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        let shape = |kind| {
            stream_pieces(
                sse,
                Duration::ZERO,
                Some(&fault(kind, FaultTarget::Request(1), 1)),
            )
            .into_iter()
            .map(|p| match p {
                Piece::Data(b) if String::from_utf8_lossy(&b).contains("error") => 'E',
                Piece::Data(_) => 'd',
                Piece::Pause(_) => 'p',
                Piece::Break => 'X',
            })
            .collect::<String>()
        };
        assert_eq!(shape(FaultKind::ResetAfterHeaders), "pX");
        assert_eq!(shape(FaultKind::ResetMidStream), "ddpX");
        assert_eq!(shape(FaultKind::ErrorEvent), "dE");
        assert_eq!(shape(FaultKind::CutBeforeStop), "ddd");
        assert_eq!(shape(FaultKind::Stall), "dpddd");
        assert_eq!(shape(FaultKind::Slow), "dpdpdpd");
        assert_eq!(split_events(sse).len(), 4);
    }
}
