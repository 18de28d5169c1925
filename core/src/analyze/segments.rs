//! Order sessions' TCP segments into their connections' streams, and the budgets all streams share.

use super::flows::{OrderProto, OrderSpec, far_first, starts_soupbin};
use super::limits::{HOLD_MAX_NS, MAX_CONNECTIONS, MAX_DETECTED_SESSIONS};
use super::orders::{FrameRef, OrderStream};
use super::{
    Analyzer, Conn, ConnKey, METRICS, MatchRule, Segment, SessionState, detect_ouch_version, fmt_ip,
    unsequenced_direction,
};
use crate::proto::OrderDir;
use std::net::IpAddr;

/// The order sessions a segment is matched against one by one ([`Analyzer::session_for`]); those
/// beyond are looked up by exchange end: tested one by one on every segment and datagram, 10,000
/// declared sessions made the analysis 55 times slower.
pub(super) const NEAR_SESSIONS: usize = 64;

/// The [`FarIndex`](super::flows::FarIndex) of `sessions`, by exchange end.
pub(super) fn far_sessions(sessions: &[SessionState]) -> super::flows::FarIndex {
    super::flows::far_index(sessions.iter().map(|s| (s.spec.host, s.spec.port)), NEAR_SESSIONS)
}

impl Analyzer {
    pub(super) fn session_for(
        &mut self,
        src: IpAddr,
        sport: u16,
        dst: IpAddr,
        dport: u16,
        payload: &[u8],
    ) -> Option<(usize, bool)> {
        for (i, s) in self.sessions.iter().enumerate().take(NEAR_SESSIONS) {
            if let Some(to) = s.spec.direction(src, sport, dst, dport) {
                return Some((i, to));
            }
        }
        if self.sessions.len() > NEAR_SESSIONS {
            // The first session either end belongs to, and its direction as the loop would find it.
            let first = match (far_first(&self.far_sessions, dst, dport), far_first(&self.far_sessions, src, sport)) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if let Some(i) = first {
                return self.sessions[i].spec.direction(src, sport, dst, dport).map(|to| (i, to));
            }
        }
        if !self.detect || !starts_soupbin(payload) {
            return None;
        }
        // Which end is the exchange: clients send Login Request, heartbeats, Logout; Unsequenced Data
        // goes both ways (SoupBinTCP 4.1), so its OUCH message tells.
        let to_exchange = match payload[2] {
            b'L' | b'R' | b'O' => true,
            b'U' => unsequenced_direction(payload)?,
            b'A' | b'J' | b'S' | b'H' | b'Z' => false,
            _ => return None,
        };
        if self.sessions.len() >= MAX_DETECTED_SESSIONS {
            self.counters.sessions_not_detected_frames += 1;
            return None;
        }
        let (host, port) = if to_exchange { (dst, dport) } else { (src, sport) };
        // The version, from an Enter Order in this first packet; else 5.0 (the current one) until one
        // shows it.
        let first = detect_ouch_version(payload);
        let proto = first.unwrap_or(OrderProto::Ouch50);
        let spec = OrderSpec { host: Some(host), port, proto };
        self.sessions.push(SessionState {
            spec,
            detected: true,
            version_unknown: first.is_none(),
            slots: [None; METRICS.len()],
            clocks: [0; 2],
        });
        let i = self.sessions.len() - 1;
        if i >= NEAR_SESSIONS {
            self.far_sessions.entry((spec.host, spec.port)).or_insert(i);
        }
        Some((i, to_exchange))
    }

    /// The first order session whose exchange end is `addr:port`.
    pub(super) fn session_of_end(&self, addr: IpAddr, port: u16) -> Option<usize> {
        let near = self.sessions.iter().take(NEAR_SESSIONS).position(|s| s.spec.is_exchange_end(addr, port));
        near.or_else(|| far_first(&self.far_sessions, addr, port))
    }

    /// One segment of order session `si`'s connection `key`. `CUT`: a frame captured short was seen
    /// ([`Analyzer::cut_seen`]), so the segment may be one, or one cut before may wait for the stream
    /// ([`OrderStream::segment_cut`]); a capture without (the usual) keeps the path it had before.
    pub(super) fn order_segment<const CUT: bool>(
        &mut self,
        si: usize,
        key: ConnKey,
        to_exchange: bool,
        seg: Segment<'_>,
        frame: FrameRef,
    ) {
        let ci = match self.conns.get(&key) {
            Some(&c) => c,
            None if self.conn_list.len() >= MAX_CONNECTIONS => {
                self.counters.connections_not_analysed_frames += 1;
                return;
            }
            None => {
                let s = &self.sessions[si];
                let proto = (!s.version_unknown).then_some(s.spec.proto);
                self.conn_list.push(Conn {
                    session: si,
                    label: format!("{}:{}>{}:{}", fmt_ip(key.0), key.1, fmt_ip(key.2), key.3),
                    key,
                    to_exchange: OrderStream::new(OrderDir::Inbound, proto),
                    from_exchange: OrderStream::new(OrderDir::Outbound, proto),
                    frames: 0,
                    reset: false,
                    marks: (i64::MAX, i64::MAX),
                    held: [(i64::MAX, 0); 2],
                    framing: [(i64::MAX, 0); 2],
                });
                self.conns.insert(key, self.conn_list.len() - 1);
                self.conn_list.len() - 1
            }
        };
        let mut msgs = std::mem::take(&mut self.scratch);
        let conn = &mut self.conn_list[ci];
        conn.frames += 1;
        let (this, other) = if to_exchange {
            (&mut conn.to_exchange, &mut conn.from_exchange)
        } else {
            (&mut conn.from_exchange, &mut conn.to_exchange)
        };
        let new_connection = if seg.syn {
            // A new connection on the same addresses and ports (a client reconnecting from a fixed
            // port): the old one ends here, both ways, as at the capture's end. A SYN with data or
            // a FIN is not taken for one (a damaged segment: it would throw the stream off).
            !seg.fin && seg.payload.is_empty() && this.is_new_connection(seg.seq)
        } else {
            // After a reset, data far from the stream is a new connection's whose SYN the capture
            // missed (near it: a retransmission, or a segment after a loss).
            conn.reset && !seg.payload.is_empty() && this.far_from(seg.seq)
        };
        if new_connection {
            this.restart(frame.index, &mut |m| msgs.push(m));
            other.restart(frame.index, &mut |m| msgs.push(m));
            conn.reset = false;
        }
        if seg.rst {
            conn.reset = true;
        }
        // The ACK first: data of the other direction waiting behind a range the capture missed is
        // released by it, and this segment may carry the responses to those orders.
        if let Some(ack) = seg.ack {
            other.acked(ack, frame, &mut |m| msgs.push(m));
        }
        if CUT && this.takes_cut(seg.not_captured) {
            this.segment_cut(seg.seq, seg.syn, seg.payload, seg.not_captured, frame, &mut |m| msgs.push(m));
        } else {
            this.segment(seg.seq, seg.syn, seg.payload, frame, &mut |m| msgs.push(m));
        }
        if seg.fin {
            // The FIN follows every byte the segment carried, captured or not.
            let cut = if CUT { seg.not_captured as usize } else { 0 };
            this.fin(seg.seq, seg.payload.len() + cut, frame, &mut |m| msgs.push(m));
        }
        if let (Some(proto), None) = (this.proto(), other.proto()) {
            // An Enter Order showed the session's version: the responses are read in it too.
            other.set_proto(proto);
            let s = &mut self.sessions[si];
            if s.version_unknown {
                (s.spec.proto, s.version_unknown) = (proto, false);
            }
        }
        // (Looked at here, not in `update_hold`: the segment's path stays as short.)
        let held_changed = this.held_changed() | other.held_changed();
        for m in msgs.drain(..) {
            self.order_msg(ci, m);
        }
        self.scratch = msgs;
        self.update_hold(ci);
        if held_changed {
            self.update_held(ci);
            if self.held_tcp > self.limits.held_tcp {
                self.held_tcp_for_room(frame);
            }
            if self.held_framing > self.limits.held_framing {
                self.framing_for_room(frame);
            }
        }
    }

    /// The framing buffers of all order streams take more than [`MAX_HELD_FRAMING`](super::limits::MAX_HELD_FRAMING) at
    /// `frame`: the stream holding the oldest byte gives up what its framing holds, as at a hole (then the next oldest,
    /// until all take no more).
    #[cold]
    #[inline(never)]
    pub(super) fn framing_for_room(&mut self, frame: FrameRef) {
        let mut msgs = std::mem::take(&mut self.scratch);
        while self.held_framing > self.limits.held_framing {
            let Some(&(_, ci, dir)) = self.framing_by_age.first() else { break };
            let c = &mut self.conn_list[ci];
            let stream = if dir == 0 { &mut c.to_exchange } else { &mut c.from_exchange };
            let bytes = stream.give_up_framing(frame, &mut |m| msgs.push(m));
            self.counters.framing_released_for_room += 1;
            self.counters.framing_bytes_released_for_room += bytes;
            self.counters.first_framing_released_for_room_frame.get_or_insert(frame.index);
            for m in msgs.drain(..) {
                self.order_msg(ci, m);
            }
            let held = self.conn_list[ci].framing[dir];
            self.update_hold(ci);
            self.update_held(ci);
            if self.conn_list[ci].framing[dir] == held {
                // Nothing given up (never so: the buffers were freed): not a loop forever.
                break;
            }
        }
        self.scratch = msgs;
    }

    /// The out-of-order bytes held by all order streams cost more than [`MAX_HELD_TCP`](super::limits::MAX_HELD_TCP) at
    /// `frame`: the stream holding the oldest gives up the ranges it waits for, first to last, until all hold no more
    /// (then the next oldest, if it did not suffice), each a hole, what follows read.
    #[cold]
    #[inline(never)]
    fn held_tcp_for_room(&mut self, frame: FrameRef) {
        let mut msgs = std::mem::take(&mut self.scratch);
        while self.held_tcp > self.limits.held_tcp {
            let Some(&(_, ci, dir)) = self.held_by_age.first() else { break };
            let over = self.held_tcp - self.limits.held_tcp;
            let c = &mut self.conn_list[ci];
            let stream = if dir == 0 { &mut c.to_exchange } else { &mut c.from_exchange };
            let (holes, bytes) = stream.give_up(over, frame, &mut |m| msgs.push(m));
            self.counters.tcp_gaps_released_for_room += holes;
            self.counters.tcp_gap_bytes_released_for_room += bytes;
            self.counters.first_tcp_released_for_room_frame.get_or_insert(frame.index);
            for m in msgs.drain(..) {
                self.order_msg(ci, m);
            }
            let held = self.conn_list[ci].held[dir];
            self.update_hold(ci);
            self.update_held(ci);
            if self.conn_list[ci].held[dir] == held {
                // Nothing given up (never so: a stream in the index holds bytes): not a loop forever.
                break;
            }
        }
        self.scratch = msgs;
    }

    /// [`Analyzer::held_by_age`] and [`Analyzer::held_tcp`] follow what connection `ci`'s reassemblers
    /// hold, [`Analyzer::framing_by_age`] and [`Analyzer::held_framing`] what its framing holds, after
    /// a segment, an expiry or a release for room (when it changed).
    #[cold]
    #[inline(never)]
    pub(super) fn update_held(&mut self, ci: usize) {
        let c = &mut self.conn_list[ci];
        if !(c.to_exchange.take_held_change() | c.from_exchange.take_held_change()) {
            return;
        }
        for (dir, stream) in [&mut c.to_exchange, &mut c.from_exchange].into_iter().enumerate() {
            let now = stream.held().unwrap_or((i64::MAX, 0));
            let was = std::mem::replace(&mut c.held[dir], now);
            self.held_tcp = self.held_tcp - was.1 + now.1;
            follow(&mut self.held_by_age, (ci, dir), was.0, now.0);
            let now = stream.framing_held().unwrap_or((i64::MAX, 0));
            let was = std::mem::replace(&mut c.framing[dir], now);
            self.held_framing = self.held_framing - was.1 + now.1;
            follow(&mut self.framing_by_age, (ci, dir), was.0, now.0);
        }

        /// Moves direction `at`'s entry in `by_age` from time `was` to `now` (`i64::MAX`: none).
        fn follow(
            by_age: &mut std::collections::BTreeSet<(i64, usize, usize)>,
            at: (usize, usize),
            was: i64,
            now: i64,
        ) {
            if was != now {
                if was != i64::MAX {
                    by_age.remove(&(was, at.0, at.1));
                }
                if now != i64::MAX {
                    by_age.insert((now, at.0, at.1));
                }
            }
        }
    }

    /// Recomputes [`Analyzer::hold_from`] and [`Analyzer::gap_due`] after an order segment, an
    /// expiry or a release for room on connection `ci` (the only things that change them) and tells
    /// the arbiter and the symbol histories. Nothing to do when the connection's marks did not move
    /// (most segments): the minimums are as they were, and `wake_at` is no later than `gap_due`
    /// (lowered here, set with it in `advance_time_slow`).
    pub(super) fn update_hold(&mut self, ci: usize) {
        let c = &mut self.conn_list[ci];
        let held = c.to_exchange.oldest_held().unwrap_or(i64::MAX);
        let due = [&c.to_exchange, &c.from_exchange].into_iter().filter_map(OrderStream::gap_deadline).min();
        let marks = (held, due.unwrap_or(i64::MAX));
        if marks == c.marks {
            return;
        }
        let old = std::mem::replace(&mut c.marks, marks);
        for (set, was, now) in [(&mut self.holds, old.0, marks.0), (&mut self.dues, old.1, marks.1)] {
            if was != now {
                set.remove(&(was, ci));
                if now != i64::MAX {
                    set.insert((now, ci));
                }
            }
        }
        self.gap_due = self.dues.first().map_or(i64::MAX, |&(t, _)| t);
        self.wake_at = self.wake_at.min(self.gap_due);
        let from = self.holds.first().map_or(i64::MAX, |&(t, _)| t);
        if from != self.hold_from {
            self.hold_from = from;
            // Only what the rule reads: the arbiter's ticks under the token rule, the symbol
            // histories under the symbol rule.
            match self.cfg.matching {
                MatchRule::Token { .. } => self.arbiter.hold(from, HOLD_MAX_NS),
                MatchRule::Symbol { .. } => self.last_by_symbol.hold(from),
            }
        }
    }
}
