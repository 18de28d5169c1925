//! Classic pcap files (libpcap format), including the nanosecond and "modified" variants.
//!
//! [draft-ietf-opsawg-pcap; Wireshark wiretap/libpcap.c for the modified (Kuznetzov) format]
//! ```text
//! file header (24 bytes, in the writer's byte order):
//!  magic u32 | major u16 | minor u16 | reserved1 u32 | reserved2 u32 | snaplen u32 | linktype word u32
//!  magic: a1b2c3d4 µs, a1b23c4d ns, a1b2cd34 modified (µs, 24-byte records)
//!  linktype word: FCS len (bits 28-31, 16-bit words) | R 27 | P 26 (FCS len valid) | reserved | LINKTYPE (0-15)
//! record header (16 bytes; modified: + ifindex u32, protocol u16, pkt_type u8, pad u8):
//!  ts_sec u32 | ts_usec-or-nsec u32 | caplen u32 | origlen u32 | caplen bytes of data
//! ```
//! LINKTYPE_ERF (197) records are unwrapped: the frame is the ERF payload, timestamped by the ERF
//! header (see [`crate::erf`]).

use wirestamp_core::{ClockQuality, Direction, LinkType, TsSource};

use crate::buffer::{ChunkBuffer, MAX_RECORD};
use crate::erf;
use crate::error::ReadErrorKind;
use crate::interface::{ContainerKind, Interface, RecordedStats, TsResolution};
use crate::raw::{RawFrame, Step, pcap_fcs_len, sll_direction, u16_at, u32_at};
use crate::reader::ReadStats;

/// Byte order of a file (pcap) or section (pcapng).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// Little-endian.
    Little,
    /// Big-endian.
    Big,
}

/// Variant of a pcap file, from its magic number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PcapMagic {
    pub nanos: bool,
    pub byte_order: ByteOrder,
    pub modified: bool,
}

impl PcapMagic {
    /// Recognises the 4 first bytes of a pcap file.
    pub(crate) fn detect(head: [u8; 4]) -> Option<PcapMagic> {
        let (magic, byte_order) = match u32::from_le_bytes(head) {
            m @ (0xa1b2_c3d4 | 0xa1b2_3c4d | 0xa1b2_cd34) => (m, ByteOrder::Little),
            m => match m.swap_bytes() {
                m @ (0xa1b2_c3d4 | 0xa1b2_3c4d | 0xa1b2_cd34) => (m, ByteOrder::Big),
                _ => return None,
            },
        };
        Some(PcapMagic { nanos: magic == 0xa1b2_3c4d, byte_order, modified: magic == 0xa1b2_cd34 })
    }
}

pub(crate) struct PcapParser {
    swap: bool,
    hdr_len: usize,
    /// ns per fraction unit (1000 for µs files, 1 for ns).
    frac_mult: i64,
    /// Fraction units per second (10^6 or 10^9): a larger fraction is invalid.
    frac_limit: u32,
    link: LinkType,
    fcs_len: Option<u8>,
    /// Link type needs per-frame work (SLL direction, ERF unwrapping).
    special: bool,
    /// LINKTYPE_ERF: packets the records' loss counters say the card lost, summed (kept as the
    /// interface's drops, as for a native ERF file).
    erf_lost: u64,
}

/// Size of the file header.
pub(crate) const FILE_HEADER_LEN: usize = 24;

/// The four words of a record header (seconds, fraction, captured and original lengths).
#[inline(always)]
fn header_words(h: &[u8; 16], word: fn([u8; 4]) -> u32) -> [u32; 4] {
    let w = |i: usize| word([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    [w(0), w(4), w(8), w(12)]
}

impl PcapParser {
    /// Parses the file header (the buffer starts at it); returns the parser and its interface.
    pub(crate) fn open(buf: &mut ChunkBuffer, magic: PcapMagic) -> Result<(PcapParser, Interface), ReadErrorKind> {
        if !buf.fill(FILE_HEADER_LEN)? {
            return Err(ReadErrorKind::HeaderTruncated { needed: FILE_HEADER_LEN, have: buf.avail().len() });
        }
        let h = buf.avail();
        // The helpers read little-endian and swap on request, whatever the host.
        let swap = magic.byte_order == ByteOrder::Big;
        let (major, minor) = (u16_at(h, 4, swap), u16_at(h, 6, swap));
        if major != 2 || !(2..=4).contains(&minor) {
            return Err(ReadErrorKind::PcapVersion { major, minor });
        }
        let snaplen = u32_at(h, 16, swap);
        let word = u32_at(h, 20, swap);
        if word & 0x03ff_0000 != 0 {
            // libpcap and Wireshark refuse these too: the word is not a link type as we know it.
            return Err(ReadErrorKind::BadHeader(format!(
                "link-type word {word:#010x} has reserved bits 16-25 set \
                 (expected FCS bits 26-31 and a 16-bit LINKTYPE)"
            )));
        }
        let link = LinkType::from_u16(word as u16);
        let fcs_len = pcap_fcs_len(word);
        buf.consume(FILE_HEADER_LEN);
        let iface = Interface {
            id: 0,
            input: 0,
            local_id: 0,
            name: None,
            description: None,
            link,
            ts_resolution: TsResolution::Dec(if magic.nanos { 9 } else { 6 }),
            ts_offset_s: 0,
            fcs_len,
            container: ContainerKind::Pcap,
            snaplen,
            section: 0,
            recorded: None,
            by_wirestamp_capture: false,
        };
        let parser = PcapParser {
            swap,
            hdr_len: if magic.modified { 24 } else { 16 },
            frac_mult: if magic.nanos { 1 } else { 1000 },
            frac_limit: if magic.nanos { 1_000_000_000 } else { 1_000_000 },
            link,
            fcs_len,
            special: matches!(link, LinkType::LinuxSll | LinkType::LinuxSll2 | LinkType::Erf),
            erf_lost: 0,
        };
        Ok((parser, iface))
    }

    /// The common case in one step: a record wholly in the buffer, with a valid fraction, on a
    /// link type that needs no per-frame work. Anything else returns `None` and goes through
    /// [`PcapParser::next`].
    #[inline(always)]
    pub(crate) fn fast(&self, buf: &mut ChunkBuffer) -> Option<RawFrame> {
        if self.special {
            return None;
        }
        let a = buf.avail();
        let h = a.first_chunk::<16>()?;
        // One test of the byte order for the four fields (it never changes within a file).
        let [sec, frac, caplen, wire_len] =
            if self.swap { header_words(h, u32::from_be_bytes) } else { header_words(h, u32::from_le_bytes) };
        let caplen = caplen as usize;
        if caplen > a.len().saturating_sub(self.hdr_len) || frac >= self.frac_limit {
            return None;
        }
        let ts_ns = sec as i64 * 1_000_000_000 + frac as i64 * self.frac_mult;
        let start = buf.pos() + self.hdr_len;
        buf.consume(self.hdr_len + caplen);
        buf.prefetch_ahead();
        Some(RawFrame {
            start,
            len: caplen as u32,
            wire_len,
            ts_ns,
            ts_source: TsSource::PcapRecord,
            link: self.link,
            interface: 0,
            direction: Direction::Unknown,
            fcs_len: self.fcs_len,
            quality: ClockQuality::default(),
        })
    }

    /// Next record. A fraction of a second at or above one second (tcpdump's
    /// `timestamp_invalid_*.pcap`) is kept as is (it carries into the seconds, so the order of
    /// the file's timestamps is preserved), flagged `RECORD_ERROR` and counted.
    #[inline(always)]
    pub(crate) fn next(
        &mut self,
        buf: &mut ChunkBuffer,
        stats: &mut ReadStats,
        ifaces: &mut [Interface],
    ) -> Result<Step, ReadErrorKind> {
        let a = buf.avail();
        if let Some(h) = a.first_chunk::<16>() {
            let caplen = u32_at(h, 8, self.swap) as usize;
            if a.len() >= self.hdr_len && caplen <= a.len() - self.hdr_len {
                let frac = u32_at(h, 4, self.swap);
                let mut quality = ClockQuality::default();
                if frac >= self.frac_limit {
                    quality = ClockQuality::RECORD_ERROR;
                    stats.ts_fraction_invalid += 1;
                }
                // Built in one go (no field stored after): the caller copies it whole.
                let f = RawFrame {
                    start: buf.pos() + self.hdr_len,
                    len: caplen as u32,
                    wire_len: u32_at(h, 12, self.swap),
                    ts_ns: u32_at(h, 0, self.swap) as i64 * 1_000_000_000 + frac as i64 * self.frac_mult,
                    ts_source: TsSource::PcapRecord,
                    link: self.link,
                    interface: 0,
                    direction: Direction::Unknown,
                    fcs_len: self.fcs_len,
                    quality,
                };
                buf.consume(self.hdr_len + caplen);
                buf.prefetch_ahead();
                if self.special {
                    return self.special_frame(buf, f, ifaces);
                }
                return Ok(Step::Frame(f));
            }
        }
        self.refill(buf, stats, ifaces)
    }

    /// Slow path: the record is not wholly in the buffer.
    #[cold]
    fn refill(
        &mut self,
        buf: &mut ChunkBuffer,
        stats: &mut ReadStats,
        ifaces: &mut [Interface],
    ) -> Result<Step, ReadErrorKind> {
        if !buf.fill(self.hdr_len)? {
            let have = buf.avail().len() as u64;
            return Ok(if have == 0 { Step::Eof } else { Step::Cut { needed: self.hdr_len as u64, have } });
        }
        let caplen = u32_at(buf.avail(), 8, self.swap) as u64;
        if caplen > (MAX_RECORD - self.hdr_len) as u64 {
            return Err(ReadErrorKind::TooLarge { what: "pcap record captured", len: caplen, max: MAX_RECORD as u64 });
        }
        let needed = self.hdr_len + caplen as usize;
        if !buf.fill(needed)? {
            return Ok(Step::Cut { needed: needed as u64, have: buf.avail().len() as u64 });
        }
        // The whole record is now in the buffer: the fast path takes it.
        self.next(buf, stats, ifaces)
    }

    /// SLL direction, ERF unwrapping (and the ERF record's loss counter, into the interface's drops).
    fn special_frame(
        &mut self,
        buf: &ChunkBuffer,
        mut f: RawFrame,
        ifaces: &mut [Interface],
    ) -> Result<Step, ReadErrorKind> {
        let data = buf.bytes().get(f.start..f.start + f.len as usize).unwrap_or_default();
        if self.link == LinkType::Erf {
            let (step, lost) = unwrap_erf(data, f)?;
            if lost != 0 {
                self.erf_lost = self.erf_lost.saturating_add(u64::from(lost));
                if let Some(iface) = ifaces.first_mut() {
                    iface.recorded = Some(RecordedStats { ifdrop: Some(self.erf_lost), ..RecordedStats::default() });
                }
            }
            return Ok(step);
        }
        f.direction = sll_direction(self.link, data);
        Ok(Step::Frame(f))
    }
}

/// Replaces a LINKTYPE_ERF frame by the ERF payload, with the ERF timestamp and wire length; and the
/// packets the record's loss counter says the card lost before it.
pub(crate) fn unwrap_erf(data: &[u8], mut f: RawFrame) -> Result<(Step, u16), ReadErrorKind> {
    let rec = erf::parse(data).map_err(ReadErrorKind::BadErf)?;
    let Some(link) = rec.link else {
        return Ok((Step::Skipped(erf::skip_name(rec.rtype)), rec.lost));
    };
    f.start += rec.payload_off;
    f.len = rec.payload_len as u32;
    f.wire_len = rec.wlen as u32;
    f.ts_ns = rec.ts_ns;
    f.ts_source = TsSource::Erf;
    f.link = link;
    f.quality |= rec.quality;
    f.fcs_len = (link == LinkType::Ethernet).then_some(4);
    Ok((Step::Frame(f), rec.lost))
}
