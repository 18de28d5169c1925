//! Market data: each feed's state, and a packet's messages through A/B arbitration into the tick index,
//! the symbol histories and the feed's metrics.

use super::arbiter::{Arrival, Ring, SessionRef};
use super::counters::Counters;
use super::eastern::EasternClock;
use super::flows::{FeedSpec, looks_like_mold};
use super::limits::{MAX_DETECTED_FEEDS, MAX_FEED_SESSIONS};
use super::symbols::SymbolTicks;
use super::{AB, Analyzer, E2C, METRICS, MatchRule, Metric, flows};
use crate::proto::itch::LocateMap;
use crate::proto::market::{MessageKey, MoldItchDecoder};
use crate::proto::moldudp64::{SeqTracker, Session};
use crate::stats::Tally;
use std::net::IpAddr;

#[derive(Debug)]
pub(super) struct FeedState {
    pub(super) spec: FeedSpec,
    pub(super) detected: bool,
    /// Dimension slots of this feed in exchange_to_capture, feed_ab_delay and tick_to_trade.
    pub(super) slots: [Option<usize>; 3],
    /// The open interval's samples in the first two slots (exchange_to_capture, feed_ab_delay),
    /// allocated on first use: a message records straight into its feed's.
    pub(super) open: [Option<Box<Tally>>; 2],
    pub(super) decoder: MoldItchDecoder,
    pub(super) frames: u64,
    pub(super) bad_packets: u64,
    pub(super) first_bad_frame: Option<u64>,
    pub(super) first_bad_reason: Option<String>,
    /// Lowest and highest message sequence seen.
    /// (`(u64::MAX, 0)` while none: see [`FeedState::seq_range`]).
    seq_span: (u64, u64),
    /// The session of the feed's latest packet, its stream in the sequence tracker and its session
    /// in the arbiter: the packets the fast path takes continue it ([`fast`](super::fast)).
    pub(super) lane: Option<(Session, usize, SessionRef)>,
    /// The sources that timed its frames ([`TsSource::clock_bit`](crate::time::TsSource::clock_bit)s): the clocks at
    /// its metrics' ends.
    pub(super) clocks: u32,
    /// MoldUDP64 sessions it brought (at most [`MAX_FEED_SESSIONS`]).
    pub(super) sessions: u32,
    /// Packets of further sessions, not analysed, and the first one's frame and session.
    pub(super) sessions_beyond: u64,
    pub(super) first_session_beyond: Option<(u64, Session)>,
    /// Packets the capture cut (its snap length), those of them cut inside their MoldUDP64 header,
    /// the messages their headers announce that were not captured whole, and the payload bytes cut.
    pub(super) packets_captured_short: u64,
    pub(super) headers_not_captured: u64,
    pub(super) messages_not_captured: u64,
    pub(super) bytes_not_captured: u64,
}

/// The feeds a datagram is matched against one by one, in a bit mask ([`Analyzer::known_feed`]);
/// those beyond are looked up by destination.
pub(super) const NEAR_FEEDS: usize = 64;

/// The [`FarIndex`](flows::FarIndex) of `feeds`.
pub(super) fn far_feeds(feeds: &[FeedState]) -> flows::FarIndex {
    flows::far_index(feeds.iter().map(|f| (f.spec.group, f.spec.port)), NEAR_FEEDS)
}

/// The copies of one market-data packet as both paths ([`Analyzer::frame`] and the fast path,
/// [`fast`](super::fast)) arbitrate and record them: one place for what a message does.
pub(super) struct Copies<'a> {
    /// The packet's session in the arbiter, and its ring.
    pub(super) arb: SessionRef,
    pub(super) ring: Ring<'a>,
    pub(super) feed: u16,
    pub(super) spec: &'a FeedSpec,
    /// The feed's dimension slots and open tallies ([`FeedState::slots`], [`FeedState::open`]).
    pub(super) slots: &'a mut [Option<usize>; 3],
    pub(super) open: &'a mut [Option<Box<Tally>>; 2],
    pub(super) t: i64,
    /// The packet's frame index (its low 32 bits for the arbiter: [`crate::analyze::arbiter::Tick::frame`]).
    frame: u64,
    pub(super) session: Session,
    /// The capture time on the Eastern local time line ([`EasternClock::local`]).
    capture_local: i64,
    pub(super) metrics: &'a mut [Metric; METRICS.len()],
    pub(super) counters: &'a mut Counters,
    pub(super) last_by_symbol: &'a mut SymbolTicks,
    /// The packet's session's locates ([`Analyzer::locates`]), under the symbol rule only.
    pub(super) locates: Option<&'a mut LocateMap>,
    pub(super) track_symbols: bool,
    /// A/B delays that belong to another feed than the packet's ([`Copies::earlier_copy`]), recorded
    /// before the next frame: `wake_at` is set so that its time step takes the slow path, which does
    /// (no check per packet for what is rare).
    pub(super) ab_elsewhere: &'a mut Vec<(u16, i64)>,
    pub(super) wake_at: &'a mut i64,
    /// For a packet that starts below the sequence its feed expects (the general walk's only): the
    /// tracker, to tell a repeat of a message this feed brought already (its duplicate, not an A/B
    /// copy) from a copy of what another feed brought first.
    pub(super) repeats: Option<&'a SeqTracker<u16>>,
}

/// A packet's session in the arbiter, for [`Copies::new`].
pub(super) enum ArbSession {
    /// Known, and started at the packet's time by [`Arbiter::packet_at`](super::arbiter::Arbiter::packet_at) (the fast
    /// path's lane).
    Started(SessionRef),
    /// To look up, the packet starting at this sequence.
    Find(u64),
}

impl<'a> Copies<'a> {
    /// Starts a packet of `session`, captured at `t` on feed `fi`.
    #[inline(always)]
    pub(super) fn new(
        a: &'a mut Analyzer,
        fi: usize,
        session: Session,
        arb: ArbSession,
        t: i64,
    ) -> (Copies<'a>, &'a mut MoldItchDecoder) {
        let track_symbols = matches!(a.cfg.matching, MatchRule::Symbol { .. });
        let Analyzer {
            feeds,
            arbiter,
            last_by_symbol,
            locates,
            metrics,
            counters,
            eastern,
            ab_elsewhere,
            wake_at,
            seq,
            last_frame,
            ..
        } = a;
        let FeedState { spec, slots, open, decoder, .. } = &mut feeds[fi];
        let (arb, repeats) = match arb {
            ArbSession::Started(r) => (r, None),
            ArbSession::Find(sequence) => {
                let behind = seq.next_expected(fi as u16, session).is_some_and(|next| sequence < next);
                (arbiter.packet(session, sequence, t), behind.then_some(&*seq))
            }
        };
        // The map is the session's; only the symbol rule reads it.
        let locates = track_symbols.then(|| {
            if locates.len() <= arb.index() {
                locates.resize_with(arb.index() + 1, LocateMap::default);
            }
            &mut locates[arb.index()]
        });
        let copies = Copies {
            locates,
            arb,
            ring: arbiter.ring(arb),
            feed: fi as u16,
            spec,
            slots,
            open,
            t,
            frame: *last_frame,
            session,
            capture_local: eastern.local(t),
            metrics,
            counters,
            last_by_symbol,
            track_symbols,
            ab_elsewhere,
            wake_at,
            repeats,
        };
        (copies, decoder)
    }

    /// One message of the packet: the first copy of its tick, a later copy, or a stale one.
    #[inline(always)]
    pub(super) fn message(&mut self, m: MessageKey) {
        let t = self.t;
        match self.ring.observe(m.seq, self.feed, m.stock_locate, t, self.frame as u32) {
            Arrival::First => {
                self.counters.ticks += 1;
                if let Some(locates) = self.locates.as_deref_mut()
                    && let Some(sym) = locates.learn(m.stock_locate, m.symbol)
                    && self.last_by_symbol.push(
                        m.stock_locate,
                        sym,
                        t,
                        (self.arb.index() as u32, m.seq),
                        self.feed,
                        self.frame,
                    )
                {
                    // Offered to the parked orders before the next frame (`Analyzer::late_ticks`).
                    *self.wake_at = i64::MIN;
                }
                // Exchange (ITCH timestamp, Eastern time) to capture.
                let delay = EasternClock::delay_from(self.capture_local, m.timestamp_ns);
                match &mut self.open[0] {
                    Some(tally) => tally.record(delay),
                    None => self.first_sample(0, delay),
                }
            }
            // A repeat of what this feed brought already is its duplicate (the tracker counts it).
            Arrival::Later { .. } if self.repeats.is_some_and(|r| r.has_seen(self.feed, self.session, m.seq)) => {}
            Arrival::Later { delay_ns, first_feed } if first_feed != self.feed => {
                self.counters.tick_copies += 1;
                if delay_ns < 0 {
                    return self.earlier_copy(m.seq, m.stock_locate, first_feed, -delay_ns);
                }
                match &mut self.open[1] {
                    Some(tally) => tally.record(delay_ns),
                    None => self.first_sample(1, delay_ns),
                }
            }
            // A repeat on the feed of the first copy is no A/B copy: the feed counts it as a duplicate.
            Arrival::Later { .. } => {}
            Arrival::Stale => self.counters.stale_copies += 1,
        }
    }

    /// A copy stamped before the one seen first (merged taps whose clocks differ, or one tap's frames
    /// recorded out of order by the host): it is the tick's first copy, and the copy seen first on
    /// `first_feed` trails it by `delay_ns`. The arbiter took its time; the symbol history does too,
    /// and the A/B delay goes to the feed of the later copy (as a positive delay, where a copy in
    /// order puts it), once the packet is done.
    #[cold]
    #[inline(never)]
    fn earlier_copy(&mut self, seq: u64, locate: u16, first_feed: u16, delay_ns: i64) {
        // Scalars, not the message's keys: passing those made the hot loop build them on the stack.
        if self.track_symbols {
            // `wake_at` is set below: a retimed tick for the parked orders is offered them then.
            let old = self.t.saturating_add(delay_ns);
            self.last_by_symbol.retime(locate, old, (self.arb.index() as u32, seq), self.t, self.feed, self.frame);
        }
        self.ab_elsewhere.push((first_feed, delay_ns));
        *self.wake_at = i64::MIN;
    }

    /// The feed's first sample in exchange_to_capture (`k` 0) or feed_ab_delay (1).
    #[cold]
    fn first_sample(&mut self, k: usize, ns: i64) {
        record_feed_sample(self.spec, &mut *self.slots, &mut *self.open, &mut self.metrics[..], k, ns);
    }
}

/// Records `ns` in the open tally of feed `spec` in exchange_to_capture (`k` 0) or feed_ab_delay (1),
/// the feed's slot in the metric and its tally made on first use.
fn record_feed_sample(
    spec: &FeedSpec,
    slots: &mut [Option<usize>; 3],
    open: &mut [Option<Box<Tally>>; 2],
    metrics: &mut [Metric],
    k: usize,
    ns: i64,
) {
    slots[k].get_or_insert_with(|| metrics[[E2C, AB][k]].slot(format!("feed:{spec}")));
    open[k].get_or_insert_with(Box::default).record(ns);
}

impl FeedState {
    /// Widens the range of sequences seen by a packet's header (`count` as on the wire).
    #[inline(always)]
    pub(super) fn add_seq_range(&mut self, sequence: u64, count: u16) {
        if count > 0 && count != crate::proto::moldudp64::END_OF_SESSION {
            // Saturating: a hostile sequence near the top of the range must not wrap the range.
            let last = sequence.saturating_add(u64::from(count) - 1);
            self.seq_span = (self.seq_span.0.min(sequence), self.seq_span.1.max(last));
        }
    }

    /// Lowest and highest message sequence seen, if any.
    #[inline]
    pub(super) fn seq_range(&self) -> Option<(u64, u64)> {
        (self.seq_span.0 <= self.seq_span.1).then_some(self.seq_span)
    }

    /// Counts a packet captured short: `messages` its header announces not captured whole, `bytes` of
    /// its payload.
    #[cold]
    #[inline(never)]
    pub(super) fn cut(&mut self, messages: u64, bytes: usize) {
        self.packets_captured_short += 1;
        self.messages_not_captured += messages;
        self.bytes_not_captured += bytes as u64;
    }

    /// Counts a malformed packet, keeping the first one's frame and reason for the report.
    #[inline]
    fn bad_packet(&mut self, frame: u64, why: &dyn std::fmt::Display) {
        self.bad_packets += 1;
        if self.first_bad_frame.is_none() {
            self.first_bad_frame = Some(frame);
            self.first_bad_reason = Some(why.to_string());
        }
    }

    pub(super) fn new(spec: FeedSpec, detected: bool) -> Self {
        FeedState {
            spec,
            detected,
            slots: [None; 3],
            open: [None, None],
            decoder: MoldItchDecoder::new(),
            frames: 0,
            bad_packets: 0,
            first_bad_frame: None,
            first_bad_reason: None,
            seq_span: (u64::MAX, 0),
            lane: None,
            clocks: 0,
            sessions: 0,
            sessions_beyond: 0,
            first_session_beyond: None,
            packets_captured_short: 0,
            headers_not_captured: 0,
            messages_not_captured: 0,
            bytes_not_captured: 0,
        }
    }
}

impl Analyzer {
    /// The feed a datagram to `dst:dport` belongs to, detected from `payload` (`not_captured` bytes
    /// after it cut by the capture) while detecting.
    pub(super) fn feed_for(&mut self, dst: IpAddr, dport: u16, payload: &[u8], not_captured: usize) -> Option<usize> {
        // Through the fast path's cache (not with `--no-fast-path`, which checks the one against the other).
        let known = match dst {
            IpAddr::V4(v4) if self.cfg.fast_path => self.cached_feed(v4, dport),
            _ => self.known_feed(dst, dport),
        };
        if known.is_some() {
            return known;
        }
        let looks = |p| match not_captured {
            0 => looks_like_mold(p),
            cut => flows::looks_like_cut_mold(p, p.len() + cut),
        };
        if self.detect && looks(payload) {
            if self.feeds.len() >= MAX_DETECTED_FEEDS {
                self.counters.feeds_not_detected_frames += 1;
                return None;
            }
            let spec = FeedSpec { group: Some(dst), port: dport, proto: flows::FeedProto::MoldItch50 };
            self.feeds.push(FeedState::new(spec, true));
            let i = self.feeds.len() - 1;
            if i >= NEAR_FEEDS {
                self.far_feeds.entry((spec.group, spec.port)).or_insert(i);
            }
            return Some(i);
        }
        None
    }

    /// The first feed (in order) that a datagram to `dst:dport` belongs to.
    #[inline(always)]
    pub(super) fn known_feed(&self, dst: IpAddr, dport: u16) -> Option<usize> {
        // Every near feed is tested (no early exit) and the first match taken from a bit mask: A and
        // B frames interleave as their race goes, so an early exit would mispredict on most frames.
        let mut mask = 0u64;
        for (i, f) in self.feeds.iter().take(NEAR_FEEDS).enumerate() {
            mask |= u64::from(f.spec.port == dport) << i;
        }
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            if self.feeds[i].spec.matches(dst, dport) {
                return Some(i);
            }
            mask &= mask - 1;
        }
        if self.feeds.len() > NEAR_FEEDS {
            return flows::far_first(&self.far_feeds, dst, dport);
        }
        None
    }

    /// One packet of feed `fi`: `payload` the captured UDP payload, `not_captured` the bytes after it
    /// the capture cut (0: captured whole). A packet captured short is read as far as it was captured:
    /// its header moves the sequence on as usual, its messages captured whole are used as any, and
    /// those the capture cut are counted as not captured ([`FeedState::cut`]), not as malformed.
    pub(super) fn market_data(&mut self, fi: usize, index: u64, t: i64, payload: &[u8], not_captured: usize) {
        // A packet in the common shape takes the plain walk, as on the fast path; `--no-fast-path`
        // keeps the general walk for every packet, to check the one against the other.
        if self.cfg.fast_path
            && not_captured == 0
            && let Some((lane, sequence)) = self.plain_lane(fi, payload)
        {
            self.plain_packets += 1;
            return self.market_plain(fi, t, payload, lane, sequence);
        }
        self.feeds[fi].frames += 1;
        let truncated = self.feeds[fi].decoder.itch.truncated;
        let datagram = payload.len() + not_captured;
        let mut w = match self.feeds[fi].decoder.walk_keys(payload) {
            Ok(w) => w,
            Err(e) => {
                let feed = &mut self.feeds[fi];
                if not_captured > 0 {
                    feed.cut(0, not_captured);
                    if datagram >= crate::proto::moldudp64::HEADER_LEN {
                        // Its sequence and count not captured: its messages show as missing after it.
                        feed.headers_not_captured += 1;
                        return;
                    }
                }
                return feed.bad_packet(index, &e);
            }
        };
        if self.seq.next_expected(fi as u16, w.session()).is_none() {
            // Each session costs its state (about 1.5 KB): a stream of garbage session names must
            // not take gigabytes.
            let feed = &mut self.feeds[fi];
            if feed.sessions >= MAX_FEED_SESSIONS {
                feed.sessions_beyond += 1;
                feed.first_session_beyond.get_or_insert((index, w.session()));
                return;
            }
            feed.sessions += 1;
        }
        let (mut copies, decoder) = Copies::new(self, fi, w.session(), ArbSession::Find(w.sequence()), t);
        while let Some(m) = decoder.next_key(&mut w, copies.track_symbols) {
            copies.message(m);
        }
        let info = decoder.end_keys(&w);
        let arb = copies.arb;
        self.seq.observe(fi as u16, info.session, info.sequence, info.count);
        self.feeds[fi].lane = Some((info.session, self.seq.last_stream(), arb));
        self.feeds[fi].add_seq_range(info.sequence, info.count);
        let feed = &mut self.feeds[fi];
        // Captured short: a block that would have ended inside the datagram was cut by the capture, and
        // every one after it (one running past the datagram is malformed all the same).
        let cut = not_captured > 0
            && match info.error {
                Some(crate::proto::ProtoError::Truncated { offset, need, .. }) => offset + need <= datagram,
                Some(_) => false,
                None => info.trailing == 0,
            };
        if not_captured > 0 {
            let announced = if info.count == crate::proto::moldudp64::END_OF_SESSION { 0 } else { info.count };
            let lost = if cut { u64::from(announced.saturating_sub(info.blocks)) } else { 0 };
            feed.cut(lost, not_captured);
        }
        if let Some(e) = info.error.filter(|_| !cut) {
            feed.bad_packet(index, &e);
        } else if info.trailing > 0 {
            let why = format!("{} bytes after the {} message blocks its header announces", info.trailing, info.count);
            feed.bad_packet(index, &why);
        } else if feed.decoder.itch.truncated > truncated
            && let Some(e) = feed.decoder.itch.last_error
        {
            feed.bad_packet(index, &e);
        }
    }

    /// Records the A/B delays a packet found for other feeds ([`Copies::earlier_copy`]).
    #[cold]
    pub(super) fn record_ab_elsewhere(&mut self) {
        let Analyzer { feeds, metrics, ab_elsewhere, .. } = self;
        for (feed, delay) in ab_elsewhere.drain(..) {
            if let Some(f) = feeds.get_mut(usize::from(feed)) {
                record_feed_sample(&f.spec, &mut f.slots, &mut f.open, metrics, 1, delay);
            }
        }
    }
}
