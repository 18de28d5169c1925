//! `wirestamp analyze` on frames captured short (a snap length: caplen < wire length, as
//! `capture --source ebpf` always writes them): a market-data packet cut is read as far as it was
//! captured and its messages cut are counted as not captured, not as malformed; a TCP segment cut is
//! skipped from where the capture stopped, counted apart from holes. A synth capture is cut here to a
//! snap length, record by record (caplen rewritten, wire length kept), and every count the report
//! gives is worked out from the frames cut, with a decoder of this file's own.

use std::collections::BTreeSet;
use std::path::Path;
use wirestamp_capture::write::PcapWriter;
use wirestamp_core::LinkType;

mod support;

use support::{analyze_json, analyze_text, synth_pcap, tmpdir};

const FEED_A: ([u8; 4], u16) = ([233, 54, 12, 111], 26477);
const FEED_B: ([u8; 4], u16) = ([233, 54, 12, 112], 26478);
const EXCHANGE_PORT: u16 = 8003;
const FLOWS: [&str; 6] =
    ["--md", "udp:233.54.12.111:26477", "--md", "udp:233.54.12.112:26478", "--orders", "tcp:10.1.0.1:8003"];

/// One record of a nanosecond pcap: (time, captured bytes, wire length).
type Record = (i64, Vec<u8>, u32);

/// The records of the nanosecond pcap `synth --pcap` writes.
fn read_pcap(path: &Path) -> Vec<Record> {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..4], &0xa1b2_3c4d_u32.to_le_bytes(), "a little-endian nanosecond pcap");
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let mut out = Vec::new();
    let mut o = 24;
    while o < b.len() {
        let t = i64::from(u32_at(o)) * 1_000_000_000 + i64::from(u32_at(o + 4));
        let (caplen, wire) = (u32_at(o + 8) as usize, u32_at(o + 12));
        out.push((t, b[o + 16..o + 16 + caplen].to_vec(), wire));
        o += 16 + caplen;
    }
    out
}

fn write_records(path: &Path, records: &[Record]) {
    let mut w = PcapWriter::new(std::fs::File::create(path).unwrap(), LinkType::Ethernet, 65535).unwrap();
    for (t, data, wire) in records {
        w.write(*t, data, *wire).unwrap();
    }
    w.finish().unwrap();
}

/// What the test needs of a frame (whole, as synth wrote it): Ethernet with any VLAN tags, IPv4.
struct L4 {
    udp: bool,
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    seq: u32,
    /// Offset and length (as the headers declare it) of the UDP or TCP payload.
    at: usize,
    len: usize,
}

fn l4(f: &[u8]) -> Option<L4> {
    let mut at = 12;
    while matches!(u16::from_be_bytes([f[at], f[at + 1]]), 0x8100 | 0x88a8) {
        at += 4;
    }
    if u16::from_be_bytes([f[at], f[at + 1]]) != 0x0800 {
        return None;
    }
    let ip = at + 2;
    let ihl = usize::from(f[ip] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([f[ip + 2], f[ip + 3]]));
    let dst = f[ip + 16..ip + 20].try_into().unwrap();
    let l4 = ip + ihl;
    let ports = (u16::from_be_bytes([f[l4], f[l4 + 1]]), u16::from_be_bytes([f[l4 + 2], f[l4 + 3]]));
    match f[ip + 9] {
        17 => Some(L4 {
            udp: true,
            dst,
            sport: ports.0,
            dport: ports.1,
            seq: 0,
            at: l4 + 8,
            len: usize::from(u16::from_be_bytes([f[l4 + 4], f[l4 + 5]])) - 8,
        }),
        6 => {
            let doff = usize::from(f[l4 + 12] >> 4) * 4;
            Some(L4 {
                udp: false,
                dst,
                sport: ports.0,
                dport: ports.1,
                seq: u32::from_be_bytes(f[l4 + 4..l4 + 8].try_into().unwrap()),
                at: l4 + doff,
                len: total - ihl - doff,
            })
        }
        _ => None,
    }
}

/// What the report must say, worked out from the frames cut.
#[derive(Debug, Default, PartialEq, Eq)]
struct Feed {
    packets_captured_short: u64,
    headers_not_captured: u64,
    messages_not_captured: u64,
    bytes_not_captured: u64,
    /// Messages captured whole (each an ITCH message of a type synth sends: in `itch_types`).
    whole: u64,
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Direction {
    segments_captured_short: u64,
    bytes_not_captured: u64,
    /// One past the highest sequence number the direction carried so far.
    end: Option<u32>,
}

#[derive(Debug, Default)]
struct Expected {
    feeds: [Feed; 2],
    /// To the exchange, from it.
    dirs: [Direction; 2],
    frames: u64,
    bytes: u64,
    max_caplen: u64,
    /// Sequences captured whole on either feed: the ticks.
    ticks: BTreeSet<u64>,
}

/// Cuts `records` to `snap` bytes (the frame at `header_cut`, a feed packet, inside its MoldUDP64
/// header instead) and works out what the report must say of them.
fn cut(records: &[Record], snap: usize, header_cut: Option<usize>) -> (Vec<Record>, Expected) {
    let mut e = Expected::default();
    let mut out = Vec::new();
    for (i, (t, data, wire)) in records.iter().enumerate() {
        assert_eq!(data.len(), *wire as usize, "synth writes whole frames");
        let l = l4(data);
        let caplen = match (l.as_ref(), header_cut) {
            (Some(l), Some(k)) if k == i => l.at + 10,
            _ => snap.min(data.len()),
        };
        out.push((*t, data[..caplen].to_vec(), *wire));
        let Some(l) = l else { continue };
        let captured = caplen.saturating_sub(l.at).min(l.len);
        let not_captured = (l.len - captured) as u64;
        let payload = &data[l.at..l.at + l.len];
        if l.udp {
            let Some(fi) = [FEED_A, FEED_B].iter().position(|&(g, p)| g == l.dst && p == l.dport) else { continue };
            let f = &mut e.feeds[fi];
            let count = u16::from_be_bytes([payload[18], payload[19]]);
            let count = if count == 0xffff { 0 } else { count };
            let seq = u64::from_be_bytes(payload[10..18].try_into().unwrap());
            let mut whole = 0;
            if captured >= 20 {
                let mut at = 20;
                for k in 0..count {
                    let len = usize::from(u16::from_be_bytes([payload[at], payload[at + 1]]));
                    if at + 2 + len > captured {
                        break;
                    }
                    at += 2 + len;
                    whole += 1;
                    e.ticks.insert(seq + u64::from(k));
                }
            }
            f.whole += u64::from(whole);
            if not_captured > 0 {
                f.packets_captured_short += 1;
                f.bytes_not_captured += not_captured;
                if captured < 20 {
                    f.headers_not_captured += 1;
                } else {
                    f.messages_not_captured += u64::from(count - whole);
                }
            }
        } else {
            let to_exchange = l.dport == EXCHANGE_PORT;
            if !to_exchange && l.sport != EXCHANGE_PORT {
                continue;
            }
            let d = &mut e.dirs[usize::from(!to_exchange)];
            let end = l.seq.wrapping_add(l.len as u32);
            if not_captured > 0 {
                // The bytes cut that the stream had not passed yet (a retransmission's were skipped).
                let from = l.seq.wrapping_add(captured as u32);
                let from = match d.end {
                    Some(e) if (e.wrapping_sub(from) as i32) > 0 => e,
                    _ => from,
                };
                d.segments_captured_short += 1;
                d.bytes_not_captured += u64::try_from(end.wrapping_sub(from) as i32).unwrap_or(0);
            }
            if d.end.is_none_or(|e| (end.wrapping_sub(e) as i32) > 0) {
                d.end = Some(end);
            }
        }
        if not_captured > 0 {
            e.frames += 1;
            e.bytes += not_captured;
            e.max_caplen = e.max_caplen.max(caplen as u64);
        }
    }
    (out, e)
}

fn check(r: &serde_json::Value, e: &Expected, what: &str) {
    for (fi, f) in e.feeds.iter().enumerate() {
        let j = &r["feeds"][fi];
        let get = |k: &str| j.get(k).map_or(0, |v| v.as_u64().unwrap());
        let itch: u64 = j["itch_types"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
        let got = Feed {
            packets_captured_short: get("packets_captured_short"),
            headers_not_captured: get("headers_not_captured"),
            messages_not_captured: get("messages_not_captured"),
            bytes_not_captured: get("bytes_not_captured"),
            whole: itch,
        };
        assert_eq!(&got, f, "{what}: feed {}", j["feed"]);
        assert_eq!(j["malformed_packets"], 0, "{what}: {j}");
        assert_eq!(j["itch_truncated"], 0, "{what}: {j}");
    }
    let conn = &r["connections"][0];
    for (k, name) in ["to_exchange", "from_exchange"].iter().enumerate() {
        let j = &conn[name];
        let get = |k: &str| j.get(k).map_or(0, |v| v.as_u64().unwrap());
        let got = (get("segments_captured_short"), get("bytes_not_captured"));
        assert_eq!(got, (e.dirs[k].segments_captured_short, e.dirs[k].bytes_not_captured), "{what}: {name}");
        assert_eq!((j["tcp"]["holes"].as_u64(), j["tcp"]["hole_bytes"].as_u64()), (Some(0), Some(0)), "{what}: {j}");
    }
    let c = &r["counters"];
    // Present only when not 0.
    let get = |k: &str| c.get(k).map_or(0, |v| v.as_u64().unwrap());
    let got = (get("frames_captured_short"), get("bytes_not_captured"), get("captured_short_max_bytes"));
    assert_eq!(got, (e.frames, e.bytes, e.max_caplen), "{what}");
    assert_eq!(c["ticks"], e.ticks.len() as u64, "{what}: the messages captured whole are the ticks");
    assert_eq!(c["malformed_frames"], 0, "{what}");
}

#[test]
fn frames_cut_by_a_snap_length_are_counted_as_not_captured() {
    let dir = tmpdir("captured-short");
    let whole = synth_pcap(&dir, "s.pcap", 3_000);
    let records = read_pcap(&whole);
    // The 40th packet of feed A announcing messages, cut inside its header.
    let header_cut = records
        .iter()
        .enumerate()
        .filter(|(_, (_, d, _))| {
            l4(d).is_some_and(|l| l.udp && (l.dst, l.dport) == FEED_A && d[l.at + 18..l.at + 20] != [0, 0])
        })
        .nth(40)
        .map(|(i, (_, d, _))| (i, u16::from_be_bytes(l4(d).map(|l| [d[l.at + 18], d[l.at + 19]]).unwrap())))
        .unwrap();
    let cap = dir.join("cut.pcap");
    // 120 bytes: a packet's header and first message or two (the rest cut), most orders and every
    // response cut.
    for (snap, header) in [(120, None), (120, Some(header_cut.0)), (100_000, None)] {
        let (cut_records, e) = cut(&records, snap, header);
        write_records(&cap, &cut_records);
        let what = format!("snap {snap}, header cut {header:?}");
        if snap < 100_000 {
            // Most packets lose messages; an order now and then, and most responses, are cut.
            let (feeds, dirs) = (&e.feeds, &e.dirs);
            assert!(
                feeds.iter().all(|f| f.packets_captured_short > 1_000 && f.messages_not_captured > 1_000),
                "{feeds:?}"
            );
            assert!(dirs.iter().all(|d| d.segments_captured_short > 0 && d.bytes_not_captured > 0), "{dirs:?}");
        } else {
            assert_eq!(e.frames, 0);
        }
        for rule in [&["--match", r"token:T(\d+)"][..], &[][..]] {
            let args = [&FLOWS[..], rule].concat();
            let r = analyze_json(&args, &cap);
            check(&r, &e, &what);
            // A header cut leaves its messages missing: the one gap of feed A.
            let gaps = |fi: usize| (r["feeds"][fi]["gaps"].as_u64(), r["feeds"][fi]["missing"].as_u64());
            match header {
                Some(_) => assert_eq!(gaps(0), (Some(1), Some(u64::from(header_cut.1))), "{what}"),
                None => assert_eq!(gaps(0), (Some(0), Some(0)), "{what}"),
            }
            assert_eq!(gaps(1), (Some(0), Some(0)), "{what}");
            // (The symbol rule's note on its lower bounds is there whenever it matched: analyze_bounds.rs.)
            let notes: Vec<&str> = r["notes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().unwrap())
                .filter(|n| !n.starts_with("the symbol rule timed each order"))
                .collect();
            let cut_note = format!(
                "{} frames of the feeds and order sessions were captured short, at most {} bytes of each: {} bytes \
                 of payload not captured; ",
                e.frames, e.max_caplen, e.bytes
            );
            assert_eq!(
                notes.iter().filter(|n| n.starts_with(&cut_note)).count(),
                usize::from(e.frames > 0),
                "{notes:?}"
            );
            assert_eq!(notes.len(), usize::from(e.frames > 0), "{what}: {notes:?}");
        }
        // The terminal: no feed taken for another protocol; the note, with the fix.
        let text = analyze_text(&FLOWS, &cap);
        assert!(!text.contains("may not be MoldUDP64"), "{text}");
        assert_eq!(text.matches(" 0 malformed packets").count(), 2, "{text}");
        let fix = "Capture with a larger snap length (tcpdump -s 0, capture --snaplen 0); capture --source ebpf \
                   keeps the headers and --snap-payload bytes (64 by default), 256 bytes of frame at most: for \
                   larger packets, capture --source afpacket";
        assert_eq!(
            text.lines().filter(|l| l.starts_with("note: ") && l.ends_with(fix)).count(),
            usize::from(e.frames > 0),
            "{text}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
