//! Latency the tc capture adds to the application's packets (issue 6, "Cost"): UDP and TCP round trips
//! (8-byte messages to an echo server; TCP_NODELAY) over a veth pair between two network namespaces at a
//! fixed open-loop rate, latency measured from each message's intended send time, with the tc programs
//! detached and attached (both ends, ingress and egress: four program runs per round trip; the UDP flow is
//! a feed, its requests are recorded (2 records per round trip); the TCP flow is a session, both
//! directions are), in alternating phases of one run. Run as root, in release:
//!
//!     cargo run --release -p wirestamp-bpf --example added_latency [-- RATE PER_PHASE PHASES]
//!
//! Prints p50 / p99 / p99.9 / max per phase kind, each (detached, attached) pair's differences and their
//! median, and, with `kernel.bpf_stats_enabled` set for the run (restored after), the programs' own
//! ns per run (run_time_ns / run_cnt over the attached phases, read with `bpftool prog show`).

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream, UdpSocket};
use std::process::Command;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use wirestamp_bpf::{FlowSpec, HookDirection, RECORD_SIZE, TcCapture, TcOptions, TestSkb};

const RATE_PER_S: u64 = 20_000;
const PER_PHASE: u64 = 100_000;
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

/// Round-trip transport under test.
#[derive(Clone, Copy, PartialEq)]
enum Proto {
    Udp,
    Tcp,
}

/// Receives the next 8-byte reply; false on timeout or error.
type Recv = Box<dyn FnMut(&mut [u8; 8]) -> bool + Send>;

/// One side of a round trip as seen by the client: a sender and a receiver of 8-byte messages.
enum Client {
    Udp(UdpSocket),
    Tcp(TcpStream),
}

impl Client {
    fn send(&mut self, m: &[u8; 8]) {
        match self {
            Client::Udp(s) => drop(s.send(m).unwrap()),
            Client::Tcp(s) => s.write_all(m).unwrap(),
        }
    }

    fn receiver(&self) -> Recv {
        match self {
            Client::Udp(s) => {
                let s = s.try_clone().unwrap();
                s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
                Box::new(move |b| matches!(s.recv(b), Ok(8)))
            }
            Client::Tcp(s) => {
                let mut s = s.try_clone().unwrap();
                s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
                Box::new(move |b| s.read_exact(b).is_ok())
            }
        }
    }
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 1_000_000_000, 3).unwrap()
}

/// One phase: `per_phase` messages at `rate`/s, open loop; the latency of each is its reply's arrival minus
/// its intended send time (its slot), so a stall delays every later message's figure too.
fn phase(client: &mut Client, epoch: Instant, rate: u64, per_phase: u64) -> Histogram<u64> {
    let mut recv = client.receiver();
    let receiver = thread::spawn(move || {
        let mut h = hist();
        let mut buf = [0u8; 8];
        for _ in 0..per_phase {
            if !recv(&mut buf) {
                break;
            }
            let slot = u64::from_ne_bytes(buf);
            h.saturating_record((epoch.elapsed().as_nanos() as u64).saturating_sub(slot));
        }
        h
    });
    let start = epoch.elapsed().as_nanos() as u64 + 1_000_000;
    let gap = 1_000_000_000 / rate;
    for i in 0..per_phase {
        let slot = start + i * gap;
        // Sleep most of the gap (the machine is shared), spin the last 100 µs.
        let now = epoch.elapsed().as_nanos() as u64;
        if slot > now + 100_000 {
            thread::sleep(Duration::from_nanos(slot - now - 100_000));
        }
        while (epoch.elapsed().as_nanos() as u64) < slot {
            std::hint::spin_loop();
        }
        client.send(&slot.to_ne_bytes());
    }
    receiver.join().unwrap()
}

fn q(h: &Histogram<u64>, q: f64) -> i64 {
    h.value_at_quantile(q) as i64
}

fn show(h: &Histogram<u64>) -> String {
    format!("n={} p50={} p99={} p99.9={} max={} ns", h.len(), q(h, 0.5), q(h, 0.99), q(h, 0.999), h.max())
}

fn median(mut v: Vec<i64>) -> i64 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// `bpftool prog show` for the tc programs: with kernel.bpf_stats_enabled=1, run_time_ns and run_cnt.
fn prog_stats() -> Vec<(u64, String, u64, u64)> {
    let Ok(out) = Command::new("bpftool").args(["-j", "prog", "show"]).output() else { return Vec::new() };
    let text = String::from_utf8_lossy(&out.stdout);
    // A tiny scan of bpftool's JSON array of objects: "name", "run_time_ns", "run_cnt" per program.
    let mut v = Vec::new();
    for obj in text.split("},{") {
        let field = |k: &str| {
            let i = obj.find(&format!("\"{k}\":"))? + k.len() + 3;
            let rest = obj[i..].trim_start_matches('"');
            Some(rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>())
        };
        let num = |k: &str| field(k).and_then(|s| s.parse::<u64>().ok());
        if let (Some(id), Some(name), Some(t), Some(c)) = (num("id"), field("name"), num("run_time_ns"), num("run_cnt"))
            && name.starts_with("ws_tc_")
        {
            v.push((id, name, t, c));
        }
    }
    v
}

/// An Ethernet/IPv4/UDP frame 10.203.0.1:40000 -> 10.203.0.2:`dport` with 8 bytes of payload.
fn udp_frame(dport: u16) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0, 0, 36, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 203, 0, 1, 10, 203, 0, 2]);
    f.extend_from_slice(&40000u16.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&[0, 16, 0, 0]);
    f.extend_from_slice(&[0x5a; 8]);
    f
}

/// The program's cost with warm caches: BPF_PROG_TEST_RUN looping `n` times in the kernel on one frame
/// (wall time of the syscall / n, the test-run loop's own overhead included); a ring that holds every
/// record, so the matched case always reserves and submits.
fn warm_ns_per_run(flows: &[FlowSpec], dport: u16, n: u32) -> u64 {
    let opts = TcOptions { ring_bytes: 256 << 20, ..TcOptions::default() };
    let cap = TcCapture::load(flows, &opts).unwrap();
    let frame = udp_frame(dport);
    let t = Instant::now();
    cap.test_run_repeat(HookDirection::Egress, &frame, &TestSkb::default(), n).unwrap();
    let ns = t.elapsed().as_nanos() as u64 / u64::from(n);
    assert_eq!(cap.stats().unwrap().ringbuf_full, 0, "{n} records of {RECORD_SIZE} bytes exceed the ring");
    ns
}

fn main() {
    let arg = |i: usize, d: u64| std::env::args().nth(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let (rate, per_phase, phases) = (arg(1, RATE_PER_S), arg(2, PER_PHASE), arg(3, PHASES as u64) as usize);
    let stats_was = std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").unwrap_or_default();
    let _ = std::fs::write("/proc/sys/kernel/bpf_stats_enabled", "1");
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
    let listener = run(&b, || TcpListener::bind("10.203.0.2:31001").unwrap());
    thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_nodelay(true).unwrap();
        let mut buf = [0u8; 8];
        while s.read_exact(&mut buf).is_ok() && s.write_all(&buf).is_ok() {}
    });
    let udp = run(&a, || UdpSocket::bind("10.203.0.1:0").unwrap());
    udp.connect("10.203.0.2:31000").unwrap();
    let tcp = run(&a, || TcpStream::connect("10.203.0.2:31001").unwrap());
    tcp.set_nodelay(true).unwrap();
    let mut clients = [(Proto::Udp, Client::Udp(udp)), (Proto::Tcp, Client::Tcp(tcp))];
    // Warm up ARP and caches.
    for (_, c) in &mut clients {
        let mut recv = c.receiver();
        for _ in 0..1000 {
            c.send(&[0u8; 8]);
            assert!(recv(&mut [0u8; 8]));
        }
    }

    let dst = IpAddr::V4(Ipv4Addr::new(10, 203, 0, 2));
    let flows = [FlowSpec::udp_feed(1, dst, 31000), FlowSpec::tcp_session(2, dst, 31001)];
    let epoch = Instant::now();
    println!("rate {rate}/s, {phases} alternating phases (detached first) of {per_phase} round trips each");
    for (proto, client) in &mut clients {
        let name = if *proto == Proto::Udp { "UDP" } else { "TCP" };
        let mut total = [hist(), hist()];
        let mut per: Vec<(bool, Histogram<u64>)> = Vec::new();
        let (mut records, mut runs) = (0u64, Vec::new());
        for p in 0..phases {
            let attached = p % 2 == 1;
            // A ring large enough for a whole phase: no reservation failures to flatter the attached case.
            let opts = TcOptions { ring_bytes: 256 << 20, ..TcOptions::default() };
            let caps = attached.then(|| {
                let (f, o) = (flows.to_vec(), opts.clone());
                let ca = run(&a, move || TcCapture::attach(va, &f, &o).unwrap());
                let (f, o) = (flows.to_vec(), opts.clone());
                let cb = run(&b, move || TcCapture::attach(vb, &f, &o).unwrap());
                (ca, cb)
            });
            let before = prog_stats();
            let h = phase(client, epoch, rate, per_phase);
            if let Some((mut ca, mut cb)) = caps {
                runs.push((before, prog_stats()));
                for c in [&mut ca, &mut cb] {
                    while c.poll(Duration::ZERO, |_| records += 1).unwrap() > 0 {}
                    assert_eq!(c.stats().unwrap().ringbuf_full, 0);
                }
                run(&a, move || drop(ca));
                run(&b, move || drop(cb));
            }
            total[usize::from(attached)].add(&h).unwrap();
            per.push((attached, h));
        }
        println!("{name} detached: {}", show(&total[0]));
        println!("{name} attached: {} ({records} records)", show(&total[1]));
        // Pairs (detached phase, the attached phase after it): the machine's load drifts less within a pair.
        let (mut d50, mut d999) = (Vec::new(), Vec::new());
        for w in per.chunks(2).filter(|w| w.len() == 2) {
            let (d, t) = (&w[0].1, &w[1].1);
            d50.push(q(t, 0.5) - q(d, 0.5));
            d999.push(q(t, 0.999) - q(d, 0.999));
            println!(
                "{name} pair: p50 {} -> {} ns ({:+}), p99.9 {} -> {} ns ({:+})",
                q(d, 0.5),
                q(t, 0.5),
                q(t, 0.5) - q(d, 0.5),
                q(d, 0.999),
                q(t, 0.999),
                q(t, 0.999) - q(d, 0.999)
            );
        }
        println!(
            "{name} median of pairs: p50 {:+} ns, p99.9 {:+} ns per round trip; whole: p50 {:+} ns, p99.9 {:+} ns",
            median(d50),
            median(d999),
            q(&total[1], 0.5) - q(&total[0], 0.5),
            q(&total[1], 0.999) - q(&total[0], 0.999)
        );
        // The programs' own cost (kernel.bpf_stats_enabled): ns per run, summed over the attached phases.
        // Deltas by program id between just after attaching and the end of the phase (a program id is never
        // reused; another process's wirestamp tc programs running at the same time would count too).
        let mut own: Vec<(String, u64, u64)> = Vec::new();
        for (before, after) in &runs {
            for (id, n, t, c) in after {
                // bpftool leaves out the counters while run_cnt is 0: a program missing before starts at 0.
                let (t0, c0) = before.iter().find(|b| b.0 == *id).map_or((0, 0), |b| (b.2, b.3));
                let (dt, dc) = (t - t0, c - c0);
                match own.iter_mut().find(|o| &o.0 == n) {
                    Some(o) => {
                        o.1 += dt;
                        o.2 += dc;
                    }
                    None => own.push((n.clone(), dt, dc)),
                }
            }
        }
        for (n, t, c) in own {
            if let Some(per) = t.checked_div(c) {
                println!("{name} program {n}: {c} runs, {per} ns per run");
            }
        }
    }
    let _ = std::fs::write("/proc/sys/kernel/bpf_stats_enabled", stats_was.trim());
    let flows = [FlowSpec::udp_feed(1, IpAddr::V4(Ipv4Addr::new(10, 203, 0, 2)), 31000)];
    println!(
        "warm (BPF_PROG_TEST_RUN x 200000, bpf_stats off): matched UDP {} ns per run, unmatched UDP {} ns per run",
        warm_ns_per_run(&flows, 31000, 200_000),
        warm_ns_per_run(&flows, 9, 200_000)
    );
}
