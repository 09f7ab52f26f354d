//! One module per subcommand.

pub mod check_history;
pub mod check;
pub mod explain;
pub mod explore;
pub mod matrix;
pub mod models;
