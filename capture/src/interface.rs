//! The interface table: one row per capture interface seen in an input, and the exact conversion
//! of each interface's timestamp units to nanoseconds.

use wirestamp_core::LinkType;

/// Which container an interface comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContainerKind {
    /// Classic pcap (one interface per file).
    Pcap,
    /// pcapng (one Interface Description Block each).
    Pcapng,
    /// Endace ERF (one per ERF interface number seen, in order of first appearance).
    Erf,
}

/// Resolution of an interface's timestamp units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TsResolution {
    /// 10^-n s (pcap µs = 6, ns = 9; pcapng `if_tsresol` with MSB clear).
    Dec(u8),
    /// 2^-n s (pcapng `if_tsresol` with MSB set; ERF = 32).
    Bin(u8),
}

impl TsResolution {
    /// Decodes a pcapng `if_tsresol` byte.
    pub fn from_pcapng(b: u8) -> TsResolution {
        if b & 0x80 != 0 { TsResolution::Bin(b & 0x7f) } else { TsResolution::Dec(b) }
    }

    /// Nanoseconds in `units` of this resolution, rounded toward negative infinity (units are
    /// unsigned, so: truncated), computed exactly with 128-bit integers. That is Wireshark's rule
    /// (wiretap/pcapng.c divides by the units per second and truncates).
    pub fn units_to_ns(self, units: u64) -> i128 {
        match self {
            TsResolution::Dec(n) if n <= 9 => units as i128 * 10i128.pow(9 - n as u32),
            TsResolution::Dec(n) => match 10u128.checked_pow(n as u32 - 9) {
                Some(div) => (units as u128 / div) as i128,
                None => 0,
            },
            // units < 2^64 and 1e9 < 2^30, so the product fits in 94 bits; n <= 127.
            TsResolution::Bin(n) => ((units as u128 * 1_000_000_000) >> n) as i128,
        }
    }

    /// One unit in whole nanoseconds, rounded up: 1 for a nanosecond or finer, 1,000 for µs, 10^9 for
    /// seconds (the granularity a figure in ns inherits from these timestamps).
    pub fn unit_ns(self) -> u64 {
        match self {
            TsResolution::Dec(n) if n <= 9 => 10u64.pow(9 - u32::from(n)),
            TsResolution::Dec(_) => 1,
            TsResolution::Bin(n) => {
                1_000_000_000u64.div_ceil(1u64.checked_shl(u32::from(n)).unwrap_or(u64::MAX)).max(1)
            }
        }
    }
}

/// One capture interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Number used in `Frame::interface`: the row index in the table that holds this row (a
    /// reader's own table, or the merged reader's global one).
    pub id: u32,
    /// Index of the input file (0 for a reader used on its own).
    pub input: usize,
    /// Interface number inside the file: pcap 0; pcapng the IDB's index counted across all
    /// sections of the file (as tshark's `frame.interface_id`); ERF the 3-bit interface number
    /// from the record flags.
    pub local_id: u32,
    /// pcapng `if_name`.
    pub name: Option<String>,
    /// pcapng `if_description`.
    pub description: Option<String>,
    /// Link type of the interface's records (LINKTYPE_ERF for ERF-in-pcap: its frames are
    /// presented unwrapped as Ethernet).
    pub link: LinkType,
    /// Timestamp resolution.
    pub ts_resolution: TsResolution,
    /// pcapng `if_tsoffset`, seconds (signed), already added to every frame's `ts_ns`.
    pub ts_offset_s: i64,
    /// FCS length in bytes when the container says (pcap link-type word, `if_fcslen`, ERF = 4).
    pub fcs_len: Option<u8>,
    /// Container the interface comes from.
    pub container: ContainerKind,
    /// Snapshot length (0 = unknown/unlimited).
    pub snaplen: u32,
    /// pcapng section number (0-based); 0 for other containers.
    pub section: u32,
    /// What the capture recorded about itself for this interface: the last pcapng Interface Statistics
    /// Block read so far (its counters run from the start of the capture).
    pub recorded: Option<RecordedStats>,
    /// The interface's pcapng section was written by `wirestamp capture` (its `shb_userappl` and
    /// comment say so: [`crate::write::CAPTURE_COMMENT`]), which writes a statistics block for each
    /// interface when it closes a file: one read to its end without any (`recorded` none) was never
    /// closed, or is cut short. Other writers (tcpdump, dumpcap) may never write them.
    pub by_wirestamp_capture: bool,
}

/// Counters of a pcapng Interface Statistics Block (pcapng §4.6); `None`: the block did not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordedStats {
    /// `isb_ifrecv`: packets the interface received.
    pub ifrecv: Option<u64>,
    /// `isb_ifdrop`: packets the interface dropped for lack of resources.
    pub ifdrop: Option<u64>,
    /// `isb_filteraccept`: packets the capture filter accepted.
    pub filteraccept: Option<u64>,
    /// `isb_osdrop`: packets the operating system dropped (a full ring, a full queue).
    pub osdrop: Option<u64>,
    /// `isb_usrdeliv`: packets delivered to the capturing program.
    pub usrdeliv: Option<u64>,
}

impl RecordedStats {
    /// Packets the capture says it lost (interface and operating system drops).
    pub fn drops(&self) -> u64 {
        self.ifdrop.unwrap_or(0).saturating_add(self.osdrop.unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_in_whole_ns() {
        let cases = [
            (TsResolution::Dec(0), 1_000_000_000),
            (TsResolution::Dec(6), 1_000),
            (TsResolution::Dec(9), 1),
            (TsResolution::Dec(12), 1),
            (TsResolution::Bin(0), 1_000_000_000),
            // 2^-10 s = 976,562.5 ns, rounded up.
            (TsResolution::Bin(10), 976_563),
            (TsResolution::Bin(30), 1),
            (TsResolution::Bin(64), 1),
            (TsResolution::Bin(127), 1),
        ];
        for (r, ns) in cases {
            assert_eq!(r.unit_ns(), ns, "{r:?}");
        }
    }

    #[test]
    fn resolution_conversions_are_exact() {
        assert_eq!(TsResolution::from_pcapng(6), TsResolution::Dec(6));
        assert_eq!(TsResolution::from_pcapng(0x9e), TsResolution::Bin(30));
        assert_eq!(TsResolution::Dec(6).units_to_ns(1_500_000), 1_500_000_000);
        assert_eq!(TsResolution::Dec(9).units_to_ns(7), 7);
        assert_eq!(TsResolution::Dec(12).units_to_ns(1_999), 1);
        // 2^-30: 3.5 s = 3*2^30 + 2^29 units.
        assert_eq!(TsResolution::Bin(30).units_to_ns(3 * (1 << 30) + (1 << 29)), 3_500_000_000);
        // 1 unit of 2^-30 s = 0.931322574615... ns: truncated to 0; 3 units = 2.79 ns -> 2.
        assert_eq!(TsResolution::Bin(30).units_to_ns(1), 0);
        assert_eq!(TsResolution::Bin(30).units_to_ns(3), 2);
        assert_eq!(TsResolution::Bin(127).units_to_ns(u64::MAX), 0);
        assert_eq!(TsResolution::Dec(127).units_to_ns(u64::MAX), 0);
    }
}
