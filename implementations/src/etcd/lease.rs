//! A client's session lease, as every etcd lock here keeps one: granted at first use,
//! kept alive every third of its TTL by a task of its own, and granted anew once etcd
//! says it is gone.

use std::sync::Mutex;
use std::time::Duration;

use locklab_models::etcd::spec::{command_text, reply_text, EtcdCommand, EtcdReply, LeaseId};

use super::session::EtcdSession;
use crate::error::LockError;

/// The session lease of one lock handle.
#[derive(Debug, Default)]
pub struct SessionLease {
    current: Mutex<Option<(LeaseId, tokio::task::JoinHandle<()>)>>,
}

impl SessionLease {
    fn current(&self) -> std::sync::MutexGuard<'_, Option<(LeaseId, tokio::task::JoinHandle<()>)>> {
        self.current.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The lease, granted with `ttl` (whole seconds, 1 at least) and kept alive from
    /// now on if there is none yet.
    pub async fn id(&self, session: &EtcdSession, ttl: Duration) -> Result<LeaseId, LockError> {
        if let Some((l, _)) = &*self.current() {
            return Ok(*l);
        }
        let cmd = EtcdCommand::Grant {
            ttl: ttl.as_secs().max(1),
        };
        match session.exec(cmd.clone()).await? {
            EtcdReply::Granted { lease, ttl } => {
                let task = session.keep_alive(lease, Duration::from_secs(ttl));
                if let Some((_, old)) = self.current().replace((lease, task)) {
                    old.abort();
                }
                Ok(lease)
            }
            other => Err(LockError::UnexpectedReply {
                command: command_text(&cmd),
                reply: reply_text(&other),
            }),
        }
    }

    /// Whether the keep-alive task found the lease gone (or was stopped).
    pub fn lapsed(&self) -> bool {
        self.current()
            .as_ref()
            .is_some_and(|(_, t)| t.is_finished())
    }

    /// Stops keeping the lease alive, as a dead or cut-off client does; the lease is
    /// still this handle's until [`SessionLease::forget`].
    pub fn stop(&self) {
        if let Some((_, task)) = &*self.current() {
            task.abort();
        }
    }

    /// Stops keeping the lease alive and forgets it: the next use grants a new one.
    pub fn forget(&self) {
        if let Some((_, task)) = self.current().take() {
            task.abort();
        }
    }
}

impl Drop for SessionLease {
    fn drop(&mut self) {
        self.stop();
    }
}
