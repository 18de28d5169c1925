//! Market-data and order-entry protocol decoders: typed zero-copy views over the bytes of a UDP or
//! TCP payload, in the style of smoltcp's `wire` module.
//!
//! | module        | protocol                                   | carried over            |
//! |---------------|--------------------------------------------|-------------------------|
//! | [`moldudp64`] | Nasdaq MoldUDP64 1.0 (+ sequence tracker)  | UDP (multicast)         |
//! | [`itch`]      | Nasdaq TotalView-ITCH 5.0 (all 23 types)   | MoldUDP64, SoupBinTCP   |
//! | [`soupbin`]   | Nasdaq SoupBinTCP 4.0 / 4.1 (+ framer)     | TCP, both directions    |
//! | [`ouch5`]     | Nasdaq OUCH 5.0 (with TagValue appendages) | SoupBinTCP              |
//! | [`ouch42`]    | Nasdaq OUCH 4.2 (14-byte order tokens)     | SoupBinTCP              |
//!
//! [`market::MoldItchDecoder`] runs ITCH over MoldUDP64 end to end and yields the market-data
//! summaries the correlator keys on; [`OrderSummary`] is the order-entry counterpart.
//!
//! Contract (as smoltcp's): every view has `new_checked`, which runs `check_len`; once it returned
//! `Ok`, no accessor panics, whatever the bytes hold. `new_unchecked` skips the check for callers
//! that did it. Integers are big-endian. Nothing here allocates per message; decoding a message is
//! a length check and a few loads.
//!
//! Errors never abort: a malformed message is a [`ProtoError`] naming what, where (byte offset) and
//! what was needed, for the caller to count (see [`itch::ItchCounters`], [`OrderCounters`],
//! [`market::MoldItchDecoder`]).
//!
//! Message layouts are written once, as the spec tables (field, kind, offset), in a
//! `message_view!` invocation; the kind gives the width. Each view exposes that table as `FIELDS`
//! and the unit tests check it tiles the spec length exactly, which catches offset typos.
//!
//! Not done here: TCP reassembly (the [`soupbin::Framer`] takes in-order stream bytes), MoldUDP64
//! retransmission requests (the [`moldudp64::Packet`] view is for downstream packets), ITCH
//! timestamps to epoch time (they are ns since midnight, Eastern time; the date and offset are the
//! caller's), order book building.

#[macro_use]
mod macros;

pub mod itch;
pub mod market;
pub mod moldudp64;
pub mod ouch42;
pub mod ouch5;
pub mod soupbin;

/// A protocol unit that could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    /// The buffer ends before the unit does.
    #[error("{what} at byte {offset}: truncated, need {need} bytes, have {have}")]
    Truncated {
        /// The unit being read (e.g. "ITCH 'A' Add Order").
        what: &'static str,
        /// Byte offset of the unit in the buffer the caller handed over.
        offset: usize,
        /// Bytes the unit needs.
        need: usize,
        /// Bytes available from `offset`.
        have: usize,
    },
    /// A field holds a value the format forbids.
    #[error("{what} at byte {offset}: {reason}")]
    Malformed {
        /// The unit being read.
        what: &'static str,
        /// Byte offset of the bad field in the buffer the caller handed over.
        offset: usize,
        /// Why the value is impossible.
        reason: &'static str,
    },
}

/// Result of protocol decoding.
pub type Result<T> = core::result::Result<T, ProtoError>;

#[inline]
pub(crate) fn need(what: &'static str, buf: &[u8], len: usize) -> Result<()> {
    if buf.len() < len { Err(ProtoError::Truncated { what, offset: 0, need: len, have: buf.len() }) } else { Ok(()) }
}

/// Big-endian reads at fixed offsets. Callers guarantee the range is inside `b` (via `check_len`).
pub(crate) mod read {
    #[inline]
    pub fn u8(b: &[u8], at: usize) -> u8 {
        b[at]
    }
    #[inline]
    pub fn u16(b: &[u8], at: usize) -> u16 {
        u16::from_be_bytes([b[at], b[at + 1]])
    }
    #[inline]
    pub fn u32(b: &[u8], at: usize) -> u32 {
        u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
    }
    #[inline]
    pub fn i32(b: &[u8], at: usize) -> i32 {
        i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
    }
    /// 48-bit unsigned (ITCH timestamps).
    #[inline]
    pub fn u48(b: &[u8], at: usize) -> u64 {
        u64::from_be_bytes([0, 0, b[at], b[at + 1], b[at + 2], b[at + 3], b[at + 4], b[at + 5]])
    }
    #[inline]
    pub fn u64(b: &[u8], at: usize) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[at..at + 8]);
        u64::from_be_bytes(a)
    }
    #[inline]
    pub fn bytes<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
        let mut a = [0u8; N];
        a.copy_from_slice(&b[at..at + N]);
        a
    }
}

/// An 8-byte stock symbol, left-justified and right-padded with spaces (ITCH "Stock", OUCH "Symbol").
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Symbol(pub [u8; 8]);

impl Symbol {
    /// Builds a symbol from text, right-padding with spaces (longer text is cut at 8 bytes).
    pub fn new(s: &str) -> Symbol {
        let mut a = [b' '; 8];
        for (d, c) in a.iter_mut().zip(s.bytes()) {
            *d = c;
        }
        Symbol(a)
    }
    /// The symbol without its right padding (spaces or NULs).
    pub fn trimmed(&self) -> &[u8] {
        let end = self.0.iter().rposition(|&c| c != b' ' && c != 0).map_or(0, |i| i + 1);
        &self.0[..end]
    }
    /// The trimmed symbol as text, or `None` when it is not valid UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        core::str::from_utf8(self.trimmed()).ok()
    }
}

impl core::fmt::Debug for Symbol {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Symbol({:?})", String::from_utf8_lossy(self.trimmed()))
    }
}

impl core::fmt::Display for Symbol {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.trimmed()))
    }
}

enum_with_unknown! {
    /// Buy/sell indicator (ITCH "Buy/Sell Indicator", OUCH "Side").
    pub enum Side(u8) {
        /// 'B'.
        Buy = b'B',
        /// 'S'.
        Sell = b'S',
        /// 'T' (OUCH only).
        SellShort = b'T',
        /// 'E' (OUCH only).
        SellShortExempt = b'E',
    }
}

/// Direction of an order-entry message, in the specs' words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OrderDir {
    /// Client to exchange (OUCH "inbound").
    Inbound,
    /// Exchange to client (OUCH "outbound").
    Outbound,
}

/// The client's identifier of an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OrderId {
    /// OUCH 5.0 UserRefNum.
    UserRefNum(u32),
    /// OUCH 4.x Order Token (14 alpha).
    Token([u8; 14]),
}

/// The fields of an order-entry message the correlator keys on (the `Repr` level), for OUCH 5.0
/// and 4.2 alike. Fields the message does not carry are `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderSummary {
    /// Direction.
    pub dir: OrderDir,
    /// Message type byte (meaning depends on `dir`).
    pub msg_type: u8,
    /// The order the message is about (for a replace: the replacement).
    pub id: Option<OrderId>,
    /// For a replace: the order being replaced.
    pub orig_id: Option<OrderId>,
    /// ClOrdID (OUCH 5.0).
    pub cl_ord_id: Option<[u8; 14]>,
    /// Symbol.
    pub symbol: Option<Symbol>,
    /// Side.
    pub side: Option<Side>,
    /// Quantity: ordered, accepted, executed, canceled (as the message defines it).
    pub qty: Option<u32>,
    /// Price, 4 implied decimals.
    pub price: Option<u64>,
    /// Exchange timestamp, ns since midnight (outbound messages).
    pub timestamp_ns: Option<u64>,
    /// Exchange Order Reference Number (links the order to ITCH).
    pub order_ref: Option<u64>,
    /// Match Number (executions, breaks).
    pub match_number: Option<u64>,
    /// Order State of an Accepted or Replaced: b'L' live, b'D' dead (accepted and at once canceled:
    /// nothing more comes for the order).
    pub order_state: Option<u8>,
}

impl OrderSummary {
    pub(crate) fn new(dir: OrderDir, msg_type: u8) -> Self {
        OrderSummary {
            dir,
            msg_type,
            id: None,
            orig_id: None,
            cl_ord_id: None,
            symbol: None,
            side: None,
            qty: None,
            price: None,
            timestamp_ns: None,
            order_ref: None,
            match_number: None,
            order_state: None,
        }
    }
}

/// Per-direction, per-type counters for order-entry messages: a bad message is a counter, not an
/// error (unknown types and truncated messages are counted, the last error kept for the report).
#[derive(Debug, Clone)]
pub struct OrderCounters {
    /// Decoded messages by `[direction][type byte]` (index 0 inbound, 1 outbound).
    pub by_type: [[u64; 256]; 2],
    /// Messages of a type unknown in their direction.
    pub unknown: u64,
    /// Messages shorter than their type requires (or empty).
    pub truncated: u64,
    /// The last decoding error.
    pub last_error: Option<ProtoError>,
}

impl Default for OrderCounters {
    fn default() -> Self {
        OrderCounters { by_type: [[0; 256]; 2], unknown: 0, truncated: 0, last_error: None }
    }
}

impl OrderCounters {
    /// Counts the outcome of `ouch5::summarize` / `ouch42::summarize` for a message of type
    /// `msg_type` (its first byte), and passes the summary through.
    pub fn record(&mut self, dir: OrderDir, msg_type: u8, r: Result<Option<OrderSummary>>) -> Option<OrderSummary> {
        match r {
            Ok(Some(s)) => {
                self.by_type[dir as usize][usize::from(msg_type)] += 1;
                Some(s)
            }
            Ok(None) => {
                self.unknown += 1;
                None
            }
            Err(e) => {
                self.truncated += 1;
                self.last_error = Some(e);
                None
            }
        }
    }
    /// Decoded messages of one type in one direction.
    pub fn count(&self, dir: OrderDir, msg_type: u8) -> u64 {
        self.by_type[dir as usize][usize::from(msg_type)]
    }
}

/// Trims right padding (spaces, NULs) from a fixed-width alpha field.
pub fn trim_alpha(a: &[u8]) -> &[u8] {
    let end = a.iter().rposition(|&c| c != b' ' && c != 0).map_or(0, |i| i + 1);
    &a[..end]
}

/// Parses an ASCII decimal number padded with spaces on either side (SoupBinTCP sequence numbers).
/// `None` for an all-blank field, a non-digit, or overflow.
pub fn parse_ascii_u64(a: &[u8]) -> Option<u64> {
    let start = a.iter().position(|&c| c != b' ')?;
    let end = a.iter().rposition(|&c| c != b' ').map_or(0, |i| i + 1);
    let mut v: u64 = 0;
    for &c in &a[start..end] {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

/// Test helpers: a byte builder that writes fields in spec order, so expected bytes are built by
/// hand from the spec tables rather than by the code under test.
#[cfg(test)]
pub(crate) mod testutil {
    /// Big-endian byte builder.
    #[derive(Default)]
    pub struct B(pub Vec<u8>);

    impl B {
        pub fn new() -> B {
            B(Vec::new())
        }
        pub fn c(mut self, c: u8) -> B {
            self.0.push(c);
            self
        }
        pub fn u16(mut self, v: u16) -> B {
            self.0.extend_from_slice(&v.to_be_bytes());
            self
        }
        pub fn u32(mut self, v: u32) -> B {
            self.0.extend_from_slice(&v.to_be_bytes());
            self
        }
        pub fn u48(mut self, v: u64) -> B {
            self.0.extend_from_slice(&v.to_be_bytes()[2..]);
            self
        }
        pub fn u64(mut self, v: u64) -> B {
            self.0.extend_from_slice(&v.to_be_bytes());
            self
        }
        /// ASCII text right-padded with spaces to `width`.
        pub fn s(mut self, text: &str, width: usize) -> B {
            assert!(text.len() <= width);
            self.0.extend_from_slice(text.as_bytes());
            self.0.resize(self.0.len() + width - text.len(), b' ');
            self
        }
        pub fn raw(mut self, b: &[u8]) -> B {
            self.0.extend_from_slice(b);
            self
        }
        pub fn done(self) -> Vec<u8> {
            self.0
        }
    }

    /// Asserts a spec field table tiles `0..len` with no gap or overlap.
    pub fn assert_tiles(name: &str, fields: &[(&str, usize, usize)], len: usize) {
        let mut at = 0;
        for &(f, off, w) in fields {
            assert_eq!(off, at, "{name}.{f}: offset {off}, previous field ends at {at}");
            at = off + w;
        }
        assert_eq!(at, len, "{name}: fields end at {at}, spec length {len}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbol_trim_and_display() {
        let s = Symbol(*b"AAPL    ");
        assert_eq!(s.trimmed(), b"AAPL");
        assert_eq!(s.as_str(), Some("AAPL"));
        assert_eq!(s.to_string(), "AAPL");
        assert_eq!(Symbol::new("MSFT"), Symbol(*b"MSFT    "));
        assert_eq!(Symbol(*b"        ").trimmed(), b"");
        assert_eq!(Symbol(*b"BRK A   ").as_str(), Some("BRK A"));
    }

    #[test]
    fn ascii_numbers() {
        assert_eq!(parse_ascii_u64(b"                   1"), Some(1));
        assert_eq!(parse_ascii_u64(b"484311999           "), Some(484_311_999));
        assert_eq!(parse_ascii_u64(b"      "), None);
        assert_eq!(parse_ascii_u64(b" 1 2"), None);
        assert_eq!(parse_ascii_u64(b"99999999999999999999"), None);
    }

    #[test]
    fn order_counters() {
        let mut c = OrderCounters::default();
        let enter = testutil::B::new().c(b'X').u32(7).u32(0).done();
        assert!(c.record(OrderDir::Inbound, b'X', ouch5::summarize(OrderDir::Inbound, &enter)).is_some());
        assert!(c.record(OrderDir::Inbound, b'X', ouch5::summarize(OrderDir::Inbound, &enter[..5])).is_none());
        assert!(c.record(OrderDir::Outbound, b'~', ouch5::summarize(OrderDir::Outbound, b"~")).is_none());
        assert_eq!((c.count(OrderDir::Inbound, b'X'), c.count(OrderDir::Outbound, b'X')), (1, 0));
        assert_eq!((c.unknown, c.truncated), (1, 1));
        assert_eq!(
            c.last_error,
            Some(ProtoError::Truncated { what: "OUCH 5.0 'X' Cancel Order", offset: 0, need: 9, have: 5 })
        );
    }

    #[test]
    fn side_round_trip() {
        assert_eq!(Side::from(b'B'), Side::Buy);
        assert_eq!(Side::from(b'E'), Side::SellShortExempt);
        assert_eq!(Side::from(b'x'), Side::Unknown(b'x'));
        assert_eq!(u8::from(Side::Unknown(b'x')), b'x');
        assert_eq!(u8::from(Side::SellShort), b'T');
    }
}
