//! The one clock every evidence source is stamped with.
//!
//! `CLOCK_MONOTONIC` is system-wide on Linux, so the harness, the hook recorder and the task
//! tracker (separate processes) read the same clock; a run's timeline is those readings minus the
//! run's origin. Wall time is never used for ordering: it can jump.

/// Nanoseconds on the system-wide monotonic clock.
pub fn monotonic_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A run's clock: milliseconds since the run's origin.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    origin_ns: u64,
}

impl RunClock {
    pub fn start() -> Self {
        Self {
            origin_ns: monotonic_ns(),
        }
    }

    /// A clock with a given origin (used when re-reading saved evidence).
    pub fn with_origin(origin_ns: u64) -> Self {
        Self { origin_ns }
    }

    pub fn origin_ns(&self) -> u64 {
        self.origin_ns
    }

    /// Milliseconds since the origin, now.
    pub fn now_ms(&self) -> f64 {
        self.ms_at(monotonic_ns())
    }

    /// Milliseconds since the origin for a monotonic reading taken anywhere on this machine.
    /// Readings from before the origin (a recorder racing the start) clamp to zero.
    pub fn ms_at(&self, ns: u64) -> f64 {
        let us = ns.saturating_sub(self.origin_ns) / 1_000;
        us as f64 / 1_000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_are_monotonic_and_relative_to_origin() {
        let clock = RunClock::start();
        let a = clock.now_ms();
        let b = clock.now_ms();
        assert!(a >= 0.0 && b >= a);
        assert_eq!(clock.ms_at(clock.origin_ns() - 5), 0.0);
        assert_eq!(clock.ms_at(clock.origin_ns() + 1_500_000), 1.5);
    }
}
