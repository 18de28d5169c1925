//! Dissection of a frame's link, network and transport headers, without allocation.
//!
//! [`dissect`] walks from the link-layer header given by the frame's [`LinkType`] through VLAN tags
//! (802.1Q, QinQ), an Arista 7280 timestamp header (EtherType 0xD28B), IPv4 or IPv6 (with extension
//! headers) to UDP or TCP. It never fails: where a header is cut short or impossible it stops and
//! records one [`Anomaly`] naming the layer and byte offset, keeping everything decoded before it.

use crate::frame::{Direction, LinkType};
use crate::wire::ethernet::{self, EthernetFrame, VlanTag, ethertype};
use crate::wire::ipv4::Ipv4Packet;
use crate::wire::ipv6::{self, Ipv6Packet};
use crate::wire::tcp::TcpPacket;
use crate::wire::udp::UdpPacket;
use crate::wire::{WireError, be16};
use std::net::IpAddr;

/// IP protocol numbers.
pub mod ipproto {
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// Arista 7150 / Exablaze compat keyframes.
    pub const KEYFRAME: u8 = 253;
}

/// A header wirestamp dissects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// The link-layer header (Ethernet, SLL, SLL2, null/loop).
    Link,
    /// An 802.1Q / 802.1ad tag.
    Vlan,
    /// An Arista 7280 0xD28B timestamp header.
    TapHeader,
    /// IPv4.
    Ipv4,
    /// IPv6 (fixed or extension headers).
    Ipv6,
    /// UDP.
    Udp,
    /// TCP.
    Tcp,
}

impl Layer {
    /// Stable lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Link => "link",
            Layer::Vlan => "vlan",
            Layer::TapHeader => "tap_header",
            Layer::Ipv4 => "ipv4",
            Layer::Ipv6 => "ipv6",
            Layer::Udp => "udp",
            Layer::Tcp => "tcp",
        }
    }
}

/// Where and why dissection stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anomaly {
    /// The header that could not be read.
    pub layer: Layer,
    /// Byte offset of that header from the start of the frame.
    pub offset: usize,
    /// What was wrong.
    pub error: WireError,
}

impl std::fmt::Display for Anomaly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} header at byte {}: {}", self.layer.name(), self.offset, self.error)
    }
}

/// IP fragment state of a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fragment {
    /// Not a fragment.
    #[default]
    No,
    /// First fragment (offset 0, more fragments): transport header present.
    First,
    /// A later fragment: no transport header, not reassembled.
    Later,
}

/// The network layer, when the frame carries IP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpInfo {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Upper-layer protocol (after IPv6 extension headers).
    pub proto: u8,
    /// Offset of the IP header in the frame.
    pub offset: usize,
    /// Offset just past the datagram as its length fields declare it (may exceed the captured length
    /// for snap-truncated frames). Bytes between this and the end of the frame are Ethernet padding,
    /// tap trailers and FCS.
    pub end: usize,
    /// Fragment state.
    pub fragment: Fragment,
}

/// The transport layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// None, or not decoded (non-first fragment, other protocol, anomaly).
    #[default]
    None,
    /// UDP.
    Udp {
        /// Source port.
        sport: u16,
        /// Destination port.
        dport: u16,
    },
    /// TCP.
    Tcp {
        /// Source port.
        sport: u16,
        /// Destination port.
        dport: u16,
        /// Sequence number.
        seq: u32,
        /// Acknowledgement number.
        ack: u32,
        /// Flag byte.
        flags: u8,
    },
}

impl Transport {
    /// `(sport, dport)` for UDP and TCP.
    pub fn ports(&self) -> Option<(u16, u16)> {
        match *self {
            Transport::None => None,
            Transport::Udp { sport, dport } | Transport::Tcp { sport, dport, .. } => Some((sport, dport)),
        }
    }
}

/// Location of an Arista 7280 (0xD28B) header inside the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TapHeader {
    /// Offset of the 0xD28B EtherType.
    pub offset: usize,
    /// Bytes from the EtherType through the timestamp (the inner EtherType follows).
    pub len: usize,
}

/// What [`dissect`] found. Offsets index the frame's captured bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dissection {
    /// Innermost EtherType (after tags and tap headers); 0 when the link has none.
    pub ethertype: u16,
    /// VLAN ids, outermost first; `vlan_count` may exceed 2, only two are kept.
    pub vlans: [u16; 2],
    /// Number of VLAN tags seen.
    pub vlan_count: u8,
    /// Direction implied by the link header (Linux SLL packet type), if any.
    pub link_direction: Direction,
    /// The Arista 7280 header, if present.
    pub tap_header: Option<TapHeader>,
    /// Offset of the network-layer header (end of the link layer).
    pub l3_offset: usize,
    /// IP layer.
    pub ip: Option<IpInfo>,
    /// Transport layer.
    pub transport: Transport,
    /// Offset of the transport payload (UDP/TCP data), valid when `transport` is not `None`.
    pub payload_offset: usize,
    /// Payload length as the headers declare it (UDP length − 8; IP length − headers for TCP).
    pub payload_len: usize,
    /// Where dissection stopped early, if it did.
    pub anomaly: Option<Anomaly>,
}

impl Dissection {
    /// The captured part of the transport payload, without Ethernet padding or trailers.
    pub fn payload<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        if matches!(self.transport, Transport::None) {
            return &[];
        }
        let start = self.payload_offset.min(data.len());
        let end = (self.payload_offset + self.payload_len).min(data.len());
        &data[start..end]
    }

    fn stop_at(&mut self, layer: Layer, offset: usize, error: WireError) {
        self.anomaly = Some(Anomaly { layer, offset, error });
    }
}

/// Linux SLL packet types.
fn sll_direction(pkttype: u16) -> Direction {
    match pkttype {
        0..=3 => Direction::Inbound,
        4 => Direction::Outbound,
        _ => Direction::Unknown,
    }
}

/// BSD address families that mean IPv6 on the various BSDs and macOS.
fn af_is_ipv6(af: u32) -> bool {
    matches!(af, 24 | 28 | 30)
}

/// The LINKTYPE_NULL header value: written in the capturing host's byte order, sometimes as an IRIX or
/// UNICOS 16-bit value in the upper half. Wireshark's packet-null.c resolves the ambiguity this way.
fn null_family(raw: [u8; 4]) -> u32 {
    let h = u32::from_le_bytes(raw);
    if h & 0xffff_0000 != 0 {
        if h & 0xff00_0000 == 0 && h & 0x00ff_0000 < 0x0006_0000 { h >> 16 } else { h.swap_bytes() }
    } else if h & 0xff == 0 && h & 0xff00 < 0x0600 {
        ((h & 0xffff) as u16).swap_bytes() as u32
    } else {
        h
    }
}

/// Dissects `data` whose link-layer header is `link`.
pub fn dissect(data: &[u8], link: LinkType) -> Dissection {
    let mut d = Dissection::default();
    dissect_into(&mut d, data, link);
    d
}

/// [`dissect`] into `d` (which it resets first): a caller keeping the dissection inside a larger
/// struct saves the copy of a returned one (168 bytes, a `memcpy` call per frame).
pub fn dissect_into(d: &mut Dissection, data: &[u8], link: LinkType) {
    *d = Dissection::default();
    let (mut off, mut etype) = match link {
        LinkType::Ethernet => match EthernetFrame::new_checked(data) {
            Ok(eth) => (ethernet::HEADER_LEN, eth.ethertype()),
            Err(e) => return d.stop_at(Layer::Link, 0, e),
        },
        LinkType::LinuxSll => {
            if data.len() < 16 {
                return d.stop_at(Layer::Link, 0, WireError::Truncated { need: 16, have: data.len() });
            }
            d.link_direction = sll_direction(be16(data, 0));
            (16, be16(data, 14))
        }
        LinkType::LinuxSll2 => {
            if data.len() < 20 {
                return d.stop_at(Layer::Link, 0, WireError::Truncated { need: 20, have: data.len() });
            }
            d.link_direction = sll_direction(data[10] as u16);
            (20, be16(data, 0))
        }
        LinkType::Null | LinkType::Loop => {
            if data.len() < 4 {
                return d.stop_at(Layer::Link, 0, WireError::Truncated { need: 4, have: data.len() });
            }
            let raw = [data[0], data[1], data[2], data[3]];
            if raw[0] == 0xff && raw[1] == 0x03 {
                // PPP in HDLC framing: not dissected.
                return;
            }
            let h = if link == LinkType::Loop { u32::from_be_bytes(raw) } else { null_family(raw) };
            // Some writers put an EtherType here instead of an address family (Wireshark does the same).
            let et = if h > 1500 {
                h as u16
            } else if h == 2 {
                ethertype::IPV4
            } else if af_is_ipv6(h) {
                ethertype::IPV6
            } else {
                0
            };
            (4, et)
        }
        LinkType::Raw => match data.first().map(|b| b >> 4) {
            Some(4) => (0, ethertype::IPV4),
            Some(6) => (0, ethertype::IPV6),
            Some(_) => return d.stop_at(Layer::Link, 0, WireError::Malformed("raw IP version is neither 4 nor 6")),
            None => return d.stop_at(Layer::Link, 0, WireError::Truncated { need: 1, have: 0 }),
        },
        LinkType::Ipv4 => (0, ethertype::IPV4),
        LinkType::Ipv6 => (0, ethertype::IPV6),
        LinkType::Erf | LinkType::Other(_) => return,
    };

    // Tags and tap headers between the link header and the network layer.
    loop {
        if ethertype::is_vlan(etype) {
            match VlanTag::new_checked(&data[off..]) {
                Ok(tag) => {
                    if (d.vlan_count as usize) < d.vlans.len() {
                        d.vlans[d.vlan_count as usize] = tag.vid();
                    }
                    d.vlan_count = d.vlan_count.saturating_add(1);
                    etype = tag.inner_type();
                    off += ethernet::VLAN_TAG_LEN;
                }
                Err(e) => return d.stop_at(Layer::Vlan, off - 2, e),
            }
        } else if etype == ethertype::ARISTA_TS {
            // | subtype (2) | version (2) | timestamp (8 or 6) | inner EtherType (2) |
            let start = off - 2;
            if data.len() < off + 4 {
                return d.stop_at(Layer::TapHeader, start, WireError::Truncated { need: off + 4, have: data.len() });
            }
            let ts_len = match (be16(data, off + 2) >> 4) & 0xf {
                1 => 8,
                2 => 6,
                _ => {
                    return d.stop_at(Layer::TapHeader, start, WireError::Malformed("unknown 0xD28B timestamp format"));
                }
            };
            let inner = off + 4 + ts_len;
            if data.len() < inner + 2 {
                return d.stop_at(Layer::TapHeader, start, WireError::Truncated { need: inner + 2, have: data.len() });
            }
            d.tap_header = Some(TapHeader { offset: start, len: inner - start });
            etype = be16(data, inner);
            off = inner + 2;
        } else {
            break;
        }
        // Hostile stacks of tags are bounded by the frame length: each step consumes >= 4 bytes.
    }
    d.ethertype = etype;
    d.l3_offset = off;

    let l3 = &data[off..];
    let l4_off;
    let l4_end;
    match etype {
        ethertype::IPV4 => {
            let ip = match Ipv4Packet::new_checked(l3) {
                Ok(p) => p,
                Err(e) => return d.stop_at(Layer::Ipv4, off, e),
            };
            let fragment = match (ip.frag_offset(), ip.more_frags()) {
                (0, false) => Fragment::No,
                (0, true) => Fragment::First,
                _ => Fragment::Later,
            };
            l4_off = off + ip.header_len();
            l4_end = off + ip.total_len() as usize;
            d.ip = Some(IpInfo {
                src: ip.src().into(),
                dst: ip.dst().into(),
                proto: ip.protocol(),
                offset: off,
                end: l4_end,
                fragment,
            });
        }
        ethertype::IPV6 => {
            let ip = match Ipv6Packet::new_checked(l3) {
                Ok(p) => p,
                Err(e) => return d.stop_at(Layer::Ipv6, off, e),
            };
            let end = off + ipv6::HEADER_LEN + ip.payload_len() as usize;
            let chain = match ipv6::walk_extensions(&l3[ipv6::HEADER_LEN..], ip.next_header()) {
                Ok(c) => c,
                Err(e) => return d.stop_at(Layer::Ipv6, off + ipv6::HEADER_LEN, e),
            };
            let fragment = match chain.fragment {
                None => Fragment::No,
                Some((0, _)) => Fragment::First,
                Some(_) => Fragment::Later,
            };
            l4_off = off + ipv6::HEADER_LEN + chain.len;
            l4_end = end;
            d.ip = Some(IpInfo {
                src: ip.src().into(),
                dst: ip.dst().into(),
                proto: chain.proto,
                offset: off,
                end,
                fragment,
            });
            if l4_end < l4_off {
                return d.stop_at(
                    Layer::Ipv6,
                    off,
                    WireError::Malformed("IPv6 payload length shorter than its extension headers"),
                );
            }
        }
        _ => return,
    }
    let ip = d.ip.unwrap_or_else(|| unreachable!("set above"));
    if ip.fragment == Fragment::Later {
        return;
    }
    let l4 = &data[l4_off.min(data.len())..];
    match ip.proto {
        ipproto::UDP => match UdpPacket::new_checked(l4) {
            Ok(u) => {
                d.transport = Transport::Udp { sport: u.src_port(), dport: u.dst_port() };
                d.payload_offset = l4_off + 8;
                // The UDP length bounds the payload; a fragment's UDP length covers the whole datagram.
                let declared = u.len() as usize - 8;
                d.payload_len = if ip.fragment == Fragment::First {
                    declared
                } else {
                    declared.min(l4_end.saturating_sub(d.payload_offset))
                };
                if ip.fragment == Fragment::No && l4_off + u.len() as usize > l4_end {
                    d.stop_at(Layer::Udp, l4_off, WireError::Malformed("UDP length runs past the IP datagram"));
                }
            }
            Err(e) => d.stop_at(Layer::Udp, l4_off, e),
        },
        ipproto::TCP => match TcpPacket::new_checked(l4) {
            Ok(t) => {
                d.transport = Transport::Tcp {
                    sport: t.src_port(),
                    dport: t.dst_port(),
                    seq: t.seq(),
                    ack: t.ack(),
                    flags: t.flags(),
                };
                d.payload_offset = l4_off + t.header_len();
                if d.payload_offset > l4_end {
                    return d.stop_at(Layer::Tcp, l4_off, WireError::Malformed("TCP header runs past the IP datagram"));
                }
                d.payload_len = l4_end - d.payload_offset;
            }
            Err(e) => d.stop_at(Layer::Tcp, l4_off, e),
        },
        _ => {}
    }
}

#[cfg(test)]
mod tests;
