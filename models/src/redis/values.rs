//! The values clients write (`c0`, `c0:t1`, `t1`, a timestamp) and the replies a user
//! protocol's later steps read, each kept once for the life of the process and known
//! by a number ([`Text`]): a client is then plain data of a few bytes that a state
//! copies and hashes as words, where a `&str` cost 16 bytes and hashed its text. A
//! search meets a few dozen texts.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, OnceLock};

/// How many texts are read without a lock; any past them are read under one.
const FAST: usize = 1 << 12;

/// The texts by number, read by every step of a search: set once each, never moved.
static TEXTS: [OnceLock<&'static str>; FAST] = [const { OnceLock::new() }; FAST];

/// The numbers given so far, and the texts past [`FAST`].
#[derive(Default)]
struct Numbers {
    of: HashMap<&'static str, u32>,
    more: Vec<&'static str>,
}

static NUMBERS: LazyLock<Mutex<Numbers>> = LazyLock::new(Mutex::default);

/// A text kept once, by its number: 0 is the empty text. Equal texts have equal
/// numbers on every thread; numbers are given in the order texts are first met, so
/// they order by that, not by the text.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Text(u32);

impl Text {
    /// The empty text (a timestamp client's value before it reads its clock; the reply
    /// of no step).
    pub const EMPTY: Text = Text(0);

    /// The number of `text`, given now if it has none.
    pub fn of(text: &str) -> Text {
        if text.is_empty() {
            return Text::EMPTY;
        }
        let mut n = NUMBERS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = n.of.get(text) {
            return Text(*known);
        }
        let kept: &'static str = Box::leak(text.into());
        let number = n.of.len() + 1;
        match TEXTS.get(number) {
            Some(slot) => {
                // Only this thread, under the lock, sets a slot.
                let _ = slot.set(kept);
            }
            None => n.more.push(kept),
        }
        // A search meets far fewer than 2^32 texts; past that, numbers would repeat.
        let number = u32::try_from(number).unwrap_or(u32::MAX);
        n.of.insert(kept, number);
        Text(number)
    }

    /// The text: the one copy of it ([`Text::of`]), so equal texts are one address.
    pub fn text(self) -> &'static str {
        let i = self.0 as usize;
        if let Some(slot) = TEXTS.get(i) {
            return slot.get().copied().unwrap_or("");
        }
        let n = NUMBERS.lock().unwrap_or_else(|e| e.into_inner());
        n.more.get(i - FAST).copied().unwrap_or("")
    }

    /// Whether it is the empty text.
    pub fn is_empty(self) -> bool {
        self == Text::EMPTY
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.text(), f)
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text())
    }
}

/// The one copy of `value`.
pub fn value(value: &str) -> &'static str {
    Text::of(value).text()
}

#[cfg(test)]
mod tests {
    use super::Text;

    #[test]
    fn equal_texts_have_one_number_and_one_copy() {
        let a = Text::of(&format!("c{}", 7));
        let b = Text::of("c7");
        assert_eq!(a, b);
        assert_eq!(a.text(), "c7");
        assert!(std::ptr::eq(a.text(), b.text()));
        assert_eq!(Text::of(""), Text::EMPTY);
        assert_eq!(Text::EMPTY.text(), "");
        assert_ne!(Text::of("c8"), a);
    }

    /// Texts past the table read without a lock read back as well.
    #[test]
    fn texts_past_the_lock_free_table_read_back() {
        let many: Vec<(String, Text)> = (0..super::FAST + 100)
            .map(|i| format!("many-{i}"))
            .map(|t| {
                let n = Text::of(&t);
                (t, n)
            })
            .collect();
        for (t, n) in &many {
            assert_eq!(n.text(), t);
            assert_eq!(Text::of(t), *n);
        }
    }
}
