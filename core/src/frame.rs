//! The frame: the one type every source produces and everything downstream consumes.

use crate::time::{ClockQuality, TsSource};

/// One captured frame, borrowed from its source's buffer.
///
/// `data` starts at the link-layer header described by `link` (for [`LinkType::Erf`] containers the
/// reader has already removed the ERF header and presents the Ethernet frame). `ts_ns` is the
/// container's timestamp; a tap trailer found later in `data` gives a second, better one, and both
/// are kept.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// The captured bytes (`caplen` of them).
    pub data: &'a [u8],
    /// Length of the frame on the wire (pcap "original length", ERF `wlen`).
    pub wire_len: u32,
    /// Container timestamp, integer nanoseconds since the Unix epoch. Meaningless (and printed as
    /// empty) when `ts_source` is [`TsSource::PcapngNone`].
    pub ts_ns: i64,
    /// What produced `ts_ns`.
    pub ts_source: TsSource,
    /// Link-layer type of `data`.
    pub link: LinkType,
    /// Interface number, unique across all inputs of one reader (see the reader's interface table).
    pub interface: u32,
    /// Direction, when the container records it (pcapng `epb_flags`, Linux SLL packet type).
    pub direction: Direction,
    /// Number of FCS bytes known to end `data`: `Some(0)` known absent, `Some(4)` present,
    /// `None` when the container does not say.
    pub fcs_len: Option<u8>,
    /// Quality flags the container itself attached (e.g. ERF receive errors).
    pub quality: ClockQuality,
}

impl<'a> Frame<'a> {
    /// A frame of which only the bytes, the link type and a capture-record time are known: the whole
    /// frame was captured, interface 0, no direction, FCS presence unknown, no quality flag.
    pub fn record(data: &'a [u8], ts_ns: i64, link: LinkType) -> Frame<'a> {
        Frame {
            data,
            wire_len: data.len() as u32,
            ts_ns,
            ts_source: TsSource::PcapRecord,
            link,
            interface: 0,
            direction: Direction::Unknown,
            fcs_len: None,
            quality: ClockQuality::default(),
        }
    }
}

impl Frame<'_> {
    /// Captured length.
    #[inline]
    pub fn caplen(&self) -> u32 {
        self.data.len() as u32
    }

    /// True when the container timestamp is real (not a pcapng Simple Packet Block).
    #[inline]
    pub fn has_ts(&self) -> bool {
        // Not `!=`: the derived comparison of this enum costs ~20 instructions per frame.
        !matches!(self.ts_source, TsSource::PcapngNone)
    }
}

/// A frame holding its bytes: for a source that queues frames before handing them out.
#[derive(Debug, Clone)]
pub struct OwnedFrame {
    pub data: Vec<u8>,
    /// Everything else (its `data` empty).
    pub meta: Frame<'static>,
}

impl OwnedFrame {
    /// A copy of `f`, its bytes in `buf` (a spent frame's, to reuse).
    pub fn copy_of(f: &Frame<'_>, mut buf: Vec<u8>) -> OwnedFrame {
        buf.clear();
        buf.extend_from_slice(f.data);
        let meta = Frame {
            data: &[],
            wire_len: f.wire_len,
            ts_ns: f.ts_ns,
            ts_source: f.ts_source,
            link: f.link,
            interface: f.interface,
            direction: f.direction,
            fcs_len: f.fcs_len,
            quality: f.quality,
        };
        OwnedFrame { data: buf, meta }
    }

    /// The frame, borrowing its bytes.
    pub fn frame(&self) -> Frame<'_> {
        Frame { data: &self.data, ..self.meta }
    }
}

/// Direction of a frame relative to the capturing interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Not recorded.
    #[default]
    Unknown,
    /// Received by the capturing interface.
    Inbound,
    /// Sent by the capturing interface.
    Outbound,
}

impl Direction {
    /// Short stable name used in CSV/JSON output (`""` when unknown).
    pub fn name(self) -> &'static str {
        match self {
            Direction::Unknown => "",
            Direction::Inbound => "in",
            Direction::Outbound => "out",
        }
    }
}

/// Link-layer header types (tcpdump.org LINKTYPE_ numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkType {
    /// LINKTYPE_NULL (0): 4-byte host-order address family, BSD loopback.
    Null,
    /// LINKTYPE_ETHERNET (1).
    Ethernet,
    /// LINKTYPE_RAW (101): raw IPv4 or IPv6, version from the first nibble.
    Raw,
    /// LINKTYPE_LOOP (108): 4-byte network-order address family, OpenBSD loopback.
    Loop,
    /// LINKTYPE_LINUX_SLL (113): Linux cooked capture v1.
    LinuxSll,
    /// LINKTYPE_ERF (197) container records; readers unwrap them, so frames never carry this.
    Erf,
    /// LINKTYPE_IPV4 (228).
    Ipv4,
    /// LINKTYPE_IPV6 (229).
    Ipv6,
    /// LINKTYPE_LINUX_SLL2 (276): Linux cooked capture v2.
    LinuxSll2,
    /// Any other link type: frames are passed through undissected.
    Other(u16),
}

impl LinkType {
    /// Maps a LINKTYPE_ number (the low 16 bits of the pcap link-type word). DLT_RAW's platform values
    /// 12 and 14, found in old files instead of LINKTYPE_RAW, read as [`LinkType::Raw`].
    pub fn from_u16(v: u16) -> LinkType {
        match v {
            0 => LinkType::Null,
            1 => LinkType::Ethernet,
            12 | 14 | 101 => LinkType::Raw,
            108 => LinkType::Loop,
            113 => LinkType::LinuxSll,
            197 => LinkType::Erf,
            228 => LinkType::Ipv4,
            229 => LinkType::Ipv6,
            276 => LinkType::LinuxSll2,
            other => LinkType::Other(other),
        }
    }

    /// The LINKTYPE_ number.
    pub fn to_u16(self) -> u16 {
        match self {
            LinkType::Null => 0,
            LinkType::Ethernet => 1,
            LinkType::Raw => 101,
            LinkType::Loop => 108,
            LinkType::LinuxSll => 113,
            LinkType::Erf => 197,
            LinkType::Ipv4 => 228,
            LinkType::Ipv6 => 229,
            LinkType::LinuxSll2 => 276,
            LinkType::Other(v) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linktype_round_trip() {
        for v in [0u16, 1, 101, 108, 113, 197, 228, 229, 276, 147, 65535] {
            assert_eq!(LinkType::from_u16(v).to_u16(), v);
        }
        assert_eq!(LinkType::from_u16(276), LinkType::LinuxSll2);
        assert_eq!(LinkType::from_u16(12), LinkType::Raw);
        assert_eq!(LinkType::from_u16(14), LinkType::Raw);
    }

    /// A copy gives back the frame it was made of, its bytes in the buffer given (whatever it held).
    #[test]
    fn an_owned_copy_is_the_frame() {
        let bytes = [1u8, 2, 3, 4, 5];
        let f = Frame {
            data: &bytes[..3],
            wire_len: 60,
            ts_ns: 1_796_049_000_123_456_789,
            ts_source: TsSource::KernelHardware,
            link: LinkType::Ethernet,
            interface: 2,
            direction: Direction::Outbound,
            fcs_len: Some(4),
            quality: ClockQuality::UNSYNCED,
        };
        let copy = OwnedFrame::copy_of(&f, vec![9; 40]);
        let g = copy.frame();
        assert_eq!(g.data, [1, 2, 3]);
        let fields = (g.wire_len, g.ts_ns, g.ts_source, g.link, g.interface, g.direction, g.fcs_len, g.quality);
        let want =
            (60, 1_796_049_000_123_456_789, TsSource::KernelHardware, LinkType::Ethernet, 2, Direction::Outbound);
        assert_eq!(fields, (want.0, want.1, want.2, want.3, want.4, want.5, Some(4), ClockQuality::UNSYNCED));
    }
}
