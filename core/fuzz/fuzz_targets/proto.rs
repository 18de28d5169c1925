//! Every protocol decoder entry point on the same arbitrary bytes: none may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wirestamp_core::proto::market::MoldItchDecoder;
use wirestamp_core::proto::moldudp64::{self, Packet};
use wirestamp_core::proto::soupbin::{Framer, SoupPacket};
use wirestamp_core::proto::{OrderDir, itch, ouch5, ouch42};

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = itch::parse(data) {
        let _ = m.summary();
    }
    if let Ok(p) = Packet::new_checked(data) {
        let mut it = p.messages();
        for (_, m) in it.by_ref() {
            let _ = itch::parse(m);
        }
        let _ = it.error();
    }
    for r in moldudp64::split_stream(data) {
        let _ = r;
    }
    let _ = MoldItchDecoder::new().packet(data, |_| {});
    let _ = SoupPacket::parse(data);
    // Framing with a chunk boundary taken from the first byte.
    let cut = data.first().map_or(0, |&b| usize::from(b)).min(data.len());
    let mut f = Framer::new(512);
    for chunk in [&data[..cut], &data[cut..]] {
        if f.feed(chunk, |p| {
            let _ = SoupPacket::parse(p.bytes());
        })
        .is_err()
        {
            f.reset();
        }
    }
    for dir in [OrderDir::Inbound, OrderDir::Outbound] {
        let _ = ouch5::summarize(dir, data);
        let _ = ouch42::summarize(dir, data);
    }
    if let Ok(ouch5::Inbound::EnterOrder(o)) = ouch5::parse_inbound(data) {
        for t in o.options() {
            let _ = t.as_u64();
        }
    }
});
