//! ZooKeeper's request and reply bodies read into the spec's terms: each request as
//! locklab's own client would have sent it, each reply as it reads it back (`exists`
//! with empty data, `setData` with the data written, children sorted).

use locklab_models::zk::spec::{SessionId, ZkCommand, ZkError, ZkReply, Znode};

use super::super::jute::{op, Cursor, Malformed, Stat};
use super::Request;

/// The connect response's negotiated timeout (ms, 0 when refused) and session id.
pub(super) fn connect_response(c: &mut Cursor<'_>) -> Result<(u64, SessionId), Malformed> {
    let _protocol_version = c.int()?;
    let timeout = c.int()?;
    let session = c.long()?;
    let _passwd = c.buffer()?;
    // A readOnly flag may follow.
    Ok((u64::try_from(timeout).unwrap_or(0), session as SessionId))
}

/// Puts the session id in every field of `cmd` that names one.
pub(super) fn set_session(cmd: &mut ZkCommand, id: SessionId) {
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
pub(super) fn decode_request(kind: i32, c: &mut Cursor<'_>) -> Result<Request, Malformed> {
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
pub(super) const NO_NODE: i32 = -101;

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
pub(super) fn decode_reply(
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
