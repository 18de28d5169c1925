//! A `wirestamp capture --source stdin` relay driven by a test: real processes, real files in a
//! temporary directory, fed a classic pcap written here by hand from its specification (24-byte header
//! with the nanosecond magic, 16-byte record headers), so that the frames expected back are the ones
//! fed, known before the capture runs.
#![allow(dead_code, reason = "each test binary uses a subset")]

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::time::{Duration, Instant};
use wirestamp_capture::CaptureReader;

pub const BIN: &str = env!("CARGO_BIN_EXE_wirestamp");

/// A fresh directory for one test's files (the test removes it).
pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wirestamp-capture-relay-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A classic pcap header: nanosecond magic (0xa1b23c4d), version 2.4, snaplen 65535, Ethernet.
pub fn pcap_header() -> Vec<u8> {
    let mut h = 0xa1b2_3c4d_u32.to_le_bytes().to_vec();
    h.extend(2u16.to_le_bytes());
    h.extend(4u16.to_le_bytes());
    for v in [0u32, 0, 65_535, 1] {
        h.extend(v.to_le_bytes());
    }
    h
}

/// One pcap record: seconds, nanoseconds, captured and wire length, the bytes.
pub fn pcap_record(ts_ns: i64, data: &[u8]) -> Vec<u8> {
    let mut r = Vec::new();
    r.extend(((ts_ns / 1_000_000_000) as u32).to_le_bytes());
    r.extend(((ts_ns % 1_000_000_000) as u32).to_le_bytes());
    r.extend((data.len() as u32).to_le_bytes());
    r.extend((data.len() as u32).to_le_bytes());
    r.extend(data);
    r
}

/// Frame `k` of a test: `len` bytes of a pattern of `k`, at a time of its own.
pub fn frame(k: usize, len: usize) -> (i64, Vec<u8>) {
    let data = (0..len).map(|i| (k * 7 + i) as u8).collect();
    (1_796_049_000_000_000_000 + k as i64 * 1_000, data)
}

/// `wirestamp capture --source stdin ARGS`, its standard input a pipe kept here.
pub fn relay(args: &[&str], out: &Path) -> (Child, ChildStdin) {
    relay_by(Command::new(BIN), args, out)
}

/// [`relay`] run by `cmd`: the wirestamp binary, or a program that runs it (`nsenter ... BIN`).
pub fn relay_by(mut cmd: Command, args: &[&str], out: &Path) -> (Child, ChildStdin) {
    let mut child = cmd
        .args(["capture", "--source", "stdin"])
        .args(args)
        .arg("-w")
        .arg(out)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pipe = child.stdin.take().unwrap();
    (child, pipe)
}

/// Waits for `child` to exit, at most `secs` (then kills it and fails).
pub fn ended(mut child: Child, secs: u64) -> Output {
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(secs) {
            child.kill().unwrap();
            panic!("capture still running after {secs} s: {:?}", child.wait_with_output().unwrap());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// Waits until `p` exists (a relay makes its `.part` once it read its stream's header).
pub fn wait_for(p: &Path) {
    let t = Instant::now();
    while !p.exists() {
        assert!(t.elapsed() < Duration::from_secs(10), "{} never made", p.display());
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Frames as (time, bytes).
pub type Frames = Vec<(i64, Vec<u8>)>;

/// The frames of a capture file, as (time, bytes), and whether every interface has a statistics block
/// (capture writes them when it completes a file).
pub fn frames(p: &Path) -> (Frames, bool) {
    let mut r = CaptureReader::open(p).unwrap();
    let mut got = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        got.push((f.ts_ns, f.data.to_vec()));
    }
    let complete = !r.interfaces().is_empty() && r.interfaces().iter().all(|i| i.recorded.is_some());
    (got, complete)
}

/// The files of `dir`, sorted by name.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

pub fn feed(pipe: &mut ChildStdin, fed: &[(i64, Vec<u8>)]) {
    for (ts, data) in fed {
        pipe.write_all(&pcap_record(*ts, data)).unwrap();
    }
    pipe.flush().unwrap();
}

/// A process holding a private mount namespace (`unshare -m`) with a small tmpfs at `at` (mounted with
/// `options`): the capture runs in it ([`SmallFs::capture`]), this test sees it through
/// `/proc/PID/root`; the tmpfs goes with the namespace when the holder ends (its standard input
/// closed: dropped, or this test's end).
pub struct SmallFs {
    holder: std::process::Child,
}

impl SmallFs {
    pub fn new(at: &Path, options: &str) -> SmallFs {
        let mut holder = Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c"])
            .arg(r#"mount -t tmpfs -o "$1" tmpfs "$0" && echo mounted && exec cat >/dev/null"#)
            .arg(at)
            .arg(options)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(holder.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line, "mounted\n", "tmpfs not mounted (root needed)");
        SmallFs { holder }
    }

    /// `wirestamp capture --source stdin ARGS -w OUT` in the namespace, its standard input a pipe.
    pub fn capture(&self, args: &[&str], out: &Path) -> (std::process::Child, std::process::ChildStdin) {
        relay_by(self.command(BIN), args, out)
    }

    /// `program` run in the namespace (the network namespace is the caller's).
    pub fn command(&self, program: &str) -> Command {
        let mut nsenter = Command::new("nsenter");
        nsenter.args(["-t", &self.holder.id().to_string(), "-m", "--", program]);
        nsenter
    }

    /// Makes `at` read-only in the namespace from now on (a read-only bind mount over it): a file the
    /// capture opened before stays writable, a name cannot be made or changed there.
    pub fn read_only(&self, at: &Path) {
        let s = self
            .command("sh")
            .arg("-c")
            .arg(r#"mount --bind "$0" "$0" && mount -o remount,ro,bind "$0""#)
            .arg(at)
            .status()
            .unwrap();
        assert!(s.success(), "{} not made read-only", at.display());
    }

    /// `p` (under `at`) as this test sees it.
    pub fn seen(&self, p: &Path) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root{}", self.holder.id(), p.display()))
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        drop(self.holder.stdin.take());
        let _ = self.holder.wait();
    }
}

/// Waits until the file `p` is at least `len` bytes long and has stopped growing (a relay flushes its
/// file every second while its input is idle: unchanged for longer, it holds every frame fed); its
/// length.
pub fn grown_to(p: &Path, len: u64) -> u64 {
    let t = Instant::now();
    let mut last = (0, Instant::now());
    loop {
        let now = std::fs::metadata(p).map_or(0, |m| m.len());
        if now != last.0 {
            last = (now, Instant::now());
        } else if now >= len && last.1.elapsed() > Duration::from_millis(1_500) {
            return now;
        }
        assert!(t.elapsed() < Duration::from_secs(15), "{}: {now} bytes, never {len} to stay", p.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}
