//! The cases of [`super`].

use super::*;
use crate::spec::run_sequential;

fn put(key: &str, lease: Option<LeaseId>) -> EtcdCommand {
    EtcdCommand::Put {
        key: key.into(),
        value: "v".into(),
        lease,
    }
}

#[test]
fn revisions_grow_and_create_revision_stays_across_puts() {
    let (_, s) = apply(&EtcdState::default(), &put("a", None), 0);
    let (_, s) = apply(&s, &put("a", None), 0);
    let kv = &s.keys["a"];
    assert_eq!((kv.create_rev, kv.mod_rev, s.revision), (2, 3, 3));
    let (r, s) = apply(&s, &EtcdCommand::Delete { key: "a".into() }, 0);
    assert_eq!(r, EtcdReply::Deleted { deleted: 1 });
    let (_, s) = apply(&s, &put("a", None), 0);
    assert_eq!(
        s.keys["a"].create_rev, 5,
        "a new incarnation, a larger create revision"
    );
}

#[test]
fn a_lease_expires_with_its_keys_unless_kept_alive() {
    let (r, s) = apply(&EtcdState::default(), &EtcdCommand::Grant { ttl: 2 }, 0);
    assert_eq!(r, EtcdReply::Granted { lease: 1, ttl: 2 });
    let (_, s) = apply(&s, &put("lock/1", Some(1)), 0);
    let (r, kept) = apply(&s, &EtcdCommand::KeepAlive { lease: 1 }, 1);
    assert_eq!(r, EtcdReply::Alive { ttl: 2 });
    let (r, _) = apply(
        &kept,
        &EtcdCommand::Get {
            key: "lock/1".into(),
        },
        2,
    );
    assert!(matches!(r, EtcdReply::Kvs(ref k) if k.len() == 1), "{r:?}");
    let (r, gone) = apply(
        &s,
        &EtcdCommand::Get {
            key: "lock/1".into(),
        },
        2,
    );
    assert_eq!(r, EtcdReply::Kvs(vec![]));
    assert_eq!(gone.revision, 3, "the expiry's delete is a revision");
    let (r, _) = apply(&gone, &EtcdCommand::KeepAlive { lease: 1 }, 2);
    assert_eq!(r, EtcdReply::LeaseNotFound);
    let (r, _) = apply(&gone, &put("x", Some(1)), 2);
    assert_eq!(r, EtcdReply::LeaseNotFound);
}

#[test]
fn txn_compares_create_revision_and_writes_at_one_revision() {
    let create = |k: &str| EtcdCommand::Txn {
        compare: vec![Compare::CreateRevision {
            key: k.into(),
            rev: 0,
        }],
        success: vec![put(k, None), put("other", None)],
        failure: vec![EtcdCommand::Get { key: k.into() }],
    };
    let out = run_sequential(&EtcdSpec, &[(create("lock"), 0), (create("lock"), 0)]);
    assert!(
        matches!(
            out[0],
            EtcdReply::Txn {
                succeeded: true,
                ..
            }
        ),
        "{out:?}"
    );
    let EtcdReply::Txn {
        succeeded: false,
        responses,
    } = &out[1]
    else {
        panic!("{out:?}");
    };
    assert!(matches!(&responses[0], EtcdReply::Kvs(k) if k[0].1.create_rev == 2));
}

#[test]
fn a_window_over_a_deadline_allows_both_outcomes() {
    let (_, s) = apply(&EtcdState::default(), &EtcdCommand::Grant { ttl: 5 }, 0);
    let (_, s) = apply(&s, &put("k", Some(1)), 0);
    let get = EtcdCommand::Get { key: "k".into() };
    assert_eq!(EtcdSpec.step(&s, &get, Window::between(3, 7)).len(), 2);
    assert_eq!(EtcdSpec.step(&s, &get, Window::between(1, 4)).len(), 1);
    let late = EtcdSpec.step(&s, &get, Window::between(5, 7));
    assert_eq!(late.len(), 1);
    assert_eq!(late[0].0, EtcdReply::Kvs(vec![]));
}

#[test]
fn the_lock_rpc_grants_the_oldest_live_key_only() {
    let lock = |lease| EtcdCommand::Lock {
        name: "l".into(),
        lease,
    };
    let mut s = EtcdState::default();
    for ttl in [5, 5] {
        s = apply(&s, &EtcdCommand::Grant { ttl }, 0).1;
    }
    let (r, s) = apply(&s, &lock(1), 0);
    assert_eq!(r, EtcdReply::Locked { key: "l/1".into() });
    let (r, s) = apply(&s, &lock(2), 0);
    assert_eq!(r, EtcdReply::Invalid, "l/1 is older: no grant yet");
    assert!(s.keys.contains_key("l/2"), "but the waiter's key is made");
    let (r, s) = apply(&s, &EtcdCommand::Unlock { key: "l/1".into() }, 0);
    assert_eq!(r, EtcdReply::Unlocked);
    let (_, revoked) = apply(&s, &EtcdCommand::Revoke { lease: 2 }, 0);
    assert_eq!(
        apply(&revoked, &lock(2), 0).0,
        EtcdReply::LeaseNotFound,
        "a waiter whose lease went is refused (etcd issue 11456's server granted it)"
    );
    assert_eq!(
        apply(&s, &lock(2), 0).0,
        EtcdReply::Locked { key: "l/2".into() }
    );
}

#[test]
fn recipe_ranges_find_the_owner_and_the_key_to_wait_for() {
    let mut s = EtcdState::default();
    for l in 1..=3 {
        s = apply(&s, &put(&recipe_key(l), None), 0).1;
    }
    let first = EtcdCommand::FirstCreate {
        prefix: LOCK_PREFIX.into(),
    };
    assert!(matches!(apply(&s, &first, 0).0, EtcdReply::Kvs(ref k) if k[0].0 == "lock/1"));
    let before = EtcdCommand::LastCreateBefore {
        prefix: LOCK_PREFIX.into(),
        max_create_rev: 3,
    };
    assert!(matches!(apply(&s, &before, 0).0, EtcdReply::Kvs(ref k) if k[0].0 == "lock/2"));
}
