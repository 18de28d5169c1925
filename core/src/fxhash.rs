//! A fast non-cryptographic hasher for the per-message maps (sessions, symbols, pending orders).
//!
//! std's SipHash resists HashDoS but costs ~20 ns per lookup, which the offline analysis pays per
//! message. Keys here are small and come from captures the user chose to analyse; the multiplier
//! scheme is rustc's FxHash (rustc-hash 2.x constant), with a final rotation so hashbrown's
//! top-7-bit tags and low-bit bucket index both see mixed bits.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`FxHasher`].
pub type FxHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

const K: u64 = 0xf135_7aea_2e62_a9c5;

/// Multiply-add hasher over 8-byte words.
#[derive(Debug, Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

impl FxHasher {
    #[inline(always)]
    fn add(&mut self, x: u64) {
        self.hash = self.hash.wrapping_add(x).wrapping_mul(K);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            // The length keeps "a" and "a\0" apart.
            self.add(u64::from_le_bytes(b) ^ ((rest.len() as u64) << 59));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.hash.rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn h<T: Hash>(t: T) -> u64 {
        BuildHasherDefault::<FxHasher>::default().hash_one(t)
    }

    #[test]
    fn distinguishes_close_keys() {
        // Keys that differ in one byte, in length only, or by order must not collide.
        assert_ne!(h(*b"AAPL    "), h(*b"AAPM    "));
        assert_ne!(h(&b"a"[..]), h(&b"a\0"[..]));
        assert_ne!(h((1u16, 2u16)), h((2u16, 1u16)));
        let mut m: FxHashMap<[u8; 10], u32> = FxHashMap::default();
        for i in 0..1000u32 {
            let mut k = *b"SESSION000";
            k[7..].copy_from_slice(format!("{:03}", i % 1000).as_bytes());
            m.insert(k, i);
        }
        assert_eq!(m.len(), 1000);
        assert_eq!(m[b"SESSION042"], 42);
    }
}
