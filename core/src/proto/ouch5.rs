//! Nasdaq OUCH 5.0 order entry (specification of April 2023: `specs/ouch_spec_5.0.txt`), carried
//! in SoupBinTCP Unsequenced (client) and Sequenced (server) data packets.
//!
//! Messages are fixed-layout; several end with an optional appendage of TagValue elements:
//!
//! ```text
//! fixed part ... | appendage length (u16) | TagValue | TagValue | ...
//! TagValue:      | length (1, = 1 + value bytes) | option tag (1) | value (length - 1) |
//! ```
//!
//! Prices are `u64` with 4 implied decimals; UserRefNum is a `u32` the client makes day-unique and
//! increasing; timestamps are nanoseconds since midnight (`u64`). "Inbound" and "outbound" are the
//! spec's words: inbound = client to exchange. The type byte is ambiguous across directions ('U',
//! 'M', 'Q'), so the caller says which direction it decodes: [`parse_inbound`], [`parse_outbound`].
//! Appendages are walked by [`TagValues`], which stops safely at a malformed element and reports it.

use super::{OrderDir, OrderId, OrderSummary, ProtoError, Result, read};

enum_with_unknown! {
    /// Inbound (client to exchange) message type.
    pub enum InboundType(u8) {
        /// 'O' Enter Order.
        EnterOrder = b'O',
        /// 'U' Replace Order Request.
        ReplaceOrder = b'U',
        /// 'X' Cancel Order Request.
        CancelOrder = b'X',
        /// 'M' Modify Order Request.
        ModifyOrder = b'M',
        /// 'Q' Account Query Request.
        AccountQueryRequest = b'Q',
    }
}

enum_with_unknown! {
    /// Outbound (exchange to client) message type.
    pub enum OutboundType(u8) {
        /// 'S' System Event.
        SystemEvent = b'S',
        /// 'A' Order Accepted.
        OrderAccepted = b'A',
        /// 'U' Order Replaced.
        OrderReplaced = b'U',
        /// 'C' Order Canceled.
        OrderCanceled = b'C',
        /// 'D' AIQ Canceled.
        AiqCanceled = b'D',
        /// 'E' Order Executed.
        OrderExecuted = b'E',
        /// 'B' Broken Trade.
        BrokenTrade = b'B',
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
        /// 'R' Order Restated.
        OrderRestated = b'R',
        /// 'Q' Account Query Response.
        AccountQueryResponse = b'Q',
    }
}

// ---- inbound (spec section 2) ----

message_view! {
    /// 'O' Enter Order (47 bytes + appendage).
    pub struct EnterOrder, what "OUCH 5.0 'O' Enter Order", len 47, appendage @ 45;
    /// Type.
    message_type: char @ 0,
    /// UserRefNum.
    user_ref_num: u32 @ 1,
    /// Side: 'B', 'S', 'T', 'E'.
    side: side @ 5,
    /// Quantity.
    quantity: u32 @ 6,
    /// Symbol.
    symbol: symbol @ 10,
    /// Price (4 implied decimals).
    price: u64 @ 18,
    /// Time In Force.
    time_in_force: char @ 26,
    /// Display.
    display: char @ 27,
    /// Capacity.
    capacity: char @ 28,
    /// InterMarket Sweep Eligibility.
    intermarket_sweep_eligibility: char @ 29,
    /// CrossType.
    cross_type: char @ 30,
    /// ClOrdID.
    cl_ord_id: a14 @ 31,
    /// Appendage Length.
    appendage_length: u16 @ 45,
}

message_view! {
    /// 'U' Replace Order Request (40 bytes + appendage).
    pub struct ReplaceOrder, what "OUCH 5.0 'U' Replace Order", len 40, appendage @ 38;
    /// Type.
    message_type: char @ 0,
    /// OrigUserRefNum: the order being replaced.
    orig_user_ref_num: u32 @ 1,
    /// UserRefNum of the replacement.
    user_ref_num: u32 @ 5,
    /// Quantity.
    quantity: u32 @ 9,
    /// Price.
    price: u64 @ 13,
    /// Time In Force.
    time_in_force: char @ 21,
    /// Display.
    display: char @ 22,
    /// InterMarket Sweep Eligibility.
    intermarket_sweep_eligibility: char @ 23,
    /// ClOrdID of the replacement.
    cl_ord_id: a14 @ 24,
    /// Appendage Length.
    appendage_length: u16 @ 38,
}

message_view! {
    /// 'X' Cancel Order Request (9 bytes).
    pub struct CancelOrder, what "OUCH 5.0 'X' Cancel Order", len 9;
    /// Type.
    message_type: char @ 0,
    /// UserRefNum.
    user_ref_num: u32 @ 1,
    /// New intended order size (0 cancels the rest).
    quantity: u32 @ 5,
}

message_view! {
    /// 'M' Modify Order Request (10 bytes).
    pub struct ModifyOrder, what "OUCH 5.0 'M' Modify Order", len 10;
    /// Type.
    message_type: char @ 0,
    /// UserRefNum.
    user_ref_num: u32 @ 1,
    /// New side.
    side: side @ 5,
    /// New intended order size.
    quantity: u32 @ 6,
}

message_view! {
    /// 'Q' Account Query Request (1 byte).
    pub struct AccountQueryRequest, what "OUCH 5.0 'Q' Account Query Request", len 1;
    /// Type.
    message_type: char @ 0,
}

// ---- outbound (spec section 3) ----

message_view! {
    /// 'S' System Event (10 bytes).
    pub struct SystemEvent, what "OUCH 5.0 'S' System Event", len 10;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// 'S' start of day, 'E' end of day.
    event_code: char @ 9,
}

message_view! {
    /// 'A' Order Accepted (64 bytes + appendage).
    pub struct OrderAccepted, what "OUCH 5.0 'A' Order Accepted", len 64, appendage @ 62;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// UserRefNum.
    user_ref_num: u32 @ 9,
    /// Side.
    side: side @ 13,
    /// Quantity accepted.
    quantity: u32 @ 14,
    /// Symbol.
    symbol: symbol @ 18,
    /// Accepted price.
    price: u64 @ 26,
    /// Time In Force.
    time_in_force: char @ 34,
    /// Display.
    display: char @ 35,
    /// Order Reference Number (as on ITCH).
    order_reference_number: u64 @ 36,
    /// Capacity.
    capacity: char @ 44,
    /// InterMarket Sweep Eligibility.
    intermarket_sweep_eligibility: char @ 45,
    /// CrossType.
    cross_type: char @ 46,
    /// Order State: 'L' live, 'D' dead.
    order_state: char @ 47,
    /// ClOrdID.
    cl_ord_id: a14 @ 48,
    /// Appendage Length.
    appendage_length: u16 @ 62,
}

message_view! {
    /// 'U' Order Replaced (68 bytes + appendage).
    pub struct OrderReplaced, what "OUCH 5.0 'U' Order Replaced", len 68, appendage @ 66;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// OrigUserRefNum.
    orig_user_ref_num: u32 @ 9,
    /// UserRefNum of the replacement.
    user_ref_num: u32 @ 13,
    /// Side.
    side: side @ 17,
    /// Quantity outstanding.
    quantity: u32 @ 18,
    /// Symbol.
    symbol: symbol @ 22,
    /// Accepted price.
    price: u64 @ 30,
    /// Time In Force.
    time_in_force: char @ 38,
    /// Display.
    display: char @ 39,
    /// Order Reference Number.
    order_reference_number: u64 @ 40,
    /// Capacity.
    capacity: char @ 48,
    /// InterMarket Sweep Eligibility.
    intermarket_sweep_eligibility: char @ 49,
    /// CrossType.
    cross_type: char @ 50,
    /// Order State.
    order_state: char @ 51,
    /// ClOrdID of the replacement.
    cl_ord_id: a14 @ 52,
    /// Appendage Length.
    appendage_length: u16 @ 66,
}

message_view! {
    /// 'C' Order Canceled (18 bytes).
    pub struct OrderCanceled, what "OUCH 5.0 'C' Order Canceled", len 18;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// UserRefNum.
    user_ref_num: u32 @ 9,
    /// Shares decremented (incremental).
    quantity: u32 @ 13,
    /// Reason (Appendix C).
    reason: char @ 17,
}

message_view! {
    /// 'D' AIQ Canceled (32 bytes).
    pub struct AiqCanceled, what "OUCH 5.0 'D' AIQ Canceled", len 32;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// UserRefNum.
    user_ref_num: u32 @ 9,
    /// Decrement Shares.
    decrement_shares: u32 @ 13,
    /// Reason (always 'Q').
    reason: char @ 17,
    /// Quantity prevented from trading.
    quantity_prevented_from_trading: u32 @ 18,
    /// Execution Price.
    execution_price: u64 @ 22,
    /// Liquidity Flag.
    liquidity_flag: char @ 30,
    /// AIQ Strategy.
    aiq_strategy: char @ 31,
}

message_view! {
    /// 'E' Order Executed (36 bytes + appendage).
    pub struct OrderExecuted, what "OUCH 5.0 'E' Order Executed", len 36, appendage @ 34;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// UserRefNum.
    user_ref_num: u32 @ 9,
    /// Shares executed (incremental).
    quantity: u32 @ 13,
    /// Execution price.
    price: u64 @ 17,
    /// Liquidity Flag.
    liquidity_flag: char @ 25,
    /// Match Number.
    match_number: u64 @ 26,
    /// Appendage Length.
    appendage_length: u16 @ 34,
}

message_view! {
    /// 'B' Broken Trade (36 bytes).
    pub struct BrokenTrade, what "OUCH 5.0 'B' Broken Trade", len 36;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// UserRefNum.
    user_ref_num: u32 @ 9,
    /// Match Number.
    match_number: u64 @ 13,
    /// Reason: 'E', 'C', 'S', 'X'.
    reason: char @ 21,
    /// ClOrdID.
    cl_ord_id: a14 @ 22,
}

message_view! {
    /// 'J' Rejected (29 bytes).
    pub struct Rejected, what "OUCH 5.0 'J' Rejected", len 29;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// UserRefNum.
    user_ref_num: u32 @ 9,
    /// Reason (Appendix D, numeric).
    reason: u16 @ 13,
    /// ClOrdID.
    cl_ord_id: a14 @ 15,
}

message_view! {
    /// 'P' Cancel Pending (13 bytes).
    pub struct CancelPending, what "OUCH 5.0 'P' Cancel Pending", len 13;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// UserRefNum.
    user_ref_num: u32 @ 9,
}

message_view! {
    /// 'I' Cancel Reject (13 bytes).
    pub struct CancelReject, what "OUCH 5.0 'I' Cancel Reject", len 13;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// UserRefNum.
    user_ref_num: u32 @ 9,
}

message_view! {
    /// 'T' Order Priority Update (30 bytes).
    pub struct OrderPriorityUpdate, what "OUCH 5.0 'T' Order Priority Update", len 30;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// UserRefNum.
    user_ref_num: u32 @ 9,
    /// Limit price.
    price: u64 @ 13,
    /// Display.
    display: char @ 21,
    /// New Order Reference Number.
    order_reference_number: u64 @ 22,
}

message_view! {
    /// 'M' Order Modified (18 bytes).
    pub struct OrderModified, what "OUCH 5.0 'M' Order Modified", len 18;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// UserRefNum.
    user_ref_num: u32 @ 9,
    /// Side.
    side: side @ 13,
    /// Shares outstanding.
    quantity: u32 @ 14,
}

message_view! {
    /// 'R' Order Restated (16 bytes + appendage).
    pub struct OrderRestated, what "OUCH 5.0 'R' Order Restated", len 16, appendage @ 14;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// UserRefNum.
    user_ref_num: u32 @ 9,
    /// Reason: 'R' refresh of display, 'P' update of displayed price.
    reason: char @ 13,
    /// Appendage Length.
    appendage_length: u16 @ 14,
}

message_view! {
    /// 'Q' Account Query Response (13 bytes).
    pub struct AccountQueryResponse, what "OUCH 5.0 'Q' Account Query Response", len 13;
    /// Type.
    message_type: char @ 0,
    /// Nanoseconds since midnight.
    timestamp: u64 @ 1,
    /// Next available UserRefNum.
    next_user_ref_num: u32 @ 9,
}

ouch_direction!(
    /// An inbound (client to exchange) OUCH 5.0 message.
    Inbound,
    InboundType,
    parse_inbound,
    "OUCH 5.0 inbound message",
    [EnterOrder, ReplaceOrder, CancelOrder, ModifyOrder, AccountQueryRequest]
);

ouch_direction!(
    /// An outbound (exchange to client) OUCH 5.0 message.
    Outbound,
    OutboundType,
    parse_outbound,
    "OUCH 5.0 outbound message",
    [
        SystemEvent,
        OrderAccepted,
        OrderReplaced,
        OrderCanceled,
        AiqCanceled,
        OrderExecuted,
        BrokenTrade,
        Rejected,
        CancelPending,
        CancelReject,
        OrderPriorityUpdate,
        OrderModified,
        OrderRestated,
        AccountQueryResponse,
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
                s.id = Some(OrderId::UserRefNum(m.user_ref_num()));
                s.cl_ord_id = Some(m.cl_ord_id());
                s.symbol = Some(m.symbol());
                s.side = Some(m.side());
                s.qty = Some(m.quantity());
                s.price = Some(m.price());
            }
            Inbound::ReplaceOrder(m) => {
                s.id = Some(OrderId::UserRefNum(m.user_ref_num()));
                s.orig_id = Some(OrderId::UserRefNum(m.orig_user_ref_num()));
                s.cl_ord_id = Some(m.cl_ord_id());
                s.qty = Some(m.quantity());
                s.price = Some(m.price());
            }
            Inbound::CancelOrder(m) => {
                s.id = Some(OrderId::UserRefNum(m.user_ref_num()));
                s.qty = Some(m.quantity());
            }
            Inbound::ModifyOrder(m) => {
                s.id = Some(OrderId::UserRefNum(m.user_ref_num()));
                s.side = Some(m.side());
                s.qty = Some(m.quantity());
            }
            Inbound::AccountQueryRequest(_) => {}
            Inbound::Unknown(..) => return None,
        }
        Some(s)
    }
}

impl Outbound<'_> {
    /// The correlator's summary; `None` for unknown types.
    pub fn summary(&self) -> Option<OrderSummary> {
        let mut s = OrderSummary::new(OrderDir::Outbound, u8::from(self.message_type()));
        let urn = |u: u32| Some(OrderId::UserRefNum(u));
        match self {
            Outbound::SystemEvent(m) => s.timestamp_ns = Some(m.timestamp()),
            Outbound::OrderAccepted(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = urn(m.user_ref_num());
                s.cl_ord_id = Some(m.cl_ord_id());
                s.symbol = Some(m.symbol());
                s.side = Some(m.side());
                s.qty = Some(m.quantity());
                s.price = Some(m.price());
                s.order_ref = Some(m.order_reference_number());
                s.order_state = Some(m.order_state());
            }
            Outbound::OrderReplaced(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = urn(m.user_ref_num());
                s.orig_id = urn(m.orig_user_ref_num());
                s.cl_ord_id = Some(m.cl_ord_id());
                s.symbol = Some(m.symbol());
                s.side = Some(m.side());
                s.qty = Some(m.quantity());
                s.price = Some(m.price());
                s.order_ref = Some(m.order_reference_number());
                s.order_state = Some(m.order_state());
            }
            Outbound::OrderCanceled(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = urn(m.user_ref_num());
                s.qty = Some(m.quantity());
            }
            Outbound::AiqCanceled(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = urn(m.user_ref_num());
                s.qty = Some(m.decrement_shares());
                s.price = Some(m.execution_price());
            }
            Outbound::OrderExecuted(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = urn(m.user_ref_num());
                s.qty = Some(m.quantity());
                s.price = Some(m.price());
                s.match_number = Some(m.match_number());
            }
            Outbound::BrokenTrade(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = urn(m.user_ref_num());
                s.cl_ord_id = Some(m.cl_ord_id());
                s.match_number = Some(m.match_number());
            }
            Outbound::Rejected(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = urn(m.user_ref_num());
                s.cl_ord_id = Some(m.cl_ord_id());
            }
            Outbound::CancelPending(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = urn(m.user_ref_num());
            }
            Outbound::CancelReject(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = urn(m.user_ref_num());
            }
            Outbound::OrderPriorityUpdate(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = urn(m.user_ref_num());
                s.price = Some(m.price());
                s.order_ref = Some(m.order_reference_number());
            }
            Outbound::OrderModified(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = urn(m.user_ref_num());
                s.side = Some(m.side());
                s.qty = Some(m.quantity());
            }
            Outbound::OrderRestated(m) => {
                s.timestamp_ns = Some(m.timestamp());
                s.id = urn(m.user_ref_num());
            }
            Outbound::AccountQueryResponse(m) => s.timestamp_ns = Some(m.timestamp()),
            Outbound::Unknown(..) => return None,
        }
        Some(s)
    }
}

// ---- appendage (spec 1.2 and Appendix B) ----

enum_with_unknown! {
    /// OptionTag of a TagValue element (Appendix B).
    pub enum OptionTag(u8) {
        /// 1 SecondaryOrdRefNum (8, numeric).
        SecondaryOrdRefNum = 1,
        /// 2 Firm (4, alpha).
        Firm = 2,
        /// 3 MinQty (4).
        MinQty = 3,
        /// 4 CustomerType (1).
        CustomerType = 4,
        /// 5 MaxFloor (4).
        MaxFloor = 5,
        /// 6 PriceType (1).
        PriceType = 6,
        /// 7 PegOffset (4, signed price).
        PegOffset = 7,
        /// 9 DiscretionPrice (8).
        DiscretionPrice = 9,
        /// 10 DiscretionPriceType (1).
        DiscretionPriceType = 10,
        /// 11 DiscretionPegOffset (4, signed price).
        DiscretionPegOffset = 11,
        /// 12 PostOnly (1).
        PostOnly = 12,
        /// 13 RandomReserves (4).
        RandomReserves = 13,
        /// 14 Route (4, alpha).
        Route = 14,
        /// 15 ExpireTime (4, seconds).
        ExpireTime = 15,
        /// 16 TradeNow (1).
        TradeNow = 16,
        /// 17 HandleInst (1).
        HandleInst = 17,
        /// 18 BBO Weight Indicator (1).
        BboWeightIndicator = 18,
        /// 22 Display Quantity (4).
        DisplayQuantity = 22,
        /// 23 Display Price (8).
        DisplayPrice = 23,
        /// 24 Group ID (2).
        GroupId = 24,
        /// 25 Shares Located (1).
        SharesLocated = 25,
    }
}

impl OptionTag {
    /// Value size from Appendix B; `None` for unknown tags.
    pub fn value_len(self) -> Option<usize> {
        use OptionTag::*;
        Some(match self {
            SecondaryOrdRefNum | DiscretionPrice | DisplayPrice => 8,
            Firm | MinQty | MaxFloor | PegOffset | DiscretionPegOffset | RandomReserves | Route | ExpireTime
            | DisplayQuantity => 4,
            GroupId => 2,
            CustomerType | PriceType | DiscretionPriceType | PostOnly | TradeNow | HandleInst | BboWeightIndicator
            | SharesLocated => 1,
            Unknown(_) => return None,
        })
    }
}

/// One TagValue element of an appendage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagValue<'a> {
    /// OptionTag.
    pub tag: OptionTag,
    /// OptionValue bytes.
    pub value: &'a [u8],
}

impl TagValue<'_> {
    /// The value as an unsigned big-endian number (values of 1 to 8 bytes), e.g. MinQty.
    pub fn as_u64(&self) -> Option<u64> {
        if self.value.is_empty() || self.value.len() > 8 {
            return None;
        }
        Some(self.value.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b)))
    }
    /// The value as a signed 4-byte number (PegOffset, DiscretionPegOffset).
    pub fn as_i32(&self) -> Option<i32> {
        (self.value.len() == 4).then(|| read::i32(self.value, 0))
    }
    /// True when the value has the size Appendix B gives its tag (unknown tags: true).
    pub fn size_ok(&self) -> bool {
        self.tag.value_len().is_none_or(|n| n == self.value.len())
    }
}

/// Iterator over the TagValue elements of an appendage. Stops at the first element that is empty
/// or runs past the appendage; [`TagValues::error`] then gives its offset in the message.
#[derive(Debug, Clone)]
pub struct TagValues<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
    error: Option<ProtoError>,
}

impl<'a> TagValues<'a> {
    /// Walks `appendage`, whose first byte is at offset `base` in its message.
    pub fn new(appendage: &'a [u8], base: usize) -> Self {
        TagValues { buf: appendage, pos: 0, base, error: None }
    }
    /// The malformed element that stopped iteration, if any.
    pub fn error(&self) -> Option<ProtoError> {
        self.error
    }
}

impl<'a> Iterator for TagValues<'a> {
    type Item = TagValue<'a>;

    fn next(&mut self) -> Option<TagValue<'a>> {
        if self.error.is_some() || self.pos >= self.buf.len() {
            return None;
        }
        let len = usize::from(self.buf[self.pos]);
        let offset = self.base + self.pos;
        if len == 0 {
            self.error = Some(ProtoError::Malformed {
                what: "OUCH 5.0 TagValue",
                offset,
                reason: "length 0: a TagValue holds at least its OptionTag",
            });
            return None;
        }
        let have = self.buf.len() - self.pos - 1;
        if have < len {
            self.error =
                Some(ProtoError::Truncated { what: "OUCH 5.0 TagValue", offset, need: 1 + len, have: have + 1 });
            return None;
        }
        let tag = OptionTag::from(self.buf[self.pos + 1]);
        let value = &self.buf[self.pos + 2..self.pos + 1 + len];
        self.pos += 1 + len;
        Some(TagValue { tag, value })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testutil::{B, assert_tiles};
    use crate::proto::{Side, Symbol};

    fn inbound_examples() -> Vec<Vec<u8>> {
        vec![
            // 'O' with a Firm and a MinQty option.
            B::new()
                .c(b'O')
                .u32(1001)
                .c(b'B')
                .u32(300)
                .s("AAPL", 8)
                .u64(1_895_000)
                .c(b'0')
                .c(b'Y')
                .c(b'A')
                .c(b'N')
                .c(b'N')
                .s("CL-1", 14)
                .u16(12)
                .c(5)
                .c(2)
                .raw(b"FIRM")
                .c(5)
                .c(3)
                .u32(100)
                .done(),
            B::new()
                .c(b'U')
                .u32(1001)
                .u32(1002)
                .u32(400)
                .u64(1_896_000)
                .c(b'3')
                .c(b'N')
                .c(b'Y')
                .s("CL-2", 14)
                .u16(0)
                .done(),
            B::new().c(b'X').u32(1002).u32(0).done(),
            B::new().c(b'M').u32(1003).c(b'T').u32(50).done(),
            B::new().c(b'Q').done(),
        ]
    }

    fn outbound_examples() -> Vec<Vec<u8>> {
        let ts = 48_000_123_456_789;
        vec![
            B::new().c(b'S').u64(ts).c(b'S').done(),
            B::new()
                .c(b'A')
                .u64(ts)
                .u32(1001)
                .c(b'B')
                .u32(300)
                .s("AAPL", 8)
                .u64(1_895_000)
                .c(b'0')
                .c(b'Y')
                .u64(777)
                .c(b'A')
                .c(b'N')
                .c(b'N')
                .c(b'L')
                .s("CL-1", 14)
                .u16(3)
                .c(2)
                .c(18)
                .c(b'0')
                .done(),
            B::new()
                .c(b'U')
                .u64(ts + 1)
                .u32(1001)
                .u32(1002)
                .c(b'B')
                .u32(400)
                .s("AAPL", 8)
                .u64(1_896_000)
                .c(b'3')
                .c(b'N')
                .u64(778)
                .c(b'A')
                .c(b'Y')
                .c(b'N')
                .c(b'L')
                .s("CL-2", 14)
                .u16(0)
                .done(),
            B::new().c(b'C').u64(ts + 2).u32(1002).u32(400).c(b'U').done(),
            B::new().c(b'D').u64(ts + 3).u32(1004).u32(10).c(b'Q').u32(12).u64(1_000_000).c(b'A').c(b'N').done(),
            B::new().c(b'E').u64(ts + 4).u32(1005).u32(25).u64(1_234_500).c(b'R').u64(99_001).u16(0).done(),
            B::new().c(b'B').u64(ts + 5).u32(1005).u64(99_001).c(b'E').s("CL-5", 14).done(),
            B::new().c(b'J').u64(ts + 6).u32(1006).u16(0x0017).s("CL-6", 14).done(),
            B::new().c(b'P').u64(ts + 7).u32(1007).done(),
            B::new().c(b'I').u64(ts + 8).u32(1008).done(),
            B::new().c(b'T').u64(ts + 9).u32(1009).u64(2_000_000).c(b'Y').u64(779).done(),
            B::new().c(b'M').u64(ts + 10).u32(1010).c(b'E').u32(60).done(),
            B::new().c(b'R').u64(ts + 11).u32(1011).c(b'R').u16(6).c(5).c(22).u32(200).done(),
            B::new().c(b'Q').u64(ts + 12).u32(2000).done(),
        ]
    }

    #[test]
    fn spec_lengths_and_field_tables() {
        // (fixed length from the spec table: last offset + last length).
        assert_tiles("O", EnterOrder::<&[u8]>::FIELDS, 47);
        assert_tiles("U in", ReplaceOrder::<&[u8]>::FIELDS, 40);
        assert_tiles("X", CancelOrder::<&[u8]>::FIELDS, 9);
        assert_tiles("M in", ModifyOrder::<&[u8]>::FIELDS, 10);
        assert_tiles("Q in", AccountQueryRequest::<&[u8]>::FIELDS, 1);
        assert_tiles("S", SystemEvent::<&[u8]>::FIELDS, 10);
        assert_tiles("A", OrderAccepted::<&[u8]>::FIELDS, 64);
        assert_tiles("U out", OrderReplaced::<&[u8]>::FIELDS, 68);
        assert_tiles("C", OrderCanceled::<&[u8]>::FIELDS, 18);
        assert_tiles("D", AiqCanceled::<&[u8]>::FIELDS, 32);
        assert_tiles("E", OrderExecuted::<&[u8]>::FIELDS, 36);
        assert_tiles("B", BrokenTrade::<&[u8]>::FIELDS, 36);
        assert_tiles("J", Rejected::<&[u8]>::FIELDS, 29);
        assert_tiles("P", CancelPending::<&[u8]>::FIELDS, 13);
        assert_tiles("I", CancelReject::<&[u8]>::FIELDS, 13);
        assert_tiles("T", OrderPriorityUpdate::<&[u8]>::FIELDS, 30);
        assert_tiles("M out", OrderModified::<&[u8]>::FIELDS, 18);
        assert_tiles("R", OrderRestated::<&[u8]>::FIELDS, 16);
        assert_tiles("Q out", AccountQueryResponse::<&[u8]>::FIELDS, 13);
    }

    #[test]
    fn deconstruct_inbound() {
        let ex = inbound_examples();
        let Inbound::EnterOrder(o) = parse_inbound(&ex[0]).unwrap() else { panic!() };
        assert_eq!((o.user_ref_num(), o.side(), o.quantity(), o.symbol()), (1001, Side::Buy, 300, Symbol::new("AAPL")));
        assert_eq!((o.price(), o.time_in_force(), o.display(), o.capacity()), (1_895_000, b'0', b'Y', b'A'));
        assert_eq!(
            (o.intermarket_sweep_eligibility(), o.cross_type(), o.cl_ord_id()),
            (b'N', b'N', *b"CL-1          ")
        );
        assert_eq!(o.appendage_length(), 12);
        let opts: Vec<_> = o.options().collect();
        assert_eq!(
            opts,
            vec![
                TagValue { tag: OptionTag::Firm, value: b"FIRM" },
                TagValue { tag: OptionTag::MinQty, value: &[0, 0, 0, 100] }
            ]
        );
        assert_eq!(opts[1].as_u64(), Some(100));
        assert!(opts.iter().all(|t| t.size_ok()));

        let Inbound::ReplaceOrder(u) = parse_inbound(&ex[1]).unwrap() else { panic!() };
        assert_eq!((u.orig_user_ref_num(), u.user_ref_num(), u.quantity(), u.price()), (1001, 1002, 400, 1_896_000));
        assert_eq!((u.time_in_force(), u.display(), u.intermarket_sweep_eligibility()), (b'3', b'N', b'Y'));
        assert_eq!((u.cl_ord_id(), u.appendage_length(), u.appendage()), (*b"CL-2          ", 0, &[][..]));

        let Inbound::CancelOrder(x) = parse_inbound(&ex[2]).unwrap() else { panic!() };
        assert_eq!((x.user_ref_num(), x.quantity()), (1002, 0));
        let Inbound::ModifyOrder(m) = parse_inbound(&ex[3]).unwrap() else { panic!() };
        assert_eq!((m.user_ref_num(), m.side(), m.quantity()), (1003, Side::SellShort, 50));
        assert!(matches!(parse_inbound(&ex[4]).unwrap(), Inbound::AccountQueryRequest(_)));
        assert!(matches!(parse_inbound(b"Zzz").unwrap(), Inbound::Unknown(b'Z', _)));
    }

    #[test]
    fn deconstruct_outbound() {
        let ts = 48_000_123_456_789;
        let ex = outbound_examples();
        let o: Vec<Outbound<'_>> = ex.iter().map(|b| parse_outbound(b).unwrap()).collect();
        let Outbound::SystemEvent(m) = o[0] else { panic!() };
        assert_eq!((m.timestamp(), m.event_code()), (ts, b'S'));
        let Outbound::OrderAccepted(m) = o[1] else { panic!() };
        assert_eq!((m.timestamp(), m.user_ref_num(), m.side(), m.quantity()), (ts, 1001, Side::Buy, 300));
        assert_eq!(
            (m.symbol().as_str(), m.price(), m.time_in_force(), m.display()),
            (Some("AAPL"), 1_895_000, b'0', b'Y')
        );
        assert_eq!((m.order_reference_number(), m.capacity(), m.intermarket_sweep_eligibility()), (777, b'A', b'N'));
        assert_eq!((m.cross_type(), m.order_state(), m.cl_ord_id()), (b'N', b'L', *b"CL-1          "));
        let opts: Vec<_> = m.options().collect();
        assert_eq!(opts, vec![TagValue { tag: OptionTag::BboWeightIndicator, value: b"0" }]);
        let Outbound::OrderReplaced(m) = o[2] else { panic!() };
        assert_eq!((m.orig_user_ref_num(), m.user_ref_num(), m.side(), m.quantity()), (1001, 1002, Side::Buy, 400));
        assert_eq!((m.symbol().as_str(), m.price(), m.order_reference_number()), (Some("AAPL"), 1_896_000, 778));
        assert_eq!(
            (m.time_in_force(), m.display(), m.capacity(), m.intermarket_sweep_eligibility()),
            (b'3', b'N', b'A', b'Y')
        );
        assert_eq!((m.cross_type(), m.order_state(), m.cl_ord_id()), (b'N', b'L', *b"CL-2          "));
        let Outbound::OrderCanceled(m) = o[3] else { panic!() };
        assert_eq!((m.timestamp(), m.user_ref_num(), m.quantity(), m.reason()), (ts + 2, 1002, 400, b'U'));
        let Outbound::AiqCanceled(m) = o[4] else { panic!() };
        assert_eq!(
            (m.user_ref_num(), m.decrement_shares(), m.reason(), m.quantity_prevented_from_trading()),
            (1004, 10, b'Q', 12)
        );
        assert_eq!((m.execution_price(), m.liquidity_flag(), m.aiq_strategy()), (1_000_000, b'A', b'N'));
        let Outbound::OrderExecuted(m) = o[5] else { panic!() };
        assert_eq!((m.user_ref_num(), m.quantity(), m.price(), m.liquidity_flag()), (1005, 25, 1_234_500, b'R'));
        assert_eq!((m.match_number(), m.appendage_length()), (99_001, 0));
        let Outbound::BrokenTrade(m) = o[6] else { panic!() };
        assert_eq!(
            (m.user_ref_num(), m.match_number(), m.reason(), m.cl_ord_id()),
            (1005, 99_001, b'E', *b"CL-5          ")
        );
        let Outbound::Rejected(m) = o[7] else { panic!() };
        assert_eq!((m.user_ref_num(), m.reason(), m.cl_ord_id()), (1006, 0x17, *b"CL-6          "));
        let Outbound::CancelPending(m) = o[8] else { panic!() };
        assert_eq!((m.timestamp(), m.user_ref_num()), (ts + 7, 1007));
        let Outbound::CancelReject(m) = o[9] else { panic!() };
        assert_eq!((m.timestamp(), m.user_ref_num()), (ts + 8, 1008));
        let Outbound::OrderPriorityUpdate(m) = o[10] else { panic!() };
        assert_eq!(
            (m.user_ref_num(), m.price(), m.display(), m.order_reference_number()),
            (1009, 2_000_000, b'Y', 779)
        );
        let Outbound::OrderModified(m) = o[11] else { panic!() };
        assert_eq!((m.user_ref_num(), m.side(), m.quantity()), (1010, Side::SellShortExempt, 60));
        let Outbound::OrderRestated(m) = o[12] else { panic!() };
        assert_eq!((m.user_ref_num(), m.reason(), m.appendage_length()), (1011, b'R', 6));
        let opt = m.options().next().unwrap();
        assert_eq!((opt.tag, opt.as_u64()), (OptionTag::DisplayQuantity, Some(200)));
        let Outbound::AccountQueryResponse(m) = o[13] else { panic!() };
        assert_eq!((m.timestamp(), m.next_user_ref_num()), (ts + 12, 2000));
    }

    #[test]
    fn summaries() {
        let i = inbound_examples();
        let s = parse_inbound(&i[0]).unwrap().summary().unwrap();
        assert_eq!(
            (s.dir, s.msg_type, s.id, s.orig_id),
            (OrderDir::Inbound, b'O', Some(OrderId::UserRefNum(1001)), None)
        );
        assert_eq!(
            (s.cl_ord_id, s.symbol, s.side),
            (Some(*b"CL-1          "), Some(Symbol::new("AAPL")), Some(Side::Buy))
        );
        assert_eq!((s.qty, s.price, s.timestamp_ns), (Some(300), Some(1_895_000), None));
        let s = summarize(OrderDir::Inbound, &i[1]).unwrap().unwrap();
        assert_eq!((s.id, s.orig_id), (Some(OrderId::UserRefNum(1002)), Some(OrderId::UserRefNum(1001))));
        let o = outbound_examples();
        let s = summarize(OrderDir::Outbound, &o[5]).unwrap().unwrap();
        assert_eq!((s.dir, s.msg_type, s.id), (OrderDir::Outbound, b'E', Some(OrderId::UserRefNum(1005))));
        assert_eq!(
            (s.qty, s.price, s.match_number, s.timestamp_ns),
            (Some(25), Some(1_234_500), Some(99_001), Some(48_000_123_456_793))
        );
        // The order state of an Accepted and a Replaced: what tells an order dead at once (the
        // analyzer forgets its symbol).
        let states = [1, 2].map(|k| summarize(OrderDir::Outbound, &o[k]).unwrap().unwrap().order_state);
        assert_eq!(states, [Some(b'L'); 2]);
        // Direction matters: 'U' inbound is a Replace request, outbound a Replaced.
        assert!(matches!(parse_outbound(&o[2]).unwrap(), Outbound::OrderReplaced(_)));
        // Read as inbound, its bytes 38..40 ('3', 'N') would be an appendage length of 13,134.
        assert!(matches!(parse_inbound(&o[2]), Err(ProtoError::Truncated { need: 13_174, .. })));
        assert_eq!(summarize(OrderDir::Outbound, b"~").unwrap(), None);
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
                assert!(matches!(r, Err(ProtoError::Truncated { .. })), "{dir:?} {} prefix {k}: {r:?}", ex[0] as char);
            }
        }
    }

    #[test]
    fn malformed_appendages_stop_safely() {
        // Appendage length 4: a TagValue claiming 9 bytes, then nothing.
        let mut b = inbound_examples()[0][..45].to_vec();
        b.extend([0, 4, 9, 9, 0, 0]);
        let Inbound::EnterOrder(o) = parse_inbound(&b).unwrap() else { panic!() };
        let mut it = o.options();
        assert_eq!(it.next(), None);
        assert_eq!(
            it.error(),
            Some(ProtoError::Truncated { what: "OUCH 5.0 TagValue", offset: 47, need: 10, have: 4 })
        );
        // A zero-length element after a good one.
        let mut b = inbound_examples()[0][..45].to_vec();
        b.extend([0, 4, 2, 4, b'R', 0]);
        let Inbound::EnterOrder(o) = parse_inbound(&b).unwrap() else { panic!() };
        let mut it = o.options();
        let t = it.next().unwrap();
        assert_eq!((t.tag, t.value, t.size_ok()), (OptionTag::CustomerType, &b"R"[..], true));
        assert_eq!(it.next(), None);
        assert!(matches!(it.error(), Some(ProtoError::Malformed { offset: 50, .. })));
        // Appendage length past the message: the message itself is truncated.
        let mut b = inbound_examples()[0][..45].to_vec();
        b.extend([0, 200, 1]);
        assert_eq!(
            parse_inbound(&b),
            Err(ProtoError::Truncated { what: "OUCH 5.0 'O' Enter Order", offset: 0, need: 247, have: 48 })
        );
    }
}
