//! `locklab run inventory-*` on real MariaDB, PostgreSQL and Redis servers started by
//! the harness: N buyers against N − 1 units, each strategy as the SQL people deploy, the
//! oversold units counted from the history and the verdict held against the model row.
#![cfg(feature = "backends")]

use std::time::Duration;

use locklab_jepsen::sql::inventory::{
    bench, plot, table, Backend, BenchOptions, Strategy, Workload,
};
use locklab_jepsen::{run, RunOptions, RunReport};
use locklab_traces::check::{Property, Verdict};

use crate::common::run_check;
use crate::common::runs;
use run_check::check;

fn agrees(id: &str, backend: &str) -> RunReport {
    let options = RunOptions {
        backend: Some(backend.to_string()),
        ..RunOptions::new(id)
    };
    let _share = runs::beside();
    let r = run(&options, &mut |_| {}).unwrap_or_else(|e| panic!("{id} on {backend}: {e}"));
    assert!(
        r.agreement.agrees() && r.agreement.verdict != Verdict::Unknown,
        "{id} on {backend}: run disagrees with the model or is unknown: {:#?}",
        r.agreement
    );
    assert!(r.topology.starts_with(backend), "{}", r.topology);
    r
}

/// The oversold units the resource-safety check counted.
fn oversold(r: &RunReport) -> i64 {
    r.report
        .checks
        .iter()
        .find(|c| c.property == Property::ResourceSafety)
        .and_then(|c| c.stats.get("oversold"))
        .and_then(serde_json::Value::as_i64)
        .unwrap_or_else(|| panic!("{}: no oversold count", r.id))
}

#[test]
fn read_check_write_oversells_with_no_lock_and_with_a_mutex_per_instance() {
    runs::side_by_side(
        &[
            ("inventory-no-lock", "mariadb"),
            ("inventory-no-lock", "postgres"),
            ("inventory-no-lock", "redis"),
            ("inventory-local-mutex", "mariadb"),
            ("inventory-local-mutex", "redis"),
        ],
        |&(id, backend)| {
            let r = agrees(id, backend);
            assert_eq!(
                check(&r, Property::ResourceSafety),
                Verdict::Violation,
                "{id}"
            );
            // The database itself stays linearizable: the application lost the update.
            assert_eq!(
                check(&r, Property::ResourceLinearizability),
                Verdict::Ok,
                "{id}"
            );
            assert!(oversold(&r) >= 1, "{id} on {backend}");
        },
    );
}

#[test]
fn a_timestamp_version_written_twice_in_one_tick_lets_a_stale_cas_through() {
    let r = agrees("inventory-timestamp-cas", "postgres");
    assert_eq!(check(&r, Property::ResourceSafety), Verdict::Violation);
    assert!(oversold(&r) >= 1);
}

#[test]
fn one_conditional_update_and_a_version_cas_never_oversell() {
    runs::side_by_side(
        &[
            ("inventory-one-sql", "mariadb"),
            ("inventory-one-sql", "postgres"),
            ("inventory-optimistic", "mariadb"),
            ("inventory-optimistic", "postgres"),
            // The Lua check-and-DECR script, and WATCH + MULTI/EXEC.
            ("inventory-one-sql", "redis"),
            ("inventory-optimistic", "redis"),
        ],
        |&(id, backend)| {
            let r = agrees(id, backend);
            assert_eq!(check(&r, Property::ResourceSafety), Verdict::Ok, "{id}");
            assert_eq!(oversold(&r), 0, "{id} on {backend}");
            // Someone was refused: N buyers, N − 1 units.
            assert!(r.story.contains("(2 purchases completed)"), "{}", r.story);
        },
    );
}

/// Write-up 001's phantom inventory on every server: 4 in stock, orders of 3 and 2.
/// Read-check-write meets both (5 units sold from 4); the statement that checks the
/// whole order meets exactly one.
#[test]
fn the_phantom_inventory_sells_five_from_four_unless_one_statement_checks_the_order() {
    runs::side_by_side(&["mariadb", "postgres", "redis"], |&backend| {
        let r = agrees("inventory-phantom-no-lock", backend);
        assert_eq!(
            check(&r, Property::ResourceSafety),
            Verdict::Violation,
            "{backend}"
        );
        assert_eq!(oversold(&r), 1, "{backend}: 5 sold from 4");
        assert!(r.story.contains("ordering 3, 2 units"), "{}", r.story);
        assert!(r.story.contains("(2 purchases completed)"), "{}", r.story);
        let r = agrees("inventory-phantom-one-sql", backend);
        assert_eq!(
            check(&r, Property::ResourceSafety),
            Verdict::Ok,
            "{backend}"
        );
        assert!(r.story.contains("(1 purchases completed)"), "{}", r.story);
    });
}

#[test]
fn a_backend_is_chosen_by_name_and_only_for_the_inventory_rows() {
    let bad = RunOptions {
        backend: Some("oracle".into()),
        ..RunOptions::new("inventory-one-sql")
    };
    let e = run(&bad, &mut |_| {}).expect_err("no such backend");
    assert!(e.to_string().contains("--backend"), "{e}");
    let lock_row = RunOptions {
        backend: Some("postgres".into()),
        ..RunOptions::new("mysql-getlock-conn-kill")
    };
    let e = run(&lock_row, &mut |_| {}).expect_err("a lock row names its server");
    assert!(e.to_string().contains("--backend"), "{e}");
    let no_form = RunOptions {
        backend: Some("redis".into()),
        ..RunOptions::new("inventory-timestamp-cas")
    };
    let e = run(&no_form, &mut |_| {}).expect_err("no timestamp version on Redis");
    assert!(e.to_string().contains("--backend redis"), "{e}");
}

#[test]
fn the_benchmark_counts_purchases_and_no_oversold_unit_for_one_statement() {
    let _share = runs::beside();
    let options = BenchOptions {
        workloads: vec![Workload::Closed {
            buyers: 2,
            duration: Duration::from_millis(300),
        }],
        backends: vec![Backend::MariaDb, Backend::Redis],
        strategies: vec![Strategy::OneSql, Strategy::ForUpdate, Strategy::Optimistic],
        retry_pause: Duration::ZERO,
    };
    let rows = bench(&options, &mut |_| {}).expect("bench");
    assert_eq!(rows.len(), 6);
    assert!(rows
        .iter()
        .any(|r| r.backend == "redis" && r.strategy == "Redis lock (SET NX PX)"));
    for r in &rows {
        assert!(r.purchases > 0, "{r:?}");
        assert_eq!(r.oversold, 0, "{r:?}");
        assert_eq!(r.errors, 0, "{r:?}");
        assert!(r.p50_ms <= r.p99_ms, "{r:?}");
        assert_eq!(
            (r.workload, r.requests, r.seeds_per_second),
            ("closed", None, None)
        );
    }
}

/// The write-up's test, scaled down: every request is answered, the safe strategies sell
/// exactly the stock, no lock sells units the row never lost, and the seeds' figure
/// stands beside MariaDB's rows and not PostgreSQL's.
#[test]
fn the_arrivals_test_sells_the_stock_exactly_once_unless_it_has_no_lock() {
    let _share = runs::beside();
    let options = BenchOptions {
        workloads: vec![Workload::Arrivals {
            stock: 300,
            requests: 400,
            within: Duration::from_millis(300),
            pool: 6,
        }],
        backends: vec![Backend::MariaDb, Backend::Postgres],
        strategies: vec![Strategy::NoLock, Strategy::ForUpdate, Strategy::Optimistic],
        retry_pause: Duration::from_millis(1),
    };
    let rows = bench(&options, &mut |_| {}).expect("bench");
    assert_eq!(rows.len(), 6);
    for r in &rows {
        assert_eq!(
            (r.workload, r.requests, r.stock, r.buyers),
            ("arrivals", Some(400), Some(300), 6)
        );
        assert_eq!(r.errors, 0, "{r:?}");
        assert_eq!(
            r.purchases + r.refused,
            400,
            "every request answered: {r:?}"
        );
        assert!(
            r.seconds >= 0.29,
            "the last request arrives at 0.3 s: {r:?}"
        );
        if r.strategy == "no lock" {
            // Six connections racing on one row: some reads are always overlapped.
            assert!(r.oversold > 0, "{r:?}");
        } else {
            assert_eq!(
                (r.purchases, r.left, r.oversold),
                (300, Some(0), 0),
                "{r:?}"
            );
        }
        assert_eq!(
            r.seeds_per_second.is_some(),
            r.backend == "mariadb",
            "{r:?}"
        );
    }
    let text = table(&rows);
    assert!(text.contains("seeds/s") && text.contains("600"), "{text}");
}

/// A sweep is closed workloads at several buyers counts: its table has a column per
/// count, and its plot a panel per server and a line per strategy.
#[test]
fn a_sweep_tables_and_plots_purchases_per_second_by_buyers() {
    let _share = runs::beside();
    let options = BenchOptions {
        workloads: [1, 3, 12]
            .into_iter()
            .map(|buyers| Workload::Closed {
                buyers,
                duration: Duration::from_millis(200),
            })
            .collect(),
        backends: vec![Backend::Redis],
        strategies: vec![Strategy::NoLock, Strategy::OneSql],
        retry_pause: Duration::ZERO,
    };
    let rows = bench(&options, &mut |_| {}).expect("bench");
    assert_eq!(rows.len(), 6);
    // One buyer alone never races: no lock oversells only with company.
    let alone_row = rows
        .iter()
        .find(|r| r.buyers == 1 && r.strategy.starts_with("no lock"));
    assert_eq!(alone_row.map(|r| r.oversold), Some(0), "{rows:?}");
    let text = table(&rows);
    let head = text.lines().next().unwrap_or_default();
    assert!(
        head.contains("purchases/s by buyers") && head.ends_with("     12"),
        "{text}"
    );
    let svg = plot(&rows).expect("closed rows plot");
    assert_eq!(svg.matches("<polyline").count(), 2, "{svg}");
    assert!(
        svg.contains(">redis<") && svg.contains("one Lua check-and-DECR"),
        "{svg}"
    );
}
