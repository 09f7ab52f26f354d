//! The sniffer fed a lock client's traffic byte by byte: every split point of the
//! stream must read the same.

use super::*;
use locklab_models::redis::spec::RedisReply;

fn resp(words: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for w in words {
        out.extend(format!("${}\r\n{w}\r\n", w.len()).bytes());
    }
    out
}

fn sniff(talk: &[(bool, Vec<u8>)]) -> Vec<super::super::recorder::Exchange> {
    let recorder = Recorder::new();
    {
        let mut s = Sniffer::new(recorder.clone(), 1, ScriptBook);
        for (from_client, bytes) in talk {
            // Byte by byte: any split of the stream reads the same.
            for b in bytes {
                if *from_client {
                    s.sent(std::slice::from_ref(b));
                } else {
                    s.received(std::slice::from_ref(b));
                }
            }
        }
    }
    recorder.exchanges()
}

#[test]
fn a_lock_clients_commands_come_out_in_the_specs_words() {
    let release = "\n        local token = redis.call('get', KEYS[1])\n        if not token or token ~= ARGV[1] then\n            return 0\n        end\n        redis.call('del', KEYS[1])\n        return 1\n    ";
    let ex = sniff(&[
        (true, resp(&["CLIENT", "SETNAME", "c0"])),
        (false, b"+OK\r\n".to_vec()),
        (true, resp(&["SET", "lock", "t0", "NX", "PX", "500"])),
        (true, resp(&["DEL", "lock"])),
        (false, b"+OK\r\n:1\r\n".to_vec()),
        (true, resp(&["SCRIPT", "LOAD", release])),
        (
            false,
            b"$40\r\n0123456789012345678901234567890123456789\r\n".to_vec(),
        ),
        (
            true,
            resp(&[
                "EVALSHA",
                redis::Script::new(release).get_hash(),
                "1",
                "lock",
                "t0",
            ]),
        ),
        (false, b":0\r\n".to_vec()),
        (true, resp(&["HSET", "h", "f", "1"])),
        (false, b":1\r\n".to_vec()),
        (true, resp(&["SET", "lock", "t1", "NX", "EX", "2"])),
    ]);
    let got: Vec<(String, Option<RedisReply>)> = ex
        .iter()
        .map(|e| (e.command.to_string(), e.reply.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("SET lock t0 NX PX 500".into(), Some(RedisReply::Ok)),
            ("DEL lock".into(), Some(RedisReply::Integer(1))),
            (
                "EVAL compare-and-delete lock t0".into(),
                Some(RedisReply::Integer(0))
            ),
            ("HSET h f 1".into(), Some(RedisReply::Integer(1))),
            ("SET lock t1 NX PX 2000".into(), None),
        ],
        "{ex:#?}"
    );
    assert!(ex.iter().all(|e| e.node == 1));
    assert!(ex[3].command.is_write() && !ex[3].command.is_modelled());
}

#[test]
fn a_transaction_takes_effect_within_exec_and_an_aborted_one_not_at_all() {
    let ex = sniff(&[
        (true, resp(&["MULTI"])),
        (true, resp(&["SET", "k", "v", "NX", "PX", "10"])),
        (true, resp(&["INCR", "fence"])),
        (true, resp(&["EXEC"])),
        (
            false,
            b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n:7\r\n".to_vec(),
        ),
        (true, resp(&["MULTI"])),
        (true, resp(&["DEL", "k"])),
        (true, resp(&["EXEC"])),
        (false, b"+OK\r\n+QUEUED\r\n*-1\r\n".to_vec()),
    ]);
    let got: Vec<String> = ex.iter().map(|e| e.command.to_string()).collect();
    assert_eq!(got, ["SET k v NX PX 10", "INCR fence"]);
    assert_eq!(ex[1].reply, Some(RedisReply::Integer(7)));
    assert_eq!(ex[0].sent_ns, ex[0].sent_ns.min(ex[1].sent_ns));
}

#[test]
fn a_connection_that_cannot_be_followed_leaves_one_unknown_write() {
    let ex = sniff(&[
        (true, resp(&["GET", "k"])),
        (false, b"$1\r\nv\r\n".to_vec()),
        (true, resp(&["SUBSCRIBE", "ch"])),
        (true, resp(&["DEL", "k"])),
    ]);
    assert_eq!(ex.len(), 2, "{ex:#?}");
    assert_eq!(ex[0].reply, Some(RedisReply::Bulk("v".into())));
    // A write sent before the connection became unfollowable, not yet answered:
    // recorded without reply (it may take effect), never dropped.
    let pending = sniff(&[
        (true, resp(&["SET", "k", "v", "NX", "PX", "10"])),
        (true, resp(&["SUBSCRIBE", "ch"])),
    ]);
    assert_eq!(pending.len(), 2, "{pending:#?}");
    assert_eq!(pending[0].command.to_string(), "SET k v NX PX 10");
    assert_eq!(pending[0].reply, None);
    assert!(matches!(
        &ex[1].command,
        RedisCommand::Other { write: true, .. }
    ));
    assert_eq!(ex[1].reply, None);
    let garbage = sniff(&[(true, b"*1\r\n$3\r\nGETX\r\n".to_vec())]);
    assert!(matches!(
        &garbage[0].command,
        RedisCommand::Other { write: true, .. }
    ));
}
