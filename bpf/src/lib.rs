//! wirestamp's BPF programs and their loader.
//!
//! - [`TcCapture`]: tcx ingress/egress programs (`src/bpf/tc.bpf.c`) that pick the packets of configured
//!   flows ([`FlowSpec`]: market-data groups, order sessions; address, port, VLAN), stamp them and write
//!   a [`PacketRecord`] each to a BPF ring buffer, leaving the traffic untouched. Attached as tcx links
//!   (Linux 6.6+) or, on older kernels, as clsact filters ([`TcAttachMode`]); the programs need 6.1+
//!   (`bpf_ktime_get_tai_ns`, `__sk_buff.tstamp_type`/`hwtstamp`) and CAP_BPF + CAP_NET_ADMIN +
//!   CAP_PERFMON (or root).
//!
//! - [`XdpCapture`]: the same capture as a device-bound XDP program (`src/bpf/xdp.bpf.c`) that reads the
//!   NIC's RX hardware timestamp (`bpf_xdp_metadata_rx_timestamp`) where the driver has one. veth and
//!   NICs without it give none: records then carry the hook's time and [`CaptureStats::no_hw_rx_stamp`]
//!   counts them; use [`TcCapture`]'s stamps there.
//! - [`TxTimestamping`]: a sockops program (`src/bpf/sockops.bpf.c`) on the trading app's cgroup v2 that
//!   reports each TCP write's SCHED/SND/ACK times and byte range ([`TxRecord`]) for the configured order
//!   sessions, without any change to the application. Needs Linux 6.15+.
//! - [`XskRedirect`]: an XDP program (`src/bpf/xsk.bpf.c`) for an AF_XDP capture port: every frame to
//!   its queue's AF_XDP socket, with [`XskMeta`] (RX hardware timestamp, hook time) in front of it.
//!
//! Every struct shared with the programs is in `src/bpf/events.h`; Rust reads records in place with
//! length- and alignment-checked views. libbpf's messages go to `tracing` (target `libbpf`); a program
//! the verifier rejects yields [`BpfError::Load`] with the verifier log and, when one explains it, the
//! missing capability or kernel feature.

mod caps;
mod clsact;
mod error;
mod flow;
mod log;
mod mountinfo;
mod record;
mod ring;
mod skel;
mod sockops;
mod tc;
mod xdp;
mod xsk;

pub use error::{BpfError, Result};
pub use flow::{FlowSpec, L4Proto, VlanMatch};
pub use log::install_libbpf_logger;
pub use mountinfo::{MOUNTINFO, mounts, read_mountinfo};
pub use record::{HookDirection, PAYLOAD_MAX, PacketRecord, RECORD_SIZE, RecordError, StampSource, tai_offset_ns};
pub use sockops::{SOCKOPS_PROG, TX_RECORD_SIZE, TxKind, TxRecord, TxStats, TxTimestamping, cgroup2_mount};
pub use tc::{
    CaptureStats, DRAIN_INTERVAL_DEFAULT, EGRESS_PROG, INGRESS_PROG, TCX_NEXT, TcAttachMode, TcCapture, TcOptions,
    TestSkb, WAKE_BYTES_DEFAULT,
};
pub use xdp::XdpCapture;
pub use xsk::{XSK_META_LEN, XSK_PROG, XskMeta, XskRedirect, XskStats};
