//! UDP header (RFC 768): `| src port (2) | dst port (2) | length (2) | checksum (2) |`.

use super::{Field, Result, WireError, be16, need};

mod field {
    use super::Field;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
}

/// UDP header length.
pub const HEADER_LEN: usize = field::CHECKSUM.end;

/// A view of a UDP header.
#[derive(Debug, Clone, Copy)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps a buffer holding the 8-byte header whose length field is at least 8.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self> {
        need(buffer.as_ref(), HEADER_LEN)?;
        let p = UdpPacket { buffer };
        if (p.len() as usize) < HEADER_LEN {
            return Err(WireError::Malformed("UDP length below 8"));
        }
        Ok(p)
    }
    /// Source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::SRC_PORT.start)
    }
    /// Destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::DST_PORT.start)
    }
    /// Length field: header plus payload.
    #[expect(clippy::len_without_is_empty, reason = "a header length, not a container")]
    #[inline]
    pub fn len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LENGTH.start)
    }
    /// Checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deconstruct() {
        let b = [0xcb, 0x76, 0x67, 0x6d, 0x00, 0x1c, 0xab, 0xcd];
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(p.src_port(), 52086);
        assert_eq!(p.dst_port(), 26477);
        assert_eq!(p.len(), 28);
        assert_eq!(p.checksum(), 0xabcd);
        assert!(UdpPacket::new_checked(&b[..7]).is_err());
        let bad = [0, 1, 0, 2, 0, 7, 0, 0];
        assert_eq!(UdpPacket::new_checked(&bad[..]).unwrap_err(), WireError::Malformed("UDP length below 8"));
    }
}
