//! The `--tx-events` CSV: the sockops TX events, a row each, flushed with the capture file. What is
//! said of it counts the rows on the file, not those handed to its buffer: a write that fails (no space
//! left, its reader gone) leaves the file holding the rows before it, and the events after it are lost,
//! which the summary and the error at exit say, with what to do.

use super::{Counting, claim, dir_of};
use anyhow::Result;
use std::cell::Cell;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use wirestamp_capture::live::ebpf::TxEvent;

/// The header of the `--tx-events` CSV.
pub(super) const TX_HEADER: &str = "time_ns,event,local,remote,seq_first,seq_last,stream_first,stream_last";

/// The CSV being written, and what of it is on the file.
pub(super) struct TxCsv {
    /// None once a write failed: nothing more is written (not even by the writer's drop, which would
    /// put bytes on the file that no count says).
    w: Option<BufWriter<Counting<File>>>,
    path: PathBuf,
    /// Bytes the system took (under the buffer): what is on the file.
    on_file: Rc<Cell<u64>>,
    /// Where each row taken but not yet wholly on the file ends.
    ends: VecDeque<u64>,
    /// Events taken from the ring, and the rows wholly on the file.
    taken: u64,
    written: u64,
    /// The write that failed.
    failed: Option<std::io::Error>,
}

impl TxCsv {
    /// Begins the CSV claimed at `path` (an earlier one emptied now) with its header.
    pub fn start(claimed: claim::Claim, path: &Path) -> Result<TxCsv> {
        let on_file = Rc::new(Cell::new(0));
        let w = BufWriter::new(Counting { inner: claimed.take()?, count: on_file.clone() });
        let mut csv = TxCsv {
            w: Some(w),
            path: path.to_path_buf(),
            on_file,
            ends: VecDeque::new(),
            taken: 0,
            written: 0,
            failed: None,
        };
        // Into the buffer: a failure comes with a flush, said as any row's is.
        if let Some(Err(e)) = csv.w.as_mut().map(|w| writeln!(w, "{TX_HEADER}")) {
            csv.fail(e);
        }
        Ok(csv)
    }

    /// Appends `events`, a row each (see `--tx-events`); once a write failed, they are counted lost.
    /// False when this call's write failed (the caller says it at once).
    pub fn write(&mut self, events: Vec<TxEvent>) -> bool {
        self.taken += events.len() as u64;
        let Some(w) = self.w.as_mut() else { return true };
        let opt = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
        for e in events {
            let row = format!(
                "{},{},{},{},{},{},{},{}\n",
                e.time_ns,
                e.kind,
                e.local,
                e.remote,
                opt(e.seq_first),
                e.seq_last,
                opt(e.stream.map(|s| s.0)),
                opt(e.stream.map(|s| s.1))
            );
            if let Err(e) = w.write_all(row.as_bytes()) {
                return self.fail(e);
            }
            self.ends.push_back(self.on_file.get() + w.buffer().len() as u64);
        }
        self.settle();
        true
    }

    /// Hands the buffered rows to the file; false when that failed (the caller says it at once).
    pub fn flush(&mut self) -> bool {
        let Some(w) = self.w.as_mut() else { return true };
        if let Err(e) = w.flush() {
            return self.fail(e);
        }
        self.settle();
        true
    }

    /// A write failed: the rows on the file are counted, the rest of the buffer given up.
    fn fail(&mut self, e: std::io::Error) -> bool {
        self.settle();
        if let Some(w) = self.w.take() {
            drop(w.into_parts());
        }
        self.failed = Some(e);
        false
    }

    /// Counts the rows now wholly on the file.
    fn settle(&mut self) {
        let on_file = self.on_file.get();
        while self.ends.front().is_some_and(|end| *end <= on_file) {
            self.ends.pop_front();
            self.written += 1;
        }
    }

    /// What is said at once when a write fails while the capture runs: what the file holds, what is lost
    /// (the events taken but not yet on it too, up to a second's), and that the capture goes on.
    pub fn failed_now(&self) -> String {
        let lost = match self.taken - self.written {
            0 => "those to come are lost".to_string(),
            n => format!("{n} more, taken but not yet on it, are lost, and those to come"),
        };
        format!(
            "--tx-events {}: writing it failed: {}; nothing more is written to it: it holds the first {} TX events; \
             {lost} (counted at exit); the capture goes on, its frames still written",
            self.path.display(),
            self.failed.as_ref().map_or(String::new(), |e| e.to_string()),
            self.written
        )
    }

    /// The summary's words: the events written (on the file), and those taken but lost with a failed write.
    pub fn words(&self) -> String {
        match self.failed {
            None => format!("{} events written", self.written),
            Some(_) => format!(
                "{} events written, {} not (the --tx-events CSV could not be written: see the error)",
                self.written,
                self.taken - self.written
            ),
        }
    }

    /// The error at exit when a write failed: what, what the file holds, and what to do.
    pub fn error(&self) -> Option<anyhow::Error> {
        let e = self.failed.as_ref()?;
        let p = self.path.display();
        let fix = match e.raw_os_error() {
            Some(libc::ENOSPC | libc::EDQUOT) => {
                format!(
                    "; free space on its file system (`df {}`) before the next capture",
                    dir_of(&self.path).display()
                )
            }
            Some(libc::EPIPE) => {
                "; its reader (a pipe's other end) went away: keep it reading until the capture ends".into()
            }
            _ => String::new(),
        };
        Some(anyhow::anyhow!(
            "--tx-events {p}: writing it failed: {e}; it holds the first {} of the {} TX events taken ({} lost): read \
             it as it is (`wirestamp analyze --tx-events {p}` leaves out a last row cut short, saying so){fix}",
            self.written,
            self.taken,
            self.taken - self.written
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(k: u32) -> TxEvent {
        TxEvent {
            time_ns: 1_000 + i64::from(k),
            kind: "sched",
            local: "10.0.0.1:5000".parse().unwrap(),
            remote: "10.0.0.2:9000".parse().unwrap(),
            seq_first: Some(k * 50 + 1),
            seq_last: k * 50 + 50,
            stream: Some((k * 50, k * 50 + 49)),
        }
    }

    /// A CSV whose flush fails (`/dev/full`: no space left, nothing taken) with three events in its
    /// buffer: what is said at once counts those three lost with the ones to come (it said "the TX
    /// events from now on lost", as if those taken before were on the file), then the summary and the
    /// error at exit count all five taken.
    #[test]
    fn a_failed_flush_counts_the_events_it_lost() {
        let full = Path::new("/dev/full");
        let claimed = claim::create_tx(full, |_| Ok(())).unwrap();
        let mut csv = TxCsv::start(claimed, full).unwrap();
        assert!(csv.write((0..3).map(event).collect()));
        assert!(!csv.flush());
        let enospc = std::io::Error::from_raw_os_error(libc::ENOSPC);
        assert_eq!(
            csv.failed_now(),
            format!(
                "--tx-events /dev/full: writing it failed: {enospc}; nothing more is written to it: it holds the \
                 first 0 TX events; 3 more, taken but not yet on it, are lost, and those to come (counted at exit); \
                 the capture goes on, its frames still written"
            )
        );
        // Once failed, events are counted, not written, and not said again.
        assert!(csv.write((3..5).map(event).collect()));
        assert!(csv.flush());
        assert_eq!(csv.words(), "0 events written, 5 not (the --tx-events CSV could not be written: see the error)");
        assert_eq!(
            csv.error().map(|e| e.to_string()),
            Some(format!(
                "--tx-events /dev/full: writing it failed: {enospc}; it holds the first 0 of the 5 TX events taken \
                 (5 lost): read it as it is (`wirestamp analyze --tx-events /dev/full` leaves out a last row cut \
                 short, saying so); free space on its file system (`df /dev`) before the next capture"
            ))
        );
    }
}
