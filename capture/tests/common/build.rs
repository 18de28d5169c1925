//! Capture files built byte by byte for tests (no writer of ours involved): pcapng blocks in
//! either byte order, classic pcap records, ERF records.

#![allow(dead_code)]

/// pcapng byte builder.
pub struct Ng {
    pub be: bool,
}

impl Ng {
    pub fn u16(&self, v: u16) -> [u8; 2] {
        if self.be { v.to_be_bytes() } else { v.to_le_bytes() }
    }
    pub fn u32(&self, v: u32) -> [u8; 4] {
        if self.be { v.to_be_bytes() } else { v.to_le_bytes() }
    }
    pub fn u64(&self, v: u64) -> [u8; 8] {
        if self.be { v.to_be_bytes() } else { v.to_le_bytes() }
    }
    /// One option, padded to 4.
    pub fn opt(&self, code: u16, val: &[u8]) -> Vec<u8> {
        let mut o = Vec::new();
        o.extend_from_slice(&self.u16(code));
        o.extend_from_slice(&self.u16(val.len() as u16));
        o.extend_from_slice(val);
        o.resize(o.len() + (4 - val.len() % 4) % 4, 0);
        o
    }
    /// An option list with its terminator (empty if no option).
    pub fn opts(&self, list: &[Vec<u8>]) -> Vec<u8> {
        if list.is_empty() {
            return Vec::new();
        }
        let mut o: Vec<u8> = list.concat();
        o.extend_from_slice(&self.opt(0, &[]));
        o
    }
    pub fn block(&self, t: u32, body: &[u8]) -> Vec<u8> {
        let len = 12 + body.len() as u32;
        let mut b = Vec::new();
        b.extend_from_slice(&self.u32(t));
        b.extend_from_slice(&self.u32(len));
        b.extend_from_slice(body);
        b.extend_from_slice(&self.u32(len));
        b
    }
    pub fn shb(&self) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&self.u32(0x1A2B_3C4D));
        body.extend_from_slice(&self.u16(1));
        body.extend_from_slice(&self.u16(0));
        body.extend_from_slice(&self.u64(u64::MAX));
        self.block(0x0A0D_0D0A, &body)
    }
    pub fn idb(&self, link: u16, snaplen: u32, opts: &[Vec<u8>]) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&self.u16(link));
        body.extend_from_slice(&self.u16(0));
        body.extend_from_slice(&self.u32(snaplen));
        body.extend_from_slice(&self.opts(opts));
        self.block(1, &body)
    }
    fn packet_body(&self, head: &[u8], units: u64, data: &[u8], origlen: u32, opts: &[Vec<u8>]) -> Vec<u8> {
        let mut body = head.to_vec();
        body.extend_from_slice(&self.u32((units >> 32) as u32));
        body.extend_from_slice(&self.u32(units as u32));
        body.extend_from_slice(&self.u32(data.len() as u32));
        body.extend_from_slice(&self.u32(origlen));
        body.extend_from_slice(data);
        body.resize(body.len() + (4 - data.len() % 4) % 4, 0);
        body.extend_from_slice(&self.opts(opts));
        body
    }
    pub fn epb(&self, iface: u32, units: u64, data: &[u8], origlen: u32, opts: &[Vec<u8>]) -> Vec<u8> {
        self.block(6, &self.packet_body(&self.u32(iface), units, data, origlen, opts))
    }
    /// Obsolete Packet Block (type 2).
    pub fn pb(&self, iface: u16, units: u64, data: &[u8], origlen: u32, opts: &[Vec<u8>]) -> Vec<u8> {
        let mut head = self.u16(iface).to_vec();
        head.extend_from_slice(&self.u16(0));
        self.block(2, &self.packet_body(&head, units, data, origlen, opts))
    }
    pub fn spb(&self, data: &[u8], origlen: u32) -> Vec<u8> {
        let mut body = self.u32(origlen).to_vec();
        body.extend_from_slice(data);
        body.resize(body.len() + (4 - data.len() % 4) % 4, 0);
        self.block(3, &body)
    }
}

/// Classic pcap file header (little-endian), given magic and link-type word.
pub fn pcap_header(magic: u32, linktype_word: u32) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&magic.to_le_bytes());
    h.extend_from_slice(&2u16.to_le_bytes());
    h.extend_from_slice(&4u16.to_le_bytes());
    h.extend_from_slice(&[0; 8]);
    h.extend_from_slice(&65535u32.to_le_bytes());
    h.extend_from_slice(&linktype_word.to_le_bytes());
    h
}

/// Classic pcap record (little-endian).
pub fn pcap_record(sec: u32, frac: u32, data: &[u8], origlen: u32) -> Vec<u8> {
    let mut r = Vec::new();
    for v in [sec, frac, data.len() as u32, origlen] {
        r.extend_from_slice(&v.to_le_bytes());
    }
    r.extend_from_slice(data);
    r
}

/// ERF record: `ts` fixed point, type byte (bit 7 = extension headers given), flags, extension
/// headers (8 bytes each, chain bits set by the caller), payload (after the 2-byte pad for
/// Ethernet types), wlen; padded to 8.
pub fn erf_record(ts: u64, ty: u8, flags: u8, ext: &[[u8; 8]], eth: bool, payload: &[u8], wlen: u16) -> Vec<u8> {
    let mut body: Vec<u8> = ext.concat();
    if eth {
        body.extend_from_slice(&[0, 0]);
    }
    body.extend_from_slice(payload);
    body.resize(body.len() + (8 - (16 + body.len()) % 8) % 8, 0);
    let rlen = 16 + body.len() as u16;
    let mut r = ts.to_le_bytes().to_vec();
    r.push(ty);
    r.push(flags);
    r.extend_from_slice(&rlen.to_be_bytes());
    r.extend_from_slice(&0u16.to_be_bytes());
    r.extend_from_slice(&wlen.to_be_bytes());
    r.extend_from_slice(&body);
    r
}

/// A 60-byte Ethernet/IPv4/UDP frame whose bytes encode `tag`.
pub fn eth_frame(tag: u8) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, tag]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 1, tag]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&46u16.to_be_bytes());
    f[22] = 64;
    f[23] = 17;
    f[26..30].copy_from_slice(&[10, 0, 0, 1]);
    f[30..34].copy_from_slice(&[10, 0, 0, 2]);
    f[34..36].copy_from_slice(&1000u16.to_be_bytes());
    f[36..38].copy_from_slice(&2000u16.to_be_bytes());
    f[38..40].copy_from_slice(&26u16.to_be_bytes());
    f[42] = tag;
    f
}
