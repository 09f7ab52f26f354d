//! What the clients of the simulation talk to, and what really happened: the lock
//! service (correct, or broken), the counters it guards (fenced, or not), and the truth
//! the history is held against.

use locklab_models::spec::{LockInput, LockOutput, LockSpec, LockState, Spec, Window};

use crate::common::Faults;

/// The lock service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    /// locklab's lock spec.
    Correct,
    /// Grants every acquire (a fresh token each), releases every release.
    GrantsAll,
    /// Releases whoever holds the lock, like a bare `DEL`.
    BlindRelease,
}

/// How the resource treats fencing tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fence {
    /// Writes carry no token.
    None,
    /// A write with a token below one accepted before is refused.
    Correct,
    /// Every write is accepted, whatever its token.
    Broken,
}

#[derive(Clone, Debug)]
pub struct Setup {
    pub clients: u32,
    /// Locks, each guarding a counter of the same name.
    pub keys: usize,
    /// The lease of every acquire (`None`: held until released).
    pub lease: Option<u64>,
    pub lock: LockKind,
    /// Read and write the counter inside the critical section.
    pub counter: bool,
    /// The counters are stocks, of an inventory whose writes are updates: a client
    /// sells one unit if there is one.
    pub stock: bool,
    pub fence: Fence,
    /// Record `enter`/`leave`.
    pub markers: bool,
    /// Enter, and stay inside, whether or not the lease still runs.
    pub reckless: bool,
    pub faults: Faults,
    pub initial: i64,
}

impl Setup {
    /// How a history names a key: not at all when there is only one.
    pub fn key_name(&self, key: usize) -> Option<String> {
        (self.keys > 1).then(|| format!("k{key}"))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Req {
    Acquire,
    Release,
    Read,
    Write { value: i64, token: u64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ans {
    Granted(u64),
    Busy,
    Released,
    NotHeld,
    Value(i64),
    Written,
    Rejected,
}

/// A critical section as it really was.
#[derive(Clone, Debug)]
pub struct Section {
    pub client: u32,
    pub key: usize,
    pub start: u64,
    /// `None`: never left.
    pub end: Option<u64>,
}

/// What really happened to one counter.
#[derive(Clone, Debug, Default)]
pub struct Counted {
    /// Writes that took effect.
    pub writes: i64,
    /// Whether a write's effect is beyond what the history can tell (a lost answer, a
    /// timeout, no return).
    pub unknown_writes: bool,
    pub last_value: i64,
}

/// What really happened.
#[derive(Clone, Debug, Default)]
pub struct Truth {
    pub sections: Vec<Section>,
    /// Releases that succeeded though their client did not hold the lock (its lease
    /// had run out, or it never had it).
    pub foreign_releases: usize,
    /// An accepted write whose token was below one its counter accepted before.
    pub stale_accepted: bool,
    pub counters: Vec<Counted>,
}

impl Truth {
    pub fn overlap(&self) -> bool {
        let end = |s: &Section| s.end.unwrap_or(u64::MAX);
        self.sections.iter().enumerate().any(|(i, a)| {
            self.sections[i + 1..].iter().any(|b| {
                a.client != b.client && a.key == b.key && a.start < end(b) && b.start < end(a)
            })
        })
    }
}

/// One lock and the counter it guards.
pub struct Resource {
    pub lock: LockState,
    /// Until when each client holds the lock, as far as its grants and releases go
    /// (whatever the lock service's own state says).
    pub holds: Vec<u64>,
    pub value: i64,
    pub max_token: u64,
}

pub struct World<'a> {
    pub setup: &'a Setup,
    pub keys: Vec<Resource>,
    pub truth: Truth,
}

impl World<'_> {
    pub fn apply(&mut self, client: u32, key: usize, req: Req, t: u64) -> Ans {
        let ans = self.serve(client, key, req, t);
        let held = &mut self.keys[key].holds[client as usize];
        match ans {
            Ans::Granted(_) => *held = self.setup.lease.map_or(u64::MAX, |l| t + l),
            Ans::Released => {
                if *held <= t {
                    self.truth.foreign_releases += 1;
                }
                *held = 0;
            }
            Ans::Written => self.truth.counters[key].writes += 1,
            _ => {}
        }
        ans
    }

    fn serve(&mut self, client: u32, key: usize, req: Req, t: u64) -> Ans {
        let owner = client as u64;
        let at = Window::at(t);
        let (lock, fence) = (self.setup.lock, self.setup.fence);
        let r = &mut self.keys[key];
        match req {
            Req::Acquire if lock == LockKind::GrantsAll => {
                let token = r.lock.last_token + 1;
                r.lock.last_token = token;
                Ans::Granted(token)
            }
            Req::Release if lock == LockKind::GrantsAll => Ans::Released,
            Req::Release if lock == LockKind::BlindRelease => {
                match r.lock.holder.as_ref().filter(|h| h.maybe_live(at)) {
                    Some(_) => {
                        r.lock.holder = None;
                        Ans::Released
                    }
                    None => Ans::NotHeld,
                }
            }
            Req::Acquire | Req::Release => {
                let input = match req {
                    Req::Acquire => LockInput::Acquire {
                        owner,
                        lease: self.setup.lease,
                    },
                    _ => LockInput::Release { owner },
                };
                let (out, next) = LockSpec::default()
                    .step(&r.lock, &input, at)
                    .into_iter()
                    .next()
                    .expect("at an instant the lock has one outcome");
                r.lock = next;
                match out {
                    LockOutput::Granted(t) => Ans::Granted(t.expect("the spec tells the token")),
                    LockOutput::Busy => Ans::Busy,
                    LockOutput::Released => Ans::Released,
                    _ => Ans::NotHeld,
                }
            }
            Req::Read => Ans::Value(r.value),
            Req::Write { value, token } => {
                if fence == Fence::Correct && token < r.max_token {
                    return Ans::Rejected;
                }
                if fence != Fence::None {
                    self.truth.stale_accepted |= token < r.max_token;
                    r.max_token = r.max_token.max(token);
                }
                r.value = value;
                Ans::Written
            }
        }
    }
}
