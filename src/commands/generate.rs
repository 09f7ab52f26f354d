//! `locklab generate`: shell completions and the man page, generated from the same clap
//! definition the command line parses with, so they never drift from it.

use std::io::Write;

use crate::documents::{
    Checked, Document, Explained, Exported, Failure, Matrix, Models, ProtocolChecked, Serving, Site,
};
use crate::output::{error, ErrorKind, Format};

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum What {
    /// The man page (roff): `locklab generate man > locklab.1`.
    Man,
    /// Completions for bash: `locklab generate bash > /etc/bash_completion.d/locklab`.
    Bash,
    /// Completions for zsh (a `_locklab` file on `$fpath`).
    Zsh,
    /// Completions for fish.
    Fish,
    /// Completions for PowerShell.
    Powershell,
    /// Completions for elvish.
    Elvish,
    /// The JSON Schema of a command's `--format json` document: `locklab generate schema
    /// check` (or every schema, by document name, without a name).
    Schema,
}

/// Arguments of `generate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// What to print on standard output.
    #[arg(value_enum)]
    what: What,
    /// With `schema`: the document (a command's name, `check-protocol`, `run-list` or
    /// `error`).
    #[arg(value_name = "DOCUMENT")]
    document: Option<String>,
}

/// Prints what was asked for; 0, or 4 when standard output cannot be written.
pub fn run(args: &Args, mut command: clap::Command) -> u8 {
    use clap_complete::Shell;
    let mut out = Vec::new();
    let shell = match args.what {
        What::Man => {
            if let Err(e) = clap_mangen::Man::new(command.clone()).render(&mut out) {
                return error(Format::Text, ErrorKind::Internal, &e.to_string());
            }
            None
        }
        What::Bash => Some(Shell::Bash),
        What::Zsh => Some(Shell::Zsh),
        What::Fish => Some(Shell::Fish),
        What::Powershell => Some(Shell::PowerShell),
        What::Elvish => Some(Shell::Elvish),
        What::Schema => match schema(args.document.as_deref()) {
            Ok(text) => {
                out = text.into_bytes();
                None
            }
            Err(message) => return crate::bad_input(Format::Text, &message),
        },
    };
    if args.what != What::Schema && args.document.is_some() {
        return crate::bad_input(Format::Text, "a DOCUMENT goes only with `generate schema`");
    }
    if let Some(shell) = shell {
        clap_complete::generate(shell, &mut command, "locklab", &mut out);
    }
    match std::io::stdout().write_all(&out) {
        Ok(()) => 0,
        Err(e) => error(
            Format::Text,
            ErrorKind::Environment,
            &format!("stdout: {e}"),
        ),
    }
}

/// The schema of `document`, or every schema as one object by name.
fn schema(document: Option<&str>) -> Result<String, String> {
    let all = schemas();
    let value = match document {
        None => serde_json::Value::Object(
            all.into_iter()
                .map(|(name, s)| (name.to_string(), s.to_value()))
                .collect(),
        ),
        Some(name) => match all.iter().find(|(n, _)| *n == name) {
            Some((_, s)) => s.clone().to_value(),
            None => {
                let known: Vec<&str> = all.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "unknown document {name:?}; known: {}",
                    known.join(", ")
                ));
            }
        },
    };
    serde_json::to_string_pretty(&value)
        .map(|t| t + "\n")
        .map_err(|e| e.to_string())
}

/// Every document's schema, by the name `locklab generate schema NAME` takes: each
/// describes what the command prints (a field it leaves out when empty is optional).
fn schemas() -> Vec<(&'static str, schemars::Schema)> {
    macro_rules! schema_for {
        ($t:ty) => {
            schemars::generate::SchemaSettings::default()
                .for_serialize()
                .into_generator()
                .into_root_schema_for::<$t>()
        };
    }
    let mut all = vec![
        ("models", schema_for!(Document<Models>)),
        ("check", schema_for!(Document<Checked>)),
        ("check-protocol", schema_for!(Document<ProtocolChecked>)),
        ("explain", schema_for!(Document<Explained>)),
        ("matrix", schema_for!(Document<Matrix>)),
        ("report", schema_for!(Document<Site>)),
        (
            "check-history",
            schema_for!(Document<locklab_traces::check::Report>),
        ),
        ("export", schema_for!(Document<Exported>)),
        ("explore", schema_for!(Document<Serving>)),
        ("error", schema_for!(Document<Failure>)),
    ];
    #[cfg(feature = "harness")]
    all.extend([
        ("run", schema_for!(Document<locklab_jepsen::RunReport>)),
        (
            "run-list",
            schema_for!(Document<crate::documents::Runnable>),
        ),
        (
            "gate",
            schema_for!(Document<crate::commands::gate::GateReport>),
        ),
    ]);
    #[cfg(feature = "sql")]
    all.push(("bench", schema_for!(Document<crate::documents::Bench>)));
    for (name, schema) in &mut all {
        // The type's name (`Document`) would be every schema's title.
        schema.insert(
            "title".into(),
            format!("locklab --format json: {name}").into(),
        );
    }
    all
}
