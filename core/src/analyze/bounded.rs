//! A map that keeps its latest entries only: at most `cap`, the oldest insertion going first.

use crate::fxhash::FxHashMap;
use std::collections::VecDeque;
use std::hash::Hash;

/// A hash map bounded by insertion order. An entry removed, or replaced by a newer insertion of its
/// key, leaves its place in the queue to be skipped: each entry carries its insertion number, so an
/// old place never removes a newer entry of the same key.
#[derive(Debug)]
pub(super) struct BoundedMap<K, V> {
    map: FxHashMap<K, (V, u64)>,
    order: VecDeque<(K, u64)>,
    next: u64,
    cap: usize,
}

impl<K: Hash + Eq + Copy, V: Copy> BoundedMap<K, V> {
    pub(super) fn new(cap: usize) -> Self {
        BoundedMap { map: FxHashMap::default(), order: VecDeque::new(), next: 0, cap: cap.max(1) }
    }

    /// Sets `k` to `v` (a newer insertion), forgetting the oldest entries beyond the bound.
    pub(super) fn insert(&mut self, k: K, v: V) {
        self.map.insert(k, (v, self.next));
        self.order.push_back((k, self.next));
        self.next += 1;
        // Places of entries removed or replaced count against the bound too, so the queue stays bounded.
        while self.order.len() > self.cap {
            let Some((old, n)) = self.order.pop_front() else { break };
            if self.map.get(&old).is_some_and(|e| e.1 == n) {
                self.map.remove(&old);
            }
        }
    }

    pub(super) fn get(&self, k: &K) -> Option<V> {
        self.map.get(k).map(|e| e.0)
    }

    pub(super) fn remove(&mut self, k: &K) -> Option<V> {
        self.map.remove(k).map(|e| e.0)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
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
}
