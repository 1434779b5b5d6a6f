//! The progress display while runs wait (indicatif, on stderr). On a terminal: one line for the
//! invocation (runs done, elapsed, the time left) and one line per running run (its real
//! phase, its time, its requests, hooks and tasks), each cut to the terminal's width, with a
//! line per finished run printed above them; everything is cleared before the results are
//! printed. When stderr is not a terminal (a CI log): plain start and finish lines, each naming
//! the run's version and repetition, a finish line saying the time left; `--quiet` keeps only
//! the finish lines.
//!
//! The time left: before any run has finished, an upper bound (each run to its ceiling); after,
//! an estimate: a run takes what runs of its scenario variant took (the median), else its
//! ceiling scaled by how much of their ceilings the finished runs used. The short runs finish
//! first, so taking their length for every run would say "0s left" while the long ones run.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::classify::result::RunResult;
use crate::driver::{LiveStatus, StatusHandle};

/// How often the running lines are refreshed.
const TICK: Duration = Duration::from_millis(200);

/// A run under way: its name as lines show it, the key runs alike share (scenario/variant),
/// and its live status.
pub struct Running {
    pub name: String,
    pub key: String,
    pub status: StatusHandle,
}

/// The runs under way.
pub type Statuses = Arc<Mutex<Vec<Running>>>;

/// What the invocation will run, in the order the runs start: each run's key (runs of one
/// scenario variant take alike) and ceiling; and how many run at once.
pub struct Plan {
    pub keys: Vec<String>,
    pub ceilings: Vec<Duration>,
    pub slots: usize,
}

/// What the display shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Display {
    /// Everything: the live display on a terminal, start and finish lines off one.
    Full,
    /// One line per finished run and nothing else (`--quiet`: a CI log).
    Finished,
    /// Nothing.
    Off,
}

#[derive(Clone)]
pub struct Board {
    inner: Arc<Inner>,
}

/// A finished run, as the estimate reads it.
struct Measured {
    key: String,
    duration_s: f64,
    ceiling_s: f64,
}

struct Inner {
    statuses: Statuses,
    plan: Plan,
    started: AtomicUsize,
    done: AtomicUsize,
    measured: Mutex<Vec<Measured>>,
    display: Display,
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
    pub fn start(statuses: Statuses, plan: Plan, display: Display) -> Board {
        let live = (display == Display::Full && std::io::stderr().is_terminal())
            .then(|| Live::new(&plan, ProgressDrawTarget::stderr()));
        let inner = Arc::new(Inner {
            statuses,
            plan,
            started: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            measured: Mutex::default(),
            display,
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
    pub fn started(&self, name: &str) {
        if let Some(line) = self.inner.count_start(name) {
            eprintln!("{line}");
        }
    }

    /// A run of `key` ended, with its result, or with why it could not run.
    pub fn finished(&self, name: &str, key: &str, result: Result<&RunResult, &str>) {
        let (done, line) = self.inner.count_finish(name, key, result);
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

/// `not-resumable as expected, 6.0s`, or `failed to run: WHY`.
fn detail(result: Result<&RunResult, &str>) -> String {
    match result {
        Ok(r) => {
            let expect = match r.matches_expect {
                _ if !r.judgement.contradictions().is_empty() => " CONTRADICTED: a wakeprobe bug",
                Some(true) => " as expected",
                Some(false) => " UNEXPECTED",
                None => "",
            };
            format!("{}{expect}, {:.1}s", r.judgement.outcome, r.run.duration_s)
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

/// How long a run is expected to take.
struct Expected {
    length: f64,
    /// The median share of their ceilings the finished runs took (1 before any finished).
    share: f64,
    /// Whether `length` was measured on runs of the same key (not scaled from others').
    measured: bool,
}

/// A running run as the time left reads it.
struct Under {
    key: String,
    status: LiveStatus,
}

impl Inner {
    /// Counts a run's start; returns the plain line that announces it (only with the whole
    /// display off a terminal).
    fn count_start(&self, name: &str) -> Option<String> {
        let n = self.started.fetch_add(1, Ordering::SeqCst) + 1;
        (self.display == Display::Full && self.live.is_none())
            .then(|| format!("[start {n}/{}] {name}", self.plan.ceilings.len()))
    }

    /// Counts a run's end; returns how many are done and the line that says so, with the time
    /// left while runs remain (none when the display is off).
    fn count_finish(
        &self,
        name: &str,
        key: &str,
        result: Result<&RunResult, &str>,
    ) -> (usize, Option<String>) {
        let done = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        if let Ok(r) = result {
            self.measured
                .lock()
                .expect("measured durations")
                .push(Measured {
                    key: key.to_string(),
                    duration_s: r.run.duration_s,
                    ceiling_s: r.run.ceiling_s,
                });
        }
        if self.display == Display::Off {
            return (done, None);
        }
        let total = self.plan.ceilings.len();
        let mut line = format!("[{done}/{total}] {name}: {}", detail(result));
        // Off a terminal (a CI log), where no live line shows the time left.
        if done < total && self.live.is_none() {
            line.push_str(&format!(" · {}", self.left_text(&self.running())));
        }
        (done, Some(line))
    }

    /// The runs under way, with their status now.
    fn running(&self) -> Vec<Under> {
        self.statuses
            .lock()
            .expect("status list")
            .iter()
            .map(|r| Under {
                key: r.key.clone(),
                status: r.status.lock().expect("status").clone(),
            })
            .collect()
    }

    /// `about 1m10s left (measured)`, or `at most 3m00s left (ceilings)` before any run ended.
    fn left_text(&self, running: &[Under]) -> String {
        let left = clock(self.time_left(running));
        if self.measured.lock().expect("measured durations").is_empty() {
            format!("at most {left} left (ceilings)")
        } else {
            format!("about {left} left (measured)")
        }
    }

    /// Redraws the live display for a terminal of `rows` rows.
    fn draw(&self, rows: usize) {
        let Some(live) = &self.live else { return };
        let shown: Vec<(String, LiveStatus)> = self
            .statuses
            .lock()
            .expect("status list")
            .iter()
            .map(|r| (r.name.clone(), r.status.lock().expect("status").clone()))
            .collect();
        let lines = live.fit_lines(shown.len(), rows);
        for (line, (name, s)) in lines.iter().zip(&shown) {
            line.set_message(format!(
                "{name} {} {:.1}s · req {} · hooks {} · tasks {}",
                s.phase, s.elapsed_s, s.requests, s.hooks, s.running_tasks
            ));
            line.tick();
        }
        let hidden = shown.len().saturating_sub(lines.len());
        drop(lines);
        let elapsed = live.began.elapsed();
        let mut msg = format!(
            "elapsed {} · {} · {} running",
            clock(elapsed),
            self.left_text(&self.running()),
            shown.len()
        );
        if hidden > 0 {
            msg.push_str(&format!(" ({hidden} not shown)"));
        }
        live.overall.set_message(msg);
    }

    /// How long a run of `key` with this ceiling is expected to take: what finished runs of
    /// its key took (their median), else its ceiling scaled by the median share of their
    /// ceilings the finished runs took; its whole ceiling before any run finished. Also that
    /// share (1 before any run finished).
    fn expected(&self, key: &str, ceiling_s: f64) -> Expected {
        let measured = self.measured.lock().expect("measured durations");
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied()
        };
        let alike: Vec<f64> = measured
            .iter()
            .filter(|m| m.key == key)
            .map(|m| m.duration_s)
            .collect();
        let share = median(
            measured
                .iter()
                .filter(|m| m.ceiling_s > 0.0)
                .map(|m| (m.duration_s / m.ceiling_s).min(1.0))
                .collect(),
        )
        .unwrap_or(1.0);
        let of_key = median(alike);
        Expected {
            length: of_key.unwrap_or(share * ceiling_s).min(ceiling_s),
            share,
            measured: of_key.is_some(),
        }
    }

    /// The time left: each running run its expected length less what it ran; when that length
    /// is only scaled from other runs, or the run is past it, never less than the share of its
    /// remaining ceiling the finished runs used (a run still going has not ended: it is not
    /// "0s" away); never past its ceiling. Then the runs not started yet, in their order, each
    /// onto the slot that frees first.
    fn time_left(&self, running: &[Under]) -> Duration {
        let keys = &self.plan.keys;
        let ceilings = &self.plan.ceilings;
        let started = self.started.load(Ordering::SeqCst).min(ceilings.len());
        let mut slots: Vec<f64> = running
            .iter()
            .map(|r| {
                let (elapsed, ceiling) = (r.status.elapsed_s, r.status.ceiling_s);
                let expected = self.expected(&r.key, ceiling);
                let to_ceiling = (ceiling - elapsed).max(0.0);
                let left = expected.length - elapsed;
                let left = match expected.measured && left > 0.0 {
                    true => left,
                    false => left.max(expected.share * to_ceiling),
                };
                left.clamp(0.0, to_ceiling)
            })
            .collect();
        slots.resize(self.plan.slots.max(1).max(slots.len()), 0.0);
        for (key, ceiling) in keys.iter().zip(ceilings).skip(started) {
            let first_free = slots
                .iter_mut()
                .min_by(|a, b| a.total_cmp(b))
                .expect("at least one slot");
            *first_free += self.expected(key, ceiling.as_secs_f64()).length;
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

/// A line cut to `width` columns of display width (with `…`), so it takes one row.
fn fit(line: &str, width: usize) -> String {
    if unicode_width::UnicodeWidthStr::width(line) <= width {
        return line.to_string();
    }
    crate::evidence::normalize::truncate(line, width.saturating_sub(1))
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

    /// Runs of one key `k` with these ceilings, `slots` at once, `started` of them started.
    fn board(ceilings: &[u64], slots: usize, started: usize) -> Inner {
        let plan = Plan {
            keys: ceilings.iter().map(|_| "k".to_string()).collect(),
            ceilings: ceilings.iter().map(|s| Duration::from_secs(*s)).collect(),
            slots,
        };
        Inner {
            statuses: Statuses::default(),
            plan,
            started: AtomicUsize::new(started),
            done: AtomicUsize::new(0),
            measured: Mutex::default(),
            display: Display::Off,
            live: None,
            stop: AtomicBool::new(false),
            ticker: Mutex::new(None),
        }
    }

    /// A board showing `display`, with nothing started.
    fn plain_board(runs: usize, display: Display) -> Board {
        let mut inner = board(&vec![60; runs], 1, 0);
        inner.display = display;
        Board {
            inner: Arc::new(inner),
        }
    }

    /// A board with a live display drawn nowhere, `running` runs under way.
    fn live_board(running: usize) -> Inner {
        let mut inner = board(&[60; 40], 40, running);
        inner.display = Display::Full;
        inner.live = Some(Live::new(&inner.plan, ProgressDrawTarget::hidden()));
        for i in 0..running {
            let status = LiveStatus {
                elapsed_s: 1.5,
                ceiling_s: 60.0,
                requests: 2,
                ..LiveStatus::default()
            };
            inner.statuses.lock().unwrap().push(Running {
                name: format!("run{i}"),
                key: "k".into(),
                status: Arc::new(Mutex::new(status)),
            });
        }
        inner
    }

    /// A run of the seed fixture judged `not-resumable` in 6 s (of a 60 s ceiling), matching
    /// its expectation or not.
    fn result(matches_expect: Option<bool>) -> RunResult {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/runs/seed000-print/run.json");
        let mut info: crate::evidence::run::RunInfo =
            serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
        info.duration_s = 6.04;
        info.ceiling_s = 60.0;
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

    /// Off a terminal, each start and end is a line counting runs from 1 of all, naming the
    /// run; the end says the verdict, whether it was expected, the time, and the time left
    /// while runs remain. `--quiet` keeps the end lines only; with the display off, no line.
    #[test]
    fn plain_lines_count_runs_from_one_of_all() {
        let b = plain_board(3, Display::Full);
        let name = "x/print on 2.1.228 #1";
        assert_eq!(
            b.inner
                .count_start("a/print on latest (2.1.337) #1")
                .as_deref(),
            Some("[start 1/3] a/print on latest (2.1.337) #1")
        );
        b.started("b");
        assert_eq!(b.inner.count_start("c").as_deref(), Some("[start 3/3] c"));
        let line = |r: Result<&RunResult, &str>| b.inner.count_finish(name, "k", r).1.unwrap();
        assert_eq!(
            line(Err("no CLI")),
            "[1/3] x/print on 2.1.228 #1: failed to run: no CLI · at most 0s left (ceilings)"
        );
        assert_eq!(
            line(Ok(&result(Some(true)))),
            "[2/3] x/print on 2.1.228 #1: not-resumable as expected, 6.0s · about 0s left (measured)"
        );
        assert_eq!(
            line(Ok(&result(Some(false)))),
            "[3/3] x/print on 2.1.228 #1: not-resumable UNEXPECTED, 6.0s"
        );
        assert_eq!(
            line(Ok(&result(None))),
            "[4/3] x/print on 2.1.228 #1: not-resumable, 6.0s"
        );

        let quiet = plain_board(3, Display::Finished);
        assert_eq!(quiet.inner.count_start("a"), None, "no start line");
        assert!(quiet.inner.count_finish("a", "k", Err("x")).1.is_some());
        let off = plain_board(3, Display::Off);
        assert_eq!(off.inner.count_start("a"), None);
        assert_eq!(off.inner.count_finish("a", "k", Err("x")), (1, None));
    }

    /// A started run no longer waits for a slot: the time left counts it by its status only.
    #[test]
    fn a_started_run_leaves_the_queue_of_the_time_left() {
        let b = plain_board(3, Display::Off);
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

    fn running(key: &str, elapsed: &[f64]) -> Vec<Under> {
        elapsed
            .iter()
            .map(|e| Under {
                key: key.into(),
                status: LiveStatus {
                    elapsed_s: *e,
                    ceiling_s: 60.0,
                    ..LiveStatus::default()
                },
            })
            .collect()
    }

    fn measured(b: &Inner, key: &str, durations: &[f64]) {
        b.measured
            .lock()
            .unwrap()
            .extend(durations.iter().map(|d| Measured {
                key: key.into(),
                duration_s: *d,
                ceiling_s: 60.0,
            }));
    }

    /// Once runs of a key have finished, that key's runs take their median: two slots, 60 s
    /// ceilings, runs taking 12 s, two running for 10 s and 4 s, two waiting: 8 + 12 = 20 s.
    #[test]
    fn the_eta_uses_the_measured_durations_of_finished_runs() {
        let b = board(&[60, 60, 60, 60], 2, 2);
        assert_eq!(
            b.time_left(&running("k", &[10.0, 4.0])),
            Duration::from_secs(116)
        );
        measured(&b, "k", &[12.0, 11.0, 40.0]);
        assert_eq!(
            b.time_left(&running("k", &[10.0, 4.0])),
            Duration::from_secs(20)
        );
    }

    /// The short runs finish first: their length is not every run's. Long runs of another key
    /// still running past what the short ones took are not about to end ("about 0s left" while
    /// half the runs remain): they take the share of their ceiling the finished runs took, and
    /// one past that is taken to need as long again.
    #[test]
    fn short_runs_finishing_first_do_not_make_the_long_ones_end_now() {
        let b = board(&[60, 60, 60, 60], 2, 4);
        measured(&b, "short", &[3.0, 3.0]);
        // Two long runs under way for 20 s: expected at the finished runs' share of their
        // ceiling (3 s of 60), already past it: they take that share of what is left of
        // their ceilings (2 s), not nothing.
        assert_eq!(
            b.time_left(&running("long", &[20.0, 20.0])),
            Duration::from_secs(2)
        );
        // Once a long run finished, its key's median decides: 50 s, 30 s left.
        measured(&b, "long", &[50.0]);
        assert_eq!(
            b.time_left(&running("long", &[20.0, 20.0])),
            Duration::from_secs(30)
        );
        // Never past the ceiling: a run at 59 s of 60 has at most 1 s.
        assert!(b.time_left(&running("long", &[59.0])) <= Duration::from_secs(1));
    }

    #[test]
    fn the_eta_is_the_ceilings_scheduled_onto_the_slots() {
        // Two slots, two runs of 60 s running for 10 s and 50 s, two of 30 s waiting: the
        // slot free first (in 10 s) takes one, then the other: at most 10 + 30 + 30 = 70 s.
        let b = board(&[60, 60, 30, 30], 2, 2);
        assert_eq!(
            b.time_left(&running("k", &[10.0, 50.0])),
            Duration::from_secs(70)
        );
        // Nothing started: four runs onto two slots.
        let b = board(&[60, 60, 30, 30], 2, 0);
        assert_eq!(b.time_left(&[]), Duration::from_secs(90));
        assert_eq!(clock(Duration::from_secs(65)), "1m05s");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 4), "abc");
        assert_eq!(fit("abcd", 4), "abcd");
        // Two columns each: a row of 6 holds two of them and the ellipsis.
        assert_eq!(fit("日本語です", 6), "日本…");
    }
}
