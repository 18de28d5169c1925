//! What the order path remembers of each account's orders for the Replaces of them: the symbol of
//! each order not known to have ended (a Replace carries none: it keeps its order's), and each Replace
//! request by the order it replaces (an invalid Replace is answered by a Canceled of that order).
//!
//! It also tells a retransmitted Enter from a new order ([`Accounts::enter_resent`]), in every mode:
//! the exchange ignores an Enter of an id its account already entered that trading day (OUCH 5.0
//! §1.2: UserRefNums are strictly increasing, and one not above the last is taken for a
//! retransmission; OUCH 4.x: order tokens are day-unique). Per account, the last UserRefNum entered
//! (16 bytes with its time); and the order tokens of the last [`ORDERS_MAX`] Enters of all accounts
//! together (one account's Enters make another's older tokens go), 28 bytes each in their table,
//! with their day, and 24 in the queue: with the table's free room (2^21 slots for 2^20 tokens), 82
//! bytes a token, 86 MB at the bound. 1.5 M OUCH 4.2 Enters under the token rule, each answered,
//! peaked at 142 MB where they took 32 (the table growing to its 2^21 slots holds both), and took
//! 0.9 us more each (a look-up and an insertion in a table beyond the caches), where an OUCH 5.0
//! Enter's test is a comparison.
//!
//! An order never answered stays until the bound ([`ORDERS_MAX`]), so what one costs is kept small:
//! an account is a number (its [`Owner`], 48 bytes, is kept once), and OUCH 5.0's UserRefNums (4
//! bytes) are kept apart from OUCH 4.x's order tokens (14). An entry for a UserRefNum takes 24
//! bytes in its table and 12 in the queue that bounds it, where one took 80 and 72 (and the queue
//! grew to twice the bound): 2.4 M orders never answered peaked at 377 MB under the symbol rule,
//! 78 MB with the bound lowered to 1,024 orders, and 154 MB now.

use super::Owner;
use super::bounded::BoundedMap;
use super::eastern::EasternClock;
use crate::fxhash::FxHashMap;
use crate::proto::{OrderDir, OrderId, OrderSummary, Symbol};
use std::num::NonZeroU32;

/// Orders of each OUCH version whose symbol, and Replace requests whose order, are kept at most:
/// beyond, the oldest insertion goes (a Replace of its order counts as unmatched).
pub(super) const ORDERS_MAX: usize = 1 << 20;

/// Accounts whose orders are remembered, at most: more than the order connections taken (16,384),
/// each acting for one account at a time. Orders of further accounts are not remembered (their
/// Replaces are unmatched under the symbol rule, an invalid one is not paired with the Canceled
/// that answers it, and none of their Enters is told a retransmission), as a capture of ever-new
/// logins must not take memory without end.
pub(super) const ACCOUNTS_MAX: usize = 1 << 16;

/// An account's number, given in the order first seen.
type Account = u32;

/// What is kept of an order: its symbol, and its shares outstanding when known (an Enter's, or
/// those its Replaced or Modified said; executions and cancels take from them, and an order left
/// with none has ended).
#[derive(Debug, Clone, Copy)]
struct Kept {
    symbol: Symbol,
    leaves: Option<NonZeroU32>,
}

/// A bounded map per kind of order id (values `R` for a UserRefNum, `T` for a token): an entry
/// keyed by a UserRefNum is not the size of one keyed by a token.
#[derive(Debug)]
struct ById<R, T> {
    refs: BoundedMap<(Account, u32), R>,
    tokens: BoundedMap<(Account, [u8; 14]), T>,
}

impl<R: Copy, T: Copy> ById<R, T> {
    fn new(cap: usize) -> Self {
        ById { refs: BoundedMap::new(cap), tokens: BoundedMap::new(cap) }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.refs.len() + self.tokens.len()
    }
}

impl<V: Copy> ById<V, V> {
    fn get(&self, a: Account, id: OrderId) -> Option<V> {
        match id {
            OrderId::UserRefNum(n) => self.refs.get(&(a, n)),
            OrderId::Token(t) => self.tokens.get(&(a, t)),
        }
    }

    fn get_mut(&mut self, a: Account, id: OrderId) -> Option<&mut V> {
        match id {
            OrderId::UserRefNum(n) => self.refs.get_mut(&(a, n)),
            OrderId::Token(t) => self.tokens.get_mut(&(a, t)),
        }
    }

    fn insert(&mut self, a: Account, id: OrderId, v: V) {
        match id {
            OrderId::UserRefNum(n) => self.refs.insert((a, n), v),
            OrderId::Token(t) => self.tokens.insert((a, t), v),
        }
    }

    fn remove(&mut self, a: Account, id: OrderId) -> Option<V> {
        match id {
            OrderId::UserRefNum(n) => self.refs.remove(&(a, n)),
            OrderId::Token(t) => self.tokens.remove(&(a, t)),
        }
    }
}

/// Each account's orders, as far as Replaces need them.
#[derive(Debug)]
pub(super) struct Accounts {
    numbers: FxHashMap<Owner, Account>,
    /// The owner last looked up, with its number: messages come in runs of one connection's.
    last: Option<(Owner, Account)>,
    /// The symbol of each order entered or replaced (kept only when a symbol is read: the symbol
    /// rule, `--by symbol`), until the order ends: replaced, rejected, dead on acceptance, or left
    /// with no shares outstanding by executions and cancels.
    symbols: ById<Kept, Kept>,
    /// Replace requests by the order they replace: the new order's id (of the same kind), until the
    /// Replaced (or the Canceled that answers an invalid one).
    replaced_by: ById<u32, [u8; 14]>,
    /// By account: the capture time of its last UserRefNum entered, and that number ([`NO_TIME`]
    /// before its first Enter: the capture may begin mid-day, and its first Enter sets the start).
    last_ref: Vec<(i64, u32)>,
    /// The last connection whose Enter was looked at, with its login and its account.
    last_conn: Option<(usize, Option<[u8; 6]>, Account)>,
    /// The order tokens entered, with their trading day, for the last [`ORDERS_MAX`] Enters of all
    /// accounts together.
    tokens_entered: BoundedMap<(Account, [u8; 14]), i32>,
    /// Capture time to the US Eastern day (a trading day's ids are unique within it).
    days: EasternClock,
}

/// [`Accounts::last_ref`]'s time of an account that entered no UserRefNum yet.
const NO_TIME: i64 = i64::MIN;

impl Accounts {
    pub(super) fn new() -> Self {
        Accounts::with_bound(ORDERS_MAX)
    }

    /// With `orders` in place of [`ORDERS_MAX`] (the tests lower it).
    fn with_bound(orders: usize) -> Self {
        Accounts {
            numbers: FxHashMap::default(),
            last: None,
            symbols: ById::new(orders),
            replaced_by: ById::new(orders),
            last_ref: Vec::new(),
            last_conn: None,
            tokens_entered: BoundedMap::new(orders),
            days: EasternClock::EMPTY,
        }
    }

    /// Whether the Enter of order `id` at capture time `t` on connection `ci`, logged in as `login`,
    /// is a retransmission, which the exchange ignores (it acts on the first it received, and
    /// answers that one only): an id the account entered earlier that trading day (US Eastern, of the
    /// capture's clock). A UserRefNum is one not above the last entered (OUCH 5.0 §1.2), whatever
    /// became of that order; a token one of the last [`ORDERS_MAX`] Enters' (of all accounts
    /// together). Otherwise the Enter is a new order's, and its id is kept. (A Replace's new id is
    /// not: the exchange consumes it only if it acts on the Replace, §2.2, and a resent Enter's first
    /// was an Enter.) `owner` gives the connection's owner, needed only when its account is not the
    /// last connection's. An account beyond [`ACCOUNTS_MAX`] has none resent.
    pub(super) fn enter_resent(
        &mut self,
        ci: usize,
        login: Option<[u8; 6]>,
        owner: impl FnOnce() -> Owner,
        id: OrderId,
        t: i64,
    ) -> bool {
        // (A connection's owner changes only with its login: comparing the two is cheaper.)
        let a = match self.last_conn {
            Some((c, l, a)) if c == ci && l == login => a,
            _ => {
                let Some(a) = self.account(owner()) else { return false };
                if a as usize >= self.last_ref.len() {
                    self.last_ref.resize(a as usize + 1, (NO_TIME, 0));
                }
                self.last_conn = Some((ci, login, a));
                a
            }
        };
        match id {
            OrderId::UserRefNum(n) => {
                let last = self.last_ref[a as usize];
                // (The day is looked at only then: most Enters are above the last.)
                if n <= last.1 && last.0 != NO_TIME && self.days.day(last.0) == self.days.day(t) {
                    return true;
                }
                self.last_ref[a as usize] = (t, n);
                false
            }
            OrderId::Token(tok) => {
                let day = self.days.day(t);
                if self.tokens_entered.get(&(a, tok)) == Some(day) {
                    return true;
                }
                self.tokens_entered.insert((a, tok), day);
                false
            }
        }
    }

    /// `owner`'s number if it has one; unlike [`Accounts::account`], gives none to a new owner: a
    /// response, or a look-up, says nothing of an owner none of whose orders is remembered.
    fn known(&mut self, owner: Owner) -> Option<Account> {
        if let Some((o, a)) = self.last
            && o == owner
        {
            return Some(a);
        }
        let a = *self.numbers.get(&owner)?;
        self.last = Some((owner, a));
        Some(a)
    }

    /// `owner`'s number; a new owner is given one while fewer than [`ACCOUNTS_MAX`] have.
    fn account(&mut self, owner: Owner) -> Option<Account> {
        if let Some((o, a)) = self.last
            && o == owner
        {
            return Some(a);
        }
        let n = self.numbers.len();
        let a = match self.numbers.get(&owner) {
            Some(&a) => a,
            None if n < ACCOUNTS_MAX => *self.numbers.entry(owner).or_insert(n as Account),
            None => return None,
        };
        self.last = Some((owner, a));
        Some(a)
    }

    /// Keeps the symbol of an order entered or replaced by `owner`, gives a Replace request its
    /// order's, and forgets an order once a response says it ended.
    pub(super) fn order_symbol(&mut self, owner: Owner, s: &mut OrderSummary) {
        let Some(id) = s.id else { return };
        match (s.dir, s.msg_type) {
            (OrderDir::Inbound, b'O' | b'U') => {
                let Some(a) = self.account(owner) else { return };
                // An Enter's shares are outstanding until it trades (an Accepted is not looked up
                // for its own: one of fewer leaves the order more than it has, which then stays
                // until the bound but never ends early). A Replace's count the chain's executions
                // too: its Replaced says what is outstanding.
                let leaves = if s.msg_type == b'U' {
                    if s.symbol.is_none() {
                        s.symbol = s.orig_id.and_then(|o| self.symbols.get(a, o)).map(|k| k.symbol);
                    }
                    None
                } else {
                    s.qty.and_then(NonZeroU32::new)
                };
                let Some(symbol) = s.symbol else { return };
                // (A retransmitted Enter never comes here: `enter_resent` took it, so the order keeps
                // its symbol, and a response of its id is the order's.)
                self.symbols.insert(a, id, Kept { symbol, leaves });
            }
            // Accepted live: nothing changes (most responses are this one).
            (OrderDir::Outbound, b'A') if s.order_state != Some(b'D') => {}
            (OrderDir::Outbound, b'A' | b'U' | b'M' | b'E' | b'G' | b'C' | b'D' | b'J') => {
                if let Some(a) = self.known(owner) {
                    self.answered(a, id, s);
                }
            }
            _ => {}
        }
    }

    /// A response about `a`'s order `id`: the shares it leaves outstanding, or the order's end.
    fn answered(&mut self, a: Account, id: OrderId, s: &OrderSummary) {
        // Replaced: the order it replaced is gone.
        if s.msg_type == b'U'
            && let Some(orig) = s.orig_id
        {
            self.symbols.remove(a, orig);
        }
        let Some(k) = self.symbols.get_mut(a, id) else { return };
        let q = s.qty.unwrap_or(0);
        let leaves = match s.msg_type {
            // Accepted or Replaced dead (accepted and at once canceled); Rejected: an Enter's order,
            // or a Replace's new one (whose old one stays), never lived.
            _ if s.order_state == Some(b'D') => None,
            b'J' => None,
            // Replaced, Modified: the shares outstanding now.
            b'U' | b'M' => NonZeroU32::new(q),
            // Executed (OUCH 4.x 'G' too: with a reference price), Canceled, AIQ Canceled: the shares
            // taken (a Canceled may leave some, OUCH 5.0 §3.4).
            b'E' | b'G' | b'C' | b'D' => match k.leaves {
                Some(l) => NonZeroU32::new(l.get().saturating_sub(q)),
                None => return,
            },
            _ => return,
        };
        match leaves {
            Some(l) => k.leaves = Some(l),
            None => {
                self.symbols.remove(a, id);
            }
        }
    }

    /// The symbol of `owner`'s order `id`, while it is remembered (entered or replaced, not known to
    /// have ended): what a Cancel or Modify of it acts on, for `--unmatched`.
    pub(super) fn symbol_of(&mut self, owner: Owner, id: OrderId) -> Option<Symbol> {
        let a = self.known(owner)?;
        self.symbols.get(a, id).map(|k| k.symbol)
    }

    /// `owner` asked to replace order `orig` by `id`.
    pub(super) fn replace_sent(&mut self, owner: Owner, orig: OrderId, id: OrderId) {
        let Some(a) = self.account(owner) else { return };
        // One message names both, so they are of one kind.
        match (orig, id) {
            (OrderId::UserRefNum(o), OrderId::UserRefNum(n)) => self.replaced_by.refs.insert((a, o), n),
            (OrderId::Token(o), OrderId::Token(n)) => self.replaced_by.tokens.insert((a, o), n),
            _ => {}
        }
    }

    /// The Replace of `owner`'s order `orig` is answered: the new order's id it named.
    pub(super) fn replace_answered(&mut self, owner: Owner, orig: OrderId) -> Option<OrderId> {
        let a = self.known(owner)?;
        match orig {
            OrderId::UserRefNum(o) => self.replaced_by.refs.remove(&(a, o)).map(OrderId::UserRefNum),
            OrderId::Token(o) => self.replaced_by.tokens.remove(&(a, o)).map(OrderId::Token),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: Owner = Owner::Conn(0);
    const AAPL: Symbol = Symbol(*b"AAPL    ");

    fn urn(n: u32) -> OrderId {
        OrderId::UserRefNum(n)
    }

    /// A message of `dir` and type `ty` about order `id`, with `qty` shares.
    fn msg(dir: OrderDir, ty: u8, id: u32, qty: u32) -> OrderSummary {
        let mut s = OrderSummary::new(dir, ty);
        s.id = Some(urn(id));
        s.qty = Some(qty);
        s
    }

    fn enter(a: &mut Accounts, id: u32, qty: u32) {
        let mut s = msg(OrderDir::Inbound, b'O', id, qty);
        s.symbol = Some(AAPL);
        a.order_symbol(ME, &mut s);
    }

    /// The symbol a Replace of order `orig` by `id` is given (and the Replace kept).
    fn replace(a: &mut Accounts, orig: u32, id: u32) -> Option<Symbol> {
        let mut s = msg(OrderDir::Inbound, b'U', id, 0);
        s.orig_id = Some(urn(orig));
        a.order_symbol(ME, &mut s);
        s.symbol
    }

    /// A response of type `ty` about order `id` (`qty`: accepted, outstanding, executed or canceled).
    fn answer(a: &mut Accounts, ty: u8, id: u32, qty: u32) {
        let mut s = msg(OrderDir::Outbound, ty, id, qty);
        if ty == b'A' {
            s.order_state = Some(b'L');
        }
        a.order_symbol(ME, &mut s);
    }

    fn replaced(a: &mut Accounts, orig: u32, id: u32, qty: u32, state: u8) {
        let mut s = msg(OrderDir::Outbound, b'U', id, qty);
        s.orig_id = Some(urn(orig));
        s.order_state = Some(state);
        a.order_symbol(ME, &mut s);
    }

    /// Order 1, accepted for 300 shares, executed 100 then 200: it ended, and leaves the map; a
    /// Replace of it then has no symbol.
    #[test]
    fn an_order_fully_executed_leaves() {
        let mut a = Accounts::new();
        enter(&mut a, 1, 300);
        answer(&mut a, b'A', 1, 300);
        answer(&mut a, b'E', 1, 100);
        assert_eq!(a.symbols.len(), 1);
        answer(&mut a, b'E', 1, 200);
        assert_eq!(a.symbols.len(), 0);
        assert_eq!(replace(&mut a, 1, 2), None);
    }

    /// A Canceled may leave part of the order (OUCH 5.0 §3.4): 40 of 100 canceled, the order stays
    /// (a Replace of it has its symbol); the other 60 canceled (AIQ Canceled), it leaves.
    #[test]
    fn an_order_leaves_when_canceled_whole_only() {
        let mut a = Accounts::new();
        enter(&mut a, 1, 100);
        answer(&mut a, b'A', 1, 100);
        answer(&mut a, b'C', 1, 40);
        assert_eq!(a.symbols.len(), 1);
        answer(&mut a, b'D', 1, 60);
        assert_eq!(a.symbols.len(), 0);
        // Order 3, order 2's replacement, its Replaced not seen: the shares outstanding are not
        // known (a Replace's count the chain's executions), and a Canceled of any size does not
        // end it.
        enter(&mut a, 2, 100);
        assert_eq!(replace(&mut a, 2, 3), Some(AAPL));
        answer(&mut a, b'C', 3, 100);
        assert_eq!(replace(&mut a, 3, 4), Some(AAPL));
    }

    /// Rejected: an Enter's order never lived; a Replace's new order neither, and the old one stays
    /// (OUCH 5.0 §2.2, case 3). Accepted dead: the order ended at once.
    #[test]
    fn rejected_and_dead_orders_leave() {
        let mut a = Accounts::new();
        enter(&mut a, 1, 100);
        answer(&mut a, b'J', 1, 0);
        assert_eq!(a.symbols.len(), 0);
        enter(&mut a, 2, 100);
        answer(&mut a, b'A', 2, 100);
        assert_eq!(replace(&mut a, 2, 3), Some(AAPL));
        assert_eq!(a.symbols.len(), 2);
        answer(&mut a, b'J', 3, 0);
        assert_eq!((a.symbols.len(), replace(&mut a, 2, 4)), (1, Some(AAPL)));
        let mut dead = msg(OrderDir::Outbound, b'A', 5, 100);
        dead.order_state = Some(b'D');
        enter(&mut a, 5, 100);
        a.order_symbol(ME, &mut dead);
        assert_eq!(a.symbols.get(0, urn(5)).map(|k| k.symbol), None);
    }

    /// A Replace chain: 1 replaced by 2 (100 shares outstanding), 2 executed 30 and replaced by 3
    /// (70 outstanding): each Replace finds the symbol, each old order leaves at its Replaced; 3,
    /// executed 70, leaves too. A Modified to 0 shares ends an order; one dead on its Replaced too.
    #[test]
    fn a_replace_chain_keeps_its_symbol_and_old_orders_leave() {
        let mut a = Accounts::new();
        enter(&mut a, 1, 100);
        answer(&mut a, b'A', 1, 100);
        assert_eq!(replace(&mut a, 1, 2), Some(AAPL));
        replaced(&mut a, 1, 2, 100, b'L');
        answer(&mut a, b'E', 2, 30);
        assert_eq!(replace(&mut a, 2, 3), Some(AAPL));
        replaced(&mut a, 2, 3, 70, b'L');
        assert_eq!(a.symbols.len(), 1);
        answer(&mut a, b'E', 3, 70);
        assert_eq!(a.symbols.len(), 0);

        enter(&mut a, 10, 100);
        answer(&mut a, b'A', 10, 100);
        answer(&mut a, b'M', 10, 50);
        answer(&mut a, b'E', 10, 20);
        assert_eq!(a.symbols.len(), 1);
        answer(&mut a, b'M', 10, 0);
        assert_eq!(a.symbols.len(), 0);
        enter(&mut a, 11, 100);
        assert_eq!(replace(&mut a, 11, 12), Some(AAPL));
        replaced(&mut a, 11, 12, 100, b'D');
        assert_eq!(a.symbols.len(), 0);
    }

    /// OUCH 4.x tokens are kept apart from UserRefNums, and end the same way.
    #[test]
    fn tokens_are_kept_and_end_too() {
        let mut a = Accounts::new();
        let tok = |t: &[u8; 14]| Some(OrderId::Token(*t));
        let mut o = OrderSummary::new(OrderDir::Inbound, b'O');
        (o.id, o.symbol) = (tok(b"ORDER000000001"), Some(AAPL));
        a.order_symbol(ME, &mut o);
        let mut r = OrderSummary::new(OrderDir::Inbound, b'U');
        (r.id, r.orig_id) = (tok(b"ORDER000000002"), tok(b"ORDER000000001"));
        a.order_symbol(ME, &mut r);
        assert_eq!((r.symbol, a.symbols.tokens.len(), a.symbols.refs.len()), (Some(AAPL), 2, 0));
        let mut ok = OrderSummary::new(OrderDir::Outbound, b'U');
        (ok.id, ok.orig_id, ok.qty, ok.order_state) = (r.id, r.orig_id, Some(100), Some(b'L'));
        a.order_symbol(ME, &mut ok);
        let mut ex = OrderSummary::new(OrderDir::Outbound, b'G');
        (ex.id, ex.qty) = (r.id, Some(100));
        a.order_symbol(ME, &mut ex);
        assert_eq!(a.symbols.len(), 0);
    }

    /// Beyond the bound the oldest insertion goes: of orders 1, 2, 3 kept with room for two, order
    /// 1 is forgotten. A Replace of 2 by 4 is kept too (forgetting 2's entry: its place is the
    /// oldest), and 4 is found.
    #[test]
    fn the_oldest_orders_go_beyond_the_bound() {
        let mut a = Accounts::with_bound(2);
        for n in 1..=3 {
            enter(&mut a, n, 100);
        }
        assert_eq!((a.symbols.len(), a.symbols.get(0, urn(1)).is_none()), (2, true));
        assert_eq!(replace(&mut a, 2, 4), Some(AAPL));
        assert_eq!((a.symbols.get(0, urn(2)).is_none(), replace(&mut a, 4, 5)), (true, Some(AAPL)));
    }

    /// Accounts are kept apart, and beyond [`ACCOUNTS_MAX`] a new one's orders are not remembered.
    #[test]
    fn accounts_are_apart_and_bounded() {
        let mut a = Accounts::new();
        enter(&mut a, 1, 100);
        let mut other = msg(OrderDir::Inbound, b'U', 2, 0);
        other.orig_id = Some(urn(1));
        a.order_symbol(Owner::Conn(1), &mut other);
        assert_eq!(other.symbol, None, "another account's order 1 is not known");
        for c in 2..ACCOUNTS_MAX {
            assert!(a.account(Owner::Conn(c)).is_some());
        }
        assert_eq!((a.account(Owner::Conn(ACCOUNTS_MAX)), a.account(ME)), (None, Some(0)));
    }

    /// A look-up gives no account: the symbol of an order of an owner that never sent one, a
    /// response to such an owner, or the answer to its Replace leave the owners as they were (one,
    /// ME's), where each gave that owner a number (65,536 at most, so the owners that sent orders
    /// past them were not remembered).
    #[test]
    fn a_look_up_gives_no_account() {
        let mut a = Accounts::new();
        enter(&mut a, 1, 100);
        assert_eq!((a.symbol_of(Owner::Conn(1), urn(1)), a.numbers.len()), (None, 1));
        let mut e = msg(OrderDir::Outbound, b'E', 1, 100);
        a.order_symbol(Owner::Conn(2), &mut e);
        assert_eq!((a.replace_answered(Owner::Conn(3), urn(1)), a.numbers.len()), (None, 1));
        assert_eq!((a.symbol_of(ME, urn(1)), a.numbers.len()), (Some(AAPL), 1), "ME's order 1 untouched");
    }

    /// An Enter of an id its account entered that day is a retransmission the exchange ignores,
    /// which no response answers, whatever became of the order: of each kind of id (OUCH 4.2 token,
    /// OUCH 5.0 UserRefNum), order 1 (AAPL, accepted) keeps its symbol through its resend (MSFT);
    /// order 2 (AAPL), resent before any answer and then Rejected, ends (the Rejected is the order's:
    /// it never lived); order 3, rejected, is resent (MSFT): the id is spent (OUCH 5.0 §3.8: a
    /// rejected UserRefNum cannot be reused), so the resend is no order and takes no symbol (it took
    /// MSFT). Each resend is told as one (the order path counts it and goes no further).
    #[test]
    fn a_resent_enter_leaves_the_order_its_symbol() {
        const MSFT: Symbol = Symbol(*b"MSFT    ");
        // As the order path reads a message: an Enter resent goes no further (`None`), any other
        // message gives the symbol it has.
        let send = |a: &mut Accounts, dir, ty, id, symbol| {
            let mut s = OrderSummary::new(dir, ty);
            (s.id, s.symbol, s.qty) = (Some(id), symbol, Some(100));
            if ty == b'A' {
                s.order_state = Some(b'L');
            }
            if (dir, ty) == (OrderDir::Inbound, b'O') && a.enter_resent(0, None, || ME, id, T) {
                return None;
            }
            a.order_symbol(ME, &mut s);
            Some(s.symbol)
        };
        let token = |n: u8| {
            let mut t = *b"ORDER000000000";
            t[13] += n;
            OrderId::Token(t)
        };
        let kinds: [fn(u8) -> OrderId; 2] = [token, |n| urn(u32::from(n))];
        for id in kinds {
            let mut a = Accounts::new();
            let (o1, o2, o3) = (id(1), id(2), id(3));
            send(&mut a, OrderDir::Inbound, b'O', o1, Some(AAPL));
            send(&mut a, OrderDir::Outbound, b'A', o1, Some(AAPL));
            assert_eq!(send(&mut a, OrderDir::Inbound, b'O', o1, Some(MSFT)), None, "{o1:?} resent");
            assert_eq!(a.symbol_of(ME, o1), Some(AAPL), "{o1:?}");

            send(&mut a, OrderDir::Inbound, b'O', o2, Some(AAPL));
            assert_eq!(send(&mut a, OrderDir::Inbound, b'O', o2, Some(AAPL)), None, "{o2:?} resent");
            send(&mut a, OrderDir::Outbound, b'J', o2, None);
            assert_eq!(a.symbol_of(ME, o2), None, "{o2:?}");

            send(&mut a, OrderDir::Inbound, b'O', o3, Some(AAPL));
            send(&mut a, OrderDir::Outbound, b'J', o3, None);
            assert_eq!(send(&mut a, OrderDir::Inbound, b'O', o3, Some(MSFT)), None, "{o3:?} resent");
            assert_eq!(a.symbol_of(ME, o3), None, "{o3:?}");
        }
    }

    /// 2026-11-30T14:30:00Z, 09:30 EST.
    const T: i64 = 1_796_049_000_000_000_000;

    /// OUCH 5.0 §1.2: the exchange ignores an Enter whose UserRefNum is not above the last one
    /// processed that day. The capture begins mid-day: the first Enter seen (1,000) sets the start,
    /// so 1,000 again and 999 (never seen: sent before the capture) are resent, 1,001 new, then
    /// 1,000 and 1,001 resent. Each account has its own numbers (another connection without a login
    /// enters 5, then 1,001), and a new trading day its own: 2026-12-01T05:00:00Z is midnight EST, so
    /// 1,001 a nanosecond before is resent, at it new; each Enter of a new order keeps the last.
    #[test]
    fn a_user_ref_num_not_above_the_last_is_resent() {
        let mut a = Accounts::new();
        let other = Owner::Conn(1);
        let resent = |a: &mut Accounts, owner, n: u32, t| {
            let ci = if owner == ME { 0 } else { 1 };
            a.enter_resent(ci, None, || owner, urn(n), t)
        };
        assert!(!resent(&mut a, ME, 1_000, T), "the first sets the start");
        assert!(resent(&mut a, ME, 1_000, T + 1));
        assert!(resent(&mut a, ME, 999, T + 2), "sent before the capture: not above the last");
        assert!(!resent(&mut a, ME, 1_001, T + 3));
        assert!(resent(&mut a, ME, 1_000, T + 4));
        assert!(resent(&mut a, ME, 1_001, T + 5));
        assert!(!resent(&mut a, other, 5, T + 6), "another account's numbers");
        assert!(!resent(&mut a, other, 1_001, T + 7));
        let midnight = 1_796_101_200_000_000_000;
        assert!(resent(&mut a, ME, 1_001, midnight - 1), "still Nov 30, EST");
        assert!(!resent(&mut a, ME, 1_001, midnight), "Dec 1: a new day's numbers");
        assert!(resent(&mut a, ME, 2, midnight + 1));
        assert_eq!(a.last_ref, [(midnight, 1_001), (T + 7, 1_001)]);
    }

    /// OUCH 4.x: an order token is day-unique; one entered again the same day is resent, whatever
    /// became of its order (none here); another account's, or a new day's, is new. Tokens are kept
    /// for the last Enters only: with room for two, the first is forgotten at the third, and taken as
    /// new after.
    #[test]
    fn a_token_entered_again_is_resent_while_remembered() {
        const DAY: i64 = 86_400_000_000_000;
        let tok = |n: u8| OrderId::Token([b'A' + n; 14]);
        let mut a = Accounts::with_bound(2);
        assert!(!a.enter_resent(0, None, || ME, tok(1), T));
        assert!(a.enter_resent(0, None, || ME, tok(1), T + 1));
        assert!(!a.enter_resent(1, None, || Owner::Conn(1), tok(1), T + 2), "another account's");
        assert!(!a.enter_resent(0, None, || ME, tok(2), T + 3));
        assert!(!a.enter_resent(0, None, || ME, tok(1), T + 4), "forgotten for room");
        assert!(a.enter_resent(0, None, || ME, tok(1), T + 5));
        assert!(!a.enter_resent(0, None, || ME, tok(1), T + DAY), "the next day's");
        assert!(a.enter_resent(0, None, || ME, tok(1), T + DAY + 1));
    }

    /// The tokens kept are the last Enters' of all accounts together, not each account's: with room
    /// for two, ME enters token 1, another account tokens 2 and 3, and ME's resend of token 1 (its
    /// own last Enter) is taken as new. (The README had each account keep its last 1,048,576.)
    #[test]
    fn tokens_are_kept_for_the_last_enters_of_all_accounts_together() {
        let tok = |n: u8| OrderId::Token([b'A' + n; 14]);
        let other = || Owner::Conn(1);
        let mut a = Accounts::with_bound(2);
        assert!(!a.enter_resent(0, None, || ME, tok(1), T));
        assert!(!a.enter_resent(1, None, other, tok(2), T + 1));
        assert!(a.enter_resent(0, None, || ME, tok(1), T + 2), "ME's token 1 still kept");
        assert!(!a.enter_resent(1, None, other, tok(3), T + 3));
        assert!(!a.enter_resent(0, None, || ME, tok(1), T + 4), "another account's Enters took its place");
    }

    /// What an order never answered costs: a UserRefNum's entry is 24 bytes in its table and 12 in
    /// the queue (80 and 72 with the owner and the id's enum in the key); an OUCH 4.x Enter's token,
    /// kept to tell retransmissions, 28 and 24.
    #[test]
    fn an_entry_is_small() {
        use std::mem::size_of;
        assert_eq!(size_of::<((Account, u32), (Kept, u32))>(), 24);
        assert_eq!(size_of::<((Account, u32), u32)>(), 12);
        // A token entered, with its day: 28 and 24.
        assert_eq!(size_of::<((Account, [u8; 14]), (i32, u32))>(), 28);
        assert_eq!(size_of::<((Account, [u8; 14]), u32)>(), 24);
    }
}
