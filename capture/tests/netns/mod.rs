//! Test helper: anonymous network namespaces, each owned by a dedicated worker thread (namespaces
//! belong to threads; libtest runs each test on its own thread), and veth pairs between them.
//! Shared by capture and daemon tests (`#[path]`). Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and `ip`.
#![allow(dead_code)]

use std::process::Command;
use std::sync::mpsc;
use std::thread;

type Job = Box<dyn FnOnce() + Send>;

/// A thread living in its own new network namespace; closures sent to it run there.
pub struct NsWorker {
    tx: Option<mpsc::Sender<Job>>,
    tid: i32,
    handle: Option<thread::JoinHandle<()>>,
}

impl NsWorker {
    /// Spawns the thread and moves it into a fresh network namespace (with `lo` up).
    pub fn new() -> NsWorker {
        let (tx, rx) = mpsc::channel::<Job>();
        let (tid_tx, tid_rx) = mpsc::channel();
        let handle = thread::spawn(move || {
            // SAFETY: unshare affects only this thread's namespace membership; gettid has no preconditions.
            let rc = unsafe { libc::unshare(libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "unshare(CLONE_NEWNET): {} (tests need root)", std::io::Error::last_os_error());
            // SAFETY: as above.
            tid_tx.send(unsafe { libc::gettid() }).unwrap();
            for job in rx {
                job();
            }
        });
        let tid = tid_rx.recv().expect("netns worker died");
        let w = NsWorker { tx: Some(tx), tid, handle: Some(handle) };
        w.ip(&["link", "set", "lo", "up"]);
        w
    }

    /// Runs `f` on the namespace's thread and returns its result (a panic there fails the test here).
    pub fn run<R: Send + 'static>(&self, f: impl FnOnce() -> R + Send + 'static) -> R {
        let (tx, rx) = mpsc::channel();
        self.tx
            .as_ref()
            .unwrap()
            .send(Box::new(move || {
                let _ = tx.send(f());
            }))
            .unwrap();
        rx.recv().expect("closure panicked in the netns worker")
    }

    /// Spawns `f` on the namespace's thread without waiting (the worker is busy until it returns).
    pub fn spawn(&self, f: impl FnOnce() + Send + 'static) {
        self.tx.as_ref().unwrap().send(Box::new(f)).unwrap();
    }

    /// `/proc/<pid>/task/<tid>/ns/net`, for `ip link ... netns PATH`.
    pub fn ns_path(&self) -> String {
        format!("/proc/{}/task/{}/ns/net", std::process::id(), self.tid)
    }

    /// Runs `ip ARGS` in this namespace and asserts success.
    pub fn ip(&self, args: &[&str]) {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        self.run(move || {
            let out = Command::new("ip").args(&args).output().expect("ip (iproute2) not installed");
            assert!(out.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        })
    }

    /// Runs a command in this namespace (the child inherits the thread's namespace).
    pub fn command(&self, prog: &str, args: &[&str]) -> std::process::Output {
        let (prog, args): (String, Vec<String>) = (prog.into(), args.iter().map(|s| s.to_string()).collect());
        self.run(move || Command::new(prog).args(args).output().unwrap())
    }
}

impl Drop for NsWorker {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

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
