//! Counter formats: Exablaze/Cisco Fusion 32-bit counter (`exa.mode.*`) and Arista 7150 31-bit tick
//! (`hwts_arista7150/`). tshark cannot decode these timestamps, so the expected values come from the
//! frame bytes and keyframe fields as tshark extracts them (`-x` hex dumps, `data.data`, `ip.len`), put
//! through the formulas below, written here independently of the decoder:
//!
//! - Keyframe: the newest one in file order (per file there is a single device).
//! - Counter position: the last 4 bytes when 4 bytes follow the IP datagram, the 4 before the last 4
//!   when 8 follow (counter, then FCS). The `exa.mode.*` data frames carry a bogus IPv4 header (version
//!   0, no length), and short frames carry Ethernet padding before the counter: there the mode the file
//!   is named after decides (fcs, fcsu: last 4; append: before the FCS).
//! - Native Fusion keyframe (`EXKF`): `t = utc + floor(((c - counter) mod 2^32) * 10^9 / freq)`, the Cisco
//!   decoder's `record_process.cpp` formula.
//! - 7150 and Fusion-compat keyframes: `ticks = ((c & 0xFFFFFF00) >> 1) | (c & 0x7F)`,
//!   `d = (ticks - asic_time) mod 2^31`, taken as `d - 2^31` when `d >= 2^30` (stamped before the
//!   keyframe: PCAPDecoder's use of the previous keyframe), `t = utc + floor(d * ns_per_tick)` with
//!   `ns_per_tick = 20/7 * skew_num/skew_den` (v2, PCAPDecoder), or for v1 the ratio
//!   `(utc_k - utc_k-1) / (asic_k - asic_k-1)` to the previous keyframe (20/7 for the first).
//! - `sub_ns` = the remainder of that division in units of 2^-32 ns.
//!
//! Besides, every stamp must run with the record clock: between two stamped frames the device time and the
//! record time advance by the same amount within 2 ms + 500 ppm, and the device/record offset stays within
//! 1 s of the keyframe's.

mod support;

use support::{Pcap, tshark_bytes, unhex};
use wirestamp_core::dissect::dissect;
use wirestamp_core::trailer::{Decoded, TrailerDecoder, TrailerKind, TrailerMode, TrailerStamp};
use wirestamp_testdata::{data_file, epoch_to_ns, tshark_fields};

/// A keyframe as the test reads it from tshark's `data.data`.
#[derive(Debug, Clone, Copy)]
struct Kf {
    utc: i128,
    ticks: i128,
    /// ns per tick = num / den.
    num: i128,
    den: i128,
    compressed: bool,
    rec: i64,
}

#[derive(Debug, PartialEq, Eq)]
enum Want {
    None,
    /// The time the keyframe left its device: its UTC sample plus `kf_timestamp - asic_time` ticks (7150,
    /// when 0..=3.5e9; else nothing) at the keyframe's rate.
    Keyframe(i64),
    Stamp {
        time_ns: i64,
        sub_ns: u32,
        wrapped: bool,
    },
}

fn be64(b: &[u8], at: usize) -> i128 {
    u64::from_be_bytes(b[at..at + 8].try_into().unwrap()) as i128
}

/// Expected outcome of every frame of `rel`, from tshark only.
fn expected(rel: &str, mode_trailing: usize) -> (Vec<Want>, Vec<Option<Kf>>) {
    let path = data_file(rel);
    let rows =
        tshark_fields(&path, &[], &["frame.time_epoch", "eth.type", "vlan.etype", "ip.proto", "ip.len", "data.data"]);
    let bytes = tshark_bytes(&path);
    assert_eq!(rows.len(), bytes.len(), "{rel}");
    let mut kf: Option<Kf> = None;
    let mut want = Vec::new();
    let mut used = Vec::new();
    for (r, b) in rows.iter().zip(&bytes) {
        let rec = epoch_to_ns(&r[0]);
        let l2 = if r[1] == "0x8100" { 18 } else { 14 };
        let ip_len: Option<usize> = r[4].parse().ok();
        let data = unhex(&r[5]);
        let is_native = r[1] == "0x88b5" || r[2] == "0x88b5";
        let is_253 = r[3] == "253";
        if is_native || is_253 {
            let prev = kf;
            let k = if data.len() >= 40 && (&data[..4] == b"EXKF" || data[..5] == [1, 0, 0, 0, 0]) {
                Kf {
                    utc: be64(&data, 8),
                    ticks: be64(&data, 16),
                    num: 1_000_000_000,
                    den: be64(&data, 24),
                    compressed: false,
                    rec,
                }
            } else if data.len() == 62 {
                let (sn, sd) = (be64(&data, 24), be64(&data, 32));
                Kf { utc: be64(&data, 8), ticks: be64(&data, 0), num: 20 * sn, den: 7 * sd, compressed: true, rec }
            } else {
                assert_eq!(data.len(), 46, "{rel}: keyframe length");
                let (utc, ticks) = (be64(&data, 8), be64(&data, 0));
                let (num, den) = match prev {
                    Some(p) if utc - p.utc >= 500_000_000 => {
                        let (n, d) = (utc - p.utc, ticks - p.ticks);
                        // Within 2 % of 350 MHz, so the decoder's sanity check keeps it.
                        assert!((n * 7 - d * 20).abs() * 50 < d * 20, "{rel}: measured rate {n}/{d}");
                        (n, d)
                    }
                    _ => (20, 7),
                };
                Kf { utc, ticks, num, den, compressed: true, rec }
            };
            kf = Some(k);
            let kt = match data.len() {
                62 => be64(&data, 40),
                46 => be64(&data, 24),
                _ => k.ticks,
            };
            let to_left = if (0..=3_500_000_000).contains(&(kt - k.ticks)) { kt - k.ticks } else { 0 };
            want.push(Want::Keyframe((k.utc + (to_left * k.num).div_euclid(k.den)) as i64));
            used.push(Some(k));
            continue;
        }
        let Some(k) = kf else {
            want.push(Want::None);
            used.push(None);
            continue;
        };
        let trailing = ip_len.map_or(mode_trailing, |n| b.len() - l2 - n);
        let at = match trailing {
            4 => b.len() - 4,
            8 => b.len() - 8,
            // Ethernet padding of a minimum-size (60-byte) frame sits before the counter.
            _ if b.len() - mode_trailing == 60 => b.len() - mode_trailing,
            other => panic!("{rel}: {other} bytes after the IP datagram"),
        };
        let c = u32::from_be_bytes(b[at..at + 4].try_into().unwrap()) as i128;
        let (d, wrapped) = if k.compressed {
            let t = ((c & 0xFFFF_FF00) >> 1) | (c & 0x7F);
            let k31 = k.ticks & 0x7FFF_FFFF;
            let d = (t - k31).rem_euclid(1 << 31);
            (if d >= 1 << 30 { d - (1 << 31) } else { d }, t < k31)
        } else {
            let k32 = k.ticks & 0xFFFF_FFFF;
            ((c - k32).rem_euclid(1 << 32), c < k32)
        };
        let exact = d * k.num;
        let time_ns = (k.utc + exact.div_euclid(k.den)) as i64;
        let sub_ns = ((exact.rem_euclid(k.den) << 32) / k.den) as u32;
        want.push(Want::Stamp { time_ns, sub_ns, wrapped });
        used.push(Some(k));
    }
    (want, used)
}

/// Decodes `rel` with `mode` and compares with [`expected`]; returns (keyframes, stamps, wrapped stamps).
fn run(rel: &str, mode: TrailerMode, kind: TrailerKind) -> (usize, usize, usize) {
    let (want, kfs) = expected(rel, if rel.contains("append") { 8 } else { 4 });
    let pcap = Pcap::read(&data_file(rel));
    assert_eq!(pcap.records.len(), want.len());
    let mut dec = TrailerDecoder::new(mode);
    let (mut n_kf, mut n_st, mut n_wrap) = (0, 0, 0);
    let mut prev: Option<(i64, TrailerStamp)> = None;
    for (i, w) in want.iter().enumerate() {
        let f = pcap.frame(i);
        let got = dec.decode(&f, &dissect(f.data, f.link)).unwrap_or_else(|e| panic!("{rel} frame {i}: {e}"));
        match (w, got) {
            (Want::None, Decoded::None) => {}
            (Want::Keyframe(left_ns), Decoded::Keyframe(k, got_ns)) => {
                assert_eq!((k, got_ns), (kind, *left_ns), "{rel} frame {i}: keyframe's time");
                n_kf += 1;
            }
            (Want::Stamp { time_ns, sub_ns, wrapped }, Decoded::Stamp(s)) => {
                assert_eq!(s.kind, kind, "{rel} frame {i}");
                assert_eq!((s.time_ns, s.sub_ns), (*time_ns, *sub_ns), "{rel} frame {i}: time to the 2^-32 ns");
                let k = kfs[i].unwrap();
                // Runs with the record clock.
                let off = s.time_ns - f.ts_ns;
                let kf_off = (k.utc as i64) - k.rec;
                assert!((off - kf_off).abs() < 1_000_000_000, "{rel} frame {i}: offset {off} vs keyframe {kf_off}");
                assert!(off.abs() < 3_600_000_000_000, "{rel} frame {i}: {off} ns from the record time");
                if let Some((prev_rec, p)) = prev {
                    let interval = f.ts_ns - prev_rec;
                    let drift = (s.time_ns - p.time_ns) - interval;
                    // 2 ms of capture jitter, plus 500 ppm: exnic-fcsu's host clock runs ~300 ppm off the device.
                    let bound = 2_000_000 + interval.abs() / 2_000;
                    assert!(drift.abs() <= bound, "{rel} frame {i}: device and record clocks differ by {drift} ns");
                }
                prev = Some((f.ts_ns, s));
                let age = s.keyframe_age_ns.expect("counter stamps carry the keyframe age");
                assert_eq!(age, s.time_ns - k.utc as i64, "{rel} frame {i}");
                assert!(!s.quality.contains(wirestamp_core::ClockQuality::STALE_KEYFRAME), "{rel} frame {i}");
                assert!(s.trailer_len == 4 || s.trailer_len == 8);
                n_st += 1;
                n_wrap += *wrapped as usize;
            }
            (w, got) => panic!("{rel} frame {i}: want {w:?}, got {got:?}"),
        }
    }
    let st = dec.stats();
    assert_eq!((st.keyframes.get(kind) as usize, st.stamped.get(kind) as usize), (n_kf, n_st), "{rel}");
    assert_eq!(st.rejected, 0, "{rel}");
    (n_kf, n_st, n_wrap)
}

#[test]
fn fusion_fcs_mode() {
    assert_eq!(run("hwts_exablaze_n3550/exa.mode.fcs.pcap", TrailerMode::Auto, TrailerKind::ExablazeFusion).0, 18);
    let (k, s, _) = run(
        "hwts_exablaze_n3550/exa.mode.fcs.pcap",
        TrailerMode::Forced(TrailerKind::ExablazeFusion),
        TrailerKind::ExablazeFusion,
    );
    assert_eq!((k, s), (18, 3));
}

#[test]
fn fusion_append_mode() {
    let (k, s, _) = run("hwts_exablaze_n3550/exa.mode.append.pcap", TrailerMode::Auto, TrailerKind::ExablazeFusion);
    assert_eq!((k, s), (33, 3));
}

#[test]
fn fusion_fcs_compat_mode() {
    let (k, s, _) = run("hwts_exablaze_n3550/exa.mode.fcs-compat.pcap", TrailerMode::Auto, TrailerKind::ExablazeFusion);
    assert_eq!((k, s), (13, 3));
}

#[test]
fn fusion_append_compat_mode() {
    let (k, s, _) =
        run("hwts_exablaze_n3550/exa.mode.append-compat.pcap", TrailerMode::Auto, TrailerKind::ExablazeFusion);
    assert_eq!((k, s), (12, 3));
}

#[test]
fn fusion_exnic_fcsu_v0_keyframes() {
    // Older native keyframes (version 0, first word 01 00 00 00) inside IPv4 protocol 253.
    let (k, s, _) = run("hwts_exablaze_n3550/exnic-fcsu.pcap", TrailerMode::Auto, TrailerKind::ExablazeFusion);
    assert_eq!((k, s), (23, 18));
}

#[test]
fn fusion_pingout_long_capture() {
    let (k, s, w) = run("hwts_exablaze_n3550/pingout.pcap", TrailerMode::Auto, TrailerKind::ExablazeFusion);
    assert_eq!((k, s), (2189, 1625));
    assert!(w > 0);
}

#[test]
fn arista7150_before_fcs_ptp_v2() {
    let (k, s, w) = run("hwts_arista7150/pcaps_ptpKFbeforeFCS.pcap", TrailerMode::Auto, TrailerKind::Arista7150);
    assert_eq!((k, s), (264, 136));
    assert!(w > 0, "the 31-bit tick wraps (~6.1 s) during this 139 s capture");
}

#[test]
fn arista7150_replace_fcs_ptp_v2() {
    // Frame 1 precedes the first keyframe: not stamped.
    let (k, s, w) = run("hwts_arista7150/pcaps_ptpKFreplaceFCS.pcap", TrailerMode::Auto, TrailerKind::Arista7150);
    assert_eq!((k, s), (115, 56));
    assert!(w > 0);
    let (k, s, _) = run(
        "hwts_arista7150/pcaps_ptpKFreplaceFCS.pcap",
        TrailerMode::Forced(TrailerKind::Arista7150),
        TrailerKind::Arista7150,
    );
    assert_eq!((k, s), (115, 56));
}

#[test]
fn arista7150_test1_v1_keyframes() {
    let (k, s, _) = run("hwts_arista7150/test-1.pcap", TrailerMode::Auto, TrailerKind::Arista7150);
    assert_eq!((k, s), (14, 70));
}

#[test]
fn arista7150_test2_v2_keyframes() {
    let (k, s, _) = run("hwts_arista7150/test-2.pcap", TrailerMode::Auto, TrailerKind::Arista7150);
    assert_eq!((k, s), (10, 50));
}

#[test]
fn forcing_the_other_counter_kind_finds_no_keyframe() {
    // Fusion keyframes are not 7150 keyframes (and vice versa): with the wrong kind forced, frames wait for
    // a keyframe and, past 10 s of record time, fail with "no keyframe yet".
    let pcap = Pcap::read(&data_file("hwts_arista7150/test-1.pcap"));
    let mut dec = TrailerDecoder::new(TrailerMode::Forced(TrailerKind::ExablazeFusion));
    let mut err = None;
    for i in 0..pcap.records.len() {
        let f = pcap.frame(i);
        match dec.decode(&f, &dissect(f.data, f.link)) {
            Ok(d) => assert_eq!(d, Decoded::None),
            Err(e) => {
                err = Some((i, e));
                break;
            }
        }
    }
    let (i, e) = err.expect("an error");
    assert!(pcap.records[i].ts_ns - pcap.records[0].ts_ns > 10_000_000_000);
    assert!(e.reason.starts_with("no keyframe yet"), "{}", e.reason);
    // It says how far it looked: the frames up to this one, and the record time they span.
    let waited_ms = (pcap.records[i].ts_ns - pcap.records[0].ts_ns) / 1_000_000;
    let want = format!("no keyframe yet: none in the first {} frames ({waited_ms} ms of record time;", i + 1);
    assert!(e.reason.starts_with(&want), "{} / {want}", e.reason);
}
