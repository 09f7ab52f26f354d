//! SQL clients that lock again and again ([`crate::kernel::repeat`]): a finished
//! client starts its program over (on a new connection if the server closed its own),
//! and a state is stored with its counters renumbered — the rows' auto-increment ids,
//! the sequence `nextval` draws from, the tokens taken from either —, the values the
//! work reads and writes forgotten, and, past the horizon, its clock moved back with
//! every instant a row or a lease holds.

use crate::kernel::repeat::{Ranks, Rebase};
use crate::kernel::ClientPhase;
use crate::resource::forget_counts;

use super::model::{Client, Phase, SqlLockModel, SqlLockState};
use super::protocol::Lock;

impl SqlLockModel {
    /// Whether this model's clients can start over: not through a pool, whose
    /// connections the model hands out per statement.
    pub fn can_repeat(&self) -> bool {
        self.pool.is_none()
    }

    /// Client `c` before its first step: what it starts as.
    pub(super) fn fresh(&self, c: usize) -> Client {
        Client {
            phase: Phase::Acquire(0),
            process: Default::default(),
            session: if self.pool.is_some() { 0 } else { c as u8 },
            skew: 0,
            lease_until: None,
            token: 0,
            read: 0,
            lost: false,
        }
    }

    /// Whether a finished client asks for the lock again: where clients start over,
    /// once the faults are over (before, each locks once, as in every other check).
    pub(super) fn starts_over(&self, s: &SqlLockState) -> bool {
        crate::kernel::repeat::starts_over(self.repeat, s.now, self.horizon)
    }

    /// Client `c` of `s` starting over, its clock as skewed as it was; a connection
    /// the server closed is opened again.
    pub(super) fn again(&self, s: &mut SqlLockState, c: usize) {
        let cl = &s.clients[c];
        let next = Client {
            process: cl.process,
            skew: cl.skew,
            ..self.fresh(c)
        };
        if let Some(x) = s.db.sessions.get_mut(next.session as usize) {
            if !x.alive {
                x.alive = true;
                x.tx = None;
            }
        }
        s.clients[c] = next;
    }

    /// Whether the tokens are `nextval`'s (else the rows' ids).
    fn tokens_from_sequence(&self) -> bool {
        self.fencing && matches!(self.lock, Lock::Advisory)
    }

    /// The state stored for `s`: `s` itself where clients lock once, otherwise with its
    /// counters renumbered, the work's values forgotten and, past the horizon, its
    /// clock moved back.
    pub(super) fn rebased(&self, mut s: SqlLockState) -> SqlLockState {
        if !self.repeat {
            return s;
        }
        // A row's instant is read only against a clock as `t + ttl < clock`, and no
        // clock reads less than real time: one older than that for every clock is
        // stored as the oldest of those.
        let reach = self.ttl + 1;
        let r = Rebase::past(self.horizon.max(reach), s.now).unwrap_or(Rebase::stay(s.now));
        s.now = r.now();
        for row in s.db.rows.values_mut() {
            row.created = r.since(row.created, reach);
            row.last_lock_time = row.last_lock_time.map(|t| r.since(t, reach));
        }
        for c in &mut s.clients {
            c.lease_until = c.lease_until.map(|d| r.deadline(d));
            // A token is its holder's from its grant to its release.
            if !c.phase.holding() {
                c.token = 0;
            }
        }
        self.renumber(&mut s);
        for x in &mut s.db.sessions {
            if let Some(tx) = &mut x.tx {
                tx.counter = tx.counter.map(|_| 0);
            }
        }
        forget_counts(
            &mut s.db.counter,
            &mut s.commits,
            s.clients.iter_mut().map(|c| &mut c.read),
        );
        s.resource.forget_counts(std::iter::empty());
        s
    }

    /// The rows' ids with the next one, and the sequence's last value, each renumbered
    /// with the tokens taken from it and the highest token the resource saw.
    fn renumber(&self, s: &mut SqlLockState) {
        let from_sequence = self.tokens_from_sequence();
        let tokens: Vec<u64> = s
            .clients
            .iter()
            .map(|c| c.token)
            .chain([s.resource.max_token])
            .collect();
        let ids = s.db.rows.values().map(|r| r.id).chain([s.db.next_id]);
        let seq = u64::try_from(s.db.sequence).unwrap_or(0);
        let (id_ranks, seq_ranks) = if from_sequence {
            (
                Ranks::dense(ids, 1),
                Ranks::dense(tokens.iter().copied().chain([seq]), 1),
            )
        } else {
            (
                Ranks::dense(ids.chain(tokens.iter().copied()), 1),
                Ranks::dense([seq], 1),
            )
        };
        let token_ranks = if from_sequence { &seq_ranks } else { &id_ranks };
        for row in s.db.rows.values_mut() {
            row.id = id_ranks.get(row.id);
        }
        s.db.next_id = id_ranks.get(s.db.next_id);
        s.db.sequence = i64::try_from(seq_ranks.get(seq)).unwrap_or(s.db.sequence);
        for c in &mut s.clients {
            c.token = token_ranks.get(c.token);
        }
        s.resource.max_token = token_ranks.get(s.resource.max_token);
    }
}
