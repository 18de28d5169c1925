//! Latency the tc capture adds to the application's packets (issue 6, "Cost"): UDP and TCP round trips
//! (8-byte messages to an echo server; TCP_NODELAY) over a veth pair between two network namespaces at a
//! fixed open-loop rate, latency measured from each message's intended send time (so a stall counts for
//! every message behind it), with the tc programs detached and attached, in alternating phases of one run.
//! Run as root, in release:
//!
//!     cargo run --release -p wirestamp-bpf --example added_latency -- [--rate 5000] [--per-phase 20000]
//!         [--rounds 5] [--topology host,both|none] [--wake each,batched] [--drain live|none] [--proto udp,tcp]
//!         [--ring-bytes 4194304] [--pin APP_CPU,READER_CPU]
//!
//! - Topologies. `host`: the programs on the client namespace's veth end only, ingress and egress, as on a
//!   trading host that instruments its own interface: each packet crosses one program, 2 runs per round
//!   trip, and both flows record every packet. `both`: on both ends (the first version of this benchmark):
//!   each packet crosses two programs, 4 runs per round trip; the UDP flow is a feed, only its requests
//!   are recorded (at both ends: 2 records per round trip), the TCP session records every packet (4).
//! - A round is one detached phase and one attached phase per `--wake` mode (in that order in even rounds,
//!   reversed in odd ones): `each` is `wake_bytes` 0
//!   (the kernel's default: a reader wakeup for each record that finds the reader caught up, the programs'
//!   behaviour before batching), `batched` the default `TcOptions` (wake at 512 KiB of backlog, reader
//!   reads the ring every 1 ms). Each attached phase is compared with its round's detached phase, and the
//!   median over rounds is reported per round trip, per packet (the round-trip figure / 2: one request,
//!   one reply) and per program run (/ runs per round trip). The quantile of a difference is not the
//!   difference of quantiles: the per-packet p99.9 is that division, nothing more.
//! - `--drain live` (default): a thread per capture drains its ring while the app runs, as `wirestamp
//!   capture --source ebpf` does (poll with a 100 ms timeout). `none`: records wait in a 256 MiB ring
//!   until the phase ends, which is how this benchmark first ran and hides the reader's wakeups.
//! - After the rounds, one more attached phase per case with `kernel.bpf_stats_enabled` (restored after;
//!   it adds two clock reads per run) gives the programs' own ns per run (`bpftool prog show`), and
//!   BPF_PROG_TEST_RUN loops give the warm-cache cost.
//!
//! Figures (shared 2-core VM, other agents' builds running; phases' p50 drift by several µs, so
//! single differences below ~2 µs are within the noise): see `bpf/README.md`, "added latency".

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream, UdpSocket};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use wirestamp_bpf::{CaptureStats, FlowSpec, HookDirection, RECORD_SIZE, TcCapture, TcOptions, TestSkb};

const RATE_PER_S: u64 = 5_000;
const PER_PHASE: u64 = 20_000;
const ROUNDS: usize = 5;

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

/// `--pin`: the CPU of the app's threads (client, its receiver, the echo servers) and of the ring readers;
/// -1: not pinned.
static PIN_APP: AtomicI32 = AtomicI32::new(-1);
static PIN_READER: AtomicI32 = AtomicI32::new(-1);

/// Pins the calling thread to `cpu` (-1: leaves it alone).
fn pin(cpu: &AtomicI32) {
    let cpu = cpu.load(Ordering::Relaxed);
    if cpu < 0 {
        return;
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `cpu` is below CPU_SETSIZE (checked by the kernel call's result).
    unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size given; 0 = the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
    assert_eq!(rc, 0, "sched_setaffinity({cpu}): {}", std::io::Error::last_os_error());
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
        pin(&PIN_APP);
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

/// `bpftool prog show` for the tc programs: (id, name, run_time_ns, run_cnt), the counters 0 where bpftool
/// leaves them out (kernel.bpf_stats_enabled off, or no run yet).
fn prog_stats() -> Vec<(u32, String, u64, u64)> {
    let Ok(out) = Command::new("bpftool").args(["-j", "prog", "show"]).output() else { return Vec::new() };
    let text = String::from_utf8_lossy(&out.stdout);
    // A tiny scan of bpftool's JSON array of objects: "id", "name", "run_time_ns", "run_cnt" per program.
    let mut v = Vec::new();
    for obj in text.split("},{") {
        let field = |k: &str| {
            let i = obj.find(&format!("\"{k}\":"))? + k.len() + 3;
            let rest = obj[i..].trim_start_matches('"');
            Some(rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>())
        };
        let num = |k: &str| field(k).and_then(|s| s.parse::<u64>().ok());
        if let (Some(id), Some(name)) = (num("id"), field("name"))
            && name.starts_with("ws_tc_")
        {
            v.push((id as u32, name, num("run_time_ns").unwrap_or(0), num("run_cnt").unwrap_or(0)));
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

/// Where the programs run.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Topology {
    /// On the client namespace's veth end only, ingress and egress: the trading host instrumenting its
    /// own interface; each packet of a round trip crosses one program (2 runs per round trip).
    Host,
    /// On both ends, ingress and egress: each packet crosses two programs (4 runs per round trip).
    Both,
}

impl Topology {
    fn runs_per_rt(self) -> i64 {
        match self {
            Topology::Host => 2,
            Topology::Both => 4,
        }
    }
}

/// One attached variant of a round: the ring's wakeup mode.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Wake {
    /// `wake_bytes` 0: the kernel's default, a wakeup for each record that finds the reader caught up
    /// (the programs' behaviour before batching).
    Each,
    /// The default `TcOptions` (`wake_bytes` 512 KiB, `drain_interval` 1 ms).
    Batched,
}

struct Cfg {
    rate: u64,
    per_phase: u64,
    rounds: usize,
    topologies: Vec<Topology>,
    wakes: Vec<Wake>,
    /// Drain the rings while the app runs, as `wirestamp capture` does (false: records wait in a 256 MiB
    /// ring until the phase ends, as this benchmark did first, which hides the reader's wakeups).
    live_drain: bool,
    /// `TcOptions::ring_bytes` with a live drain.
    ring_bytes: u32,
    protos: Vec<Proto>,
}

fn parse_args() -> Cfg {
    let mut c = Cfg {
        rate: RATE_PER_S,
        per_phase: PER_PHASE,
        rounds: ROUNDS,
        topologies: vec![Topology::Host, Topology::Both],
        wakes: vec![Wake::Each, Wake::Batched],
        live_drain: true,
        ring_bytes: TcOptions::default().ring_bytes,
        protos: vec![Proto::Udp, Proto::Tcp],
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bad = |a: &str| -> ! {
        eprintln!("bad argument {a}; usage: [--rate N] [--per-phase N] [--rounds N] [--topology host,both]");
        eprintln!("       [--wake each,batched] [--drain live|none] [--proto udp,tcp] [--ring-bytes N]");
        eprintln!("       [--pin APP_CPU,READER_CPU]");
        std::process::exit(2)
    };
    for kv in args.chunks(2) {
        let [k, v] = kv else { bad(&kv[0]) };
        let list = || v.split(',').map(str::to_owned).collect::<Vec<_>>();
        match k.as_str() {
            "--rate" => c.rate = v.parse().unwrap_or_else(|_| bad(v)),
            "--per-phase" => c.per_phase = v.parse().unwrap_or_else(|_| bad(v)),
            "--rounds" => c.rounds = v.parse().unwrap_or_else(|_| bad(v)),
            "--topology" => {
                c.topologies = list()
                    .iter()
                    .filter_map(|t| match t.as_str() {
                        "host" => Some(Topology::Host),
                        "both" => Some(Topology::Both),
                        "none" => None, // the warm-cache figures only
                        _ => bad(t),
                    })
                    .collect()
            }
            "--wake" => {
                c.wakes = list()
                    .iter()
                    .map(|t| match t.as_str() {
                        "each" => Wake::Each,
                        "batched" => Wake::Batched,
                        _ => bad(t),
                    })
                    .collect()
            }
            "--ring-bytes" => c.ring_bytes = v.parse().unwrap_or_else(|_| bad(v)),
            "--pin" => {
                let cpus: Vec<i32> = v.split(',').map(|c| c.parse().unwrap_or_else(|_| bad(v))).collect();
                let [app, reader] = cpus[..] else { bad(v) };
                PIN_APP.store(app, Ordering::Relaxed);
                PIN_READER.store(reader, Ordering::Relaxed);
            }
            "--drain" => {
                c.live_drain = match v.as_str() {
                    "live" => true,
                    "none" => false,
                    _ => bad(v),
                }
            }
            "--proto" => {
                c.protos = list()
                    .iter()
                    .map(|t| match t.as_str() {
                        "udp" => Proto::Udp,
                        "tcp" => Proto::Tcp,
                        _ => bad(t),
                    })
                    .collect()
            }
            _ => bad(k),
        }
    }
    c
}

/// A capture being drained by its own thread, like `wirestamp capture`'s reader.
struct Drain {
    stop: Arc<AtomicBool>,
    thread: thread::JoinHandle<(u64, CaptureStats)>,
}

fn start_drain(mut cap: TcCapture, live: bool) -> Drain {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let thread = thread::spawn(move || {
        pin(&PIN_READER);
        let mut n = 0u64;
        while !s.load(Ordering::Relaxed) {
            if live {
                // The daemon's loop: a 100 ms wait (with batched wakeups, `poll` reads the ring every ms).
                cap.poll(Duration::from_millis(100), |_| n += 1).unwrap();
            } else {
                thread::sleep(Duration::from_millis(10));
            }
        }
        while cap.poll(Duration::ZERO, |_| n += 1).unwrap() > 0 {}
        let st = cap.stats().unwrap();
        drop(cap); // detaches
        (n, st)
    });
    Drain { stop, thread }
}

impl Drain {
    fn finish(self) -> (u64, CaptureStats) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// Everything the phases need.
struct Bench {
    a: mpsc::Sender<Job>,
    b: mpsc::Sender<Job>,
    va: u32,
    vb: u32,
    epoch: Instant,
}

impl Bench {
    /// Attaches as `topo` says and starts draining; the flows record every packet in `Host` (both
    /// directions of both flows), the UDP requests and both TCP directions in `Both` (as first measured).
    fn attach(&self, topo: Topology, wake: Wake, live: bool, ring_bytes: u32) -> Vec<Drain> {
        let dst = IpAddr::V4(Ipv4Addr::new(10, 203, 0, 2));
        let udp = match topo {
            Topology::Host => FlowSpec { match_src: true, ..FlowSpec::udp_feed(1, dst, 31000) },
            Topology::Both => FlowSpec::udp_feed(1, dst, 31000),
        };
        let flows = vec![udp, FlowSpec::tcp_session(2, dst, 31001)];
        let mut opts = TcOptions { ring_bytes, ..TcOptions::default() };
        if !live {
            opts.ring_bytes = 256 << 20; // a whole phase's records: no reservation failure
        }
        if wake == Wake::Each {
            opts.wake_bytes = 0;
        }
        let mut ends = vec![(self.a.clone(), self.va)];
        if topo == Topology::Both {
            ends.push((self.b.clone(), self.vb));
        }
        ends.into_iter()
            .map(|(w, idx)| {
                let (f, o) = (flows.clone(), opts.clone());
                start_drain(run(&w, move || TcCapture::attach(idx, &f, &o).unwrap()), live)
            })
            .collect()
    }
}

/// Ends the drains: (records, ring-full drops) summed over the captures.
fn finish(drains: Vec<Drain>) -> (u64, u64) {
    drains.into_iter().map(Drain::finish).fold((0, 0), |(n, f), (k, st)| (n + k, f + st.ringbuf_full))
}

fn main() {
    let cfg = parse_args();
    pin(&PIN_APP); // the sender (this thread); threads spawned from here on inherit it until they pin
    let stats_was = std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").unwrap_or_default();
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
        pin(&PIN_APP);
        let mut buf = [0u8; 256];
        while let Ok((n, from)) = echo.recv_from(&mut buf) {
            let _ = echo.send_to(&buf[..n], from);
        }
    });
    let listener = run(&b, || TcpListener::bind("10.203.0.2:31001").unwrap());
    thread::spawn(move || {
        pin(&PIN_APP);
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
    let bench = Bench { a, b, va, vb, epoch: Instant::now() };
    let (rate, per_phase) = (cfg.rate, cfg.per_phase);
    println!(
        "rate {rate}/s open loop, {} rounds of phases (detached, attached with wakeups {:?}; reversed in odd \
         rounds) of {per_phase} round trips each, rings drained {}; CPUs (-1: any) app {}, readers {}; load \
         before: {}",
        cfg.rounds,
        cfg.wakes,
        if cfg.live_drain { "live (a thread per capture, poll(100 ms))" } else { "after each phase" },
        PIN_APP.load(Ordering::Relaxed),
        PIN_READER.load(Ordering::Relaxed),
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
    let mut summary = Vec::new();
    for &topo in &cfg.topologies {
        for (proto, client) in &mut clients {
            if !cfg.protos.contains(proto) {
                continue;
            }
            let name = if *proto == Proto::Udp { "UDP" } else { "TCP" };
            let tag = format!("{name} {topo:?}");
            println!(
                "{tag}: {} program runs per round trip (2 packets: request, reply); records: {}",
                topo.runs_per_rt(),
                match (topo, *proto) {
                    (Topology::Host, _) => "every packet",
                    (Topology::Both, Proto::Udp) => "the request, once (a feed: matched as destination)",
                    (Topology::Both, Proto::Tcp) => "every packet, at both ends",
                }
            );
            // rounds[r] = (detached, [attached per wake mode])
            let mut rounds: Vec<(Histogram<u64>, Vec<Histogram<u64>>)> = Vec::new();
            let mut totals = vec![hist(); 1 + cfg.wakes.len()];
            let mut recs = vec![(0u64, 0u64); cfg.wakes.len()];
            for r in 0..cfg.rounds {
                // Phase order: detached first in even rounds, last (attached modes reversed) in odd ones, so
                // neither kind always follows the (un)loading of the programs or a given drift.
                let mut order: Vec<Option<usize>> =
                    std::iter::once(None).chain((0..cfg.wakes.len()).map(Some)).collect();
                if r % 2 == 1 {
                    order.reverse();
                }
                let mut d = hist();
                let mut att = vec![hist(); cfg.wakes.len()];
                for slot in order {
                    let Some(k) = slot else {
                        d = phase(client, bench.epoch, rate, per_phase);
                        totals[0].add(&d).unwrap();
                        continue;
                    };
                    let drains = bench.attach(topo, cfg.wakes[k], cfg.live_drain, cfg.ring_bytes);
                    let h = phase(client, bench.epoch, rate, per_phase);
                    let (n, full) = finish(drains);
                    recs[k].0 += n;
                    recs[k].1 += full;
                    totals[1 + k].add(&h).unwrap();
                    att[k] = h;
                }
                rounds.push((d, att));
            }
            println!("{tag} detached: {}", show(&totals[0]));
            for (k, wake) in cfg.wakes.iter().enumerate() {
                let rts = totals[1 + k].len().max(1);
                println!(
                    "{tag} attached, wake {wake:?}: {} ({} records, {}.{:02} per round trip, {} ring-full drops)",
                    show(&totals[1 + k]),
                    recs[k].0,
                    recs[k].0 / rts,
                    recs[k].0 % rts * 100 / rts,
                    recs[k].1
                );
            }
            for (k, wake) in cfg.wakes.iter().enumerate().filter(|_| !rounds.is_empty()) {
                // Each round's attached phase against the round's detached phase (the machine's load drifts
                // less within a round), then the median over rounds.
                let (mut d50, mut d999) = (Vec::new(), Vec::new());
                for (d, att) in &rounds {
                    let t = &att[k];
                    d50.push(q(t, 0.5) - q(d, 0.5));
                    d999.push(q(t, 0.999) - q(d, 0.999));
                    println!(
                        "{tag} wake {wake:?} round: p50 {} -> {} ns ({:+}), p99.9 {} -> {} ns ({:+})",
                        q(d, 0.5),
                        q(t, 0.5),
                        q(t, 0.5) - q(d, 0.5),
                        q(d, 0.999),
                        q(t, 0.999),
                        q(t, 0.999) - q(d, 0.999)
                    );
                }
                let (m50, m999) = (median(d50), median(d999));
                let line = format!(
                    "{tag} wake {wake:?}: median over {} rounds of (attached - detached): per round trip p50 {m50:+} ns, \
                     p99.9 {m999:+} ns; per packet (/2) p50 {:+} ns, p99.9 {:+} ns; per program run (/{}) p50 {:+} ns",
                    rounds.len(),
                    m50 / 2,
                    m999 / 2,
                    topo.runs_per_rt(),
                    m50 / topo.runs_per_rt()
                );
                println!("{line}");
                summary.push(line);
            }
            // The programs' own cost: one more attached phase (not in the figures above) with
            // kernel.bpf_stats_enabled on, which itself adds two clock reads per run.
            let wake = *cfg.wakes.last().unwrap_or(&Wake::Batched);
            let ours_before: Vec<u32> = prog_stats().iter().map(|p| p.0).collect();
            let _ = std::fs::write("/proc/sys/kernel/bpf_stats_enabled", "1");
            let drains = bench.attach(topo, wake, cfg.live_drain, cfg.ring_bytes);
            let h = phase(client, bench.epoch, rate, per_phase);
            let after = prog_stats();
            let _ = std::fs::write("/proc/sys/kernel/bpf_stats_enabled", stats_was.trim());
            finish(drains);
            let mut line = format!("{tag} wake {wake:?} own cost (bpf_stats on, {}):", show(&h));
            for (id, n, t, c) in after.iter().filter(|p| !ours_before.contains(&p.0)) {
                if let Some(per) = t.checked_div(*c) {
                    line += &format!(" {n} (id {id}) {c} runs, {per} ns/run;");
                }
            }
            println!("{line}");
            summary.push(line);
        }
    }
    println!("load after: {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim());
    let flows = [FlowSpec::udp_feed(1, IpAddr::V4(Ipv4Addr::new(10, 203, 0, 2)), 31000)];
    let warm = format!(
        "warm (BPF_PROG_TEST_RUN x 200000, bpf_stats off): matched UDP {} ns per run, unmatched UDP {} ns per run",
        warm_ns_per_run(&flows, 31000, 200_000),
        warm_ns_per_run(&flows, 9, 200_000)
    );
    println!("{warm}");
    println!("--- summary");
    for l in summary {
        println!("{l}");
    }
}
