//! Latency the tc capture adds to the application's packets (issue 6, "Cost"): UDP round trips over a
//! veth pair between two network namespaces at a fixed open-loop rate, with the tc programs detached and
//! attached (both ends, ingress and egress: four program runs per round trip), in alternating phases of
//! one run. Run once, as root, in release:
//!
//!     cargo run --release -p wirestamp-bpf --example added_latency
//!
//! Prints p50 / p99 / p99.9 / max of the round trip per phase kind and the differences.

use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::process::Command;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use wirestamp_bpf::{FlowSpec, TcCapture, TcOptions};

const RATE_PER_S: u64 = 2_000;
const PER_PHASE: u64 = 5_000;
const PHASES: usize = 6; // detached, attached, detached, ...

type Job = Box<dyn FnOnce() + Send>;

/// A thread inside its own network namespace running the closures it is sent.
fn ns_worker() -> (mpsc::Sender<Job>, i32) {
    let (tx, rx) = mpsc::channel::<Job>();
    let (tid_tx, tid_rx) = mpsc::channel();
    thread::spawn(move || {
        // SAFETY: plain syscalls on this thread.
        assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0, "unshare (root needed)");
        // SAFETY: no preconditions.
        tid_tx.send(unsafe { libc::gettid() }).unwrap();
        for job in rx {
            job();
        }
    });
    (tx, tid_rx.recv().unwrap())
}

fn run<T: Send + 'static>(w: &mpsc::Sender<Job>, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    w.send(Box::new(move || tx.send(f()).unwrap())).unwrap();
    rx.recv().unwrap()
}

fn sh(cmd: String) {
    let ok = Command::new("sh").arg("-c").arg(&cmd).status().unwrap().success();
    assert!(ok, "{cmd}");
}

fn ifindex(name: &str) -> u32 {
    let c = std::ffi::CString::new(name).unwrap();
    // SAFETY: a NUL-terminated string.
    unsafe { libc::if_nametoindex(c.as_ptr()) }
}

fn main() {
    let (a, _) = ns_worker();
    let (b, b_tid) = ns_worker();
    let b_ns = format!("/proc/{}/task/{b_tid}/ns/net", std::process::id());
    run(&a, move || {
        sh(format!(
            "ip link add va type veth peer name vb netns {b_ns} && ip addr add 10.203.0.1/24 dev va && ip link set va up"
        ))
    });
    run(&b, || sh("ip addr add 10.203.0.2/24 dev vb && ip link set vb up".into()));
    let (va, vb) = (run(&a, || ifindex("va")), run(&b, || ifindex("vb")));
    let echo = run(&b, || UdpSocket::bind("10.203.0.2:31000").unwrap());
    thread::spawn(move || {
        let mut buf = [0u8; 256];
        while let Ok((n, from)) = echo.recv_from(&mut buf) {
            let _ = echo.send_to(&buf[..n], from);
        }
    });
    let client = run(&a, || UdpSocket::bind("10.203.0.1:0").unwrap());
    client.connect("10.203.0.2:31000").unwrap();
    // Warm up ARP and caches.
    for _ in 0..1000 {
        client.send(&[0u8; 16]).unwrap();
        client.recv(&mut [0u8; 64]).unwrap();
    }

    let flows = [FlowSpec::udp_feed(1, IpAddr::V4(Ipv4Addr::new(10, 203, 0, 2)), 31000)];
    let epoch = Instant::now();
    let mut hists = [
        Histogram::<u64>::new_with_bounds(1, 1_000_000_000, 3).unwrap(),
        Histogram::new_with_bounds(1, 1_000_000_000, 3).unwrap(),
    ];
    let mut records = 0u64;
    for phase in 0..PHASES {
        let attached = phase % 2 == 1;
        // A ring large enough for a whole phase: no reservation failures to flatter the attached case.
        let opts = TcOptions { ring_bytes: 64 << 20, ..TcOptions::default() };
        let caps = attached.then(|| {
            let (f, o) = (flows.to_vec(), opts.clone());
            let ca = run(&a, move || TcCapture::attach(va, &f, &o).unwrap());
            let (f, o) = (flows.to_vec(), opts.clone());
            let cb = run(&b, move || TcCapture::attach(vb, &f, &o).unwrap());
            (ca, cb)
        });
        let rx = client.try_clone().unwrap();
        rx.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        let receiver = thread::spawn(move || {
            let mut h = Histogram::<u64>::new_with_bounds(1, 1_000_000_000, 3).unwrap();
            let mut buf = [0u8; 64];
            for _ in 0..PER_PHASE {
                let Ok(n) = rx.recv(&mut buf) else { break };
                if n >= 8 {
                    let sent = u64::from_ne_bytes(buf[..8].try_into().unwrap());
                    let now = epoch.elapsed().as_nanos() as u64;
                    h.saturating_record(now - sent);
                }
            }
            h
        });
        // Open loop: each datagram leaves at its slot, whatever the replies do.
        let start = epoch.elapsed().as_nanos() as u64;
        let gap = 1_000_000_000 / RATE_PER_S;
        for i in 0..PER_PHASE {
            let slot = start + i * gap;
            // Sleep most of the gap (the machine is shared), spin the last 100 µs.
            let now = epoch.elapsed().as_nanos() as u64;
            if slot > now + 100_000 {
                thread::sleep(Duration::from_nanos(slot - now - 100_000));
            }
            while (epoch.elapsed().as_nanos() as u64) < slot {
                std::hint::spin_loop();
            }
            let now = epoch.elapsed().as_nanos() as u64;
            client.send(&now.to_ne_bytes()).unwrap();
        }
        let h = receiver.join().unwrap();
        if let Some((mut ca, mut cb)) = caps {
            for c in [&mut ca, &mut cb] {
                while c.poll(Duration::ZERO, |_| records += 1).unwrap() > 0 {}
                assert_eq!(c.stats().unwrap().ringbuf_full, 0);
            }
            run(&a, move || drop(ca));
            run(&b, move || drop(cb));
        }
        hists[usize::from(attached)].add(&h).unwrap();
    }
    let show = |h: &Histogram<u64>| {
        format!(
            "n={} p50={} p99={} p99.9={} max={} ns",
            h.len(),
            h.value_at_quantile(0.5),
            h.value_at_quantile(0.99),
            h.value_at_quantile(0.999),
            h.max()
        )
    };
    println!("rate {RATE_PER_S}/s, {PHASES} alternating phases of {PER_PHASE} round trips");
    println!("detached: {}", show(&hists[0]));
    println!("attached: {} ({records} records: request egress on va + ingress on vb)", show(&hists[1]));
    for q in [0.5, 0.999] {
        let (d, t) = (hists[0].value_at_quantile(q) as i64, hists[1].value_at_quantile(q) as i64);
        println!("q{q}: +{} ns per round trip (4 program runs)", t - d);
    }
}
