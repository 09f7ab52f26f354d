//! Where an external client connects: the scenario's lock servers as the protocol's
//! `init` message names them, the same proxied 127.0.0.1 addresses the harness's own
//! clients go through (so partitions and failovers reach it the same way).

use locklab_models::registry::Backend;
use serde::Serialize;

/// The lock servers of one client, by kind; only the kinds of the scenario's family are
/// present (`CLIENT-PROTOCOL.md`, "init").
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ExternalEndpoints {
    /// The family's backend (`redis`, `mariadb`, `postgres`, `etcd`, `zookeeper`): the
    /// `init` message's `backend`.
    #[serde(skip)]
    pub backend: Backend,
    /// Redis servers as `host:port`, in the scenario's order: the one server; the
    /// master (a proxy that follows Sentinel's failovers); Redlock's `n0` … `n4`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub redis: Vec<String>,
    /// The Sentinels watching the master, as `host:port` (failover scenarios only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sentinels: Vec<String>,
    /// The master's name at the Sentinels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sentinel_master: Option<String>,
    /// The SQL server as a URL with user, password and database
    /// (`mysql://…`, `postgres://…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dsn: Option<String>,
    /// The etcd members' client endpoints as `host:port` (plain HTTP/2, no TLS).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub etcd: Vec<String>,
    /// The ZooKeeper servers as `host:port` (join them with `,` for a connect string).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub zookeeper: Vec<String>,
}
