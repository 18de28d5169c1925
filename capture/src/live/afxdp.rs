//! AF_XDP capture port (copy mode): for an interface fed by a tap, whose frames exist only to be measured.
//! `wirestamp-bpf`'s [`XskRedirect`] program sends every frame of RX queue `queue` to an AF_XDP socket
//! (xdpilone: UMEM, fill and RX rings) with a [`XskMeta`] in front of it; frames are read from the UMEM
//! in place and handed out whole (caplen = wirelen).
//!
//! ```text
//!  NIC queue ─▶ XDP ws_xsk_rx ─(XSKMAP[queue])─▶ AF_XDP socket: RX ring ─▶ Frame ─▶ chunk back to fill ring
//!  UMEM: N chunks of 4096 B; the kernel copies [meta 24 B][frame] to chunk + 256 - 24 .. (copy mode)
//! ```
//!
//! Timestamps: the NIC's RX hardware stamp from the metadata ([`TsSource::KernelHardware`]); without one
//! (veth, most drivers) the program's TAI time less the kernel's TAI offset ([`TsSource::BpfHook`]);
//! a frame without metadata (counted) gets the time it was read ([`TsSource::KernelNone`]). Frames that
//! reach the socket do not reach the network stack. Only the given queue is captured: use one queue
//! (`ethtool -L IFACE combined 1`) or one capture per queue.

use std::ffi::CString;
use std::num::NonZeroU32;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::time::Duration;

use wirestamp_bpf::{XSK_META_LEN, XskMeta, XskRedirect, XskStats};
use wirestamp_core::{ClockQuality, Direction, Frame, LinkType, TsSource};
use xdpilone::{DeviceQueue, IfInfo, RingRx, Socket, SocketConfig, Umem, UmemConfig, User};

use super::error::LiveError;

/// Bytes per UMEM chunk (a frame and its headroom; the kernel's aligned mode wants a power of two).
pub const CHUNK: u32 = 4096;
/// Chunks (and ring entries): 16 MiB of UMEM.
pub const CHUNKS: u32 = 4096;
const XDP_COPY: u16 = 1 << 1;
const XDP_USE_NEED_WAKEUP: u16 = 1 << 3;

/// Counters: the program's and the socket's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AfXdpStats {
    /// The redirect program's counters.
    pub prog: XskStats,
    /// Frames handed out.
    pub frames: u64,
    /// Frames without wirestamp's metadata in front of them.
    pub no_meta: u64,
    /// Kernel: frames dropped for any reason (XDP_STATISTICS rx_dropped).
    pub rx_dropped: u64,
    /// Kernel: frames dropped because the RX ring was full.
    pub rx_ring_full: u64,
    /// Kernel: times the fill ring was empty when a frame arrived.
    pub fill_ring_empty: u64,
    /// Kernel: invalid descriptors.
    pub rx_invalid_descs: u64,
}

/// The anonymous mapping the UMEM lives in.
struct Area {
    ptr: NonNull<u8>,
    len: usize,
}

impl Drop for Area {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `AfXdp::open`; the socket using it was closed before
        // (field order of `AfXdp`).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// An AF_XDP socket on one interface queue, fed by the redirect program.
pub struct AfXdp {
    // Drop order: program first (no more redirects), then the rings and sockets, then the memory.
    prog: XskRedirect,
    rx: RingRx,
    device: DeviceQueue,
    user: User,
    _umem: Umem,
    area: Area,
    interface_id: u32,
    /// A chunk handed out in the last frame, to give back to the fill ring on the next call.
    lent: Option<u64>,
    tai_offset_ns: i64,
    frames: u64,
    no_meta: u64,
}

// SAFETY: the UMEM mapping and rings are owned by this value alone and only touched through `&mut self`.
unsafe impl Send for AfXdp {}

fn xdp_err(what: &'static str, iface: &str, e: xdpilone::Errno) -> LiveError {
    LiveError::sys(what, iface, std::io::Error::from_raw_os_error(e.get_raw().abs()))
}

impl AfXdp {
    /// Creates the UMEM and the socket (copy mode) on `iface`'s RX queue `queue`, fills the fill ring,
    /// then loads and attaches the redirect program and registers the socket. Call it from a thread in
    /// the interface's network namespace.
    pub fn open(iface: &str, queue: u32, interface_id: u32) -> Result<AfXdp, LiveError> {
        let name = CString::new(iface).map_err(|_| LiveError::NoSuchInterface { iface: iface.into() })?;
        // SAFETY: `name` is a valid NUL-terminated string.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            return Err(LiveError::NoSuchInterface { iface: iface.into() });
        }
        let len = (CHUNK * CHUNKS) as usize;
        // SAFETY: a fresh private anonymous mapping; the result is checked against MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(LiveError::sys("mmap UMEM", iface, std::io::Error::last_os_error()));
        }
        let area = Area { ptr: NonNull::new(ptr.cast()).expect("mmap never returns null on success"), len };
        let slice = NonNull::slice_from_raw_parts(area.ptr, len);
        let cfg = UmemConfig { fill_size: CHUNKS, complete_size: CHUNKS, frame_size: CHUNK, headroom: 0, flags: 0 };
        // SAFETY: the area is a page-aligned mapping of `len` bytes that outlives the UMEM (field order).
        let umem = unsafe { Umem::new(cfg, slice) }.map_err(|e| xdp_err("AF_XDP UMEM", iface, e))?;
        let mut info = IfInfo::invalid();
        info.from_ifindex(ifindex).map_err(|e| xdp_err("AF_XDP interface", iface, e))?;
        info.set_queue(queue);
        let sock = Socket::with_shared(&info, &umem).map_err(|e| xdp_err("AF_XDP socket", iface, e))?;
        let mut device = umem.fq_cq(&sock).map_err(|e| xdp_err("AF_XDP fill/completion rings", iface, e))?;
        let scfg = SocketConfig {
            rx_size: NonZeroU32::new(CHUNKS),
            tx_size: None,
            bind_flags: XDP_COPY | XDP_USE_NEED_WAKEUP,
        };
        let user = umem.rx_tx(&sock, &scfg).map_err(|e| xdp_err("AF_XDP RX ring", iface, e))?;
        let rx = user.map_rx().map_err(|e| xdp_err("AF_XDP RX ring mmap", iface, e))?;
        umem.bind(&user).map_err(|e| {
            if e.get_raw().abs() == libc::EBUSY {
                LiveError::Sys {
                    what: "AF_XDP bind (copy mode)",
                    iface: iface.into(),
                    source: std::io::Error::other(format!(
                        "RX queue {queue} already has an AF_XDP socket: another wirestamp capture (or another tool) \
                         is running on this interface; stop it first"
                    )),
                }
            } else if let Some(n) =
                super::sys::rx_queues(iface).ok().filter(|&n| e.get_raw().abs() == libc::EINVAL && n > 0 && queue >= n)
            {
                LiveError::Sys {
                    what: "AF_XDP bind (copy mode)",
                    iface: iface.into(),
                    source: std::io::Error::other(format!(
                        "RX queue {queue} does not exist: the interface has {n} (0 to {}); give --queue below {n}",
                        n - 1
                    )),
                }
            } else {
                xdp_err("AF_XDP bind (copy mode)", iface, e)
            }
        })?;
        let mut fill = device.fill(CHUNKS);
        let n = fill.insert((0..u64::from(CHUNKS)).map(|i| i * u64::from(CHUNK)));
        fill.commit();
        drop(fill);
        if n == 0 {
            return Err(LiveError::sys("AF_XDP fill ring", iface, std::io::Error::other("no room")));
        }
        let mut prog = XskRedirect::attach(ifindex).map_err(|e| LiveError::Sys {
            what: "AF_XDP redirect program",
            iface: iface.into(),
            source: std::io::Error::other(e.to_string()),
        })?;
        prog.register(queue, rx.as_raw_fd()).map_err(|e| LiveError::Sys {
            what: "AF_XDP XSKMAP",
            iface: iface.into(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let tai_offset_ns = wirestamp_bpf::tai_offset_ns().map_err(|e| LiveError::sys("adjtimex", iface, e))?;
        Ok(AfXdp {
            prog,
            rx,
            device,
            user,
            _umem: umem,
            area,
            interface_id,
            lent: None,
            tai_offset_ns,
            frames: 0,
            no_meta: 0,
        })
    }

    /// The socket's descriptor (for poll).
    pub fn as_raw_fd(&self) -> RawFd {
        self.rx.as_raw_fd()
    }

    fn give_back(&mut self) {
        if let Some(addr) = self.lent.take() {
            let mut fill = self.device.fill(1);
            // The fill ring has an entry for every chunk, so there is always room for the one lent out.
            fill.insert_once(addr & !u64::from(CHUNK - 1));
            fill.commit();
        }
        if self.device.needs_wakeup() {
            self.device.wake();
        }
    }

    /// The next frame, waiting up to `timeout`; `None` when none arrived (or a signal interrupted).
    pub fn next_frame(&mut self, timeout: Duration) -> Result<Option<Frame<'_>>, LiveError> {
        self.give_back();
        if self.rx.available() == 0 {
            let mut pfd = libc::pollfd { fd: self.rx.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: one valid pollfd.
            let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
            if rc < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    return Ok(None);
                }
                return Err(LiveError::sys("poll", "AF_XDP", e));
            }
        }
        let desc = {
            let mut rx = self.rx.receive(1);
            let d = rx.read();
            rx.release();
            d
        };
        let Some(desc) = desc else { return Ok(None) };
        self.lent = Some(desc.addr);
        let (addr, len) = (desc.addr as usize, desc.len as usize);
        let end = addr.saturating_add(len).min(self.area.len);
        let start = addr.min(end);
        // SAFETY: [start, end) is clamped to the UMEM mapping; the kernel wrote it before publishing the
        // descriptor (acquire in `receive`) and does not reuse the chunk until it is back in the fill ring,
        // which happens on the next call, after the returned frame's borrow of `self` has ended.
        let data = unsafe { std::slice::from_raw_parts(self.area.ptr.as_ptr().add(start), end - start) };
        let meta = if start >= XSK_META_LEN {
            // SAFETY: the 24 bytes before the frame lie in the same chunk (data is at chunk + 256), in the mapping.
            let m =
                unsafe { std::slice::from_raw_parts(self.area.ptr.as_ptr().add(start - XSK_META_LEN), XSK_META_LEN) };
            XskMeta::from_bytes(m)
        } else {
            None
        };
        let (ts_ns, ts_source) = match meta {
            Some(XskMeta { rx_hw_ns: Some(hw), .. }) => {
                (i64::try_from(hw).unwrap_or(i64::MAX), TsSource::KernelHardware)
            }
            Some(m) => (i64::try_from(m.hook_tai_ns).unwrap_or(i64::MAX) - self.tai_offset_ns, TsSource::BpfHook),
            None => {
                self.no_meta += 1;
                let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                // SAFETY: `ts` is a valid timespec to write.
                unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
                (ts.tv_sec * 1_000_000_000 + ts.tv_nsec, TsSource::KernelNone)
            }
        };
        self.frames += 1;
        Ok(Some(Frame {
            data,
            wire_len: data.len() as u32,
            ts_ns,
            ts_source,
            link: LinkType::Ethernet,
            interface: self.interface_id,
            direction: Direction::Inbound,
            fcs_len: Some(0),
            quality: ClockQuality::default(),
        }))
    }

    /// Counters, read now.
    pub fn stats(&self) -> Result<AfXdpStats, LiveError> {
        let prog = self.prog.stats().map_err(|e| LiveError::Sys {
            what: "AF_XDP program stats",
            iface: String::new(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let k = self.user.statistics_v2().map_err(|e| xdp_err("XDP_STATISTICS", "", e))?;
        Ok(AfXdpStats {
            prog,
            frames: self.frames,
            no_meta: self.no_meta,
            rx_dropped: k.rx_dropped,
            rx_ring_full: k.rx_ring_full,
            fill_ring_empty: k.rx_fill_ring_empty_descs,
            rx_invalid_descs: k.rx_invalid_descs,
        })
    }
}
