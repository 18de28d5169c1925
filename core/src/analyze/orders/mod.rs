//! One direction of an order-entry TCP connection: reassembly, SoupBinTCP framing, OUCH decoding.
//!
//! Each OUCH message comes out with the frame that carried its first byte (its wire time, STAC's
//! start-of-frame) and the frame that carried its last byte. After a hole in the stream the framer
//! cannot know where the next packet starts, so it waits for a boundary it can prove: the start of a
//! later segment whose bytes are a whole chain of well-formed SoupBinTCP packets, or begin with four
//! ([`super::flows::starts_soupbin`]).

use super::flows::OrderProto;
use crate::proto::soupbin::{Framer, RETAINED};
use crate::proto::{OrderDir, OrderSummary, ouch5};
use crate::reasm::{Piece, Reassembler};
use std::collections::VecDeque;

mod framing;
mod proof;
use framing::{Framing, piece_at};

/// How long a missing range may wait for a retransmission before it is a hole (TCP retransmits within
/// its timeout, 200 ms at least on Linux; a segment the capture missed never comes back). An ACK from the
/// other direction beyond the range ends the wait once bytes after the range were captured.
pub(super) const GAP_TIMEOUT_NS: i64 = 1_000_000_000;

/// A frame, as far as timing is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FrameRef {
    /// Index of the frame in the analysed stream.
    pub index: u64,
    /// Its timestamp, ns.
    pub time_ns: i64,
}

impl crate::reasm::Arrival for FrameRef {
    fn arrival_ns(&self) -> i64 {
        self.time_ns
    }
}

/// An order-entry message with its wire times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderMsg {
    /// What the message says.
    pub summary: OrderSummary,
    /// The frame carrying its first byte (the SoupBinTCP length field).
    pub first: FrameRef,
    /// The frame carrying its last byte.
    pub last: FrameRef,
    /// Stream offset one past its last byte (see [`OrderStream::seq_at`] for its TCP sequence).
    pub end: u64,
}

/// Counters of one stream direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct StreamCounters {
    /// SoupBinTCP packets framed.
    pub soup_packets: u64,
    /// OUCH messages decoded.
    pub ouch_messages: u64,
    /// OUCH messages of a type the decoder does not know.
    pub ouch_unknown: u64,
    /// OUCH messages shorter than their type requires (or otherwise malformed).
    pub ouch_malformed: u64,
    /// SoupBinTCP packet headers that cannot be right (a length of 0, a type byte SoupBinTCP lacks, a
    /// length its type contradicts where that is proven): each a loss of sync, resumed at a proven
    /// boundary.
    pub framing_errors: u64,
    /// Bytes not framed: skipped while waiting for a provable packet boundary (after a hole, a start
    /// without SYN, a damaged header), the damaged packets' own included.
    pub resync_skipped_bytes: u64,
    /// Bytes of an incomplete packet at the end of the stream.
    pub truncated_tail_bytes: u64,
    /// Index of the frame where the first anomaly was found (a hole, a framing error, a malformed
    /// message, a packet cut at the end), if any.
    pub first_bad_frame: Option<u64>,
    /// SoupBinTCP packets of a type only the other end sends (Sequenced Data, Login Accepted, server
    /// heartbeats... toward the exchange): the session's exchange end may be the other one.
    pub other_ends_packets: u64,
    /// Malformed OUCH messages that are well-formed in the other version (4.2 for 5.0, or back): the
    /// session's version may be the other one.
    pub other_version_fits: u64,
    /// Segments the capture cut (its snap length: fewer payload bytes captured than they carried). In
    /// the JSON only when not 0.
    #[serde(skip_serializing_if = "super::counters::is_zero")]
    pub segments_captured_short: u64,
    /// Their bytes not captured that the stream skipped as such (not holes: they were seen, and cut),
    /// resynchronising after them as after a hole.
    #[serde(skip_serializing_if = "super::counters::is_zero")]
    pub bytes_not_captured: u64,
}

/// One direction of one connection.
#[derive(Debug)]
pub struct OrderStream {
    reasm: Reassembler<FrameRef>,
    fr: Framing,
    /// The earliest capture time among the reassembler's pending segments, and the pending changes
    /// it was worked out at ([`Reassembler::pending_changes`]): a scan of them per segment was
    /// quadratic while a long gap filled the buffer.
    oldest_pending: (Option<i64>, (u64, u64)),
    /// The bytes of the latest segment captured short that the stream has not reached yet: their
    /// sequence and length, and the segment's frame ([`OrderStream::segment_cut`]).
    cut_ahead: Option<(u32, u32, FrameRef)>,
    /// When the stream is next looked at for a room to give back ([`OrderStream::look_at_room`]), and
    /// its stream offset by then if no byte came after: set by a segment with payload while unset (the
    /// stream's first, or the first since it was looked at and found quiet), moved on by each look
    /// that finds bytes came meanwhile. Unset, the stream is not looked at. A look per gap timeout, not
    /// a time kept per segment: a busy stream's path stays as short.
    room_check: Option<(i64, u64)>,
    /// The sequence number this direction's FIN occupies, once one was seen: reached, the direction
    /// has ended ([`OrderStream::fin`]).
    fin_seq: Option<u32>,
}

/// What a direction's framing buffers may take (`Framing::cost`) without the analysis keeping
/// count ([`OrderStream::framing_held`]): the framer's room kept for packets split across segments
/// ([`RETAINED`], 16 KiB: the bytes held joined with a whole segment, a jumbo frame's), and 1 KiB for
/// the pieces. A busy session keeps its room (with a 1,448-byte MSS under 3 KiB: a packet's first
/// bytes joined with a segment, doubled at most) and stays within it, so its segments neither allocate
/// nor move the direction in the analysis's count, and its path stays as short. (At 1 KiB, below that
/// room, every segment ending inside a packet was counted, and the next one ending on a boundary freed
/// the room, to be allocated again.) An empty framer keeps up to this, not only [`RETAINED`]: room left
/// by a hole's reset up to the slack, less the pieces', is not cut. 16,384 connections so, both ways,
/// keep 544 MiB at most uncounted, while live: a direction that ended (its FIN reached, a new
/// connection on its ports, the capture's end: [`OrderStream::finish`]) or took no byte for a gap
/// timeout holding none (found within two: [`OrderStream::expire`]) gives it all back, so a client
/// reconnecting again and again keeps one connection's. One quiet with a packet begun keeps it until
/// more bytes or its end.
pub const FRAMING_SLACK: usize = RETAINED + 1024;

impl OrderStream {
    /// A stream in direction `dir` (inbound: client to exchange) carrying `proto`, or, when `None`,
    /// the version its first Enter Order shows.
    pub fn new(dir: OrderDir, proto: Option<OrderProto>) -> Self {
        OrderStream {
            oldest_pending: (None, (0, 0)),
            cut_ahead: None,
            room_check: None,
            fin_seq: None,
            reasm: Reassembler::default(),
            fr: Framing {
                dir,
                proto,
                framer: Framer::default(),
                pieces: VecDeque::new(),
                next_packet: 0,
                resync: false,
                counters: StreamCounters::default(),
                login_user: None,
                window: Vec::new(),
                window_at: 0,
                open_at: Vec::new(),
                scanned_to: 0,
                held_changed: false,
            },
        }
    }

    /// The username of the last SoupBinTCP Login Request this stream carried, if any.
    pub fn login_user(&self) -> Option<[u8; 6]> {
        self.fr.login_user
    }

    /// Counters so far.
    pub fn counters(&self) -> &StreamCounters {
        &self.fr.counters
    }

    /// Reassembly counters so far.
    pub fn reasm(&self) -> &crate::reasm::ReasmStats {
        self.reasm.stats()
    }

    /// The TCP sequence number of stream offset `offset` (`None` before the first segment).
    pub fn seq_at(&self, offset: u64) -> Option<u32> {
        self.reasm.seq_at(offset)
    }

    /// Feeds one TCP segment of this direction (captured whole: see [`OrderStream::segment_cut`]).
    // `#[inline]` (and on `acked`): every order segment takes them (see `Reassembler::push`).
    #[inline]
    pub fn segment(&mut self, seq: u32, syn: bool, payload: &[u8], frame: FrameRef, out: &mut impl FnMut(OrderMsg)) {
        if self.room_check.is_none() {
            self.unchecked(syn, payload.len(), frame.time_ns);
        }
        let fr = &mut self.fr;
        let mut sink = |p: Piece<'_, FrameRef>| fr.piece(p, out);
        self.reasm.push(seq, syn, payload, frame, &mut sink);
        self.reasm.tick(frame.time_ns, GAP_TIMEOUT_NS, &mut sink);
        self.note_pending(frame.time_ns);
    }

    /// Whether a segment must go through [`OrderStream::segment_cut`]: it was captured short
    /// (`not_captured` > 0), or the bytes of one captured short earlier wait for the stream to reach
    /// them.
    #[inline(always)]
    pub fn takes_cut(&self, not_captured: u32) -> bool {
        not_captured > 0 || self.cut_ahead.is_some()
    }

    /// [`OrderStream::segment`] for a segment whose last `not_captured` payload bytes the capture cut
    /// (its snap length), or while one cut earlier is ahead of the stream ([`OrderStream::takes_cut`]).
    /// The bytes cut are counted apart from holes: once the stream reaches them they are skipped with
    /// no wait, and the framer resynchronises after them as after a hole (they are missing all the
    /// same). A cut ahead of the stream (its captured bytes held behind a range still missing) is
    /// skipped at the direction's first segment after the stream reached it (the latest such cut only;
    /// one the stream passes meanwhile, by a timeout, is a hole).
    #[cold]
    #[inline(never)]
    pub fn segment_cut(
        &mut self,
        seq: u32,
        syn: bool,
        payload: &[u8],
        not_captured: u32,
        frame: FrameRef,
        out: &mut impl FnMut(OrderMsg),
    ) {
        if self.room_check.is_none() {
            self.unchecked(syn, payload.len(), frame.time_ns);
        }
        let fr = &mut self.fr;
        let mut sink = |p: Piece<'_, FrameRef>| fr.piece(p, out);
        self.reasm.push(seq, syn, payload, frame, &mut sink);
        if not_captured > 0 {
            let from = seq.wrapping_add(u32::from(syn)).wrapping_add(payload.len() as u32);
            self.cut_ahead = Some((from, not_captured, frame));
        }
        let skipped = skip_cut(&mut self.reasm, &mut self.cut_ahead, &mut sink);
        self.reasm.tick(frame.time_ns, GAP_TIMEOUT_NS, &mut sink);
        self.fr.counters.segments_captured_short += u64::from(not_captured > 0);
        self.fr.counters.bytes_not_captured += skipped;
        self.note_pending(frame.time_ns);
    }

    /// A segment while [`OrderStream::room_check`] is unset (out of line: a busy stream's are not): the
    /// stream's first, whose start is a packet boundary only after a SYN (a capture may begin in the
    /// middle of a packet; otherwise the framer waits for one it can prove), or the first since the
    /// stream was found quiet. One with payload sets the look a gap timeout after `t`, expecting the
    /// stream offset past its bytes (one out of order or retransmitted only makes the first look find
    /// the stream moved, and look again a timeout later).
    #[inline(never)]
    fn unchecked(&mut self, syn: bool, len: usize, t: i64) {
        if self.reasm.seq_at(0).is_none() {
            self.fr.resync = !syn;
        }
        if len > 0 {
            let at = self.reasm.next_offset() + len as u64;
            self.room_check = Some((t.saturating_add(GAP_TIMEOUT_NS).saturating_add(1), at));
        }
    }

    /// The capture time from which [`OrderStream::expire`] has something to do: give up the range
    /// this stream waits for (a segment the capture missed) as a hole, or look whether it ended or
    /// went quiet (a gap timeout after its first segment with payload, then after each look that found
    /// bytes came meanwhile); `None` when neither.
    pub fn gap_deadline(&self) -> Option<i64> {
        let gap = self.reasm.gap_deadline(GAP_TIMEOUT_NS);
        match (gap, self.room_check) {
            (Some(g), Some((r, _))) => Some(g.min(r)),
            (g, r) => g.or(r.map(|r| r.0)),
        }
    }

    /// Capture time has reached `frame`'s (a frame of any flow): a range waited for longer than the
    /// gap timeout is a hole, and what waited behind it is read, without waiting for a segment of
    /// this stream (which may not come for long, or ever). A direction whose FIN the bytes before it
    /// have now reached ends ([`OrderStream::finish`]); one that took no byte since it was last looked
    /// at, a gap timeout before, and holds none gives back its framing buffers, the framer's room
    /// included.
    pub fn expire(&mut self, frame: FrameRef, out: &mut impl FnMut(OrderMsg)) {
        let fr = &mut self.fr;
        self.reasm.tick(frame.time_ns, GAP_TIMEOUT_NS, &mut |p| fr.piece(p, out));
        self.note_pending(frame.time_ns);
        if self.room_check.is_some_and(|(due, _)| frame.time_ns >= due) {
            self.look_at_room(frame, out);
        }
    }

    /// The look [`OrderStream::room_check`] set is due at `frame`. A direction that reached its FIN
    /// (the bytes before it came after it) has ended ([`OrderStream::finish`]). One that took no byte
    /// since the look was set (a gap timeout at least) and holds none (a packet begun, a window, bytes
    /// behind a gap) gives back its framing buffers, the framer's room included: a connection gone
    /// quiet or aborted keeps nothing, and its next segment allocates anew. Bytes came meanwhile: a
    /// look a timeout later. Quiet with a packet begun: not looked at again until more bytes come (the
    /// budget counts what it holds beyond [`FRAMING_SLACK`]); behind a gap, a timeout later.
    #[cold]
    #[inline(never)]
    fn look_at_room(&mut self, frame: FrameRef, out: &mut impl FnMut(OrderMsg)) {
        if self.reached_fin() {
            self.finish(frame.index, out);
            return;
        }
        let at = self.reasm.next_offset();
        let quiet = self.room_check.is_some_and(|(_, was)| was == at);
        let fr = &mut self.fr;
        self.room_check = if !quiet || self.reasm.held() > 0 {
            Some((frame.time_ns.saturating_add(GAP_TIMEOUT_NS).saturating_add(1), at))
        } else {
            if fr.framer.pending() == 0 && fr.window.is_empty() {
                fr.release(0);
                fr.held_changed = true;
            }
            None
        };
    }

    /// Whether this direction has delivered every byte before its FIN (none held after a gap).
    fn reached_fin(&self) -> bool {
        self.fin_seq.is_some_and(|f| self.reasm.seq_at(self.reasm.next_offset()) == Some(f)) && self.reasm.held() == 0
    }

    /// The earliest capture time of a byte this stream holds that is not yet part of a message it gave
    /// out: a packet begun but not ended, or segments waiting behind a gap. A message still to come
    /// starts no earlier (or in a frame not yet captured). `None` when it holds none.
    pub fn oldest_held(&self) -> Option<i64> {
        let pending = self.oldest_pending.0;
        let begun = self.fr.held_since();
        match (pending, begun) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Updates [`OrderStream::oldest_pending`] after the reassembler took a frame at `t` (a segment,
    /// an ACK, the end): pieces only stored since are this frame's; after any taken out, a scan.
    // `#[inline]` (and on `Framing::data`): every order segment takes them (see `Reassembler::push`).
    #[inline]
    fn note_pending(&mut self, t: i64) {
        let changes = self.reasm.pending_changes();
        let (oldest, seen) = self.oldest_pending;
        if changes == seen {
            return;
        }
        let now = if changes.1 == seen.1 {
            Some(oldest.map_or(t, |o| o.min(t)))
        } else {
            self.reasm.pending_metas().map(|m| m.time_ns).min()
        };
        self.oldest_pending = (now, changes);
        self.fr.held_changed = true;
    }

    /// Whether what the reassembler holds changed since [`OrderStream::take_held_change`] last said so
    /// ([`OrderStream::held`]), or the framing holds more than [`FRAMING_SLACK`]
    /// ([`OrderStream::framing_held`]).
    pub fn held_changed(&self) -> bool {
        self.fr.held_changed
    }

    /// [`OrderStream::held_changed`], which it then clears.
    pub fn take_held_change(&mut self) -> bool {
        std::mem::take(&mut self.fr.held_changed)
    }

    /// The out-of-order bytes the reassembler holds: the capture time of the earliest piece and what
    /// they cost ([`Reassembler::held`]); `None` when it holds none.
    pub fn held(&self) -> Option<(i64, usize)> {
        self.oldest_pending.0.map(|t| (t, self.reasm.held()))
    }

    /// Gives up the ranges missing before held bytes, the first first, until what is held costs `cost`
    /// less or nothing is ([`Reassembler::give_up`]), at `frame`: each a hole, what follows read. The
    /// holes and hole bytes it made.
    pub fn give_up(&mut self, cost: usize, frame: FrameRef, out: &mut impl FnMut(OrderMsg)) -> (u64, u64) {
        let before = *self.reasm.stats();
        let fr = &mut self.fr;
        self.reasm.give_up(cost, frame.time_ns, &mut |p| fr.piece(p, out));
        self.note_pending(frame.time_ns);
        let after = self.reasm.stats();
        (after.holes - before.holes, after.hole_bytes - before.hole_bytes)
    }

    /// What the framing holds (a packet begun, the window searched for a boundary while
    /// resynchronising): the capture time of its first byte and what the buffers take
    /// (`Framing::cost`), when more than [`FRAMING_SLACK`]; `None` otherwise. Buffers so large left
    /// with no byte in them are freed, but for the framer's [`RETAINED`] room, within the slack (all
    /// of it once the direction ends or goes quiet: [`OrderStream::finish`], [`OrderStream::expire`]). While
    /// `Some`, [`OrderStream::held_changed`] stays set: the next segment, which may end the packet
    /// without touching the buffers, is looked at too.
    pub fn framing_held(&mut self) -> Option<(i64, usize)> {
        let fr = &mut self.fr;
        let mut cost = fr.cost();
        if cost > FRAMING_SLACK && fr.framer.pending() == 0 && fr.window.is_empty() {
            fr.release(RETAINED);
            cost = fr.cost();
        }
        if cost <= FRAMING_SLACK {
            return None;
        }
        fr.held_changed = true;
        // (Bytes held always have their piece: none would be the oldest, given up first.)
        Some((fr.held_since().unwrap_or(i64::MIN), cost))
    }

    /// Gives up what the framing holds at `frame`, as a hole there would: what it proves is framed
    /// as at the stream's end, the rest (a packet begun, the window) is skipped, and the stream
    /// resynchronises on the bytes after; the buffers are freed. The anomaly is the frame of the first
    /// byte given up (where the packet never ended begins), not `frame`, which may be any connection's.
    /// Returns the bytes skipped (among [`StreamCounters::resync_skipped_bytes`]).
    pub fn give_up_framing(&mut self, frame: FrameRef, out: &mut impl FnMut(OrderMsg)) -> u64 {
        let fr = &mut self.fr;
        let before = fr.counters.resync_skipped_bytes;
        let at = fr.held_frame().map_or(frame.index, |f| f.index);
        fr.hole(at, out);
        fr.release(0);
        fr.held_changed = true;
        fr.counters.resync_skipped_bytes - before
    }

    /// What the framing buffers take (`Framing::cost`), counted or not: the analysis's tests add up
    /// what all streams keep.
    #[cfg(test)]
    pub(crate) fn framing_cost(&self) -> usize {
        self.fr.cost()
    }

    /// The OUCH version, once known (see [`OrderStream::new`]).
    pub fn proto(&self) -> Option<OrderProto> {
        self.fr.proto
    }

    /// The version is known (shown by the other direction).
    pub fn set_proto(&mut self, proto: OrderProto) {
        self.fr.proto = Some(proto);
    }

    /// Whether `seq` lies far from the stream (more than 16 MiB either way from the next byte it
    /// expects; never before the first segment): not a retransmission nor a segment after a loss, but
    /// another connection's (its first sequence is random over 2^32).
    pub fn far_from(&self, seq: u32) -> bool {
        self.reasm
            .seq_at(self.reasm.next_offset())
            .is_some_and(|s| (seq.wrapping_sub(s) as i32).unsigned_abs() > 1 << 24)
    }

    /// Whether a SYN at `seq` opens another connection than the one this stream carries (a client
    /// reconnecting from the same port), not a retransmission of the stream's own SYN.
    pub fn is_new_connection(&self, seq: u32) -> bool {
        self.reasm.seq_at(0).is_some_and(|s| s != seq.wrapping_add(1))
    }

    /// Ends the stream's connection as at the capture's end ([`OrderStream::finish`]) and starts
    /// over for the next one, its counters kept.
    pub fn restart(&mut self, last_frame: u64, out: &mut impl FnMut(OrderMsg)) {
        self.finish(last_frame, out);
        self.reasm.restart();
        self.oldest_pending = (None, (0, 0));
        self.cut_ahead = None;
        self.fin_seq = None;
        let fr = &mut self.fr;
        fr.framer.reset();
        fr.pieces.clear();
        fr.next_packet = 0;
        fr.resync = false;
        fr.set_window(Vec::new(), 0);
    }

    /// This direction sent a FIN after `payload_len` bytes at `seq` (seen in `frame`). Once every
    /// byte before it has come (now, or after a gap, found by [`OrderStream::expire`]), the direction
    /// has ended: what is held is framed as at the capture's end, and the buffers are given back
    /// ([`OrderStream::finish`]); nothing more comes.
    pub fn fin(&mut self, seq: u32, payload_len: usize, frame: FrameRef, out: &mut impl FnMut(OrderMsg)) {
        let end = seq.wrapping_add(payload_len as u32);
        self.reasm.fin(end);
        self.fin_seq = Some(end);
        if self.reached_fin() {
            self.finish(frame.index, out);
        }
    }

    /// The other direction acknowledged every byte of this one before `ack` (seen in `frame`): bytes
    /// before it that the capture missed become a hole once bytes after them were captured
    /// ([`crate::reasm::Reassembler::acked`]).
    #[inline]
    pub fn acked(&mut self, ack: u32, frame: FrameRef, out: &mut impl FnMut(OrderMsg)) {
        let fr = &mut self.fr;
        let mut sink = |p: Piece<'_, FrameRef>| fr.piece(p, out);
        self.reasm.acked(ack, frame, &mut sink);
        // A range released leaves what is still missing waiting from now: the clock starts here, not
        // at this stream's next segment, which may not come.
        self.reasm.tick(frame.time_ns, GAP_TIMEOUT_NS, &mut sink);
        self.note_pending(frame.time_ns);
    }

    /// Declares the end of the stream (capture end, FIN reached, a new connection on the same ports):
    /// pending out-of-order data is delivered after the holes before it; an incomplete packet left
    /// over is counted. The framing buffers are given back, the framer's room included: an ended
    /// direction keeps nothing.
    pub fn finish(&mut self, last_frame: u64, out: &mut impl FnMut(OrderMsg)) {
        let fr = &mut self.fr;
        self.reasm.finish(&mut |p| fr.piece(p, out));
        // What waits for more bytes is judged as at the end: none will come.
        self.fr.flush(FrameRef { index: last_frame, time_ns: i64::MAX }, out);
        self.note_pending(i64::MAX);
        let tail = self.fr.framer.pending() as u64;
        if tail > 0 {
            self.fr.counters.truncated_tail_bytes += tail;
            // The offending frame is the one holding the cut packet's length, where it starts.
            let start = self.fr.next_packet;
            let at = piece_at(&self.fr.pieces, start);
            self.fr.bad(at.map_or(last_frame, |f| f.index));
            self.fr.framer.reset();
            // (Bytes after, should any come, start a packet: a FIN's direction may carry none.)
            self.fr.next_packet += tail;
        }
        self.fr.pieces.clear();
        self.fr.release(0);
        self.fr.held_changed = true;
        self.room_check = None;
    }
}

/// Skips the bytes of the latest segment captured short (`cut`, [`OrderStream::segment_cut`]) once the
/// stream has reached them, delivering them to `sink` as a hole that segment's frame showed; forgets
/// them once it has passed them (a retransmission brought them). Returns the bytes skipped.
fn skip_cut(
    reasm: &mut Reassembler<FrameRef>,
    cut: &mut Option<(u32, u32, FrameRef)>,
    sink: &mut impl FnMut(Piece<'_, FrameRef>),
) -> u64 {
    let Some((seq, len, frame)) = *cut else { return 0 };
    let Some(at) = reasm.seq_at(reasm.next_offset()) else { return 0 };
    let into = at.wrapping_sub(seq) as i32;
    if into < 0 {
        return 0;
    }
    *cut = None;
    if into.unsigned_abs() >= len {
        return 0;
    }
    reasm.not_captured(seq.wrapping_add(len), frame, sink)
}

/// The OUCH version an Enter Order `msg` shows by its length: 4.2's is 49 bytes, 5.0's 47 plus its
/// appendage. `None` for any other message.
pub(super) fn ouch_version(msg: &[u8]) -> Option<OrderProto> {
    if msg.first() != Some(&b'O') {
        return None;
    }
    // A 49-byte 4.2 order whose MinQty ends in 0x0002 has 5.0's length for a 2-byte appendage: the
    // appendage must also hold well-formed TagValues (4.2's last two bytes, Cross Type and Customer
    // Type, are letters: a TagValue that long runs past the message).
    if let Ok(o) = ouch5::EnterOrder::new_checked(msg)
        && o.spec_len() == msg.len()
    {
        let mut options = o.options();
        if options.by_ref().all(|tv| tv.size_ok()) && options.error().is_none() {
            return Some(OrderProto::Ouch50);
        }
    }
    (msg.len() == 49).then_some(OrderProto::Ouch42)
}

#[cfg(test)]
mod tests {
    use super::proof::{exact_chain, judge};
    use super::*;
    use crate::proto::soupbin::Judgement;

    /// One SoupBinTCP Unsequenced Data packet of `n` payload bytes (`n + 3` in all).
    fn packet(n: usize) -> Vec<u8> {
        let mut p = ((n + 1) as u16).to_be_bytes().to_vec();
        p.push(b'U');
        p.extend(std::iter::repeat_n(b'x', n));
        p
    }

    /// The earliest byte held: segments behind a gap (by the time of the earliest, whatever their
    /// order), then, once the gap fills, none; a packet begun is held by its first byte's frame.
    #[test]
    fn the_oldest_held_byte_follows_stores_and_drains() {
        let mut s = OrderStream::new(OrderDir::Inbound, Some(OrderProto::Ouch50));
        let (a, b, c) = (packet(10), packet(10), packet(10));
        let f = |index: u64, time_ns: i64| FrameRef { index, time_ns };
        let mut out = |_m: OrderMsg| {};
        s.segment(0, true, &[], f(0, 0), &mut out);
        assert_eq!(s.oldest_held(), None);
        // b and c arrive before a, c first.
        s.segment(27, false, &c, f(1, 30), &mut out);
        s.segment(14, false, &b, f(2, 40), &mut out);
        assert_eq!(s.oldest_held(), Some(30));
        // a fills the gap: everything is delivered.
        s.segment(1, false, &a, f(3, 50), &mut out);
        assert_eq!(s.oldest_held(), None);
        // Half a packet: held from its frame.
        s.segment(40, false, &a[..5], f(4, 60), &mut out);
        assert_eq!(s.oldest_held(), Some(60));
        s.segment(45, false, &a[5..], f(5, 70), &mut out);
        assert_eq!(s.oldest_held(), None);
    }

    /// A packet begun, then a hole: the framer's room is no longer counted once nothing is held, and is
    /// cut to `RETAINED`, not freed (a busy stream's next split packet needs it). 30,000 bytes of a
    /// 40,002-byte Debug packet take 30,000 of room and 4 pieces of 32; its other 10,002 bytes are
    /// missing, and 4 heartbeats after them, a proven boundary, are framed once the gap timeout makes
    /// them a hole (the 30,000 bytes held skipped). The room and the pieces' buffer stay, 30,128 bytes.
    #[test]
    fn a_hole_leaves_the_framer_its_retained_room() {
        let mut s = OrderStream::new(OrderDir::Inbound, Some(OrderProto::Ouch50));
        let f = |index: u64, time_ns: i64| FrameRef { index, time_ns };
        let mut out = |_m: OrderMsg| {};
        let mut debug = 40_000u16.to_be_bytes().to_vec();
        debug.push(b'+');
        debug.resize(40_002, b'x');
        s.segment(0, true, &[], f(0, 0), &mut out);
        s.segment(1, false, &debug[..30_000], f(1, 1), &mut out);
        assert_eq!(s.framing_held(), Some((1, 30_128)));
        s.segment(40_003, false, &[0, 1, b'R'].repeat(4), f(2, 2), &mut out);
        s.expire(f(3, 2 + GAP_TIMEOUT_NS + 1), &mut out);
        let c = s.counters();
        assert_eq!((s.reasm().holes, c.soup_packets, c.resync_skipped_bytes), (1, 4, 30_000));
        assert_eq!((s.fr.framer.pending(), s.fr.cost()), (0, 30_128));
        assert_eq!(s.framing_held(), None);
        assert_eq!(s.fr.cost(), RETAINED);
    }

    /// Heartbeats (3 bytes each) in two GRO-merged segments of 29,999 and 30,001 bytes, at stream
    /// offsets 0 and 29,999: the first ends 2 bytes into a heartbeat, joined with the second. The
    /// buffers then, by hand: the 2 bytes held took a Vec's least room (8), grown for them joined
    /// with the second segment (30,003), cut to `RETAINED` (16,384) once all was framed; the pieces'
    /// buffer its least, 4 of 32: 16,512, within `FRAMING_SLACK`, not counted.
    fn two_merged_segments() -> (Vec<u8>, Vec<u8>) {
        let beats = [0u8, 1, b'R'].repeat(20_000);
        (beats[..29_999].to_vec(), beats[29_999..].to_vec())
    }

    /// A direction that ended gives back its framing buffers, the framer's room included. Each stream:
    /// a SYN (frame 0), then `two_merged_segments` (16,512 bytes of buffers, uncounted). A FIN right
    /// after: 0, the 20,000 heartbeats framed. A FIN after the first segment only: the 2 bytes of the
    /// heartbeat it cut are the tail, counted at the FIN (the anomaly frame 1, where the heartbeat
    /// begins), and 0 kept. A FIN whose segment (the second) comes before the first: the direction
    /// ends when its look is due (a gap timeout after frame 1), the bytes before the FIN all come.
    /// (Before, each kept 16,512 bytes, or 8 and 128 for the cut one, until the capture's end.)
    #[test]
    fn an_ended_directions_room_is_given_back() {
        let f = |index: u64, time_ns: i64| FrameRef { index, time_ns };
        let mut out = |_m: OrderMsg| {};
        let (a, b) = two_merged_segments();
        let start = || {
            let mut s = OrderStream::new(OrderDir::Inbound, Some(OrderProto::Ouch50));
            s.segment(0, true, &[], f(0, 0), &mut |_| {});
            s
        };
        let mut s = start();
        s.segment(1, false, &a, f(1, 1), &mut out);
        s.segment(30_000, false, &b, f(2, 2), &mut out);
        assert_eq!((s.fr.cost(), s.framing_held()), (16_512, None));
        s.fin(30_000, 30_001, f(2, 2), &mut out);
        let c = *s.counters();
        assert_eq!((s.fr.cost(), c.soup_packets, c.truncated_tail_bytes, c.first_bad_frame), (0, 20_000, 0, None));

        let mut s = start();
        s.segment(1, false, &a, f(1, 1), &mut out);
        assert_eq!((s.fr.framer.pending(), s.fr.cost()), (2, 8 + 128));
        s.fin(30_000, 0, f(2, 2), &mut out);
        let c = *s.counters();
        assert_eq!((s.fr.cost(), c.soup_packets, c.truncated_tail_bytes, c.first_bad_frame), (0, 9_999, 2, Some(1)));

        let mut s = start();
        s.segment(30_000, false, &b, f(1, 1), &mut out);
        s.fin(30_000, 30_001, f(1, 1), &mut out);
        s.segment(1, false, &a, f(2, 2), &mut out);
        assert_eq!((s.fr.cost(), s.gap_deadline()), (16_512, Some(1 + GAP_TIMEOUT_NS + 1)));
        s.expire(f(3, 1 + GAP_TIMEOUT_NS + 1), &mut out);
        let c = *s.counters();
        assert_eq!((s.fr.cost(), s.gap_deadline(), c.soup_packets, c.truncated_tail_bytes), (0, None, 20_000, 0));
    }

    /// A live stream gone quiet gives back its room, and frames its next split packet as before. After
    /// `two_merged_segments` (frames 1 and 2, at 1 and 2 ns) it is looked at a gap timeout after the
    /// first (1 + T + 1, T the timeout): bytes came since, so again a timeout after that look
    /// (2T + 3), none did then: its 16,512 bytes are given back, and it is no longer looked at. An
    /// Enter Order (50 bytes, `enter50`) split 20 + 30 then comes out whole, from frame 6 to 7,
    /// ending at offset 60,050; the buffers it took: 20 of room grown to 50 for the joined bytes
    /// (twice 20 is less), and 4 pieces of 32, 178.
    #[test]
    fn a_quiet_streams_room_is_given_back_and_its_next_split_packet_framed() {
        const T: i64 = GAP_TIMEOUT_NS;
        let f = |index: u64, time_ns: i64| FrameRef { index, time_ns };
        let mut msgs = Vec::new();
        let mut s = OrderStream::new(OrderDir::Inbound, Some(OrderProto::Ouch50));
        let (a, b) = two_merged_segments();
        s.segment(0, true, &[], f(0, 0), &mut |m| msgs.push(m));
        assert_eq!(s.gap_deadline(), None);
        s.segment(1, false, &a, f(1, 1), &mut |m| msgs.push(m));
        s.segment(30_000, false, &b, f(2, 2), &mut |m| msgs.push(m));
        assert_eq!((s.fr.cost(), s.gap_deadline()), (16_512, Some(T + 2)));
        s.expire(f(3, T + 2), &mut |m| msgs.push(m));
        assert_eq!((s.fr.cost(), s.gap_deadline()), (16_512, Some(2 * T + 3)));
        s.expire(f(4, 2 * T + 2), &mut |m| msgs.push(m));
        assert_eq!(s.fr.cost(), 16_512);
        s.expire(f(5, 2 * T + 3), &mut |m| msgs.push(m));
        assert_eq!((s.fr.cost(), s.gap_deadline(), s.framing_held()), (0, None, None));
        let order = enter50();
        s.segment(60_001, false, &order[..20], f(6, 2 * T + 10), &mut |m| msgs.push(m));
        s.segment(60_021, false, &order[20..], f(7, 2 * T + 11), &mut |m| msgs.push(m));
        let got: Vec<_> = msgs.iter().map(|m| (m.first, m.last, m.end)).collect();
        assert_eq!(got, [(f(6, 2 * T + 10), f(7, 2 * T + 11), 60_050)]);
        let c = *s.counters();
        assert_eq!((c.soup_packets, c.ouch_messages, c.framing_errors, s.fr.cost()), (20_001, 1, 0, 178));
        assert_eq!(s.gap_deadline(), Some(2 * T + 10 + T + 1));
    }

    /// A direction's anomaly is the frame that shows it, however late it is found. Each case's stream
    /// starts with a SYN (frame 0) and a 13-byte packet (frame 1), and its frames are numbered as given.
    #[test]
    fn an_anomaly_is_the_frame_that_shows_it_wherever_it_is_found() {
        let f = |index: u64, time_ns: i64| FrameRef { index, time_ns };
        let start = |out: &mut dyn FnMut(OrderMsg)| {
            let mut s = OrderStream::new(OrderDir::Inbound, Some(OrderProto::Ouch50));
            s.segment(0, true, &[], f(0, 0), &mut |m| out(m));
            s.segment(1, false, &packet(10), f(1, 1), &mut |m| out(m));
            s
        };
        let mut out = |_m: OrderMsg| {};
        // 14..27 missing, 27..40 held (frame 2); the gap timeout passes at frame 9, of another flow:
        // the hole is the frame of the bytes after it.
        let mut s = start(&mut out);
        s.segment(27, false, &packet(10), f(2, 2), &mut out);
        s.expire(f(9, 2 + GAP_TIMEOUT_NS + 1), &mut out);
        assert_eq!((s.reasm().holes, s.counters().first_bad_frame), (1, Some(2)));
        // At the end too, not the last frame.
        let mut s = start(&mut out);
        s.segment(27, false, &packet(10), f(2, 2), &mut out);
        s.finish(9, &mut out);
        assert_eq!((s.reasm().holes, s.counters().first_bad_frame), (1, Some(2)));
        // A segment whose last 5 bytes the capture cut (frame 2) waits behind 14..27, which frame 3
        // brings: the bytes cut are skipped then, and are frame 2's.
        let mut s = start(&mut out);
        s.segment_cut(27, false, &packet(10)[..8], 5, f(2, 2), &mut out);
        s.segment_cut(14, false, &packet(10), 0, f(3, 3), &mut out);
        let c = s.counters();
        assert_eq!((c.bytes_not_captured, c.first_bad_frame), (5, Some(2)));
        // 14..53 missing, 53..66 held (frame 2); frame 3 brings 14..27, a packet header of length 0 (a
        // framing error, found at once); 27..53 is then given up at the end: the earliest frame is
        // kept, the hole's, found last.
        let mut s = start(&mut out);
        s.segment(53, false, &packet(10), f(2, 2), &mut out);
        s.segment(14, false, &[0, 0, b'U', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], f(3, 3), &mut out);
        assert_eq!(s.counters().first_bad_frame, Some(3));
        s.finish(9, &mut out);
        assert_eq!((s.reasm().holes, s.counters().first_bad_frame), (1, Some(2)));
    }

    /// An OUCH 5.0 Enter Order with no appendage (47 bytes), in a SoupBinTCP packet (50 bytes).
    fn enter50() -> Vec<u8> {
        let mut m = vec![b'O'];
        m.extend_from_slice(&[b'0'; 44]);
        m.extend_from_slice(&[0, 0]);
        let mut p = 48u16.to_be_bytes().to_vec();
        p.push(b'U');
        p.extend(m);
        p
    }

    fn with_len(mut p: Vec<u8>, len: u16) -> Vec<u8> {
        p[..2].copy_from_slice(&len.to_be_bytes());
        p
    }

    /// Packet lengths by type (SoupBinTCP 4.1 §2.2-2.3; OUCH 5.0 §2.1: Enter Order is 47 bytes plus
    /// its appendage), each case's verdict by hand.
    #[test]
    fn the_judge_knows_lengths_by_type_and_wants_proof_of_a_damaged_one() {
        use Judgement::{Misframed, Plausible, Wait};
        let (inb, out) = (OrderDir::Inbound, OrderDir::Outbound);
        let v50 = Some(OrderProto::Ouch50);
        let heartbeat = [0u8, 1, b'H'];
        let h = |lead: &[u8], tail: &[u8]| [lead, tail].concat();
        let mut appendage_50 = enter50();
        appendage_50[48..50].copy_from_slice(&50u16.to_be_bytes());
        let (more, end) = (false, true);
        type Case = (OrderDir, Option<OrderProto>, Vec<u8>, bool, Judgement);
        let cases: Vec<Case> = vec![
            // 0-3: right lengths.
            (out, v50, heartbeat.to_vec(), more, Plausible),
            (inb, v50, h(&[0, 47, b'L'], &[b' '; 47]), more, Plausible),
            (inb, v50, h(&[0, 52, b'L'], &[b' '; 52]), more, Plausible),
            (inb, v50, enter50(), more, Plausible),
            // 4: Debug: any length.
            (inb, v50, h(&[0, 200, b'+'], b"text"), more, Plausible),
            // 5-8: no such type: skipped to its own end where proven (a packet follows, or the bytes end
            // there); waits while packets after it are cut by the bytes' end; else stops the framer.
            (inb, v50, vec![0, 1, b'u'], more, Misframed { resume: Some(3) }),
            (inb, v50, h(&[0, 1, b'u'], &heartbeat), more, Misframed { resume: Some(3) }),
            (inb, v50, vec![0, 1, b'u', 0, 0], more, Misframed { resume: None }),
            (inb, v50, vec![0, 1, b'u', 0, 5, b'U', 1], more, Wait),
            // 9-11: a heartbeat whose length says 5 bytes: a heartbeat follows its 3 (proof), or the
            // bytes end there; bytes that are no packet: a control packet of another length stops it.
            (out, v50, h(&[0, 3, b'H'], &heartbeat), more, Misframed { resume: Some(3) }),
            (out, v50, vec![0, 3, b'H'], more, Misframed { resume: Some(3) }),
            (out, v50, h(&[0, 3, b'H', 0, 0], &[0, 0]), more, Misframed { resume: None }),
            // 12-15: an order whose length says 1,024: its 50 bytes, then a heartbeat; or the bytes end
            // at 50; a header cut after 50 waits for more; bytes that are no packet prove nothing.
            (inb, v50, h(&with_len(enter50(), 1_024), &heartbeat), more, Misframed { resume: Some(50) }),
            (inb, v50, with_len(enter50(), 1_024), more, Misframed { resume: Some(50) }),
            (inb, v50, h(&with_len(enter50(), 1_024), &heartbeat[..2]), more, Wait),
            (inb, v50, h(&with_len(enter50(), 1_024), &[0, 0]), more, Plausible),
            // 16-17: its fixed part not all there yet: waits for it; with the version unknown, either
            // version's length counts (5.0's here).
            (inb, v50, with_len(enter50(), 1_024)[..49].to_vec(), more, Wait),
            (inb, None, with_len(enter50(), 1_024), more, Misframed { resume: Some(50) }),
            // 18: an order whose length says 20: its 50 bytes hold it, a heartbeat follows.
            (inb, v50, h(&with_len(enter50(), 20), &heartbeat), more, Misframed { resume: Some(50) }),
            // 19: a type OUCH 5.0 does not know.
            (inb, v50, h(&[0, 200, b'U', b'#'], &heartbeat), more, Plausible),
            // 20-21: the packet's own end proven by a packet after it: framed by its length, its message
            // counted malformed (4.2's Enter Order is 49 bytes, one more than this one; an appendage
            // length damaged to 50).
            (inb, Some(OrderProto::Ouch42), h(&enter50(), &heartbeat), more, Plausible),
            (inb, v50, h(&appendage_50, &heartbeat.repeat(20)), more, Plausible),
            // 22-25: at the stream's end nothing waits, and a packet cut by the end proves as a whole one.
            (inb, v50, with_len(enter50(), 1_024)[..49].to_vec(), end, Plausible),
            (inb, v50, h(&with_len(enter50(), 1_024), &heartbeat[..2]), end, Misframed { resume: Some(50) }),
            (inb, v50, vec![0, 1, b'u', 0, 5, b'U', 1], end, Misframed { resume: Some(3) }),
            (inb, v50, vec![0, 1, b'u', 0, 0], end, Misframed { resume: None }),
        ];
        for (i, (dir, proto, head, at_end, want)) in cases.into_iter().enumerate() {
            assert_eq!(judge(dir, proto, &head, at_end), want, "case {i}");
        }
    }

    /// A boundary inside a segment is a chain of packets each of its type's length: four, or fewer to
    /// the end when two at least or one holding an OUCH message (a lone 3-byte heartbeat look-alike
    /// proves nothing). Undecided while the chain so far is such and the next packet is cut. With the
    /// version unknown, either version's lengths; a message type neither knows proves nothing.
    #[test]
    fn a_boundary_is_a_chain_of_exact_lengths() {
        let (inb, v50) = (OrderDir::Inbound, Some(OrderProto::Ouch50));
        let hb = [0u8, 1, b'R'];
        let cases: Vec<(Option<OrderProto>, Vec<u8>, Option<bool>)> = vec![
            (v50, enter50().repeat(4), Some(true)),
            (v50, enter50(), Some(true)),
            (v50, hb.repeat(2), Some(true)),
            (v50, hb.to_vec(), None),
            (v50, [&hb[..], &enter50()[..30]].concat(), None),
            (v50, enter50()[..30].to_vec(), None),
            (v50, [enter50(), with_len(enter50(), 49)].concat(), Some(false)),
            (v50, b"xyz".to_vec(), Some(false)),
            (None, enter50(), Some(true)),
            (None, [&b"\x00\x02U#"[..], &b"\x00\x02U#"[..]].concat(), Some(false)),
        ];
        for (i, (proto, b, want)) in cases.into_iter().enumerate() {
            assert_eq!(exact_chain(inb, proto, &b, false), want, "case {i}");
        }
    }

    /// No damaged header is seen in legitimate traffic, however TCP cuts it: 300 streams of 200
    /// packets (Enter Orders, client heartbeats, Debug packets of 0 to 600 bytes, a login), cut at
    /// random into segments of 1 to 1,500 bytes, with the version given or learnt from the first
    /// order. Every order is read, nothing skipped, no framing error.
    #[test]
    fn legitimate_traffic_cut_anywhere_is_read_whole() {
        let mut next = super::super::tests::lcg(0x9E37_79B9_7F4A_7C15);
        for run in 0..300 {
            let mut stream = Vec::new();
            let mut orders = 0;
            let login = [&[0u8, 47, b'L'][..], &[b'U'; 46]].concat();
            stream.extend_from_slice(&login);
            for _ in 0..200 {
                match next(4) {
                    0 | 1 => {
                        stream.extend(enter50());
                        orders += 1;
                    }
                    2 => stream.extend([0, 1, b'R']),
                    _ => {
                        let n = next(601) as usize;
                        stream.extend(((n + 1) as u16).to_be_bytes());
                        stream.push(b'+');
                        stream.extend((0..n).map(|_| next(256) as u8));
                    }
                }
            }
            let proto = if run % 2 == 0 { Some(OrderProto::Ouch50) } else { None };
            let mut s = OrderStream::new(OrderDir::Inbound, proto);
            let mut read = 0;
            let mut out = |_m: OrderMsg| read += 1;
            let f = |index: u64| FrameRef { index, time_ns: index as i64 };
            s.segment(0, true, &[], f(0), &mut out);
            let mut at = 0;
            while at < stream.len() {
                let n = (1 + next(1_500) as usize).min(stream.len() - at);
                s.segment(1 + at as u32, false, &stream[at..at + n], f(at as u64 + 1), &mut out);
                at += n;
            }
            s.finish(u64::MAX, &mut out);
            let c = *s.counters();
            assert_eq!(
                (read, c.framing_errors, c.resync_skipped_bytes, c.truncated_tail_bytes, c.ouch_malformed),
                (orders, 0, 0, 0, 0),
                "run {run}: {c:?}"
            );
        }
    }
}
