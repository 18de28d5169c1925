//! While order sessions are detected from the traffic: the latest segments of the TCP connections no
//! session claims yet.
//!
//! A session is detected on a segment that begins with whole SoupBinTCP packets. What its connection
//! carried before that one (the handshake, the first part of an order split over segments) is read
//! from here once it is, instead of being lost: an order would go missing and its response count as
//! unmatched. Bounded: a few connections' last segments, so that the unrelated TCP traffic of a
//! busy host costs little.

use super::ConnKey;
use crate::fxhash::FxHashMap;
use crate::time::{ClockQuality, TsSource};
use std::collections::VecDeque;
use std::net::IpAddr;

/// Connections held at most; beyond, a new one is held only in the place of one idle for
/// [`IDLE_NS`].
const MAX_CONNECTIONS: usize = 256;
/// Per connection, its latest segments, at most this many and this many payload bytes.
const MAX_SEGMENTS: usize = 64;
const MAX_BYTES: usize = 16 << 10;
/// A connection with no segment for this long gives its place to a new one.
const IDLE_NS: i64 = 10_000_000_000;

/// A TCP segment held, with what its frame's analysis needs.
#[derive(Debug, Clone)]
pub(super) struct HeldSegment {
    pub index: u64,
    pub time_ns: i64,
    pub ts_source: TsSource,
    pub quality: ClockQuality,
    pub src: IpAddr,
    pub sport: u16,
    pub dst: IpAddr,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub payload: Vec<u8>,
    /// Payload bytes the capture cut after `payload`, and the bytes it captured of the frame.
    pub not_captured: u32,
    pub caplen: u32,
}

#[derive(Debug, Default)]
struct Connection {
    segments: VecDeque<HeldSegment>,
    bytes: usize,
    last_ns: i64,
}

/// The latest segments of unclaimed TCP connections, by connection (both directions together).
#[derive(Debug, Default)]
pub(super) struct Backlog {
    connections: FxHashMap<ConnKey, Connection>,
    /// Payload buffers of segments forgotten, for the next ones held: in a steady stream of unrelated
    /// traffic, holding a segment allocates nothing.
    spare: Vec<Vec<u8>>,
}

/// Spare buffers kept at most (a connection's worth).
const MAX_SPARE: usize = MAX_SEGMENTS;

impl Backlog {
    /// A buffer holding `payload`, reused from a segment forgotten when there is one.
    pub fn buffer(&mut self, payload: &[u8]) -> Vec<u8> {
        let mut b = self.spare.pop().unwrap_or_default();
        b.clear();
        b.extend_from_slice(payload);
        b
    }

    /// Holds `s`, forgetting its connection's oldest segments beyond the bounds.
    pub fn hold(&mut self, s: HeldSegment) {
        let key = if (s.src, s.sport) <= (s.dst, s.dport) {
            (s.src, s.sport, s.dst, s.dport)
        } else {
            (s.dst, s.dport, s.src, s.sport)
        };
        if !self.connections.contains_key(&key) && self.connections.len() >= MAX_CONNECTIONS {
            let now = s.time_ns;
            self.connections.retain(|_, c| now.saturating_sub(c.last_ns) < IDLE_NS);
            if self.connections.len() >= MAX_CONNECTIONS {
                return;
            }
        }
        let c = self.connections.entry(key).or_default();
        c.last_ns = s.time_ns;
        c.bytes += s.payload.len();
        c.segments.push_back(s);
        // The newest stays, however large (a segment the NIC merged may exceed the bound alone).
        while c.segments.len() > 1 && (c.segments.len() > MAX_SEGMENTS || c.bytes > MAX_BYTES) {
            let Some(old) = c.segments.pop_front() else { break };
            c.bytes -= old.payload.len();
            if self.spare.len() < MAX_SPARE {
                self.spare.push(old.payload);
            }
        }
    }

    /// Takes out the segments of every connection `claimed` says a session now claims (asked of one
    /// segment per connection), in capture order.
    pub fn take(&mut self, mut claimed: impl FnMut(&HeldSegment) -> bool) -> Vec<HeldSegment> {
        let keys: Vec<ConnKey> = self
            .connections
            .iter()
            .filter(|(_, c)| c.segments.front().is_some_and(&mut claimed))
            .map(|(k, _)| *k)
            .collect();
        let mut out: Vec<HeldSegment> =
            keys.iter().filter_map(|k| self.connections.remove(k)).flat_map(|c| c.segments).collect();
        out.sort_by_key(|s| s.index);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn seg(index: u64, from_client: bool, client_port: u16, len: usize) -> HeldSegment {
        let (client, exchange) = (IpAddr::V4(Ipv4Addr::new(10, 1, 0, 2)), IpAddr::V4(Ipv4Addr::new(10, 1, 0, 1)));
        let ((src, sport), (dst, dport)) = if from_client {
            ((client, client_port), (exchange, 8003))
        } else {
            ((exchange, 8003), (client, client_port))
        };
        HeldSegment {
            index,
            time_ns: index as i64,
            ts_source: TsSource::PcapRecord,
            quality: ClockQuality::default(),
            src,
            sport,
            dst,
            dport,
            seq: 0,
            ack: 0,
            flags: 0,
            payload: vec![0; len],
            not_captured: 0,
            caplen: 0,
        }
    }

    /// Both directions of a connection are one; what is taken comes in capture order, and only the
    /// connections claimed; a connection keeps its latest 64 segments and 16 KiB.
    #[test]
    fn connections_are_held_both_ways_and_bounded() {
        let mut b = Backlog::default();
        b.hold(seg(0, true, 40001, 0));
        b.hold(seg(1, true, 40002, 10));
        b.hold(seg(2, false, 40001, 0));
        b.hold(seg(3, true, 40001, 5));
        let taken: Vec<u64> = b.take(|s| s.sport == 40001 || s.dport == 40001).iter().map(|s| s.index).collect();
        assert_eq!(taken, [0, 2, 3]);
        assert!(b.take(|s| s.sport == 40001 || s.dport == 40001).is_empty());
        for i in 10..110 {
            b.hold(seg(i, true, 40002, 1));
        }
        let taken: Vec<u64> = b.take(|_| true).iter().map(|s| s.index).collect();
        assert_eq!(taken, (46..110).collect::<Vec<_>>());
        for i in 0..5 {
            b.hold(seg(i, true, 40003, 5_000));
        }
        let taken: Vec<u64> = b.take(|_| true).iter().map(|s| s.index).collect();
        assert_eq!(taken, [2, 3, 4], "16 KiB: three of 5,000 bytes");
        // The buffers of segments forgotten serve the next ones (no allocation per segment in a steady
        // stream): after 70 segments of 200 bytes on one connection, the next buffer is one of theirs.
        for i in 0..70 {
            let payload = b.buffer(&[7; 200]);
            b.hold(HeldSegment { payload, ..seg(i, true, 40005, 0) });
        }
        assert!(!b.spare.is_empty());
        let reused = b.buffer(b"xy");
        assert!(reused.capacity() >= 200 && reused == b"xy", "{}", reused.capacity());
        b.take(|_| true);
        // A segment larger than the bound alone (merged by the NIC) is kept, alone.
        b.hold(seg(0, true, 40004, 100));
        b.hold(seg(1, true, 40004, 20_000));
        let taken: Vec<u64> = b.take(|_| true).iter().map(|s| s.index).collect();
        assert_eq!(taken, [1]);
    }
}
