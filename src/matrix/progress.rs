//! The progress line while runs wait: one line on stderr, redrawn in place on a terminal,
//! plain start/finish lines when stderr is not a terminal.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::driver::StatusHandle;
use crate::report::json::RunResult;

#[derive(Clone)]
pub struct Board {
    inner: Arc<Inner>,
}

struct Inner {
    statuses: Arc<Mutex<Vec<(String, StatusHandle)>>>,
    total: usize,
    done: AtomicUsize,
    tty: bool,
    enabled: bool,
    stop: AtomicBool,
    ticker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Board {
    pub fn start(
        statuses: Arc<Mutex<Vec<(String, StatusHandle)>>>,
        total: usize,
        enabled: bool,
    ) -> Board {
        let inner = Arc::new(Inner {
            statuses,
            total,
            done: AtomicUsize::new(0),
            tty: std::io::stderr().is_terminal(),
            enabled,
            stop: AtomicBool::new(false),
            ticker: Mutex::new(None),
        });
        if enabled && inner.tty {
            let ticker_inner = inner.clone();
            // A plain thread: redrawing must not depend on the runtime being responsive.
            let handle = std::thread::spawn(move || {
                while !ticker_inner.stop.load(Ordering::SeqCst) {
                    ticker_inner.draw();
                    std::thread::park_timeout(Duration::from_millis(250));
                }
                eprint!("\r\x1b[K");
            });
            *inner.ticker.lock().expect("ticker") = Some(handle);
        }
        Board { inner }
    }

    pub fn finished(&self, title: &str, result: Option<&RunResult>) {
        let done = self.inner.done.fetch_add(1, Ordering::SeqCst) + 1;
        if !self.inner.enabled {
            return;
        }
        let detail = result
            .map(|r| {
                let expect = match r.matches_expect {
                    Some(true) => " as expected",
                    Some(false) => " UNEXPECTED",
                    None => "",
                };
                format!("{}{expect}, {:.1}s", r.judgement.outcome, r.run.duration_s)
            })
            .unwrap_or_else(|| "failed to run".into());
        if self.inner.tty {
            eprint!("\r\x1b[K");
        }
        eprintln!("[{done}/{}] {title} done ({detail})", self.inner.total);
    }

    pub fn stop(&self) {
        self.inner.stop.store(true, Ordering::SeqCst);
        if let Some(handle) = self.inner.ticker.lock().expect("ticker").take() {
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}

impl Inner {
    fn draw(&self) {
        let statuses = self.statuses.lock().expect("status list");
        if statuses.is_empty() {
            return;
        }
        let parts: Vec<String> = statuses
            .iter()
            .map(|(title, s)| {
                let s = s.lock().expect("status");
                format!(
                    "{title} {:.1}s req {} hooks {} tasks {}{}",
                    s.elapsed_s,
                    s.requests,
                    s.hooks,
                    s.running_tasks,
                    if s.phase == "running" || s.phase.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", s.phase)
                    }
                )
            })
            .collect();
        let mut line = format!(
            "[{}/{}] {}",
            self.done.load(Ordering::SeqCst),
            self.total,
            parts.join(" | ")
        );
        let width = 160;
        if line.chars().count() > width {
            line = line.chars().take(width - 1).collect::<String>() + "…";
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{line}");
        let _ = err.flush();
    }
}
