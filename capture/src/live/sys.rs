//! Kernel ABI used by live capture: ioctl numbers, `struct ifreq`, and the byte layouts of
//! `struct ethtool_ts_info` and `struct hwtstamp_config` (linux/ethtool.h, linux/net_tstamp.h).
//!
//! The structures are encoded and decoded as native-endian byte arrays with explicit offsets, so their
//! layout is checked by unit tests on hand-built replies rather than trusted to a binding.
//!
//! ```text
//! ethtool_ts_info (44 bytes)           hwtstamp_config (12 bytes)     ifreq (40 bytes)
//!  0 cmd            u32 (0x41)          0 flags     i32               0 ifr_name   [u8; 16]
//!  4 so_timestamping u32 (SOF_*)        4 tx_type   i32 (HWTSTAMP_TX) 16 ifr_data / ifr_flags / ...
//!  8 phc_index      i32 (-1 = none)     8 rx_filter i32 (FILTER_*)       (24-byte union)
//! 12 tx_types       u32 (1 << tx_type)
//! 16 tx_reserved    [u32; 3]
//! 28 rx_filters     u32 (1 << filter)
//! 32 rx_reserved    [u32; 3]
//! ```

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub const SIOCETHTOOL: libc::c_ulong = 0x8946;
pub const SIOCGHWTSTAMP: libc::c_ulong = 0x89b1;
pub const SIOCSHWTSTAMP: libc::c_ulong = 0x89b0;
pub const SIOCGIFFLAGS: libc::c_ulong = 0x8913;
pub const SIOCGIFHWADDR: libc::c_ulong = 0x8927;
pub const ETHTOOL_GET_TS_INFO: u32 = 0x41;

pub const ETHTOOL_TS_INFO_LEN: usize = 44;
pub const HWTSTAMP_CONFIG_LEN: usize = 12;

// SOF_TIMESTAMPING_* (linux/net_tstamp.h).
pub const SOF_TX_HARDWARE: u32 = 1 << 0;
pub const SOF_TX_SOFTWARE: u32 = 1 << 1;
pub const SOF_RX_HARDWARE: u32 = 1 << 2;
pub const SOF_RX_SOFTWARE: u32 = 1 << 3;
pub const SOF_SOFTWARE: u32 = 1 << 4;
pub const SOF_RAW_HARDWARE: u32 = 1 << 6;

/// Names of the SOF_TIMESTAMPING capability bits, as `ethtool -T` prints them.
pub const SOF_NAMES: [(u32, &str); 6] = [
    (SOF_TX_HARDWARE, "hardware-transmit"),
    (SOF_TX_SOFTWARE, "software-transmit"),
    (SOF_RX_HARDWARE, "hardware-receive"),
    (SOF_RX_SOFTWARE, "software-receive"),
    (SOF_SOFTWARE, "software-system-clock"),
    (SOF_RAW_HARDWARE, "hardware-raw-clock"),
];

/// Names of HWTSTAMP_TX_* values (index = value).
pub const TX_TYPE_NAMES: [&str; 4] = ["off", "on", "onestep-sync", "onestep-p2p"];
/// Names of HWTSTAMP_FILTER_* values (index = value).
pub const RX_FILTER_NAMES: [&str; 16] = [
    "none",
    "all",
    "some",
    "ptpv1-l4-event",
    "ptpv1-l4-sync",
    "ptpv1-l4-delay-req",
    "ptpv2-l4-event",
    "ptpv2-l4-sync",
    "ptpv2-l4-delay-req",
    "ptpv2-l2-event",
    "ptpv2-l2-sync",
    "ptpv2-l2-delay-req",
    "ptpv2-event",
    "ptpv2-sync",
    "ptpv2-delay-req",
    "ntp-all",
];

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// Decoded `struct ethtool_ts_info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TsInfoRaw {
    pub so_timestamping: u32,
    pub phc_index: i32,
    pub tx_types: u32,
    pub rx_filters: u32,
}

/// `ETHTOOL_GCHANNELS`: an interface's queue counts (`struct ethtool_channels`, nine u32).
pub const ETHTOOL_GCHANNELS: u32 = 0x3c;

/// An interface's RX queues as ETHTOOL_GCHANNELS counts them: RX-only plus combined channels.
pub fn rx_queues(iface: &str) -> io::Result<u32> {
    let sock = ioctl_socket()?;
    let mut buf = [0u8; 36];
    buf[0..4].copy_from_slice(&ETHTOOL_GCHANNELS.to_ne_bytes());
    let mut ifr = IfReq::new(iface)?;
    ifr.set_data_ptr(buf.as_mut_ptr());
    ifreq_ioctl(&sock, SIOCETHTOOL, &mut ifr)?;
    // rx_count (offset 20) + combined_count (32).
    Ok(u32_at(&buf, 20).saturating_add(u32_at(&buf, 32)))
}

/// The request buffer for ETHTOOL_GET_TS_INFO: `cmd` set, everything else zero.
pub fn encode_ts_info_request() -> [u8; ETHTOOL_TS_INFO_LEN] {
    let mut b = [0u8; ETHTOOL_TS_INFO_LEN];
    b[0..4].copy_from_slice(&ETHTOOL_GET_TS_INFO.to_ne_bytes());
    b
}

/// Decodes the kernel's reply to ETHTOOL_GET_TS_INFO.
pub fn decode_ts_info(b: &[u8; ETHTOOL_TS_INFO_LEN]) -> TsInfoRaw {
    TsInfoRaw {
        so_timestamping: u32_at(b, 4),
        phc_index: u32_at(b, 8) as i32,
        tx_types: u32_at(b, 12),
        rx_filters: u32_at(b, 28),
    }
}

/// `struct hwtstamp_config`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HwTstampConfig {
    pub flags: i32,
    pub tx_type: i32,
    pub rx_filter: i32,
}

impl HwTstampConfig {
    /// Native-endian bytes for SIOCSHWTSTAMP.
    pub fn encode(&self) -> [u8; HWTSTAMP_CONFIG_LEN] {
        let mut b = [0u8; HWTSTAMP_CONFIG_LEN];
        b[0..4].copy_from_slice(&self.flags.to_ne_bytes());
        b[4..8].copy_from_slice(&self.tx_type.to_ne_bytes());
        b[8..12].copy_from_slice(&self.rx_filter.to_ne_bytes());
        b
    }

    /// Decodes a SIOCGHWTSTAMP / SIOCSHWTSTAMP reply.
    pub fn decode(b: &[u8; HWTSTAMP_CONFIG_LEN]) -> HwTstampConfig {
        HwTstampConfig { flags: u32_at(b, 0) as i32, tx_type: u32_at(b, 4) as i32, rx_filter: u32_at(b, 8) as i32 }
    }

    /// `tx=on rx=ptpv2-event flags=0x0`.
    pub fn describe(&self) -> String {
        format!(
            "tx={} rx={} flags={:#x}",
            name_or_number(&TX_TYPE_NAMES, self.tx_type),
            name_or_number(&RX_FILTER_NAMES, self.rx_filter),
            self.flags
        )
    }
}

/// A table name for `v`, or the number when out of range.
pub fn name_or_number(table: &[&str], v: i32) -> String {
    usize::try_from(v).ok().and_then(|i| table.get(i)).map_or_else(|| v.to_string(), |s| s.to_string())
}

/// `struct ifreq`: 16-byte name and a 24-byte union, 8-aligned like the kernel's.
#[repr(C)]
pub struct IfReq {
    pub name: [u8; libc::IFNAMSIZ],
    pub data: [u64; 3],
}

impl IfReq {
    /// An ifreq naming `iface`; names of 16 bytes or more are refused like the kernel does.
    pub fn new(iface: &str) -> io::Result<IfReq> {
        let b = iface.as_bytes();
        if b.is_empty() || b.len() >= libc::IFNAMSIZ || b.contains(&0) || b.contains(&b'/') {
            return Err(io::Error::from_raw_os_error(libc::ENODEV));
        }
        let mut name = [0u8; libc::IFNAMSIZ];
        name[..b.len()].copy_from_slice(b);
        Ok(IfReq { name, data: [0; 3] })
    }

    /// Points `ifr_data` at `buf` (ETHTOOL and HWTSTAMP requests).
    pub fn set_data_ptr(&mut self, buf: *mut u8) {
        self.data[0] = buf as usize as u64;
    }

    /// The first 2 bytes of the union (`ifr_flags`, or `ifr_hwaddr.sa_family`).
    pub fn short0(&self) -> u16 {
        (self.data[0] & 0xffff) as u16
    }
}

/// An `AF_INET` datagram socket, the usual handle for interface ioctls (in the calling thread's netns).
pub fn ioctl_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the returned descriptor is checked before it is owned.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a freshly created descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// ioctl(`req`) on an `ifreq`.
pub fn ifreq_ioctl(sock: &OwnedFd, req: libc::c_ulong, ifr: &mut IfReq) -> io::Result<()> {
    // SAFETY: `ifr` is a valid, writable 40-byte ifreq for the duration of the call; where its union holds
    // a pointer (set_data_ptr), the caller keeps that buffer alive and large enough for `req`.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), req as _, ifr as *mut IfReq) };
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Interface flags (SIOCGIFFLAGS).
pub fn if_flags(sock: &OwnedFd, iface: &str) -> io::Result<u16> {
    let mut ifr = IfReq::new(iface)?;
    ifreq_ioctl(sock, SIOCGIFFLAGS, &mut ifr)?;
    Ok(ifr.short0())
}

/// ARPHRD_* hardware type (SIOCGIFHWADDR).
pub fn if_hwtype(sock: &OwnedFd, iface: &str) -> io::Result<u16> {
    let mut ifr = IfReq::new(iface)?;
    ifreq_ioctl(sock, SIOCGIFHWADDR, &mut ifr)?;
    Ok(ifr.short0())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ts_info_request_and_reply() {
        assert_eq!(&encode_ts_info_request()[..8], &[0x41, 0, 0, 0, 0, 0, 0, 0]);
        // A reply as a NIC with a PHC gives it (x86_64, little-endian): SOF 0x5f, phc 3,
        // tx_types OFF|ON (0x3), rx_filters NONE|ALL (0x3); reserved words nonzero to prove they are skipped.
        let mut b = [0u8; ETHTOOL_TS_INFO_LEN];
        b[0] = 0x41;
        b[4] = 0x5f;
        b[8] = 3;
        b[12] = 0x03;
        b[16..28].fill(0xee);
        b[28] = 0x03;
        b[32..44].fill(0xdd);
        let d = decode_ts_info(&b);
        assert_eq!(d, TsInfoRaw { so_timestamping: 0x5f, phc_index: 3, tx_types: 3, rx_filters: 3 });
        // veth here: 0x1a and no PHC (phc_index = -1 = ff ff ff ff).
        let mut b = [0u8; ETHTOOL_TS_INFO_LEN];
        b[4] = 0x1a;
        b[8..12].copy_from_slice(&[0xff; 4]);
        let d = decode_ts_info(&b);
        assert_eq!((d.so_timestamping, d.phc_index, d.tx_types, d.rx_filters), (0x1a, -1, 0, 0));
    }

    #[test]
    fn hwtstamp_config_bytes() {
        let c = HwTstampConfig { flags: 0, tx_type: 1, rx_filter: 12 };
        assert_eq!(c.encode(), [0, 0, 0, 0, 1, 0, 0, 0, 12, 0, 0, 0]);
        let d = HwTstampConfig::decode(&[1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(d, HwTstampConfig { flags: 1, tx_type: 0, rx_filter: 1 });
        assert_eq!(c.describe(), "tx=on rx=ptpv2-event flags=0x0");
        assert_eq!(HwTstampConfig { flags: 0, tx_type: 9, rx_filter: 99 }.describe(), "tx=9 rx=99 flags=0x0");
    }

    #[test]
    fn ifreq_layout() {
        assert_eq!(std::mem::size_of::<IfReq>(), 40);
        assert!(IfReq::new("0123456789abcdef").is_err(), "16 bytes leave no room for the NUL");
        assert!(IfReq::new("").is_err());
        let r = IfReq::new("eth0").unwrap();
        assert_eq!(&r.name[..5], b"eth0\0");
    }
}
