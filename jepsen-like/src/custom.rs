//! Your own lock in the harness: a [`CustomLock`] replaces the scenario's lock, so a
//! team's `DistributedLock` runs under the same servers, faults and checks — and a
//! change to it that loses mutual exclusion shows up as a disagreement with the model
//! (or as a violated property) in its CI: the run keeps less than the model says the
//! protocol keeps.
//!
//! ```no_run
//! use locklab_implementations::redis::LuaLock;
//! use locklab_jepsen::agreement::Answer;
//! use locklab_jepsen::redis::RedisClient;
//! use locklab_jepsen::{run, CustomLock, RunOptions};
//!
//! let mine = CustomLock::of("my-lua-lock", |client: &RedisClient, key| {
//!     Ok(Box::new(LuaLock::new(&client.nodes[0], key)))
//! });
//! let options = RunOptions { lock: Some(mine), ..RunOptions::new("redis-lua-pause") };
//! let report = run(&options, &mut |_| {}).expect("ran");
//! // Every property the model says the protocol keeps, the lock kept.
//! assert_eq!(report.agreement.at_least_as_safe, Answer::Yes);
//! ```

use std::any::Any;
use std::sync::Arc;

use locklab_implementations::{DistributedLock, LockError};

// The file itself, not `external`'s re-export: `external` builds on this module.
use crate::external::endpoints::ExternalEndpoints;

/// What the harness knows of one client when it builds that client's lock.
pub struct ClientContext<'a> {
    /// The client's number (`c0` is 0).
    pub index: u32,
    /// The client's connections to the lock servers: its family's
    /// [`crate::family::Client`] (`RedisClient`, `ZkClient`, …).
    pub client: &'a dyn Any,
    /// The lock name.
    pub key: &'a str,
    /// Where a client that is a program of its own connects: the same proxied
    /// addresses the harness's connections go through.
    pub external: &'a ExternalEndpoints,
    /// The scenario's lease (a session-bound lock's session timeout).
    pub lease: std::time::Duration,
    /// The run's history.
    pub log: &'a Arc<crate::log::Log>,
    /// The run's directory, for the client's own logs.
    pub dir: &'a std::path::Path,
}

type Build =
    dyn Fn(&ClientContext<'_>) -> Result<Box<dyn DistributedLock>, LockError> + Send + Sync;

/// Builds one client's lock from the run's connections and the lock name. Called once
/// per client: give each client its own owner identity, as separate processes would
/// have.
#[derive(Clone)]
pub struct CustomLock {
    name: String,
    build: Arc<Build>,
    heard: bool,
}

impl CustomLock {
    /// A lock called `name` in reports, built by `build` from one client's connections
    /// of family client type `C` (`RedisClient`, `SqlClient`, `EtcdClient`,
    /// `ZkClient`); in a scenario of another family it refuses to build.
    pub fn of<C: Any>(
        name: &str,
        build: impl Fn(&C, &str) -> Result<Box<dyn DistributedLock>, LockError> + Send + Sync + 'static,
    ) -> Self {
        CustomLock::with_context(name, move |c| match c.client.downcast_ref::<C>() {
            Some(client) => build(client, c.key),
            None => Err(LockError::Unsupported {
                protocol: "custom lock",
                what: "a scenario of another family than the one it was written for",
            }),
        })
    }

    /// A lock called `name` in reports, built from everything the harness knows of
    /// the client (an external client's process needs its number, the addresses and
    /// the history, not just connections).
    pub fn with_context(
        name: &str,
        build: impl Fn(&ClientContext<'_>) -> Result<Box<dyn DistributedLock>, LockError>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        CustomLock {
            name: name.to_string(),
            build: Arc::new(build),
            heard: false,
        }
    }

    /// A lock that reaches the servers through the external addresses
    /// ([`ClientContext::external`]), which then hear its traffic
    /// ([`crate::external::wiretap`]): its commands go into the history as its own
    /// `command` events.
    pub fn heard(mut self) -> Self {
        self.heard = true;
        self
    }

    /// Whether its traffic through the external addresses is heard.
    pub fn is_heard(&self) -> bool {
        self.heard
    }

    /// Its name in reports.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// One client's lock.
    pub fn build(&self, client: &ClientContext<'_>) -> Result<Box<dyn DistributedLock>, LockError> {
        (self.build)(client)
    }
}

impl std::fmt::Debug for CustomLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomLock")
            .field("name", &self.name)
            .finish()
    }
}
