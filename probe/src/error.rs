//! Errors of the probe (writer and reader).

use std::path::PathBuf;

/// What went wrong, where, and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("invalid session name {name:?}: {why} (use 1-200 characters of [A-Za-z0-9._-])")]
    BadName { name: String, why: &'static str },
    #[error(
        "session segment {path} does not exist: the trading app makes it when it attaches with create options \
         (start the app first), or the session name differs from the app's"
    )]
    NotFound { path: PathBuf },
    #[error(
        "permission denied opening {path} (segment mode {mode:o}, owner uid {uid} gid {gid}; this process runs as \
         uid {my_uid} gid {my_gid}: create the session with a group this process is in, or run as its owner)"
    )]
    PermissionDenied { path: PathBuf, mode: u32, uid: u32, gid: u32, my_uid: u32, my_gid: u32 },
    #[error("{what} {path}: {source}")]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },
    #[error("{path} is not a wirestamp probe segment (magic at offset 0 is {found:#018x}, expected {expected:#018x})")]
    BadMagic { path: PathBuf, found: u64, expected: u64 },
    #[error(
        "{path} has probe layout version {found}, this build reads version {expected} (upgrade the older side so the \
         app and the daemon use the same wirestamp-probe layout)"
    )]
    VersionMismatch { path: PathBuf, found: u32, expected: u32 },
    #[error("{path} is corrupt: {field} at byte offset {offset} is {found}, expected {expected}")]
    Corrupt { path: PathBuf, field: &'static str, offset: usize, found: u64, expected: String },
    #[error("{path} was never completed by its creator (magic still zero after {waited_ms} ms)")]
    NotInitialized { path: PathBuf, waited_ms: u64 },
    #[error("invalid segment geometry: {0}")]
    Geometry(String),
    #[error("this process is already attached to session {0:?}; one session per process")]
    AlreadyAttached(String),
    #[error("not attached to a session (call attach first)")]
    NotAttached,
    #[error("name {0:?} is longer than {max} bytes", max = crate::layout::NAME_MAX_LEN)]
    NameTooLong(String),
    #[error("the name table is full ({} entries)", crate::layout::MAX_NAMES)]
    NameTableFull,
    #[error("no free ring slot ({max_threads} threads already registered)")]
    NoFreeSlot { max_threads: u32 },
}

/// Result with a [`ProbeError`].
pub type Result<T> = std::result::Result<T, ProbeError>;
