//! Nasdaq OUCH 4.2 order entry, carried in SoupBinTCP data packets.
//!
//! No spec file is in `specs/`: the layouts are those of the OUCH 4.2 PDF as transcribed by
//! Wireshark's `packet-ouch.c` (OUCH 4.x, with its 4.2 lengths: Enter Order 49, Accepted 66,
//! Replaced 80) and the `i01` OUCH42 `Messages.hpp` structs. Differences from 5.0: orders are
//! identified by a 14-byte alpha Order Token, prices are `u32` (4 implied decimals), Time In Force
//! is a `u32` (seconds; 0 IOC, 99998 market hours, 99999 system hours), no appendages, and the
//! 4.x-only types exist: F Trade Correction, G Executed with Reference Price, K Price Correction. Outbound messages start with
//!
//! ```text
//! | type (1) | timestamp (u64, ns since midnight) | order token (14) | ...
//! ```
//!
//! As in 5.0, 'U' and 'M' mean different messages per direction: use [`parse_inbound`] or
//! [`parse_outbound`]. The 4.0/4.1 variants without the trailing Customer Type / BBO Weight
//! Indicator byte are shorter than the 4.2 lengths and are reported as truncated.

use super::{OrderDir, OrderId, OrderSummary, Result};

enum_with_unknown! {
    /// Inbound (client to exchange) message type.
    pub enum InboundType(u8) {
        /// 'O' Enter Order.
        EnterOrder = b'O',
        /// 'U' Replace Order.
        ReplaceOrder = b'U',
        /// 'X' Cancel Order.
        CancelOrder = b'X',
        /// 'M' Modify Order.
        ModifyOrder = b'M',
    }
}

enum_with_unknown! {
    /// Outbound (exchange to client) message type.
    pub enum OutboundType(u8) {
        /// 'S' System Event.
        SystemEvent = b'S',
        /// 'A' Accepted.
        Accepted = b'A',
        /// 'U' Replaced.
        Replaced = b'U',
        /// 'C' Canceled.
        Canceled = b'C',
        /// 'D' AIQ Canceled.
        AiqCanceled = b'D',
        /// 'E' Executed.
        Executed = b'E',
        /// 'B' Broken Trade.
        BrokenTrade = b'B',
        /// 'F' Trade Correction.
        TradeCorrection = b'F',
        /// 'G' Executed with Reference Price.
        ExecutedWithReferencePrice = b'G',
        /// 'K' Price Correction.
        PriceCorrection = b'K',
        /// 'J' Rejected.
        Rejected = b'J',
        /// 'P' Cancel Pending.
        CancelPending = b'P',
        /// 'I' Cancel Reject.
        CancelReject = b'I',
        /// 'T' Order Priority Update.
        OrderPriorityUpdate = b'T',
        /// 'M' Order Modified.
        OrderModified = b'M',
    }
}

message_view! {
    /// 'O' Enter Order (49 bytes).
    pub struct EnterOrder, what "OUCH 4.2 'O' Enter Order", len 49;
    /// Type.
    message_type: char @ 0,
    /// Order Token.
    order_token: a14 @ 1,
    /// Buy/Sell Indicator.
    side: side @ 15,
    /// Shares.
    shares: u32 @ 16,
    /// Stock.
    stock: symbol @ 20,
    /// Price (4 implied decimals).
    price: u32 @ 28,
    /// Time In Force (seconds; 0 IOC, 99998 market hours, 99999 system hours).
    time_in_force: u32 @ 32,
    /// Firm.
    firm: a4 @ 36,
    /// Display.
    display: char @ 40,
    /// Capacity.
    capacity: char @ 41,
    /// Intermarket Sweep Eligibility.
    intermarket_sweep_eligibility: char @ 42,
    /// Minimum Quantity.
    minimum_quantity: u32 @ 43,
    /// Cross Type.
    cross_type: char @ 47,
    /// Customer Type.
    customer_type: char @ 48,
}

message_view! {
    /// 'U' Replace Order (47 bytes).
    pub struct ReplaceOrder, what "OUCH 4.2 'U' Replace Order", len 47;
    /// Type.
    message_type: char @ 0,
    /// Existing Order Token.
    existing_order_token: a14 @ 1,
    /// Replacement Order Token.
    replacement_order_token: a14 @ 15,
    /// Shares.
    shares: u32 @ 29,
    /// Price.
    price: u32 @ 33,
    /// Time In Force.
    time_in_force: u32 @ 37,
    /// Display.
    display: char @ 41,
    /// Intermarket Sweep Eligibility.
    intermarket_sweep_eligibility: char @ 42,
    /// Minimum Quantity.
    minimum_quantity: u32 @ 43,
}

message_view! {
    /// 'X' Cancel Order (19 bytes).
    pub struct CancelOrder, what "OUCH 4.2 'X' Cancel Order", len 19;
    /// Type.
    message_type: char @ 0,
    /// Order Token.
    order_token: a14 @ 1,
    /// New intended order size (0 cancels the rest).
    shares: u32 @ 15,
}

message_view! {
    /// 'M' Modify Order (20 bytes).
    pub struct ModifyOrder, what "OUCH 4.2 'M' Modify Order", len 20;
    /// Type.
    message_type: char @ 0,
    /// Order Token.
    order_token: a14 @ 1,
    /// Buy/Sell Indicator.
    side: side @ 15,
    /// Shares.
    shares: u32 @ 16,
}

message_view! {
    /// 'S' System Event (10 bytes).
    pub struct SystemEvent, what "OUCH 4.2 'S' System Event", len 10;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// Event Code: 'S' start of day, 'E' end of day.
    event_code: char @ 9,
}

message_view! {
    /// 'A' Accepted (66 bytes).
    pub struct Accepted, what "OUCH 4.2 'A' Accepted", len 66;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// Order Token.
    order_token: a14 @ 9,
    /// Buy/Sell Indicator.
    side: side @ 23,
    /// Shares.
    shares: u32 @ 24,
    /// Stock.
    stock: symbol @ 28,
    /// Price.
    price: u32 @ 36,
    /// Time In Force.
    time_in_force: u32 @ 40,
    /// Firm.
    firm: a4 @ 44,
    /// Display.
    display: char @ 48,
    /// Order Reference Number.
    order_reference_number: u64 @ 49,
    /// Capacity.
    capacity: char @ 57,
    /// Intermarket Sweep Eligibility.
    intermarket_sweep_eligibility: char @ 58,
    /// Minimum Quantity.
    minimum_quantity: u32 @ 59,
    /// Cross Type.
    cross_type: char @ 63,
    /// Order State: 'L' live, 'D' dead.
    order_state: char @ 64,
    /// BBO Weight Indicator.
    bbo_weight_indicator: char @ 65,
}

message_view! {
    /// 'U' Replaced (80 bytes).
    pub struct Replaced, what "OUCH 4.2 'U' Replaced", len 80;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// Replacement Order Token.
    replacement_order_token: a14 @ 9,
    /// Buy/Sell Indicator.
    side: side @ 23,
    /// Shares.
    shares: u32 @ 24,
    /// Stock.
    stock: symbol @ 28,
    /// Price.
    price: u32 @ 36,
    /// Time In Force.
    time_in_force: u32 @ 40,
    /// Firm.
    firm: a4 @ 44,
    /// Display.
    display: char @ 48,
    /// Order Reference Number.
    order_reference_number: u64 @ 49,
    /// Capacity.
    capacity: char @ 57,
    /// Intermarket Sweep Eligibility.
    intermarket_sweep_eligibility: char @ 58,
    /// Minimum Quantity.
    minimum_quantity: u32 @ 59,
    /// Cross Type.
    cross_type: char @ 63,
    /// Order State.
    order_state: char @ 64,
    /// Previous Order Token.
    previous_order_token: a14 @ 65,
    /// BBO Weight Indicator.
    bbo_weight_indicator: char @ 79,
}

message_view! {
    /// 'C' Canceled (28 bytes).
    pub struct Canceled, what "OUCH 4.2 'C' Canceled", len 28;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// Order Token.
    order_token: a14 @ 9,
    /// Decrement Shares.
    decrement_shares: u32 @ 23,
    /// Reason.
    reason: char @ 27,
}

message_view! {
    /// 'D' AIQ Canceled (37 bytes).
    pub struct AiqCanceled, what "OUCH 4.2 'D' AIQ Canceled", len 37;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// Order Token.
    order_token: a14 @ 9,
    /// Decrement Shares.
    decrement_shares: u32 @ 23,
    /// Reason (always 'Q').
    reason: char @ 27,
    /// Quantity Prevented from Trading.
    quantity_prevented_from_trading: u32 @ 28,
    /// Execution Price.
    execution_price: u32 @ 32,
    /// Liquidity Flag.
    liquidity_flag: char @ 36,
}

message_view! {
    /// 'E' Executed (40 bytes).
    pub struct Executed, what "OUCH 4.2 'E' Executed", len 40;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// Order Token.
    order_token: a14 @ 9,
    /// Executed Shares.
    executed_shares: u32 @ 23,
    /// Execution Price.
    execution_price: u32 @ 27,
    /// Liquidity Flag.
    liquidity_flag: char @ 31,
    /// Match Number.
    match_number: u64 @ 32,
}

message_view! {
    /// 'B' Broken Trade (32 bytes).
    pub struct BrokenTrade, what "OUCH 4.2 'B' Broken Trade", len 32;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// Order Token.
    order_token: a14 @ 9,
    /// Match Number.
    match_number: u64 @ 23,
    /// Reason.
    reason: char @ 31,
}

message_view! {
    /// 'F' Trade Correction (41 bytes).
    pub struct TradeCorrection, what "OUCH 4.2 'F' Trade Correction", len 41;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// Order Token.
    order_token: a14 @ 9,
    /// Executed Shares (corrected).
    executed_shares: u32 @ 23,
    /// Execution Price (corrected).
    execution_price: u32 @ 27,
    /// Liquidity Flag.
    liquidity_flag: char @ 31,
    /// Match Number of the corrected execution.
    match_number: u64 @ 32,
    /// Reason.
    reason: char @ 40,
}

message_view! {
    /// 'G' Executed with Reference Price (45 bytes).
    pub struct ExecutedWithReferencePrice, what "OUCH 4.2 'G' Executed with Reference Price", len 45;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// Order Token.
    order_token: a14 @ 9,
    /// Executed Shares.
    executed_shares: u32 @ 23,
    /// Execution Price.
    execution_price: u32 @ 27,
    /// Liquidity Flag.
    liquidity_flag: char @ 31,
    /// Match Number.
    match_number: u64 @ 32,
    /// Reference Price.
    reference_price: u32 @ 40,
    /// Reference Price Type.
    reference_price_type: char @ 44,
}

message_view! {
    /// 'K' Price Correction (36 bytes).
    pub struct PriceCorrection, what "OUCH 4.2 'K' Price Correction", len 36;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// Order Token.
    order_token: a14 @ 9,
    /// Match Number.
    match_number: u64 @ 23,
    /// New Execution Price.
    new_execution_price: u32 @ 31,
    /// Reason.
    reason: char @ 35,
}

message_view! {
    /// 'J' Rejected (24 bytes).
    pub struct Rejected, what "OUCH 4.2 'J' Rejected", len 24;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// Order Token.
    order_token: a14 @ 9,
    /// Reason (alpha code).
    reason: char @ 23,
}

message_view! {
    /// 'P' Cancel Pending (23 bytes).
    pub struct CancelPending, what "OUCH 4.2 'P' Cancel Pending", len 23;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// Order Token.
    order_token: a14 @ 9,
}

message_view! {
    /// 'I' Cancel Reject (23 bytes).
    pub struct CancelReject, what "OUCH 4.2 'I' Cancel Reject", len 23;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// Order Token.
    order_token: a14 @ 9,
}

message_view! {
    /// 'T' Order Priority Update (36 bytes).
    pub struct OrderPriorityUpdate, what "OUCH 4.2 'T' Order Priority Update", len 36;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// Order Token.
    order_token: a14 @ 9,
    /// Price.
    price: u32 @ 23,
    /// Display.
    display: char @ 27,
    /// New Order Reference Number.
    order_reference_number: u64 @ 28,
}

message_view! {
    /// 'M' Order Modified (28 bytes).
    pub struct OrderModified, what "OUCH 4.2 'M' Order Modified", len 28;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// Order Token.
    order_token: a14 @ 9,
    /// Buy/Sell Indicator.
    side: side @ 23,
    /// Shares.
    shares: u32 @ 24,
}

ouch_direction!(
    /// An inbound (client to exchange) OUCH 4.2 message.
    Inbound,
    InboundType,
    parse_inbound,
    "OUCH 4.2 inbound message",
    [EnterOrder, ReplaceOrder, CancelOrder, ModifyOrder]
);

ouch_direction!(
    /// An outbound (exchange to client) OUCH 4.2 message.
    Outbound,
    OutboundType,
    parse_outbound,
    "OUCH 4.2 outbound message",
    [
        SystemEvent,
        Accepted,
        Replaced,
        Canceled,
        AiqCanceled,
        Executed,
        BrokenTrade,
        TradeCorrection,
        ExecutedWithReferencePrice,
        PriceCorrection,
        Rejected,
        CancelPending,
        CancelReject,
        OrderPriorityUpdate,
        OrderModified,
    ]
);

/// Decodes one message in the given direction and summarizes it; `Ok(None)` for unknown types.
pub fn summarize(dir: OrderDir, buf: &[u8]) -> Result<Option<OrderSummary>> {
    Ok(match dir {
        OrderDir::Inbound => parse_inbound(buf)?.summary(),
        OrderDir::Outbound => parse_outbound(buf)?.summary(),
    })
}

impl Inbound<'_> {
    /// The correlator's summary; `None` for unknown types.
    pub fn summary(&self) -> Option<OrderSummary> {
        let mut s = OrderSummary::new(OrderDir::Inbound, u8::from(self.message_type()));
        match self {
            Inbound::EnterOrder(m) => {
                s.id = Some(OrderId::Token(m.order_token()));
                s.symbol = Some(m.stock());
                s.side = Some(m.side());
                s.qty = Some(m.shares());
                s.price = Some(m.price().into());
            }
            Inbound::ReplaceOrder(m) => {
                s.id = Some(OrderId::Token(m.replacement_order_token()));
                s.orig_id = Some(OrderId::Token(m.existing_order_token()));
                s.qty = Some(m.shares());
                s.price = Some(m.price().into());
            }
            Inbound::CancelOrder(m) => {
                s.id = Some(OrderId::Token(m.order_token()));
                s.qty = Some(m.shares());
            }
            Inbound::ModifyOrder(m) => {
                s.id = Some(OrderId::Token(m.order_token()));
                s.side = Some(m.side());
                s.qty = Some(m.shares());
            }
            Inbound::Unknown(..) => return None,
        }
        Some(s)
    }
}

impl Outbound<'_> {
    /// The correlator's summary; `None` for unknown types.
    pub fn summary(&self) -> Option<OrderSummary> {
        let mut s = OrderSummary::new(OrderDir::Outbound, u8::from(self.message_type()));
        let tok = |t: [u8; 14]| Some(OrderId::Token(t));
        match self {
            Outbound::SystemEvent(m) => s.timestamp_ns = Some(m.timestamp()),
            Outbound::Accepted(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = tok(m.order_token());
                s.symbol = Some(m.stock());
                s.side = Some(m.side());
                s.qty = Some(m.shares());
                s.price = Some(m.price().into());
                s.order_ref = Some(m.order_reference_number());
                s.order_state = Some(m.order_state());
            }
            Outbound::Replaced(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = tok(m.replacement_order_token());
                s.orig_id = tok(m.previous_order_token());
                s.symbol = Some(m.stock());
                s.side = Some(m.side());
                s.qty = Some(m.shares());
                s.price = Some(m.price().into());
                s.order_ref = Some(m.order_reference_number());
                s.order_state = Some(m.order_state());
            }
            Outbound::Canceled(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = tok(m.order_token());
                s.qty = Some(m.decrement_shares());
            }
            Outbound::AiqCanceled(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = tok(m.order_token());
                s.qty = Some(m.decrement_shares());
                s.price = Some(m.execution_price().into());
            }
            Outbound::Executed(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = tok(m.order_token());
                s.qty = Some(m.executed_shares());
                s.price = Some(m.execution_price().into());
                s.match_number = Some(m.match_number());
            }
            Outbound::BrokenTrade(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = tok(m.order_token());
                s.match_number = Some(m.match_number());
            }
            Outbound::TradeCorrection(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = tok(m.order_token());
                s.qty = Some(m.executed_shares());
                s.price = Some(m.execution_price().into());
                s.match_number = Some(m.match_number());
            }
            Outbound::ExecutedWithReferencePrice(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = tok(m.order_token());
                s.qty = Some(m.executed_shares());
                s.price = Some(m.execution_price().into());
                s.match_number = Some(m.match_number());
            }
            Outbound::PriceCorrection(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = tok(m.order_token());
                s.price = Some(m.new_execution_price().into());
                s.match_number = Some(m.match_number());
            }
            Outbound::Rejected(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = tok(m.order_token());
            }
            Outbound::CancelPending(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = tok(m.order_token());
            }
            Outbound::CancelReject(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = tok(m.order_token());
            }
            Outbound::OrderPriorityUpdate(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = tok(m.order_token());
                s.price = Some(m.price().into());
                s.order_ref = Some(m.order_reference_number());
            }
            Outbound::OrderModified(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = tok(m.order_token());
                s.side = Some(m.side());
                s.qty = Some(m.shares());
            }
            Outbound::Unknown(..) => return None,
        }
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testutil::{B, assert_tiles};
    use crate::proto::{ProtoError, Side, Symbol};

    const TOK: &str = "ORD00000000001";
    const TOK2: &str = "ORD00000000002";

    fn inbound_examples() -> Vec<Vec<u8>> {
        vec![
            B::new()
                .c(b'O')
                .s(TOK, 14)
                .c(b'S')
                .u32(500)
                .s("MSFT", 8)
                .u32(3_301_200)
                .u32(99_998)
                .s("FIRM", 4)
                .c(b'Y')
                .c(b'P')
                .c(b'N')
                .u32(100)
                .c(b'N')
                .c(b'R')
                .done(),
            B::new().c(b'U').s(TOK, 14).s(TOK2, 14).u32(600).u32(3_301_300).u32(0).c(b'N').c(b'Y').u32(0).done(),
            B::new().c(b'X').s(TOK2, 14).u32(0).done(),
            B::new().c(b'M').s(TOK2, 14).c(b'T').u32(300).done(),
        ]
    }

    fn outbound_examples() -> Vec<Vec<u8>> {
        let ts = 37_800_000_000_001;
        let t = |b: B| b.u64(ts).s(TOK, 14);
        vec![
            B::new().c(b'S').u64(ts).c(b'E').done(),
            t(B::new().c(b'A'))
                .c(b'S')
                .u32(500)
                .s("MSFT", 8)
                .u32(3_301_200)
                .u32(99_998)
                .s("FIRM", 4)
                .c(b'Y')
                .u64(123_456_789)
                .c(b'P')
                .c(b'N')
                .u32(100)
                .c(b'N')
                .c(b'L')
                .c(b' ')
                .done(),
            B::new()
                .c(b'U')
                .u64(ts)
                .s(TOK2, 14)
                .c(b'S')
                .u32(600)
                .s("MSFT", 8)
                .u32(3_301_300)
                .u32(0)
                .s("FIRM", 4)
                .c(b'N')
                .u64(123_456_790)
                .c(b'P')
                .c(b'Y')
                .u32(0)
                .c(b'N')
                .c(b'L')
                .s(TOK, 14)
                .c(b'1')
                .done(),
            t(B::new().c(b'C')).u32(600).c(b'U').done(),
            t(B::new().c(b'D')).u32(10).c(b'Q').u32(12).u32(3_300_000).c(b'A').done(),
            t(B::new().c(b'E')).u32(200).u32(3_301_200).c(b'R').u64(55_001).done(),
            t(B::new().c(b'B')).u64(55_001).c(b'C').done(),
            t(B::new().c(b'K')).u64(55_001).u32(3_301_100).c(b'S').done(),
            t(B::new().c(b'F')).u32(150).u32(3_301_150).c(b'A').u64(55_002).c(b'X').done(),
            t(B::new().c(b'G')).u32(175).u32(3_301_175).c(b'R').u64(55_003).u32(3_301_000).c(b'1').done(),
            t(B::new().c(b'J')).c(b'H').done(),
            t(B::new().c(b'P')).done(),
            t(B::new().c(b'I')).done(),
            t(B::new().c(b'T')).u32(3_301_000).c(b'Y').u64(123_456_791).done(),
            t(B::new().c(b'M')).c(b'E').u32(250).done(),
        ]
    }

    #[test]
    fn spec_lengths_and_field_tables() {
        // 4.2 lengths as Wireshark's OUCH heuristic lists them.
        assert_tiles("O", EnterOrder::<&[u8]>::FIELDS, 49);
        assert_tiles("U in", ReplaceOrder::<&[u8]>::FIELDS, 47);
        assert_tiles("X", CancelOrder::<&[u8]>::FIELDS, 19);
        assert_tiles("M in", ModifyOrder::<&[u8]>::FIELDS, 20);
        assert_tiles("S", SystemEvent::<&[u8]>::FIELDS, 10);
        assert_tiles("A", Accepted::<&[u8]>::FIELDS, 66);
        assert_tiles("U out", Replaced::<&[u8]>::FIELDS, 80);
        assert_tiles("C", Canceled::<&[u8]>::FIELDS, 28);
        assert_tiles("D", AiqCanceled::<&[u8]>::FIELDS, 37);
        assert_tiles("E", Executed::<&[u8]>::FIELDS, 40);
        assert_tiles("B", BrokenTrade::<&[u8]>::FIELDS, 32);
        assert_tiles("K", PriceCorrection::<&[u8]>::FIELDS, 36);
        assert_tiles("J", Rejected::<&[u8]>::FIELDS, 24);
        assert_tiles("P", CancelPending::<&[u8]>::FIELDS, 23);
        assert_tiles("I", CancelReject::<&[u8]>::FIELDS, 23);
        assert_tiles("T", OrderPriorityUpdate::<&[u8]>::FIELDS, 36);
        assert_tiles("M out", OrderModified::<&[u8]>::FIELDS, 28);
        for (ex, len) in inbound_examples().iter().zip([49, 47, 19, 20]) {
            assert_eq!(ex.len(), len);
        }
        assert_tiles("F", TradeCorrection::<&[u8]>::FIELDS, 41);
        assert_tiles("G", ExecutedWithReferencePrice::<&[u8]>::FIELDS, 45);
        for (ex, len) in outbound_examples().iter().zip([10, 66, 80, 28, 37, 40, 32, 36, 41, 45, 24, 23, 23, 36, 28]) {
            assert_eq!(ex.len(), len, "{}", ex[0] as char);
        }
    }

    #[test]
    fn deconstruct_inbound() {
        let ex = inbound_examples();
        let Inbound::EnterOrder(m) = parse_inbound(&ex[0]).unwrap() else { panic!() };
        assert_eq!(
            (m.order_token(), m.side(), m.shares(), m.stock()),
            (*b"ORD00000000001", Side::Sell, 500, Symbol::new("MSFT"))
        );
        assert_eq!((m.price(), m.time_in_force(), m.firm(), m.display()), (3_301_200, 99_998, *b"FIRM", b'Y'));
        assert_eq!((m.capacity(), m.intermarket_sweep_eligibility(), m.minimum_quantity()), (b'P', b'N', 100));
        assert_eq!((m.cross_type(), m.customer_type()), (b'N', b'R'));
        let Inbound::ReplaceOrder(m) = parse_inbound(&ex[1]).unwrap() else { panic!() };
        assert_eq!((m.existing_order_token(), m.replacement_order_token()), (*b"ORD00000000001", *b"ORD00000000002"));
        assert_eq!((m.shares(), m.price(), m.time_in_force(), m.display()), (600, 3_301_300, 0, b'N'));
        assert_eq!((m.intermarket_sweep_eligibility(), m.minimum_quantity()), (b'Y', 0));
        let Inbound::CancelOrder(m) = parse_inbound(&ex[2]).unwrap() else { panic!() };
        assert_eq!((m.order_token(), m.shares()), (*b"ORD00000000002", 0));
        let Inbound::ModifyOrder(m) = parse_inbound(&ex[3]).unwrap() else { panic!() };
        assert_eq!((m.order_token(), m.side(), m.shares()), (*b"ORD00000000002", Side::SellShort, 300));
    }

    #[test]
    fn deconstruct_outbound() {
        let ts = 37_800_000_000_001;
        let ex = outbound_examples();
        let o: Vec<Outbound<'_>> = ex.iter().map(|b| parse_outbound(b).unwrap()).collect();
        let Outbound::SystemEvent(m) = o[0] else { panic!() };
        assert_eq!((m.timestamp(), m.event_code()), (ts, b'E'));
        let Outbound::Accepted(m) = o[1] else { panic!() };
        assert_eq!((m.timestamp(), m.order_token(), m.side(), m.shares()), (ts, *b"ORD00000000001", Side::Sell, 500));
        assert_eq!(
            (m.stock().as_str(), m.price(), m.time_in_force(), m.firm()),
            (Some("MSFT"), 3_301_200, 99_998, *b"FIRM")
        );
        assert_eq!((m.display(), m.order_reference_number(), m.capacity()), (b'Y', 123_456_789, b'P'));
        assert_eq!((m.intermarket_sweep_eligibility(), m.minimum_quantity(), m.cross_type()), (b'N', 100, b'N'));
        assert_eq!((m.order_state(), m.bbo_weight_indicator()), (b'L', b' '));
        let Outbound::Replaced(m) = o[2] else { panic!() };
        assert_eq!((m.replacement_order_token(), m.previous_order_token()), (*b"ORD00000000002", *b"ORD00000000001"));
        assert_eq!(
            (m.side(), m.shares(), m.price(), m.order_reference_number()),
            (Side::Sell, 600, 3_301_300, 123_456_790)
        );
        assert_eq!((m.time_in_force(), m.firm(), m.display(), m.capacity()), (0, *b"FIRM", b'N', b'P'));
        assert_eq!((m.intermarket_sweep_eligibility(), m.minimum_quantity(), m.cross_type()), (b'Y', 0, b'N'));
        assert_eq!((m.order_state(), m.bbo_weight_indicator(), m.stock().as_str()), (b'L', b'1', Some("MSFT")));
        let Outbound::Canceled(m) = o[3] else { panic!() };
        assert_eq!((m.order_token(), m.decrement_shares(), m.reason()), (*b"ORD00000000001", 600, b'U'));
        let Outbound::AiqCanceled(m) = o[4] else { panic!() };
        assert_eq!((m.decrement_shares(), m.reason(), m.quantity_prevented_from_trading()), (10, b'Q', 12));
        assert_eq!((m.execution_price(), m.liquidity_flag()), (3_300_000, b'A'));
        let Outbound::Executed(m) = o[5] else { panic!() };
        assert_eq!(
            (m.executed_shares(), m.execution_price(), m.liquidity_flag(), m.match_number()),
            (200, 3_301_200, b'R', 55_001)
        );
        let Outbound::BrokenTrade(m) = o[6] else { panic!() };
        assert_eq!((m.match_number(), m.reason()), (55_001, b'C'));
        let Outbound::PriceCorrection(m) = o[7] else { panic!() };
        assert_eq!((m.match_number(), m.new_execution_price(), m.reason()), (55_001, 3_301_100, b'S'));
        let Outbound::TradeCorrection(m) = o[8] else { panic!() };
        assert_eq!((m.order_token(), m.executed_shares(), m.execution_price()), (*b"ORD00000000001", 150, 3_301_150));
        assert_eq!((m.liquidity_flag(), m.match_number(), m.reason()), (b'A', 55_002, b'X'));
        let Outbound::ExecutedWithReferencePrice(m) = o[9] else { panic!() };
        assert_eq!((m.executed_shares(), m.execution_price(), m.liquidity_flag()), (175, 3_301_175, b'R'));
        assert_eq!((m.match_number(), m.reference_price(), m.reference_price_type()), (55_003, 3_301_000, b'1'));
        let Outbound::Rejected(m) = o[10] else { panic!() };
        assert_eq!((m.order_token(), m.reason()), (*b"ORD00000000001", b'H'));
        let Outbound::CancelPending(m) = o[11] else { panic!() };
        assert_eq!((m.timestamp(), m.order_token()), (ts, *b"ORD00000000001"));
        let Outbound::CancelReject(m) = o[12] else { panic!() };
        assert_eq!(m.order_token(), *b"ORD00000000001");
        let Outbound::OrderPriorityUpdate(m) = o[13] else { panic!() };
        assert_eq!((m.price(), m.display(), m.order_reference_number()), (3_301_000, b'Y', 123_456_791));
        let Outbound::OrderModified(m) = o[14] else { panic!() };
        assert_eq!((m.side(), m.shares()), (Side::SellShortExempt, 250));
    }

    #[test]
    fn summaries() {
        let tok = OrderId::Token(*b"ORD00000000001");
        let tok2 = OrderId::Token(*b"ORD00000000002");
        let s = summarize(OrderDir::Inbound, &inbound_examples()[0]).unwrap().unwrap();
        assert_eq!(
            (s.msg_type, s.id, s.symbol, s.side),
            (b'O', Some(tok), Some(Symbol::new("MSFT")), Some(Side::Sell))
        );
        assert_eq!((s.qty, s.price, s.cl_ord_id), (Some(500), Some(3_301_200), None));
        let s = summarize(OrderDir::Inbound, &inbound_examples()[1]).unwrap().unwrap();
        assert_eq!((s.id, s.orig_id), (Some(tok2), Some(tok)));
        let s = summarize(OrderDir::Outbound, &outbound_examples()[2]).unwrap().unwrap();
        assert_eq!((s.msg_type, s.id, s.orig_id, s.order_ref), (b'U', Some(tok2), Some(tok), Some(123_456_790)));
        // The order state: what tells an order dead at once (the analyzer forgets its symbol).
        assert_eq!(s.order_state, Some(b'L'));
        assert_eq!(summarize(OrderDir::Outbound, &outbound_examples()[1]).unwrap().unwrap().order_state, Some(b'L'));
        let s = summarize(OrderDir::Outbound, &outbound_examples()[5]).unwrap().unwrap();
        assert_eq!(
            (s.qty, s.price, s.match_number, s.timestamp_ns),
            (Some(200), Some(3_301_200), Some(55_001), Some(37_800_000_000_001))
        );
        assert_eq!(summarize(OrderDir::Inbound, b"Q").unwrap(), None); // no Account Query in 4.2
    }

    #[test]
    fn every_prefix_is_an_error() {
        for (ex, dir) in inbound_examples()
            .into_iter()
            .map(|e| (e, OrderDir::Inbound))
            .chain(outbound_examples().into_iter().map(|e| (e, OrderDir::Outbound)))
        {
            for k in 0..ex.len() {
                let r = summarize(dir, &ex[..k]);
                match r {
                    Err(ProtoError::Truncated { need, have, .. }) => {
                        assert_eq!((need, have), (if k == 0 { 1 } else { ex.len() }, k));
                    }
                    other => panic!("{dir:?} {} prefix {k}: {other:?}", ex[0] as char),
                }
            }
        }
    }
}
