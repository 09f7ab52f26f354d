//! The SQL lock model told in words: each client, the server's lock state and the
//! resource as lines, every step as the statement a reader would see in the server's
//! general log with its reply, and the closing line that says why a property broke.

use crate::check::{happened, pair, Narrate};
use crate::diagram::{Exchange, Lane, LaneState};
use crate::kernel::{belief, ClientPhase, FaultWords, LockChecks, WorkStep};
use crate::registry::Property;
use crate::resource::LOST_UPDATE;

use super::model::{owner, Action, Client, Dialect, Phase, SqlLockModel, SqlLockState};
use super::protocol::{Lock, Work};
use super::spec::{SqlState, LOCK_NAME};
use super::text::{reply_text, statement_text};

impl Dialect {
    /// The server's name.
    pub fn server(self) -> &'static str {
        match self {
            Dialect::MySql => "mariadb",
            Dialect::Postgres => "postgres",
        }
    }

    /// How an operator kills session `x`.
    pub fn kill_text(self, x: u8) -> String {
        match self {
            Dialect::MySql => format!("KILL CONNECTION <session {x}>"),
            Dialect::Postgres => format!("SELECT pg_terminate_backend(<session {x}>)"),
        }
    }
}

/// How the client faults read: the server sees a crashed client's connection close.
pub(super) const WORDS: FaultWords = FaultWords {
    pause: " (GC / stop-the-world)",
    pause_mark: " (GC)",
    crash: "; the server sees its connection close",
    servers: "the server",
    heartbeats: "statements",
    alive: "its connection, and the session its lock belongs to, stay open",
    alive_mark: "session stays open",
};

/// A client's phase in words: on its story line, and (shorter) on its diagram lane.
pub(super) fn phase_words(c: &Client) -> (String, &'static str) {
    let (story, lane) = match c.phase {
        Phase::Acquire(0) => ("acquiring", "acquiring"),
        Phase::Acquire(k) => return (format!("acquiring (step {})", k + 1), "acquiring"),
        Phase::Fence => ("taking a fencing token", "fencing"),
        Phase::Critical(_) => ("IN CRITICAL SECTION", "inside"),
        Phase::Release => ("releasing", "releasing"),
        Phase::Commit => (
            "left the synchronized method; its transaction still open, COMMIT next",
            "committing",
        ),
        Phase::Done if c.lost => ("gave up (connection lost)", "gave up"),
        Phase::Done => ("done", "done"),
        Phase::Crashed => ("CRASHED", "crashed"),
    };
    (story.to_string(), lane)
}

fn server_lines(m: &SqlLockModel, db: &SqlState, now: u64) -> Vec<String> {
    let server = m.dialect.server();
    let mut lines = Vec::new();
    let rows: Vec<String> = db
        .rows
        .iter()
        .map(|(name, r)| {
            let mut t = format!("('{name}', id {}, owner '{}'", r.id, r.owner);
            if m.lock.timed() {
                match (m.lock, r.last_lock_time) {
                    (Lock::Lease { .. }, Some(l)) => t.push_str(&format!(", last_lock_time {l}")),
                    (Lock::Lease { .. }, None) => t.push_str(", last_lock_time MIN"),
                    _ => t.push_str(&format!(", created {}", r.created)),
                }
                if SqlState::reapable(r, now, m.ttl) && matches!(m.lock, Lock::UniqueKey { .. }) {
                    t.push_str(", older than the TTL");
                }
            }
            t + ")"
        })
        .collect();
    if matches!(m.lock, Lock::UniqueKey { .. } | Lock::Lease { .. }) {
        lines.push(format!("{server}: locks = [{}]", rows.join(", ")));
    }
    for (name, (x, n)) in &db.named {
        lines.push(format!(
            "{server}: GET_LOCK '{name}' held by session {x} ({n}x)"
        ));
    }
    for (key, a) in &db.advisory {
        lines.push(format!(
            "{server}: advisory lock {key} held by session {} (session {}x, xact {}x)",
            a.session, a.count, a.xact
        ));
    }
    for (name, x) in &db.row_locks {
        lines.push(format!(
            "{server}: row '{name}' locked FOR UPDATE by session {x}'s transaction"
        ));
    }
    let dead: Vec<String> = (0..db.sessions.len())
        .filter(|&x| !db.sessions[x].alive)
        .map(|x| x.to_string())
        .collect();
    if !dead.is_empty() {
        lines.push(format!("{server}: session(s) {} gone", dead.join(", ")));
    }
    if m.work == Work::InTx {
        let pending: Vec<String> = uncommitted(db)
            .map(|(x, v)| format!("session {x} wrote {v} uncommitted"))
            .collect();
        let extra = if pending.is_empty() {
            String::new()
        } else {
            format!(" ({})", pending.join(", "))
        };
        lines.push(format!("{server}: counter n={}{extra}", db.counter));
    }
    lines
}

impl Narrate for SqlLockModel {
    fn describe_state(&self, s: &SqlLockState) -> Vec<String> {
        let mut lines = Vec::new();
        if self.lock.timed() {
            lines.push(format!("clock t={}", s.now));
        }
        if s.db_ahead > 0 {
            lines.push(format!(
                "{}'s clock: t={} ({} ahead)",
                self.dialect.server(),
                s.db_now(),
                s.db_ahead
            ));
        }
        for (i, c) in s.clients.iter().enumerate() {
            let (what, _) = phase_words(c);
            let session = if c.phase.holding() {
                format!(" on session {}", c.session)
            } else {
                String::new()
            };
            let token = self.fencing.then_some(c.token).filter(|t| *t > 0);
            let belief = belief(c.lease_until, token);
            let skew = if c.skew > 0 {
                format!(", clock +{} ahead", c.skew)
            } else {
                String::new()
            };
            let tags = c.process.tags();
            lines.push(format!("c{i}: {what}{session}{belief}{skew}{tags}"));
        }
        lines.extend(server_lines(self, &s.db, s.db_now()));
        if s.reaper_dead {
            lines.push("reaper job: dead".to_string());
        }
        if self.work == Work::InTx && s.commits > 0 {
            lines.push(format!(
                "committed: {} transaction(s) with a counter write",
                s.commits
            ));
        }
        if self.lock.in_process() {
            lines.push(match s.mutex {
                Some(c) => format!("application lock (synchronized): held by c{c}"),
                None => "application lock (synchronized): free".to_string(),
            });
        }
        if self.work == Work::Outside && (self.fencing || s.resource.accepted > 0) {
            lines.push(s.resource.describe());
        }
        lines
    }

    fn describe_action(&self, s: &SqlLockState, a: &Action) -> String {
        let e = self.effect(s, a);
        let sent = e.as_ref().and_then(|e| e.sent.clone());
        let said = |who: String| match &sent {
            Some((x, cmd, reply)) => format!(
                "{who} (session {x}): {} -> {}",
                statement_text(cmd),
                reply_text(reply)
            ),
            None => String::new(),
        };
        match *a {
            Action::Step { client: c, .. } => {
                let cl = &s.clients[c as usize];
                let queued = e
                    .as_ref()
                    .is_some_and(|e| e.state.queue.contains(&c) && !s.queue.contains(&c));
                let after = e.map(|e| e.state.clients[c as usize].phase);
                let outside = "finishes its work outside the database";
                match (cl.phase, self.lock.in_process()) {
                    (Phase::Acquire(1), _) if self.bypasses(c.into()) => {
                        return format!(
                            "c{c}'s code path takes no lock: no SELECT … FOR UPDATE, it reads the counter with a plain SELECT"
                        )
                    }
                    (Phase::Acquire(1), true) => {
                        return format!(
                            "c{c} enters the synchronized method: takes the application's lock"
                        )
                    }
                    (Phase::Release, true) => {
                        return format!(
                            "c{c} returns from the synchronized method: the application's lock is free; the transaction around it is not committed yet"
                        )
                    }
                    _ => {}
                }
                match (&sent, WorkStep::of(cl.phase, after)) {
                    (Some(_), _) => said(format!("c{c}")),
                    (None, Some(w)) => w.story(c, cl.token, self.fencing, outside),
                    (None, None) if queued => {
                        let Phase::Acquire(k) = cl.phase else {
                            return format!("c{c} waits for the lock");
                        };
                        let cmd = self
                            .lock
                            .acquire(k, &owner(c.into()), s.now + cl.skew, self.ttl);
                        let ahead = match s.queue.len() {
                            0 => "its holder".to_string(),
                            n => format!("its holder and {n} waiter(s) before it"),
                        };
                        format!(
                            "c{c}: {} waits for the lock, queued behind {ahead}",
                            statement_text(&cmd)
                        )
                    }
                    (None, None) if cl.phase == Phase::Done => {
                        format!("c{c} asks for the lock again")
                    }
                    (None, None) => format!("c{c} steps"),
                }
            }
            Action::Tick => format!("time passes to t={}", s.now + 1),
            Action::Reap => match &sent {
                Some((_, cmd, reply)) => format!(
                    "reaper job: {} -> {}",
                    statement_text(cmd),
                    reply_text(reply)
                ),
                None => "reaper job".to_string(),
            },
            Action::Kill(x) => format!(
                "the server kills session {x}: {}",
                self.dialect.kill_text(x)
            ),
            Action::Skew(c) => format!("c{c}'s clock jumps {} ahead", self.ttl + 1),
            Action::Rollback(c) => said(format!(
                "c{c}'s method throws after its lock was released; c{c}"
            )),
            Action::ReaperDies => {
                "the reaper job dies (its host down, the job disabled); nothing restarts it"
                    .to_string()
            }
            Action::Jump => format!(
                "{}'s clock jumps {} ahead: NOW() reads t={}",
                self.dialect.server(),
                self.ttl + 1,
                s.db_now() + self.ttl + 1
            ),
            _ => WORDS.story(a.client_fault()),
        }
    }

    fn lanes(&self, s: &SqlLockState) -> Vec<Lane> {
        self.diagram_lanes(s)
    }

    fn lane_states(&self, s: &SqlLockState) -> Vec<LaneState> {
        self.diagram_states(s)
    }

    fn now(&self, s: &SqlLockState) -> Option<u64> {
        self.lock.timed().then_some(s.now)
    }

    fn exchange(&self, s: &SqlLockState, a: &Action) -> Exchange {
        self.diagram_exchange(s, a)
    }

    fn is_fault(&self, a: &Action) -> bool {
        a.client_fault().is_some_and(|(f, _)| f.is_fault())
            || matches!(
                a,
                Action::Kill(_)
                    | Action::Skew(_)
                    | Action::Jump
                    | Action::ReaperDies
                    | Action::Rollback(_)
            )
    }

    fn why(&self, property: Property, path: &[(Option<Action>, SqlLockState)]) -> String {
        let killed = happened(path, |a| matches!(a, Action::Kill(_)));
        let skewed = happened(path, |a| matches!(a, Action::Skew(_)));
        let jumped = happened(path, |a| matches!(a, Action::Jump));
        let paused = happened(path, |a| matches!(a, Action::Pause(_)));
        let last = path.last().map(|(_, s)| s);
        let pair = pair(&last.map(|s| self.in_critical(s)).unwrap_or_default());
        match property {
            // Judged on histories only: no model states them.
            Property::LockLinearizability | Property::ResourceLinearizability | Property::Fencing => {
                format!("{property} is judged on histories, not by this model.")
            }
            Property::MutualExclusion if self.bypass => format!(
                "c{} reads and writes the stock through a code path that never takes the lock: FOR UPDATE excludes only those who ask for it, so {pair} are inside together.",
                self.clients - 1
            ),
            Property::MutualExclusion if self.pool.is_some() => format!(
                "Both clients' lock statements went through the same pooled backend, and a session lock is reentrant for its session: {pair} both hold it."
            ),
            Property::MutualExclusion if killed => format!(
                "The lock belonged to the holder's session, and the server killed that session: the lock was freed at once while the holder, which sent no statement, worked on outside the database; {pair} are inside together."
            ),
            Property::MutualExclusion if jumped => format!(
                "The database's clock jumped more than the TTL ahead while the holder worked: `last_lock_time < NOW() - ttl` read the holder's lease as expired and the next UPDATE took it, though no real time had passed — one clock for every client, but still a clock: {pair} both hold the lease row."
            ),
            Property::MutualExclusion if skewed => format!(
                "The client's clock ran more than the TTL ahead, so its `last_lock_time < now - ttl` found the holder's lease expired: {pair} both hold the lease row."
            ),
            Property::MutualExclusion if paused && matches!(self.lock, Lock::UniqueKey { .. }) => format!(
                "The holder paused past the TTL; the reaper deleted its row as abandoned and another client inserted its own: {pair} both hold the lock."
            ),
            Property::MutualExclusion if paused => format!(
                "The holder paused past the TTL; the database's NOW() fixes clock skew, not pauses, so the next UPDATE took the lease: {pair} both hold it."
            ),
            Property::MutualExclusion => format!("{pair} are in the critical section together."),
            Property::NoForeignRelease => {
                let c = last.and_then(|s| s.foreign_release).unwrap_or(0);
                format!(
                    "c{c}'s row was reaped while it was paused; its `DELETE … WHERE name = '{LOCK_NAME}'` deleted the row the next holder inserted."
                )
            }
            Property::Liveness => {
                let what = last
                    .and_then(|s| self.orphan(s))
                    .unwrap_or_else(|| "a lock".to_string());
                let reaper_died = happened(path, |a| matches!(a, Action::ReaperDies));
                let hung = happened(path, |a| matches!(a, Action::Hang(_)));
                if hung {
                    format!(
                        "The holder's worker hung inside its section, but its connection stays open — the driver, the pool and TCP keep it alive — and a session lock lives as long as the session: nothing will free {what}, and the waiting client waits for ever. The session proves the connection is alive, not that the work is."
                    )
                } else if reaper_died {
                    format!(
                        "The reaper job had died, so it no longer deletes rows past their age; the holder crashed after its INSERT committed, and {what} stays for ever: the waiting client can never insert its own. The reaper is part of the lock — it must be watched and restarted like the database."
                    )
                } else if self.pool.is_some() {
                    format!(
                        "The unlock went through another pooled backend than the lock (which answered f: you don't own a lock), so {what} stays held with no one to unlock it while a client waits."
                    )
                } else {
                    format!(
                        "The holder crashed after its INSERT committed; nothing deletes {what}, so the waiting client can never insert its own."
                    )
                }
            }
            Property::ResourceSafety if self.bypass => format!(
                "c{} read the counter with a plain SELECT — a consistent read, which does not wait for the row lock the holder's UPDATE took and returns the last committed value — and its own UPDATE, which does wait, then overwrote the holder's committed write with one built on the old value: an update is lost. Every code path that changes the stock must read it FOR UPDATE (or in one conditional UPDATE).",
                self.clients - 1
            ),
            Property::ResourceSafety if self.lock.in_process() => {
                let rolled_back = killed || happened(path, |a| matches!(a, Action::Rollback(_)));
                if rolled_back {
                    "Under READ UNCOMMITTED the next client read the holder's uncommitted write, and that transaction then rolled back: the next client's write, built on a value that never existed, committed, and the rolled-back update lives on in it. READ UNCOMMITTED hides the window only until a transaction fails.".to_string()
                } else {
                    "The application's lock was released when the method returned, but the transaction around the method commits only after that: the next client took the lock and read the committed value — the old one, since the holder's write was not committed yet — and its UPDATE, once the holder's row lock was free, overwrote the holder's write. An update is lost though the lock excluded every section: the lock must be taken outside the transaction (or be the database's own, FOR UPDATE).".to_string()
                }
            }
            Property::ResourceSafety => LOST_UPDATE.to_string(),
            Property::Reentrancy => "A re-entry was refused.".to_string(),
        }
    }
}

/// The counter writes of open transactions, by session: what a rollback would undo.
pub(super) fn uncommitted(db: &SqlState) -> impl Iterator<Item = (usize, u8)> + '_ {
    db.sessions
        .iter()
        .enumerate()
        .filter_map(|(x, s)| Some((x, s.tx.as_ref()?.counter?)))
}
