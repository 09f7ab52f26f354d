//! The cases of [`super`].

use super::*;
use crate::spec::run_sequential;

fn create(session: SessionId) -> ZkCommand {
    ZkCommand::Create {
        session,
        path: "/lock/n-".into(),
        data: String::new(),
        ephemeral: true,
        sequential: true,
    }
}

#[test]
fn sequential_nodes_number_from_the_parents_cversion() {
    let mut s = ZkState::default();
    for _ in 0..2 {
        s = apply(&s, &ZkCommand::Connect { timeout: 2 }, 0).1;
    }
    let (r, s) = apply(&s, &create(1), 0);
    assert_eq!(
        r,
        ZkReply::Created {
            path: "/lock/n-0000000000".into(),
            czxid: 1
        }
    );
    let del = ZkCommand::Delete {
        session: 1,
        path: "/lock/n-0000000000".into(),
        version: None,
    };
    let (_, s) = apply(&s, &del, 0);
    let (r, s) = apply(&s, &create(2), 0);
    assert_eq!(
        r,
        ZkReply::Created {
            path: "/lock/n-0000000002".into(),
            czxid: 3
        },
        "a delete bumps the cversion too"
    );
    assert_eq!(s.children(LOCK_DIR), vec![("n-0000000002".into(), 3)]);
    assert_eq!(sequence("n-0000000002"), Some(2));
}

#[test]
fn an_expired_session_takes_its_ephemeral_nodes_and_fires_watches() {
    let mut s = ZkState::default();
    for _ in 0..2 {
        s = apply(&s, &ZkCommand::Connect { timeout: 2 }, 0).1;
    }
    let (_, s) = apply(&s, &create(1), 0);
    let exists = ZkCommand::Exists {
        session: 2,
        path: "/lock/n-0000000000".into(),
        watch: true,
    };
    let (_, s) = apply(&s, &exists, 1);
    // Session 2 talked at t=1, session 1 last at t=0: only 1 is due at t=2.
    let (r, s) = apply(&s, &ZkCommand::Consume { session: 2 }, 2);
    assert!(
        matches!(&r, ZkReply::Notified(n) if n.len() == 1 && n[0].kind == WatchKind::Node),
        "{r:?}"
    );
    assert!(s.nodes.is_empty() && !s.sessions.contains_key(&1), "{s:?}");
    let (r, _) = apply(&s, &ZkCommand::Ping { session: 1 }, 2);
    assert_eq!(r, ZkReply::Error(ZkError::SessionExpired));
}

#[test]
fn multi_with_check_is_all_or_nothing() {
    let ops = |path: &str| ZkCommand::Multi {
        session: 1,
        ops: vec![
            ZkCommand::Check {
                path: path.into(),
                version: Some(0),
            },
            ZkCommand::SetData {
                session: 1,
                path: COUNTER.into(),
                data: "1".into(),
                version: None,
            },
        ],
    };
    let counter = ZkCommand::Create {
        session: 1,
        path: COUNTER.into(),
        data: "0".into(),
        ephemeral: false,
        sequential: false,
    };
    let out = run_sequential(
        &ZkSpec,
        &[
            (ZkCommand::Connect { timeout: 9 }, 0),
            (counter, 0),
            (create(1), 0),
            (ops("/lock/n-0000000001"), 0),
            (ops("/lock/n-0000000000"), 0),
        ],
    );
    assert_eq!(
        out[3],
        ZkReply::MultiFailed {
            index: 0,
            error: ZkError::NoNode
        }
    );
    assert!(
        matches!(&out[4], ZkReply::Multi(r) if r.len() == 2),
        "{out:?}"
    );
}

#[test]
fn a_window_over_a_deadline_allows_both_outcomes() {
    let (_, s) = apply(&ZkState::default(), &ZkCommand::Connect { timeout: 5 }, 0);
    let (_, s) = apply(&s, &create(1), 0);
    let get = ZkCommand::GetChildren {
        session: 9,
        path: LOCK_DIR.into(),
        watch: false,
    };
    assert_eq!(ZkSpec.step(&s, &get, Window::between(3, 7)).len(), 2);
    assert_eq!(ZkSpec.step(&s, &get, Window::between(1, 4)).len(), 1);
}
