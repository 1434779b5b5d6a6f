//! The session's schedule: the scenario's inputs in order (each waits for its trigger, then its
//! delay), then the probe once the session has been quiet for the probe's window, then closing
//! the session once it is quiet again. It decides what is due; the session loop sends it.

use std::time::Duration;

use tokio::time::Instant;

use super::recorder::Live;
use crate::scenario::{Driver, DriverMode, Input};

/// What the session loop should do now.
#[derive(Debug)]
pub enum Due<'a> {
    /// Send this scheduled input.
    Input(&'a Input),
    /// Send the probe text.
    Probe(&'a str),
    /// Everything was sent and the session is quiet: end it.
    Close,
}

pub struct Schedule<'a> {
    driver: &'a Driver,
    next: usize,
    due_at: Option<Instant>,
    probe_sent: bool,
    closed: bool,
}

impl<'a> Schedule<'a> {
    pub fn new(driver: &'a Driver) -> Schedule<'a> {
        Schedule {
            driver,
            next: 0,
            due_at: None,
            probe_sent: driver.probe.is_none(),
            // A print-mode run has no session to feed or close.
            closed: driver.mode == DriverMode::Print,
        }
    }

    pub fn closed(&self) -> bool {
        self.closed
    }

    /// The next moment something may become due without a new event (an input's delay, or
    /// the end of a quiet window).
    pub fn next_wake(&self, live: &Live, now: Instant) -> Option<Instant> {
        if self.closed {
            return None;
        }
        let quiet = live.quiet_since(self.quiet_window()).map(|q| q.max(now));
        match (self.due_at, quiet) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The quiet window that must pass before the next step: the probe's own window until
    /// the probe is sent, then the settle window.
    fn quiet_window(&self) -> Duration {
        match (&self.driver.probe, self.probe_sent) {
            (Some(probe), false) => probe.quiet,
            _ => self.driver.settle,
        }
    }

    /// What is due now, if anything; marks it done.
    pub fn poll(&mut self, live: &Live, now: Instant) -> Option<Due<'a>> {
        if self.closed {
            return None;
        }
        if let Some(input) = self.driver.inputs.get(self.next) {
            match self.due_at {
                None if live.triggered(&input.after, self.driver.settle, now) => {
                    self.due_at = Some(now + input.delay);
                    // A zero delay is due at once.
                    return self.poll(live, now);
                }
                Some(at) if now >= at => {
                    self.next += 1;
                    self.due_at = None;
                    return Some(Due::Input(input));
                }
                _ => return None,
            }
        }
        let quiet = live
            .quiet_since(self.quiet_window())
            .is_some_and(|at| now >= at);
        if !quiet {
            return None;
        }
        if !self.probe_sent {
            self.probe_sent = true;
            let probe = self.driver.probe.as_ref().expect("probe present");
            return Some(Due::Probe(&probe.text));
        }
        self.closed = true;
        Some(Due::Close)
    }

    /// Inputs that were never sent, each with the trigger that never happened (or the delay
    /// that never elapsed): `input 2 was never sent: turn-end:ghost#3 never happened`.
    pub fn unsent(&self) -> Vec<String> {
        self.driver
            .inputs
            .iter()
            .enumerate()
            .skip(self.next)
            .map(|(i, input)| {
                let waiting_for = if i == self.next && self.due_at.is_some() {
                    format!(
                        "{} happened, but the run ended within its {:.1} s delay",
                        input.after,
                        input.delay.as_secs_f64()
                    )
                } else if i == self.next {
                    format!("{} never happened", input.after)
                } else {
                    format!("input {} before it was never sent", self.next + 1)
                };
                format!("input {} was never sent: {waiting_for}", i + 1)
            })
            .collect()
    }
}
