//! AF_XDP capture port: `xsk.bpf.c` redirects every frame of an interface to the AF_XDP socket bound to
//! its RX queue, with an [`XskMeta`] (`struct ws_xsk_meta` of events.h) in the XDP metadata area in
//! front of it. The sockets themselves (UMEM, rings) are the caller's (see `wirestamp-capture`'s
//! `live::afxdp`); this module loads the program device-bound (so it may read the NIC's RX timestamp),
//! attaches it in driver mode, and registers sockets in its XSKMAP.
//!
//! ```text
//!  UMEM chunk (copy mode):  ... | ws_xsk_meta (24 B) | frame (desc.len bytes) ...
//!                                 ^ desc.addr - 24     ^ desc.addr
//!  ws_xsk_meta: 0 rx_hw_ns u64 | 8 hook_tai_ns u64 | 16 rx_queue u32 | 20 magic u32 ("WSM1")
//! ```

use std::mem::MaybeUninit;
use std::os::fd::RawFd;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject};

use crate::error::{BpfError, Result};
use crate::log;
use crate::skel::SkelStorage;
use crate::skel::xsk::types::ws_xsk_meta;
use crate::skel::xsk::{XskSkel, XskSkelBuilder};

/// Program name, as the kernel reports it.
pub const XSK_PROG: &str = "ws_xsk_rx";
/// Bytes of [`XskMeta`] in front of each frame.
pub const XSK_META_LEN: usize = 24;
const XSK_META_MAGIC: u32 = 0x314d_5357;
const BPF_F_XDP_DEV_BOUND_ONLY: u32 = 1 << 6;
const _: () = assert!(size_of::<ws_xsk_meta>() == XSK_META_LEN);

/// The metadata the program put in front of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XskMeta {
    /// The NIC's RX hardware timestamp; None when the driver gave none (veth).
    pub rx_hw_ns: Option<u64>,
    /// `bpf_ktime_get_tai_ns()` when the program ran (CLOCK_TAI).
    pub hook_tai_ns: u64,
    /// The RX queue.
    pub rx_queue: u32,
}

impl XskMeta {
    /// Reads the 24 bytes before a frame; None when they are not wirestamp's metadata (no magic).
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        let b: &[u8; XSK_META_LEN] = b.try_into().ok()?;
        let u64_at = |o: usize| u64::from_ne_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        if u32_at(20) != XSK_META_MAGIC {
            return None;
        }
        let hw = u64_at(0);
        Some(Self { rx_hw_ns: (hw != 0).then_some(hw), hook_tai_ns: u64_at(8), rx_queue: u32_at(16) })
    }
}

/// Counters of the redirect program (summed over CPUs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XskStats {
    /// Frames the program ran on.
    pub seen: u64,
    /// Handed to a queue's socket.
    pub redirected: u64,
    /// No socket on the frame's queue: passed to the stack.
    pub no_socket: u64,
    /// Redirected without metadata (no room in front of the frame).
    pub no_meta: u64,
    /// No RX hardware timestamp from the driver.
    pub no_hw_rx_stamp: u64,
}

/// The redirect program, attached to one interface. Drop detaches it and frees its maps.
pub struct XskRedirect {
    // Field order is drop order (see `TcCapture`).
    _link: Link,
    skel: XskSkel<'static>,
    _storage: SkelStorage,
}

impl std::fmt::Debug for XskRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XskRedirect").finish_non_exhaustive()
    }
}

impl XskRedirect {
    /// Loads the program for `ifindex` (device-bound) and attaches it in driver mode. Call it from a
    /// thread in the interface's network namespace. An interface holds one XDP program: a second attach
    /// (another wirestamp capture, or another tool) fails with [`BpfError::Attach`] saying so.
    pub fn attach(ifindex: u32) -> Result<Self> {
        let storage = SkelStorage::new();
        // SAFETY: called once; the skeleton is dropped before `storage` (field order of `Self`; locals on
        // the error paths are dropped before `storage`, declared earlier).
        let object: &'static mut MaybeUninit<OpenObject> = unsafe { storage.object() };
        let (open, _) = log::capture(|| XskSkelBuilder::default().open(object));
        let mut open = open.map_err(|source| BpfError::Open { source })?;
        // Device-bound: the verifier allows the driver's metadata kfuncs only for a program tied to a device.
        open.progs.ws_xsk_rx.set_ifindex(ifindex);
        open.progs.ws_xsk_rx.set_flags(BPF_F_XDP_DEV_BOUND_ONLY);
        let (loaded, log) = log::capture(|| open.load());
        let skel = loaded.map_err(|source| BpfError::load(source, log))?;
        let link = crate::xdp::attach_driver_mode(&skel.progs.ws_xsk_rx, XSK_PROG, ifindex)?;
        Ok(Self { _link: link, skel, _storage: storage })
    }

    /// Sends the frames of RX queue `queue` to the bound AF_XDP socket `xsk_fd` (kept open by the caller
    /// for as long as the program is attached).
    pub fn register(&mut self, queue: u32, xsk_fd: RawFd) -> Result<()> {
        let fd = u32::try_from(xsk_fd).map_err(|_| BpfError::Options(format!("socket fd {xsk_fd}")))?;
        self.skel
            .maps
            .xsks
            .update(&queue.to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::ANY)
            .map_err(|source| BpfError::Map { map: "xsks", source })
    }

    /// The counters.
    pub fn stats(&self) -> Result<XskStats> {
        let read = |idx: u32| -> Result<u64> {
            let per_cpu = self
                .skel
                .maps
                .xsk_stats
                .lookup_percpu(&idx.to_ne_bytes(), MapFlags::ANY)
                .map_err(|source| BpfError::Map { map: "xsk_stats", source })?
                .unwrap_or_default();
            Ok(per_cpu.iter().map(|v| v.get(..8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_ne_bytes)).sum())
        };
        Ok(XskStats {
            seen: read(0)?,
            redirected: read(1)?,
            no_socket: read(2)?,
            no_meta: read(3)?,
            no_hw_rx_stamp: read(4)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_read_only_with_its_magic() {
        let mut b = [0u8; 24];
        b[8..16].copy_from_slice(&1_234u64.to_ne_bytes());
        b[16..20].copy_from_slice(&3u32.to_ne_bytes());
        assert_eq!(XskMeta::from_bytes(&b), None, "no magic");
        b[20..24].copy_from_slice(b"WSM1");
        assert_eq!(XskMeta::from_bytes(&b), Some(XskMeta { rx_hw_ns: None, hook_tai_ns: 1_234, rx_queue: 3 }));
        b[0..8].copy_from_slice(&99u64.to_ne_bytes());
        assert_eq!(XskMeta::from_bytes(&b).unwrap().rx_hw_ns, Some(99));
        assert_eq!(XskMeta::from_bytes(&b[..23]), None);
    }
}
