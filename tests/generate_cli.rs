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
