#![no_main]
//! Any bytes as a capture file: frames or a clear error, never a panic, a hang or a huge allocation.

use libfuzzer_sys::fuzz_target;
use wirestamp_capture::CaptureReader;

fuzz_target!(|input: &[u8]| {
    let Ok(mut r) = CaptureReader::from_reader("fuzz".into(), Box::new(std::io::Cursor::new(input.to_vec()))) else {
        return;
    };
    let mut n = 0u64;
    while let Ok(Some(f)) = r.next_frame() {
        assert!(f.data.len() <= input.len());
        n += 1;
        assert!(n <= input.len() as u64, "more frames than bytes: the reader is not advancing");
    }
});
