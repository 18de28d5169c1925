//! Decoder-level tests: modes, forced validation, and robustness against arbitrary bytes.

use super::*;
use crate::dissect::dissect;
use crate::frame::LinkType;
use crate::time::TsSource;

fn frame(data: &[u8], ts_ns: i64) -> Frame<'_> {
    Frame {
        data,
        wire_len: data.len() as u32,
        ts_ns,
        ts_source: TsSource::PcapRecord,
        link: LinkType::Ethernet,
        interface: 0,
        direction: Default::default(),
        fcs_len: None,
        quality: ClockQuality::default(),
    }
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

/// A tiny deterministic generator (xorshift64*), so the robustness test needs no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
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
                    let i = (rng.next() as usize) % v.len();
                    v[i] ^= (rng.next() as u8) | 1;
                }
                if round % 5 == 0 {
                    v.truncate((rng.next() as usize) % (v.len() + 1));
                }
                let t = if round % 7 == 0 { i64::MIN + (rng.next() % 1000) as i64 } else { ts };
                let src = if round % 11 == 0 { TsSource::PcapngNone } else { TsSource::PcapRecord };
                let f = Frame { ts_source: src, ..frame(&v, t) };
                let _ = dec.decode(&f, &dissect(&v, LinkType::Ethernet));
            }
        }
        for len in 0..200 {
            let v: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
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
