//! Test helper: veth pairs between network namespaces (the namespace worker itself is
//! `wirestamp_testdata::netns::NsWorker`). Shared by capture and daemon tests (`#[path]`). Needs root
//! (CAP_SYS_ADMIN, CAP_NET_ADMIN) and `ip`.
#![allow(dead_code)]

use std::thread;

pub use wirestamp_testdata::netns::NsWorker;

/// Two namespaces joined by a veth pair: `va` 10.77.0.1/24 in `a`, `vb` 10.77.0.2/24 in `b`, both up,
/// with fixed MAC addresses and permanent neighbour entries.
pub struct VethPair {
    pub a: NsWorker,
    pub b: NsWorker,
}

pub const ADDR_A: &str = "10.77.0.1";
pub const ADDR_B: &str = "10.77.0.2";
pub const MAC_A: &str = "02:00:00:77:00:01";
pub const MAC_B: &str = "02:00:00:77:00:02";

impl VethPair {
    pub fn new() -> VethPair {
        let (a, b) = (NsWorker::new(), NsWorker::new());
        a.ip(&[
            "link",
            "add",
            "va",
            "address",
            MAC_A,
            "type",
            "veth",
            "peer",
            "name",
            "vb",
            "address",
            MAC_B,
            "netns",
            &b.ns_path(),
        ]);
        a.ip(&["addr", "add", &format!("{ADDR_A}/24"), "dev", "va"]);
        b.ip(&["addr", "add", &format!("{ADDR_B}/24"), "dev", "vb"]);
        // Permanent neighbours: no ARP, so no send ever waits for resolution (or its 1 s retry).
        a.ip(&["neigh", "replace", ADDR_B, "lladdr", MAC_B, "dev", "va", "nud", "permanent"]);
        b.ip(&["neigh", "replace", ADDR_A, "lladdr", MAC_A, "dev", "vb", "nud", "permanent"]);
        a.ip(&["link", "set", "va", "up"]);
        b.ip(&["link", "set", "vb", "up"]);
        VethPair { a, b }
    }
}

/// CLOCK_REALTIME in ns.
pub fn realtime_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// A UDP socket with SO_TIMESTAMPING(RX_SOFTWARE|SOFTWARE) kept open for the test's duration: it turns on
/// the kernel's netstamp key, whose enable is deferred (kernel.md 2e), before frames are captured.
pub fn netstamp_holder() -> std::net::UdpSocket {
    use std::os::fd::AsRawFd;
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let flags: libc::c_int = (1 << 3) | (1 << 4);
    // SAFETY: valid socket and a c_int option value of the right size.
    let rc =
        unsafe { libc::setsockopt(s.as_raw_fd(), libc::SOL_SOCKET, 37, &flags as *const _ as *const libc::c_void, 4) };
    assert_eq!(rc, 0);
    thread::sleep(std::time::Duration::from_millis(50));
    s
}
