//! A client's step, phase by phase: the command it sends in each phase, what the reply
//! does to what it believes, and the phase it goes on to. Its watchdog's renewal too.

use super::*;

impl RedisLockModel {
    /// Client `c`'s next step from `st`, if it has one; what it sent goes to `log`.
    pub(super) fn step(
        &self,
        st: &RedisLockState,
        c: usize,
        log: &mut Log,
    ) -> Option<RedisLockState> {
        let cl = &st.clients[c];
        if cl.phase == Phase::Done && self.starts_over(st) && cl.process.works() {
            let mut s = st.clone();
            s.clients[c] = Client {
                process: cl.process,
                ..self.fresh(c)
            };
            return Some(s);
        }
        if !cl.process.works() || matches!(cl.phase, Phase::Done | Phase::Crashed) {
            return None;
        }
        // Cut off from the master, a client's command waits (its retries time out)
        // until a master is on its side again.
        let sends = !matches!(cl.phase, Phase::Idle | Phase::Critical(_));
        if sends && Self::target(st, c).is_none() {
            return None;
        }
        let mut s = st.clone();
        let mut turn = Turn { c, cl, log };
        let next = match cl.phase {
            Phase::Idle => {
                s.clients[c].value = if self.value == ValueKind::Timestamp {
                    Text::of(&s.now.to_string())
                } else {
                    self.value_of(c)
                };
                Phase::Acquire(0)
            }
            Phase::Acquire(k) => self.acquire(&mut s, &mut turn, k)?,
            Phase::Wait => self.wait_for_replicas(&mut s, &mut turn)?,
            Phase::Fence => {
                let cmd = self.command(Request::Fence, Said::value(""), s.now)?;
                match self.exchange(&mut s, &mut turn, cmd, false) {
                    RedisReply::Integer(t) => {
                        s.clients[c].token = t;
                        Phase::Critical(0)
                    }
                    _ => Phase::Release(0),
                }
            }
            Phase::Critical(k) if self.fencing => {
                // INCR's tokens start at 1; a client that has none presents 0.
                let token = u64::try_from(cl.token).unwrap_or(0);
                match s.resource.access(k, token, true, cl.read) {
                    Access::Read(v) => {
                        s.clients[c].read = v;
                        Phase::Critical(1)
                    }
                    Access::Refused | Access::Wrote => Phase::Release(0),
                }
            }
            Phase::Critical(k) if protocol::reentrant(self.protocol) || self.reenters => {
                self.nested(&mut s, &mut turn, k)?
            }
            Phase::Critical(_) => Phase::Release(0),
            Phase::Release(k) => match self.command(Request::Release(k), turn.said(), s.now) {
                None => Phase::Done,
                Some(cmd) => {
                    let reply = self.exchange(&mut s, &mut turn, cmd, true);
                    match protocol::released(self.protocol, k, turn.said(), &reply) {
                        Some(next) => {
                            self.keep(&mut s, c, Some(&reply));
                            Phase::Release(next)
                        }
                        None => {
                            self.keep(&mut s, c, None);
                            Phase::Done
                        }
                    }
                }
            },
            Phase::Done | Phase::Crashed => return None,
        };
        s.clients[c].phase = next;
        if !next.holding() {
            s.clients[c].lease_until = Lease::NONE;
        }
        self.settle(&mut s);
        Some(s)
    }

    /// Acquire step `k`: its command, and where the reply leads (the next step, a
    /// refusal and what the protocol does on one, or the lock).
    fn acquire(&self, s: &mut RedisLockState, turn: &mut Turn, k: u8) -> Option<Phase> {
        let (c, cl) = (turn.c, turn.cl);
        let said = turn.said();
        let cmd = self.command(Request::Acquire(k), said, s.now)?;
        let master = Self::target(s, c).map(|m| s.nodes[m]);
        let reply = self.exchange(s, turn, cmd, false);
        Some(match protocol::acquired(self.protocol, k, said, &reply) {
            Acquired::Next => {
                self.keep(s, c, Some(&reply));
                Phase::Acquire(k + 1)
            }
            Acquired::Busy => {
                // A release in `finally` reads what the attempt kept.
                if protocol::on_busy(self.protocol) != OnBusy::Release {
                    self.keep(s, c, None);
                }
                // Refused by a master that held no key and that the refusal left as it
                // was: not a step of a longer way in.
                let unchanged = Self::target(s, c).map(|m| s.nodes[m]) == master;
                let answered = !matches!(reply, RedisReply::Error(_));
                if unchanged && answered && Self::holds_nothing(s, c) {
                    s.refused_free.get_or_insert(c as u8);
                }
                let tries = protocol::attempts(self.protocol);
                match protocol::on_busy(self.protocol) {
                    OnBusy::Retry if tries.is_some_and(|n| cl.refused + 1 >= n) => Phase::Done,
                    OnBusy::Retry => {
                        if tries.is_some() {
                            s.clients[c].refused += 1;
                        }
                        Phase::Acquire(0)
                    }
                    OnBusy::GiveUp => Phase::Done,
                    OnBusy::Release => Phase::Release(0),
                }
            }
            Acquired::Got => {
                if let Some(t) = protocol::granted_token(self.protocol, k, &reply) {
                    s.clients[c].token = t;
                }
                if protocol::has_ttl(self.protocol) {
                    s.clients[c].lease_until = Lease::until(s.now + self.ttl);
                }
                s.clients[c].wait_for = (s.epoch, s.offset);
                self.after_acquire()
            }
        })
    }

    /// `WAIT n` after the grant: enter once enough replicas have it, give the lock back
    /// when the wait times out short, start over when the master it waited on is gone.
    /// `None` while it still waits.
    fn wait_for_replicas(&self, s: &mut RedisLockState, turn: &mut Turn) -> Option<Phase> {
        let (c, cl) = (turn.c, turn.cl);
        let n = self.wait.unwrap_or(0);
        let cmd = self.command(Request::Wait(n), Said::value(""), s.now)?;
        if cl.wait_for.0 != s.epoch {
            // The master this WAIT was sent to is gone: the client sees an error and
            // starts over.
            turn.log.note(&cmd, || {
                RedisReply::Error("connection lost (failover)".into())
            });
            s.clients[c].lease_until = Lease::NONE;
            return Some(Phase::Acquire(0));
        }
        // An isolated client's master has no replica to count.
        let got = match s.split {
            Some(x) if x.client as usize == c => 0,
            _ => topology::acked(&s.nodes, s.master as usize, s.offset, cl.wait_for.1),
        };
        // `WAIT n timeout` returns short at its timeout, which a client sets below its
        // lease: here, the last moment before the lease runs out. Too few replicas have
        // the grant, so the client gives it back and does not enter (as
        // `implementations`' client does).
        let timed_out = cl.lease_until.get().is_some_and(|d| time::due(s.now, d));
        turn.log.note(&cmd, || RedisReply::Integer(i64::from(got)));
        if got < n && !timed_out {
            None
        } else if got < n {
            Some(Phase::Release(0))
        } else if self.fencing {
            Some(Phase::Fence)
        } else {
            Some(Phase::Critical(0))
        }
    }

    /// Sub-step `k` of a section that locks again (a nested method): the nested
    /// `lock()` (0, or [`WAITING_FOR_ITSELF`] after its own key refused it), the nested
    /// `unlock()` (1), then the outer release.
    fn nested(&self, s: &mut RedisLockState, turn: &mut Turn, k: u8) -> Option<Phase> {
        let (c, cl) = (turn.c, turn.cl);
        let said = turn.said();
        Some(match k {
            0 | WAITING_FOR_ITSELF => {
                let mine = {
                    let n = &s.nodes[s.master as usize];
                    match n.db.live(LOCK_KEY, s.now).map(|e| &e.value) {
                        Some(crate::redis::spec::Value::Hash(h)) => h.contains_key(cl.value.text()),
                        Some(crate::redis::spec::Value::Str(v)) => v == cl.value.text(),
                        None => false,
                    }
                };
                let cmd = self.command(Request::Acquire(0), said, s.now)?;
                let reply = self.exchange(s, turn, cmd, false);
                if protocol::acquired(self.protocol, 0, said, &reply) == Acquired::Got {
                    s.clients[c].lease_until = Lease::until(s.now + self.ttl);
                    Phase::Critical(1)
                } else {
                    if mine {
                        s.reentrancy_broken.get_or_insert(c as u8);
                    }
                    if self.waits_for_itself() {
                        // lock() tries again: the holder waits, inside its section, for
                        // a lock it holds itself.
                        Phase::Critical(WAITING_FOR_ITSELF)
                    } else {
                        Phase::Critical(2)
                    }
                }
            }
            1 => {
                let cmd = self.command(Request::Release(0), said, s.now)?;
                let held = self.lock_live(s);
                let reply = self.exchange(s, turn, cmd, true);
                let freed = match self.protocol {
                    // Redisson's unlock says so: 1 when it deleted the lock.
                    Protocol::Redisson => reply == RedisReply::Integer(1),
                    _ => held && !self.lock_live(s),
                };
                if freed {
                    // Freed while this client still held it once.
                    s.reentrancy_broken.get_or_insert(c as u8);
                }
                Phase::Critical(2)
            }
            _ => Phase::Release(0),
        })
    }

    /// Sends `cmd` for the turn's client and logs it with its reply.
    fn exchange(
        &self,
        s: &mut RedisLockState,
        turn: &mut Turn,
        cmd: Rc<RedisCommand>,
        release: bool,
    ) -> RedisReply {
        let reply = self.send(s, turn.c, &cmd, release);
        turn.log.note(&cmd, || reply.clone());
        reply
    }

    /// What a user protocol's later steps read as `{reply}`: the reply of the last step
    /// that went on (`next`) since this attempt began; nothing once over.
    fn keep(&self, s: &mut RedisLockState, c: usize, reply: Option<&RedisReply>) {
        if protocol::uses_reply(self.protocol) {
            s.clients[c].reply = reply.map_or(Text::EMPTY, |r| {
                Text::of(&crate::protocol::redis::steps::reply_text(r))
            });
        }
    }

    /// The watchdog's renewal of client `c`'s lease, once it is due.
    pub(super) fn renew(
        &self,
        st: &RedisLockState,
        c: usize,
        log: &mut Log,
    ) -> Option<RedisLockState> {
        let cl = &st.clients[c];
        let due = cl.lease_until.get().is_some_and(|d| time::due(st.now, d));
        if !self.watchdog_runs(cl) || !due {
            return None;
        }
        let mut s = st.clone();
        // A renewal reads the reply its acquire kept, as the real client's does.
        let said = said(cl);
        let cmd = self.command(Request::Renew, said, s.now)?;
        let reply = self.send(&mut s, c, &cmd, false);
        if protocol::renewed(self.protocol, said, &reply) {
            s.clients[c].lease_until = Lease::until(s.now + self.ttl);
        }
        log.note(&cmd, || reply);
        Some(s)
    }
}

/// The client taking a step, as it was before it, and where its commands are logged.
struct Turn<'s, 'l, 'a> {
    c: usize,
    cl: &'s Client,
    log: &'l mut Log<'a>,
}

impl Turn<'_, '_, '_> {
    /// What the client's commands fill in.
    fn said(&self) -> Said<'static> {
        said(self.cl)
    }
}

/// What client `cl`'s commands fill in: its identity and the reply it kept.
fn said(cl: &Client) -> Said<'static> {
    Said {
        value: cl.value.text(),
        reply: cl.reply.text(),
    }
}
