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

use std::collections::VecDeque;

use locklab_models::redis::spec::{lua, RedisCommand};

use super::recorder::Recorder;
use super::resp::{Reader, Resp};
use super::scripts::LockScript;
use crate::recorder::Begun;

mod decode;

use decode::{decode_reply, decode_request};

/// Scripts seen by their SHA1, shared by every connection of a run: a client may run
/// by hash a script another client loaded. The sources live in the spec's one script
/// book ([`lua::register`]), where the spec also finds them to run them.
#[derive(Clone, Debug, Default)]
pub struct ScriptBook;

impl ScriptBook {
    fn learn(&self, source: &str) -> String {
        lua::register(source)
    }

    fn source(&self, sha: &str) -> Option<String> {
        let sha = sha.to_ascii_lowercase();
        if let Some(s) = LockScript::ALL.iter().find(|s| s.sha() == sha) {
            return Some(s.source().to_string());
        }
        lua::source(&sha).map(|s| s.to_string())
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

#[cfg(test)]
mod tests;
