//! A direction's SoupBinTCP framing state: the delivered pieces not yet framed, packets begun, the
//! resynchronisation window after a hole, and the counters. Split from the stream's reassembler so that its
//! callback can drive it.

use super::proof::{exact_chain, judge};
use super::{FRAMING_SLACK, FrameRef, OrderMsg, StreamCounters, ouch_version};
use crate::analyze::flows::{OrderProto, starts_soupbin};
use crate::proto::soupbin::{Framed, Framer, PacketType};
use crate::proto::{OrderDir, OrderSummary, ProtoError, ouch5, ouch42};
use crate::reasm::Piece;
use std::cell::Cell;
use std::collections::VecDeque;

/// Framing state: split from the reassembler so its callback can drive it.
#[derive(Debug)]
pub(super) struct Framing {
    pub(super) dir: OrderDir,
    /// `None` until an Enter Order shows the version (a detected session whose first packet did not:
    /// a Login, a heartbeat), 5.0 (the current one) assumed meanwhile.
    pub(super) proto: Option<OrderProto>,
    pub(super) framer: Framer,
    /// Delivered data not yet fully consumed by the framer: (start offset, end offset, frame).
    pub(super) pieces: VecDeque<(u64, u64, FrameRef)>,
    /// Stream offset of the next SoupBinTCP packet.
    pub(super) next_packet: u64,
    /// Waiting for a provable packet boundary (after a hole, or from a start without SYN).
    pub(super) resync: bool,
    pub(super) counters: StreamCounters,
    /// The username of the last Login Request seen (client to exchange).
    pub(super) login_user: Option<[u8; 6]>,
    /// While resynchronising: the bytes received since the last place known to start no boundary
    /// (stream offset `window_at`), searched for one as segments come ([`Framing::scan_window`]).
    pub(super) window: Vec<u8>,
    pub(super) window_at: u64,
    /// Places of the window that more bytes may still prove, in order, and how far it was looked at:
    /// each place is looked at once more only while undecided (hostile bytes may keep one open for
    /// 64 KiB, over thousands of segments).
    pub(super) open_at: Vec<usize>,
    pub(super) scanned_to: usize,
    /// The reassembler stored or gave out pieces, or the framing holds more than [`FRAMING_SLACK`],
    /// since [`OrderStream::take_held_change`](super::OrderStream::take_held_change) last said so.
    pub(super) held_changed: bool,
}

/// Keeps in `first` the earliest frame of an anomaly: one found late (a hole declared at its timeout,
/// a packet framed once a hole before it was given up) may lie before one found earlier.
fn earliest(first: &mut Option<u64>, frame: u64) {
    *first = Some(first.map_or(frame, |f| f.min(frame)));
}

/// The frame that carried stream byte `at`, among the delivered `pieces` (start, end, frame).
pub(super) fn piece_at(pieces: &VecDeque<(u64, u64, FrameRef)>, at: u64) -> Option<FrameRef> {
    pieces.iter().find(|(s, e, _)| *s <= at && at < *e).map(|p| p.2)
}

impl Framing {
    pub(super) fn bad(&mut self, frame: u64) {
        earliest(&mut self.counters.first_bad_frame, frame);
    }

    /// What the buffers take: the room allocated, not only the bytes in it (a packet begun keeps up
    /// to twice its bytes; segments of a few bytes each add a piece of 32). With no byte held the
    /// framer keeps what it had, up to [`FRAMING_SLACK`] with the others (after a split packet it cut
    /// its room to [`RETAINED`](crate::proto::soupbin::RETAINED), after a hole's reset not at all, and
    /// beyond the slack the stream cuts it there), until the direction ends or goes quiet.
    pub(super) fn cost(&self) -> usize {
        self.framer.capacity()
            + self.window.capacity()
            + self.open_at.capacity() * std::mem::size_of::<usize>()
            + self.pieces.capacity() * std::mem::size_of::<(u64, u64, FrameRef)>()
    }

    /// Bytes are left held (a packet begun, a window): the analysis is told when the buffers take more than
    /// [`FRAMING_SLACK`] ([`OrderStream::framing_held`](super::OrderStream::framing_held)). (Out of line: whole packets
    /// never come here.)
    #[cold]
    #[inline(never)]
    fn note_held(&mut self) {
        if self.cost() > FRAMING_SLACK {
            self.held_changed = true;
        }
    }

    /// Frees the buffers holding no byte, but for `keep` bytes of the framer's room (what the next
    /// packet split across segments needs: [`RETAINED`](crate::proto::soupbin::RETAINED), or 0).
    pub(super) fn release(&mut self, keep: usize) {
        self.framer.release(keep);
        if self.window.is_empty() {
            self.set_window(Vec::new(), 0);
            self.open_at = Vec::new();
        }
        if self.pieces.is_empty() {
            self.pieces = VecDeque::new();
        } else {
            self.pieces.shrink_to_fit();
        }
    }

    /// The capture time of the first byte held: a packet begun, or the window while resynchronising
    /// (a boundary found in it frames its bytes); `None` when none is.
    pub(super) fn held_since(&self) -> Option<i64> {
        self.held_frame().map(|f| f.time_ns)
    }

    /// The frame of the first byte held ([`Framing::held_since`]).
    pub(super) fn held_frame(&self) -> Option<FrameRef> {
        let from =
            if self.resync { (!self.window.is_empty()).then_some(self.window_at) } else { Some(self.next_packet) };
        from.filter(|_| self.framer.pending() > 0 || self.resync).and_then(|at| piece_at(&self.pieces, at))
    }

    /// What the reassembler gives out: data to frame, or a hole (shown missing by its frame).
    #[inline(always)]
    pub(super) fn piece(&mut self, p: Piece<'_, FrameRef>, out: &mut impl FnMut(OrderMsg)) {
        match p {
            Piece::Data { offset, data, meta } => self.data(offset, data, meta, out),
            Piece::Hole { meta, .. } => self.hole(meta.index, out),
        }
    }

    /// A hole in the stream, shown by frame `frame`: what the framer holds is framed as at the stream's
    /// end (what stays, a packet cut by the hole, is lost, counted), and the stream resynchronises after.
    pub(super) fn hole(&mut self, frame: u64, out: &mut impl FnMut(OrderMsg)) {
        self.flush(FrameRef { index: frame, time_ns: i64::MAX }, out);
        self.counters.resync_skipped_bytes += self.framer.pending() as u64;
        self.framer.reset();
        self.pieces.clear();
        self.resync = true;
        self.bad(frame);
    }

    /// Frames what is held as at the stream's end: packets waiting for more bytes are judged without
    /// them, and what holds no boundary while resynchronising is skipped.
    pub(super) fn flush(&mut self, meta: FrameRef, out: &mut impl FnMut(OrderMsg)) {
        let stopped = !self.resync && self.framer.pending() > 0 && !self.run(&[], true, meta, out);
        if stopped || self.resync {
            self.resync_loop(true, None, meta, out);
        }
        if self.resync {
            self.counters.resync_skipped_bytes += self.window.len() as u64;
            self.set_window(Vec::new(), 0);
        }
    }

    #[inline]
    pub(super) fn data(&mut self, offset: u64, data: &[u8], meta: FrameRef, out: &mut impl FnMut(OrderMsg)) {
        self.pieces.push_back((offset, offset + data.len() as u64, meta));
        let mut segment_start = None;
        if !self.resync {
            if self.run(data, false, meta, out) {
                return;
            }
        } else {
            if self.window.is_empty() {
                self.window_at = offset;
            }
            // This segment's start may prove a boundary as such (whole packets after it).
            segment_start = Some(self.window.len());
            self.window.extend_from_slice(data);
        }
        self.resync_loop(false, segment_start, meta, out);
        self.note_held();
    }

    /// Sets the window to `bytes`, at stream offset `at`, none of it looked at yet.
    pub(super) fn set_window(&mut self, bytes: Vec<u8>, at: u64) {
        self.window = bytes;
        self.window_at = at;
        self.open_at.clear();
        self.scanned_to = 0;
    }

    /// Resynchronising: frames from each boundary found in the window until none is left (a damaged
    /// header after one puts the bytes after it back in the window). A loop, not a recursion: hostile
    /// bytes may hold thousands of damaged headers.
    fn resync_loop(
        &mut self,
        at_end: bool,
        mut segment_start: Option<usize>,
        meta: FrameRef,
        out: &mut impl FnMut(OrderMsg),
    ) {
        while let Some(k) = self.scan_window(at_end, segment_start.take()) {
            let bytes = self.window.split_off(k);
            self.counters.resync_skipped_bytes += k as u64;
            let at = self.window_at + k as u64;
            self.set_window(Vec::new(), 0);
            self.resync = false;
            self.framer.reset();
            self.next_packet = at;
            if self.run(&bytes, at_end, meta, out) {
                return;
            }
        }
    }

    /// The first place in the window where a packet boundary is proven ([`exact_chain`], or at
    /// `segment_start`, a segment's start, [`starts_soupbin`]), if any. Otherwise the bytes before the
    /// first place that more bytes may still prove are dropped (counted): none of them starts a
    /// boundary. Places found undecided are looked at again, the others not.
    fn scan_window(&mut self, at_end: bool, segment_start: Option<usize>) -> Option<usize> {
        let (dir, proto) = (self.dir, self.proto);
        let candidates = std::mem::take(&mut self.open_at).into_iter().chain(self.scanned_to..self.window.len());
        let mut open = Vec::new();
        for k in candidates {
            let at = &self.window[k..];
            let proven = if segment_start == Some(k) && starts_soupbin(at) {
                Some(true)
            } else {
                exact_chain(dir, proto, at, at_end)
            };
            match proven {
                Some(true) => return Some(k),
                None if !at_end => open.push(k),
                _ => {}
            }
        }
        let keep_from = open.first().copied().unwrap_or(self.window.len());
        self.counters.resync_skipped_bytes += keep_from as u64;
        self.window.drain(..keep_from);
        self.window_at += keep_from as u64;
        self.open_at = open.into_iter().map(|k| k - keep_from).collect();
        self.scanned_to = self.window.len();
        // The frames of bytes gone are no longer needed.
        while self.pieces.front().is_some_and(|&(_, end, _)| end <= self.window_at) {
            self.pieces.pop_front();
        }
        None
    }

    /// Frames `data` (following what the framer holds; nothing more to come when `at_end`). Returns
    /// whether it went through: otherwise a damaged header with no end proven stopped it, and the bytes
    /// after its first are in the window, to resynchronise on.
    pub(super) fn run(&mut self, data: &[u8], at_end: bool, meta: FrameRef, out: &mut impl FnMut(OrderMsg)) -> bool {
        let Self { framer, pieces, next_packet, counters, dir, proto, login_user, .. } = self;
        let dir = *dir;
        // Shared by the judge and the packets' decoding, which learns it from the first Enter Order.
        let version = Cell::new(*proto);
        let result = framer.feed_judged(
            data,
            |head| judge(dir, version.get(), head, at_end),
            |framed| {
                let pkt = match framed {
                    Framed::Packet(pkt) => pkt,
                    Framed::Skipped(n) => {
                        // A damaged packet, skipped to the end its judge proved.
                        let start = *next_packet;
                        let at = piece_at(pieces, start).map_or(meta.index, |f| f.index);
                        counters.framing_errors += 1;
                        earliest(&mut counters.first_bad_frame, at);
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
                if dir == OrderDir::Inbound && ty == PacketType::LoginRequest && matches!(pkt.total_len(), 49 | 54) {
                    // SoupBinTCP 4.1 §2.3.1: Username, 6 alphanumerics, right after the type byte (from a
                    // Login Request of its length only: a damaged header read as one is not a login).
                    *login_user = pkt.payload().first_chunk::<6>().copied().or(*login_user);
                }
                let carries = match dir {
                    OrderDir::Inbound => ty == PacketType::UnsequencedData,
                    OrderDir::Outbound => ty == PacketType::SequencedData || ty == PacketType::UnsequencedData,
                };
                if !carries {
                    return;
                }
                let (Some(first), Some(last)) = (piece_at(pieces, start), piece_at(pieces, end - 1)) else { return };
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
                        earliest(&mut counters.first_bad_frame, first.index);
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
            // The packet that stopped the framer starts at `next_packet`; the framer holds it and what
            // follows. Its first byte is dropped, the rest searched for a boundary.
            let start = self.next_packet;
            let at = piece_at(&self.pieces, start).map_or(meta.index, |f| f.index);
            self.counters.framing_errors += 1;
            self.bad(at);
            let mut rest = self.framer.take_pending();
            self.framer.reset();
            let first = rest.len().min(1);
            self.counters.resync_skipped_bytes += first as u64;
            rest.drain(..first);
            self.set_window(rest, start + 1);
            self.resync = true;
            return false;
        }
        // Pieces wholly before the next packet start are no longer needed, except the one holding a
        // packet in progress.
        let keep_from = self.next_packet;
        while let Some(&(_, end, _)) = self.pieces.front() {
            if end > keep_from {
                // A packet begun (the only way here for segments of whole packets is past this).
                self.note_held();
                break;
            }
            self.pieces.pop_front();
        }
        true
    }
}
