//! A map that keeps its latest entries only: at most `cap`, the oldest insertion going first.

use crate::fxhash::FxHashMap;
use std::collections::VecDeque;
use std::hash::Hash;

/// A hash map bounded by insertion order. An entry removed, or replaced by a newer insertion of its
/// key, leaves its place in the queue to be skipped: each entry carries its insertion number, so an
/// old place never removes a newer entry of the same key.
///
/// The numbers are `u32` and wrap: the queue holds places of the last `cap` insertions only, so two
/// insertions of one key that it holds are fewer than 2^32 apart and their numbers differ. (Each
/// entry may be the last of a million orders never answered: its bytes count.)
#[derive(Debug)]
pub(super) struct BoundedMap<K, V> {
    map: FxHashMap<K, (V, u32)>,
    order: VecDeque<(K, u32)>,
    next: u32,
    cap: usize,
}

impl<K: Hash + Eq + Copy, V: Copy> BoundedMap<K, V> {
    pub(super) fn new(cap: usize) -> Self {
        assert!(cap < 1 << 32, "insertion numbers are u32");
        BoundedMap { map: FxHashMap::default(), order: VecDeque::new(), next: 0, cap: cap.max(1) }
    }

    /// Sets `k` to `v` (a newer insertion), forgetting the oldest entries beyond the bound.
    pub(super) fn insert(&mut self, k: K, v: V) {
        // Room is made before the place is queued, so the queue never holds more than `cap` (a
        // power of two stays its capacity, not the next one). Places of entries removed or replaced
        // count against the bound too, so the queue stays bounded.
        while self.order.len() >= self.cap {
            let Some((old, n)) = self.order.pop_front() else { break };
            if self.map.get(&old).is_some_and(|e| e.1 == n) {
                self.map.remove(&old);
            }
        }
        self.map.insert(k, (v, self.next));
        self.order.push_back((k, self.next));
        self.next = self.next.wrapping_add(1);
    }

    pub(super) fn get(&self, k: &K) -> Option<V> {
        self.map.get(k).map(|e| e.0)
    }

    /// The value of `k`, to change in place (its place in the queue stays).
    pub(super) fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        self.map.get_mut(k).map(|e| &mut e.0)
    }

    pub(super) fn remove(&mut self, k: &K) -> Option<V> {
        self.map.remove(k).map(|e| e.0)
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The oldest insertions go first; a key removed and inserted again is not removed by its old
    /// place in the queue; the queue never holds more than the bound.
    #[test]
    fn the_oldest_go_and_an_old_place_never_removes_a_newer_entry() {
        let mut m = BoundedMap::new(3);
        for k in 1..=3 {
            m.insert(k, k * 10);
        }
        m.insert(4, 40);
        assert_eq!((m.get(&1), m.get(&2), m.len()), (None, Some(20), 3));
        // 2 removed, then inserted again: its first place (now the oldest) must not remove it.
        assert_eq!(m.remove(&2), Some(20));
        m.insert(2, 21);
        m.insert(5, 50);
        assert_eq!((m.get(&2), m.get(&3), m.get(&4), m.get(&5)), (Some(21), None, Some(40), Some(50)));
        assert!(m.order.len() <= 3);
    }

    /// A bound of a power of two is the queue's capacity: it never grows to the next one (with the
    /// place queued before room was made, 2^20 entries took a queue of 2^21).
    #[test]
    fn the_queue_stays_within_its_bound() {
        let mut m = BoundedMap::new(1 << 10);
        for k in 0..5_000u32 {
            m.insert(k, ());
        }
        assert_eq!((m.len(), m.order.len(), m.order.capacity()), (1 << 10, 1 << 10, 1 << 10));
    }

    /// What a bound of 2^20 OUCH 4.x tokens entered costs once full (`Accounts::tokens_entered`: an
    /// account's number and a token, to its day): the table holds 2^20 entries in 2^21 slots (a
    /// hash table fills to 7/8 at most), each slot 28 bytes and a control byte, and the queue 2^20
    /// places of 24: 86 MB, 82 bytes a token, not the 52 of an entry and its place.
    #[test]
    fn a_full_bound_of_tokens_takes_its_table_s_free_room_too() {
        use std::mem::size_of;
        let mut m = BoundedMap::<(u32, [u8; 14]), i32>::new(1 << 20);
        for k in 0..(1u32 << 20) + 1 {
            let mut token = [b'0'; 14];
            token[..4].copy_from_slice(&k.to_be_bytes());
            m.insert((0, token), 0);
        }
        let slots = (m.map.capacity() + 1).next_power_of_two();
        assert_eq!((m.len(), slots, m.order.capacity()), (1 << 20, 1 << 21, 1 << 20));
        let (entry, place) = (size_of::<((u32, [u8; 14]), (i32, u32))>(), size_of::<((u32, [u8; 14]), u32)>());
        let bytes = slots * (entry + 1) + m.order.capacity() * place;
        assert_eq!((entry, place, bytes, bytes >> 20), (28, 24, 85_983_232, 82));
    }

    /// Insertion numbers wrap: an entry inserted at number u32::MAX and one at 0 (after the wrap) are
    /// told apart, and a key inserted again across the wrap is not removed by its older place.
    #[test]
    fn insertion_numbers_wrap() {
        let mut m = BoundedMap::new(2);
        m.next = u32::MAX;
        m.insert(1, 'a');
        m.insert(1, 'b');
        assert_eq!(m.next, 1);
        // 1's first place (u32::MAX) goes for room: its newer entry (0) stays.
        m.insert(2, 'c');
        assert_eq!((m.get(&1), m.get(&2)), (Some('b'), Some('c')));
        m.insert(3, 'd');
        assert_eq!((m.get(&1), m.get(&2), m.get(&3)), (None, Some('c'), Some('d')));
    }
}
