//! One purchase under each strategy, as the application code people deploy does it,
//! with every statement's effect recorded as a resource operation on the `stock` key
//! (`read`, `write`, `decrement`, `cas`) when a history is kept.

use locklab_models::registry::ScenarioId;
use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_traces::format::{OpKind, Phase, Process};
use serde_json::{json, Value};

use super::store::{Store, StoreError};
use super::Backend;
use crate::log::Log;

/// How a buyer takes a unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// `SELECT n`, check `n > 0`, `UPDATE … SET n = <read - 1>`.
    NoLock,
    /// The same inside a mutex of the buyer's own app instance (two instances).
    LocalMutex,
    /// `UPDATE … SET n = n - k WHERE id = ? AND n >= k`.
    OneSql,
    /// Read `n, version`; `UPDATE … SET n = ?, version = version + 1 WHERE version = ?`;
    /// retry when no row matched.
    Optimistic,
    /// The same with a coarse (1 s) `updated_at` timestamp as the version.
    TimestampCas,
    /// Read-check-write under a lock: `SELECT … FOR UPDATE` and the `UPDATE` in one
    /// transaction on SQL, locklab's Redis lock around `GET`/`SET` on Redis (for the
    /// benchmark only: the catalog has no inventory row for it).
    ForUpdate,
}

impl Strategy {
    /// Every strategy, in the benchmark's order.
    pub const ALL: [Strategy; 6] = [
        Strategy::NoLock,
        Strategy::LocalMutex,
        Strategy::OneSql,
        Strategy::ForUpdate,
        Strategy::Optimistic,
        Strategy::TimestampCas,
    ];

    /// Its catalog row of one unit per buyer (`None`: no catalog row).
    pub fn id(self) -> Option<ScenarioId> {
        match self {
            Strategy::NoLock => Some(ScenarioId::InventoryNoLock),
            Strategy::LocalMutex => Some(ScenarioId::InventoryLocalMutex),
            Strategy::OneSql => Some(ScenarioId::InventoryOneSql),
            Strategy::Optimistic => Some(ScenarioId::InventoryOptimistic),
            Strategy::TimestampCas => Some(ScenarioId::InventoryTimestampCas),
            Strategy::ForUpdate => None,
        }
    }

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::NoLock => "no lock",
            Strategy::LocalMutex => "local mutex (2 instances)",
            Strategy::OneSql => "one conditional UPDATE",
            Strategy::Optimistic => "optimistic version",
            Strategy::TimestampCas => "timestamp CAS (1 s)",
            Strategy::ForUpdate => "SELECT … FOR UPDATE",
        }
    }

    /// The name on `backend`, whose commands differ where SQL and Redis differ.
    pub fn name_on(self, backend: Backend) -> &'static str {
        match (self, backend) {
            (Strategy::NoLock, Backend::Redis) => "no lock (GET, check, SET)",
            (Strategy::OneSql, Backend::Redis) => "one Lua check-and-DECR",
            (Strategy::Optimistic, Backend::Redis) => "WATCH + MULTI/EXEC",
            (Strategy::ForUpdate, Backend::Redis) => "Redis lock (SET NX PX)",
            _ => self.name(),
        }
    }

    /// Whether the strategy has a form on `backend`: a timestamp version has none on
    /// Redis, whose `WATCH` compares the key itself, not a version the client chose.
    pub fn runs_on(self, backend: Backend) -> bool {
        !(self == Strategy::TimestampCas && backend == Backend::Redis)
    }

    /// Whether a read records the version (the CAS strategies compare it).
    fn reads_version(self) -> bool {
        matches!(self, Strategy::Optimistic | Strategy::TimestampCas)
    }
}

/// How a purchase ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Purchase {
    /// A unit was sold.
    Bought,
    /// The buyer saw no stock (or the conditional statement matched no row).
    Refused,
    /// A statement failed: the purchase's outcome is unknown.
    Error(String),
}

/// The coarse clock of the timestamp version: whole ticks since `origin` (the run's
/// first tick stands for the `updated_at` the row was made with, version 0).
#[derive(Clone, Copy, Debug)]
pub struct Ticks {
    /// When tick 0 began.
    pub origin: Instant,
    /// The timestamp's resolution.
    pub tick: Duration,
}

impl Ticks {
    fn now(&self) -> i64 {
        let t = self.origin.elapsed().as_nanos() / self.tick.as_nanos().max(1);
        i64::try_from(t).unwrap_or(i64::MAX)
    }
}

/// One buyer: its connection, its app instance's mutex, and where it records.
pub struct Buyer {
    /// Its process number in the history.
    pub id: u32,
    /// Its connection.
    pub store: Store,
    /// Its instance's in-process mutex (`LocalMutex`).
    pub mutex: Arc<tokio::sync::Mutex<()>>,
    /// The timestamp clock (`TimestampCas`).
    pub ticks: Ticks,
    /// The application's work between its read and its write.
    pub work: Duration,
    /// The wait after a lost compare-and-set before reading again.
    pub retry_pause: Duration,
    /// The history, when one is kept.
    pub log: Option<Arc<Log>>,
}

/// The resource key every operation names.
pub const KEY: &str = "stock";

impl Buyer {
    fn invoke(&self, op: OpKind, value: Option<Value>) {
        if let Some(log) = &self.log {
            let mut e = Log::event(Process::Client(self.id), op, Phase::Invoke);
            e.key = Some(KEY.into());
            e.value = value.map(Into::into);
            log.record(e);
        }
    }

    fn complete(&self, op: OpKind, phase: Phase, value: Option<Value>, note: Option<String>) {
        if let Some(log) = &self.log {
            let mut e = Log::event(Process::Client(self.id), op, phase);
            e.key = Some(KEY.into());
            e.value = value.map(Into::into);
            e.note = note;
            log.record(e);
        }
    }

    /// Completes a decrement the store decided in one statement or transaction: a
    /// unit sold, none left, or no knowing.
    fn decided(&self, sold: Result<bool, StoreError>) -> Purchase {
        match sold {
            Ok(true) => {
                self.complete(OpKind::Decrement, Phase::Ok, None, None);
                Purchase::Bought
            }
            Ok(false) => {
                self.complete(OpKind::Decrement, Phase::Fail, None, None);
                Purchase::Refused
            }
            Err(e) => self.failed(OpKind::Decrement, &e),
        }
    }

    fn failed(&self, op: OpKind, e: &StoreError) -> Purchase {
        self.complete(op, Phase::Info, None, Some(e.to_string()));
        Purchase::Error(e.to_string())
    }

    /// The application's work between its read and its write. None at all in the
    /// benchmark: tokio's timer rounds even a zero sleep up to its next 1 ms tick, which
    /// would cap every read-check-write at one round per millisecond.
    async fn think(&self) {
        if !self.work.is_zero() {
            tokio::time::sleep(self.work).await;
        }
    }

    /// Reads the row, recording the stock (and the version when `with_version`).
    pub async fn read(&mut self, with_version: bool) -> Result<(i64, i64), Purchase> {
        self.invoke(OpKind::Read, None);
        match self.store.read().await {
            Ok((n, v)) => {
                let value = if with_version {
                    json!({"stock": n, "version": v})
                } else {
                    json!(n)
                };
                self.complete(OpKind::Read, Phase::Ok, Some(value), None);
                Ok((n, v))
            }
            Err(e) => Err(self.failed(OpKind::Read, &e)),
        }
    }

    /// One purchase of `units` units (the bench's locked read-check-write buys one).
    pub async fn buy(&mut self, strategy: Strategy, units: i64) -> Purchase {
        match strategy {
            Strategy::NoLock => self.read_check_write(units).await,
            Strategy::LocalMutex => {
                let mutex = Arc::clone(&self.mutex);
                let _held = mutex.lock().await;
                self.read_check_write(units).await
            }
            Strategy::OneSql => {
                self.invoke(OpKind::Decrement, Some(json!(units)));
                let sold = self.store.decrement(units).await;
                self.decided(sold)
            }
            Strategy::ForUpdate => {
                // One locked read-check-write: recorded as the decrement it amounts to.
                self.invoke(OpKind::Decrement, Some(json!(1)));
                let sold = self.store.buy_locked().await;
                self.decided(sold)
            }
            Strategy::Optimistic | Strategy::TimestampCas => self.cas_loop(strategy, units).await,
        }
    }

    async fn read_check_write(&mut self, units: i64) -> Purchase {
        let n = match self.read(false).await {
            Ok((n, _)) => n,
            Err(p) => return p,
        };
        if n < units {
            return Purchase::Refused;
        }
        self.think().await;
        self.invoke(OpKind::Write, Some(json!(n - units)));
        match self.store.write(n - units).await {
            Ok(()) => {
                self.complete(OpKind::Write, Phase::Ok, None, None);
                Purchase::Bought
            }
            Err(e) => self.failed(OpKind::Write, &e),
        }
    }

    async fn cas_loop(&mut self, strategy: Strategy, units: i64) -> Purchase {
        loop {
            let (n, v) = match self.read(strategy.reads_version()).await {
                Ok(r) => r,
                Err(p) => return p,
            };
            if n < units {
                return Purchase::Refused;
            }
            self.think().await;
            let (new_version, recorded) = match strategy {
                Strategy::TimestampCas => {
                    let t = self.ticks.now();
                    (t, Some(t))
                }
                _ => (v + 1, None),
            };
            let mut arg = json!({"expect_version": v, "stock": n - units});
            if let Some(t) = recorded {
                arg["new_version"] = json!(t);
            }
            self.invoke(OpKind::Cas, Some(arg));
            match self.store.cas(v, n - units, new_version).await {
                Ok(true) => {
                    self.complete(OpKind::Cas, Phase::Ok, None, None);
                    return Purchase::Bought;
                }
                // Someone wrote since the read: read again.
                Ok(false) => {
                    self.complete(OpKind::Cas, Phase::Fail, None, None);
                    if !self.retry_pause.is_zero() {
                        tokio::time::sleep(self.retry_pause).await;
                    }
                }
                Err(e) => return self.failed(OpKind::Cas, &e),
            }
        }
    }
}
