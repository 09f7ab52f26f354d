//! The values clients write (`c0`, `c0:t1`, `t1`, a timestamp), each kept once for the
//! life of the process, so that a client is plain data a state copies without touching
//! a reference count. A search meets a few dozen.

use std::collections::{HashMap, HashSet};
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

/// The replies later steps read as `{reply}`, numbered in the order first met; 0 is
/// the empty reply.
#[derive(Default)]
struct Replies {
    texts: Vec<&'static str>,
    numbers: HashMap<&'static str, u32>,
}

static REPLIES: LazyLock<Mutex<Replies>> = LazyLock::new(Mutex::default);

/// The number of `reply`, the same on every thread (see [`reply_text`]).
pub fn reply(reply: &str) -> u32 {
    if reply.is_empty() {
        return 0;
    }
    let mut r = REPLIES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = r.numbers.get(reply) {
        return *n;
    }
    let kept = value(reply);
    r.texts.push(kept);
    // A search meets far fewer than 2^32 replies; past that, numbers would repeat.
    let n = u32::try_from(r.texts.len()).unwrap_or(u32::MAX);
    r.numbers.insert(kept, n);
    n
}

/// The reply numbered `n` by [`reply`] (empty for 0 or a number it never gave).
pub fn reply_text(n: u32) -> &'static str {
    let Some(i) = n.checked_sub(1) else {
        return "";
    };
    let r = REPLIES.lock().unwrap_or_else(|e| e.into_inner());
    usize::try_from(i)
        .ok()
        .and_then(|i| r.texts.get(i).copied())
        .unwrap_or("")
}
