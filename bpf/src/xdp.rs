//! Device-bound XDP capture of configured flows with the NIC's RX hardware timestamp (`xdp.bpf.c`).
//!
//! The program is loaded for one interface (BPF_F_XDP_DEV_BOUND_ONLY, so it may call the driver's
//! metadata kfuncs) and attached in driver mode; it writes the same records as the tc capture, stamped
//! with the hardware RX time when the driver gives one. veth gives 0, which is "none": the record then
//! has [`crate::StampSource::HookTai`] and [`CaptureStats::no_hw_rx_stamp`] counts it.

use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::time::Duration;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{AsRawLibbpf, Link, MapCore, MapFlags, OpenObject, ProgramMut};

use crate::caps;
use crate::error::{BpfError, Result};
use crate::flow::{self, FlowSpec};
use crate::log;
use crate::record::PacketRecord;
use crate::ring::RingReader;
use crate::skel::SkelStorage;
use crate::skel::xdp::{XdpSkel, XdpSkelBuilder};
use crate::tc::{CaptureStats, TcOptions, check_options, drain_interval, read_stats, wake_bytes};

/// Program name, as the kernel reports it.
pub const XDP_PROG: &str = "ws_xdp_rx";
const BPF_F_XDP_DEV_BOUND_ONLY: u32 = 1 << 6;
/// Set by libbpf for `SEC("xdp.frags")`; kept when the flags are replaced below. Frags-aware, the program
/// attaches to veth peers with a jumbo MTU (over ~3.5 KB) and reads multi-buffer packets.
const BPF_F_XDP_HAS_FRAGS: u32 = 1 << 5;

// The XDP program writes the tc program's record (one struct in events.h).
const _: () =
    assert!(size_of::<crate::skel::xdp::types::ws_pkt_event>() == size_of::<crate::skel::tc::types::ws_pkt_event>());

/// Attaches the loaded XDP program `prog` (named `program` in errors) to `ifindex` in driver mode.
pub(crate) fn attach_driver_mode(prog: &ProgramMut<'_>, program: &'static str, ifindex: u32) -> Result<Link> {
    let ifindex_c = i32::try_from(ifindex).map_err(|_| BpfError::Options(format!("ifindex {ifindex}")))?;
    // SAFETY: a loaded program; libbpf returns a new link or NULL with errno set.
    let link = unsafe { libbpf_sys::bpf_program__attach_xdp(prog.as_libbpf_object().as_ptr(), ifindex_c) };
    let Some(link) = std::ptr::NonNull::new(link) else {
        let source = std::io::Error::last_os_error();
        let hint = caps::xdp_attach_hint(source.raw_os_error());
        return Err(BpfError::Attach { program, ifindex, hook: "xdp (driver mode, device-bound)", source, hint });
    };
    // SAFETY: `link` is a valid bpf_link we own from now on (Link frees it, detaching, on drop).
    Ok(unsafe { Link::from_ptr(link) })
}

/// An attached XDP capture. Drop detaches it and frees its maps.
pub struct XdpCapture {
    // Field order is drop order (see `TcCapture`).
    ring: RingReader,
    _link: Link,
    skel: XdpSkel<'static>,
    _storage: SkelStorage,
}

impl std::fmt::Debug for XdpCapture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpCapture").finish_non_exhaustive()
    }
}

impl XdpCapture {
    /// Loads the program for `ifindex` and attaches it there in driver mode; `opts.snap_len` and
    /// `opts.ring_bytes` apply (ingress/egress do not: XDP sees received packets only). Call it from a
    /// thread in the interface's network namespace. An interface can hold one XDP program: a second
    /// attach fails with "Device or resource busy".
    pub fn attach(ifindex: u32, flows: &[FlowSpec], opts: &TcOptions) -> Result<Self> {
        let entries = flow::encode(flows)?;
        check_options(opts)?;
        let storage = SkelStorage::new();
        // SAFETY: called once; the skeleton is dropped before `storage` (field order of `Self`; locals on
        // the error paths are dropped before `storage`, declared earlier).
        let object: &'static mut MaybeUninit<OpenObject> = unsafe { storage.object() };
        let (open, _) = log::capture(|| XdpSkelBuilder::default().open(object));
        let mut open = open.map_err(|source| BpfError::Open { source })?;
        let rodata = crate::error::rodata(open.maps.rodata_data.as_deref_mut())?;
        rodata.snap_len = u32::from(opts.snap_len);
        rodata.snap_frame = u32::from(opts.frame_prefix);
        rodata.lookup_mask = entries.iter().fold(0, |m, e| m | e.lookup_bit);
        rodata.port_bits = flow::port_bits(flows);
        rodata.wake_bytes = wake_bytes(opts);
        open.maps.events.set_max_entries(opts.ring_bytes).map_err(|source| BpfError::Map { map: "events", source })?;
        let n_flows = u32::try_from(entries.len()).unwrap_or(u32::MAX).max(1);
        open.maps.flows.set_max_entries(n_flows).map_err(|source| BpfError::Map { map: "flows", source })?;
        // Device-bound: the verifier allows the driver's metadata kfuncs only for a program tied to a device.
        open.progs.ws_xdp_rx.set_ifindex(ifindex);
        open.progs.ws_xdp_rx.set_flags(BPF_F_XDP_DEV_BOUND_ONLY | BPF_F_XDP_HAS_FRAGS);

        let (loaded, log) = log::capture(|| open.load());
        let skel = loaded.map_err(|source| BpfError::load(source, log))?;
        for e in &entries {
            skel.maps
                .flows
                .update(&e.key, &e.val, MapFlags::NO_EXIST)
                .map_err(|source| BpfError::Map { map: "flows", source })?;
        }
        let link = attach_driver_mode(&skel.progs.ws_xdp_rx, XDP_PROG, ifindex)?;
        let ring = RingReader::new(skel.maps.events.as_fd(), drain_interval(opts))?;
        Ok(Self { ring, _link: link, skel, _storage: storage })
    }

    /// Waits up to `timeout` for records and hands each to `f`; returns the number consumed.
    pub fn poll(&mut self, timeout: Duration, mut f: impl FnMut(&PacketRecord<'_>)) -> Result<usize> {
        self.ring.poll_records(timeout, |bytes| PacketRecord::from_bytes(bytes).map(|rec| f(&rec)).is_ok())
    }

    /// The counters.
    pub fn stats(&self) -> Result<CaptureStats> {
        read_stats(&self.skel.maps.stats, self.ring.counts())
    }
}
