//! AF_PACKET TPACKET_V3 receive ring (linux/if_packet.h, packet(7)): both directions of one interface,
//! kernel timestamps flagged per frame, kernel drop counters.
//!
//! ```text
//! ring = block_nr blocks of block_size bytes, mmap'ed; the kernel fills a block, flips its status to
//! TP_STATUS_USER, we read its frames and hand it back with TP_STATUS_KERNEL.
//!
//! block: tpacket_block_desc                 frame: tpacket3_hdr (48 bytes), then sockaddr_ll
//!   0 version u32   4 offset_to_priv u32      0 tp_next_offset u32  4 tp_sec u32  8 tp_nsec u32
//!   8 block_status u32                       12 tp_snaplen u32     16 tp_len u32  20 tp_status u32
//!  12 num_pkts u32 16 offset_to_first_pkt    24 tp_mac u16 26 tp_net u16  28 rxhash  32 vlan_tci u32
//!  20 blk_len u32  24 seq_num u64 ...        36 vlan_tpid u16 ...  48 sockaddr_ll (58: sll_pkttype)
//! ```
//!
//! Timestamps: PACKET_TIMESTAMP asks for SOF_TIMESTAMPING_RAW_HARDWARE, which the kernel falls back from
//! to the software stamp; `tp_status` says which one was used (TS_RAW_HARDWARE, TS_SOFTWARE, neither).
//! SO_TIMESTAMPING(RX_SOFTWARE) on the socket turns on the kernel's `netstamp_needed_key`, whose enable
//! is deferred to a workqueue (kernel.md 2e): the first frames after it may carry no software stamp,
//! so opening waits [`NETSTAMP_SETTLE`] before binding, and frames without a flag are
//! [`TsSource::KernelNone`] (the time the kernel copied them to the ring), never passed off as stamped.

use super::error::LiveError;
use super::filter;
use super::sys;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use wirestamp_core::{ClockQuality, Direction, Frame, LinkType, TsSource};

const TPACKET_V3: libc::c_int = 2;
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_VERSION: libc::c_int = 10;
const PACKET_TIMESTAMP: libc::c_int = 17;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;
/// The frame carries the kernel's software timestamp.
pub const TP_STATUS_TS_SOFTWARE: u32 = 1 << 29;
/// The frame carries the NIC's raw hardware timestamp.
pub const TP_STATUS_TS_RAW_HARDWARE: u32 = 1 << 31;
const PACKET_OUTGOING: u8 = 4;
const ETH_P_ALL: u16 = 0x0003;
const ARPHRD_ETHER: u16 = 1;
const ARPHRD_LOOPBACK: u16 = 772;
const SO_TIMESTAMPING: libc::c_int = 37;

/// How long opening waits after enabling software timestamps (kernel.md 2e: deferred static key).
pub const NETSTAMP_SETTLE: Duration = Duration::from_millis(50);

/// Ring geometry and what to capture.
#[derive(Debug, Clone)]
pub struct RingConfig {
    /// Interface name.
    pub iface: String,
    /// Block size in bytes (a power of two, multiple of the page size).
    pub block_size: u32,
    /// Number of blocks.
    pub block_nr: u32,
    /// How long the kernel holds a partly filled block before handing it over, ms.
    pub retire_ms: u32,
    /// tcpdump filter expression.
    pub filter: Option<String>,
    /// Frames are cut at this many bytes (the filter's accept value; with no filter, a one-instruction
    /// filter that accepts everything).
    pub snaplen: u32,
    /// Interface number to put in the frames.
    pub interface_id: u32,
}

impl RingConfig {
    /// 8 blocks of 1 MiB, 10 ms block timeout.
    pub fn new(iface: &str) -> RingConfig {
        RingConfig {
            iface: iface.into(),
            block_size: 1 << 20,
            block_nr: 8,
            retire_ms: 10,
            filter: None,
            snaplen: 262_144,
            interface_id: 0,
        }
    }

    /// A ring of `mb` MiB (at least 1): blocks of 1 MiB, or of 256 KiB below 4 MiB, so that there
    /// are at least four. The kernel fills one block while the reader holds another: a ring of one
    /// block dropped every frame that came while it was held.
    pub fn set_ring_mb(&mut self, mb: u32) {
        let mb = mb.max(1);
        (self.block_size, self.block_nr) = if mb >= 4 { (1 << 20, mb) } else { (1 << 18, mb * 4) };
    }
}

/// Kernel counters since opening (PACKET_STATISTICS, accumulated; the kernel resets them on each read).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingStats {
    /// Frames that passed the filter (delivered + dropped).
    pub kernel_packets: u64,
    /// Frames dropped because the ring was full.
    pub kernel_drops: u64,
    /// Times the ring was frozen full.
    pub freeze_q: u64,
    /// Frames delivered by [`AfPacket::next_frame`], per timestamp flag.
    pub ts_hardware: u64,
    pub ts_software: u64,
    pub ts_none: u64,
    /// Frames whose 802.1Q tag the kernel had taken out (TP_STATUS_VLAN_VALID) and that were restored.
    pub vlan_restored: u64,
    /// Times the socket reported the link down (ENETDOWN): nothing was captured while it was.
    pub link_down: u64,
}

/// The per-frame timestamp provenance from `tp_status`.
pub fn ts_source_of(status: u32) -> TsSource {
    if status & TP_STATUS_TS_RAW_HARDWARE != 0 {
        TsSource::KernelHardware
    } else if status & TP_STATUS_TS_SOFTWARE != 0 {
        TsSource::KernelSoftware
    } else {
        TsSource::KernelNone
    }
}

/// An open TPACKET_V3 ring bound to one interface.
pub struct AfPacket {
    fd: OwnedFd,
    map: *mut u8,
    map_len: usize,
    block_size: usize,
    block_nr: usize,
    cur: usize,
    holding: bool,
    pkts_left: u32,
    next_off: usize,
    link: LinkType,
    interface_id: u32,
    /// The interface bound, by name and index: to tell a link down from an interface gone.
    iface: String,
    ifindex: u32,
    /// The link went down and no frame came since: whether the interface still exists is looked at on
    /// each wait (it may be deleted while down, which the socket does not report).
    down: bool,
    scratch: Vec<u8>,
    stats: RingStats,
}

// SAFETY: the mapping is owned by this value alone and only touched through `&mut self`.
unsafe impl Send for AfPacket {}

fn setsockopt<T>(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, val: &T) -> io::Result<()> {
    // SAFETY: `val` is a live, initialised T and its exact size is passed.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            val as *const T as *const libc::c_void,
            size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

impl AfPacket {
    /// Opens the ring: checks the interface (exists, up, Ethernet-like), compiles and attaches the
    /// filter before any frame is queued, enables timestamps, maps the ring, binds.
    pub fn open(cfg: &RingConfig) -> Result<AfPacket, LiveError> {
        let iface = cfg.iface.as_str();
        let err = |what: &'static str| move |e: io::Error| LiveError::sys(what, iface, e);
        let isock = sys::ioctl_socket().map_err(err("socket"))?;
        let flags = sys::if_flags(&isock, iface).map_err(err("SIOCGIFFLAGS"))?;
        if flags & libc::IFF_UP as u16 == 0 {
            return Err(LiveError::InterfaceDown { iface: iface.into() });
        }
        let link = match sys::if_hwtype(&isock, iface).map_err(err("SIOCGIFHWADDR"))? {
            ARPHRD_ETHER | ARPHRD_LOOPBACK => LinkType::Ethernet,
            other => {
                return Err(LiveError::Sys {
                    what: "AF_PACKET",
                    iface: iface.into(),
                    source: io::Error::other(format!("link type ARPHRD {other} is not Ethernet; use --source pcap")),
                });
            }
        };
        let prog = match cfg.filter.as_deref() {
            // A syntax error is reported as such before a live handle is opened for the VLAN-aware code.
            Some(f) => filter::compile(f).and_then(|_| filter::compile_for(iface, f, cfg.snaplen))?,
            None => filter::accept_all(cfg.snaplen),
        };
        let ifname = std::ffi::CString::new(iface).map_err(|_| LiveError::NoSuchInterface { iface: iface.into() })?;
        // SAFETY: `ifname` is a valid NUL-terminated string.
        let ifindex = unsafe { libc::if_nametoindex(ifname.as_ptr()) };
        if ifindex == 0 {
            return Err(LiveError::NoSuchInterface { iface: iface.into() });
        }
        // Protocol 0: nothing is queued until bind, so the filter and ring are in place first.
        // SAFETY: plain socket(2); the descriptor is checked before it is owned.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(LiveError::sys("socket(AF_PACKET)", iface, io::Error::last_os_error()));
        }
        // SAFETY: `raw` is a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        filter::attach(fd.as_fd(), &prog).map_err(err("SO_ATTACH_FILTER"))?;
        setsockopt(&fd, libc::SOL_PACKET, PACKET_VERSION, &TPACKET_V3).map_err(err("PACKET_VERSION"))?;
        let ts_req = sys::SOF_RAW_HARDWARE as libc::c_int;
        setsockopt(&fd, libc::SOL_PACKET, PACKET_TIMESTAMP, &ts_req).map_err(err("PACKET_TIMESTAMP"))?;
        let so_ts =
            (sys::SOF_RX_SOFTWARE | sys::SOF_SOFTWARE | sys::SOF_RX_HARDWARE | sys::SOF_RAW_HARDWARE) as libc::c_int;
        setsockopt(&fd, libc::SOL_SOCKET, SO_TIMESTAMPING, &so_ts).map_err(err("SO_TIMESTAMPING"))?;
        let bs = cfg.block_size;
        let req = [bs, cfg.block_nr, bs.min(1 << 16), (bs / bs.min(1 << 16)) * cfg.block_nr, cfg.retire_ms, 0, 0];
        setsockopt(&fd, libc::SOL_PACKET, PACKET_RX_RING, &req).map_err(err("PACKET_RX_RING"))?;
        let map_len = bs as usize * cfg.block_nr as usize;
        // SAFETY: maps the ring the kernel just allocated for `fd`, shared and readable/writable as packet(7)
        // requires; the result is checked against MAP_FAILED.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(LiveError::sys("mmap ring", iface, io::Error::last_os_error()));
        }
        let ring = AfPacket {
            fd,
            map: map as *mut u8,
            map_len,
            block_size: bs as usize,
            block_nr: cfg.block_nr as usize,
            cur: 0,
            holding: false,
            pkts_left: 0,
            next_off: 0,
            link,
            interface_id: cfg.interface_id,
            iface: iface.to_owned(),
            ifindex,
            down: false,
            scratch: Vec::new(),
            stats: RingStats::default(),
        };
        std::thread::sleep(NETSTAMP_SETTLE);
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid starting value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL.to_be();
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: `sll` is a valid sockaddr_ll and its size is passed.
        let rc = unsafe {
            libc::bind(
                ring.fd.as_raw_fd(),
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(LiveError::sys("bind(AF_PACKET)", iface, io::Error::last_os_error()));
        }
        Ok(ring)
    }

    /// Takes the error `poll()` reported on the socket (POLLERR), which until taken makes every
    /// `poll()` return at once: a link gone down (ENETDOWN, counted in [`RingStats::link_down`]; the
    /// capture goes on when it comes back), or the interface gone (an error).
    pub fn take_error(&mut self) -> Result<(), LiveError> {
        let mut err: libc::c_int = 0;
        let mut len = size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `err` and `len` are valid for a c_int option, as SO_ERROR returns.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_ERROR,
                &mut err as *mut libc::c_int as *mut libc::c_void,
                &mut len,
            )
        };
        if rc < 0 {
            return Err(LiveError::sys("getsockopt(SO_ERROR)", &self.iface, io::Error::last_os_error()));
        }
        match err {
            0 => Ok(()),
            libc::ENETDOWN => {
                self.stats.link_down += 1;
                self.down = true;
                self.check_gone()
            }
            e => Err(LiveError::Sys {
                what: "socket",
                iface: self.iface.clone(),
                source: io::Error::from_raw_os_error(e),
            }),
        }
    }

    /// While the link is down (no frame since): an error if the interface is gone (deleted, or its
    /// name now another's). Call on each wait.
    pub fn check_gone(&self) -> Result<(), LiveError> {
        if !self.down {
            return Ok(());
        }
        let name = std::ffi::CString::new(self.iface.as_str()).unwrap_or_default();
        // SAFETY: `name` is a valid NUL-terminated string.
        if unsafe { libc::if_nametoindex(name.as_ptr()) } == self.ifindex {
            Ok(())
        } else {
            Err(LiveError::InterfaceGone { iface: self.iface.clone() })
        }
    }

    /// True when [`next_frame`](Self::next_frame) would return a frame without waiting.
    pub fn ready(&self) -> bool {
        if self.pkts_left > 0 {
            return true;
        }
        let next = if self.holding { (self.cur + 1) % self.block_nr } else { self.cur };
        self.block_status(next).load(Ordering::Acquire) & TP_STATUS_USER != 0
    }

    /// Hands a block whose frames have all been read back to the kernel. Call before waiting in
    /// `poll()` on this socket from outside (as several rings are polled together): the kernel reports
    /// the socket readable while user space still owns a block, so a held, empty block makes every
    /// `poll()` return at once and the wait spin.
    pub fn release_consumed(&mut self) {
        if self.holding && self.pkts_left == 0 {
            self.block_status(self.cur).store(TP_STATUS_KERNEL, Ordering::Release);
            self.holding = false;
            self.cur = (self.cur + 1) % self.block_nr;
        }
    }

    fn block_status(&self, block: usize) -> &AtomicU32 {
        // SAFETY: block < block_nr, so offset 8 of the block is inside the mapping and 4-aligned (blocks are
        // page-aligned); the kernel updates this word concurrently, hence the atomic view.
        unsafe { &*(self.map.add(block * self.block_size + 8) as *const AtomicU32) }
    }

    fn block_u32(&self, block: usize, off: usize) -> u32 {
        // SAFETY: the block belongs to user space (TP_STATUS_USER observed with Acquire) and `off` < 48 lies
        // inside its descriptor.
        unsafe { (self.map.add(block * self.block_size + off) as *const u32).read() }
    }

    /// The next frame, waiting up to `timeout`; `None` when none arrived in that time.
    pub fn next_frame(&mut self, timeout: Duration) -> Result<Option<Frame<'_>>, LiveError> {
        let mut polled = false;
        loop {
            if self.pkts_left > 0 {
                return Ok(Some(self.take_frame()));
            }
            if self.holding {
                self.block_status(self.cur).store(TP_STATUS_KERNEL, Ordering::Release);
                self.holding = false;
                self.cur = (self.cur + 1) % self.block_nr;
            }
            if self.block_status(self.cur).load(Ordering::Acquire) & TP_STATUS_USER != 0 {
                self.holding = true;
                self.pkts_left = self.block_u32(self.cur, 12);
                self.next_off = self.block_u32(self.cur, 16) as usize;
                continue;
            }
            if polled {
                return Ok(None);
            }
            let mut pfd = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN | libc::POLLERR, revents: 0 };
            let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: one valid pollfd.
            let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
            if rc < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    return Ok(None);
                }
                return Err(LiveError::sys("poll", "ring", e));
            }
            if pfd.revents & libc::POLLERR != 0 {
                self.take_error()?;
            }
            self.check_gone()?;
            polled = true;
        }
    }

    fn take_frame(&mut self) -> Frame<'_> {
        let block = self.cur * self.block_size;
        let off = self.next_off;
        // Header fields, read from a block we own (TP_STATUS_USER).
        let hdr = |o: usize| self.block_u32_abs(block + off + o);
        let next = hdr(0) as usize;
        let (sec, nsec, snaplen, len, status) = (hdr(4), hdr(8), hdr(12) as usize, hdr(16), hdr(20));
        let mac = (hdr(24) & 0xffff) as usize;
        let vlan_tci = hdr(32);
        let vlan_tpid = (hdr(36) & 0xffff) as u16;
        let pkttype = self.byte_abs(block + off + 58);
        self.pkts_left -= 1;
        self.next_off = off + next;
        self.down = false;
        let end = (off + mac + snaplen).min(self.block_size);
        let start = (off + mac).min(end);
        // SAFETY: [start, end) is clamped to this block, which user space owns until the next call releases it;
        // the returned slice borrows `self`, so it cannot outlive that.
        let data: &[u8] = unsafe { std::slice::from_raw_parts(self.map.add(block + start), end - start) };
        let ts_source = ts_source_of(status);
        match ts_source {
            TsSource::KernelHardware => self.stats.ts_hardware += 1,
            TsSource::KernelSoftware => self.stats.ts_software += 1,
            _ => self.stats.ts_none += 1,
        }
        let direction = if pkttype == PACKET_OUTGOING { Direction::Outbound } else { Direction::Inbound };
        let mut wire_len = len;
        let data = if status & TP_STATUS_VLAN_VALID != 0 && data.len() >= 12 {
            // The kernel took the 802.1Q tag out (VLAN offload); put it back where it was on the wire.
            let tpid = if status & TP_STATUS_VLAN_TPID_VALID != 0 && vlan_tpid != 0 { vlan_tpid } else { 0x8100 };
            self.scratch.clear();
            self.scratch.extend_from_slice(&data[..12]);
            self.scratch.extend_from_slice(&tpid.to_be_bytes());
            self.scratch.extend_from_slice(&(vlan_tci as u16).to_be_bytes());
            self.scratch.extend_from_slice(&data[12..]);
            wire_len += 4;
            self.stats.vlan_restored += 1;
            &self.scratch[..]
        } else {
            data
        };
        Frame {
            data,
            wire_len,
            ts_ns: i64::from(sec) * 1_000_000_000 + i64::from(nsec),
            ts_source,
            link: self.link,
            interface: self.interface_id,
            direction,
            fcs_len: Some(0),
            quality: ClockQuality::default(),
        }
    }

    fn block_u32_abs(&self, at: usize) -> u32 {
        if at + 4 > self.map_len {
            return 0;
        }
        // SAFETY: bounds checked above; unaligned read because frame offsets are only 16-aligned by contract.
        unsafe { (self.map.add(at) as *const u32).read_unaligned() }
    }

    fn byte_abs(&self, at: usize) -> u8 {
        if at >= self.map_len {
            return 0;
        }
        // SAFETY: bounds checked above.
        unsafe { self.map.add(at).read() }
    }

    /// Kernel counters (read now, accumulated) and the per-flag frame counts.
    pub fn stats(&mut self) -> Result<RingStats, LiveError> {
        let mut st = [0u32; 3];
        let mut len = size_of::<[u32; 3]>() as libc::socklen_t;
        // SAFETY: `st` is a writable tpacket_stats_v3 (3 x u32) and `len` holds its size.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                PACKET_STATISTICS,
                st.as_mut_ptr() as *mut libc::c_void,
                &mut len,
            )
        };
        if rc < 0 {
            return Err(LiveError::sys("PACKET_STATISTICS", "ring", io::Error::last_os_error()));
        }
        self.stats.kernel_packets += u64::from(st[0]);
        self.stats.kernel_drops += u64::from(st[1]);
        self.stats.freeze_q += u64::from(st[2]);
        Ok(self.stats)
    }

    /// The link type of the frames.
    pub fn link(&self) -> LinkType {
        self.link
    }
}

impl AsRawFd for AfPacket {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.fd.as_raw_fd()
    }
}

impl Drop for AfPacket {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `open`; no borrow of it can outlive `self`.
        unsafe { libc::munmap(self.map as *mut libc::c_void, self.map_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_flags() {
        // kernel.md item 4: 0x20000009 = USER|CSUMNOTREADY|TS_SOFTWARE; 0x9 without the key.
        assert_eq!(ts_source_of(0x2000_0009), TsSource::KernelSoftware);
        assert_eq!(ts_source_of(0x9), TsSource::KernelNone);
        assert_eq!(ts_source_of(0x8000_0001), TsSource::KernelHardware);
        assert_eq!(ts_source_of(0xa000_0001), TsSource::KernelHardware, "raw hardware wins");
    }
}
