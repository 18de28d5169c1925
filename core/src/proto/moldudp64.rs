//! Nasdaq MoldUDP64 1.00: sequenced message packets over UDP (multicast), and a per-stream
//! sequence tracker.
//!
//! There is no spec file in `specs/`; the layout below is the one of Wireshark's
//! `packet-moldudp64.c` and of `jamisonrobey/nasdaq-moldudp64-feed-sim` (`mold_udp_64.h`):
//!
//! ```text
//! 0               10             18          20
//! | session (10 ASCII) | sequence (u64) | count (u16) | len (u16) | message | len (u16) | message | ...
//! ```
//!
//! `sequence` numbers the first message of the packet; message `i` has `sequence + i`. A count of 0
//! is a heartbeat (its sequence is the next one expected); 0xFFFF marks the end of the session (no
//! message blocks). Downstream packets carry exactly `count` blocks; a block whose length runs past
//! the end of the datagram stops the [`Messages`] iterator, which then reports the offset.
//! (Retransmission *requests* share the 20-byte header but carry no blocks: their count is the
//! number of messages asked for, so read them with the header accessors only.)

use super::{ProtoError, Result, read};
use crate::fxhash::FxHashMap;
use std::hash::Hash;

mod field {
    pub type Field = core::ops::Range<usize>;
    pub const SESSION: Field = 0..10;
    pub const SEQUENCE: Field = 10..18;
    pub const COUNT: Field = 18..20;
}

/// Length of the packet header.
pub const HEADER_LEN: usize = field::COUNT.end;
/// Message count value of an end-of-session packet.
pub const END_OF_SESSION: u16 = 0xFFFF;

/// A MoldUDP64 session name (10 bytes, normally ASCII such as `000007525B`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Session(pub [u8; 10]);

impl core::fmt::Debug for Session {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Session({self})")
    }
}

impl core::fmt::Display for Session {
    /// Printable ASCII as is, other bytes as `\xNN` (the sample file uses ten NULs).
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for &c in &self.0 {
            if c.is_ascii_graphic() || c == b' ' {
                write!(f, "{}", c as char)?;
            } else {
                write!(f, "\\x{c:02x}")?;
            }
        }
        Ok(())
    }
}

/// A view of one MoldUDP64 packet (a UDP payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }
    /// Wraps a buffer holding at least the 20-byte header.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    /// Checks the header is inside the buffer (message blocks are checked as they are read).
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        super::need("MoldUDP64 header", self.buffer.as_ref(), HEADER_LEN)
    }
    /// Session.
    #[inline]
    pub fn session(&self) -> Session {
        Session(read::bytes::<10>(self.buffer.as_ref(), field::SESSION.start))
    }
    /// Sequence number of the first message in the packet.
    #[inline]
    pub fn sequence(&self) -> u64 {
        read::u64(self.buffer.as_ref(), field::SEQUENCE.start)
    }
    /// Message count (0: heartbeat, 0xFFFF: end of session).
    #[inline]
    pub fn message_count(&self) -> u16 {
        read::u16(self.buffer.as_ref(), field::COUNT.start)
    }
    /// True for a heartbeat (count 0).
    #[inline]
    pub fn is_heartbeat(&self) -> bool {
        self.message_count() == 0
    }
    /// True for an end-of-session packet (count 0xFFFF).
    #[inline]
    pub fn is_end_of_session(&self) -> bool {
        self.message_count() == END_OF_SESSION
    }
    /// Number of message blocks the packet announces (0 for heartbeats and end of session).
    #[inline]
    pub fn messages_announced(&self) -> u16 {
        if self.is_end_of_session() { 0 } else { self.message_count() }
    }
}

impl<'a> Packet<&'a [u8]> {
    /// The bytes after the header.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer[HEADER_LEN..]
    }
    /// Iterates over the message blocks as `(sequence, message bytes)`.
    #[inline]
    pub fn messages(&self) -> Messages<'a> {
        Messages {
            buf: self.buffer,
            pos: HEADER_LEN,
            next_seq: self.sequence(),
            remaining: self.messages_announced(),
            error: None,
        }
    }
    /// The byte length of the packet as its blocks declare it (header plus `count` blocks), or the
    /// truncation error of the first block that does not fit. Used to split a raw stream.
    pub fn declared_len(&self) -> Result<usize> {
        let mut it = self.messages();
        for _ in it.by_ref() {}
        match it.error() {
            Some(e) => Err(e),
            None => Ok(it.offset()),
        }
    }
}

/// Iterator over the message blocks of a packet: yields `(sequence, message)`, where the sequence
/// is the packet's first sequence plus the block index. Stops at the announced count, or at the
/// first block that runs past the buffer; [`Messages::error`] then says where.
#[derive(Debug, Clone)]
pub struct Messages<'a> {
    buf: &'a [u8],
    pos: usize,
    next_seq: u64,
    remaining: u16,
    error: Option<ProtoError>,
}

impl<'a> Messages<'a> {
    /// The malformed block that stopped iteration, if any (offset from the start of the packet).
    #[inline]
    pub fn error(&self) -> Option<ProtoError> {
        self.error
    }
    /// Offset of the next block; after iteration ended cleanly, the end of the last block.
    #[inline]
    pub fn offset(&self) -> usize {
        self.pos
    }
    /// Bytes after the last announced block (non-zero means padding or a malformed count).
    #[inline]
    pub fn trailing(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }
    /// Blocks announced but not yet yielded.
    #[inline]
    pub fn remaining(&self) -> u16 {
        self.remaining
    }
}

impl<'a> Iterator for Messages<'a> {
    type Item = (u64, &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<(u64, &'a [u8])> {
        if self.remaining == 0 || self.error.is_some() {
            return None;
        }
        let have = self.buf.len().saturating_sub(self.pos);
        if have < 2 {
            self.error =
                Some(ProtoError::Truncated { what: "MoldUDP64 message block", offset: self.pos, need: 2, have });
            return None;
        }
        let len = usize::from(read::u16(self.buf, self.pos));
        if have < 2 + len {
            self.error =
                Some(ProtoError::Truncated { what: "MoldUDP64 message block", offset: self.pos, need: 2 + len, have });
            return None;
        }
        let msg = &self.buf[self.pos + 2..self.pos + 2 + len];
        let seq = self.next_seq;
        self.pos += 2 + len;
        self.next_seq = self.next_seq.wrapping_add(1);
        self.remaining -= 1;
        Some((seq, msg))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(usize::from(self.remaining)))
    }
}

/// Splits a raw concatenation of MoldUDP64 packets (no UDP framing, as in `mold.sample.dat`):
/// yields `Ok((offset, packet))` per complete packet, then one `Err` for a packet that does not fit
/// (its offset is in the error), then stops.
pub fn split_stream(buf: &[u8]) -> StreamPackets<'_> {
    StreamPackets { buf, pos: 0, done: false }
}

/// Iterator returned by [`split_stream`].
#[derive(Debug, Clone)]
pub struct StreamPackets<'a> {
    buf: &'a [u8],
    pos: usize,
    done: bool,
}

impl<'a> Iterator for StreamPackets<'a> {
    type Item = Result<(usize, Packet<&'a [u8]>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.buf.len() {
            return None;
        }
        let at = self.pos;
        let rest = &self.buf[at..];
        let shift = |e: ProtoError| match e {
            ProtoError::Truncated { what, offset, need, have } => {
                ProtoError::Truncated { what, offset: offset + at, need, have }
            }
            ProtoError::Malformed { what, offset, reason } => {
                ProtoError::Malformed { what, offset: offset + at, reason }
            }
        };
        let len = Packet::new_checked(rest).and_then(|p| p.declared_len());
        match len {
            Ok(len) => {
                self.pos += len;
                Some(Ok((at, Packet::new_unchecked(&rest[..len]))))
            }
            Err(e) => {
                self.done = true;
                Some(Err(shift(e)))
            }
        }
    }
}

/// What one packet did to its stream's sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqEvent {
    /// First packet seen for this (feed, session).
    First,
    /// Exactly the next expected sequence.
    InOrder,
    /// A heartbeat (count 0) at or before the expected sequence.
    Heartbeat,
    /// An end-of-session packet.
    EndOfSession,
    /// The packet starts after the expected sequence: `missing` messages were skipped.
    Gap {
        /// Sequence that was expected.
        expected: u64,
        /// Messages skipped.
        missing: u64,
    },
    /// The packet (partly) fills an earlier gap: it arrived out of order.
    Late {
        /// Messages that filled a gap.
        recovered: u64,
        /// Messages already seen.
        duplicate: u64,
    },
    /// Every message of the packet was already seen (e.g. the other A/B line, a retransmission).
    Duplicate {
        /// Messages already seen.
        messages: u64,
    },
    /// The packet starts before the expected sequence but also carries new messages.
    Overlap {
        /// Messages already seen.
        duplicate: u64,
    },
}

/// Sequence counters of one (feed, session).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeqCounters {
    /// Packets observed (all kinds).
    pub packets: u64,
    /// New messages (first copy of each sequence).
    pub messages: u64,
    /// Heartbeat packets.
    pub heartbeats: u64,
    /// End-of-session packets.
    pub end_of_session: u64,
    /// Gap events (a packet starting after the expected sequence).
    pub gaps: u64,
    /// Messages skipped by gaps, minus those later recovered: currently missing.
    pub missing: u64,
    /// Packets that arrived out of order and filled (part of) a gap.
    pub out_of_order: u64,
    /// Messages recovered by out-of-order packets.
    pub recovered: u64,
    /// Packets whose messages had all been seen already ([`SeqEvent::Duplicate`]).
    pub duplicates: u64,
    /// Messages seen more than once.
    pub duplicate_messages: u64,
    /// Gaps dropped from the bounded gap list (their messages stay counted as missing; a late copy
    /// would then be counted as a duplicate).
    pub gaps_forgotten: u64,
}

#[derive(Debug, Clone)]
struct Stream<K> {
    feed: K,
    session: Session,
    next: u64,
    /// The lowest sequence seen: those below were sent before the capture began, and a late one is
    /// new, not a duplicate.
    low: u64,
    /// Outstanding gaps, `[start, end)`, oldest first.
    gaps: Vec<(u64, u64)>,
    counters: SeqCounters,
}

/// Per-(feed, session) sequence tracking: gaps, duplicates and out-of-order packets. A pure state
/// machine: the caller feeds `(feed, session, sequence, count)` per packet in arrival order. `K`
/// names the feed (e.g. a destination address and port, or an A/B line id).
#[derive(Debug, Clone)]
pub struct SeqTracker<K> {
    streams: Vec<Stream<K>>,
    index: FxHashMap<(K, Session), usize>,
    /// The streams of the two most recently looked-up: A and B copies interleave, so both stay cached.
    last: [usize; 2],
    /// The stream of the latest packet.
    latest: usize,
    max_gaps: usize,
}

impl<K: Copy + Eq + Hash> Default for SeqTracker<K> {
    fn default() -> Self {
        Self::new(1024)
    }
}

impl<K: Copy + Eq + Hash> SeqTracker<K> {
    /// A tracker remembering at most `max_gaps` outstanding gaps per stream (bounded memory).
    pub fn new(max_gaps: usize) -> Self {
        SeqTracker {
            streams: Vec::new(),
            index: FxHashMap::default(),
            last: [usize::MAX; 2],
            latest: usize::MAX,
            max_gaps: max_gaps.max(1),
        }
    }

    /// Observes a packet header: `count` as on the wire (0 heartbeat, 0xFFFF end of session).
    #[inline]
    pub fn observe(&mut self, feed: K, session: Session, seq: u64, count: u16) -> SeqEvent {
        let hit = |i: usize| self.streams.get(i).is_some_and(|s| s.feed == feed && s.session == session);
        // The two cached streams are picked by a select, not a branch: A and B packets interleave
        // as their race goes, so "which of the two" is unpredictable; "one of the two" is not.
        let cached = [self.last[1], self.last[0]][usize::from(hit(self.last[0]))];
        let i = if hit(cached) {
            cached
        } else {
            let i = match self.index.get(&(feed, session)) {
                Some(&i) => i,
                None => {
                    let i = self.streams.len();
                    self.streams.push(Stream {
                        feed,
                        session,
                        next: 0,
                        low: 0,
                        gaps: Vec::new(),
                        counters: SeqCounters::default(),
                    });
                    self.index.insert((feed, session), i);
                    self.last = [i, self.last[0]];
                    self.latest = i;
                    return self.streams[i].first(seq, count);
                }
            };
            self.last = [i, self.last[0]];
            i
        };
        let max_gaps = self.max_gaps;
        self.latest = i;
        self.streams[i].observe(seq, count, max_gaps)
    }

    /// The stream of the latest [`SeqTracker::observe`] (for [`SeqTracker::expects`]).
    pub fn last_stream(&self) -> usize {
        self.latest
    }

    /// Whether stream `i` expects a packet starting at `seq` next.
    #[inline(always)]
    pub fn expects(&self, i: usize, seq: u64) -> bool {
        self.streams.get(i).is_some_and(|s| s.next == seq)
    }

    /// Observes a packet of `count` messages (1 to 0xFFFE) on stream `i` that
    /// [`SeqTracker::expects`] said is next: what [`SeqTracker::observe`] does with it, without the
    /// stream lookup.
    #[inline(always)]
    pub fn in_order(&mut self, i: usize, count: u16) {
        if let Some(s) = self.streams.get_mut(i) {
            let n = u64::from(count);
            s.counters.packets += 1;
            s.counters.messages += n;
            s.next = s.next.saturating_add(n);
        }
    }

    /// Counters of one stream.
    pub fn counters(&self, feed: K, session: Session) -> Option<&SeqCounters> {
        self.index.get(&(feed, session)).map(|&i| &self.streams[i].counters)
    }

    /// Whether `feed` has already brought message `seq` of `session`: at or above the lowest sequence
    /// it showed, below the next it expects, and in no gap it still tracks (a message of a forgotten
    /// gap counts as seen, as [`SeqCounters::gaps_forgotten`] says).
    pub fn has_seen(&self, feed: K, session: Session, seq: u64) -> bool {
        self.index.get(&(feed, session)).is_some_and(|&i| {
            let s = &self.streams[i];
            let at = s.gaps.partition_point(|g| g.1 <= seq);
            s.low <= seq && seq < s.next && s.gaps.get(at).is_none_or(|g| seq < g.0)
        })
    }

    /// Next expected sequence of one stream.
    pub fn next_expected(&self, feed: K, session: Session) -> Option<u64> {
        self.index.get(&(feed, session)).map(|&i| self.streams[i].next)
    }

    /// All streams in order of first appearance: `(feed, session, counters)`.
    pub fn iter(&self) -> impl Iterator<Item = (K, Session, &SeqCounters)> {
        self.streams.iter().map(|s| (s.feed, s.session, &s.counters))
    }
}

impl<K> Stream<K> {
    fn first(&mut self, seq: u64, count: u16) -> SeqEvent {
        let n = if count == END_OF_SESSION { 0 } else { u64::from(count) };
        self.count_kind(count);
        self.counters.messages += n;
        self.next = seq.saturating_add(n);
        self.low = seq;
        SeqEvent::First
    }

    fn count_kind(&mut self, count: u16) {
        self.counters.packets += 1;
        match count {
            0 => self.counters.heartbeats += 1,
            END_OF_SESSION => self.counters.end_of_session += 1,
            _ => {}
        }
    }

    /// `[lo, hi)` found missing (after the stream's end, or below its lowest sequence): a gap, in
    /// order in the list, of which the oldest is forgotten beyond `max_gaps`.
    fn open_gap(&mut self, lo: u64, hi: u64, max_gaps: usize) {
        let c = &mut self.counters;
        c.gaps += 1;
        c.missing += hi - lo;
        let at = self.gaps.partition_point(|g| g.0 < lo);
        self.gaps.insert(at, (lo, hi));
        if self.gaps.len() > max_gaps {
            self.gaps.remove(0);
            c.gaps_forgotten += 1;
        }
    }

    fn observe(&mut self, seq: u64, count: u16, max_gaps: usize) -> SeqEvent {
        self.count_kind(count);
        let n = if count == END_OF_SESSION { 0 } else { u64::from(count) };
        let end = seq.saturating_add(n);
        if seq > self.next {
            // Skipped [next, seq).
            let expected = self.next;
            self.counters.messages += n;
            self.open_gap(expected, seq, max_gaps);
            self.next = end;
            return SeqEvent::Gap { expected, missing: seq - expected };
        }
        let c = &mut self.counters;
        if n == 0 {
            return if count == END_OF_SESSION { SeqEvent::EndOfSession } else { SeqEvent::Heartbeat };
        }
        if seq == self.next {
            c.messages += n;
            self.next = end;
            return SeqEvent::InOrder;
        }
        // seq < next: [seq, min(end, next)) is old, [next, end) is new.
        let old_end = end.min(self.next);
        // Below the lowest sequence seen: sent before the capture began, new (and what lies between
        // this packet and that sequence is missing, like any gap).
        let low = self.low;
        let before = old_end.min(low).saturating_sub(seq);
        let filled = fill_gaps(&mut self.gaps, seq.max(low), old_end);
        if seq < low {
            self.low = seq;
            if end < low {
                self.open_gap(end, low, max_gaps);
            }
        }
        let c = &mut self.counters;
        let recovered = filled + before;
        let duplicate = (old_end - seq) - recovered;
        let fresh = end.saturating_sub(self.next);
        c.messages += recovered + fresh;
        c.missing -= filled.min(c.missing);
        c.recovered += recovered;
        c.duplicate_messages += duplicate;
        self.next = self.next.max(end);
        if recovered > 0 {
            c.out_of_order += 1;
            SeqEvent::Late { recovered, duplicate }
        } else if fresh > 0 {
            SeqEvent::Overlap { duplicate }
        } else {
            c.duplicates += 1;
            SeqEvent::Duplicate { messages: duplicate }
        }
    }
}

/// Removes `[lo, hi)` from the gap list; returns how many sequences it covered.
fn fill_gaps(gaps: &mut Vec<(u64, u64)>, lo: u64, hi: u64) -> u64 {
    let mut filled = 0;
    let mut i = 0;
    while i < gaps.len() {
        let (a, b) = gaps[i];
        let (s, e) = (a.max(lo), b.min(hi));
        if s >= e {
            i += 1;
            continue;
        }
        filled += e - s;
        match (a < s, e < b) {
            (false, false) => {
                gaps.remove(i);
                continue;
            }
            (true, false) => gaps[i] = (a, s),
            (false, true) => gaps[i] = (e, b),
            (true, true) => {
                gaps[i] = (a, s);
                gaps.insert(i + 1, (e, b));
                i += 1;
            }
        }
        i += 1;
    }
    filled
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testutil::B;

    /// Session "000007525B", sequence 484311999, two messages of 3 and 1 bytes.
    fn two_messages() -> Vec<u8> {
        B::new().s("000007525B", 10).u64(484_311_999).u16(2).u16(3).raw(b"abc").u16(1).raw(b"z").done()
    }

    #[test]
    fn deconstruct() {
        let b = two_messages();
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.session(), Session(*b"000007525B"));
        assert_eq!(p.session().to_string(), "000007525B");
        assert_eq!(p.sequence(), 484_311_999);
        assert_eq!(p.message_count(), 2);
        assert!(!p.is_heartbeat() && !p.is_end_of_session());
        let mut it = p.messages();
        assert_eq!(it.next(), Some((484_311_999, &b"abc"[..])));
        assert_eq!(it.next(), Some((484_312_000, &b"z"[..])));
        assert_eq!(it.next(), None);
        assert_eq!((it.error(), it.offset(), it.trailing()), (None, 28, 0)); // 20 + (2 + 3) + (2 + 1)
        assert_eq!(p.declared_len(), Ok(28));
        assert_eq!(p.payload().len(), 8);
    }

    #[test]
    fn heartbeat_and_end_of_session() {
        let hb = B::new().s("S1", 10).u64(77).u16(0).done();
        let p = Packet::new_checked(&hb[..]).unwrap();
        assert!(p.is_heartbeat());
        assert_eq!((p.sequence(), p.messages().count()), (77, 0));
        let eos = B::new().s("S1", 10).u64(78).u16(0xFFFF).done();
        let p = Packet::new_checked(&eos[..]).unwrap();
        assert!(p.is_end_of_session() && !p.is_heartbeat());
        assert_eq!((p.messages_announced(), p.messages().count(), p.declared_len()), (0, 0, Ok(20)));
    }

    #[test]
    fn malformed_block_stops_and_reports_offset() {
        // Second block says 9 bytes but only 1 follows: offset 25 (20 + 2 + 3).
        let b = B::new().s("S", 10).u64(5).u16(3).u16(3).raw(b"abc").u16(9).raw(b"z").done();
        let p = Packet::new_checked(&b[..]).unwrap();
        let mut it = p.messages();
        assert_eq!(it.next(), Some((5, &b"abc"[..])));
        assert_eq!(it.next(), None);
        assert_eq!(it.next(), None);
        assert_eq!(
            it.error(),
            Some(ProtoError::Truncated { what: "MoldUDP64 message block", offset: 25, need: 11, have: 3 })
        );
        assert_eq!(it.remaining(), 2);
        // A length prefix cut in half.
        let b2 = &b[..26];
        let mut it = Packet::new_checked(b2).unwrap().messages();
        assert_eq!(it.by_ref().count(), 1);
        assert_eq!(
            it.error(),
            Some(ProtoError::Truncated { what: "MoldUDP64 message block", offset: 25, need: 2, have: 1 })
        );
    }

    #[test]
    fn every_prefix_never_panics() {
        let b = two_messages();
        for k in 0..b.len() {
            match Packet::new_checked(&b[..k]) {
                Err(ProtoError::Truncated { need: 20, have, .. }) => assert_eq!(have, k),
                Ok(p) => {
                    assert!(k >= 20);
                    let mut it = p.messages();
                    let n = it.by_ref().count();
                    assert!(n < 2, "prefix {k} yielded {n}");
                    assert!(matches!(it.error(), Some(ProtoError::Truncated { .. })), "prefix {k}");
                }
                Err(e) => panic!("prefix {k}: {e}"),
            }
        }
    }

    #[test]
    fn split_raw_stream() {
        let mut s = two_messages();
        s.extend(B::new().s("S", 10).u64(1).u16(0).done());
        let third_at = s.len();
        s.extend(B::new().s("S", 10).u64(2).u16(1).u16(4).raw(b"ab").done());
        let got: Vec<_> = split_stream(&s).collect();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].as_ref().unwrap().0, 0);
        assert_eq!(got[1].as_ref().unwrap().0, 28);
        assert_eq!(got[1].as_ref().unwrap().1.sequence(), 1);
        assert_eq!(
            got[2],
            Err(ProtoError::Truncated { what: "MoldUDP64 message block", offset: third_at + 20, need: 6, have: 4 })
        );
    }

    fn s(x: &str) -> Session {
        let mut a = [b' '; 10];
        a[..x.len()].copy_from_slice(x.as_bytes());
        Session(a)
    }

    #[test]
    fn tracker_in_order_gap_late_duplicate() {
        let mut t = SeqTracker::<u8>::new(16);
        let a = s("A");
        assert_eq!(t.observe(0, a, 100, 2), SeqEvent::First); // 100,101
        assert_eq!(t.observe(0, a, 102, 1), SeqEvent::InOrder); // 102
        assert_eq!(t.observe(0, a, 106, 2), SeqEvent::Gap { expected: 103, missing: 3 }); // 106,107; 103..106 missing
        assert_eq!(t.observe(0, a, 104, 1), SeqEvent::Late { recovered: 1, duplicate: 0 }); // 104
        assert_eq!(t.observe(0, a, 104, 1), SeqEvent::Duplicate { messages: 1 });
        assert_eq!(t.observe(0, a, 103, 3), SeqEvent::Late { recovered: 2, duplicate: 1 }); // 103,105 filled; 104 dup
        assert_eq!(t.observe(0, a, 100, 2), SeqEvent::Duplicate { messages: 2 });
        assert_eq!(t.observe(0, a, 108, 0), SeqEvent::Heartbeat);
        assert_eq!(t.observe(0, a, 107, 3), SeqEvent::Overlap { duplicate: 1 }); // 107 dup, 108,109 new
        assert_eq!(t.next_expected(0, a), Some(110));
        assert_eq!(t.observe(0, a, 112, 0), SeqEvent::Gap { expected: 110, missing: 2 }); // heartbeat reveals a gap
        assert_eq!(t.observe(0, a, 112, 0xFFFF), SeqEvent::EndOfSession);
        let c = *t.counters(0, a).unwrap();
        assert_eq!(c.packets, 11);
        assert_eq!(c.messages, 10); // 100..=109 each counted once
        assert_eq!((c.heartbeats, c.end_of_session), (2, 1));
        assert_eq!((c.gaps, c.missing, c.out_of_order, c.recovered), (2, 2, 2, 3));
        assert_eq!((c.duplicates, c.duplicate_messages, c.gaps_forgotten), (2, 5, 0));
    }

    /// Packets below the first sequence seen were sent before the capture began: new and late, not
    /// duplicates; the range between them and the first is missing like any gap.
    #[test]
    fn tracker_below_the_first_sequence_seen() {
        let mut t = SeqTracker::<u8>::new(16);
        let a = s("A");
        assert_eq!(t.observe(0, a, 10, 2), SeqEvent::First); // 10,11
        assert_eq!(t.observe(0, a, 5, 2), SeqEvent::Late { recovered: 2, duplicate: 0 }); // 5,6; 7..10 missing
        assert_eq!(t.observe(0, a, 4, 2), SeqEvent::Late { recovered: 1, duplicate: 1 }); // 4 new, 5 again
        assert_eq!(t.observe(0, a, 7, 3), SeqEvent::Late { recovered: 3, duplicate: 0 }); // the gap filled
        assert_eq!(t.observe(0, a, 6, 1), SeqEvent::Duplicate { messages: 1 });
        assert_eq!(t.observe(0, a, 12, 1), SeqEvent::InOrder);
        let c = *t.counters(0, a).unwrap();
        assert_eq!(c.messages, 9); // 4..=12 each counted once
        assert_eq!((c.gaps, c.missing, c.out_of_order, c.recovered), (1, 0, 3, 6));
        assert_eq!((c.duplicates, c.duplicate_messages), (1, 2));
    }

    #[test]
    fn tracker_keys_feed_and_session() {
        let mut t = SeqTracker::<u8>::default();
        assert_eq!(t.observe(1, s("A"), 10, 1), SeqEvent::First);
        assert_eq!(t.observe(2, s("A"), 10, 1), SeqEvent::First); // other feed (B line)
        assert_eq!(t.observe(1, s("B"), 1, 1), SeqEvent::First); // new session
        assert_eq!(t.observe(1, s("A"), 11, 1), SeqEvent::InOrder);
        assert_eq!(t.observe(2, s("A"), 11, 1), SeqEvent::InOrder);
        assert_eq!(t.iter().count(), 3);
        assert_eq!(t.counters(1, s("A")).unwrap().messages, 2);
        assert!(t.counters(3, s("A")).is_none());
    }

    #[test]
    fn tracker_gap_list_is_bounded() {
        let mut t = SeqTracker::<u8>::new(2);
        let a = s("A");
        t.observe(0, a, 0, 1);
        t.observe(0, a, 2, 1); // gap [1,2)
        t.observe(0, a, 4, 1); // gap [3,4)
        t.observe(0, a, 6, 1); // gap [5,6), forgets [1,2)
        assert_eq!(t.observe(0, a, 1, 1), SeqEvent::Duplicate { messages: 1 });
        assert_eq!(t.observe(0, a, 5, 1), SeqEvent::Late { recovered: 1, duplicate: 0 });
        let c = t.counters(0, a).unwrap();
        assert_eq!((c.gaps, c.gaps_forgotten, c.missing), (3, 1, 2));
    }

    /// What a feed has brought: from its lowest sequence to the next it expects, less the gaps it
    /// still tracks; a late packet filling a gap makes those seen. Another feed or session: nothing.
    #[test]
    fn has_seen_is_what_the_feed_brought() {
        let a = Session(*b"AAAAAAAAAA");
        let mut t = SeqTracker::<u16>::new(16);
        t.observe(0, a, 10, 5); // 10..15
        t.observe(0, a, 20, 2); // gap 15..20, then 20..22
        let seen = |t: &SeqTracker<u16>| (0..25).filter(|&q| t.has_seen(0, a, q)).collect::<Vec<u64>>();
        assert_eq!(seen(&t), [10, 11, 12, 13, 14, 20, 21]);
        t.observe(0, a, 16, 2); // fills 16..18
        assert_eq!(seen(&t), [10, 11, 12, 13, 14, 16, 17, 20, 21]);
        t.observe(0, a, 7, 1); // below the lowest: 7 new, 8..10 missing
        assert_eq!(seen(&t), [7, 10, 11, 12, 13, 14, 16, 17, 20, 21]);
        assert!(!t.has_seen(1, a, 12) && !t.has_seen(0, Session(*b"BBBBBBBBBB"), 12));
    }
}
