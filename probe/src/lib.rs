//! wirestamp-probe: stage stamps from inside the trading app (issue 4).
//!
//! The app attaches to a session (a POSIX shm segment created by the daemon, or by the app when asked) and
//! stamps from any number of threads; each thread writes its own single-producer ring in the segment:
//!
//! ```no_run
//! use wirestamp_probe as probe;
//! probe::attach("wirestamp.demo", &probe::AttachOptions::default()).unwrap();
//! probe::name_point(1, "tick_to_trade").unwrap();
//! probe::name_stage(1, 1, "decode").unwrap();
//! let seq = 42; // e.g. the MoldUDP64 sequence number of the tick
//! probe::begin(1, seq);
//! probe::step(1, 1, seq); // decode done
//! probe::end(1, seq); // possibly on another thread
//! probe::value(2, 17); // a queue depth
//! probe::link(seq, 9001); // order 9001 was triggered by tick 42
//! ```
//!
//! The layout is in [`layout`]; the C ABI in [`ffi`] (header `include/wirestamp_probe.h`); the reader,
//! span reconstruction, calibration and `probe-stats` in [`reader`] (feature `reader`).
//!
//! Features: `fenced` (lfence; rdtsc; lfence in every timed stamp), `disabled` (stamps compile to nothing),
//! `reader`.
//!
//! Limits worth knowing:
//! * One reader per session: the reader persists its position in the segment (`consumed`), and two
//!   readers would move it under each other.
//! * A thread's first stamp claims a ring and faults its pages in (tens of µs for a 1.5 MiB ring); call
//!   [`register_thread`] at thread start in latency-critical threads. Rings are released at thread exit.
//! * One session per process; the mapping is never unmapped (threads keep pointers into it), `detach`
//!   only disables stamping.
//! * When the ring overflows, the reader also gives up the oldest surviving record, because the producer
//!   may be rewriting it at that moment; it is counted as lost like the others.
//! * A record whose commit word was never written (its producer died in the middle of it) is
//!   indistinguishable from an unwritten slot and is never read; one completed but not yet published is
//!   recovered and counted (`died_mid_write`).
//! * Someone truncating the segment file under a running reader or app would fault them (SIGBUS); the
//!   segment is created 0600 (or for a chosen group) so only the session's users can.

pub mod error;
pub mod ffi;
pub mod layout;
pub mod shm;
pub mod tsc;
pub mod writer;

#[cfg(feature = "reader")]
pub mod reader;

pub use error::{ProbeError, Result};
pub use layout::Geometry;
pub use shm::CreateOptions;
pub use writer::{
    AttachOptions, Producer, attach, begin, detach, enabled, end, link, name_point, name_stage, register_thread,
    set_enabled, step, value,
};
