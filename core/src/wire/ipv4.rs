//! IPv4 header (RFC 791).
//!
//! ```text
//! | ver:4 ihl:4 | tos | total length (2) | id (2) | flags:3 frag offset:13 | ttl | proto | csum (2) |
//! | src (4) | dst (4) | options (ihl*4 - 20) |
//! ```

use super::{Field, Result, WireError, be16, need};
use std::net::Ipv4Addr;

mod field {
    use super::Field;
    pub const VER_IHL: usize = 0;
    pub const TOTAL_LEN: Field = 2..4;
    pub const FLAGS_FRAG: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTO: usize = 9;
    pub const SRC: Field = 12..16;
    pub const DST: Field = 16..20;
}

/// Minimum IPv4 header length.
pub const HEADER_LEN: usize = field::DST.end;

/// A view of an IPv4 header.
#[derive(Debug, Clone, Copy)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps a buffer without checking it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }
    /// Wraps a buffer holding a whole IPv4 header (options included) with version 4 and a sane IHL.
    /// The total length is *not* checked against the buffer: captures are often cut by a snap length.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    /// See [`Ipv4Packet::new_checked`].
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need(b, HEADER_LEN)?;
        if self.version() != 4 {
            return Err(WireError::Malformed("IPv4 version is not 4"));
        }
        if self.header_len() < HEADER_LEN {
            return Err(WireError::Malformed("IPv4 header length below 20"));
        }
        need(b, self.header_len())?;
        if (self.total_len() as usize) < self.header_len() {
            return Err(WireError::Malformed("IPv4 total length below header length"));
        }
        Ok(())
    }
    /// Version nibble.
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }
    /// Header length in bytes (IHL × 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        ((self.buffer.as_ref()[field::VER_IHL] & 0x0f) as usize) * 4
    }
    /// Total length field: header plus payload.
    #[inline]
    pub fn total_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::TOTAL_LEN.start)
    }
    /// More-fragments flag.
    #[inline]
    pub fn more_frags(&self) -> bool {
        be16(self.buffer.as_ref(), field::FLAGS_FRAG.start) & 0x2000 != 0
    }
    /// Fragment offset in bytes.
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        (be16(self.buffer.as_ref(), field::FLAGS_FRAG.start) & 0x1fff) * 8
    }
    /// Time to live.
    #[inline]
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }
    /// Payload protocol number.
    #[inline]
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTO]
    }
    /// Source address.
    #[inline]
    pub fn src(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::SRC];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }
    /// Destination address.
    #[inline]
    pub fn dst(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::DST];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 206.200.127.138 -> 233.54.12.111, UDP, total length 48, DF clear, TTL 62.
    static HDR: [u8; 20] =
        [0x45, 0x00, 0x00, 0x30, 0x12, 0x34, 0x00, 0x00, 0x3e, 0x11, 0x00, 0x00, 206, 200, 127, 138, 233, 54, 12, 111];

    #[test]
    fn deconstruct() {
        let p = Ipv4Packet::new_checked(&HDR[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.total_len(), 48);
        assert_eq!(p.protocol(), 17);
        assert_eq!(p.ttl(), 62);
        assert!(!p.more_frags());
        assert_eq!(p.frag_offset(), 0);
        assert_eq!(p.src(), Ipv4Addr::new(206, 200, 127, 138));
        assert_eq!(p.dst(), Ipv4Addr::new(233, 54, 12, 111));
    }

    #[test]
    fn fragment_fields() {
        let mut h = HDR;
        h[6] = 0x20;
        h[7] = 0x03; // MF, offset 3*8
        let p = Ipv4Packet::new_checked(&h[..]).unwrap();
        assert!(p.more_frags());
        assert_eq!(p.frag_offset(), 24);
    }

    #[test]
    fn impossible_lengths() {
        let mut h = HDR;
        h[0] = 0x44; // IHL 16 bytes
        assert_eq!(Ipv4Packet::new_checked(&h[..]).unwrap_err(), WireError::Malformed("IPv4 header length below 20"));
        let mut h = HDR;
        h[0] = 0x46; // IHL 24 bytes, buffer 20
        assert_eq!(Ipv4Packet::new_checked(&h[..]).unwrap_err(), WireError::Truncated { need: 24, have: 20 });
        let mut h = HDR;
        h[3] = 10; // total 10 < 20
        assert!(Ipv4Packet::new_checked(&h[..]).is_err());
        let mut h = HDR;
        h[0] = 0x65;
        assert_eq!(Ipv4Packet::new_checked(&h[..]).unwrap_err(), WireError::Malformed("IPv4 version is not 4"));
    }
}
