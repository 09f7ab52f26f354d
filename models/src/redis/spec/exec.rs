//! What each command does to a node, its key's expiry already decided: the semantics
//! themselves, one arm per command.

use super::*;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// Runs `cmd` at `clock`: a touched key counts as expired only if it certainly is
/// (a caller that must branch on an uncertain expiry removes the key first).
pub(super) fn exec(s: &mut RedisState, cmd: &RedisCommand, clock: Clock) -> RedisReply {
    let at = clock.at;
    use RedisCommand::*;
    use RedisReply as R;
    if let Some(k) = cmd.key() {
        let gone = match s.keys.get(k) {
            Some(e) => !maybe_live(e.deadline, at),
            None => false,
        };
        if gone {
            s.keys.remove(k);
        }
    }
    let deadline = |ms: u64| Some(clock.deadline(ms));
    match cmd {
        Get { key } => match s.keys.get(key).map(|e| &e.value) {
            None => R::Nil,
            Some(Value::Str(v)) => R::Bulk(v.clone()),
            Some(Value::Hash(_)) => R::Error(WRONGTYPE.into()),
        },
        Set { key, value, nx, px } => {
            if *nx && s.keys.contains_key(key) {
                return R::Nil;
            }
            let value = Value::Str(value.clone());
            let deadline = px.and_then(deadline);
            s.keys.insert(key.clone(), Entry { value, deadline });
            R::Ok
        }
        SetXx { key, value, px } => {
            if !s.keys.contains_key(key) {
                return R::Nil;
            }
            let value = Value::Str(value.clone());
            let deadline = px.and_then(deadline);
            s.keys.insert(key.clone(), Entry { value, deadline });
            R::Ok
        }
        SetNx { key, value } => {
            if s.keys.contains_key(key) {
                return R::Integer(0);
            }
            let value = Value::Str(value.clone());
            s.keys.insert(
                key.clone(),
                Entry {
                    value,
                    deadline: None,
                },
            );
            R::Integer(1)
        }
        Del { key } => R::Integer(i64::from(s.keys.remove(key).is_some())),
        Expire { key, seconds } => pexpire(s, key, seconds.saturating_mul(1000), clock),
        PExpire { key, ms } => pexpire(s, key, *ms, clock),
        PTtl { key } => match s.keys.get(key) {
            None => R::Integer(-2),
            Some(Entry { deadline: None, .. }) => R::Integer(-1),
            Some(Entry {
                deadline: Some(d), ..
            }) => R::Integer(clock.least_left(*d)),
        },
        Exists { key } => R::Integer(i64::from(s.keys.contains_key(key))),
        Incr { key } => incr(s, key),
        HIncrBy { key, field, by } => match hincrby(s, key, field, *by) {
            Ok(n) => R::Integer(n),
            Err(e) => e,
        },
        HExists { key, field } => match s.keys.get(key).map(|e| &e.value) {
            None => R::Integer(0),
            Some(Value::Hash(h)) => R::Integer(i64::from(h.contains_key(field))),
            Some(Value::Str(_)) => R::Error(WRONGTYPE.into()),
        },
        Wait { .. } | Publish { .. } => R::Integer(0),
        Eval { sha, keys, args } => super::lua::eval(s, sha, keys, args, clock),
        // Nothing is known of its effect: a check that needs one leaves it out.
        Other { name, .. } => R::Error(format!("{name}: not modelled by the spec")),
        EvalCompareAndDelete { .. }
        | EvalCompareAndRenew { .. }
        | EvalCompareAndTransfer { .. }
        | EvalFencedAcquire { .. }
        | EvalRedissonLock { .. }
        | EvalRedissonUnlock { .. }
        | EvalRedissonRenew { .. } => script(s, cmd, clock),
    }
}

/// The scripts locklab's own clients send (compare-and-delete, -renew, -transfer, the
/// fenced acquire, Redisson's three), each run as one atomic step, as Redis runs a script.
fn script(s: &mut RedisState, cmd: &RedisCommand, clock: Clock) -> RedisReply {
    use RedisCommand::*;
    use RedisReply as R;
    let deadline = |ms: u64| Some(clock.deadline(ms));
    match cmd {
        EvalCompareAndDelete { key, value } => {
            let owns = match owns_string(s, key, value) {
                Ok(o) => o,
                Err(e) => return e,
            };
            if owns {
                s.keys.remove(key);
                R::Integer(1)
            } else {
                R::Integer(0)
            }
        }
        EvalCompareAndRenew { key, value, px } => {
            let owns = match owns_string(s, key, value) {
                Ok(o) => o,
                Err(e) => return e,
            };
            if owns {
                pexpire(s, key, *px, clock)
            } else {
                R::Integer(0)
            }
        }
        EvalCompareAndTransfer { key, value, to, px } => {
            let owns = match owns_string(s, key, value) {
                Ok(o) => o,
                Err(e) => return e,
            };
            if owns {
                let entry = Entry {
                    value: Value::Str(to.clone()),
                    deadline: deadline(*px),
                };
                s.keys.insert(key.clone(), entry);
                R::Integer(1)
            } else {
                R::Integer(0)
            }
        }
        EvalFencedAcquire {
            key,
            fence,
            value,
            px,
        } => {
            let set = Set {
                key: key.clone(),
                value: value.clone(),
                nx: true,
                px: Some(*px),
            };
            if exec(s, &set, clock) == R::Ok {
                return exec(s, &Incr { key: fence.clone() }, clock);
            }
            match exec(s, &PTtl { key: key.clone() }, clock) {
                R::Integer(ttl) => R::Integer(-1 - ttl.max(0)),
                other => other,
            }
        }
        EvalRedissonLock { key, field, px } => {
            let free = !s.keys.contains_key(key);
            let held = match has_field(s, key, field) {
                Ok(h) => h,
                Err(e) => return e,
            };
            if free || held {
                if let Err(e) = hincrby(s, key, field, 1) {
                    return e;
                }
                pexpire(s, key, *px, clock);
                return R::Nil;
            }
            exec(s, &PTtl { key: key.clone() }, clock)
        }
        EvalRedissonUnlock { key, field, px } => {
            match has_field(s, key, field) {
                Ok(true) => {}
                Ok(false) => return R::Nil,
                Err(e) => return e,
            }
            match hincrby(s, key, field, -1) {
                Ok(n) if n > 0 => {
                    pexpire(s, key, *px, clock);
                    R::Integer(0)
                }
                Ok(_) => {
                    s.keys.remove(key);
                    R::Integer(1)
                }
                Err(e) => e,
            }
        }
        EvalRedissonRenew { key, field, px } => match has_field(s, key, field) {
            Ok(true) => {
                pexpire(s, key, *px, clock);
                R::Integer(1)
            }
            Ok(false) => R::Integer(0),
            Err(e) => e,
        },
        _ => unreachable!("exec gives script the scripts alone"),
    }
}

/// `INCR key`: a missing key counts from 0, and the key keeps its expiry.
fn incr(s: &mut RedisState, key: &str) -> RedisReply {
    let current = match s.keys.get(key) {
        None => 0,
        Some(Entry {
            value: Value::Str(v),
            ..
        }) => match v.parse::<i64>() {
            Ok(n) => n,
            Err(_) => {
                return RedisReply::Error("ERR value is not an integer or out of range".into())
            }
        },
        Some(_) => return RedisReply::Error(WRONGTYPE.into()),
    };
    let n = current + 1;
    let deadline = s.keys.get(key).and_then(|e| e.deadline);
    s.keys.insert(
        key.to_string(),
        Entry {
            value: Value::Str(n.to_string()),
            deadline,
        },
    );
    RedisReply::Integer(n)
}

/// Whether `key` holds the string `value` (`GET key == value`); a hash is the
/// `WRONGTYPE` error the script's `GET` raises.
fn owns_string(s: &RedisState, key: &str, value: &str) -> Result<bool, RedisReply> {
    match s.keys.get(key).map(|e| &e.value) {
        None => Ok(false),
        Some(Value::Str(v)) => Ok(v == value),
        Some(Value::Hash(_)) => Err(RedisReply::Error(WRONGTYPE.into())),
    }
}

/// Whether the hash `key` has `field` (`HEXISTS`); a string is the `WRONGTYPE` error
/// the script's `HEXISTS` raises.
fn has_field(s: &RedisState, key: &str, field: &str) -> Result<bool, RedisReply> {
    match s.keys.get(key).map(|e| &e.value) {
        None => Ok(false),
        Some(Value::Hash(h)) => Ok(h.contains_key(field)),
        Some(Value::Str(_)) => Err(RedisReply::Error(WRONGTYPE.into())),
    }
}

fn pexpire(s: &mut RedisState, key: &str, ms: u64, clock: Clock) -> RedisReply {
    match s.keys.get_mut(key) {
        Some(e) => {
            e.deadline = Some(clock.deadline(ms));
            RedisReply::Integer(1)
        }
        None => RedisReply::Integer(0),
    }
}

fn hincrby(s: &mut RedisState, key: &str, field: &str, by: i64) -> Result<i64, RedisReply> {
    let entry = s.keys.get_or_insert_with(key, || Entry {
        value: Value::Hash(BTreeMap::new()),
        deadline: None,
    });
    match &mut entry.value {
        Value::Hash(h) => {
            let n = h.entry(field.to_string()).or_insert(0);
            *n += by;
            Ok(*n)
        }
        Value::Str(_) => Err(RedisReply::Error(WRONGTYPE.into())),
    }
}
