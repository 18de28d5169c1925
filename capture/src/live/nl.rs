//! ethtool over generic netlink: ETHTOOL_MSG_TSINFO_GET (kernel 5.11+), the netlink twin of
//! ETHTOOL_GET_TS_INFO; newer kernels answer more there (hwtstamp provider, statistics).
//!
//! ```text
//! nlmsghdr (16): len u32, type u16 (family id), flags u16, seq u32, pid u32
//! genlmsghdr (4): cmd u8, version u8, reserved u16
//! attributes: nla_len u16, nla_type u16 (low 14 bits), payload, padded to 4
//! request:  TSINFO_HEADER(1) { HEADER_DEV_NAME(2) "va\0", HEADER_FLAGS(3) u32 COMPACT_BITSETS(1) }
//! reply 26: TSINFO_HEADER(1), TIMESTAMPING(2) / TX_TYPES(3) / RX_FILTERS(4) = bitset { SIZE(2) u32,
//!           VALUE(4) [u32] }, PHC_INDEX(5) u32 (absent without a PHC)
//! ```

use super::sys::{HwTstampConfig, TsInfoRaw};
use super::tstamp::TsInfo;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const NETLINK_GENERIC: libc::c_int = 16;
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const NLA_F_NESTED: u16 = 1 << 15;
/// ETHTOOL_MSG_TSINFO_GET (request) and its reply.
pub const TSINFO_GET: u8 = 25;
pub const TSINFO_GET_REPLY: u8 = 26;

fn put_attr(buf: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    buf.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(payload);
    buf.resize(buf.len().next_multiple_of(4), 0);
}

/// Iterates over (type, payload) of a run of attributes; stops at the first malformed one.
pub fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if b.len() < 4 {
            return None;
        }
        let len = u16::from_ne_bytes([b[0], b[1]]) as usize;
        let kind = u16::from_ne_bytes([b[2], b[3]]) & 0x3fff;
        if len < 4 || len > b.len() {
            return None;
        }
        let payload = &b[4..len];
        b = &b[len.next_multiple_of(4).min(b.len())..];
        Some((kind, payload))
    })
}

fn message(family: u16, cmd: u8, version: u8, seq: u32, body: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(20 + body.len());
    m.extend_from_slice(&((20 + body.len()) as u32).to_ne_bytes());
    m.extend_from_slice(&family.to_ne_bytes());
    m.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.extend_from_slice(&[cmd, version, 0, 0]);
    m.extend_from_slice(body);
    m
}

/// The TSINFO_GET request for `iface` (compact bitsets).
pub fn encode_tsinfo_get(family: u16, seq: u32, iface: &str) -> Vec<u8> {
    let mut hdr = Vec::new();
    let mut name = iface.as_bytes().to_vec();
    name.push(0);
    put_attr(&mut hdr, 2, &name);
    put_attr(&mut hdr, 3, &1u32.to_ne_bytes());
    let mut body = Vec::new();
    put_attr(&mut body, 1 | NLA_F_NESTED, &hdr);
    message(family, TSINFO_GET, 1, seq, &body)
}

fn bitset_value(b: &[u8]) -> u32 {
    attrs(b)
        .find(|(k, _)| *k == 4)
        .and_then(|(_, v)| v.get(0..4))
        .map_or(0, |v| u32::from_ne_bytes([v[0], v[1], v[2], v[3]]))
}

/// Decodes one netlink message (header included): a TSINFO reply, or the error it carries.
pub(crate) fn decode_tsinfo_reply(m: &[u8]) -> io::Result<TsInfoRaw> {
    if m.len() < 20 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "short netlink message"));
    }
    if u16::from_ne_bytes([m[4], m[5]]) == NLMSG_ERROR {
        let errno = -i32::from_ne_bytes([m[16], m[17], m[18], m[19]]);
        return Err(io::Error::from_raw_os_error(errno));
    }
    if m[16] != TSINFO_GET_REPLY {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("unexpected ethtool reply {}", m[16])));
    }
    let mut r = TsInfoRaw { so_timestamping: 0, phc_index: -1, tx_types: 0, rx_filters: 0 };
    for (k, v) in attrs(&m[20..]) {
        match k {
            2 => r.so_timestamping = bitset_value(v),
            3 => r.tx_types = bitset_value(v),
            4 => r.rx_filters = bitset_value(v),
            5 if v.len() >= 4 => r.phc_index = i32::from_ne_bytes([v[0], v[1], v[2], v[3]]),
            _ => {}
        }
    }
    Ok(r)
}

struct Genl(OwnedFd);

impl Genl {
    fn open() -> io::Result<Genl> {
        // SAFETY: plain socket(2); the descriptor is checked before it is owned.
        let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, NETLINK_GENERIC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh descriptor nothing else owns.
        Ok(Genl(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Sends `req` to the kernel and returns the first reply message.
    fn call(&self, req: &[u8]) -> io::Result<Vec<u8>> {
        // SAFETY: sockaddr_nl is plain data; all-zero addresses the kernel (pid 0).
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        // SAFETY: `req` and `sa` are valid for the call.
        let rc = unsafe {
            libc::sendto(
                self.0.as_raw_fd(),
                req.as_ptr() as *const libc::c_void,
                req.len(),
                0,
                &sa as *const libc::sockaddr_nl as *const libc::sockaddr,
                size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut buf = vec![0u8; 8192];
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::recv(self.0.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        buf.truncate(n as usize);
        let len = (u32::from_ne_bytes(buf.get(0..4).and_then(|s| s.try_into().ok()).unwrap_or([0; 4])) as usize)
            .min(buf.len());
        buf.truncate(len);
        Ok(buf)
    }

    fn family(&self, name: &str) -> io::Result<u16> {
        let mut body = Vec::new();
        let mut n = name.as_bytes().to_vec();
        n.push(0);
        put_attr(&mut body, CTRL_ATTR_FAMILY_NAME, &n);
        let m = self.call(&message(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, 1, &body))?;
        if m.len() >= 20 && u16::from_ne_bytes([m[4], m[5]]) == NLMSG_ERROR {
            return Err(io::Error::from_raw_os_error(-i32::from_ne_bytes([m[16], m[17], m[18], m[19]])));
        }
        attrs(m.get(20..).unwrap_or_default())
            .find(|(k, _)| *k == CTRL_ATTR_FAMILY_ID)
            .and_then(|(_, v)| v.get(0..2).map(|v| u16::from_ne_bytes([v[0], v[1]])))
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("generic netlink family {name}")))
    }
}

/// ETHTOOL_MSG_TSCONFIG_GET (kernel 6.15+) and its reply (ETHTOOL_MSG_TSCONFIG_GET_REPLY).
pub const TSCONFIG_GET: u8 = 46;
pub const TSCONFIG_GET_REPLY: u8 = 47;

/// Decodes a TSCONFIG reply: TX_TYPES(3) and RX_FILTERS(4) bitsets with the one value in use,
/// HWTSTAMP_FLAGS(5) u32, as a `hwtstamp_config`.
pub(crate) fn decode_tsconfig_reply(m: &[u8]) -> io::Result<HwTstampConfig> {
    if m.len() < 20 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "short netlink message"));
    }
    if u16::from_ne_bytes([m[4], m[5]]) == NLMSG_ERROR {
        return Err(io::Error::from_raw_os_error(-i32::from_ne_bytes([m[16], m[17], m[18], m[19]])));
    }
    if m[16] != TSCONFIG_GET_REPLY {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("unexpected ethtool reply {}", m[16])));
    }
    let mut c = HwTstampConfig { flags: 0, tx_type: 0, rx_filter: 0 };
    let one = |bits: u32| if bits == 0 { 0 } else { bits.trailing_zeros() as i32 };
    for (k, v) in attrs(&m[20..]) {
        match k {
            3 => c.tx_type = one(bitset_value(v)),
            4 => c.rx_filter = one(bitset_value(v)),
            5 if v.len() >= 4 => c.flags = i32::from_ne_bytes([v[0], v[1], v[2], v[3]]),
            _ => {}
        }
    }
    Ok(c)
}

/// ETHTOOL_MSG_TSCONFIG_GET for `iface`: the hardware timestamping configuration in use. Drivers
/// without hardware timestamping answer EOPNOTSUPP (veth, virtio_net: kernel.md 3c).
pub fn tsconfig(iface: &str) -> io::Result<HwTstampConfig> {
    let g = Genl::open()?;
    let fam = g.family("ethtool")?;
    let mut req = encode_tsinfo_get(fam, 3, iface);
    req[16] = TSCONFIG_GET;
    decode_tsconfig_reply(&g.call(&req)?)
}

/// ETHTOOL_MSG_TSINFO_GET for `iface`, in the calling thread's network namespace.
pub fn tsinfo(iface: &str) -> io::Result<TsInfo> {
    let g = Genl::open()?;
    let fam = g.family("ethtool")?;
    decode_tsinfo_reply(&g.call(&encode_tsinfo_get(fam, 2, iface))?).map(TsInfo::from_raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bytes() {
        let m = encode_tsinfo_get(21, 7, "va");
        // nlmsghdr: len 40, type 21, flags REQUEST, seq 7, pid 0; genl: cmd 25, version 1.
        let mut want = vec![40, 0, 0, 0, 21, 0, 1, 0, 7, 0, 0, 0, 0, 0, 0, 0, 25, 1, 0, 0];
        // TSINFO_HEADER (nested, 1 | 0x8000), len 20: DEV_NAME len 7 "va\0" + 1 pad, FLAGS len 8 = 1.
        want.extend([20, 0, 0x01, 0x80, 7, 0, 2, 0, b'v', b'a', 0, 0, 8, 0, 3, 0, 1, 0, 0, 0]);
        assert_eq!(m, want);
    }

    #[test]
    fn reply_and_error() {
        // Reply as this kernel gives for veth (kernel.md 3c): header, TIMESTAMPING compact bitset
        // {NOMASK, SIZE 19, VALUE 0x1a}; no PHC_INDEX.
        let mut m = vec![0u8; 16];
        m.extend([TSINFO_GET_REPLY, 1, 0, 0]);
        let mut bits = Vec::new();
        put_attr(&mut bits, 1, &[]);
        put_attr(&mut bits, 2, &19u32.to_ne_bytes());
        put_attr(&mut bits, 4, &0x1au32.to_ne_bytes());
        put_attr(&mut m, 1 | NLA_F_NESTED, &[]);
        put_attr(&mut m, 2 | NLA_F_NESTED, &bits);
        let r = decode_tsinfo_reply(&m).unwrap();
        assert_eq!((r.so_timestamping, r.phc_index, r.tx_types, r.rx_filters), (0x1a, -1, 0, 0));
        put_attr(&mut m, 5, &3u32.to_ne_bytes());
        assert_eq!(decode_tsinfo_reply(&m).unwrap().phc_index, 3);
        // NLMSG_ERROR with error -19 (ENODEV).
        let mut e = vec![0u8; 36];
        e[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        e[16..20].copy_from_slice(&(-19i32).to_ne_bytes());
        assert_eq!(decode_tsinfo_reply(&e).unwrap_err().raw_os_error(), Some(libc::ENODEV));
    }

    #[test]
    fn tsconfig_reply() {
        // A NIC in use by ptp4l: TX ON (bit 1), RX PTP_V2_EVENT (bit 12), flags 0.
        let mut m = vec![0u8; 16];
        m.extend([TSCONFIG_GET_REPLY, 1, 0, 0]);
        for (attr, bit) in [(3u16, 1u32 << 1), (4, 1 << 12)] {
            let mut bits = Vec::new();
            put_attr(&mut bits, 1, &[]);
            put_attr(&mut bits, 2, &32u32.to_ne_bytes());
            put_attr(&mut bits, 4, &bit.to_ne_bytes());
            put_attr(&mut m, attr | NLA_F_NESTED, &bits);
        }
        put_attr(&mut m, 5, &0u32.to_ne_bytes());
        assert_eq!(decode_tsconfig_reply(&m).unwrap(), HwTstampConfig { flags: 0, tx_type: 1, rx_filter: 12 });
    }

    #[test]
    fn malformed_attributes_stop_the_walk() {
        assert_eq!(attrs(&[2, 0, 1, 0]).count(), 0, "length below 4");
        assert_eq!(attrs(&[200, 0, 1, 0, 0, 0]).count(), 0, "length beyond the buffer");
    }
}
