//! No foreign release, proven from a history's etcd `command` events: a delete by name
//! that removed a lock key another client had created since the deleter last wrote it.
//!
//! A release retried after a lost reply starts before the next holder's grant, so the
//! order of lock operations proves nothing; the requests do. On one key `k`:
//!
//! 1. client B (not A) created `k`: its `txn if create_revision(k) = 0 then put k …`
//!    succeeded, so from some moment inside B's call `k` was a new incarnation of B's;
//! 2. B's reply came before A called the delete, which answered that it removed `k`
//!    (so `k` existed when the delete took effect);
//! 3. no request of A's that may have put `k` can have taken effect between the call
//!    of B's create and the reply to A's delete.
//!
//! Then the `k` A's delete removed was created at or after B's create, and not by A: A
//! released a lock that was not its own. Deletes do not matter (they only remove), nor
//! do other clients' puts (they are not A's). Sound as long as the events record every
//! request the clients sent, which a run's recorders do.

use locklab_models::etcd::spec::{lock_rpc_key, Compare, EtcdCommand, EtcdReply, EtcdSpec};

use crate::ops::Paired;

use crate::backend::{command_events, foreign_creation, CommandEvent};
use crate::check::report::{fmt_time, CheckReport, Property, Verdict};

/// One etcd request as a client saw it.
type Request = CommandEvent<EtcdSpec>;

impl Request {
    /// The requests of the branch of a `Txn` that ran, with their replies; both
    /// branches, without replies, when the outcome is unknown.
    fn ran(&self) -> Vec<(&EtcdCommand, Option<&EtcdReply>)> {
        match (&self.command, &self.reply) {
            (
                EtcdCommand::Txn {
                    success, failure, ..
                },
                Some(EtcdReply::Txn {
                    succeeded,
                    responses,
                }),
            ) => {
                let ops = if *succeeded { success } else { failure };
                ops.iter()
                    .enumerate()
                    .map(|(i, op)| (op, responses.get(i)))
                    .collect()
            }
            (EtcdCommand::Txn { .. }, Some(_)) => Vec::new(),
            (
                EtcdCommand::Txn {
                    success, failure, ..
                },
                None,
            ) => success.iter().chain(failure).map(|op| (op, None)).collect(),
            (cmd, reply) => vec![(cmd, reply.as_ref())],
        }
    }

    /// Whether it surely created `key` anew: a `Txn` that compared its create revision
    /// with 0 and put it, and succeeded.
    fn created(&self, key: &str) -> bool {
        let EtcdCommand::Txn {
            compare, success, ..
        } = &self.command
        else {
            return false;
        };
        let absent = compare
            .iter()
            .any(|Compare::CreateRevision { key: k, rev }| k == key && *rev == 0);
        let puts = success
            .iter()
            .any(|op| matches!(op, EtcdCommand::Put { key: k, .. } if k == key));
        absent
            && puts
            && matches!(
                self.reply,
                Some(EtcdReply::Txn {
                    succeeded: true,
                    ..
                })
            )
    }

    /// Whether it may have put `key` (refused writes and lost leases put nothing).
    fn may_put(&self, key: &str) -> bool {
        self.ran().into_iter().any(|(op, reply)| {
            let refused = matches!(reply, Some(EtcdReply::LeaseNotFound));
            let puts = match op {
                EtcdCommand::Put { key: k, .. } => k == key,
                EtcdCommand::Lock { name, lease } => lock_rpc_key(name, *lease) == key,
                _ => false,
            };
            puts && !refused
        })
    }

    /// The key it surely removed, if it answered so.
    fn removed(&self) -> Option<&str> {
        self.ran()
            .into_iter()
            .find_map(|(op, reply)| match (op, reply) {
                (EtcdCommand::Delete { key }, Some(EtcdReply::Deleted { deleted: 1 })) => {
                    Some(key.as_str())
                }
                _ => None,
            })
    }
}

/// The violation the etcd requests prove, if any (`None` also for a history whose
/// `command` events are not etcd requests).
pub fn check(paired: &Paired) -> Option<CheckReport> {
    let reqs = command_events::<EtcdSpec>(paired).ok()?;
    for del in &reqs {
        let Some(key) = del.removed() else { continue };
        let a = del.client;
        let Some(b) = foreign_creation(&reqs, del, |b| b.created(key), |w| w.may_put(key)) else {
            continue;
        };
        let mut report = CheckReport::new(
            Property::NoForeignRelease,
            Verdict::Violation,
            format!(
                "c{a} deleted a lock key that was not its own (proven from the etcd requests): c{b} created {key} at {}, c{a} sent nothing that could have put {key} since, and c{a}'s delete of {key}, called at {}, removed a key",
                fmt_time(b.return_ns),
                fmt_time(del.call_ns),
                b = b.client,
            ),
        );
        report.ops = vec![
            b.op_ref(&format!("c{}'s create", b.client)),
            del.op_ref(&format!("its delete of c{}'s key", b.client)),
        ];
        return Some(report);
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::format::{Backend, Event, Header, History, OpKind, Phase, Process};

    fn put_if_absent(owner: &str) -> EtcdCommand {
        EtcdCommand::Txn {
            compare: vec![Compare::CreateRevision {
                key: "lock".into(),
                rev: 0,
            }],
            success: vec![EtcdCommand::Put {
                key: "lock".into(),
                value: owner.into(),
                lease: Some(1),
            }],
            failure: vec![],
        }
    }

    fn granted(rev: u64) -> EtcdReply {
        EtcdReply::Txn {
            succeeded: true,
            responses: vec![EtcdReply::Put { revision: rev }],
        }
    }

    fn del() -> EtcdCommand {
        EtcdCommand::Delete { key: "lock".into() }
    }

    /// `(client, command, reply, call, return)` as a history of command events.
    fn history(reqs: &[(u32, EtcdCommand, Option<EtcdReply>, u64, u64)]) -> History {
        let mut h = History {
            source: "t".into(),
            header: Header::new("etcd-unlock-retry", Backend::Etcd),
            ..History::default()
        };
        for (i, (c, cmd, reply, call, ret)) in reqs.iter().enumerate() {
            let phase = if reply.is_some() {
                Phase::Ok
            } else {
                Phase::Info
            };
            let mut e = Event::new(Process::Client(*c), OpKind::Command, phase, *call);
            let mut v = json!({"node": 0, "command": cmd, "return": ret});
            if let Some(r) = reply {
                v["reply"] = json!(r);
            }
            e.value = Some(v.into());
            h.events.push((i + 2, e));
        }
        h
    }

    fn proven(reqs: &[(u32, EtcdCommand, Option<EtcdReply>, u64, u64)]) -> Option<CheckReport> {
        check(&crate::ops::pair(&history(reqs)).expect("pairs"))
    }

    #[test]
    fn a_retried_delete_of_the_next_holders_key_is_proven_foreign() {
        let deleted = Some(EtcdReply::Deleted { deleted: 1 });
        let reqs = vec![
            (0, put_if_absent("c0"), Some(granted(2)), 10, 20),
            // The first delete's reply was lost.
            (0, del(), None, 30, 30),
            (1, put_if_absent("c1"), Some(granted(4)), 40, 50),
            (0, del(), deleted.clone(), 60, 70),
        ];
        let r = proven(&reqs).expect("a proof");
        assert_eq!(r.verdict, Verdict::Violation);
        assert!(r.summary.contains("c0 deleted a lock key"), "{}", r.summary);
        assert_eq!(r.ops.len(), 2);
        // Had c0 created the key again in the window, the key it deleted may be its own.
        let mut own = reqs.clone();
        own.insert(3, (0, put_if_absent("c0"), None, 55, 55));
        assert!(proven(&own).is_none());
        // A delete guarded by the create revision that found another's key removed
        // nothing.
        let mut guarded = reqs.clone();
        guarded[3] = (
            0,
            EtcdCommand::Txn {
                compare: vec![Compare::CreateRevision {
                    key: "lock".into(),
                    rev: 2,
                }],
                success: vec![del()],
                failure: vec![],
            },
            Some(EtcdReply::Txn {
                succeeded: false,
                responses: vec![],
            }),
            60,
            70,
        );
        assert!(proven(&guarded).is_none());
    }
}
