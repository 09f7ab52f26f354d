//! One module per subcommand.

pub mod bench;
pub mod check;
pub mod check_history;
pub mod check_protocol;
pub mod explain;
pub mod explore;
pub mod export;
pub mod gate;
pub mod matrix;
pub mod models;
pub mod pages;
pub mod report;
pub mod rows;
pub mod run;
