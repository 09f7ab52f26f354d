//! A node's keys as a vector sorted by name.
//!
//! Lock protocols use one to three keys, and the history checker keeps one keyspace per
//! operation it has linearized: as a `BTreeMap`, each of those was a 900-byte tree node
//! for a single key (47 MB of a 170,000-event check). A sorted vector holds exactly its
//! keys. Order, equality and hashing are those of the `BTreeMap` it replaced, key by key
//! in name order, so model fingerprints and state counts do not change.

use std::fmt;

use super::Entry;

/// Key name → entry, sorted by name, each name once.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Keyspace(Vec<(String, Entry)>);

impl Keyspace {
    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    /// The entry of `key`, live or not.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    /// The entry of `key`, to change in place.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Entry> {
        self.find(key).ok().map(|i| &mut self.0[i].1)
    }

    /// Whether `key` has an entry (live or not).
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Sets `key`'s entry; returns the one it replaced.
    pub fn insert(&mut self, key: String, entry: Entry) -> Option<Entry> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, entry)),
            Err(i) => {
                self.0.insert(i, (key, entry));
                None
            }
        }
    }

    /// The entry of `key`, made with `make` first when there is none.
    pub fn get_or_insert_with(&mut self, key: &str, make: impl FnOnce() -> Entry) -> &mut Entry {
        let i = match self.find(key) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (key.to_string(), make()));
                i
            }
        };
        &mut self.0[i].1
    }

    /// Deletes `key`; returns its entry.
    pub fn remove(&mut self, key: &str) -> Option<Entry> {
        self.find(key).ok().map(|i| self.0.remove(i).1)
    }

    /// Keeps the keys `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &Entry) -> bool) {
        self.0.retain(|(k, e)| keep(k, e));
    }

    /// Whether there is no key at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Key names in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> + Clone {
        self.0.iter().map(|(k, _)| k)
    }

    /// Entries in key order.
    pub fn values(&self) -> impl Iterator<Item = &Entry> + Clone {
        self.0.iter().map(|(_, e)| e)
    }

    /// Entries in key order, to change in place (not their names).
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Entry> {
        self.0.iter_mut().map(|(_, e)| e)
    }

    /// Names and entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Entry)> + Clone {
        self.0.iter().map(|(k, e)| (k, e))
    }
}

/// As a map, the way the `BTreeMap` it replaced printed.
impl fmt::Debug for Keyspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::hash::{BuildHasher, BuildHasherDefault};

    use super::super::Value;
    use super::*;

    fn entry(v: &str) -> Entry {
        Entry {
            value: Value::Str(v.into()),
            deadline: None,
        }
    }

    #[test]
    fn it_orders_hashes_and_prints_as_the_btreemap_did() {
        let mut ks = Keyspace::default();
        let mut map = BTreeMap::new();
        for (k, v) in [("lock", "c1"), ("fence", "3"), ("lock", "c2"), ("a", "x")] {
            assert_eq!(
                ks.insert(k.into(), entry(v)),
                map.insert(k.to_string(), entry(v))
            );
        }
        assert_eq!(ks.remove("a"), map.remove("a"));
        assert_eq!(ks.remove("a"), None);
        assert!(ks.iter().eq(map.iter()));
        let h = BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default();
        assert_eq!(h.hash_one(&ks), h.hash_one(&map));
        assert_eq!(format!("{ks:?}"), format!("{map:?}"));
        let mut smaller = ks.clone();
        smaller.insert("lock".into(), entry("c0"));
        assert!(smaller < ks);
        assert_eq!(ks.len(), 2);
        assert!(ks.get_or_insert_with("b", || entry("new")).value == Value::Str("new".into()));
        assert_eq!(ks.keys().collect::<Vec<_>>(), ["b", "fence", "lock"]);
    }
}
