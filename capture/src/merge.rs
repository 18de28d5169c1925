//! [`MergedReader`]: several inputs as one stream ordered by timestamp.
//!
//! A k-way merge over the inputs' next frames, keyed by `(timestamp, input index)`: equal
//! timestamps keep the order of the inputs, and each input's own order is kept. A frame without
//! a timestamp (pcapng SPB) takes the key of the previous frame of its input (or sorts first if
//! there is none), so it stays right behind that frame. Interface numbers are made unique across
//! inputs: the global table lists every input's interfaces in order of first appearance.
//!
//! The key can be another time than the record's ([`MergeKey`]): a frame carrying a tap's timestamp
//! is timed by the tap, and files from capture hosts whose clocks differ must be merged by it.

use std::path::PathBuf;

use wirestamp_core::Frame;

use crate::error::ReadError;
use crate::interface::Interface;
use crate::live::Waits;
use crate::raw::RawFrame;
use crate::reader::{CaptureReader, RunEnd};

/// What the merge orders frames by, when not the record's time: called once per frame, in each
/// input's order, when the frame becomes its input's next (so a stateful decoder may run here, once).
pub trait MergeKey {
    /// Whether input `input`'s next frame may take another key than its record's time (when not,
    /// [`MergeKey::key`] is not called, and the frame is not built for it).
    fn looks(&self, input: usize) -> bool;
    /// The key of `frame`, the next frame of input `input` (its `interface` is the global id);
    /// `None` for the record's time (or, without one, the previous frame's key).
    fn key(&mut self, input: usize, frame: &Frame<'_>) -> Option<i64>;
}

/// The record's time: [`MergedReader::next_frame`].
struct RecordTime;

impl MergeKey for RecordTime {
    #[inline(always)]
    fn looks(&self, _: usize) -> bool {
        false
    }
    #[inline(always)]
    fn key(&mut self, _: usize, _: &Frame<'_>) -> Option<i64> {
        None
    }
}

/// Several capture files read as one stream ordered by timestamp.
pub struct MergedReader {
    inputs: Vec<CaptureReader>,
    /// Per input, beside its reader.
    state: Vec<InputState>,
    /// Min-heap ([`Heads`]) of (key, input) over the inputs whose head is present, and the input whose frame
    /// was returned last (at the top, to be advanced before the next pick).
    heap: Heads,
    top_taken: bool,
    /// Inputs to advance before the first pick.
    to_refill: Vec<usize>,
    interfaces: Vec<Interface>,
}

/// What the merge keeps of one input.
#[derive(Clone, Default)]
struct InputState {
    /// Its next frame, already read (positions in its buffer).
    head: Option<RawFrame>,
    /// Key of its previous frame (for frames without timestamp).
    last_key: i64,
    /// Row in its own interface table -> global id.
    iface_map: Vec<u32>,
}

impl MergedReader {
    /// Opens every path (failing on the first that cannot be opened or recognised).
    pub fn open(paths: &[PathBuf]) -> Result<MergedReader, ReadError> {
        MergedReader::open_waiting(paths, Waits::Block)
    }

    /// [`MergedReader::open`], each input opened with [`CaptureReader::open_waiting`]: with
    /// [`Waits::Tell`], an input that has to wait (standard input, a FIFO) makes the next frame
    /// [`ReadError::would_block`] once, the merge left where it was; called again, it waits.
    pub fn open_waiting(paths: &[PathBuf], waits: Waits) -> Result<MergedReader, ReadError> {
        let mut inputs = Vec::with_capacity(paths.len());
        for p in paths {
            inputs.push(CaptureReader::open_waiting(p, waits)?);
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
            state: vec![InputState { last_key: i64::MIN, ..InputState::default() }; n],
            heap: Heads(Vec::with_capacity(n)),
            top_taken: false,
            to_refill: (0..n).rev().collect(),
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
        self.next_frame_keyed(&mut RecordTime)
    }

    /// [`MergedReader::next_frame`], ordered by `keys` ([`MergeKey`]).
    #[inline(always)]
    pub fn next_frame_keyed(&mut self, keys: &mut impl MergeKey) -> Result<Option<(usize, Frame<'_>)>, ReadError> {
        self.ready(keys)?;
        let top = top(&self.heap, &self.inputs, &self.state);
        self.top_taken = top.is_some();
        Ok(top)
    }

    /// Offers the next frames in timestamp order to `take` (with `keys` and the frame's input), as long
    /// as it takes them and at most `max` of them: [`CaptureReader::next_run`] for the merge, one
    /// call for a run of frames whatever input each comes from. Returns how many `take` took and why
    /// the run ended: `max` frames taken, a frame declined (the one [`MergedReader::next_frame_keyed`]
    /// returns next, untouched), the end of every input, or an error (as `next_frame_keyed` returns
    /// it, after the frames before it). `take` must not change what `keys` answers for a frame it
    /// declines.
    #[inline(always)]
    pub fn next_run_keyed<K: MergeKey>(
        &mut self,
        max: u64,
        keys: &mut K,
        mut take: impl FnMut(&mut K, usize, &Frame<'_>) -> bool,
    ) -> (u64, Result<RunEnd, ReadError>) {
        let mut taken = 0;
        loop {
            if taken == max {
                return (taken, Ok(RunEnd::Max));
            }
            if let Err(e) = self.ready(keys) {
                return (taken, Err(e));
            }
            let Some((i, f)) = top(&self.heap, &self.inputs, &self.state) else { return (taken, Ok(RunEnd::End)) };
            if !take(keys, i, &f) {
                return (taken, Ok(RunEnd::Declined));
            }
            self.top_taken = true;
            taken += 1;
        }
    }

    /// Before a pick: the input whose frame went out last advanced (one that has nothing yet stays
    /// where it was, its frame's turn taken: advanced again on the next call), and every input's first
    /// frame read.
    #[inline(always)]
    fn ready(&mut self, keys: &mut impl MergeKey) -> Result<(), ReadError> {
        if self.top_taken {
            let r = self.advance_top(keys);
            self.top_taken = matches!(&r, Err(e) if e.would_block());
            r?;
        }
        if !self.to_refill.is_empty() {
            self.fill(keys)?;
        }
        Ok(())
    }

    /// Advances the input whose frame went out last. It is still at the heap's top, under that
    /// frame's key: its next frame replaces it there (one sift down, against a pop and a push).
    #[inline(always)]
    fn advance_top(&mut self, keys: &mut impl MergeKey) -> Result<(), ReadError> {
        let Some((_, i)) = self.heap.peek() else { return Ok(()) };
        let (Some(reader), Some(st)) = (self.inputs.get_mut(i), self.state.get_mut(i)) else { return Ok(()) };
        let r = reader.advance();
        if st.iface_map.len() != reader.interfaces().len() {
            self.sync_interfaces(i);
        }
        let key = match &r {
            Ok(Some(raw)) => self.key(i, raw, keys),
            _ => 0,
        };
        match r {
            // Not an end: the input stays at the top (its last key is still the least) to be advanced
            // again.
            Err(e) if e.would_block() => Err(e),
            Ok(Some(raw)) => {
                self.state[i].head = Some(raw);
                self.heap.replace_top((key, i));
                Ok(())
            }
            r => {
                self.heap.pop_top();
                self.state[i].head = None;
                r.map(drop)
            }
        }
    }

    /// Reads every input's first frame.
    #[cold]
    fn fill(&mut self, keys: &mut impl MergeKey) -> Result<(), ReadError> {
        while let Some(&i) = self.to_refill.last() {
            // Pop only after a success or an error, so that an error leaves the others queued.
            let r = self.inputs[i].advance();
            // Nothing yet: left queued, read again on the next call.
            if let Err(e) = &r
                && e.would_block()
            {
                return r.map(drop);
            }
            self.to_refill.pop();
            self.sync_interfaces(i);
            if let Some(raw) = r? {
                let key = self.key(i, &raw, keys);
                self.state[i].head = Some(raw);
                self.heap.push((key, i));
            }
        }
        Ok(())
    }

    /// The merge key of input `i`'s next frame `raw`: `keys`' for it, or the record's time.
    #[inline(always)]
    fn key(&mut self, i: usize, raw: &RawFrame, keys: &mut impl MergeKey) -> i64 {
        let st = &mut self.state[i];
        if !keys.looks(i) {
            return st.key(raw);
        }
        let mut f = self.inputs[i].frame(raw);
        f.interface = st.iface_map.get(raw.interface as usize).copied().unwrap_or(u32::MAX);
        match keys.key(i, &f) {
            Some(k) => {
                st.last_key = k;
                k
            }
            None => st.key(raw),
        }
    }

    /// Copies the interfaces input `input` has added to its table into the global one.
    #[cold]
    fn sync_interfaces(&mut self, input: usize) {
        let map = &mut self.state[input].iface_map;
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

impl InputState {
    /// The merge key of the input's next frame `raw` (see the module's doc).
    #[inline(always)]
    fn key(&mut self, raw: &RawFrame) -> i64 {
        if raw.ts_source != wirestamp_core::TsSource::PcapngNone {
            self.last_key = raw.ts_ns;
        }
        self.last_key
    }
}

/// The frame at the merge's top, with its input; its `interface` the global id. Its head stays in place
/// (not taken: a copy per frame) until the input is advanced. (Over the fields it reads, so that the
/// caller may mark the top taken while the frame borrows the buffer.)
#[inline(always)]
fn top<'a>(heap: &Heads, inputs: &'a [CaptureReader], state: &[InputState]) -> Option<(usize, Frame<'a>)> {
    let (_, i) = heap.peek()?;
    let (reader, st) = (inputs.get(i)?, state.get(i)?);
    let raw = st.head.as_ref()?;
    let mut f = reader.frame(raw);
    f.interface = st.iface_map.get(raw.interface as usize).copied().unwrap_or(u32::MAX);
    Some((i, f))
}

/// A min-heap of `(key, input)`, the merge's order: the least key first, equal keys by input. Its
/// own, not `BinaryHeap`: replacing the top, once a frame, is inlined into the merge's loop (the
/// standard heap's was inlined or not as the code around it changed: 23 instructions a frame apart).
/// Each input is in it once at most, so the order of its elements is total and the merge's order
/// does not depend on how the heap holds them.
struct Heads(Vec<(i64, usize)>);

impl Heads {
    #[inline(always)]
    fn peek(&self) -> Option<(i64, usize)> {
        self.0.first().copied()
    }

    fn push(&mut self, e: (i64, usize)) {
        self.0.push(e);
        let mut i = self.0.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.0[parent] <= e {
                break;
            }
            self.0[i] = self.0[parent];
            i = parent;
        }
        self.0[i] = e;
    }

    /// Removes the top.
    fn pop_top(&mut self) {
        if let Some(last) = self.0.pop()
            && !self.0.is_empty()
        {
            self.replace_top(last);
        }
    }

    /// Puts `e` in the top's place, where it then belongs.
    #[inline(always)]
    fn replace_top(&mut self, e: (i64, usize)) {
        let h = &mut self.0;
        let n = h.len();
        if n == 0 {
            return;
        }
        let mut i = 0;
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let child = if left + 1 < n && h[left + 1] < h[left] { left + 1 } else { left };
            if h[child] >= e {
                break;
            }
            h[i] = h[child];
            i = child;
        }
        h[i] = e;
    }
}

#[cfg(test)]
mod tests {
    use super::Heads;

    /// Against a sorted list: pushes, pops and replacements of the top give the least element each
    /// time, for heaps of 1 to 40 elements with equal keys among them.
    #[test]
    fn heads_give_the_least_first() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for n in 1..=40usize {
            let mut heap = Heads(Vec::new());
            let mut sorted: Vec<(i64, usize)> = Vec::new();
            for input in 0..n {
                let e = ((next() % 8) as i64, input);
                heap.push(e);
                sorted.push(e);
            }
            for _ in 0..200 {
                sorted.sort();
                assert_eq!(heap.peek(), sorted.first().copied(), "n {n}");
                let Some(&(_, input)) = sorted.first() else { break };
                // The top advanced (a later key, or an earlier one: a file's records out of order) or
                // ended.
                if next() % 5 == 0 {
                    heap.pop_top();
                    sorted.remove(0);
                } else {
                    let e = (sorted[0].0 + (next() % 8) as i64 - 3, input);
                    heap.replace_top(e);
                    sorted[0] = e;
                }
            }
        }
    }
}
