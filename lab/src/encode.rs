//! Encoders for the protocols the synthetic market speaks, written from the specs in `shared/specs`
//! (ITCH 5.0, OUCH 5.0, SoupBinTCP 4.0) and Wireshark's MoldUDP64 layout. All integers big-endian.

/// ITCH 5.0 timestamps are 6-byte nanoseconds since midnight.
fn put_ts48(out: &mut Vec<u8>, ns_since_midnight: u64) {
    out.extend_from_slice(&ns_since_midnight.to_be_bytes()[2..]);
}

/// An 8-byte alpha field, left-justified and space-padded.
pub fn alpha8(s: &str) -> [u8; 8] {
    let mut b = [b' '; 8];
    for (d, c) in b.iter_mut().zip(s.bytes()) {
        *d = c;
    }
    b
}

/// ITCH 5.0 messages the synthetic feed sends.
pub mod itch {
    use super::{alpha8, put_ts48};

    /// Stock Directory 'R' (39 bytes).
    pub fn stock_directory(out: &mut Vec<u8>, locate: u16, ts: u64, symbol: &str) {
        out.push(b'R');
        out.extend_from_slice(&locate.to_be_bytes());
        out.extend_from_slice(&0u16.to_be_bytes());
        put_ts48(out, ts);
        out.extend_from_slice(&alpha8(symbol));
        out.push(b'Q'); // market category: Nasdaq Global Select
        out.push(b'N'); // financial status: normal
        out.extend_from_slice(&100u32.to_be_bytes()); // round lot size
        out.push(b'N'); // round lots only
        out.push(b'C'); // issue classification: common stock
        out.extend_from_slice(b"Z "); // issue sub-type
        out.push(b'P'); // authenticity: live
        out.push(b'N'); // short sale threshold
        out.push(b'N'); // IPO flag
        out.push(b'1'); // LULD tier
        out.push(b'N'); // ETP flag
        out.extend_from_slice(&0u32.to_be_bytes()); // ETP leverage factor
        out.push(b'N'); // inverse indicator
    }

    /// Add Order 'A' (36 bytes). `price` has 4 implied decimals.
    #[allow(clippy::too_many_arguments)]
    pub fn add_order(
        out: &mut Vec<u8>,
        locate: u16,
        ts: u64,
        order_ref: u64,
        side: u8,
        shares: u32,
        symbol: &str,
        price: u32,
    ) {
        out.push(b'A');
        out.extend_from_slice(&locate.to_be_bytes());
        out.extend_from_slice(&0u16.to_be_bytes());
        put_ts48(out, ts);
        out.extend_from_slice(&order_ref.to_be_bytes());
        out.push(side);
        out.extend_from_slice(&shares.to_be_bytes());
        out.extend_from_slice(&alpha8(symbol));
        out.extend_from_slice(&price.to_be_bytes());
    }

    /// Order Executed 'E' (31 bytes).
    pub fn executed(out: &mut Vec<u8>, locate: u16, ts: u64, order_ref: u64, shares: u32, match_no: u64) {
        out.push(b'E');
        out.extend_from_slice(&locate.to_be_bytes());
        out.extend_from_slice(&0u16.to_be_bytes());
        put_ts48(out, ts);
        out.extend_from_slice(&order_ref.to_be_bytes());
        out.extend_from_slice(&shares.to_be_bytes());
        out.extend_from_slice(&match_no.to_be_bytes());
    }

    /// Order Cancel 'X' (23 bytes).
    pub fn cancel(out: &mut Vec<u8>, locate: u16, ts: u64, order_ref: u64, shares: u32) {
        out.push(b'X');
        out.extend_from_slice(&locate.to_be_bytes());
        out.extend_from_slice(&0u16.to_be_bytes());
        put_ts48(out, ts);
        out.extend_from_slice(&order_ref.to_be_bytes());
        out.extend_from_slice(&shares.to_be_bytes());
    }

    /// Order Delete 'D' (19 bytes).
    pub fn delete(out: &mut Vec<u8>, locate: u16, ts: u64, order_ref: u64) {
        out.push(b'D');
        out.extend_from_slice(&locate.to_be_bytes());
        out.extend_from_slice(&0u16.to_be_bytes());
        put_ts48(out, ts);
        out.extend_from_slice(&order_ref.to_be_bytes());
    }
}

/// MoldUDP64 downstream packets: `session (10) | sequence u64 | count u16 | (len u16 | message)*`.
pub mod mold {
    /// Writes a packet header; count 0 is a heartbeat, 0xFFFF end of session.
    pub fn header(out: &mut Vec<u8>, session: &[u8; 10], seq: u64, count: u16) {
        out.extend_from_slice(session);
        out.extend_from_slice(&seq.to_be_bytes());
        out.extend_from_slice(&count.to_be_bytes());
    }

    /// Appends one length-prefixed message block.
    pub fn block(out: &mut Vec<u8>, msg: &[u8]) {
        out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
        out.extend_from_slice(msg);
    }
}

/// SoupBinTCP 4.0 packets: `length u16 (excludes itself) | type | payload`.
pub mod soup {
    /// Appends one packet.
    pub fn packet(out: &mut Vec<u8>, kind: u8, payload: &[u8]) {
        out.extend_from_slice(&((payload.len() + 1) as u16).to_be_bytes());
        out.push(kind);
        out.extend_from_slice(payload);
    }

    /// Login Request 'L' payload: username (6), password (10), session (10), sequence (20), all alpha.
    pub fn login_request(user: &str, password: &str) -> Vec<u8> {
        let mut p = Vec::with_capacity(46);
        p.extend_from_slice(format!("{user:<6}").as_bytes());
        p.extend_from_slice(format!("{password:<10}").as_bytes());
        p.extend_from_slice(&[b' '; 10]);
        p.extend_from_slice(format!("{:>20}", 1).as_bytes());
        p
    }

    /// Login Accepted 'A' payload: session (10), sequence number (20, right-justified).
    pub fn login_accepted(session: &str, seq: u64) -> Vec<u8> {
        let mut p = Vec::with_capacity(30);
        p.extend_from_slice(format!("{session:<10}").as_bytes());
        p.extend_from_slice(format!("{seq:>20}").as_bytes());
        p
    }
}

/// OUCH 5.0 messages.
pub mod ouch {
    use super::alpha8;

    /// Fields of an order as entered.
    #[derive(Debug, Clone)]
    pub struct Order {
        /// Day-unique, strictly increasing.
        pub user_ref_num: u32,
        /// b'B' or b'S'.
        pub side: u8,
        /// Shares.
        pub quantity: u32,
        /// Stock symbol.
        pub symbol: String,
        /// Price, 4 implied decimals (OUCH 5.0 prices are 8 bytes).
        pub price: u64,
        /// Customer order id, 14 alphanumeric characters.
        pub cl_ord_id: String,
    }

    fn cl_ord_id(id: &str) -> [u8; 14] {
        let mut b = [b' '; 14];
        for (d, c) in b.iter_mut().zip(id.bytes()) {
            *d = c;
        }
        b
    }

    /// Enter Order 'O' (47 bytes, no appendage).
    pub fn enter_order(out: &mut Vec<u8>, o: &Order) {
        out.push(b'O');
        out.extend_from_slice(&o.user_ref_num.to_be_bytes());
        out.push(o.side);
        out.extend_from_slice(&o.quantity.to_be_bytes());
        out.extend_from_slice(&alpha8(&o.symbol));
        out.extend_from_slice(&o.price.to_be_bytes());
        out.push(b'0'); // time in force: day
        out.push(b'Y'); // display: visible
        out.push(b'P'); // capacity: principal
        out.push(b'N'); // intermarket sweep: not eligible
        out.push(b'N'); // cross type: continuous market
        out.extend_from_slice(&cl_ord_id(&o.cl_ord_id));
        out.extend_from_slice(&0u16.to_be_bytes()); // appendage length
    }

    /// Order Accepted 'A' (64 bytes, no appendage).
    pub fn accepted(out: &mut Vec<u8>, ts_since_midnight: u64, o: &Order, order_ref: u64) {
        out.push(b'A');
        out.extend_from_slice(&ts_since_midnight.to_be_bytes());
        out.extend_from_slice(&o.user_ref_num.to_be_bytes());
        out.push(o.side);
        out.extend_from_slice(&o.quantity.to_be_bytes());
        out.extend_from_slice(&alpha8(&o.symbol));
        out.extend_from_slice(&o.price.to_be_bytes());
        out.push(b'0');
        out.push(b'Y');
        out.extend_from_slice(&order_ref.to_be_bytes());
        out.push(b'P');
        out.push(b'N');
        out.push(b'N');
        out.push(b'L'); // order state: live
        out.extend_from_slice(&cl_ord_id(&o.cl_ord_id));
        out.extend_from_slice(&0u16.to_be_bytes());
    }

    /// Replace Order Request 'U' (40 bytes, no appendage): order `orig_user_ref_num` replaced by `o`
    /// (its UserRefNum, quantity, price and ClOrdID; the symbol and side are the replaced order's).
    pub fn replace_order(out: &mut Vec<u8>, orig_user_ref_num: u32, o: &Order) {
        out.push(b'U');
        out.extend_from_slice(&orig_user_ref_num.to_be_bytes());
        out.extend_from_slice(&o.user_ref_num.to_be_bytes());
        out.extend_from_slice(&o.quantity.to_be_bytes());
        out.extend_from_slice(&o.price.to_be_bytes());
        out.push(b'0'); // time in force: day
        out.push(b'Y'); // display: visible
        out.push(b'N'); // intermarket sweep: not eligible
        out.extend_from_slice(&cl_ord_id(&o.cl_ord_id));
        out.extend_from_slice(&0u16.to_be_bytes()); // appendage length
    }

    /// Cancel Order Request 'X' (9 bytes): the order `user_ref_num` reduced to `quantity` shares.
    pub fn cancel_order(out: &mut Vec<u8>, user_ref_num: u32, quantity: u32) {
        out.push(b'X');
        out.extend_from_slice(&user_ref_num.to_be_bytes());
        out.extend_from_slice(&quantity.to_be_bytes());
    }

    /// Cancel Pending 'P' or Cancel Reject 'I' (13 bytes): the answer to a Cancel of `user_ref_num`
    /// that cannot be done at once, or at all.
    pub fn cancel_answer(out: &mut Vec<u8>, ty: u8, ts_since_midnight: u64, user_ref_num: u32) {
        assert!(matches!(ty, b'P' | b'I'), "Cancel Pending or Cancel Reject");
        out.push(ty);
        out.extend_from_slice(&ts_since_midnight.to_be_bytes());
        out.extend_from_slice(&user_ref_num.to_be_bytes());
    }

    /// Order Canceled 'C' (18 bytes): `quantity` shares of `user_ref_num` canceled, for `reason`.
    pub fn canceled(out: &mut Vec<u8>, ts_since_midnight: u64, user_ref_num: u32, quantity: u32, reason: u8) {
        out.push(b'C');
        out.extend_from_slice(&ts_since_midnight.to_be_bytes());
        out.extend_from_slice(&user_ref_num.to_be_bytes());
        out.extend_from_slice(&quantity.to_be_bytes());
        out.push(reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_lengths_match_the_specs() {
        let mut v = Vec::new();
        itch::stock_directory(&mut v, 1, 0, "AAPL");
        assert_eq!(v.len(), 39);
        v.clear();
        itch::add_order(&mut v, 1, 0, 1, b'B', 100, "AAPL", 1_000_000);
        assert_eq!(v.len(), 36);
        v.clear();
        itch::executed(&mut v, 1, 0, 1, 100, 9);
        assert_eq!(v.len(), 31);
        v.clear();
        itch::cancel(&mut v, 1, 0, 1, 100);
        assert_eq!(v.len(), 23);
        v.clear();
        itch::delete(&mut v, 1, 0, 1);
        assert_eq!(v.len(), 19);
        let o = ouch::Order {
            user_ref_num: 0x00753a8d,
            side: b'B',
            quantity: 500,
            symbol: "AAPL".into(),
            price: 1_000_000,
            cl_ord_id: "T0000000000042".into(),
        };
        v.clear();
        ouch::enter_order(&mut v, &o);
        assert_eq!(v.len(), 47);
        assert_eq!(&v[1..5], &[0x00, 0x75, 0x3a, 0x8d]);
        assert_eq!(&v[31..45], b"T0000000000042");
        v.clear();
        ouch::replace_order(&mut v, 7, &o);
        assert_eq!(v.len(), 40);
        v.clear();
        ouch::accepted(&mut v, 1, &o, 7);
        assert_eq!(v.len(), 64);
        assert_eq!(&v[48..62], b"T0000000000042");
        v.clear();
        ouch::cancel_order(&mut v, 0x00753a8d, 0);
        assert_eq!(v, [b'X', 0x00, 0x75, 0x3a, 0x8d, 0, 0, 0, 0]);
        v.clear();
        ouch::canceled(&mut v, 1, 0x00753a8d, 500, b'U');
        assert_eq!(v.len(), 18);
        assert_eq!((&v[9..13], &v[13..17], v[17]), (&[0x00, 0x75, 0x3a, 0x8d][..], &500u32.to_be_bytes()[..], b'U'));
        assert_eq!(soup::login_request("user", "pw").len(), 46);
        assert_eq!(soup::login_accepted("S1", 1).len(), 30);
        v.clear();
        soup::packet(&mut v, b'U', &[1, 2, 3]);
        assert_eq!(v, [0, 4, b'U', 1, 2, 3]);
    }

    #[test]
    fn itch_timestamp_is_48_bits() {
        let mut v = Vec::new();
        itch::delete(&mut v, 0x0102, 0x0000_1234_5678_9abc, 0);
        assert_eq!(&v[1..3], &[1, 2]);
        assert_eq!(&v[5..11], &[0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc]);
    }
}
