//! Helpers shared by the modules of `tests/`: the CLI as a child process, the JSON
//! schemas, the models' stories, and real runs with their checks.

// Each subject uses its own part, and a build without the run features none of some.
#![allow(dead_code, unused_imports)]

pub mod cli;
pub mod machine;
pub mod models;
pub mod schema;

#[cfg(feature = "backends")]
pub mod harness;
#[cfg(feature = "backends")]
pub mod run_check;
#[cfg(feature = "backends")]
pub mod runs;
