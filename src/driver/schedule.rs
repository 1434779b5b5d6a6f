//! The session's schedule: the scenario's inputs in order (each waits for its trigger, then its
//! delay), then the probe once the session has been quiet for the probe's window, then closing
//! the session once it is quiet again. It decides what is due; the session loop sends it.

use std::time::Duration;

use tokio::time::Instant;

use super::recorder::Live;
use crate::scenario::{Driver, Input, Trigger};

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
            // A run whose CLI takes no input has no session to feed or close.
            closed: driver.mode.row().close == crate::scenario::mode::Close::CliExits,
        }
    }

    pub fn closed(&self) -> bool {
        self.closed
    }

    /// The next moment something may become due without a new event: the next input's delay,
    /// the end of the quiet window it waits for, or (every input sent) the end of the quiet
    /// window before the probe or the close. `None` while the next input waits for an event.
    /// Every moment returned is acted on by [`Schedule::poll`] when it comes: a moment that
    /// was not (a quiet window while an input waits for a turn's end) woke the session loop
    /// at every tick of the timer until the ceiling.
    pub fn next_wake(&self, live: &Live) -> Option<Instant> {
        if self.closed {
            return None;
        }
        match self.driver.inputs.get(self.next) {
            Some(_) if self.due_at.is_some() => self.due_at,
            Some(input) if input.after == Trigger::Quiet => live.quiet_since(self.driver.settle),
            Some(_) => None,
            None => live.quiet_since(self.quiet_window()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::recorder::Recorder;
    use crate::evidence::clock::RunClock;
    use crate::scenario::{DriverMode, InputAction};

    const SETTLE: Duration = Duration::from_secs(3);

    fn driver(inputs: Vec<Trigger>) -> Driver {
        Driver {
            mode: DriverMode::Session,
            prompt: "go".into(),
            ceiling: Duration::from_secs(60),
            settle: SETTLE,
            permission_mode: "default".into(),
            allowed_tools: Vec::new(),
            env: Default::default(),
            guard: false,
            persist_session: true,
            prompt_form: Default::default(),
            callback_hooks: vec![],
            command: vec![],
            approve: Default::default(),
            inputs: inputs
                .into_iter()
                .map(|after| Input {
                    after,
                    delay: Duration::ZERO,
                    action: InputAction::Text { text: "hi".into() },
                })
                .collect(),
            probe: None,
        }
    }

    /// A quiet session whose next input waits for an event asks for no timed wake: a wake
    /// that nothing acts on comes back at every timer tick until the ceiling.
    #[test]
    fn an_input_waiting_for_an_event_asks_for_no_timed_wake() {
        let live = Recorder::new(RunClock::start()).live;
        let quiet_at = live.quiet_since(SETTLE).expect("a fresh session is quiet");
        for trigger in [
            Trigger::TurnEnd("main".into(), 2),
            Trigger::Result(1),
            Trigger::TaskEnd("work".into()),
            Trigger::TaskStart("work".into()),
        ] {
            let waits = driver(vec![trigger.clone()]);
            assert_eq!(Schedule::new(&waits).next_wake(&live), None, "{trigger:?}");
        }
        // What a quiet window decides is woken for at its end.
        let on_quiet = driver(vec![Trigger::Quiet]);
        assert_eq!(Schedule::new(&on_quiet).next_wake(&live), Some(quiet_at));
        let all_sent = driver(Vec::new());
        assert_eq!(Schedule::new(&all_sent).next_wake(&live), Some(quiet_at));
    }

    /// Every moment `next_wake` names is acted on by `poll` when it comes.
    #[test]
    fn the_moment_asked_for_is_acted_on() {
        let live = Recorder::new(RunClock::start()).live;
        let later = |at: Instant| at + Duration::from_millis(1);
        // A quiet trigger: its delay starts (a zero delay sends at once).
        let d = driver(vec![Trigger::Quiet]);
        let mut schedule = Schedule::new(&d);
        let at = schedule.next_wake(&live).unwrap();
        assert!(
            schedule
                .poll(&live, at - Duration::from_millis(1))
                .is_none()
        );
        assert!(matches!(
            schedule.poll(&live, later(at)),
            Some(Due::Input(_))
        ));
        // Every input sent: the close.
        let at = schedule.next_wake(&live).unwrap();
        assert!(matches!(schedule.poll(&live, later(at)), Some(Due::Close)));
        assert_eq!(schedule.next_wake(&live), None, "closed");
    }
}
