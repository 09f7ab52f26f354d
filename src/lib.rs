//! locklab as a library: model-check lock protocols, check recorded histories, and (with
//! the `run` feature) run them on real servers under real faults.
//!
//! The `locklab` binary is a thin command line over these crates, re-exported here so
//! that one dependency gives them all:
//! - [`models`]: the specifications, the stateright models and the scenario catalog
//!   (`locklab check`, `explain`, `matrix`), and your own protocol described as data
//!   ([`models::protocol`]);
//! - [`history`]: the history format, the importers (Jepsen EDN, Porcupine's logs) and
//!   the checkers (`locklab check-history`, `export`);
//! - `clients`, `harness` and `servers` (feature `run`): the real lock clients, the
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
//! way), checked for mutual exclusion among the other properties:
//!
//! ```
//! use locklab::history::check::{check_history, Options, Verdict};
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
