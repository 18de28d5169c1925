//! Arista 7280 0xD28B headers: tcpdump's own test capture `tcpdump_tests/tests/arista_ether.pcap` (16 frames:
//! 64- and 48-bit, TAI and UTC, R/R2 and R3, inner IPv4 / VLAN / MPLS), checked against tcpdump run here
//! (`tcpdump -nn -e -r`, whose `print-arista.c` decodes the version nibbles and the timestamp).
//!
//! For the 48-bit form tcpdump prints the 16-bit seconds as they are (`Timestamp 60821.404038772`); the
//! expected full time is computed here: the value congruent to them mod 2^16 nearest the record time.

mod support;

use std::process::Command;
use support::Pcap;
use wirestamp_core::ClockQuality;
use wirestamp_core::dissect::dissect;
use wirestamp_core::trailer::{Decoded, TrailerDecoder, TrailerKind, TrailerMode};
use wirestamp_testdata::data_file;

const FILE: &str = "tcpdump_tests/tests/arista_ether.pcap";

#[derive(Debug)]
struct Line {
    tai: bool,
    full: bool,
    r3: bool,
    /// 64-bit: "2019-05-29 20:36:39.944724424"; 48-bit: "60821.404038772".
    ts: String,
}

fn tcpdump_lines() -> Vec<Line> {
    let out = Command::new("tcpdump")
        .args(["-nn", "-e", "-r"])
        .arg(data_file(FILE))
        .env("TZ", "UTC")
        .output()
        .expect("tcpdump runs");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .map(|l| {
            let after = |key: &str| {
                let i = l.find(key).unwrap_or_else(|| panic!("{key} in {l}")) + key.len();
                l[i..].to_owned()
            };
            // "2019-05-29 20:36:39.944724424: ethertype ..." or "60821.404038772: ethertype ...".
            let rest = after("), Timestamp ");
            let ts = rest[..rest.find(": ").expect("timestamp end")].to_owned();
            Line {
                tai: after("Timescale ").starts_with("TAI"),
                full: after("Format ").starts_with("64-bit"),
                r3: after("HwInfo ").starts_with("R3"),
                ts,
            }
        })
        .collect()
}

/// "2019-05-29 20:36:39.944724424" -> ns since the epoch (days from civil, integers).
fn civil_ns(s: &str) -> i64 {
    let (date, time) = s.split_once(' ').unwrap();
    let d: Vec<i64> = date.split('-').map(|x| x.parse().unwrap()).collect();
    let (hms, frac) = time.split_once('.').unwrap();
    let t: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    let (y, m) = if d[1] <= 2 { (d[0] - 1, d[1] + 9) } else { (d[0], d[1] - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + (153 * m + 2) / 5 + d[2] - 1;
    let days = era * 146_097 + doe - 719_468;
    (days * 86_400 + t[0] * 3600 + t[1] * 60 + t[2]) * 1_000_000_000 + format!("{frac:0<9}").parse::<i64>().unwrap()
}

#[test]
fn arista_ether_matches_tcpdump() {
    let lines = tcpdump_lines();
    let pcap = Pcap::read(&data_file(FILE));
    assert_eq!(lines.len(), 16);
    assert_eq!(pcap.records.len(), 16);
    let mut dec = TrailerDecoder::new(TrailerMode::Auto);
    let (mut short, mut tai, mut r3) = (0, 0, 0);
    for (i, l) in lines.iter().enumerate() {
        let f = pcap.frame(i);
        let d = dissect(f.data, f.link);
        let Ok(Decoded::Stamp(s)) = dec.decode(&f, &d) else { panic!("frame {i}: no stamp") };
        assert_eq!((s.kind, s.trailer_len, s.tai), (TrailerKind::Arista7280, 0, l.tai), "frame {i}");
        let want = if l.full {
            assert!(s.quality.is_clean(), "frame {i}");
            civil_ns(&l.ts)
        } else {
            short += 1;
            assert!(s.quality.contains(ClockQuality::EXTENDED), "frame {i}");
            let (sec16, ns) = l.ts.split_once('.').unwrap();
            let sec16: i64 = sec16.parse().unwrap();
            let rec_sec = f.ts_ns / 1_000_000_000;
            // Candidates in the record time's 2^16 block and its neighbours; the nearest wins.
            let block = rec_sec - rec_sec % 65_536;
            let sec = [block - 65_536, block, block + 65_536]
                .into_iter()
                .map(|b| b + sec16)
                .min_by_key(|c| (c - rec_sec).abs())
                .unwrap();
            sec * 1_000_000_000 + format!("{ns:0<9}").parse::<i64>().unwrap()
        };
        assert_eq!(s.time_ns, want, "frame {i}: {l:?}");
        // The device clock runs within a second of the capture clock in this file.
        assert!((s.time_ns - f.ts_ns).abs() < 1_000_000_000, "frame {i}");
        tai += l.tai as usize;
        r3 += l.r3 as usize;
    }
    assert_eq!((short, tai, r3), (8, 8, 4));
    assert_eq!(dec.stats().stamped.arista7280, 16);
    // Forced 7280 validates on the first frame.
    let mut forced = TrailerDecoder::new(TrailerMode::Forced(TrailerKind::Arista7280));
    let f = pcap.frame(0);
    assert!(matches!(forced.decode(&f, &dissect(f.data, f.link)), Ok(Decoded::Stamp(_))));
}
