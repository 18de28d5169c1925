//! Capture benchmark (not a test): an open-loop UDP sender at fixed rates over a veth pair between two
//! network namespaces, captured by `wirestamp capture` (afpacket, pcap, ebpf with `--md udp:ADDR_B:PORT`)
//! and by tcpdump, each writing to a file under /tmp. Prints, per rate and tool, what was sent, written
//! and dropped, the CPU time the capture process spent while the traffic flowed (sum of its threads'
//! `/proc/PID/task/*/schedstat` run time, ns, from just before the first datagram to 500 ms after the
//! last: start-up and shutdown excluded) and that per written packet, then the ebpf/afpacket ratio of CPU
//! per packet at each rate, and the highest rate each captured with zero drops. Needs root.
//!
//! What is charged where: the capture process's time covers draining, decoding and writing. The kernel
//! side of the capture (AF_PACKET's packet_rcv clone/copy, the tc program and its ring reservation) runs
//! in the sender's softirq context and is not in these figures; `added_latency` (wirestamp-bpf) measures
//! the latter on the packet path.
//!
//!   cargo build --release -p wirestamp && cargo run --release -p wirestamp --example capture_bench -- target/release/wirestamp

#[path = "../../capture/tests/netns/mod.rs"]
mod netns;

use netns::{ADDR_A, ADDR_B, VethPair};
use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RATES: [u64; 5] = [25_000, 50_000, 100_000, 200_000, 400_000];
const SECS: u64 = 1;
const PORT: u16 = 40000;

/// Sends `rate` datagrams per second for SECS seconds, paced against the clock; returns how many were sent.
fn send(sock: &UdpSocket, rate: u64) -> u64 {
    let total = rate * SECS;
    let start = Instant::now();
    let mut sent = 0;
    while sent < total {
        let due = start + Duration::from_nanos(sent * 1_000_000_000 / rate);
        while Instant::now() < due {
            std::hint::spin_loop();
        }
        if sock.send_to(&[0x5a; 100], (ADDR_B, PORT)).is_ok() {
            sent += 1;
        }
    }
    sent
}

/// CPU time (ns) that process `pid` has run so far, all threads (`/proc/PID/task/*/schedstat`, field 1).
fn cpu_ns(pid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return 0 };
    dir.filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

fn nums(line: &str) -> Vec<u64> {
    line.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).filter_map(|s| s.parse().ok()).collect()
}

fn main() {
    let bin = std::env::args().nth(1).expect("usage: capture_bench PATH/TO/wirestamp");
    let pair = VethPair::new();
    let sa = pair.a.run(|| UdpSocket::bind((ADDR_A, PORT)).unwrap());
    let _sb = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
    let tools = ["afpacket", "ebpf", "pcap", "tcpdump"];
    let mut best = [0u64; 4];
    let md = format!("udp:{ADDR_B}:{PORT}");
    println!(
        "{:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "rate", "tool", "sent", "written", "dropped", "cpu_ms", "ns/pkt"
    );
    for rate in RATES {
        let mut per_pkt = [0u64; 4];
        for (t, tool) in tools.iter().enumerate() {
            let out = format!("/tmp/wirestamp-bench-{tool}.pcap");
            let _ = std::fs::remove_file(&out);
            let (prog, args): (String, Vec<String>) = if *tool == "tcpdump" {
                (
                    "tcpdump".into(),
                    ["-i", "va", "-n", "-q", "--immediate-mode", "-w", &out, "udp port 40000"]
                        .map(String::from)
                        .to_vec(),
                )
            } else {
                // --md for ebpf (its programs select the flow), -f (a kernel BPF filter) for the others.
                let sel = if *tool == "ebpf" { ["--md", &md] } else { ["-f", "udp port 40000"] };
                (
                    bin.clone(),
                    ["capture", "-i", "va", "--source", tool, "--no-hwtstamp", sel[0], sel[1], "-w", &out]
                        .map(String::from)
                        .to_vec(),
                )
            };
            let child = pair.a.run(move || {
                Command::new(prog).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap()
            });
            std::thread::sleep(Duration::from_millis(700));
            let cpu0 = cpu_ns(child.id());
            let sent = send(&sa, rate);
            std::thread::sleep(Duration::from_millis(500));
            let cpu = cpu_ns(child.id()).saturating_sub(cpu0);
            // SAFETY: signals our own child by pid.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let err = String::from_utf8_lossy(&child.wait_with_output().unwrap().stderr).into_owned();
            let (written, dropped) = if *tool == "tcpdump" {
                // "N packets captured" / "M packets dropped by kernel"
                let get = |k: &str| err.lines().find(|l| l.contains(k)).map_or(0, |l| nums(l)[0]);
                (get("packets captured"), get("dropped by kernel"))
            } else if *tool == "ebpf" {
                // "bpf (va): M matched of S seen: R read, L lost (ring full), Q dropped (user-space queue
                // full), K still queued at exit; ..."
                let w = err.lines().find(|l| l.contains("frames written")).map_or(0, |l| nums(l)[0]);
                let l = err.lines().find(|l| l.contains("lost (ring full)")).unwrap_or("");
                let n = nums(l);
                (w, n.get(3).copied().unwrap_or(0) + n.get(4).copied().unwrap_or(0) + n.get(5).copied().unwrap_or(0))
            } else if *tool == "afpacket" {
                let l = err.lines().find(|l| l.contains("passed the filter")).unwrap_or("");
                let n = nums(l);
                (n.get(1).copied().unwrap_or(0), n.get(2).copied().unwrap_or(0))
            } else {
                let w = err.lines().find(|l| l.contains("frames written")).map_or(0, |l| nums(l)[0]);
                let l = err.lines().find(|l| l.contains("libpcap:")).unwrap_or("");
                let n = nums(l);
                (w, n.get(1).copied().unwrap_or(0) + n.get(2).copied().unwrap_or(0))
            };
            per_pkt[t] = cpu.checked_div(written).unwrap_or(0);
            println!(
                "{rate:>8} {tool:>9} {sent:>9} {written:>9} {dropped:>9} {:>9} {:>9}",
                cpu / 1_000_000,
                per_pkt[t]
            );
            if written == 0 {
                eprintln!("{tool}: nothing written; its stderr:\n{err}");
            }
            if dropped == 0 && written == sent {
                best[t] = best[t].max(rate);
            }
            let _ = std::fs::remove_file(&out);
        }
        // Same run, same rate: CPU per captured packet, ebpf over afpacket (per mille, integer).
        if let Some(r) = (per_pkt[1] * 1000).checked_div(per_pkt[0]) {
            println!("{rate:>8} ebpf/afpacket CPU per packet: {r} per mille");
        }
    }
    for (t, tool) in tools.iter().enumerate() {
        println!("highest rate with zero drops, {tool}: {} pps (of those tried)", best[t]);
    }
}
