//! ITCH 5.0 / MoldUDP64 decoders against real captures and files, with tshark and the data README
//! as the independent oracles.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use support::{col, payloads, read_csv};
use wirestamp_core::proto::ProtoError;
use wirestamp_core::proto::itch::{self, ItchCounters, MessageType};
use wirestamp_core::proto::market::MoldItchDecoder;
use wirestamp_core::proto::moldudp64::{self, Packet, SeqEvent, SeqTracker, Session};
use wirestamp_testdata::{data_file, shared_data, tshark_fields};

/// Message type byte -> count, as text like "A 635, D 1389" for readable failures.
fn type_counts(c: &ItchCounters) -> BTreeMap<char, u64> {
    (0..=255u8).filter(|&t| c.by_type[usize::from(t)] > 0).map(|t| (t as char, c.by_type[usize::from(t)])).collect()
}

fn expect_counts(pairs: &[(char, u64)]) -> BTreeMap<char, u64> {
    pairs.iter().copied().collect()
}

#[test]
fn elk_nasdaq_matches_readme_and_tshark_oracle() {
    let path = data_file("pcap_market/elk_nasdaq.pcap");
    let (frames, pl) = payloads(&path);
    assert_eq!(frames, 2047);
    // The feed: 233.54.12.111:26477 (data README §1.1). Everything else must be the HSRP noise.
    let (feed, other): (Vec<_>, Vec<_>) = pl.iter().partition(|p| p.udp && p.dport == 26477);
    assert_eq!(feed.len(), 2036);
    assert_eq!(frames - feed.len(), 11);
    assert!(other.iter().all(|p| p.udp && p.dport == 1985), "non-feed frames are HSRPv2 to port 1985");

    let (hdr, rows) = read_csv(&data_file("oracles_tshark_4.0.17/elk_nasdaq.moldudp64.csv"));
    let (c_frame, c_sess, c_seq, c_count, c_len) = (
        col(&hdr, "frame.number"),
        col(&hdr, "moldudp64.session"),
        col(&hdr, "moldudp64.sequence"),
        col(&hdr, "moldudp64.count"),
        col(&hdr, "moldudp64.msglen"),
    );
    assert_eq!(rows.len(), feed.len());

    let mut dec = MoldItchDecoder::new();
    let mut tracker = SeqTracker::<u16>::default();
    let mut seqs = Vec::new();
    let mut first_add: Option<(i64, u64)> = None;
    for (p, row) in feed.iter().zip(&rows) {
        assert_eq!(p.frame.to_string(), row[c_frame]);
        let pkt = Packet::new_checked(&p.bytes[..]).unwrap();
        assert_eq!(pkt.session().to_string(), row[c_sess], "frame {}", p.frame);
        assert_eq!(pkt.sequence().to_string(), row[c_seq], "frame {}", p.frame);
        assert_eq!(pkt.message_count().to_string(), row[c_count], "frame {}", p.frame);
        let lens: Vec<String> = pkt.messages().map(|(_, m)| m.len().to_string()).collect();
        assert_eq!(lens.join("|"), row[c_len], "frame {}", p.frame);
        let ev = tracker.observe(p.dport, pkt.session(), pkt.sequence(), pkt.message_count());
        assert!(matches!(ev, SeqEvent::First | SeqEvent::InOrder), "frame {}: {ev:?}", p.frame);
        let info = dec
            .packet(&p.bytes, |m| {
                seqs.push(m.seq);
                if first_add.is_none() && m.msg_type == MessageType::AddOrder {
                    first_add = Some((p.ts_ns, m.timestamp_ns));
                }
            })
            .unwrap();
        assert_eq!((info.error, usize::from(info.blocks)), (None, lens.len()));
    }
    // README: 2,232 messages, sequences 484,311,999 ... 484,314,230, no gaps.
    assert_eq!(seqs.len(), 2232);
    assert_eq!((seqs[0], *seqs.last().unwrap()), (484_311_999, 484_314_230));
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1));
    let session = Session(*b"000007525B");
    let c = tracker.counters(26477, session).unwrap();
    assert_eq!((c.packets, c.messages, c.gaps, c.missing, c.duplicates, c.out_of_order), (2036, 2232, 0, 0, 0, 0));
    assert_eq!(tracker.next_expected(26477, session), Some(484_314_231));
    assert_eq!(
        type_counts(&dec.itch),
        expect_counts(&[('D', 1389), ('A', 635), ('U', 109), ('X', 86), ('E', 12), ('P', 1)])
    );
    assert_eq!((dec.itch.unknown(), dec.itch.truncated, dec.malformed_blocks, dec.trailing_bytes), (0, 0, 0, 0));
    // README timing check: the first 'A' has ITCH time 60,631.52233716 s after midnight and was
    // captured at 20:50:31.523595 UTC (1473799831.523595).
    let (cap_ns, itch_ns) = first_add.unwrap();
    assert_eq!(cap_ns, wirestamp_testdata::epoch_to_ns("1473799831.523595"));
    assert_eq!(itch_ns / 10, 6_063_152_233_716);
}

/// The MoldUDP64 columns tshark gives for a file (decode-as on its UDP port).
fn tshark_mold(path: &Path, port: u16) -> Vec<Vec<String>> {
    let decode_as = format!("udp.port=={port},moldudp64");
    tshark_fields(
        path,
        &["-d", &decode_as],
        &["frame.number", "moldudp64.session", "moldudp64.sequence", "moldudp64.count", "moldudp64.msglen"],
    )
}

/// Decodes every MoldUDP64 packet of a file and checks it against tshark; returns the decoder.
fn check_against_tshark(path: &Path) -> MoldItchDecoder {
    let (_, pl) = payloads(path);
    assert!(!pl.is_empty(), "{}: no UDP payload", path.display());
    let rows = tshark_mold(path, pl[0].dport);
    assert_eq!(rows.len(), pl.len(), "{}", path.display());
    let mut dec = MoldItchDecoder::new();
    for (p, row) in pl.iter().zip(&rows) {
        let pkt = Packet::new_checked(&p.bytes[..]).unwrap();
        let lens: Vec<String> = pkt.messages().map(|(_, m)| m.len().to_string()).collect();
        let ours = vec![
            p.frame.to_string(),
            pkt.session().to_string(),
            pkt.sequence().to_string(),
            pkt.message_count().to_string(),
            lens.join(","),
        ];
        assert_eq!(&ours, row, "{} frame {}", path.display(), p.frame);
        let info = dec.packet(&p.bytes, |_| {}).unwrap();
        assert_eq!(info.error, None);
    }
    assert_eq!((dec.itch.unknown(), dec.itch.truncated, dec.malformed_blocks), (0, 0, 0), "{}", path.display());
    dec
}

#[test]
fn omi_multiple_packets_matches_saved_oracle() {
    let path = data_file("omi_data_packets/Nasdaq/Nasdaq.Equities.TotalView.Itch.v5.0/Multiple.Packets.pcap");
    let (frames, pl) = payloads(&path);
    assert_eq!((frames, pl.len()), (2, 2));
    let (hdr, rows) = read_csv(&data_file("oracles_tshark_4.0.17/omi_itch50_multiple_packets.moldudp64.csv"));
    let mut dec = MoldItchDecoder::new();
    let mut per_packet = Vec::new();
    for (p, row) in pl.iter().zip(&rows) {
        let pkt = Packet::new_checked(&p.bytes[..]).unwrap();
        assert_eq!(pkt.session().to_string(), row[col(&hdr, "moldudp64.session")]);
        assert_eq!(pkt.sequence().to_string(), row[col(&hdr, "moldudp64.sequence")]);
        assert_eq!(pkt.message_count().to_string(), row[col(&hdr, "moldudp64.count")]);
        let lens: Vec<String> = pkt.messages().map(|(_, m)| m.len().to_string()).collect();
        assert_eq!(lens.join("|"), row[col(&hdr, "moldudp64.msglen")]);
        per_packet.push(dec.packet(&p.bytes, |_| {}).unwrap().blocks);
    }
    assert_eq!(per_packet, vec![1, 38]);
    assert_eq!(type_counts(&dec.itch), expect_counts(&[('A', 36), ('F', 2), ('D', 1)]));
    assert_eq!((dec.itch.unknown(), dec.itch.truncated), (0, 0));
}

/// The ITCH type a capture file is named after (OMI names files by spec message name).
fn type_from_name(name: &str) -> Option<u8> {
    const NAMES: &[(&str, u8)] = &[
        ("AddOrderNoM", b'A'),
        ("AddOrderMpid", b'F'),
        ("AddOrderWithM", b'F'),
        ("NonCrossTrade", b'P'),
        ("TradeMessageNon-cross", b'P'),
        ("CrossTrade", b'Q'),
        ("OrderCancel", b'X'),
        ("OrderDelete", b'D'),
        ("OrderExecutedWithPrice", b'C'),
        ("OrderExecuted", b'E'),
        ("OrderReplace", b'U'),
        ("RegSho", b'Y'),
        ("RegSHO", b'Y'),
        ("RetailInterest", b'N'),
        ("StockTradingAction", b'H'),
        ("SystemEvent", b'S'),
        ("LULDAuctionCollar", b'J'),
        ("MarketParticipantPosition", b'L'),
        ("NetOrderImbalanceIndicator", b'I'),
    ];
    NAMES.iter().find(|(n, _)| name.starts_with(n)).map(|&(_, t)| t)
}

fn pcaps_in(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    v.sort();
    v
}

/// Checks every message of a file has the type its name says and decodes in full.
fn check_named_types(path: &Path, dec: &MoldItchDecoder) -> u64 {
    let name = path.file_name().unwrap().to_str().unwrap();
    let t = type_from_name(name).unwrap_or_else(|| panic!("no type known for {name}"));
    let total = dec.itch.decoded();
    assert!(total > 0, "{name}: no message");
    assert_eq!(dec.itch.by_type[usize::from(t)], total, "{name}: all messages should be '{}'", t as char);
    total
}

#[test]
fn omi_real_itch_captures_match_tshark() {
    let base = shared_data().join("omi_data_packets/Nasdaq");
    let mut files = 0;
    for dir in ["Nasdaq.Equities.TotalView.Itch.v5.0", "Bx.Equities.TotalView.Itch.v5.0"] {
        for path in pcaps_in(&base.join(dir)) {
            let dec = check_against_tshark(&path);
            if !path.ends_with("Multiple.Packets.pcap") {
                check_named_types(&path, &dec);
            }
            files += 1;
        }
    }
    assert_eq!(files, 11);
}

#[test]
fn omi_rewrapped_itch_bodies_all_decode() {
    let base = shared_data().join("omi_data_packets/Nasdaq");
    let mut files = 0;
    let mut messages = 0;
    let mut packets = 0;
    for dir in [
        "Nasdaq.Equities.TotalView.Itch.v5.0.20230822",
        "Bx.Equities.TotalView.Itch.v5.0.20230822",
        "Psx.Equities.TotalView.Itch.v5.0.20230822",
    ] {
        for path in pcaps_in(&base.join(dir)) {
            // Synthetic transport (port 0): tshark will not decode-as it, so the oracle is the file
            // name and the UDP payload length (header + length-prefixed blocks, nothing left over).
            let (_, pl) = payloads(&path);
            let mut dec = MoldItchDecoder::new();
            for p in &pl {
                let info = dec.packet(&p.bytes, |_| {}).unwrap();
                assert_eq!(info.error, None, "{} frame {}", path.display(), p.frame);
            }
            packets += pl.len();
            assert_eq!((dec.itch.unknown(), dec.itch.truncated, dec.trailing_bytes), (0, 0, 0), "{}", path.display());
            messages += check_named_types(&path, &dec);
            files += 1;
        }
    }
    // capinfos counts 178 packets in these 38 files; each carries one message.
    assert_eq!((files, packets, messages), (38, 178, 178));
}

#[test]
fn itch_snippet_binaryfile_first_1000_after_0930() {
    let bytes = std::fs::read(data_file("itch/12302019_SNIPPET.NASDAQ_ITCH50")).unwrap();
    // BinaryFILE framing: u16 big-endian length, then the message.
    let mut c = ItchCounters::default();
    let mut at = 0;
    let mut n = 0;
    let mut min_ts = u64::MAX;
    while at + 2 <= bytes.len() {
        let len = usize::from(u16::from_be_bytes([bytes[at], bytes[at + 1]]));
        let msg = &bytes[at + 2..at + 2 + len];
        let m = c.decode(msg).unwrap_or_else(|| panic!("message {n} at byte {at}: {:?}", c.last_error));
        assert_eq!(itch::message_len(m.message_type()), Some(len), "message {n} at byte {at}");
        min_ts = min_ts.min(m.header().unwrap().timestamp_ns);
        at += 2 + len;
        n += 1;
    }
    assert_eq!((at, n), (bytes.len(), 1000));
    assert!(min_ts >= 34_200_000_000_000, "all at or after 09:30");
    assert_eq!(
        type_counts(&c),
        expect_counts(&[
            ('A', 367),
            ('U', 225),
            ('F', 193),
            ('D', 167),
            ('E', 28),
            ('X', 6),
            ('I', 4),
            ('P', 4),
            ('Q', 4),
            ('S', 1),
            ('C', 1)
        ])
    );
    assert_eq!((c.unknown(), c.truncated), (0, 0));
}

#[test]
fn mold_sample_dat_frames_and_reports_truncation() {
    let bytes = std::fs::read(data_file("moldudp/mold.sample.dat")).unwrap();
    let got: Vec<_> = moldudp64::split_stream(&bytes).collect();
    // README §1.8: 3 packets (seq 1 / 15 messages, 16 / 13, 29 / 13), zero session, the last one
    // 5 bytes short.
    assert_eq!(got.len(), 3);
    let (o1, p1) = got[0].unwrap();
    let (o2, p2) = got[1].unwrap();
    assert_eq!((o1, p1.session(), p1.sequence(), p1.message_count()), (0, Session([0; 10]), 1, 15));
    assert_eq!((p2.session(), p2.sequence(), p2.message_count()), (Session([0; 10]), 16, 13));
    assert_eq!(o2, p1.declared_len().unwrap());
    let third_at = o2 + p2.declared_len().unwrap();
    let third = Packet::new_checked(&bytes[third_at..]).unwrap();
    assert_eq!((third.sequence(), third.message_count()), (29, 13));
    match got[2] {
        Err(ProtoError::Truncated { what, offset, need, have }) => {
            assert_eq!(what, "MoldUDP64 message block");
            assert!(offset > third_at);
            assert_eq!((offset + have, need - have), (bytes.len(), 5), "block at {offset} is 5 bytes short");
        }
        other => panic!("{other:?}"),
    }
    // Not ITCH 5.0 (Nordic): type/length pairs are the README's T 5, S 6, R 113, L 25.
    for (_, p) in got.iter().take(2).map(|r| r.unwrap()) {
        for (_, m) in p.messages() {
            let want = match m[0] {
                b'T' => 5,
                b'S' => 6,
                b'R' => 113,
                b'L' => 25,
                t => panic!("unexpected type {}", t as char),
            };
            assert_eq!(m.len(), want);
        }
    }
}
