//! Capture file writers: classic pcap (nanosecond magic) and pcapng (one IDB per interface, `if_tsresol`
//! 10^-9 or a coarser source's, `epb_flags` direction, clock flags as a packet comment, and Interface
//! Statistics Blocks with the capture's drop counts), both little-endian. Used by `synth`, and by live
//! capture for its output.

use crate::interface::RecordedStats;
use std::io::{self, Write};
use wirestamp_core::{ClockQuality, Direction, LinkType};

/// Writes a classic pcap with nanosecond timestamps.
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the 24-byte file header.
    pub fn new(mut out: W, link: LinkType, snaplen: u32) -> io::Result<Self> {
        out.write_all(&0xa1b2_3c4d_u32.to_le_bytes())?;
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&[0; 8])?;
        out.write_all(&snaplen.to_le_bytes())?;
        out.write_all(&(link.to_u16() as u32).to_le_bytes())?;
        Ok(PcapWriter { out })
    }

    /// Writes one record. `ts_ns` must lie in 1970..2106 (the format's unsigned 32-bit seconds).
    pub fn write(&mut self, ts_ns: i64, data: &[u8], wire_len: u32) -> io::Result<()> {
        if !(0..(1i64 << 32) * 1_000_000_000).contains(&ts_ns) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("timestamp {ts_ns} ns outside pcap's range"),
            ));
        }
        let mut hdr = [0u8; 16];
        hdr[0..4].copy_from_slice(&((ts_ns / 1_000_000_000) as u32).to_le_bytes());
        hdr[4..8].copy_from_slice(&((ts_ns % 1_000_000_000) as u32).to_le_bytes());
        hdr[8..12].copy_from_slice(&(data.len() as u32).to_le_bytes());
        hdr[12..16].copy_from_slice(&wire_len.to_le_bytes());
        self.out.write_all(&hdr)?;
        self.out.write_all(data)
    }

    /// Flushes and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// How a packet comment carrying a frame's clock flags begins ([`PcapngWriter::write_flagged`]).
pub const CLOCK_COMMENT: &str = "wirestamp clock: ";

/// How the `shb_userappl` of every section written here begins (the version follows).
pub const USERAPPL: &str = "wirestamp ";

/// How the section comment of a file written by `wirestamp capture` begins (its command line and host
/// follow). Such a file ends with an Interface Statistics Block per interface once capture closes it:
/// a reader that finds an interface without one knows that the file was never closed (the capture was
/// killed) or that its copy is cut short, and that the packets lost while capturing are unknown.
pub const CAPTURE_COMMENT: &str = "wirestamp capture ";

/// An interface description for [`PcapngWriter`].
#[derive(Debug, Clone)]
pub struct IfaceSpec {
    /// Link type.
    pub link: LinkType,
    /// `if_name`.
    pub name: String,
    /// `if_description` (free text: where the timestamps come from, for instance).
    pub description: Option<String>,
    /// Snap length.
    pub snaplen: u32,
}

/// What an Interface Statistics Block says (pcapng, draft-ietf-opsawg-pcapng §4.6): the time span and
/// the counters, each from `start_ns` (`isb_starttime`); `None` leaves the option out (unknown). The
/// counters are the ones the reader gives back ([`RecordedStats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IfaceStats {
    /// `isb_starttime`, ns since the epoch.
    pub start_ns: Option<i64>,
    /// `isb_endtime`, ns since the epoch.
    pub end_ns: Option<i64>,
    /// `isb_ifrecv`, `isb_ifdrop`, `isb_filteraccept`, `isb_osdrop`, `isb_usrdeliv`.
    pub counters: RecordedStats,
}

/// Writes a pcapng section; interfaces count nanoseconds unless added with a coarser resolution.
pub struct PcapngWriter<W: Write> {
    out: W,
    interfaces: u32,
    /// Per interface, ns per unit of its timestamps (1: nanoseconds; 1,000: a µs source's).
    ns_per_unit: Vec<u64>,
}

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 1;
const EPB: u32 = 6;
const ISB: u32 = 5;
const OPT_COMMENT: u16 = 1;
const IF_NAME: u16 = 2;
const IF_DESCRIPTION: u16 = 3;
const IF_TSRESOL: u16 = 9;
const EPB_FLAGS: u16 = 2;

fn pad4(n: usize) -> usize {
    (4 - n % 4) % 4
}

fn option(buf: &mut Vec<u8>, code: u16, value: &[u8]) {
    buf.extend_from_slice(&code.to_le_bytes());
    buf.extend_from_slice(&(value.len() as u16).to_le_bytes());
    buf.extend_from_slice(value);
    buf.resize(buf.len() + pad4(value.len()), 0);
}

fn end_options(buf: &mut Vec<u8>) {
    buf.extend_from_slice(&[0; 4]);
}

impl<W: Write> PcapngWriter<W> {
    /// Writes the Section Header Block (with `shb_userappl`-style comment naming the writer).
    pub fn new(mut out: W, comment: Option<&str>) -> io::Result<Self> {
        let mut body = Vec::new();
        body.extend_from_slice(&0x1A2B_3C4D_u32.to_le_bytes());
        body.extend_from_slice(&1u16.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&(-1i64).to_le_bytes());
        option(&mut body, 4, format!("{USERAPPL}{}", env!("CARGO_PKG_VERSION")).as_bytes()); // shb_userappl
        if let Some(c) = comment {
            option(&mut body, OPT_COMMENT, c.as_bytes());
        }
        end_options(&mut body);
        write_block(&mut out, SHB, &body)?;
        Ok(PcapngWriter { out, interfaces: 0, ns_per_unit: Vec::new() })
    }

    /// Writes an Interface Description Block and returns its interface id.
    pub fn add_interface(&mut self, spec: &IfaceSpec) -> io::Result<u32> {
        self.add_interface_in(spec, 9)
    }

    /// [`PcapngWriter::add_interface`] whose timestamps count units of 10^-`decimals` s (6 for a
    /// microsecond source, at most 9): its `if_tsresol` says how fine they are, which a reader reports
    /// beside the figures; written in ns, a µs source's times would claim a precision they never had.
    pub fn add_interface_in(&mut self, spec: &IfaceSpec, decimals: u8) -> io::Result<u32> {
        let decimals = decimals.min(9);
        let mut body = Vec::new();
        body.extend_from_slice(&spec.link.to_u16().to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&spec.snaplen.to_le_bytes());
        option(&mut body, IF_NAME, spec.name.as_bytes());
        if let Some(d) = &spec.description {
            option(&mut body, IF_DESCRIPTION, d.as_bytes());
        }
        option(&mut body, IF_TSRESOL, &[decimals]);
        end_options(&mut body);
        write_block(&mut self.out, IDB, &body)?;
        self.ns_per_unit.push(10u64.pow(u32::from(9 - decimals)));
        self.interfaces += 1;
        Ok(self.interfaces - 1)
    }

    /// Writes an Enhanced Packet Block. `ts_ns` may be any i64 (pcapng timestamps are unsigned 64-bit;
    /// negative times are refused).
    pub fn write(&mut self, iface: u32, ts_ns: i64, data: &[u8], wire_len: u32, dir: Direction) -> io::Result<()> {
        self.write_flagged(iface, ts_ns, data, wire_len, dir, ClockQuality::default())
    }

    /// [`PcapngWriter::write`] of a frame whose clock was flagged: the flags go in an `opt_comment`,
    /// [`CLOCK_COMMENT`] and their names (`wirestamp clock: unsynced`), which wirestamp's reader reads
    /// back into the frame's quality and Wireshark shows as the packet's comment.
    pub fn write_flagged(
        &mut self,
        iface: u32,
        ts_ns: i64,
        data: &[u8],
        wire_len: u32,
        dir: Direction,
        quality: ClockQuality,
    ) -> io::Result<()> {
        if iface >= self.interfaces {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("interface {iface} was never added")));
        }
        let ts = u64::try_from(ts_ns)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("negative timestamp {ts_ns}")))?
            / self.ns_per_unit[iface as usize];
        let flags: u32 = match dir {
            Direction::Unknown => 0,
            Direction::Inbound => 1,
            Direction::Outbound => 2,
        };
        let mut opts = Vec::with_capacity(12);
        if flags != 0 {
            option(&mut opts, EPB_FLAGS, &flags.to_le_bytes());
        }
        if !quality.is_clean() {
            option(&mut opts, OPT_COMMENT, format!("{CLOCK_COMMENT}{}", quality.names()).as_bytes());
        }
        end_options(&mut opts);
        let total = 28 + data.len() + pad4(data.len()) + opts.len() + 4;
        let mut hdr = [0u8; 28];
        hdr[0..4].copy_from_slice(&EPB.to_le_bytes());
        hdr[4..8].copy_from_slice(&(total as u32).to_le_bytes());
        hdr[8..12].copy_from_slice(&iface.to_le_bytes());
        hdr[12..16].copy_from_slice(&((ts >> 32) as u32).to_le_bytes());
        hdr[16..20].copy_from_slice(&(ts as u32).to_le_bytes());
        hdr[20..24].copy_from_slice(&(data.len() as u32).to_le_bytes());
        hdr[24..28].copy_from_slice(&wire_len.to_le_bytes());
        self.out.write_all(&hdr)?;
        self.out.write_all(data)?;
        self.out.write_all(&[0; 3][..pad4(data.len())])?;
        self.out.write_all(&opts)?;
        self.out.write_all(&(total as u32).to_le_bytes())
    }

    /// Writes an Interface Statistics Block for interface `iface`, stamped `ts_ns`.
    pub fn write_stats(&mut self, iface: u32, ts_ns: i64, stats: &IfaceStats) -> io::Result<()> {
        self.write_stats_commented(iface, ts_ns, stats, None)
    }

    /// [`PcapngWriter::write_stats`] with an `opt_comment` (how to read the counters, for instance).
    pub fn write_stats_commented(
        &mut self,
        iface: u32,
        ts_ns: i64,
        stats: &IfaceStats,
        comment: Option<&str>,
    ) -> io::Result<()> {
        if iface >= self.interfaces {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("interface {iface} was never added")));
        }
        // pcapng times are two 32-bit halves of an unsigned count of the interface's units.
        let per_unit = self.ns_per_unit[iface as usize];
        let halves = |t: i64| {
            let t = u64::try_from(t)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("negative timestamp {t}")))?
                / per_unit;
            let mut b = [0u8; 8];
            b[..4].copy_from_slice(&((t >> 32) as u32).to_le_bytes());
            b[4..].copy_from_slice(&(t as u32).to_le_bytes());
            Ok::<_, io::Error>(b)
        };
        let mut body = Vec::with_capacity(96);
        body.extend_from_slice(&iface.to_le_bytes());
        body.extend_from_slice(&halves(ts_ns)?);
        if let Some(c) = comment {
            option(&mut body, OPT_COMMENT, c.as_bytes());
        }
        if let Some(t) = stats.start_ns {
            option(&mut body, 2, &halves(t)?);
        }
        if let Some(t) = stats.end_ns {
            option(&mut body, 3, &halves(t)?);
        }
        let c = &stats.counters;
        let counters = [(4, c.ifrecv), (5, c.ifdrop), (6, c.filteraccept), (7, c.osdrop), (8, c.usrdeliv)];
        for (code, v) in counters {
            if let Some(v) = v {
                option(&mut body, code, &v.to_le_bytes());
            }
        }
        end_options(&mut body);
        write_block(&mut self.out, ISB, &body)
    }

    /// Flushes and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    /// Flushes the inner writer: every block written so far reaches it whole.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

fn write_block(out: &mut impl Write, kind: u32, body: &[u8]) -> io::Result<()> {
    let total = (12 + body.len()) as u32;
    out.write_all(&kind.to_le_bytes())?;
    out.write_all(&total.to_le_bytes())?;
    out.write_all(body)?;
    out.write_all(&total.to_le_bytes())
}
