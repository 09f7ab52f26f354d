//! The visited set of a search: every state stored once, as a 128-bit fingerprint of
//! its encoding (hash compaction, as Spin's `-DHC`), with its parent's index, behind an
//! open-addressing table.
//!
//! Per state this costs 16 bytes of fingerprint, a 4-byte parent index and one or two
//! 8-byte table slots: no per-state allocation, no copy of the state's heap data, and
//! a probe decided by one slot read in most cases.

use super::encode::fingerprint;

/// The parent of an initial state.
const ROOT: u32 = u32::MAX;

/// Visited states, each with the index of the state it was first reached from.
pub struct Visited {
    /// The fingerprint of state `i`.
    fingerprints: Vec<[u64; 2]>,
    /// Parent index of state `i`, [`ROOT`] for an initial state.
    parents: Vec<u32>,
    /// `index + 1` (0: empty) in the low half, high bits of the fingerprint above, so
    /// most probes are decided without reading `fingerprints`.
    slots: Vec<u64>,
}

impl Visited {
    /// An empty set.
    pub fn new() -> Self {
        Visited {
            fingerprints: Vec::new(),
            parents: Vec::new(),
            slots: vec![0; 1 << 12],
        }
    }

    /// Number of states stored.
    pub fn len(&self) -> usize {
        self.parents.len()
    }

    /// Whether `encoding` is that of state `i`.
    pub fn is(&self, i: u32, encoding: &[u8]) -> bool {
        self.fingerprints[i as usize] == fingerprint(encoding)
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
        let tag = fp[1] >> 32;
        let mask = self.slots.len() - 1;
        let mut at = fp[0] as usize & mask;
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                break;
            }
            if slot >> 32 == tag && self.fingerprints[(slot as u32 - 1) as usize] == fp {
                return None;
            }
            at = (at + 1) & mask;
        }
        let index = self.len() as u32;
        self.fingerprints.push(fp);
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
            let fp = self.fingerprints[(slot as u32 - 1) as usize];
            let mut at = fp[0] as usize & mask;
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
        assert_eq!(v.parent(78), Some(0));
        assert_eq!(v.parent(0), None);
    }
}
