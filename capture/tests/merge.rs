//! Several inputs merged into one stream ordered by timestamp; ties and timestamp-less frames
//! keep file order; interface numbers unique across inputs.

mod common;

use std::path::PathBuf;

use common::build::{Ng, eth_frame, pcap_header, pcap_record};
use common::temp_path;
use wirestamp_capture::{ContainerKind, MergedReader};
use wirestamp_testdata::data_file;

fn pcap_file(name: &str, secs: &[u32]) -> PathBuf {
    let mut f = pcap_header(0xa1b2_c3d4, 1);
    for (i, s) in secs.iter().enumerate() {
        f.extend(pcap_record(*s, 0, &eth_frame(i as u8), 60));
    }
    let p = temp_path(name);
    std::fs::write(&p, f).unwrap();
    p
}

/// (input, frame tag, ts seconds) of every merged frame.
fn merged(paths: &[PathBuf]) -> (Vec<(usize, u8, Option<i64>)>, MergedReader) {
    let mut m = MergedReader::open(paths).unwrap();
    let mut out = Vec::new();
    while let Some((i, f)) = m.next_frame().unwrap() {
        out.push((i, f.data[42], f.has_ts().then_some(f.ts_ns / 1_000_000_000)));
    }
    (out, m)
}

#[test]
fn interleaved_files_merge_in_order_with_stable_ties() {
    let a = pcap_file("merge-a.pcap", &[1, 3, 5, 5]);
    let b = pcap_file("merge-b.pcap", &[2, 3, 4, 5, 6]);
    let (got, m) = merged(&[a, b]);
    let want = [
        (0, 0, Some(1)),
        (1, 0, Some(2)),
        (0, 1, Some(3)), // tie at 3 s: input 0 first
        (1, 1, Some(3)),
        (1, 2, Some(4)),
        (0, 2, Some(5)), // tie at 5 s: input 0's two frames in their order, then input 1
        (0, 3, Some(5)),
        (1, 3, Some(5)),
        (1, 4, Some(6)),
    ];
    assert_eq!(got, want);
    assert_eq!(m.interfaces().len(), 2);
    assert_eq!(m.inputs().len(), 2);
}

#[test]
fn frames_without_timestamp_follow_their_predecessor() {
    let ng = Ng { be: false };
    let mut f = ng.shb();
    f.extend(ng.idb(1, 0, &[]));
    f.extend(ng.idb(1, 0, &[ng.opt(2, b"second")]));
    f.extend(ng.epb(1, 10_000_000, &eth_frame(0), 60, &[])); // 10 s (µs units)
    f.extend(ng.spb(&eth_frame(1), 60)); // no timestamp
    f.extend(ng.epb(0, 30_000_000, &eth_frame(2), 60, &[]));
    let a = temp_path("merge-spb.pcapng");
    std::fs::write(&a, f).unwrap();
    let b = pcap_file("merge-c.pcap", &[5, 20, 25]);
    let (got, m) = merged(&[a, b]);
    assert_eq!(
        got,
        [(1, 0, Some(5)), (0, 0, Some(10)), (0, 1, None), (1, 1, Some(20)), (1, 2, Some(25)), (0, 2, Some(30))]
    );
    // Global table: 3 interfaces, ids 0..3, each pointing back to its input and local id.
    let t: Vec<(u32, usize, u32, ContainerKind)> =
        m.interfaces().iter().map(|i| (i.id, i.input, i.local_id, i.container)).collect();
    // The pcap interface is known from its file header at open; pcapng IDBs as they are read.
    assert_eq!(t, [(0, 1, 0, ContainerKind::Pcap), (1, 0, 0, ContainerKind::Pcapng), (2, 0, 1, ContainerKind::Pcapng)]);
    assert_eq!(m.interfaces()[2].name.as_deref(), Some("second"));
    assert_eq!(m.inputs()[0].interfaces()[1].input, 0);
    assert_eq!(m.inputs()[1].interfaces()[0].input, 1);
}

#[test]
fn global_interface_ids_on_real_files() {
    // The ERF copy (2 interfaces) and the pcap copy (1) of libtrace's 100 packets.
    let erf = data_file("libtrace_traces/test/traces/100_packets.erf");
    let pcap = data_file("libtrace_traces/test/traces/100_packets.pcap");
    let mut m = MergedReader::open(&[erf, pcap]).unwrap();
    let mut last = i64::MIN;
    let mut per_input = [0; 2];
    let mut seen = Vec::new();
    while let Some((i, f)) = m.next_frame().unwrap() {
        assert!(f.ts_ns >= last, "not in timestamp order");
        last = f.ts_ns;
        per_input[i] += 1;
        seen.push((i, f.interface));
    }
    assert_eq!(per_input, [100, 100]);
    let t = m.interfaces();
    assert_eq!(t.len(), 3);
    for (i, g) in seen {
        assert_eq!(t[g as usize].input, i, "frame's global interface belongs to its input");
        assert_eq!(t[g as usize].id, g);
    }
}

#[test]
fn open_error_names_the_missing_file() {
    let e = MergedReader::open(&[PathBuf::from("/nonexistent/x.pcap")]).err().unwrap();
    // No place in the file: it was never read.
    assert_eq!(e.to_string(), "/nonexistent/x.pcap: cannot open it: No such file or directory (os error 2)");
    // A directory opens, and read failed with "Is a directory (os error 21)" at byte 0.
    let dir = std::env::temp_dir();
    let e = MergedReader::open(std::slice::from_ref(&dir)).err().unwrap();
    assert_eq!(e.to_string(), format!("{}: is a directory: give the capture files in it (DIR/*.pcap)", dir.display()));
}

#[test]
fn a_failing_input_reports_once_and_the_others_go_on() {
    let ng = Ng { be: false };
    let mut f = ng.shb();
    f.extend(ng.idb(1, 0, &[]));
    f.extend(ng.epb(0, 1_500_000, &eth_frame(0), 60, &[]));
    f.extend(ng.epb(9, 2_500_000, &eth_frame(1), 60, &[])); // interface 9 does not exist
    let bad = temp_path("merge-bad.pcapng");
    std::fs::write(&bad, f).unwrap();
    let good = pcap_file("merge-good.pcap", &[1, 2, 3]);
    let mut m = MergedReader::open(&[bad.clone(), good]).unwrap();
    let mut frames = Vec::new();
    let mut errors = Vec::new();
    loop {
        match m.next_frame() {
            Ok(Some((i, f))) => frames.push((i, f.data[42])),
            Ok(None) => break,
            Err(e) => errors.push(e),
        }
    }
    assert_eq!(frames, [(1, 0), (0, 0), (1, 1), (1, 2)]);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].path, bad.display().to_string());
    assert_eq!(errors[0].frame_index, 3);
}
