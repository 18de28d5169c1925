//! The analyzer's fast path (plain market-data frames from their bytes) against the general path
//! (dissection, trailer check, full decode): `wirestamp analyze` with and without `--no-fast-path`
//! must write the same report, pairs, unmatched orders and interval log, byte for byte, on generated captures, on
//! captures made irregular on purpose (lost, reordered, repeated and corrupted frames) and on real
//! ones. Each case also checks how many frames the fast path took (the `--log info` line), so that
//! neither path is left unexercised.

use std::path::{Path, PathBuf};
use std::process::Command;
use wirestamp_capture::CaptureReader;
use wirestamp_lab::synth::{Container, SynthConfig, synth};
use wirestamp_testdata::{Rng, data_file};

mod support;

use support::{tmpdir, with_trailer, write_pcap};

/// What one run wrote, and how many frames it read and took through the fast path.
struct Run {
    json: String,
    pairs: String,
    unmatched: String,
    hlog: String,
    frames: u64,
    fast: u64,
    /// Market-data packets of the frames the general path took that took the plain walk.
    plain: u64,
}

fn analyze(dir: &Path, files: &[PathBuf], opts: &[&str], fast_path: bool) -> Run {
    let tag = if fast_path { "fast" } else { "general" };
    let pairs = dir.join(format!("pairs-{tag}.csv"));
    let unmatched = dir.join(format!("unmatched-{tag}.csv"));
    let hlog = dir.join(format!("run-{tag}.hlog"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wirestamp"));
    cmd.args(["--log", "info", "analyze", "-q", "--json", "--pairs"]).arg(&pairs).arg("--hlog").arg(&hlog);
    // `--unmatched` in an option set stands for the file: with it the token rule looks every order's
    // symbol up, so both setups are compared.
    let keep = opts.contains(&"--unmatched");
    if keep {
        cmd.arg("--unmatched").arg(&unmatched);
    }
    cmd.args(opts.iter().filter(|o| **o != "--unmatched")).args(files);
    if !fast_path {
        cmd.arg("--no-fast-path");
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "analyze {opts:?} {files:?}: {stderr}");
    // "... frames taken by the analyzer's fast path frames=N fast=M"
    let line =
        stderr.lines().find(|l| l.contains("fast path")).unwrap_or_else(|| panic!("no fast-path line: {stderr}"));
    let field = |k: &str| -> u64 {
        let at = line.find(&format!("{k}=")).unwrap_or_else(|| panic!("no {k}= in {line}")) + k.len() + 1;
        line[at..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    Run {
        json: String::from_utf8(out.stdout).unwrap(),
        pairs: std::fs::read_to_string(&pairs).unwrap(),
        // Removed once read, so that a run without `--unmatched` shows it wrote none.
        unmatched: match keep {
            true => {
                let text = std::fs::read_to_string(&unmatched).unwrap();
                std::fs::remove_file(&unmatched).unwrap();
                text
            }
            false => {
                assert!(!unmatched.exists(), "{opts:?}: an unmatched file without --unmatched");
                String::new()
            }
        },
        hlog: std::fs::read_to_string(&hlog).unwrap(),
        frames: field("frames"),
        fast: field("fast"),
        plain: field("plain"),
    }
}

/// Both paths on `files` under each option set: identical outputs. Returns the fast runs.
fn both_paths(dir: &Path, files: &[PathBuf], option_sets: &[&[&str]]) -> Vec<Run> {
    option_sets
        .iter()
        .map(|opts| {
            let fast = analyze(dir, files, opts, true);
            let general = analyze(dir, files, opts, false);
            assert_eq!((general.fast, general.plain), (0, 0), "--no-fast-path took the fast path");
            assert_eq!(fast.frames, general.frames);
            // Whole texts compared, so a difference names its place.
            for (what, a, b) in [
                ("report", &fast.json, &general.json),
                ("pairs", &fast.pairs, &general.pairs),
                ("unmatched", &fast.unmatched, &general.unmatched),
                ("hlog", &fast.hlog, &general.hlog),
            ] {
                if a != b {
                    let line = a.lines().zip(b.lines()).position(|(x, y)| x != y).unwrap_or(a.lines().count());
                    panic!(
                        "{what} differs for {opts:?} {files:?} at line {}: fast {:?} general {:?}",
                        line + 1,
                        a.lines().nth(line),
                        b.lines().nth(line)
                    );
                }
            }
            fast
        })
        .collect()
}

/// The frames of a clean capture's feeds that the fast path cannot take, from the report: each
/// feed's first packet (no session to continue yet), heartbeats (no message) and packets holding a
/// Stock Directory message (full decode). Returns `(feed frames, those)`.
fn feed_frames_not_plain(json: &str) -> (u64, u64) {
    let r: serde_json::Value = serde_json::from_str(json).unwrap();
    let feeds = r["feeds"].as_array().unwrap();
    let n = |f: &serde_json::Value, k: &str| f[k].as_u64().unwrap_or(0);
    let frames = feeds.iter().map(|f| n(f, "frames")).sum();
    let not_plain = feeds.iter().map(|f| 1 + n(f, "heartbeats") + n(&f["itch_types"], "R")).sum();
    (frames, not_plain)
}

fn share(r: &Run) -> f64 {
    r.fast as f64 / r.frames as f64
}

/// Each rule; `--unmatched` (the unmatched orders' file) on some, off on the default token rule.
const RULES: &[&[&str]] = &[
    &["--match", r"token:T(\d+)"],
    &["--by", "symbol", "--unmatched"],
    &["--match", "symbol:20us", "--tick-retention", "30us"],
    // Trailer decoding off: the general path's decoder then counts each frame as one without.
    &["--trailer", "none", "--match", r"token:T(\d+)", "--unmatched"],
];

fn synth_to(dir: &Path, name: &str, cfg: SynthConfig) -> PathBuf {
    let p = dir.join(name);
    synth(&cfg, &p).unwrap();
    p
}

#[test]
fn generated_captures_give_the_same_results_on_both_paths() {
    let dir = tmpdir("fastpath-synth");
    let base = SynthConfig { seed: 23, packets: 6_000, order_prob: 0.1, ..SynthConfig::default() };
    let cases = [
        ("pcapng A+B, B tagged", SynthConfig { ..base }),
        ("pcap A+B", SynthConfig { container: Container::Pcap, ..base }),
        ("one feed, tagged", SynthConfig { feed_b: false, vlan_a: Some(7), seed: 24, ..base }),
        ("bursts of up to 9 messages", SynthConfig { max_msgs: 9, burst_prob: 0.2, seed: 25, ..base }),
        // A minute of capture: 60 one-second intervals, closed by frames of either path.
        ("60 s of capture", SynthConfig { mean_gap_ns: 10_000_000, burst_prob: 0.0, seed: 26, ..base }),
    ];
    for (name, cfg) in cases {
        let cap = synth_to(&dir, "synth.cap", cfg);
        for run in both_paths(&dir, &[cap], RULES) {
            // Every market-data frame of a clean capture is plain but those the report tells apart
            // (at most: Stock Directory messages may share a packet).
            let (feed_frames, not_plain) = feed_frames_not_plain(&run.json);
            assert!(
                (feed_frames.saturating_sub(not_plain)..=feed_frames).contains(&run.fast),
                "{name}: the fast path took {} frames, expected {} to {feed_frames}",
                run.fast,
                feed_frames.saturating_sub(not_plain)
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Whether a frame is feed B's: UDP to port 26478 (synth's), tagged or not.
fn is_feed_b(f: &[u8]) -> bool {
    let ip = if f.get(12..14) == Some(&[0x81, 0x00][..]) { 18 } else { 14 };
    f.get(ip + 9) == Some(&17) && f.get(ip + 22..ip + 24) == Some(&26478u16.to_be_bytes()[..])
}

/// A capture's frames as `(time, bytes)`.
type Frames = Vec<(i64, Vec<u8>)>;

/// The frames of a synth pcap of `packets` market-data packets (orders for 10 % of them).
fn synth_frames(dir: &Path, seed: u64, packets: u64) -> Frames {
    let cfg = SynthConfig { seed, packets, order_prob: 0.1, container: Container::Pcap, ..SynthConfig::default() };
    frames_of(&synth_to(dir, "clean.pcap", cfg))
}

/// The frames of a capture.
fn frames_of(path: &Path) -> Frames {
    let mut r = CaptureReader::open(path).unwrap();
    let mut v = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        v.push((f.ts_ns, f.data.to_vec()));
    }
    v
}

#[test]
fn irregular_captures_give_the_same_results_on_both_paths() {
    let dir = tmpdir("fastpath-irregular");
    let clean = synth_frames(&dir, 31, 8_000);
    let mut rng = Rng(0x5eed_fa57);
    let mut variants: Vec<(&str, Frames)> = Vec::new();
    // Lost frames: gaps on one feed, recovered from the other, or lost on both.
    variants.push(("lost", clean.iter().filter(|_| rng.below(20) != 0).cloned().collect()));
    // Reordered: neighbours swapped (out-of-order packets, late sequences, a later copy first).
    let mut reordered = clean.clone();
    for i in 0..reordered.len() - 1 {
        if rng.below(15) == 0 {
            reordered.swap(i, i + 1);
        }
    }
    variants.push(("reordered", reordered));
    // Repeated frames: duplicate packets.
    let mut repeated = Vec::new();
    for f in &clean {
        repeated.push(f.clone());
        if rng.below(25) == 0 {
            repeated.push(f.clone());
        }
    }
    variants.push(("repeated", repeated));
    // Corrupted: bytes changed anywhere in a frame (headers, MoldUDP64 counts and lengths, ITCH
    // types), frames cut short and frames padded.
    let mut corrupted = clean.clone();
    for (_, f) in corrupted.iter_mut() {
        match rng.below(40) {
            0..=2 => {
                let at = rng.below(f.len());
                f[at] = rng.byte();
            }
            3 => f.truncate(rng.below(f.len()) + 1),
            4 => f.extend_from_slice(&[0, 0, 0, 0]),
            _ => {}
        }
    }
    variants.push(("corrupted", corrupted));
    for (name, frames) in &variants {
        let cap = dir.join(format!("{name}.pcap"));
        write_pcap(&cap, frames);
        // Also with feed B's frames in a file of their own (two taps' files, merged by time: the
        // merge offers the fast path runs of frames from either file).
        let (b, a): (Frames, Frames) = frames.iter().cloned().partition(|(_, f)| is_feed_b(f));
        let split = [dir.join(format!("{name}-a.pcap")), dir.join(format!("{name}-b.pcap"))];
        write_pcap(&split[0], &a);
        write_pcap(&split[1], &b);
        let single = both_paths(&dir, std::slice::from_ref(&cap), RULES);
        let merged = both_paths(&dir, &split, RULES);
        for (run, two) in single.iter().zip(&merged) {
            assert_eq!(two.frames, run.frames, "{name}: the two files hold the capture's frames");
            // Where the capture's times never step back the merge gives the capture's order, so the
            // fast path takes as many frames as on the single file.
            if *name != "reordered" {
                assert_eq!(two.fast, run.fast, "{name}: fast-path frames, two files");
            }
        }
        for run in single {
            // Both paths in play: the irregular frames general, most others fast. Corruption can
            // throw a feed's expected sequence far ahead (a changed high byte), after which its
            // packets are old to the tracker and all go the general way: there only some are fast.
            let least = if *name == "corrupted" { 0.01 } else { 0.3 };
            assert!((least..0.97).contains(&share(&run)), "{name}: the fast path took {:.3}", share(&run));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn real_captures_give_the_same_results_on_both_paths() {
    let dir = tmpdir("fastpath-real");
    let elk = data_file("pcap_market/elk_nasdaq.pcap");
    for run in both_paths(&dir, &[elk], &[&[], &["--by", "symbol", "--match", "symbol:1ms", "--unmatched"]]) {
        // elk_nasdaq: one feed of 2,036 MoldUDP64 packets among 2,047 frames, all plain but its
        // first and its heartbeats (no gap, no directory message, no padding).
        let (feed_frames, not_plain) = feed_frames_not_plain(&run.json);
        assert_eq!((feed_frames, run.fast), (2_036, feed_frames.saturating_sub(not_plain)), "elk_nasdaq");
    }
    let omi_dir = data_file("omi_data_packets/Nasdaq/Nasdaq.Equities.TotalView.Itch.v5.0/Multiple.Packets.pcap");
    let mut itch: Vec<PathBuf> = std::fs::read_dir(omi_dir.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    itch.sort();
    // The OMI samples, each file on its own (they repeat sequences across files) and all at once
    // (merged by time).
    for f in &itch {
        both_paths(&dir, std::slice::from_ref(f), &[&[]]);
    }
    both_paths(&dir, &itch, &[&["--by", "symbol", "--unmatched"]]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bytes_after_the_datagram_take_the_fast_path_only_where_no_trailer_fits() {
    let dir = tmpdir("fastpath-tails");
    let clean = synth_frames(&dir, 41, 5_000);
    // 4 bytes after every frame (an FCS) and 15 (the most that cannot hold a tap trailer): the
    // trailer check finds nothing, and every plain market-data frame still takes the fast path.
    // 16 bytes may be a trailer: the general path looks, and takes every frame.
    for (tail, all_plain) in [(4, true), (15, true), (16, false)] {
        let frames: Frames = clean.iter().map(|(t, f)| (*t, [f.as_slice(), &vec![0xa5; tail]].concat())).collect();
        let cap = dir.join(format!("tail{tail}.pcap"));
        write_pcap(&cap, &frames);
        for run in both_paths(&dir, &[cap], RULES) {
            let (feed_frames, not_plain) = feed_frames_not_plain(&run.json);
            if all_plain {
                assert!(
                    (feed_frames.saturating_sub(not_plain)..=feed_frames).contains(&run.fast),
                    "tail {tail}: {}",
                    run.fast
                );
            } else {
                assert_eq!(run.fast, 0, "tail {tail}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Frames stamped by a tap (an Arista 7130 / Metamako trailer on every frame, or on half of them),
/// in one file or as two taps' files merged: a market-data frame of the common shape takes the fast
/// path timed by its stamp, found without dissection; with `--trailer none` (trailers ignored) it goes
/// down the general path, whose packet still takes the plain walk, as may an unstamped frame of a
/// file whose tap showed stamps. Both give what the general path and walk give.
#[test]
fn tap_stamped_frames_take_the_fast_path_with_the_general_paths_results() {
    let dir = tmpdir("fastpath-taps");
    let clean = synth_frames(&dir, 43, 5_000);
    let mut rng = Rng(0x7a95_0001);
    // The tap's clock `ahead` of the host's, with its own jitter.
    // Each frame with whether it got a trailer.
    let mut stamped = |every: bool, ahead: i64| -> Vec<(i64, Vec<u8>, bool)> {
        clean
            .iter()
            .map(|(t, f)| match every || rng.below(2) == 0 {
                true => (*t, with_trailer(f, t + ahead + rng.below(100) as i64), true),
                false => (*t, f.clone(), false),
            })
            .collect()
    };
    // 3.2 us: the host's clock agrees with the tap's, nothing is moved. 870 s behind: the unstamped
    // frames are timed by their record times moved onto the tap's clock, by the general path.
    let cases = [
        ("every frame", true, stamped(true, 3_200)),
        ("half the frames, the host 3.2 us behind", false, stamped(false, 3_200)),
        ("half the frames, the host 870 s ahead", false, stamped(false, -870_000_000_000)),
    ];
    for ((name, every, frames), files) in cases.iter().flat_map(|c| [(c, 1), (c, 2)]) {
        let name = format!("{name}, {files} file(s)");
        let parts: Vec<Vec<(i64, Vec<u8>, bool)>> = if files == 1 {
            vec![frames.clone()]
        } else {
            // Feed B's frames apart, as a second tap's file: merged by the taps' stamps.
            let (b, a): (Vec<_>, Vec<_>) = frames.iter().cloned().partition(|(_, f, _)| is_feed_b(f));
            vec![a, b]
        };
        let caps: Vec<PathBuf> = (0..files).map(|i| dir.join(format!("tap-{i}.pcap"))).collect();
        for (cap, part) in caps.iter().zip(&parts) {
            write_pcap(cap, &part.iter().map(|(t, f, _)| (*t, f.clone())).collect::<Frames>());
        }
        let every = *every;
        for (opts, run) in RULES.iter().zip(both_paths(&dir, &caps, RULES)) {
            let (feed_frames, not_plain) = feed_frames_not_plain(&run.json);
            let least = feed_frames.saturating_sub(not_plain);
            let what = format!(
                "{name} {opts:?}: {} fast and {} plain of {feed_frames} ({not_plain} not plain)",
                run.fast, run.plain
            );
            // Every plain packet walked plainly, by one path or the other.
            assert!((least..=feed_frames).contains(&(run.fast + run.plain)), "{what}");
            let ignored = opts.contains(&"none");
            match (every, ignored) {
                // Every frame stamped: every plain market-data frame is fast.
                (true, false) => assert_eq!(run.plain, 0, "{what}"),
                // Half: the stamped ones are fast. A single file whose tap two stamps confirmed
                // sends its unstamped ones down the general path (which moves them when the host is
                // more than 1 ms off); merged files look up each interface's offset, and take them
                // fast while it moves nothing (3.2 us here). Walked plainly either way (above).
                (false, false) if files == 1 || !name.contains("3.2 us") => {
                    assert!(run.fast > least / 4 && run.plain > least / 4, "{what}")
                }
                (false, false) => assert!(run.fast > least / 4 && run.plain == 0, "{what}"),
                // Trailers ignored: a frame with one is no plain frame.
                (true, true) => assert_eq!(run.fast, 0, "{what}"),
                (false, true) => assert!(run.fast > least / 4 && run.plain > least / 4, "{what}"),
            }
            // The report says, per file, how many frames its tap stamped: every frame given a
            // trailer, unless trailers are ignored (and both paths say the same: `both_paths`).
            let json: serde_json::Value = serde_json::from_str(&run.json).unwrap();
            for (i, (cap, part)) in caps.iter().zip(&parts).enumerate() {
                let t = &json["input"]["trailers"][i];
                let n = part.len() as u64;
                let with = if ignored { 0 } else { part.iter().filter(|p| p.2).count() as u64 };
                assert_eq!(t["file"], cap.display().to_string(), "{what}");
                assert_eq!(t["mode"], if ignored { "none" } else { "auto" }, "{what}");
                let got = [&t["frames"], &t["stamped"]["metamako"], &t["no_trailer"], &t["rejected"]];
                assert_eq!(got, [n, with, n - with, 0], "{what}: file {i}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
