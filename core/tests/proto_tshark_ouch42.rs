//! OUCH 4.2 and SoupBinTCP against tshark 4.0's dissectors (Wireshark's OUCH dissector is 4.x, its
//! SoupBinTCP dissector does its own TCP reassembly): messages built by hand from the 4.2 layouts
//! are written into a generated capture, and every field tshark shows must equal ours.

mod support;

use support::{B, tcp_frame, tcp_frame_flags, temp_pcap, write_pcap};
use wirestamp_core::proto::ouch42::{self, Inbound, Outbound};
use wirestamp_core::proto::soupbin::{Framer, SoupPacket, SoupSequencer};
use wirestamp_core::proto::{Side, Symbol};
use wirestamp_testdata::tshark_fields;

/// `tshark -V` output split per frame (text from one "Frame N:" line to the next).
fn tshark_verbose(path: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let out = std::process::Command::new("tshark")
        .arg("-n")
        .arg("-r")
        .arg(path)
        .args(extra)
        .arg("-V")
        .output()
        .unwrap_or_else(|e| panic!("cannot run tshark: {e}"));
    assert!(out.status.success(), "tshark failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut frames: Vec<String> = Vec::new();
    for line in text.lines() {
        if line.starts_with("Frame ") {
            frames.push(String::new());
        }
        if let Some(f) = frames.last_mut() {
            f.push_str(line);
            f.push('\n');
        }
    }
    frames
}

const T1: &str = "ORD00000000001";
const T2: &str = "ORD00000000002";
// 10:30:00.000000123 after midnight.
const TS: u64 = 37_800_000_000_123;

fn inbound() -> Vec<Vec<u8>> {
    vec![
        B::default()
            .c(b'O')
            .s(T1, 14)
            .c(b'B')
            .u32(500)
            .s("MSFT", 8)
            .u32(3_301_200)
            .u32(99_998)
            .s("FIRM", 4)
            .c(b'Y')
            .c(b'P')
            .c(b'N')
            .u32(100)
            .c(b'N')
            .c(b'R')
            .0,
        B::default().c(b'U').s(T1, 14).s(T2, 14).u32(600).u32(3_301_300).u32(0).c(b'N').c(b'Y').u32(0).0,
        B::default().c(b'X').s(T2, 14).u32(0).0,
        B::default().c(b'M').s(T2, 14).c(b'T').u32(300).0,
    ]
}

fn outbound() -> Vec<Vec<u8>> {
    let t = |c: u8| B::default().c(c).u64(TS).s(T1, 14);
    vec![
        B::default().c(b'S').u64(TS).c(b'S').0,
        t(b'A')
            .c(b'S')
            .u32(500)
            .s("MSFT", 8)
            .u32(3_301_200)
            .u32(99_998)
            .s("FIRM", 4)
            .c(b'Y')
            .u64(123_456_789)
            .c(b'P')
            .c(b'N')
            .u32(100)
            .c(b'N')
            .c(b'L')
            .c(b'1')
            .0,
        B::default()
            .c(b'U')
            .u64(TS)
            .s(T2, 14)
            .c(b'S')
            .u32(600)
            .s("MSFT", 8)
            .u32(3_301_300)
            .u32(0)
            .s("FIRM", 4)
            .c(b'N')
            .u64(123_456_790)
            .c(b'P')
            .c(b'Y')
            .u32(0)
            .c(b'N')
            .c(b'L')
            .s(T1, 14)
            .c(b'2')
            .0,
        t(b'C').u32(600).c(b'U').0,
        t(b'D').u32(10).c(b'Q').u32(12).u32(3_300_000).c(b'A').0,
        t(b'E').u32(200).u32(3_301_200).c(b'R').u64(55_001).0,
        t(b'B').u64(55_001).c(b'C').0,
        t(b'F').u32(150).u32(3_301_150).c(b'A').u64(55_002).c(b'E').0,
        t(b'G').u32(175).u32(3_301_175).c(b'R').u64(55_003).u32(3_301_000).c(b'1').0,
        t(b'K').u64(55_001).u32(3_301_100).c(b'S').0,
        t(b'J').c(b'H').0,
        t(b'P').0,
        t(b'I').0,
        t(b'T').u32(3_301_000).c(b'Y').u64(123_456_791).0,
        t(b'M').c(b'E').u32(250).0,
    ]
}

fn soup(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = ((payload.len() + 1) as u16).to_be_bytes().to_vec();
    v.push(kind);
    v.extend_from_slice(payload);
    v
}

const FIELDS: &[&str] = &[
    "ouch.packet_type",
    "ouch.timestamp",
    "ouch.order_token",
    "ouch.existing_order_token",
    "ouch.replacement_order_token",
    "ouch.previous_order_token",
    "ouch.buy_sell_indicator",
    "ouch.shares",
    "ouch.executed_shares",
    "ouch.decrement_shares",
    "ouch.quantity_prevented_from_trading",
    "ouch.stock",
    "ouch.price",
    "ouch.execution_price",
    "ouch.new_execution_price",
    "ouch.reference_price",
    "ouch.tif",
    "ouch.firm",
    "ouch.display",
    "ouch.order_reference_number",
    "ouch.capacity",
    "ouch.iso_eligible",
    "ouch.min_quantity",
    "ouch.cross_type",
    "ouch.customer_type",
    "ouch.order_state",
    "ouch.bbo_weight_indicator",
    "ouch.match_number",
    "ouch.liquidity_flag",
    "ouch.event_code",
    "ouch.cancel_reason",
    "ouch.reject_reason",
    "ouch.broken_trade_reason",
    "ouch.trade_correction_reason",
    "ouch.price_correction_reason",
];

/// Our decoding, in tshark's field names and formats ('c' for chars, h:mm:ss.ns timestamps).
fn ours_inbound(m: &Inbound<'_>) -> Vec<(&'static str, String)> {
    let tok = |t: [u8; 14]| String::from_utf8_lossy(&t).into_owned();
    let ch = |c: u8| format!("'{}'", c as char);
    let side = |s: Side| ch(u8::from(s));
    let sym = |s: Symbol| String::from_utf8_lossy(&s.0).into_owned();
    match m {
        Inbound::EnterOrder(o) => vec![
            ("ouch.packet_type", ch(b'O')),
            ("ouch.order_token", tok(o.order_token())),
            ("ouch.buy_sell_indicator", side(o.side())),
            ("ouch.shares", o.shares().to_string()),
            ("ouch.stock", sym(o.stock())),
            ("ouch.price", o.price().to_string()),
            ("ouch.tif", o.time_in_force().to_string()),
            ("ouch.firm", String::from_utf8_lossy(&o.firm()).into_owned()),
            ("ouch.display", ch(o.display())),
            ("ouch.capacity", ch(o.capacity())),
            ("ouch.iso_eligible", ch(o.intermarket_sweep_eligibility())),
            ("ouch.min_quantity", o.minimum_quantity().to_string()),
            ("ouch.cross_type", ch(o.cross_type())),
            ("ouch.customer_type", ch(o.customer_type())),
        ],
        Inbound::ReplaceOrder(o) => vec![
            ("ouch.packet_type", ch(b'U')),
            ("ouch.existing_order_token", tok(o.existing_order_token())),
            ("ouch.replacement_order_token", tok(o.replacement_order_token())),
            ("ouch.shares", o.shares().to_string()),
            ("ouch.price", o.price().to_string()),
            ("ouch.tif", o.time_in_force().to_string()),
            ("ouch.display", ch(o.display())),
            ("ouch.iso_eligible", ch(o.intermarket_sweep_eligibility())),
            ("ouch.min_quantity", o.minimum_quantity().to_string()),
        ],
        Inbound::CancelOrder(o) => vec![
            ("ouch.packet_type", ch(b'X')),
            ("ouch.order_token", tok(o.order_token())),
            ("ouch.shares", o.shares().to_string()),
        ],
        Inbound::ModifyOrder(o) => vec![
            ("ouch.packet_type", ch(b'M')),
            ("ouch.order_token", tok(o.order_token())),
            ("ouch.buy_sell_indicator", side(o.side())),
            ("ouch.shares", o.shares().to_string()),
        ],
        Inbound::Unknown(..) => panic!("unknown"),
    }
}

fn ts(ns: u64) -> String {
    let s = ns / 1_000_000_000;
    format!("{}:{:02}:{:02}.{:09}", s / 3600, s % 3600 / 60, s % 60, ns % 1_000_000_000)
}

fn ours_outbound(m: &Outbound<'_>) -> Vec<(&'static str, String)> {
    let tok = |t: [u8; 14]| String::from_utf8_lossy(&t).into_owned();
    let ch = |c: u8| format!("'{}'", c as char);
    let side = |s: Side| ch(u8::from(s));
    let sym = |s: Symbol| String::from_utf8_lossy(&s.0).into_owned();
    let t = u8::from(m.message_type());
    let mut v = vec![("ouch.packet_type", ch(t))];
    match m {
        Outbound::SystemEvent(o) => {
            v.extend([("ouch.timestamp", ts(o.timestamp())), ("ouch.event_code", ch(o.event_code()))]);
        }
        Outbound::Accepted(o) => v.extend([
            ("ouch.timestamp", ts(o.timestamp())),
            ("ouch.order_token", tok(o.order_token())),
            ("ouch.buy_sell_indicator", side(o.side())),
            ("ouch.shares", o.shares().to_string()),
            ("ouch.stock", sym(o.stock())),
            ("ouch.price", o.price().to_string()),
            ("ouch.tif", o.time_in_force().to_string()),
            ("ouch.firm", String::from_utf8_lossy(&o.firm()).into_owned()),
            ("ouch.display", ch(o.display())),
            ("ouch.order_reference_number", o.order_reference_number().to_string()),
            ("ouch.capacity", ch(o.capacity())),
            ("ouch.iso_eligible", ch(o.intermarket_sweep_eligibility())),
            ("ouch.min_quantity", o.minimum_quantity().to_string()),
            ("ouch.cross_type", ch(o.cross_type())),
            ("ouch.order_state", ch(o.order_state())),
            ("ouch.bbo_weight_indicator", ch(o.bbo_weight_indicator())),
        ]),
        Outbound::Replaced(o) => v.extend([
            ("ouch.timestamp", ts(o.timestamp())),
            ("ouch.replacement_order_token", tok(o.replacement_order_token())),
            ("ouch.buy_sell_indicator", side(o.side())),
            ("ouch.shares", o.shares().to_string()),
            ("ouch.stock", sym(o.stock())),
            ("ouch.price", o.price().to_string()),
            ("ouch.tif", o.time_in_force().to_string()),
            ("ouch.firm", String::from_utf8_lossy(&o.firm()).into_owned()),
            ("ouch.display", ch(o.display())),
            ("ouch.order_reference_number", o.order_reference_number().to_string()),
            ("ouch.capacity", ch(o.capacity())),
            ("ouch.iso_eligible", ch(o.intermarket_sweep_eligibility())),
            ("ouch.min_quantity", o.minimum_quantity().to_string()),
            ("ouch.cross_type", ch(o.cross_type())),
            ("ouch.order_state", ch(o.order_state())),
            ("ouch.previous_order_token", tok(o.previous_order_token())),
            ("ouch.bbo_weight_indicator", ch(o.bbo_weight_indicator())),
        ]),
        Outbound::Canceled(o) => v.extend([
            ("ouch.timestamp", ts(o.timestamp())),
            ("ouch.order_token", tok(o.order_token())),
            ("ouch.decrement_shares", o.decrement_shares().to_string()),
            ("ouch.cancel_reason", ch(o.reason())),
        ]),
        Outbound::AiqCanceled(o) => v.extend([
            ("ouch.timestamp", ts(o.timestamp())),
            ("ouch.order_token", tok(o.order_token())),
            ("ouch.decrement_shares", o.decrement_shares().to_string()),
            ("ouch.cancel_reason", ch(o.reason())),
            ("ouch.quantity_prevented_from_trading", o.quantity_prevented_from_trading().to_string()),
            ("ouch.execution_price", o.execution_price().to_string()),
            ("ouch.liquidity_flag", ch(o.liquidity_flag())),
        ]),
        Outbound::Executed(o) => v.extend([
            ("ouch.timestamp", ts(o.timestamp())),
            ("ouch.order_token", tok(o.order_token())),
            ("ouch.executed_shares", o.executed_shares().to_string()),
            ("ouch.execution_price", o.execution_price().to_string()),
            ("ouch.liquidity_flag", ch(o.liquidity_flag())),
            ("ouch.match_number", o.match_number().to_string()),
        ]),
        Outbound::BrokenTrade(o) => v.extend([
            ("ouch.timestamp", ts(o.timestamp())),
            ("ouch.order_token", tok(o.order_token())),
            ("ouch.match_number", o.match_number().to_string()),
            ("ouch.broken_trade_reason", ch(o.reason())),
        ]),
        Outbound::TradeCorrection(o) => v.extend([
            ("ouch.timestamp", ts(o.timestamp())),
            ("ouch.order_token", tok(o.order_token())),
            ("ouch.executed_shares", o.executed_shares().to_string()),
            ("ouch.execution_price", o.execution_price().to_string()),
            ("ouch.liquidity_flag", ch(o.liquidity_flag())),
            ("ouch.match_number", o.match_number().to_string()),
            ("ouch.trade_correction_reason", ch(o.reason())),
        ]),
        Outbound::ExecutedWithReferencePrice(o) => v.extend([
            ("ouch.timestamp", ts(o.timestamp())),
            ("ouch.order_token", tok(o.order_token())),
            ("ouch.executed_shares", o.executed_shares().to_string()),
            ("ouch.execution_price", o.execution_price().to_string()),
            ("ouch.liquidity_flag", ch(o.liquidity_flag())),
            ("ouch.match_number", o.match_number().to_string()),
            ("ouch.reference_price", o.reference_price().to_string()),
        ]),
        Outbound::PriceCorrection(o) => v.extend([
            ("ouch.timestamp", ts(o.timestamp())),
            ("ouch.order_token", tok(o.order_token())),
            ("ouch.match_number", o.match_number().to_string()),
            ("ouch.new_execution_price", o.new_execution_price().to_string()),
            ("ouch.price_correction_reason", ch(o.reason())),
        ]),
        Outbound::Rejected(o) => v.extend([
            ("ouch.timestamp", ts(o.timestamp())),
            ("ouch.order_token", tok(o.order_token())),
            ("ouch.reject_reason", ch(o.reason())),
        ]),
        Outbound::CancelPending(o) => {
            v.extend([("ouch.timestamp", ts(o.timestamp())), ("ouch.order_token", tok(o.order_token()))])
        }
        Outbound::CancelReject(o) => {
            v.extend([("ouch.timestamp", ts(o.timestamp())), ("ouch.order_token", tok(o.order_token()))])
        }
        Outbound::OrderPriorityUpdate(o) => v.extend([
            ("ouch.timestamp", ts(o.timestamp())),
            ("ouch.order_token", tok(o.order_token())),
            ("ouch.price", o.price().to_string()),
            ("ouch.display", ch(o.display())),
            ("ouch.order_reference_number", o.order_reference_number().to_string()),
        ]),
        Outbound::OrderModified(o) => v.extend([
            ("ouch.timestamp", ts(o.timestamp())),
            ("ouch.order_token", tok(o.order_token())),
            ("ouch.buy_sell_indicator", side(o.side())),
            ("ouch.shares", o.shares().to_string()),
        ]),
        Outbound::Unknown(..) => panic!("unknown"),
    }
    v
}

#[test]
fn ouch42_fields_equal_tshark() {
    // One SoupBinTCP packet per TCP segment: client 'U' packets (inbound), server 'S' packets.
    let mut frames = Vec::new();
    let mut ours = Vec::new();
    let (mut cseq, mut sseq) = (1000u32, 5000u32);
    for m in inbound() {
        let p = soup(b'U', &m);
        frames.push(tcp_frame(true, 40000, 8000, cseq, &p));
        cseq += p.len() as u32;
        ours.push(ours_inbound(&ouch42::parse_inbound(&m).unwrap()));
    }
    for m in outbound() {
        let p = soup(b'S', &m);
        frames.push(tcp_frame(false, 8000, 40000, sseq, &p));
        sseq += p.len() as u32;
        ours.push(ours_outbound(&ouch42::parse_outbound(&m).unwrap()));
    }
    let path = temp_pcap("ouch42");
    write_pcap(&path, &frames);
    let rows = tshark_fields(&path, &["-d", "tcp.port==8000,soupbintcp"], FIELDS);
    std::fs::remove_file(&path).ok();
    assert_eq!(rows.len(), ours.len());
    for (i, (row, mine)) in rows.iter().zip(&ours).enumerate() {
        for (name, value) in mine {
            let j = FIELDS.iter().position(|f| f == name).unwrap();
            assert_eq!(&row[j], value, "frame {} field {name}", i + 1);
        }
        // Nothing tshark decodes is left unchecked.
        for (j, f) in FIELDS.iter().enumerate() {
            if !row[j].is_empty() {
                assert!(
                    mine.iter().any(|(n, _)| n == f),
                    "frame {}: tshark has {f}={} we do not compare",
                    i + 1,
                    row[j]
                );
            }
        }
    }
}

#[test]
fn soupbin_framing_and_sequence_equal_tshark() {
    // A server stream: Debug and Login Accepted (next 7) in the first segment (tshark's SoupBinTCP
    // dissector opens a new conversation at Login Accepted, which restarts its TCP reassembly, so
    // the login must end a segment), then 15 Sequenced OUCH messages with an Unsequenced and a
    // heartbeat in between, End of Session; cut into 37-byte TCP segments so packets split across
    // and share segments. tshark reassembles on its own.
    let mut login = soup(b'+', b"hello");
    login.extend(soup(b'A', b"  SESSION1                   7"));
    let mut stream = Vec::new();
    for (i, m) in outbound().iter().enumerate() {
        stream.extend(soup(b'S', m));
        if i == 3 {
            stream.extend(soup(b'U', &outbound()[0]));
            stream.extend(soup(b'H', b""));
        }
    }
    stream.extend(soup(b'Z', b""));
    let segments: Vec<&[u8]> = std::iter::once(&login[..]).chain(stream.chunks(37)).collect();
    // A handshake first, so tshark's TCP reassembly has its sequence base.
    let mut frames = vec![
        tcp_frame_flags(true, 40000, 8000, 999, 0, 0x02, &[]),
        tcp_frame_flags(false, 8000, 40000, 4999, 1000, 0x12, &[]),
    ];
    let mut framer = Framer::new(128);
    let mut seqr = SoupSequencer::default();
    let mut per_frame: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let mut seq = 5000u32;
    for chunk in segments {
        frames.push(tcp_frame_flags(false, 8000, 40000, seq, 1000, 0x18, chunk));
        seq += chunk.len() as u32;
        let (mut types, mut seqs) = (Vec::new(), Vec::new());
        framer
            .feed(chunk, |p| {
                let sp = SoupPacket::parse(p.bytes()).unwrap();
                types.push(format!("'{}'", p.bytes()[2] as char));
                if let Some(s) = seqr.observe(&sp) {
                    seqs.push(s.to_string());
                }
            })
            .unwrap();
        per_frame.push((types, seqs));
    }
    assert_eq!(framer.pending(), 0);
    let path = temp_pcap("soupbin");
    write_pcap(&path, &frames);
    let rows =
        tshark_fields(&path, &["-d", "tcp.port==8000,soupbintcp"], &["soupbintcp.packet_type", "soupbintcp.session"]);
    // tshark's calculated sequence numbers are display text only (the field value is a
    // placeholder), so read them from its verbose output, frame by frame.
    let verbose = tshark_verbose(&path, &["-d", "tcp.port==8000,soupbintcp"]);
    // KEEP_PCAP=1 keeps the generated capture for a look with Wireshark.
    if std::env::var_os("KEEP_PCAP").is_none() {
        std::fs::remove_file(&path).ok();
    }
    assert_eq!(rows.len(), per_frame.len() + 2);
    assert_eq!(verbose.len(), per_frame.len() + 2);
    let mut total = 0;
    for (i, (row, (types, seqs))) in rows[2..].iter().zip(&per_frame).enumerate() {
        let theirs: Vec<String> =
            if row[0].is_empty() { Vec::new() } else { row[0].split(',').map(str::to_owned).collect() };
        assert_eq!(&theirs, types, "frame {}: packets completed", i + 3);
        let their_seqs: Vec<String> = verbose[i + 2]
            .lines()
            .filter_map(|l| {
                l.trim().strip_prefix("Sequence number: ")?.strip_suffix(" (Calculated)").map(str::to_owned)
            })
            .collect();
        assert_eq!(&their_seqs, seqs, "frame {}: sequence numbers", i + 3);
        total += types.len();
    }
    let login = verbose.iter().find(|f| f.contains("Login Accepted")).expect("login accepted");
    assert!(login.contains("Session:   SESSION1") && login.contains("Next sequence number: 7"), "{login}");
    assert!(rows.iter().any(|r| r[1] == "  SESSION1"));
    assert_eq!(total, 1 + 1 + outbound().len() + 2 + 1);
}

#[test]
fn soupbin_client_and_login_packets_equal_tshark() {
    use wirestamp_core::proto::soupbin::LoginRequest;
    let packets = vec![
        soup(b'L', &B::default().s("USER01", 6).s("pass", 10).s("", 10).s("                 123", 20).0),
        // 4.1: Heartbeat Timeout appended (tshark 4.0 shows the 4.0 fields only).
        soup(
            b'L',
            &B::default().s("U2", 6).s("pw", 10).s("    SESS01", 10).s("                   0", 20).s("15000", 5).0,
        ),
        soup(b'R', b""),
        soup(b'O', b""),
        soup(b'+', b"dbg"),
        soup(b'U', &inbound()[2]),
    ];
    let mut frames = Vec::new();
    let mut seq = 1000u32;
    for p in &packets {
        frames.push(tcp_frame(true, 40000, 8000, seq, p));
        seq += p.len() as u32;
    }
    let path = temp_pcap("soupclient");
    write_pcap(&path, &frames);
    let rows = tshark_fields(
        &path,
        &["-d", "tcp.port==8000,soupbintcp"],
        &[
            "soupbintcp.packet_type",
            "soupbintcp.username",
            "soupbintcp.password",
            "soupbintcp.session",
            "soupbintcp.text",
        ],
    );
    let verbose = tshark_verbose(&path, &["-d", "tcp.port==8000,soupbintcp"]);
    std::fs::remove_file(&path).ok();
    assert_eq!((rows.len(), verbose.len()), (packets.len(), packets.len()));
    for (i, p) in packets.iter().enumerate() {
        let row = &rows[i];
        assert_eq!(row[0], format!("'{}'", p[2] as char), "frame {}", i + 1);
        match SoupPacket::parse(p).unwrap() {
            SoupPacket::LoginRequest { username, session, sequence, heartbeat_timeout_ms } => {
                let v = LoginRequest::new_checked(&p[..]).unwrap();
                assert_eq!(row[1], String::from_utf8_lossy(&username));
                assert_eq!(row[2], String::from_utf8_lossy(&v.password()));
                assert_eq!(row[3], String::from_utf8_lossy(&session));
                let theirs = verbose[i].lines().find_map(|l| l.trim().strip_prefix("Requested sequence number: "));
                assert_eq!(theirs.map(str::to_owned), sequence.map(|s| s.to_string()), "frame {}", i + 1);
                assert_eq!(heartbeat_timeout_ms, if i == 1 { Some(15_000) } else { None });
            }
            SoupPacket::Debug(t) => assert_eq!(row[4], String::from_utf8_lossy(t)),
            SoupPacket::ClientHeartbeat | SoupPacket::LogoutRequest => assert!(row[1..].iter().all(String::is_empty)),
            SoupPacket::UnsequencedData(m) => {
                assert!(matches!(ouch42::parse_inbound(m).unwrap(), Inbound::CancelOrder(_)));
                assert!(verbose[i].contains("OUCH, Cancel Order"), "{}", verbose[i]);
            }
            other => panic!("{other:?}"),
        }
    }
}
