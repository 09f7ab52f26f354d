//! `locklab explore ID`: stateright's Explorer in the browser, on loopback only.

use std::net::SocketAddr;

use locklab_models::catalog;

use crate::bad_input;
use crate::commands::check::Bounds;
use crate::output::Format;

/// Arguments of `explore`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario id.
    id: String,
    #[command(flatten)]
    bounds: Bounds,
    /// Address to serve on; must be a loopback address.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:3000")]
    addr: String,
    /// Output format (for errors).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// Runs the command; returns the exit code (serves until interrupted).
pub fn run(args: Args) -> u8 {
    let addr: SocketAddr = match args.addr.parse() {
        Ok(a) => a,
        Err(_) => {
            return bad_input(
                args.format,
                &format!("invalid --addr {:?}: expected IP:PORT", args.addr),
            )
        }
    };
    if !addr.ip().is_loopback() {
        return bad_input(
            args.format,
            &format!("invalid --addr {addr}: the Explorer only serves on loopback"),
        );
    }
    // stateright panics when it cannot bind; find out first and say so.
    if let Err(e) = std::net::TcpListener::bind(addr) {
        return bad_input(args.format, &format!("cannot listen on {addr}: {e}"));
    }
    let row = match catalog::find(&args.id) {
        Ok(row) => row,
        Err(e) => return bad_input(args.format, &e.to_string()),
    };
    if let Err(e) = catalog::params(row, &args.bounds.overrides()) {
        return bad_input(args.format, &e.to_string());
    }
    match args.format {
        Format::Json => crate::output::print_json(&crate::documents::Serving {
            serving: format!("http://{addr}"),
        }),
        Format::Text => eprintln!("Explorer for {} on http://{addr} (Ctrl-C to stop)", args.id),
    }
    match catalog::explore(row, &args.bounds.overrides(), addr) {
        Ok(()) => 0,
        Err(e) => bad_input(args.format, &e.to_string()),
    }
}
