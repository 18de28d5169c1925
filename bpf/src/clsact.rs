//! The classic tc attach (a cls_bpf filter in direct-action mode on a clsact qdisc), for kernels
//! without tcx (before 6.6, e.g. Debian 12's 6.1). Filters are identified by wirestamp's own handle and
//! a priority per direction; detaching removes only that filter and leaves the clsact qdisc (other tools
//! may have filters on it). Netlink resolves the ifindex in the calling thread's network namespace, so
//! the namespace is remembered at attach time and the detach runs there, whichever thread drops.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::ptr;

/// wirestamp's filter handle ("WS").
pub(crate) const HANDLE: u32 = 0x5753;
/// Ingress runs first (lowest priority number), egress last, as with tcx.
pub(crate) const INGRESS_PRIORITY: u32 = 1;
pub(crate) const EGRESS_PRIORITY: u32 = 0xffff;

fn hook(ifindex: i32, attach_point: u32) -> libbpf_sys::bpf_tc_hook {
    libbpf_sys::bpf_tc_hook {
        sz: size_of::<libbpf_sys::bpf_tc_hook>() as libbpf_sys::size_t,
        ifindex,
        attach_point,
        parent: 0,
        handle: 0,
        qdisc: ptr::null(),
    }
}

fn opts(priority: u32) -> libbpf_sys::bpf_tc_opts {
    libbpf_sys::bpf_tc_opts {
        sz: size_of::<libbpf_sys::bpf_tc_opts>() as libbpf_sys::size_t,
        handle: HANDLE,
        priority,
        ..Default::default()
    }
}

fn check(rc: i32) -> io::Result<()> {
    if rc < 0 { Err(io::Error::from_raw_os_error(-rc)) } else { Ok(()) }
}

/// The id of the program in wirestamp's filter slot (handle, `priority`) on `attach_point`, if any.
pub(crate) fn query(ifindex: i32, attach_point: u32, priority: u32) -> io::Result<Option<u32>> {
    let h = hook(ifindex, attach_point);
    let mut o = opts(priority);
    // SAFETY: valid hook and opts structs of the sizes they declare.
    let rc = crate::log::quietly(|| unsafe { libbpf_sys::bpf_tc_query(&h, &mut o) });
    match check(rc) {
        Ok(()) => Ok(Some(o.prog_id)),
        // No clsact qdisc, or nothing in the slot.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::EINVAL)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// An attached filter; dropping it detaches it.
pub(crate) struct ClsactFilter {
    ifindex: i32,
    attach_point: u32,
    priority: u32,
    netns: File,
}

impl ClsactFilter {
    /// Creates the clsact qdisc if missing and attaches `prog` in wirestamp's slot.
    pub(crate) fn attach(prog: BorrowedFd<'_>, ifindex: i32, attach_point: u32, priority: u32) -> io::Result<Self> {
        let netns = File::open("/proc/thread-self/ns/net")?;
        let mut h = hook(ifindex, attach_point);
        // SAFETY: a valid hook struct.
        match check(unsafe { libbpf_sys::bpf_tc_hook_create(&mut h) }) {
            Err(e) if e.raw_os_error() != Some(libc::EEXIST) => return Err(e),
            _ => {}
        }
        let mut o = opts(priority);
        o.prog_fd = prog.as_raw_fd();
        // SAFETY: valid hook and opts; flags 0 = refuse to replace an existing filter in the slot.
        check(unsafe { libbpf_sys::bpf_tc_attach(&h, &mut o) })?;
        Ok(Self { ifindex, attach_point, priority, netns })
    }

    fn detach_here(&self) -> io::Result<()> {
        let h = hook(self.ifindex, self.attach_point);
        let o = opts(self.priority);
        // SAFETY: valid hook and opts (prog_fd, prog_id and flags zero, as detach requires).
        check(unsafe { libbpf_sys::bpf_tc_detach(&h, &o) })
    }
}

impl Drop for ClsactFilter {
    fn drop(&mut self) {
        // Detach from a short-lived thread that enters the attach-time namespace (setns affects only
        // the calling thread, so the dropping thread keeps its own).
        let netns = self.netns.as_fd();
        let this = &*self;
        let res = std::thread::scope(|s| {
            s.spawn(move || {
                // SAFETY: a namespace fd we own and a valid nstype.
                if unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                this.detach_here()
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("detach thread panicked")))
        });
        if let Err(e) = res {
            tracing::warn!(
                ifindex = self.ifindex,
                "detaching wirestamp's tc filter failed: {e}; remove it with `tc filter del dev <if> ingress|egress \
                 prio {} handle {HANDLE:#x} bpf`",
                self.priority
            );
        }
    }
}
