#![no_main]
//! Any bytes as a frame, through every trailer mode: never a panic, and a stamp never claims more bytes
//! than the frame has.

use libfuzzer_sys::fuzz_target;
use wirestamp_core::dissect::dissect;
use wirestamp_core::trailer::{Decoded, TrailerDecoder, TrailerKind, TrailerMode};
use wirestamp_core::{Frame, LinkType};

fuzz_target!(|input: &[u8]| {
    if input.len() < 9 {
        return;
    }
    let (head, data) = input.split_at(9);
    let ts_ns = i64::from_le_bytes(head[..8].try_into().unwrap_or([0; 8]));
    let mode = match head[8] as usize % (TrailerKind::ALL.len() + 1) {
        0 => TrailerMode::Auto,
        k => TrailerMode::Forced(TrailerKind::ALL[k - 1]),
    };
    let frame = Frame::record(data, ts_ns, LinkType::Ethernet);
    let mut dec = TrailerDecoder::new(mode);
    let d = dissect(data, LinkType::Ethernet);
    if let Ok(Decoded::Stamp(s)) = dec.decode(&frame, &d) {
        assert!(s.trailer_len <= data.len());
    }
});
