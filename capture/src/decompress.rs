//! Transparent decompression: gzip (RFC 1952, members concatenated as `gzip` writes them) and
//! Zstandard (RFC 8878, frames likewise), recognised by their magic bytes, never by the file name.
//!
//! ```text
//! gzip: 1f 8b ...        zstd: 28 b5 2f fd ... (or a skippable frame: 5? 2a 4d 18 ...)
//! ```
//!
//! A stream cut short ends where its decoder stops, as if the file ended there; the reader reports
//! the cut. gzip's decoder gives what it decodes as it goes, taking every compressed byte (the
//! compressed bytes it took, counted, say where the cut member began and that nothing present was
//! left); zstd's decodes a compressed block only once whole, so the bytes of the incomplete block are
//! lost, which a walk of the frame and block headers counts. Corrupt zstd data fails the read after
//! every byte decoded before it (`ZstdFrame`).

use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{CompressedCut, GzipCut, ZstdCut, ZstdPart};
use crate::gzip::GzipMember;

/// Compression of an input file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Read as is.
    None,
    /// gzip (one or more members).
    Gzip,
    /// Zstandard.
    Zstd,
}

/// How a compressed stream ended: shared between the decompressor, which learns it, and the reader,
/// which reports it.
pub(crate) type Ending = Arc<Mutex<End>>;

/// See [`Ending`].
#[derive(Debug, Default)]
pub(crate) struct End {
    /// Bytes after the end of the compressed stream (not another gzip member or zstd frame), ignored.
    pub(crate) trailing: u64,
    /// The input ended inside a member (the file was cut short): the decoded stream ends where the
    /// decoder could go no further, as if it were the file's end.
    pub(crate) cut: bool,
    /// zstd: where the input ended in the frame being read ([`ZstdWalk`]).
    zstd: Option<WalkEnd>,
    /// Bytes the cut member had decoded.
    decoded_in_member: u64,
    /// Where the cut member lies in the compressed file ([`MemberAt`]).
    member: Option<MemberAt>,
}

/// Where a cut member lies in the compressed file: where it begins, how many compressed bytes were
/// taken by its decoder before the input ended, and how many were left that it did not take.
#[derive(Debug, Clone, Copy)]
struct MemberAt {
    start: u64,
    taken: u64,
    left: u64,
}

impl End {
    /// What a stream of `compression` lost where it was cut (`None`: it was not).
    pub(crate) fn cut_of(&self, compression: Compression) -> Option<CompressedCut> {
        if !self.cut {
            return None;
        }
        let gzip = self.gzip_cut().filter(|_| compression == Compression::Gzip);
        Some(match (self.zstd_cut(), gzip) {
            (Some(z), _) => CompressedCut::Zstd(z),
            (None, Some(g)) => CompressedCut::Gzip(g),
            (None, None) => CompressedCut::Unknown,
        })
    }

    /// What a cut zstd stream lost (`None` for gzip, or a stream not cut).
    fn zstd_cut(&self) -> Option<ZstdCut> {
        let w = self.zstd.filter(|_| self.cut)?;
        Some(ZstdCut {
            undecoded: w.undecoded,
            part: w.part,
            content_size: w.content_size,
            decoded: self.decoded_in_member,
        })
    }
}

impl End {
    /// Where a cut gzip stream was cut (`None` for a stream not cut; the caller knows it is gzip).
    fn gzip_cut(&self) -> Option<GzipCut> {
        let m = self.member.filter(|_| self.cut)?;
        Some(GzipCut {
            member_start: m.start,
            present: m.taken + m.left - m.start,
            undecoded: m.left,
            decoded: self.decoded_in_member,
        })
    }
}

/// Where the input ended, as [`ZstdWalk`] saw it.
#[derive(Debug, Clone, Copy)]
struct WalkEnd {
    undecoded: u64,
    part: ZstdPart,
    content_size: Option<u64>,
}

/// The shared [`End`].
pub(crate) fn lock(e: &Ending) -> std::sync::MutexGuard<'_, End> {
    // The state is plain counters, whole after any panic.
    e.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The compressed bytes, buffered so that what follows a member can be looked at: a buffered reader
/// whose next bytes can be peeked at whatever its buffer's edge (a member's magic may straddle it).
pub(crate) struct Source {
    /// Bytes taken out of `inner` to be peeked at, read before it.
    pub(crate) carry: Vec<u8>,
    pub(crate) inner: BufReader<Box<dyn Read + Send>>,
    /// Bytes consumed so far (by the decoders, and as trailing data): the position in the file.
    pub(crate) consumed: u64,
}

impl Source {
    /// Bytes read from the file and not consumed yet.
    pub(crate) fn buffered(&self) -> u64 {
        (self.carry.len() + self.inner.buffer().len()) as u64
    }

    /// Up to `n` next bytes, fewer only at the end of the input; nothing consumed.
    fn peek(&mut self, n: usize) -> io::Result<&[u8]> {
        while self.carry.len() < n {
            let got = self.inner.fill_buf()?;
            if got.is_empty() {
                break;
            }
            let take = got.len().min(n - self.carry.len());
            self.carry.extend_from_slice(&got[..take]);
            self.inner.consume(take);
        }
        Ok(&self.carry[..n.min(self.carry.len())])
    }
}

impl Read for Source {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = {
            let mut have = self.fill_buf()?;
            have.read(out)?
        };
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Source {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.carry.is_empty() { self.inner.fill_buf() } else { Ok(&self.carry) }
    }
    fn consume(&mut self, n: usize) {
        self.consumed += n as u64;
        if self.carry.is_empty() {
            self.inner.consume(n);
        } else {
            self.carry.drain(..n.min(self.carry.len()));
        }
    }
}

/// One member of a compressed file: a gzip member, a zstd frame.
trait Member: Read + Sized {
    /// A decoder of the member that `src` begins.
    fn open(src: Source) -> io::Result<Self>;
    /// The bytes after the member, once it has been read to its end.
    fn into_source(self) -> Source;
    /// The compressed bytes the member is read from.
    fn source(&self) -> &Source;
    /// Whether `head`, the next 4 bytes, begin another member's magic; fewer, at the input's end,
    /// whether they begin one (another member cut short).
    fn begins(head: &[u8]) -> bool;
}

impl Member for GzipMember {
    fn open(src: Source) -> io::Result<Self> {
        Ok(GzipMember::new(src))
    }
    fn into_source(self) -> Source {
        GzipMember::into_source(self)
    }
    fn source(&self) -> &Source {
        GzipMember::source(self)
    }
    fn begins(head: &[u8]) -> bool {
        !head.is_empty() && (head.starts_with(&GZIP_MAGIC) || GZIP_MAGIC.starts_with(head))
    }
}

/// One zstd frame (or skippable frame), decoded by libzstd's streaming decoder (`ZSTD_decompressStream`,
/// as `zstd -d` decodes) fed so that no call both decodes and fails: every byte decoded before a
/// corrupt part reaches the reader, then the error, however the input arrives (the `zstd` crate's
/// reader drops what it decoded in the read that met the error, which depends on how much had come).
///
/// A call decodes at most one block: it is given at most the bytes that complete the unit being read
/// (the decoder's hint counts the next block's header too, which a call is then not given: a corrupt
/// header met after a block decoded in the same call fails the call, its output unreported), and a
/// block left partly in the decoder's buffer is handed out by calls given no input before any is.
struct ZstdFrame {
    src: Source,
    dec: ZstdDecoder,
}

/// [`ZstdFrame`]'s decoder and where it is.
struct ZstdDecoder {
    dctx: zstd::zstd_safe::DCtx<'static>,
    /// The decoder's last hint: the next input it wants (block content plus the next block header).
    hint: usize,
    /// The last call filled its output: more of the block may wait in the decoder.
    pending: bool,
    /// The frame ended (and its output was all handed out).
    done: bool,
    /// The decoder failed (corrupt data): every later read fails alike.
    failed: Option<String>,
    /// Where the frame begins in the compressed file, for messages.
    start: u64,
}

/// What libzstd's error `code` means for the frame that begins at compressed byte `start`, and, where
/// the data is not corrupt but needs what this reader is not given, how to read it.
fn zstd_error(code: usize, start: u64) -> String {
    let name = zstd::zstd_safe::get_error_name(code);
    let frame = format!("the zstd frame from compressed byte {start}");
    // ZSTD_error_dictionary_wrong: the frame names a dictionary (`zstd -D`), none is loaded.
    if code == (-32isize) as usize {
        return format!(
            "{frame} was compressed with a dictionary (zstd -D), which cannot be given here: decompress the file \
             with `zstd -d -D DICTIONARY` and read that ({name})"
        );
    }
    // ZSTD_error_frameParameter_windowTooLarge: more than the 128 MiB window `zstd -d` takes by default.
    if code == (-16isize) as usize {
        return format!(
            "{frame} needs a window larger than 128 MiB (zstd --long=31 writes one): decompress the file with \
             `zstd -d --long=31` and read that ({name})"
        );
    }
    format!("corrupt data in {frame}: {name}")
}

/// Bytes of a zstd block header (RFC 8878 §3.1.1.2).
const BLOCK_HEADER: usize = 3;

impl ZstdDecoder {
    /// One call of the decoder on `input` into `out`: (input consumed, output written).
    fn step(&mut self, input: &[u8], out: &mut [u8]) -> io::Result<(usize, usize)> {
        use zstd::zstd_safe::{InBuffer, OutBuffer};
        let mut i = InBuffer::around(input);
        let mut o = OutBuffer::around(out);
        match self.dctx.decompress_stream(&mut o, &mut i) {
            Ok(hint) => {
                let (taken, written) = (i.pos(), o.pos());
                self.hint = hint;
                self.done = hint == 0;
                self.pending = written == out.len();
                Ok((taken, written))
            }
            Err(code) => {
                let msg = zstd_error(code, self.start);
                self.failed = Some(msg.clone());
                Err(io::Error::other(msg))
            }
        }
    }
}

impl Read for ZstdFrame {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let dec = &mut self.dec;
        if let Some(msg) = &dec.failed {
            return Err(io::Error::other(msg.clone()));
        }
        if dec.done || out.is_empty() {
            return Ok(0);
        }
        loop {
            if dec.pending {
                // What the decoder holds first, without input: a call given input could fail after it.
                let (_, n) = dec.step(&[], out)?;
                if n > 0 {
                    return Ok(n);
                }
            }
            let input = self.src.fill_buf()?;
            if input.is_empty() {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "incomplete zstd frame"));
            }
            let want = if dec.hint > BLOCK_HEADER { dec.hint - BLOCK_HEADER } else { dec.hint.max(1) };
            let (taken, n) = dec.step(&input[..want.min(input.len())], out)?;
            self.src.consume(taken);
            if n > 0 || dec.done {
                return Ok(n);
            }
        }
    }
}

impl Member for ZstdFrame {
    fn open(src: Source) -> io::Result<Self> {
        let dctx = zstd::zstd_safe::DCtx::try_create()
            .ok_or_else(|| io::Error::new(io::ErrorKind::OutOfMemory, "no memory for a zstd decoder context"))?;
        let start = src.consumed;
        Ok(ZstdFrame { src, dec: ZstdDecoder { dctx, hint: 1, pending: false, done: false, failed: None, start } })
    }
    fn into_source(self) -> Source {
        self.src
    }
    fn source(&self) -> &Source {
        &self.src
    }
    fn begins(head: &[u8]) -> bool {
        zstd_begins(head)
    }
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Whether `head` (its first 4 bytes; fewer, their start) is a zstd frame's magic, or a skippable
/// frame's (0x184D2A50-5F, RFC 8878 §3.1.2; `pzstd` begins its files with one), little-endian.
fn zstd_begins(head: &[u8]) -> bool {
    let head = &head[..head.len().min(4)];
    let Some(&first) = head.first() else { return false };
    let mut skippable = SKIPPABLE.to_le_bytes();
    skippable[0] |= first & !SKIPPABLE_MASK.to_le_bytes()[0];
    ZSTD_MAGIC.starts_with(head) || skippable.starts_with(head)
}

/// Whether the 4 bytes `magic` are a skippable frame's.
fn is_skippable(magic: &[u8; 4]) -> bool {
    u32::from_le_bytes(*magic) & SKIPPABLE_MASK == SKIPPABLE
}

/// A compressed file's members one after another (as `gzip -d` reads gzip members; zstd frames
/// likewise). After the last member, bytes that do not begin another one (trailing garbage, zero
/// padding from a tape or a block device) are counted in `trailing` and ignored, as `gzip -d` ignores
/// them with a warning, instead of failing the read.
///
/// A member cut short (the decoder's "unexpected end of file") ends the stream as if the file ended
/// there, and says so in `ending`: whatever was decoded before is read, and the reader reports the
/// cut, also when too little was decoded to begin a capture.
struct Members<M> {
    member: Option<M>,
    /// After a member, the bytes that follow it.
    after: Option<After>,
    /// Bytes the current member has decoded.
    decoded: u64,
    /// Where the current member begins in the compressed file.
    start: u64,
    ending: Ending,
    /// A member that could not be opened (zstd: no memory for its decoder), with the source it took:
    /// every later read returns this error, so that the stream does not end as if the file did.
    failed: Option<(io::ErrorKind, String)>,
}

/// The bytes after a member, and how far they were judged. A stream not ready (`WouldBlock`) may stop
/// either step: the next read resumes it, and bytes judged no member are never looked at again (their
/// last bytes, looked at afresh, could begin a magic: a cut, or a member opened inside garbage).
enum After {
    /// What they begin is not known yet (the bytes peeked at so far are kept in the source).
    Looking(Source),
    /// They begin no member: the rest of the input is counted as trailing data.
    Trailing(Source),
}

impl After {
    fn source(&mut self) -> &mut Source {
        match self {
            After::Looking(s) | After::Trailing(s) => s,
        }
    }

    fn into_source(self) -> Source {
        match self {
            After::Looking(s) | After::Trailing(s) => s,
        }
    }
}

impl MemberAt {
    /// The member that begins at `start`, read from `src`, which is at the input's end.
    fn of(start: u64, src: &Source) -> MemberAt {
        MemberAt { start, taken: src.consumed, left: src.buffered() }
    }
}

impl<M> Members<M> {
    /// The input ended inside a member (`at`) that had decoded `decoded` bytes: the stream ends here.
    fn cut(&mut self, decoded: u64, at: MemberAt) -> io::Result<usize> {
        self.member = None;
        let mut end = lock(&self.ending);
        end.cut = true;
        end.decoded_in_member = decoded;
        end.member = Some(at);
        Ok(0)
    }
}

impl<M: Member> Read for Members<M> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if let Some((kind, msg)) = &self.failed {
            return Err(io::Error::new(*kind, msg.clone()));
        }
        loop {
            if let Some(member) = self.member.as_mut() {
                let n = match member.read(out) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                        let at = MemberAt::of(self.start, member.source());
                        return self.cut(self.decoded, at);
                    }
                    Err(e) => return Err(e),
                };
                self.decoded += n as u64;
                if n > 0 || out.is_empty() {
                    return Ok(n);
                }
                // The member ended: another one, the end, or bytes that are neither.
                self.after = self.member.take().map(|m| After::Looking(m.into_source()));
            }
            let Some(after) = self.after.as_mut() else { return Ok(0) };
            if let After::Looking(rest) = after {
                // An error leaves what was peeked at in `rest`, kept for the next read.
                let head = rest.peek(4)?;
                if head.is_empty() {
                    self.after = None;
                    return Ok(0);
                }
                let (begins, whole) = (M::begins(head), head.len() == 4);
                let rest = self.after.take().expect("looked at above").into_source();
                if !begins {
                    self.after = Some(After::Trailing(rest));
                    continue;
                }
                self.start = rest.consumed;
                if !whole {
                    // The next member cut inside its magic: a cut, of a member that decoded nothing.
                    return self.cut(0, MemberAt::of(self.start, &rest));
                }
                self.member = match M::open(rest) {
                    Ok(m) => Some(m),
                    Err(e) => {
                        self.failed = Some((e.kind(), e.to_string()));
                        return Err(e);
                    }
                };
                self.decoded = 0;
                continue;
            }
            let rest = after.source();
            // Counted as they go, so that an error midway loses no count.
            loop {
                let n = rest.fill_buf()?.len();
                if n == 0 {
                    break;
                }
                rest.consume(n);
                lock(&self.ending).trailing += n as u64;
            }
            self.after = None;
            return Ok(0);
        }
    }
}

/// `src` read member by member, telling how it ended in `ending`.
fn members<M: Member + Send + 'static>(src: Box<dyn Read + Send>, ending: Ending) -> io::Result<Box<dyn Read + Send>> {
    let member = M::open(Source { carry: Vec::new(), inner: BufReader::with_capacity(64 << 10, src), consumed: 0 })?;
    Ok(Box::new(Members { member: Some(member), after: None, decoded: 0, start: 0, ending, failed: None }))
}

/// Reads the first bytes of `src`, and wraps it in the decompressor they call for. The [`Ending`]
/// tells how the compressed stream ended: cut short, or followed by bytes that were ignored.
pub(crate) fn wrap(mut src: Box<dyn Read + Send>) -> io::Result<(Box<dyn Read + Send>, Compression, Option<Ending>)> {
    let mut head = [0u8; 4];
    let mut n = 0;
    while n < head.len() {
        match src.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            // Nothing yet (a stream that says so while it is opened): waited for.
            Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock) => {}
            Err(e) => return Err(e),
        }
    }
    let head = &head[..n];
    let rejoined: Box<dyn Read + Send> = Box::new(Cursor::new(head.to_vec()).chain(src));
    let ending = Ending::default();
    if head.starts_with(&GZIP_MAGIC) {
        let r = members::<GzipMember>(rejoined, ending.clone())?;
        Ok((r, Compression::Gzip, Some(ending)))
    } else if head.len() == 4 && zstd_begins(head) {
        // The walker reads the compressed bytes before the decoder's buffer: it has seen them all
        // when the decoder finds the input cut.
        let walked = Box::new(ZstdWalk::new(rejoined, ending.clone()));
        let r = members::<ZstdFrame>(walked, ending.clone())?;
        Ok((r, Compression::Zstd, Some(ending)))
    } else {
        Ok((rejoined, Compression::None, None))
    }
}

/// Follows the frames and blocks of a zstd stream (RFC 8878 §3.1) as its compressed bytes are read,
/// so that, when the input ends inside a frame, it can tell how many of its last bytes could not be
/// decoded: a compressed (or RLE) block is decoded only once whole, whereas a block stored as is
/// (raw) is decoded as its bytes arrive (by libzstd's streaming decoder, as by `zstd -d`).
struct ZstdWalk<R> {
    inner: R,
    /// Bytes read so far.
    at: u64,
    /// End of the bytes the decoder can decode (up to the last whole block).
    decodable: u64,
    state: Walk,
    /// The header being read.
    head: Vec<u8>,
    /// The current frame's content size, when its header gives it.
    content_size: Option<u64>,
    /// The current frame ends with a 4-byte checksum.
    checksum: bool,
    ending: Ending,
}

#[derive(Debug, Clone, Copy)]
enum Walk {
    /// A frame's header (or a skippable frame's magic and size), into `head`.
    FrameHeader,
    /// A block's 3-byte header, into `head`.
    BlockHeader,
    /// `left` bytes of a block to go; `raw`: stored as is; `last`: the frame's last block.
    Block { left: u64, raw: bool, last: bool },
    /// `left` bytes of the frame's checksum to go.
    Checksum { left: u64 },
    /// `left` bytes of a skippable frame to go.
    Skippable { left: u64 },
    /// Not zstd (bytes after the stream, which the decoder never reads as a frame): not followed.
    Lost,
}

const SKIPPABLE_MASK: u32 = 0xffff_fff0;
const SKIPPABLE: u32 = 0x184d_2a50;

/// The length of the frame header that `head` begins, as far as its bytes tell (4: the magic is
/// needed first; 5: then the frame header descriptor); `None`: no frame begins there.
fn frame_header_len(head: &[u8]) -> Option<usize> {
    let Some(magic) = head.first_chunk::<4>() else { return Some(4) };
    if is_skippable(magic) {
        return Some(8);
    }
    if *magic != ZSTD_MAGIC {
        return None;
    }
    let Some(&fhd) = head.get(4) else { return Some(5) };
    Some(header_before_size(fhd) + size_field_len(fhd))
}

impl<R> ZstdWalk<R> {
    fn new(inner: R, ending: Ending) -> Self {
        ZstdWalk {
            inner,
            at: 0,
            decodable: 0,
            state: Walk::FrameHeader,
            head: Vec::with_capacity(18),
            content_size: None,
            checksum: false,
            ending,
        }
    }

    /// Follows the next bytes `b` of the stream.
    fn walk(&mut self, mut b: &[u8]) {
        while !b.is_empty() {
            match self.state {
                Walk::Lost => return,
                Walk::FrameHeader | Walk::BlockHeader => {
                    let need = match self.state {
                        Walk::FrameHeader => frame_header_len(&self.head),
                        _ => Some(3),
                    };
                    let Some(need) = need else {
                        self.state = Walk::Lost;
                        return;
                    };
                    let take = (need - self.head.len()).min(b.len());
                    self.head.extend_from_slice(&b[..take]);
                    self.at += take as u64;
                    b = &b[take..];
                    let whole = match self.state {
                        Walk::FrameHeader => frame_header_len(&self.head) == Some(self.head.len()),
                        _ => self.head.len() == 3,
                    };
                    if whole {
                        self.header_read();
                    }
                }
                Walk::Block { left, raw, last } => {
                    let take = left.min(b.len() as u64);
                    self.at += take;
                    b = &b[take as usize..];
                    if raw {
                        self.decodable = self.at;
                    }
                    self.state = Walk::Block { left: left - take, raw, last };
                    self.part_read();
                }
                Walk::Checksum { left } | Walk::Skippable { left } => {
                    let take = left.min(b.len() as u64);
                    self.at += take;
                    b = &b[take as usize..];
                    self.state = match self.state {
                        Walk::Checksum { .. } => Walk::Checksum { left: left - take },
                        _ => Walk::Skippable { left: left - take },
                    };
                    self.part_read();
                }
            }
        }
    }

    /// A whole header in `head`: what follows it.
    fn header_read(&mut self) {
        let h = std::mem::take(&mut self.head);
        self.state = match self.state {
            Walk::FrameHeader if h[..4] == ZSTD_MAGIC => {
                let fhd = h[4];
                self.checksum = fhd & 0x04 != 0;
                self.content_size = content_size(&h[header_before_size(fhd)..]);
                self.decodable = self.at;
                Walk::BlockHeader
            }
            Walk::FrameHeader => Walk::Skippable { left: u64::from(u32::from_le_bytes([h[4], h[5], h[6], h[7]])) },
            _ => {
                let v = u32::from_le_bytes([h[0], h[1], h[2], 0]);
                let (last, size) = (v & 1 != 0, u64::from(v >> 3));
                match (v >> 1) & 3 {
                    0 => Walk::Block { left: size, raw: true, last },
                    1 => Walk::Block { left: 1, raw: false, last },
                    2 => Walk::Block { left: size, raw: false, last },
                    _ => Walk::Lost,
                }
            }
        };
        self.head = h;
        self.head.clear();
        self.part_read();
    }

    /// After a block, a checksum or a skippable frame that has no bytes left: what follows it.
    fn part_read(&mut self) {
        let next = match self.state {
            Walk::Block { left: 0, last: false, .. } => Walk::BlockHeader,
            Walk::Block { left: 0, last: true, .. } if self.checksum => Walk::Checksum { left: 4 },
            Walk::Block { left: 0, last: true, .. } | Walk::Checksum { left: 0 } | Walk::Skippable { left: 0 } => {
                // The next frame's size is its own header's.
                self.content_size = None;
                Walk::FrameHeader
            }
            _ => return,
        };
        self.decodable = self.at;
        self.state = next;
    }

    /// Where the input ended: what its last undecodable bytes begin.
    fn end(&self) -> Option<WalkEnd> {
        let part = match self.state {
            Walk::Lost => return None,
            Walk::FrameHeader if self.head.first_chunk::<4>().is_some_and(is_skippable) => ZstdPart::SkippableFrame,
            Walk::FrameHeader => ZstdPart::FrameHeader,
            Walk::BlockHeader | Walk::Block { .. } => ZstdPart::Block,
            Walk::Checksum { .. } => ZstdPart::Checksum,
            Walk::Skippable { .. } => ZstdPart::SkippableFrame,
        };
        Some(WalkEnd { undecoded: self.at - self.decodable, part, content_size: self.content_size })
    }
}

/// Bytes of a frame header before its content size field (magic, descriptor, window, dictionary).
fn header_before_size(fhd: u8) -> usize {
    5 + usize::from(fhd & 0x20 == 0) + [0, 1, 2, 4][usize::from(fhd & 3)]
}

/// Bytes of a frame header's content size field (RFC 8878 §3.1.1.1.1: none, or one byte for a
/// single-segment frame, when its flag is 0).
fn size_field_len(fhd: u8) -> usize {
    match fhd >> 6 {
        0 => usize::from(fhd & 0x20 != 0),
        1 => 2,
        2 => 4,
        _ => 8,
    }
}

/// A frame's content size from its field (RFC 8878 §3.1.1.1.4: the 2-byte form counts from 256).
fn content_size(field: &[u8]) -> Option<u64> {
    let mut v = [0u8; 8];
    v[..field.len()].copy_from_slice(field);
    let v = u64::from_le_bytes(v);
    match field.len() {
        0 => None,
        2 => Some(v + 256),
        _ => Some(v),
    }
}

impl<R: Read> Read for ZstdWalk<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        self.walk(&out[..n]);
        if n == 0 && !out.is_empty() {
            lock(&self.ending).zstd = self.end();
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A gzip member whose decoder cannot be opened after the file's first member, as a zstd decoder
    /// whose context cannot be allocated (not to be provoked cheaply: zstd allocates through libc).
    struct NoRoomAfterFirst(GzipMember);

    impl Read for NoRoomAfterFirst {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            self.0.read(out)
        }
    }

    impl Member for NoRoomAfterFirst {
        fn open(src: Source) -> io::Result<Self> {
            match src.consumed {
                0 => Ok(NoRoomAfterFirst(GzipMember::new(src))),
                _ => Err(io::Error::new(io::ErrorKind::OutOfMemory, "no room for a decoder")),
            }
        }
        fn into_source(self) -> Source {
            self.0.into_source()
        }
        fn source(&self) -> &Source {
            self.0.source()
        }
        fn begins(head: &[u8]) -> bool {
            <GzipMember as Member>::begins(head)
        }
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// A member that cannot be opened fails the read, and every read after it: the stream never ends
    /// as if the file ended there.
    #[test]
    fn a_member_that_cannot_be_opened_fails_every_later_read() {
        let file = [gzip(b"first member"), gzip(b"second member")].concat();
        let ending = Ending::default();
        let mut r = members::<NoRoomAfterFirst>(Box::new(Cursor::new(file)), ending.clone()).unwrap();
        let mut out = [0u8; 64];
        assert_eq!(r.read(&mut out).unwrap(), 12);
        assert_eq!(&out[..12], b"first member");
        for _ in 0..3 {
            let e = r.read(&mut out).unwrap_err();
            assert_eq!((e.kind(), e.to_string()), (io::ErrorKind::OutOfMemory, "no room for a decoder".to_owned()));
        }
        let end = lock(&ending);
        assert_eq!((end.cut, end.trailing), (false, 0));
    }
}
