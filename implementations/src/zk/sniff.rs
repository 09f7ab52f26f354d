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

use locklab_models::zk::spec::{SessionId, ZkCommand, ZkError, ZkReply, Znode};

use super::jute::{op, xid, Cursor, Frames, Malformed, Stat};
use super::session::RequestLog;
use crate::recorder::Begun;

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

/// The connect response's negotiated timeout (ms, 0 when refused) and session id.
fn connect_response(c: &mut Cursor<'_>) -> Result<(u64, SessionId), Malformed> {
    let _protocol_version = c.int()?;
    let timeout = c.int()?;
    let session = c.long()?;
    let _passwd = c.buffer()?;
    // A readOnly flag may follow.
    Ok((u64::try_from(timeout).unwrap_or(0), session as SessionId))
}

/// Puts the session id in every field of `cmd` that names one.
fn set_session(cmd: &mut ZkCommand, id: SessionId) {
    match cmd {
        ZkCommand::Ping { session }
        | ZkCommand::Create { session, .. }
        | ZkCommand::Delete { session, .. }
        | ZkCommand::Exists { session, .. }
        | ZkCommand::GetData { session, .. }
        | ZkCommand::SetData { session, .. }
        | ZkCommand::GetChildren { session, .. }
        | ZkCommand::Consume { session } => *session = id,
        ZkCommand::Multi { session, ops } => {
            *session = id;
            for o in ops {
                set_session(o, id);
            }
        }
        ZkCommand::Connect { .. } | ZkCommand::Check { .. } | ZkCommand::Other { .. } => {}
    }
}

/// A version to match: -1 is any (`None`); any other negative one matches no node,
/// which the spec has no word for (`Err`).
fn version(v: i32) -> Result<Option<u32>, ()> {
    match v {
        -1 => Ok(None),
        v => u32::try_from(v).map(Some).map_err(|_| ()),
    }
}

fn text(bytes: Option<&[u8]>) -> String {
    bytes
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

fn other(name: &str, path: Option<String>, write: bool) -> ZkCommand {
    ZkCommand::Other {
        name: name.to_string(),
        path,
        write,
    }
}

/// A `CreateRequest` (`CreateTTLRequest` for `createTTL`) of op `kind`: the spec's
/// `create` for the four modes it knows, else [`ZkCommand::Other`].
fn create(kind: i32, c: &mut Cursor<'_>) -> Result<ZkCommand, Malformed> {
    let path = c.path()?;
    let data = text(c.buffer()?);
    c.skip_acls()?;
    let flags = c.int()?;
    if kind == op::CREATE_TTL {
        c.long()?;
    }
    Ok(match (kind, flags) {
        // PERSISTENT, EPHEMERAL, PERSISTENT_SEQUENTIAL, EPHEMERAL_SEQUENTIAL.
        (op::CREATE | op::CREATE2, 0..=3) => ZkCommand::Create {
            session: 0,
            path,
            data,
            ephemeral: flags & 1 != 0,
            sequential: flags & 2 != 0,
        },
        (op::CREATE | op::CREATE2, _) => other("create", Some(path), true),
        (op::CREATE_CONTAINER, _) => other("createContainer", Some(path), true),
        _ => other("createTTL", Some(path), true),
    })
}

/// A `DeleteRequest`.
fn delete(c: &mut Cursor<'_>) -> Result<ZkCommand, Malformed> {
    let path = c.path()?;
    Ok(match version(c.int()?) {
        Ok(version) => ZkCommand::Delete {
            session: 0,
            path,
            version,
        },
        Err(()) => other("delete", Some(path), true),
    })
}

/// A `SetDataRequest`.
fn set_data(c: &mut Cursor<'_>) -> Result<ZkCommand, Malformed> {
    let path = c.path()?;
    let data = text(c.buffer()?);
    Ok(match version(c.int()?) {
        Ok(version) => ZkCommand::SetData {
            session: 0,
            path,
            data,
            version,
        },
        Err(()) => other("setData", Some(path), true),
    })
}

/// A `CheckVersionRequest`.
fn check(c: &mut Cursor<'_>) -> Result<ZkCommand, Malformed> {
    let path = c.path()?;
    Ok(match version(c.int()?) {
        Ok(version) => ZkCommand::Check { path, version },
        Err(()) => other("check", Some(path), false),
    })
}

/// A `MultiRequest`: each op after its `MultiHeader`, until the header marked done.
/// One op the spec cannot hold makes the whole `multi` [`ZkCommand::Other`], with no
/// path: its other ops may write anywhere.
fn multi(c: &mut Cursor<'_>) -> Result<ZkCommand, Malformed> {
    let mut ops = Vec::new();
    loop {
        let kind = c.int()?;
        let done = c.boolean()?;
        let _err = c.int()?;
        if done {
            break;
        }
        let op = match kind {
            op::CREATE | op::CREATE2 | op::CREATE_CONTAINER | op::CREATE_TTL => create(kind, c)?,
            op::DELETE => delete(c)?,
            op::SET_DATA => set_data(c)?,
            op::CHECK => check(c)?,
            // Its body's shape is unknown: the rest of the frame cannot be read, and
            // need not be (the frame's length delimits it).
            _ => return Ok(other("multi", None, true)),
        };
        ops.push(op);
    }
    let modelled = ops.iter().all(|o| {
        matches!(
            o,
            ZkCommand::Create { .. }
                | ZkCommand::Delete { .. }
                | ZkCommand::SetData { .. }
                | ZkCommand::Check { .. }
        )
    });
    Ok(if modelled {
        ZkCommand::Multi { session: 0, ops }
    } else {
        other("multi", None, true)
    })
}

/// What a request of op code `kind` is. The session fields are filled in when it is
/// recorded.
fn decode_request(kind: i32, c: &mut Cursor<'_>) -> Result<Request, Malformed> {
    let command = match kind {
        op::CREATE | op::CREATE2 | op::CREATE_CONTAINER | op::CREATE_TTL => create(kind, c)?,
        op::DELETE => delete(c)?,
        op::EXISTS => ZkCommand::Exists {
            session: 0,
            path: c.path()?,
            watch: c.boolean()?,
        },
        // The spec's `getData` leaves no watch; a watch changes nothing in the tree.
        op::GET_DATA => ZkCommand::GetData {
            session: 0,
            path: c.path()?,
        },
        op::SET_DATA => set_data(c)?,
        op::GET_CHILDREN | op::GET_CHILDREN2 => ZkCommand::GetChildren {
            session: 0,
            path: c.path()?,
            watch: c.boolean()?,
        },
        op::CHECK => check(c)?,
        op::MULTI => multi(c)?,
        op::GET_ACL => other("getACL", Some(c.path()?), false),
        op::SET_ACL => other("setACL", Some(c.path()?), true),
        op::SYNC => other("sync", Some(c.path()?), false),
        op::CHECK_WATCHES => other("checkWatches", Some(c.path()?), false),
        op::REMOVE_WATCHES => other("removeWatches", Some(c.path()?), false),
        op::DELETE_CONTAINER => other("deleteContainer", Some(c.path()?), true),
        op::GET_EPHEMERALS => other("getEphemerals", Some(c.path()?), false),
        op::GET_ALL_CHILDREN_NUMBER => other("getAllChildrenNumber", Some(c.path()?), false),
        op::ADD_WATCH => other("addWatch", Some(c.path()?), false),
        op::MULTI_READ => other("multiRead", None, false),
        op::RECONFIG => other("reconfig", None, true),
        // Ending the session deletes its ephemeral nodes.
        op::CLOSE_SESSION => other("closeSession", None, true),
        op::PING | op::AUTH | op::SET_WATCHES | op::SET_WATCHES2 | op::SASL | op::WHO_AM_I => {
            return Ok(Request::Chatter)
        }
        // Not known to leave the tree alone.
        n => other(&format!("op {n}"), None, true),
    };
    Ok(Request::Command(command))
}

/// `NONODE`.
const NO_NODE: i32 = -101;

/// An error code as one of the spec's errors; `None` when the server does not say
/// whether the request took effect (a timeout, an internal error, a code not known
/// here).
fn spec_error(code: i32) -> Option<ZkError> {
    Some(match code {
        NO_NODE => ZkError::NoNode,
        -110 => ZkError::NodeExists,
        -103 => ZkError::BadVersion,
        -112 => ZkError::SessionExpired,
        // Refused, nothing done: UNIMPLEMENTED, BADARGUMENTS, NEWCONFIGNOQUORUM,
        // RECONFIGINPROGRESS, UNKNOWNSESSION, NOAUTH, NOCHILDRENFOREPHEMERALS,
        // NOTEMPTY, INVALIDACL, AUTHFAILED, SESSIONMOVED, NOTREADONLY,
        // EPHEMERALONLOCALSESSION, NOWATCHER, RECONFIGDISABLED,
        // SESSIONCLOSEDREQUIRESASLAUTH, QUOTAEXCEEDED, THROTTLEDOP.
        -6 | -8 | -13 | -14 | -15 | -102 | -108 | -111 | -114 | -115 | -118 | -119 | -120
        | -121 | -122 | -123 | -124 | -126 => ZkError::Invalid,
        // SYSTEMERROR, RUNTIMEINCONSISTENCY, DATAINCONSISTENCY, CONNECTIONLOSS,
        // MARSHALLINGERROR, OPERATIONTIMEOUT, APIERROR, REQUESTTIMEOUT, and the rest.
        _ => return None,
    })
}

/// The node a stat describes, as locklab's client records it.
fn znode(stat: &Stat, data: String) -> Znode {
    Znode {
        data,
        czxid: u64::try_from(stat.czxid).unwrap_or(0),
        mzxid: u64::try_from(stat.mzxid).unwrap_or(0),
        version: u32::try_from(stat.version).unwrap_or(0),
        ephemeral_owner: (stat.ephemeral_owner != 0).then_some(stat.ephemeral_owner as SessionId),
    }
}

/// The reply to a create of op code `kind`. A plain `create`'s reply holds only the
/// path: its czxid is the reply header's zxid, which for a write is the zxid of the
/// write's own transaction (the server answers a write right after applying it, one
/// at a time). `create2` and its kin answer the new node's stat.
fn created(kind: i32, zxid: i64, c: &mut Cursor<'_>) -> Result<ZkReply, Malformed> {
    let path = c.path()?;
    let czxid = match kind {
        op::CREATE => zxid,
        _ => c.stat()?.czxid,
    };
    Ok(ZkReply::Created {
        path,
        czxid: u64::try_from(czxid).unwrap_or(0),
    })
}

/// What the server answered to `command` (op code `kind`), in the spec's words;
/// `None` when the answer does not say whether it took effect.
fn decode_reply(
    kind: i32,
    command: &ZkCommand,
    zxid: i64,
    err: i32,
    c: &mut Cursor<'_>,
) -> Result<Option<ZkReply>, Malformed> {
    if err != 0 {
        // `exists` of no node is answered NONODE; a client reads it as no stat.
        if kind == op::EXISTS && err == NO_NODE {
            return Ok(Some(ZkReply::Stat(None)));
        }
        return Ok(spec_error(err).map(ZkReply::Error));
    }
    let written = |cmd: &ZkCommand| match cmd {
        ZkCommand::SetData { data, .. } => data.clone(),
        _ => String::new(),
    };
    Ok(Some(match kind {
        op::CREATE | op::CREATE2 | op::CREATE_CONTAINER | op::CREATE_TTL => created(kind, zxid, c)?,
        op::EXISTS => ZkReply::Stat(Some(znode(&c.stat()?, String::new()))),
        op::GET_DATA => {
            let data = text(c.buffer()?);
            ZkReply::Stat(Some(znode(&c.stat()?, data)))
        }
        op::SET_DATA => ZkReply::Stat(Some(znode(&c.stat()?, written(command)))),
        op::GET_CHILDREN | op::GET_CHILDREN2 => {
            let mut names = c.strings()?;
            names.sort();
            ZkReply::Children(names)
        }
        op::MULTI => multi_reply(command, zxid, c)?,
        // delete, check, and what the spec does not model: the request went through.
        _ => ZkReply::Ok,
    }))
}

/// A `MultiResponse`: each op's result after its `MultiHeader`, until the header
/// marked done. A failed `multi` answers an error result for every op: 0 for those
/// before the one that failed, its code for it, RUNTIMEINCONSISTENCY after.
fn multi_reply(command: &ZkCommand, zxid: i64, c: &mut Cursor<'_>) -> Result<ZkReply, Malformed> {
    let ops: &[ZkCommand] = match command {
        ZkCommand::Multi { ops, .. } => ops,
        _ => &[],
    };
    let mut results = Vec::new();
    let mut failed = None;
    loop {
        let kind = c.int()?;
        let done = c.boolean()?;
        let _err = c.int()?;
        if done {
            break;
        }
        let result = match kind {
            op::CREATE | op::CREATE2 | op::CREATE_CONTAINER | op::CREATE_TTL => {
                created(kind, zxid, c)?
            }
            op::DELETE | op::DELETE_CONTAINER | op::CHECK => ZkReply::Ok,
            op::SET_DATA => {
                let data = match ops.get(results.len()) {
                    Some(ZkCommand::SetData { data, .. }) => data.clone(),
                    _ => String::new(),
                };
                ZkReply::Stat(Some(znode(&c.stat()?, data)))
            }
            op::ERROR => {
                let code = c.int()?;
                if code != 0 && failed.is_none() {
                    failed = Some((results.len(), code));
                }
                ZkReply::Error(ZkError::Invalid)
            }
            n => return Err(Malformed(format!("op {n} in a multi's reply"))),
        };
        results.push(result);
    }
    if let Some((index, code)) = failed {
        // Nothing of a failed `multi` was applied, whatever its code.
        return Ok(ZkReply::MultiFailed {
            index,
            error: spec_error(code).unwrap_or(ZkError::Invalid),
        });
    }
    let is_multi = matches!(command, ZkCommand::Multi { .. });
    if results.iter().any(|r| matches!(r, ZkReply::Error(_)))
        || (is_multi && results.len() != ops.len())
    {
        return Err(Malformed(
            "a multi's reply that does not answer its ops".into(),
        ));
    }
    Ok(ZkReply::Multi(results))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::Exchange;
    use crate::zk::ZkWire;

    const SESSION: i64 = 0x0100_0000_0000_0007;
    const SID: SessionId = SESSION as SessionId;

    /// Jute records, written as a client or server would.
    #[derive(Default)]
    struct W(Vec<u8>);

    impl W {
        fn int(mut self, v: i32) -> Self {
            self.0.extend_from_slice(&v.to_be_bytes());
            self
        }
        fn long(mut self, v: i64) -> Self {
            self.0.extend_from_slice(&v.to_be_bytes());
            self
        }
        fn boolean(mut self, v: bool) -> Self {
            self.0.push(u8::from(v));
            self
        }
        fn buffer(self, b: &[u8]) -> Self {
            let mut w = self.int(i32::try_from(b.len()).unwrap_or(0));
            w.0.extend_from_slice(b);
            w
        }
        fn string(self, s: &str) -> Self {
            self.buffer(s.as_bytes())
        }
        fn stat(self, czxid: i64, version: i32, owner: i64) -> Self {
            self.long(czxid)
                .long(czxid + 1)
                .long(1000)
                .long(2000)
                .int(version)
                .int(0)
                .int(0)
                .long(owner)
                .int(0)
                .int(0)
                .long(czxid)
        }
        /// The open ACL (`world:anyone`, all permissions).
        fn acl(self) -> Self {
            self.int(1).int(31).string("world").string("anyone")
        }
        fn create_body(self, path: &str, data: &str, flags: i32) -> Self {
            self.string(path).string(data).acl().int(flags)
        }
        fn multi_header(self, kind: i32, done: bool) -> Self {
            self.int(kind).boolean(done).int(-1)
        }
        fn frame(self) -> Vec<u8> {
            let mut f = i32::try_from(self.0.len())
                .unwrap_or(0)
                .to_be_bytes()
                .to_vec();
            f.extend_from_slice(&self.0);
            f
        }
    }

    fn request(xid: i32, kind: i32, body: W) -> (bool, Vec<u8>) {
        let mut w = W::default().int(xid).int(kind);
        w.0.extend_from_slice(&body.0);
        (true, w.frame())
    }

    fn reply(xid: i32, zxid: i64, err: i32, body: W) -> (bool, Vec<u8>) {
        let mut w = W::default().int(xid).long(zxid).int(err);
        w.0.extend_from_slice(&body.0);
        (false, w.frame())
    }

    /// The handshake of a new session asking for 2 s (with the readOnly flag clients
    /// send and the one servers answer).
    fn connect() -> Vec<(bool, Vec<u8>)> {
        vec![
            (
                true,
                W::default()
                    .int(0)
                    .long(0)
                    .int(2000)
                    .long(0)
                    .buffer(&[0; 16])
                    .boolean(false)
                    .frame(),
            ),
            (
                false,
                W::default()
                    .int(0)
                    .int(4000)
                    .long(SESSION)
                    .buffer(&[7; 16])
                    .boolean(false)
                    .frame(),
            ),
        ]
    }

    fn sniff(talk: &[(bool, Vec<u8>)]) -> Vec<Exchange<ZkWire>> {
        let recorder = RequestLog::new();
        {
            let mut s = Sniffer::new(recorder.clone(), 2);
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

    fn talk(parts: Vec<Vec<(bool, Vec<u8>)>>) -> Vec<(bool, Vec<u8>)> {
        parts.into_iter().flatten().collect()
    }

    fn pairs(ex: &[Exchange<ZkWire>]) -> Vec<(ZkCommand, Option<ZkReply>)> {
        ex.iter()
            .map(|e| (e.command.clone(), e.reply.clone()))
            .collect()
    }

    fn node(czxid: u64, version: u32, data: &str, owner: Option<SessionId>) -> ZkReply {
        ZkReply::Stat(Some(Znode {
            data: data.into(),
            czxid,
            mzxid: czxid + 1,
            version,
            ephemeral_owner: owner,
        }))
    }

    #[test]
    fn a_lock_recipes_requests_come_out_in_the_specs_words() {
        let czxid: i64 = 0x1_0000_0005;
        let ex = sniff(&talk(vec![
            connect(),
            vec![
                request(xid::PING, op::PING, W::default()),
                reply(xid::PING, 3, 0, W::default()),
                request(
                    1,
                    op::CREATE,
                    W::default().create_body("/lock/c0-n-", "c0", 3),
                ),
                reply(1, czxid, 0, W::default().string("/lock/c0-n-0000000003")),
                request(
                    2,
                    op::GET_CHILDREN,
                    W::default().string("/lock").boolean(false),
                ),
                reply(
                    2,
                    czxid,
                    0,
                    W::default()
                        .int(2)
                        .string("c0-n-0000000003")
                        .string("c1-n-0000000002"),
                ),
                request(
                    3,
                    op::EXISTS,
                    W::default().string("/lock/c1-n-0000000002").boolean(true),
                ),
                reply(3, czxid, 0, W::default().stat(czxid - 1, 0, SESSION + 1)),
                // The predecessor goes: a notification, not recorded.
                reply(
                    xid::NOTIFICATION,
                    -1,
                    0,
                    W::default().int(2).int(3).string("/lock/c1-n-0000000002"),
                ),
                request(
                    4,
                    op::EXISTS,
                    W::default().string("/lock/c1-n-0000000002").boolean(true),
                ),
                reply(4, czxid + 1, NO_NODE, W::default()),
                request(5, op::CREATE2, W::default().create_body("/lock", "", 0)),
                reply(5, czxid + 1, -110, W::default()),
                request(
                    6,
                    op::DELETE,
                    W::default().string("/lock/c0-n-0000000003").int(-1),
                ),
                reply(6, czxid + 2, 0, W::default()),
                request(
                    7,
                    op::CREATE2,
                    W::default().create_body("/lock/c0-n-", "", 3),
                ),
                reply(
                    7,
                    czxid + 3,
                    0,
                    W::default()
                        .string("/lock/c0-n-0000000005")
                        .stat(czxid + 3, 0, SESSION),
                ),
                request(
                    8,
                    op::DELETE,
                    W::default().string("/lock/c0-n-0000000005").int(0),
                ),
            ],
        ]));
        let create =
            |path: &str, data: &str, ephemeral: bool, sequential: bool| ZkCommand::Create {
                session: SID,
                path: path.into(),
                data: data.into(),
                ephemeral,
                sequential,
            };
        let exists = || ZkCommand::Exists {
            session: SID,
            path: "/lock/c1-n-0000000002".into(),
            watch: true,
        };
        let czxid = czxid as u64;
        assert_eq!(
            pairs(&ex),
            vec![
                (
                    ZkCommand::Connect { timeout: 4000 },
                    Some(ZkReply::Connected { session: SID })
                ),
                (
                    create("/lock/c0-n-", "c0", true, true),
                    Some(ZkReply::Created {
                        path: "/lock/c0-n-0000000003".into(),
                        czxid,
                    })
                ),
                (
                    ZkCommand::GetChildren {
                        session: SID,
                        path: "/lock".into(),
                        watch: false
                    },
                    Some(ZkReply::Children(vec![
                        "c0-n-0000000003".into(),
                        "c1-n-0000000002".into()
                    ]))
                ),
                (exists(), Some(node(czxid - 1, 0, "", Some(SID + 1)))),
                (exists(), Some(ZkReply::Stat(None))),
                (
                    create("/lock", "", false, false),
                    Some(ZkReply::Error(ZkError::NodeExists))
                ),
                (
                    ZkCommand::Delete {
                        session: SID,
                        path: "/lock/c0-n-0000000003".into(),
                        version: None
                    },
                    Some(ZkReply::Ok)
                ),
                (
                    create("/lock/c0-n-", "", true, true),
                    Some(ZkReply::Created {
                        path: "/lock/c0-n-0000000005".into(),
                        czxid: czxid + 3,
                    })
                ),
                // Never answered: the connection ended.
                (
                    ZkCommand::Delete {
                        session: SID,
                        path: "/lock/c0-n-0000000005".into(),
                        version: Some(0)
                    },
                    None
                ),
            ],
            "{ex:#?}"
        );
        assert!(ex.iter().all(|e| e.node == 2 && e.session == Some(SID)));
        assert!(ex.windows(2).all(|w| w[0].seq < w[1].seq));
    }

    #[test]
    fn replies_pair_by_xid_and_requests_before_the_session_get_it() {
        let ex = sniff(&talk(vec![
            vec![connect()[0].clone()],
            // Sent before the connect response (as the Java client primes it).
            vec![
                request(1, op::GET_DATA, W::default().string("/a").boolean(false)),
                request(
                    2,
                    op::SET_DATA,
                    W::default().string("/b").string("v2").int(3),
                ),
            ],
            vec![connect()[1].clone()],
            vec![
                reply(2, 9, 0, W::default().stat(5, 4, 0)),
                reply(1, 9, 0, W::default().string("x").stat(6, 0, 0)),
            ],
        ]));
        assert_eq!(
            pairs(&ex),
            vec![
                (
                    ZkCommand::Connect { timeout: 4000 },
                    Some(ZkReply::Connected { session: SID })
                ),
                (
                    ZkCommand::GetData {
                        session: SID,
                        path: "/a".into()
                    },
                    Some(node(6, 0, "x", None))
                ),
                (
                    ZkCommand::SetData {
                        session: SID,
                        path: "/b".into(),
                        data: "v2".into(),
                        version: Some(3)
                    },
                    Some(node(5, 4, "v2", None))
                ),
            ],
            "{ex:#?}"
        );
        // The answer to the second request came first.
        assert!(ex[2].done_ns <= ex[1].done_ns);
    }

    #[test]
    fn a_multi_of_check_and_set_data_and_a_failed_one() {
        let check_and_set = |xid: i32| {
            request(
                xid,
                op::MULTI,
                W::default()
                    .multi_header(op::CHECK, false)
                    .string("/lock/c0-n-0000000003")
                    .int(0)
                    .multi_header(op::SET_DATA, false)
                    .string("/counter")
                    .string("8")
                    .int(-1)
                    .multi_header(op::ERROR, true),
            )
        };
        let ex = sniff(&talk(vec![
            connect(),
            vec![
                check_and_set(1),
                reply(
                    1,
                    40,
                    0,
                    W::default()
                        .multi_header(op::CHECK, false)
                        .multi_header(op::SET_DATA, false)
                        .stat(10, 8, 0)
                        .multi_header(op::ERROR, true),
                ),
                check_and_set(2),
                reply(
                    2,
                    41,
                    0,
                    W::default()
                        .multi_header(op::ERROR, false)
                        .int(NO_NODE)
                        .multi_header(op::ERROR, false)
                        .int(-2)
                        .multi_header(op::ERROR, true),
                ),
                // A create inside a multi answers its path; its czxid is the multi's.
                request(
                    3,
                    op::MULTI,
                    W::default()
                        .multi_header(op::CREATE, false)
                        .create_body("/x", "", 1)
                        .multi_header(op::DELETE, false)
                        .string("/y")
                        .int(-1)
                        .multi_header(op::ERROR, true),
                ),
                reply(
                    3,
                    42,
                    0,
                    W::default()
                        .multi_header(op::CREATE, false)
                        .string("/x")
                        .multi_header(op::DELETE, false)
                        .multi_header(op::ERROR, true),
                ),
            ],
        ]));
        let ops = vec![
            ZkCommand::Check {
                path: "/lock/c0-n-0000000003".into(),
                version: Some(0),
            },
            ZkCommand::SetData {
                session: SID,
                path: "/counter".into(),
                data: "8".into(),
                version: None,
            },
        ];
        let multi = ZkCommand::Multi { session: SID, ops };
        assert_eq!(
            pairs(&ex[1..]),
            vec![
                (
                    multi.clone(),
                    Some(ZkReply::Multi(vec![ZkReply::Ok, node(10, 8, "8", None)]))
                ),
                (
                    multi,
                    Some(ZkReply::MultiFailed {
                        index: 0,
                        error: ZkError::NoNode
                    })
                ),
                (
                    ZkCommand::Multi {
                        session: SID,
                        ops: vec![
                            ZkCommand::Create {
                                session: SID,
                                path: "/x".into(),
                                data: String::new(),
                                ephemeral: true,
                                sequential: false
                            },
                            ZkCommand::Delete {
                                session: SID,
                                path: "/y".into(),
                                version: None
                            }
                        ]
                    },
                    Some(ZkReply::Multi(vec![
                        ZkReply::Created {
                            path: "/x".into(),
                            czxid: 42
                        },
                        ZkReply::Ok
                    ]))
                ),
            ],
            "{ex:#?}"
        );
    }

    #[test]
    fn errors_say_what_happened_only_when_the_server_knows() {
        let del = |xid: i32| {
            request(
                xid,
                op::DELETE,
                W::default().string("/lock/n-0000000001").int(2),
            )
        };
        let ex = sniff(&talk(vec![
            connect(),
            vec![
                del(1),
                reply(1, 5, -103, W::default()),
                del(2),
                reply(2, 5, -112, W::default()),
                // NOTEMPTY: refused.
                del(3),
                reply(3, 5, -111, W::default()),
                // OPERATIONTIMEOUT: it may or may not have happened.
                del(4),
                reply(4, 5, -7, W::default()),
            ],
        ]));
        let replies: Vec<Option<ZkReply>> = ex[1..].iter().map(|e| e.reply.clone()).collect();
        assert_eq!(
            replies,
            vec![
                Some(ZkReply::Error(ZkError::BadVersion)),
                Some(ZkReply::Error(ZkError::SessionExpired)),
                Some(ZkReply::Error(ZkError::Invalid)),
                None,
            ]
        );
    }

    #[test]
    fn requests_the_spec_has_no_word_for_are_other() {
        let ex = sniff(&talk(vec![
            connect(),
            vec![
                request(1, op::SYNC, W::default().string("/lock")),
                reply(1, 5, 0, W::default().string("/lock")),
                request(2, op::SET_ACL, W::default().string("/lock").acl().int(-1)),
                reply(2, 6, 0, W::default().stat(1, 0, 0)),
                request(
                    3,
                    op::CREATE_CONTAINER,
                    W::default().create_body("/c", "", 4),
                ),
                reply(3, 7, 0, W::default().string("/c").stat(7, 0, 0)),
                request(4, op::WHO_AM_I, W::default()),
                reply(4, 7, 0, W::default().int(0)),
                request(5, op::CLOSE_SESSION, W::default()),
                reply(5, 8, 0, W::default()),
            ],
        ]));
        let other = |name: &str, path: Option<&str>, write: bool| ZkCommand::Other {
            name: name.into(),
            path: path.map(String::from),
            write,
        };
        assert_eq!(
            pairs(&ex[1..]),
            vec![
                (other("sync", Some("/lock"), false), Some(ZkReply::Ok)),
                (other("setACL", Some("/lock"), true), Some(ZkReply::Ok)),
                (
                    other("createContainer", Some("/c"), true),
                    Some(ZkReply::Created {
                        path: "/c".into(),
                        czxid: 7
                    })
                ),
                (other("closeSession", None, true), Some(ZkReply::Ok)),
            ],
            "{ex:#?}"
        );
    }

    #[test]
    fn a_resumed_session_opens_none() {
        let ex = sniff(&[
            (
                true,
                W::default()
                    .int(0)
                    .long(77)
                    .int(2000)
                    .long(SESSION)
                    .buffer(&[7; 16])
                    .frame(),
            ),
            (
                false,
                W::default()
                    .int(0)
                    .int(2000)
                    .long(SESSION)
                    .buffer(&[7; 16])
                    .frame(),
            ),
            request(
                1,
                op::GET_CHILDREN2,
                W::default().string("/lock").boolean(true),
            ),
            reply(
                1,
                9,
                0,
                W::default().int(1).string("n-0000000001").stat(3, 0, 0),
            ),
        ]);
        assert_eq!(
            pairs(&ex),
            vec![(
                ZkCommand::GetChildren {
                    session: SID,
                    path: "/lock".into(),
                    watch: true
                },
                Some(ZkReply::Children(vec!["n-0000000001".into()]))
            )]
        );
    }

    #[test]
    fn a_connection_that_cannot_be_followed_leaves_one_unknown_write() {
        let unfollowed = |e: &Exchange<ZkWire>| {
            matches!(
                &e.command,
                ZkCommand::Other {
                    write: true,
                    path: None,
                    ..
                }
            ) && e.reply.is_none()
        };
        // A reply to no request: what was waiting is recorded unanswered.
        let ex = sniff(&talk(vec![
            connect(),
            vec![
                request(1, op::GET_DATA, W::default().string("/a").boolean(false)),
                request(2, op::DELETE, W::default().string("/a").int(-1)),
                reply(1, 9, 0, W::default().string("x").stat(6, 0, 0)),
                reply(9, 9, 0, W::default()),
                // Not read any more.
                request(3, op::DELETE, W::default().string("/b").int(-1)),
                reply(3, 9, 0, W::default()),
            ],
        ]));
        assert_eq!(ex.len(), 4, "{ex:#?}");
        assert_eq!(ex[1].reply, Some(node(6, 0, "x", None)));
        assert!(matches!(ex[2].command, ZkCommand::Delete { .. }) && ex[2].reply.is_none());
        assert!(unfollowed(&ex[3]), "{ex:#?}");
        // Bytes that are no frame (an HTTP request's "GET " reads as a 1 GiB length).
        let garbage = sniff(&[(true, b"GET / HTTP/1.1\r\n\r\n".to_vec())]);
        assert_eq!(garbage.len(), 1, "{garbage:#?}");
        assert!(unfollowed(&garbage[0]));
        // A frame that ends inside its request.
        let short = sniff(&talk(vec![
            connect(),
            vec![(true, W::default().int(1).int(op::CREATE).int(50).frame())],
        ]));
        assert!(unfollowed(&short[1]), "{short:#?}");
        // A connect that never got its response.
        let hung = sniff(&connect()[..1]);
        assert_eq!(
            pairs(&hung),
            vec![(ZkCommand::Connect { timeout: 2000 }, None)]
        );
    }
}
