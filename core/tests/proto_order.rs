//! SoupBinTCP + OUCH 5.0 against the real OMI Nasdaq NSM frames (Metamako-trailed), with the saved
//! tshark oracle (TCP payload hex) and values decoded by hand from that hex per the OUCH 5.0 spec.

mod support;

use support::payloads;
use wirestamp_core::proto::ouch5::{self, Inbound, OptionTag, Outbound};
use wirestamp_core::proto::soupbin::{Framer, SoupPacket};
use wirestamp_core::proto::{OrderDir, OrderId, Side, Symbol};
use wirestamp_testdata::{data_file, shared_data};

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The single TCP payload of an OMI OUCH file, checked against the oracle's length and hex.
fn payload_of(name: &str) -> Vec<u8> {
    let oracle = std::fs::read_to_string(data_file("oracles_tshark_4.0.17/omi_ouch50_metamako.csv")).unwrap();
    let row: Vec<&str> = oracle.lines().find(|l| l.starts_with(name)).expect("oracle row").split(',').collect();
    let path = shared_data().join("omi_data_packets/Nasdaq/Nasdaq.Nsm.Ouch.v5.0").join(name);
    let (frames, pl) = payloads(&path);
    assert_eq!((frames, pl.len()), (1, 1), "{name}");
    let p = &pl[0];
    assert!(!p.udp);
    assert_eq!((p.sport.to_string(), p.dport.to_string()), (row[2].to_owned(), row[3].to_owned()), "{name}");
    // Dissection::payload stops at the IP length: no Ethernet padding, no 16-byte trailer.
    assert_eq!(p.bytes.len().to_string(), row[4], "{name}");
    assert_eq!(hex(&p.bytes), row[5], "{name}");
    p.bytes.clone()
}

/// Frames one payload into exactly one SoupBinTCP packet.
fn one_packet(bytes: &[u8]) -> SoupPacket<'_> {
    let mut framer = Framer::new(256);
    let mut ranges = Vec::new();
    let n = framer.feed(bytes, |p| ranges.push(p.bytes().len())).unwrap();
    assert_eq!((n, framer.pending(), ranges), (1, 0, vec![bytes.len()]));
    SoupPacket::parse(bytes).unwrap()
}

#[test]
fn cancel_order_request() {
    let b = payload_of("CancelOrderMessage.pcap");
    let SoupPacket::UnsequencedData(msg) = one_packet(&b) else { panic!("not 'U'") };
    let Inbound::CancelOrder(x) = ouch5::parse_inbound(msg).unwrap() else { panic!("not 'X'") };
    assert_eq!((x.user_ref_num(), x.quantity()), (0x0075_2e71, 0));
    let s = ouch5::summarize(OrderDir::Inbound, msg).unwrap().unwrap();
    assert_eq!(
        (s.dir, s.msg_type, s.id, s.qty),
        (OrderDir::Inbound, b'X', Some(OrderId::UserRefNum(0x0075_2e71)), Some(0))
    );
}

#[test]
fn accepted_and_canceled_pair_by_user_ref_num() {
    let acc = payload_of("OrderAcceptedMessage.pcap");
    let SoupPacket::SequencedData(msg) = one_packet(&acc) else { panic!("not 'S'") };
    let Outbound::OrderAccepted(a) = ouch5::parse_outbound(msg).unwrap() else { panic!("not 'A'") };
    // Decoded by hand from the oracle hex: 53 41 | 0000289b4d64af87 | 00753a8d | 42 | 00000028 |
    // 4144424520202020 | 000000000048e748 | 35 59 | 000000000f56b4f5 | 41 4e 4e 4c | 37363832...20 | 0009 | ...
    assert_eq!(
        (a.timestamp(), a.user_ref_num(), a.side(), a.quantity()),
        (0x289b_4d64_af87, 0x0075_3a8d, Side::Buy, 40)
    );
    assert_eq!((a.symbol(), a.price(), a.time_in_force(), a.display()), (Symbol::new("ADBE"), 0x48_e748, b'5', b'Y'));
    assert_eq!(
        (a.order_reference_number(), a.capacity(), a.intermarket_sweep_eligibility()),
        (0x0f56_b4f5, b'A', b'N')
    );
    assert_eq!((a.cross_type(), a.order_state(), &a.cl_ord_id()), (b'N', b'L', b"7682701       "));
    assert_eq!(a.appendage_length(), 9);
    let opts: Vec<_> = a.options().collect();
    assert_eq!(opts.len(), 2);
    assert_eq!((opts[0].tag, opts[0].value), (OptionTag::Firm, &b"MLRO"[..]));
    assert_eq!((opts[1].tag, opts[1].value), (OptionTag::BboWeightIndicator, &b"0"[..]));
    assert!(opts.iter().all(|o| o.size_ok()));

    let can = payload_of("CanceledMessage.pcap");
    let SoupPacket::SequencedData(msg) = one_packet(&can) else { panic!("not 'S'") };
    let Outbound::OrderCanceled(c) = ouch5::parse_outbound(msg).unwrap() else { panic!("not 'C'") };
    assert_eq!((c.timestamp(), c.user_ref_num(), c.quantity(), c.reason()), (0x289b_4d68_1317, 0x0075_3a8d, 40, b'U'));
    assert_eq!(c.user_ref_num(), a.user_ref_num(), "UserRefNum pairs the cancel with the accept");
    assert!(c.timestamp() > a.timestamp());
}

#[test]
fn enter_order_with_firm_option() {
    let b = payload_of("EnterOrderMessage.pcap");
    let SoupPacket::UnsequencedData(msg) = one_packet(&b) else { panic!("not 'U'") };
    let Inbound::EnterOrder(o) = ouch5::parse_inbound(msg).unwrap() else { panic!("not 'O'") };
    // 4f | 00000071 | 54 | 000000e1 | 43564c5420202020 | 0000000000099db8 | 30 59 41 4e 4e |
    // 4838465542384956202020202020 | 0006 | 05 02 4c494d45
    assert_eq!(
        (o.user_ref_num(), o.side(), o.quantity(), o.symbol()),
        (0x71, Side::SellShort, 225, Symbol::new("CVLT"))
    );
    assert_eq!((o.price(), o.time_in_force(), o.display(), o.capacity()), (0x9_9db8, b'0', b'Y', b'A'));
    assert_eq!((o.intermarket_sweep_eligibility(), o.cross_type(), &o.cl_ord_id()), (b'N', b'N', b"H8FUB8IV      "));
    let opts: Vec<_> = o.options().collect();
    assert_eq!(opts.len(), 1);
    assert_eq!((opts[0].tag, opts[0].value), (OptionTag::Firm, &b"LIME"[..]));
    let s = ouch5::summarize(OrderDir::Inbound, msg).unwrap().unwrap();
    assert_eq!(
        (s.id, s.cl_ord_id, s.symbol, s.side),
        (Some(OrderId::UserRefNum(0x71)), Some(*b"H8FUB8IV      "), Some(Symbol::new("CVLT")), Some(Side::SellShort))
    );
    assert_eq!((s.qty, s.price), (Some(225), Some(630_200)));
}

#[test]
fn heartbeats_both_directions() {
    assert_eq!(one_packet(&payload_of("ClientHeartbeatPacket.pcap")), SoupPacket::ClientHeartbeat);
    assert_eq!(one_packet(&payload_of("ServerHeartbeatPacket.pcap")), SoupPacket::ServerHeartbeat);
}

#[test]
fn all_six_payloads_as_one_stream_at_every_split() {
    let names = [
        "ClientHeartbeatPacket.pcap",
        "EnterOrderMessage.pcap",
        "CancelOrderMessage.pcap",
        "OrderAcceptedMessage.pcap",
        "CanceledMessage.pcap",
        "ServerHeartbeatPacket.pcap",
    ];
    let parts: Vec<Vec<u8>> = names.iter().map(|n| payload_of(n)).collect();
    let stream = parts.concat();
    for cut in 0..=stream.len() {
        let mut f = Framer::default();
        let mut got = Vec::new();
        for chunk in [&stream[..cut], &stream[cut..]] {
            f.feed(chunk, |p| got.push(p.bytes().to_vec())).unwrap();
        }
        assert_eq!(got, parts, "split at {cut}");
    }
}
