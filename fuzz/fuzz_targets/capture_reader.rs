#![no_main]
//! Any bytes as a capture file: frames or a clear error, never a panic, a hang or a huge allocation.

use libfuzzer_sys::fuzz_target;
use wirestamp_capture::CaptureReader;

fuzz_target!(|input: &[u8]| {
    let Ok(mut r) = CaptureReader::from_reader("fuzz".into(), Box::new(std::io::Cursor::new(input.to_vec()))) else {
        return;
    };
    // A compressed input may expand to far more bytes (and frames) than it holds: the bounds below only
    // hold for plain ones (the decompressed stream is bounded by the buffer's cap instead).
    let plain = r.format().compression == wirestamp_capture::Compression::None;
    let mut n = 0u64;
    while let Ok(Some(f)) = r.next_frame() {
        assert!(!plain || f.data.len() <= input.len());
        n += 1;
        assert!(!plain || n <= input.len() as u64, "more frames than bytes: the reader is not advancing");
    }
});
