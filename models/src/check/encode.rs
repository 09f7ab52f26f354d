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

/// A 128-bit fingerprint of an encoding: two 64-bit lanes with their own multipliers
/// and rotations, each finished with murmur3's finaliser so every input bit reaches
/// every output bit. Among the 10⁸ states of a large search the chance that two
/// distinct encodings share a fingerprint is about 10¹⁶ / 2¹²⁸ < 10⁻²¹.
pub fn fingerprint(bytes: &[u8]) -> [u64; 2] {
    const K1: u64 = 0x9E37_79B9_7F4A_7C15;
    const K2: u64 = 0xC2B2_AE3D_27D4_EB4F;
    let len = bytes.len() as u64;
    let (mut a, mut b) = (len.wrapping_mul(K1), len ^ 0x1656_67B1_9E37_79F9);
    let mut chunks = bytes.chunks_exact(8);
    let mut mix = |w: u64| {
        a = (a ^ w).wrapping_mul(K1).rotate_left(29);
        b = (b ^ w.rotate_left(17)).wrapping_mul(K2).rotate_left(37);
    };
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        mix(u64::from_le_bytes(w));
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    mix(u64::from_le_bytes(tail));
    [fmix(a ^ b.rotate_left(32)), fmix(b ^ K1)]
}

fn fmix(mut h: u64) -> u64 {
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
    fn fingerprints_differ_for_near_encodings() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..100_000u32 {
            let mut e = enc(&(i % 7, "c0", i / 7));
            assert!(seen.insert(fingerprint(&e)));
            e.push(0);
            assert!(seen.insert(fingerprint(&e)));
        }
    }

    #[test]
    fn small_integers_take_one_byte() {
        assert_eq!(enc(&5u64).len(), 1);
        assert_eq!(enc(&-3i64).len(), 1);
        assert_eq!(enc(&300u64).len(), 2);
    }
}
