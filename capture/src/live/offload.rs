//! Offloads that change what a capture on the host sees of the wire: GRO and LRO merge received TCP
//! segments into one frame before the packet taps (one frame, one stamp, for several wire packets), and
//! TSO hands the NIC one frame that it cuts into segments after them. A response's time may then be an
//! earlier segment's, and an order's the time of the frame several were sent in. Read with the legacy
//! ethtool get commands (`struct ethtool_value { u32 cmd; u32 data; }`), which every kernel answers.

use super::sys;
use std::io;

const ETHTOOL_GTSO: u32 = 0x1e;
const ETHTOOL_GFLAGS: u32 = 0x25;
const ETHTOOL_GGRO: u32 = 0x2b;
/// `ETH_FLAG_LRO` in `ETHTOOL_GFLAGS`'s value.
const ETH_FLAG_LRO: u32 = 1 << 15;

/// The offloads of an interface that merge or split TCP segments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offloads {
    /// Generic receive offload: the kernel merges received segments before the packet taps.
    pub gro: bool,
    /// Large receive offload: the NIC (or driver) merges received segments.
    pub lro: bool,
    /// TCP segmentation offload: the NIC cuts what the taps saw as one frame into segments.
    pub tso: bool,
}

/// What an interface's offloads do to a capture ([`Offloads::issue`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadIssue {
    /// What merges or splits the frames the capture sees.
    pub what: String,
    /// The `ethtool -K IFACE` settings that stop it (`gro off`, ...).
    pub off: Vec<&'static str>,
}

impl OffloadIssue {
    /// The command that stops it.
    pub fn fix(&self, iface: &str) -> String {
        format!("ethtool -K {iface} {}", self.off.join(" "))
    }
}

impl Offloads {
    /// What a capture that sees inbound frames after GRO (`rx`: AF_PACKET, libpcap, tc ingress) and
    /// outbound ones before the NIC (`tx`) must be told, or `None` when nothing merges or splits what it
    /// sees.
    pub fn issue(&self, rx: bool, tx: bool) -> Option<OffloadIssue> {
        let merged: Vec<(&str, &'static str)> = [(self.gro, "GRO", "gro off"), (self.lro, "LRO", "lro off")]
            .iter()
            .filter(|o| o.0 && rx)
            .map(|o| (o.1, o.2))
            .collect();
        let mut what = Vec::new();
        let mut off = Vec::new();
        if !merged.is_empty() {
            let names: Vec<&str> = merged.iter().map(|m| m.0).collect();
            what.push(format!(
                "{} on: received TCP segments may be captured merged into one frame, stamped once (a response's time \
                 may be an earlier segment's)",
                names.join(" and ")
            ));
            off.extend(merged.iter().map(|m| m.1));
        }
        if self.tso && tx {
            what.push(
                "TSO on: sent TCP may be captured as one frame the NIC then cuts into several segments (one stamp for \
                 them all)"
                    .to_string(),
            );
            off.push("tso off");
        }
        (!what.is_empty()).then(|| OffloadIssue { what: what.join("; "), off })
    }

    /// [`Offloads::issue`] as one line for `iface`, with its fix.
    pub fn warning(&self, iface: &str, rx: bool, tx: bool) -> Option<String> {
        let i = self.issue(rx, tx)?;
        Some(format!("{iface}: {}; for a frame per wire packet: {}", i.what, i.fix(iface)))
    }
}

/// Reads `iface`'s offloads (in the calling thread's network namespace).
pub fn offloads(iface: &str) -> io::Result<Offloads> {
    let sock = sys::ioctl_socket()?;
    let get = |cmd: u32| -> io::Result<u32> {
        let mut buf = [0u8; 8];
        buf[..4].copy_from_slice(&cmd.to_ne_bytes());
        let mut ifr = sys::IfReq::new(iface)?;
        ifr.set_data_ptr(buf.as_mut_ptr());
        sys::ifreq_ioctl(&sock, sys::SIOCETHTOOL, &mut ifr)?;
        Ok(u32::from_ne_bytes([buf[4], buf[5], buf[6], buf[7]]))
    };
    Ok(Offloads {
        gro: get(ETHTOOL_GGRO)? != 0,
        lro: get(ETHTOOL_GFLAGS)? & ETH_FLAG_LRO != 0,
        tso: get(ETHTOOL_GTSO)? != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only what the source sees is warned of, and the fix names just what is on.
    #[test]
    fn the_warning_names_what_the_source_sees() {
        let all = Offloads { gro: true, lro: true, tso: true };
        assert_eq!(Offloads::default().warning("eth0", true, true), None);
        assert_eq!(all.warning("eth0", false, false), None);
        assert_eq!(
            all.warning("eth0", true, false).unwrap(),
            "eth0: GRO and LRO on: received TCP segments may be captured merged into one frame, stamped once (a \
             response's time may be an earlier segment's); for a frame per wire packet: ethtool -K eth0 gro off lro off"
        );
        assert_eq!(
            Offloads { tso: true, ..Offloads::default() }.warning("eth1", true, true).unwrap(),
            "eth1: TSO on: sent TCP may be captured as one frame the NIC then cuts into several segments (one stamp \
             for them all); for a frame per wire packet: ethtool -K eth1 tso off"
        );
    }
}
