//! Sockops TX timestamps for a TCP client that never set SO_TIMESTAMPING (needs root, Linux 6.15+):
//! the client runs as a child process in a fresh cgroup v2 (membership is process-wide) and a network
//! namespace of its own; each of its writes must yield one SCHED, one SND and one ACK event whose byte
//! ranges follow the stream, and its error queue must stay empty.

mod support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::Duration;

use support::*;
use wirestamp_bpf::{
    BpfError, FlowSpec, HookDirection, TcCapture, TcOptions, TxKind, TxTimestamping, cgroup2_mount, tai_offset_ns,
};

const WRITES: usize = 5;
const WRITE_LEN: usize = 100;
const CLIENT_ENV: &str = "WS_SOCKOPS_CLIENT";

/// A child cgroup, removed on drop (after its processes have exited).
struct Cgroup(PathBuf);

impl Cgroup {
    fn new() -> Self {
        let root = cgroup2_mount().expect("a cgroup2 mount");
        let dir = root.join(format!("wirestamp-test-{}", std::process::id()));
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        Self(dir)
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The client, run by `sockops_tx_timestamps_for_an_unmodified_client` in a child process: connects to
/// $WS_SOCKOPS_CLIENT, writes WRITES × WRITE_LEN bytes (waiting for a 1-byte answer after each), then
/// prints its local port, its SO_TIMESTAMPING setting and what its error queue holds.
#[test]
#[ignore = "helper: run in a child process by sockops_tx_timestamps_for_an_unmodified_client"]
fn sockops_client_child() {
    let addr: SocketAddr = std::env::var(CLIENT_ENV).expect("run by the parent test").parse().unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    let mut one = [0u8; 1];
    for k in 0..WRITES {
        s.write_all(&[b'0' + k as u8; WRITE_LEN]).unwrap();
        s.read_exact(&mut one).unwrap();
    }
    let mut flags: u32 = 0;
    let mut len = 4 as libc::socklen_t;
    // SAFETY: valid socket and output buffer of `len` bytes.
    let rc = unsafe {
        libc::getsockopt(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPING, (&raw mut flags).cast(), &mut len)
    };
    assert_eq!(rc, 0);
    let mut buf = [0u8; 256];
    let errq = match recv_ts(&s, &mut buf, true, Duration::from_millis(200)) {
        Ok(r) => format!("{} bytes", r.len),
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut || e.kind() == std::io::ErrorKind::WouldBlock => {
            "empty".to_string()
        }
        Err(e) => format!("error {e}"),
    };
    println!("CLIENT local_port={} so_timestamping={flags} errqueue={errq}", s.local_addr().unwrap().port());
}

fn client_line(out: &str) -> (u16, String) {
    // libtest prints "test name ... " before the helper's own output on the same line.
    let line = out.lines().find_map(|l| l.split_once("CLIENT ")).map(|(_, rest)| rest);
    let line = line.unwrap_or_else(|| panic!("client output: {out}"));
    let field = |k: &str| line.split_whitespace().find_map(|f| f.strip_prefix(k)).unwrap().to_string();
    (
        field("local_port=").parse().unwrap(),
        format!("so_timestamping={} errqueue={}", field("so_timestamping="), field("errqueue=")),
    )
}

fn run_client_in(cgroup: &Path, addr: SocketAddr) -> String {
    let procs = std::ffi::CString::new(cgroup.join("cgroup.procs").to_str().unwrap()).unwrap();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "sockops_client_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CLIENT_ENV, addr.to_string());
    // SAFETY: only async-signal-safe calls (open, write, close) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
            libc::close(fd);
            if ok { Ok(()) } else { Err(std::io::Error::last_os_error()) }
        });
    }
    let out = cmd.output().expect("client child runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "client failed: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[test]
fn sockops_tx_timestamps_for_an_unmodified_client() {
    let cg = Cgroup::new();
    let w = NsWorker::new();
    w.run(|| sh("ip link set lo up"));
    let listener = w.run(|| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap());
    let addr = listener.local_addr().unwrap();
    let flows = [FlowSpec::tcp_session(5, IpAddr::V4(Ipv4Addr::LOCALHOST), addr.port())];
    let mut tx = TxTimestamping::attach(&cg.0, &flows).expect("attach sockops");
    // The tc capture on lo sees the same writes as frames: their byte ranges must be the sockops keys.
    let tc_flows = flows.clone();
    let mut tc = w.run(move || TcCapture::attach(1, &tc_flows, &TcOptions::default())).expect("tc on lo");
    let again = TxTimestamping::attach(&cg.0, &flows).expect_err("second attach refused");
    assert!(matches!(&again, BpfError::AlreadyAttachedCgroup { program, .. } if program == "ws_sockops"), "{again}");

    let server = thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        let mut chunk = [0u8; WRITE_LEN];
        for _ in 0..WRITES {
            s.read_exact(&mut chunk).unwrap();
            got.extend_from_slice(&chunk);
            s.write_all(b"k").unwrap();
        }
        s.read_to_end(&mut got).unwrap();
        got
    });
    let cg_path = cg.0.clone();
    let out = w.run(move || run_client_in(&cg_path, addr));
    let (client_port, sock_state) = client_line(&out);
    assert_eq!(sock_state, "so_timestamping=0 errqueue=empty", "the app's socket is untouched");
    let received = server.join().unwrap();
    assert_eq!(received.len(), WRITES * WRITE_LEN);

    let tai = tai_offset_ns().unwrap();
    let mut events: Vec<(TxKind, u32, i64)> = Vec::new();
    while tx
        .poll(Duration::from_millis(100), |r| {
            if r.local().port() == client_port {
                assert_eq!((r.flow_id(), r.remote()), (5, addr), "{r:?}");
                events.push((r.kind(), r.seq(), r.epoch_ns(tai)));
            }
        })
        .unwrap()
        > 0
    {}
    let established: Vec<_> = events.iter().filter(|e| e.0 == TxKind::Established).collect();
    assert_eq!(established.len(), 1, "{events:?} {:?}", tx.stats());
    // snd_nxt at establishment is ISN + 1, the first data byte; write k ends at ISN + (k+1)·WRITE_LEN.
    let first_byte = established[0].1;
    let want: Vec<u32> = (0..WRITES).map(|k| first_byte.wrapping_add(((k + 1) * WRITE_LEN) as u32 - 1)).collect();
    let mut by_kind: BTreeMap<String, Vec<(u32, i64)>> = BTreeMap::new();
    for &(kind, seq, ts) in &events {
        by_kind.entry(format!("{kind:?}")).or_default().push((seq, ts));
    }
    for kind in ["Sched", "SndSoftware", "Ack"] {
        let seqs: Vec<u32> = by_kind.get(kind).map(|v| v.iter().map(|e| e.0).collect()).unwrap_or_default();
        assert_eq!(seqs, want, "{kind}: one per write, keyed by the write's last byte ({events:?})");
    }
    assert!(!by_kind.contains_key("SndHardware"), "no hardware stamps on loopback");
    let stages = by_kind["Sched"].iter().zip(&by_kind["SndSoftware"]).zip(&by_kind["Ack"]);
    for (k, (((_, s), (_, n)), (_, a))) in stages.enumerate() {
        assert!(s <= n && n <= a, "write {k}: sched {s} snd {n} ack {a}");
    }
    // Each SND key is the last byte of one captured egress frame of the client, stamped before it.
    let mut frames: Vec<(u32, i64)> = Vec::new();
    while tc
        .poll(Duration::from_millis(50), |r| {
            if r.direction() == HookDirection::Egress && r.src().port() == client_port && r.l4_payload_len() > 0 {
                let last = r.tcp_seq().wrapping_add(u32::from(r.l4_payload_len()) - 1);
                frames.push((last, r.epoch_ns(tai)));
            }
        })
        .unwrap()
        > 0
    {}
    assert_eq!(frames.iter().map(|f| f.0).collect::<Vec<_>>(), want, "frames' last bytes = sockops keys");
    for ((_, hook), (_, snd)) in frames.iter().zip(&by_kind["SndSoftware"]) {
        assert!(hook <= snd && snd - hook < 10_000_000, "tc egress {hook} then SND {snd}");
    }
    w.run(move || drop(tc));
    let stats = tx.stats().unwrap();
    assert_eq!(
        (stats.enabled, stats.setsockopt_failed, stats.no_kfunc, stats.ringbuf_full, stats.bad_records),
        (1, 0, 0, 0, 0)
    );
    drop(tx);
    drop(w);
}
