//! One module per subcommand.

#[cfg(feature = "run")]
pub mod bench;
pub mod check;
pub mod check_history;
pub mod check_protocol;
pub mod explain;
pub mod explore;
pub mod export;
#[cfg(feature = "run")]
pub mod gate;
pub mod generate;
pub mod matrix;
pub mod models;
pub mod pages;
pub mod report;
pub mod rows;
#[cfg(feature = "run")]
pub mod run;
#[cfg(not(feature = "run"))]
pub mod unbuilt;
