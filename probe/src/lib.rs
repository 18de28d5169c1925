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
