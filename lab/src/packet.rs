//! Building Ethernet / 802.1Q / IPv4 / UDP / TCP frames with correct lengths and checksums.

/// A MAC address.
pub type Mac = [u8; 6];

/// Ethernet header, with an optional 802.1Q tag, for IPv4.
pub fn ethernet(out: &mut Vec<u8>, dst: Mac, src: Mac, vlan: Option<u16>) {
    out.extend_from_slice(&dst);
    out.extend_from_slice(&src);
    if let Some(vid) = vlan {
        out.extend_from_slice(&0x8100u16.to_be_bytes());
        out.extend_from_slice(&(vid & 0x0fff).to_be_bytes());
    }
    out.extend_from_slice(&0x0800u16.to_be_bytes());
}

/// The multicast MAC of an IPv4 group (RFC 1112).
pub fn multicast_mac(group: [u8; 4]) -> Mac {
    [0x01, 0x00, 0x5e, group[1] & 0x7f, group[2], group[3]]
}

fn checksum_add(mut sum: u32, bytes: &[u8]) -> u32 {
    let mut chunks = bytes.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u32) << 8;
    }
    sum
}

fn checksum_fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn ipv4(out: &mut Vec<u8>, src: [u8; 4], dst: [u8; 4], proto: u8, id: u16, l4: &[u8]) {
    let start = out.len();
    let total = (20 + l4.len()) as u16;
    out.extend_from_slice(&[0x45, 0]);
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&0x4000u16.to_be_bytes()); // don't fragment
    out.extend_from_slice(&[64, proto, 0, 0]);
    out.extend_from_slice(&src);
    out.extend_from_slice(&dst);
    let c = checksum_fold(checksum_add(0, &out[start..start + 20]));
    out[start + 10..start + 12].copy_from_slice(&c.to_be_bytes());
    out.extend_from_slice(l4);
}

fn pseudo_sum(src: [u8; 4], dst: [u8; 4], proto: u8, len: usize) -> u32 {
    let mut s = checksum_add(0, &src);
    s = checksum_add(s, &dst);
    s + proto as u32 + len as u32
}

/// IPv4 + UDP with payload, checksummed.
pub fn ipv4_udp(out: &mut Vec<u8>, src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, id: u16, payload: &[u8]) {
    let mut udp = Vec::with_capacity(8 + payload.len());
    udp.extend_from_slice(&sport.to_be_bytes());
    udp.extend_from_slice(&dport.to_be_bytes());
    udp.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    let mut c = checksum_fold(checksum_add(pseudo_sum(src, dst, 17, udp.len()), &udp));
    if c == 0 {
        c = 0xffff;
    }
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    ipv4(out, src, dst, 17, id, &udp);
}

/// A TCP segment's header fields.
#[derive(Debug, Clone, Copy)]
pub struct TcpHdr {
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgement number.
    pub ack: u32,
    /// Flags (FIN 0x01, SYN 0x02, PSH 0x08, ACK 0x10).
    pub flags: u8,
}

/// IPv4 + TCP (20-byte header, no options) with payload, checksummed.
pub fn ipv4_tcp(out: &mut Vec<u8>, src: [u8; 4], dst: [u8; 4], h: TcpHdr, id: u16, payload: &[u8]) {
    let mut tcp = Vec::with_capacity(20 + payload.len());
    tcp.extend_from_slice(&h.sport.to_be_bytes());
    tcp.extend_from_slice(&h.dport.to_be_bytes());
    tcp.extend_from_slice(&h.seq.to_be_bytes());
    tcp.extend_from_slice(&h.ack.to_be_bytes());
    tcp.extend_from_slice(&[0x50, h.flags]);
    tcp.extend_from_slice(&65535u16.to_be_bytes());
    tcp.extend_from_slice(&[0, 0, 0, 0]);
    tcp.extend_from_slice(payload);
    let c = checksum_fold(checksum_add(pseudo_sum(src, dst, 6, tcp.len()), &tcp));
    tcp[16..18].copy_from_slice(&c.to_be_bytes());
    ipv4(out, src, dst, 6, id, &tcp);
}

/// Pads a frame to the Ethernet minimum of 60 bytes (without FCS).
pub fn pad_min(out: &mut Vec<u8>) {
    if out.len() < 60 {
        out.resize(60, 0);
    }
}
