//! The cases of [`super`].

use super::*;

fn run(s: &SqlState, session: u8, cmd: SqlCommand, now: u64) -> (SqlReply, SqlState) {
    apply(s, session, &cmd, now).expect("does not block")
}

#[test]
fn unique_key_refuses_a_second_insert_and_ids_grow() {
    let s = SqlState::new(2);
    let ins = |o: &str| SqlCommand::Insert {
        name: LOCK_NAME.into(),
        owner: o.into(),
    };
    let (r, s) = run(&s, 0, ins("c0"), 0);
    assert_eq!(r, SqlReply::Inserted(1));
    let (r, s) = run(&s, 1, ins("c1"), 0);
    assert_eq!(r, SqlReply::DuplicateKey);
    let (r, s) = run(&s, 1, SqlCommand::Reap { ttl: 2 }, 3);
    assert_eq!(r, SqlReply::Rows(1));
    let (r, s) = run(&s, 1, ins("c1"), 3);
    assert_eq!(r, SqlReply::Inserted(2));
    let (r, _) = run(&s, 0, SqlCommand::DeleteById { id: 1 }, 3);
    assert_eq!(r, SqlReply::Rows(0));
}

#[test]
fn a_killed_session_loses_its_locks_and_its_transaction() {
    let s = SqlState::new(2);
    let (_, s) = run(&s, 0, SqlCommand::Begin, 0);
    let sel = SqlCommand::SelectForUpdate {
        name: LOCK_NAME.into(),
        nowait: false,
    };
    let (_, s) = run(&s, 0, sel.clone(), 0);
    let (_, s) = run(&s, 0, SqlCommand::WriteCounter { value: 1 }, 0);
    let (_, s) = run(&s, 1, SqlCommand::Begin, 0);
    assert!(apply(&s, 1, &sel, 0).is_none(), "waits for the row lock");
    let nowait = SqlCommand::SelectForUpdate {
        name: LOCK_NAME.into(),
        nowait: true,
    };
    assert_eq!(run(&s, 1, nowait, 0).0, SqlReply::LockNotAvailable);
    let (_, mut s) = run(&s, 0, SqlCommand::AdvisoryLock { key: 1 }, 0);
    s.kill(0);
    assert!(apply(&s, 1, &sel, 0).is_some());
    assert_eq!(s.counter, 0, "the write rolled back");
    assert!(s.advisory.is_empty());
    let (r, _) = run(&s, 0, SqlCommand::ReadCounter, 0);
    assert_eq!(r, SqlReply::ConnectionLost);
}

#[test]
fn session_locks_count_holds_and_refuse_other_sessions() {
    let s = SqlState::new(2);
    let g = SqlCommand::GetLock {
        name: LOCK_NAME.into(),
    };
    let rel = SqlCommand::ReleaseLock {
        name: LOCK_NAME.into(),
    };
    let (_, s) = run(&s, 0, g.clone(), 0);
    assert_eq!(run(&s, 1, g.clone(), 0).0, SqlReply::Int(0));
    assert_eq!(run(&s, 1, rel.clone(), 0).0, SqlReply::Int(0));
    let (r, s) = run(&s, 0, rel.clone(), 0);
    assert_eq!(r, SqlReply::Int(1));
    assert_eq!(run(&s, 0, rel, 0).0, SqlReply::Null);
    let lock = SqlCommand::AdvisoryLock { key: 1 };
    let (_, s) = run(&s, 0, lock.clone(), 0);
    let (_, s) = run(&s, 0, lock.clone(), 0);
    assert_eq!(s.advisory[&1].count, 2, "reentrant: counted");
    assert!(apply(&s, 1, &lock, 0).is_none());
    let try_lock = SqlCommand::TryAdvisoryLock {
        key: 1,
        xact: false,
    };
    assert_eq!(run(&s, 1, try_lock.clone(), 0).0, SqlReply::Bool(false));
    let un = SqlCommand::AdvisoryUnlock { key: 1 };
    assert_eq!(run(&s, 1, un.clone(), 0).0, SqlReply::Bool(false));
    let (_, s) = run(&s, 0, un.clone(), 0);
    let (_, s) = run(&s, 0, un, 0);
    assert!(s.advisory.is_empty());
}

/// Two sessions and the lease row, free (its `last_lock_time` the minimum).
fn free_lease_row() -> SqlState {
    let mut s = SqlState::new(2);
    s.rows.insert(
        LOCK_NAME.into(),
        LockRow {
            id: 1,
            owner: String::new(),
            created: 0,
            last_lock_time: None,
        },
    );
    s
}

#[test]
fn lease_update_compares_with_the_given_clock() {
    let s = free_lease_row();
    let acq = |o: &str, now| SqlCommand::LeaseAcquire {
        name: LOCK_NAME.into(),
        owner: o.into(),
        now,
        ttl: 2,
    };
    let (r, s) = run(&s, 0, acq("c0", None), 1);
    assert_eq!(r, SqlReply::Rows(1));
    assert_eq!(run(&s, 1, acq("c1", None), 3).0, SqlReply::Rows(0));
    assert_eq!(run(&s, 1, acq("c1", Some(4)), 1).0, SqlReply::Rows(1));
    let rel = |o: &str| SqlCommand::LeaseRelease {
        name: LOCK_NAME.into(),
        owner: o.into(),
    };
    assert_eq!(run(&s, 1, rel("c1"), 1).0, SqlReply::Rows(0));
    assert_eq!(run(&s, 0, rel("c0"), 1).0, SqlReply::Rows(1));
}

#[test]
fn check_then_set_lets_both_takers_write() {
    let s = free_lease_row();
    let check = SqlCommand::LeaseCheck {
        name: LOCK_NAME.into(),
        now: None,
        ttl: 2,
    };
    let take = |o: &str| SqlCommand::LeaseTake {
        name: LOCK_NAME.into(),
        owner: o.into(),
        now: None,
    };
    assert_eq!(run(&s, 0, check.clone(), 0).0, SqlReply::Rows(1));
    let (r, s) = run(&s, 0, take("c0"), 0);
    assert_eq!(r, SqlReply::Rows(1));
    // Held until t=2 by the database's clock; expired after it.
    assert_eq!(run(&s, 1, check.clone(), 2).0, SqlReply::Rows(0));
    assert_eq!(run(&s, 1, check, 3).0, SqlReply::Rows(1));
    // The take asks nothing: it overwrites a live lease.
    let (r, s) = run(&s, 1, take("c1"), 1);
    assert_eq!(r, SqlReply::Rows(1));
    assert_eq!(s.rows[LOCK_NAME].owner, "c1");
}

#[test]
fn an_uncommitted_counter_write_holds_the_row_and_only_dirty_reads_see_it() {
    let s = SqlState::new(3);
    let (_, s) = run(&s, 0, SqlCommand::Begin, 0);
    let (_, s) = run(&s, 0, SqlCommand::WriteCounter { value: 5 }, 0);
    let (_, s) = run(&s, 1, SqlCommand::Begin, 0);
    assert_eq!(run(&s, 1, SqlCommand::ReadCounter, 0).0, SqlReply::Int(0));
    assert!(
        apply(&s, 1, &SqlCommand::WriteCounter { value: 1 }, 0).is_none(),
        "waits for the writer's row lock"
    );
    let (_, s) = run(&s, 2, SqlCommand::BeginReadUncommitted, 0);
    assert_eq!(run(&s, 2, SqlCommand::ReadCounter, 0).0, SqlReply::Int(5));
    let (_, s) = run(&s, 0, SqlCommand::Rollback, 0);
    assert_eq!(run(&s, 2, SqlCommand::ReadCounter, 0).0, SqlReply::Int(0));
    let (r, s) = run(&s, 1, SqlCommand::WriteCounter { value: 1 }, 0);
    assert_eq!(r, SqlReply::Rows(1), "the row lock went with the rollback");
    assert!(apply(&s, 2, &SqlCommand::WriteCounter { value: 2 }, 0).is_none());
}
