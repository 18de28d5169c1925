//! wirestamp-core: everything between bytes and numbers, with no IO.
//!
//! Invariants (see ARCHITECTURE.md):
//! - No syscalls, no files, no sockets: the same code is fed by files, live sockets and BPF rings.
//! - Timestamps are integer nanoseconds since the Unix epoch (`i64`); no float ever touches one.
//! - Malformed input is a counted anomaly, never a panic.

pub mod analyze;
pub mod dissect;
pub mod frame;
pub mod fxhash;
pub mod proto;
pub mod reasm;
pub mod stats;
pub mod time;
pub mod trailer;
pub mod wire;

pub use frame::{Direction, Frame, LinkType, OwnedFrame};
pub use time::{ClockQuality, TsSource};
