//! `docs/cli.md`, the book's CLI reference, is every command's `--help` as the binary
//! prints it: generated, never written by hand. Stale, this test fails and says how to
//! regenerate it (`LOCKLAB_BLESS=1`). Only the full build's help is the reference, so
//! the test runs with the `run` feature.
#![cfg(feature = "run")]

use std::process::Command;

/// `locklab ARGS` on a terminal of 100 columns (help wraps at the terminal's width).
fn help(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(args)
        .env("COLUMNS", "100")
        .output()
        .expect("runs locklab");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The subcommands, as `locklab --help` lists them.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| l.as_bytes().get(2).is_some_and(|b| b.is_ascii_lowercase()))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

fn reference() -> String {
    let top = help(&["--help"]);
    let mut page = String::from(
        "# CLI reference\n\n\
         Every command's `--help`, as the full build (`--features run`) prints it. Generated \
         by `tests/cli_reference.rs`: `LOCKLAB_BLESS=1 cargo test --features run --test it \
         cli_reference` writes it again.\n\n## locklab\n\n```text\n",
    );
    page.push_str(top.trim_end());
    page.push_str("\n```\n");
    for name in subcommands(&top) {
        let text = help(&[&name, "--help"]);
        page.push_str(&format!(
            "\n## locklab {name}\n\n```text\n{}\n```\n",
            text.trim_end()
        ));
    }
    page
}

#[test]
fn the_cli_reference_is_the_binarys_own_help() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md");
    let want = reference();
    if std::env::var_os("LOCKLAB_BLESS").is_some() {
        std::fs::write(&path, &want).expect("writes docs/cli.md");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/cli.md is not the binary's help: run LOCKLAB_BLESS=1 cargo test --features run \
         --test it cli_reference"
    );
}
