//! Nasdaq TotalView-ITCH 5.0 (specification of April 28, 2023: `specs/NQTVITCHspecification.txt`).
//!
//! Every message starts with the same 11 bytes, then a fixed, type-specific body:
//!
//! ```text
//! 0        1              3                 5                          11
//! | type (1) | stock locate (2) | tracking number (2) | timestamp (6, ns since midnight) | body ...
//! ```
//!
//! Integers are big-endian and unsigned; "Alpha" fields are ASCII, left-justified, space-padded;
//! `Price (4)` is a `u32` with 4 implied decimals (`Price (8)`: `u64`, 8 decimals); the timestamp is
//! nanoseconds since midnight, Eastern time, in 48 bits.
//!
//! All 23 message types are decoded by a view named after the spec section (field names follow the
//! spec). [`parse`] dispatches on the type byte; [`Message::summary`] gives the compact
//! [`ItchSummary`] the correlator uses. Unknown types come back as [`Message::Unknown`] (counted,
//! not fatal); a message shorter than its type requires is a [`ProtoError::Truncated`].
//! A message longer than its type is accepted, its extra bytes ignored. The spec says nothing of such
//! messages; MoldUDP64 gives each block's length, so a longer one cannot hide the next, and taking it
//! keeps a feed readable if a field is ever appended. (A feed of another ITCH dialect can then decode
//! without a counter moving: the stricter reading would drop its messages instead.)

use super::{ProtoError, Result, Side, Symbol};

enum_with_unknown! {
    /// ITCH 5.0 message type (the first byte).
    pub enum MessageType(u8) {
        /// 'S' 1.1 System Event.
        SystemEvent = b'S',
        /// 'R' 1.2.1 Stock Directory.
        StockDirectory = b'R',
        /// 'H' 1.2.2 Stock Trading Action.
        StockTradingAction = b'H',
        /// 'Y' 1.2.3 Reg SHO Short Sale Price Test Restricted Indicator.
        RegShoRestriction = b'Y',
        /// 'L' 1.2.4 Market Participant Position.
        MarketParticipantPosition = b'L',
        /// 'V' 1.2.5.1 MWCB Decline Level.
        MwcbDeclineLevel = b'V',
        /// 'W' 1.2.5.2 MWCB Status.
        MwcbStatus = b'W',
        /// 'K' 1.2.6 IPO Quoting Period Update.
        IpoQuotingPeriodUpdate = b'K',
        /// 'J' 1.2.7 LULD Auction Collar.
        LuldAuctionCollar = b'J',
        /// 'h' 1.2.8 Operational Halt.
        OperationalHalt = b'h',
        /// 'A' 1.3.1 Add Order, no MPID attribution.
        AddOrder = b'A',
        /// 'F' 1.3.2 Add Order with MPID attribution.
        AddOrderMpid = b'F',
        /// 'E' 1.4.1 Order Executed.
        OrderExecuted = b'E',
        /// 'C' 1.4.2 Order Executed With Price.
        OrderExecutedWithPrice = b'C',
        /// 'X' 1.4.3 Order Cancel.
        OrderCancel = b'X',
        /// 'D' 1.4.4 Order Delete.
        OrderDelete = b'D',
        /// 'U' 1.4.5 Order Replace.
        OrderReplace = b'U',
        /// 'P' 1.5.1 Trade (non-cross).
        Trade = b'P',
        /// 'Q' 1.5.2 Cross Trade.
        CrossTrade = b'Q',
        /// 'B' 1.5.3 Broken Trade / Order Execution.
        BrokenTrade = b'B',
        /// 'I' 1.6 Net Order Imbalance Indicator.
        Noii = b'I',
        /// 'N' 1.7 Retail Price Improvement Indicator.
        RetailInterest = b'N',
        /// 'O' 1.8 Direct Listing with Capital Raise Price Discovery.
        Dlcr = b'O',
    }
}

/// Length of the header common to all messages.
pub const HEADER_LEN: usize = 11;

/// A view with the 11-byte common header plus the given body fields.
macro_rules! itch_view {
    (
        $(#[$m:meta])*
        pub struct $name:ident, what $what:literal, len $len:expr;
        $( $(#[$fm:meta])* $field:ident : $kind:ident @ $off:expr ),* $(,)?
    ) => {
        message_view! {
            $(#[$m])*
            pub struct $name, what $what, len $len;
            /// Message Type.
            message_type: char @ 0,
            /// Stock Locate (0 for messages not tied to a stock).
            stock_locate: u16 @ 1,
            /// Nasdaq internal tracking number.
            tracking_number: u16 @ 3,
            /// Nanoseconds since midnight (48 bits).
            timestamp: u48 @ 5,
            $( $(#[$fm])* $field : $kind @ $off ),*
        }
    };
}

itch_view! {
    /// 'S' System Event (12 bytes).
    pub struct SystemEvent, what "ITCH 'S' System Event", len 12;
    /// 'O' start of messages, 'S' start of system hours, 'Q' start of market hours, 'M' end of market
    /// hours, 'E' end of system hours, 'C' end of messages.
    event_code: char @ 11,
}

itch_view! {
    /// 'R' Stock Directory (39 bytes).
    pub struct StockDirectory, what "ITCH 'R' Stock Directory", len 39;
    /// Stock symbol.
    stock: symbol @ 11,
    /// Market Category.
    market_category: char @ 19,
    /// Financial Status Indicator.
    financial_status_indicator: char @ 20,
    /// Round Lot Size.
    round_lot_size: u32 @ 21,
    /// Round Lots Only.
    round_lots_only: char @ 25,
    /// Issue Classification.
    issue_classification: char @ 26,
    /// Issue Sub-Type.
    issue_sub_type: a2 @ 27,
    /// Authenticity ('P' live, 'T' test).
    authenticity: char @ 29,
    /// Short Sale Threshold Indicator.
    short_sale_threshold_indicator: char @ 30,
    /// IPO Flag.
    ipo_flag: char @ 31,
    /// LULD Reference Price Tier.
    luld_reference_price_tier: char @ 32,
    /// ETP Flag.
    etp_flag: char @ 33,
    /// ETP Leverage Factor.
    etp_leverage_factor: u32 @ 34,
    /// Inverse Indicator.
    inverse_indicator: char @ 38,
}

itch_view! {
    /// 'H' Stock Trading Action (25 bytes).
    pub struct StockTradingAction, what "ITCH 'H' Stock Trading Action", len 25;
    /// Stock symbol.
    stock: symbol @ 11,
    /// Trading State: 'H' halted, 'P' paused, 'Q' quotation only, 'T' trading.
    trading_state: char @ 19,
    /// Reserved.
    reserved: char @ 20,
    /// Trading action reason (4 alpha).
    reason: a4 @ 21,
}

itch_view! {
    /// 'Y' Reg SHO Short Sale Price Test Restricted Indicator (20 bytes).
    pub struct RegShoRestriction, what "ITCH 'Y' Reg SHO Restriction", len 20;
    /// Stock symbol.
    stock: symbol @ 11,
    /// Reg SHO Action: '0', '1', '2'.
    reg_sho_action: char @ 19,
}

itch_view! {
    /// 'L' Market Participant Position (26 bytes).
    pub struct MarketParticipantPosition, what "ITCH 'L' Market Participant Position", len 26;
    /// Market participant identifier.
    mpid: a4 @ 11,
    /// Stock symbol.
    stock: symbol @ 15,
    /// Primary Market Maker ('Y'/'N').
    primary_market_maker: char @ 23,
    /// Market Maker Mode.
    market_maker_mode: char @ 24,
    /// Market Participant State.
    market_participant_state: char @ 25,
}

itch_view! {
    /// 'V' MWCB Decline Level (35 bytes).
    pub struct MwcbDeclineLevel, what "ITCH 'V' MWCB Decline Level", len 35;
    /// Level 1, Price (8).
    level1: u64 @ 11,
    /// Level 2, Price (8).
    level2: u64 @ 19,
    /// Level 3, Price (8).
    level3: u64 @ 27,
}

itch_view! {
    /// 'W' MWCB Status (12 bytes).
    pub struct MwcbStatus, what "ITCH 'W' MWCB Status", len 12;
    /// Breached Level: '1', '2', '3'.
    breached_level: char @ 11,
}

itch_view! {
    /// 'K' IPO Quoting Period Update (28 bytes).
    pub struct IpoQuotingPeriodUpdate, what "ITCH 'K' IPO Quoting Period Update", len 28;
    /// Stock symbol.
    stock: symbol @ 11,
    /// IPO Quotation Release Time, seconds since midnight.
    ipo_quotation_release_time: u32 @ 19,
    /// IPO Quotation Release Qualifier: 'A' anticipated, 'C' canceled/postponed.
    ipo_quotation_release_qualifier: char @ 23,
    /// IPO Price, Price (4).
    ipo_price: u32 @ 24,
}

itch_view! {
    /// 'J' LULD Auction Collar (35 bytes).
    pub struct LuldAuctionCollar, what "ITCH 'J' LULD Auction Collar", len 35;
    /// Stock symbol.
    stock: symbol @ 11,
    /// Auction Collar Reference Price, Price (4).
    auction_collar_reference_price: u32 @ 19,
    /// Upper Auction Collar Price, Price (4).
    upper_auction_collar_price: u32 @ 23,
    /// Lower Auction Collar Price, Price (4).
    lower_auction_collar_price: u32 @ 27,
    /// Auction Collar Extension.
    auction_collar_extension: u32 @ 31,
}

itch_view! {
    /// 'h' Operational Halt (21 bytes).
    pub struct OperationalHalt, what "ITCH 'h' Operational Halt", len 21;
    /// Stock symbol.
    stock: symbol @ 11,
    /// Market Code: 'Q' Nasdaq, 'B' BX, 'X' PSX.
    market_code: char @ 19,
    /// Operational Halt Action: 'H' halted, 'T' resumed.
    operational_halt_action: char @ 20,
}

itch_view! {
    /// 'A' Add Order, no MPID attribution (36 bytes).
    pub struct AddOrder, what "ITCH 'A' Add Order", len 36;
    /// Order Reference Number.
    order_reference_number: u64 @ 11,
    /// Buy/Sell Indicator.
    side: side @ 19,
    /// Shares.
    shares: u32 @ 20,
    /// Stock symbol.
    stock: symbol @ 24,
    /// Price (4).
    price: u32 @ 32,
}

itch_view! {
    /// 'F' Add Order with MPID attribution (40 bytes).
    pub struct AddOrderMpid, what "ITCH 'F' Add Order MPID", len 40;
    /// Order Reference Number.
    order_reference_number: u64 @ 11,
    /// Buy/Sell Indicator.
    side: side @ 19,
    /// Shares.
    shares: u32 @ 20,
    /// Stock symbol.
    stock: symbol @ 24,
    /// Price (4).
    price: u32 @ 32,
    /// Attribution (MPID).
    attribution: a4 @ 36,
}

itch_view! {
    /// 'E' Order Executed (31 bytes).
    pub struct OrderExecuted, what "ITCH 'E' Order Executed", len 31;
    /// Order Reference Number.
    order_reference_number: u64 @ 11,
    /// Executed Shares.
    executed_shares: u32 @ 19,
    /// Match Number.
    match_number: u64 @ 23,
}

itch_view! {
    /// 'C' Order Executed With Price (36 bytes).
    pub struct OrderExecutedWithPrice, what "ITCH 'C' Order Executed With Price", len 36;
    /// Order Reference Number.
    order_reference_number: u64 @ 11,
    /// Executed Shares.
    executed_shares: u32 @ 19,
    /// Match Number.
    match_number: u64 @ 23,
    /// Printable ('Y'/'N').
    printable: char @ 31,
    /// Execution Price, Price (4).
    execution_price: u32 @ 32,
}

itch_view! {
    /// 'X' Order Cancel (23 bytes).
    pub struct OrderCancel, what "ITCH 'X' Order Cancel", len 23;
    /// Order Reference Number.
    order_reference_number: u64 @ 11,
    /// Cancelled Shares.
    cancelled_shares: u32 @ 19,
}

itch_view! {
    /// 'D' Order Delete (19 bytes).
    pub struct OrderDelete, what "ITCH 'D' Order Delete", len 19;
    /// Order Reference Number.
    order_reference_number: u64 @ 11,
}

itch_view! {
    /// 'U' Order Replace (35 bytes).
    pub struct OrderReplace, what "ITCH 'U' Order Replace", len 35;
    /// Original Order Reference Number.
    original_order_reference_number: u64 @ 11,
    /// New Order Reference Number.
    new_order_reference_number: u64 @ 19,
    /// Shares (new total displayed quantity).
    shares: u32 @ 27,
    /// Price (4).
    price: u32 @ 31,
}

itch_view! {
    /// 'P' Trade, non-cross (44 bytes).
    pub struct Trade, what "ITCH 'P' Trade", len 44;
    /// Order Reference Number (zero since 2010).
    order_reference_number: u64 @ 11,
    /// Buy/Sell Indicator.
    side: side @ 19,
    /// Shares.
    shares: u32 @ 20,
    /// Stock symbol.
    stock: symbol @ 24,
    /// Price (4).
    price: u32 @ 32,
    /// Match Number.
    match_number: u64 @ 36,
}

itch_view! {
    /// 'Q' Cross Trade (40 bytes).
    pub struct CrossTrade, what "ITCH 'Q' Cross Trade", len 40;
    /// Shares (8 bytes).
    shares: u64 @ 11,
    /// Stock symbol.
    stock: symbol @ 19,
    /// Cross Price, Price (4).
    cross_price: u32 @ 27,
    /// Match Number.
    match_number: u64 @ 31,
    /// Cross Type: 'O', 'C', 'H'.
    cross_type: char @ 39,
}

itch_view! {
    /// 'B' Broken Trade (19 bytes).
    pub struct BrokenTrade, what "ITCH 'B' Broken Trade", len 19;
    /// Match Number.
    match_number: u64 @ 11,
}

itch_view! {
    /// 'I' Net Order Imbalance Indicator (50 bytes).
    pub struct Noii, what "ITCH 'I' NOII", len 50;
    /// Paired Shares.
    paired_shares: u64 @ 11,
    /// Imbalance Shares.
    imbalance_shares: u64 @ 19,
    /// Imbalance Direction: 'B', 'S', 'N', 'O', 'P'.
    imbalance_direction: char @ 27,
    /// Stock symbol.
    stock: symbol @ 28,
    /// Far Price, Price (4).
    far_price: u32 @ 36,
    /// Near Price, Price (4).
    near_price: u32 @ 40,
    /// Current Reference Price, Price (4).
    current_reference_price: u32 @ 44,
    /// Cross Type: 'O', 'C', 'H', 'A'.
    cross_type: char @ 48,
    /// Price Variation Indicator.
    price_variation_indicator: char @ 49,
}

itch_view! {
    /// 'N' Retail Price Improvement Indicator (20 bytes).
    pub struct RetailInterest, what "ITCH 'N' Retail Interest", len 20;
    /// Stock symbol.
    stock: symbol @ 11,
    /// Interest Flag: 'B', 'S', 'A', 'N'.
    interest_flag: char @ 19,
}

itch_view! {
    /// 'O' Direct Listing with Capital Raise Price Discovery (48 bytes).
    pub struct Dlcr, what "ITCH 'O' DLCR Price Discovery", len 48;
    /// Stock symbol.
    stock: symbol @ 11,
    /// Open Eligibility Status ('N'/'Y').
    open_eligibility_status: char @ 19,
    /// Minimum Allowable Price, Price (4).
    minimum_allowable_price: u32 @ 20,
    /// Maximum Allowable Price, Price (4).
    maximum_allowable_price: u32 @ 24,
    /// Near Execution Price, Price (4).
    near_execution_price: u32 @ 28,
    /// Near Execution Time.
    near_execution_time: u64 @ 32,
    /// Lower Price Range Collar, Price (4).
    lower_price_range_collar: u32 @ 40,
    /// Upper Price Range Collar, Price (4).
    upper_price_range_collar: u32 @ 44,
}

/// Generates [`Message`], [`parse`] and the common-header accessors from one list.
macro_rules! itch_messages {
    ($( $variant:ident ),+ $(,)?) => {
        /// One decoded ITCH 5.0 message: a typed view per type.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Message<'a> {
            $(
                #[doc = concat!("See [`", stringify!($variant), "`].")]
                $variant($variant<&'a [u8]>),
            )+
            /// A type this decoder does not know: the type byte and the whole message.
            Unknown(u8, &'a [u8]),
        }

        /// Decodes one ITCH message (`buf` holds exactly one message, as MoldUDP64 and SoupBinTCP
        /// deliver them). Unknown types are `Ok(Message::Unknown)`; an empty buffer or one shorter
        /// than its type requires is an error.
        #[inline]
        pub fn parse(buf: &[u8]) -> Result<Message<'_>> {
            let Some(&t) = buf.first() else {
                return Err(ProtoError::Truncated { what: "ITCH message", offset: 0, need: 1, have: 0 });
            };
            Ok(match MessageType::from(t) {
                $( MessageType::$variant => Message::$variant($variant::new_checked(buf)?), )+
                MessageType::Unknown(t) => Message::Unknown(t, buf),
            })
        }

        /// The spec length of a message type, `None` for unknown types.
        pub fn message_len(t: MessageType) -> Option<usize> {
            match t {
                $( MessageType::$variant => Some($variant::<&[u8]>::LEN), )+
                MessageType::Unknown(_) => None,
            }
        }

        impl<'a> Message<'a> {
            /// The message type.
            #[inline]
            pub fn message_type(&self) -> MessageType {
                match self {
                    $( Message::$variant(_) => MessageType::$variant, )+
                    Message::Unknown(t, _) => MessageType::Unknown(*t),
                }
            }
            /// The whole message.
            pub fn bytes(&self) -> &'a [u8] {
                match self {
                    $( Message::$variant(v) => v.into_inner(), )+
                    Message::Unknown(_, b) => b,
                }
            }
            /// Stock locate, timestamp and tracking number: `None` for unknown types (whose header
            /// layout is not known to match).
            #[inline]
            pub fn header(&self) -> Option<Header> {
                match self {
                    $( Message::$variant(v) => Some(Header {
                        stock_locate: v.stock_locate(),
                        tracking_number: v.tracking_number(),
                        timestamp_ns: v.timestamp(),
                    }), )+
                    Message::Unknown(..) => None,
                }
            }
        }
    };
}

itch_messages!(
    SystemEvent,
    StockDirectory,
    StockTradingAction,
    RegShoRestriction,
    MarketParticipantPosition,
    MwcbDeclineLevel,
    MwcbStatus,
    IpoQuotingPeriodUpdate,
    LuldAuctionCollar,
    OperationalHalt,
    AddOrder,
    AddOrderMpid,
    OrderExecuted,
    OrderExecutedWithPrice,
    OrderCancel,
    OrderDelete,
    OrderReplace,
    Trade,
    CrossTrade,
    BrokenTrade,
    Noii,
    RetailInterest,
    Dlcr,
);

/// The header fields common to all message types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Stock Locate.
    pub stock_locate: u16,
    /// Tracking Number.
    pub tracking_number: u16,
    /// Nanoseconds since midnight (Eastern time).
    pub timestamp_ns: u64,
}

/// The fields of an ITCH message the correlator keys on (the `Repr` level). Fields the type does
/// not carry are `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItchSummary {
    /// Message type.
    pub msg_type: MessageType,
    /// Stock Locate.
    pub stock_locate: u16,
    /// Tracking Number.
    pub tracking_number: u16,
    /// Nanoseconds since midnight (Eastern time).
    pub timestamp_ns: u64,
    /// Order Reference Number (for 'U': the original one).
    pub order_ref: Option<u64>,
    /// New Order Reference Number ('U').
    pub new_order_ref: Option<u64>,
    /// Buy/Sell Indicator.
    pub side: Option<Side>,
    /// Shares (added, executed, cancelled, replaced or crossed).
    pub shares: Option<u64>,
    /// Stock symbol when the message carries it.
    pub stock: Option<Symbol>,
    /// Price (4): display, execution, cross or replacement price.
    pub price: Option<u32>,
    /// Match Number.
    pub match_number: Option<u64>,
}

impl Message<'_> {
    /// The correlator's summary; `None` for unknown types.
    /// The stock symbol, for the types that carry one (the others take it from the locate map).
    #[inline]
    pub fn stock(&self) -> Option<Symbol> {
        match self {
            Message::AddOrder(m) => Some(m.stock()),
            Message::AddOrderMpid(m) => Some(m.stock()),
            Message::Trade(m) => Some(m.stock()),
            Message::CrossTrade(m) => Some(m.stock()),
            Message::StockDirectory(m) => Some(m.stock()),
            Message::StockTradingAction(m) => Some(m.stock()),
            Message::RegShoRestriction(m) => Some(m.stock()),
            Message::MarketParticipantPosition(m) => Some(m.stock()),
            Message::IpoQuotingPeriodUpdate(m) => Some(m.stock()),
            Message::LuldAuctionCollar(m) => Some(m.stock()),
            Message::OperationalHalt(m) => Some(m.stock()),
            Message::Noii(m) => Some(m.stock()),
            Message::RetailInterest(m) => Some(m.stock()),
            Message::Dlcr(m) => Some(m.stock()),
            _ => None,
        }
    }

    pub fn summary(&self) -> Option<ItchSummary> {
        let h = self.header()?;
        let mut s = ItchSummary {
            msg_type: self.message_type(),
            stock_locate: h.stock_locate,
            tracking_number: h.tracking_number,
            timestamp_ns: h.timestamp_ns,
            order_ref: None,
            new_order_ref: None,
            side: None,
            shares: None,
            stock: self.stock(),
            price: None,
            match_number: None,
        };
        match self {
            Message::AddOrder(m) => {
                s.order_ref = Some(m.order_reference_number());
                s.side = Some(m.side());
                s.shares = Some(m.shares().into());
                s.price = Some(m.price());
            }
            Message::AddOrderMpid(m) => {
                s.order_ref = Some(m.order_reference_number());
                s.side = Some(m.side());
                s.shares = Some(m.shares().into());
                s.price = Some(m.price());
            }
            Message::OrderExecuted(m) => {
                s.order_ref = Some(m.order_reference_number());
                s.shares = Some(m.executed_shares().into());
                s.match_number = Some(m.match_number());
            }
            Message::OrderExecutedWithPrice(m) => {
                s.order_ref = Some(m.order_reference_number());
                s.shares = Some(m.executed_shares().into());
                s.match_number = Some(m.match_number());
                s.price = Some(m.execution_price());
            }
            Message::OrderCancel(m) => {
                s.order_ref = Some(m.order_reference_number());
                s.shares = Some(m.cancelled_shares().into());
            }
            Message::OrderDelete(m) => s.order_ref = Some(m.order_reference_number()),
            Message::OrderReplace(m) => {
                s.order_ref = Some(m.original_order_reference_number());
                s.new_order_ref = Some(m.new_order_reference_number());
                s.shares = Some(m.shares().into());
                s.price = Some(m.price());
            }
            Message::Trade(m) => {
                s.order_ref = Some(m.order_reference_number());
                s.side = Some(m.side());
                s.shares = Some(m.shares().into());
                s.price = Some(m.price());
                s.match_number = Some(m.match_number());
            }
            Message::CrossTrade(m) => {
                s.shares = Some(m.shares());
                s.price = Some(m.cross_price());
                s.match_number = Some(m.match_number());
            }
            Message::BrokenTrade(m) => s.match_number = Some(m.match_number()),
            Message::StockDirectory(_) => {}
            Message::StockTradingAction(_) => {}
            Message::RegShoRestriction(_) => {}
            Message::MarketParticipantPosition(_) => {}
            Message::IpoQuotingPeriodUpdate(_) => {}
            Message::LuldAuctionCollar(_) => {}
            Message::OperationalHalt(_) => {}
            Message::Noii(_) => {}
            Message::RetailInterest(_) => {}
            Message::Dlcr(_) => {}
            Message::SystemEvent(_) | Message::MwcbDeclineLevel(_) | Message::MwcbStatus(_) => {}
            Message::Unknown(..) => return None,
        }
        Some(s)
    }
}

/// Per-type counters for a stream of ITCH messages: a bad message is a counter, not an error.
#[derive(Debug, Clone)]
pub struct ItchCounters {
    /// Decoded messages by type byte (known types only).
    pub by_type: [u64; 256],
    /// Messages of unknown type, by type byte.
    pub unknown_by_type: [u64; 256],
    /// Messages shorter than their type requires (or empty).
    pub truncated: u64,
    /// The last decoding error, for the report.
    pub last_error: Option<ProtoError>,
}

impl Default for ItchCounters {
    fn default() -> Self {
        ItchCounters { by_type: [0; 256], unknown_by_type: [0; 256], truncated: 0, last_error: None }
    }
}

impl ItchCounters {
    /// Decodes `buf` with [`parse`] and counts the outcome. Returns the message when it decoded
    /// (unknown types included, so callers can still see their bytes).
    #[inline]
    pub fn decode<'a>(&mut self, buf: &'a [u8]) -> Option<Message<'a>> {
        match parse(buf) {
            Ok(m) => {
                match m {
                    Message::Unknown(t, _) => self.unknown_by_type[usize::from(t)] += 1,
                    _ => self.by_type[usize::from(u8::from(m.message_type()))] += 1,
                }
                Some(m)
            }
            Err(e) => {
                self.truncated += 1;
                self.last_error = Some(e);
                None
            }
        }
    }
    /// Count of decoded messages of a known type.
    pub fn count(&self, t: MessageType) -> u64 {
        self.by_type[usize::from(u8::from(t))]
    }
    /// Total messages of unknown types.
    pub fn unknown(&self) -> u64 {
        self.unknown_by_type.iter().sum()
    }
    /// Total decoded messages of known types.
    pub fn decoded(&self) -> u64 {
        self.by_type.iter().sum()
    }
}

/// Stock locate code -> symbol, learnt from every message that names its stock: Stock Directory ('R')
/// at the start of the day, and Add Order, Trade and the others later, since a capture taken during
/// the day holds no Stock Directory and an Order Executed or Delete names only the locate. Locate codes
/// are assigned per day from 1 (spec "Architecture"), so a dense table indexed by locate is fastest.
#[derive(Debug, Clone, Default)]
pub struct LocateMap {
    /// By locate, the symbol's 8 bytes as a `u64`, 0 when none is known (no ITCH symbol is 8 zero
    /// bytes: they are space-padded). Empty until the first symbol, then every locate's: allocated
    /// zeroed, so the pages of locates never named stay unmapped (a session of one high locate costs
    /// a page, not 512 KiB).
    symbols: Vec<u64>,
}

/// Locate codes are 16 bits.
const LOCATES: usize = 1 << 16;

impl LocateMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }
    /// Records `locate -> symbol`.
    pub fn insert(&mut self, locate: u16, symbol: Symbol) {
        if self.symbols.is_empty() {
            self.symbols = vec![0; LOCATES];
        }
        self.symbols[usize::from(locate)] = u64::from_ne_bytes(symbol.0);
    }
    /// The symbol for a locate code, if a message named it.
    #[inline]
    pub fn get(&self, locate: u16) -> Option<Symbol> {
        self.symbols.get(usize::from(locate)).filter(|&&s| s != 0).map(|s| Symbol(s.to_ne_bytes()))
    }
    /// The symbol of a message on `locate` that names `carried` (or none): the one it names, which the
    /// map learns, else the one learnt. (One select and one store per message: whether a type names
    /// its stock is as random as the type, so a branch would mispredict.)
    #[inline(always)]
    pub fn learn(&mut self, locate: u16, carried: Option<Symbol>) -> Option<Symbol> {
        let Some(slot) = self.symbols.get_mut(usize::from(locate)) else { return self.learn_first(locate, carried) };
        let named = carried.map_or(0, |s| u64::from_ne_bytes(s.0));
        let symbol = if named != 0 { named } else { *slot };
        *slot = symbol;
        (symbol != 0).then(|| Symbol(symbol.to_ne_bytes()))
    }
    /// [`LocateMap::learn`] before the first symbol: the table is made for one named.
    #[cold]
    fn learn_first(&mut self, locate: u16, carried: Option<Symbol>) -> Option<Symbol> {
        let symbol = carried.filter(|s| s.0 != [0; 8])?;
        self.insert(locate, symbol);
        Some(symbol)
    }
    /// Learns from a message that names its stock.
    pub fn observe(&mut self, m: &Message<'_>) {
        if let (Some(h), Some(stock)) = (m.header(), m.stock()) {
            self.insert(h.stock_locate, stock);
        }
    }
    /// Number of locate codes known.
    pub fn len(&self) -> usize {
        self.symbols.iter().filter(|&&s| s != 0).count()
    }
    /// True when no locate code is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testutil::{B, assert_tiles};

    /// The common header, written field by field from the spec: type, locate, tracking, timestamp.
    fn hdr(t: u8, locate: u16, tracking: u16, ts: u64) -> B {
        B::new().c(t).u16(locate).u16(tracking).u48(ts)
    }

    /// One hand-built example per message type, in spec order.
    fn examples() -> Vec<Vec<u8>> {
        vec![
            hdr(b'S', 0, 1, 11_000_000_000).c(b'O').done(),
            hdr(b'R', 7, 2, 12_000_000_001)
                .s("AAPL", 8)
                .c(b'Q')
                .c(b'N')
                .u32(100)
                .c(b'N')
                .c(b'C')
                .s("Z", 2)
                .c(b'P')
                .c(b'N')
                .c(b'N')
                .c(b'1')
                .c(b'N')
                .u32(3)
                .c(b'Y')
                .done(),
            hdr(b'H', 8, 3, 34_200_000_000_000).s("MSFT", 8).c(b'T').c(b' ').s("IPO1", 4).done(),
            hdr(b'Y', 9, 4, 5).s("ZVZZT", 8).c(b'1').done(),
            hdr(b'L', 10, 5, 6).s("NSDQ", 4).s("AMD", 8).c(b'Y').c(b'N').c(b'A').done(),
            hdr(b'V', 0, 6, 7).u64(300_000_000_000).u64(280_000_000_000).u64(250_000_000_000).done(),
            hdr(b'W', 0, 7, 8).c(b'2').done(),
            hdr(b'K', 11, 8, 9).s("NEWCO", 8).u32(36_000).c(b'A').u32(150_000).done(),
            hdr(b'J', 12, 9, 10).s("TSLA", 8).u32(2_500_000).u32(2_750_000).u32(2_250_000).u32(2).done(),
            hdr(b'h', 13, 10, 11).s("QQQ", 8).c(b'B').c(b'H').done(),
            hdr(b'A', 14, 11, 60_631_522_337_160)
                .u64(0x0102_0304_0506_0708)
                .c(b'B')
                .u32(100)
                .s("SPY", 8)
                .u32(2_150_000)
                .done(),
            hdr(b'F', 15, 12, 13).u64(42).c(b'S').u32(200).s("IBM", 8).u32(1_234_500).s("GSCO", 4).done(),
            hdr(b'E', 16, 13, 14).u64(43).u32(50).u64(900_001).done(),
            hdr(b'C', 17, 14, 15).u64(44).u32(60).u64(900_002).c(b'Y').u32(999_900).done(),
            hdr(b'X', 18, 15, 16).u64(45).u32(70).done(),
            hdr(b'D', 19, 16, 17).u64(46).done(),
            hdr(b'U', 20, 17, 18).u64(47).u64(48).u32(80).u32(101_500).done(),
            hdr(b'P', 21, 18, 19).u64(0).c(b'B').u32(90).s("GE", 8).u32(77_700).u64(900_003).done(),
            hdr(b'Q', 22, 19, 20).u64(5_000_000_000).s("NVDA", 8).u32(4_500_000).u64(900_004).c(b'C').done(),
            hdr(b'B', 23, 20, 21).u64(900_005).done(),
            hdr(b'I', 24, 21, 22)
                .u64(1_000)
                .u64(2_000)
                .c(b'S')
                .s("META", 8)
                .u32(3_000_000)
                .u32(3_010_000)
                .u32(3_005_000)
                .c(b'O')
                .c(b'L')
                .done(),
            hdr(b'N', 25, 22, 23).s("INTC", 8).c(b'A').done(),
            hdr(b'O', 26, 23, 24)
                .s("DLCR", 8)
                .c(b'Y')
                .u32(80_000)
                .u32(180_000)
                .u32(100_000)
                .u64(37_800_000_000_000)
                .u32(90_000)
                .u32(110_000)
                .done(),
        ]
    }

    #[test]
    fn spec_lengths() {
        // Lengths from the spec tables (last offset + last length), independently of the views.
        let spec: [(u8, usize); 23] = [
            (b'S', 12),
            (b'R', 39),
            (b'H', 25),
            (b'Y', 20),
            (b'L', 26),
            (b'V', 35),
            (b'W', 12),
            (b'K', 28),
            (b'J', 35),
            (b'h', 21),
            (b'A', 36),
            (b'F', 40),
            (b'E', 31),
            (b'C', 36),
            (b'X', 23),
            (b'D', 19),
            (b'U', 35),
            (b'P', 44),
            (b'Q', 40),
            (b'B', 19),
            (b'I', 50),
            (b'N', 20),
            (b'O', 48),
        ];
        for (t, len) in spec {
            assert_eq!(message_len(MessageType::from(t)), Some(len), "type {}", t as char);
        }
        assert_eq!(message_len(MessageType::from(b'z')), None);
        for (ex, (t, len)) in examples().iter().zip(spec) {
            assert_eq!(ex[0], t);
            assert_eq!(ex.len(), len, "hand-built example for {}", t as char);
        }
    }

    #[test]
    fn field_tables_tile_the_message() {
        assert_tiles("S", SystemEvent::<&[u8]>::FIELDS, SystemEvent::<&[u8]>::LEN);
        assert_tiles("R", StockDirectory::<&[u8]>::FIELDS, StockDirectory::<&[u8]>::LEN);
        assert_tiles("H", StockTradingAction::<&[u8]>::FIELDS, StockTradingAction::<&[u8]>::LEN);
        assert_tiles("Y", RegShoRestriction::<&[u8]>::FIELDS, RegShoRestriction::<&[u8]>::LEN);
        assert_tiles("L", MarketParticipantPosition::<&[u8]>::FIELDS, MarketParticipantPosition::<&[u8]>::LEN);
        assert_tiles("V", MwcbDeclineLevel::<&[u8]>::FIELDS, MwcbDeclineLevel::<&[u8]>::LEN);
        assert_tiles("W", MwcbStatus::<&[u8]>::FIELDS, MwcbStatus::<&[u8]>::LEN);
        assert_tiles("K", IpoQuotingPeriodUpdate::<&[u8]>::FIELDS, IpoQuotingPeriodUpdate::<&[u8]>::LEN);
        assert_tiles("J", LuldAuctionCollar::<&[u8]>::FIELDS, LuldAuctionCollar::<&[u8]>::LEN);
        assert_tiles("h", OperationalHalt::<&[u8]>::FIELDS, OperationalHalt::<&[u8]>::LEN);
        assert_tiles("A", AddOrder::<&[u8]>::FIELDS, AddOrder::<&[u8]>::LEN);
        assert_tiles("F", AddOrderMpid::<&[u8]>::FIELDS, AddOrderMpid::<&[u8]>::LEN);
        assert_tiles("E", OrderExecuted::<&[u8]>::FIELDS, OrderExecuted::<&[u8]>::LEN);
        assert_tiles("C", OrderExecutedWithPrice::<&[u8]>::FIELDS, OrderExecutedWithPrice::<&[u8]>::LEN);
        assert_tiles("X", OrderCancel::<&[u8]>::FIELDS, OrderCancel::<&[u8]>::LEN);
        assert_tiles("D", OrderDelete::<&[u8]>::FIELDS, OrderDelete::<&[u8]>::LEN);
        assert_tiles("U", OrderReplace::<&[u8]>::FIELDS, OrderReplace::<&[u8]>::LEN);
        assert_tiles("P", Trade::<&[u8]>::FIELDS, Trade::<&[u8]>::LEN);
        assert_tiles("Q", CrossTrade::<&[u8]>::FIELDS, CrossTrade::<&[u8]>::LEN);
        assert_tiles("B", BrokenTrade::<&[u8]>::FIELDS, BrokenTrade::<&[u8]>::LEN);
        assert_tiles("I", Noii::<&[u8]>::FIELDS, Noii::<&[u8]>::LEN);
        assert_tiles("N", RetailInterest::<&[u8]>::FIELDS, RetailInterest::<&[u8]>::LEN);
        assert_tiles("O", Dlcr::<&[u8]>::FIELDS, Dlcr::<&[u8]>::LEN);
    }

    #[test]
    fn deconstruct_every_type() {
        let ex = examples();
        let m: Vec<Message<'_>> = ex.iter().map(|b| parse(b).unwrap()).collect();

        let Message::SystemEvent(v) = m[0] else { panic!("{:?}", m[0]) };
        assert_eq!(
            (v.stock_locate(), v.tracking_number(), v.timestamp(), v.event_code()),
            (0, 1, 11_000_000_000, b'O')
        );

        let Message::StockDirectory(v) = m[1] else { panic!() };
        assert_eq!((v.stock_locate(), v.tracking_number(), v.timestamp()), (7, 2, 12_000_000_001));
        assert_eq!(v.stock(), Symbol(*b"AAPL    "));
        assert_eq!((v.market_category(), v.financial_status_indicator(), v.round_lot_size()), (b'Q', b'N', 100));
        assert_eq!((v.round_lots_only(), v.issue_classification(), v.issue_sub_type()), (b'N', b'C', *b"Z "));
        assert_eq!((v.authenticity(), v.short_sale_threshold_indicator(), v.ipo_flag()), (b'P', b'N', b'N'));
        assert_eq!((v.luld_reference_price_tier(), v.etp_flag(), v.etp_leverage_factor()), (b'1', b'N', 3));
        assert_eq!(v.inverse_indicator(), b'Y');

        let Message::StockTradingAction(v) = m[2] else { panic!() };
        assert_eq!((v.stock_locate(), v.timestamp(), v.stock().as_str()), (8, 34_200_000_000_000, Some("MSFT")));
        assert_eq!((v.trading_state(), v.reserved(), v.reason()), (b'T', b' ', *b"IPO1"));

        let Message::RegShoRestriction(v) = m[3] else { panic!() };
        assert_eq!((v.stock_locate(), v.stock().as_str(), v.reg_sho_action()), (9, Some("ZVZZT"), b'1'));

        let Message::MarketParticipantPosition(v) = m[4] else { panic!() };
        assert_eq!((v.mpid(), v.stock().as_str()), (*b"NSDQ", Some("AMD")));
        assert_eq!((v.primary_market_maker(), v.market_maker_mode(), v.market_participant_state()), (b'Y', b'N', b'A'));

        let Message::MwcbDeclineLevel(v) = m[5] else { panic!() };
        assert_eq!((v.level1(), v.level2(), v.level3()), (300_000_000_000, 280_000_000_000, 250_000_000_000));

        let Message::MwcbStatus(v) = m[6] else { panic!() };
        assert_eq!((v.tracking_number(), v.breached_level()), (7, b'2'));

        let Message::IpoQuotingPeriodUpdate(v) = m[7] else { panic!() };
        assert_eq!((v.stock().as_str(), v.ipo_quotation_release_time()), (Some("NEWCO"), 36_000));
        assert_eq!((v.ipo_quotation_release_qualifier(), v.ipo_price()), (b'A', 150_000));

        let Message::LuldAuctionCollar(v) = m[8] else { panic!() };
        assert_eq!((v.auction_collar_reference_price(), v.upper_auction_collar_price()), (2_500_000, 2_750_000));
        assert_eq!((v.lower_auction_collar_price(), v.auction_collar_extension()), (2_250_000, 2));

        let Message::OperationalHalt(v) = m[9] else { panic!() };
        assert_eq!((v.stock().as_str(), v.market_code(), v.operational_halt_action()), (Some("QQQ"), b'B', b'H'));

        let Message::AddOrder(v) = m[10] else { panic!() };
        assert_eq!((v.stock_locate(), v.tracking_number(), v.timestamp()), (14, 11, 60_631_522_337_160));
        assert_eq!((v.order_reference_number(), v.side(), v.shares()), (0x0102_0304_0506_0708, Side::Buy, 100));
        assert_eq!((v.stock().as_str(), v.price()), (Some("SPY"), 2_150_000));

        let Message::AddOrderMpid(v) = m[11] else { panic!() };
        assert_eq!((v.order_reference_number(), v.side(), v.shares(), v.price()), (42, Side::Sell, 200, 1_234_500));
        assert_eq!((v.stock().as_str(), v.attribution()), (Some("IBM"), *b"GSCO"));

        let Message::OrderExecuted(v) = m[12] else { panic!() };
        assert_eq!((v.order_reference_number(), v.executed_shares(), v.match_number()), (43, 50, 900_001));

        let Message::OrderExecutedWithPrice(v) = m[13] else { panic!() };
        assert_eq!((v.order_reference_number(), v.executed_shares(), v.match_number()), (44, 60, 900_002));
        assert_eq!((v.printable(), v.execution_price()), (b'Y', 999_900));

        let Message::OrderCancel(v) = m[14] else { panic!() };
        assert_eq!((v.order_reference_number(), v.cancelled_shares()), (45, 70));

        let Message::OrderDelete(v) = m[15] else { panic!() };
        assert_eq!((v.stock_locate(), v.order_reference_number()), (19, 46));

        let Message::OrderReplace(v) = m[16] else { panic!() };
        assert_eq!((v.original_order_reference_number(), v.new_order_reference_number()), (47, 48));
        assert_eq!((v.shares(), v.price()), (80, 101_500));

        let Message::Trade(v) = m[17] else { panic!() };
        assert_eq!(
            (v.order_reference_number(), v.side(), v.shares(), v.stock().as_str()),
            (0, Side::Buy, 90, Some("GE"))
        );
        assert_eq!((v.price(), v.match_number()), (77_700, 900_003));

        let Message::CrossTrade(v) = m[18] else { panic!() };
        assert_eq!((v.shares(), v.stock().as_str(), v.cross_price()), (5_000_000_000, Some("NVDA"), 4_500_000));
        assert_eq!((v.match_number(), v.cross_type()), (900_004, b'C'));

        let Message::BrokenTrade(v) = m[19] else { panic!() };
        assert_eq!(v.match_number(), 900_005);

        let Message::Noii(v) = m[20] else { panic!() };
        assert_eq!((v.paired_shares(), v.imbalance_shares(), v.imbalance_direction()), (1_000, 2_000, b'S'));
        assert_eq!((v.stock().as_str(), v.far_price(), v.near_price()), (Some("META"), 3_000_000, 3_010_000));
        assert_eq!(
            (v.current_reference_price(), v.cross_type(), v.price_variation_indicator()),
            (3_005_000, b'O', b'L')
        );

        let Message::RetailInterest(v) = m[21] else { panic!() };
        assert_eq!((v.stock().as_str(), v.interest_flag()), (Some("INTC"), b'A'));

        let Message::Dlcr(v) = m[22] else { panic!() };
        assert_eq!((v.stock().as_str(), v.open_eligibility_status()), (Some("DLCR"), b'Y'));
        assert_eq!((v.minimum_allowable_price(), v.maximum_allowable_price()), (80_000, 180_000));
        assert_eq!((v.near_execution_price(), v.near_execution_time()), (100_000, 37_800_000_000_000));
        assert_eq!((v.lower_price_range_collar(), v.upper_price_range_collar()), (90_000, 110_000));
    }

    #[test]
    fn summaries() {
        let ex = examples();
        let a = parse(&ex[10]).unwrap().summary().unwrap();
        assert_eq!(a.msg_type, MessageType::AddOrder);
        assert_eq!((a.stock_locate, a.tracking_number, a.timestamp_ns), (14, 11, 60_631_522_337_160));
        assert_eq!((a.order_ref, a.side, a.shares), (Some(0x0102_0304_0506_0708), Some(Side::Buy), Some(100)));
        assert_eq!(
            (a.stock, a.price, a.match_number, a.new_order_ref),
            (Some(Symbol::new("SPY")), Some(2_150_000), None, None)
        );
        let u = parse(&ex[16]).unwrap().summary().unwrap();
        assert_eq!((u.order_ref, u.new_order_ref, u.shares, u.price), (Some(47), Some(48), Some(80), Some(101_500)));
        let c = parse(&ex[13]).unwrap().summary().unwrap();
        assert_eq!(
            (c.order_ref, c.shares, c.price, c.match_number),
            (Some(44), Some(60), Some(999_900), Some(900_002))
        );
        let q = parse(&ex[18]).unwrap().summary().unwrap();
        assert_eq!((q.shares, q.price, q.match_number), (Some(5_000_000_000), Some(4_500_000), Some(900_004)));
        let s = parse(&ex[0]).unwrap().summary().unwrap();
        assert_eq!((s.msg_type, s.stock, s.order_ref), (MessageType::SystemEvent, None, None));
        assert!(parse(b"z123").unwrap().summary().is_none());
    }

    #[test]
    fn every_prefix_is_a_truncation_error() {
        for ex in examples() {
            for k in 0..ex.len() {
                match parse(&ex[..k]) {
                    Err(ProtoError::Truncated { need, have, .. }) => {
                        assert_eq!(have, k);
                        assert_eq!(need, if k == 0 { 1 } else { ex.len() });
                    }
                    other => panic!("prefix {k} of type {}: {other:?}", ex[0] as char),
                }
            }
            // Longer than the spec: accepted, extra bytes ignored.
            let mut long = ex.clone();
            long.extend_from_slice(b"xyz");
            assert_eq!(parse(&long).unwrap().message_type(), MessageType::from(ex[0]));
        }
    }

    #[test]
    fn unknown_types_are_counted_not_fatal() {
        let mut c = ItchCounters::default();
        let ex = examples();
        assert!(matches!(c.decode(b"z\x00\x01"), Some(Message::Unknown(b'z', _))));
        assert!(c.decode(&ex[10][..20]).is_none());
        assert!(c.decode(&[]).is_none());
        assert!(c.decode(&ex[10]).is_some());
        assert_eq!((c.unknown(), c.truncated, c.count(MessageType::AddOrder), c.decoded()), (1, 2, 1, 1));
        assert_eq!(c.last_error, Some(ProtoError::Truncated { what: "ITCH message", offset: 0, need: 1, have: 0 }));
    }

    /// The examples put each message on a locate of its own: the 14 that name their stock (R, H, Y, L,
    /// K, J, h, A, F, P, Q, I, N, O) name theirs; Executed (16) names none.
    #[test]
    fn locate_map_from_messages_naming_their_stock() {
        let ex = examples();
        let mut map = LocateMap::new();
        assert!(map.is_empty());
        for b in &ex {
            map.observe(&parse(b).unwrap());
        }
        assert_eq!(map.len(), 14);
        assert_eq!(map.get(7), Some(Symbol::new("AAPL")));
        assert_eq!(map.get(8), Some(Symbol::new("MSFT")));
        assert_eq!(map.get(15), Some(Symbol::new("IBM")));
        assert_eq!(map.get(16), None);
        assert_eq!(map.get(65_535), None);
        map.insert(65_535, Symbol::new("LAST"));
        assert_eq!(map.get(65_535).unwrap().as_str(), Some("LAST"));
        // `learn`: a message naming its stock teaches it (a new one replaces the old: locates are the
        // day's), one naming none gets what was learnt; past the table, nothing is made up.
        let mut map = LocateMap::new();
        assert_eq!(map.learn(3, None), None);
        assert_eq!(map.learn(3, Some(Symbol::new("MSFT"))), Some(Symbol::new("MSFT")));
        assert_eq!(map.learn(3, None), Some(Symbol::new("MSFT")));
        assert_eq!(map.learn(2, None), None);
        assert_eq!(map.learn(9, None), None);
        assert_eq!(map.learn(3, Some(Symbol::new("IBM"))), Some(Symbol::new("IBM")));
        assert_eq!((map.get(3), map.len()), (Some(Symbol::new("IBM")), 1));
    }
}
