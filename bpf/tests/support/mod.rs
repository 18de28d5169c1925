//! Shared helpers of the privileged tests: veth pairs between namespace workers
//! (`wirestamp_testdata::netns::NsWorker`), shell commands, and SO_TIMESTAMPING plumbing (libc, since neither std nor the libc crate wraps it).
#![allow(dead_code)] // each test binary uses a subset

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::process::Command;
use std::time::Duration;

pub use wirestamp_testdata::netns::NsWorker;

/// Runs a shell command line (in the caller's thread's namespace) and panics with its stderr on failure.
#[track_caller]
pub fn sh(cmd: &str) {
    let out = Command::new("sh").arg("-c").arg(cmd).output().expect("sh runs");
    assert!(out.status.success(), "`{cmd}` failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// Two namespaces joined by a veth pair: `va` 10.201.0.1/24 in `a`, `vb` 10.201.0.2/24 in `b`, with a
/// multicast route out of `va`.
pub struct VethPair {
    pub a: NsWorker,
    pub b: NsWorker,
    pub va: u32,
    pub vb: u32,
}

pub const A_ADDR: [u8; 4] = [10, 201, 0, 1];
pub const B_ADDR: [u8; 4] = [10, 201, 0, 2];

impl VethPair {
    pub fn new() -> Self {
        let a = NsWorker::new();
        let b = NsWorker::new();
        let b_ns = b.ns_path();
        a.run(move || {
            sh(&format!(
                "ip link add va type veth peer name vb netns {b_ns} && ip addr add 10.201.0.1/24 dev va && \
                 ip link set lo up && ip link set va up && ip route add 224.0.0.0/4 dev va"
            ))
        });
        b.run(|| sh("ip addr add 10.201.0.2/24 dev vb && ip link set lo up && ip link set vb up"));
        let va = a.run(|| ifindex("va"));
        let vb = b.run(|| ifindex("vb"));
        Self { a, b, va, vb }
    }
}

pub fn ifindex(name: &str) -> u32 {
    let c = std::ffi::CString::new(name).unwrap();
    // SAFETY: a valid NUL-terminated string.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    assert_ne!(idx, 0, "no interface {name}");
    idx
}

pub const SOF_TIMESTAMPING_TX_SOFTWARE: u32 = 1 << 1;
pub const SOF_TIMESTAMPING_RX_SOFTWARE: u32 = 1 << 3;
pub const SOF_TIMESTAMPING_SOFTWARE: u32 = 1 << 4;
pub const SOF_TIMESTAMPING_OPT_ID: u32 = 1 << 7;
pub const SOF_TIMESTAMPING_OPT_TSONLY: u32 = 1 << 11;

pub fn set_timestamping(fd: RawFd, flags: u32) {
    // SAFETY: a valid socket and a u32 option value of the right size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPING,
            (&raw const flags).cast(),
            size_of::<u32>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_TIMESTAMPING: {}", io::Error::last_os_error());
}

/// What one recvmsg returned: data length and, when present, the software timestamp (ns since the
/// epoch) of SCM_TIMESTAMPING and the OPT_ID of an error-queue message.
#[derive(Debug, Default, Clone, Copy)]
pub struct Received {
    pub len: usize,
    pub sw_ns: Option<i64>,
    pub ee_data: Option<u32>,
    pub ee_info: Option<u32>,
}

/// recvmsg with control messages; `errqueue` reads MSG_ERRQUEUE. Waits up to `timeout` for data.
pub fn recv_ts(sock: &impl AsRawFd, buf: &mut [u8], errqueue: bool, timeout: Duration) -> io::Result<Received> {
    let fd = sock.as_raw_fd();
    let mut pfd = libc::pollfd { fd, events: if errqueue { 0 } else { libc::POLLIN }, revents: 0 };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut pfd, 1, timeout.as_millis() as i32) };
    if n <= 0 {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "no message"));
    }
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let mut ctrl = [0u64; 64];
    // SAFETY: an all-zero msghdr is valid; pointers are filled below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctrl.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&ctrl);
    let flags = if errqueue { libc::MSG_ERRQUEUE } else { 0 } | libc::MSG_DONTWAIT;
    // SAFETY: msg points at live buffers of the given sizes.
    let len = unsafe { libc::recvmsg(fd, &mut msg, flags) };
    if len < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Received { len: len as usize, ..Received::default() };
    // SAFETY: walking the control buffer the kernel filled, with the libc macros.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            let data = libc::CMSG_DATA(c);
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_TIMESTAMPING {
                let ts = std::ptr::read_unaligned(data.cast::<[libc::timespec; 3]>());
                out.sw_ns = Some(ts[0].tv_sec * 1_000_000_000 + ts[0].tv_nsec);
            } else if ((*c).cmsg_level == libc::SOL_IP && (*c).cmsg_type == libc::IP_RECVERR)
                || ((*c).cmsg_level == libc::SOL_IPV6 && (*c).cmsg_type == libc::IPV6_RECVERR)
            {
                let ee = std::ptr::read_unaligned(data.cast::<libc::sock_extended_err>());
                out.ee_data = Some(ee.ee_data);
                out.ee_info = Some(ee.ee_info);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok(out)
}

/// CLOCK_TAI − CLOCK_REALTIME as the kernel sees it (0 on unsynchronised machines).
pub fn tai_offset() -> i64 {
    wirestamp_bpf::tai_offset_ns().expect("adjtimex")
}
