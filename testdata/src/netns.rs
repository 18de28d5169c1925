//! Network namespaces for tests: each owned by a dedicated worker thread (namespaces belong to threads,
//! and libtest runs each test on its own thread). Shared by the bpf, capture and daemon tests. Needs root
//! (CAP_SYS_ADMIN, CAP_NET_ADMIN) and `ip` (iproute2).

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

// No `Default`: creating one spawns a thread and a namespace, which a default value should not do.
#[allow(clippy::new_without_default)]
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
