//! `run`, `gate` and `bench` in a build without the feature they need (`run`, `gate`:
//! any family, `run` for all; `bench`: `sql`): they are listed, so `locklab --help`
//! shows what the tool can do, and say how to get them instead of failing as unknown
//! subcommands.

use crate::output::{error, ErrorKind, Format};

/// Whatever was given: nothing is parsed, since nothing will run.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The command's arguments (ignored in this build).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    rest: Vec<std::ffi::OsString>,
}

/// Explains that `command` is not built in and that `feature` builds it: exit 4 (could
/// not run; the command line may well be right).
pub fn run(command: &str, feature: &str, args: &Args) -> u8 {
    let format = if crate::wants_json(&args.rest) {
        Format::Json
    } else {
        Format::Text
    };
    error(
        format,
        ErrorKind::Environment,
        &format!(
            "`locklab {command}` starts real servers and is not in this build; build it with \
             the `{feature}` feature: cargo install --path . --features {feature} (`run` \
             builds every family; its etcd client needs protoc: bash ci/setup.sh installs it)"
        ),
    )
}
