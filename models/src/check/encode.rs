//! A state's compact byte encoding, read off its [`Hash`] implementation.
//!
//! Derived `Hash` feeds every field to the hasher in order, with enum discriminants,
//! collection lengths and string terminators, so the stream of writes determines the
//! value: recording that stream (integers as variable-length LEB128, most of them one
//! byte) gives an exact encoding without asking each model for a codec. Two states are
//! equal exactly when their encodings are, for every state type built from plain data
//! with derived `Hash` (integers, `bool`, `String`, `Vec`, `Option`, `BTreeMap`, tuples,
//! enums), which is what the models use.

use std::hash::{Hash, Hasher};

/// Appends the encoding of `value` to `out`.
pub fn encode<T: Hash + ?Sized>(value: &T, out: &mut Vec<u8>) {
    value.hash(&mut Recorder(out));
}

/// A [`Hasher`] that records what it is fed instead of mixing it.
struct Recorder<'a>(&'a mut Vec<u8>);

impl Recorder<'_> {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    /// Zigzag, so small negative numbers stay short too.
    fn signed(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }
}

impl Hasher for Recorder<'_> {
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
    fn write_u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn write_u16(&mut self, v: u16) {
        self.varint(v.into());
    }
    fn write_u32(&mut self, v: u32) {
        self.varint(v.into());
    }
    fn write_u64(&mut self, v: u64) {
        self.varint(v);
    }
    fn write_u128(&mut self, v: u128) {
        self.varint(v as u64);
        self.varint((v >> 64) as u64);
    }
    fn write_usize(&mut self, v: usize) {
        self.varint(v as u64);
    }
    fn write_i8(&mut self, v: i8) {
        self.0.push(v as u8);
    }
    fn write_i16(&mut self, v: i16) {
        self.signed(v.into());
    }
    fn write_i32(&mut self, v: i32) {
        self.signed(v.into());
    }
    fn write_i64(&mut self, v: i64) {
        self.signed(v);
    }
    fn write_i128(&mut self, v: i128) {
        self.write_u128(v as u128);
    }
    fn write_isize(&mut self, v: isize) {
        self.signed(v as i64);
    }
}

/// A fast 64-bit hash of an encoding, for the visited table (collisions cost only a
/// byte comparison there, never a wrong answer).
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(K).rotate_left(29);
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    // murmur3's finaliser: every input bit reaches every output bit.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn enc<T: Hash>(v: &T) -> Vec<u8> {
        let mut out = Vec::new();
        encode(v, &mut out);
        out
    }

    #[test]
    fn strings_and_collections_keep_their_boundaries() {
        assert_ne!(enc(&("ab", "c")), enc(&("a", "bc")));
        assert_ne!(enc(&vec![vec![1u8], vec![]]), enc(&vec![vec![], vec![1u8]]));
        assert_ne!(enc(&Some(0u64)), enc(&None::<u64>));
        let a: BTreeMap<String, i64> = [("x".into(), 1)].into();
        let b: BTreeMap<String, i64> = [("x".into(), -1)].into();
        assert_ne!(enc(&a), enc(&b));
    }

    #[test]
    fn small_integers_take_one_byte() {
        assert_eq!(enc(&5u64).len(), 1);
        assert_eq!(enc(&-3i64).len(), 1);
        assert_eq!(enc(&300u64).len(), 2);
    }
}
