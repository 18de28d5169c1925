//! Files built by hand for what no public capture has: binary `if_tsresol`, negative
//! `if_tsoffset`, epb_flags, obsolete Packet Blocks, ERF inside pcap, ERF extension headers and
//! flags. Each is also read by tshark where tshark can serve as oracle.

mod common;

use std::io::Read;

use common::build::{Ng, erf_record, eth_frame, pcap_header, pcap_record};
use common::{assert_same_as_tshark, read_all, written};
use wirestamp_capture::{CaptureReader, Compression, Container, TsResolution, WarningKind};
use wirestamp_core::{ClockQuality, Direction, LinkType, TsSource};
use wirestamp_testdata::tshark_fields;

/// An if_tsresol option of 2 bytes (the format gives 1): the interface's time unit is unknown, so the
/// file is refused at its IDB, as libpcap refuses it (the first byte read as the unit put times 1,000
/// times off tshark's, which takes the default µs), the message naming the option and a fix.
#[test]
fn an_if_tsresol_of_the_wrong_length_is_refused() {
    let ng = Ng { be: false };
    let mut f = ng.shb();
    f.extend(ng.idb(1, 0, &[ng.opt(9, &[9, 0])]));
    f.extend(ng.epb(0, 1_000, &eth_frame(1), 60, &[]));
    let path = written("tsresol-len2.pcapng", &f);
    let mut r = CaptureReader::open(&path).unwrap();
    let e = r.next_frame().expect_err("refused");
    assert!(
        e.to_string().contains("malformed pcapng IDB block: option if_tsresol has 2 bytes where the format has 1"),
        "{e}"
    );
}

/// Timestamps in units of 2^-30 s with if_tsoffset = -10 s. Rule (ours and tshark's): the exact
/// value units * 10^9 / 2^30 ns is rounded toward negative infinity; the offset is whole seconds,
/// so adding it after rounding gives the same as rounding the total.
#[test]
fn binary_tsresol_and_negative_offset_exact() {
    let ng = Ng { be: false };
    let mut f = ng.shb();
    f.extend(ng.idb(1, 0, &[ng.opt(9, &[0x80 | 30]), ng.opt(14, &(-10i64).to_le_bytes())]));
    let cases: [(u64, i64); 5] = [
        // 3*2^30 + 2^29 units = 3.5 s exactly; minus 10 s.
        ((3 << 30) + (1 << 29), -6_500_000_000),
        // 1 unit = 0.931322574615478515625 ns -> 0 ns.
        (1, -10_000_000_000),
        // 3 units = 2.79 ns -> 2 ns (not 3: no round-to-nearest).
        (3, -9_999_999_998),
        // 2^30 - 1 units = 0.999999999068677... s -> 999999999 ns.
        ((1 << 30) - 1, -9_000_000_001),
        // 1.7e9 s + 5 units (4.66 ns -> 4).
        ((1_700_000_000u64 << 30) + 5, 1_699_999_990_000_000_004),
    ];
    for (i, (units, _)) in cases.iter().enumerate() {
        f.extend(ng.epb(0, *units, &eth_frame(i as u8), 60, &[]));
    }
    let path = written("pow2.pcapng", &f);
    let r = assert_same_as_tshark(&path);
    let got: Vec<i64> = r.rows.iter().map(|x| x.ts_ns.unwrap()).collect();
    let want: Vec<i64> = cases.iter().map(|c| c.1).collect();
    assert_eq!(got, want);
    assert_eq!(r.interfaces[0].ts_resolution, TsResolution::Bin(30));
    assert_eq!(r.interfaces[0].ts_offset_s, -10);
}

/// if_tsresol = 10^-12 (ps): exact with 128-bit arithmetic. tshark 4.0.17 overflows 64 bits here
/// ((units % 10^12) * 10^9) and prints 1001.013206963 for 1001.234567891999 s, so it is not
/// used as oracle for this case; the expected value is computed by hand.
#[test]
fn picosecond_tsresol_truncates_exactly() {
    let ng = Ng { be: true };
    let mut f = ng.shb();
    f.extend(ng.idb(1, 0, &[ng.opt(9, &[12]), ng.opt(14, &1000i64.to_be_bytes())]));
    f.extend(ng.epb(0, 1_234_567_891_999, &eth_frame(1), 60, &[]));
    f.extend(ng.epb(0, u64::MAX, &eth_frame(2), 60, &[]));
    let r = read_all(&written("ps.pcapng", &f));
    // 1.234567891999 s + 1000 s; u64::MAX ps = 18446744.073709551615 s + 1000 s.
    let got: Vec<i64> = r.rows.iter().map(|x| x.ts_ns.unwrap()).collect();
    assert_eq!(got, [1_001_234_567_891, 18_447_744_073_709_551]);
}

/// epb_flags direction and FCS length, if_fcslen, obsolete PB with pack_flags, SPB; checked
/// against tshark's frame.packet_flags_* fields.
#[test]
fn packet_flags_fcs_and_obsolete_blocks() {
    for be in [false, true] {
        let ng = Ng { be };
        let mut f = ng.shb();
        f.extend(ng.idb(1, 0, &[ng.opt(2, b"tap0"), ng.opt(3, b"span port"), ng.opt(13, &[4])]));
        f.extend(ng.epb(0, 1_000_000, &eth_frame(1), 64, &[ng.opt(2, &ng.u32(0x01 | (4 << 5)))]));
        f.extend(ng.epb(0, 2_000_000, &eth_frame(2), 60, &[ng.opt(2, &ng.u32(0x02))]));
        f.extend(ng.epb(0, 3_000_000, &eth_frame(3), 60, &[]));
        f.extend(ng.pb(0, 4_000_000, &eth_frame(4), 60, &[ng.opt(2, &ng.u32(0x01))]));
        f.extend(ng.spb(&eth_frame(5), 60));
        let path = written(&format!("flags-{be}.pcapng"), &f);
        assert_same_as_tshark(&path);
        let theirs = tshark_fields(&path, &[], &["frame.packet_flags_direction", "frame.packet_flags_fcs_length"]);
        let mut r = CaptureReader::open(&path).unwrap();
        let mut got = Vec::new();
        while let Some(fr) = r.next_frame().unwrap() {
            got.push((fr.direction, fr.fcs_len, fr.ts_source, fr.data[42]));
        }
        use Direction::*;
        let ng_ts = TsSource::PcapngBlock;
        assert_eq!(
            got,
            [
                (Inbound, Some(4), ng_ts, 1),
                (Outbound, Some(4), ng_ts, 2),
                (Unknown, Some(4), ng_ts, 3),
                (Inbound, Some(4), ng_ts, 4),
                (Unknown, Some(4), TsSource::PcapngNone, 5),
            ]
        );
        // tshark: direction 1 in / 2 out, FCS length 4, for the blocks that carry flags.
        assert_eq!(theirs[0][0], "0x00000001");
        assert_eq!(theirs[1][0], "0x00000002");
        assert_eq!(theirs[3][0], "0x00000001");
        assert_eq!(theirs[0][1], "4");
        let i = &r.interfaces()[0];
        assert_eq!(
            (i.name.as_deref(), i.description.as_deref(), i.fcs_len),
            (Some("tap0"), Some("span port"), Some(4))
        );
    }
}

/// SPB captured length = min(original length, snaplen of interface 0, bytes in the block).
#[test]
fn simple_packet_block_lengths() {
    let ng = Ng { be: false };
    let mut f = ng.shb();
    f.extend(ng.idb(1, 40, &[]));
    f.extend(ng.spb(&eth_frame(2)[..36], 36)); // shorter than snaplen
    f.extend(ng.spb(&eth_frame(3)[..40], 1500)); // cut to the snaplen by the writer
    let path = written("spb.pcapng", &f);
    let r = assert_same_as_tshark(&path);
    let lens: Vec<(u32, u32)> = r.rows.iter().map(|x| (x.wire_len, x.cap_len)).collect();
    assert_eq!(lens, [(36, 36), (1500, 40)]);
    // A writer that stored more than its snaplen (not conformant; tshark 4.0 then misreads the
    // block end): the snaplen still bounds the frame, the block length bounds the data.
    let mut f = ng.shb();
    f.extend(ng.idb(1, 40, &[]));
    f.extend(ng.spb(&eth_frame(1), 60));
    f.extend(ng.spb(&eth_frame(3)[..32], 1500));
    let r = read_all(&written("spb-over.pcapng", &f));
    let lens: Vec<(u32, u32)> = r.rows.iter().map(|x| (x.wire_len, x.cap_len)).collect();
    assert_eq!(lens, [(60, 40), (1500, 32)]);
}

/// pcap FCS bits: P (bit 26) set and FCS length 2 words -> 4 bytes; bits without P are ignored.
#[test]
fn pcap_fcs_bits() {
    for (word, want) in [(0x2400_0001u32, Some(4)), (0x1400_0001, Some(2)), (0x3000_0001, None), (1, None)] {
        let mut f = pcap_header(0xa1b2_c3d4, word);
        f.extend(pcap_record(1, 2, &eth_frame(1), 64));
        let mut r = CaptureReader::from_reader("fcs".into(), Box::new(std::io::Cursor::new(f))).unwrap();
        let fr = r.next_frame().unwrap().unwrap();
        assert_eq!((fr.fcs_len, fr.link, fr.ts_ns), (want, LinkType::Ethernet, 1_000_002_000), "{word:#x}");
    }
}

/// LINKTYPE_ERF in pcap: the ERF header, an extension header and the 2-byte pad are removed, the
/// frame is Ethernet with the ERF timestamp and wire length, as tshark shows it; a META record
/// inside is skipped and counted.
#[test]
fn erf_inside_pcap() {
    let ext = [[0x11, 0, 0, 0, 0, 0, 0, 7]]; // HOST_ID, no further header
    let erf = erf_record((1000u64 << 32) | 0x8000_0000, 0x82, 0x01, &ext, true, &eth_frame(9), 64);
    let meta = erf_record(1001u64 << 32, 27, 0, &[], false, &[0u8; 16], 16);
    let mut f = pcap_header(0xa1b2_c3d4, 197);
    f.extend(pcap_record(5, 7, &erf, erf.len() as u32));
    f.extend(pcap_record(6, 0, &meta, meta.len() as u32));
    let path = written("erf-in.pcap", &f);
    let theirs = tshark_fields(&path, &[], &["frame.time_epoch", "frame.len", "frame.cap_len", "erf.types.type"]);
    // The record is padded to 8 bytes: 16 + 8 + 2 + 60 = 86 -> 88. With wlen (64) beyond the
    // bytes present, the 2 padding bytes cannot be told from frame bytes: both readers keep 62.
    assert_eq!(theirs[0], ["1000.500000000", "64", "62", "2"]);
    let mut r = CaptureReader::open(&path).unwrap();
    let fr = r.next_frame().unwrap().unwrap();
    assert_eq!((fr.ts_ns, fr.wire_len, fr.caplen()), (1_000_500_000_000, 64, 62));
    assert_eq!((fr.ts_source, fr.link, fr.fcs_len), (TsSource::Erf, LinkType::Ethernet, Some(4)));
    assert_eq!(&fr.data[..60], &eth_frame(9)[..]);
    assert!(r.next_frame().unwrap().is_none());
    assert_eq!(r.stats().skipped.get("erf META"), Some(&1));
    assert_eq!(r.interfaces()[0].link, LinkType::Erf);
}

/// ERF file: Ethernet-carrying types 2/11/16/20, extension header chains, interface from flag
/// bits 0-1 and 6, RX/DS error flags, PAD and META skipped; compared with tshark.
#[test]
fn erf_types_flags_and_extension_headers() {
    let ts = |s: u64, frac: u32| (s << 32) | frac as u64;
    let chain = [[0x91, 0, 0, 0, 0, 0, 0, 1], [0x12, 0, 0, 0, 0, 0, 0, 2]]; // HOST_ID -> ANCHOR_ID
    let mut f = Vec::new();
    f.extend(erf_record(ts(1_600_000_000, 1), 2, 0x00, &[], true, &eth_frame(1), 64));
    f.extend(erf_record(ts(1_600_000_000, 0x4000_0000), 0x80 | 11, 0x41, &chain, true, &eth_frame(2), 64));
    f.extend(erf_record(ts(1_600_000_001, 0), 48, 0, &[], false, &[0u8; 24], 0));
    f.extend(erf_record(ts(1_600_000_001, 7), 16, 0x12, &[], true, &eth_frame(3), 64)); // port 2, RX error
    f.extend(erf_record(ts(1_600_000_001, 0xffff_ffff), 20, 0x23, &[], true, &eth_frame(4), 64)); // port 3, DS error
    f.extend(erf_record(ts(1_600_000_002, 0), 27, 0, &[], false, &[0u8; 8], 8));
    let path = written("types.erf", &f);
    let r = assert_same_as_tshark(&path);
    assert_eq!(r.container, Container::Erf);
    let ts_got: Vec<i64> = r.rows.iter().map(|x| x.ts_ns.unwrap()).collect();
    // 1 unit of 2^-32 s rounds to 0 ns; 2^30 units = 0.25 s; 7 units = 1.63 ns -> 2; 2^32-1 -> 1 s.
    assert_eq!(
        ts_got,
        [1_600_000_000_000_000_000, 1_600_000_000_250_000_000, 1_600_000_001_000_000_002, 1_600_000_002_000_000_000]
    );
    let ports: Vec<u32> = r.interfaces.iter().map(|i| i.local_id).collect();
    assert_eq!(ports, [0, 5, 2, 3]);
    let mut rd = CaptureReader::open(&path).unwrap();
    let mut q = Vec::new();
    while let Some(fr) = rd.next_frame().unwrap() {
        // 16 + 2 + 60 = 78 bytes padded to 80: 2 trailing pad bytes kept (wlen 64 > 62).
        assert_eq!((&fr.data[..60], fr.data.len()), (&eth_frame(q.len() as u8 + 1)[..], 62));
        q.push(fr.quality);
    }
    let e = ClockQuality::RECORD_ERROR;
    assert_eq!(q, [ClockQuality::default(), ClockQuality::default(), e, e]);
    assert_eq!(rd.stats().skipped.get("erf PAD"), Some(&1));
    assert_eq!(rd.stats().skipped.get("erf META"), Some(&1));
}

/// ERF records with loss counters (header offset 12): port 0 lost 5, a colour record (type 11, whose
/// field is a colour), a PAD record of port 0 that lost 3, port 3 lost 65,535, port 0 none.
fn lctr_records() -> [Vec<u8>; 5] {
    let ts = |s: u64| s << 32;
    let lost = |mut r: Vec<u8>, n: u16| {
        r[12..14].copy_from_slice(&n.to_be_bytes());
        r
    };
    [
        lost(erf_record(ts(1_600_000_000), 2, 0x00, &[], true, &eth_frame(1), 64), 5),
        lost(erf_record(ts(1_600_000_001), 11, 0x01, &[], true, &eth_frame(2), 64), 0x1234),
        lost(erf_record(ts(1_600_000_002), 48, 0x00, &[], false, &[0u8; 24], 0), 3),
        lost(erf_record(ts(1_600_000_003), 2, 0x03, &[], true, &eth_frame(3), 64), 65_535),
        erf_record(ts(1_600_000_004), 2, 0x00, &[], true, &eth_frame(4), 64),
    ]
}

/// ERF loss counters (`lctr`, header offset 12, packets the card lost since the previous record) are
/// summed per ERF interface into its recorded drops (as libpcap's DAG reader sums them), a record
/// without a frame (PAD) included; the colour types hold a colour there, not a count.
#[test]
fn erf_loss_counters_are_the_interfaces_drops() {
    let path = written("lctr.erf", &lctr_records().concat());
    let mut rd = CaptureReader::open(&path).unwrap();
    let mut frames = 0;
    while rd.next_frame().unwrap().is_some() {
        frames += 1;
    }
    assert_eq!(frames, 4);
    let drops: Vec<(u32, Option<u64>)> =
        rd.interfaces().iter().map(|i| (i.local_id, i.recorded.and_then(|r| r.ifdrop))).collect();
    assert_eq!(drops, [(0, Some(8)), (1, None), (3, Some(65_535))]);
}

/// The same records in a pcap of LINKTYPE_ERF (197, as `tcpdump -y ERF` writes them from a DAG card):
/// their loss counters, colour records' excepted, are the pcap interface's drops: 5 + 3 + 65,535.
#[test]
fn erf_loss_counters_in_a_pcap_are_its_interfaces_drops() {
    let mut f = pcap_header(0xa1b2_c3d4, 197);
    for (i, r) in lctr_records().iter().enumerate() {
        f.extend(pcap_record(i as u32, 0, r, r.len() as u32));
    }
    let path = written("lctr-in.pcap", &f);
    let mut rd = CaptureReader::open(&path).unwrap();
    let mut frames = 0;
    while rd.next_frame().unwrap().is_some() {
        frames += 1;
    }
    assert_eq!(frames, 4);
    let drops: Vec<Option<u64>> = rd.interfaces().iter().map(|i| i.recorded.and_then(|r| r.ifdrop)).collect();
    assert_eq!(drops, [Some(65_543)]);
}

/// A reader that hands out one byte per call.
struct OneByte(std::io::Cursor<Vec<u8>>);
impl Read for OneByte {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = out.len().min(1);
        self.0.read(&mut out[..n])
    }
}

/// A reader that hands out 1 to 7 bytes per call: records straddle every possible refill point.
struct Dribble(std::io::Cursor<Vec<u8>>, usize);
impl Read for Dribble {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        self.1 = self.1 % 7 + 1;
        let n = out.len().min(self.1);
        self.0.read(&mut out[..n])
    }
}

#[test]
fn byte_dribbling_source_reads_the_same() {
    let d = wirestamp_testdata::shared_data();
    for rel in [
        "pcapng_test_generator/output_be/difficult/test202.pcapng",
        "libtrace_traces/test/traces/100_packets.erf",
        "libtrace_traces/test/traces/5_packets.erf.gz",
        "pcapplusplus/Tests/Pcap++Test/PcapExamples/nanosecs_big_endian.pcap",
    ] {
        let path = d.join(rel);
        let whole = read_all(&path);
        let bytes = std::fs::read(&path).unwrap();
        let mut r = CaptureReader::from_reader(rel.into(), Box::new(Dribble(std::io::Cursor::new(bytes), 0))).unwrap();
        let mut data = Vec::new();
        while let Some(f) = r.next_frame().unwrap() {
            data.push(f.data.to_vec());
        }
        assert_eq!(data, whole.data, "{rel}");
        assert_eq!(r.stats(), whole.reader.stats(), "{rel}");
    }
}

/// A record larger than the 4 MiB chunk makes the buffer grow; a declared length beyond the
/// 256 MiB bound is an error naming the offset, without allocating it.
#[test]
fn large_records_and_length_bound() {
    let big = vec![0xabu8; 5 << 20];
    let mut f = pcap_header(0xa1b2_3c4d, 1);
    f.extend(pcap_record(1, 1, &eth_frame(1), 60));
    f.extend(pcap_record(2, 2, &big, big.len() as u32));
    f.extend(pcap_record(3, 3, &eth_frame(3), 60));
    let mut r = CaptureReader::from_reader("big".into(), Box::new(std::io::Cursor::new(f))).unwrap();
    let lens: Vec<usize> = std::iter::from_fn(|| r.next_frame().unwrap().map(|x| x.data.len())).collect();
    assert_eq!(lens, [60, 5 << 20, 60]);
    // Grown by doubling, only as far as that record needed.
    assert_eq!(r.buffer_len(), 8 << 20);

    let mut f = pcap_header(0xa1b2_c3d4, 1);
    f.extend(pcap_record(1, 1, &eth_frame(1), 60));
    let bad_at = f.len();
    f.extend(pcap_record(2, 2, &[], 0));
    f[bad_at + 8..bad_at + 12].copy_from_slice(&0x4000_0000u32.to_le_bytes()); // caplen 1 GiB
    let mut r = CaptureReader::from_reader("hostile.pcap".into(), Box::new(std::io::Cursor::new(f))).unwrap();
    assert!(r.next_frame().unwrap().is_some());
    let e = r.next_frame().unwrap_err();
    assert_eq!((e.offset, e.frame_index), (bad_at as u64, 1));
    assert_eq!(
        e.to_string(),
        format!(
            "hostile.pcap: at byte {bad_at} (record 1, after 1 packet): pcap record captured length 1073741824 exceeds the maximum of \
             268435456 bytes (corrupt length field?)"
        )
    );
    assert!(r.next_frame().unwrap().is_none(), "an input ends after its error");
}

/// Malformed pcapng blocks are errors after the good frames; a cut block is a warning.
#[test]
fn pcapng_errors_and_cut_blocks() {
    let ng = Ng { be: false };
    let mut good = ng.shb();
    good.extend(ng.idb(1, 0, &[]));
    good.extend(ng.epb(0, 1, &eth_frame(1), 60, &[]));
    let at = good.len() as u64;
    let read = |bytes: Vec<u8>| {
        let mut r = CaptureReader::from_reader("t.pcapng".into(), Box::new(std::io::Cursor::new(bytes))).unwrap();
        let mut n = 0;
        let res = loop {
            match r.next_frame() {
                Ok(Some(_)) => n += 1,
                Ok(None) => break None,
                Err(e) => break Some(e),
            }
        };
        (n, res, r.warnings().to_vec())
    };
    // Undefined interface.
    let mut f = good.clone();
    f.extend(ng.epb(3, 2, &eth_frame(2), 60, &[]));
    let (n, e, _) = read(f);
    let e = e.unwrap();
    assert_eq!((n, e.offset, e.frame_index, e.packets), (1, at, 3, 1));
    assert!(e.to_string().contains("interface 3 not defined in this section (1 IDBs)"), "{e}");
    // The place counts records (SHB and IDB too) and the packets before, as tshark numbers them.
    assert!(e.to_string().starts_with(&format!("t.pcapng: at byte {at} (record 3, after 1 packet): ")), "{e}");
    // Trailing length mismatch.
    let mut f = good.clone();
    let mut b = ng.epb(0, 2, &eth_frame(2), 60, &[]);
    let l = b.len();
    b[l - 4] ^= 4;
    f.extend(b);
    let (n, e, _) = read(f);
    assert_eq!(n, 1);
    assert!(e.unwrap().to_string().contains("trailing total length"));
    // Length not a multiple of 4.
    let mut f = good.clone();
    f.extend(ng.u32(6));
    f.extend(ng.u32(13));
    f.extend([0u8; 9]);
    let (n, e, _) = read(f);
    assert_eq!(n, 1);
    assert!(e.unwrap().to_string().contains("total length 13 is not a multiple of 4"));
    // A second section with a bad byte-order magic.
    let mut f = good.clone();
    let mut shb = ng.shb();
    shb[8..12].copy_from_slice(&[1, 2, 3, 4]);
    f.extend(shb);
    let (n, e, _) = read(f);
    let e = e.unwrap();
    assert_eq!((n, e.offset), (1, at));
    assert!(e.to_string().contains("malformed pcapng SHB block: bad byte-order magic [01, 02, 03, 04]"), "{e}");
    // Cut in the middle of the second EPB: frame 1 kept, warning with the missing count.
    let mut f = good.clone();
    let b = ng.epb(0, 2, &eth_frame(2), 60, &[]);
    f.extend(&b[..50]);
    let (n, e, w) = read(f);
    assert!(e.is_none());
    assert_eq!(n, 1);
    assert_eq!(w.len(), 1);
    assert_eq!((w[0].offset, w[0].missing()), (at, b.len() as u64 - 50));
}

/// A gzip file is read as `gzip -d` reads it: members one after another (the capture split across
/// two here, cut inside a record), then, after the last, bytes that begin no member (garbage, zero
/// padding) are ignored with a warning that says so; every frame is read either way (a fatal "invalid
/// gzip header", or "file cut short", before).
#[test]
fn gzip_members_and_bytes_after_the_stream() {
    let gz = |b: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut e, b).unwrap();
        e.finish().unwrap()
    };
    members_and_bytes_after_them("gzip", gz, &[]);
}

/// zstd as gzip: frames one after another (`zstd -d` reads them so), a skippable frame among them
/// (RFC 8878 §3.1.2: magic 0x184D2A5?, a 4-byte length, that many bytes), and bytes after the last.
#[test]
fn zstd_frames_and_bytes_after_the_stream() {
    let zst = |b: &[u8]| zstd::encode_all(b, 3).unwrap();
    let skippable = [&[0x53, 0x2a, 0x4d, 0x18, 5, 0, 0, 0][..], b"notes"].concat();
    members_and_bytes_after_them("zstd", zst, &skippable);
    // A file that begins with a skippable frame (as pzstd writes them) is zstd too.
    let mut f = pcap_header(0xa1b2_c3d4, 1);
    f.extend(pcap_record(7, 0, &eth_frame(7), 60));
    let bytes = [skippable, zst(&f)].concat();
    let mut r = CaptureReader::from_reader("p.pcap.zst".into(), Box::new(std::io::Cursor::new(bytes))).unwrap();
    assert!(r.next_frame().unwrap().is_some() && r.next_frame().unwrap().is_none());
    assert!(r.warnings().is_empty());
}

/// 200 frames in a pcap compressed in two members by `compress`, `between` the two: read whole, with
/// no warning; with a tail of garbage or zeros after them, read whole too, the tail's bytes ignored
/// with a warning naming `name`.
fn members_and_bytes_after_them(name: &str, compress: impl Fn(&[u8]) -> Vec<u8>, between: &[u8]) {
    let mut f = pcap_header(0xa1b2_c3d4, 1);
    for i in 0..200u32 {
        f.extend(pcap_record(i, 0, &eth_frame(i as u8), 60));
    }
    let two_members = [compress(&f[..5_000]), between.to_vec(), compress(&f[5_000..])].concat();
    // Tails that begin like a magic number (gzip's 1f, zstd's 28 or a skippable frame's 5?), or are
    // shorter than one; read byte by byte too, where a buffer's edge falls after every byte. One shorter
    // than a magic that begins the format's own (zstd's `(\xb5/` and `P`) is its next member cut short:
    // a cut, not bytes after the stream (compressed_cut.rs); for gzip they are bytes after it.
    let tails: [(&[u8], u64); 6] =
        [(b"", 0), (b"garbage", 7), (&[0u8; 512], 512), (b"\x1f(PQ garbage", 12), (b"(\xb5/", 3), (b"P", 1)];
    for ((tail, ignored), one_byte) in tails.into_iter().flat_map(|t| [(t, false), (t, true)]) {
        let bytes = [&two_members[..], tail].concat();
        let src: Box<dyn Read + Send> = if one_byte {
            Box::new(OneByte(std::io::Cursor::new(bytes)))
        } else {
            Box::new(std::io::Cursor::new(bytes))
        };
        let mut r = CaptureReader::from_reader("m.pcap.z".into(), src).unwrap();
        let mut n = 0;
        while r.next_frame().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 200, "{name}, tail of {ignored}");
        let warnings: Vec<String> = r.warnings().iter().map(|w| w.to_string()).collect();
        let cut_magic = name == "zstd" && (tail == b"(\xb5/" || tail == b"P");
        if ignored == 0 {
            assert!(warnings.is_empty(), "{warnings:?}");
        } else if cut_magic {
            assert_eq!(warnings.len(), 1);
            assert!(
                matches!(r.warnings()[0].kind, WarningKind::CompressedStreamCut(_)),
                "{name}, tail of {ignored}: {warnings:?}"
            );
        } else {
            let compression = if name == "zstd" { Compression::Zstd } else { Compression::Gzip };
            assert_eq!(r.warnings()[0].kind, WarningKind::TrailingData { bytes: ignored, compression });
            assert_eq!(warnings.len(), 1);
            assert!(warnings[0].contains(&format!("{ignored} bytes that are not {name}, ignored")), "{warnings:?}");
        }
    }
}

#[test]
fn unknown_format_names_the_file() {
    let e = CaptureReader::from_reader("notes.txt".into(), Box::new(std::io::Cursor::new(b"hello, world\n".to_vec())))
        .err()
        .unwrap();
    assert!(
        e.to_string().starts_with(
            "notes.txt: at byte 0 (record 0, after 0 packets): unknown file format (first bytes, hex: 68 65 6c 6c"
        ),
        "{e}"
    );
    let e = CaptureReader::from_reader("empty".into(), Box::new(std::io::Cursor::new(Vec::new()))).err().unwrap();
    assert!(e.to_string().contains("file too short to identify (0 bytes)"), "{e}");
}

/// tcpdump's files with a fraction of a second >= 1 s: kept (carried into the seconds), flagged
/// and counted. Expected values from the record headers, read here by hand.
#[test]
fn invalid_pcap_fractions_are_flagged() {
    for (rel, unit) in [("timestamp_invalid_micro.pcap", 1000i64), ("timestamp_invalid_nano.pcap", 1)] {
        let path = wirestamp_testdata::data_file(&format!("tcpdump_tests/tests/{rel}"));
        let bytes = std::fs::read(&path).unwrap();
        let mut want = Vec::new();
        let mut off = 24;
        while off + 16 <= bytes.len() {
            let w = |o: usize| u32::from_le_bytes(bytes[off + o..off + o + 4].try_into().unwrap());
            let limit = if unit == 1 { 1_000_000_000 } else { 1_000_000 };
            let q = if w(4) >= limit { ClockQuality::RECORD_ERROR } else { ClockQuality::default() };
            want.push((w(0) as i64 * 1_000_000_000 + w(4) as i64 * unit, q));
            off += 16 + w(8) as usize;
        }
        let mut r = CaptureReader::open(&path).unwrap();
        let mut got = Vec::new();
        while let Some(f) = r.next_frame().unwrap() {
            got.push((f.ts_ns, f.quality));
        }
        assert_eq!(got, want, "{rel}");
        assert_eq!(r.stats().ts_fraction_invalid, 2, "{rel}");
    }
}

/// LINKTYPE_ERF interfaces in pcapng: unwrapped like in pcap, with the ERF header's timestamp
/// (2^-32 s, the capture card's). tshark 4.0 shows the EPB's timestamp for these instead (it
/// uses the ERF one only for ERF-in-pcap); writers put the same instant in both, this file
/// makes them differ to show which one is used. Lengths and interfaces match tshark.
#[test]
fn erf_inside_pcapng() {
    let ng = Ng { be: true };
    let erf = erf_record((2000u64 << 32) | 0x4000_0000, 2, 0x02, &[], true, &eth_frame(7), 60);
    let mut f = ng.shb();
    f.extend(ng.idb(197, 0, &[]));
    f.extend(ng.idb(1, 0, &[]));
    f.extend(ng.epb(0, 5_000_000, &erf, erf.len() as u32, &[]));
    f.extend(ng.epb(1, 6_000_000, &eth_frame(8), 60, &[]));
    let path = written("erf-in.pcapng", &f);
    let r = read_all(&path);
    let theirs = common::tshark_rows(&path);
    let ts: Vec<i64> = r.rows.iter().map(|x| x.ts_ns.unwrap()).collect();
    assert_eq!(ts, [2_000_250_000_000, 6_000_000_000]);
    let tts: Vec<i64> = theirs.iter().map(|x| x.ts_ns.unwrap()).collect();
    assert_eq!(tts, [5_000_000_000, 6_000_000_000]);
    for (a, b) in r.rows.iter().zip(&theirs) {
        assert_eq!((a.iface, a.wire_len, a.cap_len), (b.iface, b.wire_len, b.cap_len));
    }
    assert_eq!(&r.data[0][..], &eth_frame(7)[..]);
}

/// A pcap stream generated on the fly (never held in memory): `frames` records of 60 bytes.
struct GenPcap {
    frames: u64,
    next: u64,
    pending: Vec<u8>,
    produced: std::sync::Arc<std::sync::atomic::AtomicU64>,
}
impl Read for GenPcap {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pending.len() < out.len() && self.next < self.frames {
            if self.next == 0 && self.pending.is_empty() {
                self.pending.extend(pcap_header(0xa1b2_3c4d, 1));
            }
            self.pending.extend(pcap_record(self.next as u32, 0, &eth_frame(self.next as u8), 60));
            self.next += 1;
        }
        let n = out.len().min(self.pending.len());
        out[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        self.produced.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// Memory is constant in the file size: 3 million records (228 MB) stream through the same
/// 4 MiB buffer, and the first frame comes out after reading one chunk, not the whole stream.
#[test]
fn constant_memory_streaming() {
    use std::sync::atomic::Ordering::Relaxed;
    let produced = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let frames = 3_000_000u64;
    let src = GenPcap { frames, next: 0, pending: Vec::new(), produced: produced.clone() };
    let mut r = CaptureReader::from_reader("generated".into(), Box::new(src)).unwrap();
    assert!(r.next_frame().unwrap().is_some());
    assert!(produced.load(Relaxed) <= 256 << 10, "read {} bytes before the first frame", produced.load(Relaxed));
    let mut n = 1;
    while let Some(f) = r.next_frame().unwrap() {
        assert_eq!(f.ts_ns, n as i64 * 1_000_000_000);
        n += 1;
    }
    assert_eq!(n, frames);
    assert_eq!(produced.load(Relaxed), 24 + frames * 76);
    assert_eq!(r.buffer_len(), 256 << 10);
    assert_eq!(r.stats().bytes, 24 + frames * 76);
}
