//! locklab's integration tests, one test binary with a module per subject: one build
//! and one link for all of them, and `cargo test` runs them side by side (a binary per
//! file built and linked the same dependencies 29 times, and ran one file after
//! another). Run one subject with `cargo test --test it run_sql::`. Every file of
//! `tests/` is a module here (`tests/layout.rs` checks it).

mod common;

/// Nine tests at a time in this binary, where libtest's default is one per core, unless
/// `RUST_TEST_THREADS` says otherwise: its real runs mostly wait (on leases, faults,
/// their servers' replies), and share the machine through `common::machine`, so the
/// waits overlap with the model tests' work. Set before `main`, where libtest reads it;
/// the other test binaries keep the default (their tests start servers of their own
/// and hold them to tight reply timeouts).
#[used]
#[link_section = ".init_array"]
static MORE_TEST_THREADS: extern "C" fn() = {
    extern "C" fn more_test_threads() {
        if std::env::var_os("RUST_TEST_THREADS").is_none() {
            std::env::set_var("RUST_TEST_THREADS", "9");
        }
    }
    more_test_threads
};

mod book;
mod book_families;
mod check_history_cli;
mod chromium_pages;
mod cli_reference;
mod etcd_models;
mod etcd_protocol_files;
mod gate_cli;
mod generate_cli;
mod inventory_models;
mod json_contract;
mod layout;
mod model_matrix;
mod model_stores;
mod one_answer;
mod protocol_files;
mod readme;
mod redlock_protocol_files;
mod report_cli;
mod run_backends;
mod run_cli;
mod run_etcd;
mod run_external;
mod run_inventory;
mod run_protocol;
mod run_sql;
mod run_zk;
mod search_stops;
mod sql_models;
mod unbuilt_cli;
mod zk_models;
