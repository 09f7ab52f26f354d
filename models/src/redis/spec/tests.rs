//! The cases of [`super`].

use super::*;

fn k() -> String {
    "lock".into()
}

fn run(cmds: &[(RedisCommand, u64)]) -> Vec<RedisReply> {
    let mut s = RedisState::default();
    cmds.iter()
        .map(|(c, t)| {
            let (r, n) = apply(&s, c, *t);
            s = n;
            r
        })
        .collect()
}

/// `SET lock v NX PX 10`.
fn set(v: &str) -> RedisCommand {
    RedisCommand::Set {
        key: k(),
        value: v.into(),
        nx: true,
        px: Some(10),
    }
}

#[test]
fn set_nx_px_expires_at_the_deadline() {
    let r = run(&[
        (set("a"), 0),
        (set("b"), 9),
        (set("b"), 10),
        (RedisCommand::Get { key: k() }, 11),
    ]);
    assert_eq!(
        r,
        vec![
            RedisReply::Ok,
            RedisReply::Nil,
            RedisReply::Ok,
            RedisReply::Bulk("b".into())
        ]
    );
}

#[test]
fn compare_and_delete_only_deletes_own_value() {
    let cad = |v: &str| RedisCommand::EvalCompareAndDelete {
        key: k(),
        value: v.into(),
    };
    let set = RedisCommand::Set {
        key: k(),
        value: "a".into(),
        nx: true,
        px: None,
    };
    let r = run(&[(set, 0), (cad("b"), 1), (cad("a"), 2), (cad("a"), 3)]);
    assert_eq!(
        r,
        vec![
            RedisReply::Ok,
            RedisReply::Integer(0),
            RedisReply::Integer(1),
            RedisReply::Integer(0)
        ]
    );
}

#[test]
fn compare_and_transfer_hands_over_without_a_gap() {
    let xfer = |from: &str, to: &str| RedisCommand::EvalCompareAndTransfer {
        key: k(),
        value: from.into(),
        to: to.into(),
        px: 10,
    };
    let r = run(&[
        (set("a"), 0),
        (xfer("b", "c"), 1),
        (xfer("a", "b"), 5),
        (set("c"), 6),
        (xfer("a", "c"), 7),
        (RedisCommand::Get { key: k() }, 14),
        (set("c"), 15),
    ]);
    assert_eq!(
        r,
        vec![
            RedisReply::Ok,
            RedisReply::Integer(0),
            RedisReply::Integer(1),
            RedisReply::Nil,
            RedisReply::Integer(0),
            RedisReply::Bulk("b".into()),
            RedisReply::Ok,
        ],
        "only the holder transfers; the new owner's lease runs from the transfer"
    );
}

#[test]
fn redisson_scripts_count_holds() {
    let lock = |f: &str| RedisCommand::EvalRedissonLock {
        key: k(),
        field: f.into(),
        px: 30,
    };
    let unlock = |f: &str| RedisCommand::EvalRedissonUnlock {
        key: k(),
        field: f.into(),
        px: 30,
    };
    let r = run(&[
        (lock("a"), 0),
        (lock("a"), 1),
        (lock("b"), 2),
        (unlock("b"), 3),
        (unlock("a"), 4),
        (unlock("a"), 5),
    ]);
    assert_eq!(
        r,
        vec![
            RedisReply::Nil,
            RedisReply::Nil,
            RedisReply::Integer(29),
            RedisReply::Nil,
            RedisReply::Integer(0),
            RedisReply::Integer(1)
        ]
    );
}

#[test]
fn incr_and_wrongtype() {
    let incr = RedisCommand::Incr {
        key: "fence".into(),
    };
    let h = RedisCommand::HIncrBy {
        key: "h".into(),
        field: "f".into(),
        by: 1,
    };
    let r = run(&[
        (incr.clone(), 0),
        (incr, 0),
        (h, 0),
        (RedisCommand::Get { key: "h".into() }, 0),
    ]);
    assert_eq!(r[..2], [RedisReply::Integer(1), RedisReply::Integer(2)]);
    assert!(matches!(r[3], RedisReply::Error(_)));
}

#[test]
fn pttl_in_a_window_is_the_lease_left_at_any_of_its_instants() {
    // SET somewhere in [0, 4], so the deadline is in [10, 14]; PTTL in [5, 7].
    let set = RedisCommand::Set {
        key: k(),
        value: "a".into(),
        nx: true,
        px: Some(10),
    };
    let (_, s) = RedisSpec::default()
        .step(&RedisState::default(), &set, Window::between(0, 4))
        .pop()
        .expect("set");
    let pttl = RedisCommand::PTtl { key: k() };
    let at = Window::between(5, 7);
    let seen = |ttl: i64| {
        RedisSpec::default()
            .step(&s, &pttl, at)
            .into_iter()
            .any(|predicted| {
                RedisSpec::default()
                    .observe(&s, &pttl, at, predicted, &RedisReply::Integer(ttl))
                    .is_some()
            })
    };
    assert!((3..=9).all(seen), "from 14 - 5 down to 10 - 7");
    assert!(!seen(2) && !seen(10));
}

#[test]
fn a_window_straddling_the_deadline_has_two_outcomes() {
    let s = apply(
        &RedisState::default(),
        &RedisCommand::Set {
            key: k(),
            value: "a".into(),
            nx: false,
            px: Some(10),
        },
        0,
    )
    .1;
    let outs =
        RedisSpec::default().step(&s, &RedisCommand::Get { key: k() }, Window::between(5, 15));
    assert_eq!(outs.len(), 2);
}

#[test]
fn on_a_nanosecond_clock_a_lease_ends_within_the_servers_millisecond() {
    const MS: u64 = 1_000_000;
    let spec = RedisSpec::ticking(MS);
    let set = RedisCommand::Set {
        key: k(),
        value: "a".into(),
        nx: true,
        px: Some(10),
    };
    // SET within the first 50 µs: the key is live until 10 ms at least, gone by 11.
    let (_, s) = spec
        .step(&RedisState::default(), &set, Window::between(0, 50_000))
        .pop()
        .expect("set");
    let get = RedisCommand::Get { key: k() };
    let replies = |t: u64| -> Vec<RedisReply> {
        spec.step(&s, &get, Window::at(t))
            .into_iter()
            .map(|(r, _)| r)
            .collect()
    };
    assert_eq!(replies(10 * MS - 1), vec![RedisReply::Bulk("a".into())]);
    assert_eq!(
        replies(10 * MS + MS / 2).len(),
        2,
        "either side of the deadline"
    );
    assert_eq!(replies(11 * MS + 50_000), vec![RedisReply::Nil]);
    // PTTL at 4 ms: the server says 6 (10 - 4 in its whole milliseconds); the spec,
    // not knowing where in its millisecond each command fell, allows a little more.
    let pttl = RedisCommand::PTtl { key: k() };
    let at = Window::at(4 * MS);
    let seen = |ttl: i64| {
        spec.step(&s, &pttl, at).into_iter().any(|predicted| {
            spec.observe(&s, &pttl, at, predicted, &RedisReply::Integer(ttl))
                .is_some()
        })
    };
    assert!(seen(5) && seen(6) && seen(7));
    assert!(!seen(4) && !seen(9));
}
