//! The decoding hot paths allocate nothing per message: a counting global allocator (per thread)
//! watches MoldUDP64 + ITCH decoding of a real capture, OUCH 5.0 decoding and SoupBinTCP framing.

mod support;

use support::counting_alloc::{Counting, allocs};
use wirestamp_core::proto::market::MoldItchDecoder;
use wirestamp_core::proto::moldudp64::SeqTracker;
use wirestamp_core::proto::soupbin::{Framer, SoupPacket};
use wirestamp_core::proto::{OrderDir, ouch5};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn hot_paths_do_not_allocate() {
    let (_, pl) = support::payloads(&wirestamp_testdata::data_file("pcap_market/elk_nasdaq.pcap"));
    let feed: Vec<Vec<u8>> = pl.into_iter().filter(|p| p.udp && p.dport == 26477).map(|p| p.bytes).collect();
    let mut dec = MoldItchDecoder::new();
    let mut tracker = SeqTracker::<u16>::default();
    let mut messages = 0u64;
    let mut step = |dec: &mut MoldItchDecoder, tracker: &mut SeqTracker<u16>, p: &[u8]| {
        let info = dec.packet(p, |m| messages += u64::from(m.stock_locate > 0)).unwrap();
        tracker.observe(26477, info.session, info.sequence, info.count);
    };
    // Warm-up: the tracker's first packet creates its stream entry (one allocation per stream).
    step(&mut dec, &mut tracker, &feed[0]);
    let before = allocs();
    for p in &feed[1..] {
        step(&mut dec, &mut tracker, p);
    }
    assert_eq!(allocs() - before, 0, "MoldUDP64 + ITCH decoding allocated");
    assert_eq!(dec.itch.decoded(), 2232);
    assert!(messages > 0);
    assert_eq!(tracker.iter().next().unwrap().2.messages, 2232);

    // OUCH 5.0 Order Accepted with appendage, in SoupBinTCP, framed from 1,460-byte segments.
    let acc = b"\x41\x00\x00\x28\x9b\x4d\x64\xaf\x87\x00\x75\x3a\x8d\x42\x00\x00\x00\x28ADBE    \x00\x00\x00\x00\x00\x48\xe7\x48\x35\x59\x00\x00\x00\x00\x0f\x56\xb4\xf5\x41\x4e\x4e\x4c7682701       \x00\x09\x05\x02MLRO\x02\x12\x30";
    let mut stream = Vec::new();
    for _ in 0..500 {
        stream.extend_from_slice(&((acc.len() + 1) as u16).to_be_bytes());
        stream.push(b'S');
        stream.extend_from_slice(acc);
    }
    let mut framer = Framer::new(256);
    let mut qty = 0u64;
    let mut run = |framer: &mut Framer| {
        for chunk in stream.chunks(1460) {
            framer
                .feed(chunk, |p| {
                    if let Ok(SoupPacket::SequencedData(m)) = SoupPacket::parse(p.bytes())
                        && let Ok(Some(s)) = ouch5::summarize(OrderDir::Outbound, m)
                    {
                        qty += u64::from(s.qty.unwrap());
                        if let Ok(ouch5::Outbound::OrderAccepted(a)) = ouch5::parse_outbound(m) {
                            qty += a.options().count() as u64;
                        }
                    }
                })
                .unwrap();
        }
    };
    // Warm-up: the first packet split across segments sizes the framer's buffer once.
    run(&mut framer);
    let before = allocs();
    run(&mut framer);
    assert_eq!(allocs() - before, 0, "SoupBinTCP framing + OUCH 5.0 decoding allocated");
    assert_eq!(qty, 2 * 500 * (40 + 2));
}
