//! The figures write-up 000 measured for each strategy, which the arrivals workload's
//! rows carry beside their own.

use super::buyers::Strategy;
use super::Backend;

/// The figure write-up 000 gives for `strategy` (purchases/s, its stock of 5000 and 5000
/// requests within a second, a Java service in front of MySQL or Redis), when it gives
/// one. MySQL's figures stand beside MariaDB's; PostgreSQL has none.
///
/// * no lock: 2000+ with the stock in MySQL (its 5400+ is the stock in the JVM, no
///   database at all), 3200+ warmed up on Redis;
/// * the per-instance mutex: 610+ with two instances behind nginx;
/// * one conditional `UPDATE`: 1950+; `FOR UPDATE`: 600+; the version CAS: 230+;
/// * Redis: `WATCH`/`MULTI` 370+; the `SET NX` lock with a Lua release 620 warmed up
///   (550–600 before; Redisson's 870 is another lock).
pub fn seeds(strategy: Strategy, backend: Backend) -> Option<f64> {
    let figure = match (backend, strategy) {
        (Backend::MariaDb, Strategy::NoLock) => 2000.0,
        (Backend::MariaDb, Strategy::LocalMutex) => 610.0,
        (Backend::MariaDb, Strategy::OneSql) => 1950.0,
        (Backend::MariaDb, Strategy::ForUpdate) => 600.0,
        (Backend::MariaDb, Strategy::Optimistic) => 230.0,
        (Backend::Redis, Strategy::NoLock) => 3200.0,
        (Backend::Redis, Strategy::ForUpdate) => 620.0,
        (Backend::Redis, Strategy::Optimistic) => 370.0,
        _ => return None,
    };
    Some(figure)
}
