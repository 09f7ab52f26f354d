//! The Lua a real client sends is the command the model checks: each script's source,
//! run by the spec's embedded Lua, answers and writes exactly as the spec's named
//! command that [`decode_script`] reads it as — from every start a lock key can be in,
//! at every moment around its lease, for the owner and for another client.

use locklab_models::redis::spec::{apply, lua, RedisCommand, RedisState};

use super::LockScript;
use crate::redis::wire::decode_script;

/// A keyspace after `cmds`, each at time 0.
fn after(cmds: &[RedisCommand]) -> RedisState {
    cmds.iter()
        .fold(RedisState::default(), |s, c| apply(&s, c, 0).1)
}

fn set(value: &str, px: u64) -> RedisCommand {
    RedisCommand::Set {
        key: "lock".into(),
        value: value.into(),
        nx: false,
        px: Some(px),
    }
}

fn hold(field: &str, px: u64) -> RedisCommand {
    RedisCommand::EvalRedissonLock {
        key: "lock".into(),
        field: field.into(),
        px,
    }
}

/// Every start: no key; a string lock of c0 or c1; a hash held once or twice by c0,
/// or by c1; a token counter beside a lock.
fn starts() -> Vec<RedisState> {
    let fence = RedisCommand::Incr {
        key: "fence".into(),
    };
    vec![
        RedisState::default(),
        after(&[set("c0", 5)]),
        after(&[set("c1", 5)]),
        after(&[hold("c0", 5)]),
        after(&[hold("c0", 5), hold("c0", 5)]),
        after(&[hold("c1", 5)]),
        after(&[fence.clone(), set("c1", 5)]),
        after(&[fence.clone(), fence]),
    ]
}

/// The `KEYS` and `ARGV` each script is called with, for the owner c0 and for c1.
fn calls(script: LockScript) -> Vec<(Vec<String>, Vec<String>)> {
    let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut out = Vec::new();
    for me in ["c0", "c1"] {
        out.push(match script {
            LockScript::CompareAndDelete => (v(&["lock"]), v(&[me])),
            LockScript::CompareAndPexpire => (v(&["lock"]), v(&[me, "7"])),
            LockScript::CompareAndTransfer => (v(&["lock"]), v(&[me, "c2", "7"])),
            LockScript::FencedAcquire => (v(&["lock", "fence"]), v(&[me, "7"])),
            LockScript::HashAcquire | LockScript::HashRelease | LockScript::HashRenew => {
                (v(&["lock"]), v(&["7", me]))
            }
        });
    }
    out
}

#[test]
fn every_script_the_client_sends_is_its_named_spec_command() {
    for script in LockScript::ALL {
        let sha = lua::register(script.source());
        for (keys, args) in calls(script) {
            let named = decode_script(script, &keys, &args)
                .unwrap_or_else(|| panic!("{script:?} reads {keys:?} {args:?}"));
            let eval = RedisCommand::Eval {
                sha: sha.clone(),
                keys: keys.clone(),
                args: args.clone(),
            };
            for start in starts() {
                // Before the lease ends, at its last moment, and after.
                for now in [0, 4, 5, 9] {
                    assert_eq!(
                        apply(&start, &eval, now),
                        apply(&start, &named, now),
                        "{script:?} {keys:?} {args:?} at {now} from {start:?}"
                    );
                }
            }
        }
    }
}

/// A library's script recognised as one of locklab's means what it does: redis-py's
/// release is the compare-and-delete.
#[test]
fn a_recognised_library_script_is_its_named_command() {
    for (script, source) in super::ALIASES {
        assert_eq!(LockScript::recognise(source), Some(*script));
        let sha = lua::register(source);
        for (keys, args) in calls(*script) {
            let named = decode_script(*script, &keys, &args).expect("reads");
            let eval = RedisCommand::Eval {
                sha: sha.clone(),
                keys,
                args,
            };
            for start in starts() {
                for now in [0, 4, 5, 9] {
                    assert_eq!(apply(&start, &eval, now), apply(&start, &named, now));
                }
            }
        }
    }
}
