//! Your protocol model-checked: every interleaving of its steps, within the bounds, in
//! each environment you list. A failing test prints the shortest story that breaks a
//! property.
#![cfg(feature = "model-check")]

use std::path::Path;

use locklab_models::catalog::{Overrides, Report, Verdict};
use locklab_models::check::Limits;
use locklab_models::protocol::{self, Described};
use locklab_models::registry::Property;

/// The environments your lock must keep every property in. A lease lock does not
/// survive a holder paused past its lease (`pause`) or a failover to a replica that
/// missed the write (`failover`): those are listed below as what it breaks.
const KEEPS_IN: &[&str] = &["none", "crash"];

fn file() -> Described {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("my-lock.toml");
    protocol::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn check(d: &Described, env: &str) -> Report {
    protocol::check(d, env, &Overrides::default(), Limits::default())
        .unwrap_or_else(|e| panic!("{env}: {e}"))
}

/// The verdict, with every story when it is not the one wanted.
fn stories(r: &Report) -> String {
    r.stories.iter().map(|s| s.to_string()).collect()
}

#[test]
fn my_lock_keeps_every_property_where_it_must() {
    for d in [
        file(),
        Described::Redis(locklab_model_template::my_lock().unwrap_or_else(|e| panic!("{e}"))),
    ] {
        for env in KEEPS_IN {
            let r = check(&d, env);
            assert_eq!(r.verdict, Verdict::Holds, "{}\n{}", r.id, stories(&r));
        }
    }
}

/// What it is known to break, so a change that makes it worse (or better) is seen.
#[test]
fn my_lock_breaks_mutual_exclusion_under_a_pause_and_a_failover() {
    let d = file();
    for env in ["pause", "failover"] {
        let r = check(&d, env);
        assert_eq!(
            r.verdict,
            Verdict::Violated(vec![Property::MutualExclusion]),
            "{}\n{}",
            r.id,
            stories(&r)
        );
    }
}
