//! [`MergedReader`]: several inputs as one stream ordered by timestamp.
//!
//! A k-way merge over the inputs' next frames, keyed by `(timestamp, input index)`: equal
//! timestamps keep the order of the inputs, and each input's own order is kept. A frame without
//! a timestamp (pcapng SPB) takes the key of the previous frame of its input (or sorts first if
//! there is none), so it stays right behind that frame. Interface numbers are made unique across
//! inputs: the global table lists every input's interfaces in order of first appearance.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::binary_heap::PeekMut;
use std::path::PathBuf;

use wirestamp_core::Frame;

use crate::error::ReadError;
use crate::interface::Interface;
use crate::raw::RawFrame;
use crate::reader::CaptureReader;

/// Several capture files read as one stream ordered by timestamp.
pub struct MergedReader {
    inputs: Vec<CaptureReader>,
    /// Next frame of each input, already read (positions in that input's buffer).
    heads: Vec<Option<RawFrame>>,
    /// Min-heap of (key, input) over the inputs whose head is present, and the input whose frame
    /// was returned last (at the top, to be advanced before the next pick).
    heap: BinaryHeap<Reverse<(i64, usize)>>,
    top_taken: bool,
    /// Key of each input's previous frame (for frames without timestamp).
    last_key: Vec<i64>,
    /// Inputs to advance before the first pick.
    to_refill: Vec<usize>,
    /// Per input: row in its own interface table -> global id.
    iface_map: Vec<Vec<u32>>,
    interfaces: Vec<Interface>,
}

impl MergedReader {
    /// Opens every path (failing on the first that cannot be opened or recognised).
    pub fn open(paths: &[PathBuf]) -> Result<MergedReader, ReadError> {
        let mut inputs = Vec::with_capacity(paths.len());
        for p in paths {
            inputs.push(CaptureReader::open(p)?);
        }
        Ok(MergedReader::from_readers(inputs))
    }

    /// Merges readers already opened (e.g. from `CaptureReader::from_reader`).
    pub fn from_readers(mut inputs: Vec<CaptureReader>) -> MergedReader {
        let n = inputs.len();
        for (i, r) in inputs.iter_mut().enumerate() {
            r.set_input(i);
        }
        let mut m = MergedReader {
            inputs,
            heads: vec![None; n],
            heap: BinaryHeap::with_capacity(n),
            top_taken: false,
            last_key: vec![i64::MIN; n],
            to_refill: (0..n).rev().collect(),
            iface_map: vec![Vec::new(); n],
            interfaces: Vec::new(),
        };
        // Interfaces known at open (pcap headers) come first, in input order.
        for i in 0..n {
            m.sync_interfaces(i);
        }
        m
    }

    /// Next frame of all inputs in timestamp order, with the index of its input; its `interface`
    /// is the global id. An input that fails returns its error once and is then finished; the
    /// other inputs go on.
    // Out of line: inlined into the analysis loop, it cost the single-file path (the loop's other
    // source) 14 instructions per frame.
    #[inline(never)]
    pub fn next_frame(&mut self) -> Result<Option<(usize, Frame<'_>)>, ReadError> {
        if self.top_taken {
            // The input whose frame went out last is still at the heap's top, under that frame's
            // key: its next frame replaces it there (one sift down, against a pop and a push).
            self.top_taken = false;
            if let Some(&Reverse((_, i))) = self.heap.peek() {
                let r = self.inputs[i].advance();
                self.sync_interfaces(i);
                let next = match r {
                    Ok(Some(raw)) => {
                        let key = self.key(i, &raw);
                        self.heads[i] = Some(raw);
                        Ok(Some(key))
                    }
                    Ok(None) => {
                        self.heads[i] = None;
                        Ok(None)
                    }
                    Err(e) => {
                        self.heads[i] = None;
                        Err(e)
                    }
                };
                if let Some(mut top) = self.heap.peek_mut() {
                    match next {
                        Ok(Some(key)) => *top = Reverse((key, i)),
                        Ok(None) => drop(PeekMut::pop(top)),
                        Err(e) => {
                            PeekMut::pop(top);
                            return Err(e);
                        }
                    }
                }
            }
        }
        while let Some(&i) = self.to_refill.last() {
            // Pop only after a success or an error, so that an error leaves the others queued.
            let r = self.inputs[i].advance();
            self.to_refill.pop();
            self.sync_interfaces(i);
            if let Some(raw) = r? {
                let key = self.key(i, &raw);
                self.heads[i] = Some(raw);
                self.heap.push(Reverse((key, i)));
            }
        }
        let Some(&Reverse((_, i))) = self.heap.peek() else { return Ok(None) };
        // The head stays in place (not taken: a copy per frame) until the input is advanced.
        let Some(raw) = &self.heads[i] else { return Ok(None) };
        self.top_taken = true;
        let global = self.iface_map[i].get(raw.interface as usize).copied().unwrap_or(u32::MAX);
        let mut f = self.inputs[i].frame(raw);
        f.interface = global;
        Ok(Some((i, f)))
    }

    /// The merge key of input `i`'s next frame `raw` (see the module's doc).
    #[inline(always)]
    fn key(&mut self, i: usize, raw: &RawFrame) -> i64 {
        if raw.ts_source != wirestamp_core::TsSource::PcapngNone {
            self.last_key[i] = raw.ts_ns;
        }
        self.last_key[i]
    }

    /// Copies the interfaces input `input` has added to its table into the global one.
    fn sync_interfaces(&mut self, input: usize) {
        let map = &mut self.iface_map[input];
        let local = self.inputs[input].interfaces();
        while map.len() < local.len() {
            let mut g = local[map.len()].clone();
            g.id = self.interfaces.len() as u32;
            g.input = input;
            map.push(g.id);
            self.interfaces.push(g);
        }
    }

    /// The global interface table (grows as interfaces appear; complete at the end).
    pub fn interfaces(&self) -> &[Interface] {
        &self.interfaces
    }

    /// The inputs, in the order given.
    pub fn inputs(&self) -> &[CaptureReader] {
        &self.inputs
    }
}
