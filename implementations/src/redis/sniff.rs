//! A client's Redis traffic read off the wire, as the spec's commands: what a program
//! of any language sent through a proxy and what came back, recorded like locklab's
//! own clients' commands ([`Recorder`]), so a check can prove from them what the
//! program did (its `DEL` of another client's key) instead of taking its word.
//!
//! Replies come in request order on one connection, so each reply answers the oldest
//! request still waiting. What the spec knows becomes its command (`SET … NX PX`,
//! `DEL`, a known lock script by its source or its SHA1); any other data command
//! becomes [`RedisCommand::Other`], which the checks take as a possible write of any key
//! of its server. Connection chatter (`PING`, `HELLO`, `CLIENT SETNAME`, `SCRIPT
//! LOAD`) is not recorded. `MULTI … EXEC` is recorded as its commands, each taking
//! effect within `EXEC`. Once the pairing cannot be followed (a subscription,
//! `MONITOR`, `CLIENT REPLY OFF`, bytes that are not RESP), the rest of the connection
//! is one unknown write that never answered: it takes away any proof that needs this
//! client silent from then on.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use locklab_models::redis::spec::{RedisCommand, RedisReply};

use super::recorder::Recorder;
use super::resp::{Reader, Resp};
use super::scripts::LockScript;
use super::wire::decode_script;
use crate::recorder::Begun;

/// Scripts seen by their SHA1, shared by every connection of a run: a client may run
/// by hash a script another client loaded.
#[derive(Clone, Debug, Default)]
pub struct ScriptBook {
    by_sha: Arc<Mutex<HashMap<String, String>>>,
}

impl ScriptBook {
    fn learn(&self, source: &str) -> String {
        let sha = redis::Script::new(source).get_hash().to_string();
        self.by_sha
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(sha.clone(), source.to_string());
        sha
    }

    fn source(&self, sha: &str) -> Option<String> {
        let sha = sha.to_ascii_lowercase();
        if let Some(s) = LockScript::ALL.iter().find(|s| s.sha() == sha) {
            return Some(s.source().to_string());
        }
        self.by_sha
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&sha)
            .cloned()
    }
}

/// What a request is, for the record.
#[derive(Clone, Debug, PartialEq)]
enum Request {
    /// A data command, recorded with its reply.
    Data(RedisCommand),
    /// Connection chatter: answered, not recorded.
    Chatter,
    /// `MULTI`: what follows is queued until `EXEC`.
    Multi,
    /// `EXEC`.
    Exec,
    /// `DISCARD`.
    Discard,
    /// After it, replies no longer answer requests one for one.
    Unfollowable(String),
}

/// What a reply will answer, in the order the requests went.
enum Waiting {
    /// A data command sent at `Begun`.
    Data(Begun, RedisCommand),
    /// Something whose reply is not recorded (chatter, `MULTI`, a queued command's
    /// `QUEUED`).
    Nothing,
    /// `EXEC` of these commands, each begun when `EXEC` was sent.
    Exec(Vec<(Begun, RedisCommand)>),
}

/// One connection's traffic, decoded as it passes. Dropping it (the connection ended)
/// records every request still waiting as unanswered.
pub struct Sniffer {
    recorder: Recorder,
    node: usize,
    scripts: ScriptBook,
    requests: Reader,
    replies: Reader,
    waiting: VecDeque<Waiting>,
    /// Inside `MULTI`: the commands queued so far.
    queued: Option<Vec<RedisCommand>>,
    /// Set once the pairing is lost: the open-ended unknown write that stands for the
    /// rest of the connection, and why.
    lost: Option<(Begun, String)>,
}

impl Sniffer {
    /// Records to `recorder` the commands sent to server `node` (its index in the
    /// client's list) on one connection.
    pub fn new(recorder: Recorder, node: usize, scripts: ScriptBook) -> Self {
        Sniffer {
            recorder,
            node,
            scripts,
            requests: Reader::default(),
            replies: Reader::default(),
            waiting: VecDeque::new(),
            queued: None,
            lost: None,
        }
    }

    /// Bytes the client sent.
    pub fn sent(&mut self, bytes: &[u8]) {
        if self.lost.is_some() {
            return;
        }
        self.requests.push(bytes);
        loop {
            match self.requests.next_request() {
                Ok(Some(words)) => self.request(&words),
                Ok(None) => return,
                Err(e) => return self.lose(&format!("unreadable request: {}", e.0)),
            }
            if self.lost.is_some() {
                return;
            }
        }
    }

    /// Bytes the server answered.
    pub fn received(&mut self, bytes: &[u8]) {
        if self.lost.is_some() {
            return;
        }
        self.replies.push(bytes);
        loop {
            match self.replies.next_value() {
                Ok(Some(Resp::Push(_))) => {}
                Ok(Some(reply)) => self.reply(reply),
                Ok(None) => return,
                Err(e) => return self.lose(&format!("unreadable reply: {}", e.0)),
            }
            if self.lost.is_some() {
                return;
            }
        }
    }

    fn request(&mut self, words: &[Vec<u8>]) {
        let request = decode_request(words, &self.scripts);
        if let Request::Unfollowable(why) = request {
            return self.lose(&why);
        }
        let waiting = match (&mut self.queued, request) {
            (None, Request::Multi) => {
                self.queued = Some(Vec::new());
                Waiting::Nothing
            }
            (Some(q), Request::Data(c)) => {
                q.push(c);
                Waiting::Nothing
            }
            (Some(_), Request::Exec) => {
                let queued = self.queued.take().unwrap_or_default();
                Waiting::Exec(
                    queued
                        .into_iter()
                        .map(|c| (self.recorder.begin(), c))
                        .collect(),
                )
            }
            (Some(_), Request::Discard) => {
                self.queued = None;
                Waiting::Nothing
            }
            (None, Request::Data(c)) => Waiting::Data(self.recorder.begin(), c),
            _ => Waiting::Nothing,
        };
        self.waiting.push_back(waiting);
    }

    fn reply(&mut self, reply: Resp) {
        let Some(waiting) = self.waiting.pop_front() else {
            return self.lose("a reply to no request");
        };
        match waiting {
            Waiting::Nothing => {}
            Waiting::Data(begun, command) => {
                let reply = decode_reply(reply);
                self.recorder
                    .finish(begun, self.node, None, command, Some(reply));
            }
            Waiting::Exec(commands) => match reply {
                Resp::Array(Some(items)) if items.len() == commands.len() => {
                    for ((begun, command), item) in commands.into_iter().zip(items) {
                        self.recorder.finish(
                            begun,
                            self.node,
                            None,
                            command,
                            Some(decode_reply(item)),
                        );
                    }
                }
                // Aborted (a `WATCH`ed key changed, or a queued command was refused):
                // nothing ran.
                Resp::Array(None) | Resp::Null | Resp::Error(_) => {}
                _ => self.lose("an EXEC reply that does not answer its commands"),
            },
        }
    }

    /// From here on the connection cannot be followed: one unknown write stands for it.
    fn lose(&mut self, why: &str) {
        if self.lost.is_none() {
            // What was sent and not yet answered may still take effect: recorded
            // unanswered now, so no proof counts on it not having happened.
            self.record_unanswered();
            self.lost = Some((self.recorder.begin(), why.to_string()));
            self.queued = None;
        }
    }

    /// Records every request still waiting for its reply as one that got none.
    fn record_unanswered(&mut self) {
        for w in self.waiting.drain(..) {
            match w {
                Waiting::Data(begun, command) => {
                    self.recorder.finish(begun, self.node, None, command, None)
                }
                Waiting::Exec(commands) => {
                    for (begun, command) in commands {
                        self.recorder.finish(begun, self.node, None, command, None);
                    }
                }
                Waiting::Nothing => {}
            }
        }
    }
}

impl Drop for Sniffer {
    fn drop(&mut self) {
        self.record_unanswered();
        if let Some((begun, why)) = self.lost.take() {
            let command = RedisCommand::Other {
                name: "UNFOLLOWED".into(),
                args: vec![format!(
                    "(the rest of the connection could not be decoded: {why})"
                )],
                write: true,
            };
            self.recorder.finish(begun, self.node, None, command, None);
        }
    }
}

fn word(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Commands that read only (or touch no data) and are recorded as reads when the spec
/// has no command for them.
const READS: &[&str] = &[
    "GET",
    "MGET",
    "STRLEN",
    "GETRANGE",
    "EXISTS",
    "TTL",
    "PTTL",
    "TYPE",
    "HGET",
    "HGETALL",
    "HMGET",
    "HEXISTS",
    "HLEN",
    "HKEYS",
    "HVALS",
    "KEYS",
    "SCAN",
    "HSCAN",
    "LRANGE",
    "LLEN",
    "LINDEX",
    "SMEMBERS",
    "SISMEMBER",
    "SCARD",
    "ZRANGE",
    "ZSCORE",
    "ZCARD",
    "ZRANK",
    "DBSIZE",
    "RANDOMKEY",
    "OBJECT",
    "EXPIRETIME",
    "PEXPIRETIME",
    "EVAL_RO",
    "EVALSHA_RO",
    "WAIT",
    "WAITAOF",
    "DUMP",
];

/// Connection chatter: touches no key.
const CHATTER: &[&str] = &[
    "PING",
    "ECHO",
    "HELLO",
    "AUTH",
    "SELECT",
    "CLIENT",
    "INFO",
    "COMMAND",
    "READONLY",
    "READWRITE",
    "QUIT",
    "RESET",
    "SCRIPT",
    "TIME",
    "CONFIG",
    "ROLE",
    "LASTSAVE",
    "MEMORY",
    "SLOWLOG",
    "LATENCY",
    "WATCH",
    "UNWATCH",
    "SENTINEL",
];

/// What the words of one request are.
fn decode_request(words: &[Vec<u8>], scripts: &ScriptBook) -> Request {
    let Some(name) = words.first().map(|w| word(w).to_ascii_uppercase()) else {
        return Request::Chatter;
    };
    let args: Vec<String> = words[1..].iter().map(|w| word(w)).collect();
    let sub = args.first().map(|a| a.to_ascii_uppercase());
    match (name.as_str(), sub.as_deref()) {
        ("MULTI", _) => return Request::Multi,
        ("EXEC", _) => return Request::Exec,
        ("DISCARD", _) => return Request::Discard,
        ("SUBSCRIBE" | "PSUBSCRIBE" | "SSUBSCRIBE" | "MONITOR" | "SYNC" | "PSYNC", _)
        | ("CLIENT", Some("REPLY")) => {
            return Request::Unfollowable(format!("{name} {}", args.join(" ")))
        }
        ("SCRIPT", Some("LOAD")) => {
            if let Some(source) = args.get(1) {
                scripts.learn(source);
            }
            return Request::Chatter;
        }
        (n, _) if CHATTER.contains(&n) => return Request::Chatter,
        _ => {}
    }
    Request::Data(
        spec_command(&name, &args, scripts).unwrap_or_else(|| RedisCommand::Other {
            write: !READS.contains(&name.as_str()),
            name,
            args,
        }),
    )
}

/// The spec's command for a request, when the spec has one.
fn spec_command(name: &str, args: &[String], scripts: &ScriptBook) -> Option<RedisCommand> {
    use RedisCommand as C;
    let key = || args.first().cloned();
    let n = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok());
    Some(match (name, args.len()) {
        ("GET", 1) => C::Get { key: key()? },
        ("SET", 2..) => {
            let (mut nx, mut px) = (false, None);
            let mut i = 2;
            while i < args.len() {
                match args[i].to_ascii_uppercase().as_str() {
                    "NX" => nx = true,
                    "PX" => {
                        px = Some(n(i + 1)?);
                        i += 1;
                    }
                    "EX" => {
                        px = Some(n(i + 1)?.checked_mul(1000)?);
                        i += 1;
                    }
                    // XX, GET, KEEPTTL, EXAT, PXAT: not the spec's SET.
                    _ => return None,
                }
                i += 1;
            }
            C::Set {
                key: key()?,
                value: args[1].clone(),
                nx,
                px,
            }
        }
        ("SETNX", 2) => C::SetNx {
            key: key()?,
            value: args[1].clone(),
        },
        // UNLINK frees the memory later; to every reader the key is gone at once.
        ("DEL" | "UNLINK", 1) => C::Del { key: key()? },
        ("EXPIRE", 2) => C::Expire {
            key: key()?,
            seconds: n(1)?,
        },
        ("PEXPIRE", 2) => C::PExpire {
            key: key()?,
            ms: n(1)?,
        },
        ("PTTL", 1) => C::PTtl { key: key()? },
        ("EXISTS", 1) => C::Exists { key: key()? },
        ("INCR", 1) => C::Incr { key: key()? },
        ("HINCRBY", 3) => C::HIncrBy {
            key: key()?,
            field: args[1].clone(),
            by: args[2].parse().ok()?,
        },
        ("HEXISTS", 2) => C::HExists {
            key: key()?,
            field: args[1].clone(),
        },
        ("WAIT", 2) => C::Wait {
            numreplicas: u32::try_from(n(0)?).ok()?,
            timeout: n(1)?,
        },
        ("EVAL" | "EVALSHA", 2..) => {
            let source = if name == "EVAL" {
                scripts.learn(&args[0]);
                args[0].clone()
            } else {
                scripts.source(&args[0])?
            };
            let count = usize::try_from(n(1)?).ok()?;
            let keys = args.get(2..2 + count)?;
            let argv = &args[2 + count..];
            decode_script(LockScript::recognise(&source)?, keys, argv)?
        }
        _ => return None,
    })
}

/// A reply in the spec's terms; a type the spec has no word for keeps its text.
fn decode_reply(reply: Resp) -> RedisReply {
    match reply {
        Resp::Simple(s) if s == "OK" => RedisReply::Ok,
        Resp::Simple(s) | Resp::Text(s) => RedisReply::Bulk(s),
        Resp::Error(e) => RedisReply::Error(e),
        Resp::Integer(i) => RedisReply::Integer(i),
        Resp::Bulk(None) | Resp::Array(None) | Resp::Null => RedisReply::Nil,
        Resp::Bulk(Some(b)) => RedisReply::Bulk(word(&b)),
        Resp::Boolean(b) => RedisReply::Integer(i64::from(b)),
        Resp::Array(Some(items)) | Resp::Aggregate(items) | Resp::Push(items) => {
            RedisReply::Bulk(format!("{items:?}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let mut s = Sniffer::new(recorder.clone(), 1, ScriptBook::default());
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
}
