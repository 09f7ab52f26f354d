//! A counter node on the ZooKeeper ensemble that holds the lock: reads are plain
//! `getData`; a write with a token is one `multi(check(lock node), setData(counter))`,
//! which ZooKeeper applies only while the holder's lock node still exists — once its
//! session expired, the node is gone and the write is refused as a whole. Every request
//! goes through the client's recorded session, so the history shows them.

use locklab_implementations::zk::ZkSession;
use locklab_models::zk::spec::{ZkCommand, ZkError, ZkReply};

use locklab_implementations::BoxFuture;

use crate::counter::{Counter, Outcome};

/// The counter node `path` on the ensemble one client's session talks to.
#[derive(Clone)]
pub struct ZkCounter {
    session: ZkSession,
    path: String,
}

impl ZkCounter {
    /// The counter `path` through `session`.
    pub fn new(session: ZkSession, path: &str) -> Self {
        ZkCounter {
            session,
            path: path.to_string(),
        }
    }

    async fn read_counter(&self) -> Outcome<Option<i64>> {
        let get = ZkCommand::GetData {
            session: self.session.id(),
            path: self.path.clone(),
        };
        match self.session.exec(get).await {
            Ok(ZkReply::Stat(Some(n))) if n.data.is_empty() => Outcome::Ok(None),
            Ok(ZkReply::Stat(Some(n))) => match n.data.parse() {
                Ok(v) => Outcome::Ok(Some(v)),
                Err(_) => {
                    Outcome::Unknown(format!("{} holds {:?}, not a number", self.path, n.data))
                }
            },
            Ok(ZkReply::Error(ZkError::NoNode)) => Outcome::Ok(None),
            Ok(other) => Outcome::Unknown(format!("getData {}: {other:?}", self.path)),
            Err(e) => Outcome::Unknown(e.to_string()),
        }
    }

    /// Writes `value`; with a token, only while the lock node `lock_node` exists.
    async fn write_counter(&self, value: i64, token: Option<u64>, lock_node: &str) -> Outcome<()> {
        let session = self.session.id();
        let set = ZkCommand::SetData {
            session,
            path: self.path.clone(),
            data: value.to_string(),
            version: None,
        };
        let Some(_) = token else {
            return self.set(set).await;
        };
        let multi = ZkCommand::Multi {
            session,
            ops: vec![
                // Version -1: any version, but the node must exist.
                ZkCommand::Check {
                    path: lock_node.to_string(),
                    version: None,
                },
                set,
            ],
        };
        match self.session.exec(multi).await {
            Ok(ZkReply::Multi(_)) => Outcome::Ok(()),
            // The check failed: the lock node is gone, nothing was written.
            Ok(ZkReply::MultiFailed {
                index: 0,
                error: ZkError::NoNode,
            }) => Outcome::Refused,
            // The holder's session is over (the server said so, or the client knew and
            // sent nothing): nothing was written either.
            Ok(ZkReply::Error(ZkError::SessionExpired)) => Outcome::Refused,
            Ok(other) => Outcome::Unknown(format!("multi: {other:?}")),
            Err(e) => Outcome::Unknown(e.to_string()),
        }
    }

    /// `setData`, creating the node at the first write (the harness makes it before the
    /// clients start; a counter used on its own may not have it).
    async fn set(&self, set: ZkCommand) -> Outcome<()> {
        let ZkCommand::SetData { path, data, .. } = &set else {
            return Outcome::Unknown("not a setData".into());
        };
        let create = ZkCommand::Create {
            session: self.session.id(),
            path: path.clone(),
            data: data.clone(),
            ephemeral: false,
            sequential: false,
        };
        match self.session.exec(set).await {
            Ok(ZkReply::Stat(Some(_))) => Outcome::Ok(()),
            Ok(ZkReply::Error(ZkError::NoNode)) => match self.session.exec(create).await {
                Ok(ZkReply::Created { .. }) => Outcome::Ok(()),
                Ok(other) => Outcome::Unknown(format!("create: {other:?}")),
                Err(e) => Outcome::Unknown(e.to_string()),
            },
            Ok(other) => Outcome::Unknown(format!("setData: {other:?}")),
            Err(e) => Outcome::Unknown(e.to_string()),
        }
    }
}

impl Counter for ZkCounter {
    fn key(&self) -> &str {
        &self.path
    }

    fn read(&self, _token: Option<u64>) -> BoxFuture<'_, Outcome<Option<i64>>> {
        Box::pin(self.read_counter())
    }

    fn write<'a>(
        &'a self,
        value: i64,
        token: Option<u64>,
        lock_key: &'a str,
    ) -> BoxFuture<'a, Outcome<()>> {
        Box::pin(self.write_counter(value, token, lock_key))
    }
}
