//! What the format parsers hand back to the reader: frames as positions in the buffer (so that
//! refilling never fights a borrow), plus small byte helpers shared by the parsers.

use wirestamp_core::{ClockQuality, Direction, LinkType, TsSource};

/// A frame located in the reader's buffer: `data = buffer[start .. start + len]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawFrame {
    pub start: usize,
    pub len: u32,
    pub wire_len: u32,
    pub ts_ns: i64,
    pub ts_source: TsSource,
    pub link: LinkType,
    /// Row in the reader's interface table.
    pub interface: u32,
    pub direction: Direction,
    pub fcs_len: Option<u8>,
    pub quality: ClockQuality,
}

/// Outcome of one parser step.
#[derive(Debug)]
pub(crate) enum Step {
    /// A frame.
    Frame(RawFrame),
    /// A record or block that carries no frame, skipped and counted under this name.
    Skipped(&'static str),
    /// A structural block (pcapng SHB/IDB) consumed.
    Header,
    /// Clean end of the stream.
    Eof,
    /// The stream ends inside a record.
    Cut { needed: u64, have: u64 },
}

/// Reads a u32 at `off` in little-endian order, or swapped. Callers check the bounds first.
#[inline(always)]
pub(crate) fn u32_at(b: &[u8], off: usize, swap: bool) -> u32 {
    let v = match b.get(off..off + 4) {
        Some(s) => u32::from_le_bytes([s[0], s[1], s[2], s[3]]),
        None => 0,
    };
    if swap { v.swap_bytes() } else { v }
}

/// Reads a u16 like [`u32_at`].
#[inline(always)]
pub(crate) fn u16_at(b: &[u8], off: usize, swap: bool) -> u16 {
    let v = match b.get(off..off + 2) {
        Some(s) => u16::from_le_bytes([s[0], s[1]]),
        None => 0,
    };
    if swap { v.swap_bytes() } else { v }
}

/// Reads a u64 like [`u32_at`].
#[inline(always)]
pub(crate) fn u64_at(b: &[u8], off: usize, swap: bool) -> u64 {
    let v = match b.get(off..off + 8) {
        Some(s) => u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]),
        None => 0,
    };
    if swap { v.swap_bytes() } else { v }
}

/// Big-endian u16 (ERF header fields).
#[inline(always)]
pub(crate) fn be16_at(b: &[u8], off: usize) -> u16 {
    u16_at(b, off, true)
}

/// Rounds up to a multiple of 4 (pcapng padding), saturating.
#[inline(always)]
pub(crate) fn pad4(n: usize) -> usize {
    n.saturating_add(3) & !3
}

/// Direction recorded by Linux cooked headers: SLL packet type (offset 0, u16 BE) or SLL2
/// (offset 10, u8): 0-3 (to us, broadcast, multicast, other host) inbound, 4 outgoing.
#[inline]
pub(crate) fn sll_direction(link: LinkType, data: &[u8]) -> Direction {
    let t = match link {
        LinkType::LinuxSll => data.get(1).copied(),
        LinkType::LinuxSll2 => data.get(10).copied(),
        _ => None,
    };
    match (link, t) {
        (LinkType::LinuxSll, Some(_)) if data.first() != Some(&0) => Direction::Unknown,
        (_, Some(0..=3)) => Direction::Inbound,
        (_, Some(4)) => Direction::Outbound,
        _ => Direction::Unknown,
    }
}

/// Converts a pcap link-type word's FCS field (bits 28-31, valid when the P bit 26 is set; in
/// 16-bit words) to bytes.
pub(crate) fn pcap_fcs_len(word: u32) -> Option<u8> {
    if word & (1 << 26) != 0 { Some(((word >> 28) as u8) * 2) } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(u32_at(&[1, 2, 3, 4], 0, false), 0x0403_0201);
        assert_eq!(u32_at(&[1, 2, 3, 4], 0, true), 0x0102_0304);
        assert_eq!(u32_at(&[1, 2, 3], 0, false), 0);
        assert_eq!(be16_at(&[0x12, 0x34], 0), 0x1234);
        assert_eq!(pad4(5), 8);
        assert_eq!(pad4(8), 8);
        assert_eq!(pcap_fcs_len(0x1400_0001), Some(2));
        assert_eq!(pcap_fcs_len(0x2400_0001), Some(4));
        assert_eq!(pcap_fcs_len(0x3000_0001), None);
        let sll_out = [0u8, 4, 0, 1];
        assert_eq!(sll_direction(LinkType::LinuxSll, &sll_out), Direction::Outbound);
        let mut sll2 = [0u8; 20];
        sll2[10] = 0;
        assert_eq!(sll_direction(LinkType::LinuxSll2, &sll2), Direction::Inbound);
        assert_eq!(sll_direction(LinkType::Ethernet, &sll2), Direction::Unknown);
    }
}
