//! `locklab generate`: shell completions and the man page, generated from the same clap
//! definition the command line parses with, so they never drift from it.

use std::io::Write;

use crate::documents::{
    Checked, Document, Explained, Exported, Failure, Matrix, Models, ProtocolChecked, Serving, Site,
};
use crate::output::{error, print_json, ErrorKind, Format};

/// What to generate.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum What {
    /// The man page (roff): `locklab generate man > locklab.1`; `generate man check` is
    /// locklab-check(1); `generate man --dir DIR` writes every page.
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
    /// `completions SHELL`: the same as `generate SHELL`.
    Completions,
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
    /// `error`). With `man`: a command, for its own page. With `completions`: the shell.
    #[arg(value_name = "NAME")]
    name: Option<String>,
    /// With `man`: write locklab.1 and a page per command (locklab-check.1, …) into
    /// this directory instead.
    #[arg(long, value_name = "DIR")]
    dir: Option<std::path::PathBuf>,
    /// How to print: the file itself, or one JSON document holding it (`text`, or
    /// `schema` for a schema; `wrote` for `man --dir`).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// The shells completions are written for, by the name `completions SHELL` takes.
const SHELLS: &[(&str, clap_complete::Shell)] = &[
    ("bash", clap_complete::Shell::Bash),
    ("zsh", clap_complete::Shell::Zsh),
    ("fish", clap_complete::Shell::Fish),
    ("powershell", clap_complete::Shell::PowerShell),
    ("elvish", clap_complete::Shell::Elvish),
];

/// Prints what was asked for; 0, 2 on a bad name, or 4 when it cannot be written.
pub fn run(args: &Args, command: clap::Command) -> u8 {
    let format = args.format;
    if args.dir.is_some() && args.what != What::Man {
        return crate::bad_input(format, "--dir goes only with `generate man`");
    }
    let made = match (args.what, args.name.as_deref()) {
        (What::Man, name) => man(command, name, args.dir.as_deref()),
        (What::Schema, name) => schema(name).map(Made::Schema),
        (What::Completions, None) => Err(Refused::Usage(
            "`generate completions` needs a SHELL: bash, zsh, fish, powershell or elvish".into(),
        )),
        (What::Completions, Some(name)) => match SHELLS.iter().find(|(n, _)| *n == name) {
            Some(&(_, shell)) => Ok(completions(shell, command)),
            None => Err(Refused::Usage(format!(
                "unknown shell {name:?}; known: bash, zsh, fish, powershell, elvish"
            ))),
        },
        (_, Some(name)) => Err(Refused::Usage(format!(
            "a NAME ({name:?}) goes only with `generate man`, `schema` or `completions`"
        ))),
        (what, None) => {
            let shell = match what {
                What::Bash => clap_complete::Shell::Bash,
                What::Zsh => clap_complete::Shell::Zsh,
                What::Fish => clap_complete::Shell::Fish,
                What::Powershell => clap_complete::Shell::PowerShell,
                _ => clap_complete::Shell::Elvish,
            };
            Ok(completions(shell, command))
        }
    };
    let made = match made {
        Ok(m) => m,
        Err(Refused::Usage(message)) => return crate::bad_input(format, &message),
        Err(Refused::Io(message)) => return error(format, ErrorKind::Environment, &message),
    };
    let what = args.what;
    match (format, made) {
        (Format::Json, Made::Text(text)) => print_json(&Generated {
            generated: what,
            text: Some(&text),
            schema: None,
            wrote: Vec::new(),
        }),
        (Format::Json, Made::Schema(value)) => print_json(&Generated {
            generated: what,
            text: None,
            schema: Some(&value),
            wrote: Vec::new(),
        }),
        (Format::Json, Made::Wrote(files)) => print_json(&Generated {
            generated: what,
            text: None,
            schema: None,
            wrote: files,
        }),
        (Format::Text, Made::Wrote(files)) => {
            for f in files {
                eprintln!("wrote {}", f.display());
            }
        }
        (Format::Text, made) => {
            let text = match made {
                Made::Schema(value) => {
                    serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
                }
                Made::Text(text) => text,
                Made::Wrote(_) => String::new(),
            };
            if let Err(e) = std::io::stdout().write_all(text.as_bytes()) {
                return error(format, ErrorKind::Environment, &format!("stdout: {e}"));
            }
        }
    }
    0
}

/// What `generate` made.
enum Made {
    /// A file's text (a man page, a completion script).
    Text(String),
    /// A schema (or every schema by name).
    Schema(serde_json::Value),
    /// The files written (`man --dir`).
    Wrote(Vec<std::path::PathBuf>),
}

/// Why `generate` made nothing.
enum Refused {
    /// A bad name or flag: exit 2.
    Usage(String),
    /// A file or stream that could not be written: exit 4.
    Io(String),
}

/// `locklab generate --format json`.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct Generated<'a> {
    /// What was generated.
    pub generated: What,
    /// The file's text (a man page, a completion script).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<&'a str>,
    /// The schema asked for (or every schema by name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<&'a serde_json::Value>,
    /// With `man --dir`: the pages written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub wrote: Vec<std::path::PathBuf>,
}

/// A shell's completion script.
fn completions(shell: clap_complete::Shell, mut command: clap::Command) -> Made {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "locklab", &mut out);
    Made::Text(String::from_utf8_lossy(&out).into_owned())
}

/// The man page of locklab or of one of its commands, or every page into `dir`.
fn man(
    command: clap::Command,
    name: Option<&str>,
    dir: Option<&std::path::Path>,
) -> Result<Made, Refused> {
    let mut command = command.disable_help_subcommand(true);
    command.build();
    if let Some(dir) = dir {
        if name.is_some() {
            return Err(Refused::Usage(
                "`generate man --dir DIR` writes every page: give no command".into(),
            ));
        }
        return pages(&command, dir).map(Made::Wrote);
    }
    let page = match name {
        None => command,
        Some(name) => match command.find_subcommand(name) {
            Some(sub) => sub.clone(),
            None => {
                let known: Vec<&str> = command.get_subcommands().map(|c| c.get_name()).collect();
                return Err(Refused::Usage(format!(
                    "unknown command {name:?}; known: {}",
                    known.join(", ")
                )));
            }
        },
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .map_err(|e| Refused::Io(e.to_string()))?;
    Ok(Made::Text(String::from_utf8_lossy(&out).into_owned()))
}

/// Writes locklab.1 and each visible command's page into `dir`; the files written.
fn pages(
    command: &clap::Command,
    dir: &std::path::Path,
) -> Result<Vec<std::path::PathBuf>, Refused> {
    let io = |e: std::io::Error| Refused::Io(format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut wrote = vec![clap_mangen::Man::new(command.clone())
        .generate_to(dir)
        .map_err(io)?];
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        wrote.push(
            clap_mangen::Man::new(sub.clone())
                .generate_to(dir)
                .map_err(io)?,
        );
    }
    Ok(wrote)
}

/// The schema of `document`, or every schema as one object by name.
fn schema(document: Option<&str>) -> Result<serde_json::Value, Refused> {
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
                return Err(Refused::Usage(format!(
                    "unknown document {name:?}; known: {}",
                    known.join(", ")
                )));
            }
        },
    };
    Ok(value)
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
        ("generate", schema_for!(Document<Generated>)),
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
