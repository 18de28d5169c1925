//! TCP byte-stream reassembly for one direction of one connection, with no IO and bounded memory.
//!
//! Segments arrive in capture order with their sequence number, payload and a caller-chosen metadata
//! value `M` (typically the frame index and timestamp). The reassembler delivers the stream in order as
//! [`Piece::Data`] chunks, each tagged with the metadata of the frame that carried those bytes *first in
//! stream order*, so a message framer can time a message by the frame carrying its first byte and keep
//! the frame carrying its last byte. Retransmitted bytes are dropped (counted); out-of-order segments
//! wait in a bounded buffer; when that bound is exceeded, the range has been missing too long, the peer
//! acknowledged it while later bytes were captured, or the stream ends with bytes missing, the missing
//! range is delivered as a [`Piece::Hole`] (counted), tagged with the frame that showed it missing, and
//! delivery resumes after it. The framer is then responsible for resynchronising at a message boundary
//! it can prove.
//!
//! Sequence numbers wrap at 2^32; the reassembler works on 64-bit stream offsets (bytes since the first
//! byte it saw), so wrap-around is invisible to the caller.

use std::collections::BTreeMap;

/// How long a range the peer acknowledged, with bytes after it captured, waits before it is a hole:
/// twice the 1 ms by which a host may record frames out of order without a step back of its clock
/// (the frame whose time ends the wait may come early by as much as the missing segment comes late).
pub const REORDER_NS: i64 = 2_000_000;

/// The capture time of the frame a segment came in, from its metadata: a range missing behind held
/// bytes is waited for from when they came ([`Reassembler::tick`]).
pub trait Arrival {
    /// Capture time, ns.
    fn arrival_ns(&self) -> i64;
}

/// Default bound on bytes held for out-of-order segments, per stream direction.
pub const DEFAULT_MAX_PENDING: usize = 1 << 20;

/// What a held piece costs beside its bytes (its buffer and map entry), in bytes: the pieces held are
/// bounded too, so that 1-byte segments each behind a 1-byte hole cannot hold a million pieces
/// (about 130 MB) within the byte bound.
pub const PIECE_COST: usize = 64;

/// What the reassembler hands to the consumer, in stream order.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a, M> {
    /// Contiguous bytes starting at stream offset `offset`, first carried by the frame described by `meta`.
    Data {
        /// Stream offset of `data[0]`.
        offset: u64,
        /// The bytes.
        data: &'a [u8],
        /// Metadata of the frame that carried them.
        meta: M,
    },
    /// `len` bytes starting at `offset` were never seen.
    Hole {
        /// Stream offset of the first missing byte.
        offset: u64,
        /// Number of missing bytes.
        len: u64,
        /// Metadata of the frame that showed them missing, wherever the hole is declared (a timeout,
        /// an ACK, a bound, the end): the one that brought the first bytes held after them; with none
        /// held, the peer's first ACK of their last byte; for bytes a segment carried but the capture
        /// cut ([`Reassembler::not_captured`]), that segment's.
        meta: M,
    },
}

/// Counters of what reassembly saw. Every byte that is not delivered is in one of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReasmStats {
    /// Segments pushed (with or without payload).
    pub segments: u64,
    /// Payload bytes delivered in order.
    pub bytes: u64,
    /// Segments that held at least one byte already delivered or already pending (retransmissions).
    pub retransmitted_segments: u64,
    /// Payload bytes dropped because they had already been delivered or were already pending.
    pub retransmitted_bytes: u64,
    /// Segments that arrived after a segment later in the stream, bringing bytes not seen yet (late:
    /// reordered on the way). A segment after a range never seen is not one: that range is a hole.
    pub out_of_order_segments: u64,
    /// Ranges of the stream never seen.
    pub holes: u64,
    /// Bytes in those ranges.
    pub hole_bytes: u64,
}

/// Reassembles one direction of a TCP connection.
#[derive(Debug)]
pub struct Reassembler<M> {
    /// Sequence number of stream offset `next_off`; `None` until the first segment.
    next_seq: Option<u32>,
    /// Stream offset of the next byte to deliver.
    next_off: u64,
    /// Out-of-order segments by stream offset.
    pending: BTreeMap<u64, (Vec<u8>, M)>,
    pending_bytes: usize,
    max_pending: usize,
    /// Capture time since which the oldest missing range has been missing, or since the range before
    /// it was filled, whichever is later (see [`Reassembler::tick`]).
    gap_since: Option<i64>,
    /// Sequence number a FIN occupies, once one was seen (the peer's ACK of it covers no data byte).
    fin_seq: Option<u32>,
    /// Stream offset up to which the peer acknowledged the stream ([`Reassembler::acked`]): bytes
    /// before it not yet seen were sent, and become a hole once bytes after them are captured.
    acked_to: u64,
    /// The frame of the first ACK up to `acked_to`: it shows acknowledged bytes missing when none
    /// were captured after them (it acknowledged them all).
    acked_by: Option<M>,
    /// When acknowledged bytes not seen, with bytes after them captured, become a hole: [`REORDER_NS`]
    /// after that was first so (a host recording frames out of order may still bring them).
    ack_release_at: Option<i64>,
    /// Out-of-order segments stored and taken out of `pending` so far (see [`Reassembler::pending_changes`]).
    pending_in: u64,
    pending_out: u64,
    stats: ReasmStats,
}

impl<M: Copy> Default for Reassembler<M> {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_PENDING)
    }
}

impl<M: Copy> Reassembler<M> {
    /// Out-of-order pieces held at most: one per [`PIECE_COST`] bytes of `max_pending`, and at least 64.
    fn max_pieces(&self) -> usize {
        (self.max_pending / PIECE_COST).max(64)
    }

    /// A reassembler holding at most `max_pending` bytes of out-of-order data, in at most one piece per
    /// [`PIECE_COST`] of them.
    pub fn new(max_pending: usize) -> Self {
        Reassembler {
            next_seq: None,
            next_off: 0,
            pending: BTreeMap::new(),
            pending_bytes: 0,
            max_pending,
            gap_since: None,
            fin_seq: None,
            acked_to: 0,
            acked_by: None,
            ack_release_at: None,
            pending_in: 0,
            pending_out: 0,
            stats: ReasmStats::default(),
        }
    }

    /// Forgets the stream (a new connection on the same addresses and ports follows), its counters
    /// kept. Call [`Reassembler::finish`] first.
    pub fn restart(&mut self) {
        let stats = self.stats;
        *self = Self::new(self.max_pending);
        self.stats = stats;
    }

    /// Counters so far.
    pub fn stats(&self) -> &ReasmStats {
        &self.stats
    }

    /// How many out-of-order pieces were stored, and how many taken out, so far: a caller that keeps
    /// something about the pending ones (their oldest time) knows when to look again.
    pub fn pending_changes(&self) -> (u64, u64) {
        (self.pending_in, self.pending_out)
    }

    /// The metadata of the out-of-order segments waiting for the bytes before them.
    pub fn pending_metas(&self) -> impl Iterator<Item = &M> {
        self.pending.values().map(|(_, m)| m)
    }

    /// Stream offset of the next byte to be delivered.
    pub fn next_offset(&self) -> u64 {
        self.next_off
    }

    /// The TCP sequence number of stream offset `offset` (`None` before the first segment): offsets are
    /// linear from the first byte seen, so the sequence is that of the next byte shifted, modulo 2^32.
    pub fn seq_at(&self, offset: u64) -> Option<u32> {
        self.next_seq.map(|s| s.wrapping_add(offset.wrapping_sub(self.next_off) as u32))
    }

    /// Feeds one segment. `syn` is the segment's SYN flag (it occupies one sequence number).
    /// Delivers every piece that became contiguous to `sink`, in stream order.
    // `#[inline]` (and on `push_at`, `tick`): every order segment takes them, and unhinted they stopped
    // being inlined when code beside them grew (0.5 % more instructions over a whole run).
    #[inline]
    pub fn push(&mut self, seq: u32, syn: bool, payload: &[u8], meta: M, sink: &mut impl FnMut(Piece<'_, M>))
    where
        M: Arrival,
    {
        self.stats.segments += 1;
        let data_seq = if syn { seq.wrapping_add(1) } else { seq };
        let next_seq = match self.next_seq {
            Some(s) => s,
            None => {
                // The first segment fixes offset 0 (mid-stream captures start wherever they start).
                if payload.is_empty() && !syn {
                    return;
                }
                self.next_seq = Some(data_seq);
                data_seq
            }
        };
        if payload.is_empty() {
            return;
        }
        // Offset relative to the next expected byte; sequence space is circular, so the signed
        // difference is right for any segment within 2 GiB of the stream position.
        let rel = data_seq.wrapping_sub(next_seq) as i32 as i64;
        let start = self.next_off as i64 + rel;
        let end = start + payload.len() as i64;
        if end <= self.next_off as i64 {
            self.stats.retransmitted_segments += 1;
            self.stats.retransmitted_bytes += payload.len() as u64;
            return;
        }
        if start < 0 {
            // Bytes before the first one we ever saw: only the tail is new.
            let skip = (-start) as usize;
            self.stats.retransmitted_segments += 1;
            self.stats.retransmitted_bytes += skip as u64;
            return self.push_at(0, &payload[skip..], meta, sink);
        }
        self.push_at(start as u64, payload, meta, sink);
    }

    #[inline]
    fn push_at(&mut self, start: u64, payload: &[u8], meta: M, sink: &mut impl FnMut(Piece<'_, M>))
    where
        M: Arrival,
    {
        // Late: bytes not seen yet, before some that came already (a retransmission of what came, or
        // of what is held, is not).
        let late =
            self.pending.last_key_value().is_some_and(|(&o, _)| start < o) && self.brings_new(start, payload.len());
        if late {
            self.stats.out_of_order_segments += 1;
        }
        if start <= self.next_off {
            if (!self.pending.is_empty() || self.acked_to > self.next_off)
                && start + payload.len() as u64 > self.next_off
            {
                // The oldest missing range is being filled: what stays missing gets its own time (from
                // the next tick), not the filled range's.
                self.gap_since = None;
            }
            let end = start + payload.len() as u64;
            let mut dup = self.next_off.min(end) - start;
            // Bytes already pending were carried first by an earlier frame: deliver those copies, and
            // from this payload only what lies between them.
            while self.next_off < end {
                let upto = match self.pending.first_key_value() {
                    Some((&p, _)) if p < end => p,
                    _ => end,
                };
                self.deliver(&payload[(self.next_off - start) as usize..(upto - start) as usize], meta, sink);
                if upto == end {
                    break;
                }
                self.drain_pending(sink);
                dup += self.next_off.min(end) - upto;
            }
            self.drain_pending(sink);
            if dup > 0 {
                self.stats.retransmitted_segments += 1;
                self.stats.retransmitted_bytes += dup;
            }
        } else {
            self.store(start, payload, meta);
            self.give_up_while(|r| r.pending_bytes > r.max_pending || r.pending.len() > r.max_pieces(), sink);
            self.release_acked(meta.arrival_ns(), sink);
        }
    }

    /// A segment with FIN was seen: `seq_end` (its sequence number plus its payload length) is the
    /// sequence number the FIN occupies, which the peer acknowledges but which carries no byte.
    pub fn fin(&mut self, seq_end: u32) {
        self.fin_seq = Some(seq_end);
    }

    /// The peer acknowledged every byte before `ack` (seen in the frame `meta`): bytes before it that
    /// were never seen were sent and received. When bytes after them were captured, the capture missed
    /// them, unless it recorded them out of order: they become a hole [`REORDER_NS`] later (at a
    /// [`Reassembler::tick`] or a segment), and delivery resumes after them. When none were, they may
    /// still come (the ACK was captured first: two taps' files whose clocks differ, or frames recorded
    /// out of order), so the range waits until a segment after it arrives (then as above), the gap
    /// timeout ([`Reassembler::tick`]) or the end ([`Reassembler::finish`]).
    pub fn acked(&mut self, ack: u32, meta: M, sink: &mut impl FnMut(Piece<'_, M>))
    where
        M: Arrival,
    {
        let Some(next_seq) = self.next_seq else { return };
        let now = meta.arrival_ns();
        // The ACK of a FIN covers the FIN's own sequence number, not a data byte.
        let ack = if self.fin_seq.is_some_and(|f| ack == f.wrapping_add(1)) { ack.wrapping_sub(1) } else { ack };
        let rel = ack.wrapping_sub(next_seq) as i32;
        if rel <= 0 {
            return;
        }
        let to = self.next_off + rel as u64;
        if to > self.acked_to {
            self.acked_to = to;
            self.acked_by = Some(meta);
        }
        self.release_acked(now, sink);
    }

    /// Turns the acknowledged bytes not seen before captured ones into holes (see [`Reassembler::acked`]),
    /// once they have been so for [`REORDER_NS`] at capture time `now`. (Out of line: only an ACK of
    /// bytes not seen, or bytes held behind a gap, come here, and the paths of the others stay short.)
    #[inline(never)]
    fn release_acked(&mut self, now: i64, sink: &mut impl FnMut(Piece<'_, M>))
    where
        M: Arrival,
    {
        if self.next_off >= self.acked_to || self.pending.is_empty() {
            self.ack_release_at = None;
        } else if now < *self.ack_release_at.get_or_insert(now.saturating_add(REORDER_NS)) {
            return;
        } else {
            self.ack_release_at = None;
        }
        let mut released = false;
        while self.next_off < self.acked_to {
            let Some((&p, &(_, meta))) = self.pending.first_key_value() else { break };
            self.hole_to(p.min(self.acked_to), meta, sink);
            self.drain_pending(sink);
            released = true;
        }
        // What stays missing gets its own wait, not the released range's: from when the bytes held
        // behind it came (as at a timeout), or from the next tick.
        if released || (self.pending.is_empty() && self.acked_to <= self.next_off) {
            self.gap_since = match self.pending.first_key_value() {
                Some((_, (_, meta))) if released => Some(meta.arrival_ns().min(now)),
                _ => None,
            };
        }
    }

    /// The stream's bytes from the next expected one up to `seq_end` were carried but not captured (a
    /// segment the capture cut at its snap length, described by `meta`): they are delivered as a
    /// [`Piece::Hole`] now, with no wait, and counted by the caller, not in `holes`; what waited behind
    /// them follows. Bytes held from before `seq_end` end the skip there. Returns the bytes skipped.
    pub fn not_captured(&mut self, seq_end: u32, meta: M, sink: &mut impl FnMut(Piece<'_, M>)) -> u64 {
        let Some(next_seq) = self.next_seq else { return 0 };
        let rel = seq_end.wrapping_sub(next_seq) as i32;
        if rel <= 0 {
            return 0;
        }
        let mut to = self.next_off + rel as u64;
        if let Some((&p, _)) = self.pending.first_key_value() {
            to = to.min(p);
        }
        let len = to - self.next_off;
        if len > 0 {
            sink(Piece::Hole { offset: self.next_off, len, meta });
            self.advance(len);
            self.gap_since = None;
        }
        self.drain_pending(sink);
        len
    }

    /// Delivers the bytes from the next expected one up to `offset` as a hole that the frame `meta`
    /// showed (none if it is not ahead).
    fn hole_to(&mut self, offset: u64, meta: M, sink: &mut impl FnMut(Piece<'_, M>)) {
        if offset > self.next_off {
            let len = offset - self.next_off;
            sink(Piece::Hole { offset: self.next_off, len, meta });
            self.stats.holes += 1;
            self.stats.hole_bytes += len;
            self.advance(len);
        }
    }

    /// Delivers the acknowledged bytes not seen, with none held after them, as a hole that the ACK
    /// showed.
    fn acked_hole(&mut self, sink: &mut impl FnMut(Piece<'_, M>)) {
        if let Some(meta) = self.acked_by {
            self.hole_to(self.acked_to, meta, sink);
        }
    }

    /// The capture time from which [`Reassembler::tick`] with `max_age_ns` gives up on the range the
    /// stream waits for (`None`: it waits for none, as far as a tick has seen).
    pub fn gap_deadline(&self, max_age_ns: i64) -> Option<i64> {
        let gap = self.gap_since.map(|since| since.saturating_add(max_age_ns).saturating_add(1));
        match (gap, self.ack_release_at) {
            (Some(g), Some(a)) => Some(g.min(a)),
            (g, a) => g.or(a),
        }
    }

    /// Advances capture time: a missing range older than `max_age_ns` will not be filled any more (a
    /// retransmission comes within the sender's timeout, and a capture that missed a segment never sees
    /// it), so it becomes a hole and delivery resumes after it.
    /// An acknowledged range with nothing captured after it waits the same way.
    #[inline]
    pub fn tick(&mut self, now_ns: i64, max_age_ns: i64, sink: &mut impl FnMut(Piece<'_, M>))
    where
        M: Arrival,
    {
        if self.ack_release_at.is_some_and(|due| now_ns >= due) {
            self.release_acked(now_ns, sink);
        }
        let acked_gap = self.acked_to > self.next_off;
        if self.pending.is_empty() && !acked_gap {
            self.gap_since = None;
            return;
        }
        let since = *self.gap_since.get_or_insert(now_ns);
        if now_ns.saturating_sub(since) > max_age_ns {
            if self.pending.is_empty() {
                self.acked_hole(sink);
            } else {
                self.skip_to_first_pending(sink);
                self.drain_pending(sink);
            }
            self.wait_anew(now_ns);
        }
    }

    /// After a missing range was given up at `now_ns`: what stays missing has been waited for since the
    /// bytes held behind it came (a second missing range, noticed then), not from now: they wait no
    /// longer than the timeout.
    fn wait_anew(&mut self, now_ns: i64)
    where
        M: Arrival,
    {
        self.gap_since = match self.pending.first_key_value() {
            Some((_, (_, meta))) => Some(meta.arrival_ns().min(now_ns)),
            None => (self.acked_to > self.next_off).then_some(now_ns),
        };
    }

    /// What the out-of-order pieces held cost: their bytes and [`PIECE_COST`] each (the measure of a
    /// bound the caller keeps over several streams together).
    pub fn held(&self) -> usize {
        self.pending_bytes + self.pending.len() * PIECE_COST
    }

    /// Gives up at capture time `now_ns` the ranges missing before held bytes, the first first, until
    /// what is held costs `cost` less ([`Reassembler::held`]) or nothing is held: each a hole, the bytes
    /// after it delivered, as when this stream's own bound is exceeded. For a bound the caller keeps
    /// over several streams.
    pub fn give_up(&mut self, cost: usize, now_ns: i64, sink: &mut impl FnMut(Piece<'_, M>))
    where
        M: Arrival,
    {
        if self.pending.is_empty() || cost == 0 {
            return;
        }
        let keep = self.held().saturating_sub(cost);
        self.give_up_while(|r| r.held() > keep, sink);
        self.wait_anew(now_ns);
    }

    /// Gives up the ranges missing before held bytes, the first first, while `over` says so. (Out of
    /// line: segments in order never come here, and their path stays as short.)
    #[inline(never)]
    fn give_up_while(&mut self, over: impl Fn(&Self) -> bool, sink: &mut impl FnMut(Piece<'_, M>)) {
        while !self.pending.is_empty() && over(self) {
            self.skip_to_first_pending(sink);
            self.drain_pending(sink);
        }
    }

    /// Declares the stream finished: whatever is still pending is delivered after the holes before it,
    /// and acknowledged bytes never seen are a hole.
    pub fn finish(&mut self, sink: &mut impl FnMut(Piece<'_, M>)) {
        while !self.pending.is_empty() {
            self.skip_to_first_pending(sink);
            self.drain_pending(sink);
        }
        self.acked_hole(sink);
    }

    fn deliver(&mut self, data: &[u8], meta: M, sink: &mut impl FnMut(Piece<'_, M>)) {
        if data.is_empty() {
            return;
        }
        sink(Piece::Data { offset: self.next_off, data, meta });
        self.advance(data.len() as u64);
        self.stats.bytes += data.len() as u64;
    }

    fn advance(&mut self, n: u64) {
        self.next_off += n;
        self.next_seq = self.next_seq.map(|s| s.wrapping_add(n as u32));
    }

    /// Stores an out-of-order segment, keeping only bytes not already pending (first copy wins).
    fn store(&mut self, start: u64, payload: &[u8], meta: M) {
        let end = start + payload.len() as u64;
        let mut cursor = start;
        let mut pieces: Vec<(u64, u64)> = Vec::new();
        // Pending ranges overlapping [start, end), in order.
        let first = self.pending.range(..start).next_back().filter(|(o, (d, _))| **o + d.len() as u64 > start);
        let overlapping: Vec<(u64, u64)> = first
            .map(|(o, (d, _))| (*o, *o + d.len() as u64))
            .into_iter()
            .chain(self.pending.range(start..end).map(|(o, (d, _))| (*o, *o + d.len() as u64)))
            .collect();
        for (o_start, o_end) in overlapping {
            if o_start > cursor {
                pieces.push((cursor, o_start));
            }
            cursor = cursor.max(o_end);
        }
        if cursor < end {
            pieces.push((cursor, end));
        }
        let kept: u64 = pieces.iter().map(|(a, b)| b - a).sum();
        let dup = payload.len() as u64 - kept;
        if dup > 0 {
            self.stats.retransmitted_segments += 1;
            self.stats.retransmitted_bytes += dup;
        }
        for (a, b) in pieces {
            let bytes = payload[(a - start) as usize..(b - start) as usize].to_vec();
            self.pending_bytes += bytes.len();
            self.pending.insert(a, (bytes, meta));
            self.pending_in += 1;
        }
    }

    /// Whether `len` bytes at `start` hold one neither delivered nor held.
    fn brings_new(&self, start: u64, len: usize) -> bool {
        let end = start + len as u64;
        let mut at = start.max(self.next_off);
        if at >= end {
            return false;
        }
        // Held ranges do not overlap: the one holding `at`, if any, then those after it, in order.
        let holding = self.pending.range(..=at).next_back();
        for (&o, (d, _)) in holding.into_iter().chain(self.pending.range(at + 1..end)) {
            if o > at {
                return true;
            }
            at = at.max(o + d.len() as u64);
            if at >= end {
                return false;
            }
        }
        true
    }

    /// Delivers pending segments that are now contiguous.
    fn drain_pending(&mut self, sink: &mut impl FnMut(Piece<'_, M>)) {
        while let Some(entry) = self.pending.first_entry() {
            let off = *entry.key();
            if off > self.next_off {
                break;
            }
            let (bytes, meta) = entry.remove();
            self.pending_out += 1;
            self.pending_bytes -= bytes.len();
            let end = off + bytes.len() as u64;
            if end <= self.next_off {
                self.stats.retransmitted_bytes += bytes.len() as u64;
                continue;
            }
            let skip = (self.next_off - off) as usize;
            self.stats.retransmitted_bytes += skip as u64;
            self.deliver(&bytes[skip..], meta, sink);
        }
    }

    /// Gives up on the bytes before the first pending segment: they become a hole, shown missing by
    /// the frame that brought that segment.
    fn skip_to_first_pending(&mut self, sink: &mut impl FnMut(Piece<'_, M>)) {
        if let Some((&off, &(_, meta))) = self.pending.first_key_value() {
            self.hole_to(off, meta, sink);
        }
    }
}

#[cfg(test)]
mod tests;
