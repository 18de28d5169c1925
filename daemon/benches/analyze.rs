//! Issue 3's speed acceptance: `wirestamp analyze` end to end on a synthetic nanosecond pcap
//! (MoldUDP64/ITCH on feeds A and B plus an OUCH 5.0 session), against the capture reader alone,
//! against perf.md's floor (a hand-rolled walk with Eth/IP/UDP/MoldUDP64/ITCH-type decode, which
//! perf.md sets the goal against: >= 0.5x) and against `tshark -T fields -e frame.time_epoch`; the
//! same frames as two files, and each with a tap's trailer (as a tap appliance records them); peak
//! RSS of the command at two capture lengths.
//!
//! `cargo bench -p wirestamp --bench analyze`. A plain `main` printing a table (no harness).
//!
//! Environment:
//! - `WIRESTAMP_BENCH_PACKETS`: frames in the large capture (default 5,000,000); the small one for the
//!   memory comparison has a fifth of that (1 M by default).
//! - `WIRESTAMP_BENCH_RUNS`: runs per measurement (default 3); figures are median [min-max].
//! - `WIRESTAMP_BENCH_DIR`: where captures are generated and kept for later runs (default
//!   `target/bench-data`, never committed).
//! - `WIRESTAMP_BENCH_TSHARK`: how tshark is run: on the same file as the analysis (default; about a
//!   minute per million frames), `prefix` on its first 200,000 frames (extrapolated per frame: tshark's
//!   cost per frame is flat), or `0` not at all.
//!
//! Every run times the same file in the same order (reader, merged reader, pipeline front, full
//! analysis, the same frames as two files, tshark), and ratios are computed per run before taking
//! the median (paired).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use wirestamp::analyze::{Progress, Sinks, config, process};
use wirestamp::cli::{Cli, Command as Cmd};
use wirestamp::pipeline::Pipeline;
use wirestamp_capture::{CaptureReader, MergedReader};
use wirestamp_core::LinkType;
use wirestamp_core::analyze::Analyzer;
use wirestamp_core::dissect::{Transport, dissect};
use wirestamp_lab::synth::{Container, SynthConfig, synth};

/// Frames synth writes per market-data packet with the default model (A and B copies, noise every
/// 50 packets, orders and acks for 5 % of packets, heartbeats): measured, only used to size the input.
const FRAMES_PER_PACKET: f64 = 2.118;
/// Frames of the prefix tshark reads (it runs at about 0.07 M frames/s).
const TSHARK_FRAMES: u64 = 200_000;
const MATCH: &str = r"token:T(\d+)";

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v.replace('_', "").parse().unwrap_or_else(|_| panic!("{name}={v}: not a number")),
        Err(_) => default,
    }
}

/// A generated capture: path, frames, ground-truth pairs.
struct Input {
    path: PathBuf,
    frames: u64,
    truth_pairs: u64,
}

/// Generates (or reuses) a pcap of about `frames` frames, with synth's default of 1 to 3 ITCH
/// messages per MoldUDP64 packet.
fn input(dir: &Path, frames: u64) -> Input {
    input_with(dir, frames, SynthConfig::default().max_msgs)
}

/// [`input`] with 1 to `max_msgs` messages per packet.
fn input_with(dir: &Path, frames: u64, max_msgs: u64) -> Input {
    let packets = ((frames as f64 / FRAMES_PER_PACKET).round() as u64).max(1);
    let default = max_msgs == SynthConfig::default().max_msgs;
    let name = if default { format!("synth-{packets}") } else { format!("synth-{packets}-max{max_msgs}") };
    let path = dir.join(format!("{name}.pcap"));
    let meta = dir.join(format!("{name}.meta"));
    if let (true, Ok(m)) = (path.exists(), std::fs::read_to_string(&meta)) {
        let v: Vec<u64> = m.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        if let [frames, truth_pairs] = v[..] {
            return Input { path, frames, truth_pairs };
        }
    }
    eprintln!("generating {} ({packets} market-data packets)...", path.display());
    let t = Instant::now();
    let cfg = SynthConfig { seed: 7, packets, max_msgs, container: Container::Pcap, ..SynthConfig::default() };
    let (truth, sum) = synth(&cfg, &path).expect("synth");
    std::fs::write(&meta, format!("{} {}\n", sum.frames, truth.len())).expect("write meta");
    eprintln!("  {} frames, {} pairs, {:.1} s", sum.frames, truth.len(), t.elapsed().as_secs_f64());
    Input { path, frames: sum.frames, truth_pairs: truth.len() as u64 }
}

/// Copies the first `n` records of a classic pcap (the bench writes little-endian ns files).
fn pcap_prefix(src: &Path, dst: &Path, n: u64) -> u64 {
    let data = std::fs::read(src).expect("read capture");
    let mut off = 24;
    let mut k = 0;
    while k < n && off + 16 <= data.len() {
        let caplen = u32::from_le_bytes(data[off + 8..off + 12].try_into().unwrap()) as usize;
        off += 16 + caplen;
        k += 1;
    }
    std::fs::write(dst, &data[..off.min(data.len())]).expect("write prefix");
    k
}

/// The capture split in two as separate taps would record it: feed B's frames (UDP to port 26478)
/// in one file, every other frame in the other, each in the original order (made once, kept).
fn split_by_feed(src: &Path) -> [PathBuf; 2] {
    let name = src.file_name().unwrap().to_string_lossy();
    let out = ["a", "b"].map(|k| src.with_file_name(format!("split-{k}-of-{name}")));
    if out.iter().all(|p| p.exists()) {
        return out;
    }
    let data = std::fs::read(src).expect("read capture");
    let mut files = [data[..24].to_vec(), data[..24].to_vec()];
    let mut off = 24;
    while off + 16 <= data.len() {
        let caplen = u32::from_le_bytes(data[off + 8..off + 12].try_into().unwrap()) as usize;
        let rec = &data[off..(off + 16 + caplen).min(data.len())];
        let feed_b = matches!(dissect(&rec[16..], LinkType::Ethernet).transport, Transport::Udp { dport: 26478, .. });
        files[usize::from(feed_b)].extend_from_slice(rec);
        off += 16 + caplen;
    }
    for (p, f) in out.iter().zip(&files) {
        std::fs::write(p, f).expect("write split capture");
    }
    out
}

/// The capture as a tap appliance's port would record it: every frame followed by its FCS and an
/// Arista 7130 / Metamako trailer stamping it 2 us after its record time (made once, kept). The
/// analysis then times every frame by the tap.
fn tap_stamped(src: &Path) -> PathBuf {
    let out = src.with_file_name(format!("tapped-of-{}", src.file_name().unwrap().to_string_lossy()));
    if out.exists() {
        return out;
    }
    let data = std::fs::read(src).expect("read capture");
    let mut file = Vec::with_capacity(data.len() + data.len() / 6);
    file.extend_from_slice(&data[..24]);
    let mut off = 24;
    while off + 16 <= data.len() {
        let word = |at: usize| u32::from_le_bytes(data[off + at..off + at + 4].try_into().unwrap());
        let (sec, ns, caplen) = (word(0), word(4), word(8) as usize);
        let frame = &data[off + 16..(off + 16 + caplen).min(data.len())];
        let t = i64::from(sec) * 1_000_000_000 + i64::from(ns) + 2_000;
        let mut trailer = wirestamp_core::trailer::crc32(frame).to_le_bytes().to_vec();
        trailer.extend(((t / 1_000_000_000) as u32).to_be_bytes());
        trailer.extend(((t % 1_000_000_000) as u32).to_be_bytes());
        trailer.extend([0x01, 0x4c, 0x1c, 0x2e]);
        let len = (frame.len() + trailer.len()) as u32;
        for v in [sec, ns, len, len] {
            file.extend(v.to_le_bytes());
        }
        file.extend_from_slice(frame);
        file.extend(trailer);
        off += 16 + caplen;
    }
    std::fs::write(&out, file).expect("write tap-stamped capture");
    out
}

fn analyze_args(file: &Path) -> Vec<String> {
    ["analyze", "-q", "--match", MATCH, file.to_str().unwrap()].map(str::to_owned).to_vec()
}

/// `wirestamp analyze -q FILE`: the default rule (symbol), flows detected.
fn default_args(file: &Path) -> Vec<String> {
    ["analyze", "-q", file.to_str().unwrap()].map(str::to_owned).to_vec()
}

/// Seconds to read every frame with the single-file reader.
fn run_reader(path: &Path) -> (f64, u64) {
    let t = Instant::now();
    let mut r = CaptureReader::open(path).unwrap();
    let mut n = 0u64;
    let mut bytes = 0usize;
    while let Some(f) = r.next_frame().unwrap() {
        n += 1;
        bytes += f.data.len();
    }
    std::hint::black_box(bytes);
    (t.elapsed().as_secs_f64(), n)
}

/// Seconds to read and dissect every frame (no trailer decoding).
fn run_dissect(path: &Path) -> (f64, u64) {
    let t = Instant::now();
    let mut r = CaptureReader::open(path).unwrap();
    let mut n = 0u64;
    let mut acc = 0usize;
    while let Some(f) = r.next_frame().unwrap() {
        n += 1;
        acc = acc.wrapping_add(dissect(f.data, f.link).payload_offset);
    }
    std::hint::black_box(acc);
    (t.elapsed().as_secs_f64(), n)
}

/// Seconds to read every frame through the merged reader (what the pipeline uses, one input).
fn run_merged(path: &Path) -> (f64, u64) {
    let t = Instant::now();
    let mut r = MergedReader::open(&[path.to_path_buf()]).unwrap();
    let mut n = 0u64;
    let mut bytes = 0usize;
    while let Some((_, f)) = r.next_frame().unwrap() {
        n += 1;
        bytes += f.data.len();
    }
    std::hint::black_box(bytes);
    (t.elapsed().as_secs_f64(), n)
}

/// Seconds for the pipeline front: reader, dissection, trailer auto-detection.
fn run_front(path: &Path) -> (f64, u64) {
    let t = Instant::now();
    let mut p = Pipeline::open(&[path.to_path_buf()], &[]).unwrap();
    let mut n = 0u64;
    let mut acc = 0i64;
    while let Some(s) = p.next().unwrap() {
        n += 1;
        acc = acc.wrapping_add(s.best_time().unwrap_or(0));
    }
    std::hint::black_box(acc);
    (t.elapsed().as_secs_f64(), n)
}

/// perf.md's floor for the goal, "hand-rolled + Eth/IP/UDP/Mold/ITCH-type decode": the pcap walked
/// with `read()` into one 256 KiB buffer (as the capture reader reads), each frame's Ethernet (one
/// 802.1Q tag at most), IPv4 and UDP headers read, and in each UDP datagram holding a MoldUDP64
/// packet every message block walked and its ITCH type counted. Nothing is checked beyond bounds,
/// nothing arbitrated, correlated or recorded. Returns (seconds, frames, messages).
fn run_floor(path: &Path) -> (f64, u64, u64) {
    use std::io::Read;
    let t = Instant::now();
    let mut f = std::fs::File::open(path).unwrap();
    let mut buf = vec![0u8; 256 << 10];
    let (mut pos, mut end) = (24usize, 0usize);
    while end < 24 {
        end += f.read(&mut buf[end..]).unwrap();
    }
    assert_eq!(buf[..4], [0x4d, 0x3c, 0xb2, 0xa1], "the bench writes little-endian ns pcap");
    let (mut frames, mut messages) = (0u64, 0u64);
    let mut types = [0u64; 256];
    loop {
        let caplen = buf.get(pos + 8..pos + 12).map(|b| u32::from_le_bytes(b.try_into().unwrap()) as usize);
        let Some(d) = caplen.and_then(|c| buf.get(pos + 16..pos + 16 + c)).filter(|_| pos + 16 <= end) else {
            // Move the unread tail to the front and refill.
            buf.copy_within(pos..end, 0);
            end -= pos;
            pos = 0;
            let k = f.read(&mut buf[end..]).unwrap();
            if k == 0 {
                break;
            }
            end += k;
            continue;
        };
        let d = &d[..d.len().min(end - pos - 16)];
        pos += 16 + d.len();
        frames += 1;
        let (mut l3, mut et) = (14, d.get(12..14).map_or(0, |b| u16::from_be_bytes([b[0], b[1]])));
        if et == 0x8100 {
            (l3, et) = (18, d.get(16..18).map_or(0, |b| u16::from_be_bytes([b[0], b[1]])));
        }
        let Some(ip) = d.get(l3..l3 + 20).filter(|ip| et == 0x0800 && ip[9] == 17) else { continue };
        let udp = l3 + usize::from(ip[0] & 15) * 4;
        let Some(p) = d.get(udp + 8..).filter(|p| p.len() >= 20) else { continue };
        let count = u16::from_be_bytes([p[18], p[19]]);
        let mut at = 20;
        for _ in 0..if count == 0xffff { 0 } else { count } {
            let Some(len) = p.get(at..at + 2).map(|b| usize::from(u16::from_be_bytes([b[0], b[1]]))) else { break };
            let Some(&ty) = p.get(at + 2).filter(|_| at + 2 + len <= p.len() && len > 0) else { break };
            types[usize::from(ty)] += 1;
            messages += 1;
            at += 2 + len;
        }
    }
    std::hint::black_box(types);
    (t.elapsed().as_secs_f64(), frames, messages)
}

/// Seconds for the whole analysis, in-process, as `wirestamp analyze -q [--match token:...]` runs it
/// (report built, not printed). With the token rule, checks the matched count against the ground truth.
fn run_full(input: &Input, token: bool) -> (f64, u64, u64) {
    let argv = if token { analyze_args(&input.path) } else { default_args(&input.path) };
    run_full_argv(input, token, argv)
}

/// [`run_full`] with the token rule over `files` holding the input's frames.
fn run_full_files(input: &Input, files: &[PathBuf]) -> (f64, u64, u64) {
    let mut argv: Vec<String> = ["analyze", "-q", "--match", MATCH].map(str::to_owned).to_vec();
    argv.extend(files.iter().map(|f| f.to_str().unwrap().to_owned()));
    run_full_argv(input, true, argv)
}

fn run_full_argv(input: &Input, token: bool, argv: Vec<String>) -> (f64, u64, u64) {
    let cli = <Cli as clap::Parser>::parse_from(std::iter::once("wirestamp".to_owned()).chain(argv));
    let Cmd::Analyze(args) = cli.command else { unreachable!() };
    let t = Instant::now();
    let cfg = config(&args).unwrap();
    let mut pipe = Pipeline::open(&args.files, &args.trailer).unwrap();
    let mut analyzer = Analyzer::new(cfg);
    let out = process(&mut pipe, &mut analyzer, &mut Sinks::default(), &mut Progress::new(&args.files, true)).unwrap();
    let report = analyzer.report();
    let secs = t.elapsed().as_secs_f64();
    assert!(out.failure.is_none());
    if token {
        assert_eq!(report.counters.matched, input.truth_pairs, "matched pairs differ from synth's truth");
    } else {
        assert!(report.counters.matched > 0);
    }
    let c = &report.counters;
    (secs, out.frames, c.ticks + c.tick_copies + c.stale_copies)
}

/// What tshark reads (`WIRESTAMP_BENCH_TSHARK`).
#[derive(Clone, Copy, PartialEq)]
enum Tshark {
    /// The analysis's file, also set against `wirestamp analyze` as a whole process.
    SameFile,
    /// Its first [`TSHARK_FRAMES`] frames, extrapolated per frame.
    Prefix,
    Off,
}

/// Seconds for `tshark -T fields -e frame.time_epoch` over `path` (output discarded), or why it
/// could not run (then the bench goes on without it).
fn run_tshark(path: &Path) -> Result<f64, String> {
    let t = Instant::now();
    let out = Command::new("tshark")
        .args(["-r", path.to_str().unwrap(), "-T", "fields", "-e", "frame.time_epoch"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run tshark ({e}): scripts/setup.sh installs it"))?;
    match out.status.success() {
        true => Ok(t.elapsed().as_secs_f64()),
        false => Err(format!("tshark failed: {}", String::from_utf8_lossy(&out.stderr).trim())),
    }
}

/// What one `wirestamp analyze` process took: wall seconds, peak RSS (KiB), and CPU seconds in user
/// space and in the kernel (the kernel's part is mostly the copy of the file out of the page cache).
struct ProcessRun {
    secs: f64,
    maxrss_kib: u64,
    user_secs: f64,
    sys_secs: f64,
}

/// [`ProcessRun`] of `wirestamp analyze` on `path`.
///
/// Linux hands a child the peak RSS its parent had when it was spawned (`ru_maxrss` survives the
/// exec), and this process holds captures and analyses by now. So a fresh copy of this binary,
/// small, spawns the command and reports the child's own `ru_maxrss` (as GNU time does).
fn run_process(path: &Path) -> ProcessRun {
    let out = Command::new(std::env::current_exe().unwrap())
        .arg(RSS_CHILD)
        .args(analyze_args(path))
        .stderr(Stdio::inherit())
        .output()
        .expect("spawn the RSS helper");
    assert!(out.status.success(), "RSS helper failed");
    let text = String::from_utf8(out.stdout).unwrap();
    let v: Vec<f64> = text.split_whitespace().map(|x| x.parse().unwrap()).collect();
    ProcessRun { secs: v[0], maxrss_kib: v[1] as u64, user_secs: v[2], sys_secs: v[3] }
}

const RSS_CHILD: &str = "--rss-child";

/// The RSS helper: runs `wirestamp ARGS`, prints `seconds maxrss_kib user_seconds sys_seconds`.
fn rss_child(args: &[String]) {
    let t = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_wirestamp"))
        .args(args)
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn wirestamp");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet reaped (`child` is never waited on); the pointers are to
    // live locals. wait4 gives this child's own rusage.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(r, pid, "wait4");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "wirestamp analyze failed");
    drop(child);
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    println!("{secs} {} {} {}", ru.ru_maxrss, tv(ru.ru_utime), tv(ru.ru_stime));
}

/// Median, min, max.
fn stats(v: &[f64]) -> (f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let med = if n % 2 == 1 { s[n / 2] } else { (s[n / 2 - 1] + s[n / 2]) / 2.0 };
    (med, s[0], s[n - 1])
}

fn row(name: &str, unit: &str, v: &[f64]) {
    let (m, lo, hi) = stats(v);
    println!("{name:<80} {m:>10.3} [{lo:.3}-{hi:.3}] {unit}");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(RSS_CHILD) {
        return rss_child(&args[2..]);
    }
    // `cargo bench` passes `--bench`; a filter argument that is not ours means another bench was asked for.
    if std::env::args().skip(1).any(|a| !a.starts_with('-') && a != "analyze") {
        return;
    }
    let target_frames = env_u64("WIRESTAMP_BENCH_PACKETS", 5_000_000);
    let runs = env_u64("WIRESTAMP_BENCH_RUNS", 3).max(1) as usize;
    let mut tshark_mode = match std::env::var("WIRESTAMP_BENCH_TSHARK").unwrap_or_default().as_str() {
        "" | "1" | "full" => Tshark::SameFile,
        "prefix" => Tshark::Prefix,
        "0" => Tshark::Off,
        v => panic!("WIRESTAMP_BENCH_TSHARK={v}: expected full (the default), prefix or 0"),
    };
    let dir = std::env::var_os("WIRESTAMP_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-data"));
    std::fs::create_dir_all(&dir).unwrap();

    let big = input(&dir, target_frames);
    // perf.md's workload, from which the goal was derived, carried 0 or 1 ITCH message per frame.
    let thin = input_with(&dir, target_frames, 1);
    let small = input(&dir, target_frames / 5);
    let prefix = dir.join(format!("prefix-{TSHARK_FRAMES}-of-{}", big.path.file_name().unwrap().to_string_lossy()));
    let prefix_frames = pcap_prefix(&big.path, &prefix, TSHARK_FRAMES);
    let split = split_by_feed(&big.path);
    let tapped = tap_stamped(&big.path);
    let size = std::fs::metadata(&big.path).unwrap().len();
    println!(
        "input: {} ({} frames, {:.1} MB, avg {:.1} B/frame incl. record header; {} truth pairs); {runs} runs",
        big.path.display(),
        big.frames,
        size as f64 / 1e6,
        size as f64 / big.frames as f64,
        big.truth_pairs
    );
    // Set by scripts/pgo.sh: both sides of every ratio then come from the same profiled build.
    let build = match option_env!("WIRESTAMP_PGO") {
        Some(_) => "profile-guided (scripts/pgo.sh bench, trained on a 200,000-frame run of this bench)",
        None => "plain release (cargo bench)",
    };
    println!("build: {build}");

    let (mut reader, mut merged, mut front, mut full, mut tshark) = (vec![], vec![], vec![], vec![], vec![]);
    let mut dissected = vec![];
    let mut full_symbol = vec![];
    let (mut full_two, mut two_vs_one) = (vec![], vec![]);
    let (mut full_tapped, mut tapped_vs_plain) = (vec![], vec![]);
    let (mut full_vs_reader, mut full_vs_tshark, mut process_vs_tshark) = (vec![], vec![], vec![]);
    let (mut floor, mut full_vs_floor) = (vec![], vec![]);
    let mut full_messages = vec![];
    let (mut full_thin, mut floor_thin, mut thin_vs_floor) = (vec![], vec![], vec![]);
    let mut per_frame_messages = 0.0;
    for _ in 0..runs {
        let mpps = |(s, n): (f64, u64)| {
            assert_eq!(n, big.frames);
            n as f64 / s / 1e6
        };
        let r = mpps(run_reader(&big.path));
        let m = mpps(run_merged(&big.path));
        dissected.push(mpps(run_dissect(&big.path)));
        let f = mpps(run_front(&big.path));
        let (secs, n, messages) = run_full(&big, true);
        let a = mpps((secs, n));
        full_messages.push(messages as f64 / secs / 1e6);
        per_frame_messages = messages as f64 / n as f64;
        let (secs, n, floor_messages) = run_floor(&big.path);
        // The floor walks the same messages analyze arbitrates (both feeds' copies).
        assert_eq!(floor_messages, messages, "the floor and analyze disagree on the messages");
        let fl = mpps((secs, n));
        floor.push(fl);
        full_vs_floor.push(a / fl);
        let (secs, n, _) = run_full(&big, false);
        full_symbol.push(mpps((secs, n)));
        let (secs, n, two_messages) = run_full_files(&big, &split);
        assert_eq!(two_messages, messages, "the split capture holds the same messages");
        let two = mpps((secs, n));
        full_two.push(two);
        two_vs_one.push(two / a);
        let (secs, n, tapped_messages) = run_full_files(&big, std::slice::from_ref(&tapped));
        assert_eq!(tapped_messages, messages, "the tap-stamped capture holds the same messages");
        let tap = mpps((secs, n));
        full_tapped.push(tap);
        tapped_vs_plain.push(tap / a);
        let (secs, n, thin_messages) = run_full(&thin, true);
        assert_eq!(n, thin.frames);
        let th = n as f64 / secs / 1e6;
        let (secs, n, floor_messages) = run_floor(&thin.path);
        assert_eq!((n, floor_messages), (thin.frames, thin_messages), "the floor and analyze disagree");
        let thin_floor = n as f64 / secs / 1e6;
        full_thin.push(th);
        floor_thin.push(thin_floor);
        thin_vs_floor.push(th / thin_floor);
        reader.push(r);
        merged.push(m);
        front.push(f);
        full.push(a);
        full_vs_reader.push(a / r);
        // The same file, and `wirestamp analyze` on it as a process too: both whole processes; or
        // the prefix, extrapolated (tshark's cost per frame is flat: perf.md §5/6, 1 M and 5 M agree).
        if tshark_mode != Tshark::Off {
            let on_prefix = tshark_mode == Tshark::Prefix;
            let (path, frames) = if on_prefix { (&prefix, prefix_frames) } else { (&big.path, big.frames) };
            match run_tshark(path) {
                Ok(s) => {
                    let t = frames as f64 / s / 1e6;
                    tshark.push(t);
                    full_vs_tshark.push(a / t);
                    if !on_prefix {
                        let p = run_process(&big.path);
                        process_vs_tshark.push(big.frames as f64 / p.secs / 1e6 / t);
                    }
                }
                Err(why) => {
                    eprintln!("no tshark figures: {why}");
                    tshark_mode = Tshark::Off;
                }
            }
        }
    }
    println!("\nthroughput, M frames/s, median [min-max] of {runs} (in-process, file in page cache)");
    row("capture reader alone (CaptureReader::next_frame)", "Mpps", &reader);
    row("merged reader (MergedReader, 1 input; not used for one file)", "Mpps", &merged);
    row("reader + dissect", "Mpps", &dissected);
    row("pipeline front (reader + dissect + trailer auto)", "Mpps", &front);
    row("full analyze, --match token (+ classify, decode, arbitrate, correlate, record)", "Mpps", &full);
    row("full analyze, default rule (symbol)", "Mpps", &full_symbol);
    // perf.md's workload, from which the goal was derived, carried 0 or 1 ITCH message per frame.
    row(
        &format!("full analyze, --match token, ITCH messages (both feeds' copies, {per_frame_messages:.2} per frame)"),
        "M/s",
        &full_messages,
    );
    row("full analyze, --match token, as two files (feed B apart; merged reader)", "Mpps", &full_two);
    row("full analyze, --match token, a Metamako trailer on every frame (timed by the tap)", "Mpps", &full_tapped);
    row("floor: hand-rolled walk + Eth/IP/UDP/MoldUDP64/ITCH-type decode (perf.md's)", "Mpps", &floor);
    let thin_name = format!("one ITCH message per MoldUDP64 packet ({} frames)", thin.frames);
    row(&format!("full analyze, --match token, {thin_name}"), "Mpps", &full_thin);
    row(&format!("floor, {thin_name}"), "Mpps", &floor_thin);
    let tshark_input = match tshark_mode {
        Tshark::Prefix => format!("its {prefix_frames}-frame prefix, extrapolated"),
        Tshark::SameFile | Tshark::Off => "the same file, as a process".to_owned(),
    };
    if !tshark.is_empty() {
        row(&format!("tshark -T fields -e frame.time_epoch ({tshark_input})"), "Mpps", &tshark);
    }
    println!("\nper frame, ns (from the medians)");
    for (name, v) in [
        ("reader", &reader),
        ("merged reader", &merged),
        ("reader + dissect", &dissected),
        ("front", &front),
        ("full", &full),
        ("floor", &floor),
    ] {
        println!("{name:<80} {:>10.1} ns", 1e3 / stats(v).0);
    }
    println!("\nratios (paired per run)");
    row("full analyze / reader alone", "x", &full_vs_reader);
    row("full analyze / floor (perf.md's goal: >= 0.5, stretch 0.75)", "x", &full_vs_floor);
    row("full analyze / floor, one message per packet", "x", &thin_vs_floor);
    row("full analyze as two files / as one", "x", &two_vs_one);
    row("full analyze with tap trailers / without", "x", &tapped_vs_plain);
    if !full_vs_tshark.is_empty() {
        row(&format!("full analyze / tshark -T fields (tshark on {tshark_input})"), "x", &full_vs_tshark);
    }
    if !process_vs_tshark.is_empty() {
        row("`wirestamp analyze` / tshark -T fields, the same file, both whole processes", "x", &process_vs_tshark);
    }

    println!("\n`wirestamp analyze -q --match '{MATCH}'` as a process (wall time includes start-up)");
    // CPU times are counted in scheduler ticks (4 ms here): split for the large capture only.
    for (inp, cpu_split) in [(&small, false), (&big, true)] {
        let (mut rss, mut rate, mut user, mut sys) = (vec![], vec![], vec![], vec![]);
        for _ in 0..runs {
            let p = run_process(&inp.path);
            let per_frame = |s: f64| s * 1e9 / inp.frames as f64;
            rss.push(p.maxrss_kib as f64 / 1024.0);
            rate.push(inp.frames as f64 / p.secs / 1e6);
            user.push(per_frame(p.user_secs));
            sys.push(per_frame(p.sys_secs));
        }
        row(&format!("peak RSS, {} frames", inp.frames), "MiB", &rss);
        row(&format!("whole process, {} frames", inp.frames), "Mpps", &rate);
        // Where a frame's time goes: 20 M frames/s leaves 50 ns for both.
        if !cpu_split {
            continue;
        }
        row(&format!("  CPU in user space per frame, {} frames", inp.frames), "ns", &user);
        row(&format!("  CPU in the kernel per frame (reading the file), {} frames", inp.frames), "ns", &sys);
    }
}
