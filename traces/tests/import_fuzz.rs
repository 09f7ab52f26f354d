//! Fuzzing the importers: random bytes, and valid histories (Jepsen EDN, locklab JSON
//! Lines and its EDN export, Porcupine etcd logs and kv files) mutated byte by byte and
//! line by line, read in every format and by sniffing, then checked when they parse.
//! Whatever comes in: no panic, and every error names the source and a line.
//!
//! The default case count keeps this to a few seconds. A long run:
//!
//! ```text
//! PROPTEST_CASES=20000 cargo test -p locklab-traces --release --test it import_fuzz::
//! ```

use std::path::PathBuf;
use std::time::Duration;

use locklab_traces::check::{check_history, Options};
use locklab_traces::import::{parse_any, InputFormat};
use locklab_traces::HistoryError;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

const SOURCE: &str = "fuzz.txt";

const JEPSEN_REGISTER: &str = r#"; a Jepsen cas-register history
[{:type :invoke, :f :write, :value 1, :process 0, :time 10, :index 0}
 {:type :ok, :f :write, :value 1, :process 0, :time 20, :index 1}
 {:type :invoke, :f :cas, :value [1 2], :process 1, :time 30, :index 2}
 {:type :fail, :f :cas, :value [1 2], :process 1, :time 40, :index 3, :error [:mismatch "no"]}
 {:type :info, :f :start, :process :nemesis, :time 45, :value {"n1" #{"n2" "n3"}}}
 #_{:type :ok :f :ignored}
 {:type :invoke, :f :write, :value 3, :process 2, :time 50}
 {:type :info, :f :write, :value :timed-out, :process 2, :time 60}
 #jepsen.history.Op{:index 8, :time 70, :type :invoke, :process 3, :f :read, :value nil}
 #jepsen.history.Op{:index 9, :time 80, :type :ok, :process 3, :f :read, :value nil}
 {:type :invoke, :f :read, :value nil, :process 4, :time 90}
 {:type :ok, :f :read, :value 3, :process 4, :time 100}
 {:type :invoke, :f :cas, :value [3 4], :process 5, :time 110}]
"#;

const JEPSEN_MUTEX: &str = r#"{:type :invoke, :f :acquire, :process 0, :time 1}
{:type :ok, :f :acquire, :process 0, :time 2}
{:type :invoke, :f :acquire, :process 1, :time 3}
{:type :info, :f :kill, :process :nemesis, :time 4, :value [:n1 \a 1/2 7N 1.5M ##Inf]}
{:type :invoke, :f :release, :process 0, :time 5}
{:type :ok, :f :release, :process 0, :time 6}
{:type :ok, :f :acquire, :process 1, :time 7}
{:type :invoke, :f :release, :process 2, :time 8}
{:type :fail, :f :release, :process 2, :time 9}
"#;

const LOCKLAB: &str = r#"{"format":"locklab-history","version":1,"protocol":"redis-lua","backend":"redis","resource":{"kind":"counter","initial":0}}
{"process":0,"op":"acquire","phase":"invoke","time":1200,"key":"lock","lease_ns":3000000000}
{"process":0,"op":"acquire","phase":"ok","time":1850,"key":"lock","token":7}
{"process":0,"op":"enter","phase":"ok","time":1900}
{"process":0,"op":"read","phase":"invoke","time":1950}
{"process":0,"op":"read","phase":"ok","time":1960,"value":0}
{"process":"nemesis","op":"nemesis","phase":"info","time":2000,"value":{"fault":"pause","target":"c0"}}
{"process":1,"op":"acquire","phase":"invoke","time":2100,"key":"lock","lease_ns":3000000000}
{"process":0,"op":"write","phase":"invoke","time":2200,"value":1,"token":7}
{"process":0,"op":"write","phase":"ok","time":2300}
{"process":0,"op":"leave","phase":"ok","time":2400}
{"process":0,"op":"release","phase":"invoke","time":2500,"key":"lock"}
{"process":0,"op":"release","phase":"ok","time":2600,"key":"lock"}
{"process":1,"op":"acquire","phase":"ok","time":2700,"key":"lock","token":8}
{"process":1,"op":"renew","phase":"invoke","time":2800,"key":"lock","lease_ns":1000}
{"process":1,"op":"renew","phase":"fail","time":2900,"key":"lock","note":"expired"}
{"process":2,"op":"read","phase":"invoke","time":3000}
{"process":2,"op":"read","phase":"ok","time":3100,"value":1}
"#;

const PORCUPINE_KV: &str = r#"{:process 0, :type :invoke, :f :append, :key "0", :value "x 0 0 y"}
{:process 1, :type :invoke, :f :get, :key "0", :value nil}
{:process 0, :type :ok, :f :append, :key "0", :value "x 0 0 y"}
{:process 1, :type :ok, :f :get, :key "0", :value "x 0 0 y"}
{:process 2, :type :invoke, :f :put, :key "1", :value "z"}
{:process 2, :type :ok, :f :put, :key "1", :value "z"}
{:process 0, :type :invoke, :f :get, :key "1", :value nil}
{:process 0, :type :ok, :f :get, :key "1", :value ""}
"#;

/// The lines of a Jepsen log that are not plain operations: a nemesis, a timeout, noise.
const ETCD_EDGES: &str = "INFO  jepsen.util - 0\t:invoke\t:read\tnil\n\
INFO  jepsen.util - 1\t:invoke\t:write\t4\n\
INFO  jepsen.util - 0\t:ok\t:read\tnil\n\
INFO  jepsen.util - 1\t:ok\t:write\t4\n\
2017-01-01 12:00:00 INFO  jepsen.core - not an operation\n\
INFO  jepsen.util - 2\t:invoke\t:cas\t[4 0]\n\
INFO  jepsen.util - :nemesis\t:info\t:start\tnil\n\
INFO  jepsen.util - 2\t:fail\t:cas\t[4 0]\n\
INFO  jepsen.util - 3\t:invoke\t:write\t1\n\
INFO  jepsen.util - 3\t:info\t:write\t:timed-out\n";

/// The first lines of one of Porcupine's etcd logs.
fn etcd_log() -> String {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/porcupine/etcd/etcd_002.log");
    match std::fs::read_to_string(&path) {
        Ok(text) => text.lines().take(60).map(|l| format!("{l}\n")).collect(),
        Err(e) => panic!("{}: {e}", path.display()),
    }
}

fn seeds() -> Vec<String> {
    let locklab_edn = parse_any("seed", LOCKLAB, Some(InputFormat::Jsonl))
        .map(|h| locklab_traces::export::to_edn(&h))
        .unwrap_or_default();
    vec![
        JEPSEN_REGISTER.to_string(),
        JEPSEN_MUTEX.to_string(),
        LOCKLAB.to_string(),
        locklab_edn,
        etcd_log(),
        ETCD_EDGES.to_string(),
        PORCUPINE_KV.to_string(),
    ]
}

/// Tokens that break structure, or look like what a history holds.
const INSERTS: &[&str] = &[
    "[",
    "]",
    "{",
    "}",
    "(",
    ")",
    "#_",
    "#",
    ";",
    "\"",
    "\\",
    ",",
    ":",
    "#{",
    "#:a",
    "##",
    "\n",
    "\\u",
    "\\newline",
    "nil",
    "-1",
    "0",
    "1/0",
    "99999999999999999999",
    "18446744073709551616",
    "1e999",
    "NaN",
    "##NaN",
    ":process",
    ":nemesis",
    ":type",
    ":f",
    ":ok",
    ":fail",
    ":info",
    ":invoke",
    ":acquire",
    ":release",
    ":read",
    ":cas",
    ":time",
    "#jepsen.history.Op",
    "#inst \"x\"",
    "{\"",
    "\"process\":",
    "\"phase\":\"ok\"",
    "null",
    "INFO  jepsen.util - ",
    "\t:ok\t",
    "é",
    "\u{0}",
    "\r\n",
];

#[derive(Clone, Debug)]
enum Mutation {
    Flip(usize, u8),
    Truncate(usize),
    Insert(usize, usize),
    DuplicateLine(usize),
    DeleteLine(usize),
    SwapLines(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 0..INSERTS.len()).prop_map(|(i, t)| Mutation::Insert(i, t)),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        any::<usize>().prop_map(Mutation::DeleteLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
    ]
}

fn apply(text: &str, mutations: &[Mutation]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for m in mutations {
        let at = |i: usize, len: usize| if len == 0 { 0 } else { i % (len + 1) };
        match *m {
            Mutation::Flip(i, b) => {
                if !bytes.is_empty() {
                    let n = bytes.len();
                    bytes[i % n] = b;
                }
            }
            Mutation::Truncate(i) => bytes.truncate(at(i, bytes.len())),
            Mutation::Insert(i, t) => {
                let p = at(i, bytes.len());
                bytes.splice(p..p, INSERTS[t].bytes());
            }
            Mutation::DuplicateLine(i) | Mutation::DeleteLine(i) | Mutation::SwapLines(i, _) => {
                let mut lines: Vec<Vec<u8>> =
                    bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
                let n = lines.len();
                let i = i % n;
                match *m {
                    Mutation::DuplicateLine(_) => {
                        let l = lines[i].clone();
                        lines.insert(i, l);
                    }
                    Mutation::DeleteLine(_) => {
                        lines.remove(i);
                    }
                    Mutation::SwapLines(_, j) => lines.swap(i, j % n),
                    _ => {}
                }
                bytes = lines.join(&b'\n');
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

const FORMATS: [Option<InputFormat>; 5] = [
    None,
    Some(InputFormat::Jsonl),
    Some(InputFormat::Edn),
    Some(InputFormat::PorcupineEtcd),
    Some(InputFormat::PorcupineKv),
];

fn names_a_line(e: &HistoryError) -> Result<(), TestCaseError> {
    let shown = e.to_string();
    let line = e.line.unwrap_or(0);
    prop_assert!(
        line >= 1 && shown.starts_with(&format!("{SOURCE}:{line}: ")),
        "error without file:line: {shown}"
    );
    Ok(())
}

/// Reads `text` every way and checks what parses; never a panic, errors name a line.
fn exercise(text: &str) -> Result<(), TestCaseError> {
    let options = Options {
        timeout: Some(Duration::from_millis(50)),
        ..Options::default()
    };
    for format in FORMATS {
        match parse_any(SOURCE, text, format) {
            Err(e) => names_a_line(&e)?,
            Ok(history) => {
                if let Err(e) = check_history(&history, &options) {
                    names_a_line(&e)?;
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        // Beside this file: the default looks for a lib.rs above it and, finding none
        // under tests/, neither replays nor saves failing cases.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        exercise(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn random_text_of_edn_tokens(tokens in prop::collection::vec(0..INSERTS.len(), 0..60)) {
        let text: String = tokens.iter().map(|&t| INSERTS[t]).collect::<Vec<_>>().join(" ");
        exercise(&text)?;
    }

    #[test]
    fn mutated_histories(seed in 0usize..6, mutations in prop::collection::vec(mutation(), 1..6)) {
        let seeds = seeds();
        exercise(&apply(&seeds[seed % seeds.len()], &mutations))?;
    }
}

/// The seeds themselves parse in their own format and check without error.
#[test]
fn the_seeds_are_valid() {
    let formats = [
        InputFormat::Edn,
        InputFormat::Edn,
        InputFormat::Jsonl,
        InputFormat::Edn,
        InputFormat::PorcupineEtcd,
        InputFormat::PorcupineEtcd,
        InputFormat::PorcupineKv,
    ];
    for (text, format) in seeds().iter().zip(formats) {
        assert_eq!(
            InputFormat::sniff(text),
            match format {
                InputFormat::PorcupineKv => InputFormat::Edn,
                f => f,
            }
        );
        let h = parse_any("seed", text, Some(format)).unwrap_or_else(|e| panic!("{e}"));
        assert!(!h.events.is_empty(), "{format:?}");
        check_history(&h, &Options::default()).unwrap_or_else(|e| panic!("{format:?}: {e}"));
    }
}
