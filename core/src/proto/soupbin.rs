//! Nasdaq SoupBinTCP 4.0 / 4.1 (`specs/soupbintcp_spec_4.0.txt`, `specs/soupbintcp_spec_4.1.txt`):
//! logical packets over a TCP byte stream, both directions.
//!
//! ```text
//! 0              2             3
//! | length (u16) | type (1) | payload (length - 1 bytes) |
//! ```
//!
//! `length` counts the type byte and the payload. Packet types: from either side Debug '+'; from the
//! server Login Accepted 'A', Login Rejected 'J', Sequenced Data 'S', Unsequenced Data 'U', Server
//! Heartbeat 'H', End of Session 'Z'; from the client Login Request 'L', Unsequenced Data 'U', Client
//! Heartbeat 'R', Logout Request 'O'. 4.1 adds the 5-byte Heartbeat Timeout to Login Request.
//!
//! [`Framer`] cuts a byte stream into packets whatever the chunk boundaries (packets split across
//! chunks, several in one chunk), with an explicit bound on the bytes it buffers. TCP reassembly
//! is not done here: the caller feeds in-order stream bytes and calls [`Framer::reset`] on a gap.

use super::{ProtoError, Result, parse_ascii_u64, read};

enum_with_unknown! {
    /// SoupBinTCP packet type.
    pub enum PacketType(u8) {
        /// '+' Debug (either side).
        Debug = b'+',
        /// 'A' Login Accepted (server).
        LoginAccepted = b'A',
        /// 'J' Login Rejected (server).
        LoginRejected = b'J',
        /// 'S' Sequenced Data (server).
        SequencedData = b'S',
        /// 'H' Server Heartbeat.
        ServerHeartbeat = b'H',
        /// 'Z' End of Session (server).
        EndOfSession = b'Z',
        /// 'L' Login Request (client).
        LoginRequest = b'L',
        /// 'U' Unsequenced Data (either side since 4.0).
        UnsequencedData = b'U',
        /// 'R' Client Heartbeat.
        ClientHeartbeat = b'R',
        /// 'O' Logout Request (client).
        LogoutRequest = b'O',
    }
}

mod field {
    pub type Field = core::ops::Range<usize>;
    pub const LENGTH: Field = 0..2;
    pub const TYPE: usize = 2;
}

/// Length of the packet header (length and type).
pub const HEADER_LEN: usize = field::TYPE + 1;

/// A view of one SoupBinTCP packet (the buffer may extend past it; the view stops at its length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }
    /// Wraps a buffer holding a whole packet, after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    /// Checks the header and the declared length are inside the buffer, and the length is not 0.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        super::need("SoupBinTCP packet", b, HEADER_LEN)?;
        if self.length() == 0 {
            return Err(ProtoError::Malformed {
                what: "SoupBinTCP packet",
                offset: field::LENGTH.start,
                reason: "length 0: the length must count the type byte",
            });
        }
        super::need("SoupBinTCP packet", b, self.total_len())
    }
    /// The length field: type byte plus payload.
    pub fn length(&self) -> u16 {
        read::u16(self.buffer.as_ref(), field::LENGTH.start)
    }
    /// Bytes of the whole packet, length field included.
    pub fn total_len(&self) -> usize {
        2 + usize::from(self.length())
    }
    /// Packet type.
    pub fn packet_type(&self) -> PacketType {
        PacketType::from(self.buffer.as_ref()[field::TYPE])
    }
}

impl<'a> Packet<&'a [u8]> {
    /// The payload (after the type byte, up to the declared length).
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer[HEADER_LEN..self.total_len()]
    }
    /// The whole packet.
    pub fn bytes(&self) -> &'a [u8] {
        &self.buffer[..self.total_len()]
    }
}

message_view! {
    /// 'A' Login Accepted (server), 33 bytes.
    pub struct LoginAccepted, what "SoupBinTCP 'A' Login Accepted", len 33;
    /// Packet Length.
    packet_length: u16 @ 0,
    /// Packet Type.
    packet_type: char @ 2,
    /// Session, left-padded with spaces.
    session: a10 @ 3,
    /// Sequence Number, ASCII, left-padded with spaces: next sequenced message.
    sequence_number: a20 @ 13,
}

message_view! {
    /// 'J' Login Rejected (server), 4 bytes.
    pub struct LoginRejected, what "SoupBinTCP 'J' Login Rejected", len 4;
    /// Packet Length.
    packet_length: u16 @ 0,
    /// Packet Type.
    packet_type: char @ 2,
    /// Reject Reason Code: 'A' not authorized, 'S' session not available.
    reject_reason_code: char @ 3,
}

message_view! {
    /// 'L' Login Request (client): 49 bytes in 4.0, 54 with the 4.1 Heartbeat Timeout.
    pub struct LoginRequest, what "SoupBinTCP 'L' Login Request", len 49;
    /// Packet Length.
    packet_length: u16 @ 0,
    /// Packet Type.
    packet_type: char @ 2,
    /// Username, right-padded with spaces.
    username: a6 @ 3,
    /// Password, right-padded with spaces.
    password: a10 @ 9,
    /// Requested Session (all blanks: the current session).
    requested_session: a10 @ 19,
    /// Requested Sequence Number, ASCII (0: most recent message).
    requested_sequence_number: a20 @ 29,
}

/// Length of a 4.1 Login Request (with Heartbeat Timeout).
pub const LOGIN_REQUEST_4_1_LEN: usize = 54;

impl<T: AsRef<[u8]>> LoginRequest<T> {
    /// Heartbeat Timeout in milliseconds (4.1, 5 ASCII digits at offset 49), when the packet is
    /// long enough to carry it and the field is numeric.
    pub fn heartbeat_timeout_ms(&self) -> Option<u64> {
        let b = self.as_bytes();
        if usize::from(self.packet_length()) + 2 < LOGIN_REQUEST_4_1_LEN || b.len() < LOGIN_REQUEST_4_1_LEN {
            return None;
        }
        parse_ascii_u64(&b[49..54])
    }
}

/// A decoded SoupBinTCP packet (the `Repr` level).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SoupPacket<'a> {
    /// '+' Debug text.
    Debug(&'a [u8]),
    /// 'A' Login Accepted.
    LoginAccepted {
        /// Session ID.
        session: [u8; 10],
        /// Next sequence number, `None` if the field is not a number.
        sequence: Option<u64>,
    },
    /// 'J' Login Rejected.
    LoginRejected {
        /// Reject reason code.
        reason: u8,
    },
    /// 'S' Sequenced Data: one higher-level message.
    SequencedData(&'a [u8]),
    /// 'U' Unsequenced Data: one higher-level message.
    UnsequencedData(&'a [u8]),
    /// 'H' Server Heartbeat.
    ServerHeartbeat,
    /// 'Z' End of Session.
    EndOfSession,
    /// 'L' Login Request.
    LoginRequest {
        /// Username.
        username: [u8; 6],
        /// Requested session (blank: current).
        session: [u8; 10],
        /// Requested sequence number.
        sequence: Option<u64>,
        /// Heartbeat timeout (4.1 only).
        heartbeat_timeout_ms: Option<u64>,
    },
    /// 'R' Client Heartbeat.
    ClientHeartbeat,
    /// 'O' Logout Request.
    LogoutRequest,
    /// Another type byte: the type and the payload.
    Unknown(u8, &'a [u8]),
}

impl<'a> SoupPacket<'a> {
    /// Decodes one packet from a buffer that starts with it.
    pub fn parse(buf: &'a [u8]) -> Result<SoupPacket<'a>> {
        let p = Packet::new_checked(buf)?;
        let whole = p.bytes();
        Ok(match p.packet_type() {
            PacketType::Debug => SoupPacket::Debug(p.payload()),
            PacketType::LoginAccepted => {
                let v = LoginAccepted::new_checked(whole)?;
                SoupPacket::LoginAccepted { session: v.session(), sequence: parse_ascii_u64(&v.sequence_number()) }
            }
            PacketType::LoginRejected => {
                SoupPacket::LoginRejected { reason: LoginRejected::new_checked(whole)?.reject_reason_code() }
            }
            PacketType::SequencedData => SoupPacket::SequencedData(p.payload()),
            PacketType::UnsequencedData => SoupPacket::UnsequencedData(p.payload()),
            PacketType::ServerHeartbeat => SoupPacket::ServerHeartbeat,
            PacketType::EndOfSession => SoupPacket::EndOfSession,
            PacketType::LoginRequest => {
                let v = LoginRequest::new_checked(whole)?;
                SoupPacket::LoginRequest {
                    username: v.username(),
                    session: v.requested_session(),
                    sequence: parse_ascii_u64(&v.requested_sequence_number()),
                    heartbeat_timeout_ms: v.heartbeat_timeout_ms(),
                }
            }
            PacketType::ClientHeartbeat => SoupPacket::ClientHeartbeat,
            PacketType::LogoutRequest => SoupPacket::LogoutRequest,
            PacketType::Unknown(t) => SoupPacket::Unknown(t, p.payload()),
        })
    }
}

/// Numbers Sequenced Data packets as both ends do (spec 1.2): the Login Accepted packet gives the
/// sequence of the next one, each 'S' packet increments it; unsequenced packets do not count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SoupSequencer {
    next: Option<u64>,
}

impl SoupSequencer {
    /// Feeds a server packet; returns the sequence number of a Sequenced Data packet when known
    /// (it is not before a Login Accepted was seen, e.g. a capture started mid-session).
    pub fn observe(&mut self, p: &SoupPacket<'_>) -> Option<u64> {
        match *p {
            SoupPacket::LoginAccepted { sequence, .. } => {
                self.next = sequence;
                None
            }
            SoupPacket::SequencedData(_) => {
                let s = self.next?;
                self.next = Some(s.wrapping_add(1));
                Some(s)
            }
            _ => None,
        }
    }
}

/// The framer could not continue: the stream is not SoupBinTCP at this point, or a packet exceeds
/// the buffer bound. The framer stays failed until [`Framer::reset`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A packet declares length 0 (it must count its type byte).
    #[error(
        "SoupBinTCP packet at stream byte {offset} declares length 0; the stream is not SoupBinTCP or lost sync (reset the framer at the next gap)"
    )]
    ZeroLength {
        /// Stream offset of the packet.
        offset: u64,
    },
    /// A packet is longer than the framer's bound.
    #[error(
        "SoupBinTCP packet at stream byte {offset} is {len} bytes, above the bound of {max} (raise Framer::new's max_packet if this is legitimate)"
    )]
    TooLong {
        /// Stream offset of the packet.
        offset: u64,
        /// Declared bytes of the packet (length field included).
        len: usize,
        /// The bound.
        max: usize,
    },
    /// The judge of [`Framer::feed_judged`] found a packet's header wrong, and no boundary after it.
    #[error("SoupBinTCP packet at stream byte {offset} cannot be what its header says (a damaged length or type)")]
    Misframed {
        /// Stream offset of the packet.
        offset: u64,
    },
}

/// What a judge ([`Framer::feed_judged`]) says of a packet from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judgement {
    /// Nothing against it: frame it by its length.
    Plausible,
    /// Undecided until more bytes come: the packet waits for the next chunk, even if whole.
    Wait,
    /// Its header cannot be right (a damaged length or type byte): the stream lost sync at it.
    Misframed {
        /// Bytes from the packet's start to a later packet boundary the judge can prove from what
        /// it was shown, if any.
        resume: Option<usize>,
    },
}

/// What [`Framer::feed_judged`] hands out, in stream order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framed<'a> {
    /// A packet.
    Packet(Packet<&'a [u8]>),
    /// This many bytes of a packet judged misframed, up to the boundary its judge proved.
    Skipped(usize),
}

/// The room [`Framer`] cuts its buffer to after framing a packet split across chunks, when it holds
/// fewer bytes than half of it (else twice those). A split packet is framed from the bytes held joined
/// with the whole next chunk, so the room must hold a usual segment (an MSS, a jumbo frame's) beside
/// them: less, and every split packet allocated twice (the room grown for the chunk, then cut back).
/// [`Framer::reset`] keeps the room as it is, however large: a caller bounding many framers' memory
/// cuts it ([`Framer::release`]) to this while the stream is busy, to 0 once it ends.
pub const RETAINED: usize = 16 << 10;

/// Cuts a SoupBinTCP byte stream into packets, whatever the chunk boundaries.
///
/// Complete packets inside a chunk are handed out without copying; only a packet split across
/// chunks is copied into an internal buffer, which holds at most `max_packet` bytes; with a judge
/// ([`Framer::feed_judged`]) that waits, also the few packets it looks at after one (each bounded so).
#[derive(Debug, Clone)]
pub struct Framer {
    pending: Vec<u8>,
    max_packet: usize,
    offset: u64,
    failed: Option<FrameError>,
    packets: u64,
}

impl Default for Framer {
    /// A framer accepting any legal packet (65,537 bytes at most).
    fn default() -> Self {
        Framer::new(2 + usize::from(u16::MAX))
    }
}

impl Framer {
    /// A framer refusing packets longer than `max_packet` bytes (length field included; at least 3).
    pub fn new(max_packet: usize) -> Self {
        Framer { pending: Vec::new(), max_packet: max_packet.max(HEADER_LEN), offset: 0, failed: None, packets: 0 }
    }

    /// Feeds the next in-order bytes of the stream; calls `on_packet` for every packet completed.
    /// Returns the number of packets completed, or the error that stopped the framer.
    pub fn feed<F: FnMut(Packet<&[u8]>)>(
        &mut self,
        chunk: &[u8],
        mut on_packet: F,
    ) -> core::result::Result<usize, FrameError> {
        self.feed_judged(
            chunk,
            |_| Judgement::Plausible,
            |f| {
                if let Framed::Packet(p) = f {
                    on_packet(p)
                }
            },
        )
    }

    /// [`Framer::feed`], with `judge` shown each packet before it is framed by its length: the bytes
    /// from its start (3 at least) to the last byte fed, so the packets after it too; shown again
    /// with more while it waits for the next chunk. A packet judged [`Judgement::Misframed`] with a
    /// proven end is skipped to it ([`Framed::Skipped`]); without one, it stops the framer
    /// ([`FrameError::Misframed`]). A stream whose length field was damaged would otherwise swallow
    /// every packet up to where that length points.
    // `#[inline]`: every order segment takes it, and unhinted it stopped being inlined into the
    // stream's framing when code beside it grew (0.1 % more instructions under the symbol rule).
    #[inline]
    pub fn feed_judged(
        &mut self,
        chunk: &[u8],
        mut judge: impl FnMut(&[u8]) -> Judgement,
        mut on: impl FnMut(Framed<'_>),
    ) -> core::result::Result<usize, FrameError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if self.pending.is_empty() {
            let (result, used) = self.frame(chunk, &mut judge, &mut on);
            // What is left: a packet shorter than its length (bounded by max_packet), or one waiting
            // with the few packets its judge needs after it; after an error, from the packet that
            // stopped the framer ([`Framer::take_pending`]).
            self.pending.extend_from_slice(&chunk[used..]);
            return result;
        }
        // A packet begun in an earlier chunk: framed, and judged, with the bytes after it.
        let mut joined = std::mem::take(&mut self.pending);
        joined.extend_from_slice(chunk);
        let (result, used) = self.frame(&joined, &mut judge, &mut on);
        joined.drain(..used);
        let keep = RETAINED.max(2 * joined.len());
        if joined.capacity() > keep {
            // A long packet framed: its room is not kept for the short ones after it (a stream that
            // once carried a 64 KiB packet would hold twice that for the rest of the capture).
            joined.shrink_to(keep);
        }
        self.pending = joined;
        result
    }

    /// Frames the packets of `buf`; returns how many, and the bytes framed or skipped.
    fn frame(
        &mut self,
        mut buf: &[u8],
        judge: &mut impl FnMut(&[u8]) -> Judgement,
        on: &mut impl FnMut(Framed<'_>),
    ) -> (core::result::Result<usize, FrameError>, usize) {
        let len = buf.len();
        let mut n = 0;
        while buf.len() >= 2 {
            let total = match self.check_total(read::u16(buf, 0)) {
                Ok(total) => total,
                Err(e) => return (Err(e), len - buf.len()),
            };
            if buf.len() >= HEADER_LEN {
                match judge(buf) {
                    Judgement::Plausible => {}
                    Judgement::Wait => break,
                    Judgement::Misframed { resume: Some(k) } if (1..=buf.len()).contains(&k) => {
                        on(Framed::Skipped(k));
                        self.offset += k as u64;
                        buf = &buf[k..];
                        continue;
                    }
                    Judgement::Misframed { .. } => {
                        let e = FrameError::Misframed { offset: self.offset };
                        self.failed = Some(e);
                        return (Err(e), len - buf.len());
                    }
                }
            }
            if buf.len() < total {
                break;
            }
            on(Framed::Packet(Packet::new_unchecked(&buf[..total])));
            self.offset += total as u64;
            self.packets += 1;
            n += 1;
            buf = &buf[total..];
        }
        (Ok(n), len - buf.len())
    }

    fn check_total(&mut self, length: u16) -> core::result::Result<usize, FrameError> {
        let total = 2 + usize::from(length);
        let err = if length == 0 {
            FrameError::ZeroLength { offset: self.offset }
        } else if total > self.max_packet {
            FrameError::TooLong { offset: self.offset, len: total, max: self.max_packet }
        } else {
            return Ok(total);
        };
        self.failed = Some(err);
        Err(err)
    }

    /// Drops any partial packet and the failed state (call after a gap in the TCP stream; framing
    /// resumes at the next byte fed, which must start a packet).
    pub fn reset(&mut self) {
        self.offset += self.pending.len() as u64;
        self.pending.clear();
        self.failed = None;
    }

    /// Takes the bytes held (a packet split across chunks, one waiting for its judge, or after an
    /// error the bytes from the packet that stopped the framer), as [`Framer::reset`] drops them.
    pub fn take_pending(&mut self) -> Vec<u8> {
        self.offset += self.pending.len() as u64;
        self.failed = None;
        std::mem::take(&mut self.pending)
    }

    /// Bytes held for a packet split across chunks.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Bytes allocated to hold them (what they cost in memory).
    pub fn capacity(&self) -> usize {
        self.pending.capacity()
    }

    /// Gives back the room allocated for bytes held beyond `keep` bytes, when none are held (a caller
    /// bounding the memory of many framers): 0 frees it (a stream ended or quiet); [`RETAINED`] keeps
    /// what the next split packet needs, so that a busy stream does not allocate again. (The room a
    /// [`Framer::reset`] left is otherwise cut only when the next split packet is framed.)
    pub fn release(&mut self, keep: usize) {
        if self.pending.is_empty() {
            self.pending.shrink_to(keep);
        }
    }

    /// Stream offset of the next packet (bytes of complete packets and dropped bytes so far).
    pub fn stream_offset(&self) -> u64 {
        self.offset
    }

    /// Packets handed out so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// The error the framer stopped on, if any.
    pub fn failed(&self) -> Option<FrameError> {
        self.failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testutil::{B, assert_tiles};

    /// One example per packet type, built from the spec tables.
    fn examples() -> Vec<Vec<u8>> {
        vec![
            B::new().u16(6).c(b'+').raw(b"hello").done(),
            B::new().u16(31).c(b'A').s("    SESS01", 10).s("                   1", 20).done(),
            B::new().u16(2).c(b'J').c(b'S').done(),
            B::new().u16(4).c(b'S').raw(b"abc").done(),
            B::new().u16(1).c(b'H').done(),
            B::new().u16(1).c(b'Z').done(),
            B::new().u16(47).c(b'L').s("USER01", 6).s("pass", 10).s("", 10).s("                 123", 20).done(),
            B::new()
                .u16(52)
                .c(b'L')
                .s("U2", 6)
                .s("pw", 10)
                .s("    SESS01", 10)
                .s("                   0", 20)
                .s("15000", 5)
                .done(),
            B::new().u16(3).c(b'U').raw(b"xy").done(),
            B::new().u16(1).c(b'R').done(),
            B::new().u16(1).c(b'O').done(),
        ]
    }

    #[test]
    fn field_tables() {
        assert_tiles("A", LoginAccepted::<&[u8]>::FIELDS, LoginAccepted::<&[u8]>::LEN);
        assert_tiles("J", LoginRejected::<&[u8]>::FIELDS, LoginRejected::<&[u8]>::LEN);
        assert_tiles("L", LoginRequest::<&[u8]>::FIELDS, LoginRequest::<&[u8]>::LEN);
    }

    #[test]
    fn deconstruct_every_type() {
        let ex = examples();
        let p: Vec<SoupPacket<'_>> = ex.iter().map(|b| SoupPacket::parse(b).unwrap()).collect();
        assert_eq!(p[0], SoupPacket::Debug(b"hello"));
        assert_eq!(p[1], SoupPacket::LoginAccepted { session: *b"    SESS01", sequence: Some(1) });
        assert_eq!(p[2], SoupPacket::LoginRejected { reason: b'S' });
        assert_eq!(p[3], SoupPacket::SequencedData(b"abc"));
        assert_eq!(p[4], SoupPacket::ServerHeartbeat);
        assert_eq!(p[5], SoupPacket::EndOfSession);
        assert_eq!(
            p[6],
            SoupPacket::LoginRequest {
                username: *b"USER01",
                session: *b"          ",
                sequence: Some(123),
                heartbeat_timeout_ms: None
            }
        );
        assert_eq!(
            p[7],
            SoupPacket::LoginRequest {
                username: *b"U2    ",
                session: *b"    SESS01",
                sequence: Some(0),
                heartbeat_timeout_ms: Some(15_000)
            }
        );
        assert_eq!(p[8], SoupPacket::UnsequencedData(b"xy"));
        assert_eq!(p[9], SoupPacket::ClientHeartbeat);
        assert_eq!(p[10], SoupPacket::LogoutRequest);
        let v = LoginRequest::new_checked(&ex[6][..]).unwrap();
        assert_eq!((v.packet_length(), v.packet_type(), v.password()), (47, b'L', *b"pass      "));
        let pk = Packet::new_checked(&ex[0][..]).unwrap();
        assert_eq!((pk.length(), pk.total_len(), pk.packet_type()), (6, 8, PacketType::Debug));
        assert_eq!(SoupPacket::parse(&[0, 2, b'?', 9]).unwrap(), SoupPacket::Unknown(b'?', &[9]));
    }

    #[test]
    fn every_prefix_is_an_error() {
        for ex in examples() {
            for k in 0..ex.len() {
                assert!(
                    matches!(SoupPacket::parse(&ex[..k]), Err(ProtoError::Truncated { .. })),
                    "prefix {k} of {:?}",
                    ex[2] as char
                );
            }
        }
        // A packet whose length is too short for its type: 'A' with a 1-byte payload.
        assert_eq!(
            SoupPacket::parse(&[0, 2, b'A', b'x']),
            Err(ProtoError::Truncated { what: "SoupBinTCP 'A' Login Accepted", offset: 0, need: 33, have: 4 })
        );
        assert!(matches!(SoupPacket::parse(&[0, 0, b'H']), Err(ProtoError::Malformed { offset: 0, .. })));
    }

    #[test]
    fn sequencer_counts_sequenced_packets_only() {
        let ex = examples();
        let mut s = SoupSequencer::default();
        let seq = |s: &mut SoupSequencer, i: usize| s.observe(&SoupPacket::parse(&ex[i]).unwrap());
        assert_eq!(seq(&mut s, 3), None); // before login: unknown
        assert_eq!(seq(&mut s, 1), None); // login accepted, next = 1
        assert_eq!(seq(&mut s, 3), Some(1));
        assert_eq!(seq(&mut s, 8), None); // unsequenced
        assert_eq!(seq(&mut s, 4), None); // heartbeat
        assert_eq!(seq(&mut s, 3), Some(2));
    }

    fn stream() -> Vec<u8> {
        examples().concat()
    }

    fn frame_all(f: &mut Framer, chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for c in chunks {
            f.feed(c, |p| out.push(p.bytes().to_vec())).unwrap();
        }
        out
    }

    #[test]
    fn framer_whole_stream_in_one_chunk() {
        let s = stream();
        let mut f = Framer::default();
        let got = frame_all(&mut f, &[&s]);
        assert_eq!(got, examples());
        assert_eq!((f.pending(), f.packets(), f.stream_offset()), (0, 11, s.len() as u64));
    }

    #[test]
    fn framer_every_split_point_and_byte_by_byte() {
        let s = stream();
        for cut in 0..=s.len() {
            let mut f = Framer::default();
            assert_eq!(frame_all(&mut f, &[&s[..cut], &s[cut..]]), examples(), "cut at {cut}");
        }
        let mut f = Framer::default();
        let singles: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(frame_all(&mut f, &singles), examples());
        for size in [2, 3, 5, 7, 13] {
            let mut f = Framer::default();
            let chunks: Vec<&[u8]> = s.chunks(size).collect();
            assert_eq!(frame_all(&mut f, &chunks), examples(), "chunks of {size}");
        }
    }

    #[test]
    fn framer_bound_and_zero_length() {
        let mut f = Framer::new(10);
        let mut n = 0;
        assert_eq!(f.feed(&[0, 3, b'U', 1, 2], |_| n += 1), Ok(1));
        // 9 + 2 = 11 bytes > 10: refused; the bytes from it are held for the caller (`take_pending`),
        // and dropped by a reset, which counts them in the stream offset.
        assert_eq!(f.feed(&[0, 9, b'U'], |_| n += 1), Err(FrameError::TooLong { offset: 5, len: 11, max: 10 }));
        assert_eq!(f.feed(&[0, 1, b'R'], |_| n += 1), Err(FrameError::TooLong { offset: 5, len: 11, max: 10 }));
        assert_eq!(f.pending(), 3);
        f.reset();
        assert_eq!(f.feed(&[0, 1, b'R', 0], |_| n += 1), Ok(1));
        assert_eq!(f.pending(), 1);
        assert_eq!(f.feed(&[0], |_| n += 1), Err(FrameError::ZeroLength { offset: 11 }));
        assert_eq!(f.take_pending(), [0, 0]);
        assert_eq!(n, 2);
    }

    /// The judge sees each packet from its start to the last byte fed (the packets after it too);
    /// a packet waiting for more is shown again with what came. A misframed packet with a proven end
    /// is skipped to it; without one, the framer stops at its stream offset until reset.
    #[test]
    fn framer_judged_packets() {
        let mut f = Framer::default();
        let mut seen: Vec<Vec<u8>> = Vec::new();
        let mut n = 0;
        // R (3 bytes), then U of 5 bytes split 4 + 1, then a chunk with its last byte and an H.
        let chunks: [&[u8]; 2] = [&[0, 1, b'R', 0, 3, b'U', 7], &[8, 0, 1, b'H']];
        for c in chunks {
            let judge = |head: &[u8]| {
                seen.push(head.to_vec());
                Judgement::Plausible
            };
            assert!(f.feed_judged(c, judge, |_| n += 1).is_ok());
        }
        let want: [&[u8]; 4] =
            [&[0, 1, b'R', 0, 3, b'U', 7], &[0, 3, b'U', 7], &[0, 3, b'U', 7, 8, 0, 1, b'H'], &[0, 1, b'H']];
        assert_eq!(seen, want);
        assert_eq!(n, 3);
        // The U is misframed with its end 4 bytes on, proven: skipped, the R after it framed; a U with
        // no end proven stops the framer.
        let out = |resume| {
            let mut f = Framer::default();
            let mut got = Vec::new();
            let verdict =
                |head: &[u8]| if head[2] == b'U' { Judgement::Misframed { resume } } else { Judgement::Plausible };
            let r = f.feed_judged(&[0, 1, b'R', 0, 9, b'U', 0, 0, 1, b'R'], verdict, |x| {
                got.push(match x {
                    Framed::Packet(p) => format!("packet {}", p.total_len()),
                    Framed::Skipped(k) => format!("skipped {k}"),
                })
            });
            (r, got, f.failed())
        };
        assert_eq!(out(Some(4)), (Ok(2), vec!["packet 3".into(), "skipped 4".into(), "packet 3".into()], None));
        let err = FrameError::Misframed { offset: 3 };
        assert_eq!(out(None), (Err(err), vec!["packet 3".to_owned()], Some(err)));
    }

    /// A long packet split across chunks is not kept allocated once framed: the room left is at most
    /// `RETAINED` or twice the bytes still held; `release` gives back what is beyond its `keep` when
    /// none are (a reset keeps the room, a release to `RETAINED` cuts it there, to 0 frees it).
    #[test]
    fn a_long_packets_room_is_given_back() {
        let mut f = Framer::default();
        let mut long = 60_000u16.to_be_bytes().to_vec();
        long.push(b'+');
        long.resize(60_002, b'x');
        assert_eq!(f.feed(&long[..30_000], |_| {}), Ok(0));
        assert_eq!((f.pending(), f.capacity()), (30_000, 30_000));
        // The packet's end and a heartbeat's first byte: 1 byte held, the room cut to `RETAINED`.
        let mut rest = long[30_000..].to_vec();
        rest.push(0);
        assert_eq!(f.feed(&rest, |_| {}), Ok(1));
        assert_eq!((f.pending(), f.capacity()), (1, RETAINED));
        assert_eq!(f.feed(&[1, b'R'], |_| {}), Ok(1));
        assert_eq!(f.pending(), 0);
        assert!(f.capacity() <= RETAINED);
        f.release(0);
        assert_eq!(f.capacity(), 0);
        // Half the packet again, then a hole: the room for 30,000 stays until released.
        assert_eq!(f.feed(&long[..30_000], |_| {}), Ok(0));
        f.reset();
        assert_eq!((f.pending(), f.capacity()), (0, 30_000));
        f.release(RETAINED);
        assert_eq!(f.capacity(), RETAINED);
        // Less room than `keep` is kept as it is; bytes held keep theirs.
        f.release(2 * RETAINED);
        assert_eq!(f.capacity(), RETAINED);
        assert_eq!(f.feed(&long[..10], |_| {}), Ok(0));
        f.release(0);
        assert_eq!((f.pending(), f.capacity()), (10, RETAINED));
    }
}
