//! The requests the ZooKeeper lock rows send and the replies they get: the one
//! vocabulary the models, histories, real clients and the wire decoder share.

use super::*;

/// A request. Run histories carry each one a client sent as a `command` event
/// (serialized in kebab case: `{"get-children":{"session":…,"path":"/lock","watch":true}}`),
/// with its reply; there a session is the server's id and a timeout is in milliseconds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum ZkCommand {
    /// Open a session with this timeout.
    Connect {
        /// Milliseconds in histories, ticks in the models: a session not heard from for
        /// this long expires, and its ephemeral nodes go.
        timeout: u64,
    },
    /// A ping: restarts the session's timeout.
    Ping {
        /// The session whose deadline restarts; an expired one answers `SESSIONEXPIRED`.
        session: SessionId,
    },
    /// `create`.
    Create {
        /// The caller's session.
        session: SessionId,
        /// The path (the prefix, when sequential).
        path: String,
        /// The new node's data, at version 0; the lock recipes create their nodes empty.
        data: String,
        /// Owned by the session: deleted when it ends.
        ephemeral: bool,
        /// The parent's `cversion` appended as ten digits.
        sequential: bool,
    },
    /// `delete`, with a version to match (`None`: -1, any).
    Delete {
        /// The caller's session.
        session: SessionId,
        /// The node removed (`NONODE` if absent); its node watches and its parent's child
        /// watches fire.
        path: String,
        /// The expected data version.
        version: Option<u32>,
    },
    /// `exists`, optionally leaving a watch on the path.
    Exists {
        /// The caller's session.
        session: SessionId,
        /// The node looked up; it need not exist, and a watch left on a missing node fires
        /// when it is created.
        path: String,
        /// Leave a watch.
        watch: bool,
    },
    /// `getData`.
    GetData {
        /// The caller's session.
        session: SessionId,
        /// The node read; unlike `exists`, a missing node is the `NONODE` error.
        path: String,
    },
    /// `setData`, with a version to match (`None`: -1, any).
    SetData {
        /// The caller's session.
        session: SessionId,
        /// The node overwritten (`NONODE` if absent); its version goes up by one and node
        /// watches on it fire.
        path: String,
        /// The new data.
        data: String,
        /// The expected data version.
        version: Option<u32>,
    },
    /// `getChildren`, optionally leaving a watch on the parent.
    GetChildren {
        /// The caller's session.
        session: SessionId,
        /// The parent.
        path: String,
        /// Leave a watch.
        watch: bool,
    },
    /// `check(path, version)`: only inside a `multi`; fails unless the node exists (with
    /// that data version, when given).
    Check {
        /// The node that must exist for the `multi` to go on (else `NONODE` fails it).
        path: String,
        /// The expected data version.
        version: Option<u32>,
    },
    /// `multi`: every op or none, at one zxid each in order. Only `Create`, `Delete`,
    /// `SetData` and `Check` may be inside; they run in the `multi`'s session.
    Multi {
        /// The caller's session.
        session: SessionId,
        /// Run in order, writes at one shared zxid; the first that fails undoes them all
        /// (`MultiFailed` with its index).
        ops: Vec<ZkCommand>,
    },
    /// The client reads (and clears) the notifications of its session's watches that
    /// fired: what the server pushed to it.
    Consume {
        /// The session whose fired watches are read; other sessions' notifications stay.
        session: SessionId,
    },
    /// A request the spec does not model, as a client sent it (read off an external
    /// client's traffic: `getACL`, `setACL`, `sync`, `createContainer`, `createTTL`,
    /// `reconfig`, `closeSession`, a `multi` with such an op, or the rest of a
    /// connection that could not be followed). Its effect is unknown: the spec answers
    /// an error and changes nothing, and the checks that read requests treat a writing
    /// one as possibly having created any node at its path or below it (a sequential
    /// create names only the prefix), or anywhere when it names no path.
    Other {
        /// The request's name (`setACL`, `createTTL`).
        name: String,
        /// The path it names, if any.
        path: Option<String>,
        /// Whether it may change the tree (a request not known to only read is taken
        /// to).
        write: bool,
    },
}

/// An error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZkError {
    /// `NONODE`.
    NoNode,
    /// `NODEEXISTS`.
    NodeExists,
    /// `BADVERSION`.
    BadVersion,
    /// `SESSIONEXPIRED`: the session is gone (its ephemeral nodes with it).
    SessionExpired,
    /// A request ZooKeeper refuses for a reason the spec has no word for (a `check`
    /// outside a `multi`, a read inside one; heard from an external client: `NOTEMPTY`,
    /// `NOAUTH`, …): nothing changed.
    Invalid,
}

/// What ZooKeeper answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum ZkReply {
    /// A session was opened.
    Connected {
        /// Its id.
        session: SessionId,
    },
    /// A ping, delete, setData or check succeeded (with the node's stat when it has one).
    Ok,
    /// A create succeeded: the path made (with the sequence number) and its czxid.
    Created {
        /// The full path made: for a sequential create, the prefix plus the parent's
        /// `cversion` in ten digits.
        path: String,
        /// Its czxid.
        czxid: u64,
    },
    /// `exists`/`getData`/`setData`: the node, or `None` when absent (`exists` only).
    Stat(Option<Znode>),
    /// `getChildren`: the children's names, sorted (ZooKeeper says nothing else of them).
    Children(Vec<String>),
    /// A `multi` that succeeded: each op's reply.
    Multi(Vec<ZkReply>),
    /// A `multi` that failed at op `index` with `error`; nothing was applied.
    MultiFailed {
        /// The failing op.
        index: usize,
        /// Why.
        error: ZkError,
    },
    /// The notifications consumed.
    Notified(Vec<Notification>),
    /// The request failed as a whole and changed nothing (`SESSIONEXPIRED`: session gone).
    Error(ZkError),
}
