use super::*;

/// Test metadata are frame numbers; a frame's capture time is its number in ns.
impl Arrival for u32 {
    fn arrival_ns(&self) -> i64 {
        i64::from(*self)
    }
}

impl Arrival for usize {
    fn arrival_ns(&self) -> i64 {
        *self as i64
    }
}

/// A tick that gives up only ranges acknowledged with bytes after them ([`REORDER_NS`] on), not gaps.
const LATER: i64 = 10 * REORDER_NS;
const NO_TIMEOUT: i64 = i64::MAX / 4;

/// Pushes segments `(seq, syn, bytes, meta)` and records what comes out as owned values.
#[derive(Debug, PartialEq, Eq)]
enum Out {
    Data(u64, Vec<u8>, u32),
    /// Offset, length, and the frame that showed it missing.
    Hole(u64, u64, u32),
}

fn run(r: &mut Reassembler<u32>, segs: &[(u32, bool, &[u8], u32)], finish: bool) -> Vec<Out> {
    let mut out = Vec::new();
    let mut sink = |p: Piece<'_, u32>| match p {
        Piece::Data { offset, data, meta } => out.push(Out::Data(offset, data.to_vec(), meta)),
        Piece::Hole { offset, len, meta } => out.push(Out::Hole(offset, len, meta)),
    };
    for &(seq, syn, bytes, meta) in segs {
        r.push(seq, syn, bytes, meta, &mut sink);
    }
    if finish {
        r.finish(&mut sink);
    }
    out
}

#[test]
fn in_order_after_syn() {
    let mut r = Reassembler::default();
    let out = run(&mut r, &[(1000, true, b"", 0), (1001, false, b"abc", 1), (1004, false, b"de", 2)], false);
    assert_eq!(out, vec![Out::Data(0, b"abc".to_vec(), 1), Out::Data(3, b"de".to_vec(), 2)]);
    assert_eq!(r.stats().bytes, 5);
}

#[test]
fn retransmission_and_partial_overlap() {
    let mut r = Reassembler::default();
    let out = run(
        &mut r,
        &[(10, false, b"abcd", 1), (10, false, b"abcd", 2), (12, false, b"cdefg", 3), (20, false, b"", 4)],
        false,
    );
    assert_eq!(out, vec![Out::Data(0, b"abcd".to_vec(), 1), Out::Data(4, b"efg".to_vec(), 3)]);
    let s = r.stats();
    assert_eq!(s.retransmitted_segments, 2);
    assert_eq!(s.retransmitted_bytes, 4 + 2);
    assert_eq!(s.bytes, 7);
}

#[test]
fn out_of_order_is_reordered_with_first_carrier_meta() {
    let mut r = Reassembler::default();
    let out = run(&mut r, &[(0, false, b"ab", 1), (4, false, b"ef", 2), (2, false, b"cd", 3)], false);
    assert_eq!(
        out,
        vec![Out::Data(0, b"ab".to_vec(), 1), Out::Data(2, b"cd".to_vec(), 3), Out::Data(4, b"ef".to_vec(), 2)]
    );
    assert_eq!(r.stats().out_of_order_segments, 1);
    assert_eq!(r.stats().holes, 0);
}

/// Out of order counts the segments that came late, after later ones (tshark's "TCP Out-Of-Order"),
/// not those after a range the capture never saw (its "previous segment not captured": a hole).
#[test]
fn a_segment_after_a_hole_is_not_out_of_order() {
    let mut r = Reassembler::default();
    run(&mut r, &[(0, false, b"ab", 1), (4, false, b"ef", 2), (6, false, b"gh", 3)], true);
    assert_eq!((r.stats().out_of_order_segments, r.stats().holes), (0, 1));
    // Three segments come last-first: the two late ones are out of order; a retransmission of one
    // already held is not.
    let mut r = Reassembler::default();
    let script: &[(u32, bool, &[u8], u32)] =
        &[(0, false, b"ab", 1), (6, false, b"gh", 2), (6, false, b"gh", 3), (4, false, b"ef", 4), (2, false, b"cd", 5)];
    let out = run(&mut r, script, true);
    assert_eq!(out.len(), 4);
    let s = r.stats();
    assert_eq!((s.out_of_order_segments, s.holes, s.bytes), (2, 0, 8));
    // A retransmission of a held segment before the last held one is not late either (it was).
    let mut r = Reassembler::default();
    let script: &[(u32, bool, &[u8], u32)] =
        &[(0, false, b"ab", 1), (4, false, b"ef", 2), (6, false, b"gh", 3), (4, false, b"ef", 4), (2, false, b"cd", 5)];
    run(&mut r, script, true);
    assert_eq!((r.stats().out_of_order_segments, r.stats().retransmitted_segments), (1, 1));
}

#[test]
fn overlapping_out_of_order_keeps_first_copy() {
    let mut r = Reassembler::default();
    // "ghij" pending at 6, then "efghIJKL" at 4 overlaps it: only "ef" and "KL" are new.
    let out = run(&mut r, &[(0, false, b"abcd", 1), (6, false, b"ghij", 2), (4, false, b"efGHIJkl", 3)], false);
    assert_eq!(
        out,
        vec![
            Out::Data(0, b"abcd".to_vec(), 1),
            Out::Data(4, b"ef".to_vec(), 3),
            Out::Data(6, b"ghij".to_vec(), 2),
            Out::Data(10, b"kl".to_vec(), 3)
        ]
    );
    assert_eq!(r.stats().retransmitted_bytes, 4);
}

#[test]
fn hole_when_buffer_bound_exceeded() {
    let mut r = Reassembler::new(4);
    let out = run(&mut r, &[(0, false, b"ab", 1), (5, false, b"fgh", 2), (8, false, b"ij", 3)], false);
    assert_eq!(
        out,
        vec![
            Out::Data(0, b"ab".to_vec(), 1),
            Out::Hole(2, 3, 2),
            Out::Data(5, b"fgh".to_vec(), 2),
            Out::Data(8, b"ij".to_vec(), 3)
        ]
    );
    assert_eq!(r.stats().holes, 1);
    assert_eq!(r.stats().hole_bytes, 3);
    // The late copy of the missing bytes is now a retransmission of a range given up on.
    let late = run(&mut r, &[(2, false, b"cde", 4)], false);
    assert!(late.is_empty());
}

#[test]
fn finish_turns_missing_ranges_into_holes() {
    let mut r = Reassembler::default();
    let out = run(&mut r, &[(100, false, b"a", 1), (110, false, b"k", 2)], true);
    assert_eq!(out, vec![Out::Data(0, b"a".to_vec(), 1), Out::Hole(1, 9, 2), Out::Data(10, b"k".to_vec(), 2)]);
}

#[test]
fn sequence_wrap_is_invisible() {
    let mut r = Reassembler::default();
    let base = u32::MAX - 2;
    let out = run(&mut r, &[(base, false, b"xyz", 1), (base.wrapping_add(3), false, b"uvw", 2)], false);
    assert_eq!(out, vec![Out::Data(0, b"xyz".to_vec(), 1), Out::Data(3, b"uvw".to_vec(), 2)]);
    assert_eq!(r.next_offset(), 6);
}

#[test]
fn bytes_before_the_first_segment_are_ignored() {
    let mut r = Reassembler::default();
    let out = run(&mut r, &[(50, false, b"cd", 1), (48, false, b"abcdef", 2)], false);
    assert_eq!(out, vec![Out::Data(0, b"cd".to_vec(), 1), Out::Data(2, b"ef".to_vec(), 2)]);
}

#[test]
fn every_byte_is_accounted_for_under_shuffling() {
    // A 4 KiB stream cut into segments, sent with duplicates and reordering by a fixed permutation;
    // what is delivered must be exactly the stream, with no holes.
    let stream: Vec<u8> = (0..4096u32).map(|i| (i * 31 % 251) as u8).collect();
    let mut segs: Vec<(u32, Vec<u8>)> = Vec::new();
    let mut off = 0usize;
    let mut k = 0usize;
    while off < stream.len() {
        let len = 1 + (k * 37) % 97;
        let end = (off + len).min(stream.len());
        segs.push((7_000 + off as u32, stream[off..end].to_vec()));
        off = end;
        k += 1;
    }
    let n = segs.len();
    let mut order: Vec<usize> = (0..n).collect();
    for i in 0..n {
        order.swap(i, (i * 7 + 3) % n.min(i + 5));
    }
    order.extend((0..n).step_by(5)); // duplicates
    let mut r = Reassembler::default();
    let mut got = Vec::new();
    let mut holes = 0;
    let mut sink = |p: Piece<'_, usize>| match p {
        Piece::Data { offset, data, .. } => {
            assert_eq!(offset as usize, got.len());
            got.extend_from_slice(data);
        }
        Piece::Hole { .. } => holes += 1,
    };
    // Segment 0 first so offset 0 is the stream start.
    r.push(segs[0].0, false, &segs[0].1, 0, &mut sink);
    for &i in &order {
        r.push(segs[i].0, false, &segs[i].1, i, &mut sink);
    }
    r.finish(&mut sink);
    assert_eq!(holes, 0);
    assert_eq!(got, stream);
}

/// A sink that records pieces as owned values into `out`.
fn recorder(out: &mut Vec<Out>) -> impl FnMut(Piece<'_, u32>) + '_ {
    |p| match p {
        Piece::Data { offset, data, meta } => out.push(Out::Data(offset, data.to_vec(), meta)),
        Piece::Hole { offset, len, meta } => out.push(Out::Hole(offset, len, meta)),
    }
}

#[test]
fn an_ack_beyond_the_gap_makes_it_a_hole_once_later_bytes_are_captured() {
    let mut r = Reassembler::default();
    let mut out = run(&mut r, &[(0, false, b"ab", 1), (5, false, b"fg", 2)], false);
    assert_eq!(out, vec![Out::Data(0, b"ab".to_vec(), 1)]);
    {
        let mut sink = recorder(&mut out);
        r.acked(3, 10, &mut sink); // up to byte 3: one byte of the gap
        r.acked(9, 20, &mut sink); // past everything: the rest of the gap, the pending data, 2 unseen bytes
        // Not yet: a host may record the missing bytes up to REORDER_NS late.
        r.tick(10 + REORDER_NS - 1, NO_TIMEOUT, &mut sink);
    }
    assert_eq!(out, [Out::Data(0, b"ab".to_vec(), 1)]);
    assert_eq!(r.gap_deadline(NO_TIMEOUT), Some(10 + REORDER_NS));
    r.tick(10 + REORDER_NS, NO_TIMEOUT, &mut recorder(&mut out));
    // One hole for both ACKs' ranges. The 2 bytes after the pending data wait: nothing after them
    // was captured yet.
    let before = [Out::Data(0, b"ab".to_vec(), 1), Out::Hole(2, 3, 2), Out::Data(5, b"fg".to_vec(), 2)];
    assert_eq!(out, before);
    // Bytes after them: they are a hole, a reorder allowance later.
    r.push(9, false, b"kl", 3, &mut recorder(&mut out));
    assert_eq!(out.len(), 3);
    r.tick(LATER, NO_TIMEOUT, &mut recorder(&mut out));
    assert_eq!(out[3..], [Out::Hole(7, 2, 3), Out::Data(9, b"kl".to_vec(), 3)]);
    assert_eq!(r.stats().hole_bytes, 5);
    r.acked(4, LATER as u32, &mut recorder(&mut out)); // an old ACK changes nothing
    assert_eq!(r.next_offset(), 11);
    assert_eq!(out.len(), 5);
}

/// A host that records a segment after the peer's ACK of it, and after a segment that follows it
/// (frames out of order by less than a millisecond): the bytes are delivered, no hole, no
/// retransmission (the range was a hole at the ACK, and the bytes then dropped as a retransmission).
#[test]
fn a_segment_recorded_after_its_ack_and_later_bytes_is_delivered() {
    let mut r = Reassembler::default();
    let mut out = run(&mut r, &[(0, false, b"ab", 1_000), (4, false, b"ef", 3_000)], false);
    {
        let mut sink = recorder(&mut out);
        r.acked(6, 4_000, &mut sink);
        r.push(2, false, b"cd", 34_000, &mut sink);
        r.tick(LATER, NO_TIMEOUT, &mut sink);
    }
    let all = [
        Out::Data(0, b"ab".to_vec(), 1_000),
        Out::Data(2, b"cd".to_vec(), 34_000),
        Out::Data(4, b"ef".to_vec(), 3_000),
    ];
    assert_eq!(out, all);
    assert_eq!((r.stats().holes, r.stats().retransmitted_segments), (0, 0));
}

/// An ACK captured before the bytes it acknowledges (two taps' files whose clocks differ): the bytes
/// are delivered when they come, as if the ACK had come after them.
#[test]
fn bytes_acknowledged_before_they_are_captured_are_delivered() {
    let mut r = Reassembler::default();
    let mut out = run(&mut r, &[(0, false, b"ab", 1)], false);
    r.acked(6, 1, &mut recorder(&mut out));
    assert_eq!(out.len(), 1);
    {
        let mut sink = recorder(&mut out);
        r.push(2, false, b"cd", 2, &mut sink);
        r.tick(1_000, 500, &mut sink);
        r.push(4, false, b"ef", 3, &mut sink);
        r.tick(1_200, 500, &mut sink);
        r.finish(&mut sink);
    }
    assert_eq!(out[1..], [Out::Data(2, b"cd".to_vec(), 2), Out::Data(4, b"ef".to_vec(), 3)]);
    assert_eq!((r.stats().holes, r.stats().retransmitted_segments), (0, 0));
}

/// A range released by an ACK (a hole a reorder allowance after bytes after it came) leaves the bytes
/// still missing after it their own wait: acknowledged up to 6, bytes from 8 come at 3 ms and make
/// 2..6 a hole at 4 ms; 6..8 waits the full 5 ms from when the bytes behind it came (3 ms), not from
/// 1 ms when the first range began to wait, nor from the release.
#[test]
fn what_stays_missing_after_an_acked_hole_waits_anew() {
    const MS: i64 = 1_000_000;
    const TIMEOUT: i64 = 5 * MS;
    let mut r = Reassembler::default();
    let mut out = run(&mut r, &[(0, false, b"ab", 1)], false);
    {
        let mut sink = recorder(&mut out);
        r.acked(6, MS as u32, &mut sink);
        r.tick(MS, TIMEOUT, &mut sink);
        r.push(8, false, b"ij", 3 * MS as u32, &mut sink);
        r.tick(3 * MS + MS / 2, TIMEOUT, &mut sink);
        r.tick(4 * MS, TIMEOUT, &mut sink);
        r.tick(8 * MS, TIMEOUT, &mut sink);
    }
    assert_eq!(out[1..], [Out::Hole(2, 4, 3 * MS as u32)]);
    r.tick(8 * MS + 1, TIMEOUT, &mut recorder(&mut out));
    assert_eq!(out[2..], [Out::Hole(6, 2, 3 * MS as u32), Out::Data(8, b"ij".to_vec(), 3 * MS as u32)]);
}

/// Acknowledged bytes that never come, with nothing captured after them: a hole after the gap
/// timeout, or at the end.
#[test]
fn acknowledged_bytes_never_captured_are_a_hole_after_the_timeout_or_at_the_end() {
    let mut r = Reassembler::default();
    let mut out = run(&mut r, &[(0, false, b"ab", 1)], false);
    {
        let mut sink = recorder(&mut out);
        r.acked(6, 7, &mut sink); // frame 7, at 7 ns
        r.tick(1_000, 500, &mut sink); // the gap is noticed at t=1000
        r.push(2, false, b"c", 2, &mut sink); // part of it comes: the rest's wait starts again
        r.tick(1_400, 500, &mut sink);
        r.tick(1_800, 500, &mut sink); // 400 ns since the part came: still waiting
    }
    assert_eq!(out, [Out::Data(0, b"ab".to_vec(), 1), Out::Data(2, b"c".to_vec(), 2)]);
    r.tick(2_000, 500, &mut recorder(&mut out)); // 600 ns: given up
    assert_eq!(out[2..], [Out::Hole(3, 3, 7)], "shown by the ACK, not the frame whose time ended the wait");

    let mut r = Reassembler::default();
    let mut out = run(&mut r, &[(0, false, b"ab", 1)], false);
    r.acked(6, 7, &mut recorder(&mut out));
    r.finish(&mut recorder(&mut out));
    assert_eq!(out[1..], [Out::Hole(2, 4, 7)]);
    assert_eq!((r.stats().holes, r.stats().hole_bytes), (1, 4));
}

/// A hole is tagged with the frame that showed it missing wherever it is declared (here at the end):
/// the one that brought the first bytes held after it; with none, the first ACK of its last byte (not
/// an earlier ACK of fewer bytes, a later one of the same, or an older one). Bytes a segment carried
/// but the capture cut: that segment's frame, not the one the stream reached them at.
#[test]
fn a_hole_is_tagged_with_the_frame_that_showed_it_missing() {
    let mut r = Reassembler::default();
    let mut out = run(&mut r, &[(0, false, b"ab", 1), (4, false, b"ef", 2)], false);
    {
        let mut sink = recorder(&mut out);
        r.acked(8, 3, &mut sink); // 2..4 and 6..8 missing
        r.acked(10, 4, &mut sink); // the first ACK of byte 9
        r.acked(10, 5, &mut sink);
        r.acked(9, 6, &mut sink);
        r.finish(&mut sink);
    }
    assert_eq!(out[1..], [Out::Hole(2, 2, 2), Out::Data(4, b"ef".to_vec(), 2), Out::Hole(6, 4, 4)]);
    assert_eq!(r.stats().holes, 2);

    let mut r = Reassembler::default();
    let mut out = run(&mut r, &[(0, false, b"ab", 1), (4, false, b"ef", 3)], false);
    let skipped = r.not_captured(4, 2, &mut recorder(&mut out));
    assert_eq!(skipped, 2);
    assert_eq!(out[1..], [Out::Hole(2, 2, 2), Out::Data(4, b"ef".to_vec(), 3)]);
    assert_eq!(r.stats().holes, 0, "bytes not captured are not a hole");
}

#[test]
fn a_gap_older_than_the_bound_becomes_a_hole() {
    let mut r = Reassembler::default();
    let mut out = Vec::new();
    {
        let mut sink = recorder(&mut out);
        r.push(0, false, b"ab", 1, &mut sink);
        r.push(4, false, b"ef", 2, &mut sink);
        r.tick(1_000, 500, &mut sink); // the gap is noticed at t=1000
        r.tick(1_400, 500, &mut sink); // 400 ns: still waiting
    }
    assert_eq!(out.len(), 1);
    r.tick(1_600, 500, &mut recorder(&mut out)); // 600 ns: given up
    assert_eq!(out, vec![Out::Data(0, b"ab".to_vec(), 1), Out::Hole(2, 2, 2), Out::Data(4, b"ef".to_vec(), 2)]);
}

#[test]
fn the_ack_of_a_fin_is_not_a_missing_byte() {
    let mut r = Reassembler::default();
    let mut out = run(&mut r, &[(100, false, b"abc", 1)], false);
    r.fin(103);
    r.acked(104, 2, &mut recorder(&mut out));
    assert_eq!(out, vec![Out::Data(0, b"abc".to_vec(), 1)]);
    assert_eq!(r.stats().holes, 0);
}

/// The gap timer restarts when the oldest missing range is filled and a newer one remains: [12,16)
/// has been missing 0.15 s when [20,24) arrives (the 1 s timeout is counted from 0.95 s, when [4,8)
/// was filled, not from 0 s when [4,8) went missing), so its retransmission at 1.1 s is delivered
/// instead of being dropped behind a hole.
#[test]
fn the_gap_timer_restarts_when_the_oldest_gap_fills() {
    const S: i64 = 1_000_000_000;
    let mut r: Reassembler<u32> = Reassembler::default();
    let mut out = Vec::new();
    let mut sink = |p: Piece<'_, u32>| match p {
        Piece::Data { offset, data, meta } => out.push(Out::Data(offset, data.to_vec(), meta)),
        Piece::Hole { offset, len, meta } => out.push(Out::Hole(offset, len, meta)),
    };
    let segs: [(i64, u32, &[u8]); 6] = [
        (0, 0, b"aaaa"),
        (0, 8, b"cccc"),
        (900_000_000, 16, b"eeee"),
        (950_000_000, 4, b"bbbb"),
        (1_050_000_000, 20, b"ffff"),
        (1_100_000_000, 12, b"dddd"),
    ];
    for (meta, &(t, seq, bytes)) in segs.iter().enumerate() {
        r.push(seq, false, bytes, meta as u32, &mut sink);
        r.tick(t, S, &mut sink);
    }
    let data = |off, b: &[u8], m| Out::Data(off, b.to_vec(), m);
    assert_eq!(
        out,
        [
            data(0, b"aaaa", 0),
            data(4, b"bbbb", 3),
            data(8, b"cccc", 1),
            data(12, b"dddd", 5),
            data(16, b"eeee", 2),
            data(20, b"ffff", 4)
        ]
    );
    assert_eq!(r.stats().holes, 0);
}

/// Random segmentations with duplicates, overlaps and reordering, no loss, the base anywhere in the
/// sequence space (across the wrap): every byte is delivered once, in order, tagged with the first
/// segment (in push order) that carried it, and delivered plus retransmitted bytes are the bytes
/// pushed.
#[test]
fn every_byte_once_in_order_from_its_first_carrier() {
    let mut state = 0x1234_5678_9abc_def0u64;
    let mut rnd = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    for case in 0..20_000 {
        let n = 1 + rnd(60) as usize;
        let stream: Vec<u8> = (0..n).map(|i| i as u8).collect();
        let base = (rnd(1 << 32) as u32).wrapping_sub(30);
        // The first segment starts the stream (it fixes offset 0); the last carries all of it.
        let mut segs = vec![(0, 1 + rnd(n as u64) as usize)];
        for _ in 0..rnd(8) {
            let a = rnd(n as u64) as usize;
            segs.push((a, a + 1 + rnd((n - a) as u64) as usize));
        }
        segs.push((0, n));
        let mut first_carrier = vec![u32::MAX; n];
        for (k, &(a, b)) in segs.iter().enumerate() {
            for m in first_carrier[a..b].iter_mut().filter(|m| **m == u32::MAX) {
                *m = k as u32;
            }
        }
        let mut r = Reassembler::default();
        let (mut got, mut carriers, mut holes) = (Vec::new(), Vec::new(), 0);
        let mut sink = |p: Piece<'_, u32>| match p {
            Piece::Data { offset, data, meta } => {
                assert_eq!(offset as usize, got.len());
                got.extend_from_slice(data);
                carriers.extend(std::iter::repeat_n(meta, data.len()));
            }
            Piece::Hole { .. } => holes += 1,
        };
        for (k, &(a, b)) in segs.iter().enumerate() {
            r.push(base.wrapping_add(a as u32), false, &stream[a..b], k as u32, &mut sink);
        }
        r.finish(&mut sink);
        assert_eq!((holes, &got, &carriers), (0, &stream, &first_carrier), "case {case}: {segs:?}");
        let pushed: u64 = segs.iter().map(|(a, b)| (b - a) as u64).sum();
        assert_eq!(r.stats().bytes + r.stats().retransmitted_bytes, pushed, "case {case}: {segs:?}");
    }
}

/// 1-byte segments, each behind a 1-byte hole: the pieces held stay within one per `PIECE_COST` bytes of
/// the bound (the oldest given up as holes, counted), not one per byte.
#[test]
fn pieces_held_are_bounded_as_well_as_bytes() {
    let mut r = Reassembler::new(DEFAULT_MAX_PENDING);
    let mut out = Vec::new();
    let mut most = 0;
    for k in 0..50_000u32 {
        r.push(1 + 2 * k, false, b"x", k, &mut recorder(&mut out));
        most = most.max(r.pending.len());
    }
    // (Bounded by bytes alone, all 49,999 after the first were held: 50,000 bytes are within 1 MiB.)
    assert_eq!(most, DEFAULT_MAX_PENDING / PIECE_COST);
    assert_eq!(r.stats().holes, 49_999 - DEFAULT_MAX_PENDING as u64 / PIECE_COST as u64);
}

/// A bound kept over several streams gives up a stream's held bytes as its own bound does: the
/// first missing range first, the bytes after it delivered, until what is held costs that much less
/// (bytes and `PIECE_COST` a piece); what stays missing is then waited for from when the bytes behind
/// it came.
#[test]
fn giving_up_for_a_shared_bound_takes_the_first_ranges_first() {
    let mut r = Reassembler::new(DEFAULT_MAX_PENDING);
    // "a" at 0 is delivered; "cc" at 2, "ee" at 5 and "gg" at 8 wait, each behind a missing byte.
    let segs: [(u32, bool, &[u8], u32); 4] =
        [(0, false, b"a", 1), (2, false, b"cc", 2), (5, false, b"ee", 3), (8, false, b"gg", 4)];
    assert_eq!(run(&mut r, &segs, false), vec![Out::Data(0, b"a".to_vec(), 1)]);
    assert_eq!(r.held(), 6 + 3 * PIECE_COST);
    // 1 less: the first range goes.
    let mut out = Vec::new();
    r.give_up(1, 10, &mut recorder(&mut out));
    assert_eq!(out, vec![Out::Hole(1, 1, 2), Out::Data(2, b"cc".to_vec(), 2)]);
    assert_eq!(r.held(), 4 + 2 * PIECE_COST);
    assert_eq!(r.gap_deadline(100), Some(3 + 100 + 1), "waited for since \"ee\" came, at 3");
    // More than one piece costs: both ranges go.
    out.clear();
    r.give_up(PIECE_COST + 3, 11, &mut recorder(&mut out));
    assert_eq!(
        out,
        vec![Out::Hole(4, 1, 3), Out::Data(5, b"ee".to_vec(), 3), Out::Hole(7, 1, 4), Out::Data(8, b"gg".to_vec(), 4)]
    );
    assert_eq!((r.held(), r.stats().holes, r.stats().hole_bytes), (0, 3, 3));
    assert_eq!(r.gap_deadline(100), None);
    // Nothing held: nothing to give up.
    out.clear();
    r.give_up(1, 12, &mut recorder(&mut out));
    assert!(out.is_empty());
}
