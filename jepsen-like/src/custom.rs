//! Your own lock in the harness: a [`CustomLock`] replaces the scenario's lock, so a
//! team's `DistributedLock` runs under the same servers, faults and checks — and a
//! change to it that loses mutual exclusion shows up as a disagreement with the model
//! (or as a violated property) in its CI: the run keeps less than the model says the
//! protocol keeps.
//!
//! ```no_run
//! use locklab_implementations::redis::LuaLock;
//! use locklab_jepsen::agreement::Answer;
//! use locklab_jepsen::{run, CustomLock, RunOptions};
//!
//! let mine = CustomLock::redis("my-lua-lock", |nodes, key| {
//!     Ok(Box::new(LuaLock::new(&nodes[0], key)))
//! });
//! let options = RunOptions { lock: Some(mine), ..RunOptions::new("redis-lua-pause") };
//! let report = run(&options, &mut |_| {}).expect("ran");
//! // Every property the model says the protocol keeps, the lock kept.
//! assert_eq!(report.agreement.at_least_as_safe, Answer::Yes);
//! ```

use locklab_models::registry::Backend;
use std::sync::Arc;

use locklab_implementations::etcd::EtcdSession;
use locklab_implementations::redis::RedisNode;
use locklab_implementations::sql::Session;
use locklab_implementations::{DistributedLock, LockError};

// The file itself, not `external`'s re-export: `external` builds on this module.
use crate::external::endpoints::ExternalEndpoints;
use crate::proxy::ClientProxies;

/// One client's connections to the run's lock servers, of whatever family the scenario
/// runs: one variant per family.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Endpoints {
    /// One connected node per lock server, in topology order (`redis`; the master,
    /// followed through Sentinel; `n0` … `n4`).
    Redis(Vec<RedisNode>),
    /// The client's own session on the SQL server (`mysql-*`, `pg-*`, `sql-*`).
    Sql(Arc<Session>),
    /// The client's connection to the etcd cluster, every member behind it, through
    /// proxies of its own (`etcd-*`).
    Etcd(EtcdEndpoints),
    /// The client's ZooKeeper session, through proxies of its own (`zk-*`).
    Zk(ZkEndpoints),
}

/// A ZooKeeper client's session and the proxies it reaches every server through. The
/// proxies are the client's own, so a pause can silence exactly this client: its pings
/// stop reaching the ensemble, as a stopped process's do, and the server expires its
/// session on its own clock. Dropping the last clone (the client died) cuts them for
/// good.
#[derive(Clone)]
pub struct ZkEndpoints {
    /// This client's proxies, one per server (first: dropped first, so a client that
    /// dies is cut off before anything of its session could close it).
    pub proxies: ClientProxies,
    /// The session, every request of it recorded in the run's history.
    pub session: locklab_implementations::zk::ZkSession,
}

/// An etcd client's session and the proxies it reaches every member through (its own,
/// as a ZooKeeper client's: a partition or a lost reply hits exactly this client).
#[derive(Clone, Debug)]
pub struct EtcdEndpoints {
    /// The session.
    pub session: Arc<EtcdSession>,
    /// This client's proxies, one per member.
    pub proxies: ClientProxies,
}

impl std::fmt::Debug for ZkEndpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkEndpoints")
            .field("session", &self.session)
            .field("proxies", &self.proxies.len())
            .finish()
    }
}

impl Endpoints {
    /// Stops this client's background traffic for `d`, as a stop-the-world pause of its
    /// process would: the etcd session's lease keep-alives wait it out; the ZooKeeper
    /// client's own proxies are cut for `d`, so its pings do not arrive. The Redis and
    /// SQL clients send nothing in the background, so they have nothing to stop.
    pub fn stall(&self, d: std::time::Duration) {
        match self {
            Endpoints::Etcd(etcd) => etcd.session.stall(d),
            Endpoints::Zk(zk) => zk.proxies.cut_for(d),
            Endpoints::Redis(_) | Endpoints::Sql(_) => {}
        }
    }

    /// The client's own proxies, for the families whose clients have them.
    fn own_proxies(&self) -> Result<&ClientProxies, String> {
        match self {
            Endpoints::Etcd(etcd) => Ok(&etcd.proxies),
            Endpoints::Zk(zk) => Ok(&zk.proxies),
            Endpoints::Redis(_) | Endpoints::Sql(_) => {
                Err("this family's clients share the run's proxies".into())
            }
        }
    }

    /// Cuts this client (only) off every lock server for `d`, while it runs on.
    pub fn cut_off(&self, d: std::time::Duration) -> Result<(), String> {
        self.own_proxies().map(|p| p.cut_for(d))
    }

    /// Loses the reply to this client's next request to the lock servers (see
    /// [`crate::proxy::lose_next_reply`]).
    pub fn lose_next_reply(&self) -> Result<(), String> {
        self.own_proxies().map(ClientProxies::lose_next_reply)
    }
}

/// What the harness knows of one client when it builds that client's lock.
pub struct ClientContext<'a> {
    /// The client's number (`c0` is 0).
    pub index: u32,
    /// The client's connections to the lock servers.
    pub endpoints: &'a Endpoints,
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

/// Builds one client's lock from the run's lock [`Endpoints`] and the lock name.
/// Called once per client: give each client its own owner identity, as separate
/// processes would have.
#[derive(Clone)]
pub struct CustomLock {
    name: String,
    build: Arc<Build>,
    heard: bool,
}

impl CustomLock {
    /// A lock called `name` in reports, built by `build`.
    pub fn new(
        name: &str,
        build: impl Fn(&Endpoints, &str) -> Result<Box<dyn DistributedLock>, LockError>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        CustomLock::with_context(name, move |c| build(c.endpoints, c.key))
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

    /// A lock for Redis scenarios, built from the run's connected Redis nodes; in a
    /// scenario of another family it refuses to build.
    pub fn redis(
        name: &str,
        build: impl Fn(&[RedisNode], &str) -> Result<Box<dyn DistributedLock>, LockError>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        CustomLock::new(name, move |endpoints, key| match endpoints {
            Endpoints::Redis(nodes) => build(nodes, key),
            #[allow(unreachable_patterns)]
            _ => Err(LockError::Unsupported {
                protocol: "custom Redis lock",
                what: "a scenario of another family",
            }),
        })
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

// Here rather than beside the type: what a client reaches is read off its `Endpoints`,
// and `external` builds on this module, not the other way round.
impl ExternalEndpoints {
    /// What one client's harness connections `endpoints` reach, through the proxies at
    /// `addrs`. ZooKeeper and etcd clients have proxies of their own (so a partition or
    /// a lost reply hits exactly that client): those are the ones named. A family whose
    /// clients need more than addresses (SQL's user and database, Redis's Sentinels) says so in its
    /// `Cluster::external_endpoints`.
    pub fn reached_by(backend: Backend, addrs: &[String], endpoints: &Endpoints) -> Self {
        let mut e = ExternalEndpoints {
            backend,
            ..ExternalEndpoints::default()
        };
        match endpoints {
            Endpoints::Redis(_) => e.redis = addrs.to_vec(),
            Endpoints::Sql(_) => {}
            Endpoints::Etcd(etcd) => e.etcd = etcd.proxies.addrs(),
            Endpoints::Zk(zk) => e.zookeeper = zk.proxies.addrs(),
        }
        e
    }
}
