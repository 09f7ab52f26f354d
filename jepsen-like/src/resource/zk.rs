//! A counter node on the ZooKeeper ensemble that holds the lock: reads are plain
//! `getData`; a write with a token is one `multi(check(lock node), setData(counter))`,
//! which ZooKeeper applies only while the holder's lock node still exists — once its
//! session expired, the node is gone and the write is refused as a whole.

use locklab_implementations::zk::client as zk;

use super::Outcome;

/// The counter node `path` on the ensemble one client's session talks to.
#[derive(Clone)]
pub struct ZkCounter {
    client: zk::Client,
    path: String,
}

impl ZkCounter {
    /// The counter `path` through `client`.
    pub fn new(client: zk::Client, path: &str) -> Self {
        ZkCounter {
            client,
            path: path.to_string(),
        }
    }

    /// The counter's path.
    pub fn key(&self) -> &str {
        &self.path
    }

    pub(super) async fn read(&self) -> Outcome<Option<i64>> {
        match self.client.get_data(&self.path).await {
            Ok((data, _)) if data.is_empty() => Outcome::Ok(None),
            Ok((data, _)) => match String::from_utf8_lossy(&data).parse() {
                Ok(v) => Outcome::Ok(Some(v)),
                Err(_) => Outcome::Unknown(format!("{} holds {data:?}, not a number", self.path)),
            },
            Err(zk::Error::NoNode) => Outcome::Ok(None),
            Err(e) => Outcome::Unknown(e.to_string()),
        }
    }

    /// Writes `value`; with a token, only while the lock node `lock_node` exists.
    pub(super) async fn write(
        &self,
        value: i64,
        token: Option<u64>,
        lock_node: &str,
    ) -> Outcome<()> {
        let data = value.to_string();
        let Some(_) = token else {
            return match self.set(&data).await {
                Ok(()) => Outcome::Ok(()),
                Err(e) => Outcome::Unknown(e.to_string()),
            };
        };
        let mut multi = self.client.new_multi_writer();
        // Version -1: any version, but the node must exist.
        let added = multi
            .add_check_version(lock_node, -1)
            .and_then(|()| multi.add_set_data(&self.path, data.as_bytes(), None));
        if let Err(e) = added {
            return Outcome::Unknown(e.to_string());
        }
        match multi.commit().await {
            Ok(_) => Outcome::Ok(()),
            // The check failed: the lock node is gone, nothing was written.
            Err(zk::MultiWriteError::OperationFailed {
                index: 0,
                source: zk::Error::NoNode,
            }) => Outcome::Refused,
            // The holder's session is over (the server said so, or the client knew and
            // sent nothing): nothing was written either.
            Err(zk::MultiWriteError::RequestFailed {
                source: zk::Error::SessionExpired,
            }) => Outcome::Refused,
            Err(e) => Outcome::Unknown(e.to_string()),
        }
    }

    /// `setData`, creating the node at the first write (the harness makes it before the
    /// clients start; a counter used on its own may not have it).
    async fn set(&self, data: &str) -> Result<(), zk::Error> {
        match self
            .client
            .set_data(&self.path, data.as_bytes(), None)
            .await
        {
            Ok(_) => Ok(()),
            Err(zk::Error::NoNode) => {
                let mode = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
                self.client
                    .create(&self.path, data.as_bytes(), &mode)
                    .await
                    .map(drop)
            }
            Err(e) => Err(e),
        }
    }
}
