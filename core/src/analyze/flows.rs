//! Which traffic is what: market-data feeds and order sessions, given by the user or detected.
//!
//! A feed is `udp:GROUP:PORT[@proto]` (GROUP an IP address, usually multicast; `*` for any), an order
//! session `tcp:HOST:PORT[@proto]` (the exchange side's address and port). Protocols: `moldudp64`
//! (ITCH 5.0 inside, the default for feeds), `soupbin-ouch50` (default for order sessions) and
//! `soupbin-ouch42`.

use std::net::IpAddr;
use std::str::FromStr;

/// What a feed carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FeedProto {
    /// NASDAQ ITCH 5.0 over MoldUDP64.
    MoldItch50,
}

/// What an order session carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderProto {
    /// OUCH 5.0 over SoupBinTCP.
    Ouch50,
    /// OUCH 4.2 over SoupBinTCP.
    Ouch42,
}

/// A market-data feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FeedSpec {
    /// Destination address (`None`: any).
    pub group: Option<IpAddr>,
    /// Destination UDP port.
    pub port: u16,
    /// Protocol.
    pub proto: FeedProto,
}

/// An order-entry session, identified by the exchange's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OrderSpec {
    /// Exchange address (`None`: any).
    pub host: Option<IpAddr>,
    /// Exchange TCP port.
    pub port: u16,
    /// Protocol.
    pub proto: OrderProto,
}

/// A flow given on the command line or in the config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlowSpec {
    /// `udp:...`
    Feed(FeedSpec),
    /// `tcp:...`
    Orders(OrderSpec),
}

/// Why a flow spec did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("flow `{spec}`: {reason} (expected udp:GROUP:PORT[@moldudp64] or tcp:HOST:PORT[@ouch50|@ouch42])")]
pub struct FlowSpecError {
    /// The text given.
    pub spec: String,
    /// What was wrong with it.
    pub reason: String,
}

impl FromStr for FlowSpec {
    type Err = FlowSpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason: &str| FlowSpecError { spec: s.to_owned(), reason: reason.to_owned() };
        let (body, proto) = match s.rsplit_once('@') {
            Some((b, p)) => (b, Some(p)),
            None => (s, None),
        };
        let (kind, rest) = body.split_once(':').ok_or_else(|| err("missing the udp:/tcp: prefix"))?;
        if kind != "udp" && kind != "tcp" {
            // `233.54.12.111:26477` must not be read as transport `233.54.12.111` with no port: the
            // commonest slip, said with the spec as it should be.
            let as_kind = |k: &str| format!("{k}:{s}").parse::<FlowSpec>().map(|_| format!("{k}:{s}"));
            return Err(err(&match (as_kind("udp"), as_kind("tcp")) {
                (Ok(u), Ok(t)) => {
                    format!("the udp: or tcp: prefix is missing ({u} for a feed, {t} for an order session)")
                }
                (Ok(u), Err(_)) => format!("the udp: prefix is missing ({u} for a feed)"),
                (Err(_), Ok(t)) => format!("the tcp: prefix is missing ({t} for an order session)"),
                (Err(_), Err(_)) => format!("`{kind}` is not udp or tcp"),
            }));
        }
        // The address may be IPv6 in brackets: [2001:db8::1]:26477.
        let (addr, port) = rest.rsplit_once(':').ok_or_else(|| err("missing :PORT"))?;
        let port: u16 = port.parse().map_err(|_| err(&format!("`{port}` is not a port number")))?;
        let addr = addr.trim_start_matches('[').trim_end_matches(']');
        let ip = if addr == "*" || addr.is_empty() {
            None
        } else {
            Some(addr.parse::<IpAddr>().map_err(|_| err(&format!("`{addr}` is not an IP address or *")))?)
        };
        match kind {
            "udp" => {
                let proto = match proto {
                    None | Some("moldudp64") | Some("itch") | Some("itch50") => FeedProto::MoldItch50,
                    Some(p) => return Err(err(&format!("unknown feed protocol `{p}`"))),
                };
                Ok(FlowSpec::Feed(FeedSpec { group: ip, port, proto }))
            }
            "tcp" => {
                let proto = match proto {
                    None | Some("ouch50") | Some("ouch5") | Some("soupbin-ouch50") => OrderProto::Ouch50,
                    Some("ouch42") | Some("soupbin-ouch42") => OrderProto::Ouch42,
                    Some(p) => return Err(err(&format!("unknown order protocol `{p}`"))),
                };
                Ok(FlowSpec::Orders(OrderSpec { host: ip, port, proto }))
            }
            _ => unreachable!("checked above"),
        }
    }
}

impl std::fmt::Display for FeedSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.group {
            Some(IpAddr::V6(a)) => write!(f, "udp:[{a}]:{}", self.port),
            Some(a) => write!(f, "udp:{a}:{}", self.port),
            None => write!(f, "udp:*:{}", self.port),
        }
    }
}

impl std::fmt::Display for OrderSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = match self.proto {
            OrderProto::Ouch50 => "ouch50",
            OrderProto::Ouch42 => "ouch42",
        };
        match self.host {
            Some(IpAddr::V6(a)) => write!(f, "tcp:[{a}]:{}@{p}", self.port),
            Some(a) => write!(f, "tcp:{a}:{}@{p}", self.port),
            None => write!(f, "tcp:*:{}@{p}", self.port),
        }
    }
}

impl FeedSpec {
    /// Whether a datagram to `dst:dport` belongs to this feed.
    pub fn matches(&self, dst: IpAddr, dport: u16) -> bool {
        self.port == dport && self.group.is_none_or(|g| g == dst)
    }
}

impl OrderSpec {
    /// Whether a segment between `src:sport` and `dst:dport` belongs to this session, and if so
    /// whether it goes to the exchange (`Some(true)`) or comes from it (`Some(false)`).
    pub fn direction(&self, src: IpAddr, sport: u16, dst: IpAddr, dport: u16) -> Option<bool> {
        if self.is_exchange_end(dst, dport) {
            Some(true)
        } else if self.is_exchange_end(src, sport) {
            Some(false)
        } else {
            None
        }
    }

    /// Whether `addr:port` is this session's exchange end.
    pub fn is_exchange_end(&self, addr: IpAddr, port: u16) -> bool {
        port == self.port && self.host.is_none_or(|h| h == addr)
    }
}

/// Recognises MoldUDP64 by its framing: a 20-byte header and at least one message block, the blocks
/// tiling the datagram exactly. Heartbeats alone (20 bytes) prove nothing: any 20-byte datagram
/// would pass, so a feed is only detected on a packet with messages.
pub fn looks_like_mold(payload: &[u8]) -> bool {
    if payload.len() < 20 {
        return false;
    }
    let count = u16::from_be_bytes([payload[18], payload[19]]);
    if count == 0 || count == 0xffff {
        return false;
    }
    let mut off = 20;
    for _ in 0..count {
        if off + 2 > payload.len() {
            return false;
        }
        let len = u16::from_be_bytes([payload[off], payload[off + 1]]) as usize;
        if len == 0 {
            return false;
        }
        off += 2 + len;
    }
    off == payload.len()
}

/// [`looks_like_mold`] for a datagram of `len` bytes the capture cut after `payload` (its snap
/// length): with no tiling to check, stronger evidence of each part captured. The MoldUDP64 header
/// captured; each block captured whole (one at least) an ITCH 5.0 message of a known type, at least
/// its type's length; the blocks after them able to fit in the datagram's rest (3 bytes each at least);
/// every block announced walked ending at the datagram's end.
pub fn looks_like_cut_mold(payload: &[u8], len: usize) -> bool {
    use crate::proto::itch::{MessageType, message_len};
    let Some(h) = payload.first_chunk::<20>() else { return false };
    let count = u16::from_be_bytes([h[18], h[19]]);
    if count == 0 || count == 0xffff {
        return false;
    }
    let mut off = 20;
    for walked in 0..count {
        let block = payload.get(off..).and_then(|r| r.first_chunk::<2>()).map(|&[a, b]| u16::from_be_bytes([a, b]));
        if block == Some(0) {
            return false;
        }
        let block = usize::from(block.unwrap_or(0));
        let Some(msg) = payload.get(off + 2..off + 2 + block).filter(|_| block > 0) else {
            let rest = usize::from(count - walked);
            return walked > 0 && off + 3 * rest <= len;
        };
        if message_len(MessageType::from(msg[0])).is_none_or(|need| block < need) {
            return false;
        }
        off += 2 + block;
    }
    off == len
}

/// Whether a TCP segment provably starts at a SoupBinTCP packet boundary: packets of known types
/// tile it exactly, or it begins with [`STRADDLE_PROOF`] of them (a segment cut from a longer write,
/// ending inside a packet: in a busy session every segment may). The packets that follow are judged
/// as they are framed.
pub fn starts_soupbin(payload: &[u8]) -> bool {
    soupbin_chain(payload, STRADDLE_PROOF)
}

/// Whole packets that prove a segment ending inside a packet starts at a boundary (a chance
/// chain of four headers of known types whose lengths land on one another is rare enough).
pub const STRADDLE_PROOF: usize = 4;

/// Whether `t` is a SoupBinTCP packet type (4.1 §2: either side's).
pub fn is_soupbin_type(t: u8) -> bool {
    matches!(t, b'+' | b'A' | b'J' | b'S' | b'H' | b'Z' | b'L' | b'U' | b'R' | b'O')
}

/// How a walk of SoupBinTCP packet headers ([`walk_chain`]) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainEnd {
    /// At the last byte, after whole packets.
    Exact,
    /// Inside a packet (or its header) whose header, as far as it goes, is right.
    Cut,
    /// At a header that cannot be right: length 0, or a type SoupBinTCP does not have.
    Bad,
    /// After `limit` whole packets, bytes left.
    Limit,
}

/// Walks the SoupBinTCP packets of known types at the start of `b`, `limit` at most: how many whole
/// ones, and how the walk ended. The bound keeps a caller that asks at every packet of a segment
/// linear in the segment.
pub fn walk_chain(b: &[u8], limit: usize) -> (usize, ChainEnd) {
    let (mut off, mut whole) = (0, 0);
    while whole < limit {
        let rest = &b[off..];
        let Some(h) = rest.first_chunk::<3>() else {
            return match rest {
                [] => (whole, ChainEnd::Exact),
                [0, 0] => (whole, ChainEnd::Bad),
                _ => (whole, ChainEnd::Cut),
            };
        };
        let len = usize::from(u16::from_be_bytes([h[0], h[1]]));
        if len == 0 || !is_soupbin_type(h[2]) {
            return (whole, ChainEnd::Bad);
        }
        if 2 + len > rest.len() {
            return (whole, ChainEnd::Cut);
        }
        off += 2 + len;
        whole += 1;
    }
    (whole, if off == b.len() { ChainEnd::Exact } else { ChainEnd::Limit })
}

/// Whether `payload` begins with `limit` whole SoupBinTCP packets of known types, or is fewer such
/// packets to its last byte (one at least).
pub fn soupbin_chain(payload: &[u8], limit: usize) -> bool {
    match walk_chain(payload, limit) {
        (whole, ChainEnd::Exact) => whole > 0,
        (_, end) => end == ChainEnd::Limit,
    }
}

/// Flows beyond the first `near` of a list, by destination, for the lookups that would otherwise test
/// each flow on every frame: each `(address, port)` key's first index (a later flow with the same key
/// is never the first to match). `None` addresses stand for any.
pub(super) type FarIndex = crate::fxhash::FxHashMap<(Option<IpAddr>, u16), usize>;

/// The [`FarIndex`] of `keys`, those from `near` on.
pub(super) fn far_index(keys: impl Iterator<Item = (Option<IpAddr>, u16)>, near: usize) -> FarIndex {
    let mut far = FarIndex::default();
    for (i, key) in keys.enumerate().skip(near) {
        far.entry(key).or_insert(i);
    }
    far
}

/// The first flow in `far` that `addr:port` belongs to: of that address, or of any, whichever came
/// first. (Out of line: few captures have so many flows.)
#[cold]
pub(super) fn far_first(far: &FarIndex, addr: IpAddr, port: u16) -> Option<usize> {
    match (far.get(&(Some(addr), port)), far.get(&(None, port))) {
        (Some(&a), Some(&b)) => Some(a.min(b)),
        (a, b) => a.or(b).copied(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packets of known types tiling `b` exactly.
    fn tiles(b: &[u8]) -> bool {
        soupbin_chain(b, usize::MAX)
    }

    #[test]
    fn parse_specs() {
        let f: FlowSpec = "udp:233.54.12.111:26477".parse().unwrap();
        assert_eq!(
            f,
            FlowSpec::Feed(FeedSpec {
                group: Some("233.54.12.111".parse().unwrap()),
                port: 26477,
                proto: FeedProto::MoldItch50
            })
        );
        let o: FlowSpec = "tcp:10.1.0.1:8003@ouch42".parse().unwrap();
        assert_eq!(
            o,
            FlowSpec::Orders(OrderSpec {
                host: Some("10.1.0.1".parse().unwrap()),
                port: 8003,
                proto: OrderProto::Ouch42
            })
        );
        let any: FlowSpec = "udp:*:26477@moldudp64".parse().unwrap();
        assert!(matches!(any, FlowSpec::Feed(FeedSpec { group: None, .. })));
        let v6: FlowSpec = "tcp:[2001:db8::1]:8003".parse().unwrap();
        assert!(matches!(v6, FlowSpec::Orders(OrderSpec { host: Some(IpAddr::V6(_)), .. })));
        let missing = |s: &str| s.parse::<FlowSpec>().unwrap_err().reason;
        assert_eq!(
            missing("233.54.12.111:26477"),
            "the udp: or tcp: prefix is missing (udp:233.54.12.111:26477 for a feed, tcp:233.54.12.111:26477 for an \
             order session)"
        );
        assert_eq!(
            missing("10.1.0.1:8003@ouch42"),
            "the tcp: prefix is missing (tcp:10.1.0.1:8003@ouch42 for an order session)"
        );
        assert_eq!(
            missing("233.54.12.111:26477@itch"),
            "the udp: prefix is missing (udp:233.54.12.111:26477@itch for a feed)"
        );
        assert_eq!(missing("sctp:1.2.3.4:1"), "`sctp` is not udp or tcp");
        for bad in [
            "233.54.12.111:26477",
            "udp:233.54.12.111",
            "udp:x:1",
            "udp:1.2.3.4:99999",
            "sctp:1.2.3.4:1",
            "udp:1.2.3.4:1@fix",
        ] {
            let e = bad.parse::<FlowSpec>().unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
        }
    }

    #[test]
    fn framing_detectors() {
        let mut mold = b"SESSION001".to_vec();
        mold.extend_from_slice(&7u64.to_be_bytes());
        mold.extend_from_slice(&2u16.to_be_bytes());
        for m in [&b"abc"[..], b"defg"] {
            mold.extend_from_slice(&(m.len() as u16).to_be_bytes());
            mold.extend_from_slice(m);
        }
        assert!(looks_like_mold(&mold));
        assert!(!looks_like_mold(&mold[..mold.len() - 1]));
        let mut hb = b"SESSION001".to_vec();
        hb.extend_from_slice(&[0; 10]);
        assert!(!looks_like_mold(&hb), "a heartbeat alone does not prove a feed");
        assert!(!looks_like_mold(&[0u8; 40]));
        let soup = [0, 3, b'U', 1, 2, 0, 1, b'R'];
        assert!(tiles(&soup));
        assert!(!tiles(&soup[..7]));
        assert!(!tiles(&[0, 3, b'x', 1, 2]));
    }

    /// A chain of packets to the end is SoupBinTCP whatever the bound; a longer one passes the bound
    /// once that many whole packets are read; a cut or unknown packet within the bound fails.
    #[test]
    fn a_bounded_chain_reads_that_many_packets() {
        let hb = [0u8, 1, b'H'];
        let three = hb.repeat(3);
        assert!(soupbin_chain(&three, 3) && soupbin_chain(&three, 9) && tiles(&three));
        let cut = [hb.repeat(2), vec![0, 5, b'U']].concat();
        assert!(soupbin_chain(&cut, 2));
        assert!(!soupbin_chain(&cut, 3) && !tiles(&cut));
        let unknown = [hb.to_vec(), vec![0, 1, b'x']].concat();
        assert!(soupbin_chain(&unknown, 1) && !soupbin_chain(&unknown, 2));
        assert!(!soupbin_chain(&[0, 1], 1));
    }
}
