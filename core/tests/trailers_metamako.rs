//! Metamako (Arista 7130) trailers in the OMI OUCH 5.0 captures, checked against the saved tshark 4.0.17
//! oracle CSV and against tshark run here with `--enable-heuristic metamako_eth`. Also: forced-format
//! errors.

mod support;

use support::{Pcap, parse_tshark_abs_time, unhex};
use wirestamp_core::dissect::dissect;
use wirestamp_core::trailer::{Decoded, TrailerDecoder, TrailerKind, TrailerMode};
use wirestamp_testdata::{data_file, epoch_to_ns, tshark_fields};

const OUCH_DIR: &str = "omi_data_packets/Nasdaq/Nasdaq.Nsm.Ouch.v5.0";
const OUCH_FILES: [&str; 6] = [
    "CancelOrderMessage.pcap",
    "CanceledMessage.pcap",
    "ClientHeartbeatPacket.pcap",
    "EnterOrderMessage.pcap",
    "OrderAcceptedMessage.pcap",
    "ServerHeartbeatPacket.pcap",
];

/// What the test expects of one frame's trailer.
#[derive(Debug, PartialEq, Eq)]
struct Expect {
    time_ns: i64,
    flags: u8,
    device: u32,
    port: u32,
    orig_fcs: u32,
}

/// Decodes every frame of `rel` in `mode`.
fn decode_file(rel: &str, mode: TrailerMode) -> (Pcap, Vec<Decoded>) {
    let pcap = Pcap::read(&data_file(rel));
    let mut dec = TrailerDecoder::new(mode);
    let decoded = (0..pcap.records.len())
        .map(|i| {
            let f = pcap.frame(i);
            dec.decode(&f, &dissect(f.data, f.link)).expect("validates")
        })
        .collect();
    (pcap, decoded)
}

/// Checks one decoded frame against expected trailer fields, including where the trailer starts.
fn check(rel: &str, pcap: &Pcap, i: usize, got: Decoded, want: Option<Expect>) {
    let f = pcap.frame(i);
    let d = dissect(f.data, f.link);
    match (got, want) {
        (Decoded::None, None) => {}
        (Decoded::Stamp(s), Some(w)) => {
            assert_eq!(s.kind, TrailerKind::Metamako, "{rel}");
            assert_eq!(s.time_ns, w.time_ns, "{rel}: time");
            assert_eq!((s.device, s.port), (Some(w.device), Some(w.port)), "{rel}: device/port");
            assert_eq!(s.sub_ns, 0, "{rel}: no TLV, no sub-ns");
            // Flags 0x01/0x21 carry no degraded bit (0x10).
            assert_eq!(s.quality.contains(wirestamp_core::ClockQuality::DEGRADED), w.flags & 0x10 != 0, "{rel}");
            // The trailer starts with the original FCS tshark reports, and ends the frame (no new FCS
            // in these captures): 16 bytes.
            assert_eq!(s.trailer_len, 16, "{rel}");
            let start = f.data.len() - s.trailer_len;
            assert_eq!(u32::from_be_bytes(f.data[start..start + 4].try_into().unwrap()), w.orig_fcs, "{rel}: orig FCS");
            // The flags byte tshark reports follows the original FCS, seconds and nanoseconds.
            assert_eq!(f.data[start + 12], w.flags, "{rel}: flags byte");
            // Nothing of the IP datagram is inside the trailer; padding (if any) stays before it.
            let ip_end = d.ip.expect("IP").end;
            assert!(ip_end <= start, "{rel}: trailer overlaps the datagram");
        }
        (got, want) => panic!("{rel} frame {i}: got {got:?}, want {want:?}"),
    }
}

#[test]
fn ouch_metamako_matches_saved_oracle_csv() {
    let csv = std::fs::read_to_string(data_file("oracles_tshark_4.0.17/omi_ouch50_metamako.csv")).unwrap();
    // file, frame.time_epoch, sport, dport, tcp.len, tcp.payload, metamako.orig_fcs, metamako.time,
    // metamako.flags, metamako.srcdevice, metamako.srcport ("Apr 29, 2024 ..." holds a comma).
    let mut rows = 0;
    let mut stamped = 0;
    for line in csv.lines() {
        let c: Vec<&str> = line.split(',').collect();
        // Rows without a trailer have one field less (the empty time holds no comma).
        assert_eq!(c.len(), if c[6].is_empty() { 11 } else { 12 }, "csv line {line}");
        let rel = format!("{OUCH_DIR}/{}", c[0]);
        let want = (!c[6].is_empty()).then(|| Expect {
            time_ns: parse_tshark_abs_time(&format!("{},{}", c[7], c[8])),
            flags: u8::from_str_radix(c[9].trim_start_matches("0x"), 16).unwrap(),
            device: c[10].parse().unwrap(),
            port: c[11].parse().unwrap(),
            orig_fcs: u32::from_str_radix(c[6].trim_start_matches("0x"), 16).unwrap(),
        });
        let (pcap, got) = decode_file(&rel, TrailerMode::Auto);
        assert_eq!(got.len(), 1, "{rel}: one frame");
        // The record time tshark printed is the one our reader sees (the trailer time equals it here).
        assert_eq!(pcap.records[0].ts_ns, epoch_to_ns(c[1]), "{rel}");
        // The TCP payload tshark printed is what dissection finds, and it ends before the trailer.
        let f = pcap.frame(0);
        let d = dissect(f.data, f.link);
        assert_eq!(d.payload(f.data), unhex(c[5]).as_slice(), "{rel}: payload");
        stamped += want.is_some() as usize;
        check(&rel, &pcap, 0, got[0], want);
        rows += 1;
    }
    assert_eq!((rows, stamped), (6, 5));
}

#[test]
fn ouch_metamako_matches_live_tshark() {
    let fields = [
        "frame.time_epoch",
        "metamako.time",
        "metamako.flags",
        "metamako.srcdevice",
        "metamako.srcport",
        "metamako.orig_fcs",
    ];
    let mut stamped = 0;
    for name in OUCH_FILES {
        let rel = format!("{OUCH_DIR}/{name}");
        let rows = tshark_fields(&data_file(&rel), &["--enable-heuristic", "metamako_eth"], &fields);
        let (pcap, got) = decode_file(&rel, TrailerMode::Auto);
        assert_eq!(rows.len(), got.len(), "{rel}");
        for (i, (row, got)) in rows.iter().zip(&got).enumerate() {
            let want = (!row[1].is_empty()).then(|| Expect {
                time_ns: parse_tshark_abs_time(&row[1]),
                flags: u8::from_str_radix(row[2].trim_start_matches("0x"), 16).unwrap(),
                device: row[3].parse().unwrap(),
                port: row[4].parse().unwrap(),
                orig_fcs: u32::from_str_radix(row[5].trim_start_matches("0x"), 16).unwrap(),
            });
            stamped += want.is_some() as usize;
            check(&rel, &pcap, i, *got, want);
        }
    }
    assert_eq!(stamped, 5);
}

#[test]
fn padding_before_trailer_is_kept_in_the_frame() {
    // ClientHeartbeat: 3-byte payload 000152, 3 bytes of padding b82f7a, then the 16-byte trailer;
    // ServerHeartbeat: payload 000148, padding 000000. Without the trailer each is a 60-byte minimum frame.
    for (name, padding) in
        [("ClientHeartbeatPacket.pcap", [0xb8, 0x2f, 0x7a]), ("ServerHeartbeatPacket.pcap", [0, 0, 0])]
    {
        let rel = format!("{OUCH_DIR}/{name}");
        let (pcap, got) = decode_file(&rel, TrailerMode::Auto);
        let Decoded::Stamp(s) = got[0] else { panic!("{rel}: no stamp") };
        let f = pcap.frame(0);
        let without = &f.data[..f.data.len() - s.trailer_len];
        assert_eq!(without.len(), 60, "{rel}");
        let ip_end = dissect(f.data, f.link).ip.unwrap().end;
        assert_eq!(ip_end, 57, "{rel}: 14 + 20 + 20 + 3");
        assert_eq!(&without[57..], &padding, "{rel}");
    }
}

#[test]
fn forced_metamako_errors_on_a_file_without_trailers() {
    let rel = "omi_data_packets/Nasdaq/Nasdaq.Equities.TotalView.Itch.v5.0/Multiple.Packets.pcap";
    let pcap = Pcap::read(&data_file(rel));
    let mut dec = TrailerDecoder::new(TrailerMode::Forced(TrailerKind::Metamako));
    let f = pcap.frame(0);
    let err = dec.decode(&f, &dissect(f.data, f.link)).expect_err("no trailer in an ITCH multicast frame");
    assert_eq!(err.kind, TrailerKind::Metamako);
    assert!(err.reason.contains("no plausible trailer") || err.reason.contains("no room"), "{}", err.reason);
    assert!(err.to_string().starts_with("--trailer metamako: "), "{err}");
    // Auto on the same file finds nothing either.
    let mut auto = TrailerDecoder::new(TrailerMode::Auto);
    for i in 0..pcap.records.len() {
        let f = pcap.frame(i);
        assert_eq!(auto.decode(&f, &dissect(f.data, f.link)), Ok(Decoded::None), "{rel} frame {i}");
    }
    // Forcing HPT or cPacket there fails too; forcing a counter kind waits for a keyframe, then
    // finish() reports that none came.
    for k in [TrailerKind::ExablazeHpt, TrailerKind::Cpacket, TrailerKind::Arista7280] {
        let mut dec = TrailerDecoder::new(TrailerMode::Forced(k));
        assert!(dec.decode(&f, &dissect(f.data, f.link)).is_err(), "{k:?}");
    }
    // Its two frames are more than 10 s apart: the second is past the keyframe wait.
    let mut dec = TrailerDecoder::new(TrailerMode::Forced(TrailerKind::Arista7150));
    let f1 = pcap.frame(1);
    assert!(f1.ts_ns - f.ts_ns > 10_000_000_000);
    assert_eq!(dec.decode(&f, &dissect(f.data, f.link)), Ok(Decoded::None));
    let err = dec.decode(&f1, &dissect(f1.data, f1.link)).expect_err("no keyframe within 10 s");
    assert!(err.reason.starts_with("no keyframe yet"), "{}", err.reason);
    // A one-frame file ends before the wait: finish() reports it.
    let one = Pcap::read(&data_file(&format!("{OUCH_DIR}/CancelOrderMessage.pcap")));
    let mut dec = TrailerDecoder::new(TrailerMode::Forced(TrailerKind::ExablazeFusion));
    let f = one.frame(0);
    assert_eq!(dec.decode(&f, &dissect(f.data, f.link)), Ok(Decoded::None));
    let err = dec.finish().expect_err("no keyframe in the file");
    assert!(err.reason.contains("no exablaze_fusion keyframe"), "{}", err.reason);
}

#[test]
fn forced_metamako_works_on_the_right_file() {
    for name in ["CancelOrderMessage.pcap", "ClientHeartbeatPacket.pcap"] {
        let rel = format!("{OUCH_DIR}/{name}");
        let (pcap, got) = decode_file(&rel, TrailerMode::Forced(TrailerKind::Metamako));
        let Decoded::Stamp(s) = got[0] else { panic!("{rel}") };
        assert_eq!(s.time_ns, pcap.records[0].ts_ns, "{rel}: trailer time equals the record time here");
        assert_eq!(s.device, Some(19484));
    }
    // Forcing cPacket on a Metamako file reads the same core, reported as cPacket.
    let (_, got) = decode_file(&format!("{OUCH_DIR}/CanceledMessage.pcap"), TrailerMode::Forced(TrailerKind::Cpacket));
    let Decoded::Stamp(s) = got[0] else { panic!() };
    assert_eq!((s.kind, s.time_ns, s.port), (TrailerKind::Cpacket, 1_714_407_847_483_719_953, Some(45)));
}

/// Builds an Ethernet/IPv4/UDP frame followed by a Metamako trailer: original FCS, `tlvs`, the core, and
/// optionally a new FCS.
fn built_frame(payload: &[u8], orig_fcs: u32, tlvs: &[u8], flags: u8, new_fcs: bool) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00];
    let udp_len = 8 + payload.len() as u16;
    let ip_len = 20 + udp_len;
    f.extend_from_slice(&[
        0x45,
        0,
        (ip_len >> 8) as u8,
        ip_len as u8,
        0,
        0,
        0,
        0,
        64,
        17,
        0,
        0,
        10,
        0,
        0,
        1,
        10,
        0,
        0,
        2,
    ]);
    f.extend_from_slice(&[0x04, 0xd2, 0x16, 0x2e, (udp_len >> 8) as u8, udp_len as u8, 0, 0]);
    f.extend_from_slice(payload);
    while f.len() < 60 {
        f.push(0); // Ethernet minimum-frame padding, before the trailer
    }
    f.extend_from_slice(&orig_fcs.to_be_bytes());
    f.extend_from_slice(tlvs);
    f.extend_from_slice(&1_700_000_000u32.to_be_bytes());
    f.extend_from_slice(&123_456_789u32.to_be_bytes());
    f.extend_from_slice(&[flags, 0x4c, 0x1c, 46]);
    if new_fcs {
        f.extend_from_slice(&[1, 2, 3, 4]);
    }
    f
}

#[test]
fn metamako_tlvs_match_tshark_on_a_built_capture() {
    // TLV chains, nearest the core first in reading order (they are written before it on the wire):
    // A: sub-ns 0x800000 (0.5 ns) with F=1; then bytes tshark must leave to the packet side.
    let chain_a = [0x12, 0x34, 0x00, 0x40, 0x80, 0x00, 0x00, 0x21];
    // B: secondary tag string "ABCD" (F=1) | seq number, one extra word | sub-ns 0x400000 (0.25 ns), F=0.
    let chain_b = [b'A', b'B', b'C', b'D', 0, 0, 0, 0x3F, 0, 0, 0, 0, 0x12, 0x34, 0x00, 0x40, 0x40, 0x00, 0x00, 0x01];
    // C: unknown primary tag 5 with 2 extra words (F=1) | sub-ns 1 (2^-24 ns), F=0.
    let chain_c = [9, 9, 9, 9, 8, 8, 8, 8, 0x00, 0x00, 0x00, 0xA5, 0x00, 0x00, 0x01, 0x01];
    let frames = [
        built_frame(b"hello world, a longer payload", 0xA1A1_A1A1, &chain_a, 0x03, false),
        built_frame(b"hello world, a longer payload", 0xB2B2_B2B2, &chain_b, 0x13, true),
        built_frame(b"abc", 0xC3C3_C3C3, &[], 0x21, false),
        built_frame(b"xyz", 0xD4D4_D4D4, &chain_c, 0x02, true),
    ];
    let mut file = Vec::new();
    for w in [0xa1b2_3c4du32, 0x0004_0002, 0, 0, 65_535, 1] {
        file.extend_from_slice(&w.to_le_bytes()); // ns pcap, LE; version 2.4 packed in one word
    }
    let ts_ns = 1_700_000_000_123_456_789i64;
    for f in &frames {
        for w in [1_700_000_000u32, 123_456_789, f.len() as u32, f.len() as u32] {
            file.extend_from_slice(&w.to_le_bytes());
        }
        file.extend_from_slice(f);
    }
    let path = std::env::temp_dir().join(format!("wirestamp-trailer-tlv-{}.pcap", std::process::id()));
    std::fs::write(&path, &file).unwrap();
    let rows = tshark_fields(
        &path,
        &["--enable-heuristic", "metamako_eth"],
        &[
            "metamako.time",
            "metamako.subns",
            "metamako.flags",
            "metamako.srcdevice",
            "metamako.srcport",
            "metamako.orig_fcs",
        ],
    );
    let pcap = Pcap::read(&path);
    std::fs::remove_file(&path).ok();
    assert_eq!(rows.len(), 4);
    let mut dec = TrailerDecoder::new(TrailerMode::Auto);
    for (i, r) in rows.iter().enumerate() {
        let f = pcap.frame(i);
        assert_eq!(f.ts_ns, ts_ns);
        let Ok(Decoded::Stamp(s)) = dec.decode(&f, &dissect(f.data, f.link)) else { panic!("frame {i}") };
        assert_eq!(s.time_ns, parse_tshark_abs_time(&r[0]), "frame {i}");
        let subns24: u32 = if r[1].is_empty() { 0 } else { r[1].parse().unwrap() };
        assert_eq!(s.sub_ns, subns24 << 8, "frame {i}: sub-ns");
        let flags = u8::from_str_radix(r[2].trim_start_matches("0x"), 16).unwrap();
        assert_eq!(s.quality.contains(wirestamp_core::ClockQuality::DEGRADED), flags & 0x10 != 0, "frame {i}");
        assert_eq!((s.device, s.port), (Some(r[3].parse().unwrap()), Some(r[4].parse().unwrap())), "frame {i}");
        // Where tshark found the original FCS is where our trailer starts.
        let start = f.data.len() - s.trailer_len;
        let orig = u32::from_str_radix(r[5].trim_start_matches("0x"), 16).unwrap();
        assert_eq!(u32::from_be_bytes(f.data[start..start + 4].try_into().unwrap()), orig, "frame {i}: trailer start");
    }
    // And by construction: chain A stops at its F bit, so the word before it is the "original FCS".
    let want_orig = [0x1234_0040u32, 0xB2B2_B2B2, 0xC3C3_C3C3, 0xD4D4_D4D4];
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(u32::from_str_radix(r[5].trim_start_matches("0x"), 16).unwrap(), want_orig[i], "frame {i}");
    }
}
