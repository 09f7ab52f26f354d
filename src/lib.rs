//! locklab as a library: model-check lock protocols, check recorded histories, and (with
//! `run`, or any family's feature) run them on real servers under real faults.
//!
//! The `locklab` binary is a thin command line over these crates, re-exported here so
//! that one dependency gives them all:
//! - [`models`]: the specifications, the stateright models and the scenario catalog
//!   (`locklab check`, `explain`, `matrix`), and your own protocol described as data
//!   ([`models::protocol`]);
//! - [`history`]: the history format, the importers (Jepsen EDN, Porcupine's logs) and
//!   the checkers (`locklab check-history`, `export`);
//! - `clients`, `harness` and `servers` (`run`, or `redis`, `sql`, `etcd`, `zookeeper`
//!   for the families one by one): the real lock clients, the
//!   Jepsen-like harness (`locklab run`, `gate`, `bench`) and the servers it starts.
//!
//! # Examples
//!
//! The catalog's failover row, checked: two clients in the critical section, and the
//! shortest story says how.
//!
//! ```
//! use locklab::models::catalog::{self, Overrides, Verdict};
//! use locklab::models::check::Limits;
//!
//! let report = catalog::check("redis-failover", &Overrides::default(), Limits::default(), &mut |_| {})?;
//! assert!(matches!(report.verdict, Verdict::Violated(_)));
//! let story = report.stories[0].to_string();
//! assert!(story.contains("promotes replica"));
//! # Ok::<(), catalog::CatalogError>(())
//! ```
//!
//! A history a lock client recorded (locklab's JSON Lines; Jepsen's EDN reads the same
//! way): c1 is granted the lock c0 still holds, a double grant the lock spec refuses
//! (mutual exclusion says nothing: c0 may have died holding it):
//!
//! ```
//! use locklab::history::check::{check_history, Options, Property, Verdict};
//! use locklab::history::import::parse_any;
//!
//! let text = r#"{"format":"locklab-history","version":1,"protocol":"mine","backend":"simulated"}
//! {"process":0,"op":"acquire","phase":"invoke","time":1}
//! {"process":0,"op":"acquire","phase":"ok","time":2}
//! {"process":1,"op":"acquire","phase":"invoke","time":3}
//! {"process":1,"op":"acquire","phase":"ok","time":4}
//! "#;
//! let history = parse_any("example.jsonl", text, None)?;
//! let report = check_history(&history, &Options::default())?;
//! assert_eq!(report.verdict, Verdict::Violation);
//! let lock = report.checks.iter().find(|c| c.property == Property::LockLinearizability);
//! assert_eq!(lock.map(|c| c.verdict), Some(Verdict::Violation));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub use locklab_models as models;
pub use locklab_traces as history;

/// The real lock clients, one module per backend protocol.
#[cfg(feature = "harness")]
pub use locklab_implementations as clients;
/// The Jepsen-like harness: scenarios on real servers under real faults.
#[cfg(feature = "harness")]
pub use locklab_jepsen as harness;
/// Real servers as child processes on loopback.
#[cfg(feature = "harness")]
pub use locklab_servers as servers;
