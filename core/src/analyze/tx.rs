//! TX timestamps of the order connections' writes (`wirestamp capture --source ebpf --tx-events`),
//! joined to the orders decoded from the captured egress frames.
//!
//! The sockops program reports, per `send()` of the trading app, the kernel's SCHED, SND (software, or
//! the NIC's hardware stamp) and ACK times keyed by the TCP sequence number of the write's last byte
//! (its tskey); the capture adds the write's first byte (the previous write's last + 1):
//!
//! ```text
//!   write k:   seq_first ............ seq_last      (absolute TCP sequence numbers, mod 2^32)
//!   order:              [first byte ... last byte]  the write carrying the order's LAST byte
//!                                                   is the one whose send made the order complete
//! ```
//!
//! An order is joined to the write whose byte range holds its last byte, on the connection with the
//! same endpoints (local = the app's end = the client, remote = the exchange). A write whose first byte
//! is unknown (first write seen of a connection established before the capture) holds only its last
//! byte as far as the join is concerned. Writes are kept per connection for [`TX_RETAIN_NS`] behind the
//! newest event of that connection, and at most [`TX_MAX_WRITES`] of them, so memory stays bounded.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};

/// How long a write's SND time is kept for the join, behind the connection's newest event.
pub const TX_RETAIN_NS: i64 = 2_000_000_000;
/// Writes kept per connection at most (6 MB): events are fed a second ahead of the frames, so a
/// connection writing faster than this per second loses the oldest before their orders come; they
/// are counted (`tx_writes_dropped` in the report).
pub const TX_MAX_WRITES: usize = 1 << 18;

/// Which TX timestamp an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxKind {
    /// The connection was established (`seq_last` = its first data byte).
    Established,
    /// The write entered the qdisc layer.
    Sched,
    /// The write was handed to the driver (software stamp).
    SndSoftware,
    /// The NIC's stamp of the write's transmission.
    SndHardware,
    /// The peer acknowledged the write's last byte.
    Ack,
}

impl TxKind {
    /// From the CSV's `event` column (`established`, `sched`, `snd_sw`, `snd_hw`, `ack`).
    pub fn parse(s: &str) -> Option<TxKind> {
        Some(match s {
            "established" => TxKind::Established,
            "sched" => TxKind::Sched,
            "snd_sw" => TxKind::SndSoftware,
            "snd_hw" => TxKind::SndHardware,
            "ack" => TxKind::Ack,
            _ => return None,
        })
    }
}

/// One TX timestamp of one write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxEvent {
    /// ns since the epoch (CLOCK_REALTIME-based, or the NIC's clock for `SndHardware`).
    pub time_ns: i64,
    /// Which timestamp.
    pub kind: TxKind,
    /// The app's (client's) end of the connection.
    pub local: SocketAddr,
    /// The exchange's end.
    pub remote: SocketAddr,
    /// TCP sequence number of the write's first byte, when known.
    pub seq_first: Option<u32>,
    /// TCP sequence number of the write's last byte (the tskey).
    pub seq_last: u32,
}

/// A write's SND time.
#[derive(Debug, Clone, Copy)]
struct Write {
    seq_first: Option<u32>,
    seq_last: u32,
    snd_ns: i64,
    hardware: bool,
    /// Its last byte is not after the previous write's (a new connection on the same ports).
    breaks: bool,
}

impl Write {
    fn holds(&self, seq: u32) -> bool {
        match self.seq_first {
            Some(f) => seq.wrapping_sub(f) <= self.seq_last.wrapping_sub(f),
            None => seq == self.seq_last,
        }
    }
}

/// The SND times of one connection's recent writes, in sequence order.
#[derive(Debug)]
pub(super) struct ConnWrites {
    writes: VecDeque<Write>,
    /// The newest SND time seen (before any, the range's start: event times may be negative).
    newest_ns: i64,
    /// Writes forgotten for room ([`TX_MAX_WRITES`]) before their retention ran out.
    pub(super) dropped: u64,
    /// Writes (but the front) whose `breaks` is set: while there are none, the writes are in sequence
    /// order and a binary search finds any byte.
    breaks: usize,
}

impl Default for ConnWrites {
    fn default() -> Self {
        ConnWrites { writes: VecDeque::new(), newest_ns: i64::MIN, dropped: 0, breaks: 0 }
    }
}

/// Normalises an IPv4-mapped IPv6 address (a dual-stack socket) to IPv4, as the frames carry it.
pub(super) fn canonical(a: IpAddr) -> IpAddr {
    a.to_canonical()
}

impl ConnWrites {
    /// Takes an SND event (others are ignored); a hardware stamp replaces a software one of the same write.
    pub(super) fn add(&mut self, e: &TxEvent) {
        let hardware = match e.kind {
            TxKind::SndSoftware => false,
            TxKind::SndHardware => true,
            _ => return,
        };
        self.newest_ns = self.newest_ns.max(e.time_ns);
        // The same write's other SND stamp, however many writes came between (a NIC's clock may
        // be behind the kernel's by many writes' worth).
        if let Some(w) = self.position(e.seq_last).map(|i| &mut self.writes[i]).filter(|w| w.seq_last == e.seq_last) {
            if hardware && !w.hardware {
                w.snd_ns = e.time_ns;
                w.hardware = true;
            }
            w.seq_first = w.seq_first.or(e.seq_first);
        } else {
            let breaks = self.writes.back().is_some_and(|b| (e.seq_last.wrapping_sub(b.seq_last) as i32) <= 0);
            self.breaks += usize::from(breaks);
            let w = Write { seq_first: e.seq_first, seq_last: e.seq_last, snd_ns: e.time_ns, hardware, breaks };
            self.writes.push_back(w);
        }
        while let Some(w) = self.writes.front() {
            if self.newest_ns.saturating_sub(w.snd_ns) > TX_RETAIN_NS {
                self.pop_front();
            } else if self.writes.len() > TX_MAX_WRITES {
                self.pop_front();
                self.dropped += 1;
            } else {
                break;
            }
        }
    }

    fn pop_front(&mut self) {
        self.writes.pop_front();
        // The new front has no predecessor: its break no longer counts.
        if let Some(f) = self.writes.front_mut()
            && std::mem::take(&mut f.breaks)
        {
            self.breaks -= 1;
        }
    }

    /// Where the write holding the byte of sequence number `seq` is, the newest if several do. In
    /// sequence order (no break), a binary search relative to `seq` (across the 2^32 wrap) finds it: a
    /// linear search per order or per event cost the square of the writes a second holds. Otherwise
    /// the writes are searched newest first.
    fn position(&self, seq: u32) -> Option<usize> {
        if self.breaks > 0 {
            return self.writes.iter().rposition(|w| w.holds(seq));
        }
        let i = self.writes.partition_point(|w| (w.seq_last.wrapping_sub(seq) as i32) < 0);
        self.writes.get(i).is_some_and(|w| w.holds(seq)).then_some(i)
    }

    /// The SND time of the write holding the byte of sequence number `seq` (the newest such write).
    pub(super) fn snd_of(&self, seq: u32) -> Option<i64> {
        self.position(seq).map(|i| self.writes[i].snd_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: TxKind, t: i64, first: Option<u32>, last: u32) -> TxEvent {
        let a: SocketAddr = "10.0.0.1:1".parse().unwrap();
        TxEvent { time_ns: t, kind, local: a, remote: a, seq_first: first, seq_last: last }
    }

    #[test]
    fn writes_hold_their_byte_ranges_across_the_wrap() {
        let mut c = ConnWrites::default();
        c.add(&ev(TxKind::Sched, 5, Some(0xffff_fff0), 0xffff_ffff));
        assert_eq!(c.snd_of(0xffff_fff5), None, "SCHED is not SND");
        c.add(&ev(TxKind::SndSoftware, 10, Some(0xffff_fff0), 0xffff_ffff));
        c.add(&ev(TxKind::SndSoftware, 20, Some(0), 9));
        c.add(&ev(TxKind::SndHardware, 15, Some(0), 9));
        c.add(&ev(TxKind::SndSoftware, 30, None, 100));
        assert_eq!(c.snd_of(0xffff_ffef), None);
        assert_eq!(c.snd_of(0xffff_fff0), Some(10));
        assert_eq!(c.snd_of(0xffff_ffff), Some(10));
        assert_eq!(c.snd_of(0), Some(15), "hardware stamp replaces software");
        assert_eq!(c.snd_of(9), Some(15));
        assert_eq!(c.snd_of(10), None);
        assert_eq!(c.snd_of(99), None, "unknown first byte: only the last byte is known");
        assert_eq!(c.snd_of(100), Some(30));
        c.add(&ev(TxKind::SndSoftware, 30 + TX_RETAIN_NS, Some(101), 200));
        assert_eq!(c.snd_of(9), None, "older than the retention");
        assert_eq!(c.snd_of(100), Some(30));
    }

    /// Many writes in sequence (across the wrap): each byte's write is found (by binary search), a
    /// hardware stamp reported a thousand writes after its software one still replaces it, a
    /// connection writing more than the cap within the retention loses its oldest writes and counts
    /// them, and a new connection on the same ports (sequence numbers going back) is still searched.
    #[test]
    fn many_writes_are_found_kept_within_bounds_and_counted_when_dropped() {
        let mut c = ConnWrites::default();
        let base = 0xffff_0000u32;
        // Write k holds bytes [base + 10k, base + 10k + 9], SND at k ns.
        let range = |k: u32| (base.wrapping_add(10 * k), base.wrapping_add(10 * k + 9));
        let n = TX_MAX_WRITES as u32 + 1_000;
        for k in 0..n {
            let (a, b) = range(k);
            c.add(&ev(TxKind::SndSoftware, i64::from(k), Some(a), b));
            if k >= 1_000 && k % 7 == 0 {
                // The NIC's stamp of write k - 1000, a thousand writes late.
                let (a, b) = range(k - 1_000);
                c.add(&ev(TxKind::SndHardware, -i64::from(k), Some(a), b));
            }
        }
        assert_eq!(c.dropped, 1_000, "the 1,000 oldest, forgotten for room");
        assert_eq!(c.snd_of(range(999).1), None);
        for k in [1_000, 1_001, 1_002, 5_000, 65_535, 65_536, n - 1_001, n - 1] {
            let (a, b) = range(k);
            let want = if (k + 1_000) % 7 == 0 && k + 1_000 < n { -i64::from(k + 1_000) } else { i64::from(k) };
            for seq in [a, a + 5, b] {
                assert_eq!(c.snd_of(seq), Some(want), "write {k}, byte {seq}");
            }
        }
        assert_eq!(c.snd_of(range(n).0), None, "past the last write");
        // A new connection from the same port: its first write's bytes lie before the last's.
        c.add(&ev(TxKind::SndSoftware, 7, Some(100), 199));
        assert_eq!(c.snd_of(150), Some(7));
        assert_eq!(c.snd_of(range(n - 1).1), Some(i64::from(n - 1)));
    }

    /// Event times are whatever the CSV says: a write at the range's start is retired by one at its
    /// end (more than i64::MAX later), without overflow.
    #[test]
    fn writes_at_the_ends_of_the_range_are_retired_without_overflow() {
        let mut c = ConnWrites::default();
        c.add(&ev(TxKind::SndSoftware, i64::MIN, Some(0), 9));
        assert_eq!(c.snd_of(5), Some(i64::MIN));
        c.add(&ev(TxKind::SndSoftware, i64::MAX, Some(10), 19));
        assert_eq!(c.snd_of(5), None, "older than the retention");
        assert_eq!(c.snd_of(15), Some(i64::MAX));
    }
}
