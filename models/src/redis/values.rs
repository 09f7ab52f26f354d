//! The values clients write (`c0`, `c0:t1`, `t1`, a timestamp), each kept once for the
//! life of the process, so that a client is plain data a state copies without touching
//! a reference count. A search meets a few dozen.

use std::collections::HashSet;
use std::sync::{LazyLock, Mutex};

static VALUES: LazyLock<Mutex<HashSet<&'static str>>> = LazyLock::new(Mutex::default);

/// The one copy of `value`.
pub fn value(value: &str) -> &'static str {
    let mut values = VALUES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = values.get(value) {
        return known;
    }
    let kept: &'static str = Box::leak(value.into());
    values.insert(kept);
    kept
}
