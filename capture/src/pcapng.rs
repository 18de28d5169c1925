//! pcapng files: several sections (each with its own byte order) and interfaces.
//!
//! [draft-ietf-opsawg-pcapng; Wireshark wiretap/pcapng.c for the obsolete Packet Block]
//! ```text
//! every block: type u32 | total length u32 | body ... | total length u32   (multiple of 4)
//! SHB 0x0A0D0D0A: byte-order magic 0x1A2B3C4D | major u16 | minor u16 | section length i64 | options
//! IDB 1:  linktype u16 | reserved u16 | snaplen u32 | options
//!         if_name 2, if_description 3, if_tsresol 9 (u8: MSB 0 -> 10^-n s, 1 -> 2^-n s; default 10^-6),
//!         if_fcslen 13 (u8), if_tsoffset 14 (i64 seconds added to every timestamp)
//! EPB 6:  interface u32 | ts high u32 | ts low u32 | caplen u32 | origlen u32 | data (pad 4) | options
//!         epb_flags 2 (u32): bits 0-1 direction (1 in, 2 out), bits 5-8 FCS length in bytes
//! SPB 3:  origlen u32 | data (pad 4)  -- interface 0, no timestamp; caplen = min(origlen, snaplen, body)
//! PB 2:   interface u16 | drops u16 | ts high | ts low | caplen | origlen | data | options (pack_flags 2)
//! option: code u16 | length u16 | value (pad 4); code 0 ends the list
//! ```
//! Interface ids in packet blocks are per section; the reader's table numbers every IDB of the
//! file in order (as tshark's `frame.interface_id`). ISB, NRB, custom and unknown blocks are
//! skipped and counted.

use wirestamp_core::{ClockQuality, Direction, LinkType, TsSource};

use crate::buffer::{ChunkBuffer, MAX_RECORD};
use crate::error::ReadErrorKind;
use crate::interface::{ContainerKind, Interface, RecordedStats, TsResolution};
use crate::pcap::unwrap_erf;
use crate::raw::{RawFrame, Step, pad4, sll_direction, u16_at, u32_at, u64_at};
use crate::reader::ReadStats;

/// Interface Description Blocks read at most per input (all sections together).
pub const MAX_INTERFACES: usize = 65_536;

const SHB: u32 = 0x0A0D_0D0A;
const EPB: u32 = 6;

/// Per-interface state of the current section.
struct IfState {
    res: TsResolution,
    offset_ns: i128,
    link: LinkType,
    fcs_len: Option<u8>,
    snaplen: u32,
    row: u32,
    /// Link type needs per-frame work (SLL direction, ERF unwrapping).
    special: bool,
}

impl IfState {
    /// The frame of an EPB (or obsolete PB) whose data starts 28 bytes into the block at buffer
    /// position `at`; direction and FCS options are applied by the caller.
    #[inline(always)]
    fn frame(&self, at: usize, caplen: usize, wire_len: u32, ts_ns: i64) -> RawFrame {
        RawFrame {
            start: at + 28,
            len: caplen as u32,
            wire_len,
            ts_ns,
            ts_source: TsSource::PcapngBlock,
            link: self.link,
            interface: self.row,
            direction: Direction::Unknown,
            fcs_len: self.fcs_len,
            quality: ClockQuality::default(),
        }
    }

    /// Timestamp units to ns since the epoch; saturates (and says so) beyond the i64 range.
    #[inline(always)]
    fn ts_ns(&self, units: u64) -> Result<i64, i64> {
        let ns = self.res.units_to_ns(units) + self.offset_ns;
        i64::try_from(ns).map_err(|_| if ns < 0 { i64::MIN } else { i64::MAX })
    }
}

pub(crate) struct PcapngParser {
    swap: bool,
    /// SHBs seen so far.
    sections: u32,
    ifs: Vec<IfState>,
    /// The current section was written by `wirestamp capture` ([`Interface::by_wirestamp_capture`]).
    by_capture: bool,
}

fn bad(block: &'static str, what: impl Into<String>) -> ReadErrorKind {
    ReadErrorKind::BadBlock { block, what: what.into() }
}

fn block_name(t: u32) -> &'static str {
    match t {
        SHB => "SHB",
        1 => "IDB",
        2 => "PB",
        3 => "SPB",
        4 => "NRB",
        5 => "ISB",
        EPB => "EPB",
        _ => "block",
    }
}

/// Walks an option list, calling `f(code, value)` for each option before `opt_endofopt`.
fn for_each_option(
    opts: &[u8],
    swap: bool,
    block: &'static str,
    mut f: impl FnMut(u16, &[u8]),
) -> Result<(), ReadErrorKind> {
    let mut p = 0;
    while p + 4 <= opts.len() {
        let code = u16_at(opts, p, swap);
        let len = u16_at(opts, p + 2, swap) as usize;
        if code == 0 {
            break;
        }
        let Some(value) = opts.get(p + 4..p + 4 + len) else {
            return Err(bad(block, format!("option {code} of length {len} runs past the end of the block")));
        };
        f(code, value);
        p += 4 + pad4(len);
    }
    Ok(())
}

/// What a packet's options say: `epb_flags` / `pack_flags` (direction and FCS length), and the clock
/// flags wirestamp's capture wrote in a comment ([`crate::write::CLOCK_COMMENT`]).
fn packet_flags(opts: &[u8], swap: bool, block: &'static str) -> Result<(Option<u32>, ClockQuality), ReadErrorKind> {
    let (mut flags, mut quality) = (None, ClockQuality::default());
    for_each_option(opts, swap, block, |code, v| {
        if code == 2 && v.len() == 4 {
            flags = Some(u32_at(v, 0, swap));
        } else if code == 1
            && let Some(names) = v.strip_prefix(crate::write::CLOCK_COMMENT.as_bytes())
        {
            quality |= ClockQuality::from_names(&String::from_utf8_lossy(names));
        }
    })?;
    Ok((flags, quality))
}

fn text(v: &[u8]) -> String {
    let end = v.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    String::from_utf8_lossy(&v[..end]).into_owned()
}

/// Checks what a file's first Section Header Block says of its byte order and version, from `head`
/// (its first bytes, fewer than a block's allowed: the rest is the reader's), so that a file of an
/// unsupported version is refused when opened, as a pcap file's header is, not once read.
pub(crate) fn check_first_section(head: &[u8]) -> Result<(), ReadErrorKind> {
    let swap = match head.get(8..12) {
        None => return Ok(()),
        Some([0x4d, 0x3c, 0x2b, 0x1a]) => false,
        Some([0x1a, 0x2b, 0x3c, 0x4d]) => true,
        Some(m) => return Err(bad("SHB", format!("bad byte-order magic {m:02x?}"))),
    };
    if head.len() < 16 {
        return Ok(());
    }
    let (major, minor) = (u16_at(head, 12, swap), u16_at(head, 14, swap));
    if major != 1 || !(minor == 0 || minor == 2) {
        return Err(ReadErrorKind::PcapngVersion { major, minor });
    }
    Ok(())
}

impl PcapngParser {
    pub(crate) fn new() -> PcapngParser {
        PcapngParser { swap: false, sections: 0, ifs: Vec::new(), by_capture: false }
    }

    /// The common case in one step: a well-formed EPB wholly in the buffer, on an interface of
    /// this section that needs no per-frame work, with a timestamp in range and valid options.
    /// Anything else returns `None` and goes through [`PcapngParser::next`], which reports it.
    #[inline(always)]
    pub(crate) fn fast(&self, buf: &mut ChunkBuffer) -> Option<RawFrame> {
        let swap = self.swap;
        let a = buf.avail();
        let h = a.first_chunk::<28>()?;
        let blen = u32_at(h, 4, swap) as usize;
        if u32_at(h, 0, swap) != EPB || blen > a.len() || blen < 32 || !blen.is_multiple_of(4) {
            return None;
        }
        let b = &a[..blen];
        let ifs = self.ifs.get(u32_at(h, 8, swap) as usize)?;
        let caplen = u32_at(h, 20, swap) as usize;
        if u32_at(b, blen - 4, swap) as usize != blen || caplen > blen - 32 || ifs.special {
            return None;
        }
        let units = (u32_at(h, 12, swap) as u64) << 32 | u32_at(h, 16, swap) as u64;
        let mut f = ifs.frame(buf.pos(), caplen, u32_at(h, 24, swap), ifs.ts_ns(units).ok()?);
        let opt_start = 28 + pad4(caplen);
        if opt_start + 4 < blen {
            let (flags, quality) = packet_flags(&b[opt_start..blen - 4], swap, "EPB").ok()?;
            if let Some(flags) = flags {
                apply_flags(&mut f, flags);
            }
            f.quality |= quality;
        }
        buf.consume(blen);
        buf.prefetch_ahead();
        Some(f)
    }

    #[inline(always)]
    pub(crate) fn next(
        &mut self,
        buf: &mut ChunkBuffer,
        ifaces: &mut Vec<Interface>,
        stats: &mut ReadStats,
        input: usize,
    ) -> Result<Step, ReadErrorKind> {
        let a = buf.avail();
        if let Some(h) = a.first_chunk::<12>() {
            let blen = u32_at(h, 4, self.swap) as usize;
            if u32_at(h, 0, self.swap) == EPB && blen <= a.len() {
                return self.epb(buf, blen, stats);
            }
        }
        self.block(buf, ifaces, stats, input)
    }

    /// Any block, reading more of the stream as needed.
    fn block(
        &mut self,
        buf: &mut ChunkBuffer,
        ifaces: &mut Vec<Interface>,
        stats: &mut ReadStats,
        input: usize,
    ) -> Result<Step, ReadErrorKind> {
        if !buf.fill(12)? {
            let have = buf.avail().len() as u64;
            return Ok(if have == 0 { Step::Eof } else { Step::Cut { needed: 12, have } });
        }
        let a = buf.avail();
        let is_shb = a.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]);
        let swap = if is_shb {
            match a.get(8..12) {
                Some([0x4d, 0x3c, 0x2b, 0x1a]) => false,
                Some([0x1a, 0x2b, 0x3c, 0x4d]) => true,
                _ => return Err(bad("SHB", format!("bad byte-order magic {:02x?}", &a[8..12]))),
            }
        } else {
            self.swap
        };
        let btype = u32_at(a, 0, swap);
        let blen = u32_at(a, 4, swap) as usize;
        let name = block_name(btype);
        // An EPB's own minimum, as `next` checks it when the block is already in the buffer: the error
        // must not depend on how much of the stream had come.
        let min = if btype == EPB { 32 } else { 12 };
        if blen < min || !blen.is_multiple_of(4) {
            return Err(bad(name, format!("total length {blen} is not a multiple of 4 of at least {min}")));
        }
        if blen > MAX_RECORD {
            return Err(ReadErrorKind::TooLarge { what: "pcapng block", len: blen as u64, max: MAX_RECORD as u64 });
        }
        if !buf.fill(blen)? {
            return Ok(Step::Cut { needed: blen as u64, have: buf.avail().len() as u64 });
        }
        let b = &buf.avail()[..blen];
        let trailer = u32_at(b, blen - 4, swap) as usize;
        if trailer != blen {
            return Err(bad(name, format!("trailing total length {trailer} differs from the leading {blen}")));
        }
        let step = match btype {
            SHB => {
                stats.sections += 1;
                self.shb(b, swap)?
            }
            1 => self.idb(b, ifaces, input)?,
            EPB => return self.epb(buf, blen, stats),
            3 => return self.spb(buf, blen),
            2 => return self.pb(buf, blen, stats),
            5 => self.isb(b, ifaces)?,
            4 => Step::Skipped("pcapng NRB"),
            0x0000_0BAD | 0x4000_0BAD => Step::Skipped("pcapng custom block"),
            0x0000_000A => Step::Skipped("pcapng DSB"),
            0x0000_0009 => Step::Skipped("pcapng systemd journal"),
            _ => Step::Skipped("pcapng unknown block"),
        };
        buf.consume(blen);
        Ok(step)
    }

    /// An Interface Statistics Block: its counters are kept on the interface (the last block wins: they
    /// count from the start of the capture). Not a frame, so counted among the skipped records.
    fn isb(&mut self, b: &[u8], ifaces: &mut [Interface]) -> Result<Step, ReadErrorKind> {
        if b.len() < 24 {
            return Err(bad("ISB", format!("total length {} is less than 24", b.len())));
        }
        let swap = self.swap;
        let id = u32_at(b, 8, swap);
        let mut st = RecordedStats::default();
        for_each_option(&b[20..b.len() - 4], swap, "ISB", |code, v| {
            let value = (v.len() == 8).then(|| u64_at(v, 0, swap));
            match code {
                4 => st.ifrecv = value,
                5 => st.ifdrop = value,
                6 => st.filteraccept = value,
                7 => st.osdrop = value,
                8 => st.usrdeliv = value,
                _ => {}
            }
        })?;
        // An ISB for an interface the section never described says nothing usable: skipped, counted.
        match self.ifs.get(id as usize).and_then(|s| ifaces.get_mut(s.row as usize)) {
            Some(iface) => {
                iface.recorded = Some(st);
                Ok(Step::Skipped("pcapng ISB"))
            }
            None => Ok(Step::Skipped("pcapng ISB of an unknown interface")),
        }
    }

    fn shb(&mut self, b: &[u8], swap: bool) -> Result<Step, ReadErrorKind> {
        if b.len() < 28 {
            return Err(bad("SHB", format!("total length {} is less than 28", b.len())));
        }
        let (major, minor) = (u16_at(b, 12, swap), u16_at(b, 14, swap));
        if major != 1 || !(minor == 0 || minor == 2) {
            return Err(ReadErrorKind::PcapngVersion { major, minor });
        }
        // shb_userappl (4) names wirestamp, and a comment (1) its capture command: synth and other
        // programs using the writer write no statistics blocks.
        let (mut wirestamp, mut capture) = (false, false);
        for_each_option(&b[24..b.len() - 4], swap, "SHB", |code, v| match code {
            4 => wirestamp |= v.starts_with(crate::write::USERAPPL.as_bytes()),
            1 => capture |= v.starts_with(crate::write::CAPTURE_COMMENT.as_bytes()),
            _ => {}
        })?;
        self.by_capture = wirestamp && capture;
        self.swap = swap;
        self.sections += 1;
        self.ifs.clear();
        Ok(Step::Header)
    }

    fn idb(&mut self, b: &[u8], ifaces: &mut Vec<Interface>, input: usize) -> Result<Step, ReadErrorKind> {
        if b.len() < 20 {
            return Err(bad("IDB", format!("total length {} is less than 20", b.len())));
        }
        let swap = self.swap;
        let link = LinkType::from_u16(u16_at(b, 8, swap));
        let snaplen = u32_at(b, 12, swap);
        let (mut name, mut description, mut res, mut fcs_len, mut offset) = (None, None, TsResolution::Dec(6), None, 0);
        let mut tsresol_len = None;
        for_each_option(&b[16..b.len() - 4], swap, "IDB", |code, v| match (code, v.len()) {
            (2, _) => name = Some(text(v)),
            (3, _) => description = Some(text(v)),
            (9, 1) => res = TsResolution::from_pcapng(v[0]),
            (9, n) => tsresol_len = Some(n),
            (13, 1..) => fcs_len = Some(v[0]),
            (14, 8) => offset = u64_at(v, 0, swap) as i64,
            _ => {}
        })?;
        // The unit of every timestamp of the interface: guessing it (tshark takes the default µs, a
        // reader of the first byte takes that) could put the times 1,000 or 10^6 times off. libpcap
        // refuses such a file too.
        if let Some(n) = tsresol_len {
            return Err(bad(
                "IDB",
                format!(
                    "option if_tsresol has {n} bytes where the format has 1: the interface's timestamp unit is \
                     unknown (rewrite the file with a correct option, e.g. editcap)"
                ),
            ));
        }
        // Each interface is kept for the whole read (names, units, statistics): a file of nothing but
        // interface blocks must not take gigabytes.
        if ifaces.len() >= MAX_INTERFACES {
            return Err(bad(
                "IDB",
                format!(
                    "more than {MAX_INTERFACES} interface blocks in the input: more than any capture has (not a \
                     capture, or a damaged one?)"
                ),
            ));
        }
        let row = ifaces.len() as u32;
        ifaces.push(Interface {
            id: row,
            input,
            local_id: row,
            name,
            description,
            link,
            ts_resolution: res,
            ts_offset_s: offset,
            fcs_len,
            container: ContainerKind::Pcapng,
            snaplen,
            section: self.sections.saturating_sub(1),
            recorded: None,
            by_wirestamp_capture: self.by_capture,
        });
        self.ifs.push(IfState {
            res,
            offset_ns: offset as i128 * 1_000_000_000,
            link,
            fcs_len,
            snaplen,
            row,
            special: matches!(link, LinkType::LinuxSll | LinkType::LinuxSll2 | LinkType::Erf),
        });
        Ok(Step::Header)
    }

    /// Enhanced Packet Block; the whole block (`blen` bytes, checked by the caller to be in the
    /// buffer) is at the read position.
    #[inline(always)]
    fn epb(&mut self, buf: &mut ChunkBuffer, blen: usize, stats: &mut ReadStats) -> Result<Step, ReadErrorKind> {
        let Some(b) = buf.avail().get(..blen) else { return Err(bad("EPB", "block beyond the buffer")) };
        if blen < 32 || !blen.is_multiple_of(4) {
            return Err(bad("EPB", format!("total length {blen} is not a multiple of 4 of at least 32")));
        }
        let trailer = u32_at(b, blen - 4, self.swap) as usize;
        if trailer != blen {
            return Err(bad("EPB", format!("trailing total length {trailer} differs from the leading {blen}")));
        }
        let id = u32_at(b, 8, self.swap);
        self.packet_block(buf, blen, stats, id, "EPB")
    }

    fn spb(&mut self, buf: &mut ChunkBuffer, blen: usize) -> Result<Step, ReadErrorKind> {
        let b = &buf.avail()[..blen];
        if blen < 16 {
            return Err(bad("SPB", format!("total length {blen} is less than 16")));
        }
        let Some(ifs) = self.ifs.first() else {
            return Err(bad("SPB", "no interface defined in this section"));
        };
        let origlen = u32_at(b, 8, self.swap);
        let mut caplen = (origlen as usize).min(blen - 16);
        if ifs.snaplen != 0 {
            caplen = caplen.min(ifs.snaplen as usize);
        }
        let f = RawFrame {
            start: buf.pos() + 12,
            len: caplen as u32,
            wire_len: origlen,
            ts_ns: 0,
            ts_source: TsSource::PcapngNone,
            link: ifs.link,
            interface: ifs.row,
            direction: Direction::Unknown,
            fcs_len: ifs.fcs_len,
            quality: ClockQuality::default(),
        };
        let special = ifs.special;
        buf.consume(blen);
        if special {
            return special_frame(buf, f);
        }
        Ok(Step::Frame(f))
    }

    /// An obsolete Packet Block: as an EPB, with a 16-bit interface id (then a 16-bit drop count).
    fn pb(&mut self, buf: &mut ChunkBuffer, blen: usize, stats: &mut ReadStats) -> Result<Step, ReadErrorKind> {
        if blen < 32 {
            return Err(bad("PB", format!("total length {blen} is less than 32")));
        }
        let id = u16_at(&buf.avail()[..blen], 8, self.swap) as u32;
        self.packet_block(buf, blen, stats, id, "PB")
    }

    /// The part EPBs and PBs share: interface `id`, timestamp, lengths, data, `epb_flags`. `blen` bytes (at
    /// least 32) are in the buffer at the read position.
    #[inline(always)]
    fn packet_block(
        &mut self,
        buf: &mut ChunkBuffer,
        blen: usize,
        stats: &mut ReadStats,
        id: u32,
        what: &'static str,
    ) -> Result<Step, ReadErrorKind> {
        let b = &buf.avail()[..blen];
        let swap = self.swap;
        let Some(ifs) = self.ifs.get(id as usize) else {
            return Err(bad(what, format!("interface {id} not defined in this section ({} IDBs)", self.ifs.len())));
        };
        let caplen = u32_at(b, 20, swap) as usize;
        if caplen > blen - 32 {
            return Err(bad(what, format!("captured length {caplen} exceeds the block's {} data bytes", blen - 32)));
        }
        let units = (u32_at(b, 12, swap) as u64) << 32 | u32_at(b, 16, swap) as u64;
        let (ts_ns, quality) = match ifs.ts_ns(units) {
            Ok(t) => (t, ClockQuality::default()),
            Err(sat) => {
                stats.ts_out_of_range += 1;
                (sat, ClockQuality::RECORD_ERROR)
            }
        };
        let mut f = ifs.frame(buf.pos(), caplen, u32_at(b, 24, swap), ts_ns);
        f.quality = quality;
        let opt_start = 28 + pad4(caplen);
        if opt_start + 4 < blen {
            let (flags, quality) = packet_flags(&b[opt_start..blen - 4], swap, what)?;
            if let Some(flags) = flags {
                apply_flags(&mut f, flags);
            }
            f.quality |= quality;
        }
        let special = ifs.special;
        buf.consume(blen);
        buf.prefetch_ahead();
        if special {
            return special_frame(buf, f);
        }
        Ok(Step::Frame(f))
    }
}

/// `epb_flags`: direction (bits 0-1) and FCS length in bytes (bits 5-8, 0 = not given).
fn apply_flags(f: &mut RawFrame, flags: u32) {
    f.direction = match flags & 3 {
        1 => Direction::Inbound,
        2 => Direction::Outbound,
        _ => Direction::Unknown,
    };
    let fcs = (flags >> 5) & 0xf;
    if fcs != 0 {
        f.fcs_len = Some(fcs as u8);
    }
}

fn special_frame(buf: &ChunkBuffer, mut f: RawFrame) -> Result<Step, ReadErrorKind> {
    let data = buf.bytes().get(f.start..f.start + f.len as usize).unwrap_or_default();
    if f.link == LinkType::Erf {
        // The loss counter is not counted here: the interface statistics (ISB) may count the same
        // losses.
        return unwrap_erf(data, f).map(|(step, _)| step);
    }
    if f.direction == Direction::Unknown {
        f.direction = sll_direction(f.link, data);
    }
    Ok(Step::Frame(f))
}
