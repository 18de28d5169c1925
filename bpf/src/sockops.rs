//! Transparent TX timestamps of TCP order sessions through BPF sockops timestamping (Linux 6.15+):
//! `sockops.bpf.c` attached to the trading app's cgroup v2 reports, for every write on a connection to a
//! configured endpoint, when its last byte was scheduled, sent (software or hardware stamp) and
//! acknowledged, keyed by that byte's sequence number, with no change to the application (its socket
//! never sets SO_TIMESTAMPING and its error queue stays empty).
//!
//! Match a [`TxRecord`] to the captured egress frames by (local port, remote endpoint) and sequence: the
//! write whose last byte is `seq` is the frame with `tcp_seq + l4_payload_len - 1 == seq`.

use std::fs::File;
use std::io;
use std::mem::MaybeUninit;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{ErrorKind, Link, MapCore, MapFlags, OpenObject};

use crate::caps;
use crate::error::{BpfError, Result};
use crate::flow::{self, FlowSpec, L4Proto, VlanMatch};
use crate::log;
use crate::ring::RingReader;
use crate::skel::SkelStorage;
use crate::skel::sockops::types::ws_tx_event;
use crate::skel::sockops::{SockopsSkel, SockopsSkelBuilder};
use crate::tc::{DRAIN_INTERVAL_DEFAULT, find_attached};

/// Program name, as the kernel reports it.
pub const SOCKOPS_PROG: &str = "ws_sockops";
const BPF_CGROUP_SOCK_OPS: u32 = 3;

/// Size of `struct ws_tx_event` (events.h).
pub const TX_RECORD_SIZE: usize = 64;
const _: () = assert!(size_of::<ws_tx_event>() == TX_RECORD_SIZE);
const _: () = assert!(align_of::<ws_tx_event>() == 8);

// SAFETY: the skeleton's `#[repr(C)]` mirror of a C struct of unsigned integers and arrays of them only:
// every bit pattern is valid.
unsafe impl plain::Plain for ws_tx_event {}

/// What a [`TxRecord`] reports (`enum ws_tx_kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxKind {
    /// Timestamping was enabled on a configured connection; `seq` is snd_nxt (ISN + 1).
    Established,
    /// The write's last byte entered the qdisc layer.
    Sched,
    /// ... was handed to the driver (software stamp).
    SndSoftware,
    /// ... left the NIC (hardware stamp, NIC clock).
    SndHardware,
    /// ... was acknowledged by the peer.
    Ack,
    /// A value this version does not know.
    Unknown(u8),
}

/// One sockops timestamp event, borrowed from the ring buffer.
#[derive(Clone, Copy)]
pub struct TxRecord<'a> {
    ev: &'a ws_tx_event,
}

impl std::fmt::Debug for TxRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxRecord")
            .field("kind", &self.kind())
            .field("seq", &self.seq())
            .field("ts_ns", &self.ts_ns())
            .field("local", &self.local())
            .field("remote", &self.remote())
            .field("flow_id", &self.flow_id())
            .finish()
    }
}

fn addr(version: u8, raw: [u8; 16]) -> IpAddr {
    let v6 = Ipv6Addr::from(raw);
    match (version, v6.to_ipv4_mapped()) {
        (4, Some(v4)) => IpAddr::V4(v4),
        (4, None) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        _ => IpAddr::V6(v6),
    }
}

impl<'a> TxRecord<'a> {
    /// Views one ring record; None when its size or alignment is wrong.
    pub fn from_bytes(data: &'a [u8]) -> Option<Self> {
        plain::from_bytes::<ws_tx_event>(data).ok().map(|ev| Self { ev })
    }
    /// What happened.
    pub fn kind(&self) -> TxKind {
        match self.ev.kind {
            1 => TxKind::Established,
            2 => TxKind::Sched,
            3 => TxKind::SndSoftware,
            4 => TxKind::SndHardware,
            5 => TxKind::Ack,
            v => TxKind::Unknown(v),
        }
    }
    /// SndHardware: the NIC's stamp; otherwise `bpf_ktime_get_tai_ns()` in the callback (CLOCK_TAI).
    pub fn ts_ns(&self) -> u64 {
        self.ev.ts_ns
    }
    /// The time as ns since the Unix epoch (`tai_offset_ns` as from [`crate::tai_offset_ns`]).
    pub fn epoch_ns(&self, tai_offset_ns: i64) -> i64 {
        let ts = i64::try_from(self.ev.ts_ns).unwrap_or(i64::MAX);
        if self.kind() == TxKind::SndHardware { ts } else { ts - tai_offset_ns }
    }
    /// Sequence number of the write's last byte (the kernel's tskey); for Established, snd_nxt.
    pub fn seq(&self) -> u32 {
        self.ev.seq
    }
    /// The socket's cookie (stable for its lifetime).
    pub fn socket_cookie(&self) -> u64 {
        self.ev.sk_cookie
    }
    /// The configured flow's id.
    pub fn flow_id(&self) -> u32 {
        self.ev.flow_id
    }
    /// Local address and port.
    pub fn local(&self) -> SocketAddr {
        SocketAddr::new(addr(self.ev.ip_version, self.ev.local_addr), self.ev.local_port)
    }
    /// Remote address and port (the configured endpoint).
    pub fn remote(&self) -> SocketAddr {
        SocketAddr::new(addr(self.ev.ip_version, self.ev.remote_addr), self.ev.remote_port)
    }
}

/// Counters of the sockops program (summed over CPUs) and of the reader.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxStats {
    /// Connections with TX timestamping turned on.
    pub enabled: u64,
    /// Configured connections the kernel refused to enable (SK_BPF_CB_FLAGS unknown: before 6.15).
    pub setsockopt_failed: u64,
    /// Configured connections seen on a kernel without `bpf_sock_ops_enable_tx_tstamp` (before 6.15).
    pub no_kfunc: u64,
    /// Events lost because the ring buffer was full.
    pub ringbuf_full: u64,
    /// Records handed to `poll` callbacks.
    pub delivered: u64,
    /// Ring records of the wrong size, dropped by the reader.
    pub bad_records: u64,
}

/// The first cgroup v2 mount point in /proc/self/mountinfo (`/sys/fs/cgroup` on unified hosts,
/// `/sys/fs/cgroup/unified` on hybrid ones).
pub fn cgroup2_mount() -> io::Result<PathBuf> {
    cgroup2_in_mountinfo(&crate::read_mountinfo()?).ok_or_else(|| {
        io::Error::new(io::ErrorKind::NotFound, "no cgroup2 file system mounted (see /proc/self/mountinfo)")
    })
}

/// The first cgroup2 mount point of a mountinfo text ([`crate::mounts`]).
fn cgroup2_in_mountinfo(info: &[u8]) -> Option<PathBuf> {
    crate::mounts(info).find(|(_, fstype)| fstype == "cgroup2").map(|(dir, _)| dir)
}

/// `cgroup2`'s file system magic (`statfs` `f_type`, linux/magic.h).
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

/// Refuses a `cgroup` that is no cgroup v2 directory (a cgroup v1 one, `/sys/fs/cgroup` on a hybrid host,
/// any other directory): the kernel's answer would be "Bad file descriptor". Says where cgroup2 is.
fn check_cgroup2(cgroup: &Path, dir: &File) -> Result<()> {
    // SAFETY: `statfs` is plain data (all-zero is valid); `fstatfs` writes it for a valid open descriptor.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstatfs(dir.as_raw_fd(), &mut st) } != 0 {
        return Err(BpfError::Cgroup { path: cgroup.to_path_buf(), source: io::Error::last_os_error() });
    }
    #[allow(clippy::useless_conversion, reason = "f_type is an i64 on x86_64, narrower on some targets")]
    let f_type = i64::from(st.f_type);
    if f_type == CGROUP2_SUPER_MAGIC {
        return Ok(());
    }
    let kind = if !cgroup.is_dir() { "not a directory, let alone" } else { "not" };
    let mount = match crate::read_mountinfo().map(|info| cgroup2_in_mountinfo(&info)) {
        Ok(Some(m)) => format!("cgroup2 is mounted at {} (/proc/self/mountinfo)", m.display()),
        Ok(None) => "no cgroup2 file system is mounted (/proc/self/mountinfo): mount -t cgroup2 none DIR".into(),
        Err(e) => format!("where cgroup2 is mounted is not known ({e})"),
    };
    Err(BpfError::Cgroup {
        path: cgroup.to_path_buf(),
        source: io::Error::other(format!(
            "{kind} a cgroup v2 directory (a cgroup v1 hierarchy or another file system); {mount}: give the \
             trading app's directory under it"
        )),
    })
}

/// The kernel wakes a reader blocked in [`TxTimestamping::poll`] once this many bytes of events wait (an
/// eighth of the 1 MiB ring); `poll` also reads the ring every millisecond (see `TcOptions::wake_bytes`).
const TX_WAKE_BYTES: u32 = 128 << 10;

/// Sockops TX timestamping attached to a cgroup. Drop detaches it and frees its maps.
pub struct TxTimestamping {
    // Field order is drop order (see `TcCapture`).
    ring: RingReader,
    _link: Link,
    skel: SockopsSkel<'static>,
    _storage: SkelStorage,
}

impl std::fmt::Debug for TxTimestamping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxTimestamping").finish_non_exhaustive()
    }
}

impl TxTimestamping {
    /// Loads the program with the TCP flows among `flows` (their remote endpoint, any VLAN: the socket
    /// layer has none) and attaches it to the cgroup v2 directory `cgroup`. Refuses when wirestamp's
    /// program is already attached there.
    pub fn attach(cgroup: &Path, flows: &[FlowSpec]) -> Result<Self> {
        let tcp: Vec<FlowSpec> = flows
            .iter()
            .filter(|f| f.proto == L4Proto::Tcp && f.match_dst)
            .map(|f| FlowSpec { vlan: VlanMatch::Any, match_src: false, ..f.clone() })
            .collect();
        let entries = flow::encode(&tcp)?;
        let cg = File::open(cgroup).map_err(|source| BpfError::Cgroup { path: cgroup.to_path_buf(), source })?;
        check_cgroup2(cgroup, &cg)?;
        if let Some((prog_id, program)) = find_attached(cg.as_raw_fd(), BPF_CGROUP_SOCK_OPS, &[SOCKOPS_PROG])
            .map_err(|source| BpfError::Cgroup { path: cgroup.to_path_buf(), source })?
        {
            return Err(BpfError::AlreadyAttachedCgroup { path: cgroup.to_path_buf(), program, prog_id });
        }

        let storage = SkelStorage::new();
        // SAFETY: called once; the skeleton is dropped before `storage` (field order of `Self`; locals on
        // the error paths are dropped before `storage`, declared earlier).
        let object: &'static mut MaybeUninit<OpenObject> = unsafe { storage.object() };
        let (open, _) = log::capture(|| SockopsSkelBuilder::default().open(object));
        let mut open = open.map_err(|source| BpfError::Open { source })?;
        let rodata = crate::error::rodata(open.maps.rodata_data.as_deref_mut())?;
        rodata.wake_bytes = TX_WAKE_BYTES;
        let (loaded, log) = log::capture(|| open.load());
        let skel = loaded.map_err(|source| BpfError::load(source, log))?;
        for e in &entries {
            skel.maps
                .tx_flows
                .update(&e.key, &e.val, MapFlags::NO_EXIST)
                .map_err(|source| BpfError::Map { map: "tx_flows", source })?;
        }
        let link = skel.progs.ws_sockops.attach_cgroup(cg.as_raw_fd()).map_err(|source| {
            let hint = if source.kind() == ErrorKind::PermissionDenied {
                caps::attach_hint(Some(libc::EPERM))
            } else {
                String::new()
            };
            BpfError::AttachCgroup { path: cgroup.to_path_buf(), source, hint }
        })?;
        let ring = RingReader::new(skel.maps.tx_events.as_fd(), Some(DRAIN_INTERVAL_DEFAULT))?;
        Ok(Self { ring, _link: link, skel, _storage: storage })
    }

    /// Waits up to `timeout` for events and hands each to `f`; returns the number consumed.
    pub fn poll(&mut self, timeout: Duration, mut f: impl FnMut(&TxRecord<'_>)) -> Result<usize> {
        self.ring.poll_records(timeout, |bytes| TxRecord::from_bytes(bytes).map(|rec| f(&rec)).is_some())
    }

    /// The counters.
    pub fn stats(&self) -> Result<TxStats> {
        let read = |idx: u32| -> Result<u64> {
            let per_cpu = self
                .skel
                .maps
                .tx_stats
                .lookup_percpu(&idx.to_ne_bytes(), MapFlags::ANY)
                .map_err(|source| BpfError::Map { map: "tx_stats", source })?
                .unwrap_or_default();
            Ok(per_cpu.iter().map(|v| v.get(..8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_ne_bytes)).sum())
        };
        let (delivered, bad_records) = self.ring.counts();
        Ok(TxStats {
            enabled: read(0)?,
            setsockopt_failed: read(1)?,
            no_kfunc: read(2)?,
            ringbuf_full: read(3)?,
            delivered,
            bad_records,
        })
    }
}
