//! Proving where SoupBinTCP packets begin in a stream whose framing was lost (after a hole, from a start
//! without SYN, at a damaged header): what a packet's type says of its length, whether a header can be
//! right, and chains of packets of exact lengths.

use crate::analyze::flows::{ChainEnd, OrderProto, STRADDLE_PROOF, starts_soupbin, walk_chain};
use crate::proto::soupbin::Judgement;
use crate::proto::{OrderDir, ouch5, ouch42};

/// Whole packets a byte offset must begin, each of the length its type gives it, to be a boundary
/// proven inside a segment ([`exact_chain`]).
const EXACT_PROOF: usize = 4;

/// What a packet's type says of its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lens {
    /// A type byte SoupBinTCP does not have.
    NoSuchType,
    /// Any length: Debug, or an OUCH message of a type or version not known.
    Free,
    /// The whole-packet lengths it may have; `control`: a control packet, never of another length.
    Fixed { ends: [Option<usize>; 2], control: bool },
    /// An OUCH message whose fixed part has not all come yet.
    NeedMore,
}

/// What the type of a SoupBinTCP packet starting `head` (3 bytes at least) says of its length
/// (SoupBinTCP 4.1 §2; Login Request: 4.0's, and 4.1's with its Heartbeat Timeout; data: the OUCH
/// message's by its type, once `head` holds its fixed part and the version is known).
fn type_lens(dir: OrderDir, proto: Option<OrderProto>, head: &[u8]) -> Lens {
    let control = |ends| Lens::Fixed { ends, control: true };
    match head[2] {
        b'A' => control([Some(33), None]),
        b'J' => control([Some(4), None]),
        b'H' | b'Z' | b'R' | b'O' => control([Some(3), None]),
        b'L' => control([Some(49), Some(54)]),
        b'+' => Lens::Free,
        b'U' | b'S' => {
            let Some(proto) = proto else {
                // Version not known yet: either one's lengths.
                return match (
                    type_lens(dir, Some(OrderProto::Ouch50), head),
                    type_lens(dir, Some(OrderProto::Ouch42), head),
                ) {
                    (Lens::Fixed { ends: [a, _], .. }, Lens::Fixed { ends: [b, _], .. }) => {
                        Lens::Fixed { ends: [a, b], control: false }
                    }
                    (fixed @ Lens::Fixed { .. }, _) | (_, fixed @ Lens::Fixed { .. }) => fixed,
                    (Lens::NeedMore, _) | (_, Lens::NeedMore) => Lens::NeedMore,
                    _ => Lens::Free,
                };
            };
            let msg = &head[3..];
            let (len, fixed): (_, fn(u8) -> Option<usize>) = match (proto, dir) {
                (OrderProto::Ouch50, OrderDir::Inbound) => (ouch5::Inbound::len_at(msg), ouch5::Inbound::fixed_len),
                (OrderProto::Ouch50, OrderDir::Outbound) => (ouch5::Outbound::len_at(msg), ouch5::Outbound::fixed_len),
                (OrderProto::Ouch42, OrderDir::Inbound) => (ouch42::Inbound::len_at(msg), ouch42::Inbound::fixed_len),
                (OrderProto::Ouch42, OrderDir::Outbound) => {
                    (ouch42::Outbound::len_at(msg), ouch42::Outbound::fixed_len)
                }
            };
            match (len, msg.first()) {
                (Some(n), _) => Lens::Fixed { ends: [Some(n + 3), None], control: false },
                (None, None) => Lens::NeedMore,
                (None, Some(&t)) if fixed(t).is_some() => Lens::NeedMore,
                (None, Some(_)) => Lens::Free,
            }
        }
        _ => Lens::NoSuchType,
    }
}

/// What a SoupBinTCP packet of stream direction `dir` starting `head` (3 bytes at least: its bytes
/// up to the last one received; `at_end`: no more will come) can be, by its type byte and what it
/// holds. An end is proven by whole packets of known types after it ([`starts_soupbin`]), less surely
/// by the bytes received ending there.
/// - A packet whose length is its type's, or whose own end is proven by packets after it, is framed
///   by its length (its message, if of the wrong length, is counted malformed).
/// - A length other than its type's where packets after the type's end prove it: a damaged length,
///   skipped to that end. A type byte SoupBinTCP lacks: skipped to its own end, where proven.
/// - Where more bytes may decide (the ends not received yet, or packets after them cut by the bytes'
///   end), the packet waits for them.
/// - Then the bytes' end: at the packet's own end, it is framed; at its type's, skipped there.
/// - Otherwise a type byte SoupBinTCP lacks, or a control packet of another length (never
///   legitimate), stops the framer: the stream looks for a boundary it can prove. Any other packet is
///   framed by its length.
///
/// A damaged length otherwise swallows every packet up to where it points (or ends early, and the
/// next header, read from the message's middle, is caught here).
pub(super) fn judge(dir: OrderDir, proto: Option<OrderProto>, head: &[u8], at_end: bool) -> Judgement {
    let declared = 2 + usize::from(u16::from_be_bytes([head[0], head[1]]));
    let lens = type_lens(dir, proto, head);
    let ends = match lens {
        Lens::Fixed { ends, .. } if ends.contains(&Some(declared)) => return Judgement::Plausible,
        Lens::Fixed { ends, .. } => ends,
        Lens::Free => return Judgement::Plausible,
        Lens::NeedMore => return if at_end { Judgement::Plausible } else { Judgement::Wait },
        Lens::NoSuchType => [None, None],
    };
    let mut ends = ends.into_iter().flatten();
    // At the stream's end, packets after `end` cut by it prove it as well as whole ones.
    let chained =
        |end: usize| end < head.len() && (starts_soupbin(&head[end..]) || (at_end && open_chain(&head[end..])));
    let undecided = |end: usize| !at_end && (end > head.len() || (end < head.len() && open_chain(&head[end..])));
    if lens == Lens::NoSuchType {
        return if chained(declared) || declared == head.len() {
            Judgement::Misframed { resume: Some(declared) }
        } else if undecided(declared) {
            Judgement::Wait
        } else {
            Judgement::Misframed { resume: None }
        };
    }
    if chained(declared) {
        return Judgement::Plausible;
    }
    if let Some(end) = ends.clone().find(|&e| chained(e)) {
        return Judgement::Misframed { resume: Some(end) };
    }
    if ends.clone().any(undecided) {
        return Judgement::Wait;
    }
    let control = matches!(lens, Lens::Fixed { control: true, .. });
    if declared == head.len() && !control {
        return Judgement::Plausible;
    }
    if let Some(end) = ends.find(|&e| e == head.len()) {
        return Judgement::Misframed { resume: Some(end) };
    }
    if control { Judgement::Misframed { resume: None } } else { Judgement::Plausible }
}

/// Whether `b` holds SoupBinTCP packet headers of known types chained to its end, the last packet
/// (or its header) cut there, within [`STRADDLE_PROOF`] packets: what more bytes may make a proof.
fn open_chain(b: &[u8]) -> bool {
    walk_chain(b, STRADDLE_PROOF).1 == ChainEnd::Cut
}

/// Whether a packet boundary is proven at the start of `b`: [`EXACT_PROOF`] whole packets each of the
/// length its type gives it, or fewer to its end when they are two at least or hold an OUCH message.
/// `None`: more bytes may tell (the packets so far are such, the next one cut). With `at_end` (no more
/// bytes will come), a packet cut by the end counts as the end.
pub(super) fn exact_chain(dir: OrderDir, proto: Option<OrderProto>, b: &[u8], at_end: bool) -> Option<bool> {
    let (mut off, mut packets, mut data) = (0, 0, false);
    let cut = |packets: usize, data: bool| {
        if packets >= 2 || data {
            Some(true)
        } else if at_end {
            Some(false)
        } else {
            None
        }
    };
    while packets < EXACT_PROOF {
        let head = &b[off..];
        if head.is_empty() {
            return cut(packets, data);
        }
        let open = if at_end { cut(packets, data) } else { None };
        if head.len() < 3 {
            return open;
        }
        let declared = 2 + usize::from(u16::from_be_bytes([head[0], head[1]]));
        match type_lens(dir, proto, head) {
            Lens::Fixed { ends, control } if ends.contains(&Some(declared)) => data |= !control,
            Lens::NeedMore => return open,
            _ => return Some(false),
        }
        if declared > head.len() {
            return open;
        }
        off += declared;
        packets += 1;
    }
    Some(true)
}
