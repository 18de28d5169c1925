//! Transparent decompression: gzip (RFC 1952, members concatenated as `gzip` writes them) and
//! Zstandard (RFC 8878), recognised by their magic bytes, never by the file name.
//!
//! ```text
//! gzip: 1f 8b ...        zstd: 28 b5 2f fd ...
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

/// Bytes found after the end of a compressed stream (not another gzip member), which were ignored:
/// shared between the decompressor, which counts them, and the reader, which reports them.
pub(crate) type Trailing = Arc<AtomicU64>;

/// gzip members one after another (as `gzip -d` reads them). After the last member, bytes that do not
/// begin another one (trailing garbage, zero padding from a tape or a block device) are counted in
/// `trailing` and ignored, as `gzip -d` ignores them with a warning, instead of failing the read.
struct GzipMembers {
    member: Option<flate2::bufread::GzDecoder<BufReader<Box<dyn Read + Send>>>>,
    trailing: Trailing,
}

impl Read for GzipMembers {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(member) = self.member.as_mut() else { return Ok(0) };
            let n = member.read(out)?;
            if n > 0 || out.is_empty() {
                return Ok(n);
            }
            // The member ended: another one, the end, or bytes that are neither.
            let mut rest = self.member.take().map(|m| m.into_inner()).expect("a member");
            let head = rest.fill_buf()?;
            if head.is_empty() {
                return Ok(0);
            }
            if head.starts_with(&[0x1f, 0x8b]) || head == [0x1f] {
                self.member = Some(flate2::bufread::GzDecoder::new(rest));
                continue;
            }
            let ignored = io::copy(&mut rest, &mut io::sink())?;
            self.trailing.fetch_add(ignored, Ordering::Relaxed);
            return Ok(0);
        }
    }
}

/// Reads the first bytes of `src`, and wraps it in the decompressor they call for. The counter
/// (gzip only) says how many bytes after the compressed stream were ignored.
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
    if head.starts_with(&[0x1f, 0x8b]) {
        let trailing = Trailing::default();
        let member = flate2::bufread::GzDecoder::new(BufReader::with_capacity(64 << 10, rejoined));
        let r = GzipMembers { member: Some(member), trailing: trailing.clone() };
        Ok((Box::new(r), Compression::Gzip, Some(trailing)))
    } else if head == [0x28, 0xb5, 0x2f, 0xfd] {
        Ok((Box::new(zstd::stream::read::Decoder::new(rejoined)?), Compression::Zstd, None))
    } else {
        Ok((rejoined, Compression::None, None))
    }
}
