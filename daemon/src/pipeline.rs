//! The front of every command that reads captures: merged inputs, dissection and tap-trailer
//! decoding, giving each frame its best timestamp with its provenance.

use crate::output::{same_file, same_pair};
use anyhow::{Result, bail};
use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use wirestamp_capture::{CaptureReader, ContainerKind, Interface, MergedReader, ReadError, RunEnd, STDIN, Waits};
use wirestamp_core::analyze::PlainUdp;
use wirestamp_core::analyze::report::{CutShort, InputResolution, InputTrailers, LossesUnknown, one};
use wirestamp_core::dissect::{Dissection, dissect_into};
use wirestamp_core::trailer::{Decoded, TrailerDecoder, TrailerError, TrailerKind, TrailerMode, TrailerStamp};
use wirestamp_core::{ClockQuality, Frame, LinkType, TsSource};

/// One frame with what the front of the pipeline learnt about it.
pub struct Stamped<'a> {
    /// Index of the input file it came from.
    pub input: usize,
    /// The frame.
    pub frame: Frame<'a>,
    /// Its headers.
    pub dissection: Dissection,
    /// Its tap trailer, if any.
    pub decoded: Decoded,
    /// The host's offset from the tap (record time - tap time) as its input's last stamped frame (or
    /// keyframe) before it showed it, once two in a row agreed; `None` before. A frame without a stamp
    /// of its own is timed by its record time moved by it ([`Stamped::best_time`]).
    pub host_offset: Option<i64>,
}

impl Stamped<'_> {
    /// The tap timestamp, when the frame carried one.
    pub fn stamp(&self) -> Option<&TrailerStamp> {
        match &self.decoded {
            Decoded::Stamp(s) => Some(s),
            _ => None,
        }
    }

    /// The best timestamp: the tap's when there is one (a keyframe's, the time it left its device),
    /// else the record's (none for a pcapng SPB), moved onto the tap's clock by the host's offset in an
    /// input the tap stamps ([`Stamped::host_offset`]).
    pub fn best_time(&self) -> Option<i64> {
        match self.decoded.tap_time() {
            Some((_, t)) => Some(t),
            None => self.frame.has_ts().then(|| self.frame.ts_ns.saturating_sub(self.host_offset.unwrap_or(0))),
        }
    }

    /// Where [`Stamped::best_time`] came from.
    pub fn ts_source(&self) -> TsSource {
        self.decoded.tap_time().map_or(self.frame.ts_source, |(kind, _)| TsSource::Trailer(kind))
    }

    /// Quality flags of the container and of the trailer together ([`ClockQuality::HOST_OFFSET`] for a
    /// record time moved).
    pub fn quality(&self) -> ClockQuality {
        match self.decoded {
            Decoded::Stamp(s) => self.frame.quality | s.quality,
            Decoded::Keyframe(..) => self.frame.quality,
            Decoded::None if self.host_offset.is_some() && self.frame.has_ts() => {
                self.frame.quality | ClockQuality::HOST_OFFSET
            }
            Decoded::None => self.frame.quality,
        }
    }

    /// The tap's time of a stamped frame or a keyframe (which shows the host's offset from the tap),
    /// and whether it is a keyframe.
    fn tap_shown(&self) -> Option<(i64, bool)> {
        let (_, tap) = self.decoded.tap_time()?;
        Some((tap, matches!(self.decoded, Decoded::Keyframe(..))))
    }
}

/// Where frames come from: one file is read directly, several through the time-ordered merge.
enum Source {
    /// A single input: its frames already are in order, and its interface table is the global one
    /// (rows are assigned in order of appearance, and the readers only return frames of registered
    /// interfaces), so the merge's per-frame heap and id remapping would change nothing (~15 ns/frame).
    One(Box<CaptureReader>),
    Many(MergedReader),
}

/// Merged inputs plus one trailer decoder per input.
pub struct Pipeline {
    source: Source,
    decoders: Vec<TrailerDecoder>,
    /// Per input, what [`TapTime`] keeps (several inputs only).
    merging: Vec<Merging>,
    per_input: Vec<u64>,
    files: Vec<PathBuf>,
    /// Per capture interface, the host's offset from its tap.
    offsets: HostOffsets,
    /// Whether two stamps in a row confirmed that a tap stamps an interface of a single input: its
    /// plain frames then take the general path, which times them by the host's offset if any
    /// ([`HostOffsets`]), and its stamped frames no longer try the fast path for plain frames first
    /// (read per frame, not the offsets: the lookup cost the loop 5 instructions a frame).
    tap_confirmed: bool,
}

/// What [`TapTime`] keeps of one input.
#[derive(Debug)]
struct Merging {
    /// Its next frame, as [`TapTime`] left it.
    head: Head,
    /// Whether its frames are looked at.
    tapped: Tapped,
}

impl Merging {
    /// `frame` of the input shows its tap's time `stamp_ns`: the input is looked at for good, and
    /// the offsets learn from it ([`HostOffsets::saw_stamp`]).
    fn saw_stamp(&mut self, offsets: &mut HostOffsets, frame: &Frame<'_>, stamp_ns: i64, trusted: bool) {
        self.tapped = Tapped::Yes;
        offsets.saw_stamp(frame, stamp_ns, trusted);
    }
}

/// How closely two stamped frames in a row must agree on the host's offset from the tap for it to
/// move the unstamped frames of their interface: a stamp found in garbage (automatic detection
/// accepts a time within 30 days of the record's) must not move every frame after it. The host's
/// delay varies by far less; a tap's clock step is followed once two stamps confirm it.
const OFFSET_AGREE_NS: i64 = 1_000_000_000;

/// The least offset that moves anything: within it the host's clock is taken to agree with the tap's
/// (the offset is then mostly the capture's delay, which frames the tap did not stamp need not share),
/// and the analysis takes what it mixes up for reordering, not a step back (`STEP_BACK_NS`).
const OFFSET_MIN_NS: i64 = wirestamp_core::analyze::STEP_BACK_NS;

/// Interfaces whose offset is kept, at most (16 bytes each).
const MAX_OFFSET_INTERFACES: usize = 1 << 20;

/// Per capture interface (its global number), the host's offset from the tap (record time - tap
/// time), as the interface's last stamped frame showed it: the interfaces of one file may run on
/// different clocks (a file merged from two hosts, a NIC's clock beside the system's).
#[derive(Debug, Default)]
struct HostOffsets(Vec<HostOffset>);

#[derive(Debug, Default, Clone, Copy)]
struct HostOffset {
    /// Once two stamps in a row agreed on it ([`OFFSET_AGREE_NS`]) and it is above [`OFFSET_MIN_NS`].
    offset: Option<i64>,
    /// The offset the last stamped frame showed, for the next to confirm.
    candidate: Option<i64>,
}

impl HostOffsets {
    /// The offset that moves interface `interface`'s unstamped frames, if any.
    #[inline(always)]
    fn get(&self, interface: u32) -> Option<i64> {
        self.0.get(interface as usize).and_then(|h| h.offset)
    }

    /// `frame` carries a tap's time `stamp_ns`: the offset of its interface (record time - stamp) is
    /// the frame's if the stamped frame before agreed, or at once for a keyframe (`trusted`: its shape
    /// is checked far more closely than a trailer's), unless within [`OFFSET_MIN_NS`]. Returns
    /// whether it was confirmed so: the interface is stamped by a tap. A frame without a record time
    /// shows nothing.
    fn saw_stamp(&mut self, frame: &Frame<'_>, stamp_ns: i64, trusted: bool) -> bool {
        if !frame.has_ts() {
            return false;
        }
        let i = frame.interface as usize;
        if self.0.len() <= i {
            // One per interface, which the readers bound (65,536 an input); an id beyond any table
            // (`u32::MAX` for one not mapped) is not given 64 GB.
            if i >= MAX_OFFSET_INTERFACES {
                return false;
            }
            self.0.resize(i + 1, HostOffset::default());
        }
        let h = &mut self.0[i];
        let off = frame.ts_ns.saturating_sub(stamp_ns);
        let confirmed = trusted || h.candidate.is_some_and(|c| c.abs_diff(off) <= OFFSET_AGREE_NS as u64);
        if confirmed {
            h.offset = (off.unsigned_abs() > OFFSET_MIN_NS as u64).then_some(off);
        }
        h.candidate = Some(off);
        confirmed
    }
}

/// An input's next frame as [`TapTime`] left it.
#[derive(Debug, Default)]
enum Head {
    /// Plain: its trailer check finds nothing, and is done when the frame is taken (or skipped by
    /// the fast path), as for a single input.
    #[default]
    Deferred,
    /// Dissected and trailer-checked already.
    Done(Dissection, Decoded),
    /// Of the fast path's UDP shape with a tap trailer, whose stamp the decoder found without
    /// dissection (`TrailerDecoder::plain_stamp`), not counted yet: counted when the fast path takes
    /// the frame, else dissected and checked then, as a deferred frame is.
    Stamped(TrailerStamp),
    /// A forced trailer did not validate.
    Failed(TrailerError),
}

/// Several inputs are merged by each frame's best time: a tap's stamp when it carries one. Capture
/// hosts' clocks may differ while their taps' agree, and the analysis times frames by the tap: merged
/// by record time, an order could come before its trigger. A frame that may carry a trailer is
/// dissected and checked when it becomes its input's next (once, in its input's order: decoders
/// keep state), and the result kept for when it is taken; one of the fast path's UDP shape with a
/// Metamako trailer only has its stamp found (`Head::Stamped`).
struct TapTime<'p> {
    decoders: &'p mut [TrailerDecoder],
    merging: &'p mut [Merging],
    offsets: &'p mut HostOffsets,
}

/// Frames of an input looked at without a stamp before it is merged by record time (where there are
/// no tap stamps, looking costs a shape check per frame).
const UNTAPPED_AFTER: u32 = 1024;

/// Whether [`TapTime`] looks at an input's frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tapped {
    /// Not yet known: looked at until a stamp, or [`UNTAPPED_AFTER`] frames without one.
    Unknown(u32),
    /// Its first frames showed no stamp: merged by record time (until one shows a stamp).
    No,
    /// A frame showed a tap stamp: looked at for good. An unstamped frame between (host traffic the
    /// tap does not stamp) takes its record time moved by the host's offset from the tap, as the last
    /// stamped frame showed it: the input's keys stay in order, as the merge needs.
    Yes,
}

impl wirestamp_capture::MergeKey for TapTime<'_> {
    /// An input is looked at from its first frame. After [`UNTAPPED_AFTER`] frames without a stamp it
    /// is merged by record time, its frames checked when taken as for a single input (no cost where
    /// there are no tap stamps), until a frame shows a stamp, which turns looking on for good
    /// (throughout, with a forced trailer kind).
    #[inline(always)]
    fn looks(&self, input: usize) -> bool {
        self.merging.get(input).is_some_and(|m| m.tapped != Tapped::No)
            || self.decoders.get(input).is_some_and(|d| !d.takes_plain())
    }

    #[inline(always)]
    fn key(&mut self, input: usize, frame: &Frame<'_>) -> Option<i64> {
        let (Some(decoder), Some(m)) = (self.decoders.get_mut(input), self.merging.get_mut(input)) else {
            return None;
        };
        if let Tapped::Unknown(n) = &mut m.tapped {
            *n += 1;
            if *n > UNTAPPED_AFTER {
                m.tapped = Tapped::No;
            }
        }
        // The record time on the tap's clock, for a frame without a stamp.
        let moved =
            self.offsets.get(frame.interface).filter(|_| frame.has_ts()).map(|off| frame.ts_ns.saturating_sub(off));
        // A plain frame has no room for a trailer: its check waits for the fast path to be tried.
        if decoder.takes_plain() {
            if wirestamp_core::analyze::plain_udp(frame.data, frame.wire_len).is_some() {
                return moved;
            }
            if let Some((_, stamp)) = plain_stamp(decoder, frame) {
                m.saw_stamp(self.offsets, frame, stamp.time_ns, false);
                m.head = Head::Stamped(stamp);
                return Some(stamp.time_ns);
            }
        }
        let mut s = Stamped {
            input,
            frame: *frame,
            dissection: Dissection::default(),
            decoded: Decoded::None,
            host_offset: None,
        };
        match check_into(&mut s, decoder) {
            Ok(()) => {
                let key = match s.tap_shown() {
                    Some((tap, keyframe)) => {
                        m.saw_stamp(self.offsets, frame, tap, keyframe);
                        Some(tap)
                    }
                    None => moved,
                };
                m.head = Head::Done(s.dissection, s.decoded);
                key
            }
            Err(e) => {
                m.head = Head::Failed(e);
                None
            }
        }
    }
}

impl Pipeline {
    /// Opens `files` (merged by time) with the trailer modes `--trailer` asked for.
    pub fn open(files: &[PathBuf], trailer_specs: &[String]) -> Result<Pipeline> {
        let modes = check_inputs(files, trailer_specs)?;
        if files.iter().any(|f| f.as_os_str() == STDIN) && std::io::stdin().is_terminal() {
            bail!(
                "- reads a capture from standard input, which is a terminal here: pipe one in \
                 (tcpdump -w - ... | wirestamp analyze -) or redirect a file (< FILE)"
            );
        }
        // An input that has to wait (standard input, a FIFO) says so first: see `Pipeline::is_wait`.
        let source = match files {
            [one] => Source::One(Box::new(CaptureReader::open_waiting(one, Waits::Tell)?)),
            _ => Source::Many(MergedReader::open_waiting(files, Waits::Tell)?),
        };
        Ok(Pipeline {
            source,
            decoders: modes.iter().map(|m| TrailerDecoder::new(*m)).collect(),
            merging: files.iter().map(|_| Merging { head: Head::Deferred, tapped: Tapped::Unknown(0) }).collect(),
            per_input: vec![0; files.len()],
            files: files.to_vec(),
            offsets: HostOffsets::default(),
            tap_confirmed: false,
        })
    }

    /// Whether `e`, from [`Pipeline::next`] or its kin, only says that an input has to wait for bytes
    /// (standard input or a FIFO that a relay feeds; a file never waits): nothing is wrong and nothing
    /// was taken. The caller writes out what it holds, so that a live relay's results show while it
    /// is idle, and asks again, which waits. Once per wait, not per frame.
    pub fn is_wait(e: &anyhow::Error) -> bool {
        e.downcast_ref::<ReadError>().is_some_and(ReadError::would_block)
    }

    /// The next frame in time order, or `None` at the end. A reader error ends the stream after the
    /// frames before it; a forced trailer that does not validate is an error naming file and frame;
    /// an input that has to wait is an error once before it waits ([`Pipeline::is_wait`]).
    // Not an `Iterator`: each frame borrows the reader's buffer until the next call.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Stamped<'_>>> {
        self.next_with(|s| Stamped {
            input: s.input,
            frame: s.frame,
            dissection: s.dissection,
            decoded: s.decoded,
            host_offset: s.host_offset,
        })
    }

    /// As [`Pipeline::next`], handing the frame to `f` where it was built: the per-frame loop of
    /// `analyze` saves two copies of the (few hundred bytes) `Stamped` this way.
    #[inline(always)]
    pub fn next_with<'a, R>(&'a mut self, f: impl FnOnce(&Stamped<'a>) -> R) -> Result<Option<R>> {
        let (fast, fast_stamped) =
            (|_: &mut (), _: &Frame<'a>| None, |_: &mut (), _: &Frame<'a>, _, _: &TrailerStamp| None);
        if matches!(self.source, Source::Many(_)) {
            return self.next_merged(&mut (), fast, fast_stamped, |_, s| f(s));
        }
        let (r, one) = self.parts();
        let Some(r) = r else { return Ok(None) };
        let Some(frame) = r.next_frame()? else {
            finish_decoders(one.decoders, one.files)?;
            return Ok(None);
        };
        one.frame(frame, &mut (), fast, fast_stamped, |_, s| f(s)).map(Some)
    }

    /// The next frames in time order, offered to the fast paths as `One::frame` offers a frame
    /// (several inputs: `Pipeline::next_merged`); those of a single input that `fast` takes, one
    /// after another in one call, at most `max` of them (the reader's hot path,
    /// [`CaptureReader::next_run`]: no return per frame), then the next frame as `One::frame` offers
    /// it. `fast` and `general` see the frames in order, each once. Returns how many frames were handled (at least one), `None` at the end; an error
    /// comes after the frames before it were handled.
    #[inline(always)]
    pub fn next_run<S>(
        &mut self,
        state: &mut S,
        max: u64,
        fast: &mut impl FastPath<S>,
        general: impl FnOnce(&mut S, &Stamped<'_>),
    ) -> Result<Option<u64>> {
        if matches!(self.source, Source::Many(_)) {
            return self.next_run_merged(state, max, fast, general);
        }
        let (r, mut one) = self.parts();
        let Some(r) = r else { return Ok(None) };
        let mut taken = 0;
        // Offered as `One::frame` offers a frame to `fast` and `fast_stamped`: plain frames while no
        // tap's stamps were confirmed (a stamped frame among them then goes one by one below), stamped
        // ones after. Each run has its own loop, one call site of what it offers to, inlined into it.
        // A stamped run offers its frames to `take_stamped`: one it declined is not offered again.
        let stamped_run = *one.tap_confirmed;
        let run = match (one.decoders[0].takes_plain(), *one.tap_confirmed) {
            (false, _) => None,
            (true, false) => {
                let decoder = &mut one.decoders[0];
                Some(r.next_run(max, |f| {
                    fast.take(state, f) && {
                        decoder.count_plain(f);
                        true
                    }
                }))
            }
            (true, true) => {
                let One { decoders, tap_confirmed, offsets, .. } = &mut one;
                let decoder = &mut decoders[0];
                Some(r.next_run(max, |f| {
                    // (Only the general path teaches the decoder a device that ends this.)
                    if decoder.takes_plain()
                        && let Some((udp, stamp)) = plain_stamp(decoder, f)
                        && fast.take_stamped(state, f, udp, &stamp)
                    {
                        decoder.count_plain_stamp(f, &stamp);
                        **tap_confirmed |= offsets.saw_stamp(f, stamp.time_ns, false);
                        return true;
                    }
                    false
                }))
            }
        };
        if let Some((n, end)) = run {
            one.per_input[0] += n;
            taken = n;
            match end? {
                RunEnd::Max => return Ok(Some(n)),
                RunEnd::End if n > 0 => return Ok(Some(n)),
                RunEnd::End => {
                    finish_decoders(one.decoders, one.files)?;
                    return Ok(None);
                }
                RunEnd::Declined => {}
            }
        }
        // A frame the run declined, or one not for it.
        let Some(frame) = r.next_frame()? else {
            finish_decoders(one.decoders, one.files)?;
            return Ok(None);
        };
        let stamped = |s: &mut S, f: &Frame<'_>, u: PlainUdp<'_>, t: &TrailerStamp| {
            (!stamped_run && fast.take_stamped(s, f, u, t)).then_some(())
        };
        one.frame(frame, state, |_, _| None, stamped, general)?;
        Ok(Some(taken + 1))
    }

    /// [`Pipeline::next_run`] for several inputs: a run of the frames the fast path takes
    /// (`merged_run`), then the frame it declined, through `next_merged`. Out of line: the single
    /// input's loop keeps its own code (inlined, this made it 0.6 % more instructions).
    #[inline(never)]
    fn next_run_merged<S>(
        &mut self,
        state: &mut S,
        max: u64,
        fast: &mut impl FastPath<S>,
        general: impl FnOnce(&mut S, &Stamped<'_>),
    ) -> Result<Option<u64>> {
        let (n, end) = self.merged_run(state, max, fast);
        match end? {
            RunEnd::Max => return Ok(Some(n)),
            RunEnd::End if n > 0 => return Ok(Some(n)),
            // The end (`next_merged` says so) or a frame the run declined.
            RunEnd::End | RunEnd::Declined => {}
        }
        // (`fast` in two closures, each called at most once.)
        let fast = std::cell::RefCell::new(fast);
        let plain = |s: &mut S, f: &Frame<'_>| fast.borrow_mut().take(s, f).then_some(());
        let stamped = |s: &mut S, f: &Frame<'_>, u: PlainUdp<'_>, t: &TrailerStamp| {
            fast.borrow_mut().take_stamped(s, f, u, t).then_some(())
        };
        Ok(self.next_merged(state, plain, stamped, |s, f| general(s, f))?.map(|()| n + 1))
    }

    /// The frames of several inputs, in time order, that `fast` takes, at most `max` of them in one
    /// call ([`MergedReader::next_run_keyed`]): those `next_merged` would offer it (the merge learnt
    /// nothing of them, their decoder takes plain frames, no host offset moves their time), offered
    /// as it offers them. The first frame declined is left for `next_merged`, which offers it again
    /// (a frame declined changed nothing).
    #[inline(always)]
    fn merged_run<S>(
        &mut self,
        state: &mut S,
        max: u64,
        fast: &mut impl FastPath<S>,
    ) -> (u64, Result<RunEnd, ReadError>) {
        let Source::Many(m) = &mut self.source else { return (0, Ok(RunEnd::Declined)) };
        let mut keys = TapTime { decoders: &mut self.decoders, merging: &mut self.merging, offsets: &mut self.offsets };
        let per_input = &mut self.per_input;
        m.next_run_keyed(max, &mut keys, |k, i, f| {
            let (Some(Merging { head: Head::Deferred, .. }), Some(decoder), Some(n)) =
                (k.merging.get(i), k.decoders.get_mut(i), per_input.get_mut(i))
            else {
                return false;
            };
            if !decoder.takes_plain() || k.offsets.get(f.interface).is_some() || !fast.take(state, f) {
                return false;
            }
            decoder.count_plain(f);
            *n += 1;
            true
        })
    }

    /// The single input's reader (`None` with several inputs) apart from the rest, which its frames
    /// change.
    #[inline(always)]
    fn parts(&mut self) -> (Option<&mut CaptureReader>, One<'_>) {
        let r = match &mut self.source {
            Source::One(r) => Some(&mut **r),
            Source::Many(_) => None,
        };
        let one = One {
            decoders: &mut self.decoders,
            tap_confirmed: &mut self.tap_confirmed,
            offsets: &mut self.offsets,
            files: &self.files,
            per_input: &mut self.per_input,
        };
        (r, one)
    }

    /// [`One::frame`] for several inputs, merged by each frame's best time ([`TapTime`]).
    /// Out of line: inlined, it cost the single-file loop 20 instructions per frame.
    #[inline(never)]
    fn next_merged<'a, S, R>(
        &'a mut self,
        state: &mut S,
        fast: impl FnOnce(&mut S, &Frame<'a>) -> Option<R>,
        fast_stamped: impl FnOnce(&mut S, &Frame<'a>, PlainUdp<'a>, &TrailerStamp) -> Option<R>,
        general: impl FnOnce(&mut S, &Stamped<'a>) -> R,
    ) -> Result<Option<R>> {
        let Source::Many(m) = &mut self.source else { return Ok(None) };
        let mut keys = TapTime { decoders: &mut self.decoders, merging: &mut self.merging, offsets: &mut self.offsets };
        let next = m.next_frame_keyed(&mut keys)?;
        let Some((input, frame)) = next else {
            finish_decoders(&self.decoders, &self.files)?;
            return Ok(None);
        };
        let frame_in_input = self.per_input[input];
        self.per_input[input] += 1;
        let decoder = &mut self.decoders[input];
        // What the merge learnt of the frame already (taken only when there is something: moving the
        // enum out is a copy of a dissection).
        let mut stamped = None;
        let done = match self.merging.get_mut(input).map(|m| &mut m.head) {
            None | Some(Head::Deferred) => None,
            Some(head) => match std::mem::take(head) {
                Head::Done(dissection, decoded) => Some((dissection, decoded)),
                Head::Stamped(stamp) => {
                    stamped = Some(stamp);
                    None
                }
                Head::Failed(e) => return Err(trailer_error(&self.files[input], frame_in_input, &e)),
                Head::Deferred => None,
            },
        };
        let host_offset = self.offsets.get(frame.interface);
        // Not taken, such a frame goes on as a deferred one: checked below, and its stamp counted then.
        if let Some(stamp) = stamped
            && let Some((udp, _)) = wirestamp_core::analyze::udp_shape(frame.data, frame.wire_len)
            && let Some(r) = fast_stamped(state, &frame, udp, &stamp)
        {
            decoder.count_plain_stamp(&frame, &stamp);
            return Ok(Some(r));
        }
        let plain = match &done {
            None => decoder.takes_plain(),
            // Counted by the decoder already: a frame in which it found nothing may still take the
            // fast path.
            Some((_, decoded)) => matches!(decoded, Decoded::None),
        };
        if plain
            && host_offset.is_none()
            && let Some(r) = fast(state, &frame)
        {
            if done.is_none() {
                decoder.count_plain(&frame);
            }
            return Ok(Some(r));
        }
        // Neither dissected nor looked at for a stamp by the merge: a stamp it shows is news.
        let fresh = done.is_none() && stamped.is_none();
        let s = match done {
            Some((dissection, decoded)) => Stamped { input, frame, dissection, decoded, host_offset },
            None => {
                let mut s =
                    Stamped { input, frame, dissection: Dissection::default(), decoded: Decoded::None, host_offset };
                check_into(&mut s, decoder).map_err(|e| trailer_error(&self.files[input], frame_in_input, &e))?;
                s
            }
        };
        // A stamp on a frame checked only now (an input merged by record time until then). One the
        // merge saw (`TapTime::key`) is not shown the offsets twice: it would confirm itself.
        if fresh
            && let Some((tap, keyframe)) = s.tap_shown()
            && let Some(m) = self.merging.get_mut(input)
        {
            m.saw_stamp(&mut self.offsets, &s.frame, tap, keyframe);
        }
        Ok(Some(general(state, &s)))
    }

    /// What each input's tap-trailer decoder found, in the order given.
    pub fn trailers(&self) -> Vec<InputTrailers> {
        let names = self.inputs().iter().map(|r| r.name().to_owned());
        names.zip(&self.decoders).map(|(f, d)| InputTrailers::new(f, d.mode(), d.stats())).collect()
    }

    /// Each input's record timestamp unit (the coarsest of its interfaces), in the order given.
    pub fn resolutions(&self) -> Vec<InputResolution> {
        let unit = |r: &CaptureReader| r.interfaces().iter().map(|i| i.ts_resolution.unit_ns()).max().unwrap_or(1);
        self.inputs()
            .iter()
            .map(|r| InputResolution { file: r.name().to_owned(), record_resolution_ns: unit(r) })
            .collect()
    }

    /// The inputs' readers (per-input statistics and warnings), in the order given.
    pub fn inputs(&self) -> &[CaptureReader] {
        match &self.source {
            Source::One(r) => std::slice::from_ref(r.as_ref()),
            Source::Many(m) => m.inputs(),
        }
    }

    /// Prints the readers' warnings (files cut short, ...) on stderr, and the packets each capture
    /// records as lost while it was taken (pcapng interface statistics).
    pub fn print_warnings(&self) {
        for w in self.warnings() {
            crate::note!("wirestamp: warning: {w}");
        }
    }

    /// What the readers found wrong without stopping, one sentence each: a file cut short, packets an
    /// interface records as lost while capturing.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for input in self.inputs() {
            out.extend(input.warnings().iter().map(|w| format!("{}: {w}", input.name())));
            for i in input.interfaces() {
                if let Some(r) = i.recorded.filter(|r| r.drops() > 0) {
                    let source = match (i.container, i.link) {
                        (ContainerKind::Erf, _) | (ContainerKind::Pcap, LinkType::Erf) => "ERF loss counters",
                        _ => "pcapng interface statistics",
                    };
                    out.push(format!(
                        "{}: interface {} records {} packets lost while capturing ({} by the interface, {} by the \
                         operating system; {source}): figures from this file may miss them",
                        input.name(),
                        interface_name(i),
                        r.drops(),
                        r.ifdrop.unwrap_or(0),
                        r.osdrop.unwrap_or(0)
                    ));
                }
            }
        }
        for (file, unknown) in self.unknown_losses() {
            let named = |why: Uncounted| -> Option<(u64, String)> {
                let them: Vec<&str> = unknown.iter().filter(|u| u.1 == why).map(|u| u.0.as_str()).collect();
                (!them.is_empty()).then(|| (them.len() as u64, them.join(", ")))
            };
            if let Some((n, them)) = named(Uncounted::NoBlock) {
                out.push(format!(
                    "{file}: written by wirestamp capture, but {} {them} {} no statistics block, which capture writes \
                     for each interface when it closes a file: the capture did not end cleanly (killed: its .part) or \
                     this copy of the file is cut short, so the packets lost while capturing are unknown and figures \
                     from this file may miss some; end a capture with SIGINT or SIGTERM (never SIGKILL) and read its \
                     files once renamed from .part",
                    one(n, "interface", "interfaces"),
                    one(n, "has", "have"),
                ));
            }
            if let Some((n, them)) = named(Uncounted::NoCounters) {
                out.push(format!(
                    "{file}: written by wirestamp capture, whose capture source gave no loss counters for {} {them} \
                     (its statistics {} none): the packets lost while capturing {} are unknown, not 0, and figures \
                     from this file may miss some",
                    one(n, "interface", "interfaces"),
                    one(n, "block has", "blocks have"),
                    one(n, "it", "them"),
                ));
            }
        }
        out
    }

    /// Records of all inputs that carried no frame, by kind, but the pcapng statistics blocks (their
    /// counts are read: [`Pipeline::recorded_drops`]).
    pub fn records_without_frame(&self) -> BTreeMap<String, u64> {
        let mut all = BTreeMap::new();
        for r in self.inputs() {
            for (&kind, &k) in r.stats().skipped.iter().filter(|(kind, _)| **kind != "pcapng ISB") {
                *all.entry(kind.to_owned()).or_default() += k;
            }
        }
        all
    }

    /// The inputs cut short (ending inside a record, or a compressed stream ending early), in the order
    /// given: where, as their warnings say it.
    pub fn cut_short(&self) -> Vec<CutShort> {
        let cut = |r: &CaptureReader| {
            let w = r.warnings().iter().find(|w| w.is_cut())?;
            Some(CutShort {
                file: r.name().to_owned(),
                at_byte: w.offset,
                record: w.frame_index,
                after_packets: w.packets,
            })
        };
        self.inputs().iter().filter_map(cut).collect()
    }

    /// The inputs written by `wirestamp capture`, read to their end, with interfaces that have no
    /// statistics block, in the order given: capture writes one for each interface when it closes a
    /// file, so the file was never closed (the capture killed: its `.part`) or its copy is cut short,
    /// and the packets lost while capturing are unknown. Other writers' files are not judged: tcpdump
    /// and many others never write the blocks. An interface is named once, whatever the blocks that
    /// describe it (one per timestamp source: capture writes the statistics in the first).
    ///
    /// Likewise an interface whose statistics block has no loss counters (`isb_ifdrop`, `isb_osdrop`):
    /// capture writes one without counters where its source gave none (or a relayed stream recorded
    /// none), so that the file still reads as closed; its losses are unknown, not 0.
    pub fn losses_unknown(&self) -> Vec<LossesUnknown> {
        let unknown = self.unknown_losses().into_iter();
        unknown.map(|(file, v)| LossesUnknown { file, interfaces: v.into_iter().map(|u| u.0).collect() }).collect()
    }

    /// Per input of [`Pipeline::losses_unknown`], its interfaces whose losses are unknown, and why, in the
    /// order of their first blocks.
    fn unknown_losses(&self) -> Vec<(String, Vec<(String, Uncounted)>)> {
        let mut out = Vec::new();
        for input in self.inputs().iter().filter(|r| r.ended()) {
            // Per (section, name), the first block describing it and the best that any says of its losses
            // (a map: a file may describe 65,536 interfaces).
            let mut seen: HashMap<(u32, String), (usize, Option<Uncounted>)> = HashMap::new();
            for (at, i) in input.interfaces().iter().enumerate().filter(|(_, i)| i.by_wirestamp_capture) {
                let has = seen.entry((i.section, interface_name(i))).or_insert((at, Some(Uncounted::NoBlock)));
                let this = match i.recorded {
                    None => Some(Uncounted::NoBlock),
                    Some(r) if r.ifdrop.is_none() && r.osdrop.is_none() => Some(Uncounted::NoCounters),
                    Some(_) => None,
                };
                has.1 = has.1.min(this);
            }
            let mut unknown: Vec<(usize, String, Uncounted)> =
                seen.into_iter().filter_map(|((_, name), (at, why))| Some((at, name, why?))).collect();
            unknown.sort_unstable();
            if !unknown.is_empty() {
                out.push((input.name().to_owned(), unknown.into_iter().map(|(_, name, why)| (name, why)).collect()));
            }
        }
        out
    }

    /// Packets the inputs record as lost while they were captured (pcapng interface statistics read so
    /// far; complete at the end).
    pub fn recorded_drops(&self) -> u64 {
        self.inputs()
            .iter()
            .flat_map(|r| r.interfaces())
            .filter_map(|i| i.recorded)
            .fold(0u64, |n, r| n.saturating_add(r.drops()))
    }
}

/// Why an interface's losses are unknown ([`Pipeline::losses_unknown`]); ordered so that `None` (known)
/// is the least, and a block without counters says more than none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Uncounted {
    /// A statistics block without loss counters.
    NoCounters,
    /// No statistics block.
    NoBlock,
}

/// An interface as messages name it: its name in the file, control characters (a newline in a name)
/// escaped, not printed; `#N` (its number in the file) without one.
fn interface_name(i: &Interface) -> String {
    i.name.as_deref().map_or_else(|| format!("#{}", i.local_id), |n| n.escape_debug().to_string())
}

/// What [`Pipeline::next_run`] offers a frame to first: methods, not closures, so that they are
/// inlined into the run's loop (a closure was called: some 15 instructions a frame).
pub trait FastPath<S> {
    /// Whether it took `frame`, as `One::frame`'s `fast` says it.
    fn take(&mut self, state: &mut S, frame: &Frame<'_>) -> bool;
    /// Whether it took `frame`, whose datagram `udp` a tap trailer with `stamp` follows, as
    /// `One::frame`'s `fast_stamped` says it.
    fn take_stamped(&mut self, state: &mut S, frame: &Frame<'_>, udp: PlainUdp<'_>, stamp: &TrailerStamp) -> bool;
}

/// A single input's part of the [`Pipeline`], for one of its frames.
struct One<'p> {
    decoders: &'p mut [TrailerDecoder],
    tap_confirmed: &'p mut bool,
    offsets: &'p mut HostOffsets,
    files: &'p [PathBuf],
    per_input: &'p mut [u64],
}

impl One<'_> {
    /// A frame of a single input, offered to `fast` first, before dissection and the trailer check,
    /// when its input's trailer decoder would find nothing in a plain frame
    /// (`TrailerDecoder::takes_plain`). `fast` returns whether it took the frame, vouching that it is
    /// such a frame (the decoder then counts it as one without a trailer). A frame of the same UDP
    /// shape that a tap trailer follows is offered to `fast_stamped` with its datagram and the stamp
    /// the decoder finds in it without dissection (`TrailerDecoder::plain_stamp`). If neither takes
    /// it, the frame is dissected and trailer-checked and goes to `general`. All get `state` (what
    /// they change).
    #[inline(always)]
    fn frame<'a, S, R>(
        self,
        frame: Frame<'a>,
        state: &mut S,
        fast: impl FnOnce(&mut S, &Frame<'a>) -> Option<R>,
        fast_stamped: impl FnOnce(&mut S, &Frame<'a>, PlainUdp<'a>, &TrailerStamp) -> Option<R>,
        general: impl FnOnce(&mut S, &Stamped<'a>) -> R,
    ) -> Result<R> {
        let frame_in_input = self.per_input[0];
        self.per_input[0] += 1;
        let decoder = &mut self.decoders[0];
        if decoder.takes_plain() {
            // A plain frame of an input the tap stamps is host traffic, timed by a moved record time:
            // the general path's (rare; the fast path reads the frame's own time).
            if !*self.tap_confirmed
                && let Some(r) = fast(state, &frame)
            {
                decoder.count_plain(&frame);
                return Ok(r);
            }
            if let Some((udp, stamp)) = plain_stamp(decoder, &frame)
                && let Some(r) = fast_stamped(state, &frame, udp, &stamp)
            {
                decoder.count_plain_stamp(&frame, &stamp);
                *self.tap_confirmed |= self.offsets.saw_stamp(&frame, stamp.time_ns, false);
                return Ok(r);
            }
        }
        let host_offset = self.offsets.get(frame.interface);
        let mut s = Stamped { input: 0, frame, dissection: Dissection::default(), decoded: Decoded::None, host_offset };
        check_into(&mut s, decoder).map_err(|e| trailer_error(&self.files[0], frame_in_input, &e))?;
        if let Some((tap, keyframe)) = s.tap_shown() {
            *self.tap_confirmed |= self.offsets.saw_stamp(&frame, tap, keyframe);
        }
        Ok(general(state, &s))
    }
}

/// At the end of the input: a forced trailer kind that never validated is an error.
#[cold]
fn finish_decoders(decoders: &[TrailerDecoder], files: &[PathBuf]) -> Result<()> {
    for (d, file) in decoders.iter().zip(files) {
        d.finish().map_err(|e| {
            anyhow::anyhow!(
                "{}: --trailer {} does not validate: {}; {}",
                file.display(),
                e.kind.name(),
                e.reason,
                forced_trailer_fix(e.kind)
            )
        })?;
    }
    Ok(())
}

/// The stamp of a frame of the fast path's UDP shape that a tap trailer follows, found without
/// dissection ([`TrailerDecoder::plain_stamp`]). Out of line: inlined, it cost the loop of plain frames
/// 7 instructions per frame.
#[inline(never)]
fn plain_stamp<'a>(decoder: &TrailerDecoder, frame: &Frame<'a>) -> Option<(PlainUdp<'a>, TrailerStamp)> {
    let (u, end) = wirestamp_core::analyze::udp_shape(frame.data, frame.wire_len)?;
    Some((u, decoder.plain_stamp(frame, end)?))
}

#[cold]
/// `frame` of input `input`, dissected and trailer-checked by its input's `decoder` (once per frame:
/// decoders keep state), into `s`. Filled in place, not returned: a `Result` of the (few hundred
/// bytes) `Stamped` cost the per-frame loop a copy, 8 instructions per frame.
#[inline(always)]
fn check_into<'a>(s: &mut Stamped<'a>, decoder: &mut TrailerDecoder) -> Result<(), TrailerError> {
    dissect_into(&mut s.dissection, s.frame.data, s.frame.link);
    s.decoded = decoder.decode(&s.frame, &s.dissection)?;
    Ok(())
}

fn trailer_error(file: &Path, frame_in_input: u64, e: &TrailerError) -> anyhow::Error {
    anyhow::anyhow!(
        "{}: frame {frame_in_input} (tshark's {}): --trailer {} does not validate: {}; {}",
        file.display(),
        frame_in_input + 1,
        e.kind.name(),
        e.reason,
        forced_trailer_fix(e.kind)
    )
}

/// What to do when a forced trailer kind does not fit a file's frames.
fn forced_trailer_fix(kind: TrailerKind) -> String {
    format!(
        "if this file's frames carry no {0} trailer, leave --trailer out (auto: each kind is looked for and \
         validated), or force it on the tapped file only with --trailer FILE={0}",
        kind.name()
    )
}

/// What no capture could make right in the inputs and `--trailer` values (the command line's errors,
/// checked before anything is opened): `-` twice, one capture given twice, an unknown trailer kind,
/// `FILE=KIND` for a file not among the inputs. Else the trailer mode of each input.
pub fn check_inputs(files: &[PathBuf], trailer_specs: &[String]) -> Result<Vec<TrailerMode>> {
    if files.iter().filter(|f| f.as_os_str() == STDIN).count() > 1 {
        bail!("standard input (-) is given more than once: it can be read once");
    }
    // The same capture twice would make every frame a duplicate of itself (`-` is once at most).
    if let Some((i, j)) = same_pair(files) {
        bail!("{} and {} are the same file: give each capture once", files[i].display(), files[j].display());
    }
    trailer_modes(trailer_specs, files)
}

/// Which trailer mode applies to each input: `KIND` sets the default, `FILE=KIND` one file.
fn trailer_modes(specs: &[String], files: &[PathBuf]) -> Result<Vec<TrailerMode>> {
    let mut default = TrailerMode::Auto;
    let mut per_file: Vec<Option<TrailerMode>> = vec![None; files.len()];
    for spec in specs {
        match spec.rsplit_once('=') {
            Some((file, kind)) => {
                let mode: TrailerMode = kind.parse().map_err(|e| anyhow::anyhow!("--trailer {spec}: {e}"))?;
                let matches: Vec<usize> =
                    files.iter().enumerate().filter(|(_, f)| same_file(f, Path::new(file))).map(|(i, _)| i).collect();
                if matches.is_empty() {
                    bail!("--trailer {spec}: {file} is not one of the input files");
                }
                for i in matches {
                    per_file[i] = Some(mode);
                }
            }
            None => default = spec.parse().map_err(|e| anyhow::anyhow!("--trailer {spec}: {e}"))?,
        }
    }
    Ok(per_file.into_iter().map(|m| m.unwrap_or(default)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An offset moves frames once two stamps in a row agree on it within 1 s (or a keyframe shows it),
    /// if above 1 ms, per interface; an interface id beyond any table is not tracked.
    #[test]
    fn host_offsets_are_confirmed_per_interface() {
        const S: i64 = 1_000_000_000;
        let mut o = HostOffsets::default();
        // A frame of `interface` recorded at `rec`.
        let at = |interface: u32, rec: i64| Frame { interface, ..Frame::record(&[], rec, LinkType::Ethernet) };
        // A lone stamp 10 days off: a candidate only.
        assert!(!o.saw_stamp(&at(0, 100 * S), 100 * S - 864_000 * S, false));
        assert_eq!(o.get(0), None);
        // Two 870 s apart, agreeing within 1 s: taken; the lone one is not confirmed by them.
        assert!(!o.saw_stamp(&at(0, 200 * S), 200 * S - 870 * S, false));
        assert!(o.saw_stamp(&at(0, 201 * S), 201 * S - 870 * S - S / 2, false));
        assert_eq!(o.get(0), Some(870 * S + S / 2));
        // Another interface has none of it; a keyframe's is taken at once.
        assert_eq!(o.get(1), None);
        assert!(o.saw_stamp(&at(1, 300 * S), 300 * S - 5 * S, true));
        assert_eq!(o.get(1), Some(5 * S));
        // Within 1 ms: confirmed, but moves nothing (the host agrees with the tap).
        assert!(o.saw_stamp(&at(2, 400 * S), 400 * S - 30_000, true));
        assert_eq!(o.get(2), None);
        assert!(!o.saw_stamp(&at(u32::MAX, 500 * S), 0, true));
        assert_eq!((o.get(u32::MAX), o.0.len()), (None, 3));
    }

    #[test]
    fn trailer_mode_specs() {
        let files = vec![PathBuf::from("a.pcap"), PathBuf::from("b.pcap")];
        let m = trailer_modes(&["metamako".into(), "b.pcap=none".into()], &files).unwrap();
        assert_eq!(m.len(), 2);
        assert!(matches!(m[0], TrailerMode::Forced(_)));
        assert!(matches!(m[1], TrailerMode::Off));
        let err = trailer_modes(&["c.pcap=metamako".into()], &files).unwrap_err().to_string();
        assert!(err.contains("c.pcap is not one of the input files"), "{err}");
        assert!(trailer_modes(&["bogus".into()], &files).is_err());
    }
}
