//! Transparent decompression: gzip (RFC 1952, members concatenated as `gzip` writes them) and
//! Zstandard (RFC 8878), recognised by their magic bytes, never by the file name.
//!
//! ```text
//! gzip: 1f 8b ...        zstd: 28 b5 2f fd ...
//! ```

use std::io::{self, Cursor, Read};

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

/// Reads the first bytes of `src`, and wraps it in the decompressor they call for.
pub(crate) fn wrap(mut src: Box<dyn Read + Send>) -> io::Result<(Box<dyn Read + Send>, Compression)> {
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
        Ok((Box::new(flate2::read::MultiGzDecoder::new(rejoined)), Compression::Gzip))
    } else if head == [0x28, 0xb5, 0x2f, 0xfd] {
        Ok((Box::new(zstd::stream::read::Decoder::new(rejoined)?), Compression::Zstd))
    } else {
        Ok((rejoined, Compression::None))
    }
}
