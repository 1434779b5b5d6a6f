//! The progress display while runs wait (indicatif, on stderr). On a terminal: one line for the
//! invocation (runs done, elapsed, the time left: estimated from the measured durations of the
//! runs that finished, or bounded by the runs' ceilings before any has) and
//! one line per running run (its real phase, its time, its requests, hooks and tasks), each cut
//! to the terminal's width, with a line per finished run printed above them; everything is
//! cleared before the results are printed. When stderr is not a terminal: plain start and
//! finish lines.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::classify::result::RunResult;
use crate::driver::{LiveStatus, StatusHandle};

/// How often the running lines are refreshed.
const TICK: Duration = Duration::from_millis(200);

/// The runs under way, by title, with their live status.
pub type Statuses = Arc<Mutex<Vec<(String, StatusHandle)>>>;

/// What the invocation will run: each job's ceiling (in the order they start) and how many
/// run at once.
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
    /// How long each finished run took, in seconds.
    measured: Mutex<Vec<f64>>,
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
        let live = (enabled && std::io::stderr().is_terminal())
            .then(|| Live::new(&plan, ProgressDrawTarget::stderr()));
        let inner = Arc::new(Inner {
            statuses,
            plan,
            started: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            measured: Mutex::default(),
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
                    ticker_inner.draw(terminal_size().0);
                    std::thread::park_timeout(TICK);
                }
            });
            *inner.ticker.lock().expect("ticker") = Some(handle);
        }
        Board { inner }
    }

    /// A run began.
    pub fn started(&self, title: &str) {
        if let Some(line) = self.inner.count_start(title) {
            eprintln!("{line}");
        }
    }

    /// A run ended, with its result, or with why it could not run.
    pub fn finished(&self, title: &str, result: Result<&RunResult, &str>) {
        let (done, line) = self.inner.count_finish(title, result);
        let Some(line) = line else { return };
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

/// `done (not-resumable as expected, 6.0s)`, or `failed to run: WHY`.
fn detail(result: Result<&RunResult, &str>) -> String {
    match result {
        Ok(r) => {
            let expect = match r.matches_expect {
                _ if !r.judgement.contradictions().is_empty() => " CONTRADICTED: a wakeprobe bug",
                Some(true) => " as expected",
                Some(false) => " UNEXPECTED",
                None => "",
            };
            format!(
                "done ({}{expect}, {:.1}s)",
                r.judgement.outcome, r.run.duration_s
            )
        }
        Err(why) => format!("failed to run: {}", crate::console::printable(why)),
    }
}

impl Live {
    fn new(plan: &Plan, target: ProgressDrawTarget) -> Live {
        let multi = MultiProgress::with_draw_target(target);
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

    /// As many run lines as there are runs shown (at most what the terminal's `rows` leave).
    fn fit_lines(&self, wanted: usize, rows: usize) -> std::sync::MutexGuard<'_, Vec<ProgressBar>> {
        let mut lines = self.lines.lock().expect("lines");
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
    /// Counts a run's start; returns the plain line that announces it (none when the display
    /// is off or live on a terminal).
    fn count_start(&self, title: &str) -> Option<String> {
        let n = self.started.fetch_add(1, Ordering::SeqCst) + 1;
        (self.enabled && self.live.is_none())
            .then(|| format!("[start {n}/{}] {title}", self.plan.ceilings.len()))
    }

    /// Counts a run's end; returns how many are done and the line that says so (none when the
    /// display is off).
    fn count_finish(
        &self,
        title: &str,
        result: Result<&RunResult, &str>,
    ) -> (usize, Option<String>) {
        let done = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        if let Ok(r) = result {
            self.measured
                .lock()
                .expect("measured durations")
                .push(r.run.duration_s);
        }
        let line = self.enabled.then(|| {
            format!(
                "[{done}/{}] {title} {}",
                self.plan.ceilings.len(),
                detail(result)
            )
        });
        (done, line)
    }

    /// Redraws the live display for a terminal of `rows` rows.
    fn draw(&self, rows: usize) {
        let Some(live) = &self.live else { return };
        let running: Vec<(String, LiveStatus)> = self
            .statuses
            .lock()
            .expect("status list")
            .iter()
            .map(|(title, s)| (title.clone(), s.lock().expect("status").clone()))
            .collect();
        let lines = live.fit_lines(running.len(), rows);
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
        let left = match self.typical_run() {
            Some(typical) => format!(
                "about {} left (measured)",
                clock(self.time_left_with(&running, Some(typical)))
            ),
            None => format!(
                "at most {} left (ceilings)",
                clock(self.time_left(&running))
            ),
        };
        let mut msg = format!(
            "elapsed {} · {left} · {} running",
            clock(elapsed),
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
        self.time_left_with(running, None)
    }

    /// The median duration of the runs that finished, once one has.
    fn typical_run(&self) -> Option<f64> {
        let mut measured = self.measured.lock().expect("measured durations").clone();
        measured.sort_by(f64::total_cmp);
        measured.get(measured.len() / 2).copied()
    }

    /// The time left when each run takes `typical` seconds (never past its ceiling; a running
    /// run already past it is taken to end now), or its whole ceiling when `typical` is `None`:
    /// the runs not started yet take the slots that free first.
    fn time_left_with(&self, running: &[(String, LiveStatus)], typical: Option<f64>) -> Duration {
        let length = |ceiling: f64| typical.map_or(ceiling, |t| t.min(ceiling));
        let ceilings = &self.plan.ceilings;
        let started = self.started.load(Ordering::SeqCst).min(ceilings.len());
        let mut slots: Vec<f64> = running
            .iter()
            .map(|(_, s)| (length(s.ceiling_s) - s.elapsed_s).max(0.0))
            .collect();
        slots.resize(self.plan.slots.max(1).max(slots.len()), 0.0);
        for ceiling in &ceilings[started..] {
            let first_free = slots
                .iter_mut()
                .min_by(|a, b| a.total_cmp(b))
                .expect("at least one slot");
            *first_free += length(ceiling.as_secs_f64());
        }
        Duration::from_secs_f64(slots.into_iter().fold(0.0, f64::max))
    }
}

/// The terminal's rows and columns (stderr's), 24 x 80 when it cannot say.
fn terminal_size() -> (usize, usize) {
    rows_and_columns(
        rustix::termios::tcgetwinsize(std::io::stderr())
            .ok()
            .map(|w| (w.ws_row, w.ws_col)),
    )
}

/// The size a terminal reported, 24 x 80 when it reported none or a zero (some ptys do).
fn rows_and_columns(reported: Option<(u16, u16)>) -> (usize, usize) {
    reported
        .filter(|(rows, columns)| *rows > 0 && *columns > 0)
        .map(|(rows, columns)| (rows as usize, columns as usize))
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
        let plan = Plan {
            ceilings: ceilings.iter().map(|s| Duration::from_secs(*s)).collect(),
            slots,
        };
        Inner {
            statuses: Statuses::default(),
            plan,
            started: AtomicUsize::new(started),
            done: AtomicUsize::new(0),
            measured: Mutex::default(),
            enabled: false,
            live: None,
            stop: AtomicBool::new(false),
            ticker: Mutex::new(None),
        }
    }

    /// A board showing plain lines (`enabled`), with nothing started.
    fn plain_board(runs: usize, enabled: bool) -> Board {
        let mut inner = board(&vec![60; runs], 1, 0);
        inner.enabled = enabled;
        Board {
            inner: Arc::new(inner),
        }
    }

    /// A board with a live display drawn nowhere, `running` runs under way.
    fn live_board(running: usize) -> Inner {
        let mut inner = board(&[60; 40], 40, running);
        inner.enabled = true;
        inner.live = Some(Live::new(&inner.plan, ProgressDrawTarget::hidden()));
        for i in 0..running {
            let status = LiveStatus {
                elapsed_s: 1.5,
                ceiling_s: 60.0,
                requests: 2,
                ..LiveStatus::default()
            };
            inner
                .statuses
                .lock()
                .unwrap()
                .push((format!("run{i}"), Arc::new(Mutex::new(status))));
        }
        inner
    }

    /// A run of the seed fixture judged `not-resumable` in 6 s, matching its expectation or not.
    fn result(matches_expect: Option<bool>) -> RunResult {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/runs/seed000-print/run.json");
        let mut info: crate::evidence::run::RunInfo =
            serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
        info.duration_s = 6.04;
        let judgement = crate::classify::Judgement {
            outcome: crate::classify::Outcome::NotResumable,
            verdicts: vec![],
            checks: vec![],
            invariants: vec![],
            rejected_lines: vec![],
            faults: vec![],
        };
        let mut r = RunResult::new(&info, judgement);
        r.matches_expect = matches_expect;
        r
    }

    /// Off a terminal, each start and end is a line counting runs from 1 of all; the end says
    /// the verdict, whether it was expected, and the time. With the display off: no lines.
    #[test]
    fn plain_lines_count_runs_from_one_of_all() {
        let b = plain_board(3, true);
        assert_eq!(b.inner.count_start("a").as_deref(), Some("[start 1/3] a"));
        b.started("b");
        assert_eq!(b.inner.count_start("c").as_deref(), Some("[start 3/3] c"));
        b.finished("a", Err("no CLI"));
        let line = |r: Result<&RunResult, &str>| b.inner.count_finish("x", r).1.unwrap();
        assert_eq!(
            line(Ok(&result(Some(true)))),
            "[2/3] x done (not-resumable as expected, 6.0s)"
        );
        assert_eq!(
            line(Ok(&result(Some(false)))),
            "[3/3] x done (not-resumable UNEXPECTED, 6.0s)"
        );
        assert_eq!(
            line(Ok(&result(None))),
            "[4/3] x done (not-resumable, 6.0s)"
        );
        assert_eq!(
            line(Err(
                "reports/x/run.json: No space left on device (os error 28)"
            )),
            "[5/3] x failed to run: reports/x/run.json: No space left on device (os error 28)"
        );

        let off = plain_board(3, false);
        assert_eq!(off.inner.count_start("a"), None);
        assert_eq!(off.inner.count_finish("a", Err("x")), (1, None));
    }

    /// A started run no longer waits for a slot: the time left counts it by its status only.
    #[test]
    fn a_started_run_leaves_the_queue_of_the_time_left() {
        let b = plain_board(3, false);
        assert_eq!(b.inner.time_left(&[]), Duration::from_secs(180));
        b.started("a");
        assert_eq!(b.inner.time_left(&[]), Duration::from_secs(120));
        b.stop();
        assert!(
            b.inner.stop.load(Ordering::SeqCst),
            "the ticker is told to stop"
        );
    }

    /// On a terminal: one line per running run, as many as its rows leave room for; the
    /// overall line counts the running runs and those not shown.
    #[test]
    fn the_live_display_shows_what_the_terminal_has_room_for() {
        let inner = live_board(30);
        let live = inner.live.as_ref().unwrap();
        inner.draw(24);
        assert_eq!(live.lines.lock().unwrap().len(), 20);
        assert_eq!(
            live.lines.lock().unwrap()[0].message(),
            "run0 starting 1.5s · req 2 · hooks 0 · tasks 0"
        );
        let overall = live.overall.message();
        assert!(
            overall.ends_with("at most 1m00s left (ceilings) · 30 running (10 not shown)"),
            "{overall}"
        );
        inner.statuses.lock().unwrap().truncate(5);
        inner.draw(24);
        assert_eq!(live.lines.lock().unwrap().len(), 5);
        assert!(
            live.overall.message().ends_with("· 5 running"),
            "{}",
            live.overall.message()
        );
        inner.statuses.lock().unwrap().truncate(3);
        inner.draw(2);
        assert_eq!(
            live.lines.lock().unwrap().len(),
            1,
            "always one line at least"
        );
    }

    #[test]
    fn a_terminal_without_a_size_is_taken_as_24_by_80() {
        assert_eq!(rows_and_columns(Some((50, 120))), (50, 120));
        for reported in [None, Some((0, 120)), Some((50, 0))] {
            assert_eq!(rows_and_columns(reported), (24, 80), "{reported:?}");
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

    /// Once a run has finished, the time left is estimated from the measured durations (their
    /// median), not the ceilings: two slots, runs of 60 s ceilings that take 12 s each, two
    /// running for 10 s and 4 s, two waiting: 8 + 12 = 20 s, where the ceilings say 116 s.
    #[test]
    fn the_eta_uses_the_measured_durations_of_finished_runs() {
        let b = board(&[60, 60, 60, 60], 2, 2);
        assert_eq!(b.typical_run(), None);
        assert_eq!(
            b.time_left(&running(&[10.0, 4.0])),
            Duration::from_secs(116)
        );
        b.measured.lock().unwrap().extend([12.0, 11.0, 40.0]);
        assert_eq!(b.typical_run(), Some(12.0));
        assert_eq!(
            b.time_left_with(&running(&[10.0, 4.0]), b.typical_run()),
            Duration::from_secs(20)
        );
        // A run already past the typical length is taken to end now, never below zero.
        assert_eq!(
            b.time_left_with(&running(&[30.0, 30.0]), b.typical_run()),
            Duration::from_secs(12)
        );
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
