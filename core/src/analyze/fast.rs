//! The fast path: a market-data frame of a known feed in the common shape, taken from the frame's
//! bytes in one pass, with exactly the effects the general path (dissection, the trailer check,
//! [`Analyzer::frame`]) would have had.
//!
//! Most frames of a capture are market data, and on them the general path spends most of its
//! instructions on what they do not need: a whole `Dissection`, `IpAddr`s, the trailer check, the
//! message walk's error bookkeeping. The analysis is bound by instructions (it retires about four
//! per cycle), so fewer of them is what makes it faster. The path tests every condition first and
//! changes nothing when one fails: the caller then takes the general path.
//! `daemon/tests/analyze_fast_path.rs` compares the reports, pairs and interval logs of both over
//! generated, damaged and real captures, and the `analyze` fuzz target compares them on any frames.

use super::Analyzer;
use super::arbiter::SessionRef;
use super::market::{ArbSession, Copies, FeedState};
use crate::frame::{Frame, LinkType};
use crate::proto::moldudp64::Session;
use crate::time::{ClockQuality, TsSource};
use crate::trailer::MIN_APPENDED;
use crate::trailer::TrailerStamp;
use crate::wire::ethernet::ethertype;
use std::net::{IpAddr, Ipv4Addr};

/// A UDP datagram in the common shape ([`plain_udp`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainUdp<'a> {
    pub dst: Ipv4Addr,
    pub dport: u16,
    pub payload: &'a [u8],
}

/// Ethernet, no tag or one 802.1Q tag, IPv4 without options, not a fragment, UDP whose length fills
/// the datagram; the datagram ends fewer than 16 bytes (the shortest tap trailer) before the frame's
/// end (an FCS may follow, not a searched-for tap trailer), and the frame was captured whole. Dissection
/// finds no anomaly in such a frame, and the trailer check finds nothing in it whenever
/// `TrailerDecoder::takes_plain` holds. `None` otherwise.
#[inline(always)]
pub fn plain_udp(data: &[u8], wire_len: u32) -> Option<PlainUdp<'_>> {
    shape::<true>(data, wire_len).map(|(u, _)| u)
}

/// [`plain_udp`]'s shape whatever follows the datagram (a tap trailer, say), and the offset where the
/// datagram ends. Dissection finds no anomaly in such a frame either, and its IP datagram ends there.
#[inline(always)]
pub fn udp_shape(data: &[u8], wire_len: u32) -> Option<(PlainUdp<'_>, usize)> {
    shape::<false>(data, wire_len)
}

/// [`udp_shape`], and with `PLAIN` [`plain_udp`]'s condition on the bytes after the datagram, tested
/// with the others (one branch).
#[inline(always)]
fn shape<const PLAIN: bool>(data: &[u8], wire_len: u32) -> Option<(PlainUdp<'_>, usize)> {
    if wire_len as usize != data.len() {
        return None;
    }
    let (l3, et) = match data.get(12..)?.first_chunk::<6>()? {
        [0x81, 0x00, _, _, a, b] => (18, u16::from_be_bytes([*a, *b])),
        [a, b, ..] => (14, u16::from_be_bytes([*a, *b])),
    };
    if et != ethertype::IPV4 {
        return None;
    }
    let ip = data.get(l3..)?.first_chunk::<28>()?;
    let total_len = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    // Neither more fragments nor an offset.
    let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff;
    let udp_len = usize::from(u16::from_be_bytes([ip[24], ip[25]]));
    let end = l3 + total_len;
    // Wrapping: a datagram running past the frame fails here, or below when it ends past the frame.
    let after = data.len().wrapping_sub(end);
    let plain = ip[0] == 0x45
        && frag == 0
        && ip[9] == crate::dissect::ipproto::UDP
        && (!PLAIN || after < MIN_APPENDED)
        && udp_len + 20 == total_len;
    if !plain {
        return None;
    }
    let u = PlainUdp {
        dst: Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]),
        dport: u16::from_be_bytes([ip[22], ip[23]]),
        payload: data.get(l3 + 28..end)?,
    };
    Some((u, end))
}

impl Analyzer {
    /// Takes frame `index` through the fast path if it is a market-data frame of a feed already
    /// known, in the common shape: `plain_udp` carrying a MoldUDP64 packet that
    /// [`crate::proto::market::MoldItchDecoder::is_plain`] accepts, continuing its feed's session
    /// at the next sequence the feed expects. Returns whether it did; when not, nothing changed
    /// (but a cache of feed lookups) and the frame goes through the general path
    /// ([`Analyzer::frame`], after dissection and the trailer check).
    ///
    /// `before` runs once every condition holds, before the frame changes anything: what the caller
    /// does before each frame it analyses (feeding TX events up to the frame's time), which it must
    /// not do for a frame the general path will time differently (by a tap's stamp). It must not
    /// change the feeds or the sequence tracker (TX events do not).
    ///
    /// The caller vouches that the trailer check would find nothing in such a frame
    /// (`TrailerDecoder::takes_plain`) and counts it there; the frame's record time is its time.
    #[inline(always)]
    pub fn frame_fast(&mut self, index: u64, f: &Frame<'_>, before: impl FnOnce(&mut Analyzer)) -> bool {
        if !self.cfg.fast_path || f.link != LinkType::Ethernet || !f.has_ts() {
            return false;
        }
        let Some(u) = plain_udp(f.data, f.wire_len) else { return false };
        self.take_fast(index, u, (f.ts_ns, f.ts_source, f.quality), before)
    }

    /// [`Analyzer::frame_fast`] for a frame of the same shape whose datagram (`udp`, from [`udp_shape`])
    /// a tap trailer follows, and the stamp the trailer check found in it
    /// (`TrailerDecoder::plain_stamp`): the frame is timed by the stamp, as the general path times it.
    /// The caller counts the stamp in its decoder when the frame was taken
    /// (`TrailerDecoder::count_plain_stamp`), and only then. Out of line, so that the loop keeps one
    /// copy of the fast path.
    #[inline(never)]
    pub fn frame_stamped(
        &mut self,
        index: u64,
        f: &Frame<'_>,
        udp: PlainUdp<'_>,
        stamp: &TrailerStamp,
        before: impl FnOnce(&mut Analyzer),
    ) -> bool {
        if !self.cfg.fast_path || f.link != LinkType::Ethernet {
            return false;
        }
        let quality = f.quality | stamp.quality;
        self.take_fast(index, udp, (stamp.time_ns, TsSource::Trailer(stamp.kind), quality), before)
    }

    /// The fast path's frame, timed by `time` (ns, its source and quality), if it is a market-data
    /// frame of a known feed continuing its session in order with plain blocks.
    #[inline(always)]
    fn take_fast(
        &mut self,
        index: u64,
        u: PlainUdp<'_>,
        time: (i64, TsSource, ClockQuality),
        before: impl FnOnce(&mut Analyzer),
    ) -> bool {
        let Some(fi) = self.cached_feed(u.dst, u.dport) else { return false };
        let Some((lane, sequence)) = self.plain_lane(fi, u.payload) else { return false };
        // Every condition holds: from here on, what `frame` and `market_data` do, in their order.
        before(self);
        let (t, ts_source, quality) = time;
        // (`used` counts the source; nothing else reads what it changes.)
        self.used(ts_source, quality);
        self.feeds[fi].clocks |= self.run_bit;
        self.fast_frames += 1;
        self.counters.frames += 1;
        self.last_frame = index;
        self.advance_time(t);
        self.market_plain(fi, t, u.payload, lane, sequence);
        true
    }

    /// The feed's lane and the packet's first sequence when `payload` is a MoldUDP64 packet that
    /// continues feed `fi`'s session at the next sequence the feed expects, and whose blocks are
    /// plain ([`crate::proto::market::MoldItchDecoder::is_plain`]): then [`Analyzer::market_plain`]
    /// does what the general walk would. Changes nothing.
    #[inline(always)]
    pub(super) fn plain_lane(&self, fi: usize, payload: &[u8]) -> Option<((Session, usize, SessionRef), u64)> {
        let feed = &self.feeds[fi];
        let lane @ (session, stream, _) = feed.lane?;
        let h = payload.first_chunk::<20>()?;
        let sequence = u64::from_be_bytes(*h[10..].first_chunk::<8>().unwrap_or(&[0; 8]));
        (h[..10] == session.0 && self.seq.expects(stream, sequence) && feed.decoder.is_plain(payload))
            .then_some((lane, sequence))
    }

    /// [`Analyzer::known_feed`] of an IPv4 destination, through `feed_cache`.
    #[inline(always)]
    pub(super) fn cached_feed(&mut self, dst: Ipv4Addr, dport: u16) -> Option<usize> {
        let key = u64::from(u32::from(dst)) << 16 | u64::from(dport);
        let [(k0, f0), (k1, f1)] = self.feed_cache;
        // Which of the two is as unpredictable as the A/B race: a select, not a branch.
        let (hit0, hit1) = (k0 == key, k1 == key);
        if hit0 | hit1 {
            return Some(if hit0 { f0 } else { f1 });
        }
        let fi = self.known_feed(IpAddr::V4(dst), dport)?;
        self.feed_cache = [(key, fi), (k0, f0)];
        Some(fi)
    }

    /// `market_data` for a packet [`Analyzer::plain_lane`] accepted: the fast path's, and the general
    /// path's for such a packet (a frame with a tap trailer, say).
    #[inline(always)]
    pub(super) fn market_plain(
        &mut self,
        fi: usize,
        t: i64,
        payload: &[u8],
        lane: (Session, usize, SessionRef),
        sequence: u64,
    ) {
        let (session, stream, arb) = lane;
        self.feeds[fi].frames += 1;
        let count = u16::from_be_bytes([payload[18], payload[19]]);
        self.arbiter.packet_at(arb, t);
        if !self.later_packet(fi, t, payload, arb, sequence, count) {
            let (mut copies, decoder) = Copies::new(self, fi, session, ArbSession::Started(arb), t);
            let mut w = decoder.plain_walk(payload);
            while let Some(m) = decoder.plain_next(&mut w, copies.track_symbols) {
                copies.message(m);
            }
        }
        self.seq.in_order(stream, count);
        self.feeds[fi].add_seq_range(sequence, count);
    }

    /// A packet whose every message is a later copy of one packet's first copies (feed B's copy of
    /// what feed A brought, the common case of an A/B pair): what [`Copies::message`] would do for
    /// each, at once. These share one delay, and need no keys. Returns whether it was such a packet
    /// (nothing changed when not).
    #[inline(always)]
    fn later_packet(&mut self, fi: usize, t: i64, payload: &[u8], arb: SessionRef, sequence: u64, count: u16) -> bool {
        let FeedState { open, decoder, .. } = &mut self.feeds[fi];
        // A feed's first A/B delay makes its slot in the metric: `Copies` does that.
        let Some(tally) = open[1].as_deref_mut() else { return false };
        let Some((delay_ns, _)) = self.arbiter.later_copies(arb, sequence, count, fi as u16, t) else {
            return false;
        };
        decoder.count_plain(payload);
        self.counters.tick_copies += u64::from(count);
        tally.record_n(delay_ns, count);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ethernet (optionally tagged) + IPv4 + UDP to 233.1.2.3:26477 carrying `payload`.
    fn frame(vlan: bool, payload: &[u8]) -> Vec<u8> {
        super::super::tests::udp_frame(vlan, [233, 1, 2, 3], 26477, payload)
    }

    #[test]
    fn the_common_shape_is_recognised_with_or_without_a_tag() {
        for vlan in [false, true] {
            let f = frame(vlan, b"hello");
            let u = plain_udp(&f, f.len() as u32).expect("plain");
            assert_eq!(u, PlainUdp { dst: Ipv4Addr::new(233, 1, 2, 3), dport: 26477, payload: b"hello" });
        }
    }

    #[test]
    fn what_the_shape_promises_holds_for_dissection_and_the_trailer_check() {
        use crate::dissect::{Transport, dissect};
        use crate::trailer::{Decoded, TrailerDecoder, TrailerMode};
        // Accepted frames, tagged or not, with 0 to 15 bytes after the datagram of any content (an
        // FCS, zeros, ones, bytes that begin like a trailer): dissection finds no anomaly and the
        // same payload and port; the trailer check, automatic or off, finds nothing and counts
        // exactly what `count_plain` counts.
        let payload: Vec<u8> = (0..40u8).collect();
        for vlan in [false, true] {
            for tail in 0..MIN_APPENDED {
                for fill in [0x00, 0xff, 0x5a] {
                    let mut data = frame(vlan, &payload);
                    data.extend(std::iter::repeat_n(fill, tail));
                    let f = Frame::record(&data, 1_796_049_000_000_000_000, LinkType::Ethernet);
                    let u = plain_udp(&data, data.len() as u32).expect("accepted");
                    let d = dissect(&data, LinkType::Ethernet);
                    assert_eq!(d.anomaly, None, "vlan {vlan} tail {tail}");
                    assert_eq!(d.payload(&data), u.payload);
                    assert!(matches!(d.transport, Transport::Udp { dport: 26477, .. }));
                    for mode in [TrailerMode::Auto, TrailerMode::Off] {
                        let mut decoded = TrailerDecoder::new(mode);
                        let mut counted = TrailerDecoder::new(mode);
                        assert!(decoded.takes_plain());
                        assert_eq!(decoded.decode(&f, &d), Ok(Decoded::None), "vlan {vlan} tail {tail} {mode:?}");
                        counted.count_plain(&f);
                        assert_eq!(decoded.stats(), counted.stats(), "vlan {vlan} tail {tail} {mode:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn anything_else_is_left_to_the_general_path() {
        let f = frame(false, b"hello");
        let n = f.len() as u32;
        let with = |at: usize, v: u8| {
            let mut g = f.clone();
            g[at] = v;
            g
        };
        // Cut short by the capture.
        assert_eq!(plain_udp(&f, n + 4), None);
        // Padded, or followed by an FCS: up to 15 bytes after the datagram hold no trailer.
        let mut padded = f.clone();
        padded.extend([0; 15]);
        let u = plain_udp(&padded, n + 15).expect("padding is plain");
        assert_eq!((u.dport, u.payload), (26477, &b"hello"[..]));
        // 16 bytes may be a tap trailer: the general path looks.
        padded.push(0);
        assert_eq!(plain_udp(&padded, n + 16), None);
        // IPv6 ethertype; IP options; a first fragment (MF); a later fragment; TCP; IP length one
        // byte more than the frame; UDP length one short of the datagram.
        assert_eq!(plain_udp(&with(12, 0x86), n), None);
        assert_eq!(plain_udp(&with(14, 0x46), n), None);
        assert_eq!(plain_udp(&with(20, 0x20), n), None);
        assert_eq!(plain_udp(&with(21, 0x01), n), None);
        assert_eq!(plain_udp(&with(23, 6), n), None);
        assert_eq!(plain_udp(&with(17, f[17] + 1), n), None);
        assert_eq!(plain_udp(&with(39, f[39] - 1), n), None);
        // A QinQ outer tag is not the common shape (one 802.1Q tag at most).
        let mut q = frame(true, b"hello");
        q[12] = 0x88;
        q[13] = 0xa8;
        assert_eq!(plain_udp(&q, q.len() as u32), None);
        // Too short to hold the headers.
        assert_eq!(plain_udp(&f[..30], 30), None);
    }
}
