//! The orders that end without a pair, each with why ([`Unmatched`], queued for
//! [`Analyzer::drain_unmatched`] only when [`AnalyzeConfig::keep_unmatched`](super::AnalyzeConfig::keep_unmatched)
//! asks: `--unmatched`).

use super::Analyzer;
use super::orders::OrderMsg;
use crate::proto::{OrderId, OrderSummary};

/// Why an order has no pair. Each is counted (the rows of one reason are as many as its counter says,
/// [`UnmatchedReason::counted_in`]); an order has the first that applies, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UnmatchedReason {
    /// A Cancel or Modify: it acts on an order entered before and carries no trigger of its own, so
    /// neither rule correlates it (`not_correlated`).
    NotCorrelated,
    /// Token rule: the order carries no token, or the rule's regex reads no sequence from it
    /// (`no_token`).
    NoToken,
    /// Token rule: more than one MoldUDP64 session holds the sequence the token names (`ambiguous`).
    Ambiguous,
    /// Symbol rule: its symbol's newest tick before it came more than the window before
    /// (`unmatched_beyond_window`).
    BeyondWindow,
    /// Token rule: a feed brought the trigger, older than `--tick-retention` before the order
    /// (`unmatched_beyond_retention`).
    BeyondRetention,
    /// It stopped waiting (the reorder allowance, or its trigger) before its time, as many orders
    /// waiting as may, and nothing matched it then (`unmatched_released_for_room`).
    ReleasedForRoom,
    /// Symbol rule: the order's symbol is not known (a Replace of an order not seen, or forgotten)
    /// (`unmatched_without_symbol`).
    NoSymbol,
    /// None of the above: under the token rule no copy of the sequence was found while the order
    /// waited (lost on every feed, outside what the feeds brought, gone from the tick index for room or
    /// at a restart); under the symbol rule no tick of its symbol was kept before it (the rest of
    /// `unmatched_orders`).
    TriggerNotSeen,
}

impl UnmatchedReason {
    /// Every reason, in the order they are looked at.
    pub const ALL: [UnmatchedReason; 8] = [
        UnmatchedReason::NotCorrelated,
        UnmatchedReason::NoToken,
        UnmatchedReason::Ambiguous,
        UnmatchedReason::BeyondWindow,
        UnmatchedReason::BeyondRetention,
        UnmatchedReason::ReleasedForRoom,
        UnmatchedReason::NoSymbol,
        UnmatchedReason::TriggerNotSeen,
    ];

    /// The word `--unmatched` writes: stable, lower case.
    pub fn as_str(self) -> &'static str {
        match self {
            UnmatchedReason::NotCorrelated => "not_correlated",
            UnmatchedReason::NoToken => "no_token",
            UnmatchedReason::Ambiguous => "ambiguous",
            UnmatchedReason::BeyondWindow => "beyond_window",
            UnmatchedReason::BeyondRetention => "beyond_retention",
            UnmatchedReason::ReleasedForRoom => "released_for_room",
            UnmatchedReason::NoSymbol => "no_symbol",
            UnmatchedReason::TriggerNotSeen => "trigger_not_seen",
        }
    }

    /// The counter of [`Counters`](super::Counters) that counts the orders of this reason; `None` for
    /// [`UnmatchedReason::TriggerNotSeen`], which is `unmatched_orders` less the other reasons among it.
    pub fn counted_in(self) -> Option<&'static str> {
        match self {
            UnmatchedReason::NotCorrelated => Some("not_correlated"),
            UnmatchedReason::NoToken => Some("no_token"),
            UnmatchedReason::Ambiguous => Some("ambiguous"),
            UnmatchedReason::BeyondWindow => Some("unmatched_beyond_window"),
            UnmatchedReason::BeyondRetention => Some("unmatched_beyond_retention"),
            UnmatchedReason::ReleasedForRoom => Some("unmatched_released_for_room"),
            UnmatchedReason::NoSymbol => Some("unmatched_without_symbol"),
            UnmatchedReason::TriggerNotSeen => None,
        }
    }
}

impl std::fmt::Display for UnmatchedReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An order that ended without a pair: every order is a [`Pair`](super::Pair) or one of these, once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmatched {
    /// Index of the frame carrying the order's first byte (0-based over all inputs).
    pub order_frame: u64,
    /// Capture time of that frame.
    pub order_time_ns: i64,
    /// The order session, as the report names it (`tcp:HOST:PORT@ouch50`).
    pub session: String,
    /// Order identifier (UserRefNum, or token), as text, as in a [`Pair`](super::Pair).
    pub order_id: String,
    /// ClOrdID / token text, as in a [`Pair`](super::Pair) (empty when the order has none): without its
    /// right padding, or whole when it is padding only; a backslash written `\\`, a byte outside
    /// printable ASCII `\xhh`.
    pub token: String,
    /// The order's symbol (a Replace's, that of the order it replaces; a Cancel's or Modify's, that of
    /// the order it acts on), as `token` is written; empty when not known (the order not seen, or no
    /// longer remembered).
    pub symbol: String,
    /// Why it has no pair.
    pub reason: UnmatchedReason,
    /// Token rule: the sequence read from its token, when one was read. Symbol rule: for
    /// [`UnmatchedReason::BeyondWindow`], the sequence of its symbol's newest tick before it (the one
    /// beyond the window); `None` for the other reasons (no tick of its symbol was there to match).
    pub tick_seq: Option<u64>,
}

/// An alpha field (token, symbol) as text: without its right padding (spaces or NULs); one that is
/// padding only whole, so that a blank field is not read as one not known or not carried (the empty
/// text). Its bytes as [`escaped`] writes them: nothing lost, and nothing a CSV reader stops at.
pub(super) fn wire_text(field: &[u8]) -> String {
    match crate::proto::trim_alpha(field) {
        [] => escaped(field),
        t => escaped(t),
    }
}

/// Bytes as printable ASCII, losslessly: printable ASCII (0x20 to 0x7E) as itself but the backslash,
/// written `\\`; any other byte (a NUL, a control character, a byte of 0x80 or above) as `\xhh`, two
/// lower-case hex digits. A NUL is `\x00`, not `\0`: an octal escape would take digits after it
/// (`\012` is a line feed to Python's `codecs.escape_decode`), where `\x` takes exactly two. Python's
/// `codecs.escape_decode` and a Rust byte string's rules read the bytes back.
pub(super) fn escaped(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out
}

/// A field as the wire holds it, padding included, for a note: [`escaped`], in double quotes, a
/// quote inside written `\"` (so that trailing spaces show, and the quotes cannot be mistaken).
pub(super) fn quoted(field: &[u8]) -> String {
    format!("\"{}\"", escaped(field).replace('"', "\\\""))
}

/// The `--by symbol` dimension of `symbol`: `symbol:` and its text as `--unmatched` writes it, without
/// its right padding; a symbol blank on the wire (spaces or NULs only) is `symbol:(blank)`, which
/// reads as blank where `symbol:` followed by nothing would read as a row name left out. A symbol's
/// leading `(` is written `\x28`: an order's symbol is any 8 bytes (`(blank)`, `(others)`), and its
/// row must not be taken for one of no one symbol (`(blank)`, `(others)`, `(unknown)`).
pub(super) fn symbol_dim(symbol: &crate::proto::Symbol) -> String {
    match symbol.trimmed() {
        [] => super::limits::BLANK_SYMBOL.to_owned(),
        [b'(', rest @ ..] => format!(r"symbol:\x28{}", escaped(rest)),
        t => format!("symbol:{}", escaped(t)),
    }
}

/// [`Pair::order_id`](super::Pair::order_id) of an order (empty when it has none).
pub(super) fn order_id_text(s: &OrderSummary) -> String {
    match s.id {
        Some(OrderId::UserRefNum(n)) => n.to_string(),
        Some(OrderId::Token(tok)) => wire_text(&tok),
        None => String::new(),
    }
}

/// [`Pair::token`](super::Pair::token) of an order (empty when it has none).
pub(super) fn token_text(s: &OrderSummary) -> String {
    super::correlate::token_wire(s).map(wire_text).unwrap_or_default()
}

impl Analyzer {
    /// Order `m` of connection `ci` ends without a pair, for `reason` (`seq`: the sequence its token
    /// named): queued when `--unmatched` asks. The caller counts it.
    #[cold]
    #[inline(never)]
    pub(super) fn unmatched_row(&mut self, ci: usize, m: &OrderMsg, reason: UnmatchedReason, seq: Option<u64>) {
        if !self.cfg.keep_unmatched {
            return;
        }
        let s = &m.summary;
        // A Cancel or Modify names only its order (by UserRefNum, or token): the order's symbol, when
        // still remembered.
        let symbol = match (s.symbol, s.id) {
            (None, Some(id)) if reason == UnmatchedReason::NotCorrelated => {
                let owner = self.owner(ci);
                self.accounts.symbol_of(owner, id)
            }
            (symbol, _) => symbol,
        };
        self.unmatched.push(Unmatched {
            order_frame: m.first.index,
            order_time_ns: m.first.time_ns,
            session: self.sessions[self.conn_list[ci].session].spec.to_string(),
            order_id: order_id_text(s),
            token: token_text(s),
            symbol: symbol.map(|y| wire_text(&y.0)).unwrap_or_default(),
            reason,
            tick_seq: seq,
        });
        self.output = true;
    }
}

#[cfg(test)]
mod tests {
    use super::UnmatchedReason::{self, *};
    use super::{quoted, symbol_dim, wire_text};
    use crate::proto::Symbol;

    /// A field's text is its bytes, printable: right padding (spaces, NULs) trimmed; padding only kept
    /// whole; a backslash doubled; a NUL, a tab, a byte above 0x7E as `\xhh` (a NUL before digits
    /// too, where `\0` would read as an octal escape of them). Expected values written by hand.
    #[test]
    fn a_field_is_written_as_printable_text_that_loses_nothing() {
        let cases: [(&[u8], &str); 10] = [
            (b"T1            ", "T1"),
            (b"T1\0\0\0\0\0\0\0\0\0\0\0\0", "T1"),
            (b"        ", "        "),
            (&[0; 8], r"\x00\x00\x00\x00\x00\x00\x00\x00"),
            (b"AB\0CD         ", r"AB\x00CD"),
            (b"\x0012        ", r"\x0012"),
            (br"A\B          ", r"A\\B"),
            (br"\x41          ", r"\\x41"),
            (b"A\tB\xe9\x7f     ", r"A\x09B\xe9\x7f"),
            (b"A,B\"C        ", "A,B\"C"),
        ];
        for (field, want) in cases {
            assert_eq!(wire_text(field), want, "{field:?}");
        }
    }

    /// A note quotes a field whole, padding included, escaped as above, a quote inside as `\"`.
    #[test]
    fn a_note_quotes_a_field_as_the_wire_holds_it() {
        assert_eq!(quoted(b"T1            "), r#""T1            ""#);
        assert_eq!(quoted(b"A\"B\0"), r#""A\"B\x00""#);
        assert_eq!(quoted(b""), r#""""#);
    }

    /// `--by symbol` names a blank symbol (spaces or NULs) `symbol:(blank)`, a symbol otherwise by its
    /// text without padding, escaped; a leading `(` as `\x28`, so that a symbol reading `(blank)` or
    /// `(others)` is not taken for those rows (a `(` further on is itself).
    #[test]
    fn a_blank_symbol_has_a_row_that_says_so() {
        let dim = |b: &[u8; 8]| symbol_dim(&Symbol(*b));
        assert_eq!(dim(b"        "), "symbol:(blank)");
        assert_eq!(dim(&[0; 8]), "symbol:(blank)");
        assert_eq!(dim(b"\0 \0 \0 \0 "), "symbol:(blank)");
        assert_eq!(dim(b"AAPL    "), "symbol:AAPL");
        assert_eq!(dim(b"A\x01B\\\0\0\0\0"), r"symbol:A\x01B\\");
        assert_eq!(dim(b"(blank) "), r"symbol:\x28blank)");
        assert_eq!(dim(b"(others)"), r"symbol:\x28others)");
        assert_eq!(dim(b"(\0A     "), r"symbol:\x28\x00A");
        assert_eq!(dim(b"A(B)    "), "symbol:A(B)");
    }

    /// `ALL` holds every reason once, in the order they are looked at (this match, without a wildcard,
    /// stops compiling when a reason is added: place it here and in `ALL`).
    #[test]
    fn all_holds_every_reason_once_in_order() {
        let place = |r: UnmatchedReason| match r {
            NotCorrelated => 0,
            NoToken => 1,
            Ambiguous => 2,
            BeyondWindow => 3,
            BeyondRetention => 4,
            ReleasedForRoom => 5,
            NoSymbol => 6,
            TriggerNotSeen => 7,
        };
        assert_eq!(UnmatchedReason::ALL.map(place), [0, 1, 2, 3, 4, 5, 6, 7]);
    }
}
