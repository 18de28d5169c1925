//! Errors of live capture: what failed, on which interface, and how to fix it.

use std::io;

/// An error opening or running a live source, or controlling an interface's timestamping.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The interface does not exist (in this network namespace).
    #[error("interface {iface:?} does not exist (ENODEV); list interfaces with `ip link`")]
    NoSuchInterface { iface: String },
    /// The interface went away while capturing (deleted, or renamed and replaced).
    #[error("interface {iface:?} disappeared while capturing (deleted or renamed); the output holds the frames before")]
    InterfaceGone { iface: String },
    /// The interface exists but is administratively down.
    #[error("interface {iface:?} is down; bring it up with `ip link set {iface} up`")]
    InterfaceDown { iface: String },
    /// The process lacks a capability (EPERM/EACCES).
    #[error("{what} on {iface:?}: permission denied; run as root or grant CAP_NET_RAW and CAP_NET_ADMIN")]
    Permission { what: &'static str, iface: String },
    /// The capture filter did not compile.
    #[error("filter {filter:?} does not compile: {reason}")]
    BadFilter { filter: String, reason: String },
    /// Another program (ptp4l) relies on the interface's current hardware RX filter.
    #[error(
        "{iface}: hardware RX filter is {current} (set by another program, typically ptp4l); enabling RX ALL would \
         change what it receives. Re-run with --force-hwtstamp to override (restored on exit), or capture with \
         software timestamps (--no-hwtstamp)"
    )]
    FilterConflict { iface: String, current: String },
    /// A system call failed.
    #[error("{what} on {iface:?}: {source}")]
    Sys { what: &'static str, iface: String, source: io::Error },
    /// The runtime state file could not be read or written.
    #[error("timestamping state file {path}: {reason}")]
    State { path: String, reason: String },
}

impl LiveError {
    /// Maps an OS error to the clearest variant.
    pub(crate) fn sys(what: &'static str, iface: &str, err: io::Error) -> LiveError {
        let iface = iface.to_string();
        match err.raw_os_error() {
            Some(libc::ENODEV) | Some(libc::ENXIO) => LiveError::NoSuchInterface { iface },
            Some(libc::EPERM) | Some(libc::EACCES) => LiveError::Permission { what, iface },
            Some(libc::ENETDOWN) => LiveError::InterfaceDown { iface },
            _ => LiveError::Sys { what, iface, source: err },
        }
    }
}
