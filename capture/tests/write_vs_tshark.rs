//! The writers' output, read back by tshark (an independent reader): timestamps to the ns, interfaces,
//! names and directions.

use wirestamp_capture::write::{IfaceSpec, PcapWriter, PcapngWriter};
use wirestamp_core::{Direction, LinkType};
use wirestamp_testdata::{epoch_to_ns, tshark_fields};

fn frame(tag: u8, len: usize) -> Vec<u8> {
    let mut f = vec![0xffu8; 6];
    f.extend_from_slice(&[2, 0, 0, 0, 0, tag]);
    f.extend_from_slice(&[0x88, 0xb6]); // local experimental EtherType
    f.resize(len, tag);
    f
}

#[test]
fn pcapng_round_trips_through_tshark() {
    let dir = std::env::temp_dir().join(format!("wirestamp-write-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("two-ifaces.pcapng");
    let mut w = PcapngWriter::new(std::fs::File::create(&path).unwrap(), Some("test")).unwrap();
    let a = w
        .add_interface(&IfaceSpec { link: LinkType::Ethernet, name: "tapA".into(), description: None, snaplen: 65535 })
        .unwrap();
    let b = w
        .add_interface(&IfaceSpec {
            link: LinkType::Ethernet,
            name: "tapB".into(),
            description: Some("software timestamps".into()),
            snaplen: 65535,
        })
        .unwrap();
    let rows = [
        (a, 1_796_049_000_123_456_789i64, 60usize, Direction::Inbound),
        (b, 1_796_049_000_123_456_790, 61, Direction::Outbound),
        (a, 1_796_049_001_000_000_001, 99, Direction::Unknown),
    ];
    for (iface, ts, len, dir) in rows {
        w.write(iface, ts, &frame(len as u8, len), len as u32 + 4, dir).unwrap();
    }
    w.finish().unwrap();

    let got = tshark_fields(
        &path,
        &[],
        &[
            "frame.time_epoch",
            "frame.interface_id",
            "frame.interface_name",
            "frame.cap_len",
            "frame.len",
            "frame.packet_flags_direction",
        ],
    );
    assert_eq!(got.len(), 3);
    for (g, (iface, ts, len, dir)) in got.iter().zip(rows) {
        assert_eq!(epoch_to_ns(&g[0]), ts);
        assert_eq!(g[1], iface.to_string());
        assert_eq!(g[2], if iface == a { "tapA" } else { "tapB" });
        assert_eq!(g[3], len.to_string());
        assert_eq!(g[4], (len + 4).to_string());
        let want = match dir {
            Direction::Unknown => "",
            Direction::Inbound => "0x00000001",
            Direction::Outbound => "0x00000002",
        };
        assert_eq!(g[5], want);
    }

    let pcap = dir.join("ns.pcap");
    let mut w = PcapWriter::new(std::fs::File::create(&pcap).unwrap(), LinkType::Ethernet, 65535).unwrap();
    w.write(1_000_000_000_999_999_999, &frame(1, 64), 64).unwrap();
    assert!(w.write(-1, &frame(1, 64), 64).is_err(), "negative time refused");
    w.finish().unwrap();
    let got = tshark_fields(&pcap, &[], &["frame.time_epoch", "frame.len"]);
    assert_eq!(got, vec![vec!["1000000000.999999999".to_string(), "64".to_string()]]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Interface Statistics Blocks: written by `PcapngWriter::write_stats`, counted by capinfos (which does
/// not print their values), and read back onto their interface by the reader, the last block winning;
/// a big-endian ISB built by hand from the pcapng spec (§4.6) reads the same.
#[test]
fn interface_statistics_blocks_are_written_and_read_back() {
    use wirestamp_capture::write::IfaceStats;
    use wirestamp_capture::{CaptureReader, RecordedStats};
    let dir = std::env::temp_dir().join(format!("wirestamp-isb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("isb.pcapng");
    let mut w = PcapngWriter::new(std::fs::File::create(&path).unwrap(), None).unwrap();
    let spec = |name: &str| IfaceSpec { link: LinkType::Ethernet, name: name.into(), description: None, snaplen: 9000 };
    let (a, b) = (w.add_interface(&spec("a")).unwrap(), w.add_interface(&spec("b")).unwrap());
    let t = 1_796_049_000_000_000_000i64;
    w.write(a, t, &frame(1, 64), 64, Direction::Inbound).unwrap();
    let first = RecordedStats { osdrop: Some(1), usrdeliv: Some(1), ..Default::default() };
    w.write_stats(a, t + 1, &IfaceStats { counters: first, ..Default::default() }).unwrap();
    let last = IfaceStats {
        start_ns: Some(t - 5),
        end_ns: Some(t + 2),
        counters: RecordedStats {
            ifrecv: Some(10),
            ifdrop: Some(2),
            filteraccept: Some(8),
            osdrop: Some(3),
            usrdeliv: Some(5),
        },
    };
    w.write_stats(a, t + 2, &last).unwrap();
    w.finish().unwrap();
    let ci = std::process::Command::new("capinfos").arg(&path).output().unwrap();
    let ci = String::from_utf8_lossy(&ci.stdout);
    let stat_entries: Vec<&str> = ci.lines().filter(|l| l.contains("Number of stat entries")).map(str::trim).collect();
    assert_eq!(stat_entries, ["Number of stat entries = 2", "Number of stat entries = 0"], "{ci}");
    let mut r = CaptureReader::open(&path).unwrap();
    while r.next_frame().unwrap().is_some() {}
    let want =
        RecordedStats { ifrecv: Some(10), ifdrop: Some(2), filteraccept: Some(8), osdrop: Some(3), usrdeliv: Some(5) };
    assert_eq!(r.interfaces()[a as usize].recorded, Some(want));
    assert_eq!(r.interfaces()[a as usize].recorded.unwrap().drops(), 5);
    assert_eq!(r.interfaces()[b as usize].recorded, None);

    // Big-endian: SHB, IDB (Ethernet), ISB for interface 0 with isb_ifdrop = 7 and isb_usrdeliv = 0.
    let mut be = Vec::new();
    let block = |kind: u32, body: &[u8], out: &mut Vec<u8>| {
        let len = (12 + body.len()) as u32;
        out.extend_from_slice(&kind.to_be_bytes());
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(&len.to_be_bytes());
    };
    block(0x0A0D_0D0A, &[0x1A, 0x2B, 0x3C, 0x4D, 0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], &mut be);
    block(1, &[0, 1, 0, 0, 0, 0, 0xff, 0xff], &mut be);
    let mut isb = vec![0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2];
    isb.extend_from_slice(&[0, 5, 0, 8, 0, 0, 0, 0, 0, 0, 0, 7]);
    isb.extend_from_slice(&[0, 8, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0]);
    isb.extend_from_slice(&[0, 0, 0, 0]);
    block(5, &isb, &mut be);
    let r = CaptureReader::from_reader("be".into(), Box::new(std::io::Cursor::new(be))).unwrap();
    let mut r = r;
    while r.next_frame().unwrap().is_some() {}
    let want = RecordedStats { ifdrop: Some(7), usrdeliv: Some(0), ..Default::default() };
    assert_eq!(r.interfaces()[0].recorded, Some(want));
    std::fs::remove_dir_all(&dir).unwrap();
}
