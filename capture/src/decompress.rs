//! Transparent decompression: gzip (RFC 1952, members concatenated as `gzip` writes them) and
//! Zstandard (RFC 8878, frames likewise), recognised by their magic bytes, never by the file name.
//!
//! ```text
//! gzip: 1f 8b ...        zstd: 28 b5 2f fd ... (or a skippable frame: 5? 2a 4d 18 ...)
//! ```

use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// Bytes found after the end of a compressed stream (not another gzip member or zstd frame), which
/// were ignored: shared between the decompressor, which counts them, and the reader, which reports them.
pub(crate) type Trailing = Arc<AtomicU64>;

/// The compressed bytes, buffered so that what follows a member can be looked at: a buffered reader
/// whose next bytes can be peeked at whatever its buffer's edge (a member's magic may straddle it).
struct Source {
    /// Bytes taken out of `inner` to be peeked at, read before it.
    carry: Vec<u8>,
    inner: BufReader<Box<dyn Read + Send>>,
}

impl Source {
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
    /// Whether the 4 bytes `head` (fewer only at the input's end, then too few to be a member) begin
    /// another member.
    fn begins(head: &[u8; 4]) -> bool;
}

impl Member for flate2::bufread::GzDecoder<Source> {
    fn open(src: Source) -> io::Result<Self> {
        Ok(flate2::bufread::GzDecoder::new(src))
    }
    fn into_source(self) -> Source {
        self.into_inner()
    }
    fn begins(head: &[u8; 4]) -> bool {
        head.starts_with(&GZIP_MAGIC)
    }
}

impl Member for zstd::stream::read::Decoder<'static, Source> {
    fn open(src: Source) -> io::Result<Self> {
        Ok(zstd::stream::read::Decoder::with_buffer(src)?.single_frame())
    }
    fn into_source(self) -> Source {
        self.finish()
    }
    fn begins(head: &[u8; 4]) -> bool {
        is_zstd(head)
    }
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
const SKIPPABLE_TAIL: [u8; 3] = [0x2a, 0x4d, 0x18];

/// A zstd frame's magic, or a skippable frame's (0x184D2A50-5F, RFC 8878 §3.1.2; `pzstd` begins its
/// files with one), little-endian.
fn is_zstd(head: &[u8; 4]) -> bool {
    *head == ZSTD_MAGIC || (head[0] & 0xf0 == 0x50 && head[1..] == SKIPPABLE_TAIL)
}

/// A compressed file's members one after another (as `gzip -d` reads gzip members; zstd frames
/// likewise). After the last member, bytes that do not begin another one (trailing garbage, zero
/// padding from a tape or a block device) are counted in `trailing` and ignored, as `gzip -d` ignores
/// them with a warning, instead of failing the read.
struct Members<M> {
    member: Option<M>,
    trailing: Trailing,
}

impl<M: Member> Read for Members<M> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(member) = self.member.as_mut() else { return Ok(0) };
            let n = member.read(out)?;
            if n > 0 || out.is_empty() {
                return Ok(n);
            }
            // The member ended: another one, the end, or bytes that are neither.
            let mut rest = self.member.take().map(M::into_source).expect("a member");
            let head = rest.peek(4)?;
            if head.is_empty() {
                return Ok(0);
            }
            if head.first_chunk::<4>().is_some_and(M::begins) {
                self.member = Some(M::open(rest)?);
                continue;
            }
            let ignored = io::copy(&mut rest, &mut io::sink())?;
            self.trailing.fetch_add(ignored, Ordering::Relaxed);
            return Ok(0);
        }
    }
}

/// `src` read member by member, with the counter of the bytes after them.
fn members<M: Member + Send + 'static>(src: Box<dyn Read + Send>) -> io::Result<(Box<dyn Read + Send>, Trailing)> {
    let trailing = Trailing::default();
    let member = M::open(Source { carry: Vec::new(), inner: BufReader::with_capacity(64 << 10, src) })?;
    Ok((Box::new(Members { member: Some(member), trailing: trailing.clone() }), trailing))
}

/// Reads the first bytes of `src`, and wraps it in the decompressor they call for. The counter says
/// how many bytes after the compressed stream were ignored.
pub(crate) fn wrap(mut src: Box<dyn Read + Send>) -> io::Result<(Box<dyn Read + Send>, Compression, Option<Trailing>)> {
    let mut head = [0u8; 4];
    let mut n = 0;
    while n < head.len() {
        match src.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let head = &head[..n];
    let rejoined: Box<dyn Read + Send> = Box::new(Cursor::new(head.to_vec()).chain(src));
    if head.starts_with(&GZIP_MAGIC) {
        let (r, trailing) = members::<flate2::bufread::GzDecoder<Source>>(rejoined)?;
        Ok((r, Compression::Gzip, Some(trailing)))
    } else if head.first_chunk::<4>().is_some_and(is_zstd) {
        let (r, trailing) = members::<zstd::stream::read::Decoder<'static, Source>>(rejoined)?;
        Ok((r, Compression::Zstd, Some(trailing)))
    } else {
        Ok((rejoined, Compression::None, None))
    }
}
