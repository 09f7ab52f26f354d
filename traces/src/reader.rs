//! Reads a locklab history (JSON Lines) with errors that name the file and line.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use crate::error::HistoryError;
use crate::format::{Event, EventValue, Header, History, FORMAT_NAME, FORMAT_VERSION};

/// Reads a history file one line at a time. Its text is never held whole: a 10-minute,
/// 64-client run writes 570 MB of it, which beside the events it reads to was a third
/// of the check's peak memory.
pub fn read_path(path: &Path) -> Result<History, HistoryError> {
    read_file(path, false)
}

fn read_file(path: &Path, bare_commands: bool) -> Result<History, HistoryError> {
    let name = path.display().to_string();
    let open = || {
        std::fs::File::open(path)
            .map(|f| BufReader::with_capacity(1 << 20, f))
            .map_err(|e| HistoryError::whole(&name, format!("cannot read: {e}")))
    };
    let lines = count_lines(open()?)
        .map_err(|e| HistoryError::whole(&name, format!("cannot read: {e}")))?;
    read_lines(&name, open()?, lines, bare_commands)
}

/// Reads a history file as [`read_path`] does, but keeps its `command` events bare: each
/// is checked as it is read, then its value and note are dropped, and the checks that
/// need them read them again from the file, one event at a time
/// ([`crate::ops::Paired::each_command`]). A 10-minute run's million commands held
/// whole were a third of its check's memory. The file must not change until the
/// history is checked.
pub fn read_path_lean(path: &Path) -> Result<History, HistoryError> {
    let mut history = read_file(path, true)?;
    history.commands_at = Some(path.to_path_buf());
    Ok(history)
}

/// Calls `f` with each `command` event of the history file at `path` and its line, in
/// file order, read one at a time; stops at `f`'s first error. `bare` are the command
/// events [`read_path_lean`] kept, with their lines, in file order: exactly those lines
/// are parsed again (the others are skipped unread), and each must still be the event it
/// was (op, process, time, key). A file changed since, so that a line no longer reads or
/// is no longer that command, is an error naming the line, never a command silently
/// left out or taken in.
pub fn each_command<'e>(
    path: &Path,
    bare: impl IntoIterator<Item = (usize, &'e Event)>,
    mut f: impl FnMut(usize, &Event) -> Result<(), String>,
) -> Result<(), String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("{}: cannot read again: {e}", path.display()))?;
    let mut input = BufReader::with_capacity(1 << 20, file);
    let (mut buf, mut n) = (Vec::new(), 0usize);
    for (line, kept) in bare {
        let changed = |why: &str| {
            format!(
                "{}:{line}: changed since it was read: {why}",
                path.display()
            )
        };
        loop {
            buf.clear();
            let read = input
                .read_until(b'\n', &mut buf)
                .map_err(|e| format!("{}: cannot read again: {e}", path.display()))?;
            if read == 0 {
                return Err(changed("the file ends before it"));
            }
            n += 1;
            if n == line {
                break;
            }
        }
        let text = std::str::from_utf8(&buf).map_err(|_| changed("no longer UTF-8 text"))?;
        let event = serde_json::from_str::<Event>(text)
            .map_err(|e| changed(&format!("no longer reads: {e}")))?;
        let same = event.op == kept.op
            && event.process == kept.process
            && event.time == kept.time
            && event.key == kept.key;
        if !same {
            return Err(changed("no longer the command event it was"));
        }
        f(n, &event)?;
    }
    Ok(())
}

/// A file's text; bytes that are not UTF-8 are an error at the line they are on.
pub fn read_text(name: &str, path: &Path) -> Result<String, HistoryError> {
    let bytes =
        std::fs::read(path).map_err(|e| HistoryError::whole(name, format!("cannot read: {e}")))?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
        not_utf8(name, line, valid.len())
    })
}

fn not_utf8(name: &str, line: usize, byte: usize) -> HistoryError {
    HistoryError::at(
        name,
        line,
        format!("not UTF-8 text: byte {byte} is not part of a UTF-8 character"),
    )
}

/// Parses a history held in memory; `source` names it in errors.
///
/// A last line without its newline that does not parse is a write torn by a crash: it is
/// dropped with a warning, because the writer ends every complete event with a newline.
/// Any other bad line is an error.
pub fn parse(source: &str, text: &str) -> Result<History, HistoryError> {
    let lines = 1 + text.bytes().filter(|&b| b == b'\n').count();
    read_lines(source, text.as_bytes(), lines, false)
}

/// How many lines `input` has (a bound: the last may be empty), read in blocks: the
/// events' vector is then allocated once, exactly, where growing it by doubling held
/// up to twice the events' size at the moment it moved.
fn count_lines(mut input: impl Read) -> std::io::Result<usize> {
    let mut block = vec![0u8; 1 << 20];
    let mut newlines = 0;
    loop {
        match input.read(&mut block) {
            Ok(0) => return Ok(newlines + 1),
            Ok(n) => newlines += block[..n].iter().filter(|&&b| b == b'\n').count(),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads the history of `input`, one line at a time, into events; `lines` is how many
/// lines it has at most; `bare_commands`: `command` events keep no value or note.
fn read_lines(
    source: &str,
    mut input: impl BufRead,
    lines: usize,
    bare_commands: bool,
) -> Result<History, HistoryError> {
    let mut history: Option<History> = None;
    let mut buf = Vec::new();
    let mut keys = std::collections::HashSet::new();
    let (mut n, mut offset) = (0usize, 0usize);
    loop {
        buf.clear();
        let read = input
            .read_until(b'\n', &mut buf)
            .map_err(|e| HistoryError::whole(source, format!("cannot read: {e}")))?;
        if read == 0 {
            break;
        }
        n += 1;
        let torn = buf.last() != Some(&b'\n');
        let line =
            std::str::from_utf8(&buf).map_err(|e| not_utf8(source, n, offset + e.valid_up_to()))?;
        offset += read;
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        let Some(history) = history.as_mut() else {
            history = Some(History {
                source: source.to_string(),
                header: parse_header(source, n, line)?,
                events: Vec::with_capacity(lines.saturating_sub(n)),
                ..History::default()
            });
            continue;
        };
        match serde_json::from_str::<Event>(line) {
            Ok(mut event) => {
                event.key = event.key.map(|k| shared(&mut keys, k));
                if let Some(why) = event.value.as_ref().and_then(unreadable) {
                    return Err(HistoryError::at(source, n, format!("bad event: {why}")));
                }
                if bare_commands && event.op == crate::format::OpKind::Command {
                    event.value = None;
                    event.note = None;
                }
                history.events.push((n, event))
            }
            Err(e) if torn => history.warnings.push(format!(
                "{source}:{n}: last line is incomplete (a write cut short by a crash?), ignored: {e}"
            )),
            Err(e) => return Err(HistoryError::at(source, n, describe_json_error(&e, "event"))),
        }
    }
    history.ok_or_else(|| {
        HistoryError::at(
            source,
            1,
            "empty history: expected a header line {\"format\":\"locklab-history\",...}",
        )
    })
}

/// Reads the header line of a history.
/// The one copy of `key` every event naming it holds.
fn shared(keys: &mut std::collections::HashSet<Arc<str>>, key: Arc<str>) -> Arc<str> {
    match keys.get(&key) {
        Some(known) => Arc::clone(known),
        None => {
            keys.insert(Arc::clone(&key));
            key
        }
    }
}

pub(crate) fn parse_header(source: &str, line: usize, text: &str) -> Result<Header, HistoryError> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| HistoryError::at(source, line, describe_json_error(&e, "header")))?;
    if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT_NAME) {
        return Err(HistoryError::at(
            source,
            line,
            format!("expected a header line with \"format\":\"{FORMAT_NAME}\" first (is this a Jepsen or Porcupine history? pass --input-format)"),
        ));
    }
    let header: Header = serde_json::from_value(value)
        .map_err(|e| HistoryError::at(source, line, describe_json_error(&e, "header")))?;
    if header.version > FORMAT_VERSION {
        return Err(HistoryError::at(
            source,
            line,
            format!(
                "history format version {} is newer than this locklab reads ({FORMAT_VERSION})",
                header.version
            ),
        ));
    }
    Ok(header)
}

/// Why a value kept as text would not read back as JSON data, if it would not.
///
/// An event's value is kept as text and read when a check needs it. serde_json checks
/// the text's syntax but not its depth on the way in, and refuses 128 levels or more
/// when the value is read, so a value nested that deep is refused here, at its line,
/// not read as nothing later.
fn unreadable(value: &EventValue) -> Option<String> {
    const SHALLOW: usize = 64;
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in value.text().bytes() {
        match (in_string, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'[' | b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, _, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if deepest <= SHALLOW {
        return None;
    }
    value
        .parse::<serde_json::Value>()
        .err()
        .map(|e| format!("its value cannot be read ({e})"))
}

fn describe_json_error(e: &serde_json::Error, what: &str) -> String {
    use serde_json::error::Category;
    // serde_json counts lines within the one line it was given: "line 1" would
    // contradict the file's line already named, so only the column is kept.
    let text = e.to_string();
    let located = format!(" at line {} column {}", e.line(), e.column());
    let bare = text.strip_suffix(&located).unwrap_or(&text);
    let at = match e.column() {
        0 => String::new(),
        c => format!(" at column {c}"),
    };
    match e.classify() {
        Category::Eof => {
            format!("truncated {what}: the line ends before the JSON object does ({bare}{at})")
        }
        Category::Syntax => format!("malformed {what}: not valid JSON ({bare}{at})"),
        Category::Data => format!("bad {what}: {bare}{at}"),
        Category::Io => format!("cannot read {what}: {bare}"),
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn with_value(depth: usize) -> String {
        format!(
            "{{\"format\":\"locklab-history\",\"version\":1}}\n{{\"process\":0,\"op\":\"write\",\"phase\":\"invoke\",\"time\":1,\"value\":{}1{}}}\n",
            "[".repeat(depth),
            "]".repeat(depth)
        )
    }

    /// A history with two commands, the second spelling its op with a JSON escape, and
    /// an acquire between them.
    const COMMANDS: &str = concat!(
        "{\"format\":\"locklab-history\",\"version\":1}\n",
        "{\"process\":0,\"op\":\"command\",\"phase\":\"ok\",\"time\":1,\"key\":\"lock\",\"value\":1}\n",
        "{\"process\":1,\"op\":\"acquire\",\"phase\":\"invoke\",\"time\":2,\"key\":\"lock\",\"note\":\"\\\"command\\\"\"}\n",
        "\n",
        "{\"process\":1,\"op\":\"comm\\u0061nd\",\"phase\":\"ok\",\"time\":3,\"key\":\"lock\",\"value\":2}\n",
    );

    fn commands_again(h: &super::History) -> Result<Vec<(usize, String)>, String> {
        let mut seen = Vec::new();
        let path = h
            .commands_at
            .as_deref()
            .expect("a lean read names its file");
        let bare = h
            .events
            .iter()
            .filter(|(_, e)| e.op == crate::format::OpKind::Command);
        super::each_command(path, bare.map(|(n, e)| (*n, e)), |n, e| {
            seen.push((
                n,
                e.value
                    .as_ref()
                    .map(|v| v.text().to_string())
                    .unwrap_or_default(),
            ));
            Ok(())
        })?;
        Ok(seen)
    }

    /// The second read finds exactly the commands the first found, however their op is
    /// spelt, and not a line that merely mentions one.
    #[test]
    fn commands_read_again_are_the_commands_first_read() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(file.path(), COMMANDS).expect("writes");
        let h = super::read_path_lean(file.path()).expect("reads");
        assert!(h.events.iter().all(|(_, e)| e.value.is_none()), "kept bare");
        let seen = commands_again(&h).expect("reads again");
        assert_eq!(seen, vec![(2, "1".to_string()), (5, "2".to_string())]);
    }

    /// A file changed between the two reads is an error naming the line, not a command
    /// silently dropped or taken in.
    #[test]
    fn a_file_changed_between_reads_names_the_line() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(file.path(), COMMANDS).expect("writes");
        let h = super::read_path_lean(file.path()).expect("reads");
        let moved = COMMANDS.replacen("\n\n", "\n", 1);
        std::fs::write(file.path(), moved).expect("writes");
        let err = commands_again(&h).expect_err("the file changed");
        assert!(err.contains(":5: changed since it was read"), "{err}");
        std::fs::write(file.path(), COMMANDS.replace("\"time\":3", "\"time\":4")).expect("writes");
        let err = commands_again(&h).expect_err("the file changed");
        assert!(err.contains("no longer the command event it was"), "{err}");
    }

    /// Every event naming a key holds the same copy of its text: a long history names a
    /// few keys millions of times.
    #[test]
    fn events_naming_one_key_share_its_text() {
        let line = |t: u64, k: &str| {
            format!("{{\"process\":0,\"op\":\"acquire\",\"phase\":\"invoke\",\"time\":{t},\"key\":\"{k}\"}}\n")
        };
        let text = format!(
            "{{\"format\":\"locklab-history\",\"version\":1}}\n{}{}{}",
            line(1, "lock"),
            line(2, "other"),
            line(3, "lock")
        );
        let h = parse("h.jsonl", &text).expect("reads");
        let key = |i: usize| h.events[i].1.key.clone().expect("has a key");
        assert!(std::sync::Arc::ptr_eq(&key(0), &key(2)));
        assert_eq!(&*key(1), "other");
        assert_eq!(&*key(2), "lock");
    }

    /// A value too deep to read back is an error at its line, as it was when values
    /// were read whole; one that reads back is kept.
    #[test]
    fn a_value_nested_too_deep_is_an_error_at_its_line() {
        let e = parse("h.jsonl", &with_value(300)).expect_err("too deep");
        let text = e.to_string();
        assert!(
            text.contains("h.jsonl:2") && text.contains("its value cannot be read"),
            "{text}"
        );
        let ok = parse("h.jsonl", &with_value(100)).expect("reads");
        assert_eq!(ok.events.len(), 1);
        let strings = "[\"[[[[\",\"\\\"{{{{\"]";
        let quoted = format!(
            "{{\"format\":\"locklab-history\",\"version\":1}}\n{{\"process\":0,\"op\":\"write\",\"phase\":\"invoke\",\"time\":1,\"value\":{strings}}}\n"
        );
        assert!(
            parse("h.jsonl", &quoted).is_ok(),
            "brackets inside strings do not count"
        );
    }
}
