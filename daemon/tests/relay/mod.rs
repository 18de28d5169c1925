//! A `wirestamp capture --source stdin` relay driven by a test: real processes, real files in a
//! temporary directory, fed a classic pcap written here by hand from its specification (24-byte header
//! with the nanosecond magic, 16-byte record headers), so that the frames expected back are the ones
//! fed, known before the capture runs.
#![allow(dead_code, reason = "each test binary uses a subset")]

use std::io::Write;
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
