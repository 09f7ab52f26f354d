//! A client's ZooKeeper traffic read off the wire, as the spec's requests: what a
//! program of any language sent through a proxy and what came back, recorded as
//! locklab's own ZooKeeper client records its requests ([`super::session`]), so a
//! check can prove from them what the program did (its `delete` of another client's
//! node) instead of taking its word.
//!
//! The connection opens with the client's connect request and the server's connect
//! response, recorded as `connect` → `connected` with the session id, which every later
//! request of the connection carries. A connection that resumes a session (the client
//! moved to another server) opens none, as the spec's `connect` does, and records
//! nothing. Replies are paired to requests by xid. What the spec knows becomes its
//! request, read back as locklab's client reads it (`exists` with empty data, `setData`
//! with the data written, children sorted); any other request becomes
//! [`ZkCommand::Other`]. Pings, watch notifications, `auth`, `setWatches`, `sasl` and
//! `whoAmI` are not recorded: a client's waits on its watches cannot be seen on the
//! wire, only the notifications the server pushed. Once the pairing cannot be followed
//! (bytes that are not ZooKeeper's, a frame over [`MAX_FRAME`](super::jute::MAX_FRAME),
//! a reply to no request), the requests still waiting are recorded unanswered and the
//! rest of the connection is one unknown write that never answered: it takes away any
//! proof that needs this client silent from then on.

use std::collections::VecDeque;

use locklab_models::zk::spec::{SessionId, ZkCommand, ZkError, ZkReply};

use super::jute::{xid, Cursor, Frames, Malformed};
use super::session::RequestLog;
use crate::recorder::Begun;

mod decode;

use decode::{connect_response, decode_reply, decode_request, set_session};

/// Where the connection is in its handshake.
enum Handshake {
    /// The client's first frame, its connect request, has not come yet.
    Connecting,
    /// The connect request went at `begun`, asking for `timeout` ms, to open a new
    /// session or to resume session `resuming`.
    Asked {
        begun: Begun,
        timeout: u64,
        resuming: Option<SessionId>,
    },
    /// The server answered it: requests and replies from here on.
    Open,
}

/// What a request is, for the record.
enum Request {
    /// Recorded with its reply.
    Command(ZkCommand),
    /// Answered, not recorded.
    Chatter,
}

/// A request sent and not answered yet.
struct Waiting {
    xid: i32,
    /// Its op code: how to read its reply.
    op: i32,
    /// When it was sent and what it is; `None` for chatter.
    recorded: Option<(Begun, ZkCommand)>,
}

/// One connection's traffic, decoded as it passes. Dropping it (the connection ended)
/// records every request still waiting as unanswered.
pub struct Sniffer {
    recorder: RequestLog,
    node: usize,
    requests: Frames,
    replies: Frames,
    handshake: Handshake,
    /// The connection's session, once the server named it (or the client asked to
    /// resume it).
    session: Option<SessionId>,
    waiting: VecDeque<Waiting>,
    /// Set once the pairing is lost: the open-ended unknown write that stands for the
    /// rest of the connection, and why.
    lost: Option<(Begun, String)>,
}

impl Sniffer {
    /// Records to `recorder` the requests sent to server `node` (its index in the
    /// client's list) on one connection.
    pub fn new(recorder: RequestLog, node: usize) -> Self {
        Sniffer {
            recorder,
            node,
            requests: Frames::default(),
            replies: Frames::default(),
            handshake: Handshake::Connecting,
            session: None,
            waiting: VecDeque::new(),
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
            let read = self
                .requests
                .next_frame()
                .and_then(|f| f.map(|f| self.request(&f)).transpose());
            match read {
                Ok(Some(())) => {}
                Ok(None) => return,
                Err(e) => return self.lose(&format!("unreadable request: {}", e.0)),
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
            let read = self
                .replies
                .next_frame()
                .and_then(|f| f.map(|f| self.reply(&f)).transpose());
            match read {
                Ok(Some(())) => {}
                Ok(None) => return,
                Err(e) => return self.lose(&format!("unreadable reply: {}", e.0)),
            }
        }
    }

    fn request(&mut self, frame: &[u8]) -> Result<(), Malformed> {
        let mut c = Cursor::new(frame);
        if let Handshake::Connecting = self.handshake {
            let _protocol_version = c.int()?;
            let _last_zxid_seen = c.long()?;
            let timeout = c.int()?;
            let session = c.long()?;
            let _passwd = c.buffer()?;
            // A readOnly flag may follow (clients since 3.4 send it); nothing else.
            let resuming = (session != 0).then_some(session as SessionId);
            if resuming.is_some() {
                self.session = resuming;
            }
            self.handshake = Handshake::Asked {
                begun: self.recorder.begin(),
                timeout: u64::try_from(timeout).unwrap_or(0),
                resuming,
            };
            return Ok(());
        }
        let xid = c.int()?;
        let op = c.int()?;
        if matches!(xid, xid::PING | xid::AUTH | xid::SET_WATCHES) {
            return Ok(());
        }
        if self.waiting.iter().any(|w| w.xid == xid) {
            return Err(Malformed(format!("two requests waiting with xid {xid}")));
        }
        let recorded = match decode_request(op, &mut c)? {
            Request::Command(command) => Some((self.recorder.begin(), command)),
            Request::Chatter => None,
        };
        self.waiting.push_back(Waiting { xid, op, recorded });
        Ok(())
    }

    fn reply(&mut self, frame: &[u8]) -> Result<(), Malformed> {
        let mut c = Cursor::new(frame);
        match std::mem::replace(&mut self.handshake, Handshake::Open) {
            Handshake::Connecting => Err(Malformed(
                "the server spoke before the connect request".into(),
            )),
            Handshake::Asked {
                begun,
                timeout,
                resuming,
            } => {
                let answer = connect_response(&mut c);
                if let Ok((_, session)) = answer {
                    if session != 0 {
                        self.session = Some(session);
                    }
                }
                // Resuming a session opens none: the spec's `connect` is not it.
                if resuming.is_none() {
                    let (timeout, reply) = match &answer {
                        // The session lives by the timeout the server granted, which
                        // may differ from the one asked for.
                        Ok((granted, session)) if *granted > 0 && *session != 0 => {
                            (*granted, Some(ZkReply::Connected { session: *session }))
                        }
                        Ok(_) => (timeout, Some(ZkReply::Error(ZkError::Invalid))),
                        Err(_) => (timeout, None),
                    };
                    self.finish(begun, ZkCommand::Connect { timeout }, reply);
                }
                answer.map(|_| ())
            }
            Handshake::Open => self.answer(&mut c),
        }
    }

    /// A reply after the handshake.
    fn answer(&mut self, c: &mut Cursor<'_>) -> Result<(), Malformed> {
        let xid = c.int()?;
        let zxid = c.long()?;
        let err = c.int()?;
        match xid {
            xid::NOTIFICATION => {
                // A WatcherEvent: type, state, path.
                c.int()?;
                c.int()?;
                c.string()?;
                return Ok(());
            }
            xid::PING | xid::AUTH | xid::SET_WATCHES => return Ok(()),
            _ => {}
        }
        let waiting = self
            .waiting
            .iter()
            .position(|w| w.xid == xid)
            .and_then(|i| self.waiting.remove(i))
            .ok_or_else(|| Malformed(format!("a reply to no request (xid {xid})")))?;
        let Some((begun, command)) = waiting.recorded else {
            return Ok(());
        };
        match decode_reply(waiting.op, &command, zxid, err, c) {
            Ok(reply) => {
                self.finish(begun, command, reply);
                Ok(())
            }
            Err(e) => {
                self.finish(begun, command, None);
                Err(e)
            }
        }
    }

    fn finish(&self, begun: Begun, mut command: ZkCommand, reply: Option<ZkReply>) {
        // A request sent before the connect response named the session gets it now.
        set_session(&mut command, self.session.unwrap_or(0));
        self.recorder
            .finish(begun, self.node, self.session, command, reply);
    }

    /// Records every request still waiting as unanswered: each may have taken effect
    /// at any time since it was sent.
    fn unanswered(&mut self) {
        if let Handshake::Asked {
            begun,
            timeout,
            resuming: None,
        } = std::mem::replace(&mut self.handshake, Handshake::Open)
        {
            self.finish(begun, ZkCommand::Connect { timeout }, None);
        }
        let waiting = std::mem::take(&mut self.waiting);
        for w in waiting {
            if let Some((begun, command)) = w.recorded {
                self.finish(begun, command, None);
            }
        }
    }

    /// From here on the connection cannot be followed: one unknown write stands for it.
    fn lose(&mut self, why: &str) {
        if self.lost.is_none() {
            self.lost = Some((self.recorder.begin(), why.to_string()));
            self.unanswered();
        }
    }
}

impl Drop for Sniffer {
    fn drop(&mut self) {
        self.unanswered();
        if let Some((begun, why)) = self.lost.take() {
            let command = ZkCommand::Other {
                name: format!(
                    "unfollowed (the rest of the connection could not be decoded: {why})"
                ),
                path: None,
                write: true,
            };
            self.finish(begun, command, None);
        }
    }
}

#[cfg(test)]
mod tests;
