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
    /// ClOrdID / token text, as in a [`Pair`](super::Pair) (empty when the order has none).
    pub token: String,
    /// The order's symbol (a Replace's, that of the order it replaces; a Cancel's or Modify's, that of
    /// the order it acts on), without its right padding, or as the wire holds it when it is padding
    /// only; empty when not known (the order not seen, or no longer remembered).
    pub symbol: String,
    /// Why it has no pair.
    pub reason: UnmatchedReason,
    /// Token rule: the sequence read from its token, when one was read. Symbol rule: for
    /// [`UnmatchedReason::BeyondWindow`], the sequence of its symbol's newest tick before it (the one
    /// beyond the window); `None` for the other reasons (no tick of its symbol was there to match).
    pub tick_seq: Option<u64>,
}

/// An alpha field (token, symbol) as text: without its right padding (spaces or NULs), lossy UTF-8;
/// one that is padding only as the wire holds it, so that a blank field is not read as one not
/// known or not carried (the empty text).
pub(super) fn wire_text(field: &[u8]) -> String {
    match crate::proto::trim_alpha(field) {
        [] => String::from_utf8_lossy(field).into_owned(),
        t => String::from_utf8_lossy(t).into_owned(),
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
