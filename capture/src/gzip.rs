//! One gzip member (RFC 1952), decoded so that every byte inflated before corrupt data reaches the
//! reader, then the error, however the input arrives (flate2's `GzDecoder` returns the error of a read
//! that met corrupt data instead of the bytes that read decoded before it: how many frames came before
//! the error depended on how the input came).
//!
//! ```text
//! +---+---+----+-----+-------+-----+----+  [XLEN(2) extra] [name 00] [comment 00] [CRC16(2)]
//! |1f |8b | CM | FLG | MTIME | XFL | OS |  deflate data (RFC 1951)
//! +---+---+----+-----+-------+-----+----+  CRC32(4) ISIZE(4), both little-endian
//! ```
//!
//! The header and trailer are read here, field by field as their bytes come (a read that is not ready,
//! `WouldBlock`, leaves the member where it was); the deflate data is inflated by flate2's
//! [`flate2::Decompress`] (miniz_oxide), each call given exactly the output room left to the end of
//! its 32 KiB window (see [`WINDOW`]).

use std::io::{self, BufRead, Read};

use flate2::{Crc, Decompress, FlushDecompress, Status};

use crate::decompress::Source;

/// miniz_oxide's window (`TINFL_LZ_DICT_SIZE`): it inflates into it, at most to its end in one step,
/// then copies to the caller's buffer. A step that meets corrupt data copies what it inflated before
/// the corrupt code only as far as the caller's buffer has room (the rest is never given: every later
/// call fails at once), and a call runs further steps while room is left. Given exactly the room to
/// the window's end (`WINDOW - total_out % WINDOW`), a call runs one step and its output always fits.
const WINDOW: usize = 32 << 10;

/// Header flags (RFC 1952 §2.3.1).
const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;
const FRESERVED: u8 = 0xe0;

/// Where the member's reading is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// The 10 fixed header bytes.
    Fixed,
    /// FEXTRA's 2-byte length.
    ExtraLen,
    /// FEXTRA's bytes, this many to go.
    Extra(u16),
    /// FNAME, to its zero byte.
    Name,
    /// FCOMMENT, to its zero byte.
    Comment,
    /// FHCRC's 2 bytes.
    HeaderCrc,
    /// The deflate data.
    Body,
    /// CRC32 and ISIZE.
    Trailer,
    /// Read to its end.
    Done,
}

/// The compressed bytes present in `src`, or the member cut short (`UnexpectedEof`).
fn input(src: &mut Source) -> io::Result<&[u8]> {
    let b = src.fill_buf()?;
    if b.is_empty() {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "gzip member cut short"));
    }
    Ok(b)
}

/// One gzip member read from `src`; [`crate::decompress`] reads a file's members one after another.
pub(crate) struct GzipMember {
    src: Source,
    part: Part,
    /// The fixed-size field being read (header, its extra length or CRC, the trailer) and its bytes so far.
    field: [u8; 10],
    have: usize,
    flags: u8,
    /// CRC-32 of the header so far (FHCRC holds its low 16 bits).
    header_crc: Crc,
    inflate: Decompress,
    /// CRC-32 and size of the data inflated.
    crc: Crc,
    /// Inflated bytes not handed out yet (a caller's buffer smaller than the room a step needs):
    /// `staged[at..end]`.
    staged: Vec<u8>,
    at: usize,
    end: usize,
    /// The last step filled its room: more may come without input (a match's copy).
    full: bool,
    /// The member is corrupt: every later read fails alike.
    failed: Option<(io::ErrorKind, String)>,
    /// Where the member begins in the compressed file, for messages.
    start: u64,
}

impl GzipMember {
    pub(crate) fn new(src: Source) -> GzipMember {
        GzipMember {
            start: src.consumed,
            src,
            part: Part::Fixed,
            field: [0; 10],
            have: 0,
            flags: 0,
            header_crc: Crc::new(),
            inflate: Decompress::new(false),
            crc: Crc::new(),
            staged: Vec::new(),
            at: 0,
            end: 0,
            full: false,
            failed: None,
        }
    }

    pub(crate) fn source(&self) -> &Source {
        &self.src
    }

    pub(crate) fn into_source(self) -> Source {
        self.src
    }

    /// Fails this and every later read with `kind` and `what` is wrong with the member.
    fn fail(&mut self, kind: io::ErrorKind, what: &str) -> io::Error {
        let msg = format!("the gzip member from compressed byte {}: {what}", self.start);
        self.failed = Some((kind, msg.clone()));
        io::Error::new(kind, msg)
    }

    /// Reads the fixed-size field of `n` bytes into `field[..n]` (the header's CRC counts them).
    fn field(&mut self, n: usize) -> io::Result<()> {
        while self.have < n {
            let b = input(&mut self.src)?;
            let take = b.len().min(n - self.have);
            self.field[self.have..self.have + take].copy_from_slice(&b[..take]);
            if !matches!(self.part, Part::HeaderCrc | Part::Trailer) {
                self.header_crc.update(&b[..take]);
            }
            self.src.consume(take);
            self.have += take;
        }
        self.have = 0;
        Ok(())
    }

    /// Skips a zero-terminated field (its bytes counted in the header's CRC).
    fn skip_to_zero(&mut self) -> io::Result<()> {
        loop {
            let b = input(&mut self.src)?;
            let (take, found) = match b.iter().position(|&c| c == 0) {
                Some(i) => (i + 1, true),
                None => (b.len(), false),
            };
            self.header_crc.update(&b[..take]);
            self.src.consume(take);
            if found {
                return Ok(());
            }
        }
    }

    /// Reads the header to its end.
    fn header(&mut self) -> io::Result<()> {
        loop {
            let next = match self.part {
                Part::Fixed => {
                    self.field(10)?;
                    let f = self.field;
                    // gzip -d: "not in gzip format", "unknown method", "unknown flags".
                    if f[..2] != [0x1f, 0x8b] || f[2] != 8 || f[3] & FRESERVED != 0 {
                        let what = "invalid gzip header (not deflate, or reserved flags set)";
                        return Err(self.fail(io::ErrorKind::InvalidInput, what));
                    }
                    self.flags = f[3];
                    Part::ExtraLen
                }
                Part::ExtraLen if self.flags & FEXTRA != 0 => {
                    self.field(2)?;
                    Part::Extra(u16::from_le_bytes([self.field[0], self.field[1]]))
                }
                Part::ExtraLen => Part::Name,
                Part::Extra(0) => Part::Name,
                Part::Extra(left) => {
                    let b = input(&mut self.src)?;
                    let take = b.len().min(usize::from(left));
                    self.header_crc.update(&b[..take]);
                    self.src.consume(take);
                    Part::Extra(left - take as u16)
                }
                Part::Name if self.flags & FNAME != 0 => {
                    self.skip_to_zero()?;
                    Part::Comment
                }
                Part::Name => Part::Comment,
                Part::Comment if self.flags & FCOMMENT != 0 => {
                    self.skip_to_zero()?;
                    Part::HeaderCrc
                }
                Part::Comment => Part::HeaderCrc,
                Part::HeaderCrc if self.flags & FHCRC != 0 => {
                    // The CRC covers the header before it (its own bytes are not added to it).
                    self.field(2)?;
                    let sum = self.header_crc.sum();
                    if u16::from_le_bytes([self.field[0], self.field[1]]) != sum as u16 {
                        return Err(self.fail(io::ErrorKind::InvalidInput, "corrupt header: its CRC-16 does not match"));
                    }
                    Part::Body
                }
                _ => Part::Body,
            };
            if next == Part::Body {
                self.part = next;
                return Ok(());
            }
            self.part = next;
        }
    }

    /// One step of the inflater into `out` (exactly the room to its window's end); the bytes it gave.
    fn step(&mut self, input_present: bool, out: &mut [u8]) -> io::Result<usize> {
        let before = (self.inflate.total_in(), self.inflate.total_out());
        let empty: &[u8] = &[];
        let input = if input_present { self.src.fill_buf()? } else { empty };
        let status = self.inflate.decompress(input, out, FlushDecompress::None);
        let taken = (self.inflate.total_in() - before.0) as usize;
        let n = (self.inflate.total_out() - before.1) as usize;
        self.src.consume(taken);
        self.crc.update(&out[..n]);
        self.full = n == out.len();
        match status {
            Ok(Status::StreamEnd) => self.part = Part::Trailer,
            Ok(Status::Ok | Status::BufError) if taken == 0 && n == 0 && input_present => {
                // Not to spin on input the inflater will not take.
                return Err(self.fail(io::ErrorKind::InvalidData, "corrupt deflate data (the decoder took none of it)"));
            }
            Ok(_) => {}
            Err(_) => {
                // What it inflated before the corrupt data is handed out first.
                let _ = self.fail(io::ErrorKind::InvalidData, "corrupt deflate data");
            }
        }
        Ok(n)
    }

    /// Inflates into `out`: the bytes given (0: the deflate data ended, or gave nothing yet).
    fn body(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let room = WINDOW - (self.inflate.total_out() % WINDOW as u64) as usize;
        // A match's copy may go on without input; otherwise input is needed.
        let input_present = match self.src.fill_buf()?.is_empty() {
            false => true,
            true if self.full => false,
            true => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "gzip member cut short")),
        };
        if out.len() >= room {
            return self.step(input_present, &mut out[..room]);
        }
        let mut staged = std::mem::take(&mut self.staged);
        staged.resize(WINDOW, 0);
        let r = self.step(input_present, &mut staged[..room]);
        self.staged = staged;
        self.end = r?;
        self.at = 0;
        Ok(self.handout(out))
    }

    /// Staged bytes into `out`.
    fn handout(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.end - self.at);
        out[..n].copy_from_slice(&self.staged[self.at..self.at + n]);
        self.at += n;
        n
    }

    /// Reads the trailer and checks it.
    fn trailer(&mut self) -> io::Result<()> {
        self.field(8)?;
        let f = self.field;
        let (crc, size) = (u32::from_le_bytes([f[0], f[1], f[2], f[3]]), u32::from_le_bytes([f[4], f[5], f[6], f[7]]));
        self.part = Part::Done;
        if crc != self.crc.sum() {
            return Err(
                self.fail(io::ErrorKind::InvalidData, "corrupt: the CRC-32 in its trailer does not match its data")
            );
        }
        if size != self.crc.amount() {
            return Err(
                self.fail(io::ErrorKind::InvalidData, "corrupt: the size in its trailer does not match its data")
            );
        }
        Ok(())
    }
}

impl Read for GzipMember {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at < self.end {
            return Ok(self.handout(out));
        }
        if let Some((kind, msg)) = &self.failed {
            return Err(io::Error::new(*kind, msg.clone()));
        }
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            match self.part {
                Part::Body => {
                    let n = self.body(out)?;
                    if n > 0 {
                        return Ok(n);
                    }
                    if let Some((kind, msg)) = &self.failed {
                        return Err(io::Error::new(*kind, msg.clone()));
                    }
                }
                Part::Trailer => self.trailer()?,
                Part::Done => return Ok(0),
                _ => self.header()?,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Cursor, Write};

    /// `data` one byte a read, a read that is not ready before each.
    struct Trickle(Vec<u8>, usize, bool);

    impl Read for Trickle {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if !std::mem::replace(&mut self.2, true) {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            self.2 = false;
            let n = out.len().min(1).min(self.0.len() - self.1);
            out[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
            self.1 += n;
            Ok(n)
        }
    }

    fn member(src: impl Read + Send + 'static) -> GzipMember {
        GzipMember::new(Source { carry: Vec::new(), inner: BufReader::new(Box::new(src)), consumed: 0 })
    }

    /// Everything `m` gives, `out` bytes a read (not-ready reads retried), and how it ended.
    fn read_all(mut m: GzipMember, out: usize) -> (Vec<u8>, Option<String>) {
        let (mut got, mut buf) = (Vec::new(), vec![0u8; out]);
        loop {
            match m.read(&mut buf) {
                Ok(0) => return (got, None),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return (got, Some(e.to_string())),
            }
        }
    }

    /// 200 KiB of text-like bytes (many windows, back references), deflated.
    fn data() -> Vec<u8> {
        (0..200u32 << 10).map(|i| b"the quick brown fox "[(i as usize * 7 + (i as usize >> 9)) % 20]).collect()
    }

    /// A header with every optional field (RFC 1952 §2.3: FEXTRA, FNAME, FCOMMENT, FHCRC, whose CRC-16
    /// is the low half of the header's CRC-32), then the deflated data and its trailer.
    fn with_every_field(data: &[u8]) -> Vec<u8> {
        let mut h = vec![0x1f, 0x8b, 8, FHCRC | FEXTRA | FNAME | FCOMMENT, 0, 0, 0, 0, 0, 3];
        h.extend([5, 0, b'A', b'B', 1, 0, 9]);
        h.extend(b"name.pcap\0a comment\0");
        let mut c = Crc::new();
        c.update(&h);
        h.extend((c.sum() as u16).to_le_bytes());
        let mut e = flate2::write::DeflateEncoder::new(h, flate2::Compression::default());
        e.write_all(data).unwrap();
        let mut z = e.finish().unwrap();
        let mut c = Crc::new();
        c.update(data);
        z.extend(c.sum().to_le_bytes());
        z.extend((data.len() as u32).to_le_bytes());
        z
    }

    /// Read into buffers of 1 to 7 bytes (each step then inflates into the staging buffer) and of
    /// 64 KiB, whole and a byte at a time with reads not ready between: the data, every field of the
    /// header skipped, its CRC-16 checked.
    #[test]
    fn every_field_and_buffer_size_give_the_data() {
        let data = data();
        let z = with_every_field(&data);
        for out in [1, 2, 3, 7, 64 << 10] {
            assert!(read_all(member(Cursor::new(z.clone())), out) == (data.clone(), None), "{out}");
        }
        assert!(read_all(member(Trickle(z.clone(), 0, false)), 5) == (data.clone(), None));
        // A header CRC that does not match.
        let mut bad = z.clone();
        bad[30] ^= 1;
        let (got, end) = read_all(member(Cursor::new(bad)), 64 << 10);
        assert!(got.is_empty());
        assert_eq!(
            end.as_deref(),
            Some("the gzip member from compressed byte 0: corrupt header: its CRC-16 does not match")
        );
    }

    /// A corrupt block 150 KiB in (22 KiB into a window): buffers of any size, small ones and ones
    /// that end inside a window's room, give the 150 KiB before it, then the error.
    #[test]
    fn small_buffers_lose_nothing_before_corrupt_data() {
        let data = data();
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&data[..150 << 10]).unwrap();
        e.flush().unwrap();
        let at = e.get_ref().len();
        e.write_all(&data[150 << 10..]).unwrap();
        let mut z = e.finish().unwrap();
        // The next block's type made 3 (reserved).
        z[at] |= 0b110;
        for out in [1, 2, 3, 7, 40 << 10, 50 << 10, 64 << 10, 100 << 10] {
            let (got, end) = read_all(member(Cursor::new(z.clone())), out);
            assert!(got == data[..150 << 10], "{out}: {} bytes", got.len());
            assert_eq!(end.as_deref(), Some("the gzip member from compressed byte 0: corrupt deflate data"), "{out}");
        }
    }
}
