//! One direction of an order-entry TCP connection: reassembly, SoupBinTCP framing, OUCH decoding.
//!
//! Each OUCH message comes out with the frame that carried its first byte (its wire time, STAC's
//! start-of-frame) and the frame that carried its last byte. After a hole in the stream the framer
//! cannot know where the next packet starts, so it waits for a boundary it can prove: the start of a
//! later segment whose bytes are a whole chain of well-formed SoupBinTCP packets, or begin with four
//! ([`super::flows::starts_soupbin`]).

use super::flows::{OrderProto, STRADDLE_PROOF, is_soupbin_type, starts_soupbin};
use crate::proto::soupbin::{Framed, Framer, Judgement, PacketType};
use crate::proto::{OrderDir, OrderSummary, ProtoError, ouch5, ouch42};
use crate::reasm::{Piece, Reassembler};
use std::cell::Cell;
use std::collections::VecDeque;

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
    /// Index of the first frame where something was wrong, if any.
    pub first_bad_frame: Option<u64>,
    /// SoupBinTCP packets of a type only the other end sends (Sequenced Data, Login Accepted, server
    /// heartbeats... toward the exchange): the session's exchange end may be the other one.
    pub other_ends_packets: u64,
    /// Malformed OUCH messages that are well-formed in the other version (4.2 for 5.0, or back): the
    /// session's version may be the other one.
    pub other_version_fits: u64,
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
}

/// Framing state: split from the reassembler so its callback can drive it.
#[derive(Debug)]
struct Framing {
    dir: OrderDir,
    /// `None` until an Enter Order shows the version (a detected session whose first packet did not:
    /// a Login, a heartbeat), 5.0 (the current one) assumed meanwhile.
    proto: Option<OrderProto>,
    framer: Framer,
    /// Delivered data not yet fully consumed by the framer: (start offset, end offset, frame).
    pieces: VecDeque<(u64, u64, FrameRef)>,
    /// Stream offset of the next SoupBinTCP packet.
    next_packet: u64,
    /// Waiting for a provable packet boundary (after a hole, or from a start without SYN).
    resync: bool,
    counters: StreamCounters,
    /// The username of the last Login Request seen (client to exchange).
    login_user: Option<[u8; 6]>,
}

impl OrderStream {
    /// A stream in direction `dir` (inbound: client to exchange) carrying `proto`, or, when `None`,
    /// the version its first Enter Order shows.
    pub fn new(dir: OrderDir, proto: Option<OrderProto>) -> Self {
        OrderStream {
            oldest_pending: (None, (0, 0)),
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

    /// Feeds one TCP segment of this direction.
    pub fn segment(&mut self, seq: u32, syn: bool, payload: &[u8], frame: FrameRef, out: &mut impl FnMut(OrderMsg)) {
        if self.reasm.seq_at(0).is_none() {
            // The stream's first segment: its start is a packet boundary only after a SYN (a capture
            // may begin in the middle of a packet); otherwise the framer waits for one it can prove.
            self.fr.resync = !syn;
        }
        let fr = &mut self.fr;
        let mut sink = |p: Piece<'_, FrameRef>| match p {
            Piece::Data { offset, data, meta } => fr.data(offset, data, meta, out),
            Piece::Hole { .. } => fr.hole(frame.index),
        };
        self.reasm.push(seq, syn, payload, frame, &mut sink);
        self.reasm.tick(frame.time_ns, GAP_TIMEOUT_NS, &mut sink);
        self.note_pending(frame.time_ns);
    }

    /// The earliest capture time of a byte this stream holds that is not yet part of a message it gave
    /// out: a packet begun but not ended, or segments waiting behind a gap. A message still to come
    /// starts no earlier (or in a frame not yet captured). `None` when it holds none.
    pub fn oldest_held(&self) -> Option<i64> {
        let pending = self.oldest_pending.0;
        let fr = &self.fr;
        let begun = (fr.framer.pending() > 0 && !fr.resync)
            .then(|| fr.pieces.iter().find(|(s, e, _)| *s <= fr.next_packet && fr.next_packet < *e))
            .flatten()
            .map(|p| p.2.time_ns);
        match (pending, begun) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Updates [`OrderStream::oldest_pending`] after the reassembler took a frame at `t` (a segment,
    /// an ACK, the end): pieces only stored since are this frame's; after any taken out, a scan.
    fn note_pending(&mut self, t: i64) {
        let changes = self.reasm.pending_changes();
        let (oldest, seen) = self.oldest_pending;
        let now = if changes == seen {
            oldest
        } else if changes.1 == seen.1 {
            Some(oldest.map_or(t, |o| o.min(t)))
        } else {
            self.reasm.pending_metas().map(|m| m.time_ns).min()
        };
        self.oldest_pending = (now, changes);
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
        let fr = &mut self.fr;
        fr.framer.reset();
        fr.pieces.clear();
        fr.next_packet = 0;
        fr.resync = false;
    }

    /// This direction sent a FIN after `payload_len` bytes at `seq`.
    pub fn fin(&mut self, seq: u32, payload_len: usize) {
        self.reasm.fin(seq.wrapping_add(payload_len as u32));
    }

    /// The other direction acknowledged every byte of this one before `ack` (seen in `frame`): bytes
    /// before it that the capture missed become a hole once bytes after them were captured
    /// ([`crate::reasm::Reassembler::acked`]).
    pub fn acked(&mut self, ack: u32, frame: FrameRef, out: &mut impl FnMut(OrderMsg)) {
        let fr = &mut self.fr;
        self.reasm.acked(ack, &mut |p| match p {
            Piece::Data { offset, data, meta } => fr.data(offset, data, meta, out),
            Piece::Hole { .. } => fr.hole(frame.index),
        });
        self.note_pending(frame.time_ns);
    }

    /// Declares the end of the stream (capture end or FIN): pending out-of-order data is delivered
    /// after the holes before it; an incomplete packet left over is counted.
    pub fn finish(&mut self, last_frame: u64, out: &mut impl FnMut(OrderMsg)) {
        let fr = &mut self.fr;
        self.reasm.finish(&mut |p| match p {
            Piece::Data { offset, data, meta } => fr.data(offset, data, meta, out),
            Piece::Hole { .. } => fr.hole(last_frame),
        });
        self.note_pending(i64::MAX);
        let tail = self.fr.framer.pending() as u64;
        if tail > 0 {
            self.fr.counters.truncated_tail_bytes += tail;
            // The offending frame is the one holding the cut packet's length, where it starts.
            let start = self.fr.next_packet;
            let at = self.fr.pieces.iter().find(|(s, e, _)| *s <= start && start < *e);
            self.fr.bad(at.map_or(last_frame, |p| p.2.index));
            self.fr.framer.reset();
        }
    }
}

impl Framing {
    fn bad(&mut self, frame: u64) {
        self.counters.first_bad_frame.get_or_insert(frame);
    }

    fn hole(&mut self, frame: u64) {
        self.framer.reset();
        self.pieces.clear();
        self.resync = true;
        self.bad(frame);
    }

    fn data(&mut self, mut offset: u64, mut data: &[u8], meta: FrameRef, out: &mut impl FnMut(OrderMsg)) {
        // A loop, not a recursion: each damaged header with a boundary proven after it starts a new
        // round, and hostile bytes may hold thousands of them.
        loop {
            let Some(resume) = self.data_from(offset, data, meta, out) else { return };
            data = &data[(resume - offset) as usize..];
            offset = resume;
        }
    }

    /// Frames `data` (at stream `offset`). `Some(at)`: a damaged packet header stopped the framer, no
    /// end of it proven, and the next packet provably starts at stream offset `at` inside `data`:
    /// framing resumes there.
    fn data_from(
        &mut self,
        mut offset: u64,
        mut data: &[u8],
        meta: FrameRef,
        out: &mut impl FnMut(OrderMsg),
    ) -> Option<u64> {
        if self.resync {
            // The segment's start, or a boundary proven inside it.
            let k = if starts_soupbin(data) { Some(0) } else { boundary_in(self.dir, self.proto, data, 1) };
            let Some(k) = k else {
                self.counters.resync_skipped_bytes += data.len() as u64;
                return None;
            };
            self.counters.resync_skipped_bytes += k as u64;
            data = &data[k..];
            offset += k as u64;
            self.resync = false;
            self.framer.reset();
            self.next_packet = offset;
        }
        self.pieces.push_back((offset, offset + data.len() as u64, meta));
        let Self { framer, pieces, next_packet, counters, dir, proto, login_user, .. } = self;
        let dir = *dir;
        // Shared by the judge and the packets' decoding, which learns it from the first Enter Order.
        let version = Cell::new(*proto);
        let result = framer.feed_judged(
            data,
            |head| judge(dir, version.get(), head),
            |framed| {
                let pkt = match framed {
                    Framed::Packet(pkt) => pkt,
                    Framed::Skipped(n) => {
                        // A damaged packet, skipped to the end its judge proved.
                        let start = *next_packet;
                        let at = pieces.iter().find(|(s, e, _)| *s <= start && start < *e).map(|p| p.2.index);
                        counters.framing_errors += 1;
                        counters.first_bad_frame.get_or_insert(at.unwrap_or(meta.index));
                        counters.resync_skipped_bytes += n as u64;
                        *next_packet += n as u64;
                        return;
                    }
                };
                let start = *next_packet;
                let end = start + pkt.total_len() as u64;
                *next_packet = end;
                counters.soup_packets += 1;
                let ty = pkt.packet_type();
                let others = match dir {
                    OrderDir::Inbound => matches!(
                        ty,
                        PacketType::SequencedData
                            | PacketType::LoginAccepted
                            | PacketType::LoginRejected
                            | PacketType::ServerHeartbeat
                            | PacketType::EndOfSession
                    ),
                    OrderDir::Outbound => {
                        matches!(ty, PacketType::LoginRequest | PacketType::ClientHeartbeat | PacketType::LogoutRequest)
                    }
                };
                counters.other_ends_packets += u64::from(others);
                if dir == OrderDir::Inbound && ty == PacketType::LoginRequest {
                    // SoupBinTCP 4.1 §2.3.1: Username, 6 alphanumerics, right after the type byte.
                    *login_user = pkt.payload().first_chunk::<6>().copied().or(*login_user);
                }
                let carries = match dir {
                    OrderDir::Inbound => ty == PacketType::UnsequencedData,
                    OrderDir::Outbound => ty == PacketType::SequencedData || ty == PacketType::UnsequencedData,
                };
                if !carries {
                    return;
                }
                let find = |at: u64| pieces.iter().find(|(s, e, _)| *s <= at && at < *e).map(|p| p.2);
                let (Some(first), Some(last)) = (find(start), find(end - 1)) else { return };
                if version.get().is_none() && ty == PacketType::UnsequencedData {
                    version.set(ouch_version(pkt.payload()));
                }
                let decoded: Result<Option<OrderSummary>, ProtoError> = match version.get() {
                    Some(OrderProto::Ouch50) => ouch5::summarize(dir, pkt.payload()),
                    Some(OrderProto::Ouch42) => ouch42::summarize(dir, pkt.payload()),
                    // Before an Enter Order shows the version (a capture started mid-session): 5.0, the
                    // current one, unless the message is malformed as 5.0 and well-formed as 4.2 (the
                    // lengths differ for most types).
                    None => ouch5::summarize(dir, pkt.payload())
                        .or_else(|e| ouch42::summarize(dir, pkt.payload()).map_err(|_| e)),
                };
                match decoded {
                    Ok(Some(summary)) => {
                        counters.ouch_messages += 1;
                        out(OrderMsg { summary, first, last, end });
                    }
                    Ok(None) => counters.ouch_unknown += 1,
                    Err(_) => {
                        counters.ouch_malformed += 1;
                        counters.first_bad_frame.get_or_insert(first.index);
                        let other = match version.get() {
                            Some(OrderProto::Ouch50) => ouch42::summarize(dir, pkt.payload()),
                            Some(OrderProto::Ouch42) => ouch5::summarize(dir, pkt.payload()),
                            None => Ok(None),
                        };
                        counters.other_version_fits += u64::from(matches!(other, Ok(Some(_))));
                    }
                }
            },
        );
        *proto = version.get();
        if result.is_err() {
            // The packet that stopped the framer starts at `next_packet`, in this piece or (begun) in
            // an earlier one; the stream resumes at a boundary proven further in this piece, or waits.
            let start = self.next_packet;
            let at = self.pieces.iter().find(|(s, e, _)| *s <= start && start < *e).map_or(meta.index, |p| p.2.index);
            self.counters.framing_errors += 1;
            self.bad(at);
            let from = (start + 1).saturating_sub(offset) as usize;
            let resume = boundary_in(self.dir, self.proto, data, from).map(|k| offset + k as u64);
            let end = offset + data.len() as u64;
            self.counters.resync_skipped_bytes += resume.unwrap_or(end) - start;
            self.framer.reset();
            self.pieces.clear();
            match resume {
                Some(r) => self.next_packet = r,
                None => self.resync = true,
            }
            return resume;
        }
        // Pieces wholly before the next packet start are no longer needed, except the one holding a
        // packet in progress.
        let keep_from = self.next_packet;
        while let Some(&(_, end, _)) = self.pieces.front() {
            if end > keep_from {
                break;
            }
            self.pieces.pop_front();
        }
        None
    }
}

/// Whole packets a byte offset must begin, each of the length its type gives it, to be a boundary
/// proven inside a segment ([`boundary_in`]); or fewer of them to the segment's end.
const EXACT_PROOF: usize = 4;

/// The whole-packet lengths a SoupBinTCP packet starting `head` (3 bytes at least) may have by its
/// type (SoupBinTCP 4.1 §2; Login Request: 4.0's, and 4.1's with its Heartbeat Timeout; data: the
/// OUCH message's, by its type, once `head` holds its fixed part and the version is known). `None`
/// for a type byte SoupBinTCP does not have; no length for Debug, or an OUCH message not known.
fn type_lens(dir: OrderDir, proto: Option<OrderProto>, head: &[u8]) -> Option<[Option<usize>; 2]> {
    Some(match head[2] {
        b'A' => [Some(33), None],
        b'J' => [Some(4), None],
        b'H' | b'Z' | b'R' | b'O' => [Some(3), None],
        b'L' => [Some(49), Some(54)],
        b'+' => [None, None],
        b'U' | b'S' => {
            let msg = &head[3..];
            let len = match (proto, dir) {
                (None, _) => None,
                (Some(OrderProto::Ouch50), OrderDir::Inbound) => ouch5::Inbound::len_at(msg),
                (Some(OrderProto::Ouch50), OrderDir::Outbound) => ouch5::Outbound::len_at(msg),
                (Some(OrderProto::Ouch42), OrderDir::Inbound) => ouch42::Inbound::len_at(msg),
                (Some(OrderProto::Ouch42), OrderDir::Outbound) => ouch42::Outbound::len_at(msg),
            };
            [len.map(|n| n + 3), None]
        }
        _ => return None,
    })
}

/// What a SoupBinTCP packet of stream direction `dir` starting `head` (3 bytes at least: its bytes
/// up to the last one received) can be, by its type byte and what it holds. An end is proven where
/// SoupBinTCP packets follow it ([`starts_soupbin`]) or where the bytes received end.
/// - A packet whose length is its type's, or whose own end is proven, is framed by its length (its
///   message, if of the wrong length, is counted malformed).
/// - Otherwise, a type byte SoupBinTCP does not have, or a length other than its type's where the
///   type's end is proven, is a damaged header: the stream resumes at the proven end (a damaged
///   type byte: the packet's own end; a damaged length: its type's).
/// - Where the packets after such an end are cut by the bytes received, the packet waits for more.
/// - A type byte SoupBinTCP lacks with no end proven stops the framer: the stream waits for a
///   boundary it can prove. Any other packet is framed by its length.
///
/// A damaged length otherwise swallows every packet up to where it points (or ends early, and the
/// next header, read from the message's middle, is caught here).
fn judge(dir: OrderDir, proto: Option<OrderProto>, head: &[u8]) -> Judgement {
    let declared = 2 + usize::from(u16::from_be_bytes([head[0], head[1]]));
    let lens = type_lens(dir, proto, head);
    if lens.is_some_and(|l| l.contains(&Some(declared))) {
        return Judgement::Plausible;
    }
    let proven = |end: usize| end == head.len() || (end < head.len() && starts_soupbin(&head[end..]));
    // Packets after `end` so far, cut by the bytes received: more bytes may prove it.
    let may_prove = |end: usize| end < head.len() && open_chain(&head[end..]);
    let Some(lens) = lens else {
        return if proven(declared) {
            Judgement::Misframed { resume: Some(declared) }
        } else if may_prove(declared) {
            Judgement::Wait
        } else {
            Judgement::Misframed { resume: None }
        };
    };
    if proven(declared) {
        return Judgement::Plausible;
    }
    let mut ends = lens.into_iter().flatten();
    if let Some(end) = ends.clone().find(|&end| proven(end)) {
        return Judgement::Misframed { resume: Some(end) };
    }
    if ends.any(may_prove) { Judgement::Wait } else { Judgement::Plausible }
}

/// Whether `b` holds SoupBinTCP packet headers of known types chained to its end, the last packet
/// (or its header) cut there, within [`STRADDLE_PROOF`] packets: what more bytes may make a proof.
fn open_chain(b: &[u8]) -> bool {
    let mut off = 0;
    for _ in 0..STRADDLE_PROOF {
        let Some(h) = b.get(off..off + 3) else {
            // A header cut short: open unless its length is there and 0.
            let rest = &b[off.min(b.len())..];
            return !rest.is_empty() && (rest.len() < 2 || rest[..2] != [0, 0]);
        };
        let len = usize::from(u16::from_be_bytes([h[0], h[1]]));
        if len == 0 || !is_soupbin_type(h[2]) {
            return false;
        }
        off += 2 + len;
        if off >= b.len() {
            return off > b.len();
        }
    }
    false
}

/// Whether `b` begins with [`EXACT_PROOF`] whole packets each of the length its type gives it, or
/// is fewer such packets to its end.
fn exact_chain(dir: OrderDir, proto: Option<OrderProto>, b: &[u8]) -> bool {
    let mut off = 0;
    for _ in 0..EXACT_PROOF {
        if off == b.len() {
            return off > 0;
        }
        let Some(head) = b.get(off..).filter(|h| h.len() >= 3) else { return false };
        let declared = 2 + usize::from(u16::from_be_bytes([head[0], head[1]]));
        let exact = type_lens(dir, proto, head).is_some_and(|l| l.contains(&Some(declared)));
        if !exact || declared > head.len() {
            return false;
        }
        off += declared;
    }
    true
}

/// The first offset of `data` from `from` on where a packet boundary is proven ([`exact_chain`]):
/// after a hole or a damaged header in a busy session, where segments seldom start a packet.
fn boundary_in(dir: OrderDir, proto: Option<OrderProto>, data: &[u8], from: usize) -> Option<usize> {
    (from..data.len()).find(|&k| exact_chain(dir, proto, &data[k..]))
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
    use super::*;

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
        let cases: Vec<(OrderDir, Option<OrderProto>, Vec<u8>, Judgement)> = vec![
            // 0-3: right lengths.
            (out, v50, heartbeat.to_vec(), Plausible),
            (inb, v50, h(&[0, 47, b'L'], &[b' '; 47]), Plausible),
            (inb, v50, h(&[0, 52, b'L'], &[b' '; 52]), Plausible),
            (inb, v50, enter50(), Plausible),
            // 4: Debug: any length.
            (inb, v50, h(&[0, 200, b'+'], b"text"), Plausible),
            // 5-7: no such type: skipped to its own end where proven (the bytes end there, or a packet
            // follows); else the stream waits for a boundary.
            (inb, v50, vec![0, 1, b'u'], Misframed { resume: Some(3) }),
            (inb, v50, h(&[0, 1, b'u'], &heartbeat), Misframed { resume: Some(3) }),
            (inb, v50, vec![0, 1, b'u', 0, 0], Misframed { resume: None }),
            // 8: packets after its end so far, the last cut: more bytes may prove it.
            (inb, v50, vec![0, 1, b'u', 0, 5, b'U', 1], Wait),
            // 9-11: a heartbeat whose length says 5 bytes: a heartbeat follows its 3 (proof), or nothing
            // does; bytes that are no packet prove nothing.
            (out, v50, h(&[0, 3, b'H'], &heartbeat), Misframed { resume: Some(3) }),
            (out, v50, vec![0, 3, b'H'], Misframed { resume: Some(3) }),
            (out, v50, h(&[0, 3, b'H', 0, 0], &[0, 0]), Plausible),
            // 12-17: an order whose length says 1,024: its 50 bytes, then a heartbeat; or the segment
            // ends at 50; a header cut after 50 waits for more; bytes that are no packet prove nothing;
            // and neither does an unknown version.
            (inb, v50, h(&with_len(enter50(), 1_024), &heartbeat), Misframed { resume: Some(50) }),
            (inb, v50, with_len(enter50(), 1_024), Misframed { resume: Some(50) }),
            (inb, v50, h(&with_len(enter50(), 1_024), &heartbeat[..2]), Wait),
            (inb, v50, h(&with_len(enter50(), 1_024), &[0, 0]), Plausible),
            (inb, v50, with_len(enter50(), 1_024)[..49].to_vec(), Plausible),
            (inb, None, with_len(enter50(), 1_024), Plausible),
            // 18: an order whose length says 20: its 50 bytes hold it, a heartbeat follows.
            (inb, v50, h(&with_len(enter50(), 20), &heartbeat), Misframed { resume: Some(50) }),
            // 19: its fixed part not all there yet: nothing to go by.
            (inb, v50, with_len(enter50(), 1_024)[..40].to_vec(), Plausible),
            // 20: a type OUCH 5.0 does not know.
            (inb, v50, h(&[0, 200, b'U', b'#'], &heartbeat), Plausible),
            // 21-22: the packet's own end proven: framed by its length, its message counted malformed
            // (4.2's Enter Order is 49 bytes, one more than this one; an appendage length damaged to 50).
            (inb, Some(OrderProto::Ouch42), h(&enter50(), &heartbeat), Plausible),
            (inb, v50, h(&appendage_50, &heartbeat.repeat(20)), Plausible),
        ];
        for (i, (dir, proto, head, want)) in cases.into_iter().enumerate() {
            assert_eq!(judge(dir, proto, &head), want, "case {i}");
        }
    }

    /// A boundary inside a segment is a chain of packets each of its type's length: four, or fewer to
    /// the end. Found after bytes that are no packet; not in a chain holding a packet of another
    /// length, nor where the version is unknown (an OUCH message's length is then unknown).
    #[test]
    fn a_boundary_inside_a_segment_is_a_chain_of_exact_lengths() {
        let (inb, v50) = (OrderDir::Inbound, Some(OrderProto::Ouch50));
        let orders = enter50().repeat(4);
        let tail = [&b"xyz"[..], &orders].concat();
        assert_eq!(boundary_in(inb, v50, &tail, 0), Some(3));
        assert_eq!(boundary_in(inb, v50, &[&b"xyz"[..], &enter50()].concat(), 1), Some(3));
        assert_eq!(boundary_in(inb, None, &tail, 0), None);
        // A chain through a packet of another length is none: the order after it, alone to the end, is.
        let wrong = [&b"xyz"[..], &enter50(), &with_len(enter50(), 49), &enter50()].concat();
        assert_eq!(boundary_in(inb, v50, &wrong, 0), Some(103));
        // Heartbeats are exact too (the chain's fourth ends inside the data: whole packets only).
        let hb = [&b"\x07"[..], &[0, 1, b'R'].repeat(3), &[0, 1]].concat();
        assert_eq!(boundary_in(inb, v50, &hb, 0), None);
        assert!(exact_chain(inb, v50, &[0, 1, b'R'].repeat(3)));
    }
}
