//! Exablaze/Cisco Fusion HPT trailers in `fusion_hpt_example.pcap`, checked against the saved tshark 4.0.17
//! oracle CSV and against tshark run here with `--enable-heuristic exablaze_eth`.

mod support;

use support::{Pcap, parse_tshark_abs_time};
use wirestamp_core::dissect::dissect;
use wirestamp_core::trailer::{Decoded, TrailerDecoder, TrailerKind, TrailerMode, TrailerStamp};
use wirestamp_testdata::{data_file, epoch_to_ns, tshark_fields};

const FILE: &str = "hwts_exablaze_n3550/fusion_hpt_example.pcap";

fn decode_all(mode: TrailerMode) -> (Pcap, Vec<TrailerStamp>) {
    let pcap = Pcap::read(&data_file(FILE));
    let mut dec = TrailerDecoder::new(mode);
    let stamps = (0..pcap.records.len())
        .map(|i| {
            let f = pcap.frame(i);
            match dec.decode(&f, &dissect(f.data, f.link)) {
                Ok(Decoded::Stamp(s)) => s,
                other => panic!("frame {i}: {other:?}"),
            }
        })
        .collect();
    assert_eq!(dec.stats().stamped.exablaze_hpt, pcap.records.len() as u64);
    (pcap, stamps)
}

/// The exact fraction of a second, in units of 10^-15 s, from our ns and 2^-32 ns parts.
fn femto(s: &TrailerStamp) -> i64 {
    (s.time_ns % 1_000_000_000) * 1_000_000 + ((s.sub_ns as i64 * 1_000_000) >> 32)
}

/// tshark prints the fraction as a double ("0.170404442575091", fewer digits when they end in 0).
fn femto_of(frac: &str) -> i64 {
    let digits = frac.strip_prefix("0.").unwrap_or_else(|| panic!("fraction {frac}"));
    assert!(digits.len() <= 15, "{frac}");
    format!("{digits:0<15}").parse().unwrap()
}

/// `want`: original FCS, device, port, seconds, fractional seconds, as tshark prints them.
fn check(pcap: &Pcap, i: usize, s: &TrailerStamp, want: [&str; 5]) {
    let [fcs, device, port, sec, frac] = want;
    assert_eq!(s.kind, TrailerKind::ExablazeHpt);
    assert_eq!(s.time_ns / 1_000_000_000, sec.parse::<i64>().unwrap(), "frame {i} seconds");
    // 15 digits of a double: the exact value agrees within one unit of the last digit.
    let (ours, theirs) = (femto(s), femto_of(frac));
    assert!((ours - theirs).abs() <= 1, "frame {i}: {ours} vs {theirs}");
    assert_eq!((s.device, s.port), (Some(device.parse().unwrap()), Some(port.parse().unwrap())), "frame {i}");
    let f = pcap.frame(i);
    // 16-byte trailer then a new FCS (captured here, as tshark's dissector also finds); it starts with
    // the original FCS.
    assert_eq!(s.trailer_len, 20, "frame {i}");
    let start = f.data.len() - 20;
    let orig = u32::from_str_radix(fcs.trim_start_matches("0x"), 16).unwrap();
    assert_eq!(u32::from_be_bytes(f.data[start..start + 4].try_into().unwrap()), orig, "frame {i}");
    if let Some(ip) = dissect(f.data, f.link).ip {
        assert!(ip.end <= start);
    }
}

#[test]
fn hpt_matches_saved_oracle_csv() {
    let csv = std::fs::read_to_string(data_file("oracles_tshark_4.0.17/fusion_hpt_example.exablaze.csv")).unwrap();
    let (pcap, stamps) = decode_all(TrailerMode::Auto);
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 24);
    assert_eq!(stamps.len(), 24);
    for (row, s) in rows.iter().zip(&stamps) {
        // frame.number, frame.time_epoch, original_fcs, device, port, seconds, fractional_seconds
        let i: usize = row[0].parse::<usize>().unwrap() - 1;
        assert_eq!(pcap.records[i].ts_ns, epoch_to_ns(row[1]));
        check(&pcap, i, s, [row[2], row[3], row[4], row[5], row[6]]);
        // In this capture the record time is the trailer time truncated to the ns.
        assert_eq!(s.time_ns, epoch_to_ns(row[1]), "frame {i}");
    }
}

#[test]
fn hpt_matches_live_tshark() {
    let fields = [
        "exablaze.timestamp",
        "exablaze.original_fcs",
        "exablaze.device",
        "exablaze.port",
        "exablaze.timestamp.seconds",
        "exablaze.timestamp.fractional_seconds",
    ];
    let rows = tshark_fields(&data_file(FILE), &["--enable-heuristic", "exablaze_eth"], &fields);
    let (pcap, stamps) = decode_all(TrailerMode::Forced(TrailerKind::ExablazeHpt));
    assert_eq!(rows.len(), stamps.len());
    for (i, (r, s)) in rows.iter().zip(&stamps).enumerate() {
        assert_eq!(s.time_ns, parse_tshark_abs_time(&r[0]), "frame {i}: absolute time to the ns");
        check(&pcap, i, s, [&r[1], &r[2], &r[3], &r[4], &r[5]]);
    }
}
