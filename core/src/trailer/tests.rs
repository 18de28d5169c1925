//! Decoder-level tests: modes, forced validation, and robustness against arbitrary bytes.

use super::*;
use crate::dissect::dissect;
use crate::frame::LinkType;
use crate::time::TsSource;
use wirestamp_testdata::Rng;

fn frame(data: &[u8], ts_ns: i64) -> Frame<'_> {
    Frame::record(data, ts_ns, LinkType::Ethernet)
}

#[test]
fn mode_parsing() {
    assert_eq!("auto".parse::<TrailerMode>(), Ok(TrailerMode::Auto));
    assert_eq!("none".parse::<TrailerMode>(), Ok(TrailerMode::Off));
    for k in TrailerKind::ALL {
        assert_eq!(k.name().parse::<TrailerMode>(), Ok(TrailerMode::Forced(k)));
    }
    assert!("metawatch".parse::<TrailerMode>().is_err());
}

#[test]
fn crc32_check_value() {
    // The CRC-32/ISO-HDLC check value.
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
}

#[test]
fn never_panics_on_garbage_or_truncation() {
    // Seeds that reach every decoder: Metamako/HPT-shaped tails, a 7150 v2 keyframe, a Fusion native
    // keyframe, a 0xD28B header; then every prefix of each, and random bit flips.
    let ts = 1_700_000_000_000_000_000i64;
    let sec = (ts / 1_000_000_000) as u32;
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    let mut mm = vec![0u8; 60];
    mm[12] = 0x08;
    mm.extend_from_slice(&[0; 4]);
    mm.extend_from_slice(&sec.to_be_bytes());
    mm.extend_from_slice(&[0, 0, 0, 1, 0x02, 0, 1, 2]);
    seeds.push(mm);
    let mut kf = vec![0xffu8; 6];
    kf.extend_from_slice(&[0; 6]);
    kf.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 82, 0, 0, 0, 0, 64, 253, 0, 0, 1, 2, 3, 4, 111, 111, 111, 111]);
    for v in [0x1234u64, ts as u64, 1, 1, 1, 5, 0] {
        kf.extend_from_slice(&v.to_be_bytes());
    }
    kf.extend_from_slice(&[0, 9, 0, 1, 2, 0, 0, 0, 0, 0]);
    seeds.push(kf);
    let mut nk = vec![0xffu8; 12];
    nk.extend_from_slice(&[0x88, 0xB5]);
    nk.extend_from_slice(b"EXKF\x01\0\0\0");
    for v in [ts as u64, 77, 350_000_000, 70] {
        nk.extend_from_slice(&v.to_be_bytes());
    }
    nk.extend_from_slice(&[0; 24]);
    seeds.push(nk);
    let mut ah = vec![0u8; 12];
    ah.extend_from_slice(&[0xD2, 0x8B, 0, 1, 0x01, 0x20, 0xAB, 0xCD, 0, 0, 0, 1, 0x08, 0x00]);
    ah.extend_from_slice(&[0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 1, 2, 3, 4]);
    seeds.push(ah);

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let modes: Vec<TrailerMode> =
        [TrailerMode::Auto, TrailerMode::Off].into_iter().chain(TrailerKind::ALL.map(TrailerMode::Forced)).collect();
    for mode in modes {
        let mut dec = TrailerDecoder::new(mode);
        for seed in &seeds {
            for cut in 0..=seed.len() {
                let data = &seed[..cut];
                for fcs_len in [None, Some(0), Some(4)] {
                    let f = Frame { fcs_len, ..frame(data, ts) };
                    let _ = dec.decode(&f, &dissect(data, LinkType::Ethernet));
                }
                // Snap-truncated: wire_len larger than the capture.
                let f = Frame { wire_len: seed.len() as u32 + 4, ..frame(data, ts) };
                let _ = dec.decode(&f, &dissect(data, LinkType::Ethernet));
            }
            for round in 0..400 {
                let mut v = seed.clone();
                for _ in 0..(1 + round % 8) {
                    let i = (rng.next_u64() as usize) % v.len();
                    v[i] ^= (rng.next_u64() as u8) | 1;
                }
                if round % 5 == 0 {
                    v.truncate((rng.next_u64() as usize) % (v.len() + 1));
                }
                let t = if round % 7 == 0 { i64::MIN + (rng.next_u64() % 1000) as i64 } else { ts };
                let src = if round % 11 == 0 { TsSource::PcapngNone } else { TsSource::PcapRecord };
                let f = Frame { ts_source: src, ..frame(&v, t) };
                let _ = dec.decode(&f, &dissect(&v, LinkType::Ethernet));
            }
        }
        for len in 0..200 {
            let v: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            for link in [LinkType::Ethernet, LinkType::Raw, LinkType::LinuxSll] {
                let f = Frame { link, ..frame(&v, ts) };
                let _ = dec.decode(&f, &dissect(&v, link));
            }
        }
        let _ = dec.finish();
        assert!(dec.stats().frames > 0);
    }
}

#[test]
fn off_mode_decodes_nothing() {
    let mut v = vec![0u8; 60];
    v.extend_from_slice(&[0; 4]);
    v.extend_from_slice(&1_700_000_000u32.to_be_bytes());
    v.extend_from_slice(&[0, 0, 0, 1, 0x01, 0, 1, 2]);
    let ts = 1_700_000_000_000_000_000;
    let d = dissect(&v, LinkType::Ethernet);
    let mut auto = TrailerDecoder::new(TrailerMode::Auto);
    assert!(matches!(auto.decode(&frame(&v, ts), &d), Ok(Decoded::Stamp(s)) if s.time_ns == ts + 1));
    let mut off = TrailerDecoder::new(TrailerMode::Off);
    assert_eq!(off.decode(&frame(&v, ts), &d), Ok(Decoded::None));
    assert_eq!(off.stats().no_trailer, 1);
}

// ---- Counter formats with hand-built frames -------------------------------------------------------

const U: u64 = 1_700_000_000_123_456_789; // keyframe UTC
const R: i64 = 1_700_000_000_500_000_000; // keyframe record time

/// Ethernet + IPv4 (proto, src, dst) + payload.
fn ipv4_frame(proto: u8, src: [u8; 4], dst: [u8; 4], payload: &[u8]) -> Vec<u8> {
    let mut v = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00];
    let total = (20 + payload.len()) as u16;
    v.extend_from_slice(&[0x45, 0, (total >> 8) as u8, total as u8, 0, 0, 0, 0, 64, proto, 0, 0]);
    v.extend_from_slice(&src);
    v.extend_from_slice(&dst);
    v.extend_from_slice(payload);
    v
}

/// A 7150 v2 keyframe (IPv4 proto 253 from 1.2.3.4), padded with a zero tick field.
fn kf_v2(asic: u64, utc: u64, last_sync: u64, skew: (u64, u64), kt: u64, device: u16) -> Vec<u8> {
    let mut p = Vec::new();
    for v in [asic, utc, last_sync, skew.0, skew.1, kt, 0] {
        p.extend_from_slice(&v.to_be_bytes());
    }
    p.extend_from_slice(&device.to_be_bytes());
    p.extend_from_slice(&[0, 37, 2, 0]);
    let mut f = ipv4_frame(253, [1, 2, 3, 4], [111, 111, 111, 111], &p);
    f.extend_from_slice(&[0; 4]);
    f
}

/// A 7150 v1 keyframe.
fn kf_v1(asic: u64, utc: u64, device: u16) -> Vec<u8> {
    let mut p = Vec::new();
    for v in [asic, utc, 0, asic, 0] {
        p.extend_from_slice(&v.to_be_bytes());
    }
    p.extend_from_slice(&device.to_be_bytes());
    p.extend_from_slice(&[0, 7, 2, 0]);
    ipv4_frame(253, [192, 168, 2, 102], [1, 1, 1, 1], &p)
}

/// The 4-byte field carrying 31-bit tick `t` (bit 7 left 0).
fn field7150(t: u64) -> [u8; 4] {
    let t = t as u32 & 0x7FFF_FFFF;
    (((t & 0x7FFF_FF80) << 1) | (t & 0x7F)).to_be_bytes()
}

/// A UDP frame whose FCS was replaced by `field`.
fn stamped(field: [u8; 4]) -> Vec<u8> {
    let mut f = ipv4_frame(17, [10, 0, 0, 1], [10, 0, 0, 2], &[0x30, 0x39, 0x30, 0x39, 0, 12, 0, 0, 1, 2, 3, 4]);
    f.extend_from_slice(&field);
    f
}

fn run(dec: &mut TrailerDecoder, data: &[u8], ts: i64) -> Decoded {
    dec.decode(&frame(data, ts), &dissect(data, LinkType::Ethernet)).unwrap()
}

fn stamp(d: Decoded) -> TrailerStamp {
    match d {
        Decoded::Stamp(s) => s,
        other => panic!("expected a stamp, got {other:?}"),
    }
}

/// A keyframe is timed by when it left the switch: its UTC sample plus `kf_timestamp - asic_time`
/// ticks at its skewed rate (7,000,000 ticks of 22/7 ns: 22 ms); a `kf_timestamp` before the sample
/// (or over 10 s after it) is not trusted, and the keyframe is timed by its sample.
#[test]
fn a7150_keyframe_is_timed_by_its_leaving() {
    let mut dec = TrailerDecoder::new(TrailerMode::Auto);
    let kf = kf_v2(5_000, U, 0, (11, 10), 5_000 + 7_000_000, 888);
    assert_eq!(run(&mut dec, &kf, R), Decoded::Keyframe(TrailerKind::Arista7150, U as i64 + 22_000_000));
    let kf = kf_v2(5_000, U + 1_000_000_000, 0, (11, 10), 4_000, 888);
    assert_eq!(
        run(&mut dec, &kf, R + 1_000_000_000),
        Decoded::Keyframe(TrailerKind::Arista7150, U as i64 + 1_000_000_000)
    );
}

#[test]
fn a7150_v2_skew_exact() {
    // Skew 11/10: 20/7 * 1.1 = 22/7 ns per tick. 7,000,000 ticks = 22 ms exactly.
    let mut dec = TrailerDecoder::new(TrailerMode::Auto);
    assert_eq!(
        run(&mut dec, &kf_v2(5_000, U, 0, (11, 10), 5_000, 888), R),
        Decoded::Keyframe(TrailerKind::Arista7150, U as i64)
    );
    let s = stamp(run(&mut dec, &stamped(field7150(5_000 + 7_000_000)), R + 22_000_000));
    assert_eq!((s.kind, s.time_ns, s.sub_ns, s.device), (TrailerKind::Arista7150, U as i64 + 22_000_000, 0, Some(888)));
    assert_eq!((s.trailer_len, s.keyframe_age_ns, s.quality), (4, Some(22_000_000), ClockQuality::default()));
    // One more tick: + 22/7 ns = 3 ns + 1/7 ns.
    let s = stamp(run(&mut dec, &stamped(field7150(5_000 + 7_000_001)), R + 22_000_003));
    assert_eq!((s.time_ns, s.sub_ns), (U as i64 + 22_000_003, ((1u64 << 32) / 7) as u32));
}

#[test]
fn a7150_tick_wrap_and_before_keyframe() {
    let mut dec = TrailerDecoder::new(TrailerMode::Auto);
    let asic = (7u64 << 31) + (1 << 31) - 100; // 100 ticks before the 31-bit wrap
    run(&mut dec, &kf_v2(asic, U, 0, (1, 1), asic, 1), R);
    // 150 ticks later the field reads 50: 150 * 20/7 = 428.57 ns.
    let s = stamp(run(&mut dec, &stamped(field7150(50)), R + 429));
    assert_eq!((s.time_ns, s.sub_ns), (U as i64 + 428, ((4u64 << 32) / 7) as u32));
    assert!(s.quality.is_clean());
    // Stamped 700 ticks (2 µs) before the keyframe's sample but received after it.
    let s = stamp(run(&mut dec, &stamped(field7150(asic - 700)), R + 1_000));
    assert_eq!(s.time_ns, U as i64 - 2_000);
    assert_eq!(s.keyframe_age_ns, Some(-2_000));
}

#[test]
fn a7150_multi_wrap_stale_and_too_old() {
    let mut dec = TrailerDecoder::new(TrailerMode::Auto);
    run(&mut dec, &kf_v2(1_000, U, 0, (1, 1), 1_000, 1), R);
    // 20 s = 7e9 ticks later: three wraps and a bit; only the record clock can tell.
    let s = stamp(run(&mut dec, &stamped(field7150(1_000 + 7_000_000_000)), R + 20_000_000_000));
    assert_eq!(s.time_ns, U as i64 + 20_000_000_000);
    assert!(s.quality.contains(ClockQuality::EXTENDED | ClockQuality::STALE_KEYFRAME));
    // 61 s: no stamp.
    assert_eq!(run(&mut dec, &stamped(field7150(1_000 + 21_350_000_000)), R + 61_000_000_000), Decoded::None);
    assert_eq!(dec.stats().keyframe_too_old, 1);
    assert_eq!((dec.stats().stale, dec.stats().extended), (1, 1));
}

#[test]
fn a7150_unsynced_when_last_sync_old() {
    let mut dec = TrailerDecoder::new(TrailerMode::Auto);
    // kf_timestamp 35e9 ticks -> 100 s of local clock; last sync at 89 s: 11 s ago (> 10 s).
    run(&mut dec, &kf_v2(35_000_000_000, U, 89_000_000_000, (1, 1), 35_000_000_000, 1), R);
    let s = stamp(run(&mut dec, &stamped(field7150(35_000_000_000 + 350)), R + 1_000));
    assert!(s.quality.contains(ClockQuality::UNSYNCED));
    assert_eq!(dec.stats().unsynced, 1);
    // Synced 1 s before: clean.
    run(&mut dec, &kf_v2(35_000_000_000, U, 99_000_000_000, (1, 1), 35_000_000_000, 1), R);
    let s = stamp(run(&mut dec, &stamped(field7150(35_000_000_000 + 350)), R + 1_000));
    assert!(s.quality.is_clean());
}

#[test]
fn a7150_keyframe_emission_offset() {
    // The keyframe left the switch 0.7 s (245e6 ticks) after its UTC sample; its record time refers to then.
    let mut dec = TrailerDecoder::new(TrailerMode::Auto);
    run(&mut dec, &kf_v2(1_000, U, 0, (1, 1), 1_000 + 245_000_000, 1), R);
    // A frame 0.1 s after the keyframe arrived: 0.8 s after the sample.
    let s = stamp(run(&mut dec, &stamped(field7150(1_000 + 280_000_000)), R + 100_000_000));
    assert_eq!(s.time_ns, U as i64 + 800_000_000);
    // Read against the sample instead, the same field would disagree by 0.7 s: nothing else matches.
    assert_eq!(run(&mut dec, &stamped(field7150(1_000 + 280_000_000)), R + 800_000_000), Decoded::None);
}

#[test]
fn garbage_counter_rejected_and_needs_keyframe() {
    let mut dec = TrailerDecoder::new(TrailerMode::Auto);
    // Before any keyframe, a counter-looking frame is not decoded.
    assert_eq!(run(&mut dec, &stamped(field7150(12_345)), R), Decoded::None);
    run(&mut dec, &kf_v2(1_000, U, 0, (1, 1), 1_000, 1), R);
    // Record clock says 1 s, the field says 3 s: rejected.
    assert_eq!(run(&mut dec, &stamped(field7150(1_000 + 1_050_000_000)), R + 1_000_000_000), Decoded::None);
    assert_eq!(dec.stats().rejected, 1);
    // Snap-truncated: the field is gone.
    let v = stamped(field7150(1_000 + 350_000_000));
    let f = Frame { wire_len: v.len() as u32 + 10, ..frame(&v, R + 1_000_000_000) };
    assert_eq!(dec.decode(&f, &dissect(&v, LinkType::Ethernet)), Ok(Decoded::None));
    assert_eq!(dec.stats().truncated, 1);
}

#[test]
fn a7150_without_record_time_uses_the_window() {
    let mut dec = TrailerDecoder::new(TrailerMode::Auto);
    run(&mut dec, &kf_v2(1_000, U, 0, (1, 1), 1_000, 1), R);
    let v = stamped(field7150(1_000 + 350_000_000));
    let f = Frame { ts_source: TsSource::PcapngNone, ..frame(&v, 0) };
    let s = stamp(dec.decode(&f, &dissect(&v, LinkType::Ethernet)).unwrap());
    assert_eq!(s.time_ns, U as i64 + 1_000_000_000);
}

#[test]
fn a7150_v1_frequency_estimated_between_keyframes() {
    let mut dec = TrailerDecoder::new(TrailerMode::Auto);
    run(&mut dec, &kf_v1(10_000, U, 3), R);
    // First keyframe: nominal 350 MHz.
    let s = stamp(run(&mut dec, &stamped(field7150(10_000 + 7)), R + 20));
    assert_eq!(s.time_ns, U as i64 + 20);
    // Second keyframe 1 s later with 350,035,000 ticks: a 100 ppm fast tick, 1e9/350035000 ns per tick.
    run(&mut dec, &kf_v1(10_000 + 350_035_000, U + 1_000_000_000, 3), R + 1_000_000_000);
    let s = stamp(run(&mut dec, &stamped(field7150(10_000 + 350_035_000 + 70_007_000)), R + 1_200_000_000));
    assert_eq!((s.time_ns, s.sub_ns), (U as i64 + 1_200_000_000, 0));
    // A third keyframe claiming 5 % off nominal: the estimate is refused, nominal used.
    run(&mut dec, &kf_v1(10_000 + 350_035_000 + 367_500_000, U + 2_000_000_000, 3), R + 2_000_000_000);
    let s = stamp(run(&mut dec, &stamped(field7150(10_000 + 350_035_000 + 367_500_000 + 7)), R + 2_000_000_020));
    assert_eq!(s.time_ns, U as i64 + 2_000_000_020);
    assert_eq!(dec.stats().freq_rejected, 1);
}

#[test]
fn lldp_is_never_counter_stamped() {
    let mut dec = TrailerDecoder::new(TrailerMode::Auto);
    run(&mut dec, &kf_v2(1_000, U, 0, (1, 1), 1_000, 1), R);
    // An LLDP frame whose last 4 bytes happen to agree with the record clock.
    let mut v = vec![0x01, 0x80, 0xc2, 0, 0, 0x0e, 0x02, 0, 0, 0, 0, 2, 0x88, 0xCC];
    v.extend_from_slice(&[0; 46]);
    v.extend_from_slice(&field7150(1_000 + 350_000));
    assert_eq!(run(&mut dec, &v, R + 1_000_000), Decoded::None);
    assert_eq!(dec.stats().rejected, 1);
}

#[test]
fn several_devices_best_agreement_wins() {
    let mut dec = TrailerDecoder::new(TrailerMode::Auto);
    run(&mut dec, &kf_v2(1_000_000_000, U, 0, (1, 1), 1_000_000_000, 10), R);
    run(&mut dec, &kf_v2(1_500_000_000, U + 5, 0, (1, 1), 1_500_000_000, 20), R);
    // 35,000 ticks (100 µs) after device 20's keyframe; against device 10 it would be 1.43 s.
    let s = stamp(run(&mut dec, &stamped(field7150(1_500_035_000)), R + 100_000));
    assert_eq!((s.device, s.time_ns), (Some(20), U as i64 + 5 + 100_000));
    let s = stamp(run(&mut dec, &stamped(field7150(1_000_035_000)), R + 100_000));
    assert_eq!((s.device, s.time_ns), (Some(10), U as i64 + 100_000));
}

#[test]
fn fusion_native_keyframe_and_append_mode_with_valid_fcs() {
    let mut kf = vec![0xff; 6];
    kf.extend_from_slice(&[0x64, 0x3f, 0x5f, 0x80, 0x19, 0xa1, 0x88, 0xB5]);
    kf.extend_from_slice(b"EXKF\x01\0\0\0");
    for v in [U, 0x1_0000_0000u64 - 1_000, 350_000_000, 0x1_0000_0000u64 - 1_000] {
        kf.extend_from_slice(&v.to_be_bytes());
    }
    kf.extend_from_slice(&[0; 10]);
    let mut dec = TrailerDecoder::new(TrailerMode::Auto);
    assert_eq!(run(&mut dec, &kf, R), Decoded::Keyframe(TrailerKind::ExablazeFusion, U as i64));
    assert_eq!(dec.stats().keyframes.exablaze_fusion, 1);
    // Counter 2,500 ticks later (wrapped to 1,500), then a valid FCS: 2500 * 1e9 / 350e6 = 7142.857 ns.
    let mut v = stamped(1_500u32.to_be_bytes());
    let fcs = crc32(&v);
    v.extend_from_slice(&fcs.to_le_bytes());
    let s = stamp(run(&mut dec, &v, R + 7_143));
    assert_eq!((s.kind, s.time_ns, s.trailer_len, s.device), (TrailerKind::ExablazeFusion, U as i64 + 7_142, 8, None));
    assert_eq!(s.sub_ns, (((6u128 << 32) / 7) as u32));
    // The same counter replacing the FCS.
    let s = stamp(run(&mut dec, &stamped(1_500u32.to_be_bytes()), R + 7_143));
    assert_eq!((s.time_ns, s.trailer_len), (U as i64 + 7_142, 4));
    // Forced 7150 ignores Fusion keyframes.
    let mut forced = TrailerDecoder::new(TrailerMode::Forced(TrailerKind::Arista7150));
    assert_eq!(forced.decode(&frame(&kf, R), &dissect(&kf, LinkType::Ethernet)), Ok(Decoded::None));
}

#[test]
fn forced_counter_first_frame_after_keyframe_must_validate() {
    let mut dec = TrailerDecoder::new(TrailerMode::Forced(TrailerKind::Arista7150));
    run(&mut dec, &kf_v2(1_000, U, 0, (1, 1), 1_000, 1), R);
    let v = stamped(field7150(1_000 + 1_050_000_000));
    let err = dec.decode(&frame(&v, R + 1_000_000_000), &dissect(&v, LinkType::Ethernet)).unwrap_err();
    assert!(err.reason.contains("does not agree with the record clock"), "{}", err.reason);
    // Once one frame validated, later misses are None.
    let ok = stamped(field7150(1_000 + 350_000_000));
    assert!(matches!(run(&mut dec, &ok, R + 1_000_000_000), Decoded::Stamp(_)));
    assert_eq!(run(&mut dec, &v, R + 1_000_000_000), Decoded::None);
    assert!(dec.finish().is_ok());
}

#[test]
fn auto_decodes_7280_header_and_counts_unknown_versions() {
    let mut v = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0xD2, 0x8B, 0x00, 0x01, 0x01, 0x10];
    v.extend_from_slice(&[0x65, 0x53, 0xF1, 0x00, 0, 0, 0, 9, 0x08, 0x00]);
    v.extend_from_slice(&[0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    let mut dec = TrailerDecoder::new(TrailerMode::Auto);
    let s = stamp(run(&mut dec, &v, 1_700_000_000_000_000_000));
    assert_eq!(
        (s.kind, s.time_ns, s.trailer_len, s.tai),
        (TrailerKind::Arista7280, 0x6553_F100 * 1_000_000_000 + 9, 0, false)
    );
    v[16] = 0x07; // timescale 7: unknown
    assert_eq!(run(&mut dec, &v, 1_700_000_000_000_000_000), Decoded::None);
    assert_eq!(dec.stats().rejected, 1);
    let mut forced = TrailerDecoder::new(TrailerMode::Forced(TrailerKind::Arista7280));
    let err = forced.decode(&frame(&v, 0), &dissect(&v, LinkType::Ethernet)).unwrap_err();
    assert!(err.reason.contains("unknown version"), "{}", err.reason);
}

// ---- The fast path's stamp -----------------------------------------------------------------------

/// A UDP frame of the fast path's shape (`udp_shape`), untagged or with one 802.1Q tag.
fn shaped_udp(vlan: bool, payload: &[u8]) -> Vec<u8> {
    let mut f =
        ipv4_frame(17, [10, 0, 0, 1], [233, 1, 2, 3], &[&[0x30, 0x39, 0x67, 0x6d, 0, 0, 0, 0][..], payload].concat());
    let ulen = (8 + payload.len()) as u16;
    f[38..40].copy_from_slice(&ulen.to_be_bytes());
    if vlan {
        f.splice(12..12, [0x81, 0x00, 0x00, 0x07]);
    }
    f
}

/// `plain_stamp` finds what `decode` finds in a frame of the fast path's shape that a Metamako
/// trailer follows (with or without an FCS after it, tagged or not), and `count_plain_stamp` counts
/// what `decode` counts; where `decode` finds anything else or nothing (bytes that are no trailer, a
/// stamp outside the window), `plain_stamp` finds nothing. Not in `none` or a forced mode, nor once a
/// counter device is known (`decode` then looks for its stamp first).
#[test]
fn the_fast_paths_stamp_is_the_decoders() {
    let ts = 1_700_000_000_000_000_000i64;
    let core =
        |sec: u32, ns: u32, flags: u8| [&sec.to_be_bytes()[..], &ns.to_be_bytes(), &[flags, 0x4c, 0x1c, 0x2e]].concat();
    let tails: [(&str, Vec<u8>, bool); 6] = [
        ("trailer", [&[0xde, 0xad, 0xbe, 0xef][..], &core(1_700_000_000, 5_000, 0)].concat(), true),
        ("trailer, degraded", [&[1, 2, 3, 4][..], &core(1_700_000_000, 999_999_999, 0x11)].concat(), true),
        ("trailer and a new FCS", [&[0; 4][..], &core(1_700_000_001, 17, 0), &[9, 9, 9, 9]].concat(), true),
        ("no trailer", vec![0xa5; 20], false),
        ("seconds a year off", [&[0; 4][..], &core(1_731_536_000, 17, 0)].concat(), false),
        ("nanoseconds past 10^9", [&[0; 4][..], &core(1_700_000_000, 1_000_000_000, 0)].concat(), false),
    ];
    for (vlan, fcs_len) in [(false, None), (true, None), (false, Some(0)), (true, Some(4))] {
        for (what, tail, found) in &tails {
            let data = [shaped_udp(vlan, b"0123456789abcdefghijklmn"), tail.clone()].concat();
            let f = Frame { fcs_len, ..frame(&data, ts) };
            // Where the capture says whether an FCS ends the frame, only that reading is tried.
            let found = *found && (fcs_len.is_none() || (fcs_len == Some(4)) == what.contains("new FCS"));
            let (u, end) = crate::analyze::udp_shape(&data, data.len() as u32).expect("the shape");
            let d = dissect(&data, LinkType::Ethernet);
            assert_eq!((d.anomaly, d.ip.map(|ip| ip.end)), (None, Some(end)), "{what}");
            assert_eq!(d.payload(&data), &data[end - u.payload.len()..end]);
            let (mut decoded, mut counted) =
                (TrailerDecoder::new(TrailerMode::Auto), TrailerDecoder::new(TrailerMode::Auto));
            let by_decode = decoded.decode(&f, &d).unwrap();
            match counted.plain_stamp(&f, end) {
                Some(s) => {
                    assert!(found, "{what}, fcs {fcs_len:?}: found {s:?}");
                    assert_eq!(by_decode, Decoded::Stamp(s), "{what}, vlan {vlan}");
                    counted.count_plain_stamp(&f, &s);
                    assert_eq!(decoded.stats(), counted.stats(), "{what}, vlan {vlan}");
                }
                None => assert!(
                    !found && !matches!(by_decode, Decoded::Stamp(s) if s.kind == TrailerKind::Metamako),
                    "{what}, fcs {fcs_len:?}: {by_decode:?}"
                ),
            }
            for mode in [TrailerMode::Off, TrailerMode::Forced(TrailerKind::Metamako)] {
                assert_eq!(TrailerDecoder::new(mode).plain_stamp(&f, end), None, "{mode:?}");
            }
        }
    }
    // A counter device known: `decode` looks for its 4-byte stamp before any search.
    let data = [shaped_udp(false, b"0123456789"), tails[0].1.clone()].concat();
    let (_, end) = crate::analyze::udp_shape(&data, data.len() as u32).unwrap();
    let mut dec = TrailerDecoder::new(TrailerMode::Auto);
    assert!(dec.plain_stamp(&frame(&data, ts), end).is_some());
    assert_eq!(
        run(&mut dec, &kf_v2(5_000, U, 0, (1, 1), 5_000, 888), R),
        Decoded::Keyframe(TrailerKind::Arista7150, U as i64)
    );
    assert_eq!(dec.plain_stamp(&frame(&data, ts), end), None);
}
