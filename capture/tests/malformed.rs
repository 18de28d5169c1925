//! Bad input: the whole malformed corpus (tcpdump's and libpcap's test files, rusticata's
//! error cases) read without panic, hang or unbounded memory, frame counts checked against
//! capinfos; a real file cut short; and thousands of mutated files.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use wirestamp_capture::CaptureReader;
use wirestamp_testdata::{Rng, data_file, shared_data};

/// What reading one input gave.
#[derive(Debug)]
struct Outcome {
    frames: u64,
    error: Option<String>,
    warnings: usize,
}

fn read_bytes(name: &str, bytes: Vec<u8>) -> Outcome {
    match CaptureReader::from_reader(name.to_string(), Box::new(std::io::Cursor::new(bytes))) {
        Err(e) => Outcome { frames: 0, error: Some(e.to_string()), warnings: 0 },
        Ok(r) => drain(r),
    }
}

fn drain(mut r: CaptureReader) -> Outcome {
    let mut frames = 0;
    let error = loop {
        match r.next_frame() {
            Ok(Some(_)) => frames += 1,
            Ok(None) => break None,
            Err(e) => break Some(e.to_string()),
        }
    };
    Outcome { frames, error, warnings: r.warnings().len() }
}

/// Reads a file in its own thread and fails the test if it takes longer than 10 s.
fn read_bounded(path: &Path) -> Outcome {
    let (tx, rx) = mpsc::channel();
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        let out = match CaptureReader::open(&p) {
            Err(e) => Outcome { frames: 0, error: Some(e.to_string()), warnings: 0 },
            Ok(r) => drain(r),
        };
        let _ = tx.send(out);
    });
    rx.recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("{}: no result within 10 s (hang or panic)", path.display()))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() { walk(&p, out) } else { out.push(p) }
    }
}

fn corpus() -> Vec<PathBuf> {
    let d = shared_data();
    let mut files = Vec::new();
    walk(&d.join("tcpdump_tests"), &mut files);
    walk(&d.join("libpcap_tests"), &mut files);
    for e in std::fs::read_dir(d.join("rusticata_pcap_parser/assets")).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap().to_string_lossy().starts_with("err-") {
            files.push(p);
        }
    }
    files.sort();
    files
}

/// `capinfos -c -M -T -r` over the whole corpus in one run: packet count per file it reads,
/// and its complaint per file it refuses.
fn capinfos(files: &[PathBuf]) -> (BTreeMap<PathBuf, u64>, BTreeMap<PathBuf, String>) {
    let out = Command::new("capinfos").args(["-c", "-M", "-T", "-r"]).args(files).output().expect("capinfos runs");
    let mut counts = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let (f, n) = line.rsplit_once('\t').unwrap();
        counts.insert(PathBuf::from(f), n.trim().parse().unwrap());
    }
    let mut refused = BTreeMap::new();
    let err = String::from_utf8_lossy(&out.stderr);
    let mut lines = err.lines().peekable();
    while let Some(l) = lines.next() {
        if let Some(rest) = l.strip_prefix("capinfos: The file \"") {
            let f = rest.split('"').next().unwrap();
            let why = lines.peek().filter(|n| n.starts_with('(')).map(|s| s.to_string()).unwrap_or_default();
            refused.insert(PathBuf::from(f), why);
        }
    }
    (counts, refused)
}

#[test]
fn whole_malformed_corpus_reads_safely_and_agrees_with_capinfos() {
    let files = corpus();
    assert!(files.len() > 870, "corpus incomplete: {} files", files.len());
    let (counts, refused) = capinfos(&files);
    let mut disagree = Vec::new();
    let mut ours_refused = Vec::new();
    let mut total_frames = 0;
    for f in &files {
        let o = read_bounded(f);
        total_frames += o.frames;
        if let Some(e) = &o.error {
            let name = f.display().to_string();
            assert!(e.starts_with(&format!("{name}: at byte ")), "error does not name file and offset: {e}");
            ours_refused.push(f.clone());
        }
        if let Some(&n) = counts.get(f) {
            if n != o.frames || o.error.is_some() {
                disagree.push((f.file_name().unwrap().to_string_lossy().into_owned(), n, o.frames, o.error.clone()));
            }
        } else {
            let why = refused.get(f).cloned().unwrap_or_default();
            if why.contains("unknown or unsupported") {
                // Disagreement class 1: link types Wireshark has no dissector for (Juniper,
                // DSA/EDSA, Broadcom tags, ...). Not a container problem: we hand the frames on.
                assert!(o.error.is_none() && o.frames > 0, "{}: {o:?}", f.display());
            } else {
                // Files both refuse: not captures at all (LICENSE, TESTLIST...), bad versions,
                // reserved link-type bits, an option running past its block.
                assert!(o.error.is_some(), "{}: capinfos refuses ({why}) but we read {o:?}", f.display());
            }
        }
    }
    // Disagreement class 2: pcap version 2.5. Wireshark reads it; libpcap, whose test file
    // this is ("invalid version"), and we refuse versions other than 2.2-2.4.
    let names: Vec<&str> = disagree.iter().map(|d| d.0.as_str()).collect();
    assert_eq!(names, ["pcap-invalid-version-2.pcap"], "{disagree:#?}");
    assert!(disagree[0].3.as_deref().unwrap().contains("unsupported pcap version 2.5"));
    // Files capinfos reads agree one by one (all but the one above): make sure that is most of them.
    assert!(counts.len() > 800, "capinfos read only {} files", counts.len());
    assert!(total_frames > 10_000);
    // Everything we refuse is named; the refusals are the libpcap invalid-header tests, the
    // non-capture files and rusticata's bare-EPB fragment.
    let refused_names: Vec<String> =
        ours_refused.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    for expected in [
        "pcap-invalid-version-1.pcap",
        "pcap-invalid-version-2.pcap",
        "pcapng-invalid-vers-1.pcapng",
        "pcapng-invalid-vers-2.pcapng",
        "shb-option-too-long.pcapng",
        "linktype-reserved-field-not-zero.pcap",
        "err-eof.bin",
    ] {
        assert!(refused_names.iter().any(|n| n == expected), "{expected} not refused");
    }
}

#[test]
fn arista_file_cut_mid_record() {
    let path = data_file("hwts_arista7150/test.pcap");
    let mut r = CaptureReader::open(&path).unwrap();
    let mut n = 0;
    while r.next_frame().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 609);
    let w = r.warnings();
    assert_eq!(w.len(), 1);
    // Independent check of the warning: walk the record headers by hand to the cut.
    let bytes = std::fs::read(&path).unwrap();
    let mut off = 24;
    for _ in 0..609 {
        off += 16 + u32::from_le_bytes(bytes[off + 8..off + 12].try_into().unwrap()) as usize;
    }
    let need = 16 + u32::from_le_bytes(bytes[off + 8..off + 12].try_into().unwrap()) as u64;
    assert_eq!(w[0].offset, off as u64);
    assert_eq!(w[0].missing(), need - (bytes.len() - off) as u64);
    assert!(w[0].missing() > 0);
    assert!(w[0].to_string().contains("file cut short inside a record"));
}

/// Every prefix of small files of each format, then random corruptions aimed at length fields
/// (whole u32s set to extremes) and single bytes: no panic, no hang, bounded memory.
#[test]
fn truncations_and_mutations_never_panic() {
    let seeds = [
        "pcapng_test_generator/output_le/difficult/test202.pcapng",
        "pcapng_test_generator/output_be/advanced/test102.pcapng",
        "libtrace_traces/test/traces/5_packets.erf",
        "rusticata_pcap_parser/assets/modified-format.pcap",
        "pcapplusplus/Tests/Pcap++Test/PcapExamples/nanosecs_big_endian.pcap",
        "rusticata_pcap_parser/assets/err-buffertoosmall.pcapng",
    ];
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut runs = 0;
    for rel in seeds {
        let orig = std::fs::read(data_file(rel)).unwrap();
        let full = read_bytes(rel, orig.clone());
        assert!(full.error.is_none() && full.frames > 0, "{rel}: {full:?}");
        for cut in 0..orig.len() {
            let o = read_bytes(rel, orig[..cut].to_vec());
            // A prefix never yields more frames than the whole, and never an error where the
            // whole had none, except when too short to recognise at all.
            assert!(o.frames <= full.frames, "{rel} cut at {cut}");
            // At most one warning: the cut, if it falls inside a record.
            assert!(o.warnings <= 1, "{rel} cut at {cut}: {o:?}");
            if let Some(e) = &o.error {
                assert!(
                    e.contains("file too short") || e.contains("header cut short") || e.contains("unknown file format"),
                    "{rel} cut at {cut}: {e}"
                );
            }
            runs += 1;
        }
        for _ in 0..1500 {
            let mut m = orig.clone();
            for _ in 0..1 + rng.next_u64() % 3 {
                let at = (rng.next_u64() as usize) % m.len();
                if rng.next_u64().is_multiple_of(2) && at + 4 <= m.len() {
                    let v: u32 = [0, 1, 0xffff_ffff, 0x7fff_fffc, 0x1000_0000, rng.next_u64() as u32]
                        [rng.next_u64() as usize % 6];
                    m[at..at + 4].copy_from_slice(&v.to_le_bytes());
                } else {
                    m[at] ^= 1 << (rng.next_u64() % 8);
                }
            }
            let o = read_bytes(rel, m);
            if let Some(e) = o.error {
                assert!(e.starts_with(&format!("{rel}: at byte ")), "{e}");
            }
            runs += 1;
        }
    }
    assert!(runs > 10_000);
}

/// A pcap file header and a pcapng first section of an unsupported version (libpcap's test files)
/// are refused when the file is opened, alike: the pcapng one was refused only at the first read,
/// so that `analyze --json` wrote a report for the one and none for the other.
#[test]
fn a_file_of_an_unsupported_version_is_refused_when_opened() {
    for (name, why) in [
        ("pcap-invalid-version-1.pcap", "unsupported pcap version 1.4"),
        ("pcap-invalid-version-2.pcap", "unsupported pcap version 2.5"),
        ("pcapng-invalid-vers-1.pcapng", "unsupported pcapng section version 0.1"),
        ("pcapng-invalid-vers-2.pcapng", "unsupported pcapng section version 1.1"),
    ] {
        let path = data_file(&format!("libpcap_tests/tests/{name}"));
        let e = CaptureReader::open(&path).err().unwrap_or_else(|| panic!("{name} opened"));
        let want = format!("{}: at byte 0 (record 0, after 0 packets): {why} (expected", path.display());
        assert!(e.to_string().starts_with(&want), "{e}");
    }
}

/// A pcapng of nothing but interface blocks: every one is kept for the whole read, so past 65,536 the
/// input is refused at the block with a reason (1 M of them took 383 MB), after the packets before it.
#[test]
fn interface_blocks_are_bounded() {
    let ng = common::build::Ng { be: false };
    let mut f = ng.shb();
    f.extend(ng.idb(1, 65535, &[]));
    f.extend(ng.epb(0, 1, &[0u8; 60], 60, &[]));
    // Where the 65,537th interface block begins (the first came before the packet).
    let mut at = 0;
    for n in 0..65_536 {
        if n == 65_535 {
            at = f.len();
        }
        f.extend(ng.idb(1, 65535, &[]));
    }
    let mut r = CaptureReader::from_reader("idbs".into(), Box::new(std::io::Cursor::new(f))).unwrap();
    assert!(r.next_frame().unwrap().is_some());
    let e = loop {
        match r.next_frame() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("read to the end"),
            Err(e) => break e,
        }
    };
    assert_eq!(
        e.to_string(),
        format!(
            "idbs: at byte {at} (record 65538, after 1 packet): malformed pcapng IDB block: more than 65536 interface \
             blocks in the input: more than any capture has (not a capture, or a damaged one?)"
        )
    );
}
