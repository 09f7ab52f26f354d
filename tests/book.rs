//! Every `console` block of the book (`docs/*.md`, `docs/families/*.md`) runs as
//! shown, from the repository's root as a reader runs it: `$ locklab …` lines are the
//! commands, `? N` the exit code (0 when absent), the rest their standard output, where
//! `[..]` stands for a run's own numbers in a line and `...` for lines left out (the
//! README's own test, `tests/readme.rs`, reads the same notation). Commands that need
//! servers are shown in `text` blocks and run by the tests each names.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One command of a block, with what it must give.
struct Case {
    at: String,
    args: Vec<String>,
    code: i32,
    stdout: String,
}

/// The cases of the `console` blocks of `page`.
fn cases(page: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(page).expect("reads the page");
    let mut cases: Vec<Case> = Vec::new();
    let mut in_block = false;
    for (n, line) in text.lines().enumerate() {
        let at = format!("{}:{}", page.display(), n + 1);
        if !in_block {
            in_block = line.trim_end() == "```console";
            continue;
        }
        if line.trim_end() == "```" {
            in_block = false;
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ") {
            assert!(
                !command.contains(['"', '\'', '|', '>', '<', '$']),
                "{at}: a book command is plain words (no quotes, pipes or redirections)"
            );
            let mut words = command.split_whitespace().map(str::to_string);
            assert_eq!(words.next().as_deref(), Some("locklab"), "{at}");
            cases.push(Case {
                at,
                args: words.collect(),
                code: 0,
                stdout: String::new(),
            });
        } else if let Some(case) = cases.last_mut() {
            match line.strip_prefix("? ") {
                Some(code) if case.stdout.is_empty() => {
                    case.code = code.trim().parse().expect("an exit code after `? `");
                }
                _ => {
                    case.stdout.push_str(line);
                    case.stdout.push('\n');
                }
            }
        }
    }
    assert!(
        !in_block,
        "{}: a console block is not closed",
        page.display()
    );
    cases
}

fn pages() -> Vec<PathBuf> {
    let mut pages = Vec::new();
    for dir in [root().join("docs"), root().join("docs/families")] {
        for entry in std::fs::read_dir(&dir).expect("docs/") {
            let path = entry.expect("an entry").path();
            if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

#[test]
fn the_book_commands_print_what_the_book_shows() {
    let mut ran = 0;
    for page in pages() {
        for case in cases(&page) {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_locklab"))
                .args(&case.args)
                .current_dir(root())
                .env("COLUMNS", "100")
                .output()
                .expect("runs locklab");
            assert_eq!(
                out.status.code(),
                Some(case.code),
                "{}: exit code\n{}",
                case.at,
                String::from_utf8_lossy(&out.stderr)
            );
            // snapbox's diff names no page: say which block it is first.
            eprintln!("{}: locklab {}", case.at, case.args.join(" "));
            let actual = String::from_utf8_lossy(&out.stdout).into_owned();
            snapbox::assert_data_eq!(actual, case.stdout);
            ran += 1;
        }
    }
    assert!(ran >= 4, "the book shows {ran} commands");
}
