//! Typed zero-copy views over L2-L4 headers, in the style of smoltcp's `wire` module.
//!
//! Contract: each `Packet` type has `new_checked`, which verifies with `check_len` that every fixed
//! field and the header length it declares lie inside the buffer. After `new_checked` returned `Ok`,
//! no accessor panics, whatever the bytes say. `new_unchecked` skips the check for callers that did it.
//! All multi-byte fields are big-endian (network order).

pub mod ethernet;
pub mod ipv4;
pub mod ipv6;
pub mod tcp;
pub mod udp;

/// A header did not fit, or declared an impossible length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The buffer ends before the header does.
    #[error("truncated: need {need} bytes, have {have}")]
    Truncated {
        /// Bytes the header needs.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// A length or version field holds a value the format forbids.
    #[error("malformed: {0}")]
    Malformed(&'static str),
}

/// Result of wire parsing.
pub type Result<T> = core::result::Result<T, WireError>;

pub(crate) type Field = core::ops::Range<usize>;

#[inline]
pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

#[inline]
pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[inline]
pub(crate) fn need(buf: &[u8], len: usize) -> Result<()> {
    if buf.len() < len { Err(WireError::Truncated { need: len, have: buf.len() }) } else { Ok(()) }
}
