//! Real captures of every container read exactly: frames, timestamps to the nanosecond, lengths
//! and interfaces compared with tshark 4.0.17, and the same packets across containers.

mod common;

use common::{assert_same_as_tshark, read_all, tshark_epoch};
use wirestamp_capture::{ByteOrder, CaptureReader, Compression, Container, ContainerKind, TsResolution};
use wirestamp_core::{LinkType, TsSource};
use wirestamp_testdata::{data_file, tshark_fields};

const PPP: &str = "pcapplusplus/Tests/Pcap++Test/PcapExamples";
const LT: &str = "libtrace_traces/test/traces";

fn pcap(nanos: bool, byte_order: ByteOrder, modified: bool) -> Container {
    Container::Pcap { nanos, byte_order, modified }
}

#[test]
fn microsecond_pcaps_le_and_be() {
    let r = assert_same_as_tshark(&data_file(&format!("{PPP}/microsecs.pcap")));
    assert_eq!((r.rows.len(), r.container), (2, pcap(false, ByteOrder::Little, false)));
    let r = assert_same_as_tshark(&data_file(&format!("{PPP}/microsecs_big_endian.pcap")));
    assert_eq!((r.rows.len(), r.container), (13, pcap(false, ByteOrder::Big, false)));
    assert_eq!(r.interfaces[0].ts_resolution, TsResolution::Dec(6));
}

#[test]
fn nanosecond_pcaps_le_and_be() {
    let r = assert_same_as_tshark(&data_file(&format!("{PPP}/nanosecs.pcap")));
    assert_eq!((r.rows.len(), r.container), (2, pcap(true, ByteOrder::Little, false)));
    let r = assert_same_as_tshark(&data_file(&format!("{PPP}/nanosecs_big_endian.pcap")));
    assert_eq!((r.rows.len(), r.container), (10, pcap(true, ByteOrder::Big, false)));
    // At least one timestamp with a non-zero sub-µs part, so ns really are read as ns.
    assert!(r.rows.iter().any(|x| x.ts_ns.unwrap() % 1000 != 0));
}

#[test]
fn kuznetzov_modified_pcap() {
    let r = assert_same_as_tshark(&data_file("rusticata_pcap_parser/assets/modified-format.pcap"));
    assert_eq!((r.rows.len(), r.container), (1, pcap(false, ByteOrder::Little, true)));
}

#[test]
fn wireshark_samples_pcapng_ns() {
    let r = assert_same_as_tshark(&data_file("rusticata_pcap_parser/assets/wireshark_samples-test.pcapng"));
    assert_eq!(r.rows.len(), 5898);
    assert!(r.interfaces.iter().all(|i| i.ts_resolution == TsResolution::Dec(9)));
}

#[test]
fn mixed_resolution_pcapng() {
    // Interface 0 is ns, interface 1 µs. Interface 1's 100 timestamps are ~1.8e13 s (a writer's
    // bug: tshark prints 18446744073204.126329000), beyond the i64 ns range of year 2262: they
    // are saturated, counted and flagged; everything else matches tshark exactly.
    for rel in [format!("{PPP}/pcapng-example.pcapng"), format!("{PPP}/file_heuristics/pcapng-example.pcapng.zst")] {
        let path = data_file(&rel);
        let ours = read_all(&path);
        assert!(ours.error.is_none());
        let theirs =
            tshark_fields(&path, &[], &["frame.time_epoch", "frame.interface_id", "frame.len", "frame.cap_len"]);
        assert_eq!((ours.rows.len(), theirs.len()), (159, 159));
        let ires: Vec<_> = ours.interfaces.iter().map(|i| i.ts_resolution).collect();
        assert_eq!(ires, [TsResolution::Dec(9), TsResolution::Dec(6)]);
        let mut saturated = 0;
        for (a, b) in ours.rows.iter().zip(&theirs) {
            assert_eq!(
                (a.iface, a.wire_len, a.cap_len),
                (b[1].parse().unwrap(), b[2].parse().unwrap(), b[3].parse().unwrap())
            );
            let secs: u64 = b[0].split('.').next().unwrap().parse().unwrap();
            if secs > i64::MAX as u64 / 1_000_000_000 {
                assert_eq!(a.ts_ns, Some(i64::MAX));
                saturated += 1;
            } else {
                assert_eq!(a.ts_ns, Some(tshark_epoch(&b[0])));
            }
        }
        assert_eq!(saturated, 100);
        assert_eq!(ours.reader.stats().ts_out_of_range, 100);
        let expect_comp = if rel.ends_with(".zst") { Compression::Zstd } else { Compression::None };
        assert_eq!(ours.reader.format().compression, expect_comp);
    }
}

#[test]
fn many_interface_pcapngs() {
    let r = assert_same_as_tshark(&data_file(&format!("{PPP}/too_many_interfaces.pcapng")));
    assert_eq!(r.rows.len(), 1);
    let r = assert_same_as_tshark(&data_file(&format!("{PPP}/many_interfaces-1.pcapng")));
    assert_eq!(r.rows.len(), 64);
}

#[test]
fn cooked_raw_and_loopback_link_types() {
    for (file, link, n) in [
        ("sll2.pcap", LinkType::LinuxSll2, 3),
        ("raw_ip.pcap", LinkType::Raw, 100),
        ("null_loopback.pcap", LinkType::Null, 3),
        ("linktype_ipv4.pcap", LinkType::Ipv4, 2),
        ("linktype_ipv6.pcap", LinkType::Ipv6, 1),
    ] {
        let r = assert_same_as_tshark(&data_file(&format!("{PPP}/{file}")));
        assert_eq!((r.rows.len(), r.interfaces[0].link), (n, link), "{file}");
    }
    // Linux SLL direction from the packet type (0 = to us -> in, 4 = outgoing -> out), checked
    // against tshark's sll.pkttype.
    let path = data_file(&format!("{LT}/100_sll.pcap"));
    let pkttypes = tshark_fields(&path, &[], &["sll.pkttype"]);
    let mut r = CaptureReader::open(&path).unwrap();
    let mut n = 0;
    while let Some(f) = r.next_frame().unwrap() {
        // 27 frames carry packet type 0x0400 (written little-endian by libtrace): not a known
        // type, so no direction, as tshark decodes it (1024).
        let want = match pkttypes[n][0].as_str() {
            "4" => "out",
            "0" | "1" | "2" | "3" => "in",
            "1024" => "",
            other => panic!("unexpected pkttype {other}"),
        };
        assert_eq!(f.direction.name(), want);
        n += 1;
    }
    assert_eq!(n, 100);
}

#[test]
fn libtrace_same_100_packets_in_four_containers() {
    let pcap_us = assert_same_as_tshark(&data_file(&format!("{LT}/100_packets.pcap")));
    let pcap_ns = assert_same_as_tshark(&data_file(&format!("{LT}/100_packetsns.pcap")));
    let ng = assert_same_as_tshark(&data_file(&format!("{LT}/100_packets.pcapng")));
    let erf = assert_same_as_tshark(&data_file(&format!("{LT}/100_packets.erf")));
    assert_eq!(erf.container, Container::Erf);
    let us = |ns: i64| (ns + 500) / 1000;
    for r in [&pcap_ns, &ng, &erf] {
        assert_eq!(r.rows.len(), 100);
        for (i, (a, b)) in r.rows.iter().zip(&pcap_us.rows).enumerate() {
            assert_eq!((a.wire_len, a.cap_len), (b.wire_len, b.cap_len));
            // The µs copies were rounded to the nearest µs from the ERF's sub-µs times. The same
            // CR -> LF damage as in the bytes below hit two µs fields of the pcap copies: frames
            // 12 and 23 read ..3082 / ..8714 µs (0x0c0a, 0x220a) where the ERF has ..3085 / ..8717
            // (0x0c0d, 0x220d): exactly 3 µs, 0x0d - 0x0a.
            let d = us(a.ts_ns.unwrap()) - us(b.ts_ns.unwrap());
            let damaged = std::ptr::eq(r, &erf) && (i == 11 || i == 22);
            assert_eq!(d, if damaged { 3 } else { 0 }, "frame {}", i + 1);
        }
    }
    assert!(pcap_ns.data == pcap_us.data && ng.data == pcap_us.data, "frame bytes differ between pcap/pcapng copies");
    // The ERF's bytes equal the others except where the ERF has 0x0d and the pcap copies 0x0a:
    // libtrace's pcap copies went through a CR -> LF conversion (112 bytes, e.g. MAC
    // 00:0d:bc:03:6d:80 became 00:0a:bc:..; tshark shows the same). Every other byte is equal.
    let mut cr_lf = 0;
    for (e, p) in erf.data.iter().zip(&pcap_us.data) {
        assert_eq!(e.len(), p.len());
        for (x, y) in e.iter().zip(p) {
            if x != y {
                assert_eq!((*x, *y), (0x0d, 0x0a), "ERF and pcap bytes differ beyond CR->LF");
                cr_lf += 1;
            }
        }
    }
    assert_eq!(cr_lf, 112);
    // The ERF keeps sub-µs digits (already equal to tshark's ns above).
    assert!(erf.rows.iter().filter(|r| r.ts_ns.unwrap() % 1000 != 0).count() > 90);
    // 54 records on ERF interface 1 and 46 on interface 0, per record, against tshark's erf.flags.cap.
    let path = data_file(&format!("{LT}/100_packets.erf"));
    let caps = tshark_fields(&path, &[], &["erf.flags.cap"]);
    let mut r = CaptureReader::open(&path).unwrap();
    let mut per_port = [0; 8];
    let mut i = 0;
    while let Some(f) = r.next_frame().unwrap() {
        assert_eq!((f.ts_source, f.link, f.fcs_len), (TsSource::Erf, LinkType::Ethernet, Some(4)));
        let row = f.interface as usize;
        let port = r.interfaces()[row].local_id;
        assert_eq!(port.to_string(), caps[i][0]);
        per_port[port as usize] += 1;
        i += 1;
    }
    assert_eq!(per_port[..2], [46, 54]);
    assert!(
        r.interfaces().iter().all(|i| i.container == ContainerKind::Erf && i.ts_resolution == TsResolution::Bin(32))
    );
}

#[test]
fn compressed_erf_and_fragment_trace() {
    let r = assert_same_as_tshark(&data_file(&format!("{LT}/5_packets.erf.gz")));
    assert_eq!((r.rows.len(), r.reader.format().compression), (5, Compression::Gzip));
    let plain = read_all(&data_file(&format!("{LT}/5_packets.erf")));
    assert_eq!((plain.rows.clone(), plain.data.clone()), (r.rows, r.data));
    let r = assert_same_as_tshark(&data_file(&format!("{LT}/fragtest.erf.gz")));
    assert_eq!((r.rows.len(), r.interfaces.len()), (10_000, 3));
}

#[test]
fn provenance_erf_is_all_metadata() {
    // 100 ERF META (provenance) records and no packet: tshark lists them (type 27); we skip and count them.
    let path = data_file(&format!("{LT}/provenance.erf"));
    let types = tshark_fields(&path, &[], &["erf.types.type"]);
    assert_eq!(types.len(), 100);
    assert!(types.iter().all(|t| t[0] == "27"));
    let r = read_all(&path);
    assert!(r.error.is_none() && r.rows.is_empty());
    assert_eq!(r.container, Container::Erf);
    assert_eq!(r.reader.stats().skipped.get("erf META"), Some(&100));
    assert_eq!(r.reader.stats().records, 100);
}

#[test]
fn other_libtrace_and_tcpdump_files() {
    for rel in [
        format!("{LT}/100_seconds.pcap"),
        format!("{LT}/vlan.pcap"),
        format!("{LT}/complex.pcapng"),
        "tcpdump_tests/tests/tcp-handshake-nano.pcap".to_string(),
        "tcpdump_tests/tests/icmp-length-zero.pcapng".to_string(),
        "tcpdump_tests/tests/vsock-1.pcapng".to_string(),
    ] {
        assert_same_as_tshark(&data_file(&rel));
    }
}
