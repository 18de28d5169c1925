//! `wirestamp frames` against tshark on real captures: record time to the ns, lengths, addresses, ports,
//! payload length and VLAN ids, frame by frame.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use wirestamp_testdata::{data_file, epoch_to_ns, tshark_fields};

/// Runs `wirestamp frames ARGS` and returns its CSV rows as column-name → value maps.
fn frames(args: &[&str]) -> Vec<HashMap<String, String>> {
    let out = Command::new(env!("CARGO_BIN_EXE_wirestamp")).arg("frames").arg("-q").args(args).output().unwrap();
    assert!(out.status.success(), "wirestamp frames {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().expect("header row").split(',').map(str::to_owned).collect();
    lines
        .map(|l| {
            let cells = split_csv(l);
            assert_eq!(cells.len(), header.len(), "row {l}");
            header.iter().cloned().zip(cells).collect()
        })
        .collect()
}

fn split_csv(line: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                cells.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => cells.push(String::new()),
            c => cells.last_mut().unwrap().push(c),
        }
    }
    cells
}

fn first(v: &str) -> &str {
    v.split(',').next().unwrap_or("")
}

/// Compares every frame of `rel` (a file under shared/data) with tshark.
fn compare_with_tshark(rel: &str) -> usize {
    let path = data_file(rel);
    let ours = frames(&[path.to_str().unwrap()]);
    let fields = [
        "frame.time_epoch",
        "frame.cap_len",
        "frame.len",
        "ip.src",
        "ip.dst",
        "ip.proto",
        "ipv6.src",
        "ipv6.dst",
        "udp.srcport",
        "udp.dstport",
        "udp.length",
        "tcp.srcport",
        "tcp.dstport",
        "tcp.len",
        "vlan.id",
        "frame.encap_type",
    ];
    let mut theirs =
        tshark_fields(Path::new(&path), &["-o", "ip.defragment:FALSE", "-o", "ipv6.defragment:FALSE"], &fields);
    // tshark 4 lists some pcapng non-packet blocks (custom, journal) as frames without an encapsulation.
    theirs.retain(|t| !t[15].is_empty());
    assert_eq!(ours.len(), theirs.len(), "{rel}: frame count");
    for (i, (o, t)) in ours.iter().zip(&theirs).enumerate() {
        let ctx = format!("{rel} frame {i}");
        if o["ts_source"] == "none" {
            // A Simple Packet Block has no timestamp; tshark shows the previous one.
            assert_eq!(o["record_time_ns"], "", "{ctx}: SPB time");
        } else {
            assert_eq!(o["record_time_ns"].parse::<i64>().unwrap(), epoch_to_ns(&t[0]), "{ctx}: time");
        }
        assert_eq!(o["caplen"], t[1], "{ctx}: caplen");
        assert_eq!(o["wirelen"], t[2], "{ctx}: wirelen");
        let (src, dst) = if !t[3].is_empty() { (first(&t[3]), first(&t[4])) } else { (first(&t[6]), first(&t[7])) };
        assert_eq!(o["src"], src, "{ctx}: src");
        assert_eq!(o["dst"], dst, "{ctx}: dst");
        if !t[8].is_empty() {
            assert_eq!(o["sport"], first(&t[8]), "{ctx}: udp sport");
            assert_eq!(o["dport"], first(&t[9]), "{ctx}: udp dport");
            let udp_len: usize = first(&t[10]).parse().unwrap();
            assert_eq!(o["payload_len"], (udp_len - 8).to_string(), "{ctx}: udp payload");
        } else if !t[11].is_empty() {
            assert_eq!(o["sport"], first(&t[11]), "{ctx}: tcp sport");
            assert_eq!(o["dport"], first(&t[12]), "{ctx}: tcp dport");
            assert_eq!(o["payload_len"], first(&t[13]), "{ctx}: tcp payload");
        } else {
            assert_eq!(o["sport"], "", "{ctx}: no transport expected");
        }
        let vlans: Vec<&str> = t[14].split(',').filter(|s| !s.is_empty()).collect();
        assert_eq!(o["vlan"], vlans.join("/"), "{ctx}: vlan");
    }
    ours.len()
}

#[test]
fn elk_nasdaq_matches_tshark() {
    assert_eq!(compare_with_tshark("pcap_market/elk_nasdaq.pcap"), 2047);
}

#[test]
fn libtrace_tags_and_erf_match_tshark() {
    for f in ["vlan.pcap", "qinq.pcap", "100_packets.erf", "5_packets.erf.gz", "complex.pcapng"] {
        assert!(compare_with_tshark(&format!("libtrace_traces/test/traces/{f}")) > 0, "{f}");
    }
}

#[test]
fn libtrace_pcapng_matches_tshark() {
    assert_eq!(compare_with_tshark("libtrace_traces/test/traces/100_packets.pcapng"), 100);
}

#[test]
fn sll_nano_matches_tshark() {
    compare_with_tshark("tcpdump_tests/tests/tcp-handshake-nano.pcap");
    compare_with_tshark("libtrace_traces/test/traces/100_sll.pcap");
}

#[test]
fn omi_ouch_with_trailers_matches_tshark() {
    for f in [
        "CancelOrderMessage",
        "CanceledMessage",
        "OrderAcceptedMessage",
        "ClientHeartbeatPacket",
        "ServerHeartbeatPacket",
        "EnterOrderMessage",
    ] {
        assert_eq!(compare_with_tshark(&format!("omi_data_packets/Nasdaq/Nasdaq.Nsm.Ouch.v5.0/{f}.pcap")), 1);
    }
}

const PCPP: &str = "pcapplusplus/Tests/Pcap++Test/PcapExamples";

#[test]
fn link_types_and_tags_match_tshark() {
    for f in [
        "VlanPackets.pcap",
        "sll2.pcap",
        "null_loopback.pcap",
        "raw_ip.pcap",
        "linktype_ipv4.pcap",
        "linktype_ipv6.pcap",
    ] {
        assert!(compare_with_tshark(&format!("{PCPP}/{f}")) > 0, "{f}");
    }
}

#[test]
fn fragments_and_ipv6_match_tshark() {
    for f in ["ip4_fragments.pcap", "ip6_fragments.pcap", "four_ipv6_http_streams.pcap", "nanosecs_big_endian.pcap"] {
        assert!(compare_with_tshark(&format!("{PCPP}/{f}")) > 0, "{f}");
    }
}
