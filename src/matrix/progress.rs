//! The progress display while runs wait (indicatif, on stderr). On a terminal: one line for the
//! invocation (runs done, elapsed, an upper bound of the time left from the runs' ceilings) and
//! one line per running run (its real phase, its time, its requests, hooks and tasks), each cut
//! to the terminal's width, with a line per finished run printed above them; everything is
//! cleared before the results are printed. When stderr is not a terminal: plain start and
//! finish lines.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::driver::{LiveStatus, StatusHandle};
use crate::report::json::RunResult;

/// How often the running lines are refreshed.
const TICK: Duration = Duration::from_millis(200);

/// The runs under way, by title, with their live status.
pub type Statuses = Arc<Mutex<Vec<(String, StatusHandle)>>>;

/// What the invocation will run: each job's ceiling (in job order) and how many run at once.
pub struct Plan {
    pub ceilings: Vec<Duration>,
    pub slots: usize,
}

#[derive(Clone)]
pub struct Board {
    inner: Arc<Inner>,
}

struct Inner {
    statuses: Statuses,
    plan: Plan,
    started: AtomicUsize,
    done: AtomicUsize,
    enabled: bool,
    /// The terminal's display, when stderr is one.
    live: Option<Live>,
    stop: AtomicBool,
    ticker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

struct Live {
    multi: MultiProgress,
    overall: ProgressBar,
    /// One line per running run shown, in the order of `statuses`.
    lines: Mutex<Vec<ProgressBar>>,
    began: Instant,
}

impl Board {
    pub fn start(statuses: Statuses, plan: Plan, enabled: bool) -> Board {
        let live = (enabled && std::io::stderr().is_terminal()).then(|| Live::new(&plan));
        let inner = Arc::new(Inner {
            statuses,
            plan,
            started: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            enabled,
            live,
            stop: AtomicBool::new(false),
            ticker: Mutex::new(None),
        });
        if inner.live.is_some() {
            let ticker_inner = inner.clone();
            // A plain thread: redrawing must not depend on the runtime being responsive.
            let handle = std::thread::spawn(move || {
                while !ticker_inner.stop.load(Ordering::SeqCst) {
                    ticker_inner.draw();
                    std::thread::park_timeout(TICK);
                }
            });
            *inner.ticker.lock().expect("ticker") = Some(handle);
        }
        Board { inner }
    }

    /// A run began.
    pub fn started(&self, title: &str) {
        let n = self.inner.started.fetch_add(1, Ordering::SeqCst) + 1;
        if self.inner.enabled && self.inner.live.is_none() {
            eprintln!("[start {n}/{}] {title}", self.inner.plan.ceilings.len());
        }
    }

    /// A run ended (with its result, or none when it could not run).
    pub fn finished(&self, title: &str, result: Option<&RunResult>) {
        let done = self.inner.done.fetch_add(1, Ordering::SeqCst) + 1;
        if !self.inner.enabled {
            return;
        }
        let line = format!(
            "[{done}/{}] {title} done ({})",
            self.inner.plan.ceilings.len(),
            detail(result)
        );
        match &self.inner.live {
            Some(live) => {
                live.overall.set_position(done as u64);
                let _ = live.multi.println(fit(&line, terminal_size().1));
            }
            None => eprintln!("{line}"),
        }
    }

    /// Stops the display and clears it from the terminal.
    pub fn stop(&self) {
        self.inner.stop.store(true, Ordering::SeqCst);
        if let Some(handle) = self.inner.ticker.lock().expect("ticker").take() {
            handle.thread().unpark();
            let _ = handle.join();
        }
        if let Some(live) = &self.inner.live {
            for line in live.lines.lock().expect("lines").drain(..) {
                line.finish_and_clear();
            }
            live.overall.finish_and_clear();
            let _ = live.multi.clear();
        }
    }
}

/// `not-resumable as expected, 6.0s`
fn detail(result: Option<&RunResult>) -> String {
    result
        .map(|r| {
            let expect = match r.matches_expect {
                Some(true) => " as expected",
                Some(false) => " UNEXPECTED",
                None => "",
            };
            format!("{}{expect}, {:.1}s", r.judgement.outcome, r.run.duration_s)
        })
        .unwrap_or_else(|| "failed to run".into())
}

impl Live {
    fn new(plan: &Plan) -> Live {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let overall = multi.add(ProgressBar::new(plan.ceilings.len() as u64));
        overall.set_style(
            ProgressStyle::with_template("{bar:16.cyan/blue} {pos}/{len} {wide_msg}")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        Live {
            multi,
            overall,
            lines: Mutex::new(Vec::new()),
            began: Instant::now(),
        }
    }

    /// As many run lines as there are runs shown (at most what the terminal's height leaves).
    fn fit_lines(&self, wanted: usize) -> std::sync::MutexGuard<'_, Vec<ProgressBar>> {
        let mut lines = self.lines.lock().expect("lines");
        let rows = terminal_size().0;
        let wanted = wanted.min(rows.saturating_sub(4).max(1));
        while lines.len() > wanted {
            if let Some(line) = lines.pop() {
                line.finish_and_clear();
                self.multi.remove(&line);
            }
        }
        while lines.len() < wanted {
            let line = self.multi.add(ProgressBar::new_spinner());
            line.set_style(
                ProgressStyle::with_template("  {spinner} {wide_msg}").expect("a valid template"),
            );
            lines.push(line);
        }
        lines
    }
}

impl Inner {
    fn draw(&self) {
        let Some(live) = &self.live else { return };
        let running: Vec<(String, LiveStatus)> = self
            .statuses
            .lock()
            .expect("status list")
            .iter()
            .map(|(title, s)| (title.clone(), s.lock().expect("status").clone()))
            .collect();
        let lines = live.fit_lines(running.len());
        for (line, (title, s)) in lines.iter().zip(&running) {
            line.set_message(format!(
                "{title} {} {:.1}s · req {} · hooks {} · tasks {}",
                s.phase, s.elapsed_s, s.requests, s.hooks, s.running_tasks
            ));
            line.tick();
        }
        let hidden = running.len().saturating_sub(lines.len());
        drop(lines);
        let elapsed = live.began.elapsed();
        let mut msg = format!(
            "elapsed {} · at most {} left (ceilings) · {} running",
            clock(elapsed),
            clock(self.time_left(&running)),
            running.len()
        );
        if hidden > 0 {
            msg.push_str(&format!(" ({hidden} not shown)"));
        }
        live.overall.set_message(msg);
    }

    /// An upper bound of the time left: running runs end by their ceilings, and the runs not
    /// started yet take the slots that free first, each for its whole ceiling.
    fn time_left(&self, running: &[(String, LiveStatus)]) -> Duration {
        let ceilings = &self.plan.ceilings;
        let started = self.started.load(Ordering::SeqCst).min(ceilings.len());
        let mut slots: Vec<f64> = running
            .iter()
            .map(|(_, s)| (s.ceiling_s - s.elapsed_s).max(0.0))
            .collect();
        slots.resize(self.plan.slots.max(1).max(slots.len()), 0.0);
        for ceiling in &ceilings[started..] {
            let first_free = slots
                .iter_mut()
                .min_by(|a, b| a.total_cmp(b))
                .expect("at least one slot");
            *first_free += ceiling.as_secs_f64();
        }
        Duration::from_secs_f64(slots.into_iter().fold(0.0, f64::max))
    }
}

/// The terminal's rows and columns (stderr's), 24 x 80 when it cannot say.
fn terminal_size() -> (usize, usize) {
    rustix::termios::tcgetwinsize(std::io::stderr())
        .ok()
        .filter(|w| w.ws_row > 0 && w.ws_col > 0)
        .map(|w| (w.ws_row as usize, w.ws_col as usize))
        .unwrap_or((24, 80))
}

/// A line cut to `width` columns (with `…`), so it takes one row.
fn fit(line: &str, width: usize) -> String {
    if line.chars().count() <= width {
        return line.to_string();
    }
    line.chars()
        .take(width.saturating_sub(1))
        .collect::<String>()
        + "…"
}

/// `1m05s`, `42s`
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(ceilings: &[u64], slots: usize, started: usize) -> Inner {
        Inner {
            statuses: Statuses::default(),
            plan: Plan {
                ceilings: ceilings.iter().map(|s| Duration::from_secs(*s)).collect(),
                slots,
            },
            started: AtomicUsize::new(started),
            done: AtomicUsize::new(0),
            enabled: false,
            live: None,
            stop: AtomicBool::new(false),
            ticker: Mutex::new(None),
        }
    }

    fn running(elapsed: &[f64]) -> Vec<(String, LiveStatus)> {
        elapsed
            .iter()
            .map(|e| {
                (
                    "x".to_string(),
                    LiveStatus {
                        elapsed_s: *e,
                        ceiling_s: 60.0,
                        ..LiveStatus::default()
                    },
                )
            })
            .collect()
    }

    #[test]
    fn the_eta_is_the_ceilings_scheduled_onto_the_slots() {
        // Two slots, two runs of 60 s running for 10 s and 50 s, two of 30 s waiting: the
        // slot free first (in 10 s) takes one, then the other: at most 10 + 30 + 30 = 70 s.
        let b = board(&[60, 60, 30, 30], 2, 2);
        assert_eq!(
            b.time_left(&running(&[10.0, 50.0])),
            Duration::from_secs(70)
        );
        // Nothing started: four runs onto two slots.
        let b = board(&[60, 60, 30, 30], 2, 0);
        assert_eq!(b.time_left(&[]), Duration::from_secs(90));
        assert_eq!(clock(Duration::from_secs(65)), "1m05s");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 4), "abc");
    }
}
