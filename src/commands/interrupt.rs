//! Ctrl-C and SIGTERM. During a search (`check`, `explain`, `matrix`, `models`,
//! `report`) the first one stops the search where it is and the command answers with
//! what it explored, as Spin and TLC do; a second quits at once (130). During `run`,
//! `gate` and `bench` every server and client this process started is killed, and the
//! exit code is 130 whatever the work was doing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Set first thing in the harness's handler, before it kills anything.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Installs the searches' handler: the first signal stops every search
/// ([`locklab_models::check::interrupt`]), whose command then prints its answer — a
/// violation already proven, or unknown with the states explored; the second exits
/// 130 at once.
pub(crate) fn stop_searches() {
    let _ = ctrlc::set_handler(|| {
        if locklab_models::check::interrupted() {
            std::process::exit(130);
        }
        locklab_models::check::interrupt();
        eprintln!(
            "\nlocklab: interrupted; stopping the search and answering with what it explored (again to quit at once)"
        );
    });
}

/// Installs the harness's handler: on Ctrl-C or SIGTERM neither Drop nor the
/// parent-death signal would run, so it kills every server (and external client)
/// itself, then exits 130.
#[cfg(feature = "harness")]
pub(crate) fn install(message: &'static str) {
    let _ = ctrlc::set_handler(move || {
        INTERRUPTED.store(true, Ordering::SeqCst);
        locklab_servers::reaper::kill_all();
        eprintln!("\nlocklab: interrupted; {message}");
        std::process::exit(130);
    });
}

/// Called by `main` before it returns: killing the servers and clients makes the work
/// end early, and a `main` that returned then would exit 0 (or with the verdict of a
/// half run) while the handler is still killing. Waits for the handler to exit 130.
pub(crate) fn settle() {
    if INTERRUPTED.load(Ordering::SeqCst) {
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}
