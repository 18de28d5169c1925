//! Configured flows: the endpoints whose packets are captured, and their encoding as `flows` map
//! entries (`struct ws_flow_key` / `ws_flow_val` of `bpf/events.h`).
//!
//! A flow is one endpoint (protocol, address or any, port, VLAN): a market-data group `239.1.1.1:30001`
//! matched as destination, or an order gateway `10.0.0.2:9000` matched as destination (orders out) and
//! as source (its replies in). The program looks the packet's destination up first, then its source.

use std::net::{IpAddr, Ipv6Addr};

use crate::error::{BpfError, Result};
use crate::skel::tc::types::{ws_flow_key, ws_flow_val};

/// Transport protocol of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L4Proto {
    /// UDP (market data).
    Udp,
    /// TCP (order sessions).
    Tcp,
}

impl L4Proto {
    /// IP protocol number.
    pub fn number(self) -> u8 {
        match self {
            Self::Udp => 17,
            Self::Tcp => 6,
        }
    }
}

/// Which VLAN a flow's packets carry (the outermost tag, an offloaded one included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VlanMatch {
    /// Tagged or not, any id.
    Any,
    /// Untagged (or priority-tagged, VID 0).
    Untagged,
    /// This VLAN id (1..=4094).
    Id(u16),
}

/// One configured flow endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowSpec {
    /// Copied into every record of the flow.
    pub id: u32,
    /// UDP or TCP.
    pub proto: L4Proto,
    /// The endpoint's address; None = any address (port only).
    pub addr: Option<IpAddr>,
    /// The endpoint's port (1..=65535).
    pub port: u16,
    /// VLAN.
    pub vlan: VlanMatch,
    /// Match packets going to the endpoint.
    pub match_dst: bool,
    /// Match packets coming from the endpoint.
    pub match_src: bool,
}

impl FlowSpec {
    /// A market-data group or unicast feed: UDP packets sent to `addr:port`, any VLAN.
    pub fn udp_feed(id: u32, addr: IpAddr, port: u16) -> Self {
        Self {
            id,
            proto: L4Proto::Udp,
            addr: Some(addr),
            port,
            vlan: VlanMatch::Any,
            match_dst: true,
            match_src: false,
        }
    }

    /// An order session with the gateway at `addr:port`: both directions, any VLAN.
    pub fn tcp_session(id: u32, addr: IpAddr, port: u16) -> Self {
        Self { id, proto: L4Proto::Tcp, addr: Some(addr), port, vlan: VlanMatch::Any, match_dst: true, match_src: true }
    }

    /// The same flow restricted to a VLAN.
    pub fn with_vlan(mut self, vlan: VlanMatch) -> Self {
        self.vlan = vlan;
        self
    }
}

// Key/value byte layouts written below must equal the C structs; checked here at compile time.
const KEY_LEN: usize = 24;
const VAL_LEN: usize = 8;
const _: () = {
    assert!(size_of::<ws_flow_key>() == KEY_LEN);
    assert!(std::mem::offset_of!(ws_flow_key, addr) == 0);
    assert!(std::mem::offset_of!(ws_flow_key, port) == 16);
    assert!(std::mem::offset_of!(ws_flow_key, vlan) == 18);
    assert!(std::mem::offset_of!(ws_flow_key, proto) == 20);
    assert!(size_of::<ws_flow_val>() == VAL_LEN);
    assert!(std::mem::offset_of!(ws_flow_val, flow_id) == 0);
    assert!(std::mem::offset_of!(ws_flow_val, sides) == 4);
};

/// `WS_LK_*` of events.h: which key shape a flow uses.
pub(crate) const LK_EXACT: u32 = 1;
pub(crate) const LK_ANY_ADDR: u32 = 2;
pub(crate) const LK_ANY_VLAN: u32 = 4;
pub(crate) const LK_ANY_BOTH: u32 = 8;
const VLAN_NONE: u16 = 0;
const VLAN_ANY: u16 = 0xffff;
pub(crate) const SIDE_DST: u8 = 1;
pub(crate) const SIDE_SRC: u8 = 2;

/// One encoded map entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlowEntry {
    pub key: [u8; KEY_LEN],
    pub val: [u8; VAL_LEN],
    /// The `WS_LK_*` bit the program needs to find this key.
    pub lookup_bit: u32,
}

/// The ports of `flows` as the programs' bitmap: bit `p % 64` of word `p / 64` (rodata `port_bits`).
pub(crate) fn port_bits(flows: &[FlowSpec]) -> [u64; 1024] {
    let mut bits = [0u64; 1024];
    for f in flows {
        bits[usize::from(f.port / 64)] |= 1 << (f.port % 64);
    }
    bits
}

/// The 16-byte form the program compares: IPv6 as is, IPv4 mapped (::ffff:a.b.c.d), any = all zero.
pub(crate) fn addr16(addr: Option<IpAddr>) -> [u8; 16] {
    match addr {
        None => [0; 16],
        Some(IpAddr::V4(a)) => a.to_ipv6_mapped().octets(),
        Some(IpAddr::V6(a)) => a.octets(),
    }
}

/// Encodes `flows` as map entries; rejects what the program could not match as configured.
pub(crate) fn encode(flows: &[FlowSpec]) -> Result<Vec<FlowEntry>> {
    let mut out: Vec<(u32, FlowEntry)> = Vec::with_capacity(flows.len());
    for f in flows {
        let err = |reason: String| BpfError::Flow { id: f.id, reason };
        if f.port == 0 {
            return Err(err("port 0: give the endpoint's port (1..=65535)".into()));
        }
        if !f.match_dst && !f.match_src {
            return Err(err("neither match_dst nor match_src is set: the flow would match nothing".into()));
        }
        if f.addr == Some(IpAddr::V6(Ipv6Addr::UNSPECIFIED)) {
            return Err(err("address :: is the wildcard's encoding: use addr None for any address".into()));
        }
        let vlan = match f.vlan {
            VlanMatch::Any => VLAN_ANY,
            VlanMatch::Untagged => VLAN_NONE,
            VlanMatch::Id(id @ 1..=4094) => id,
            VlanMatch::Id(id) => return Err(err(format!("VLAN id {id} out of range 1..=4094"))),
        };
        let mut key = [0u8; KEY_LEN];
        key[0..16].copy_from_slice(&addr16(f.addr));
        key[16..18].copy_from_slice(&f.port.to_ne_bytes());
        key[18..20].copy_from_slice(&vlan.to_ne_bytes());
        key[20] = f.proto.number();
        let mut val = [0u8; VAL_LEN];
        val[0..4].copy_from_slice(&f.id.to_ne_bytes());
        val[4] = (if f.match_dst { SIDE_DST } else { 0 }) | (if f.match_src { SIDE_SRC } else { 0 });
        let lookup_bit = match (f.vlan == VlanMatch::Any, f.addr.is_none()) {
            (false, false) => LK_EXACT,
            (false, true) => LK_ANY_ADDR,
            (true, false) => LK_ANY_VLAN,
            (true, true) => LK_ANY_BOTH,
        };
        if let Some((other, _)) = out.iter().find(|(_, e)| e.key == key) {
            return Err(err(format!("same endpoint as flow {other}: merge them (match_dst/match_src) into one")));
        }
        out.push((f.id, FlowEntry { key, val, lookup_bit }));
    }
    Ok(out.into_iter().map(|(_, e)| e).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn udp_feed_key_bytes() {
        let f = FlowSpec::udp_feed(7, IpAddr::V4(Ipv4Addr::new(239, 1, 1, 1)), 30001).with_vlan(VlanMatch::Id(100));
        let e = &encode(&[f]).unwrap()[0];
        let mut key = [0u8; 24];
        key[10] = 0xff;
        key[11] = 0xff;
        key[12..16].copy_from_slice(&[239, 1, 1, 1]);
        key[16..18].copy_from_slice(&30001u16.to_ne_bytes());
        key[18..20].copy_from_slice(&100u16.to_ne_bytes());
        key[20] = 17;
        assert_eq!(e.key, key);
        let mut val = [0u8; 8];
        val[0..4].copy_from_slice(&7u32.to_ne_bytes());
        val[4] = 1; // WS_SIDE_DST
        assert_eq!(e.val, val);
        assert_eq!(e.lookup_bit, LK_EXACT);
    }

    #[test]
    fn session_any_vlan_any_addr() {
        let mut f = FlowSpec::tcp_session(3, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 9000);
        assert_eq!(encode(std::slice::from_ref(&f)).unwrap()[0].lookup_bit, LK_ANY_VLAN);
        assert_eq!(encode(std::slice::from_ref(&f)).unwrap()[0].val[4], 3);
        f.addr = None;
        let e = &encode(&[f]).unwrap()[0];
        assert_eq!(e.lookup_bit, LK_ANY_BOTH);
        assert_eq!(&e.key[0..16], &[0u8; 16]);
        assert_eq!(&e.key[18..20], &[0xff, 0xff]);
    }

    #[test]
    fn rejects_bad_flows() {
        let a = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
        let bad_vlan = FlowSpec::udp_feed(1, a, 1).with_vlan(VlanMatch::Id(4095));
        assert!(matches!(encode(&[bad_vlan]), Err(BpfError::Flow { id: 1, .. })));
        let port0 = FlowSpec::udp_feed(2, a, 0);
        assert!(matches!(encode(&[port0]), Err(BpfError::Flow { id: 2, .. })));
        let mut none = FlowSpec::udp_feed(3, a, 5);
        none.match_dst = false;
        assert!(matches!(encode(&[none]), Err(BpfError::Flow { id: 3, .. })));
        let dup = encode(&[FlowSpec::udp_feed(4, a, 5), FlowSpec::udp_feed(5, a, 5)]).unwrap_err();
        assert_eq!(dup.to_string(), "flow 5: same endpoint as flow 4: merge them (match_dst/match_src) into one");
    }

    #[test]
    fn port_bitmap_has_exactly_the_flows_ports() {
        let g = IpAddr::V4(std::net::Ipv4Addr::new(239, 1, 1, 1));
        let flows =
            [FlowSpec::udp_feed(1, g, 30001), FlowSpec::tcp_session(2, g, 9000), FlowSpec::udp_feed(3, g, 65535)];
        let bits = port_bits(&flows);
        let set: Vec<u32> = (0..=65535u32).filter(|p| bits[(p / 64) as usize] >> (p % 64) & 1 == 1).collect();
        assert_eq!(set, [9000, 30001, 65535]);
    }
}
