//! Live capture on this host (Linux): NIC timestamping control and the AF_PACKET source.
//!
//! | module | holds |
//! |---|---|
//! | [`tstamp`] | ETHTOOL_GET_TS_INFO capabilities, SIOC\[GS\]HWTSTAMP with restore-on-exit and crash recovery |
//! | [`ring`] | [`AfPacket`]: TPACKET_V3 ring, both directions, per-frame timestamp flags, drop counters |
//! | [`ring_merge`] | [`RingMerge`]: the frames of several rings in time order (blocks retire late) |
//! | [`afxdp`] | [`AfXdp`]: AF_XDP copy-mode socket fed by an XDP redirect, RX timestamp in the metadata |
//! | [`ebpf`] | [`EbpfSource`]: wirestamp's tc programs on configured flows, frame prefixes from a BPF ring |
//! | [`pcap_live`] | [`PcapLive`]: libpcap live capture, ns precision, best timestamp type |
//! | [`phc`] | PTP hardware clock offset to CLOCK_REALTIME (PTP_SYS_OFFSET_PRECISE / _EXTENDED / basic) |
//! | [`pmc`] | ptp4l management client (TIME_STATUS_NP, PORT_DATA_SET, CURRENT_DATA_SET over its UDS) |
//! | [`clock`] | clock quality of live frames: adjtimex sync state, ptp4l offset bound |
//! | [`nl`] | ethtool generic netlink TSINFO_GET (capabilities, PHC index) |
//! | [`filter`] | tcpdump expressions compiled by libpcap and attached as classic BPF |
//! | [`stdin`] | [`PolledStdin`]: a stream on standard input whose reads say when it was idle; `-`'s and a FIFO's, waited for or said to wait first ([`Waits`]) |
//! | `sys` | the kernel structures as bytes, and ioctl helpers |
//!
//! Everything here acts in the calling thread's network namespace.

pub mod afxdp;
pub mod clock;
pub mod ebpf;
pub mod error;
pub mod filter;
pub mod nl;
pub mod offload;
pub mod pcap_live;
pub mod phc;
pub mod pmc;
pub mod ring;
pub mod ring_merge;
pub mod stdin;
mod sys;
pub mod tstamp;

pub use afxdp::{AfXdp, AfXdpStats};
pub use ebpf::{EbpfConfig, EbpfSource, EbpfStats};
pub use error::LiveError;
pub use offload::{OffloadIssue, Offloads, offloads};
pub use pcap_live::{PcapLive, PcapStats};
pub use ring::{AfPacket, RingConfig, RingStats};
pub use ring_merge::{RingMerge, Step};
pub use stdin::{PolledStdin, Waits};
pub use sys::HwTstampConfig;
pub use tstamp::{HwTsDevice, HwTsGuard, Ioctl, TsInfo, TsMode, ts_info};
