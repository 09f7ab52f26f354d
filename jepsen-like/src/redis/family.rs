//! The Redis family's one face to the harness: its servers ([`RedisCluster`]), a
//! client's connected nodes ([`RedisClient`]), the scenario's lock, its plans.

use std::time::Duration;

use locklab_implementations::{DistributedLock, Lease};
use locklab_models::registry::Backend;

use super::actions::RedisAction;
use super::client::RedisClient;
use super::cluster::{RedisCluster, Shape, MASTER_NAME};
use super::locks::{self, RedisLock};
use crate::external::ExternalEndpoints;
use crate::family::ActionOf;
use crate::family::{CommandLog, Family};
use crate::schedule::{Action, Realises, Target};
use crate::RunError;
use locklab_models::registry::Fault;

/// How long after a random split brain's cut it heals (ms): past Sentinel's 1 s to
/// call the master down and its election, so that a replica has been promoted.
const SPLIT_HEALS_MS: u64 = 8_000;

/// Redis and Redlock on real servers.
#[derive(Clone, Copy, Debug)]
pub struct Redis;

impl Family for Redis {
    type Servers = RedisCluster;
    type Lock = RedisLock;
    type Client = RedisClient;

    const BACKEND: Backend = Backend::Redis;

    /// Killing the primary is Sentinel's failover; a node that dies and restarts
    /// (empty, or on its data where the row's nodes persist) is Redlock's restart; a clock set ahead is its jump; cutting a Redlock node
    /// off from every client only steers which nodes the first holder gets.
    fn realises(action: &Action<ActionOf<Self>>) -> Realises {
        match action {
            Action::Kill(_) | Action::Stop(_) if is_primary(action) => {
                Realises::Fault(Fault::Failover)
            }
            Action::Kill(_) => Realises::Fault(Fault::Restart),
            // The start after a kill ends the crash, as a resume ends a pause: one
            // restart of the model's budget per kill.
            Action::Restart { .. } => Realises::Heal,
            Action::Clock { .. } => Realises::Fault(Fault::Jump),
            Action::Partition(_) => Realises::Steer,
            Action::Split { .. } => Realises::Fault(Fault::Partition),
            Action::HealPartition(_) | Action::Resume(_) | Action::HealSplit => Realises::Heal,
            Action::Client { fault, .. } => Realises::Fault(*fault),
            Action::Family(a) => crate::schedule::FamilyAction::realises(a),
            _ => Realises::Beyond,
        }
    }

    fn lock_realises(lock: &RedisLock) -> Vec<Fault> {
        lock.realises()
    }

    /// A Redlock node's clock set further ahead each time (by one and a half leases,
    /// whole seconds), or the node killed (and restarted: [`Self::random_follow_up`]);
    /// behind Sentinel, a failover per replica.
    fn random_server_fault(
        shape: &Shape,
        _lock: &RedisLock,
        ttl: Duration,
        kind: Fault,
        nth: u32,
        pick: u64,
    ) -> Option<Action<ActionOf<Self>>> {
        match (*shape, kind) {
            // A node killed; `random_follow_up` starts it again a lease and a half
            // later.
            (Shape::Redlock { nodes, .. }, Fault::Restart) => Some(Action::Kill(Target::Node(
                usize::try_from(pick % nodes.max(1) as u64).ok()?,
            ))),
            (Shape::Redlock { nodes, .. }, Fault::Jump) => {
                let target = Target::Node(usize::try_from(pick % nodes.max(1) as u64).ok()?);
                Some(Action::Clock {
                    target,
                    offset: format!("+{}", u64::from(nth + 1) * crate::random::jump_seconds(ttl)),
                })
            }
            // The master killed, as the failover rows' plans do; Sentinel promotes a
            // replica. Each failover takes one: a split brain's shape fails over by
            // its cut, not by a kill.
            (
                Shape::Sentinel {
                    replicas,
                    replica1_apart,
                    split: None,
                },
                Fault::Failover,
            ) if usize::try_from(nth).is_ok_and(|n| n < replicas - usize::from(replica1_apart)) => {
                // A replica set apart is never promoted.
                Some(Action::Kill(Target::Primary))
            }
            // A split brain's cut, once: it is drawn around the first master and the
            // client pinned to it.
            (Shape::Sentinel { split: Some(_), .. }, Fault::Split) if nth == 0 => {
                Some(Action::Family(RedisAction::Isolate(Target::Primary)))
            }
            _ => None,
        }
    }

    /// A killed Redlock node starts again a lease and a half later — empty, or on its
    /// append-only file where the row keeps one: later than any restart model needs
    /// (a delayed restart waits a lease), so every Redlock row's model allows it.
    fn random_follow_up(
        shape: &Shape,
        action: &Action<ActionOf<Self>>,
        ttl: Duration,
    ) -> Vec<(u64, Action<ActionOf<Self>>)> {
        match (shape, action) {
            (Shape::Redlock { aof, .. }, Action::Kill(target @ Target::Node(_))) => {
                vec![(
                    crate::random::lease_and_a_half_ms(ttl),
                    Action::Restart {
                        target: *target,
                        keep_data: *aof,
                    },
                )]
            }
            // As the split-brain rows' plans: the clients outside the cut lose the
            // master too (the proxy that follows Sentinel reaches the next one once
            // Sentinel names it); the cut heals once Sentinel has had time to promote
            // a replica (it notices a silent master after 1 s).
            (_, Action::Family(RedisAction::Isolate(_))) => vec![
                (0, Action::Partition(Target::Primary)),
                (
                    SPLIT_HEALS_MS,
                    Action::Family(RedisAction::HealIsolation(Target::Primary)),
                ),
            ],
            _ => Vec::new(),
        }
    }

    /// A Redlock client gets proxies of its own (a split cuts some of its nodes and
    /// not others); every other client shares the run's, which add no second hop to
    /// the races a single server's rows time.
    async fn connect(
        servers: &RedisCluster,
        addrs: &[String],
        commands: CommandLog,
    ) -> Result<RedisClient, RunError> {
        locks::connect(addrs, commands, servers.is_redlock()).await
    }

    /// The proxied servers, and the Sentinels themselves (not proxied: no fault cuts
    /// them), so a Sentinel-aware client can follow the failover on its own.
    fn external_endpoints(
        servers: &RedisCluster,
        addrs: &[String],
        _client: &RedisClient,
    ) -> ExternalEndpoints {
        let sentinels = servers.sentinel_addrs();
        ExternalEndpoints {
            backend: Self::BACKEND,
            redis: addrs.to_vec(),
            sentinel_master: (!sentinels.is_empty()).then(|| MASTER_NAME.to_string()),
            sentinels,
            ..ExternalEndpoints::default()
        }
    }

    fn lease(lock: &RedisLock, ttl: Duration) -> Lease {
        lock.lease(ttl)
    }

    fn nested(lock: &RedisLock) -> bool {
        *lock == RedisLock::LuaNested
    }

    fn build_lock(
        lock: &RedisLock,
        index: u32,
        client: &RedisClient,
        key: &str,
    ) -> Result<Box<dyn DistributedLock>, RunError> {
        locks::build(*lock, index, client, key)
    }
}

/// Whether the action's target is the node clients write to (Sentinel's master).
fn is_primary(action: &Action<ActionOf<Redis>>) -> bool {
    action.target() == crate::schedule::Target::Primary
}
