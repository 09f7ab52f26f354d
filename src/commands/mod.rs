//! One module per subcommand.

#[cfg(feature = "sql")]
pub mod bench;
pub mod check;
pub mod check_history;
pub mod check_protocol;
#[cfg(test)]
mod colour_paths;
pub mod explain;
pub mod explore;
pub mod export;
#[cfg(feature = "harness")]
pub mod gate;
pub mod generate;
pub mod interrupt;
pub mod matrix;
pub mod models;
pub mod pages;
pub mod report;
pub mod rows;
#[cfg(feature = "harness")]
pub mod run;
#[cfg(not(all(feature = "harness", feature = "sql")))]
pub mod unbuilt;
