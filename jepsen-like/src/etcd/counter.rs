//! A counter key on the etcd cluster that holds the lock: reads are plain gets; a write
//! with a token is a `Txn` that puts only if the lock key the token came from still has
//! it as its create revision (Jepsen's `lock-etcd-set`).

use locklab_implementations::etcd::EtcdSession;
use locklab_models::etcd::spec::{guarded_by, EtcdCommand, EtcdReply};

use locklab_implementations::BoxFuture;

use crate::counter::{Counter, Outcome};

/// The counter `key` on the cluster one client's session talks to.
#[derive(Clone)]
pub struct EtcdCounter {
    session: Box<EtcdSession>,
    key: String,
}

impl EtcdCounter {
    /// The counter `key` through `session`.
    pub fn new(session: EtcdSession, key: &str) -> Self {
        EtcdCounter {
            session: Box::new(session),
            key: key.to_string(),
        }
    }

    async fn read_counter(&self) -> Outcome<Option<i64>> {
        etcd_read(&self.session, &self.key).await
    }

    async fn write_counter(&self, value: i64, token: Option<u64>, lock_key: &str) -> Outcome<()> {
        etcd_write(&self.session, &self.key, value, token, lock_key).await
    }
}

async fn etcd_read(session: &EtcdSession, key: &str) -> Outcome<Option<i64>> {
    let get = EtcdCommand::Get { key: key.into() };
    match session.exec(get).await {
        Ok(EtcdReply::Kvs(kvs)) => match kvs.first() {
            None => Outcome::Ok(None),
            Some((_, kv)) => match kv.value.parse() {
                Ok(v) => Outcome::Ok(Some(v)),
                Err(_) => Outcome::Unknown(format!("{key} holds {:?}, not a number", kv.value)),
            },
        },
        Ok(other) => Outcome::Unknown(format!("get {key} answered {other:?}")),
        Err(e) => Outcome::Unknown(e.to_string()),
    }
}

async fn etcd_write(
    session: &EtcdSession,
    key: &str,
    value: i64,
    token: Option<u64>,
    lock_key: &str,
) -> Outcome<()> {
    let put = EtcdCommand::Put {
        key: key.into(),
        value: value.to_string(),
        lease: None,
    };
    let cmd = match token {
        None => put,
        Some(rev) => guarded_by(lock_key, rev, put),
    };
    match session.exec(cmd).await {
        Ok(
            EtcdReply::Put { .. }
            | EtcdReply::Txn {
                succeeded: true, ..
            },
        ) => Outcome::Ok(()),
        Ok(EtcdReply::Txn {
            succeeded: false, ..
        }) => Outcome::Refused,
        Ok(other) => Outcome::Unknown(format!("put {key} answered {other:?}")),
        Err(e) => Outcome::Unknown(e.to_string()),
    }
}

impl Counter for EtcdCounter {
    fn key(&self) -> &str {
        &self.key
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
