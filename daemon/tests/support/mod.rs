//! Frames built by hand for the daemon's analyze tests: a market-data feed from 10.0.0.9 and one order
//! session between a client 10.1.0.2:40001 and an exchange 10.1.0.1:8003.
#![allow(dead_code, reason = "each test binary uses a subset")]

use std::path::{Path, PathBuf};
use wirestamp_capture::write::PcapWriter;
use wirestamp_core::LinkType;
use wirestamp_lab::encode::{itch, mold, ouch, soup};
use wirestamp_lab::packet::{self, TcpHdr};

/// 2026-11-30T14:30:00Z, in ns.
pub const T0: i64 = 1_796_049_000_000_000_000;
/// A millisecond, in ns.
pub const MS: i64 = 1_000_000;

/// A fresh directory for one test's files, `name` telling the tests apart (the test removes it).
pub fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wirestamp-analyze-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `wirestamp analyze -q --json ARGS CAPTURE`, which must succeed: its report.
pub fn analyze_json(args: &[&str], capture: &Path) -> serde_json::Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wirestamp"))
        .args(["analyze", "-q", "--json"])
        .args(args)
        .arg(capture)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `wirestamp analyze -q ARGS CAPTURE`, which must succeed: its terminal report.
pub fn analyze_text(args: &[&str], capture: &Path) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wirestamp"))
        .args(["analyze", "-q"])
        .args(args)
        .arg(capture)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `wirestamp synth --pcap -n PACKETS` into `dir/name` (and its truth beside it), which must succeed.
pub fn synth_pcap(dir: &Path, name: &str, packets: u32) -> PathBuf {
    let p = dir.join(name);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wirestamp"))
        .args(["synth", "--pcap", "-n", &packets.to_string()])
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    p
}

/// The report's metric `name`.
pub fn metric<'a>(r: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    r["metrics"].as_array().unwrap().iter().find(|m| m["name"] == name).unwrap()
}

/// A metric's dimensions as (name, count), in the report's order.
pub fn dims(m: &serde_json::Value) -> Vec<(&str, u64)> {
    m["dims"].as_array().unwrap().iter().map(|d| (d["name"].as_str().unwrap(), d["count"].as_u64().unwrap())).collect()
}

/// [`analyze_json`] over `frames` written as a pcap in a directory of its own (`name`, removed after).
pub fn analyze_frames(name: &str, frames: &[(i64, Vec<u8>)], args: &[&str]) -> serde_json::Value {
    let dir = tmpdir(name);
    let cap = dir.join("frames.pcap");
    write_pcap(&cap, frames);
    let r = analyze_json(args, &cap);
    std::fs::remove_dir_all(&dir).unwrap();
    r
}

/// `frame` with its FCS and an Arista 7130 / Metamako trailer stamping it at `t` (flags: FCS valid).
pub fn with_trailer(frame: &[u8], t: i64) -> Vec<u8> {
    let mut f = frame.to_vec();
    f.extend(wirestamp_core::trailer::crc32(frame).to_le_bytes());
    f.extend(((t / 1_000_000_000) as u32).to_be_bytes());
    f.extend(((t % 1_000_000_000) as u32).to_be_bytes());
    f.extend([0x01, 0x4c, 0x1c, 0x2e]);
    f
}

/// Writes `(time_ns, Ethernet frame)` records as a nanosecond pcap at `path`.
pub fn write_pcap(path: &Path, frames: &[(i64, Vec<u8>)]) {
    let mut w = PcapWriter::new(std::fs::File::create(path).unwrap(), LinkType::Ethernet, 65535).unwrap();
    for (t, f) in frames {
        w.write(*t, f, f.len() as u32).unwrap();
    }
    w.finish().unwrap();
}

/// One ITCH Add Order: locate 1, tracking 1, timestamp 7 ns, buy 100 AAPL at 100.0000.
pub fn aapl_add() -> Vec<u8> {
    let mut add = Vec::new();
    itch::add_order(&mut add, 1, 1, 7, b'B', 100, "AAPL", 1_000_000);
    add
}

/// A UDP datagram from 10.0.0.9:40000 to `dst:dport` (multicast MAC of `dst`).
pub fn udp(dst: [u8; 4], dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    packet::ethernet(&mut f, packet::multicast_mac(dst), [2, 0, 0, 0, 0, 9], None);
    packet::ipv4_udp(&mut f, [10, 0, 0, 9], dst, 40000, dport, 1, payload);
    packet::pad_min(&mut f);
    f
}

/// A segment of the order session: client 10.1.0.2:40001 to exchange 10.1.0.1:8003 or back.
pub fn segment(to_exchange: bool, seq: u32, ack: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let (client, exchange) = (([2, 0, 0, 0, 0, 1], [10, 1, 0, 2], 40001), ([2, 0, 0, 0, 0, 2], [10, 1, 0, 1], 8003));
    let (src, dst) = if to_exchange { (client, exchange) } else { (exchange, client) };
    let mut f = Vec::new();
    packet::ethernet(&mut f, src.0, dst.0, None);
    let h = TcpHdr { sport: src.2, dport: dst.2, seq, ack, flags };
    packet::ipv4_tcp(&mut f, src.1, dst.1, h, 1, payload);
    packet::pad_min(&mut f);
    f
}

/// A client-to-exchange data segment (PSH|ACK) at `seq`.
pub fn tcp(seq: u32, payload: &[u8]) -> Vec<u8> {
    segment(true, seq, 1, 0x18, payload)
}

/// A pure ACK from the exchange acknowledging the client's bytes up to `ack`.
pub fn exchange_ack(ack: u32) -> Vec<u8> {
    segment(false, 77, ack, 0x10, &[])
}

/// A MoldUDP64 packet of `session` starting at `seq` with `msgs`.
pub fn mold_packet(session: &[u8; 10], seq: u64, msgs: &[Vec<u8>]) -> Vec<u8> {
    let mut p = Vec::new();
    mold::header(&mut p, session, seq, msgs.len() as u16);
    for m in msgs {
        mold::block(&mut p, m);
    }
    p
}

/// Order `n`: buy 100 AAPL at 100.0000, UserRefNum `n`, ClOrdID `T` + `n` in 13 digits.
pub fn aapl_order(n: u32) -> ouch::Order {
    ouch::Order {
        user_ref_num: n,
        side: b'B',
        quantity: 100,
        symbol: "AAPL".into(),
        price: 1_000_000,
        cl_ord_id: format!("T{n:013}"),
    }
}

/// One SoupBinTCP Unsequenced Data packet holding an OUCH 5.0 Enter Order for AAPL (UserRefNum `n`,
/// ClOrdID `T` + 13 digits): 50 bytes.
pub fn order(n: u32) -> Vec<u8> {
    let mut m = Vec::new();
    ouch::enter_order(&mut m, &aapl_order(n));
    let mut p = Vec::new();
    soup::packet(&mut p, b'U', &m);
    assert_eq!(p.len(), 50);
    p
}

/// An exchange-to-client data segment (PSH|ACK) at `seq`.
pub fn exchange_tcp(seq: u32, payload: &[u8]) -> Vec<u8> {
    segment(false, seq, 1, 0x18, payload)
}

/// One SoupBinTCP Sequenced Data packet holding the OUCH 5.0 Order Accepted of [`order`]`(n)`.
pub fn accepted(n: u32) -> Vec<u8> {
    let mut m = Vec::new();
    ouch::accepted(&mut m, 0, &aapl_order(n), u64::from(n));
    let mut p = Vec::new();
    soup::packet(&mut p, b'S', &m);
    p
}

/// The counters that say what became of the orders and responses.
pub fn fates(r: &serde_json::Value) -> [u64; 5] {
    let c = &r["counters"];
    ["orders", "acked", "unacked", "awaiting_at_end", "unmatched_responses"].map(|k| c[k].as_u64().unwrap())
}

/// A metric's count, minimum and maximum.
pub fn count_min_max(m: &serde_json::Value) -> (Option<u64>, Option<i64>, Option<i64>) {
    (m["count"].as_u64(), m["min_ns"].as_i64(), m["max_ns"].as_i64())
}

/// One SoupBinTCP packet of type `ty` holding `msg`.
pub fn soup_packet(ty: u8, msg: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    soup::packet(&mut p, ty, msg);
    p
}

/// An order session's frames from a script of (ms after T0, to the exchange, bytes): each direction's
/// sequence numbers run on from 1, and each segment acknowledges all the other direction sent before.
pub fn conversation(script: &[(i64, bool, Vec<u8>)]) -> Vec<(i64, Vec<u8>)> {
    let (mut inbound, mut outbound) = (1u32, 1u32);
    let mut frames = Vec::new();
    for (ms, to_exchange, bytes) in script {
        let (seq, ack) = if *to_exchange { (inbound, outbound) } else { (outbound, inbound) };
        frames.push((T0 + ms * MS, segment(*to_exchange, seq, ack, 0x18, bytes)));
        *(if *to_exchange { &mut inbound } else { &mut outbound }) += bytes.len() as u32;
    }
    frames
}

/// OUCH 4.2 Enter Order (49 bytes) with `token`, in a SoupBinTCP Unsequenced Data packet.
pub fn enter42(token: &[u8; 14]) -> Vec<u8> {
    enter42_min(token, 0)
}

/// [`enter42`] with a minimum quantity.
pub fn enter42_min(token: &[u8; 14], min_qty: u32) -> Vec<u8> {
    enter42_full(token, b"AAPL    ", min_qty)
}

/// [`enter42`] of `symbol` (its 8 bytes as the wire holds them).
pub fn enter42_of(token: &[u8; 14], symbol: &[u8; 8]) -> Vec<u8> {
    enter42_full(token, symbol, 0)
}

/// OUCH 4.2 Enter Order (49 bytes, OUCH 4.2's layout): buy 100 shares of `symbol` at 100.0000, minimum quantity
/// `min_qty`.
pub fn enter42_full(token: &[u8; 14], symbol: &[u8; 8], min_qty: u32) -> Vec<u8> {
    let mut m = vec![b'O'];
    m.extend_from_slice(token);
    m.push(b'B');
    m.extend_from_slice(&100u32.to_be_bytes());
    m.extend_from_slice(symbol);
    m.extend_from_slice(&1_000_000u32.to_be_bytes());
    m.extend_from_slice(&99_999u32.to_be_bytes()); // time in force: market hours
    m.extend_from_slice(b"FIRM");
    m.extend_from_slice(b"YPN"); // display, capacity, intermarket sweep
    m.extend_from_slice(&min_qty.to_be_bytes()); // minimum quantity
    m.extend_from_slice(b"NR"); // cross type, customer type
    assert_eq!(m.len(), 49);
    let mut p = Vec::new();
    soup::packet(&mut p, b'U', &m);
    p
}

/// OUCH 4.2 Accepted (66 bytes, OUCH 4.2's layout) of [`enter42_of`]`(token, symbol)`, live (order state
/// `L`), in a SoupBinTCP Sequenced Data packet.
pub fn accepted42(token: &[u8; 14], symbol: &[u8; 8]) -> Vec<u8> {
    let mut m = vec![b'A'];
    m.extend_from_slice(&0u64.to_be_bytes()); // timestamp
    m.extend_from_slice(token);
    m.push(b'B');
    m.extend_from_slice(&100u32.to_be_bytes());
    m.extend_from_slice(symbol);
    m.extend_from_slice(&1_000_000u32.to_be_bytes());
    m.extend_from_slice(&99_999u32.to_be_bytes());
    m.extend_from_slice(b"FIRM");
    m.push(b'Y'); // display
    m.extend_from_slice(&1u64.to_be_bytes()); // order reference number
    m.extend_from_slice(b"PN"); // capacity, intermarket sweep
    m.extend_from_slice(&0u32.to_be_bytes()); // minimum quantity
    m.extend_from_slice(b"NL "); // cross type, order state (live), BBO weight indicator
    assert_eq!(m.len(), 66);
    soup_packet(b'S', &m)
}

/// OUCH 4.2 Rejected (24 bytes, OUCH 4.2's layout) of the order `token`, reason `O` (other), in a
/// SoupBinTCP Sequenced Data packet.
pub fn rejected42(token: &[u8; 14]) -> Vec<u8> {
    let mut m = vec![b'J'];
    m.extend_from_slice(&0u64.to_be_bytes());
    m.extend_from_slice(token);
    m.push(b'O');
    assert_eq!(m.len(), 24);
    soup_packet(b'S', &m)
}

/// An OUCH 5.0 Enter Order packet for AAPL, UserRefNum `n`, whose ClOrdID carries tick `seq`.
pub fn order_for(n: u32, seq: u64) -> Vec<u8> {
    let mut ord = aapl_order(n);
    ord.cl_ord_id = format!("T{seq:013}");
    let mut m = Vec::new();
    ouch::enter_order(&mut m, &ord);
    soup_packet(b'U', &m)
}

/// A MoldUDP64 packet of feed 233.54.12.111:26477 carrying one AAPL Add Order, sequence `seq`.
pub fn aapl_tick(seq: u64) -> Vec<u8> {
    udp([233, 54, 12, 111], 26477, &mold_packet(b"SESSION001", seq, &[aapl_add()]))
}

/// A MoldUDP64 packet of feed A carrying one Add Order for `symbol` (locate 1 for AAPL, 2 else).
pub fn symbol_tick(seq: u64, symbol: &str) -> Vec<u8> {
    let mut m = Vec::new();
    itch::add_order(&mut m, if symbol == "AAPL" { 1 } else { 2 }, 1, 7, b'B', 100, symbol, 1_000_000);
    udp([233, 54, 12, 111], 26477, &mold_packet(b"SESSION001", seq, &[m]))
}

/// An OUCH 5.0 Enter Order packet for `symbol`, UserRefNum `n`.
pub fn order_of(n: u32, symbol: &str) -> Vec<u8> {
    let mut o = aapl_order(n);
    o.symbol = symbol.into();
    let mut m = Vec::new();
    ouch::enter_order(&mut m, &o);
    soup_packet(b'U', &m)
}

/// The client's segments carrying `orders` (bytes) at their times, after a SYN at T0 − 1 ms.
pub fn with_orders(mut frames: Vec<(i64, Vec<u8>)>, orders: &[(i64, Vec<u8>)]) -> Vec<(i64, Vec<u8>)> {
    frames.push((T0 - MS, segment(true, 0, 0, 0x02, &[])));
    let mut seq = 1u32;
    for (t, bytes) in orders {
        frames.push((*t, segment(true, seq, 1, 0x18, bytes)));
        seq += bytes.len() as u32;
    }
    frames.sort_by_key(|f| f.0);
    frames
}
