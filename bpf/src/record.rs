//! Ring-buffer records (`struct ws_pkt_event` of `bpf/events.h`) read in place, without copying or
//! transmuting: `plain::from_bytes` checks the length and the alignment of the ring's bytes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::skel::tc::types::ws_pkt_event;

/// Size of `struct ws_pkt_event` (events.h); a change there must be followed here.
pub const RECORD_SIZE: usize = 368;
/// Largest payload prefix a record carries (`WS_PAYLOAD_MAX`).
pub const PAYLOAD_MAX: usize = 256;

const _: () = assert!(size_of::<ws_pkt_event>() == RECORD_SIZE);
const _: () = assert!(align_of::<ws_pkt_event>() == 8);

// SAFETY: `ws_pkt_event` is the skeleton's `#[repr(C)]` mirror of a C struct made only of unsigned
// integers and arrays of them, with no padding (size checked above), so every bit pattern is a valid value
// and it has no references or invariants.
unsafe impl plain::Plain for ws_pkt_event {}

/// Where a record's `ts_ns` came from (`enum ws_ts_source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StampSource {
    /// The skb's hardware timestamp (NIC clock as the driver reports it).
    Hardware,
    /// `skb->tstamp` with tstamp_type REALTIME: the kernel's receive stamp (the same value a socket's
    /// SO_TIMESTAMPING RX software stamp reports).
    SkbRealtime,
    /// `skb->tstamp` with tstamp_type TAI.
    SkbTai,
    /// No usable skb stamp: the program's `bpf_ktime_get_tai_ns()` when it ran. Egress packets and TCP
    /// (whose MONOTONIC skb->tstamp is a departure schedule) land here.
    HookTai,
    /// A value this version does not know.
    Unknown(u8),
}

/// Hook direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookDirection {
    /// tcx ingress: received by the interface.
    Ingress,
    /// tcx egress: sent by the interface.
    Egress,
    /// A value this version does not know.
    Unknown(u8),
}

/// Why a ring record was not delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// Shorter than `struct ws_pkt_event` (a kernel object from another build).
    #[error("record of {0} bytes, expected at least {RECORD_SIZE}")]
    TooShort(usize),
    /// Not 8-byte aligned (cannot happen with libbpf's ring; checked anyway).
    #[error("record not 8-byte aligned")]
    Unaligned,
}

/// One captured packet, borrowed from the ring buffer for the duration of the callback.
#[derive(Clone, Copy)]
pub struct PacketRecord<'a> {
    ev: &'a ws_pkt_event,
}

impl std::fmt::Debug for PacketRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PacketRecord")
            .field("flow_id", &self.flow_id())
            .field("direction", &self.direction())
            .field("ts_ns", &self.ts_ns())
            .field("ts_source", &self.ts_source())
            .field("src", &self.src())
            .field("dst", &self.dst())
            .field("proto", &self.proto())
            .field("tcp_seq", &self.tcp_seq())
            .field("tcp_flags", &self.tcp_flags())
            .field("l4_payload_len", &self.l4_payload_len())
            .field("payload", &self.payload())
            .finish()
    }
}

impl<'a> PacketRecord<'a> {
    /// Views `data` (one ring record) as a packet record.
    pub fn from_bytes(data: &'a [u8]) -> Result<Self, RecordError> {
        match plain::from_bytes::<ws_pkt_event>(data) {
            Ok(ev) => Ok(Self { ev }),
            Err(plain::Error::TooShort) => Err(RecordError::TooShort(data.len())),
            Err(plain::Error::BadAlignment) => Err(RecordError::Unaligned),
        }
    }

    /// The chosen timestamp, in the clock `ts_source` names.
    pub fn ts_ns(&self) -> u64 {
        self.ev.ts_ns
    }
    /// Where `ts_ns` came from.
    pub fn ts_source(&self) -> StampSource {
        match self.ev.ts_source {
            1 => StampSource::Hardware,
            2 => StampSource::SkbRealtime,
            3 => StampSource::SkbTai,
            4 => StampSource::HookTai,
            v => StampSource::Unknown(v),
        }
    }
    /// `bpf_ktime_get_tai_ns()` when the program ran (always set).
    pub fn hook_tai_ns(&self) -> u64 {
        self.ev.hook_tai_ns
    }
    /// Raw `skb->tstamp` and `skb->tstamp_type` (0 REALTIME, 1 MONOTONIC, 2 TAI); tstamp 0 = none.
    pub fn skb_tstamp(&self) -> (u64, u8) {
        (self.ev.skb_tstamp, self.ev.tstamp_type)
    }
    /// Raw skb hardware timestamp; 0 = none.
    pub fn skb_hwtstamp(&self) -> u64 {
        self.ev.skb_hwtstamp
    }
    /// The timestamp as integer ns since the Unix epoch. `tai_offset_ns` is TAI − UTC (see
    /// [`crate::tai_offset_ns`]); it applies to the TAI sources only. Hardware stamps are returned as
    /// the driver gave them (a PHC synchronised to UTC is assumed).
    pub fn epoch_ns(&self, tai_offset_ns: i64) -> i64 {
        let ts = i64::try_from(self.ev.ts_ns).unwrap_or(i64::MAX);
        match self.ts_source() {
            StampSource::SkbTai | StampSource::HookTai => ts - tai_offset_ns,
            _ => ts,
        }
    }
    /// Direction of the hook that saw the packet.
    pub fn direction(&self) -> HookDirection {
        match self.ev.direction {
            1 => HookDirection::Ingress,
            2 => HookDirection::Egress,
            v => HookDirection::Unknown(v),
        }
    }
    /// The configured flow's id.
    pub fn flow_id(&self) -> u32 {
        self.ev.flow_id
    }
    /// Whether the flow matched the packet's destination (1) or source (2) endpoint.
    pub fn match_side(&self) -> u8 {
        self.ev.match_side
    }
    /// Interface of the hook.
    pub fn ifindex(&self) -> u32 {
        self.ev.ifindex
    }
    /// Bytes in the skb from the Ethernet header (a GSO skb holds several wire segments).
    pub fn skb_len(&self) -> u32 {
        self.ev.skb_len
    }
    /// Wire segments this skb becomes (0 or 1: one packet).
    pub fn gso_segs(&self) -> u16 {
        self.ev.gso_segs
    }
    /// IP version, 4 or 6.
    pub fn ip_version(&self) -> u8 {
        self.ev.ip_version
    }
    /// IP protocol: 6 TCP, 17 UDP.
    pub fn proto(&self) -> u8 {
        self.ev.proto
    }
    fn addr(&self, raw: [u8; 16]) -> IpAddr {
        let v6 = Ipv6Addr::from(raw);
        match (self.ev.ip_version, v6.to_ipv4_mapped()) {
            (4, Some(v4)) => IpAddr::V4(v4),
            (4, None) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            _ => IpAddr::V6(v6),
        }
    }
    /// Source address and port.
    pub fn src(&self) -> SocketAddr {
        SocketAddr::new(self.addr(self.ev.saddr), self.ev.sport)
    }
    /// Destination address and port.
    pub fn dst(&self) -> SocketAddr {
        SocketAddr::new(self.addr(self.ev.daddr), self.ev.dport)
    }
    /// VLAN ids seen, outermost first (at most two are kept; see [`Self::vlan_count`]).
    pub fn vlans(&self) -> &'a [u16] {
        let n = usize::from(self.ev.n_vlan).min(2);
        &self.ev.vlan[..n]
    }
    /// Number of VLAN tags seen, an offloaded one included.
    pub fn vlan_count(&self) -> u8 {
        self.ev.n_vlan
    }
    /// TCP sequence number (host order); 0 for UDP.
    pub fn tcp_seq(&self) -> u32 {
        self.ev.tcp_seq
    }
    /// TCP acknowledgment number; 0 for UDP.
    pub fn tcp_ack(&self) -> u32 {
        self.ev.tcp_ack
    }
    /// TCP flags byte (FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10); 0 for UDP.
    pub fn tcp_flags(&self) -> u8 {
        self.ev.tcp_flags
    }
    /// Offset of the L4 payload from the Ethernet header.
    pub fn l4_payload_offset(&self) -> u16 {
        self.ev.l4_payload_off
    }
    /// L4 payload length as the IP/UDP headers declare it.
    pub fn l4_payload_len(&self) -> u16 {
        self.ev.l4_payload_len
    }
    /// The first bytes of the L4 payload (up to the snap length), in either snap mode.
    pub fn payload(&self) -> &'a [u8] {
        let skip = usize::from(self.ev.l4_payload_off.saturating_sub(self.ev.cap_off));
        let bytes = self.captured();
        bytes.get(skip..).unwrap_or(&[])
    }
    /// The bytes the program copied: the L4 payload prefix, or with [`crate::TcOptions::frame_prefix`]
    /// the frame from its Ethernet header (headers, then up to the snap length of payload; at most
    /// [`PAYLOAD_MAX`] bytes). See [`Self::captured_offset`].
    pub fn captured(&self) -> &'a [u8] {
        let n = usize::from(self.ev.cap_len).min(PAYLOAD_MAX);
        &self.ev.payload[..n]
    }
    /// Offset of [`Self::captured`]'s first byte from the Ethernet header: 0 in frame-prefix mode, else
    /// [`Self::l4_payload_offset`].
    pub fn captured_offset(&self) -> u16 {
        self.ev.cap_off
    }
    /// tc: the full TCI of a VLAN tag the stack had already taken out of the packet's data (an offloaded
    /// tag, counted in [`Self::vlan_count`] but absent from [`Self::captured`]); 0 when none or XDP.
    pub fn offloaded_tci(&self) -> u16 {
        self.ev.offloaded_tci
    }
}

/// TAI − UTC in ns, from the kernel (`adjtimex`); 0 when the kernel has no offset set (as on
/// unsynchronised machines, where CLOCK_TAI equals CLOCK_REALTIME).
pub fn tai_offset_ns() -> std::io::Result<i64> {
    // SAFETY: an all-zero timex is a valid "read only" request (modes 0).
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: `tx` is a valid, writable timex for the duration of the call.
    let rc = unsafe { libc::adjtimex(&mut tx) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(i64::from(tx.tai) * 1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_short_and_unaligned() {
        let buf = vec![0u64; RECORD_SIZE / 8 + 1];
        // SAFETY: reinterpreting initialised u64s as bytes; u8 has no alignment or validity requirement.
        let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), buf.len() * 8) };
        assert!(PacketRecord::from_bytes(&bytes[..RECORD_SIZE]).is_ok());
        assert_eq!(PacketRecord::from_bytes(&bytes[..RECORD_SIZE - 1]).unwrap_err(), RecordError::TooShort(367));
        assert_eq!(PacketRecord::from_bytes(&bytes[1..RECORD_SIZE + 1]).unwrap_err(), RecordError::Unaligned);
    }
}
