//! The resource every lock model protects: a counter each holder increments in two
//! steps, a read and then a write of what it read plus one, so two holders at once lose
//! an update. A fenced resource also refuses a token lower than the highest it has seen
//! (Kleppmann's fencing), which is what keeps it safe when the lock is not.

/// The counter, the writes it accepted and the highest token presented.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Resource {
    /// The counter.
    pub value: u8,
    /// Writes accepted: a lock that works keeps `value == accepted`.
    pub accepted: u8,
    /// Highest fencing token presented.
    pub max_token: u64,
}

/// What one step of a holder's work did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// The token was lower than one already seen: nothing happened.
    Refused,
    /// The first step read this value.
    Read(u8),
    /// The second step wrote the value read plus one.
    Wrote,
}

impl Resource {
    /// Step `step` (0: read, otherwise write back `read + 1`) of a holder presenting
    /// `token`, checked against the highest seen only when `fenced`.
    pub fn access(&mut self, step: u8, token: u64, fenced: bool, read: u8) -> Access {
        if fenced && token < self.max_token {
            return Access::Refused;
        }
        self.max_token = self.max_token.max(token);
        if step == 0 {
            Access::Read(self.value)
        } else {
            self.value = read.saturating_add(1);
            self.accepted = self.accepted.saturating_add(1);
            Access::Wrote
        }
    }

    /// The resource with the values holders read and write forgotten (`reads`: what
    /// each holder between its read and its write read): no step of any model reads
    /// them back — a write adds one to what was read, whatever it was, and only the
    /// safety checks compare the counter with its accepted writes — so a model judged
    /// for progress alone ([`crate::kernel::repeat`]) stores them as 0, and a counter
    /// incremented for ever adds no state. The highest token stays: it decides whether
    /// a write is refused.
    pub fn forget_counts<'a>(&mut self, reads: impl IntoIterator<Item = &'a mut u8>) {
        forget_counts(&mut self.value, &mut self.accepted, reads);
    }

    /// No accepted write was based on a stale read.
    pub fn safe(&self) -> bool {
        self.value == self.accepted
    }

    /// The counter on the diagram's resource lane, with the highest token presented
    /// when `token`.
    pub fn counter(&self, token: bool) -> String {
        if token {
            format!("counter {} (token ≥ {})", self.value, self.max_token)
        } else {
            format!("counter {}", self.value)
        }
    }

    /// What the resource lane says of the counter when the lock guards it alone: with
    /// its highest token when `fenced`, otherwise nothing until a write is accepted.
    pub fn note(&self, fenced: bool) -> Option<String> {
        (fenced || self.accepted > 0).then(|| self.counter(fenced))
    }

    /// Its line in a story's state.
    pub fn describe(&self) -> String {
        format!(
            "resource: counter={} after {} accepted writes, highest token {}",
            self.value, self.accepted, self.max_token
        )
    }
}

/// A counter kept elsewhere (a ZooKeeper node, an etcd key, a SQL row), the writes
/// that counted (`count`) and the reads not yet written back, forgotten as
/// [`Resource::forget_counts`] forgets the resource's.
pub fn forget_counts<'a>(
    value: &mut u8,
    count: &mut u8,
    reads: impl IntoIterator<Item = &'a mut u8>,
) {
    *value = 0;
    *count = 0;
    for r in reads {
        *r = 0;
    }
}

/// Why resource safety broke, for every model's closing line.
pub const LOST_UPDATE: &str =
    "A write based on a stale read was accepted: the resource lost an update.";
