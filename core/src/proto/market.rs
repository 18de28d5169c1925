//! ITCH 5.0 over MoldUDP64: one UDP payload in, one [`MarketDataSummary`] per message out.
//!
//! [`MoldItchDecoder`] ties the pieces together for the correlator: it walks a packet's message
//! blocks, decodes each ITCH message, learns stock locate codes from Stock Directory messages and
//! counts every anomaly (malformed packet, malformed block, truncated or unknown ITCH message)
//! instead of failing. It allocates nothing per packet (the locate table grows on new codes only).

use super::Symbol;
use super::itch::{ItchCounters, ItchSummary, LocateMap, MessageType};
use super::moldudp64::{Messages, Packet, Session};
use super::{ProtoError, itch};

/// The market-data key of one message: where it sits in the feed and what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarketDataSummary {
    /// MoldUDP64 session.
    pub session: Session,
    /// Sequence number of the message.
    pub seq: u64,
    /// ITCH message type.
    pub msg_type: MessageType,
    /// Stock locate.
    pub stock_locate: u16,
    /// Symbol: from the message, else from the locate map.
    pub symbol: Option<Symbol>,
    /// ITCH timestamp, ns since midnight (Eastern time).
    pub timestamp_ns: u64,
    /// All the correlator fields of the message.
    pub itch: ItchSummary,
}

/// The keys of one message, for correlation ([`MoldItchDecoder::next_key`]):
/// [`MarketDataSummary`] without the ITCH fields, nor the session, which is the packet's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageKey {
    /// Sequence number of the message.
    pub seq: u64,
    /// Stock locate.
    pub stock_locate: u16,
    /// The symbol the message names (Add Order, Stock Directory, Trade and the others that carry
    /// theirs), read only when asked for. One that names only its locate (Order Executed, Delete, ...)
    /// has none here: the analysis learns each session's locates from the first copies of its
    /// messages, whichever feed brought them ([`super::itch::LocateMap::learn`]).
    pub symbol: Option<Symbol>,
    /// ITCH timestamp, ns since midnight (Eastern time).
    pub timestamp_ns: u64,
}

/// Where the keys of one ITCH message type lie, for [`MoldItchDecoder::next_key`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KeyLayout {
    /// Spec length of the type (the decoder's minimum); 0: use the full decoder.
    len: u8,
    /// Offset of the 8-byte stock symbol; 0: the type has none.
    stock_at: u8,
}

impl KeyLayout {
    const FULL: KeyLayout = KeyLayout { len: 0, stock_at: 0 };
}

/// The key layout of every type byte, derived from the decoder itself so the two cannot disagree:
/// a message of each known type is built with distinct bytes (byte i = i), decoded, and the stock
/// locate, timestamp and symbol the decoder reads are located in it. Stock Directory ('R', which
/// feeds the locate map) and any type whose keys are not where expected use the full decoder.
#[inline]
fn key_layouts() -> &'static [KeyLayout; 256] {
    static LAYOUTS: std::sync::OnceLock<[KeyLayout; 256]> = std::sync::OnceLock::new();
    LAYOUTS.get_or_init(|| {
        let mut table = [KeyLayout::FULL; 256];
        for t in 0..=255u8 {
            let mt = MessageType::from(t);
            let Some(len) = itch::message_len(mt) else { continue };
            if t == b'R' || u8::from(mt) != t || !(11..=255).contains(&len) {
                continue;
            }
            let mut buf: Vec<u8> = (0..len).map(|i| i as u8).collect();
            buf[0] = t;
            let Ok(m) = itch::parse(&buf) else { continue };
            let Some(h) = m.header() else { continue };
            let keys_fixed = h.stock_locate == u16::from_be_bytes([buf[1], buf[2]])
                && h.timestamp_ns == u64::from_be_bytes([0, 0, buf[5], buf[6], buf[7], buf[8], buf[9], buf[10]]);
            let stock_at = match m.stock() {
                None => Some(0),
                Some(sym) => (1..=len - 8).find(|&at| buf[at..at + 8] == sym.0).map(|at| at as u8),
            };
            if let (true, Some(stock_at)) = (keys_fixed, stock_at) {
                table[usize::from(t)] = KeyLayout { len: len as u8, stock_at };
            }
        }
        table
    })
}

/// What one packet held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketInfo {
    /// Session.
    pub session: Session,
    /// First sequence number.
    pub sequence: u64,
    /// Count field as on the wire (0 heartbeat, 0xFFFF end of session).
    pub count: u16,
    /// Message blocks read.
    pub blocks: u16,
    /// The malformed block that stopped the walk, if any.
    pub error: Option<ProtoError>,
    /// Bytes after the blocks the header announces (a count that is not the packet's, or a datagram
    /// that is not MoldUDP64): 0 in a well-formed packet.
    pub trailing: usize,
}

/// A packet being walked for its keys: [`MoldItchDecoder::walk_keys`], then
/// [`MoldItchDecoder::next_key`] until `None`, then [`MoldItchDecoder::end_keys`].
#[derive(Debug)]
pub struct KeyWalk<'a> {
    p: Packet<&'a [u8]>,
    it: Messages<'a>,
    blocks: u16,
    session: Session,
    layouts: &'static [KeyLayout; 256],
}

impl KeyWalk<'_> {
    /// The packet's session.
    pub fn session(&self) -> Session {
        self.session
    }

    /// The packet's first sequence number.
    pub fn sequence(&self) -> u64 {
        self.p.sequence()
    }
}

/// A walk of a plain packet ([`MoldItchDecoder::plain_walk`]).
#[derive(Debug)]
pub struct PlainWalk<'a> {
    /// The message blocks not yet walked.
    rest: &'a [u8],
    /// Sequence number of the next message.
    seq: u64,
    layouts: &'static [KeyLayout; 256],
}

/// Decodes MoldUDP64 packets carrying ITCH 5.0 and counts what went wrong.
#[derive(Debug, Clone)]
pub struct MoldItchDecoder {
    /// ITCH per-type, unknown and truncated counters.
    pub itch: ItchCounters,
    /// Stock locate -> symbol, learnt by [`MoldItchDecoder::packet`] from the messages that name
    /// their stock (the keys' walks leave it: see [`MessageKey::symbol`]).
    pub locates: LocateMap,
    /// Packets decoded (header readable).
    pub packets: u64,
    /// Payloads too short for a MoldUDP64 header.
    pub short_packets: u64,
    /// Packets whose message blocks ran past the datagram.
    pub malformed_blocks: u64,
    /// Packets with bytes left after their announced blocks.
    pub trailing_bytes: u64,
    /// [`key_layouts`], kept at hand (the `OnceLock` behind it is tested on every access).
    layouts: &'static [KeyLayout; 256],
}

impl Default for MoldItchDecoder {
    fn default() -> Self {
        MoldItchDecoder {
            itch: ItchCounters::default(),
            locates: LocateMap::default(),
            packets: 0,
            short_packets: 0,
            malformed_blocks: 0,
            trailing_bytes: 0,
            layouts: key_layouts(),
        }
    }
}

impl MoldItchDecoder {
    /// A decoder with empty counters.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes one UDP payload; calls `on_message` per ITCH message of known type. Errors are
    /// counted; the `Err` (short header) or `PacketInfo::error` (bad block) say where.
    pub fn packet<F: FnMut(MarketDataSummary)>(
        &mut self,
        udp_payload: &[u8],
        mut on_message: F,
    ) -> Result<PacketInfo, ProtoError> {
        self.walk(udp_payload, |m, session, seq, locates| {
            let Some(s) = m.summary() else { return };
            on_message(MarketDataSummary {
                session,
                seq,
                msg_type: s.msg_type,
                stock_locate: s.stock_locate,
                symbol: s.stock.or_else(|| locates.get(s.stock_locate)),
                timestamp_ns: s.timestamp_ns,
                itch: s,
            });
        })
    }

    /// Starts a keys-only walk of one UDP payload: [`MoldItchDecoder::packet`] with only the keys a
    /// correlator needs per message (no full summary built), the same messages in the same order with
    /// the same counters, step by step for a caller that works per packet before and after them.
    #[inline(always)]
    pub fn walk_keys<'a>(&mut self, udp_payload: &'a [u8]) -> Result<KeyWalk<'a>, ProtoError> {
        let p = self.open(udp_payload)?;
        Ok(KeyWalk { session: p.session(), it: p.messages(), p, blocks: 0, layouts: self.layouts })
    }

    /// The keys of the walk's next message of known type, `None` at the packet's end. With
    /// `with_symbol` false, `symbol` is only filled by the full decoder's path (a caller that does not
    /// read it saves reading it).
    ///
    /// The keys sit at fixed places (`key_layouts`), so the common message is read without the
    /// decoder's per-type dispatches (indirect branches that mispredict on a mixed feed: about 30 ns
    /// per message). Stock Directory, unknown types and short messages go through the full decoder.
    #[inline(always)]
    pub fn next_key(&mut self, w: &mut KeyWalk<'_>, with_symbol: bool) -> Option<MessageKey> {
        loop {
            let (seq, msg) = w.it.next()?;
            w.blocks += 1;
            let k = msg.first().map_or(KeyLayout::FULL, |&t| w.layouts[usize::from(t)]);
            // Every laid-out type is at least 11 bytes long (the header).
            let h = match msg.first_chunk::<11>() {
                Some(h) if k.len != 0 && msg.len() >= usize::from(k.len) => h,
                _ => match self.keys_full(msg, seq) {
                    Some(key) => return Some(key),
                    None => continue,
                },
            };
            self.itch.by_type[usize::from(h[0])] += 1;
            let stock_locate = u16::from_be_bytes([h[1], h[2]]);
            let timestamp_ns = u64::from_be_bytes([0, 0, h[5], h[6], h[7], h[8], h[9], h[10]]);
            let symbol = if with_symbol {
                // Both candidates, then a select: whether a type carries its symbol is as random as
                // the type, so a branch here mispredicts often. (At offset 0 the 8 bytes are read
                // and unused.)
                let at = usize::from(k.stock_at);
                let in_msg = msg.get(at..at + 8).and_then(|b| b.first_chunk::<8>()).map(|b| Symbol(*b));
                [None, in_msg][usize::from(at != 0)]
            } else {
                None
            };
            return Some(MessageKey { seq, stock_locate, symbol, timestamp_ns });
        }
    }

    /// Whether `udp_payload` is a plain packet: a MoldUDP64 header announcing 1 to 0xFFFE messages,
    /// then exactly that many blocks tiling the datagram, each of a laid-out type (`key_layouts`)
    /// at least its spec length. Such a packet is walked by [`MoldItchDecoder::plain_walk`] with the
    /// effects of [`MoldItchDecoder::walk_keys`]; nothing is counted here (a caller that finds the
    /// packet otherwise takes the general walk).
    #[inline(always)]
    pub fn is_plain(&self, udp_payload: &[u8]) -> bool {
        let Some(h) = udp_payload.first_chunk::<{ super::moldudp64::HEADER_LEN }>() else { return false };
        let count = u16::from_be_bytes([h[18], h[19]]);
        if count == 0 || count == super::moldudp64::END_OF_SESSION {
            return false;
        }
        let layouts = self.layouts;
        let mut pos = super::moldudp64::HEADER_LEN;
        for _ in 0..count {
            let Some(&[a, b, t]) = udp_payload.get(pos..).and_then(|r| r.first_chunk::<3>()) else { return false };
            let len = usize::from(u16::from_be_bytes([a, b]));
            let k = layouts[usize::from(t)];
            // `len >= 1` holds: the type byte was read inside the block only if `k.len <= len`.
            if k.len == 0 || len < usize::from(k.len) {
                return false;
            }
            pos += 2 + len;
        }
        pos == udp_payload.len()
    }

    /// Starts the walk of a packet [`MoldItchDecoder::is_plain`] accepted: then
    /// [`MoldItchDecoder::plain_next`] until `None`. The same keys and counters as
    /// [`MoldItchDecoder::walk_keys`], [`MoldItchDecoder::next_key`] and
    /// [`MoldItchDecoder::end_keys`] (no malformed block, no trailing byte, no full decode).
    #[inline(always)]
    pub fn plain_walk<'a>(&mut self, udp_payload: &'a [u8]) -> PlainWalk<'a> {
        self.packets += 1;
        let h = udp_payload.first_chunk::<{ super::moldudp64::HEADER_LEN }>().unwrap_or(&[0; 20]);
        PlainWalk {
            rest: &udp_payload[super::moldudp64::HEADER_LEN.min(udp_payload.len())..],
            seq: u64::from_be_bytes(*h[10..].first_chunk::<8>().unwrap_or(&[0; 8])),
            layouts: self.layouts,
        }
    }

    /// The counters a whole plain walk of a packet [`MoldItchDecoder::is_plain`] accepted adds, without
    /// its keys: for a packet whose every message is a later copy, which needs none.
    #[inline(always)]
    pub fn count_plain(&mut self, udp_payload: &[u8]) {
        self.packets += 1;
        let mut rest = udp_payload.get(super::moldudp64::HEADER_LEN..).unwrap_or_default();
        while let Some(&[a, b, t]) = rest.first_chunk::<3>() {
            self.itch.by_type[usize::from(t)] += 1;
            rest = rest.get(2 + usize::from(u16::from_be_bytes([a, b]))..).unwrap_or_default();
        }
    }

    /// The keys of a plain walk's next message, `None` at the packet's end.
    #[inline(always)]
    pub fn plain_next(&mut self, w: &mut PlainWalk<'_>, with_symbol: bool) -> Option<MessageKey> {
        let (&[a, b], rest) = w.rest.split_first_chunk::<2>()?;
        let (msg, rest) = rest.split_at_checked(usize::from(u16::from_be_bytes([a, b])))?;
        w.rest = rest;
        let seq = w.seq;
        w.seq = w.seq.wrapping_add(1);
        // `is_plain` saw every block hold at least its type's length, 11 bytes or more.
        let h = msg.first_chunk::<11>()?;
        self.itch.by_type[usize::from(h[0])] += 1;
        let stock_locate = u16::from_be_bytes([h[1], h[2]]);
        let timestamp_ns = u64::from_be_bytes([0, 0, h[5], h[6], h[7], h[8], h[9], h[10]]);
        let symbol = if with_symbol {
            let at = usize::from(w.layouts[usize::from(h[0])].stock_at);
            let in_msg = msg.get(at..at + 8).and_then(|b| b.first_chunk::<8>()).map(|b| Symbol(*b));
            [None, in_msg][usize::from(at != 0)]
        } else {
            None
        };
        Some(MessageKey { seq, stock_locate, symbol, timestamp_ns })
    }

    /// Ends a walk (whole or not): counts its end (malformed or trailing bytes) and says what the
    /// packet held.
    #[inline(always)]
    pub fn end_keys(&mut self, w: &KeyWalk<'_>) -> PacketInfo {
        self.close(&w.p, &w.it, w.blocks)
    }

    /// The packet's header, counted as a packet, or as too short to hold one.
    #[inline(always)]
    fn open<'a>(&mut self, udp_payload: &'a [u8]) -> Result<Packet<&'a [u8]>, ProtoError> {
        let p = Packet::new_checked(udp_payload).inspect_err(|_| self.short_packets += 1)?;
        self.packets += 1;
        Ok(p)
    }

    /// What the walk of `p`'s `blocks` message blocks found, its end counted (malformed or trailing).
    #[inline(always)]
    fn close(&mut self, p: &Packet<&[u8]>, it: &Messages<'_>, blocks: u16) -> PacketInfo {
        let error = it.error();
        if error.is_some() {
            self.malformed_blocks += 1;
        } else if it.trailing() > 0 {
            self.trailing_bytes += 1;
        }
        let trailing = if error.is_some() { 0 } else { it.trailing() };
        PacketInfo { session: p.session(), sequence: p.sequence(), count: p.message_count(), blocks, error, trailing }
    }

    /// One message through the full decoder (counting, locates), then its keys.
    #[cold]
    fn keys_full(&mut self, msg: &[u8], seq: u64) -> Option<MessageKey> {
        let m = self.itch.decode(msg)?;
        let h = m.header()?;
        Some(MessageKey { seq, stock_locate: h.stock_locate, symbol: m.stock(), timestamp_ns: h.timestamp_ns })
    }

    /// Walks the message blocks: decodes each (counting), learns locates, hands each decoded message
    /// to `f` with its session, sequence and the locate map.
    #[inline(always)]
    fn walk<F: FnMut(&itch::Message<'_>, Session, u64, &LocateMap)>(
        &mut self,
        udp_payload: &[u8],
        mut f: F,
    ) -> Result<PacketInfo, ProtoError> {
        let p = self.open(udp_payload)?;
        let session = p.session();
        let mut blocks = 0u16;
        let mut it = p.messages();
        for (seq, msg) in it.by_ref() {
            blocks += 1;
            let Some(m) = self.itch.decode(msg) else { continue };
            self.locates.observe(&m);
            f(&m, session, seq, &self.locates);
        }
        Ok(self.close(&p, &it, blocks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testutil::B;

    #[test]
    fn key_layouts_follow_the_spec() {
        // ITCH 5.0 spec section 1.3-1.5: lengths and the offset of Stock (after type 1, locate 2,
        // tracking 2, timestamp 6 = 11 bytes of header).
        let t = key_layouts();
        let at = |c: u8| t[usize::from(c)];
        assert_eq!(at(b'A'), KeyLayout { len: 36, stock_at: 24 }, "header 11 + ref 8 + side 1 + shares 4");
        assert_eq!(at(b'F'), KeyLayout { len: 40, stock_at: 24 });
        assert_eq!(at(b'P'), KeyLayout { len: 44, stock_at: 24 });
        assert_eq!(at(b'Q'), KeyLayout { len: 40, stock_at: 19 }, "header 11 + shares 8");
        assert_eq!(at(b'E'), KeyLayout { len: 31, stock_at: 0 });
        assert_eq!(at(b'D'), KeyLayout { len: 19, stock_at: 0 });
        assert_eq!(at(b'S'), KeyLayout { len: 12, stock_at: 0 });
        assert_eq!(at(b'H'), KeyLayout { len: 25, stock_at: 11 });
        // Stock Directory feeds the locate map: always the full decoder. So do unknown types.
        assert_eq!(at(b'R'), KeyLayout::FULL);
        assert_eq!(at(b'z'), KeyLayout::FULL);
        assert_eq!(at(0), KeyLayout::FULL);
    }

    /// `count_plain` counts what a whole plain walk counts, for packets of one to four messages of
    /// the laid-out types, some longer than their spec length.
    #[test]
    fn counting_a_plain_packet_is_walking_it() {
        let add = B::new().c(b'A').u16(5).u16(0).u48(2).u64(9).c(b'B').u32(10).s("ZXZZT", 8).u32(1).done();
        let del = B::new().c(b'D').u16(5).u16(0).u48(3).u64(9).done();
        let exe = B::new().c(b'E').u16(5).u16(0).u48(4).u64(9).u32(5).u64(77).done();
        let mut long_del = del.clone();
        long_del.extend([0; 3]);
        let msgs = [&add, &del, &exe, &long_del];
        for n in 1..=4 {
            for first in 0..msgs.len() {
                let mut p = B::new().s("SESSION001", 10).u64(41).u16(n as u16);
                for k in 0..n {
                    let m = msgs[(first + k) % msgs.len()];
                    p = p.u16(m.len() as u16).raw(m);
                }
                let p = p.done();
                let (mut counted, mut walked) = (MoldItchDecoder::default(), MoldItchDecoder::default());
                assert!(counted.is_plain(&p));
                counted.count_plain(&p);
                let mut w = walked.plain_walk(&p);
                let mut keys = 0;
                while walked.plain_next(&mut w, true).is_some() {
                    keys += 1;
                }
                assert_eq!(keys, n);
                assert_eq!(counted.itch.by_type, walked.itch.by_type, "{n} messages from {first}");
                assert_eq!(counted.packets, walked.packets);
                assert_eq!(counted.itch.by_type.iter().sum::<u64>(), n as u64);
            }
        }
    }

    #[test]
    fn directory_then_add_order_gets_its_symbol() {
        let r = B::new()
            .c(b'R')
            .u16(5)
            .u16(0)
            .u48(1)
            .s("ZXZZT", 8)
            .raw(b"QN")
            .u32(100)
            .raw(b"NC  PNN1N")
            .u32(0)
            .c(b'N')
            .done();
        let a = B::new().c(b'A').u16(5).u16(0).u48(2).u64(9).c(b'B').u32(10).s("ZXZZT", 8).u32(1).done();
        let mut d = B::new().s("SESSION001", 10).u64(41).u16(4).u16(39).raw(&r).u16(36).raw(&a);
        d = d.u16(3).raw(b"zzz").u16(5).raw(b"A\0\0\0\0"); // unknown type, truncated 'A'
        let pkt = d.done();
        let x = B::new().c(b'X').u16(5).u16(0).u48(3).u64(9).u32(4).done();
        let pkt2 = B::new().s("SESSION001", 10).u64(45).u16(1).u16(23).raw(&x).done();
        let mut dec = MoldItchDecoder::new();
        let mut out = Vec::new();
        let info = dec.packet(&pkt, |m| out.push(m)).unwrap();
        assert_eq!((info.sequence, info.count, info.blocks, info.error), (41, 4, 4, None));
        dec.packet(&pkt2, |m| out.push(m)).unwrap();
        assert_eq!(out.len(), 3);
        assert_eq!(
            (out[0].seq, out[0].msg_type, out[0].symbol),
            (41, MessageType::StockDirectory, Some(Symbol::new("ZXZZT")))
        );
        assert_eq!((out[1].seq, out[1].stock_locate, out[1].timestamp_ns, out[1].itch.order_ref), (42, 5, 2, Some(9)));
        // 'X' carries no symbol: it comes from the locate map.
        assert_eq!(
            (out[2].seq, out[2].msg_type, out[2].symbol),
            (45, MessageType::OrderCancel, Some(Symbol::new("ZXZZT")))
        );
        assert_eq!((dec.itch.unknown(), dec.itch.truncated, dec.packets), (1, 1, 2));
        // The keys-only walk sees the same messages, with the same keys and counters, and gives only
        // the symbols the messages name ('X' names its locate only). Without symbols asked for, only
        // the full decoder's path (here the Stock Directory) fills one.
        let z = Some(Symbol::new("ZXZZT"));
        for (with_symbol, z_laid_out) in [(true, z), (false, None)] {
            let mut keys_dec = MoldItchDecoder::new();
            let mut got = Vec::new();
            for p in [&pkt, &pkt2] {
                let mut w = keys_dec.walk_keys(p).unwrap();
                assert_eq!(w.session(), Session(*b"SESSION001"));
                while let Some(k) = keys_dec.next_key(&mut w, with_symbol) {
                    got.push((k.seq, k.stock_locate, k.timestamp_ns, k.symbol));
                }
                let info = keys_dec.end_keys(&w);
                assert_eq!((info.sequence, info.error), (w.sequence(), None));
            }
            assert_eq!(got, [(41, 5, 1, z), (42, 5, 2, z_laid_out), (45, 5, 3, None)], "symbols {with_symbol}");
            assert_eq!((keys_dec.itch.unknown(), keys_dec.itch.truncated, keys_dec.packets), (1, 1, 2));
        }
        assert!(dec.packet(&pkt[..19], |_| {}).is_err());
        let info = dec.packet(&pkt[..30], |_| {}).unwrap();
        assert!(info.error.is_some());
        assert_eq!((dec.short_packets, dec.malformed_blocks), (1, 1));
    }
}
