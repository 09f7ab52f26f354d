//! The visited set of a search: every state stored once, as a fingerprint of its
//! encoding (hash compaction, as Spin's `-DHC`), with its parent's index, in an
//! open-addressing table.
//!
//! A table slot is 16 bytes: 96 bits of the encoding's 128-bit fingerprint and the
//! state's index, so a probe reads one slot, and a state costs the slot and a 4-byte
//! parent index: no per-state allocation and no copy of the state. Among the 10⁸ states
//! of a large search, the chance that two distinct encodings share 96 bits is about
//! 10¹⁶ / 2⁹⁷ < 10⁻¹³.

use super::encode::fingerprint;

/// The parent of an initial state.
const ROOT: u32 = u32::MAX;

/// The low 32 bits of a slot's second word hold `index + 1` (0: an empty slot).
const INDEX: u64 = 0xFFFF_FFFF;

/// Visited states, each with the index of the state it was first reached from.
pub struct Visited {
    /// `[fingerprint[0], high half of fingerprint[1] | index + 1]`, placed by
    /// `fingerprint[0]`; `[0, 0]` is empty.
    slots: Vec<[u64; 2]>,
    /// Parent index of state `i`, [`ROOT`] for an initial state.
    parents: Vec<u32>,
}

impl Visited {
    /// An empty set.
    pub fn new() -> Self {
        Visited {
            slots: vec![[0; 2]; 1 << 12],
            parents: Vec::new(),
        }
    }

    /// Number of states stored.
    pub fn len(&self) -> usize {
        self.parents.len()
    }

    /// The slot holding `fp`, or the empty slot where it would go.
    fn find(&self, fp: [u64; 2]) -> (usize, Option<u32>) {
        let tag = fp[1] & !INDEX;
        let mask = self.slots.len() - 1;
        let mut at = fp[0] as usize & mask;
        loop {
            let [first, second] = self.slots[at];
            if second == 0 {
                return (at, None);
            }
            if first == fp[0] && second & !INDEX == tag {
                return (at, Some((second & INDEX) as u32 - 1));
            }
            at = (at + 1) & mask;
        }
    }

    /// Whether the state whose encoding's [`fingerprint`] is `fp` is stored.
    pub fn contains(&self, fp: [u64; 2]) -> bool {
        self.find(fp).1.is_some()
    }

    /// Whether `encoding` is that of state `i`.
    pub fn is(&self, i: u32, encoding: &[u8]) -> bool {
        self.find(fingerprint(encoding)).1 == Some(i)
    }

    /// The parent of state `i`, `None` for an initial state.
    pub fn parent(&self, i: u32) -> Option<u32> {
        Some(self.parents[i as usize]).filter(|p| *p != ROOT)
    }

    /// Stores the state with `encoding`, reached from `parent`, and returns its index,
    /// or `None` if it was already there.
    #[cfg(test)]
    pub fn insert(&mut self, encoding: &[u8], parent: Option<u32>) -> Option<u32> {
        self.insert_fingerprint(fingerprint(encoding), parent)
    }

    /// [`Visited::insert`] for a state whose encoding's [`fingerprint`] is `fp`.
    pub fn insert_fingerprint(&mut self, fp: [u64; 2], parent: Option<u32>) -> Option<u32> {
        let (at, None) = self.find(fp) else {
            return None;
        };
        let index = u32::try_from(self.len()).expect("fewer than 2^32 states");
        self.parents.push(parent.unwrap_or(ROOT));
        self.slots[at] = [fp[0], (fp[1] & !INDEX) | (u64::from(index) + 1)];
        // Load ≤ 3/4 keeps probe runs short.
        if self.len() * 4 > self.slots.len() * 3 {
            self.grow();
        }
        Some(index)
    }

    fn grow(&mut self) {
        let doubled = vec![[0; 2]; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        let mask = self.slots.len() - 1;
        for slot in old.into_iter().filter(|s| s[1] != 0) {
            let mut at = slot[0] as usize & mask;
            while self.slots[at][1] != 0 {
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
    fn stores_each_state_once_with_its_parent() {
        let mut v = Visited::new();
        let a = v.insert(b"a", None);
        assert_eq!(a, Some(0));
        assert_eq!(v.insert(b"a", Some(0)), None);
        for i in 0..10_000u32 {
            assert_eq!(v.insert(&i.to_le_bytes(), Some(0)), Some(i + 1));
        }
        assert_eq!(v.insert(&77u32.to_le_bytes(), None), None);
        assert_eq!(v.len(), 10_001);
        assert!(v.is(78, &77u32.to_le_bytes()));
        assert!(v.contains(fingerprint(&77u32.to_le_bytes())));
        assert!(!v.contains(fingerprint(&10_000u32.to_le_bytes())));
        assert_eq!(v.parent(78), Some(0));
        assert_eq!(v.parent(0), None);
    }
}
