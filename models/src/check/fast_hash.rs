//! A fast, non-cryptographic hasher (rustc's FxHash) for in-process tables keyed by
//! model data, where SipHash's protection against chosen keys buys nothing.

use std::hash::{BuildHasherDefault, Hasher};

/// `HashMap`/`HashSet` hasher builder: `HashSet<K, FastHash>`.
pub type FastHash = BuildHasherDefault<FxHasher>;

/// FxHash: one multiply per word.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
    }
}

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        for b in chunks.remainder() {
            self.add(u64::from(*b));
        }
    }
    fn write_u8(&mut self, v: u8) {
        self.add(v.into());
    }
    fn write_u16(&mut self, v: u16) {
        self.add(v.into());
    }
    fn write_u32(&mut self, v: u32) {
        self.add(v.into());
    }
    fn write_u64(&mut self, v: u64) {
        self.add(v);
    }
    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }
}
