//! The lock service every protocol is held against: owner-aware (only the holder
//! releases), reentrant hold counts, lease deadlines, and a fencing token that strictly
//! increases with every grant.
//!
//! Protocols differ in how they *implement* this service (a Redis key, a SQL row, a
//! ZooKeeper node); a protocol is correct exactly when what its clients observe is a
//! behaviour of this spec.

use super::{fmt_time, maybe_expired, maybe_live, outcomes, Outcomes, Spec, Window};

/// Who asks: a client identity as the lock sees it (a UUID+thread in Redisson, a session
/// in ZooKeeper). Two clients that share an owner value are the same owner to the lock.
pub type Owner = u64;

/// The lock service spec.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LockSpec {
    /// Whether the holder may acquire again (hold count + 1) instead of being refused.
    pub reentrant: bool,
    /// Whether the server ends a lease at some unknown time after it runs out rather
    /// than at it (etcd's leader sweeps expired leases every 500 ms and a new leader
    /// restarts every TTL): a lease is then surely live until its TTL and maybe live
    /// for ever after, so no grant or refusal after the TTL is held against the lock.
    pub late_expiry: bool,
    /// Whether the lock may refuse while nobody holds it: a quorum lock (Redlock) under
    /// contention, when every contender took a minority of the nodes and each saw the
    /// others' keys as "busy". A refusal then tells nothing about the holder. Nor does
    /// a holder's release answered "not held": its deletes reached every node it could,
    /// but fewer than a quorum still had its key (a node died, or came back empty), so
    /// the lock is given up all the same.
    pub spurious_refusals: bool,
}

/// A granted lock.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hold {
    /// The holder.
    pub owner: Owner,
    /// How many times the holder acquired without releasing (1 unless reentrant).
    pub count: u32,
    /// The fencing token of this grant.
    pub token: u64,
    /// When the lease runs out (`None`: never, the lock has no TTL). A window, because a
    /// history only tells when the grant happened within its operation's interval.
    pub deadline: Option<Window>,
}

impl Hold {
    /// The lease may still be live at some instant of `at`.
    pub fn maybe_live(&self, at: Window) -> bool {
        maybe_live(self.deadline, at)
    }

    /// The lease may have run out at some instant of `at`.
    pub fn maybe_expired(&self, at: Window) -> bool {
        maybe_expired(self.deadline, at)
    }
}

/// The lock's state.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LockState {
    /// The current grant, if any.
    pub holder: Option<Hold>,
    /// The token of the most recent grant (0: none yet).
    pub last_token: u64,
}

/// What a client asks of the lock.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LockInput {
    /// Take the lock with a lease (`None`: no lease, held until released).
    Acquire {
        /// Who asks.
        owner: Owner,
        /// How long the lease lasts.
        lease: Option<u64>,
    },
    /// Give the lock back (one hold, for a reentrant lock).
    Release {
        /// Who asks.
        owner: Owner,
    },
    /// Extend the holder's lease (a watchdog's renewal).
    Renew {
        /// Who asks.
        owner: Owner,
        /// The new lease, counted from the renewal.
        lease: u64,
    },
}

impl LockInput {
    /// Who asks.
    pub fn owner(&self) -> Owner {
        match self {
            LockInput::Acquire { owner, .. }
            | LockInput::Release { owner }
            | LockInput::Renew { owner, .. } => *owner,
        }
    }
}

/// What the lock answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LockOutput {
    /// The lock is yours, with this fencing token (`None` in a history: not recorded).
    Granted(Option<u64>),
    /// Someone holds it.
    Busy,
    /// One hold given back.
    Released,
    /// You do not hold it (never did, or the lease ran out).
    NotHeld,
    /// The lease was extended.
    Renewed,
}

impl LockSpec {
    /// When a lease of `lease` taken during `at` runs out.
    fn deadline(&self, at: Window, lease: u64) -> Window {
        let d = at.plus(lease);
        if self.late_expiry {
            Window {
                lo: d.lo,
                hi: u64::MAX,
            }
        } else {
            d
        }
    }

    fn grant(
        &self,
        state: &LockState,
        owner: Owner,
        lease: Option<u64>,
        at: Window,
    ) -> (LockOutput, LockState) {
        let token = state.last_token + 1;
        (
            LockOutput::Granted(Some(token)),
            LockState {
                holder: Some(Hold {
                    owner,
                    count: 1,
                    token,
                    deadline: lease.map(|l| self.deadline(at, l)),
                }),
                last_token: token,
            },
        )
    }

    fn without_holder(state: &LockState) -> LockState {
        LockState {
            holder: None,
            last_token: state.last_token,
        }
    }
}

impl Spec for LockSpec {
    type State = LockState;
    type Input = LockInput;
    type Output = LockOutput;

    fn init(&self) -> LockState {
        LockState::default()
    }

    #[inline]
    fn step(
        &self,
        state: &LockState,
        input: &LockInput,
        at: Window,
    ) -> Outcomes<LockOutput, LockState> {
        let Some(h) = &state.holder else {
            let mut free = outcomes![match input {
                LockInput::Acquire { owner, lease } => self.grant(state, *owner, *lease, at),
                _ => (LockOutput::NotHeld, state.clone()),
            }];
            if self.spurious_refusals && matches!(input, LockInput::Acquire { .. }) {
                free.push((LockOutput::Busy, state.clone()));
            }
            return free;
        };
        let mine = h.owner == input.owner();
        let mut outcomes = Outcomes::new();
        if h.maybe_live(at) {
            outcomes.push(match input {
                LockInput::Acquire { lease, .. } if mine && self.reentrant => {
                    let mut next = state.clone();
                    if let Some(hold) = next.holder.as_mut() {
                        hold.count += 1;
                        // Re-entering refreshes the lease, as Redisson's script does.
                        hold.deadline = lease.map(|l| self.deadline(at, l)).or(hold.deadline);
                    }
                    (LockOutput::Granted(Some(h.token)), next)
                }
                LockInput::Acquire { .. } => (LockOutput::Busy, state.clone()),
                LockInput::Release { .. } if mine && h.count > 1 => {
                    let mut next = state.clone();
                    if let Some(hold) = next.holder.as_mut() {
                        hold.count -= 1;
                    }
                    (LockOutput::Released, next)
                }
                LockInput::Release { .. } if mine => {
                    (LockOutput::Released, Self::without_holder(state))
                }
                LockInput::Renew { lease, .. } if mine => {
                    let mut next = state.clone();
                    if let Some(hold) = next.holder.as_mut() {
                        hold.deadline = Some(self.deadline(at, *lease));
                    }
                    (LockOutput::Renewed, next)
                }
                LockInput::Release { .. } | LockInput::Renew { .. } => {
                    (LockOutput::NotHeld, state.clone())
                }
            });
        }
        if h.maybe_expired(at) {
            let expired = Self::without_holder(state);
            outcomes.push(match input {
                LockInput::Acquire { owner, lease } => self.grant(&expired, *owner, *lease, at),
                _ => (LockOutput::NotHeld, expired),
            });
        }
        if self.spurious_refusals
            && mine
            && h.count == 1
            && matches!(input, LockInput::Release { .. })
            && h.maybe_live(at)
        {
            outcomes.push((LockOutput::NotHeld, Self::without_holder(state)));
        }
        let refused = (LockOutput::Busy, state.clone());
        if self.spurious_refusals
            && matches!(input, LockInput::Acquire { .. })
            && !outcomes.contains(&refused)
        {
            outcomes.push(refused);
        }
        outcomes
    }

    /// Only "busy" keeps every state as it is: a refused release or renewal may be the
    /// moment the lock noticed an expired lease.
    fn read_only(&self, input: &LockInput, output: &LockOutput) -> bool {
        matches!(
            (input, output),
            (LockInput::Acquire { .. }, LockOutput::Busy)
        )
    }

    /// A service may skip tokens (an `INCR` counter shared by several locks), so a grant
    /// matches when its token is at least the predicted one; a re-entry keeps its token.
    fn observe(
        &self,
        before: &LockState,
        _input: &LockInput,
        _at: Window,
        predicted: (LockOutput, LockState),
        observed: &LockOutput,
    ) -> Option<LockState> {
        match (&predicted.0, observed) {
            (LockOutput::Granted(_), LockOutput::Granted(None)) => Some(predicted.1),
            (LockOutput::Granted(Some(p)), LockOutput::Granted(Some(o))) => {
                let fresh = *p > before.last_token;
                if *o == *p || (fresh && *o > *p) {
                    let mut next = predicted.1;
                    if let Some(h) = next.holder.as_mut() {
                        h.token = *o;
                    }
                    next.last_token = next.last_token.max(*o);
                    Some(next)
                } else {
                    None
                }
            }
            (p, o) => (p == o).then_some(predicted.1),
        }
    }

    /// In a history's units: leases and deadlines are nanoseconds, written in seconds.
    fn describe(input: &LockInput, output: Option<&LockOutput>) -> String {
        let call = match input {
            LockInput::Acquire {
                owner,
                lease: Some(l),
            } => format!("acquire(owner {owner}, lease {})", fmt_time(*l)),
            LockInput::Acquire { owner, lease: None } => format!("acquire(owner {owner})"),
            LockInput::Release { owner } => format!("release(owner {owner})"),
            LockInput::Renew { owner, lease } => {
                format!("renew(owner {owner}, lease {})", fmt_time(*lease))
            }
        };
        let ret = match output {
            None => "?".to_string(),
            Some(LockOutput::Granted(Some(t))) => format!("granted, token {t}"),
            Some(LockOutput::Granted(None)) => "granted".to_string(),
            Some(LockOutput::Busy) => "busy".to_string(),
            Some(LockOutput::Released) => "released".to_string(),
            Some(LockOutput::NotHeld) => "not held".to_string(),
            Some(LockOutput::Renewed) => "renewed".to_string(),
        };
        format!("{call} -> {ret}")
    }

    /// `free`, or the holder with its hold count, token and when its lease runs out.
    fn describe_state(state: &LockState) -> String {
        let Some(h) = &state.holder else {
            return "free".to_string();
        };
        let mut s = format!("held by owner {}", h.owner);
        if h.count > 1 {
            s.push_str(&format!(" ({} holds)", h.count));
        }
        if h.token > 0 {
            s.push_str(&format!(", token {}", h.token));
        }
        match h.deadline {
            None => s.push_str(", no lease"),
            Some(w) if w.lo == w.hi => s.push_str(&format!(", lease until {}", fmt_time(w.lo))),
            Some(w) => s.push_str(&format!(
                ", lease until {}–{}",
                fmt_time(w.lo),
                fmt_time(w.hi)
            )),
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn only(v: Outcomes<LockOutput, LockState>) -> (LockOutput, LockState) {
        assert_eq!(v.len(), 1, "{v:?}");
        v.into_iter().next().expect("one outcome")
    }

    #[test]
    fn exact_time_is_deterministic_and_leases_expire() {
        let spec = LockSpec::default();
        let s0 = spec.init();
        let (o, s1) = only(spec.step(
            &s0,
            &LockInput::Acquire {
                owner: 1,
                lease: Some(10),
            },
            Window::at(0),
        ));
        assert_eq!(o, LockOutput::Granted(Some(1)));
        let (o, _) = only(spec.step(
            &s1,
            &LockInput::Acquire {
                owner: 2,
                lease: Some(10),
            },
            Window::at(9),
        ));
        assert_eq!(o, LockOutput::Busy);
        let (o, s2) = only(spec.step(
            &s1,
            &LockInput::Acquire {
                owner: 2,
                lease: Some(10),
            },
            Window::at(10),
        ));
        assert_eq!(o, LockOutput::Granted(Some(2)));
        let (o, _) = only(spec.step(&s2, &LockInput::Release { owner: 1 }, Window::at(11)));
        assert_eq!(o, LockOutput::NotHeld);
    }

    /// A split vote: every contender took a minority of Redlock's nodes, so each is
    /// refused while nobody holds the lock. Only a lock that says so may do it.
    #[test]
    fn only_a_quorum_lock_refuses_while_free() {
        let acquire = LockInput::Acquire {
            owner: 1,
            lease: Some(10),
        };
        let strict = LockSpec::default();
        let (o, _) = only(strict.step(&strict.init(), &acquire, Window::at(0)));
        assert_eq!(o, LockOutput::Granted(Some(1)));
        let quorum = LockSpec {
            spurious_refusals: true,
            ..LockSpec::default()
        };
        let free = quorum.init();
        let both = quorum.step(&free, &acquire, Window::at(0));
        assert!(both.contains(&(LockOutput::Busy, free.clone())), "{both:?}");
        assert!(both.iter().any(|(o, _)| *o == LockOutput::Granted(Some(1))));
        // A refusal changes nothing, and a lease that may have run out is no exception.
        let (_, held) = only(strict.step(&free, &acquire, Window::at(0)));
        let late = quorum.step(
            &held,
            &LockInput::Acquire {
                owner: 2,
                lease: Some(10),
            },
            Window { lo: 5, hi: 15 },
        );
        assert_eq!(
            late.iter().filter(|(o, _)| *o == LockOutput::Busy).count(),
            1,
            "{late:?}"
        );
    }

    /// A Redlock holder whose node died mid-lease gets "not held" from its release
    /// (fewer than a quorum still had its key), yet it did give the lock up: only a
    /// quorum lock may answer so, and the lock is free after it.
    #[test]
    fn a_quorum_lock_may_release_as_not_held() {
        let acquire = LockInput::Acquire {
            owner: 1,
            lease: Some(10),
        };
        let release = LockInput::Release { owner: 1 };
        let strict = LockSpec::default();
        let (_, held) = only(strict.step(&strict.init(), &acquire, Window::at(0)));
        let (o, _) = only(strict.step(&held, &release, Window::at(5)));
        assert_eq!(o, LockOutput::Released);
        let quorum = LockSpec {
            spurious_refusals: true,
            ..LockSpec::default()
        };
        let outs = quorum.step(&held, &release, Window::at(5));
        let free = outs
            .iter()
            .find(|(o, _)| *o == LockOutput::NotHeld)
            .map(|(_, s)| s.clone())
            .expect("not held is allowed");
        assert_eq!(free.holder, None);
        // Another client's release is still refused without freeing anything.
        let other = quorum.step(&held, &LockInput::Release { owner: 2 }, Window::at(5));
        assert!(other.iter().all(|(_, s)| s.holder.is_some()), "{other:?}");
    }

    #[test]
    fn reentrant_counts_holds() {
        let spec = LockSpec {
            reentrant: true,
            ..LockSpec::default()
        };
        let acq = LockInput::Acquire {
            owner: 1,
            lease: None,
        };
        let (_, s) = only(spec.step(&spec.init(), &acq, Window::at(0)));
        let (o, s) = only(spec.step(&s, &acq, Window::at(1)));
        assert_eq!(o, LockOutput::Granted(Some(1)));
        let (_, s) = only(spec.step(&s, &LockInput::Release { owner: 1 }, Window::at(2)));
        assert!(s.holder.is_some(), "freed at count 1");
        let (_, s) = only(spec.step(&s, &LockInput::Release { owner: 1 }, Window::at(3)));
        assert!(s.holder.is_none());
    }

    #[test]
    fn a_window_straddling_the_deadline_allows_both() {
        let spec = LockSpec::default();
        let (_, s) = only(spec.step(
            &spec.init(),
            &LockInput::Acquire {
                owner: 1,
                lease: Some(10),
            },
            Window::at(0),
        ));
        let outs = spec.step(
            &s,
            &LockInput::Acquire {
                owner: 2,
                lease: Some(10),
            },
            Window::between(5, 15),
        );
        assert_eq!(outs.len(), 2);
    }
}
