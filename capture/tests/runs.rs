//! `CaptureReader::next_run`, the loop the analysis takes its market data through: the frames a
//! run offers, those it takes, the one it declines and those `next_frame` returns between runs are
//! the file's frames, each once and in order, with the counts a frame-by-frame read gives, across
//! buffer refills, headers in the middle, records the hot path leaves to the general one, a cut and
//! an error. `MergedReader::next_run_keyed`, the same over several inputs merged by time.

mod common;

use common::build::{Ng, pcap_header, pcap_record};
use common::written;
use wirestamp_capture::{CaptureReader, MergeKey, MergedReader, RunEnd};
use wirestamp_core::Frame;

/// Frame `i`: 60 to 250 bytes, its index in its first 4 bytes (then a pattern), so that the test
/// knows each frame it is shown.
fn frame(i: u32) -> Vec<u8> {
    let len = 60 + (i as usize * 37) % 191;
    let mut f: Vec<u8> = (0..len).map(|k| (k as u32 ^ i) as u8).collect();
    f[..4].copy_from_slice(&i.to_be_bytes());
    f
}

fn index_of(data: &[u8]) -> u32 {
    u32::from_be_bytes(data[..4].try_into().unwrap())
}

/// What a reading shows: each frame's index, whether a run took it, and its time.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    frames: Vec<(u32, i64)>,
    taken: u64,
    declined: u64,
}

/// Reads `path` in runs of at most `max` frames whose `take` declines the frames `decline` names,
/// each declined frame then read with `next_frame`. Returns what it saw, the reader's frame count and
/// how reading ended (`Ok` at the end, the error's text otherwise).
fn read_in_runs(path: &std::path::Path, max: u64, decline: impl Fn(u32) -> bool) -> (Seen, u64, Result<(), String>) {
    let mut r = CaptureReader::open(path).unwrap();
    let mut seen = Seen::default();
    let end = loop {
        let mut shown = Vec::new();
        let (n, end) = r.next_run(max, |f| {
            let i = index_of(f.data);
            shown.push((i, f.ts_ns));
            !decline(i)
        });
        seen.taken += n;
        // The frames offered, less the one declined (last), are those taken.
        let declined = matches!(end, Ok(RunEnd::Declined));
        assert_eq!(shown.len() as u64, n + u64::from(declined), "{shown:?} {end:?}");
        let last = declined.then(|| shown.pop().unwrap());
        seen.frames.extend(shown);
        match end {
            Ok(RunEnd::Max) => assert_eq!(n, max),
            Ok(RunEnd::End) => break Ok(()),
            Ok(RunEnd::Declined) => {
                let f = r.next_frame().unwrap().expect("the declined frame");
                assert_eq!(Some((index_of(f.data), f.ts_ns)), last, "next_frame gives the declined frame");
                seen.frames.push(last.unwrap());
                seen.declined += 1;
            }
            Err(e) => break Err(e.to_string()),
        }
    };
    let frames = r.stats().frames;
    // Past the end, a run and `next_frame` find nothing more.
    if end.is_ok() {
        assert!(matches!(r.next_run(max, |_| true), (0, Ok(RunEnd::End))));
        assert!(r.next_frame().unwrap().is_none());
    }
    (seen, frames, end)
}

/// The same file read frame by frame: each frame's index and time, the count, how it ended.
fn read_one_by_one(path: &std::path::Path) -> (Vec<(u32, i64)>, u64, Result<(), String>) {
    let mut r = CaptureReader::open(path).unwrap();
    let mut frames = Vec::new();
    let end = loop {
        match r.next_frame() {
            Ok(Some(f)) => frames.push((index_of(f.data), f.ts_ns)),
            Ok(None) => break Ok(()),
            Err(e) => break Err(e.to_string()),
        }
    };
    (frames, r.stats().frames, end)
}

/// A nanosecond pcap of `n` frames, frame `i` at 1,800,000,000 s + `i` µs; those `invalid` names
/// with a fraction of a second of 10^9 ns or more (the general path's: flagged, carried over).
fn pcap(n: u32, invalid: impl Fn(u32) -> bool) -> (Vec<u8>, Vec<(u32, i64)>) {
    let mut bytes = pcap_header(0xa1b2_3c4d, 1);
    let mut expected = Vec::new();
    for i in 0..n {
        let frac = if invalid(i) { 1_000_000_000 + i } else { i * 1_000 };
        bytes.extend(pcap_record(1_800_000_000, frac, &frame(i), 0));
        expected.push((i, 1_800_000_000_000_000_000 + i64::from(frac)));
    }
    (bytes, expected)
}

#[test]
fn a_run_shows_every_frame_once_in_order_across_refills_and_general_records() {
    // 6,000 frames of 60-250 bytes: about 1 MiB, four refills of the 256 KiB buffer; every 500th
    // record has an invalid fraction, which the hot path leaves to the general one.
    let (bytes, expected) = pcap(6_000, |i| i % 500 == 499);
    let path = written("runs.pcap", &bytes);
    let (one, one_count, one_end) = read_one_by_one(&path);
    assert_eq!((one.as_slice(), one_count, one_end.clone()), (expected.as_slice(), 6_000, Ok(())));
    for (max, every) in [(1, 1), (5, 7), (1024, 13), (1024, 1_000_000), (u64::MAX, 3)] {
        let (seen, count, end) = read_in_runs(&path, max, |i| i % every == every - 1);
        assert_eq!(seen.frames, expected, "max {max}, declining every {every}th");
        assert_eq!((count, end.clone()), (6_000, Ok(())), "max {max}");
        let declined = (0..6_000).filter(|i| i % every == every - 1).count() as u64;
        assert_eq!((seen.taken, seen.declined), (6_000 - declined, declined), "max {max}, every {every}");
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_run_ends_where_a_frame_by_frame_read_ends_cut_or_broken() {
    let (bytes, expected) = pcap(3_000, |_| false);
    // Cut inside record 2,000's data: 2,000 frames, then the end with the cut's warning.
    let cut_at = 24 + expected[..2_000].iter().map(|&(i, _)| 16 + frame(i).len()).sum::<usize>() + 16 + 10;
    // A record whose length runs past the 256 MiB a record may have: an error after 1,000 frames.
    let at_1000 = 24 + expected[..1_000].iter().map(|&(i, _)| 16 + frame(i).len()).sum::<usize>();
    let mut broken = bytes.clone();
    broken[at_1000 + 8..at_1000 + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    for (name, file, frames) in [("cut.pcap", bytes[..cut_at].to_vec(), 2_000), ("broken.pcap", broken, 1_000)] {
        let path = written(name, &file);
        let (one, one_count, one_end) = read_one_by_one(&path);
        assert_eq!(one, expected[..frames], "{name}");
        assert_eq!(one_end.is_err(), name == "broken.pcap", "{name}: {one_end:?}");
        for max in [1, 64, 1024] {
            let (seen, count, end) = read_in_runs(&path, max, |i| i % 11 == 0);
            assert_eq!(seen.frames, expected[..frames], "{name} max {max}");
            assert_eq!((count, &end), (one_count, &one_end), "{name} max {max}");
        }
        // What the reader says of the file at the end is the same both ways.
        let warnings = |runs: bool| {
            let mut r = CaptureReader::open(&path).unwrap();
            loop {
                let more = if runs {
                    !matches!(r.next_run(100, |_| true), (_, Ok(RunEnd::End) | Err(_)))
                } else {
                    matches!(r.next_frame(), Ok(Some(_)))
                };
                if !more {
                    break;
                }
            }
            (r.warnings().iter().map(|w| w.to_string()).collect::<Vec<_>>(), r.ended(), r.stats().records)
        };
        let (runs, one_by_one) = (warnings(true), warnings(false));
        assert_eq!(runs, one_by_one, "{name}");
        assert_eq!(runs.0.len(), usize::from(name == "cut.pcap"), "{name}: {runs:?}");
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn a_run_goes_on_through_a_pcapng_section_and_interfaces_met_in_the_middle() {
    // Two sections, the second with two interfaces (µs and ns); frames on each; the headers are the
    // general path's, read inside the run.
    let ng = Ng { be: false };
    let mut f = ng.shb();
    f.extend(ng.idb(1, 0, &[]));
    let mut expected = Vec::new();
    for i in 0..700u32 {
        f.extend(ng.epb(0, 1_800_000_000_000_000 + u64::from(i), &frame(i), 0, &[]));
        expected.push((i, 1_800_000_000_000_000_000 + i64::from(i) * 1_000));
    }
    f.extend(ng.shb());
    f.extend(ng.idb(1, 0, &[]));
    f.extend(ng.idb(1, 0, &[ng.opt(9, &[9])]));
    for i in 700..1_500u32 {
        let (iface, units, ns) = if i % 2 == 0 {
            (0, 1_800_000_001_000_000 + u64::from(i), 1_800_000_001_000_000_000 + i64::from(i) * 1_000)
        } else {
            (1, 1_800_000_001_000_000_000 + u64::from(i), 1_800_000_001_000_000_000 + i64::from(i))
        };
        f.extend(ng.epb(iface, units, &frame(i), 0, &[]));
        expected.push((i, ns));
    }
    let path = written("runs.pcapng", &f);
    let (one, one_count, one_end) = read_one_by_one(&path);
    assert_eq!((one.as_slice(), one_count, one_end), (expected.as_slice(), 1_500, Ok(())));
    for max in [3, 1024] {
        let (seen, count, end) = read_in_runs(&path, max, |i| i % 97 == 5);
        assert_eq!(seen.frames, expected, "max {max}");
        assert_eq!((count, end), (1_500, Ok(())), "max {max}");
    }
    std::fs::remove_file(&path).unwrap();
}

/// Record times as the merge's keys, with how many frames it was asked to key.
#[derive(Default)]
struct Keyed(u64);

impl MergeKey for Keyed {
    fn looks(&self, _: usize) -> bool {
        true
    }
    fn key(&mut self, _: usize, frame: &Frame<'_>) -> Option<i64> {
        self.0 += 1;
        Some(frame.ts_ns)
    }
}

#[test]
fn a_merged_run_shows_every_frame_once_in_time_order_whatever_its_input() {
    // Frame i at i us, in file i % 3 but for stretches of 40 frames in file 0 (runs of one input) and
    // the last 500 frames, file 1's alone after the others end; file 2 ends with a record running past
    // the 256 MiB a record may have (its error comes once, after its frames before it, and the others
    // go on).
    let n = 3_000u32;
    let file_of = |i: u32| match i {
        _ if i >= n - 500 => 1,
        _ if (i / 40) % 5 == 2 => 0,
        _ => (i % 3) as usize,
    };
    let mut files = vec![pcap_header(0xa1b2_3c4d, 1); 3];
    let mut expected = Vec::new();
    for i in 0..n {
        let k = file_of(i);
        files[k].extend(pcap_record(1_800_000_000, i * 1_000, &frame(i), 0));
        expected.push((k, i, 1_800_000_000_000_000_000 + i64::from(i) * 1_000));
    }
    let mut broken = pcap_record(1_800_000_000, n * 1_000, &frame(n), 0);
    broken[8..12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    files[2].extend(broken);
    let paths: Vec<_> = files.iter().enumerate().map(|(k, f)| written(&format!("merged-run-{k}.pcap"), f)).collect();
    // Frame by frame first: the same frames, and the error between them at the same place.
    let mut m = MergedReader::open(&paths).unwrap();
    let mut keys = Keyed::default();
    let (mut one, mut errors) = (Vec::new(), 0);
    loop {
        match m.next_frame_keyed(&mut keys) {
            Ok(Some((input, f))) => one.push((input, index_of(f.data), f.ts_ns)),
            Ok(None) => break,
            Err(_) => errors += 1,
        }
    }
    assert_eq!((one.as_slice(), errors, keys.0), (expected.as_slice(), 1, u64::from(n)));
    for (max, every) in [(1, 1), (5, 7), (1024, 13), (1024, 1_000_000), (u64::MAX, 3)] {
        let mut seen = Vec::new();
        let (mut taken, mut errors) = (0, 0);
        let mut m = MergedReader::open(&paths).unwrap();
        let mut keys = Keyed::default();
        loop {
            let mut shown = Vec::new();
            let (n_taken, end) = m.next_run_keyed(max, &mut keys, |_, input, f| {
                let i = index_of(f.data);
                shown.push((input, i, f.ts_ns));
                i % every != every - 1
            });
            taken += n_taken;
            // The frames offered, less the one declined (last), are those taken.
            let declined = matches!(end, Ok(RunEnd::Declined));
            assert_eq!(shown.len() as u64, n_taken + u64::from(declined), "{shown:?} {end:?}");
            let last = declined.then(|| shown.pop().unwrap());
            seen.extend(shown);
            match end {
                Ok(RunEnd::Max) => assert_eq!(n_taken, max),
                Ok(RunEnd::Declined) => {}
                Ok(RunEnd::End) => break,
                // After the frames before it; the next run goes on with the other inputs.
                Err(_) => errors += 1,
            }
            if let Some(last) = last {
                let (input, f) = m.next_frame_keyed(&mut keys).unwrap().unwrap();
                assert_eq!((input, index_of(f.data), f.ts_ns), last);
                seen.push(last);
            }
        }
        // Past the end, a run finds nothing more.
        assert!(matches!(m.next_run_keyed(max, &mut keys, |_, _, _| true), (0, Ok(RunEnd::End))));
        let declined = (0..n).filter(|i| i % every == every - 1).count() as u64;
        assert_eq!(seen, expected, "max {max}, declining every {every}th");
        assert_eq!((taken, errors), (u64::from(n) - declined, 1), "max {max}, every {every}");
        // Each frame keyed once, as frame by frame.
        assert_eq!(keys.0, u64::from(n), "max {max}");
    }
    for p in paths {
        std::fs::remove_file(p).unwrap();
    }
}
