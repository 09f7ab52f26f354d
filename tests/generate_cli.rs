//! `locklab generate`: completions every shell reads and a man page, from the same
//! definition the command line parses with; and `--color`, which marks verdicts only
//! when asked (or on a terminal), never the `OK` of a Redis reply.

use crate::common::cli;
use cli::{assert_exit, assert_says, locklab, stdout};

#[test]
fn completions_and_the_man_page_name_every_command() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let o = locklab(&["generate", shell]);
        assert_exit(&o, 0);
        for command in ["check-history", "explain", "matrix"] {
            assert_says(&stdout(&o), command);
        }
    }
    let man = locklab(&["generate", "man"]);
    assert_exit(&man, 0);
    assert_says(&stdout(&man), ".TH locklab 1");
    assert_says(&stdout(&man), "check\\-history");
}

/// The spellings the help and the man page use all work: `completions SHELL`, a
/// command's own page (every page the main one names exists), `--format json`.
#[test]
fn every_spelling_the_help_names_works() {
    assert_eq!(
        stdout(&locklab(&["generate", "completions", "bash"])),
        stdout(&locklab(&["generate", "bash"]))
    );
    let bad = locklab(&["generate", "completions", "tcsh"]);
    assert_exit(&bad, 2);
    assert_says(&cli::stderr(&bad), "unknown shell \"tcsh\"");
    let check = locklab(&["generate", "man", "check"]);
    assert_exit(&check, 0);
    assert_says(&stdout(&check), ".TH locklab-check 1");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("man1");
    let wrote = locklab(&["generate", "man", "--dir", out.to_str().expect("utf-8")]);
    assert_exit(&wrote, 0);
    assert_says(&cli::stderr(&wrote), "wrote ");
    let main = stdout(&locklab(&["generate", "man"]));
    // Every page SEE ALSO names, e.g. locklab\-check(1), is among those written.
    for named in main.split("locklab\\-").skip(1) {
        let page = named
            .split("(1)")
            .next()
            .unwrap_or_default()
            .replace("\\-", "-");
        let file = out.join(format!("locklab-{page}.1"));
        assert!(
            file.exists(),
            "SEE ALSO names {page}, not written: {file:?}"
        );
    }
    let json = locklab(&["generate", "zsh", "--format", "json"]);
    assert_exit(&json, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&json)).expect("one JSON document");
    assert_eq!(v["generated"], "zsh", "{v}");
    assert!(
        v["text"].as_str().is_some_and(|t| t.contains("locklab")),
        "{v}"
    );
    let schema = locklab(&["generate", "schema", "check", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&schema)).expect("one JSON document");
    assert_eq!(v["schema"]["title"], "locklab --format json: check", "{v}");
}

#[test]
fn colour_marks_verdicts_when_asked_and_only_then() {
    let plain = stdout(&locklab(&["explain", "redis-failover"]));
    assert!(
        !plain.contains('\x1b'),
        "colour without a terminal: {plain}"
    );
    let coloured = stdout(&locklab(&[
        "explain",
        "redis-failover",
        "--color",
        "always",
    ]));
    assert_says(&coloured, "\x1b[1;31mVIOLATED\x1b[0m");
    assert_says(&coloured, "-> OK\n");
    let never = stdout(&locklab(&["explain", "redis-failover", "--color", "never"]));
    assert!(!never.contains('\x1b'), "colour though never: {never}");
}

/// `check --help` is read in groups, not as one flat list of options.
#[test]
fn check_help_groups_its_options() {
    let help = stdout(&locklab(&["check", "--help"]));
    let mut at = 0;
    for heading in [
        "Bounds (the model's size):",
        "Search:",
        "Output:",
        "Progress:",
    ] {
        let found = help[at..]
            .find(&format!("\n{heading}\n"))
            .unwrap_or_else(|| panic!("no heading {heading:?} in order: {help}"));
        at += found + 1;
    }
    let search = &help[help.find("\nSearch:\n").unwrap_or_default()..];
    assert!(search.contains("--stop-at-first"), "{help}");
}
