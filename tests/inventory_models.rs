//! The inventory rows through the catalog: each verdict, and what the phantom
//! inventory's counterexample shows (write-up 001: 4 iPhones, orders of 3 and 2, both
//! met when both buyers read before either writes).
#![cfg(feature = "model-check")]

use locklab_models::catalog::{Family, Overrides, Verdict};
use locklab_models::registry::Property;

use crate::common::models;
use models::{
    assert_before, each_reaches_its_verdict, family_ids, last_state, run, run_with, story,
};

#[test]
fn every_inventory_row_reaches_its_verdict() {
    let ids = family_ids(Family::Inventory);
    assert_eq!(ids.len(), 7);
    each_reaches_its_verdict(&ids);
}

#[test]
fn the_phantom_inventory_meets_both_orders_from_four_units() {
    let r = run("inventory-phantom-no-lock");
    assert_eq!(r.verdict, Verdict::Violated(vec![Property::ResourceSafety]));
    let t = story(&r, Property::ResourceSafety);
    // Both read 4 — enough for 3 and for 2 — before either writes.
    assert_before(
        &t,
        &[
            ("c0 reads stock 4", "c0 writes stock 1"),
            ("c1 reads stock 4", "c0 writes stock 1"),
            ("c0 writes stock 1", "c1 writes stock 2"),
        ],
    );
    let end = last_state(&r, Property::ResourceSafety).join("\n");
    assert!(
        end.contains("c0 (instance 0, orders 3): done, bought 3"),
        "{end}"
    );
    assert!(
        end.contains("c1 (instance 1, orders 2): done, bought 2"),
        "{end}"
    );
    assert!(end.contains("5 sold"), "{end}");
    assert!(t.contains("5 units sold from 4"), "{t}");
}

#[test]
fn one_statement_that_checks_the_whole_order_meets_exactly_one() {
    assert_eq!(run("inventory-phantom-one-sql").verdict, Verdict::Holds);
    // With a third buyer (an order of 4) it still holds: no order is met in part.
    let three = Overrides {
        clients: Some(3),
        ..Overrides::default()
    };
    assert_eq!(
        run_with("inventory-phantom-one-sql", three).verdict,
        Verdict::Holds
    );
}
