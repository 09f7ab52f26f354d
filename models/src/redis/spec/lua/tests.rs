use super::*;

const CAD: &str = "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end";

/// Redisson's lock script as the write-ups print it.
const REDISSON_LOCK: &str = "if (redis.call('exists', KEYS[1]) == 0) then \
redis.call('hincrby', KEYS[1], ARGV[2], 1); \
redis.call('pexpire', KEYS[1], ARGV[1]); \
return nil; \
end; \
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then \
redis.call('hincrby', KEYS[1], ARGV[2], 1); \
redis.call('pexpire', KEYS[1], ARGV[1]); \
return nil; \
end; \
return redis.call('pttl', KEYS[1]);";

fn eval_cmd(src: &str, keys: &[&str], args: &[&str]) -> RedisCommand {
    RedisCommand::Eval {
        sha: register(src),
        keys: keys.iter().map(|k| k.to_string()).collect(),
        args: args.iter().map(|a| a.to_string()).collect(),
    }
}

fn run(state: &RedisState, cmd: &RedisCommand, now: u64) -> (RedisReply, RedisState) {
    apply(state, cmd, now)
}

/// The script as Lua and the spec's named compare-and-delete agree from every start.
#[test]
fn compare_and_delete_in_lua_is_the_named_script() {
    let mine = RedisCommand::Set {
        key: "lock".into(),
        value: "c0".into(),
        nx: true,
        px: Some(5),
    };
    let theirs = RedisCommand::Set {
        key: "lock".into(),
        value: "c1".into(),
        nx: true,
        px: Some(5),
    };
    for start in [None, Some(&mine), Some(&theirs)] {
        let s = match start {
            Some(c) => run(&RedisState::default(), c, 0).1,
            None => RedisState::default(),
        };
        for now in [1, 5, 9] {
            let lua = run(&s, &eval_cmd(CAD, &["lock"], &["c0"]), now);
            let named = run(
                &s,
                &RedisCommand::EvalCompareAndDelete {
                    key: "lock".into(),
                    value: "c0".into(),
                },
                now,
            );
            assert_eq!(lua, named, "from {start:?} at {now}");
        }
    }
}

/// Redisson's lock script, as printed, is the spec's named Redisson lock.
#[test]
fn redissons_lock_script_as_printed_is_the_named_one() {
    let named = |field: &str| RedisCommand::EvalRedissonLock {
        key: "lock".into(),
        field: field.into(),
        px: 30,
    };
    let lua = |field: &str| eval_cmd(REDISSON_LOCK, &["lock"], &["30", field]);
    let mut a = RedisState::default();
    let mut b = RedisState::default();
    for (now, field) in [(0, "c0"), (1, "c0"), (2, "c1"), (40, "c1")] {
        let (ra, na) = run(&a, &lua(field), now);
        let (rb, nb) = run(&b, &named(field), now);
        assert_eq!(ra, rb, "{field} at {now}");
        assert_eq!(na, nb, "{field} at {now}");
        (a, b) = (na, nb);
    }
}

#[test]
fn a_script_reads_set_replies_and_errors_as_redis_converts_them() {
    let s = RedisState::default();
    let set = eval_cmd(
        "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 10)",
        &["k"],
        &["v"],
    );
    assert_eq!(run(&s, &set, 0).0, RedisReply::Ok);
    let nil = eval_cmd("return redis.call('get', KEYS[1])", &["k"], &[]);
    assert_eq!(run(&s, &nil, 0).0, RedisReply::Nil);
    // An array stops at its first nil; `false` in it is a nil reply.
    let table = eval_cmd("return {1, false, 'a', nil, 2}", &[], &[]);
    assert_eq!(
        run(&s, &table, 0).0,
        RedisReply::Array(vec![
            RedisReply::Integer(1),
            RedisReply::Nil,
            RedisReply::Bulk("a".into())
        ])
    );
    let pcall = eval_cmd(
        "local r = redis.pcall('hexists', KEYS[1]) return r.err",
        &["k"],
        &[],
    );
    assert!(matches!(run(&s, &pcall, 0).0, RedisReply::Bulk(e) if e.contains("syntax error")));
}

#[test]
fn the_sandbox_refuses_globals_and_endless_loops() {
    let s = RedisState::default();
    let global = eval_cmd("x = 1 return 1", &[], &[]);
    assert!(
        matches!(run(&s, &global, 0).0, RedisReply::Error(e) if e.contains("global variable 'x'"))
    );
    let endless = eval_cmd("while true do end", &[], &[]);
    assert!(matches!(run(&s, &endless, 0).0, RedisReply::Error(e) if e.contains("budget")));
    let unknown = RedisCommand::Eval {
        sha: "0".repeat(40),
        keys: vec![],
        args: vec![],
    };
    assert!(matches!(run(&s, &unknown, 0).0, RedisReply::Error(e) if e.starts_with("NOSCRIPT")));
}

/// Writes before an error stay written: Redis does not roll a script back.
#[test]
fn a_failing_script_keeps_what_it_wrote() {
    let s = RedisState::default();
    let half = eval_cmd(
        "redis.call('set', KEYS[1], 'v') return redis.call('nosuch')",
        &["k"],
        &[],
    );
    let (reply, next) = run(&s, &half, 0);
    assert!(matches!(reply, RedisReply::Error(e) if e.contains("nosuch")));
    assert!(next.keys.contains_key("k"));
}

#[test]
fn check_names_the_line_and_the_fix() {
    let typo = "if (redis.call('exists', KEYS[1]) == 0) then\n  return redis.call('hexist', KEYS[1], ARGV[1])\nend";
    let e = check(typo).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(
        e.message.contains("`hexist`") && e.message.contains("did you mean `hexists`"),
        "{e:?}"
    );
    let time = "local t = redis.call('TIME')\nreturn t";
    let e = check(time).unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.message.contains("clock"), "{e:?}");
    let syntax = "local x = 1\nif x then\nreturn 1";
    let e = check(syntax).unwrap_err();
    assert_eq!(e.line, 3, "{e:?}");
    assert!(e.message.contains("syntax"), "{e:?}");
    assert_eq!(check(CAD), Ok(()));
    assert_eq!(check(REDISSON_LOCK), Ok(()));
}
