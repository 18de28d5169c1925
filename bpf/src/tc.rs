//! tc capture of configured flows: load `tc.bpf.c`, fill its flow map, attach it to an interface's
//! ingress and egress hooks (tcx links on 6.6+, else cls_bpf filters on a clsact qdisc: see
//! [`TcAttachMode`]), and read its ring buffer.
//!
//! ```text
//!  app ──▶ ... ──▶ tcx egress ─┐              ┌─ tcx ingress ◀── wire
//!                 (ws_tc_egress)│  ws_pkt_event │(ws_tc_ingress)
//!                               ▼              ▼
//!                    flows (hash) ─▶ events (ring buffer) ─▶ TcCapture::poll ─▶ PacketRecord
//!                                    stats (per-CPU array)  ─▶ TcCapture::stats
//! ```
//!
//! The programs never alter a packet and return TCX_NEXT. Dropping a [`TcCapture`] detaches its links and
//! frees its maps; a second capture on an interface that already has wirestamp's programs is refused.

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::time::Duration;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{AsRawLibbpf, Link, MapCore, MapFlags, OpenObject};

use crate::caps;
use crate::clsact::{self, ClsactFilter};
use crate::error::{BpfError, Result};
use crate::flow::{self, FlowSpec};
use crate::log;
use crate::record::{HookDirection, PAYLOAD_MAX, PacketRecord};
use crate::ring::RingReader;
use crate::skel::SkelStorage;
use crate::skel::tc::types::__sk_buff;
use crate::skel::tc::{TcSkel, TcSkelBuilder};

/// Program names, as the kernel reports them (`bpftool prog`).
pub const INGRESS_PROG: &str = "ws_tc_ingress";
/// See [`INGRESS_PROG`].
pub const EGRESS_PROG: &str = "ws_tc_egress";
/// The programs' return value: TCX_NEXT (= TC_ACT_UNSPEC): no verdict, the packet goes on to the next tcx
/// program or tc filter and, with none, passes unaltered. TCX_PASS would skip those (see `tc.bpf.c`).
pub const TCX_NEXT: i32 = -1;

/// How the tc programs are attached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TcAttachMode {
    /// tcx links where the kernel has them (6.6+), else a clsact filter.
    #[default]
    Auto,
    /// tcx links only.
    Tcx,
    /// A cls_bpf filter on a clsact qdisc (any kernel with tc BPF); detached on drop.
    Clsact,
}

/// How a capture is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcOptions {
    /// Payload bytes kept per record (0..=256): enough for a MoldUDP64 header plus an ITCH message
    /// header, or a SoupBinTCP/OUCH order, at the default 64.
    pub snap_len: u16,
    /// Ring buffer size in bytes: a power of two, at least one page. Each record takes 376 bytes.
    pub ring_bytes: u32,
    /// Attach to tcx ingress.
    pub ingress: bool,
    /// Attach to tcx egress.
    pub egress: bool,
    /// tcx or clsact.
    pub attach: TcAttachMode,
    /// Records carry the frame from its Ethernet header (headers, then `snap_len` bytes of payload, at
    /// most [`PAYLOAD_MAX`] in all) instead of the payload prefix alone: what a pcapng writer needs.
    pub frame_prefix: bool,
    /// The kernel wakes a reader blocked in `poll` only once this many bytes of records wait (capped at
    /// half the ring; a record takes 376 bytes of ring), so the app's packets do not each pay for a wakeup
    /// (an irq_work self-interrupt, then the reader scheduled on a core the app may be using). 0: the
    /// kernel's default, a wakeup for each record that finds the reader caught up.
    pub wake_bytes: u32,
    /// With `wake_bytes` > 0, `poll` reads the ring at least this often while it waits (whole
    /// milliseconds, rounded up; at least 1 ms): the longest a record waits for the reader below the
    /// wake threshold.
    pub drain_interval: Duration,
}

/// [`TcOptions::wake_bytes`] by default: an eighth of the default 4 MiB ring.
pub const WAKE_BYTES_DEFAULT: u32 = 512 << 10;
/// [`TcOptions::drain_interval`] by default.
pub const DRAIN_INTERVAL_DEFAULT: Duration = Duration::from_millis(1);

impl Default for TcOptions {
    fn default() -> Self {
        Self {
            snap_len: 64,
            ring_bytes: 4 << 20,
            ingress: true,
            egress: true,
            attach: TcAttachMode::Auto,
            frame_prefix: false,
            wake_bytes: WAKE_BYTES_DEFAULT,
            drain_interval: DRAIN_INTERVAL_DEFAULT,
        }
    }
}

/// Counters of a capture (tc or XDP): the kernel side's (summed over CPUs) and the reader's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// Packets the programs ran on.
    pub seen: u64,
    /// Packets of a configured flow.
    pub matched: u64,
    /// Matched packets lost because the ring buffer was full.
    pub ringbuf_full: u64,
    /// Packets whose headers were shorter than declared or out of range.
    pub malformed: u64,
    /// Packets not IPv4/IPv6 + UDP/TCP, with over 3 VLAN tags, or with IPv6 extension headers.
    pub unsupported: u64,
    /// IPv4 non-first fragments (no L4 header to match).
    pub fragments: u64,
    /// XDP only: matched packets the driver gave no RX hardware timestamp (veth: all of them).
    pub no_hw_rx_stamp: u64,
    /// Records handed to `poll` callbacks.
    pub delivered: u64,
    /// Ring records of the wrong size, dropped by the reader (a BPF object from another build).
    pub bad_records: u64,
}

/// Skb fields for [`TcCapture::test_run`] (BPF_PROG_TEST_RUN accepts only these).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TestSkb {
    /// Interface (must exist in the calling thread's netns; 0 or 1 = loopback).
    pub ifindex: u32,
    /// `skb->tstamp` (the kernel takes it as REALTIME: BPF_PROG_TEST_RUN cannot set tstamp_type).
    pub tstamp: u64,
    /// The skb hardware timestamp.
    pub hwtstamp: u64,
}

/// A loaded (and usually attached) tc capture. Drop detaches and frees everything.
pub struct TcCapture {
    // Field order is drop order: reader, then links (detach), then the skeleton (programs, maps), then
    // the storage it borrows.
    ring: RingReader,
    links: Vec<Link>,
    filters: Vec<ClsactFilter>,
    skel: TcSkel<'static>,
    _storage: SkelStorage,
    ifindex: Option<u32>,
}

impl std::fmt::Debug for TcCapture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcCapture").field("ifindex", &self.ifindex).field("links", &self.links.len()).finish()
    }
}

impl TcCapture {
    /// Loads the programs with `flows` in their map, without attaching them (see [`Self::attach`]; a
    /// loaded capture can also run [`Self::test_run`]).
    pub fn load(flows: &[FlowSpec], opts: &TcOptions) -> Result<Self> {
        let entries = flow::encode(flows)?;
        check_options(opts)?;
        let storage = SkelStorage::new();
        // SAFETY: the allocation lives until `SkelStorage` drops, which happens after the skeleton built on
        // it (field order in `TcCapture`; on the error paths below the skeleton values are temporaries
        // dropped before `storage`, a local declared earlier). Nothing else accesses it.
        let object: &'static mut MaybeUninit<OpenObject> = unsafe { storage.object() };
        let (open, log) = log::capture(|| TcSkelBuilder::default().open(object));
        let mut open = open.map_err(|source| {
            tracing::debug!(target: "libbpf", "{log}");
            BpfError::Open { source }
        })?;

        let rodata = crate::error::rodata(open.maps.rodata_data.as_deref_mut())?;
        rodata.snap_len = u32::from(opts.snap_len);
        rodata.snap_frame = u32::from(opts.frame_prefix);
        rodata.lookup_mask = entries.iter().fold(0, |m, e| m | e.lookup_bit);
        rodata.port_bits = flow::port_bits(flows);
        rodata.wake_bytes = wake_bytes(opts);
        open.maps.events.set_max_entries(opts.ring_bytes).map_err(|source| BpfError::Map { map: "events", source })?;
        let n_flows = u32::try_from(entries.len()).unwrap_or(u32::MAX).max(1);
        open.maps.flows.set_max_entries(n_flows).map_err(|source| BpfError::Map { map: "flows", source })?;

        let (loaded, log) = log::capture(|| open.load());
        let skel = loaded.map_err(|source| BpfError::load(source, log))?;
        for e in &entries {
            skel.maps
                .flows
                .update(&e.key, &e.val, MapFlags::NO_EXIST)
                .map_err(|source| BpfError::Map { map: "flows", source })?;
        }
        let ring = RingReader::new(skel.maps.events.as_fd(), drain_interval(opts))?;
        Ok(Self { ring, links: Vec::new(), filters: Vec::new(), skel, _storage: storage, ifindex: None })
    }

    /// Loads the programs and attaches them to `ifindex`'s hooks (ingress first in line, egress last, so
    /// their stamps are as close to the wire as tc allows), as `opts.attach` says. Call it from a thread in
    /// the interface's network namespace. Refuses with [`BpfError::AlreadyAttached`] when wirestamp's
    /// programs are already there, attached either way (checked before attaching: two captures started at
    /// the same instant could both pass the check).
    pub fn attach(ifindex: u32, flows: &[FlowSpec], opts: &TcOptions) -> Result<Self> {
        let mut cap = Self::load(flows, opts)?;
        let target = i32::try_from(ifindex).map_err(|_| BpfError::Options(format!("ifindex {ifindex}")))?;
        let hooks = [
            (opts.ingress, INGRESS_PROG, "tcx ingress", libbpf_sys::BPF_TCX_INGRESS, libbpf_sys::BPF_F_BEFORE),
            (opts.egress, EGRESS_PROG, "tcx egress", libbpf_sys::BPF_TCX_EGRESS, 0),
        ];
        // Refuse when wirestamp is already there, attached either way.
        for &(enabled, name, hook, attach_type, _) in &hooks {
            if !enabled {
                continue;
            }
            let found = find_attached(target, attach_type, &[INGRESS_PROG, EGRESS_PROG])
                .map_err(|source| query_error(ifindex, hook, source))?;
            if let Some((prog_id, program)) = found {
                return Err(BpfError::AlreadyAttached { ifindex, program, hook, prog_id });
            }
            let (point, prio, chook) = clsact_slot(name);
            if let Some(prog_id) =
                clsact::query(target, point, prio).map_err(|source| query_error(ifindex, chook, source))?
            {
                let program = prog_name(prog_id).unwrap_or_else(|| format!("prog {prog_id}"));
                return Err(BpfError::AlreadyAttached { ifindex, program, hook: chook, prog_id });
            }
        }
        let mut use_clsact = opts.attach == TcAttachMode::Clsact;
        for (enabled, name, hook, _, flags) in hooks {
            if !enabled {
                continue;
            }
            let prog = if name == INGRESS_PROG { &cap.skel.progs.ws_tc_ingress } else { &cap.skel.progs.ws_tc_egress };
            if !use_clsact {
                let tcx = libbpf_sys::bpf_tcx_opts {
                    sz: size_of::<libbpf_sys::bpf_tcx_opts>() as libbpf_sys::size_t,
                    flags,
                    ..Default::default()
                };
                // SAFETY: a loaded program of this skeleton and a valid opts struct; libbpf returns a new
                // link or NULL with errno set.
                let link =
                    unsafe { libbpf_sys::bpf_program__attach_tcx(prog.as_libbpf_object().as_ptr(), target, &tcx) };
                if let Some(link) = NonNull::new(link) {
                    // SAFETY: `link` is a valid bpf_link we own from now on (Link frees it, detaching, on drop).
                    cap.links.push(unsafe { Link::from_ptr(link) });
                    continue;
                }
                let source = std::io::Error::last_os_error();
                let no_tcx = matches!(source.raw_os_error(), Some(libc::EINVAL) | Some(libc::EOPNOTSUPP));
                if !(no_tcx && opts.attach == TcAttachMode::Auto && cap.links.is_empty()) {
                    let hint = caps::attach_hint(source.raw_os_error());
                    return Err(BpfError::Attach { program: name, ifindex, hook, source, hint });
                }
                tracing::info!(ifindex, "no tcx in this kernel ({source}): attaching as clsact filters");
                use_clsact = true;
            }
            let (point, prio, chook) = clsact_slot(name);
            let filter = ClsactFilter::attach(prog.as_fd(), target, point, prio).map_err(|source| {
                let hint = caps::attach_hint(source.raw_os_error());
                BpfError::Attach { program: name, ifindex, hook: chook, source, hint }
            })?;
            cap.filters.push(filter);
        }
        cap.ifindex = Some(ifindex);
        Ok(cap)
    }

    /// How the programs are attached: "tcx", "clsact", or None when only loaded.
    pub fn attach_kind(&self) -> Option<&'static str> {
        if !self.links.is_empty() {
            Some("tcx")
        } else if !self.filters.is_empty() {
            Some("clsact")
        } else {
            None
        }
    }

    /// The interface attached to, if any.
    pub fn ifindex(&self) -> Option<u32> {
        self.ifindex
    }

    /// Waits up to `timeout` for records and hands each to `f`. Returns the number of ring records
    /// consumed (bad ones included; they are counted in [`CaptureStats::bad_records`]). Records below the
    /// wake threshold are found by reading the ring every [`TcOptions::drain_interval`] while waiting, so
    /// a caller that waits on several captures in turn should wait at most that long on each.
    pub fn poll(&mut self, timeout: Duration, mut f: impl FnMut(&PacketRecord<'_>)) -> Result<usize> {
        self.ring.poll_records(timeout, |bytes| PacketRecord::from_bytes(bytes).map(|rec| f(&rec)).is_ok())
    }

    /// The counters.
    pub fn stats(&self) -> Result<CaptureStats> {
        read_stats(&self.skel.maps.stats, self.ring.counts())
    }

    /// An epoll fd that becomes readable when the kernel signals records (with batched wakeups, once
    /// [`TcOptions::wake_bytes`] wait): for a caller waiting on several captures at once, which must still
    /// [`Self::poll`] each at least every [`TcOptions::drain_interval`].
    pub fn wait_fd(&self) -> BorrowedFd<'_> {
        self.ring.wait_fd()
    }

    /// Runs the ingress or egress program once on `frame` (from its Ethernet header) through
    /// BPF_PROG_TEST_RUN, as the unit tests do; a matching frame leaves a record for [`Self::poll`].
    /// Returns the program's return value. Needs no attach and no network namespace.
    pub fn test_run(&self, direction: HookDirection, frame: &[u8], skb: &TestSkb) -> Result<i32> {
        self.test_run_repeat(direction, frame, skb, 1)
    }

    /// [`Self::test_run`] `repeat` times in one syscall (the kernel loops): a record producer at the
    /// kernel's own pace, for benchmarks of the reading side.
    pub fn test_run_repeat(&self, direction: HookDirection, frame: &[u8], skb: &TestSkb, repeat: u32) -> Result<i32> {
        let (program, prog) = match direction {
            HookDirection::Egress => (EGRESS_PROG, &self.skel.progs.ws_tc_egress),
            _ => (INGRESS_PROG, &self.skel.progs.ws_tc_ingress),
        };
        let mut ctx = vec![0u8; size_of::<__sk_buff>()];
        let mut put = |off: usize, bytes: &[u8]| ctx[off..off + bytes.len()].copy_from_slice(bytes);
        put(std::mem::offset_of!(__sk_buff, ifindex), &skb.ifindex.to_ne_bytes());
        put(std::mem::offset_of!(__sk_buff, tstamp), &skb.tstamp.to_ne_bytes());
        put(std::mem::offset_of!(__sk_buff, hwtstamp), &skb.hwtstamp.to_ne_bytes());
        let input =
            libbpf_rs::ProgramInput { data_in: Some(frame), context_in: Some(&mut ctx), repeat, ..Default::default() };
        let out = prog.test_run(input).map_err(|source| BpfError::TestRun { program, source })?;
        Ok(out.return_value as i32)
    }
}

/// The clsact slot of a program: (attach point, priority, hook name).
fn clsact_slot(name: &str) -> (u32, u32, &'static str) {
    if name == INGRESS_PROG {
        (libbpf_sys::BPF_TC_INGRESS, clsact::INGRESS_PRIORITY, "clsact ingress")
    } else {
        (libbpf_sys::BPF_TC_EGRESS, clsact::EGRESS_PRIORITY, "clsact egress")
    }
}

/// A program's name by id, if it still exists.
fn prog_name(id: u32) -> Option<String> {
    // SAFETY: plain syscall wrapper; a negative return is an error.
    let fd = unsafe { libbpf_sys::bpf_prog_get_fd_by_id(id) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is a new descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: an all-zero bpf_prog_info is a valid output buffer.
    let mut info: libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libbpf_sys::bpf_prog_info>() as u32;
    // SAFETY: `info` is writable for `len` bytes.
    if unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len) } != 0 {
        return None;
    }
    let raw: Vec<u8> = info.name.iter().map(|&c| c as u8).collect();
    CStr::from_bytes_until_nul(&raw).ok().map(|c| c.to_string_lossy().into_owned())
}

/// Sums the per-CPU `stats` array (`enum ws_stat`).
pub(crate) fn read_stats(map: &libbpf_rs::MapMut<'_>, (delivered, bad_records): (u64, u64)) -> Result<CaptureStats> {
    let read = |idx: u32| -> Result<u64> {
        let per_cpu = map
            .lookup_percpu(&idx.to_ne_bytes(), MapFlags::ANY)
            .map_err(|source| BpfError::Map { map: "stats", source })?
            .unwrap_or_default();
        Ok(per_cpu.iter().map(|v| v.get(..8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_ne_bytes)).sum())
    };
    Ok(CaptureStats {
        seen: read(0)?,
        matched: read(1)?,
        ringbuf_full: read(2)?,
        malformed: read(3)?,
        unsupported: read(4)?,
        fragments: read(5)?,
        no_hw_rx_stamp: read(6)?,
        delivered,
        bad_records,
    })
}

/// Checks the options shared by the tc and XDP captures.
pub(crate) fn check_options(opts: &TcOptions) -> Result<()> {
    if usize::from(opts.snap_len) > PAYLOAD_MAX {
        return Err(BpfError::Options(format!("snap_len {} over the maximum {PAYLOAD_MAX}", opts.snap_len)));
    }
    if !opts.ring_bytes.is_power_of_two() || opts.ring_bytes < 4096 {
        return Err(BpfError::Options(format!(
            "ring_bytes {} must be a power of two of at least 4096",
            opts.ring_bytes
        )));
    }
    if opts.wake_bytes > 0 && opts.drain_interval < Duration::from_millis(1) {
        return Err(BpfError::Options(format!(
            "drain_interval {:?} under 1 ms (the reader's timer is epoll's, in milliseconds)",
            opts.drain_interval
        )));
    }
    Ok(())
}

/// The programs' rodata `wake_bytes`: the option, at most half the ring (a threshold the ring cannot
/// reach would leave only the timer).
pub(crate) fn wake_bytes(opts: &TcOptions) -> u32 {
    opts.wake_bytes.min(opts.ring_bytes / 2)
}

/// The reader's timer: Some with batched wakeups.
pub(crate) fn drain_interval(opts: &TcOptions) -> Option<Duration> {
    (opts.wake_bytes > 0).then_some(opts.drain_interval)
}

fn query_error(ifindex: u32, hook: &'static str, source: std::io::Error) -> BpfError {
    let hint = caps::attach_hint(source.raw_os_error());
    BpfError::Query { ifindex, hook, source, hint }
}

/// The first program named one of `names` attached to `target` (an ifindex for tcx, a cgroup fd for
/// cgroup hooks) at `attach_type`: (prog id, name). A kernel without that hook answers "none".
pub(crate) fn find_attached(target: i32, attach_type: u32, names: &[&str]) -> std::io::Result<Option<(u32, String)>> {
    let mut ids = [0u32; 64];
    // SAFETY: an all-zero bpf_prog_query_opts is valid (null arrays, zero counts).
    let mut q: libbpf_sys::bpf_prog_query_opts = unsafe { std::mem::zeroed() };
    q.sz = size_of::<libbpf_sys::bpf_prog_query_opts>() as libbpf_sys::size_t;
    q.prog_ids = ids.as_mut_ptr();
    q.__bindgen_anon_1.prog_cnt = ids.len() as u32;
    // SAFETY: `q` points at `ids`, which holds `prog_cnt` entries and outlives the call.
    let rc = unsafe { libbpf_sys::bpf_prog_query_opts(target, attach_type, &mut q) };
    if rc != 0 {
        let source = std::io::Error::last_os_error();
        // No such hook in this kernel: the attach that follows fails and says so.
        if matches!(source.raw_os_error(), Some(libc::EINVAL) | Some(libc::EOPNOTSUPP)) {
            return Ok(None);
        }
        return Err(source);
    }
    // SAFETY: the kernel wrote the count into the union's `prog_cnt` member.
    let count = unsafe { q.__bindgen_anon_1.prog_cnt } as usize;
    for &id in &ids[..count.min(ids.len())] {
        if let Some(name) = prog_name(id)
            && names.contains(&name.as_str())
        {
            return Ok(Some((id, name)));
        }
    }
    Ok(None)
}
