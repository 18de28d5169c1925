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
