//! The visited set of a search: every state stored once, as its encoding in one arena,
//! with its parent's index, behind an open-addressing table.
//!
//! Per state this costs its encoding (tens of bytes for the lock models), an offset, a
//! parent index and about two table slots: no per-state allocation, no copy of the
//! state's heap data.

use super::encode::hash_bytes;

/// The parent of an initial state.
const ROOT: u32 = u32::MAX;

/// Visited states, each with the index of the state it was first reached from.
pub struct Visited {
    /// The encodings, back to back.
    bytes: Vec<u8>,
    /// Where encoding `i` ends in `bytes` (it starts where `i - 1` ends).
    ends: Vec<usize>,
    /// Parent index of state `i`, [`ROOT`] for an initial state.
    parents: Vec<u32>,
    /// `index + 1` (0: empty) in the low half, the hash's high half above, so most
    /// probes are decided without touching the arena.
    slots: Vec<u64>,
}

impl Visited {
    /// An empty set.
    pub fn new() -> Self {
        Visited {
            bytes: Vec::new(),
            ends: Vec::new(),
            parents: Vec::new(),
            slots: vec![0; 1 << 12],
        }
    }

    /// Number of states stored.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// The encoding of state `i`.
    pub fn encoding(&self, i: u32) -> &[u8] {
        let i = i as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    /// The parent of state `i`, `None` for an initial state.
    pub fn parent(&self, i: u32) -> Option<u32> {
        Some(self.parents[i as usize]).filter(|p| *p != ROOT)
    }

    /// Stores `encoding` reached from `parent` and returns its index, or `None` if the
    /// state was already there.
    pub fn insert(&mut self, encoding: &[u8], parent: Option<u32>) -> Option<u32> {
        let hash = hash_bytes(encoding);
        let tag = hash >> 32;
        let mask = self.slots.len() - 1;
        let mut at = hash as usize & mask;
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                break;
            }
            if slot >> 32 == tag && self.encoding((slot as u32) - 1) == encoding {
                return None;
            }
            at = (at + 1) & mask;
        }
        let index = self.ends.len() as u32;
        self.bytes.extend_from_slice(encoding);
        self.ends.push(self.bytes.len());
        self.parents.push(parent.unwrap_or(ROOT));
        self.slots[at] = (tag << 32) | u64::from(index + 1);
        // Load ≤ 3/4 keeps probe runs short.
        if self.len() * 4 > self.slots.len() * 3 {
            self.grow();
        }
        Some(index)
    }

    fn grow(&mut self) {
        let doubled = vec![0; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        let mask = self.slots.len() - 1;
        for slot in old.into_iter().filter(|s| *s != 0) {
            // The low bits of the hash are not kept: rehash the encoding.
            let hash = hash_bytes(self.encoding((slot as u32) - 1));
            let mut at = hash as usize & mask;
            while self.slots[at] != 0 {
                at = (at + 1) & mask;
            }
            self.slots[at] = slot;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_each_encoding_once_with_its_parent() {
        let mut v = Visited::new();
        let a = v.insert(b"a", None);
        assert_eq!(a, Some(0));
        assert_eq!(v.insert(b"a", Some(0)), None);
        for i in 0..10_000u32 {
            assert_eq!(v.insert(&i.to_le_bytes(), Some(0)), Some(i + 1));
        }
        assert_eq!(v.insert(&77u32.to_le_bytes(), None), None);
        assert_eq!(v.len(), 10_001);
        assert_eq!(v.encoding(78), 77u32.to_le_bytes());
        assert_eq!(v.parent(78), Some(0));
        assert_eq!(v.parent(0), None);
    }
}
