//! Capture filters: a tcpdump expression compiled by libpcap's `pcap_compile` (through the `pcap`
//! crate) into classic BPF, attached to a socket with SO_ATTACH_FILTER.
//!
//! For a socket, compile with [`compile_for`]: it asks a live libpcap handle on the interface, so
//! `vlan` becomes the SKF_AD_VLAN_TAG_PRESENT / SKF_AD_VLAN_TAG loads the kernel needs (the receive path
//! moves the tag into metadata, skb_vlan_untag). [`compile`] uses a "dead" Ethernet handle, where `vlan`
//! tests the bytes at offset 12: right for files, wrong for live sockets.

use super::error::LiveError;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// One classic BPF instruction (`struct sock_filter`).
pub type Insn = libc::sock_filter;

/// Compiles `expr` for Ethernet (optimised), to check its syntax and for tests. The program's accept
/// value is libpcap's default snap length (65535 bytes); [`compile_for`] takes the capture's.
pub fn compile(expr: &str) -> Result<Vec<Insn>, LiveError> {
    let bad = |reason: String| LiveError::BadFilter { filter: expr.to_string(), reason };
    let dead = pcap::Capture::dead(pcap::Linktype::ETHERNET).map_err(|e| bad(e.to_string()))?;
    let prog = dead.compile(expr, true).map_err(|e| bad(e.to_string()))?;
    // The pcap crate exposes instructions only through Display ("code jt jf k"); parsing that keeps
    // this free of layout assumptions about its private fields.
    prog.get_instructions()
        .iter()
        .map(|i| parse_insn(&i.to_string()).ok_or_else(|| bad(format!("unexpected instruction {i}"))))
        .collect()
}

/// Compiles `expr` as libpcap would for a live capture on `iface` (Linux VLAN handling included); an
/// accepted frame is cut at `snaplen` bytes (the program's return value).
pub fn compile_for(iface: &str, expr: &str, snaplen: u32) -> Result<Vec<Insn>, LiveError> {
    let bad = |reason: String| LiveError::BadFilter { filter: expr.to_string(), reason };
    let live = pcap::Capture::from_device(iface)
        .and_then(|c| c.buffer_size(1 << 16).snaplen(i32::try_from(snaplen).unwrap_or(i32::MAX)).open())
        .map_err(|e| LiveError::Sys {
            what: "pcap_activate (filter)",
            iface: iface.into(),
            source: std::io::Error::other(e.to_string()),
        })?;
    let prog = live.compile(expr, true).map_err(|e| bad(e.to_string()))?;
    prog.get_instructions()
        .iter()
        .map(|i| parse_insn(&i.to_string()).ok_or_else(|| bad(format!("unexpected instruction {i}"))))
        .collect()
}

fn parse_insn(s: &str) -> Option<Insn> {
    let mut it = s.split_ascii_whitespace();
    let insn = Insn {
        code: it.next()?.parse().ok()?,
        jt: it.next()?.parse().ok()?,
        jf: it.next()?.parse().ok()?,
        k: it.next()?.parse().ok()?,
    };
    it.next().is_none().then_some(insn)
}

/// The program that accepts every frame, cut at `snaplen` bytes (`ret #snaplen`).
pub fn accept_all(snaplen: u32) -> Vec<Insn> {
    vec![Insn { code: (libc::BPF_RET | libc::BPF_K) as u16, jt: 0, jf: 0, k: snaplen }]
}

/// Attaches `prog` to `fd` (SO_ATTACH_FILTER); the kernel copies it.
pub fn attach(fd: BorrowedFd<'_>, prog: &[Insn]) -> io::Result<()> {
    let len = u16::try_from(prog.len()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let fprog = libc::sock_fprog { len, filter: prog.as_ptr() as *mut Insn };
    // SAFETY: `fprog` points at `len` valid instructions that outlive the call; the kernel copies them.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            &fprog as *const libc::sock_fprog as *const libc::c_void,
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tcpdump -dd as the oracle (same libpcap, same snap length): instruction for instruction.
    fn tcpdump_dd(expr: &str) -> Vec<(u16, u8, u8, u32)> {
        let out =
            std::process::Command::new("tcpdump").args(["-dd", "-s", "65535", "-y", "EN10MB", expr]).output().unwrap();
        assert!(out.status.success(), "tcpdump -dd: {}", String::from_utf8_lossy(&out.stderr));
        let num = |s: &str| {
            let s = s.trim();
            s.strip_prefix("0x").map_or_else(|| s.parse().unwrap(), |h| u32::from_str_radix(h, 16).unwrap())
        };
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let f: Vec<u32> = l.trim().trim_start_matches('{').trim_end_matches("},").split(',').map(num).collect();
                (f[0] as u16, f[1] as u8, f[2] as u8, f[3])
            })
            .collect()
    }

    #[test]
    fn filters_equal_tcpdump_dd() {
        for expr in ["udp", "udp and port 319", "vlan and tcp[tcpflags] & tcp-syn != 0"] {
            let ours: Vec<_> = compile(expr).unwrap().iter().map(|i| (i.code, i.jt, i.jf, i.k)).collect();
            let want = tcpdump_dd(expr);
            assert!(want.len() > 3, "{expr}");
            assert_eq!(ours, want, "{expr}");
        }
    }

    #[test]
    fn bad_expression_is_a_clear_error() {
        let e = compile("udp port notaport").unwrap_err().to_string();
        assert!(e.contains("filter \"udp port notaport\" does not compile"), "{e}");
        assert!(compile("tcp and (").is_err());
    }

    #[test]
    fn display_parsing() {
        assert!(parse_insn("40 0 0 12").is_some());
        assert!(parse_insn("40 0 0").is_none());
        assert!(parse_insn("40 0 0 12 1").is_none());
    }
}
