//! Per-protocol behaviour: liveness after a crash, fencing tokens, `WAIT`, and the exact
//! command sequence each lock sends (the shape the Redis spec replay builds on).

#![cfg(feature = "backends")]

use std::time::Duration;

use crate::common::{node, recorded_node, server};
use locklab_implementations::redis::{
    self, FencedLock, LuaLock, Recorder, RedisCommand, RedisReply, SetNxExpireLock, SetNxNoTtlLock,
    WaitReplicas,
};
use locklab_implementations::{Acquire, DistributedLock, Lease, LockError};
use locklab_servers::RedisServer;

const WAIT: Duration = Duration::from_secs(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setnx_without_ttl_deadlocks_after_a_holder_crash() {
    let s = server();
    let n = node(&s).await;
    let crashed = SetNxNoTtlLock::new(&n, "dead");
    crashed
        .acquire(WAIT, Lease::Unbounded)
        .await
        .expect("acquire")
        .abandon();
    let next = SetNxNoTtlLock::new(&n, "dead");
    let r = next
        .acquire(Duration::from_millis(500), Lease::Unbounded)
        .await;
    assert!(
        matches!(
            r,
            Err(LockError::Timeout {
                last_error: None,
                ..
            })
        ),
        "{r:?}"
    );
    assert_eq!(s.cli(&["TTL", "dead"]), "-1", "no TTL: held forever");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setnx_then_expire_deadlocks_after_a_crash_between_the_two() {
    let s = server();
    let n = node(&s).await;
    let lease = Lease::Fixed(Duration::from_secs(1));
    let crashing = SetNxExpireLock::new(&n, "half").crash_after_setnx(true);
    assert!(matches!(
        crashing.try_acquire(lease).await,
        Err(LockError::InjectedFault(_))
    ));
    let next = SetNxExpireLock::new(&n, "half");
    assert!(matches!(
        next.acquire(Duration::from_millis(1500), lease).await,
        Err(LockError::Timeout { .. })
    ));
    assert_eq!(s.cli(&["TTL", "half"]), "-1");
    // Without the crash, the TTL is set and a crashed holder's lock expires.
    let ok = SetNxExpireLock::new(&n, "whole");
    ok.acquire(WAIT, lease).await.expect("acquire").abandon();
    assert_eq!(s.cli(&["TTL", "whole"]), "1");
    SetNxExpireLock::new(&n, "whole")
        .acquire(Duration::from_secs(2), lease)
        .await
        .expect("after expiry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_lua_holder_frees_the_lock_when_its_lease_ends() {
    let s = server();
    let n = node(&s).await;
    LuaLock::new(&n, "crash")
        .acquire(WAIT, Lease::Fixed(Duration::from_millis(200)))
        .await
        .expect("acquire")
        .abandon();
    let g = LuaLock::new(&n, "crash")
        .acquire(WAIT, Lease::Fixed(Duration::from_secs(1)))
        .await;
    assert!(g.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_tokens_strictly_increase_across_owners() {
    let s = server();
    let n = node(&s).await;
    let lease = Lease::Fixed(Duration::from_secs(5));
    let mut last = 0;
    for i in 0..5 {
        let g = FencedLock::new(&n, "fence")
            .acquire(WAIT, lease)
            .await
            .expect("acquire");
        let t = g.token().expect("fenced locks issue tokens");
        assert!(t > last, "round {i}: {t} after {last}");
        last = t;
        g.release().await.expect("release");
    }
    let holder = FencedLock::new(&n, "fence")
        .acquire(WAIT, lease)
        .await
        .expect("acquire");
    let r = FencedLock::new(&n, "fence").try_acquire(lease).await;
    assert!(matches!(
        r,
        Ok(locklab_implementations::Attempt::Busy {
            retry_after: Some(_),
            ..
        })
    ));
    assert_eq!(
        s.cli(&["GET", "fence:fence"]),
        holder.token().map(|t| t.to_string()).unwrap_or_default()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_replicas_enters_only_when_enough_replicas_have_the_grant() {
    let master = server();
    let replica = match RedisServer::start_replica_of(&master) {
        Ok(r) => r,
        Err(e) => panic!("replica: {e}"),
    };
    let n = node(&master).await;
    let one = WaitReplicas {
        replicas: 1,
        timeout: Duration::from_millis(500),
    };
    let g = LuaLock::new(&n, "repl")
        .wait_for_replicas(one)
        .acquire(WAIT, Lease::Fixed(Duration::from_secs(5)))
        .await
        .expect("one replica acknowledges");
    assert_eq!(
        replica.cli(&["EXISTS", "repl"]),
        "1",
        "the replica has the grant"
    );
    g.release().await.expect("release");
    let two = WaitReplicas {
        replicas: 2,
        timeout: Duration::from_millis(100),
    };
    let r = FencedLock::new(&n, "repl2")
        .wait_for_replicas(two)
        .acquire(
            Duration::from_millis(400),
            Lease::Fixed(Duration::from_secs(5)),
        )
        .await;
    match r {
        Err(LockError::Timeout { last_error, .. }) => assert!(
            matches!(
                last_error.as_deref(),
                Some(LockError::NotReplicated {
                    acked: 1,
                    wanted: 2
                })
            ),
            "{last_error:?}"
        ),
        other => panic!("expected refusal: {other:?}"),
    }
    assert_eq!(
        master.cli(&["EXISTS", "repl2"]),
        "0",
        "the unreplicated grant was released"
    );
}

fn shape(rec: &Recorder) -> Vec<String> {
    rec.exchanges()
        .into_iter()
        .map(|e| match e.command {
            RedisCommand::Set { nx, px, .. } => format!(
                "SET{}{}",
                if nx { " NX" } else { "" },
                if px.is_some() { " PX" } else { "" }
            ),
            // `EVAL <script> …` and `DEL key`: the name, and the script's.
            other => {
                let text = other.to_string();
                let words = if text.starts_with("EVAL ") { 2 } else { 1 };
                text.split(' ').take(words).collect::<Vec<_>>().join(" ")
            }
        })
        .collect()
}

/// Each protocol sends exactly the commands its module documents: one grant, one
/// release, no command more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_protocol_sends_exactly_its_documented_commands() {
    let s = server();
    let expected: [(&str, &[&str], Lease); 10] = [
        (
            "redis-get-set",
            &["GET", "SET PX", "DEL"],
            Lease::Fixed(Duration::from_secs(5)),
        ),
        ("redis-setnx-no-ttl", &["SETNX", "DEL"], Lease::Unbounded),
        (
            "redis-setnx-expire",
            &["SETNX", "EXPIRE", "DEL"],
            Lease::Fixed(Duration::from_secs(5)),
        ),
        (
            "redis-del-unconditional",
            &["SET NX PX", "DEL"],
            Lease::Fixed(Duration::from_secs(5)),
        ),
        (
            "redis-get-then-del",
            &["SET NX PX", "GET", "DEL"],
            Lease::Fixed(Duration::from_secs(5)),
        ),
        (
            "redis-timestamp-value",
            &["SET NX PX", "EVAL compare-and-delete"],
            Lease::Fixed(Duration::from_secs(5)),
        ),
        (
            "redis-lua",
            &["SET NX PX", "EVAL compare-and-delete"],
            Lease::Fixed(Duration::from_secs(5)),
        ),
        (
            "redis-lua-fenced",
            &["EVAL fenced-acquire", "EVAL compare-and-delete"],
            Lease::Fixed(Duration::from_secs(5)),
        ),
        (
            "redis-reentrant",
            &["EVAL redisson-lock", "EVAL redisson-unlock"],
            Lease::Fixed(Duration::from_secs(5)),
        ),
        (
            "redis-reentrant-thread-id",
            &["EVAL redisson-lock", "EVAL redisson-unlock"],
            Lease::Fixed(Duration::from_secs(5)),
        ),
    ];
    for (id, commands, lease) in expected {
        let rec = Recorder::new();
        let n = recorded_node(&s, &rec).await;
        let lock = id
            .parse::<redis::SingleNode>()
            .expect("known id")
            .build(&n, &format!("shape-{id}"));
        assert_eq!(lock.info().protocol, id);
        let g = lock.acquire(WAIT, lease).await.expect("acquire");
        g.release().await.expect("release");
        assert_eq!(shape(&rec), commands, "{id}");
        assert!(
            rec.exchanges().iter().all(|e| e.reply.is_some()),
            "{id}: every command answered"
        );
    }
}

/// The recording holds the replies the server gave, ready for the spec replay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recording_holds_commands_and_replies() {
    let s = server();
    let rec = Recorder::new();
    let n = recorded_node(&s, &rec).await;
    let a = LuaLock::new(&n, "rec");
    let b = LuaLock::new(&n, "rec");
    let lease = Lease::Fixed(Duration::from_secs(5));
    let g = a.acquire(WAIT, lease).await.expect("a");
    assert!(matches!(
        b.try_acquire(lease).await,
        Ok(locklab_implementations::Attempt::Busy { .. })
    ));
    g.release().await.expect("release");
    let ex = rec.exchanges();
    let replies: Vec<_> = ex.iter().map(|e| e.reply.clone()).collect();
    assert_eq!(
        replies,
        vec![
            Some(RedisReply::Ok),
            Some(RedisReply::Nil),
            Some(RedisReply::Integer(1))
        ]
    );
    match &ex[2].command {
        RedisCommand::EvalCompareAndDelete { key, value } => {
            assert_eq!(key, "rec");
            assert_eq!(value, a.owner());
        }
        other => panic!("{other:?}"),
    }
    assert!(ex
        .windows(2)
        .all(|w| w[0].seq < w[1].seq && w[0].sent_ns <= w[1].sent_ns));
}

/// Keeps what an acquire tells its observer, in order.
#[derive(Default)]
struct Heard(std::sync::Mutex<Vec<String>>);

impl locklab_implementations::AttemptObserver for Heard {
    fn started(&self) {
        self.push("try".into());
    }
    fn ended(&self, outcome: locklab_implementations::AttemptOutcome<'_>) {
        use locklab_implementations::AttemptOutcome as O;
        self.push(match outcome {
            O::Granted { .. } => "granted".into(),
            O::Busy { .. } => "busy".into(),
            O::Unknown(why) => format!("unknown: {why}"),
        });
    }
    fn handed_over(&self, _since: std::time::Instant, _token: Option<u64>) {
        self.push("handed over".into());
    }
}

impl Heard {
    fn push(&self, s: String) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(s);
    }
    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Every try of a waiting acquire is heard as its own operation: busy while another
/// handle holds the key, granted once it lets go — so a history can record each try
/// with its own round-trip window instead of one window over the whole wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_try_of_a_waiting_acquire_is_heard() {
    let s = server();
    let n = node(&s).await;
    let holder = LuaLock::new(&n, "tries");
    let g = holder
        .acquire(WAIT, Lease::Fixed(Duration::from_secs(10)))
        .await
        .expect("first grant");
    let waiter = LuaLock::new(&node(&s).await, "tries");
    let heard = Heard::default();
    let wait = async {
        waiter
            .acquire_observed(Acquire {
                wait: Duration::from_secs(5),
                lease: Lease::Fixed(Duration::from_secs(10)),
                observer: &heard,
            })
            .await
    };
    let release = async {
        // Let the waiter be refused a few times first (polled, not a guessed sleep).
        while heard.all().iter().filter(|h| *h == "busy").count() < 3 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        g.release().await.expect("release");
    };
    let (acquired, ()) = tokio::join!(wait, release);
    acquired.expect("granted after the release");
    let heard = heard.all();
    let (last, tries) = heard.split_last().expect("heard something");
    assert_eq!(last, "granted", "{heard:?}");
    assert!(
        tries.len() >= 7,
        "at least three busy tries and the last: {heard:?}"
    );
    for pair in tries.chunks(2) {
        assert_eq!(pair[0], "try", "{heard:?}");
        if let Some(end) = pair.get(1) {
            assert_eq!(end, "busy", "{heard:?}");
        }
    }
}
