//! TCP header (RFC 9293).
//!
//! ```text
//! | src port (2) | dst port (2) | seq (4) | ack (4) | data offset:4 res:4 | flags | window (2) | csum (2) | urg (2) |
//! | options (data offset*4 - 20) |
//! ```

use super::{Field, Result, WireError, be16, be32, need};

mod field {
    use super::Field;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const SEQ: Field = 4..8;
    pub const ACK: Field = 8..12;
    pub const DATA_OFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: Field = 14..16;
    pub const URGENT: Field = 18..20;
}

/// Minimum TCP header length.
pub const HEADER_LEN: usize = field::URGENT.end;

/// TCP flag bits.
pub mod flags {
    /// FIN.
    pub const FIN: u8 = 0x01;
    /// SYN.
    pub const SYN: u8 = 0x02;
    /// RST.
    pub const RST: u8 = 0x04;
    /// PSH.
    pub const PSH: u8 = 0x08;
    /// ACK.
    pub const ACK: u8 = 0x10;
}

/// A view of a TCP header.
#[derive(Debug, Clone, Copy)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Wraps a buffer holding the whole header, options included, with a data offset of at least 5.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self> {
        need(buffer.as_ref(), HEADER_LEN)?;
        let p = TcpPacket { buffer };
        if p.header_len() < HEADER_LEN {
            return Err(WireError::Malformed("TCP data offset below 5"));
        }
        need(p.buffer.as_ref(), p.header_len())?;
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
    /// Sequence number.
    #[inline]
    pub fn seq(&self) -> u32 {
        be32(self.buffer.as_ref(), field::SEQ.start)
    }
    /// Acknowledgement number.
    #[inline]
    pub fn ack(&self) -> u32 {
        be32(self.buffer.as_ref(), field::ACK.start)
    }
    /// Header length in bytes (data offset × 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        ((self.buffer.as_ref()[field::DATA_OFF] >> 4) as usize) * 4
    }
    /// Flag byte (FIN..CWR).
    #[inline]
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }
    /// Receive window.
    #[inline]
    pub fn window(&self) -> u16 {
        be16(self.buffer.as_ref(), field::WINDOW.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deconstruct() {
        let b = [
            0x1f, 0x43, 0xc3, 0x50, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x20, 0x01, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0,
        ];
        let p = TcpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(p.src_port(), 8003);
        assert_eq!(p.dst_port(), 50000);
        assert_eq!(p.seq(), 0x1000);
        assert_eq!(p.ack(), 0x2001);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.flags(), flags::PSH | flags::ACK);
        assert_eq!(p.window(), 0xffff);
        let mut opts = b;
        opts[12] = 0x60; // 24-byte header, buffer of 20
        assert_eq!(TcpPacket::new_checked(&opts[..]).unwrap_err(), WireError::Truncated { need: 24, have: 20 });
        opts[12] = 0x40;
        assert_eq!(TcpPacket::new_checked(&opts[..]).unwrap_err(), WireError::Malformed("TCP data offset below 5"));
    }
}
