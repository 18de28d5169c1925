#![no_main]
//! Any bytes as a capture stream read in small pieces, with reads that are not ready (`WouldBlock`, as
//! `capture --source stdin`'s polled standard input gives while idle) between them: the reader gives
//! the same frames, warnings and end as when the whole input is there at once. A `WouldBlock` must
//! leave the reader where it was, whatever it was in the middle of.

use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use libfuzzer_sys::fuzz_target;
use wirestamp_capture::CaptureReader;

/// `data` at most `piece` bytes a read; once armed, a read that is not ready before every read whose
/// index has its bit set in `pattern` (cycled).
struct Trickle {
    data: Vec<u8>,
    at: usize,
    piece: usize,
    pattern: u32,
    reads: u32,
    blocked: bool,
    armed: Arc<AtomicBool>,
}

impl Read for Trickle {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.armed.load(Ordering::Relaxed) && !self.blocked && self.pattern >> (self.reads % 32) & 1 == 1 {
            self.blocked = true;
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.blocked = false;
        self.reads = self.reads.wrapping_add(1);
        let n = out.len().min(self.piece).min(self.data.len() - self.at);
        out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Every frame (as its debug text), the reader's end (`None`, or its error's text) and its warnings.
type Outcome = (Vec<String>, Option<String>, Vec<String>);

fn read_all(name: &str, src: Box<dyn Read + Send>, armed: Option<&AtomicBool>) -> Option<Outcome> {
    let mut r = CaptureReader::from_reader(name.into(), src).ok()?;
    if let Some(a) = armed {
        a.store(true, Ordering::Relaxed);
    }
    let (mut frames, mut not_ready) = (Vec::new(), 0u64);
    let end = loop {
        match r.next_frame() {
            Ok(Some(f)) => frames.push(format!("{f:?}")),
            Ok(None) => break None,
            Err(e) if e.would_block() => {
                not_ready += 1;
                // Every not-ready read is preceded by a ready one: the reader must advance.
                assert!(not_ready <= 1 << 24, "the reader does not advance past a read that is not ready");
            }
            Err(e) => break Some(e.to_string()),
        }
    };
    Some((frames, end, r.warnings().iter().map(|w| format!("{:?}", w.kind)).collect()))
}

fuzz_target!(|input: &[u8]| {
    let Some((&[piece, p0, p1], data)) = input.split_first_chunk::<3>() else {
        return;
    };
    let data = data.to_vec();
    let whole = read_all("fuzz", Box::new(io::Cursor::new(data.clone())), None);
    let armed = Arc::new(AtomicBool::new(false));
    let trickle = Trickle {
        data,
        at: 0,
        piece: usize::from(piece % 64) + 1,
        pattern: u32::from(p0) | u32::from(p1) << 8 | 1 << 16,
        reads: 0,
        blocked: false,
        armed: armed.clone(),
    };
    let pieces = read_all("fuzz", Box::new(trickle), Some(&armed));
    // Opening reads the header unarmed, as the relay does: both open or neither. (gzip and zstd are
    // decoded so that nothing inflated before corrupt data is dropped: the frames must agree whole.)
    assert!(whole.is_some() == pieces.is_some(), "opened whole but not in pieces, or the reverse");
    if let (Some(w), Some(p)) = (whole, pieces) {
        // The end and the warnings first: they say what went wrong more plainly than the frames.
        assert_eq!((&w.1, &w.2, w.0.len()), (&p.1, &p.2, p.0.len()), "end, warnings or frame count differ");
        assert_eq!(w.0, p.0);
    }
});
