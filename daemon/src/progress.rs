//! A progress line on stderr (`analyze`, `synth`): shown only on a terminal and once the work has
//! taken a second, redrawn at most every 200 ms, and wiped at the end so that what follows starts on
//! a clean line.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

pub struct ProgressLine {
    on: bool,
    started: Instant,
    last: Instant,
    shown: bool,
}

impl ProgressLine {
    /// A line on stderr if it is a terminal and not `quiet`.
    pub fn new(quiet: bool) -> ProgressLine {
        let now = Instant::now();
        ProgressLine { on: !quiet && std::io::stderr().is_terminal(), started: now, last: now, shown: false }
    }

    /// Whether anything may be shown at all (the caller skips gathering its figures when not).
    pub fn on(&self) -> bool {
        self.on
    }

    /// The time since the start when a redraw is due now (and it is taken as done), else `None`.
    pub fn due(&mut self) -> Option<Duration> {
        let now = Instant::now();
        let elapsed = now - self.started;
        if !self.on || elapsed < Duration::from_secs(1) || now - self.last < Duration::from_millis(200) {
            return None;
        }
        self.last = now;
        Some(elapsed)
    }

    /// Draws `text` over the line.
    pub fn show(&mut self, text: &str) {
        {
            use std::io::Write as _;
            let _ = write!(std::io::stderr(), "\r{text}   ");
        }
        self.shown = true;
    }

    /// Wipes the line, if it was drawn.
    pub fn finish(&self) {
        if self.shown {
            {
                use std::io::Write as _;
                let _ = write!(std::io::stderr(), "\r{:60}\r", "");
            }
        }
    }
}
