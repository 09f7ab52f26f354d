//! A client's step, phase by phase: the request it sends the cluster in each phase of
//! its lock, and the phase the reply leads to.

use super::*;

impl EtcdLockModel {
    /// Client `c`'s next step from `st`, if it has one, with the request it sent.
    pub(super) fn step(&self, st: &EtcdLockState, c: usize) -> Option<Effect> {
        if st.clients[c].phase == Phase::Done
            && self.starts_over(st)
            && st.clients[c].process.works()
        {
            let mut s = st.clone();
            s.clients[c] = self.again(st, c);
            return Some(Effect::plain(s));
        }
        let cl = st.clients[c].clone();
        if !cl.phase.running() || !self.may_step(&cl) {
            return None;
        }
        if let Lock::Described(d) = self.lock {
            if !cl.phase.critical() {
                return self.described_step(d.0, st, c);
            }
        }
        let mut s = st.clone();
        let mut turn = Turn { sent: None };
        let key = self.my_key(&cl);
        let name = owner(c);
        let next = match cl.phase {
            Phase::Grant => match turn.send(&mut s, EtcdCommand::Grant { ttl: self.ttl }) {
                EtcdReply::Granted { lease, .. } => {
                    s.clients[c].lease = Some(lease);
                    Phase::Create
                }
                _ => return None,
            },
            Phase::Create => self.create(&mut s, &mut turn, c, &cl, &key)?,
            Phase::Wait => {
                let cmd = EtcdCommand::LastCreateBefore {
                    prefix: LOCK_PREFIX.into(),
                    max_create_rev: cl.my_rev - 1,
                };
                match turn.send(&mut s, cmd) {
                    EtcdReply::Kvs(kvs) if kvs.is_empty() => match self.lock {
                        Lock::LockRpc {
                            check_own_key: false,
                        } => Phase::Critical(0),
                        _ => Phase::Check,
                    },
                    // Still queued: the watch has nothing to report yet.
                    _ => return None,
                }
            }
            Phase::Check => match turn.send(&mut s, EtcdCommand::Get { key }) {
                EtcdReply::Kvs(kvs) if !kvs.is_empty() => Phase::Critical(0),
                _ => {
                    s.clients[c].lost = true;
                    Phase::Done
                }
            },
            Phase::Critical(k) => self.work(&mut s, &mut turn, c, &cl, &key, k),
            Phase::Release | Phase::Retry => {
                if s.etcd.keys.get(&key).is_some_and(|kv| kv.value != name)
                    && !self.guarded_release()
                {
                    s.foreign_release.get_or_insert(c as u8);
                }
                turn.send(&mut s, self.release(&key, cl.my_rev));
                Phase::Done
            }
            Phase::Acquire(_) | Phase::Unlock(_) | Phase::Done | Phase::Crashed => return None,
        };
        s.clients[c].phase = next;
        Some(Effect {
            state: s,
            sent: turn.sent,
        })
    }

    /// The create of the client's key, in one transaction with the read of the queue's
    /// first (or, the single-key lock, alone): the lock at once, or a place in the
    /// queue. `None` while a single key is busy (nothing changes until it goes).
    fn create(
        &self,
        s: &mut EtcdLockState,
        turn: &mut Turn,
        c: usize,
        cl: &Client,
        key: &str,
    ) -> Option<Phase> {
        let put = EtcdCommand::Put {
            key: key.to_string(),
            value: owner(c),
            lease: cl.lease,
        };
        let get = EtcdCommand::Get {
            key: key.to_string(),
        };
        let first = EtcdCommand::FirstCreate {
            prefix: LOCK_PREFIX.into(),
        };
        let single = matches!(self.lock, Lock::SingleKey { .. });
        let txn = EtcdCommand::Txn {
            compare: vec![Compare::CreateRevision {
                key: key.to_string(),
                rev: 0,
            }],
            success: if single {
                vec![put]
            } else {
                vec![put, first.clone()]
            },
            failure: if single { vec![] } else { vec![get, first] },
        };
        let before = s.etcd.revision;
        Some(match turn.send(s, txn) {
            // Busy: the single-key protocol tries again.
            EtcdReply::Txn {
                succeeded: false, ..
            } if single => return None,
            EtcdReply::Txn { responses, .. } => {
                let my_rev = s.etcd.create_rev(key);
                s.clients[c].my_rev = my_rev;
                let owner_rev = match responses.last() {
                    Some(EtcdReply::Kvs(kvs)) if !single => {
                        kvs.first().map_or(0, |kv| kv.1.create_rev)
                    }
                    _ => my_rev,
                };
                debug_assert!(before <= s.etcd.revision);
                if owner_rev == my_rev {
                    Phase::Critical(0)
                } else {
                    Phase::Wait
                }
            }
            _ => {
                s.clients[c].lost = true;
                Phase::Done
            }
        })
    }

    /// Step `k` of the work inside the section: a counter in etcd written by a
    /// transaction guarded by the lock key, or the outside resource (fenced or not).
    fn work(
        &self,
        s: &mut EtcdLockState,
        turn: &mut Turn,
        c: usize,
        cl: &Client,
        key: &str,
        k: u8,
    ) -> Phase {
        match self.work {
            Work::TxnGuarded if k == 0 => {
                let cmd = EtcdCommand::Get {
                    key: COUNTER_KEY.into(),
                };
                if let EtcdReply::Kvs(kvs) = turn.send(s, cmd) {
                    s.clients[c].read = kvs
                        .first()
                        .and_then(|kv| kv.1.value.parse().ok())
                        .unwrap_or(0);
                }
                Phase::Critical(1)
            }
            Work::TxnGuarded => {
                let put = EtcdCommand::Put {
                    key: COUNTER_KEY.into(),
                    value: cl.read.saturating_add(1).to_string(),
                    lease: None,
                };
                let cmd = guarded_by(key, cl.my_rev, put);
                if let EtcdReply::Txn {
                    succeeded: true, ..
                } = turn.send(s, cmd)
                {
                    s.commits = s.commits.saturating_add(1);
                }
                Phase::Release
            }
            Work::Outside | Work::Fenced => {
                let fenced = self.work == Work::Fenced;
                match s.resource.access(k, cl.my_rev, fenced, cl.read) {
                    Access::Read(v) => {
                        s.clients[c].read = v;
                        Phase::Critical(1)
                    }
                    Access::Refused | Access::Wrote => Phase::Release,
                }
            }
        }
    }
}

/// The request a step sent, with its reply.
struct Turn {
    sent: Option<(EtcdCommand, EtcdReply)>,
}

impl Turn {
    /// Applies `cmd` to the cluster; the reply, kept as what the step sent.
    fn send(&mut self, s: &mut EtcdLockState, cmd: EtcdCommand) -> EtcdReply {
        let (reply, etcd) = apply(&s.etcd, &cmd, s.now);
        s.etcd = etcd.into();
        self.sent = Some((cmd, reply.clone()));
        reply
    }
}
