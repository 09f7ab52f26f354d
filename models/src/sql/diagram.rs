//! The SQL lock model drawn: a lane per client, the database server, the reaper job
//! when there is one, and the resource; every statement an arrow to the server with
//! its reply and session, a killed session marked on the server.

use crate::diagram::{client, resource_lane, resource_state, Exchange, Lane, LaneKind, LaneState};
use crate::kernel::{ClientPhase, LockChecks, WorkStep};

use super::model::{Action, Phase, SqlLockModel, SqlLockState};
use super::narration::{phase_words, WORDS};
use super::protocol::{Lock, Work};
use super::text::{reply_text, statement_text};

/// The server's lane.
const SERVER: &str = "server";

impl SqlLockModel {
    pub(super) fn diagram_lanes(&self, s: &SqlLockState) -> Vec<Lane> {
        let mut lanes: Vec<Lane> = (0..s.clients.len())
            .map(|c| Lane::new(client(c), client(c), LaneKind::Client))
            .collect();
        lanes.push(Lane::new(SERVER, self.dialect.server(), LaneKind::Node));
        if matches!(self.lock, Lock::UniqueKey { reaper: true, .. }) {
            lanes.push(Lane::new("reaper", "reaper job", LaneKind::Agent));
        }
        lanes.push(resource_lane());
        lanes
    }

    /// Who holds the lock on the server, as `(what, owner lane, expiry)`.
    fn holder(&self, s: &SqlLockState) -> Option<(String, Option<String>, Option<u64>)> {
        let via = |x: u8| {
            (0..s.clients.len())
                .find(|&c| s.clients[c].session == x && s.clients[c].phase.holding())
                .map(client)
        };
        if let Some(r) = s.db.rows.values().find(|r| !r.owner.is_empty()) {
            // Drawn on the real time axis: a time by the server's clock is moved back by
            // how far that clock runs ahead.
            let real = |t: u64| t.saturating_sub(s.db_ahead);
            let until = match self.lock {
                Lock::Lease { db_time: true, .. } => {
                    r.last_lock_time.map(|l| real(l + self.ttl + 1))
                }
                Lock::Lease { db_time: false, .. } => r.last_lock_time.map(|l| l + self.ttl + 1),
                Lock::UniqueKey { reaper: true, .. } => Some(real(r.created + self.ttl + 1)),
                _ => None,
            };
            let lane = (0..s.clients.len()).map(client).find(|c| *c == r.owner);
            return Some((format!("row {} #{}", r.owner, r.id), lane, until));
        }
        if let Some((_, (x, _))) = s.db.named.iter().next() {
            return Some((format!("GET_LOCK s{x}"), via(*x), None));
        }
        if let Some(a) = s.db.advisory.values().next() {
            return Some((format!("advisory s{}", a.session), via(a.session), None));
        }
        if let Some((_, x)) = s.db.row_locks.iter().next() {
            return Some((format!("FOR UPDATE s{x}"), via(*x), None));
        }
        None
    }

    pub(super) fn diagram_states(&self, s: &SqlLockState) -> Vec<LaneState> {
        let mut out: Vec<LaneState> = s
            .clients
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let (_, what) = phase_words(c);
                let mut status = what.to_string();
                if c.skew > 0 {
                    status.push_str(&format!(", clock +{}", c.skew));
                }
                c.process.lane(i, &status, c.lease_until, c.phase)
            })
            .collect();
        let dead = s.db.sessions.iter().filter(|x| !x.alive).count();
        let holder = self.holder(s);
        let mut status = match (&holder, dead) {
            (_, 0) => "up".to_string(),
            (_, n) => format!("{n} session(s) gone"),
        };
        if s.db_ahead > 0 {
            status.push_str(&format!(", clock +{}", s.db_ahead));
        }
        // What a rollback would undo, and what a READ UNCOMMITTED reader already sees.
        for (x, v) in super::narration::uncommitted(&s.db) {
            status.push_str(&format!("; s{x}: n={v} uncommitted"));
        }
        out.push(LaneState {
            lane: SERVER.into(),
            status,
            lease_until: holder.as_ref().and_then(|h| h.2),
            owner: holder.as_ref().and_then(|h| h.1.clone()),
            holds: holder.map(|h| h.0),
            ..LaneState::default()
        });
        if matches!(self.lock, Lock::UniqueKey { reaper: true, .. }) {
            out.push(LaneState {
                lane: "reaper".into(),
                status: if s.reaper_dead { "dead" } else { "every tick" }.into(),
                ..LaneState::default()
            });
        }
        let extra = match self.work {
            Work::Outside if self.fencing || s.resource.accepted > 0 => {
                Some(s.resource.counter(true))
            }
            Work::InTx => Some(format!("committed n={}", s.db.counter)),
            Work::Outside => None,
        };
        out.push(resource_state(&self.in_critical(s), extra));
        out
    }

    pub(super) fn diagram_exchange(&self, s: &SqlLockState, a: &Action) -> Exchange {
        let e = self.effect(s, a);
        let sent = e.as_ref().and_then(|e| e.sent.as_ref());
        let mark =
            |lane: String, label: String, fault: bool| Exchange::mark(Some(lane), label, fault);
        match *a {
            Action::Step { client: c, .. } => {
                if let Some((x, cmd, reply)) = sent {
                    return Exchange::arrow(
                        client(c),
                        SERVER,
                        format!("[s{x}] {}", statement_text(cmd)),
                        Some(reply_text(reply)),
                    );
                }
                let cl = &s.clients[c as usize];
                match (cl.phase, self.lock.in_process()) {
                    (Phase::Acquire(1), _) if self.bypasses(c.into()) => {
                        return mark(client(c), "takes no lock (plain SELECT path)".into(), false)
                    }
                    (Phase::Acquire(1), true) => {
                        return mark(client(c), "takes the app lock".into(), false)
                    }
                    (Phase::Release, true) => {
                        return mark(client(c), "app lock released, COMMIT not yet".into(), false)
                    }
                    _ => {}
                }
                let after = e
                    .as_ref()
                    .map(|e| (e.state.clients[c as usize].phase, &e.state.resource));
                WorkStep::arrow(c, (cl.phase, &s.resource), after, cl.token, self.fencing)
                    .unwrap_or_else(|| mark(client(c), "steps".into(), false))
            }
            Action::Tick => Exchange::tick(s.now + 1),
            Action::Reap => match sent {
                Some((_, cmd, reply)) => Exchange::arrow(
                    "reaper",
                    SERVER,
                    statement_text(cmd),
                    Some(reply_text(reply)),
                ),
                None => mark("reaper".into(), "runs".into(), false),
            },
            Action::Kill(x) => {
                let mut k = mark(
                    SERVER.into(),
                    format!("⚡ {}", self.dialect.kill_text(x)),
                    true,
                );
                // The crux: the server ends the session and frees what it held; the
                // client that lived on it is not told until its next statement.
                k.arrows
                    .extend(s.clients.iter().position(|c| c.session == x).map(|c| {
                        crate::diagram::Arrow {
                            from: SERVER.into(),
                            to: client(c),
                            label: format!("✗ session {x} ended, its locks freed: not heard"),
                            reply: None,
                            fault: true,
                            lost: true,
                        }
                    }));
                k
            }
            Action::Skew(c) => mark(client(c), format!("⚡ clock jumps +{}", self.ttl + 1), true),
            Action::Jump => mark(
                SERVER.into(),
                format!("⚡ server clock jumps +{}", self.ttl + 1),
                true,
            ),
            Action::ReaperDies => mark("reaper".into(), "⚡ the reaper job dies".into(), true),
            Action::Rollback(c) => mark(client(c), "⚡ method throws: ROLLBACK".into(), true),
            _ => WORDS.mark(a.client_fault()),
        }
    }
}
