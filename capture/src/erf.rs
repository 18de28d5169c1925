//! Endace ERF (Extensible Record Format) records, as files and as LINKTYPE_ERF (197) payloads.
//!
//! [Endace ERF types reference; Wireshark wiretap/erf_record.h and wiretap/erf.c]
//! ```text
//!  0               4               8       9       10      12      14      16
//! +---------------+---------------+-------+-------+-------+-------+-------+
//! | timestamp u64 LITTLE-endian   | type  | flags | rlen  | lctr  | wlen  |  (u16s BIG-endian)
//! | hi 32: s since epoch, lo 32: binary fraction (2^-32 s)                 |
//! +-----------------------------------------------------------------------+
//! | extension headers, 8 bytes each, while type bit 7 / ext byte 0 bit 7  |
//! | Ethernet types (2 ETH, 11 COLOR_ETH, 16 DSM_COLOR_ETH, 20 COLOR_HASH_ETH): 2-byte pad |
//! | frame (wlen bytes on the wire incl. FCS; captured part up to rlen)    |
//! +-----------------------------------------------------------------------+
//! type bits 0-6; flags bits 0-1 + bit 6 = interface; bit 3 truncated; bit 4 RX error; bit 5 DS error
//! ```
//! The fraction is converted with Wireshark's rounding, `ns = (frac * 1e9 + 2^31) >> 32`.
//! Types 22/23 (IPV4/IPV6) are presented as raw IP; other types (META 27, PAD 48, ATM, HDLC, ...)
//! carry no Ethernet frame and are skipped and counted.

use wirestamp_core::{ClockQuality, Direction, LinkType, TsSource};

use crate::buffer::{ChunkBuffer, MAX_RECORD};
use crate::error::ReadErrorKind;
use crate::interface::{ContainerKind, Interface, RecordedStats, TsResolution};
use crate::raw::{RawFrame, Step, be16_at};

/// Size of the fixed ERF header.
pub(crate) const HEADER_LEN: usize = 16;

/// An ERF record decoded down to its payload (offsets relative to the record).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record {
    pub ts_ns: i64,
    /// Payload link type, or `None` for a record carrying no frame.
    pub link: Option<LinkType>,
    /// Record type (bits 0-6).
    pub rtype: u8,
    pub port: u8,
    pub payload_off: usize,
    pub payload_len: usize,
    pub wlen: u16,
    pub quality: ClockQuality,
    /// Packets the card lost since the previous record (the header's loss counter; 0 for the
    /// colour types, whose header holds a colour there, as libpcap's DAG reader reads it).
    pub lost: u16,
}

impl Record {
    /// The frame of this record, which starts at buffer position `at`, from interface row `interface`.
    #[inline(always)]
    pub(crate) fn frame(&self, at: usize, link: LinkType, interface: u32) -> RawFrame {
        RawFrame {
            start: at + self.payload_off,
            len: self.payload_len as u32,
            wire_len: u32::from(self.wlen),
            ts_ns: self.ts_ns,
            ts_source: TsSource::Erf,
            link,
            interface,
            direction: Direction::Unknown,
            // ERF records carry the Ethernet FCS.
            fcs_len: (link == LinkType::Ethernet).then_some(4),
            quality: self.quality,
        }
    }
}

/// The ERF fixed-point timestamp in ns since the epoch, with Wireshark's rounding.
pub fn erf_ts_to_ns(ts: u64) -> i64 {
    let secs = (ts >> 32) as i64;
    let frac = ts & 0xffff_ffff;
    secs * 1_000_000_000 + ((frac * 1_000_000_000 + 0x8000_0000) >> 32) as i64
}

/// Name under which skipped records of this type are counted.
pub(crate) fn skip_name(rtype: u8) -> &'static str {
    match rtype {
        27 => "erf META",
        48 => "erf PAD",
        _ => "erf non-Ethernet type",
    }
}

/// Decodes the record in `rec` (the record's bytes as far as they are present).
pub(crate) fn parse(rec: &[u8]) -> Result<Record, String> {
    let Some(h) = rec.first_chunk::<HEADER_LEN>() else {
        return Err(format!("{} bytes, less than the 16-byte header", rec.len()));
    };
    let ts = u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
    let (ty, flags) = (h[8], h[9]);
    let rtype = ty & 0x7f;
    let wlen = be16_at(h, 14);
    let mut off = HEADER_LEN;
    if ty & 0x80 != 0 {
        loop {
            let Some(&e) = rec.get(off) else {
                return Err(format!("extension header at record offset {off} runs past the record end"));
            };
            off += 8;
            if e & 0x80 == 0 {
                break;
            }
        }
        if off > rec.len() {
            return Err(format!("extension headers ({} bytes) run past the record end", off - HEADER_LEN));
        }
    }
    let link = match rtype {
        2 | 11 | 16 | 20 => {
            off += 2;
            if off > rec.len() {
                return Err("Ethernet record too short for its 2-byte pad".into());
            }
            Some(LinkType::Ethernet)
        }
        22 => Some(LinkType::Ipv4),
        23 => Some(LinkType::Ipv6),
        _ => None,
    };
    let payload_len = (rec.len() - off).min(wlen as usize);
    let mut quality = ClockQuality::default();
    if flags & 0x38 != 0 {
        quality |= ClockQuality::RECORD_ERROR;
    }
    // COLOR_HDLC_POS, COLOR_ETH, DSM_COLOR_HDLC_POS, DSM_COLOR_ETH, COLOR_MC_HDLC_POS,
    // COLOR_HASH_POS, COLOR_HASH_ETH.
    let colour = matches!(rtype, 10 | 11 | 15 | 16 | 17 | 19 | 20);
    Ok(Record {
        ts_ns: erf_ts_to_ns(ts),
        link,
        rtype,
        port: (flags & 0x03) | ((flags & 0x40) >> 4),
        payload_off: off,
        payload_len,
        wlen,
        quality,
        lost: if colour { 0 } else { be16_at(h, 12) },
    })
}

/// Whether `b` (the start of a stream) plausibly holds ERF records: up to 3 whole records of
/// known types, consistent lengths and timestamps within a day of each other, with at least one
/// record that is not padding.
#[cfg(test)]
pub(crate) fn looks_like_erf(b: &[u8]) -> bool {
    judge_erf(b).0
}

/// `looks_like_erf`'s answer for `b`, and whether it is final: the same for any longer start of the
/// stream (a record found wrong, or 3 whole records judged; not while a record is incomplete).
pub(crate) fn judge_erf(b: &[u8]) -> (bool, bool) {
    let mut off = 0;
    let mut checked = 0;
    let mut non_pad = false;
    let mut first_secs = None;
    while checked < 3 && off + HEADER_LEN <= b.len() {
        let rlen = be16_at(b, off + 10) as usize;
        let rtype = b[off + 8] & 0x7f;
        if rlen < HEADER_LEN || !matches!(rtype, 1..=25 | 27..=29 | 48) {
            return (false, true);
        }
        if off + rlen > b.len() {
            break;
        }
        if parse(&b[off..off + rlen]).is_err() {
            return (false, true);
        }
        if rtype != 48 {
            non_pad = true;
            let secs = u32::from_le_bytes([b[off + 4], b[off + 5], b[off + 6], b[off + 7]]) as i64;
            match first_secs {
                None => first_secs = Some(secs),
                Some(f) if (secs - f).abs() > 86_400 => return (false, true),
                Some(_) => {}
            }
        }
        checked += 1;
        off += rlen;
    }
    (checked > 0 && non_pad, checked == 3)
}

/// Reader of an ERF file: records back to back, no file header.
pub(crate) struct ErfParser {
    /// ERF interface number -> row in the reader's interface table.
    ports: [Option<u32>; 8],
    /// Packets the records of each ERF interface say the card lost (their loss counters summed),
    /// kept in the interface's `recorded.ifdrop` once it is in the table.
    lost: [u64; 8],
}

impl ErfParser {
    pub(crate) fn new() -> ErfParser {
        ErfParser { ports: [None; 8], lost: [0; 8] }
    }

    /// The common case in one step: a whole frame-carrying record of an interface already seen.
    /// Anything else returns `None` and goes through [`ErfParser::next`].
    #[inline(always)]
    pub(crate) fn fast(&self, buf: &mut ChunkBuffer) -> Option<RawFrame> {
        let a = buf.avail();
        let h = a.first_chunk::<HEADER_LEN>()?;
        let rlen = be16_at(h, 10) as usize;
        let rec = parse(a.get(..rlen)?).ok()?;
        // A loss to count goes through `next`.
        if rec.lost != 0 {
            return None;
        }
        let link = rec.link?;
        let interface = self.ports[rec.port as usize]?;
        let f = rec.frame(buf.pos(), link, interface);
        buf.consume(rlen);
        buf.prefetch_ahead();
        Some(f)
    }

    pub(crate) fn next(
        &mut self,
        buf: &mut ChunkBuffer,
        ifaces: &mut Vec<Interface>,
        input: usize,
    ) -> Result<Step, ReadErrorKind> {
        // At most three passes: header missing, then record missing, then whole.
        let rlen = loop {
            let a = buf.avail();
            let rlen = if a.len() >= HEADER_LEN { be16_at(a, 10) as usize } else { 0 };
            if a.len() >= HEADER_LEN && a.len() >= rlen {
                break rlen;
            }
            if !buf.fill(HEADER_LEN.max(rlen).min(MAX_RECORD))? {
                let have = buf.avail().len() as u64;
                if have == 0 {
                    return Ok(Step::Eof);
                }
                let needed = if have >= HEADER_LEN as u64 { be16_at(buf.avail(), 10) as u64 } else { 16 };
                return Ok(Step::Cut { needed: needed.max(have + 1), have });
            }
        };
        let a = buf.avail();
        if rlen < HEADER_LEN {
            return Err(ReadErrorKind::BadErf(format!("record length {rlen} is less than the 16-byte header")));
        }
        let rec = parse(&a[..rlen]).map_err(ReadErrorKind::BadErf)?;
        let port = rec.port as usize;
        if rec.lost != 0 {
            self.lost[port] = self.lost[port].saturating_add(u64::from(rec.lost));
            if let Some(i) = self.ports[port] {
                self.record_losses(ifaces, i, port);
            }
        }
        let Some(link) = rec.link else {
            buf.consume(rlen);
            return Ok(Step::Skipped(skip_name(rec.rtype)));
        };
        let interface = match self.ports[rec.port as usize] {
            Some(i) => i,
            None => {
                let id = ifaces.len() as u32;
                self.ports[rec.port as usize] = Some(id);
                ifaces.push(Interface {
                    id,
                    input,
                    local_id: rec.port as u32,
                    name: None,
                    description: None,
                    link,
                    ts_resolution: TsResolution::Bin(32),
                    ts_offset_s: 0,
                    fcs_len: (link == LinkType::Ethernet).then_some(4),
                    container: ContainerKind::Erf,
                    snaplen: 0,
                    section: 0,
                    recorded: None,
                    by_wirestamp_capture: false,
                });
                if self.lost[port] != 0 {
                    self.record_losses(ifaces, id, port);
                }
                id
            }
        };
        let f = rec.frame(buf.pos(), link, interface);
        buf.consume(rlen);
        Ok(Step::Frame(f))
    }

    /// Puts ERF interface `port`'s losses so far into row `i` of the interface table, as the card's
    /// drops (pcapng's `isb_ifdrop`: packets the interface dropped).
    fn record_losses(&self, ifaces: &mut [Interface], i: u32, port: usize) {
        if let Some(iface) = ifaces.get_mut(i as usize) {
            iface.recorded = Some(RecordedStats { ifdrop: Some(self.lost[port]), ..RecordedStats::default() });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ETH record built by hand: ts = 1.5 s + 1 fraction unit, port 5 (flags 0x41), one
    /// extension header, 2-byte pad, 6 frame bytes, wlen 10.
    fn record() -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&0x8000_0001u32.to_le_bytes());
        r.extend_from_slice(&1u32.to_le_bytes());
        r.extend_from_slice(&[0x82, 0x41]);
        r.extend_from_slice(&34u16.to_be_bytes());
        r.extend_from_slice(&[0, 0]);
        r.extend_from_slice(&10u16.to_be_bytes());
        r.extend_from_slice(&[0x11, 0, 0, 0, 0, 0, 0, 0]);
        r.extend_from_slice(&[0, 0]);
        r.extend_from_slice(&[1, 2, 3, 4, 5, 6, 0, 0]);
        r
    }

    #[test]
    fn decodes_eth_record() {
        let r = record();
        let rec = parse(&r).unwrap();
        // 0x80000001 / 2^32 s = 0.500000000232830... s -> 500000000 ns (rounded).
        assert_eq!(rec.ts_ns, 1_500_000_000);
        assert_eq!(rec.port, 5);
        assert_eq!(rec.payload_off, 26);
        // 8 payload bytes in the record, but only wlen = 10 would be on the wire: 8 kept.
        assert_eq!(rec.payload_len, 8);
        assert_eq!(rec.link, Some(LinkType::Ethernet));
        assert!(looks_like_erf(&r));
        assert!(!looks_like_erf(b"hello world, this is text!!"));
    }

    #[test]
    fn rounding_matches_wireshark() {
        // frac = 2^31 - 1: 0.49999999976716935 s -> 499999999.767 ns -> rounds to 500000000.
        assert_eq!(erf_ts_to_ns(0x7fff_ffff), 500_000_000);
        // frac = 0xffffffff: 0.99999999976716935 s -> 999999999.767 -> 1 s (carry).
        assert_eq!(erf_ts_to_ns(0xffff_ffff), 1_000_000_000);
        assert_eq!(erf_ts_to_ns(3 << 32), 3_000_000_000);
    }

    #[test]
    fn rejects_runaway_extension_headers() {
        let mut r = record();
        r[16] = 0x91; // "another follows" on every ext header until the end
        r[24] = 0x80;
        r[32] = 0x80;
        assert!(parse(&r[..34]).is_err());
    }
}
