//! Ethernet II (IEEE 802.3 with EtherType) and 802.1Q / 802.1ad tags.
//!
//! ```text
//! | dst MAC (6) | src MAC (6) | EtherType (2) | payload ...
//! 802.1Q/802.1ad tag, inserted before the EtherType: | TPID 0x8100/0x88A8/0x9100 (2) | PCP:3 DEI:1 VID:12 (2) |
//! ```

use super::{Field, Result, be16, need};

mod field {
    use super::Field;
    pub const DST: Field = 0..6;
    pub const SRC: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
}

/// Length of an untagged Ethernet header.
pub const HEADER_LEN: usize = field::ETHERTYPE.end;
/// Length of one VLAN tag.
pub const VLAN_TAG_LEN: usize = 4;

/// EtherType values wirestamp acts on.
pub mod ethertype {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// ARP.
    pub const ARP: u16 = 0x0806;
    /// IEEE 802.1Q customer VLAN tag.
    pub const VLAN: u16 = 0x8100;
    /// IEEE 802.1ad service VLAN tag (QinQ outer tag).
    pub const QINQ: u16 = 0x88A8;
    /// Pre-standard QinQ outer tag.
    pub const QINQ_OLD: u16 = 0x9100;
    /// IPv6.
    pub const IPV6: u16 = 0x86DD;
    /// Exablaze/Cisco Fusion native keyframe.
    pub const EXABLAZE_KEYFRAME: u16 = 0x88B5;
    /// Arista 7280 / DANZ timestamp header.
    pub const ARISTA_TS: u16 = 0xD28B;

    /// True for the TPIDs of a VLAN tag.
    #[inline]
    pub const fn is_vlan(t: u16) -> bool {
        matches!(t, VLAN | QINQ | QINQ_OLD)
    }
}

/// A view of an Ethernet header.
#[derive(Debug, Clone, Copy)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps a buffer without checking its length.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }
    /// Wraps a buffer that holds at least the 14-byte header.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self> {
        let f = Self::new_unchecked(buffer);
        f.check_len()?;
        Ok(f)
    }
    /// Checks the buffer holds the fixed header.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        need(self.buffer.as_ref(), HEADER_LEN)
    }
    /// Destination MAC.
    #[inline]
    pub fn dst(&self) -> [u8; 6] {
        self.buffer.as_ref()[field::DST].try_into().unwrap_or([0; 6])
    }
    /// Source MAC.
    #[inline]
    pub fn src(&self) -> [u8; 6] {
        self.buffer.as_ref()[field::SRC].try_into().unwrap_or([0; 6])
    }
    /// The EtherType (or TPID of the first tag).
    #[inline]
    pub fn ethertype(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ETHERTYPE.start)
    }
}

/// A view of the 4 bytes that follow a VLAN TPID: `| TCI (2) | inner EtherType (2) |`.
#[derive(Debug, Clone, Copy)]
pub struct VlanTag<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VlanTag<T> {
    /// Wraps the 4 bytes after a TPID: TCI and the next EtherType.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self> {
        need(buffer.as_ref(), 4)?;
        Ok(VlanTag { buffer })
    }
    /// VLAN identifier (12 bits).
    #[inline]
    pub fn vid(&self) -> u16 {
        be16(self.buffer.as_ref(), 0) & 0x0fff
    }
    /// Priority code point (3 bits).
    #[inline]
    pub fn pcp(&self) -> u8 {
        (self.buffer.as_ref()[0] >> 5) & 0x7
    }
    /// The EtherType following the tag.
    #[inline]
    pub fn inner_type(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // dst 01:00:5e:36:0c:6f, src 00:1c:73:aa:bb:cc, 802.1Q VID 3050 PCP 0, then IPv4.
    static TAGGED: [u8; 18] =
        [0x01, 0x00, 0x5e, 0x36, 0x0c, 0x6f, 0x00, 0x1c, 0x73, 0xaa, 0xbb, 0xcc, 0x81, 0x00, 0x0b, 0xea, 0x08, 0x00];

    #[test]
    fn deconstruct() {
        let f = EthernetFrame::new_checked(&TAGGED[..]).unwrap();
        assert_eq!(f.dst(), [0x01, 0x00, 0x5e, 0x36, 0x0c, 0x6f]);
        assert_eq!(f.src(), [0x00, 0x1c, 0x73, 0xaa, 0xbb, 0xcc]);
        assert_eq!(f.ethertype(), ethertype::VLAN);
        let t = VlanTag::new_checked(&TAGGED[14..]).unwrap();
        assert_eq!(t.vid(), 3050);
        assert_eq!(t.pcp(), 0);
        assert_eq!(t.inner_type(), ethertype::IPV4);
    }

    #[test]
    fn truncated() {
        assert!(matches!(
            EthernetFrame::new_checked(&TAGGED[..13]),
            Err(super::super::WireError::Truncated { need: 14, have: 13 })
        ));
        assert!(VlanTag::new_checked(&TAGGED[14..17]).is_err());
    }
}
