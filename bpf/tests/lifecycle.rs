//! Dropping a capture detaches its programs and frees its maps (needs root). Its own test binary, so no
//! other test's BPF objects share the process while it looks at descriptors.

mod support;

use std::collections::BTreeSet;
use std::fs;
use std::net::{IpAddr, Ipv4Addr};
use std::thread;
use std::time::{Duration, Instant};

use support::*;
use wirestamp_bpf::{FlowSpec, TcCapture, TcOptions};

/// (kind, kernel id) of every BPF map, program and link this process holds a descriptor to, from
/// /proc/self/fdinfo ("map_id:", "prog_id:", "link_id:").
fn bpf_objects() -> BTreeSet<(&'static str, u32)> {
    let mut out = BTreeSet::new();
    for e in fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Ok(target) = fs::read_link(e.path()) else { continue };
        let kind = match target.to_string_lossy().as_ref() {
            "anon_inode:bpf-map" => "map_id:",
            "anon_inode:bpf-prog" => "prog_id:",
            "anon_inode:bpf_link" => "link_id:",
            _ => continue,
        };
        let info =
            fs::read_to_string(format!("/proc/self/fdinfo/{}", e.file_name().to_string_lossy())).unwrap_or_default();
        if let Some(id) = info.lines().find_map(|l| l.strip_prefix(kind)).and_then(|v| v.trim().parse().ok()) {
            out.insert((kind, id));
        }
    }
    out
}

/// Whether the kernel still has the object (get-fd-by-id fails with ENOENT once it is freed).
fn exists(kind: &str, id: u32) -> bool {
    // SAFETY: plain syscall wrappers; a returned descriptor is closed at once.
    let fd = unsafe {
        match kind {
            "map_id:" => libbpf_sys::bpf_map_get_fd_by_id(id),
            "prog_id:" => libbpf_sys::bpf_prog_get_fd_by_id(id),
            _ => libbpf_sys::bpf_link_get_fd_by_id(id),
        }
    };
    if fd >= 0 {
        // SAFETY: closing the descriptor just opened.
        unsafe { libc::close(fd) };
    }
    fd >= 0
}

#[test]
fn drop_detaches_and_frees_maps() {
    let net = VethPair::new();
    let va = net.va;
    let before = bpf_objects();
    let flows = vec![FlowSpec::udp_feed(1, IpAddr::V4(Ipv4Addr::new(239, 1, 1, 1)), 30001)];
    let cap = net.a.run(move || TcCapture::attach(va, &flows, &TcOptions::default()).unwrap());
    let ours: BTreeSet<_> = bpf_objects().difference(&before).copied().collect();
    let count = |k: &str| ours.iter().filter(|(kind, _)| *kind == k).count();
    // flows, events, stats, .rodata, .bss, .data; 2 programs; 2 tcx links.
    assert_eq!((count("map_id:"), count("prog_id:"), count("link_id:")), (6, 2, 2), "{ours:?}");
    assert!(ours.iter().all(|(k, id)| exists(k, *id)));

    net.a.run(move || drop(cap));
    assert!(bpf_objects().is_disjoint(&ours), "descriptors closed");
    // The kernel frees maps and programs asynchronously (RCU): allow it a moment.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<_> = ours.iter().filter(|(k, id)| exists(k, *id)).collect();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "still in the kernel after drop: {left:?}");
        thread::sleep(Duration::from_millis(20));
    }
}
