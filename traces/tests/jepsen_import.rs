//! Hand-written Jepsen EDN histories, read as Knossos reads them: each rule of the
//! import with the verdict Knossos gives (the reference). Export is `edn_export.rs`.

use locklab_traces::check::{check_history, Options, Property, Report, Selection, Verdict};
use locklab_traces::format::{History, LockModel, OpKind, Phase, Process, ResourceSpec};
use locklab_traces::import::jepsen::{parse_as, Semantics};
use locklab_traces::import::{parse_any, InputFormat};

fn edn(text: &str) -> History {
    parse_any("test.edn", text, Some(InputFormat::Edn)).unwrap_or_else(|e| panic!("{e}"))
}

fn check(h: &History, options: &Options) -> Report {
    check_history(h, options).unwrap_or_else(|e| panic!("{e}"))
}

fn verdict(h: &History) -> Verdict {
    check(h, &Options::default()).verdict
}

fn with(selection: Selection) -> Options {
    Options {
        selection,
        ..Options::default()
    }
}

/// A write of 1, a CAS from 1 to 2 that failed, a read of 1.
const FAILED_CAS: &str = r#"
{:type :invoke, :f :write, :value 1, :process 0, :time 10}
{:type :ok, :f :write, :value 1, :process 0, :time 20}
{:type :invoke, :f :cas, :value [1 2], :process 1, :time 30}
{:type :fail, :f :cas, :value [1 2], :process 1, :time 40}
{:type :invoke, :f :read, :value nil, :process 2, :time 50}
{:type :ok, :f :read, :value 1, :process 2, :time 60}
"#;

#[test]
fn a_failed_cas_did_not_happen_and_constrains_nothing() {
    let h = edn(FAILED_CAS);
    assert_eq!(
        h.events.len(),
        4,
        "the :fail and its invocation are dropped"
    );
    assert!(
        h.warnings
            .iter()
            .any(|w| w.contains("1 :fail operation(s) dropped")),
        "{:?}",
        h.warnings
    );
    assert_eq!(
        h.header.resource,
        Some(ResourceSpec::CasRegister { initial: None })
    );
    assert_eq!(verdict(&h), Verdict::Ok);
    // Read with locklab's meaning, the same failure is a refusal that a register holding
    // 1 cannot give: that is what dropping it changes.
    let refused = parse_as("test.edn", FAILED_CAS, Some(Semantics::Locklab)).expect("parses");
    let refused = History {
        header: h.header.clone(),
        ..refused
    };
    assert_eq!(refused.events.len(), 6);
    assert_eq!(verdict(&refused), Verdict::Violation);
}

#[test]
fn porcupine_kv_files_keep_porcupines_meaning() {
    let h = parse_any("kv.txt", FAILED_CAS, Some(InputFormat::PorcupineKv)).expect("parses");
    assert_eq!(h.events.len(), 6, "Porcupine's files keep every event");
    assert!(h.warnings.is_empty());
    assert_eq!(h.header.resource, None);
}

#[test]
fn a_nil_read_is_unconstrained_where_a_read_of_zero_is_not() {
    let history = |read: &str| {
        format!(
            "{{:type :invoke, :f :write, :value 1, :process 0, :time 10}}\n\
             {{:type :ok, :f :write, :value 1, :process 0, :time 20}}\n\
             {{:type :invoke, :f :read, :value nil, :process 1, :time 30}}\n\
             {{:type :ok, :f :read, :value {read}, :process 1, :time 40}}\n"
        )
    };
    let nil = edn(&history("nil"));
    let (_, completion) = &nil.events[3];
    assert_eq!(completion.phase, Phase::Info, "kept, visible, as unknown");
    assert_eq!(completion.value, None);
    assert!(nil.warnings.iter().any(|w| w.contains("read(s) of nil")));
    assert_eq!(verdict(&nil), Verdict::Ok);
    assert_eq!(verdict(&edn(&history("0"))), Verdict::Violation);
    assert_eq!(verdict(&edn(&history("1"))), Verdict::Ok);
}

#[test]
fn a_list_with_comments_and_discards_parses() {
    let text = r#"; a Jepsen history, as a list
(;; the first write
 {:type :invoke, :f :write, :value 1, :process 0, :time 10} ; trailing comment
 #_{:type :invoke, :f :bogus, :process 9}
 #_ #_ {:f :one} {:f :two}
 {:type :ok, :f :write, :value 1, :process 0, :time 20 #_ :ignored #_ 42}
 #_[nested #_(discards [inside])]
 {:type :invoke, :f :read, :process 1, :time 30}
 {:type :ok, :f :read, :value 1, :process 1, :time 40})
; after the list
"#;
    let h = edn(text);
    assert_eq!(h.events.len(), 4);
    assert_eq!(h.events[0].0, 3, "lines count from the file's first line");
    assert_eq!(h.events[3].0, 9);
    assert_eq!(verdict(&h), Verdict::Ok);
}

#[test]
fn jepsen_record_literals_parse_as_their_maps() {
    let text = r#"[#jepsen.history.Op{:index 0, :time 1000, :type :invoke, :process 0, :f :write, :value 3}
#jepsen.history.Op{:index 1, :time 2000, :type :ok, :process 0, :f :write, :value 3}
#jepsen.history.Op{:index 2, :time 2500, :type :info, :process :nemesis, :f :start-partition, :value {"n1" #{"n2" "n3"}, :at #inst "2024-01-01T00:00:00.000-00:00"}}
#jepsen.history.Op{:index 3, :time 3000, :type :invoke, :process 1, :f :read, :value nil}
#jepsen.history.Op{:index 4, :time 4000, :type :ok, :process 1, :f :read, :value 3, :id #uuid "f81d4fae-7dec-11d0-a765-00a0c91e6bf6"}]
"#;
    let h = edn(text);
    assert_eq!(h.events.len(), 5);
    let (_, nemesis) = &h.events[2];
    assert_eq!(nemesis.process, Process::NEMESIS);
    assert_eq!(
        nemesis.value_json().and_then(|v| v.get("fault").cloned()),
        Some(serde_json::json!("start-partition"))
    );
    assert_eq!(h.events[4].1.time, 4000);
    assert_eq!(verdict(&h), Verdict::Ok);
}

#[test]
fn a_history_of_nemesis_events_only_is_fine() {
    let text = r#"[{:type :info, :f :start, :process :nemesis, :time 1, :value nil}
 {:type :info, :f :kill, :process :nemesis, :time 2, :value {:node "n1", :signal :SIGKILL}}
 {:type :info, :f :heal, :process "nemesis-2", :time 3, :value [:a/b \x 1/2 12N 1.5M]}
 {:type :info, :f :start, :process :nemesis, :time 4}]"#;
    let h = edn(text);
    assert_eq!(h.events.len(), 4);
    assert!(h.events.iter().all(|(_, e)| e.op == OpKind::Nemesis));
    let report = check(&h, &Options::default());
    assert_eq!(report.verdict, Verdict::Ok);
    assert!(report.checks.is_empty());
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("trivially valid")),
        "{:?}",
        report.warnings
    );
    for empty in ["", "[]", "()", "; nothing\n", "[ ; nothing\n]"] {
        let h = edn(empty);
        assert!(h.events.is_empty());
        assert_eq!(verdict(&h), Verdict::Ok, "{empty:?}");
    }
}

#[test]
fn mutex_histories_are_checked_as_knossoss_mutex() {
    let acquires = r#"[{:type :invoke, :f :acquire, :process 0, :time 10}
 {:type :ok, :f :acquire, :process 0, :time 20}
 {:type :invoke, :f :acquire, :process 1, :time 30}
 {:type :ok, :f :acquire, :process 1, :time 40}]"#;
    let h = edn(acquires);
    assert_eq!(h.header.lock, Some(LockModel::Mutex));
    for options in [Options::default(), with(Selection::Mutex)] {
        let report = check(&h, &options);
        assert_eq!(report.verdict, Verdict::Violation, "{report:#?}");
        assert_eq!(report.checks[0].property, Property::LockLinearizability);
    }
    // Only linearizability rejects it: process 0's section is only known to last until
    // its grant, so the sections themselves do not overlap.
    let sections = check(&h, &with(Selection::CriticalSections));
    assert_eq!(sections.checks[0].property, Property::MutualExclusion);
    assert_eq!(sections.verdict, Verdict::Ok, "{sections:#?}");

    let release_of_nothing = r#"[{:type :invoke, :f :release, :process 0, :time 10}
 {:type :ok, :f :release, :process 0, :time 20}]"#;
    assert_eq!(verdict(&edn(release_of_nothing)), Verdict::Violation);

    let fine = r#"[{:type :invoke, :f :acquire, :process 0, :time 10}
 {:type :ok, :f :acquire, :process 0, :time 20}
 {:type :invoke, :f :acquire, :process 1, :time 25}
 {:type :fail, :f :acquire, :process 1, :time 27}
 {:type :invoke, :f :release, :process 1, :time 30}
 {:type :ok, :f :release, :process 1, :time 40}
 {:type :invoke, :f :acquire, :process 2, :time 50}
 {:type :info, :f :acquire, :process 2, :time 60}]"#;
    let h = edn(fine);
    assert_eq!(h.events.len(), 6, "the failed acquire is dropped");
    // Knossos's mutex has no owner: process 1 may release what process 0 took.
    assert_eq!(verdict(&h), Verdict::Ok);
}

#[test]
fn an_info_write_may_take_effect_late() {
    let history = |outcome: &str| {
        format!(
            "{{:type :invoke, :f :write, :value 1, :process 0, :time 10}}\n\
             {{:type :{outcome}, :f :write, :value :timed-out, :process 0, :time 20}}\n\
             {{:type :invoke, :f :write, :value 2, :process 1, :time 30}}\n\
             {{:type :ok, :f :write, :value 2, :process 1, :time 40}}\n\
             {{:type :invoke, :f :read, :value nil, :process 2, :time 50}}\n\
             {{:type :ok, :f :read, :value 1, :process 2, :time 60}}\n"
        )
    };
    assert_eq!(verdict(&edn(&history("info"))), Verdict::Ok);
    // An invocation that never completes is the same as :info.
    let open = history("info").replace(
        "{:type :info, :f :write, :value :timed-out, :process 0, :time 20}\n",
        "",
    );
    assert_eq!(verdict(&edn(&open)), Verdict::Ok);
    // Had the first write completed before the second began, the read contradicts it.
    let done = history("ok").replace(":value :timed-out", ":value 1");
    assert_eq!(verdict(&edn(&done)), Verdict::Violation);
}

#[test]
fn initial_makes_a_read_before_any_write_legal() {
    let text = r#"[{:type :invoke, :f :read, :value nil, :process 0, :time 10}
 {:type :ok, :f :read, :value 0, :process 0, :time 20}
 {:type :invoke, :f :write, :value 5, :process 1, :time 30}
 {:type :ok, :f :write, :value 5, :process 1, :time 40}]"#;
    let h = edn(text);
    assert_eq!(
        verdict(&h),
        Verdict::Violation,
        "Knossos's cas-register starts at nil"
    );
    let auto = Options {
        initial: Some(0),
        ..Options::default()
    };
    assert_eq!(check(&h, &auto).verdict, Verdict::Ok);
    let named = Selection::parse("cas-register", Some(0), &h.header).expect("a model");
    assert_eq!(check(&h, &with(named)).verdict, Verdict::Ok);
    assert_eq!(
        check(
            &h,
            &Options {
                initial: Some(1),
                ..Options::default()
            }
        )
        .verdict,
        Verdict::Violation
    );
}

#[test]
fn operations_are_ordered_by_their_place_in_the_file() {
    // The times say the read finished before the write began; the file, which is what
    // Knossos goes by, says the write came first.
    let text = r#"[{:type :invoke, :f :write, :value 1, :process 0, :time 100}
 {:type :ok, :f :write, :value 1, :process 0, :time 200}
 {:type :invoke, :f :read, :process 1, :time 10}
 {:type :ok, :f :read, :value 1, :process 1, :time 20}]"#;
    let h = edn(text);
    assert!(h
        .warnings
        .iter()
        .any(|w| w.contains("place in the history")));
    assert_eq!(verdict(&h), Verdict::Ok);
}

#[test]
fn an_ok_completion_gives_the_value() {
    let text = r#"[{:type :invoke, :f :write, :value nil, :process 0}
 {:type :ok, :f :write, :value 3, :process 0}
 {:type :invoke, :f :read, :process 1}
 {:type :ok, :f :read, :value 3, :process 1}]"#;
    assert_eq!(verdict(&edn(text)), Verdict::Ok);
}

#[test]
fn bad_operations_are_errors_naming_the_line() {
    let cases = [
        (
            "{:type :invoke, :f :read, :process 0}\n{:type :ok, :f :frob, :process 0}",
            "test.edn:2: unknown op :f :frob",
        ),
        (
            "[{:type :invoke, :f :read, :process -1}]",
            "test.edn:1: :process -1 is not a client number",
        ),
        (
            "\n[{:type :invoke, :f :read, :process 0}\n",
            "test.edn:2: truncated",
        ),
        (
            "[{:type :invoke, :f :read, :process 0}] {:more 1}",
            "test.edn:1: unexpected content after",
        ),
        ("{:type :invoke, :f :read}", "test.edn:1: missing :process"),
        (
            "{:type :begin, :f :read, :process 0}",
            "test.edn:1: unknown :type :begin",
        ),
        (
            "{:type :invoke, :f \"read\", :process 0}",
            "test.edn:1: :f must be a keyword",
        ),
        (
            "{:type :invoke, :f :read, :process 0, :time -5}",
            "test.edn:1: :time must be",
        ),
        ("\n\n[1]", "test.edn:3: expected an operation map"),
        (
            "{:type :invoke, :type :ok, :f :read, :process 0}",
            "test.edn:1: duplicate key :type",
        ),
    ];
    for (text, expected) in cases {
        let e = parse_any("test.edn", text, Some(InputFormat::Edn)).expect_err(text);
        assert!(e.to_string().starts_with(expected), "{text}: {e}");
    }
    let deep = format!(
        "[{{:type :invoke, :f :write, :process 0, :value {}}}]",
        "[".repeat(10_000)
    );
    let e = parse_any("test.edn", &deep, Some(InputFormat::Edn)).expect_err("too deep");
    assert!(e.to_string().contains("nested more than"), "{e}");
}

#[test]
fn the_format_is_sniffed() {
    for text in [
        "[{:type :invoke, :f :read, :process 0}]",
        "({:type :invoke, :f :read, :process 0})",
        "; comment\n{:type :invoke, :f :read, :process 0}",
        "#jepsen.history.Op{:type :invoke, :f :read, :process 0}",
        "{ :type :invoke, :f :read, :process 0}",
    ] {
        assert_eq!(InputFormat::sniff(text), InputFormat::Edn, "{text}");
        assert!(parse_any("t", text, None).is_ok(), "{text}");
    }
    assert_eq!(
        InputFormat::sniff("{\"format\":\"locklab-history\"}"),
        InputFormat::Jsonl
    );
    assert_eq!(
        InputFormat::sniff("2017-01-01 noise\nINFO  jepsen.util - 0\t:invoke\t:read\tnil\n"),
        InputFormat::PorcupineEtcd
    );
}

/// What an operation of unknown outcome returned says nothing, in any format.
#[test]
fn an_unknown_reads_result_is_ignored() {
    let text = "{:type :invoke, :f :read, :process 0, :time 1}\n{:type :info, :f :read, :value :timed-out, :process 0, :time 2}\n";
    for semantics in [Semantics::Knossos, Semantics::Porcupine, Semantics::Locklab] {
        let h = parse_as("t.edn", text, Some(semantics)).expect("parses");
        assert_eq!(verdict(&h), Verdict::Ok, "{semantics:?}");
    }
}
