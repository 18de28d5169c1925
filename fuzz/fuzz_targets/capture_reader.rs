#![no_main]
//! Any bytes as a capture file: frames or a clear error, never a panic, a hang or a huge allocation;
//! and read in runs (`CaptureReader::next_run`, declining frames by a pattern the input's last byte
//! chooses), the same frames in the same order, the same count and the same ending. Two copies of the
//! input merged (`MergedReader`), read in runs (`next_run_keyed`) and frame by frame: the same too.

use libfuzzer_sys::fuzz_target;
use wirestamp_capture::{CaptureReader, MergeKey, MergedReader, RunEnd};
use wirestamp_core::Frame;

/// Record times, as the merge keys frames by default.
struct RecordTime;

impl MergeKey for RecordTime {
    fn looks(&self, _: usize) -> bool {
        false
    }
    fn key(&mut self, _: usize, _: &Frame<'_>) -> Option<i64> {
        None
    }
}

/// A frame as both readings see it.
type Seen = (Vec<u8>, u32, i64);

fuzz_target!(|input: &[u8]| {
    let open = || CaptureReader::from_reader("fuzz".into(), Box::new(std::io::Cursor::new(input.to_vec())));
    let Ok(mut r) = open() else {
        return;
    };
    // A compressed input may expand to far more bytes (and frames) than it holds: the bounds below only
    // hold for plain ones (the decompressed stream is bounded by the buffer's cap instead).
    let plain = r.format().compression == wirestamp_capture::Compression::None;
    let mut one: Vec<Seen> = Vec::new();
    let one_end = loop {
        match r.next_frame() {
            Ok(Some(f)) => {
                assert!(!plain || f.data.len() <= input.len());
                one.push((f.data.to_vec(), f.wire_len, f.ts_ns));
                assert!(!plain || one.len() <= input.len(), "more frames than bytes: the reader is not advancing");
            }
            Ok(None) => break None,
            Err(e) => break Some(e.to_string()),
        }
    };
    let one_count = r.stats().frames;
    // In runs of 1 to 16 frames, declining every kth frame offered (k from 2 to 9).
    let pick = input.last().copied().unwrap_or(0);
    let (max, every) = (u64::from(pick % 16) + 1, usize::from(pick / 16 % 8) + 2);
    let mut r = open().expect("opened once already");
    let mut runs: Vec<Seen> = Vec::new();
    let mut offered = 0usize;
    let runs_end = loop {
        let (n, end) = r.next_run(max, |f| {
            offered += 1;
            runs.push((f.data.to_vec(), f.wire_len, f.ts_ns));
            offered % every != 0
        });
        assert!(n <= max);
        match end {
            Ok(RunEnd::Max) => assert_eq!(n, max),
            Ok(RunEnd::End) => break None,
            Ok(RunEnd::Declined) => {
                let declined = runs.pop().expect("a declined frame was offered");
                let f = r.next_frame().expect("the declined frame").expect("the declined frame");
                assert_eq!((f.data.to_vec(), f.wire_len, f.ts_ns), declined);
                runs.push(declined);
            }
            Err(e) => break Some(e.to_string()),
        }
        assert!(!plain || runs.len() <= input.len(), "more frames than bytes: the reader is not advancing");
    };
    assert_eq!(runs, one, "frames read in runs");
    assert_eq!((r.stats().frames, runs_end), (one_count, one_end));
    // Two copies merged: frame by frame, then in runs; each input's error comes once, the other goes on.
    let merged = || {
        let both = [open(), open()].into_iter().collect::<Result<Vec<_>, _>>().expect("opened once already");
        MergedReader::from_readers(both)
    };
    let mut m = merged();
    let (mut one, mut one_errors) = (Vec::new(), 0);
    loop {
        match m.next_frame_keyed(&mut RecordTime) {
            Ok(Some((i, f))) => one.push((i, f.data.to_vec(), f.ts_ns)),
            Ok(None) => break,
            Err(_) => one_errors += 1,
        }
        assert!(!plain || one.len() <= 2 * input.len() && one_errors <= 2, "the merge is not advancing");
    }
    let mut m = merged();
    let (mut runs, mut errors, mut offered) = (Vec::new(), 0, 0usize);
    loop {
        let (n, end) = m.next_run_keyed(max, &mut RecordTime, |_, i, f| {
            offered += 1;
            runs.push((i, f.data.to_vec(), f.ts_ns));
            offered % every != 0
        });
        assert!(n <= max);
        match end {
            Ok(RunEnd::Max) => assert_eq!(n, max),
            Ok(RunEnd::End) => break,
            Ok(RunEnd::Declined) => {
                let declined = runs.pop().expect("a declined frame was offered");
                let (i, f) = m.next_frame_keyed(&mut RecordTime).expect("the declined frame").expect("the declined frame");
                assert_eq!((i, f.data.to_vec(), f.ts_ns), declined);
                runs.push(declined);
            }
            Err(_) => errors += 1,
        }
        assert!(!plain || runs.len() <= 2 * input.len() && errors <= 2, "the merge is not advancing");
    }
    assert_eq!((runs, errors), (one, one_errors), "merged frames read in runs");
});
