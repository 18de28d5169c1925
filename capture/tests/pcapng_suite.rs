//! hadrielk's pcapng conformance suite (the one Wireshark's tests use), little- and big-endian:
//! every file read exactly as its `.txt` describes (packet, interface, section and skipped-block
//! counts), and every frame equal to tshark's (timestamp, interface, lengths, link type).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{assert_same_as_tshark, read_all};
use wirestamp_capture::Container;
use wirestamp_core::LinkType;
use wirestamp_testdata::{shared_data, tshark_fields};

/// "Block counts" of a `.txt`: block name -> count.
fn block_counts(txt: &Path) -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(txt).unwrap();
    let mut out = BTreeMap::new();
    let mut in_counts = false;
    for line in text.lines() {
        if line.starts_with("Block counts:") {
            in_counts = true;
        } else if in_counts {
            let Some((name, n)) = line.trim().split_once(": ") else { break };
            out.insert(name.to_string(), n.parse().unwrap());
        }
    }
    // The sequence line must agree with the counts (a check on this parser).
    let seq = text.lines().find_map(|l| l.strip_prefix("Block sequence: ")).unwrap();
    let total: u64 = out.values().sum();
    assert_eq!(seq.split(", ").count() as u64, total, "{}", txt.display());
    out
}

fn suite_files(order: &str) -> Vec<PathBuf> {
    let root = shared_data().join("pcapng_test_generator").join(order);
    let mut files = Vec::new();
    for dir in ["basic", "advanced", "difficult"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "pcapng") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

fn check_suite(order: &str) {
    let files = suite_files(order);
    assert_eq!(files.len(), 24, "{order}: expected 18 basic + 3 advanced + 3 difficult files");
    let mut total_frames = 0;
    for path in &files {
        let counts = block_counts(&path.with_extension("txt"));
        let n = |k: &str| counts.get(k).copied().unwrap_or(0);
        let r = assert_same_as_tshark(path);
        assert_eq!(r.container, Container::Pcapng);
        let name = path.display();
        let stats = r.reader.stats();
        assert_eq!(r.rows.len() as u64, n("EPB") + n("SPB") + n("PB"), "{name}: packets");
        assert_eq!(r.rows.iter().filter(|x| x.ts_ns.is_none()).count() as u64, n("SPB"), "{name}: SPBs");
        assert_eq!(r.interfaces.len() as u64, n("IDB"), "{name}: interfaces");
        assert_eq!(stats.sections as u64, n("SHB"), "{name}: sections");
        let skipped = |k: &str| stats.skipped.get(k).copied().unwrap_or(0);
        assert_eq!(skipped("pcapng ISB"), n("ISB"), "{name}: ISBs");
        assert_eq!(skipped("pcapng NRB"), n("NRB"), "{name}: NRBs");
        assert_eq!(skipped("pcapng custom block"), n("CB") + n("DCB"), "{name}: CB/DCB");
        assert_eq!(stats.records, counts.values().sum::<u64>(), "{name}: every block accounted for");
        assert!(r.reader.warnings().is_empty());
        // Link types: tshark's first protocol layer per frame (custom blocks, listed by tshark
        // as "data" frames without interface, are not packets and are dropped).
        let protos: Vec<String> = tshark_fields(path, &[], &["frame.interface_id", "frame.protocols"])
            .into_iter()
            .filter(|row| !row[0].is_empty())
            .map(|row| row[1].split(':').next().unwrap().to_string())
            .collect();
        let mut reader = wirestamp_capture::CaptureReader::open(path).unwrap();
        let mut i = 0;
        while let Some(f) = reader.next_frame().unwrap() {
            let want = match f.link {
                LinkType::Ethernet => "eth",
                LinkType::Null => "null",
                other => panic!("{name}: link type {other:?} not expected in the suite"),
            };
            assert_eq!(protos[i], want, "{name}: frame {} link type", i + 1);
            i += 1;
        }
        total_frames += r.rows.len();
    }
    // Independent total: EPB+SPB of the .txt files, added by hand: basic 001 4, 004 4, 005 4,
    // 006 5, 007 1, 008 4, 009 2, 010 4, 011 4, 012 4, 016 4, 018 4 (= 44); advanced 100 5, 101 4,
    // 102 5 (= 14); difficult 201 4, 202 8 (= 12).
    assert_eq!(total_frames, 70);
}

#[test]
fn conformance_suite_little_endian() {
    check_suite("output_le");
}

#[test]
fn conformance_suite_big_endian() {
    check_suite("output_be");
}

#[test]
fn interface_names_and_options_of_test008() {
    // "2 IDBs with all options": names, descriptions, if_tsresol = 9 on one of them, as tshark shows.
    for order in ["output_le", "output_be"] {
        let path = shared_data().join(format!("pcapng_test_generator/{order}/basic/test008.pcapng"));
        let r = read_all(&path);
        let theirs = tshark_fields(&path, &[], &["frame.interface_name", "frame.interface_description"]);
        let mut reader = wirestamp_capture::CaptureReader::open(&path).unwrap();
        let mut i = 0;
        while let Some(f) = reader.next_frame().unwrap() {
            let row = f.interface as usize;
            let iface = &reader.interfaces()[row];
            assert_eq!(iface.name.as_deref().unwrap_or(""), theirs[i][0]);
            assert_eq!(iface.description.as_deref().unwrap_or(""), theirs[i][1]);
            i += 1;
        }
        assert_eq!(i, 4);
        let res: Vec<_> = r.interfaces.iter().map(|x| x.ts_resolution).collect();
        assert!(res.contains(&wirestamp_capture::TsResolution::Dec(9)), "{res:?}");
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() { walk(&p, out) } else { out.push(p) }
    }
}

/// The interfaces of `path` once read to its end (or to its first error).
fn interfaces_of(r: &mut wirestamp_capture::CaptureReader) -> Vec<wirestamp_capture::Interface> {
    while let Ok(Some(_)) = r.next_frame() {}
    r.interfaces().to_vec()
}

/// Only a section that `wirestamp capture` wrote (`shb_userappl` "wirestamp ..." and its comment
/// "wirestamp capture ...") is taken for one, whose interfaces must each have a statistics block once
/// it is closed: analyze warns of one without. No pcapng of the shared corpus (tcpdump's, Wireshark's,
/// the conformance suite's, compressed ones too), many of which have interfaces without statistics
/// blocks, is taken for one; synth's sections (the same writer, another comment) are not either.
#[test]
fn only_sections_written_by_wirestamp_capture_are_taken_for_its() {
    use wirestamp_capture::write::{CAPTURE_COMMENT, IfaceSpec, PcapngWriter};
    let mut files = Vec::new();
    walk(&shared_data(), &mut files);
    files.sort();
    let (mut pcapng, mut without_stats) = (0, 0);
    for f in &files {
        let Ok(mut r) = wirestamp_capture::CaptureReader::open(f) else { continue };
        if r.format().container != Container::Pcapng {
            continue;
        }
        pcapng += 1;
        let ifaces = interfaces_of(&mut r);
        if ifaces.iter().any(|i| i.recorded.is_none()) {
            without_stats += 1;
        }
        assert!(!ifaces.iter().any(|i| i.by_wirestamp_capture), "{} taken for wirestamp capture's", f.display());
    }
    // The corpus's pcapng files (capinfos names 110 of them pcapng, and refuses the versions it does not
    // know) and those with an interface without statistics: what the rule must leave alone.
    assert!(pcapng >= 110, "{pcapng} pcapng files read");
    assert!(without_stats >= 90, "{without_stats} of {pcapng} with an interface without statistics");

    let section = |comment: &str| {
        let mut w = PcapngWriter::new(Vec::new(), Some(comment)).unwrap();
        let spec = IfaceSpec { link: LinkType::Ethernet, name: "eth0".into(), description: None, snaplen: 0 };
        w.add_interface(&spec).unwrap();
        let bytes = w.finish().unwrap();
        let mut r =
            wirestamp_capture::CaptureReader::from_reader("w".into(), Box::new(std::io::Cursor::new(bytes))).unwrap();
        interfaces_of(&mut r).iter().map(|i| i.by_wirestamp_capture).collect::<Vec<_>>()
    };
    assert_eq!(section(&format!("{CAPTURE_COMMENT}--source afpacket -i eth0 on host h")), [true]);
    assert_eq!(section("wirestamp synth: synthetic market with ground truth"), [false]);
}
