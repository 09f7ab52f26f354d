//! The names every crate shares: scenario families and their rows' ids, the servers a
//! history ran on, the faults a checker may inject and the properties it checks. Each is an enum whose user-visible spelling (CLI, JSON,
//! reports) is written once, in its table in `named!` below; parsing and printing both
//! read that table, so the two cannot drift apart.
//!
//! Adding a family: a variant of [`Family`] here (its name, and the faults it
//! understands in [`Family::faults`]); a folder beside `redis/` with its model, narration
//! and catalog rows; and its arm in the catalog's list of families, which does not
//! compile without it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A name that is not one of an enum's spellings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownName {
    /// What kind of name was expected (`family`, `fault`, `property`).
    pub kind: &'static str,
    /// What was given.
    pub given: String,
    /// Every valid spelling.
    pub known: Vec<&'static str>,
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown {} {:?}; known: {}",
            self.kind,
            self.given,
            self.known.join(", ")
        )
    }
}

impl std::error::Error for UnknownName {}

/// Defines a fieldless enum together with its one table of spellings, and derives from
/// that table `ALL`, `name`, `Display`, `FromStr` and serde (as the spelling).
macro_rules! named {
    (@id $text:literal) => { $text };
    (@id $text:literal, $id:literal) => { $id };
    (
        $(#[$meta:meta])*
        pub enum $name:ident as $kind:literal {
            $( $(#[$vmeta:meta])* $variant:ident => $text:literal $(as $id:literal)?, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The spelling users see and type.
            pub const fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }

            /// The spelling in JSON, configs and flags: the name, or where the name
            /// has spaces, its kebab-case form (`mutual-exclusion`).
            pub const fn id(self) -> &'static str {
                match self {
                    $( $name::$variant => named!(@id $text $(, $id)?), )+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // `pad`, not `write_str`: tables align these with `{:<9}`.
                f.pad(self.name())
            }
        }

        impl FromStr for $name {
            type Err = UnknownName;

            fn from_str(s: &str) -> Result<Self, UnknownName> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.id() == s || v.name() == s)
                    .ok_or_else(|| UnknownName {
                        kind: $kind,
                        given: s.to_string(),
                        known: Self::ALL.iter().map(|v| v.id()).collect(),
                    })
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.id())
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let ids: Vec<&str> = Self::ALL.iter().map(|v| v.id()).collect();
                schemars::json_schema!({ "type": "string", "enum": ids })
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

named! {
    /// A family of scenarios: one kind of lock (or none) and the servers behind it.
    pub enum Family as "family" {
        /// Buyers and a stock level, with or without a lock.
        Inventory => "inventory",
        /// Locks on one Redis node, or a master with replicas behind Sentinel.
        Redis => "redis",
        /// Redlock over independent Redis nodes.
        Redlock => "redlock",
        /// Locks built from a SQL server: MariaDB/MySQL and PostgreSQL.
        Sql => "sql",
        /// Locks built from an etcd cluster: leases, revisions, `Txn`, the `Lock` RPC.
        Etcd => "etcd",
        /// Locks built from a ZooKeeper ensemble: sessions, ephemeral sequential nodes,
        /// watches, `multi`.
        Zk => "zookeeper",
    }
}

named! {
    /// The servers a recorded history ran on, as its header's `backend` names them: the
    /// one spelling every crate compares, so a typo is a compile error, not a silent
    /// mismatch between a writer and a checker.
    pub enum Backend as "backend" {
        /// Redis: one server, a master with replicas behind Sentinel, Redlock's nodes.
        Redis => "redis",
        /// MariaDB (the MySQL dialect).
        Mariadb => "mariadb",
        /// PostgreSQL.
        Postgres => "postgres",
        /// An etcd cluster.
        Etcd => "etcd",
        /// A ZooKeeper ensemble.
        Zookeeper => "zookeeper",
        /// Read from another tool's format (Jepsen or Knossos EDN, Porcupine's logs), or
        /// a history whose header names no backend.
        Imported => "imported",
        /// Written by a simulation (the checkers' tests), not by real servers.
        Simulated => "simulated",
    }
}

impl Default for Backend {
    /// A header that names no backend: nothing is known of its servers.
    fn default() -> Self {
        Backend::Imported
    }
}

impl Backend {
    /// The scenario family whose servers these are (`None`: not servers of a family).
    pub fn family(self) -> Option<Family> {
        match self {
            Backend::Redis => Some(Family::Redis),
            Backend::Mariadb | Backend::Postgres => Some(Family::Sql),
            Backend::Etcd => Some(Family::Etcd),
            Backend::Zookeeper => Some(Family::Zk),
            Backend::Imported | Backend::Simulated => None,
        }
    }
}

named! {
    /// A fault a model checker may inject, with a budget per scenario.
    pub enum Fault as "fault" {
        /// A client process stops (GC, stop-the-world) and later resumes.
        Pause => "pause",
        /// A client process dies for good.
        Crash => "crash",
        /// A client's worker hangs for good (a deadlock, an endless loop, a call that
        /// never returns) while its process, and the heartbeat thread in it (a ZooKeeper
        /// session's pings, an etcd keep-alive, Redisson's watchdog), runs on.
        Hang => "hang",
        /// A new leader takes over: Sentinel promotes a replica to master, or an etcd
        /// leader is killed and another elected.
        Failover => "failover",
        /// A node crashes and restarts without its data.
        Restart => "restart",
        /// A server's clock jumps ahead (a Redlock node's; the SQL server's, which its
        /// `NOW()` reads).
        Jump => "jump",
        /// The server kills the holder's database session (`KILL CONNECTION`,
        /// `pg_terminate_backend`).
        Kill => "kill",
        /// A client's clock jumps ahead by more than the lease.
        Skew => "skew",
        /// A client is cut off from the servers, or the network splits the nodes and
        /// the clients into two sides (Redlock); everyone runs on.
        Partition => "partition",
        /// Sentinel split brain: the master and one client are cut off from the
        /// Sentinels and the replicas; both sides run on, and no process dies.
        Split => "split",
        /// A request takes effect but its reply is lost (an etcd release, a ZooKeeper
        /// create).
        Drop => "drop",
        /// A client's lease is revoked while it waits (as when it expires).
        Revoke => "revoke",
        /// The reaper job that deletes abandoned lock rows dies and is not restarted.
        ReaperDies => "reaper-dies",
        /// A client's transaction rolls back after the lock around its work was
        /// released (the method throws after its synchronized block).
        Rollback => "rollback",
    }
}

named! {
    /// A property of a lock, in one vocabulary for every command: a model checks some
    /// (scenarios list the ones they check and expect broken), a history check judges
    /// others; JSON and configs spell it by [`Property::id`], text by its name.
    pub enum Property as "property" {
        /// Never two clients inside their critical sections at once.
        MutualExclusion => "mutual exclusion" as "mutual-exclusion",
        /// A client never deletes or decrements a lock another client created.
        NoForeignRelease => "no foreign release" as "no-foreign-release",
        /// A waiting client can always still acquire (no lock that nothing can free).
        Liveness => "liveness",
        /// The resource never loses an update or accepts a stale token.
        ResourceSafety => "resource safety" as "resource-safety",
        /// A holder re-acquires without being refused; the lock is freed only at count 0.
        Reentrancy => "reentrancy",
        /// A history's lock operations are a behaviour of the owner-aware, lease-aware,
        /// fenced lock (judged on histories; a model has it by construction).
        LockLinearizability => "lock linearizability" as "lock-linearizability",
        /// A history's resource operations are a behaviour of the resource's
        /// specification (judged on histories).
        ResourceLinearizability => "resource linearizability" as "resource-linearizability",
        /// Accepted writes carry increasing fencing tokens (judged on histories; a model
        /// states it within resource safety).
        Fencing => "fencing",
    }
}

named! {
    /// A catalog row's id, the name users type (`locklab check redis-lua`): one
    /// variant per row, so that a run plan, a lock recipe or an inventory strategy names
    /// its row by a value the compiler checks, and the spelling is written here alone.
    /// `tests/model_matrix.rs` holds the catalog to one row per id.
    pub enum ScenarioId as "scenario" {
        /// `inventory-no-lock`.
        InventoryNoLock => "inventory-no-lock",
        /// `inventory-local-mutex`.
        InventoryLocalMutex => "inventory-local-mutex",
        /// `inventory-one-sql`.
        InventoryOneSql => "inventory-one-sql",
        /// `inventory-optimistic`.
        InventoryOptimistic => "inventory-optimistic",
        /// `inventory-timestamp-cas`.
        InventoryTimestampCas => "inventory-timestamp-cas",
        /// `inventory-phantom-no-lock`.
        InventoryPhantomNoLock => "inventory-phantom-no-lock",
        /// `inventory-phantom-one-sql`.
        InventoryPhantomOneSql => "inventory-phantom-one-sql",
        /// `redis-get-set`.
        RedisGetSet => "redis-get-set",
        /// `redis-setnx-no-ttl`.
        RedisSetnxNoTtl => "redis-setnx-no-ttl",
        /// `redis-setnx-expire`.
        RedisSetnxExpire => "redis-setnx-expire",
        /// `redis-del-unconditional`.
        RedisDelUnconditional => "redis-del-unconditional",
        /// `redis-get-then-del`.
        RedisGetThenDel => "redis-get-then-del",
        /// `redis-timestamp-value`.
        RedisTimestampValue => "redis-timestamp-value",
        /// `redis-lua`.
        RedisLua => "redis-lua",
        /// `redis-lua-reentry`.
        RedisLuaReentry => "redis-lua-reentry",
        /// `redis-lua-pause`.
        RedisLuaPause => "redis-lua-pause",
        /// `redis-lua-fenced`.
        RedisLuaFenced => "redis-lua-fenced",
        /// `redis-reentrant`.
        RedisReentrant => "redis-reentrant",
        /// `redis-reentrant-pause`.
        RedisReentrantPause => "redis-reentrant-pause",
        /// `redis-reentrant-thread-id`.
        RedisReentrantThreadId => "redis-reentrant-thread-id",
        /// `redis-reentrant-hung`.
        RedisReentrantHung => "redis-reentrant-hung",
        /// `redis-failover`.
        RedisFailover => "redis-failover",
        /// `redis-failover-wait`.
        RedisFailoverWait => "redis-failover-wait",
        /// `redis-split-brain`.
        RedisSplitBrain => "redis-split-brain",
        /// `redis-split-brain-min-replicas`.
        RedisSplitBrainMinReplicas => "redis-split-brain-min-replicas",
        /// `redlock`.
        Redlock => "redlock",
        /// `redlock-restart`.
        RedlockRestart => "redlock-restart",
        /// `redlock-delayed-restart`.
        RedlockDelayedRestart => "redlock-delayed-restart",
        /// `redlock-restart-aof`.
        RedlockRestartAof => "redlock-restart-aof",
        /// `redlock-clock-jump`.
        RedlockClockJump => "redlock-clock-jump",
        /// `redlock-pause`.
        RedlockPause => "redlock-pause",
        /// `redlock-split-majorities`.
        RedlockSplitMajorities => "redlock-split-majorities",
        /// `mysql-unique-crash`.
        MysqlUniqueCrash => "mysql-unique-crash",
        /// `mysql-unique-reaper`.
        MysqlUniqueReaper => "mysql-unique-reaper",
        /// `mysql-unique-reaper-fenced`.
        MysqlUniqueReaperFenced => "mysql-unique-reaper-fenced",
        /// `mysql-unique-reaper-dies`.
        MysqlUniqueReaperDies => "mysql-unique-reaper-dies",
        /// `mysql-lease-no-cas`.
        MysqlLeaseNoCas => "mysql-lease-no-cas",
        /// `mysql-lease-clock-skew`.
        MysqlLeaseClockSkew => "mysql-lease-clock-skew",
        /// `mysql-lease-dbtime-pause`.
        MysqlLeaseDbtimePause => "mysql-lease-dbtime-pause",
        /// `mysql-lease-dbtime-jump`.
        MysqlLeaseDbtimeJump => "mysql-lease-dbtime-jump",
        /// `mysql-getlock-hung`.
        MysqlGetlockHung => "mysql-getlock-hung",
        /// `mysql-getlock-conn-kill`.
        MysqlGetlockConnKill => "mysql-getlock-conn-kill",
        /// `sql-for-update`.
        SqlForUpdate => "sql-for-update",
        /// `sql-for-update-outside-tx`.
        SqlForUpdateOutsideTx => "sql-for-update-outside-tx",
        /// `sql-for-update-plain-select`.
        SqlForUpdatePlainSelect => "sql-for-update-plain-select",
        /// `sql-mutex-in-tx`.
        SqlMutexInTx => "sql-mutex-in-tx",
        /// `sql-mutex-in-tx-read-uncommitted`.
        SqlMutexInTxReadUncommitted => "sql-mutex-in-tx-read-uncommitted",
        /// `pg-advisory`.
        PgAdvisory => "pg-advisory",
        /// `pg-advisory-fenced`.
        PgAdvisoryFenced => "pg-advisory-fenced",
        /// `pg-advisory-xact`.
        PgAdvisoryXact => "pg-advisory-xact",
        /// `pg-advisory-pool`.
        PgAdvisoryPool => "pg-advisory-pool",
        /// `etcd-lease-crash`.
        EtcdLeaseCrash => "etcd-lease-crash",
        /// `etcd-lease-pause`.
        EtcdLeasePause => "etcd-lease-pause",
        /// `etcd-lease-fenced`.
        EtcdLeaseFenced => "etcd-lease-fenced",
        /// `etcd-txn-guarded`.
        EtcdTxnGuarded => "etcd-txn-guarded",
        /// `etcd-lease-partition`.
        EtcdLeasePartition => "etcd-lease-partition",
        /// `etcd-lock-expired-waiter`.
        EtcdLockExpiredWaiter => "etcd-lock-expired-waiter",
        /// `etcd-unlock-retry`.
        EtcdUnlockRetry => "etcd-unlock-retry",
        /// `etcd-unlock-retry-guarded`.
        EtcdUnlockRetryGuarded => "etcd-unlock-retry-guarded",
        /// `etcd-leader-churn`.
        EtcdLeaderChurn => "etcd-leader-churn",
        /// `etcd-leader-isolated`.
        EtcdLeaderIsolated => "etcd-leader-isolated",
        /// `etcd-hung-worker`.
        EtcdHungWorker => "etcd-hung-worker",
        /// `zk-sequential`.
        ZkSequential => "zk-sequential",
        /// `zk-sequential-pause`.
        ZkSequentialPause => "zk-sequential-pause",
        /// `zk-sequential-fenced`.
        ZkSequentialFenced => "zk-sequential-fenced",
        /// `zk-check-write`.
        ZkCheckWrite => "zk-check-write",
        /// `zk-until-lost`.
        ZkUntilLost => "zk-until-lost",
        /// `zk-create-conn-loss`.
        ZkCreateConnLoss => "zk-create-conn-loss",
        /// `zk-herd`.
        ZkHerd => "zk-herd",
        /// `zk-plain-znode`.
        ZkPlainZnode => "zk-plain-znode",
        /// `zk-leader-isolated`.
        ZkLeaderIsolated => "zk-leader-isolated",
        /// `zk-hung-worker`.
        ZkHungWorker => "zk-hung-worker",
        /// `zk-clock-jump`.
        ZkClockJump => "zk-clock-jump",
    }
}

impl Family {
    /// The family's title in the book (`docs/families/`).
    pub fn title(self) -> &'static str {
        match self {
            Family::Inventory => "Inventory: a stock counter with and without a lock",
            Family::Redis => "Redis: one node, and a master with replicas behind Sentinel",
            Family::Redlock => "Redlock: a majority of independent Redis nodes",
            Family::Sql => "SQL: MariaDB/MySQL and PostgreSQL locks",
            Family::Etcd => "etcd: leases, revisions and the Lock RPC",
            Family::Zk => "ZooKeeper: sessions and ephemeral sequential nodes",
        }
    }

    /// What the family's rows teach, in one paragraph (the book's family page opens
    /// with it).
    pub fn about(self) -> &'static str {
        match self {
            Family::Inventory => "What a lock is for: buyers take units from a stock level. Without a lock, updates are lost and units oversold; one conditional statement, an optimistic version check or a compare-and-set keeps the count right without any lock at all.",
            Family::Redis => "The recipes people deploy on Redis, step by step from `GET`/`SET` to `SET NX PX` with a compare-and-delete script, Redisson's reentrant hash, fencing tokens and `WAIT`: each fixes the last one's break and meets a new one — a crash without a TTL, a pause past the lease, a delete of someone else's lock, the failover that promotes a replica which never saw the lock, and — with nothing crashed — the split brain in which two masters grant it.",
            Family::Redlock => "Redlock asks a majority of independent Redis nodes for the same lock, counting its own clock against the lease. A node that restarts empty hands out a second majority; the delayed restart that is supposed to fix it, a node's clock that jumps, a holder's pause and a network split are decided here.",
            Family::Sql => "Locks built from a database: a unique key with a reaper, a lease row taken over by a compare-and-set, `GET_LOCK` and advisory locks owned by a session, and `SELECT … FOR UPDATE`. The database keeps the lock consistent; a killed session, a paused holder past its lease, or a pool that shares sessions breaks what the client believes.",
            Family::Etcd => "etcd's leases keep a key alive while the holder's keep-alives arrive; its revisions order the waiters. The single-key lock, the revision recipe of `concurrency.Mutex`, and the `Lock` RPC meet pauses, partitions, lost replies and revoked leases.",
            Family::Zk => "ZooKeeper's ephemeral node lives as long as its session; sequential nodes queue the waiters, each watching the one before it. A paused or cut-off holder whose session expires, a create whose reply is lost, and the herd of a watch on every child are decided here.",
        }
    }

    /// Whether the family's scenarios take a lock (the inventory's buyers may not):
    /// a run of one in which no client entered a critical section tested nothing.
    pub fn takes_a_lock(self) -> bool {
        self != Family::Inventory
    }

    /// Whether its locks may refuse while nobody holds the lock: a Redlock contender
    /// that took a minority of the nodes sees the others' keys as "busy" on the rest,
    /// though none of them reached a majority either (a split vote).
    pub fn refuses_spuriously(self) -> bool {
        self == Family::Redlock
    }

    /// The faults this family's models understand (what `--faults` may name).
    pub fn faults(self) -> &'static [Fault] {
        match self {
            Family::Inventory => &[],
            Family::Redis => &[
                Fault::Pause,
                Fault::Crash,
                Fault::Hang,
                Fault::Failover,
                Fault::Split,
            ],
            Family::Redlock => &[Fault::Pause, Fault::Restart, Fault::Jump, Fault::Partition],
            Family::Sql => &[
                Fault::Pause,
                Fault::Crash,
                Fault::Hang,
                Fault::Kill,
                Fault::Skew,
                Fault::Jump,
                Fault::ReaperDies,
                Fault::Rollback,
            ],
            Family::Etcd => &[
                Fault::Pause,
                Fault::Crash,
                Fault::Hang,
                Fault::Partition,
                Fault::Drop,
                Fault::Failover,
                Fault::Revoke,
            ],
            Family::Zk => &[
                Fault::Pause,
                Fault::Crash,
                Fault::Hang,
                Fault::Partition,
                Fault::Drop,
                Fault::Failover,
                Fault::Jump,
            ],
        }
    }
}

/// A judgment's answer in every command's JSON (`ok`, `unknown`, `violation`): a
/// history check's, a model's, a gate requirement's. Ordered so that the worst of
/// several (violation, then unknown, then ok) is their maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The property holds.
    Ok,
    /// No answer within the time or bound given.
    Unknown,
    /// The property is violated, with proof.
    Violation,
}

impl Verdict {
    /// Its exit code: 0 ok, 1 violation, 3 unknown.
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Ok => 0,
            Verdict::Violation => 1,
            Verdict::Unknown => 3,
        }
    }

    /// The verdict in capitals, as the text reports and the pages show it.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Ok => "OK",
            Verdict::Violation => "VIOLATION",
            Verdict::Unknown => "UNKNOWN",
        }
    }
}

impl Property {
    /// The stateright invariant for this property: stateright names properties by
    /// string, and this is the one place such a name is made.
    pub fn always<M: stateright::Model>(
        self,
        condition: fn(&M, &M::State) -> bool,
    ) -> stateright::Property<M> {
        stateright::Property::always(self.name(), condition)
    }

    /// The registry property a stateright property was made from by [`Property::always`].
    pub fn of<M: stateright::Model>(p: &stateright::Property<M>) -> Option<Property> {
        p.name.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips() {
        for f in Family::ALL {
            assert_eq!(f.name().parse::<Family>(), Ok(*f));
            assert_eq!(f.to_string(), f.name());
        }
        for f in Fault::ALL {
            assert_eq!(f.name().parse::<Fault>(), Ok(*f));
        }
        for p in Property::ALL {
            assert_eq!(p.name().parse::<Property>(), Ok(*p));
            assert_eq!(p.id().parse::<Property>(), Ok(*p));
            assert!(!p.id().contains(' '), "{p}: an id has no spaces");
        }
        for b in Backend::ALL {
            assert_eq!(b.name().parse::<Backend>(), Ok(*b));
        }
    }

    #[test]
    fn spellings_are_todays() {
        assert_eq!(Property::MutualExclusion.to_string(), "mutual exclusion");
        assert_eq!(Property::NoForeignRelease.to_string(), "no foreign release");
        assert_eq!(Property::ResourceSafety.to_string(), "resource safety");
        assert_eq!(Fault::Failover.to_string(), "failover");
        assert_eq!(Family::Redlock.to_string(), "redlock");
    }

    #[test]
    fn unknown_names_are_clear_errors() {
        let e = "meteor".parse::<Fault>().unwrap_err();
        assert_eq!(e.kind, "fault");
        assert!(e.to_string().contains("\"meteor\""), "{e}");
        assert!(e.to_string().contains("pause"), "{e}");
        let e = "mutex".parse::<Property>().unwrap_err();
        assert!(e.to_string().starts_with("unknown property"), "{e}");
        assert!(e.to_string().contains("mutual-exclusion"), "{e}");
        let e = "zk".parse::<Family>().unwrap_err();
        assert!(
            e.to_string()
                .contains("redis, redlock, sql, etcd, zookeeper"),
            "{e}"
        );
        // Spellings are exact: no case folding, no trimming.
        assert!("Pause".parse::<Fault>().is_err());
        assert!(" pause".parse::<Fault>().is_err());
    }

    #[test]
    fn families_understand_their_faults_only() {
        assert!(Family::Redis.faults().contains(&Fault::Failover));
        assert!(!Family::Redis.faults().contains(&Fault::Jump));
        assert!(Family::Redlock.faults().contains(&Fault::Restart));
        assert!(Family::Inventory.faults().is_empty());
    }
}
