//! The visited set of a search: every state stored once, as a fingerprint of its
//! encoding (hash compaction, as Spin's `-DHC`), with its parent's index, in an
//! open-addressing table.
//!
//! A table slot is 16 bytes: 96 bits of the encoding's 128-bit fingerprint and the
//! state's index, so a probe reads one slot, and a state costs the slot and a 4-byte
//! parent index: no per-state allocation and no copy of the state. Among the 10⁸ states
//! of a large search, the chance that two distinct encodings share 96 bits is about
//! 10¹⁶ / 2⁹⁷ < 10⁻¹³.
//!
//! One thread stores ([`Visited`]), and the threads that expand states ask at the same
//! time whether a successor is already stored ([`Seen`]), without waiting for it: a slot
//! is written once, its fingerprint before the word that marks it taken, so a reader
//! sees a slot either empty or whole. A reader that misses a state being stored just
//! then only hands it back to be stored, where the writer finds it. Only doubling the
//! table waits for the readers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};

use super::encode::fingerprint;

/// The parent of an initial state.
const ROOT: u32 = u32::MAX;

/// The low 32 bits of a slot's second word hold `index + 1` (0: an empty slot).
const INDEX: u64 = 0xFFFF_FFFF;

/// The slots: `[fingerprint[0], high half of fingerprint[1] | index + 1]`, placed by
/// `fingerprint[0]`; a second word of 0 is empty.
struct Table {
    slots: Vec<[AtomicU64; 2]>,
}

impl Table {
    fn with_slots(n: usize) -> Table {
        Table {
            slots: (0..n)
                .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
                .collect(),
        }
    }

    /// The slot holding `fp`, or the empty slot where it would go.
    fn find(&self, fp: [u64; 2]) -> (usize, Option<u32>) {
        let tag = fp[1] & !INDEX;
        let mask = self.slots.len() - 1;
        let mut at = fp[0] as usize & mask;
        loop {
            let [first, second] = &self.slots[at];
            // Acquire pairs with the writer's release: a taken slot's fingerprint is
            // visible once its second word is.
            let second = second.load(Ordering::Acquire);
            if second == 0 {
                return (at, None);
            }
            if first.load(Ordering::Relaxed) == fp[0] && second & !INDEX == tag {
                return (at, Some((second & INDEX) as u32 - 1));
            }
            at = (at + 1) & mask;
        }
    }
}

/// Visited states, each with the index of the state it was first reached from. The
/// one writer of its table.
pub struct Visited {
    table: Arc<RwLock<Table>>,
    /// Parent index of state `i`, [`ROOT`] for an initial state.
    parents: Vec<u32>,
}

/// A reader's handle on a [`Visited`] table, for the threads that expand states.
#[derive(Clone)]
pub struct Seen(Arc<RwLock<Table>>);

/// [`Seen`] held for a while: the table cannot double under it.
pub struct SeenNow<'a>(RwLockReadGuard<'a, Table>);

impl Seen {
    /// Holds the table for a batch of questions.
    pub fn hold(&self) -> SeenNow<'_> {
        SeenNow(self.0.read().unwrap_or_else(|e| e.into_inner()))
    }
}

impl SeenNow<'_> {
    /// Whether the state whose encoding's [`fingerprint`] is `fp` is stored (a state
    /// being stored at this moment may be missed).
    pub fn contains(&self, fp: [u64; 2]) -> bool {
        self.0.find(fp).1.is_some()
    }

    /// The index of the state whose encoding's [`fingerprint`] is `fp`, if stored (a
    /// state being stored at this moment may be missed).
    pub fn index_of(&self, fp: [u64; 2]) -> Option<u32> {
        self.0.find(fp).1
    }
}

impl Visited {
    /// An empty set.
    pub fn new() -> Self {
        Visited {
            table: Arc::new(RwLock::new(Table::with_slots(1 << 12))),
            parents: Vec::new(),
        }
    }

    /// A reader's handle.
    pub fn seen(&self) -> Seen {
        Seen(Arc::clone(&self.table))
    }

    fn read(&self) -> RwLockReadGuard<'_, Table> {
        self.table.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of states stored.
    pub fn len(&self) -> usize {
        self.parents.len()
    }

    /// Whether `encoding` is that of state `i`.
    pub fn is(&self, i: u32, encoding: &[u8]) -> bool {
        self.read().find(fingerprint(encoding)).1 == Some(i)
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
        self.insert_or_find(fp, parent).ok()
    }

    /// The index of the state whose encoding's [`fingerprint`] is `fp`, if stored.
    pub fn index_of(&self, fp: [u64; 2]) -> Option<u32> {
        self.read().find(fp).1
    }

    /// Stores the state whose encoding's [`fingerprint`] is `fp`, reached from
    /// `parent`: `Ok` with its new index, or `Err` with the index it already had (one
    /// probe either way).
    pub fn insert_or_find(&mut self, fp: [u64; 2], parent: Option<u32>) -> Result<u32, u32> {
        let index = u32::try_from(self.len()).expect("fewer than 2^32 states");
        let roomy = {
            let table = self.table.read().unwrap_or_else(|e| e.into_inner());
            let (at, found) = table.find(fp);
            if let Some(old) = found {
                return Err(old);
            }
            let [first, second] = &table.slots[at];
            first.store(fp[0], Ordering::Relaxed);
            second.store((fp[1] & !INDEX) | (u64::from(index) + 1), Ordering::Release);
            // Load ≤ 3/4 keeps probe runs short.
            (self.parents.len() + 1) * 4 <= table.slots.len() * 3
        };
        self.parents.push(parent.unwrap_or(ROOT));
        if !roomy {
            self.grow();
        }
        Ok(index)
    }

    /// Doubles the table, waiting for the readers to let go of it.
    fn grow(&mut self) {
        let mut table = self.table.write().unwrap_or_else(|e| e.into_inner());
        let doubled = Table::with_slots(table.slots.len() * 2);
        let mask = doubled.slots.len() - 1;
        for [first, second] in &table.slots {
            let (first, second) = (
                first.load(Ordering::Relaxed),
                second.load(Ordering::Relaxed),
            );
            if second == 0 {
                continue;
            }
            let mut at = first as usize & mask;
            while doubled.slots[at][1].load(Ordering::Relaxed) != 0 {
                at = (at + 1) & mask;
            }
            doubled.slots[at][0].store(first, Ordering::Relaxed);
            doubled.slots[at][1].store(second, Ordering::Relaxed);
        }
        *table = doubled;
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
        let seen = v.seen();
        assert!(seen.hold().contains(fingerprint(&77u32.to_le_bytes())));
        assert!(!seen.hold().contains(fingerprint(&10_000u32.to_le_bytes())));
        assert_eq!(v.parent(78), Some(0));
        assert_eq!(v.parent(0), None);
    }

    #[test]
    fn a_reader_sees_what_the_writer_stored_while_it_grows() {
        let mut v = Visited::new();
        let seen = v.seen();
        let reader = std::thread::spawn(move || {
            // Every state the writer stores before its last is eventually seen, and
            // nothing is seen that was never stored.
            let last = fingerprint(&99_999u32.to_le_bytes());
            while !seen.hold().contains(last) {}
            (0..100_000u32).all(|i| seen.hold().contains(fingerprint(&i.to_le_bytes())))
                && !seen.hold().contains(fingerprint(&100_000u32.to_le_bytes()))
        });
        for i in 0..100_000u32 {
            v.insert(&i.to_le_bytes(), None);
        }
        assert!(reader.join().expect("reader"));
    }
}
