//! Clock quality as data: whether the system clock that stamps live frames is synchronised
//! (`adjtimex`: STA_UNSYNC / TIME_ERROR) and, when ptp4l is asked, whether its offset to the master is
//! within a bound. Sampled about once a second by the capture loop and applied to every frame.

use super::pmc::Pmc;
use std::time::{Duration, Instant};
use wirestamp_core::ClockQuality;

/// The kernel's view of CLOCK_REALTIME's synchronisation: (adjtimex state, status bits).
pub fn adjtimex_state() -> (i32, i32) {
    // SAFETY: adjtimex with modes = 0 only reads; `tx` is a valid, zeroed timex.
    unsafe {
        let mut tx: libc::timex = std::mem::zeroed();
        let s = libc::adjtimex(&mut tx);
        (s, tx.status)
    }
}

/// Samples the clock's state and turns it into [`ClockQuality`] flags.
pub struct ClockWatch {
    pmc: Option<Pmc>,
    max_offset_ns: Option<i64>,
    last: Option<Instant>,
    current: ClockQuality,
    /// Why the last sample flagged the clock ("" when clean).
    pub reason: String,
}

impl ClockWatch {
    /// `pmc` + `max_offset_ns`: also flag frames while ptp4l's |master offset| exceeds the bound (or
    /// ptp4l does not answer).
    pub fn new(pmc: Option<Pmc>, max_offset_ns: Option<i64>) -> ClockWatch {
        ClockWatch { pmc, max_offset_ns, last: None, current: ClockQuality::default(), reason: String::new() }
    }

    /// The flags for a frame captured now (re-sampled at most once a second).
    pub fn quality(&mut self) -> ClockQuality {
        if self.last.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
            self.sample();
        }
        self.current
    }

    fn sample(&mut self) {
        self.last = Some(Instant::now());
        let (state, status) = adjtimex_state();
        let mut q = ClockQuality::default();
        let mut why = Vec::new();
        if status & libc::STA_UNSYNC != 0 || state == libc::TIME_ERROR {
            q |= ClockQuality::UNSYNCED;
            why.push("system clock unsynchronised (adjtimex STA_UNSYNC)".to_string());
        }
        if let (Some(p), Some(bound)) = (self.pmc.as_mut(), self.max_offset_ns) {
            match p.time_status() {
                Ok(ts) if ts.gm_present && ts.master_offset_ns.abs() <= bound => {}
                Ok(ts) => {
                    q |= ClockQuality::UNSYNCED;
                    why.push(format!(
                        "ptp4l master offset {} ns beyond {bound} ns (gmPresent {})",
                        ts.master_offset_ns, ts.gm_present
                    ));
                }
                Err(e) => {
                    q |= ClockQuality::UNSYNCED;
                    why.push(format!("ptp4l not answering: {e}"));
                }
            }
        }
        self.current = q;
        self.reason = why.join("; ");
    }
}
