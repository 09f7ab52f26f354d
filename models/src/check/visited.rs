//! The visited set of a search: every state stored once, as a fingerprint of its
//! encoding, with its parent's index, in an open-addressing table. Two layouts
//! ([`Store`]):
//!
//! - **full** (the default): a slot is 16 bytes, 96 bits of the encoding's 128-bit
//!   fingerprint and the state's index, so a probe reads one slot, and a state costs
//!   the slot and a 4-byte parent index: no per-state allocation and no copy of the
//!   state. Among the 10⁸ states of a large search, the chance that two distinct
//!   encodings share 96 bits is about 10¹⁶ / 2⁹⁷ < 10⁻¹³, so its verdicts stand.
//! - **hash compaction** (as Spin's `-DHC`, for searches past memory): a slot is 8
//!   bytes, the fingerprint's first 64 bits, and a state keeps 32 more bits beside its
//!   parent, to find its path again. Half the table, at the price of a collision chance
//!   the search states ([`Visited::collision_bound`]) instead of a verdict: a state
//!   whose 64 bits are a stored state's would be taken as seen and not explored.
//!
//! One thread stores ([`Visited`]), and the threads that expand states ask at the same
//! time whether a successor is already stored ([`Seen`]), without waiting for it: a slot
//! is written once, its fingerprint before the word that marks it taken, so a reader
//! sees a slot either empty or whole. A reader that misses a state being stored just
//! then only hands it back to be stored, where the writer finds it. Only doubling the
//! table waits for the readers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};

use serde::Serialize;

use super::encode::fingerprint;

/// The parent of an initial state.
const ROOT: u32 = u32::MAX;

/// The low 32 bits of a full slot's second word hold `index + 1` (0: an empty slot).
const INDEX: u64 = 0xFFFF_FFFF;

/// How a search stores the states it has visited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Store {
    /// 96-bit fingerprints with their indices: exact verdicts.
    #[default]
    Full,
    /// 63-bit fingerprints, half the table: no verdict of "holds", a bounded chance of
    /// a missed state instead.
    HashCompact,
    /// One bit per hash in a fixed bit array, depth first (as Spin's `-DBITSTATE`): the
    /// least memory, and no bound on what it misses.
    Bitstate {
        /// The array holds 2^`log2_bits` bits.
        log2_bits: u32,
    },
}

impl Store {
    /// Whether a complete search in this store proves that nothing was missed.
    pub fn exact(self) -> bool {
        self == Store::Full
    }

    /// The store in words, for verdict lines.
    pub fn name(self) -> String {
        match self {
            Store::Full => "full".into(),
            Store::HashCompact => "hash compaction".into(),
            Store::Bitstate { log2_bits } => format!("bitstate (2^{log2_bits} bits)"),
        }
    }
}

/// The slots, placed by `fingerprint[0]`. Full: `[fingerprint[0], high half of
/// fingerprint[1] | index + 1]`, a second word of 0 empty. Compact: `fingerprint[0]`
/// (1 for 0), 0 empty.
enum Table {
    Full(Vec<[AtomicU64; 2]>),
    Compact(Vec<AtomicU64>),
}

impl Table {
    fn with_slots(store: Store, n: usize) -> Table {
        match store {
            Store::HashCompact => Table::Compact((0..n).map(|_| AtomicU64::new(0)).collect()),
            _ => Table::Full(
                (0..n)
                    .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
                    .collect(),
            ),
        }
    }

    fn len(&self) -> usize {
        match self {
            Table::Full(s) => s.len(),
            Table::Compact(s) => s.len(),
        }
    }

    /// The slot holding `fp` (with the index it holds, [`ROOT`] in a compact table),
    /// or the empty slot where it would go.
    fn find(&self, fp: [u64; 2]) -> (usize, Option<u32>) {
        let mask = self.len() - 1;
        match self {
            Table::Full(slots) => {
                let mut at = fp[0] as usize & mask;
                let tag = fp[1] & !INDEX;
                loop {
                    let [first, second] = &slots[at];
                    // Acquire pairs with the writer's release: a taken slot's
                    // fingerprint is visible once its second word is.
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
            Table::Compact(slots) => {
                let word = compact_word(fp);
                let mut at = word as usize & mask;
                loop {
                    match slots[at].load(Ordering::Relaxed) {
                        0 => return (at, None),
                        w if w == word => return (at, Some(ROOT)),
                        _ => at = (at + 1) & mask,
                    }
                }
            }
        }
    }

    /// Asks the processor to bring the slot a probe for `fp` starts at into its cache,
    /// while other work goes on: in a table of hundreds of megabytes nearly every probe
    /// misses the cache, and a search probes once per successor.
    fn prefetch(&self, fp: [u64; 2]) {
        let mask = self.len() - 1;
        let slot: *const i8 = match self {
            Table::Full(slots) => (&slots[fp[0] as usize & mask] as *const [AtomicU64; 2]).cast(),
            Table::Compact(slots) => {
                (&slots[compact_word(fp) as usize & mask] as *const AtomicU64).cast()
            }
        };
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is only a hint to the cache: it changes nothing the program
        // can observe and does not fault, and the address is a slot of the live table.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(slot)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = slot;
    }

    /// Writes `fp` with `index` into the empty slot `at`.
    fn put(&self, at: usize, fp: [u64; 2], index: u32) {
        match self {
            Table::Full(slots) => {
                let [first, second] = &slots[at];
                first.store(fp[0], Ordering::Relaxed);
                second.store((fp[1] & !INDEX) | (u64::from(index) + 1), Ordering::Release);
            }
            Table::Compact(slots) => slots[at].store(compact_word(fp), Ordering::Relaxed),
        }
    }

    /// This table's entries in a table of `n` slots: each slot's first word places it.
    fn rehashed(&self, n: usize) -> Table {
        let mask = n - 1;
        match self {
            Table::Full(slots) => {
                let new: Vec<[AtomicU64; 2]> = (0..n)
                    .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
                    .collect();
                for [first, second] in slots {
                    let (first, second) = (
                        first.load(Ordering::Relaxed),
                        second.load(Ordering::Relaxed),
                    );
                    if second == 0 {
                        continue;
                    }
                    let mut at = first as usize & mask;
                    while new[at][1].load(Ordering::Relaxed) != 0 {
                        at = (at + 1) & mask;
                    }
                    new[at][0].store(first, Ordering::Relaxed);
                    new[at][1].store(second, Ordering::Relaxed);
                }
                Table::Full(new)
            }
            Table::Compact(slots) => {
                let new: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
                for word in slots {
                    let word = word.load(Ordering::Relaxed);
                    if word == 0 {
                        continue;
                    }
                    let mut at = word as usize & mask;
                    while new[at].load(Ordering::Relaxed) != 0 {
                        at = (at + 1) & mask;
                    }
                    new[at].store(word, Ordering::Relaxed);
                }
                Table::Compact(new)
            }
        }
    }
}

/// A compact slot's word for `fp`: its first 64 bits, never 0 (the empty slot). Its low
/// bits are those that place it, so the table can double from its slots alone.
fn compact_word(fp: [u64; 2]) -> u64 {
    fp[0].max(1)
}

/// The 32 bits a compact store keeps beside a state's parent, to tell it from its
/// siblings when a path is replayed: bits the table does not hold.
fn check_bits(fp: [u64; 2]) -> u32 {
    (fp[1] >> 32) as u32
}

/// Visited states, each with the index of the state it was first reached from. The
/// one writer of its table.
pub struct Visited {
    table: Arc<RwLock<Table>>,
    /// Parent index of state `i`, [`ROOT`] for an initial state.
    parents: Vec<u32>,
    /// In a compact store, [`check_bits`] of state `i` (empty in a full one).
    checks: Vec<u32>,
    store: Store,
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
    /// state being stored at this moment may be missed). Full stores only.
    pub fn index_of(&self, fp: [u64; 2]) -> Option<u32> {
        self.0.find(fp).1.filter(|i| *i != ROOT)
    }

    /// Starts bringing `fp`'s slot into the cache, for a [`SeenNow::contains`] a little
    /// later.
    pub fn prefetch(&self, fp: [u64; 2]) {
        self.0.prefetch(fp);
    }
}

impl Default for Visited {
    fn default() -> Self {
        Visited::new()
    }
}

impl Visited {
    /// An empty full store.
    pub fn new() -> Self {
        Visited::with_store(Store::Full)
    }

    /// An empty store of the given kind ([`Store::Bitstate`] is not a table: a full
    /// store stands in for it).
    pub fn with_store(store: Store) -> Self {
        let store = if store == Store::HashCompact {
            store
        } else {
            Store::Full
        };
        Visited {
            table: Arc::new(RwLock::new(Table::with_slots(store, 1 << 12))),
            parents: Vec::new(),
            checks: Vec::new(),
            store,
        }
    }

    /// A reader's handle.
    pub fn seen(&self) -> Seen {
        Seen(Arc::clone(&self.table))
    }

    fn read(&self) -> RwLockReadGuard<'_, Table> {
        self.table.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts bringing `fp`'s slot into the cache, for an insert a little later.
    pub fn prefetch(&self, fp: [u64; 2]) {
        self.read().prefetch(fp);
    }

    /// Number of states stored.
    pub fn len(&self) -> usize {
        self.parents.len()
    }

    /// Whether `encoding` is that of state `i` (in a compact store: whether it is
    /// stored and shares `i`'s [`check_bits`], which a replay that meets two such
    /// siblings must try both of).
    pub fn is(&self, i: u32, encoding: &[u8]) -> bool {
        let fp = fingerprint(encoding);
        match self.store {
            Store::HashCompact => {
                self.checks.get(i as usize) == Some(&check_bits(fp))
                    && self.read().find(fp).1.is_some()
            }
            _ => self.read().find(fp).1 == Some(i),
        }
    }

    /// The parent of state `i`, `None` for an initial state.
    pub fn parent(&self, i: u32) -> Option<u32> {
        Some(self.parents[i as usize]).filter(|p| *p != ROOT)
    }

    /// An upper bound on the chance that a state was taken for another and not explored:
    /// every pair of distinct states stored shares the compared bits with chance 2^-bits
    /// (96 in a full store, 64 in a compact one), so for n states ≤ n(n−1)/2 · 2^-bits.
    pub fn collision_bound(&self) -> f64 {
        let n = self.len() as f64;
        let bits = if self.store == Store::HashCompact {
            64
        } else {
            96
        };
        (n * (n - 1.0) / 2.0 * 2f64.powi(-bits)).min(1.0)
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

    /// The index of the state whose encoding's [`fingerprint`] is `fp`, if stored. Full
    /// stores only.
    pub fn index_of(&self, fp: [u64; 2]) -> Option<u32> {
        self.read().find(fp).1.filter(|i| *i != ROOT)
    }

    /// Stores the state whose encoding's [`fingerprint`] is `fp`, reached from
    /// `parent`: `Ok` with its new index, or `Err` with the index it already had (one
    /// probe either way; in a compact store, which keeps no index, [`u32::MAX`]).
    pub fn insert_or_find(&mut self, fp: [u64; 2], parent: Option<u32>) -> Result<u32, u32> {
        let index = u32::try_from(self.len()).expect("fewer than 2^32 states");
        let roomy = {
            let table = self.read();
            let (at, found) = table.find(fp);
            if let Some(old) = found {
                return Err(old);
            }
            table.put(at, fp, index);
            // Load ≤ 3/4 keeps probe runs short.
            (self.parents.len() + 1) * 4 <= table.len() * 3
        };
        self.parents.push(parent.unwrap_or(ROOT));
        if self.store == Store::HashCompact {
            self.checks.push(check_bits(fp));
        }
        if !roomy {
            self.grow();
        }
        Ok(index)
    }

    /// Doubles the table, waiting for the readers to let go of it.
    fn grow(&mut self) {
        let mut table = self.table.write().unwrap_or_else(|e| e.into_inner());
        *table = table.rehashed(table.len() * 2);
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
    fn a_compact_store_keeps_every_state_and_its_check_bits_through_growth() {
        let mut v = Visited::with_store(Store::HashCompact);
        for i in 0..100_000u32 {
            assert_eq!(v.insert(&i.to_le_bytes(), i.checked_sub(1)), Some(i));
        }
        assert_eq!(v.insert(&5u32.to_le_bytes(), None), None);
        assert!(v.is(5, &5u32.to_le_bytes()));
        assert!(!v.is(6, &5u32.to_le_bytes()), "another state's check bits");
        assert!(!v.is(5, &100_000u32.to_le_bytes()), "not stored");
        assert_eq!(v.parent(5), Some(4));
        assert_eq!(v.index_of(fingerprint(&5u32.to_le_bytes())), None);
        let bound = v.collision_bound();
        assert!(bound > 2.0e-10 && bound < 3.0e-10, "{bound}");
        assert!(Visited::new().collision_bound() == 0.0);
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
