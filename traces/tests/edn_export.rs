//! Export to Jepsen EDN: export then import gives back the same history, field by
//! field, and every locklab history the checkers accept keeps its verdict; what Knossos
//! reads differently (an `:ok`'s value, a `:fail`'s) is marked.

use crate::common::{config, verdict};
use locklab_traces::check::Verdict;
use locklab_traces::export::to_edn;
use locklab_traces::format::{
    Backend, Event, Header, History, LockModel, OpKind, Phase, Process, ResourceSpec,
};
use locklab_traces::import::{parse_any, InputFormat};
use proptest::prelude::*;

fn edn(text: &str) -> History {
    parse_any("test.edn", text, Some(InputFormat::Edn)).unwrap_or_else(|e| panic!("{e}"))
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".*".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".*", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn op_kind() -> impl Strategy<Value = OpKind> {
    use OpKind::*;
    prop::sample::select(vec![
        Acquire, Release, Renew, Enter, Leave, Read, Write, Cas, Decrement, Get, Put, Append,
        Command, Nemesis,
    ])
}

fn phase() -> impl Strategy<Value = Phase> {
    prop::sample::select(vec![Phase::Invoke, Phase::Ok, Phase::Fail, Phase::Info])
}

fn event() -> impl Strategy<Value = Event> {
    let process = prop_oneof![
        4 => (0u32..6).prop_map(Process::Client),
        1 => Just(Process::NEMESIS),
        1 => any::<u32>().prop_map(Process::Client),
    ];
    let nemesis_value = prop_oneof![
        json_value(),
        ("[a-z][a-z-]{0,8}", ".*").prop_map(|(f, t)| serde_json::json!({"fault": f, "target": t})),
    ];
    (
        (process, op_kind(), phase(), any::<u64>()),
        (
            proptest::option::of(".*"),
            proptest::option::of(nemesis_value.prop_filter("not null", |v| !v.is_null())),
        ),
        (
            proptest::option::of(any::<u64>()),
            proptest::option::of(any::<u64>()),
            proptest::option::of(any::<u64>()),
            proptest::option::of(".*"),
        ),
    )
        .prop_map(
            |((process, op, phase, time), (key, value), (token, owner, lease_ns, note))| Event {
                key: key.map(Into::into),
                value: value.map(Into::into),
                token,
                owner,
                lease_ns,
                note,
                ..Event::new(process, op, phase, time)
            },
        )
}

fn header() -> impl Strategy<Value = Header> {
    let resource = proptest::option::of(prop_oneof![
        Just(ResourceSpec::Kv),
        proptest::option::of(any::<i64>())
            .prop_map(|initial| ResourceSpec::CasRegister { initial }),
        any::<i64>().prop_map(|initial| ResourceSpec::Counter { initial }),
    ]);
    (
        ".*",
        ".*",
        proptest::option::of(any::<u64>()),
        resource,
        any::<bool>(),
        proptest::option::of(prop_oneof![Just(LockModel::Lease), Just(LockModel::Mutex)]),
        // Floats too: event values are kept as JSON text, so serde_json reads floats
        // back bit for bit (its float_roundtrip feature) or a value came back one ulp off.
        prop::collection::vec(json_value(), 0..3),
    )
        .prop_map(
            |(protocol, topology, seed, resource, reentrant, lock, nemesis)| Header {
                topology,
                seed,
                resource,
                reentrant,
                lock,
                nemesis,
                ..Header::new(&protocol, Backend::Simulated)
            },
        )
}

proptest! {
    #![proptest_config(config(200))]

    /// Export then import gives back the header and every event, field by field.
    #[test]
    fn export_then_import_gives_the_same_history(header in header(), events in prop::collection::vec(event(), 0..12)) {
        let original = History::of("original", header, events);
        let text = to_edn(&original);
        let back = parse_any("exported.edn", &text, None)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(&back.header, &original.header);
        let strip = |h: &History| h.events.iter().map(|(_, e)| e.clone()).collect::<Vec<_>>();
        prop_assert_eq!(strip(&back), strip(&original), "{}", text);
        prop_assert!(back.warnings.is_empty());
    }
}

/// Every locklab history the checkers accept reaches the same verdict after export.
#[test]
fn an_exported_history_keeps_its_verdict() {
    let text = concat!(
        r#"{"format":"locklab-history","version":1,"protocol":"t","backend":"simulated","resource":{"kind":"cas-register"}}"#,
        "\n",
        r#"{"process":0,"op":"write","phase":"invoke","time":10,"value":1}"#,
        "\n",
        r#"{"process":0,"op":"write","phase":"ok","time":20}"#,
        "\n",
        r#"{"process":1,"op":"cas","phase":"invoke","time":30,"value":[1,2]}"#,
        "\n",
        r#"{"process":1,"op":"cas","phase":"fail","time":40}"#,
        "\n",
        r#"{"process":"nemesis","op":"nemesis","phase":"info","time":45,"value":{"fault":"pause","target":"c0"}}"#,
        "\n",
        r#"{"process":2,"op":"read","phase":"invoke","time":50}"#,
        "\n",
        r#"{"process":2,"op":"read","phase":"ok","time":60,"value":1}"#,
        "\n",
    );
    let original = parse_any("h.jsonl", text, None).expect("parses");
    assert_eq!(
        verdict(&original),
        Verdict::Violation,
        "the refused CAS contradicts the register"
    );
    let exported = to_edn(&original);
    // Knossos takes an :ok completion's value as the operation's, and wants a :fail's to
    // repeat its invocation's: the exporter gives them the invocation's, marked.
    for line in [
        r#"{:type :ok, :f :write, :process 0, :time 20, :value 1, :locklab/value-from :invoke, :index 1}"#,
        r#"{:type :fail, :f :cas, :process 1, :time 40, :value [1 2], :locklab/value-from :invoke, :index 3}"#,
        r#"{:type :ok, :f :read, :process 2, :time 60, :value 1, :index 6}"#,
        r#":f :pause, :process :nemesis"#,
    ] {
        assert!(exported.contains(line), "{line} in {exported}");
    }
    let back = parse_any("h.edn", &exported, None).expect("reads back");
    let events = |h: &History| h.events.iter().map(|(_, e)| e.clone()).collect::<Vec<_>>();
    assert_eq!(events(&back), events(&original));
    assert_eq!(verdict(&back), Verdict::Violation);
    // Without its header line the file is a plain Jepsen history, and Knossos's reading
    // of the :fail (did not happen) claims less.
    let plain: String = exported
        .lines()
        .filter(|l| !l.starts_with(';'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(verdict(&edn(&plain)), Verdict::Ok);
}
