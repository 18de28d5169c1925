//! IPv6 fixed header (RFC 8200) and the extension headers wirestamp walks past.
//!
//! ```text
//! | ver:4 class:8 flow:20 | payload length (2) | next header | hop limit | src (16) | dst (16) |
//! extension headers: | next header | hdr ext len | ... |   fragment: | next | res | offset:13 res:2 M:1 | id (4) |
//! ```

use super::{Field, Result, WireError, be16, need};
use std::net::Ipv6Addr;

mod field {
    use super::Field;
    pub const PAYLOAD_LEN: Field = 4..6;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: Field = 8..24;
    pub const DST: Field = 24..40;
}

/// Fixed IPv6 header length.
pub const HEADER_LEN: usize = field::DST.end;

/// A view of an IPv6 fixed header.
#[derive(Debug, Clone, Copy)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wraps a buffer holding the 40-byte fixed header with version 6.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self> {
        need(buffer.as_ref(), HEADER_LEN)?;
        if buffer.as_ref()[0] >> 4 != 6 {
            return Err(WireError::Malformed("IPv6 version is not 6"));
        }
        Ok(Ipv6Packet { buffer })
    }
    /// Payload length (everything after the fixed header, extension headers included).
    #[inline]
    pub fn payload_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::PAYLOAD_LEN.start)
    }
    /// Next header of the fixed header.
    #[inline]
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NEXT_HEADER]
    }
    /// Hop limit.
    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }
    /// Source address.
    #[inline]
    pub fn src(&self) -> Ipv6Addr {
        let b: [u8; 16] = self.buffer.as_ref()[field::SRC].try_into().unwrap_or([0; 16]);
        Ipv6Addr::from(b)
    }
    /// Destination address.
    #[inline]
    pub fn dst(&self) -> Ipv6Addr {
        let b: [u8; 16] = self.buffer.as_ref()[field::DST].try_into().unwrap_or([0; 16]);
        Ipv6Addr::from(b)
    }
}

/// Extension header numbers that wirestamp walks over.
pub mod ext {
    /// Hop-by-hop options.
    pub const HOP_BY_HOP: u8 = 0;
    /// Routing.
    pub const ROUTING: u8 = 43;
    /// Fragment.
    pub const FRAGMENT: u8 = 44;
    /// Authentication header.
    pub const AUTH: u8 = 51;
    /// Destination options.
    pub const DEST_OPTS: u8 = 60;
}

/// Outcome of walking the extension-header chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtChain {
    /// Upper-layer protocol number.
    pub proto: u8,
    /// Bytes of extension headers (offset of the upper-layer header from the end of the fixed header).
    pub len: usize,
    /// A fragment header was present: `Some((offset_bytes, more_fragments))`.
    pub fragment: Option<(u16, bool)>,
}

/// Walks extension headers in `buf` (the bytes after the fixed header), starting at `next`.
#[inline]
pub fn walk_extensions(buf: &[u8], mut next: u8) -> Result<ExtChain> {
    let mut off = 0usize;
    let mut fragment = None;
    // A chain longer than this is hostile; the bound keeps the walk finite and cheap.
    for _ in 0..16 {
        let hlen = match next {
            ext::HOP_BY_HOP | ext::ROUTING | ext::DEST_OPTS => {
                need(buf, off + 2)?;
                (buf[off + 1] as usize + 1) * 8
            }
            ext::FRAGMENT => 8,
            ext::AUTH => {
                need(buf, off + 2)?;
                (buf[off + 1] as usize + 2) * 4
            }
            proto => return Ok(ExtChain { proto, len: off, fragment }),
        };
        need(buf, off + hlen)?;
        if next == ext::FRAGMENT {
            let w = be16(buf, off + 2);
            fragment = Some((w & 0xfff8, w & 1 != 0));
        }
        next = buf[off];
        off += hlen;
    }
    Err(WireError::Malformed("IPv6 extension header chain longer than 16"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(next: u8, payload_len: u16) -> Vec<u8> {
        let mut h = vec![0x60, 0, 0, 0];
        h.extend_from_slice(&payload_len.to_be_bytes());
        h.push(next);
        h.push(64);
        h.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        h.extend_from_slice(&"ff02::fb".parse::<Ipv6Addr>().unwrap().octets());
        h
    }

    #[test]
    fn deconstruct() {
        let h = header(17, 8);
        let p = Ipv6Packet::new_checked(&h[..]).unwrap();
        assert_eq!(p.payload_len(), 8);
        assert_eq!(p.next_header(), 17);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.src(), "2001:db8::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(p.dst(), "ff02::fb".parse::<Ipv6Addr>().unwrap());
        assert!(Ipv6Packet::new_checked(&h[..39]).is_err());
    }

    #[test]
    fn extension_chain() {
        // hop-by-hop (8 bytes) -> fragment (offset 1448, M=1) -> UDP
        let ext = [ext::FRAGMENT, 0, 1, 4, 0, 0, 0, 0, 17, 0, 0x05, 0xa9, 0, 0, 0, 7];
        let c = walk_extensions(&ext, ext::HOP_BY_HOP).unwrap();
        assert_eq!(c, ExtChain { proto: 17, len: 16, fragment: Some((1448, true)) });
        assert!(walk_extensions(&ext[..12], ext::HOP_BY_HOP).is_err());
        // A loop of hop-by-hop headers pointing at themselves is bounded.
        let looped = [0u8; 8 * 20];
        assert!(walk_extensions(&looped, ext::HOP_BY_HOP).is_err());
    }
}
