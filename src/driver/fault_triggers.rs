//! The triggers faults count from (`after = TRIGGER`, as an input's `after`): after each event
//! the session loop has this module note the first moment each one holds, on the run's clock.
//! Faults on model requests (through the fake API) and process faults read those moments, so
//! a fault counts from when the harness saw its trigger.

use std::time::Duration;

use tokio::time::Instant;

use super::recorder::Live;
use crate::fake_api::fault::TriggerTimes;
use crate::scenario::{Fault, FaultTarget, Trigger};

pub struct FaultTriggers {
    wanted: Vec<Trigger>,
    times: TriggerTimes,
    /// The quiet window a `quiet` trigger waits (the scenario's settle window).
    settle: Duration,
}

impl FaultTriggers {
    pub fn new(faults: &[Fault], times: TriggerTimes, settle: Duration) -> FaultTriggers {
        let wanted = faults
            .iter()
            .filter_map(|f| match &f.target {
                FaultTarget::AfterTrigger { trigger, .. } => Some(trigger.clone()),
                FaultTarget::Work {
                    from: Some(trigger),
                    ..
                } => Some(trigger.clone()),
                _ => None,
            })
            .collect();
        FaultTriggers {
            wanted,
            times,
            settle,
        }
    }

    /// Notes every wanted trigger that holds now and was not seen before.
    pub fn observe(&self, live: &Live, now: Instant, now_ms: f64) {
        for trigger in &self.wanted {
            if self.times.seen(trigger).is_none() && live.triggered(trigger, self.settle, now) {
                self.times.record(trigger, now_ms);
            }
        }
    }

    /// When a `quiet` trigger not seen yet will hold, if the session is quiet now (the other
    /// triggers are events, which wake the loop themselves).
    pub fn next_wake(&self, live: &Live) -> Option<Instant> {
        self.wanted
            .iter()
            .filter(|t| **t == Trigger::Quiet && self.times.seen(t).is_none())
            .find_map(|_| live.quiet_since(self.settle))
    }
}
