//! The history checker's integration tests, one test binary with a module per
//! subject (one build and one link). Run one with `cargo test -p locklab-traces --test
//! it spec_props::`.

mod common;

mod client_props;
mod diagram_pages;
mod edn_export;
mod foreign_commands;
mod foreign_zk;
mod found_by_props;
mod import_fuzz;
mod jepsen_import;
mod linearizability_props;
mod lock_histories;
mod one_redis;
mod porcupine_data;
mod run_diagram;
mod spec_props;
