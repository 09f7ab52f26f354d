//! One module per subcommand.

pub mod check_history;
